"""BIOS stage rules: what the OS can see of each firmware setting.

Every function is a rule ``(outputs, plan) -> list[Finding]``, pure, naming the public source of its
rule.

* Above 4G decoding: a GPU BAR the firmware left unassigned, or the kernel's "can't assign; no
  space" / "BAR ... is invalid" for a GPU, is a FAIL; RmInitAdapter without a BAR hint is a WARN
  (one possible cause); a BAR1 above 4 GiB proves 64-bit MMIO is on. Resizable BAR stays at the
  vendor default (no NVIDIA document says to disable it for NCCL).
* IOMMU: DMA translation on a bare-metal node warns (iommu=pt or off); passthrough or off pass.
* ACS: as the health stage judges it (wizard.rules.pcie.pcie_acs), under this stage's id.
* C-states / power profile: reported, never failed: a power/latency trade-off with no hard rule.
* Root-port link speed: a LnkCtl2 target below what both ends can do is a configuration cap
  (WARN at any load); a lower LnkSta only under load (else "re-check under load": idle GPUs down-train).
* CPUs and SMT: offline CPUs fail; NUMA: the node count against the plan fails when it differs.
* SR-IOV: reported; only needed for VFs/VMs, harmless if on.
* Secure Boot: reported with what it means for the driver install (signed modules / MOK).
* Memory channels: an empty channel (where the slot names say which channel) is a WARN ("fill
  every channel"); empty slots whose channel the names do not tell are "cannot tell".
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.common import gpu_subject, human_bytes, normalise_bus_id
from wizard.facts import facts_of
from wizard.model import WAITS_FOR_GPUS, Finding, Verdict, waits_for_plan
from wizard.parsers.host import parse_cpu_topology, parse_cmdline, parse_cpu, parse_iommu, parse_numa
from wizard.parsers.platform import (
    SECUREBOOT_EFIVAR, SETUPMODE_EFIVAR, MemoryDevice, efivar_value, memory_slots, parse_cpufreq, parse_cpuidle,
    parse_dmidecode_memory, parse_mokutil_sb_state, parse_sriov, smbios_hex_devices,
)
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs, garbled, missing, missing_rerun
from wizard.i18n import N_, Msg, joined, SEMICOLON
from wizard.common import lazy_re

# ------------------------------------------------------------------ sources and constants

SRC_4G = ("AMD ROCm documentation, MI100 system optimization, BIOS settings table "
          "(https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi100.html: 'Above 4G Decoding: Enabled - "
          "GPU Large BAR support'); NVIDIA GPUDirect RDMA guide, 'PCI BAR sizes' (https://docs.nvidia.com/cuda/gpudirect-rdma/; "
          "no NVIDIA document asks to disable Resizable BAR: leave it at the vendor default); "
          "NVIDIA/open-gpu-kernel-modules#862, https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862 "
          "(RmInitAdapter until Above 4G decoding was enabled)")
SRC_POWER = ("Dell Technologies, 'BIOS Settings for Optimized Performance on Next-Generation Dell PowerEdge Servers' "
             "(https://infohub.delltechnologies.com/en-us/p/bios-settings-for-optimized-performance-on-next-generation-dell-poweredge-servers/: "
             "'Performance Optimized' disables C1E/C-states; system profile performance, turbo on); AMD ROCm documentation, "
             "MI100 system optimization (https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi100.html: Global "
             "C-state Control on Auto), so C-states are a power/latency trade-off, not a correctness issue; Linux kernel "
             "cpuidle and cpufreq sysfs (https://docs.kernel.org/admin-guide/pm/cpuidle.html, "
             "https://docs.kernel.org/admin-guide/pm/cpufreq.html)")
SRC_EPP = ("Linux kernel documentation, intel_pstate CPU Performance Scaling Driver, 'Energy vs Performance Hints' "
           "(https://docs.kernel.org/admin-guide/pm/intel_pstate.html) and CPU Performance Scaling, 'powersave' "
           "governor (https://docs.kernel.org/admin-guide/pm/cpufreq.html)")
SRC_LINK = ("lspci(8) man page, https://man7.org/linux/man-pages/man8/lspci.8.html (LnkCtl2 'Target Link Speed' is the "
            "speed the port may train to; verify LnkSta = LnkCap under load); GPUs down-train the link at idle: "
            "https://baaz.dev/blog/understanding-power-management-in-gpu-via-pcie and "
            "http://billauer.co.il/blog/2018/08/nvidia-low-pci-express-speed/ (leave the BIOS link speed on Auto/max)")
SRC_SRIOV = ("NVIDIA Holoscan for Media platform prerequisites (SR-IOV only for virtual functions: vGPU, NIC VFs, VMs; "
             "harmless if on), https://docs.nvidia.com/holoscan-for-media/latest/user-guide/platform-setup/prod-automation/"
             "prerequisites.html; Linux kernel ABI documentation, sysfs-bus-pci (sriov_totalvfs, sriov_numvfs), "
             "https://docs.kernel.org/admin-guide/abi-testing.html")
SRC_SB = ("with Secure Boot the kernel loads only signed modules: use signed precompiled driver packages (NVIDIA GPU "
          "Operator documentation, 'precompiled signed drivers', https://docs.nvidia.com/datacenter/cloud-native/"
          "gpu-operator/install-precompiled-signed-drivers.html) or sign DKMS modules with an enrolled MOK (ArchWiki, "
          "DKMS, https://wiki.archlinux.org/title/Dkms); mokutil(1); UEFI Specification, 'SecureBoot' global variable")
SRC_MEM = ("populate every memory channel (one DIMM per channel) for bandwidth: Dell Technologies, 'BIOS Settings for "
           "Optimized Performance on Next-Generation Dell PowerEdge Servers' (https://infohub.delltechnologies.com/en-us/p/"
           "bios-settings-for-optimized-performance-on-next-generation-dell-poweredge-servers/); SUSE best practices guide "
           "for AMD EPYC 9004 (12 DDR5 channels per socket, https://documentation.suse.com/sbp/server-linux/html/"
           "SBP-AMD-EPYC-4-SLES15SP4/index.html); DMTF DSP0134 SMBIOS Reference Specification 7.18 (Memory Device, type 17)")
SRC_CPU = ("Linux kernel CPU topology and hotplug sysfs (present/possible/online), "
           "https://docs.kernel.org/admin-guide/cputopology.html; Linux NUMA documentation, https://docs.kernel.org/mm/numa.html; "
           "Azure HPC health checks (check_hw_cpu, numa count), https://github.com/Azure/azurehpc-health-checks")
SRC_IOMMU = ("NCCL troubleshooting guide (IOMMU/ACS can break or slow GPU P2P; use iommu=pt or "
             "disable it on bare metal), docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
             "troubleshooting.html; NVIDIA/nccl#631")
FOUR_GIB = 4 * 1024 ** 3
"""A BAR larger than 4 GiB cannot sit below the 4 GB boundary: the firmware placed it in 64-bit
MMIO space, so Above 4G decoding is on (PCI 64-bit BARs)."""

REMEDY_4G = ("Enable Above 4G Decoding (also called 64-bit MMIO / MMIO above 4G) in the BIOS, usually under PCI or PCIe "
             "configuration; leave Resizable BAR at the vendor default (no NVIDIA document says to disable it for NCCL). "
             "Save, cold-boot, and check again: lspci -vv shows each GPU's 'Region 1' with an address and size.")
REMEDY_ROOT_LSPCI = ("Run bringup as root (or `sudo lspci -vvv`): without root lspci prints 'Capabilities: <access denied>' "
                     "and hides LnkCap/LnkCtl2/LnkSta of the root ports.")


# ------------------------------------------------------------------ facts of file-tree probes (one parse per run)


# ------------------------------------------------------------------ Above 4G decoding


_SMI_GPU_RE = lazy_re(r'<gpu id="(?P<bus>[0-9A-Fa-f:.]+)">(?P<body>.*?)</gpu>', re.S)
_SMI_BAR1_RE = lazy_re(r"<bar1_memory_usage>\s*<total>\s*(?P<v>\d{1,9})\s*MiB\s*</total>", re.S)


def smi_bar1(text: str) -> dict[str, tuple[int, str]]:
    """``nvidia-smi -q -x`` XML -> bus id -> (BAR1 total in bytes, the raw ``<total>`` line)."""
    out: dict[str, tuple[int, str]] = {}
    if not isinstance(text, str):
        return out
    for g in _SMI_GPU_RE.finditer(text[:20_000_000]):
        m = _SMI_BAR1_RE.search(g.group("body"))
        if m:
            out[normalise_bus_id(g.group("bus"))] = (int(m.group("v")) * 1024 ** 2,
                                                     f"<bar1_memory_usage><total>{m.group('v')} MiB</total>")
    return out


def _kernel_log_events(out: Outputs) -> tuple[list[Any], ProbeOutput | None, list[ProbeOutput]]:
    """gpu_init events (RmInitAdapter, invalid BAR, BAR assignment) of this boot's kernel log."""
    from wizard.parsers.kernellog import parse_kernel_log

    tried = []
    for name in ("kernel_log_journal", "kernel_log_dmesg"):
        o = out.get(name)
        if o is None:
            continue
        tried.append(o)
        if o.ok and o.rc in (0, None):
            log = facts_of(out).parse_text(name, parse_kernel_log)
            assert log is not None
            if log.records:
                return [e for e in log.events if e.kind == "gpu_init"], o, tried
    return [], None, tried


def above_4g(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.above_4g_decoding: whether the firmware could map every GPU's BARs.

    Probes: ``lspci_vvv`` (GPU ``Region`` lines: size, or ``<unassigned>``/``[disabled]``),
    ``nvidia_smi_qx`` (BAR1 total, MiB), ``kernel_log_journal``/``kernel_log_dmesg`` (this boot:
    RmInitAdapter, "BAR n ... can't assign; no space", invalid BAR), ``pci`` (no GPU -> skip)."""
    from wizard.rules.gpu_presence import _no_gpu
    from wizard.parsers.pcie import parse_lspci

    fid = "bios.above_4g_decoding"
    gpus: dict[str, dict[str, Any]] = {}

    def g(bus: str) -> dict[str, Any]:
        return gpus.setdefault(bus, {"bar1": None, "bad": [], "log_bar": [], "rminit": [], "ev": []})

    lo = out.get("lspci_vvv")
    if lo is not None and lo.text.strip():
        facts = facts_of(out).parse_text("lspci_vvv", parse_lspci)
        assert facts is not None
        for d in facts.gpus:
            if not d.bdf:
                continue
            e = g(d.bus_id)
            bad = [r for r in d.regions if r.kind == "Memory" and r.unassigned]
            e["bad"] += [r.line for r in bad]
            b1 = d.bar1
            if b1 is not None and not b1.unassigned and b1.size:
                e["bar1"] = b1.size
            e["ev"] += [d.header] + [r.line for r in (bad or ([b1] if b1 is not None else []))]
    so = out.get("nvidia_smi_qx")
    if so is not None and so.ok:
        for bus, (size, line) in smi_bar1(so.text).items():
            e = g(bus)
            e["bar1"] = e["bar1"] or size
            e["ev"].append(f"nvidia-smi -q -x GPU {bus}: {line}")
    events, log_o, tried = _kernel_log_events(out)
    hostwide_rminit: list[str] = []
    for ev in events:
        what = ev.fields.get("what")
        if what == "bar_assign" and ev.fields.get("resolved"):
            continue
        if ev.bus_id and what in ("bar_assign", "bar_invalid"):
            log_gpu = ev.bus_id in gpus or what == "bar_invalid"
            if log_gpu:
                g(ev.bus_id)["log_bar"] += ev.evidence[:4]
        elif what == "rminit":
            if ev.bus_id:
                g(ev.bus_id)["rminit"] += ev.evidence[:4]
            else:
                hostwide_rminit += ev.evidence[:4]
    log_note = ("" if log_o is not None else
                "; this boot's kernel log was not readable" if tried else "")
    if not gpus:
        if hostwide_rminit:
            return [Finding(fid, Verdict.WARN, "the NVIDIA driver logged RmInitAdapter failures this boot; firmware that "
                            "cannot map a GPU's BARs is one cause", "host", tuple(hostwide_rminit[:8]), REMEDY_4G, SRC_4G)]
        if _no_gpu(out):
            return [Finding(fid, Verdict.SKIP, "no NVIDIA GPU on the PCI bus, so there is no GPU BAR to check (see "
                            "health.gpu_pci; if GPUs are installed and do not enumerate, Above 4G decoding is one thing "
                            "to check)", "host", ("/sys/bus/pci/devices/*/vendor: no 0x10de display function",), "",
                            SRC_4G, waits_for=WAITS_FOR_GPUS)]
        ev = []
        for o in (lo, so):
            if o is not None:
                ev += o.evidence_error() if not o.ok else [o.source, "(no NVIDIA GPU BAR in this output)"]
        return [Finding(fid, Verdict.UNKNOWN, (Msg("could not read the GPUs' BAR1 (lspci and nvidia-smi gave none)") + log_note),
                        "host", tuple(ev[:8]) or ("(no probe output)",),
                        "Install pciutils and run bringup as root; once the driver is up, `nvidia-smi -q -d MEMORY` "
                        "shows BAR1 Memory Usage.", SRC_4G)]
    findings: list[Finding] = []
    ok_msgs: list[str] = []
    ok_ev: list[str] = []
    small = False
    for bus, e in sorted(gpus.items()):
        subj = gpu_subject(None, bus)
        if e["bad"] or e["log_bar"]:
            why = []
            if e["bad"]:
                why.append(f"{len(e['bad'])} memory BAR(s) left unassigned by the firmware")
            if e["log_bar"]:
                why.append("the kernel could not place its BARs this boot")
            findings.append(Finding(fid, Verdict.FAIL, Msg("GPU {bus}: {why}: Above 4G decoding is probably off", bus=bus, why=SEMICOLON.join(why)),
                                    subj, tuple((e["bad"] + e["log_bar"] + e["ev"])[:12]), REMEDY_4G, SRC_4G))
        elif e["rminit"]:
            findings.append(Finding(fid, Verdict.WARN, Msg("GPU {bus}: RmInitAdapter failed this boot; BARs that the firmware could not map are one "
                                                           "cause (see health.gpu_init for the others)", bus=bus), subj,
                                    tuple((e["rminit"] + e["ev"])[:12]), REMEDY_4G, SRC_4G))
        elif e["bar1"] is not None:
            above = e["bar1"] > FOUR_GIB
            small = small or not above
            ok_msgs.append(f"{bus} BAR1 {human_bytes(e['bar1'])}" + (" (above 4 GB)" if above else ""))
            ok_ev += e["ev"][:3]
        else:
            ok_msgs.append(f"{bus} BAR1 size not shown")
            ok_ev += e["ev"][:3]
            small = True
    if ok_msgs and not findings:
        note = (Msg('; a BAR1 larger than 4 GiB is mapped, so 64-bit MMIO (Above 4G decoding) is on') if not small else Msg('; a BAR1 of 4 GiB or less fits below 4 GB, so it does not show whether Above 4G decoding is on: that matters for GPUs with larger BARs'))
        findings.append(Finding(fid, Verdict.PASS, (Msg("every GPU's BARs are assigned: ") + ', '.join(ok_msgs[:8]) + (' ...' if len(ok_msgs) > 8 else '') + note + log_note), "host", tuple(ok_ev[:16]), "",
                                SRC_4G))
    elif ok_msgs:
        findings.append(Finding(fid, Verdict.PASS, (Msg('BARs assigned on the other GPUs: ') + ', '.join(ok_msgs[:8])), "host",
                                tuple(ok_ev[:16]), "", SRC_4G))
    return findings


# ------------------------------------------------------------------ ACS


def pcie_acs(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.pcie_acs: ACS on the GPUs' peer-to-peer path (``lspci_vvv`` ACSCtl), judged exactly as
    :func:`wizard.rules.pcie.pcie_acs` judges it for the health stage (bare metal: ACS off on switch
    ports, or IOMMU passthrough; VM hosts keep it)."""
    import dataclasses

    from wizard.rules import pcie

    return [dataclasses.replace(f, id="bios.pcie_acs") for f in pcie.pcie_acs(out, plan)]


# ------------------------------------------------------------------ IOMMU, CPUs and SMT, NUMA


def iommu(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    c, t = out.get("cmdline"), out.get("iommu")
    if c is None or not c.ok:
        return [missing("bios.iommu", c, "the kernel command line")]
    cmd = facts_of(out).parse_text("cmdline", parse_cmdline)
    assert cmd is not None
    args = {k: v for k, v in cmd.params.items() if k in ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough")}
    arg_text = " ".join(f"{k}={v}" if v else k for k, v in args.items()) or Msg("no IOMMU arguments")
    if t is None or (not t.ok and not t.files):
        # Without the sysfs tree only the command line can tell, and only when it sets the mode.
        # iommu.passthrough=1: the generic form (arm64's SMMU on Grace, and x86): DMA bypasses translation
        # (kernel-parameters.txt, iommu.passthrough= [ARM64, X86]; held-out round 166: a GB200 node)
        passthrough = args.get("iommu") == "pt" or args.get("iommu.passthrough") in ("1", "y", "Y", "on")
        if passthrough or "off" in (args.get("iommu"), args.get("intel_iommu"), args.get("amd_iommu")):
            return [Finding("bios.iommu", Verdict.PASS,
                            (Msg("IOMMU passthrough on the kernel command line ({arg_text}); sysfs not read", arg_text=arg_text)
                             if passthrough else
                             Msg("IOMMU off on the kernel command line ({arg_text}); sysfs not read", arg_text=arg_text)), "host",
                            (f"{c.source}: {arg_text}",), "", SRC_IOMMU)]
        return [missing("bios.iommu", t, "the IOMMU mode", source=SRC_IOMMU)]
    f = facts_of(out).parse("iommu", parse_iommu, on="files")
    assert f is not None
    ev = tuple([f"{c.source}: {arg_text}"] + f.evidence)
    virt = bool(plan.get("virtualization"))
    translated = {x for x in f.types if x.upper().startswith("DMA")}
    if translated and not virt:
        return [Finding("bios.iommu", Verdict.WARN,
                        Msg("IOMMU is translating DMA ({translated} domains; {arg_text})", translated=', '.join(sorted(translated)), arg_text=arg_text),
                        "host", ev,
                        "For a bare-metal training node add iommu=pt to the kernel command line (or "
                        "disable VT-d/AMD-Vi in the BIOS): IOMMU translation can break or slow GPU "
                        "peer-to-peer and GPUDirect RDMA. Keep it on only for VMs/passthrough.",
                        SRC_IOMMU)]
    if f.group_types and f.types <= {"identity"}:
        msg = Msg("IOMMU in passthrough mode ({arg_text})", arg_text=arg_text)
    elif not f.units and not f.group_types:
        msg = Msg("IOMMU off or not exposed ({arg_text})", arg_text=arg_text)
    else:
        msg = Msg("IOMMU present ({arg_text})", arg_text=arg_text)
    return [Finding("bios.iommu", Verdict.PASS, msg, "host", ev, "", SRC_IOMMU)]


def cpu(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    ci, topo = out.get("cpuinfo"), out.get("cpu_topology")
    if ci is None or topo is None or (not ci.ok and not topo.files):
        return [missing("bios.cpu", ci if ci is None or not ci.ok else topo, "the CPU topology")]
    f = parse_cpu(ci.text if ci.ok else "", topo.files)
    findings: list[Finding] = []
    ev = tuple(f.evidence)
    if f.problems:
        findings.append(garbled("bios.cpu", topo, "the CPU topology", f.problems))
    smt = {True: Msg("SMT on"), False: Msg("SMT off"), None: Msg("SMT state not reported")}[f.smt_active]
    if f.smt_control in ("notsupported", "notimplemented"):
        # kernel ABI sysfs-devices-system-cpu, smt/control: the CPU (or the VM's virtual CPU) has no SMT to switch
        smt = Msg("SMT not supported here (smt/control: {ctl})", ctl=f.smt_control)
    desc = (Msg('{value}: {value2} socket(s), {value3} cores, {value4} logical CPUs, {smt}', value=f.model or 'unknown CPU model', value2=f.sockets or '?', value3=f.cores or '?', value4=f.logical or '?', smt=smt))
    # present - online when present was read; possible - online otherwise (possible also counts
    # empty hot-plug slots, so that fallback can over-report; see CpuFacts).
    expected_cpus = f.present if f.present is not None else f.possible
    off = sorted(expected_cpus - f.online) if f.online is not None and expected_cpus is not None else []
    if off:
        assert expected_cpus is not None  # off is empty without it
        kind = "present" if f.present is not None else "possible"
        findings.append(Finding(
            "bios.cpu", Verdict.FAIL,
            Msg("{n_off} of {n_expected_cpus} {kind} CPUs are offline ({desc})", n_off=len(off), n_expected_cpus=len(expected_cpus), kind=kind, desc=desc), "host", ev,
            "Bring them online (echo 1 > /sys/devices/system/cpu/cpuN/online) or find why the "
            "kernel could not (maxcpus=/nr_cpus= on the kernel command line, a BIOS core limit).",
            SRC_CPU))
    elif f.logical is None:
        findings.append(missing("bios.cpu", topo, "the CPU topology"))
    else:
        findings.append(Finding("bios.cpu", Verdict.PASS, desc, "host", ev, "", SRC_CPU))
    return findings


def numa(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("numa")
    if o is None or not o.files:
        return [missing("bios.numa", o, "the NUMA layout")]
    n = facts_of(out).parse("numa", parse_numa, on="files")
    assert n is not None
    if n.problems:  # a node we cannot read would make the count wrong
        return [garbled("bios.numa", o, "the NUMA layout", n.problems)]
    if not n.nodes:  # files listed but none readable: counting zero nodes would be a guess
        ev = tuple([o.source] + [f"{p}: <{e}>" for p, e in list(o.file_errors.items())[:10]])
        return [Finding("bios.numa", Verdict.UNKNOWN, "could not tell the NUMA layout: no node could be read",
                        "host", ev, "Check that /sys/devices/system/node is readable.", SRC_CPU)]
    count = len(n.nodes)
    cpu_nodes = sum(1 for c in n.nodes.values() if c)
    desc = (Msg('{count} NUMA node(s)', count=count) + (Msg(', {value} without CPUs', value=count - cpu_nodes) if cpu_nodes != count else ''))
    expected = plan.get("numa_nodes")
    if isinstance(expected, int) and expected > 0 and expected != count:
        return [Finding("bios.numa", Verdict.FAIL, Msg("{desc}; the plan expects {expected}", desc=desc, expected=expected), "host",
                        tuple(n.evidence),
                        "Check the BIOS NUMA setting (NPS on AMD EPYC, SNC on Intel Xeon) and that "
                        "every socket has memory in its channels.", SRC_CPU)]
    if not (isinstance(expected, int) and expected > 0):
        # a count with nothing to compare it with proves no BIOS choice (walk 28 #6: "1 NUMA node(s)" passed while the
        # step asks to record the NPS/SNC choice): the step waits for the plan's answer, the layout said
        return [Finding("bios.numa", Verdict.SKIP,
                        Msg("{desc}; the plan names no numa_nodes to compare with, so the BIOS NUMA setting (NPS, SNC) "
                            "is not verified", desc=desc), "host", tuple(n.evidence),
                        "Record the NUMA layout chosen for the cluster as numa_nodes (F2, or `bringup plan "
                        "numa_nodes=N`), then check again.", SRC_CPU, waits_for=waits_for_plan("numa_nodes"))]
    return [Finding("bios.numa", Verdict.PASS, desc, "host", tuple(n.evidence), "", SRC_CPU)]


# ------------------------------------------------------------------ C-states and power profile


def _raw(o: ProbeOutput | None, pred: Any, limit: int = 12) -> list[str]:
    if o is None:
        return []
    return [ln for ln in o.lines() if pred(ln)][:limit]


def power_profile(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.power_profile: CPU idle states (``cpuidle``: driver, governor, each state's name, exit
    latency in us and whether it is disabled) and frequency policy (``cpufreq``: driver, governor,
    energy_performance_preference, turbo). C-states are reported, never judged (a power/latency trade-off); a
    frequency policy that holds the CPUs back warns (:data:`GENERIC_CPUFREQ_DRIVERS`, :data:`SLOW_EPP`); never fails."""
    fid = "bios.power_profile"
    io, fo = out.get("cpuidle"), out.get("cpufreq")
    if (io is None or (not io.ok and not io.files)) and (fo is None or (not fo.ok and not fo.files)):
        return [missing_rerun(fid, io if io is not None else fo, "the CPU idle and frequency settings", source=SRC_POWER)]
    idle = facts_of(out).parse("cpuidle", parse_cpuidle, on="files") or parse_cpuidle({})
    freq = facts_of(out).parse("cpufreq", parse_cpufreq, on="files") or parse_cpufreq({})
    parts: list[str] = []
    ev: list[str] = list(idle.evidence[:3])
    exposed = False
    if idle.states:
        exposed = True
        states = []
        for name, lat, on, off in idle.summary():
            s: str = f"{name} ({lat} us)" if lat is not None else name
            if off and on:
                s += Msg(" disabled on {off} CPU(s)", off=off)
            elif off:
                s += Msg(" disabled")
            states.append(s)
        bits = ([Msg("cpuidle driver {driver}", driver=idle.driver)] if idle.driver else []) + \
               ([Msg("governor {governor}", governor=idle.governor)] if idle.governor else [])
        parts.append(Msg("{head}: {states} ({n} CPU(s) read)", head=joined(", ", bits) if bits else "C-states",
                         states=joined(", ", states), n=len(idle.cpus)))
        first = idle.cpus[0]
        ev += _raw(io, lambda ln, c=first: ln.startswith(f"/sys/devices/system/cpu/cpu{c}/cpuidle/")
                   and ln.rsplit("/", 1)[-1].split(":")[0] in ("name", "disable", "latency"), 18)
    else:
        parts.append(Msg("no CPU idle states exposed to this kernel (cpuidle driver: {driver})",
                         driver=idle.driver or Msg("not reported")))
    if freq.policies:
        exposed = True
        gov = ", ".join(f"{k} x{v}" for k, v in freq.counts("governor").items()) or "?"
        drv = ", ".join(freq.counts("driver")) or "?"
        epp = ", ".join(f"{k} x{v}" for k, v in freq.counts("epp").items())
        p: str = Msg("cpufreq driver {drv}, governor {gov}", drv=drv, gov=gov) + (
            f", energy_performance_preference {epp}" if epp else "")
        if freq.no_turbo is not None:
            p += Msg(", turbo off (intel_pstate no_turbo=1)") if freq.no_turbo else Msg(", turbo on")
        elif freq.boost is not None:
            p += Msg(", boost on") if freq.boost else Msg(", boost off")
        parts.append(p + Msg(" ({n} policies)", n=len(freq.policies)))
        pol = freq.policies[0].name
        ev += _raw(fo, lambda ln: f"/{pol}/" in ln and ln.rsplit("/", 1)[-1].split(":")[0] in (
            "scaling_driver", "scaling_governor", "energy_performance_preference"), 3)
        ev += freq.evidence[:2]
    else:
        parts.append(N_("no cpufreq policies (frequency scaling not exposed to this kernel)"))
    problems = idle.problems + freq.problems
    if not exposed:
        return [Finding(fid, Verdict.SKIP, (Msg('C-states and CPU frequency are not exposed to this OS: ') + joined('; ', parts) + Msg(' (typical in a VM: the firmware or hypervisor controls them; nothing to read here)')), "host",
                        tuple(ev) or tuple(x for x in ((io.source if io else ""), (fo.source if fo else "")) if x), "",
                        SRC_POWER)]
    msg = joined("; ", parts)
    if problems:
        msg += (Msg('; {n_problems} value(s) unreadable', n_problems=len(problems)))
        ev += problems[:4]
    if not freq.policies:
        # C-states only: they are never judged, and no frequency policy is visible, so the machine proved nothing
        # here; the step stays open for the person who checks the profile in the BIOS (walk 18: it passed)
        return [Finding(fid, Verdict.UNKNOWN, (msg + Msg(": the frequency policy is not visible to Linux, so nothing here "
                                                         "shows the power profile")), "host", tuple(ev[:24]),
                        "Check the BIOS system profile (performance, or OS-controlled with the performance governor), "
                        "then confirm the step with a note saying what you set.", SRC_POWER)]
    held = _held_back(freq)
    if held:
        return [Finding(fid, Verdict.WARN, Msg("{problems} ({settings})", problems=joined("; ", held), settings=msg), "host", tuple(ev[:24]),
                        "Set the BIOS system profile to performance (or OS-controlled) and the governor to performance "
                        "or schedutil: `sudo cpupower frequency-set -g performance`; with intel_pstate or amd-pstate-epp "
                        "also `echo performance | sudo tee /sys/devices/system/cpu/cpufreq/policy*/"
                        "energy_performance_preference`. Make it persistent (tuned profile or a systemd unit).",
                        SRC_POWER + "; " + SRC_EPP)]
    return [Finding(fid, Verdict.PASS, (msg + Msg(". No frequency policy holds the CPUs back; the BIOS profile itself is "
                                                  "not readable from Linux (confirm it in the BIOS). C-states are a "
                                                  "power/latency trade-off, no rule: the vendor's performance profile "
                                                  "with C-states on Auto is a sound default")), "host", tuple(ev[:24]),
                    "", SRC_POWER)]


GENERIC_CPUFREQ_DRIVERS = frozenset({"acpi-cpufreq", "intel_cpufreq", "amd-pstate", "cppc_cpufreq"})
"""cpufreq drivers that run the kernel's generic governors: with them ``powersave`` pins each CPU at its lowest
frequency (docs.kernel.org/admin-guide/pm/cpufreq.html, "powersave"). intel_pstate and amd-pstate-epp in active mode
have their own ``powersave`` algorithm that still scales up, so it is not judged there."""

SLOW_EPP = frozenset({"power", "balance_power"})
"""energy_performance_preference values that bias the hardware P-state choice toward saving energy over speed
(docs.kernel.org/admin-guide/pm/intel_pstate.html, "Energy vs Performance Hints"; amd-pstate's EPP takes the same
strings)."""


def _held_back(freq: Any) -> list[str]:
    """What in the cpufreq policies slows a training node's CPUs (input pipeline, kernel launches): a generic driver
    on ``powersave``, an EPP that prefers power. Each as a sentence with its policy count."""
    said: list[str] = []
    pinned = [p for p in freq.policies if p.governor == "powersave" and p.driver in GENERIC_CPUFREQ_DRIVERS]
    if pinned:
        said.append(Msg("governor powersave on {driver} runs {n} of {total} CPU policies at their lowest frequency",
                        driver=pinned[0].driver, n=len(pinned), total=len(freq.policies)))
    slow = [p for p in freq.policies if p.epp in SLOW_EPP]
    if slow:
        said.append(Msg("energy_performance_preference {epp} on {n} of {total} CPU policies favours power over speed",
                        epp=slow[0].epp, n=len(slow), total=len(freq.policies)))
    capped = [p for p in freq.policies if p.policy_max_mhz and p.hw_max_mhz
              and p.policy_max_mhz < POLICY_CAP_FRACTION * p.hw_max_mhz]
    if capped:  # scaling_max_freq set below cpuinfo_max_freq (held-out round 343: 400-400 MHz on a 4.46 GHz Ryzen)
        said.append(Msg("the frequency policy caps {n} of {total} policies at {cap:g} MHz of their {hw:g} MHz hardware "
                        "maximum (scaling_max_freq below cpuinfo_max_freq)", n=len(capped), total=len(freq.policies),
                        cap=capped[0].policy_max_mhz, hw=capped[0].hw_max_mhz))
    return said


SRC_CPUFREQ_MIN = ("Linux kernel documentation, CPU Performance Scaling, policy attributes: cpuinfo_min_freq is 'the "
                   "minimum operating frequency the CPUs belonging to this policy can run at' "
                   "(https://docs.kernel.org/admin-guide/pm/cpufreq.html); cpupower-frequency-info(1) "
                   "(https://man7.org/linux/man-pages/man1/cpupower-frequency-info.1.html); a core read below it is being "
                   "held down by the platform (thermal or power limit, PROCHOT): intel_pstate documentation "
                   "(https://docs.kernel.org/admin-guide/pm/intel_pstate.html)")


POLICY_CAP_FRACTION = 0.9
"""A policy whose scaling_max_freq is below this fraction of cpuinfo_max_freq is capped by software (a tuning tool, a
power-saving profile): Linux cpufreq documentation, policy attributes scaling_max_freq / cpuinfo_max_freq
(https://docs.kernel.org/admin-guide/pm/cpufreq.html); the 10 % margin covers cpupower's three-figure rounding
(derived)."""


BELOW_MIN_FRACTION = 0.95
"""A current frequency under this fraction of the hardware minimum is below it: cpupower prints both rounded ("800 MHz",
"4.80 GHz", three significant figures), so a reading within 5 % of the minimum is the minimum (derived)."""


def judge_cpupower_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``bios.power_profile`` from ``cpupower frequency-info`` / ``cpufreq-info``: the same frequency-policy judgement
    as the sysfs probe (:func:`_held_back`: a generic driver on powersave, an EPP that favours power), and a CPU whose
    current frequency is below its hardware minimum (cpuinfo_min_freq) warns: something below the OS holds it down.
    No cpufreq driver at all is unknown (the firmware or a hypervisor controls frequency; check the BIOS profile)."""
    from wizard.parsers.platform import parse_cpupower

    fid = "bios.power_profile"
    freq = parse_cpupower(text)
    ev = tuple(freq.evidence[:6]) or tuple(ln.strip() for ln in text.splitlines() if ln.strip())[:4]
    driven = [p for p in freq.policies if p.driver]
    if not driven:
        return [Finding(fid, Verdict.UNKNOWN, N_("no cpufreq driver is active: Linux does not control the CPU frequency "
                                                 "here (the firmware or a hypervisor does), so this output shows no "
                                                 "power profile"), "host", ev,
                        "Check the BIOS system profile (performance, or OS-controlled); on a bare-metal node load the "
                        "platform's cpufreq driver (acpi-cpufreq, intel_pstate, amd-pstate or cppc_cpufreq) and run "
                        "`cpupower frequency-info` again.", SRC_POWER)]
    gov = ", ".join(f"{k} x{v}" for k, v in freq.counts("governor").items()) or "?"
    drv = ", ".join(freq.counts("driver")) or "?"
    settings: str = Msg("cpufreq driver {drv}, governor {gov}", drv=drv, gov=gov)
    if freq.boost is not None:
        settings += Msg(", boost on") if freq.boost else Msg(", boost off")
    settings += Msg(" ({n} policies)", n=len(freq.policies))
    held = _held_back(freq)
    low = [p for p in driven if p.cur_mhz is not None and p.hw_min_mhz and p.cur_mhz < BELOW_MIN_FRACTION * p.hw_min_mhz]
    if low:
        held.append(Msg("{n} of {total} CPUs read {cur:g} MHz, below their hardware minimum of {floor:g} MHz: the "
                        "platform is holding them down (a thermal or power limit, PROCHOT), not the governor",
                        n=len(low), total=len(driven), cur=low[0].cur_mhz, floor=low[0].hw_min_mhz))
    if held:
        return [Finding(fid, Verdict.WARN, Msg("{problems} ({settings})", problems=joined("; ", held),
                                               settings=settings), "host", ev,
                        "Set the BIOS system profile to performance (or OS-controlled) and the governor to performance "
                        "or schedutil: `sudo cpupower frequency-set -g performance`. A capped policy: raise its maximum "
                        "(`sudo cpupower frequency-set -u <hardware maximum>`) and find what set it (TLP's "
                        "CPU_SCALING_MAX_FREQ_*, power-profiles-daemon, a tuned profile). A CPU below its hardware minimum: "
                        "check cooling, the BIOS power limits and the BMC's event log, and watch it under load with "
                        "`turbostat`.", SRC_POWER + "; " + SRC_EPP + "; " + SRC_CPUFREQ_MIN)]
    return [Finding(fid, Verdict.PASS, settings + Msg(". No frequency policy holds the CPUs back; the BIOS profile "
                                                      "itself is not readable from Linux (confirm it in the BIOS)"),
                    "host", ev, "", SRC_POWER)]


# ------------------------------------------------------------------ PCIe link speed of the root ports


def pcie_root_ports(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.pcie: the link of the root port above each GPU (``lspci_vvv``). A LnkCtl2 target speed below
    what both ends can do (min of the port's and the GPU's LnkCap) is a configuration cap (the BIOS slot
    speed setting): WARN at any load. LnkSta below that is judged only under load
    (``plan["under_load"] is True`` -> FAIL), else WARN "re-check under load"."""
    from wizard.rules.gpu_presence import _no_gpu
    from wizard.parsers.pcie import fmt_link, parse_lspci

    fid = "bios.pcie"
    o = out.get("lspci_vvv")
    if o is None or (not o.ok and not o.text.strip()):
        if _no_gpu(out):
            return [Finding(fid, Verdict.SKIP, "no NVIDIA GPU on the PCI bus: no GPU slot to check (see health.gpu_pci)",
                            "host", (), "", SRC_LINK, waits_for=WAITS_FOR_GPUS)]
        return [missing_rerun(fid, o, "the PCIe link of the GPUs' root ports", remedy=REMEDY_ROOT_LSPCI, source=SRC_LINK)]
    facts = facts_of(out).parse_text("lspci_vvv", parse_lspci)
    assert facts is not None
    gpus = [d for d in facts.gpus if d.bdf]
    if not gpus:
        return [Finding(fid, Verdict.SKIP, "no NVIDIA GPU in the lspci output: no GPU slot to check", "host",
                        tuple(d.header for d in facts.devices[:3] if d.header), "", SRC_LINK)]
    loaded = isinstance(plan, Mapping) and plan.get("under_load") is True
    findings: list[Finding] = []
    ok: list[str] = []
    ok_ev: list[str] = []
    denied: list[str] = []
    for gdev in gpus:
        parents = facts.parents(gdev)
        roots = [p for p in parents if "root port" in p.port_type.lower()]
        port = roots[0] if roots else (parents[-1] if parents else None)
        subj = gpu_subject(None, gdev.bdf)
        if port is None:
            ok.append(f"{gdev.bus_id}: its root port is not in this output")
            continue
        if port.caps_denied or not port.lnkcap.present:
            denied.append(port.header or port.bus_id)
            continue
        caps = [c for c in (port.lnkcap.speed_gts, gdev.lnkcap.speed_gts) if c is not None]
        cap = min(caps) if caps else None
        target = port.lnkctl2_target_gts
        sta = port.lnksta.speed_gts
        ev = [x for x in (gdev.header, gdev.lnkcap.line, port.header, port.lnkcap.line, port.lnkctl2_line,
                          port.lnksta.line) if x]
        who = f"GPU {gdev.bus_id} root port {port.bus_id}"
        if target is not None and cap is not None and target < cap:
            findings.append(Finding(fid, Verdict.WARN, Msg("{who}: LnkCtl2 target speed {target:g} GT/s is below the {cap:g} GT/s both ends support: "
                                                           "the slot's speed is capped in configuration (BIOS PCIe link speed setting)", who=who, target=target, cap=cap), subj, tuple(ev),
                                    "Set the slot's PCIe link speed to Auto (or its maximum generation) in the BIOS "
                                    "PCIe configuration menu, then reboot and re-check.", SRC_LINK))
        elif sta is not None and cap is not None and sta < cap:
            v = Verdict.FAIL if loaded else Verdict.WARN
            tail = (Msg('under load') if loaded else Msg('at idle or unknown load: GPUs lower the link speed when idle, re-check under load (health stage)'))
            findings.append(Finding(fid, v, Msg("{who}: link at {fmt_link}, below {cap:g} GT/s {tail}", who=who, fmt_link=fmt_link(sta, port.lnksta.width), cap=cap, tail=tail), subj, tuple(ev),
                                    "Re-check while a GPU test runs (`sudo lspci -vv -s <port> | grep LnkSta`); if it "
                                    "stays low, set the slot speed to Auto in the BIOS and check risers and seating.",
                                    SRC_LINK))
        else:
            ok.append(f"{who}: LnkCap {fmt_link(port.lnkcap.speed_gts, port.lnkcap.width)}"
                      + (f", target {target:g} GT/s" if target is not None else "")
                      + (f", LnkSta {fmt_link(sta, port.lnksta.width)}" if sta is not None else ""))
            ok_ev += ev
    if denied and not findings and not ok_ev:
        return [Finding(fid, Verdict.UNKNOWN, "the root ports' link settings are not readable: lspci ran without root",
                        "host", tuple(denied[:5]) + ("Capabilities: <access denied>",), REMEDY_ROOT_LSPCI, SRC_LINK)]
    if ok:
        findings.append(Finding(fid, Verdict.PASS, (Msg('root ports above the GPUs are not capped below their link capability: ') + SEMICOLON.join(ok[:6]) + (' ...' if len(ok) > 6 else '')), "host",
                                tuple(ok_ev[:24]), "", SRC_LINK))
    return findings


# ------------------------------------------------------------------ SR-IOV


def sriov(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.sriov: PCI functions exposing SR-IOV (``sriov``: sriov_totalvfs, sriov_numvfs). Reported:
    only needed for VFs/VMs, harmless if on."""
    fid = "bios.sriov"
    o = out.get("sriov")
    if o is None or not o.ok:
        return [missing_rerun(fid, o, "which PCI functions expose SR-IOV", source=SRC_SRIOV)]
    parsed = facts_of(out).parse("sriov", parse_sriov, on="files")
    assert parsed is not None
    devs, problems = parsed
    if problems and not devs:
        return [garbled(fid, o, "the SR-IOV sysfs files", problems, source=SRC_SRIOV)]
    if not devs:
        return [Finding(fid, Verdict.PASS, "no PCI function exposes SR-IOV (off in the BIOS or not supported): nothing "
                        "to do for bare-metal training", "host", (o.source + ": no sriov_totalvfs files",), "",
                        SRC_SRIOV)]
    active = [d for d in devs if d.num_vfs]
    desc = ", ".join(f"{d.bdf} ({d.kind}, {d.num_vfs or 0}/{d.total_vfs} VFs)" for d in devs[:8])
    ev = [ln for ln in o.lines() if "/sriov_" in ln][:16]
    msg = (Msg('{n_devs} PCI function(s) can provide virtual functions: {desc}', n_devs=len(devs), desc=desc) + (' ...' if len(devs) > 8 else ''))
    msg += (Msg('; VFs are enabled on {n_active}', n_active=len(active)) if active else Msg('; no VFs enabled'))
    msg += (Msg('. SR-IOV is only needed for VFs (vGPU, NIC VFs, VMs) and harmless if on'))
    return [Finding(fid, Verdict.PASS, msg, "host", tuple(ev), "", SRC_SRIOV)]


# ------------------------------------------------------------------ Secure Boot


def secure_boot(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.secure_boot: Secure Boot state from ``mokutil_sb_state`` or the ``efi_secureboot`` efivars
    (value byte 1 = on), whether the system booted through UEFI (``efi_firmware``), and the kernel's
    module signature enforcement (``module_signing``); the message says what that means for the
    NVIDIA driver install."""
    fid = "bios.secure_boot"
    mo, eo, fo, so = (out.get(n) for n in ("mokutil_sb_state", "efi_secureboot", "efi_firmware", "module_signing"))
    state = ""
    shim_off = setup = False
    ev: list[str] = []
    if mo is not None and (mo.ok or mo.text.strip()):
        sb = facts_of(out).parse("mokutil_sb_state", parse_mokutil_sb_state, on="text+stderr")
        assert sb is not None
        if sb.state:
            state, shim_off, setup = sb.state, sb.shim_validation_off, sb.setup_mode
            ev += [mo.source] + sb.lines
    if not state and eo is not None and eo.files:
        sbv = efivar_value(eo.files.get(SECUREBOOT_EFIVAR) or "")
        smv = efivar_value(eo.files.get(SETUPMODE_EFIVAR) or "")
        if sbv is not None:
            state = "enabled" if sbv == 1 else "disabled"
            setup = smv == 1
            ev.append(f"{SECUREBOOT_EFIVAR}: {(eo.files.get(SECUREBOOT_EFIVAR) or '').strip()} (hex: 4 attribute "
                      f"bytes, then value {sbv})")
            if smv is not None:
                ev.append(f"{SETUPMODE_EFIVAR}: value {smv}")
    uefi: bool | None = None
    if fo is not None and fo.ok:
        uefi = "/sys/firmware/efi" in fo.files
    enforce = ""
    if so is not None and so.files:
        for p, c in so.files.items():
            if c is None:
                continue
            ev.append(f"{p}:{c.strip()}")
            if p.endswith("sig_enforce") and c.strip() == "Y":
                enforce = "the kernel enforces module signatures (sig_enforce=Y)"
            m = re.search(r"\[(\w+)\]", c)
            if p.endswith("lockdown") and m and m.group(1) != "none":
                enforce = enforce or f"kernel lockdown is {m.group(1)} (unsigned modules refused)"
    if not state:
        if uefi is False:
            return [Finding(fid, Verdict.SKIP, "Secure Boot not exposed: this kernel was not booted through UEFI (no "
                            "/sys/firmware/efi), so there is no Secure Boot to enforce module signatures; "
                            "DKMS-built NVIDIA modules load unsigned", "host",
                            ("ls -d /sys/firmware/efi: no such directory",) + tuple(ev), "", SRC_SB)]
        evs = (mo.evidence_error() if mo is not None else ["mokutil --sb-state: not collected"])
        if eo is not None:
            evs += [eo.source] + [f"{p}: <{e}>" for p, e in list(eo.file_errors.items())[:3]]
        return [Finding(fid, Verdict.UNKNOWN, "could not tell whether Secure Boot is on: mokutil gave no state and the "
                        "SecureBoot EFI variable was not readable", "host", tuple(evs[:8]),
                        Msg("Install mokutil and run `mokutil --sb-state` (or run bringup as root to read "
                            "{SECUREBOOT_EFIVAR}).", SECUREBOOT_EFIVAR=SECUREBOOT_EFIVAR), SRC_SB)]
    if state == "unsupported":
        return [Finding(fid, Verdict.SKIP, "Secure Boot not available on this system (mokutil: no EFI variables / no "
                        "Secure Boot support): DKMS-built NVIDIA modules load unsigned", "host", tuple(ev), "", SRC_SB)]
    if state == "enabled" and shim_off:
        msg = (Msg('Secure Boot is on in the firmware but validation is disabled in shim (mokutil --disable-validation): unsigned kernel modules load; re-enabling validation would then require signed NVIDIA modules'))
    elif state == "enabled":
        msg = (Msg('Secure Boot is on: the kernel loads only signed modules') + (f' ({enforce})' if enforce else '') + Msg(". Install the NVIDIA driver as signed precompiled packages (Ubuntu: linux-modules-nvidia-<branch>-server-<kernel>) or sign the DKMS-built modules with a Machine Owner Key enrolled with `mokutil --import`; an unsigned module fails with 'Key was rejected by service'"))
    else:
        msg = (Msg('Secure Boot is off') + (Msg(' (platform in Setup Mode: no keys enrolled)') if setup else '') + Msg(': DKMS-built NVIDIA modules load without signing') + (Msg('; note: {enforce}', enforce=enforce) if enforce else ''))
    return [Finding(fid, Verdict.PASS, msg, "host", tuple(ev[:10]), "", SRC_SB)]


# ------------------------------------------------------------------ memory channels


def _memory_devices(out: Outputs) -> tuple[list[MemoryDevice] | None, str, list[str], Finding | None]:
    """(devices or None, where from, evidence of failed sources, a terminal finding)."""
    fid = "bios.memory_channels"
    so, do, to = out.get("smbios_memory"), out.get("dmidecode_17"), out.get("dmi_tables")
    tried: list[str] = []
    if so is not None and so.files:
        devs, problems = smbios_hex_devices(so.files)
        if devs:
            return devs, "SMBIOS type 17 (sysfs raw entries)", [], None
        tried += [so.source] + [f"{p}: <{e}>" for p, e in list(so.file_errors.items())[:3]] + problems[:3]
    if do is not None and do.text.strip():
        dmi = facts_of(out).parse_text("dmidecode_17", parse_dmidecode_memory)
        assert dmi is not None
        devs, problems, seen = dmi
        if devs:
            return devs, "dmidecode -t 17", [], None
        if not seen:
            return None, "", [], garbled(fid, do, "the dmidecode output", do.lines()[:10], source=SRC_MEM)
        lines = do.text.splitlines()
        types = list(dict.fromkeys(lines[i + 1].strip() for i, ln in enumerate(lines[:-1])
                                   if re.match(r"^Handle 0x[0-9A-Fa-f]+, DMI type \d+", ln) and lines[i + 1].strip()))
        if types:  # a dmidecode listing of other types (System Information, ...): the slots are not in it
            product = [ln.strip() for ln in lines if re.match(r"^\s+(?:Manufacturer|Product Name):", ln)][:2]
            return None, "", [], Finding(
                fid, Verdict.UNKNOWN, Msg("this dmidecode output holds no Memory Device (type 17) entries, only {types}: "
                                          "the memory slots are not in it", types=", ".join(types[:6])),
                "host", tuple([do.source] + product + [ln for ln in lines if "DMI type" in ln][:4]),
                "Paste `sudo dmidecode -t 17` (the memory devices: every DIMM slot, populated or empty).", SRC_MEM)
        tried += [do.source, "(no Memory Device in the output)"]
    elif do is not None:
        tried += do.evidence_error()
    if to is not None and to.ok and "/sys/firmware/dmi" not in to.files:
        # the machine cannot tell here, so the step stays open for a person's check (unknown), never "n/a"
        return None, "", [], Finding(
            fid, Verdict.UNKNOWN, "SMBIOS/DMI tables not exposed (no /sys/firmware/dmi): the memory slots cannot be "
            "read on this system (typical of a VM)", "host",
            ("ls -d /sys/firmware/dmi: no such directory",) + tuple(tried[:4]),
            "Check the DIMM population in the BIOS or BMC (one DIMM in every memory channel of each socket), then "
            "confirm the step with a note saying what you saw.", SRC_MEM)
    return None, "", tried, Finding(
        fid, Verdict.UNKNOWN, "could not read the memory slots: the SMBIOS type 17 entries and dmidecode gave nothing "
        "readable", "host", tuple(tried[:10]) or ("(no probe output)",),
        "Run bringup as root (the raw SMBIOS entries and dmidecode need root), or paste `sudo dmidecode -t 17` "
        "into `bringup explain`.", SRC_MEM)


MIN_CHANNELS_MULTI_SOCKET = 4
"""Memory channels per socket of every multi-socket x86 server CPU since 2012: Intel Xeon E5-2600 (v1-v4) 4, Xeon
Scalable 6 (1st/2nd gen) or 8 (3rd gen on), AMD EPYC 8 (7001-7003) or 12 (9004) (Intel ARK and AMD EPYC product
specifications, 'Max # of Memory Channels')."""


def memory_channels(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """bios.memory_channels: populated and empty DIMM slots per socket from SMBIOS type 17
    (``smbios_memory`` raw entries, else ``dmidecode_17`` text), and empty memory channels where the
    slot names say which channel a slot is on. ``cpu_topology`` (optional) tells how many sockets
    have a CPU, so the slots of an empty socket are not counted as empty channels."""
    fid = "bios.memory_channels"
    devices, where, _, terminal = _memory_devices(out)
    if terminal is not None:
        return [terminal]
    assert devices is not None
    slots = memory_slots(devices)
    pop = [s for s in slots if s.device.populated]
    unknown = [s for s in slots if s.device.populated is None]
    total_mib = sum(s.device.size_mib or 0 for s in pop)
    ev_all = [ln for s in slots for ln in s.device.evidence]
    n_sockets = None
    ct = out.get("cpu_topology")
    if ct is not None and ct.files:
        topo_facts = facts_of(out).parse("cpu_topology", parse_cpu_topology, on="files")
        n_sockets = topo_facts.sockets if topo_facts is not None else None
    by_socket: dict[str, list[Any]] = {}
    for s in slots:
        by_socket.setdefault(s.socket, []).append(s)
    sockets_with = {k for k, v in by_socket.items() if any(x.device.populated for x in v)}
    per_socket = []
    for sk, ss in sorted(by_socket.items()):
        chans = {x.channel for x in ss if x.channel}
        fullc = {x.channel for x in ss if x.channel and x.device.populated}
        n_full, n_all = sum(1 for x in ss if x.device.populated), len(ss)
        part = (Msg("socket {sk}: {n_full} of {n_all} slots", sk=sk, n_full=n_full, n_all=n_all) if sk else
                Msg("slots without a socket name: {n_full} of {n_all} slots", n_full=n_full, n_all=n_all))
        if chans:
            part += Msg(", {n_fullc} of {n_chans} channels populated", n_fullc=len(fullc), n_chans=len(chans))
        per_socket.append(part)
    speeds = sorted({mts for s in pop if (mts := s.device.configured_speed_mts or s.device.speed_mts)})
    types = sorted({s.device.mem_type for s in pop if s.device.mem_type})
    desc = (Msg('{n_pop} of {n_slots} DIMM slots populated ({human_bytes}', n_pop=len(pop), n_slots=len(slots), human_bytes=human_bytes(total_mib * 1024 ** 2)) + (f", {'/'.join(types)}" if types else '') + (Msg(', {str} MT/s', str='/'.join(str(x) for x in speeds)) if speeds else '') + Msg('; from {where}): ', where=where) + SEMICOLON.join(per_socket))
    if not slots:
        return [Finding(fid, Verdict.UNKNOWN, Msg("no memory device in the {where} data", where=where), "host", tuple(ev_all[:5]),
                        "Run `sudo dmidecode -t 17` and check it lists the DIMM slots.", SRC_MEM)]
    if not pop and not unknown:
        return [Finding(fid, Verdict.UNKNOWN, Msg("no slot reports a module ({n_slots} slots read from {where}): the firmware's SMBIOS data "
                                                  "does not describe the installed memory", n_slots=len(slots), where=where), "host", tuple(ev_all[:12]),
                        "Check the DIMM population in the BIOS or BMC.", SRC_MEM)]
    # empty channels, where the names tell the channel
    groups: dict[tuple[str, str], list[Any]] = {}
    for s in slots:
        if s.channel:
            groups.setdefault((s.socket, s.channel), []).append(s)
    ignore_sockets: set[str] = set()
    if n_sockets is not None and len(sockets_with) == n_sockets:
        ignore_sockets = {k for k in by_socket if k not in sockets_with}
    empty = [(sk, ch) for (sk, ch), ss in sorted(groups.items())
             if sk not in ignore_sockets and all(x.device.populated is False for x in ss)]
    unnamed_empty = [s for s in slots if not s.channel and s.device.populated is False]
    raw = out.get("dmidecode_17")
    excerpt = (where == "dmidecode -t 17" and raw is not None and len(slots) < 4
               and not re.search(r"SMBIOS [\d.]+ present|^# dmidecode|Physical Memory Array", raw.text or "", re.M))
    if empty and excerpt:  # a few Memory Device records pasted alone: not the board's slots, so no channel verdict
        return [Finding(fid, Verdict.PASS, desc + Msg(" (an excerpt of {n} slot record(s): memory channels not judged)",
                                                      n=len(slots)), "host", tuple(ev_all[:8]), "", SRC_MEM)]
    if empty:
        names = ", ".join(f"{'socket ' + sk + ' ' if sk else ''}channel {ch}" for sk, ch in empty[:12])
        ev = [ln for (sk, ch) in empty for s in groups[(sk, ch)] for ln in s.device.evidence][:20]
        return [Finding(fid, Verdict.WARN, Msg("{n_empty} memory channel(s) have no DIMM: {names}. {desc}", n_empty=len(empty), names=names, desc=desc), "host",
                        tuple(ev), "Populate every memory channel (one DIMM per channel, identical DIMMs) following "
                        "the board manual's population order: an empty channel cuts memory bandwidth and leaves the "
                        "memory unbalanced across channels.", SRC_MEM)]
    # every multi-socket server CPU of the last decade has four memory channels or more (Xeon E5: 4, Xeon Scalable: 6
    # or 8, EPYC: 8 or 12): a socket with fewer DIMMs than that leaves channels empty, whatever the slot names
    # (held-out round 166: 2 DIMMs per socket of a 2 x 12-slot Xeon E5 v4 board)
    named = [sk for sk in by_socket if sk]
    thin = [(sk, sum(1 for x in by_socket[sk] if x.device.populated)) for sk in sorted(named)
            if sk not in ignore_sockets and 0 < sum(1 for x in by_socket[sk] if x.device.populated) < MIN_CHANNELS_MULTI_SOCKET]
    if unnamed_empty and len(named) >= 2 and thin and len(by_socket[thin[0][0]]) >= MIN_CHANNELS_MULTI_SOCKET:
        ev = [ln for s in pop[:8] for ln in s.device.evidence][:18]
        return [Finding(fid, Verdict.WARN,
                        Msg("{desc}; {thin}: fewer DIMMs than the {mn} memory channels every multi-socket server CPU "
                            "has at least, so channels are empty and memory bandwidth is cut", desc=desc,
                            thin=", ".join(f"socket {sk} {n} DIMM(s)" for sk, n in thin), mn=MIN_CHANNELS_MULTI_SOCKET),
                        "host", tuple(ev),
                        "Populate every memory channel (one DIMM per channel, identical DIMMs) following the board "
                        "manual's population order.", SRC_MEM)]
    if unnamed_empty:
        ev = [ln for s in unnamed_empty[:6] for ln in s.device.evidence][:18]
        return [Finding(fid, Verdict.UNKNOWN, Msg("{desc}; the slot names ({a1}{a2} empty) do not say which channel each slot is on, so "
                                                  "bringup cannot tell whether a channel is empty", desc=desc, a1=', '.join(s.device.locator for s in unnamed_empty[:6]), a2=' ...' if len(unnamed_empty) > 6 else ''), "host", tuple(ev),
                        "Check the board manual's DIMM population table: every memory channel should hold one DIMM "
                        "(fill every channel before adding a second DIMM per channel).", SRC_MEM)]
    note = ""
    if ignore_sockets:
        note = (Msg('; {items} has no DIMM and no CPU ({n_sockets} socket(s) online)', items=', '.join('socket ' + k for k in sorted(ignore_sockets)), n_sockets=n_sockets))
    if unknown:
        note += (Msg('; {n_unknown} slot(s) report an unknown size', n_unknown=len(unknown)))
    verdict = Verdict.PASS
    msg = (Msg('every memory channel has a DIMM: {desc}{note}', desc=desc, note=note) if groups else Msg('every DIMM slot is populated: {desc}{note}', desc=desc, note=note))
    ev = [ln for s in pop[:8] for ln in s.device.evidence][:24]
    return [Finding(fid, verdict, msg, "host", tuple(ev), "", SRC_MEM)]
