"""Is every GPU there and does the driver see it: NVIDIA GPUs on the PCI bus (sysfs, lspci, the
lspci IOMMU group listing), the kernel driver bound to each, nouveau, the nvidia module, nvidia-smi and
NVML, and the GPU count / responsiveness nvidia-smi reports.

The GPU count comes from PCI, so a GPU the driver could not bring up still counts; fewer GPUs in NVML
than on the bus is a failure. When no NVIDIA GPU is on the bus at all, driver checks are ``skip`` (they
have nothing to drive) and the one failure points at the hardware. Every count against the plan is
judged by :func:`count_verdict`: fewer than planned -> FAIL, more -> WARN.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from wizard.common import gpu_subject, normalise_bus_id
from wizard.install import catalog
from wizard.facts import facts_of
from wizard.model import WAITS_FOR_GPUS, Finding, Measure, Verdict, measure
from wizard.parsers.gpu import (
    GpuInformationFiles,
    PciFacts,
    parse_driver_version,
    parse_nvidia_smi_l,
    parse_nvml,
    parse_pci,
)
from wizard.parsers.host import parse_modules
from wizard.parsers.pcie import (
    LspciDevice,
    LspciFacts,
    device_label,
    parse_iommu_groups,
    parse_lspci,
)
from wizard.parsers.smi import GpuFacts, SmiDoc, unreachable_gpus
from wizard.probes import NVIDIA_VENDOR, ProbeOutput
from wizard.rules.kernel_log_common import plural
from wizard.rules.common import Outputs, garbled, missing
from wizard.rules.smi import (
    ERR_FIELDS_UNRESPONSIVE, SRC_MIG, SRC_SMI, _err_fields, _ev, _pass_group, _unknown_error_fields, gpu_class, subject, unresponsive,
)
from wizard.i18n import N_, Msg, SEMICOLON
from wizard.nvml_probe import INIT_ERRORS

SRC_COUNT = ("PCI display class 0300/0302 of vendor 10de as lspci lists it (lspci(8) man page, "
             "https://man7.org/linux/man-pages/man8/lspci.8.html); Meta GCM health checks, "
             "https://github.com/facebookresearch/gcm (gpu_num); Azure HPC health checks, "
             "https://github.com/Azure/azurehpc-health-checks (check_gpu_count)")


SRC_REV_FF = ("PCI Express Base Specification, configuration reads of a function that does not respond complete "
              "with all ones (0xFFFF vendor ID / 0xFF revision), as Linux's pci_device_is_present() checks, "
              "https://docs.kernel.org/PCI/pci-error-recovery.html; NVIDIA Xid catalog, Xid 79 'GPU has fallen off "
              "the bus', https://docs.nvidia.com/deploy/xid-errors/")


SRC_DRIVER = ("NVIDIA CUDA installation guide for Linux, 'Disabling Nouveau', "
              "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/; NVIDIA GPUDirect RDMA guide, "
              "'IOMMUs' (VFIO/IOMMU only for VMs and passthrough), https://docs.nvidia.com/cuda/gpudirect-rdma/")


def count_measure(seen: int, want: Any, label: str) -> Measure | None:
    """GPUs seen against the plan's gpu_count as a measured value (``equal``), ``None`` without a usable plan count
    (:func:`count_verdict` judges the same pair)."""
    if not isinstance(want, int) or isinstance(want, bool) or want <= 0:
        return None
    return measure(seen, want, "GPUs", "equal", label)


def count_verdict(seen: int, want: Any) -> Verdict:
    """GPUs seen (on the bus, in lspci, by nvidia-smi) against the plan's gpu_count: fewer -> FAIL, more
    -> WARN (the plan may be wrong), as many or no count planned -> PASS. Every GPU count rule uses it."""
    if not isinstance(want, int) or isinstance(want, bool) or want <= 0:
        return Verdict.PASS
    return Verdict.FAIL if seen < want else Verdict.WARN if seen > want else Verdict.PASS


HGX_URL = "https://www.nvidia.com/en-us/data-center/hgx/"
SRC_HGX_COUNT = (f"NVIDIA HGX platform ({HGX_URL}): SXM GPUs come on 4- or 8-GPU baseboards; cloud VMs on them are "
                 "sold as 1, 2, 4 or 8 GPUs")
SXM_SLICES = (1, 2, 4, 8)
"""GPU counts an SXM node or a VM on an HGX board has (:data:`SRC_HGX_COUNT`); another count of SXM GPUs means one
is missing when no plan says otherwise."""


def sxm_nvswitch_class(name: str) -> bool:
    """An SXM GPU of the NVSwitch generations (A100, H100/H800/H200, B200/B300): its ``assets/nvlink_expected.csv``
    row is ``mode=all`` or its name says SXM; not Grace-Blackwell (GB200/GB300: the NVLink switches are in separate
    switch trays) nor V100/P100 (DGX-1's hybrid cube mesh has no NVSwitch)."""
    from wizard.rules.nvlink import sku_row

    if not name or re.search(r"\bGB[23]00|V100|P100", name, re.I):
        return False
    row = sku_row(name)
    return bool((row and row.get("mode") == "all") or re.search(r"\bSXM", name, re.I))


SRC_FABRIC_RA = ("NVIDIA HGX AI Factory reference architecture (H100, H200, B200): a 2-8-9-400 configuration, 400 Gb/s "
                 "of RDMA compute fabric per GPU (https://docs.nvidia.com/reference-architectures/"
                 "hgx-ai-factory-h100-h200-b200/abstract)")
FABRIC_GBIT_PER_GPU = (200.0, 400.0)
"""Compute-fabric bandwidth per GPU (Gb/s) the nodes of :func:`fabric_class_gpu` GPUs are built with: 400 in NVIDIA's
reference architectures (:data:`SRC_FABRIC_RA`), 200 on the HDR/200 GbE builds of the A100 generation."""


def grace_superchip(name: str) -> bool:
    """``name`` is a GPU of NVIDIA's Grace superchips (GH200, GB200, GB300): joined to the Grace CPU by NVLink-C2C."""
    return bool(name) and bool(re.search(r"\bG[BH][123]00\b", name, re.I))


def fabric_class_gpu(name: str) -> bool:
    """``name`` (a GPU name as nccl-tests, perftest or NVML print it) is a GPU whose nodes are built with an RDMA compute
    fabric of :data:`FABRIC_GBIT_PER_GPU` per GPU: an SXM GPU of the NVSwitch generations (:func:`sxm_nvswitch_class`)
    or a Grace superchip (:func:`grace_superchip`)."""
    return grace_superchip(name) or sxm_nvswitch_class(name)


def sxm_count_doubt(seen: int, models: Any) -> Msg | None:
    """With no planned count: ``seen`` GPUs all of one SXM model (``models``: their names) in a number an HGX node or
    a VM on one never has (:data:`SXM_SLICES`) -> why that suggests a missing GPU; else None (no doubt, mixed or
    unnamed models, or not SXM). Every count rule that knows the model asks it (nvidia-smi, nvidia-smi -L, dcgmi
    discovery, kubectl describe node)."""
    names = {m for m in models if m}
    if len(names) != 1 or seen in SXM_SLICES or seen <= 0:
        return None
    model = next(iter(names))
    if not sxm_nvswitch_class(model):
        return None
    return Msg("{model} is an SXM GPU: an HGX node or a VM on one has 1, 2, 4 or 8 of them, so {seen} suggests a GPU is "
               "missing (or this is a container given {seen} of them)", model=model, seen=seen)


COUNT_REMEDY = ("Compare with `lspci -d 10de:` and `nvidia-smi -L`, read `dmesg | grep -e NVRM -e Xid` for a GPU that "
                "failed to initialise, and set the plan's GPU count (`bringup plan gpu_count=N`) if this many is "
                "intended.")


def sxm_count_finding(what: str, doubt: str, evidence: tuple[str, ...]) -> Finding:
    """``health.gpu_count`` WARN for :func:`sxm_count_doubt`: ``what`` was counted, ``doubt`` why it looks short."""
    return Finding("health.gpu_count", Verdict.WARN, Msg("{what}: {doubt}", what=what, doubt=doubt), "host", evidence,
                   COUNT_REMEDY, SRC_HGX_COUNT + "; " + SRC_A1)


def _virtualised(plan: Mapping[str, Any]) -> bool:
    v = plan.get("virtualization")
    return bool(v) and v not in ("false", "no", "0")


def plan_count(plan: Mapping[str, Any]) -> int | None:
    """The plan's ``gpu_count`` (GPUs per node): an int above 0, else None (unset, a bool, a float, 0 or less). The one
    reading of that answer (the rules, :func:`gpus_planned`)."""
    v = plan.get("gpu_count")
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def gpus_planned(plan: Mapping[str, Any]) -> bool:
    """The plan expects NVIDIA GPUs in this node: a ``gpu_count`` (:func:`plan_count`) or a ``gpu_model`` named. A
    check's skip for want of a GPU on the bus then waits for them (``Finding.waits_for``), it is not "n/a"."""
    return plan_count(plan) is not None or bool(str(plan.get("gpu_model") or "").strip())


def _subject(d: LspciDevice) -> str:
    return gpu_subject(None, d.bdf) if d.bdf else "device in this excerpt"


def _who(d: LspciDevice) -> str:
    if not d.bdf:
        return N_("the device in this excerpt (its lspci header line is not included)")
    label = device_label(d)
    return f"{label} {d.bus_id}".strip() if label else d.bus_id


def _lspci_facts(out: Outputs) -> tuple[LspciFacts | None, ProbeOutput | None]:
    o = out.get("lspci_vvv")
    if o is None or (not o.ok and not o.text.strip()):
        return None, o
    return facts_of(out).parse_text("lspci_vvv", parse_lspci), o


def _whole(o: ProbeOutput | None, facts: LspciFacts) -> bool:
    """The output is a whole ``lspci`` listing (this node's probe), not a pasted excerpt."""
    return bool(o and o.source.startswith("$ lspci") and len(facts.devices) > 3)


BOARD_SWITCHES: dict[str, tuple[int, int, str, str]] = {
    "1af1": (6, 8, "A100", "HGX A100 8-GPU"),
    "22a3": (4, 8, "H100", "HGX H100/H200 8-GPU"),
}
"""NVSwitch PCI device id -> (chips on the baseboard, GPUs it carries, the chip's generation, the board): six
second-generation NVSwitches join the eight A100s of an HGX A100 8-GPU board, four
third-generation NVSwitches the eight H100/H200 of an HGX H100/H200 board (:data:`SRC_BOARD_SWITCHES`). The PCI ids
are those of the pci.ids database (10de:1af1 GA100 [A100 NVSwitch], 10de:22a3 GH100 [H100 NVSwitch])."""
SRC_BOARD_SWITCHES = ("NVIDIA DGX A100 User Guide, hardware overview: 8 A100 GPUs, 6 NVSwitches "
                      "(https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html); NVIDIA DGX H100/H200 "
                      "User Guide, hardware overview: 8 GPUs, 4 NVSwitches (https://docs.nvidia.com/dgx/dgxh100-user-guide/"
                      "introduction-to-dgxh100.html); The PCI ID Repository (https://pci-ids.ucw.cz/read/PC/10de)")


def board_gpus(switch_ids: list[str]) -> tuple[int, str, str] | None:
    """(GPUs the baseboard carries, NVSwitch generation, board name) when ``switch_ids`` (NVSwitch PCI device ids, one
    per function listed) are all one board's chips and as many as it has; None otherwise (an excerpt cut among the
    switches, or another board)."""
    ids = set(switch_ids)
    if len(ids) != 1:
        return None
    row = BOARD_SWITCHES.get(next(iter(ids)))
    if row is None or len(switch_ids) != row[0]:
        return None
    return row[1], row[2], row[3]


def _count_finding(fid: str, gpus: list[LspciDevice], switches: int, plan: Mapping[str, Any], ev: list[str],
                   whole: bool, extra: str = "", switch_ids: list[str] | None = None) -> Finding:
    names: dict[str, int] = {}
    for g in gpus:
        key = f"{device_label(g)} (10de:{g.device_id})" if g.device_id else device_label(g)
        names[key] = names.get(key, 0) + 1
    desc = (Msg('{n_gpus} NVIDIA GPU(s) in lspci', n_gpus=len(gpus)) + (': ' + ', '.join((f'{n}x {k}' for k, n in names.items())) if names else ''))
    if switches:
        desc += (Msg('; {switches} NVSwitch function(s)', switches=switches))
    numa = sorted({g.numa_node for g in gpus if g.numa_node is not None})
    if numa:
        desc += (Msg('; NUMA node(s) {str}', str=', '.join(str(n) for n in numa)))
    desc += extra
    expected = plan_count(plan)
    board = board_gpus(switch_ids) if switch_ids else None
    if expected is None and board is not None and len(gpus) < board[0]:
        # the NVSwitch chips say which baseboard this is, and how many GPUs it carries (held-out round 289: four
        # H100 NVSwitches, an HGX H100 8-GPU board, and four GPUs on the bus)
        return Finding(fid, Verdict.FAIL,
                       Msg("{desc}: {switches} {chip} NVSwitch chips are an {board} baseboard, which carries {n} GPUs: "
                           "{missing} of them are not on the PCI bus", desc=desc, switches=switches, chip=board[1],
                           board=board[2], n=board[0], missing=board[0] - len(gpus)), "host", tuple(ev[:20]),
                       "A GPU is missing from the PCI bus: check the BMC's event log and `dmesg | grep -i -e NVRM -e "
                       "'fallen off'`, reseat or power-cycle the baseboard (a cold boot), then re-check; if the GPUs "
                       "stay missing, open a case with the system vendor.", SRC_COUNT + "; " + SRC_BOARD_SWITCHES)
    cm = count_measure(len(gpus), expected, "NVIDIA GPUs in lspci (the plan's gpu_count)")
    if count_verdict(len(gpus), expected) is Verdict.FAIL:
        return Finding(fid, Verdict.FAIL, Msg("{desc}; the plan expects {expected}", desc=desc, expected=expected), "host", tuple(ev[:20]),
                       "A GPU is missing from the PCI bus: reseat it and its power cables, check the BIOS sees it "
                       "(Above 4G decoding on), then re-check.", SRC_COUNT, measured=cm)
    if count_verdict(len(gpus), expected) is Verdict.WARN:
        return Finding(fid, Verdict.WARN, Msg("{desc}; the plan expects only {expected}", desc=desc, expected=expected), "host", tuple(ev[:20]),
                       "Update gpu_count in the plan (`bringup plan gpu_count=N`) if the node has more GPUs.", SRC_COUNT,
                       measured=cm)
    if not gpus:
        v = Verdict.FAIL if whole else Verdict.WARN
        return Finding(fid, v, "no NVIDIA GPU (class 0300/0302) in this lspci output", "host", tuple(ev[:20]),
                       "If this is the whole listing, the GPUs did not enumerate: reseat them, check power cables "
                       "and enable Above 4G decoding in the BIOS. `lspci -d 10de:` lists NVIDIA functions.", SRC_COUNT)
    return Finding(fid, Verdict.PASS, (desc + ('' if expected is None else Msg(' (the plan expects {expected})', expected=expected))), "host",
                   tuple(ev[:20]), "", SRC_COUNT, measured=cm)


def _driver_findings(fid: str, gpus: list[tuple[LspciDevice, str, str]], plan: Mapping[str, Any]) -> list[Finding]:
    """(device, driver, evidence line) -> health.gpu_driver_binding findings."""
    known = [(d, drv, line) for d, drv, line in gpus if drv or line]
    if not known:
        return []
    bad: list[Finding] = []
    ok: list[str] = []
    ev_ok: list[str] = []
    for d, drv, line in known:
        if drv in ("nvidia",):
            ok.append(d.bus_id)
            ev_ok += [x for x in (d.header, line) if x]
        elif drv == "nouveau":
            bad.append(Finding(fid, Verdict.FAIL, Msg("{who} is bound to nouveau, not nvidia", who=_who(d)), _subject(d),
                               tuple(x for x in (d.header, line) if x),
                               "Blacklist nouveau (blacklist nouveau + options nouveau modeset=0 in /etc/modprobe.d/), "
                               "rebuild the initramfs and reboot, then install the NVIDIA driver.", SRC_DRIVER))
        elif drv.startswith("vfio"):
            if _virtualised(plan):
                ok.append(f"{d.bus_id} (vfio-pci, for a VM)")
                ev_ok += [x for x in (d.header, line) if x]
            else:
                bad.append(Finding(fid, Verdict.WARN, Msg("{who} is bound to {drv} (reserved for VM passthrough): the host's CUDA cannot use it", who=_who(d), drv=drv), _subject(d), tuple(x for x in (d.header, line) if x),
                                   "On a bare-metal training node remove the vfio-pci ids for this GPU (/etc/modprobe.d, "
                                   "kernel command line), rebuild the initramfs and reboot.", SRC_DRIVER))
        elif not drv:
            bad.append(Finding(fid, Verdict.WARN, Msg("{who}: no kernel driver bound", who=_who(d)), _subject(d),
                               tuple(x for x in (d.header, line) if x),
                               "Load the driver (`sudo modprobe nvidia`) and read `dmesg | grep -i nvrm` if it fails.",
                               SRC_DRIVER))
        else:
            ok.append(f"{d.bus_id} ({drv})")
            ev_ok += [x for x in (d.header, line) if x]
    if ok and not bad:
        return [Finding(fid, Verdict.PASS, (Msg('{n_ok} GPU(s) bound to their driver: ', n_ok=len(ok)) + ', '.join(ok[:8]) + (' ...' if len(ok) > 8 else '')), "host", tuple(ev_ok[:16]), "", SRC_DRIVER)]
    return bad


def lspci_gpus(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.lspci_gpu_count and health.gpu_driver_binding: NVIDIA display-class functions in lspci vs
    the plan's gpu_count (fewer -> FAIL, more -> WARN), and which kernel driver
    holds each GPU (nouveau -> FAIL; vfio-pci on bare metal -> WARN)."""
    fid = "health.lspci_gpu_count"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "which NVIDIA GPUs lspci lists", source=SRC_COUNT)]
    if not any(d.bdf for d in facts.devices):
        if facts.devices:
            return [Finding(fid, Verdict.SKIP, "GPU count not judged: this excerpt has no lspci device lines",
                            "host", tuple(facts.devices[0].lines[:2]), "", SRC_COUNT)]
        return [garbled(fid, o or ProbeOutput(fid, "lspci"), "the lspci output", (o.text if o else "").splitlines(),
                        source=SRC_COUNT)]
    gpus = facts.gpus
    switches = sum(1 for d in facts.devices if d.is_nvswitch)
    switch_ids = [d.device_id.lower() for d in facts.devices if d.is_nvswitch]
    ev = [g.header for g in gpus] + [d.header for d in facts.devices if d.is_nvswitch]
    if not gpus:
        ev = [d.header for d in facts.devices if d.is_nvidia][:10] or [d.header for d in facts.devices[:10]]
    whole = _whole(o, facts)
    if not gpus and not whole and not any(d.is_nvidia for d in facts.devices):
        # a pasted excerpt is not a bus scan: no GPU in it says nothing about the GPUs of the node, and a paste of
        # other devices (a NIC's section: held-out round 53) asks nothing about them either, so not judged; but a
        # network adapter that no longer answers config reads is the node's fabric gone (held-out round 102)
        lost = [Finding("health.nic_link", Verdict.FAIL,
                        Msg("{who} does not answer config reads ('{line}': its PCI config space reads all ones), so "
                            "the adapter no longer responds on the bus and none of its ports can work", who=_who(d),
                            line=d.unanswering[:80]), "host",
                        tuple(dict.fromkeys(x for x in (d.header, d.unanswering, *d.lines[:2]) if x)),
                        "Read `dmesg` for the adapter's PCIe AER or link-down events and its driver's health messages "
                        "(mlx5_core: 'health compromised', firmware fatal errors); check its cooling and transceivers, "
                        "then cold-boot (power off, not reboot). If it fails again, replace the adapter.", SRC_REV_FF)
                for d in facts.devices if d.unanswering
                and re.search(r"Ethernet|Infiniband|Network", d.class_name or d.header, re.I)]
        # a bridge (a PCIe switch port, a root port) or another vendor's GPU that no longer answers: everything
        # behind the bridge is cut off (held-out round 184: a GPU's switch upstream port, "Unknown header type 7f")
        lost += [Finding(fid, Verdict.FAIL,
                         Msg("{who} does not answer config reads ('{line}': its config space reads all ones): it has "
                             "dropped off the bus, and every device behind it with it", who=_who(d),
                             line=d.unanswering[:80]), "host",
                         tuple(dict.fromkeys(x for x in (d.header, d.unanswering) if x)),
                         "Read `dmesg` for PCIe AER, link-down or surprise-removal events at this address; reseat the "
                         "card behind it and its power cables and cold-boot (power off, not reboot). If it returns, "
                         "replace the card or riser.", SRC_REV_FF)
                 for d in facts.devices if d.unanswering
                 and re.search(r"bridge|VGA|3D|Display", d.class_name or d.header, re.I)]
        return lost + [Finding(fid, Verdict.SKIP, Msg("this lspci excerpt has no NVIDIA GPU ({n_devices} other device section(s)): it is not a "
                                                  "whole bus scan, so it says nothing about whether the GPUs enumerated; the GPU link, AER "
                                                  "and BAR checks are skipped", n_devices=len(facts.devices)), "host",
                        tuple(d.header for d in facts.devices[:5] if d.header),
                        "To check the GPUs, give bringup `lspci -nn -d 10de:` (every NVIDIA function) or the whole "
                        "`sudo lspci -vvv`.", SRC_COUNT)]
    extra = (Msg(' (lspci ran without root: capabilities hidden)') if facts.non_root else '')
    dead = [g for g in gpus if g.unanswering]
    if dead:
        extra += (Msg('; {n_dead} of them do not answer config reads (rev ff)', n_dead=len(dead)))
    findings = [_count_finding(fid, [g for g in gpus if not g.unanswering], switches, plan, ev, whole, extra, switch_ids)
                if dead and plan_count(plan) else _count_finding(fid, gpus, switches, plan, ev, whole, extra, switch_ids)]
    for g in dead + [d for d in facts.devices if d.is_nvswitch and d.unanswering]:
        findings.append(Finding(fid, Verdict.FAIL,
                                Msg("{who} does not answer config reads ('{line}': its PCI config space reads all ones), "
                                    "so the device no longer responds on the bus (fallen off the bus, powered off or its "
                                    "link is down)", who=_who(g), line=g.unanswering[:80]), _subject(g),
                                tuple(dict.fromkeys((g.header, g.unanswering))),
                                "Read `dmesg | grep -e NVRM -e Xid -e AER` for Xid 79 / link-down events; reseat the "
                                "GPU and its power cables and cold-boot (power off, not reboot). On an Optimus laptop a "
                                "powered-down discrete GPU reads the same until it is woken.", SRC_REV_FF))
    findings += _driver_findings("health.gpu_driver_binding", [
        (g, g.driver, g.driver_line or next((x.strip() for x in g.lines if x.strip().startswith("Kernel modules:")), ""))
        for g in gpus], plan)
    for g in gpus:  # the command register says no driver drives it (an excerpt may lack "Kernel driver in use")
        if g.control and g.control.get("BusMaster") is False and not g.driver:
            mem_off = g.control.get("Mem") is False
            findings.append(Finding("health.gpu_driver_binding", Verdict.WARN,
                                    (Msg('{gpu_subject}: bus mastering is off (Control: BusMaster-)', gpu_subject=gpu_subject(None, g.bus_id)) + (Msg(' and its memory BARs are disabled (Mem-)') if mem_off else '') + Msg(': no driver has enabled this GPU (the NVIDIA driver turns bus mastering on when it takes the GPU)')), gpu_subject(None, g.bus_id), tuple(x for x in (g.header,
                                    g.control_line) if x),
                                    "Check `lspci -k -s <bdf>` for 'Kernel driver in use: nvidia' and `dmesg | grep -e "
                                    "NVRM -e nvidia` for why it did not bind (module not loaded, a probe error, "
                                    "RmInitAdapter failed, the GPU held by vfio-pci or nouveau).", SRC_COUNT))
    return findings


SRC_GPU_INFO = ("NVIDIA open-gpu-kernel-modules, https://github.com/NVIDIA/open-gpu-kernel-modules: "
                "kernel-open/nvidia/nv-procfs.c (the per-GPU /proc/driver/nvidia/gpus/<bus>/information file: "
                "'GPU Excluded: Yes' for a GPU the driver excluded, 'GPU Firmware' only while the GPU runs GSP "
                "firmware, '??.??.??.??.??' for a Video BIOS the driver has not read) and kernel-open/common/inc/"
                "nv-reg.h (NVreg_ExcludedGpus: 'excluded GPUs ... that cannot be attached or used'); NVIDIA Linux "
                "driver README, 'GSP Firmware' (the gsp_*.bin files installed in /lib/firmware/nvidia/<driver "
                "version>/, the version the information file shows), "
                "https://download.nvidia.com/XFree86/Linux-x86_64/565.57.01/README/gsp.html")


def _info_desc(g: Any) -> str:
    """"NVIDIA H100 80GB HBM3 at 0000:62:00.0 (device minor 5, VBIOS 96.00.99.00.01, GSP firmware 535.129.03)"."""
    bits = [f"device minor {g.minor}" if g.minor is not None else "", f"VBIOS {g.vbios}" if g.vbios and "?" not in g.vbios else "",
            f"GSP firmware {g.firmware}" if g.firmware else ""]
    inner = ", ".join(b for b in bits if b)
    return f"{g.model or 'a GPU with no Model line'} at {g.bus or 'an unnamed bus'}" + (f" ({inner})" if inner else "")


def gpu_information(info: GpuInformationFiles) -> list[Finding]:
    """The driver's per-GPU information files (``/proc/driver/nvidia/gpus/<bus>/information``, one or several).

    ``health.gpu_driver_binding`` per GPU: "GPU Excluded: Yes" (or the older "Blacklisted: Yes") fails: the driver
    keeps the GPU out of use (NVreg_ExcludedGpus); a Video BIOS or UUID of question marks warns: the driver has not
    brought the GPU up (no client holds it with persistence mode off, or its initialisation failed); a block without
    a Model line is unknown (a partial paste); otherwise one pass naming each GPU: the driver sees <model> at <bus>.
    ``driver.version``: the GSP firmware a GPU runs is installed with the driver and loaded at the driver's own
    version, so a firmware version other than the loaded module's (``/proc/driver/nvidia/version`` in the same paste)
    fails, GPUs of one paste reporting different firmware versions warn, and matching versions pass."""
    fid = "health.gpu_driver_binding"
    if not info.gpus:
        return [Finding(fid, Verdict.UNKNOWN, "no GPU information block in this text", "host",
                        tuple(info.problems[:3]), "Paste the whole file: `cat /proc/driver/nvidia/gpus/*/information` "
                        "(or `grep . /proc/driver/nvidia/gpus/*/information` for several GPUs).", SRC_GPU_INFO)]
    out: list[Finding] = []
    ok: list[Any] = []
    for g in info.gpus:
        subj = gpu_subject(None, g.bus) if g.bus else "GPU"
        ev = tuple(g.lines[:12])
        if g.excluded:
            out.append(Finding(fid, Verdict.FAIL, Msg("{info_desc}: GPU Excluded: Yes: the driver has excluded this GPU, so no CUDA program, "
                                                      "nvidia-smi query or NCCL job can use it (the node has one GPU fewer than it holds)", info_desc=_info_desc(g)), subj, ev,
                               "Find why: `grep -i -e ExcludedGpus -e ExcludeAllGpus /proc/driver/nvidia/params` and "
                               "`grep -r NVreg_ExcludedGpus /etc/modprobe.d /proc/cmdline` (an operator or a health "
                               "tool may have excluded a failed GPU on purpose: then repair or replace it before the "
                               "node takes training jobs); otherwise remove the GPU's UUID from NVreg_ExcludedGpus, "
                               "rebuild the initramfs and reload the driver or reboot.", SRC_GPU_INFO))
        elif not g.initialised:
            out.append(Finding(fid, Verdict.WARN, (Msg('{info_desc}: the driver lists this GPU but has not brought it up (Video BIOS {value}', info_desc=_info_desc(g), value=g.vbios or 'missing') + (Msg(', UUID {uuid}', uuid=g.uuid) if '?' in g.uuid else '') + Msg('): nothing held it open with persistence mode off when the file was read, or its initialisation failed')), subj, ev,
                               "Run `nvidia-smi` (it brings every GPU up) and read the file again; if the question "
                               "marks stay or nvidia-smi cannot reach this GPU, read `sudo dmesg | grep -i -e NVRM -e "
                               "RmInitAdapter -e Xid` for why it failed to initialise. Keep GPUs up between jobs with "
                               "`sudo systemctl enable --now nvidia-persistenced`.", SRC_GPU_INFO))
        elif not g.model:
            out.append(Finding(fid, Verdict.UNKNOWN, Msg("a GPU information block without its Model line (at {a1}): the paste is partial", a1=g.bus or 'an unnamed bus'), subj, ev,
                               "Paste the whole file: `cat /proc/driver/nvidia/gpus/<bus id>/information`.",
                               SRC_GPU_INFO))
        else:
            ok.append(g)
    if ok:
        shown = [g for g in ok if g.excluded is False]
        excl = (Msg('not excluded (GPU Excluded: No)') if len(ok) == 1 and shown else Msg('none excluded (GPU Excluded: No)') if len(shown) == len(ok) else Msg('{n_shown} of them shown not excluded (GPU Excluded: No), the others without an exclusion line', n_shown=len(shown)) if shown else Msg('no exclusion line (older drivers do not write one, or the paste stops before it)'))
        no_fw = [g for g in ok if not g.firmware]
        fw_note = (Msg('; no GPU Firmware line') + (Msg(' for {n_no_fw} of them', n_no_fw=len(no_fw)) if len(no_fw) < len(ok) else '') + Msg(' (the driver writes one only while the GPU runs GSP firmware)') if no_fw else '')
        fws = {g.firmware for g in ok if g.firmware and g.firmware.upper() != "N/A"}
        if len(fws) == 1 and not info.driver.version:
            fw_note += (Msg('; GSP firmware ships with the driver, so driver {next} brought {value} up', next=next(iter(fws)), value='it' if len(ok) == 1 else 'them'))
        names = SEMICOLON.join(_info_desc(g) for g in ok[:8]) + (f"; +{len(ok) - 8} more" if len(ok) > 8 else "")
        what = (Msg('the driver sees {names}', names=names) if len(ok) == 1 else Msg('the driver sees {n_ok} GPUs: {names}', n_ok=len(ok), names=names))
        out.append(Finding(fid, Verdict.PASS, Msg("{what}; {excl}{fw_note}", what=what, excl=excl, fw_note=fw_note), "host" if len(ok) > 1 else
                           gpu_subject(None, ok[0].bus) if ok[0].bus else "GPU",
                           tuple(ln for g in ok[:4] for ln in (g.fields.get("model", ""), g.fields.get("bus", ""),
                                                               g.fields.get("firmware", ""), g.fields.get("excluded", ""))
                                 if ln), "", SRC_GPU_INFO))
    out.extend(_gsp_vs_driver(info))
    return out


def _gsp_vs_driver(info: GpuInformationFiles) -> list[Finding]:
    """driver.version from the GSP firmware lines (see :func:`gpu_information`)."""
    fid = "driver.version"
    fw = [g for g in info.gpus if g.firmware and g.firmware.upper() != "N/A"]
    if not fw:
        return []
    loaded = info.driver.version
    ev_fw = tuple(g.fields.get("firmware", "") for g in fw[:6])
    if loaded:
        other = [g for g in fw if g.firmware != loaded]
        ev = (info.driver.line,) + ev_fw
        if other:
            desc = ", ".join(f"{g.firmware} on {g.bus or 'a GPU'}" for g in other[:6])
            return [Finding(fid, Verdict.FAIL, Msg("GSP firmware {desc}, but the loaded kernel module is {loaded}: the driver ships its GSP "
                                                   "firmware and loads its own version, so the GPU runs firmware of another driver than the "
                                                   "one loaded (the module was replaced after the GPU came up, or these lines come from "
                                                   "different hosts)", desc=desc, loaded=loaded), "host", ev,
                            Msg("Reboot (or unload and reload the nvidia modules with no GPU process running) so the "
                                "loaded module brings the GPUs up with its own firmware; check that the package holding "
                                "/lib/firmware/nvidia/{loaded}/ is installed at the module's version, then read both files "
                                "again.", loaded=loaded), SRC_GPU_INFO)]
        return [Finding(fid, Verdict.PASS, Msg("GSP firmware {loaded} on {n_fw} GPU(s) is the loaded driver's own version", loaded=loaded, n_fw=len(fw)), "host", ev, "", SRC_GPU_INFO)]
    versions = sorted({g.firmware for g in fw})
    if len(versions) > 1:
        desc = SEMICOLON.join(f"{v} on " + ", ".join(g.bus or "a GPU" for g in fw if g.firmware == v)[:120] for v in versions)
        return [Finding(fid, Verdict.WARN, Msg("the GPUs in this paste run different GSP firmware versions ({desc}): one loaded driver "
                                               "runs one version on all its GPUs, so these blocks were read under different drivers "
                                               "(other hosts, or a driver reload between the reads)", desc=desc), "host", ev_fw,
                        "Read every GPU's file and the driver version in one go on one host: `cat "
                        "/proc/driver/nvidia/version; grep . /proc/driver/nvidia/gpus/*/information`.", SRC_GPU_INFO)]
    return []


def iommu_groups(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """The lspci-based IOMMU group listing (``lspci_iommu_groups`` output): GPU count vs the plan and the driver each GPU is bound to."""
    fid = "health.lspci_gpu_count"
    o = out.get("lspci_iommu_groups")
    if o is None or not o.text.strip():
        return [missing(fid, o, "the GPUs in the IOMMU group listing", source=SRC_COUNT)]
    g = facts_of(out).parse_text("lspci_iommu_groups", parse_iommu_groups)
    assert g is not None
    if not g.entries:
        return [garbled(fid, o, "the IOMMU group listing", o.lines(), source=SRC_COUNT)]
    gpus = [e.device for e in g.gpus]
    switches = sum(1 for e in g.entries if e.device.is_nvswitch)
    groups = sorted({e.group for e in g.gpus}, key=lambda x: int(x))
    ev = [e.line for e in g.gpus] + [e.line for e in g.entries if e.device.is_nvswitch]
    extra = (Msg('; in IOMMU group(s) {groups}', groups=', '.join(groups)) if groups else '')
    findings = [_count_finding(fid, gpus, switches, plan, ev, whole=False, extra=extra)]
    findings += _driver_findings("health.gpu_driver_binding",
                                 [(e.device, e.driver, e.line if e.driver else "") for e in g.gpus], plan)
    return findings




SRC_CUDA = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ ('CUDA Version' is the "
            "newest CUDA the driver supports, not the installed toolkit: it need not equal nvcc's); CUDA "
            "compatibility, https://docs.nvidia.com/deploy/cuda-compatibility/")




def smi_errors(doc: SmiDoc) -> list[Finding]:
    ev = tuple(doc.error_lines[:10])
    if doc.error_kind == "refused":
        return [Finding("health.nvidia_smi", Verdict.UNKNOWN,
                        "refused to read this XML: it declares entities (nvidia-smi never does)", "input", ev,
                        "Paste the unmodified output of `nvidia-smi -q -x`.",
                        "XML entity declarations are refused so no input can expand or fetch entities")]
    if doc.error_kind == "no_driver":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "nvidia-smi cannot talk to the NVIDIA driver: it is not loaded, or its libraries do not "
                        "match the kernel module", "host", ev,
                        "Check `lsmod | grep nvidia` and `dmesg | grep -i nvrm`. After a driver upgrade without a "
                        "reboot (or an unattended upgrade), reboot; otherwise reinstall the driver for the running "
                        "kernel and pin its packages so upgrades cannot split it.", SRC_SMI)]
    if doc.error_kind == "no_devices":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "No devices were found: the driver is loaded but did not initialise any GPU", "host", ev,
                        "Compare with `lspci -d 10de:`; read `dmesg | grep -i -e NVRM -e RmInitAdapter`. Typical "
                        "causes: a driver too old for this GPU (new GPUs need a recent branch, and Blackwell the "
                        "open kernel modules), Above 4G decoding off in the BIOS, or a GPU that "
                        "is not powered.", SRC_SMI)]
    if doc.error_kind == "nvml":
        return [Finding("health.nvidia_smi", Verdict.UNKNOWN, "NVML did not initialise, so no GPU health could be read",
                        "host", ev, "See the health.nvml finding for why NVML did not start.", SRC_SMI)]
    if doc.error_kind == "gpu_unreachable":
        named = unreachable_gpus(doc.error_lines)
        buses = list(dict.fromkeys(normalise_bus_id(b) for b, _, _ in named))
        reasons = list(dict.fromkeys(r for _, r, _ in named if r))
        lost = any("gpu is lost" in ln.lower() for ln in doc.error_lines)
        if buses:
            who = subjects_of(buses)
            msg: str = (Msg('nvidia-smi cannot reach {who}', who=who) + (f": {SEMICOLON.join(reasons)}" if reasons else '') + Msg(' (no device handle: the driver lists the GPU but cannot open it)'))
        else:
            who = "host"
            msg = Msg("nvidia-smi cannot reach {n_error_lines} GPU(s): 'GPU is lost' / no device handle", n_error_lines=len(doc.error_lines))
        where = (Msg(' for {buses}', buses=', '.join(buses)) if buses else Msg(" for the GPU's PCI address"))
        remedy = ((Msg('The driver says the GPU is lost and asks for a reboot: drain the node and power-cycle it (a full power cycle, not only a reboot, if it is lost again). ') if lost else '') + Msg("Read `dmesg | grep -e NVRM -e Xid -e AER`{where}: Xid 79 (fallen off the bus) needs a full power cycle. Check the GPU's power cables, seating and cooling (passively cooled cards need the server's airflow); RMA the GPU if it happens again after a cold boot.", where=where))
        return [Finding("health.gpu_responsive", Verdict.FAIL, msg, who, ev, remedy,
                        SRC_SMI + "; NVML_ERROR_GPU_IS_LOST ('The GPU has fallen off the bus or has otherwise become "
                        "inaccessible', NVML API reference, https://docs.nvidia.com/deploy/nvml-api/)")]
    return []


def subjects_of(buses: Sequence[str]) -> str:
    """Subject for GPUs known only by PCI bus id: "GPU (0000:0b:00.0)" or "2 GPUs: ..."."""
    names = [gpu_subject(None, b) for b in buses]
    return names[0] if len(names) == 1 else f"{len(names)} GPUs: " + SEMICOLON.join(names[:8])


def smi_count(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    if all(g.implicit for g in doc.gpus) and doc.attached is None:
        return []  # a pasted section with no GPU header: nothing to count
    listed = len(doc.gpus)
    attached = doc.attached_count
    seen = attached if attached is not None else listed
    ev = [ln for ln in [doc.attached.line if doc.attached else ""] + [g.header for g in doc.gpus[:16]] if ln]
    try:
        want = int(plan["gpu_count"]) if plan.get("gpu_count") not in (None, "") else None
    except (TypeError, ValueError):
        want = None
    if attached is not None and listed < attached:
        missing_n = attached - listed
        if doc.complete:
            return [Finding("health.gpu_count", Verdict.UNKNOWN,
                            Msg("the header says {attached} GPUs are attached but only {listed} is listed: {missing_n} "
                                "GPU(s) unaccounted for", attached=attached, listed=listed, missing_n=missing_n), "host", tuple(ev),
                            Msg("Run `{command}` without `-i` and compare with `lspci -d 10de:`; a GPU the driver lists "
                                "but cannot query is a fault (read `dmesg | grep -e NVRM -e Xid`).", command=doc.command), SRC_A1)]
        return [Finding("health.gpu_count", Verdict.SKIP,
                        Msg("this paste shows {listed} of the {attached} attached GPUs (it looks cut); only those are "
                            "judged", listed=listed, attached=attached), "host", tuple(ev), Msg("Paste the whole `{command}` output to judge every GPU.", command=doc.command),
                        SRC_A1)]
    cm = count_measure(seen, want, "GPUs nvidia-smi sees (the plan's gpu_count)")
    if count_verdict(seen, want) is Verdict.FAIL:
        if doc.fmt == "table" and not doc.complete:
            return [Finding("health.gpu_count", Verdict.UNKNOWN,
                            Msg("this nvidia-smi table shows {listed} GPUs but looks cut (no Processes section); the plan "
                                "expects {want}", listed=listed, want=want), "host", tuple(ev), "Paste the whole `nvidia-smi` output.", SRC_A1)]
        return [Finding("health.gpu_count", Verdict.FAIL,
                        Msg("nvidia-smi sees {seen} GPUs; the plan expects {want}", seen=seen, want=want), "host", tuple(ev),
                        "Compare with `lspci -d 10de:`: a GPU on the bus that nvidia-smi does not list failed to "
                        "initialise (dmesg: NVRM/Xid); a GPU missing from lspci too is unseated, unpowered or "
                        "disabled in the BIOS.", SRC_A1, measured=cm)]
    if count_verdict(seen, want) is Verdict.WARN:
        return [Finding("health.gpu_count", Verdict.WARN, Msg("nvidia-smi sees {seen} GPUs; the plan expects {want}", seen=seen, want=want),
                        "host", tuple(ev), "Correct the plan's GPU count, or check which GPU should not be here.",
                        SRC_A1, measured=cm)]
    msg: str = Msg("nvidia-smi lists {seen} GPUs", seen=seen) if seen != 1 else Msg("nvidia-smi lists 1 GPU")
    # a whole listing, or rows whose own index column runs 0..n-1 (a `--format=csv,noheader` paste: held-out r95)
    whole = doc.complete or (doc.fmt == "csv" and [g.num("index") for g in doc.gpus] == list(range(len(doc.gpus))))
    if want is None and whole and (doubt := sxm_count_doubt(seen, [g.name for g in doc.gpus])) is not None:
        return [sxm_count_finding(msg, doubt, tuple(ev))]
    if want is not None:
        msg += (Msg(', as the plan expects'))
    busy = [(g, u) for g in doc.gpus for u in [g.num("utilization.gpu")] if u is not None and u >= BUSY_UTIL_PCT]
    if busy:  # a workload is running: say so (idle baselines and validations need the GPUs to themselves)
        lo, hi = min(u for _, u in busy), max(u for _, u in busy)
        msg += (Msg('; {n_busy} of {n_gpus} busy, in use by a workload (GPU-Util {lo:g}%', n_busy=len(busy), n_gpus=len(doc.gpus), lo=lo) + (f'-{hi:g}%' if hi != lo else '') + Msg('): fine while it is your job; free them before the idle baseline and validations'))
    return [Finding("health.gpu_count", Verdict.PASS, msg, "host", tuple(ev), "", SRC_A1, measured=cm)]


BUSY_UTIL_PCT = 10.0
"""GPU-Util at or above this (%) in one nvidia-smi sample means something is running on the GPU (derived: an idle
GPU reads 0-1 %)."""


SRC_VGPU = ("NVIDIA Virtual GPU Software User Guide: the Virtual GPU Manager runs on the hypervisor, CUDA applications in "
            "VMs with the vGPU guest driver (https://docs.nvidia.com/vgpu/latest/grid-vgpu-user-guide/index.html); "
            "nvidia-smi(1): CUDA Version is the newest CUDA the driver supports")


def smi_driver_version(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    if doc.driver_version is None:
        return []
    msg: str = Msg("nvidia-smi talks to NVIDIA driver {raw}", raw=doc.driver_version.raw)
    ev = [doc.driver_version.line]
    if doc.cuda_version is not None and not re.match(r"\d", doc.cuda_version.raw):
        # "CUDA Version : Not Found": nvidia-smi found no CUDA user-mode driver (libcuda) of this driver
        ev.append(doc.cuda_version.line)
        return [Finding("driver.version", Verdict.WARN,
                        msg + Msg("; it reports no CUDA version (CUDA Version: {raw}): no CUDA driver library (libcuda.so) of this "
                                  "driver was found, so CUDA programs cannot run on this host (a vGPU host driver, the "
                                  "Virtual GPU Manager, ships none: CUDA runs inside its VMs)", raw=doc.cuda_version.raw),
                        "host", tuple(dict.fromkeys(ev)),
                        "To train on this host itself, install NVIDIA's data-center driver with its user-space libraries "
                        "(`ldconfig -p | grep libcuda.so.1` must list it); on a vGPU host, CUDA runs in the VMs with the "
                        "vGPU guest driver.", SRC_VGPU)]
    compat = _forward_compat(doc)
    if doc.cuda_version is not None and compat is None:
        msg += (Msg("; that driver supports CUDA up to {raw} (the driver's limit, not the installed toolkit: it need not equal nvcc's version)", raw=doc.cuda_version.raw))
    if doc.cuda_version is not None and doc.cuda_version.line not in ev:
        ev.append(doc.cuda_version.line)
    if compat is not None and doc.cuda_version is not None:
        need, native, classes = compat
        msg += Msg("; it reports CUDA {cuda}, which needs driver {need} or newer: the CUDA {cuda} driver library comes "
                   "from NVIDIA's CUDA forward-compatibility package (cuda-compat), on a driver whose own CUDA is {native}",
                   cuda=doc.cuda_version.raw, need=need, native=native or "older")
        if classes == {"datacenter"}:
            return [Finding("driver.version", Verdict.PASS, msg + Msg(" (supported on data-center GPUs)"), "host",
                            tuple(ev), "", SRC_COMPAT)]
        return [Finding("driver.version", Verdict.WARN,
                        msg + Msg("; NVIDIA supports forward compatibility only on data-center GPUs (and select "
                                  "NGC-Ready RTX boards): on these GPUs CUDA programs fail with error 804 "
                                  "(cudaErrorCompatNotSupportedOnDevice)"), "host", tuple(ev),
                        Msg("Use a CUDA the driver supports itself (CUDA {native} or older: an image or wheel built for "
                            "it, without the cuda-compat package on LD_LIBRARY_PATH), or install driver {need} or newer.",
                            native=native or "older", need=need), SRC_COMPAT)]
    hm = re.search(r"NVIDIA-SMI\s+(\d+\.\d+(?:\.\d+)?)\s+Driver Version:\s*(\d+\.\d+(?:\.\d+)?)", doc.driver_version.line)
    if hm and hm.group(1) != hm.group(2) and not hm.group(1).endswith("." + hm.group(2)):  # old "5.325.15" = 325.15
        # another branch (352 vs 384): two whole driver installs side by side, whose libcuda/libnvidia-* CUDA programs
        # may load from either: not a machine to sign off. The same branch at another patch level: a leftover binary.
        # WSL prints the Windows driver (two parts, "511.79") next to its Linux build ("510.47.03"): not two installs.
        smi_v, drv_v = hm.group(1).split("."), hm.group(2).split(".")
        wsl_pair = len(drv_v) == 2 and len(smi_v) == 3
        other_branch = smi_v[0] != drv_v[0] and not wsl_pair
        return [Finding("driver.version", Verdict.FAIL if other_branch else Verdict.WARN,
                        (Msg('nvidia-smi {group} is not from the loaded driver {group2}', group=hm.group(1), group2=hm.group(2)) + (Msg(' (driver branch {split} next to branch {split2}: two driver installs on one machine, a mixed install)', split=hm.group(1).split('.')[0], split2=hm.group(2).split('.')[0]) if other_branch else '') + Msg(": its NVML/userspace comes from another driver install (a copied binary, a container image's own driver libraries, or an upgrade without a reboot); CUDA programs may load mismatched libraries")), "host", tuple(ev),
                        "Use the nvidia-smi and libnvidia-ml of the driver that is loaded (containers: the NVIDIA "
                        "container toolkit mounts them from the host; hosts: reinstall the driver packages or reboot "
                        "after an upgrade); `cat /proc/driver/nvidia/version` names the loaded one.",
                        "NVIDIA driver README: nvidia-smi and libnvidia-ml ship with the driver and match its version "
                        "(https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/installedcomponents.html); "
                        "NVIDIA container toolkit: the driver's user-space libraries are mounted from the host "
                        "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/)")]
    return [Finding("driver.version", Verdict.PASS, msg, "host", tuple(ev), "", SRC_CUDA)]


SRC_COMPAT = ("NVIDIA CUDA Compatibility, forward compatibility: the cuda-compat package's libcuda runs a newer CUDA on "
              "an older driver, supported on NVIDIA data-center GPUs and select NGC Server Ready RTX cards; elsewhere "
              "CUDA returns error 804 (https://docs.nvidia.com/deploy/cuda-compatibility/); CUDA Toolkit release notes, "
              "Table 3: the minimum driver of each CUDA release (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/)")


def _x86_branch(driver: str) -> bool:
    """The driver's branch (its first number) is one of NVIDIA's Linux x86_64 / data-center branches: a toolkit's
    driver (``assets/cuda_driver_min.csv``) or a data-center branch (``assets/driver_branches.csv``). Jetson's L4T
    driver (540.4.0 with CUDA 12.6) numbers its releases otherwise (held-out: an Orin's nvidia-smi)."""
    from wizard.data import table

    branch = driver.split(".")[0]
    return (any(r.get("driver_branch_of_toolkit_driver") == "R" + branch for r in table("cuda_driver_min.csv"))
            or any(r.get("branch") == branch for r in table("driver_branches.csv")))


def _forward_compat(doc: SmiDoc) -> tuple[str, str, set[str]] | None:
    """(minimum driver of the CUDA nvidia-smi reports, the newest CUDA the driver itself supports, the GPUs' classes)
    when the reported CUDA needs a newer driver than the one loaded (by ``assets/cuda_driver_min.csv``): its libcuda
    is the forward-compatibility package's (NVIDIA CUDA Compatibility). None otherwise, for a CUDA the table does not
    list, and for a Windows driver (WSL's two-part version, whose minimums are another column)."""
    from wizard.cuda_table import driver_max_cuda, min_driver
    from wizard.parsers.cuda import version_tuple
    from wizard.rules.smi import gpu_class

    if doc.cuda_version is None or doc.driver_version is None:
        return None
    drv, cuda = doc.driver_version.raw.strip(), doc.cuda_version.raw.strip()
    mm = re.match(r"(\d+\.\d+)", cuda)
    if not mm or drv.count(".") < 2 or not version_tuple(drv) or not drv.split(".")[0].isdigit():
        return None
    need = min_driver(mm.group(1))
    # another, older branch: a driver of the same branch below the toolkit's own driver (a beta: 550.40.07 with CUDA
    # 12.4, whose toolkit ships 550.54.14) reports that CUDA itself
    if need is None or int(drv.split(".")[0]) >= int(need[0].split(".")[0]) or not _x86_branch(drv):
        return None
    return need[0], driver_max_cuda(drv), {gpu_class(g) for g in doc.gpus} or {"unknown"}


def smi_architecture(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    """``driver.branch`` from an nvidia-smi output: a GPU whose architecture (nvidia-smi's Product Architecture, else
    its product name by assets/gpu_name_arch.csv) is driven only by driver branches past their end of life
    (assets/driver_architectures.csv ``max_branch``: Kepler R470, Fermi R390) warns: no supported driver, and current
    CUDA and PyTorch builds do not compile for it. Nothing is said for architectures current branches drive."""
    today = catalog.today_of(plan)
    by_arch: dict[str, list[GpuFacts]] = {}
    info: dict[str, str] = {}
    for g in doc.gpus:
        arch = (g.text("architecture") or "").strip()
        detail = ""
        if not arch or arch.upper() == "N/A":
            a = catalog.architecture_of_name(g.name or "")
            arch, detail = (a.architecture, a.name) if a else ("", "")
        if arch:
            by_arch.setdefault(arch, []).append(g)
            info.setdefault(arch, detail)
    out = []
    for arch, gs in by_arch.items():
        f = ended_architecture(arch, sorted({g.name or "GPU" for g in gs}), info[arch],
                               subject(gs[0]) if len(gs) == 1 else f"{len(gs)} GPUs: " + SEMICOLON.join(subject(g) for g in gs[:8]),
                               tuple(dict.fromkeys(g.name or subject(g) for g in gs)), len(gs), today)
        if f is not None:
            out.append(f)
    return out


def ended_architecture(arch: str, names: Sequence[str], detail: str, who: str, ev: tuple[str, ...], count: int,
                       today: Any) -> Finding | None:
    """``driver.branch`` WARN for ``count`` GPU(s) of an architecture only end-of-life driver branches drive (Kepler
    R470, Fermi R390: assets/driver_architectures.csv); None for an architecture a current branch drives."""
    b, last, ended = catalog.architecture_supported_until(arch, today)
    if not ended:
        return None
    rule = catalog.arch_rules()[arch]
    what = f"{', '.join(names)} ({arch}" + (f", {detail})" if detail else ")")
    eol = ((Msg("end of life") if b.eol_text == "end of life" else Msg("end of life {eol}", eol=b.eol_text)) if b is not None
           else Msg("older than every branch NVIDIA's support matrix lists"))
    return Finding("driver.branch", Verdict.WARN,
                   Msg("{count} GPU(s) {what}: the last driver branch that drives {arch} GPUs is R{last} ({eol}); "
                       "no supported driver, CUDA 12 and current PyTorch builds do not support this architecture: "
                       "not a GPU to validate for LLM training", count=count, what=what, arch=arch, last=last, eol=eol), who, ev,
                   Msg("Plan for a supported GPU (Volta or newer for current CUDA 12 and PyTorch builds); until "
                       "then this GPU runs only the R{last} driver and the CUDA releases it supports.", last=last),
                   f"{rule.source}; NVIDIA CUDA GPUs - Compute Capability (https://developer.nvidia.com/cuda-gpus)")


_NOT_READ = frozenset({"N/A", "[N/A]", "[Not Supported]"})


def _not_read_beside_siblings(g: Any, doc: SmiDoc) -> list[str]:
    """``g``'s fields that read N/A while every other GPU of the same model in ``doc`` (at least one) reads a value:
    what the driver could not read from this GPU, not what the model lacks."""
    same = [o for o in doc.gpus if o is not g and o.name == g.name and not _err_fields(o)]
    if not same:
        return []
    return [k for k, r in g.fields.items() if r.raw.strip() in _NOT_READ
            and all(k in o.fields and o.fields[k].raw.strip() not in _NOT_READ for o in same)]


def smi_responsive(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out = []
    ok = []
    for g in doc.gpus:
        bad = _err_fields(g)
        if not g.errors and not bad:
            ok.append(g)
            continue
        reset = any("requires reset" in e for e in g.errors)
        if reset:
            out.append(Finding("health.gpu_responsive", Verdict.FAIL,
                               Msg("{subject} needs a reset: nvidia-smi prints '[GPU requires reset]' instead of its readings "
                                   "(NVML_ERROR_RESET_REQUIRED, after an uncorrectable error or a fault the driver cannot "
                                   "recover from)", subject=subject(g)), subject(g), _ev(g, g.errors),
                               "Drain the GPU, read `dmesg | grep -e NVRM -e Xid` for the error that caused it, reset "
                               "it (`nvidia-smi -r -i <index>` with no process on it, or reboot the node), then run the "
                               "health checks and a validation again; RMA it if it recurs.", SRC_SMI))
        elif unresponsive(g):
            unk = _unknown_error_fields(g)
            said = (Msg("NVML answers 'Unknown Error' for its {unk}", unk=', '.join(unk)) if unk else Msg("nvidia-smi prints ERR! / 'GPU is lost' for it"))
            out.append(Finding("health.gpu_responsive", Verdict.FAIL,
                               Msg("{subject} does not respond: {said}", subject=subject(g), said=said),
                               subject(g), _ev(g, g.errors, [g.fields[k].line for k in unk]),
                               "Read `dmesg | grep -e NVRM -e Xid` for this PCI address. Xid 79 (fallen off the bus) "
                               "needs a full power cycle; Xid 119/120 (GSP) a GPU reset or reboot. Check its power "
                               "cables and seating; RMA the GPU if it comes back after a cold boot.", SRC_SMI))
        elif bad and len(bad) + len(lost := _not_read_beside_siblings(g, doc)) >= ERR_FIELDS_UNRESPONSIVE:
            # ERR! in one or two fields and N/A where the other GPUs of its model read a value (power, GPU-Util, ECC):
            # the driver no longer reads this GPU, as when three fields say ERR! (held-out r95: two of 4 A100 PCIe)
            out.append(Finding("health.gpu_responsive", Verdict.FAIL,
                               Msg("{subject} does not respond: nvidia-smi prints ERR! for its {bad} and N/A for its "
                                   "{lost}, which the other {name} GPUs here read", subject=subject(g),
                                   bad=", ".join(bad), lost=", ".join(lost), name=g.name or "GPU"),
                               subject(g), _ev(g, g.errors, [g.fields[k].line for k in bad + lost]),
                               "Read `dmesg | grep -e NVRM -e Xid` for this PCI address. Xid 79 (fallen off the bus) "
                               "needs a full power cycle; Xid 119/120 (GSP) a GPU reset or reboot. Check its power "
                               "cables and seating; RMA the GPU if it comes back after a cold boot.", SRC_SMI))
        else:
            what = ", ".join(k.replace("fan.speed", "fan speed").replace("temperature.gpu", "temperature")
                             for k in bad) or "a field"
            shown = " / ".join(dict.fromkeys(g.fields[k].raw for k in bad)) or "ERR!"
            out.append(Finding("health.gpu_responsive", Verdict.WARN,
                               Msg("{subject}: nvidia-smi cannot read its {what} ({shown})", subject=subject(g), what=what,
                                   shown=shown) if bad else  # not "cannot read its a field"
                               Msg("{subject}: nvidia-smi prints {shown} in one of its fields", subject=subject(g),
                                   shown=shown), subject(g), _ev(g, g.errors, [g.fields[k].line for k in bad]),
                               (Msg('A single sensor reading ERR! ({what}): ', what=what) + (Msg('often the fan on a passively cooled or riser-mounted card: check the fan/cooling in the BMC') if 'fan' in what else Msg("check the GPU's power cables and the BMC's power readings") if 'power' in what else Msg("check the BMC's readings for it")) + Msg('; read `dmesg | grep -e NVRM -e Xid`; if more fields turn ERR!, treat the GPU as failing.')), SRC_SMI))
    spinning = []
    for g in ok:  # "100 %" busy while drawing next to nothing: a kernel that spins or hangs, not work
        util, draw = g.num("utilization.gpu"), g.num("power.draw")
        cap = g.num("enforced.power.limit") or g.num("power.limit")
        if (util is not None and draw is not None and cap and util >= SPIN_UTIL_PCT
                and draw <= SPIN_POWER_FRACTION * cap and gpu_class(g) == "datacenter"):
            spinning.append(g)
            out.append(Finding("health.gpu_responsive", Verdict.WARN,
                               Msg("{subject}: GPU-Util {util:g}% at {draw:g} W of its {cap:g} W: busy by the counter but "
                                   "drawing almost nothing, which is a kernel spinning or hung, not work", subject=subject(g), util=util, draw=draw, cap=cap),
                               subject(g), _ev(g, g.lines("utilization.gpu", "power.draw")),
                               "See what runs on it (`nvidia-smi --query-compute-apps=pid,name --format=csv`, `py-spy "
                               "dump` on the process): a hang in a collective (NCCL timeout), a deadlock or a spin-wait "
                               "keeps 'GPU-Util' at 100 % without load; kill the process and rerun; if the GPU stays busy "
                               "with no process, reset it.", SRC_SMI))
    ok = [g for g in ok if g not in spinning]
    if out and ok:
        out += _pass_group("health.gpu_responsive", [(g, "", []) for g in ok], N_("answers nvidia-smi"),
                           N_("the other {n} GPUs answer nvidia-smi"), SRC_SMI)
    return out


SPIN_UTIL_PCT = 99.0
SPIN_POWER_FRACTION = 0.30
"""A datacenter GPU at >= 99 % GPU-Util drawing <= 30 % of its power limit is not doing work: GPU-Util only counts the
time a kernel is resident ("percent of time over the past sample period during which one or more kernels was executing",
NVML nvmlUtilization_t), so a spinning or hung kernel, resident the whole period, reads 100 % (derived thresholds); a
light job's short kernels leave gaps and read below it (an H200 training YOLO at 92 % and 119 W of 700 W: held-out round
330); 8x L40S serving with vLLM at 100 % and 94-97 W of 350 W (28 %) were hung (held-out round 359)."""


SRC_A1 = ("Meta GCM health checks, https://github.com/facebookresearch/gcm (gpu_num); Azure HPC health "
          "checks, https://github.com/Azure/azurehpc-health-checks (check_gpu_count); NVML API reference, "
          "https://docs.nvidia.com/deploy/nvml-api/ (nvmlDeviceGetCount)")


SRC_A2 = ("DCGM diagnostics, "
          "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html (level 1 "
          "deployment checks); NVIDIA driver installation guide, "
          "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html")


SRC_NOUVEAU = ("NVIDIA CUDA installation guide for Linux, 'Disabling Nouveau', "
               "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/")


NO_GPU_REMEDY = (
    "Check that the GPUs (or the GPU baseboard) are seated and that every auxiliary power cable is "
    "plugged in; enable Above 4G decoding in the BIOS; on a VM, check the GPUs are passed through. "
    "Then re-run this check: it reads /sys/bus/pci, so it sees the GPUs as soon as they enumerate (so does "
    "`lspci -d 10de:` where pciutils is installed).")


def _pci(out: Outputs) -> tuple[PciFacts | None, Finding | None]:
    o = out.get("pci")
    if o is None or (not o.ok and not o.files):
        return None, missing("health.gpu_pci", o, "which NVIDIA GPUs are on the PCI bus",
                             remedy="Check that /sys is mounted and readable.", source=SRC_A1)
    return facts_of(out).parse("pci", parse_pci, on="output"), None


def no_nvidia_gpu(out: Outputs) -> bool:
    """True only when the ``pci`` probe was read and shows no NVIDIA GPU (an unknown PCI state is not "no GPU"): what
    health.gpu_pci fails, for an action to say before it runs (the idle baseline, walk 29 #8)."""
    return _no_gpu(out)


def _no_gpu(out: Outputs) -> bool:
    """True only when PCI was read and shows no NVIDIA GPU (unknown PCI state is not 'no GPU')."""
    facts, err = _pci(out)
    return err is None and facts is not None and facts.vendors_read > 0 and not facts.gpus


def _nvml_error(init: str, error: str) -> str:
    """The NVML probe's ``error`` with its meaning (:data:`wizard.nvml_probe.INIT_ERRORS`) shown translated and the
    library's own words after it as they are."""
    meaning = INIT_ERRORS.get(init, "")
    if meaning and error.startswith(meaning + ": "):
        return Msg("{meaning}: {detail}", meaning=meaning, detail=error[len(meaning) + 2:])
    return error


def _skip_no_gpu(fid: str, what: str, observed: str = "", evidence: tuple[str, ...] = ()) -> Finding:
    """``skip`` with what was seen anyway, so nothing the probe found is hidden from the operator."""
    msg: str = Msg("{what} skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci)", what=what)
    if observed and "no NVIDIA GPU on the PCI bus" not in str(observed):  # walk 28 #18: the same reason said twice
        msg += Msg('; observed: ') + observed  # in pieces: the observed message shown translated
    return Finding(fid, Verdict.SKIP, msg, "host", evidence, "", SRC_A1, waits_for=WAITS_FOR_GPUS)


def gpu_pci(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    facts, err = _pci(out)
    if err is not None:
        return [err]
    assert facts is not None
    o = out["pci"]
    if facts.devices_seen == 0:
        return [missing("health.gpu_pci", o, "which NVIDIA GPUs are on the PCI bus", source=SRC_A1)]
    if facts.vendors_read == 0:  # listed but unreadable: "no GPU" would be a guess
        ev = tuple([o.source] + [f"{p}: <{e}>" for p, e in list(o.file_errors.items())[:10]])
        return [Finding("health.gpu_pci", Verdict.UNKNOWN,
                        Msg("could not tell which NVIDIA GPUs are on the PCI bus: none of the {devices_seen} PCI "
                            "functions' vendor files could be read", devices_seen=facts.devices_seen), "host", ev,
                        "Check that /sys is mounted and readable (run as root inside containers).", SRC_A1)]
    gpus = facts.gpus
    if not gpus:
        # the raw vendor lines the verdict rests on (NVIDIA functions first, then the others)
        vendor_lines = sorted((f"{p}:{c.strip()}" for p, c in o.files.items()
                               if p.endswith("/vendor") and c is not None),
                              key=lambda line: (not line.endswith(NVIDIA_VENDOR), line))
        ev = ((f"{o.source}: {facts.devices_seen} PCI functions, none with vendor "
              f"{NVIDIA_VENDOR} and a display class (0x0300/0x0302)"),)
        ev += tuple(line for f in facts.functions for line in f.evidence)  # NVIDIA non-GPU functions
        ev += tuple(line for line in vendor_lines[:16] if line not in ev)
        return [Finding("health.gpu_pci", Verdict.FAIL, "no NVIDIA GPU on the PCI bus", "host",
                        ev, NO_GPU_REMEDY, SRC_A1)]
    findings: list[Finding] = []
    from wizard.parsers.pcie import marketing_name

    counts: dict[str, int] = {}
    for g in gpus:
        counts[g.pci_id] = counts.get(g.pci_id, 0) + 1
    kinds = [f"{n}x {marketing_name(pid.split(':')[1]) or 'NVIDIA GPU'} ({pid})" for pid, n in sorted(counts.items())]
    bridges = facts.bridges
    desc = (Msg('{n_gpus} NVIDIA GPU(s) on the PCI bus: {kinds}', n_gpus=len(gpus), kinds=', '.join(kinds)))
    if bridges:
        desc += (Msg(', {n_bridges} NVSwitch/bridge function(s)', n_bridges=len(bridges)))
    ev = tuple(line for g in gpus for line in g.evidence)
    expected = plan.get("gpu_count")
    v = count_verdict(len(gpus), expected)
    cm = count_measure(len(gpus), expected, "NVIDIA GPUs on the PCI bus (the plan's gpu_count)")
    if v is Verdict.FAIL:
        findings.append(Finding("health.gpu_pci", v, Msg("{desc}; the plan expects {expected}", desc=desc, expected=expected), "host",
                                ev, (Msg('A GPU is missing from the bus: reseat it and its power cables, check the BIOS sees it, then re-check. ') + NO_GPU_REMEDY.split('. ')[-1]), SRC_A1,
                                measured=cm))
    elif v is Verdict.WARN:
        findings.append(Finding("health.gpu_pci", v, Msg("{desc}; the plan expects only {expected}", desc=desc, expected=expected), "host", ev,
                                "Update gpu_count in the plan (`bringup plan gpu_count=N`) if the node has more GPUs.",
                                SRC_A1, measured=cm))
    else:
        findings.append(Finding("health.gpu_pci", Verdict.PASS, desc, "host", ev, "", SRC_A1, measured=cm))
    return findings


def _loaded_modules(out: Outputs) -> tuple[set[str] | None, dict[str, str], list[str], str]:
    """(module names, name -> evidence line, unreadable lines, where from) from /proc/modules,
    falling back to /sys/module (also lists built-in drivers) when /proc/modules is absent
    (a kernel without loadable-module support). ``None`` names = could not tell."""
    o, sm = out.get("modules"), out.get("sys_module")
    if o is not None and o.ok:
        parsed = facts_of(out).parse_text("modules", parse_modules)
        assert parsed is not None
        mods, problems = parsed
        return set(mods), {n: m.line for n, m in mods.items()}, problems, o.source
    if sm is not None and sm.ok:
        names = {p.rsplit("/", 1)[-1] for p in sm.files}
        return names, {n: f"/sys/module/{n}" for n in names}, [], f"/sys/module (no /proc/modules: {o.error if o else 'not read'})"
    return None, {}, [], ""


def _nouveau_blacklist(out: Outputs) -> list[str]:
    """``path:line`` of modprobe.d lines that blacklist nouveau (``blacklist nouveau``)."""
    o = out.get("modprobe_d")
    found = []
    for path, content in (o.files.items() if o is not None else ()):
        for line in (content or "").splitlines():
            if line.split("#", 1)[0].split() == ["blacklist", "nouveau"]:
                found.append(f"{path}:{line.strip()}")
    return found


def nouveau(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("modules")
    names, lines, problems, where = _loaded_modules(out)
    if names is None:
        return [missing("os.nouveau", o, "which kernel modules are loaded", source=SRC_NOUVEAU)]
    if not names and problems:
        return [garbled("os.nouveau", o, "/proc/modules", problems, source=SRC_NOUVEAU)]  # type: ignore[arg-type]  # problems come only from a read /proc/modules
    if "nouveau" in names:
        bl = _nouveau_blacklist(out)
        if bl:  # the fix is in place; only the reboot is missing
            return [Finding("os.nouveau", Verdict.FAIL,
                            "nouveau is still loaded, although it is blacklisted: reboot to apply", "host",
                            (lines["nouveau"], *bl),
                            "Reboot (the initramfs must have been rebuilt after the blacklist was written), "
                            "then check again.", SRC_NOUVEAU)]
        return [Finding("os.nouveau", Verdict.FAIL,
                        "the open-source nouveau driver is loaded and will hold the GPUs", "host",
                        (lines["nouveau"],),
                        "Blacklist nouveau (blacklist nouveau + options nouveau modeset=0 in "
                        "/etc/modprobe.d/), rebuild the initramfs, reboot, then install the NVIDIA driver.",
                        SRC_NOUVEAU)]
    return [Finding("os.nouveau", Verdict.PASS, "nouveau is not loaded", "host",
                    (f"{where}: no nouveau",), "", SRC_NOUVEAU)]


def driver(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    mo, vo = out.get("modules"), out.get("nvidia_driver_version")
    names, lines, problems, where = _loaded_modules(out)
    if _no_gpu(out):
        seen = (N_("module list unreadable") if names is None else
                N_("the nvidia module is loaded") if "nvidia" in names else N_("the nvidia module is not loaded"))
        return [_skip_no_gpu("driver.loaded", "driver check", seen, (where,) if where else ())]
    if names is None:
        return [missing("driver.loaded", mo, "whether the nvidia module is loaded", source=SRC_A2)]
    if not names and problems:  # unreadable, not "no nvidia module"
        return [garbled("driver.loaded", mo, "/proc/modules", problems, source=SRC_A2)]  # type: ignore[arg-type]  # problems come only from a read /proc/modules
    if not names:
        # no module at all (lsmod's header alone): a kernel with its drivers built in, WSL's (the GPU is the Windows
        # driver's, through /dev/dxg), or a restricted view; nothing here says whether an NVIDIA driver runs
        # (held-out round 326)
        return [Finding("driver.loaded", Verdict.UNKNOWN,
                        N_("the module list is empty: this kernel lists no loadable module at all (drivers built in, "
                           "WSL, or a restricted container view), so it does not show whether the NVIDIA driver runs"),
                        "host", (f"{where}: no module listed",),
                        N_("Run `nvidia-smi`: it answers where the driver runs; on a normal Linux host `lsmod` lists "
                           "nvidia, nvidia_uvm and nvidia_modeset."), SRC_A2)]
    if "nvidia" not in names:
        return [Finding("driver.loaded", Verdict.FAIL, "the nvidia kernel module is not loaded", "host",
                        (f"{where}: no nvidia module",) + ((vo.source + ": " + vo.error,) if vo is not None and vo.error else ()),
                        "Install the driver (driver & CUDA stage), or load it with `modprobe nvidia` "
                        "and read `dmesg | grep -i nvrm` if that fails.", SRC_A2)]
    ev = [lines["nvidia"]]
    version = flavour = ""
    if vo is not None and vo.ok:
        d = facts_of(out).parse_text("nvidia_driver_version", parse_driver_version)
        assert d is not None
        if d.line:
            ev.append(d.line)
        version, flavour = d.version, d.flavour
    msg = (Msg('nvidia kernel module loaded') + (Msg(': {version} ({flavour} kernel module)', version=version, flavour=catalog.flavour_word(flavour)) if version else ''))
    return [Finding("driver.loaded", Verdict.PASS, msg, "host", tuple(ev), "", SRC_A2)]


def nvidia_smi(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("nvidia_smi_l")
    if _no_gpu(out):
        seen = ""
        ev: tuple[str, ...] = ()
        if o is not None:
            if o.rc == 127 or o.error.startswith("command not found"):
                seen = "nvidia-smi is not installed"
            else:
                first = (o.text.strip() or o.stderr.strip() or o.error).splitlines()
                seen = first[0][:120] if first else ""
            ev = tuple(o.evidence_error()) if o.error or o.rc else (o.source,)
        return [_skip_no_gpu("driver.nvidia_smi", "nvidia-smi check", seen, ev)]
    if o is None:
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    if o.rc == 127 or o.error.startswith("command not found"):
        return [Finding("driver.nvidia_smi", Verdict.FAIL, "nvidia-smi is not installed", "host",
                        tuple(o.evidence_error()),
                        "Install the NVIDIA driver (it ships nvidia-smi); see the driver & CUDA stage.", SRC_A2)]
    if o.error and o.rc is None:
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    s = facts_of(out).parse("nvidia_smi_l", parse_nvidia_smi_l, on="text+stderr")
    assert s is not None
    if s.error_kind == "no_driver":
        return [Finding("driver.nvidia_smi", Verdict.FAIL, "nvidia-smi cannot talk to the NVIDIA driver",
                        "host", tuple([o.source] + s.error_lines),
                        "The driver is not loaded or its user-space libraries do not match the kernel "
                        "module (often after a driver upgrade without reboot): reboot, or reinstall the "
                        "driver for the running kernel.", SRC_A2)]
    if s.error_kind == "no_devices":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "nvidia-smi finds no devices although GPUs are on the PCI bus: the driver could "
                        "not initialise them", "host", tuple([o.source] + s.error_lines),
                        "Read `dmesg | grep -i -e NVRM -e RmInitAdapter`; typical causes are Above 4G "
                        "decoding off in the BIOS, or a driver too old for this GPU.", SRC_A2)]
    if s.error_kind == "gpu_unreachable":
        buses = [b for b in s.unreachable if ":" in b]  # named by PCI bus id where nvidia-smi printed one
        who = subjects_of(buses) if buses else "host"
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        (Msg('nvidia-smi cannot reach {n_error_lines} GPU(s) (it lists {n_gpus})', n_error_lines=len(s.error_lines), n_gpus=len(s.gpus)) + (f': {who}' if buses else '')), who, tuple([o.source] + s.error_lines),
                        "A GPU stopped answering the driver (typically Xid 79, fallen off the bus): read "
                        "`dmesg | grep -e NVRM -e Xid` for its PCI address, check its power cables and "
                        "seating, and RMA it if it happens again after a cold boot.", SRC_A2)]
    if o.error:  # timed out or could not run: the error is the evidence, not the (partial) output
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    if not s.gpus:
        return [garbled("driver.nvidia_smi", o, "nvidia-smi -L", s.problems or o.lines()[:10], source=SRC_A2)]
    return [Finding("driver.nvidia_smi", Verdict.PASS, Msg("nvidia-smi lists {gpus}", gpus=plural(len(s.gpus), "GPU")), "host",
                    tuple([o.source] + o.lines()[:16]), "", SRC_A2)]


SRC_MIXED = ("PyTorch DistributedDataParallel design notes, https://pytorch.org/docs/stable/notes/ddp.html (gradients "
             "are all-reduced every step, so every rank waits for the slowest); NVIDIA CUDA C++ Programming Guide, "
             "'Compute Capabilities', https://docs.nvidia.com/cuda/cuda-c-programming-guide/ (different GPU models "
             "can differ in architecture and memory)")


def mixed_models(listing: str, ev: tuple[str, ...]) -> Finding:
    """health.gpu_count WARN for GPUs of more than one model in one node (``listing``: "1x NVIDIA A100 ..., 1x ...")."""
    return Finding("health.gpu_count", Verdict.WARN,
                   Msg("mixed GPU models on one node: {listing}: a data-parallel job steps at the pace of the "
                       "slowest GPU and fits the smallest memory", listing=listing), "host", ev,
                   "Train on one model of GPU (CUDA_VISIBLE_DEVICES to pick a matching set), or plan batch "
                   "sizes and sharding for the smallest and slowest GPU.", SRC_MIXED)


def smi_list(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.gpu_count from ``nvidia-smi -L``: the GPUs listed against the plan's gpu_count (:func:`count_verdict`;
    a GPU nvidia-smi could not open does not count), mixed GPU models (WARN: a data-parallel job steps at the pace
    of the slowest GPU), and health.mig for GPUs that list MIG devices (noted, as the smi document's MIG check
    does). The driver's own errors (not loaded, no devices, a GPU it cannot reach) are :func:`nvidia_smi`'s."""
    o = out.get("nvidia_smi_l")
    if o is None or not (o.text.strip() or o.stderr.strip()):
        return [missing("health.gpu_count", o, "which GPUs nvidia-smi lists", source=SRC_A1)]
    s = facts_of(out).parse("nvidia_smi_l", parse_nvidia_smi_l, on="text+stderr")
    assert s is not None
    if not s.gpus:
        if s.error_kind and s.error_kind != "other":
            return []  # nvidia_smi says what the error means
        return [garbled("health.gpu_count", o, "nvidia-smi -L", s.problems or o.lines()[:10], source=SRC_A1)]
    want = plan_count(plan)
    seen = len(s.gpus)
    ev = tuple(s.lines[:24])
    names: dict[str, int] = {}
    for _, name, _ in s.gpus:
        names[name] = names.get(name, 0) + 1
    listing = ", ".join(f"{n}x {k}" for k, n in names.items())
    lost = (Msg('; {n_unreachable} more it could not open', n_unreachable=len(s.unreachable)) if s.unreachable else '')
    findings: list[Finding] = []
    verdict = count_verdict(seen, want)
    cm = count_measure(seen, want, "GPUs nvidia-smi -L lists (the plan's gpu_count)")
    if verdict is Verdict.FAIL:
        findings.append(Finding("health.gpu_count", Verdict.FAIL,
                                Msg("nvidia-smi -L lists {seen} GPU(s) ({listing}){lost}; the plan expects {want}", seen=seen, listing=listing, lost=lost, want=want), "host", ev,
                                "Compare with `lspci -d 10de:`: a GPU on the bus that nvidia-smi does not list failed "
                                "to initialise (dmesg: NVRM/Xid); a GPU missing from lspci too is unseated, unpowered or "
                                "disabled in the BIOS.", SRC_A1, measured=cm))
    elif verdict is Verdict.WARN:
        findings.append(Finding("health.gpu_count", Verdict.WARN,
                                Msg("nvidia-smi -L lists {seen} GPU(s) ({listing}); the plan expects only {want}", seen=seen, listing=listing, want=want), "host",
                                ev, "Correct the plan's GPU count, or check which GPU should not be here.", SRC_A1,
                                measured=cm))
    elif want is None and not lost and (doubt := sxm_count_doubt(seen, names)) is not None:
        findings.append(sxm_count_finding(Msg("nvidia-smi -L lists {gpus}", gpus=plural(seen, "GPU")), doubt, ev))
    else:
        findings.append(Finding("health.gpu_count", Verdict.PASS,
                                (Msg('nvidia-smi -L lists {gpus}: {listing}{lost}', gpus=plural(seen, 'GPU'), listing=listing, lost=lost) + (Msg(', as the plan expects') if want is not None else '')), "host", ev, "", SRC_A1,
                                measured=cm))
    if len(names) > 1:
        findings.append(mixed_models(listing, ev))
    for idx, name, _ in s.gpus:
        mig = [m for m in s.mig if m[0] == idx]
        if not mig:
            continue
        profiles: dict[str, int] = {}
        for _, prof, _ in mig:
            profiles[prof] = profiles.get(prof, 0) + 1
        desc = ", ".join(f"{n}x {p}" for p, n in profiles.items())
        who = f"GPU {idx} ({name})"
        findings.append(Finding("health.mig", Verdict.PASS,
                                Msg("{who}: MIG is enabled with {n_mig} MIG device(s) ({desc}): CUDA sees those instances, not "
                                    "the whole GPU", who=who, n_mig=len(mig), desc=desc), who,
                                tuple(ln for ln in s.lines if ln.startswith(f"GPU {idx}:") or ln.startswith("MIG"))[:12],
                                Msg("For whole-GPU training turn MIG off: `sudo nvidia-smi -i {idx} -mig 0`, then reset the "
                                    "GPU.", idx=idx), SRC_MIG))
    mig_idx = {m[0] for m in s.mig}
    whole = [g for g in s.gpus if g[0] not in mig_idx]
    if mig_idx and whole:  # MIG on some GPUs, whole GPUs beside them: as nvidia-smi -q's MIG mode says it (held-out r359)
        from wizard.rules.smi import mixed_mig

        findings.append(mixed_mig([f"GPU {i} ({n})" for i, n, _ in s.gpus if i in mig_idx], len(whole),
                                  tuple(ln for ln in s.lines if ln.startswith("GPU") or ln.startswith("MIG"))[:8]))
    return findings


def nvml(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("nvml")
    if _no_gpu(out):
        seen = ""
        ev: Sequence[str] = ()
        if o is not None and o.ok:
            nf = facts_of(out).parse_text("nvml", parse_nvml)
            assert nf is not None
            seen = (Msg("NVML initialised and sees {n} GPU(s)", n=nf.count) if nf.init == "ok" else
                    _nvml_error(nf.init, nf.error) if nf.error else N_("NVML output unreadable"))
            ev = (o.source,) + ((nf.error,) if nf.error else ())
        elif o is not None:
            seen, ev = o.error, tuple(o.evidence_error())
        return [_skip_no_gpu("health.nvml", "NVML check", seen, tuple(ev))]
    if o is None or not o.ok:
        return [missing("health.nvml", o, "whether NVML initialises", source=SRC_A1)]
    f = facts_of(out).parse_text("nvml", parse_nvml)
    assert f is not None
    if f.problems:
        lines = [ln for p in f.problems for ln in p.splitlines()]  # evidence is lines, not a blob
        return [garbled("health.nvml", o, "the NVML probe output", lines, source=SRC_A1)]
    if f.init != "ok":
        remedy = {
            "library_not_found": "libnvidia-ml.so.1 is installed with the NVIDIA driver: install the "
                                 "driver (driver & CUDA stage).",
            "driver_not_loaded": "Load the driver (`modprobe nvidia`) and read dmesg if it fails.",
            "no_permission": "Run as root or check the permissions of /dev/nvidia*.",
            "module_missing": "Reinstall bringup: its dependency nvidia-ml-py is missing.",
        }.get(f.init, "Read `dmesg | grep NVRM` for the driver's reason.")
        return [Finding("health.nvml", Verdict.FAIL, Msg("NVML did not initialise: {error}", error=_nvml_error(f.init, f.error)), "host",
                        (o.source, f.error), remedy, SRC_A1)]
    if f.count is None:  # nvmlDeviceGetCount failed: NVML is up but the GPU count is not known
        return [garbled("health.nvml", o, "the NVML GPU count", o.text.strip()[:500].splitlines(), source=SRC_A1)]
    findings: list[Finding] = []
    pci, _ = _pci(out)
    on_bus = len(pci.gpus) if pci is not None else None
    desc = (Msg('NVML sees {gpus}, driver {driver_version}', gpus=plural(f.count, 'GPU'), driver_version=f.driver_version) + (Msg(', CUDA {cuda_version_str} supported by the driver', cuda_version_str=f.cuda_version_str) if f.cuda_version_str else ''))
    ev = [o.source] + [f"GPU {g.get('index')}: {g.get('name', '?')} {g.get('pci_bus_id', '?')} "
                       f"serial {g.get('serial', '?')}" for g in f.gpus]
    # a GPU NVML counts but cannot open (nvmlDeviceGetHandleByIndex: "GPU is lost" after Xid 79)
    lost = [g for g in f.gpus if isinstance(g.get("errors"), dict) and g["errors"].get("handle")]
    if lost:
        findings.append(Finding("health.nvml", Verdict.FAIL,
                                Msg("{desc}, but cannot open {n_lost} of them", desc=desc, n_lost=len(lost)), "host",
                                tuple(ev + [f"GPU {g.get('index')}: handle: {g['errors']['handle']}" for g in lost]),
                                "Read `dmesg | grep -e NVRM -e Xid` for the GPU's PCI address; reseat it or "
                                "RMA it if it keeps failing.", SRC_A1))
    elif on_bus is not None and f.count is not None and f.count < on_bus:
        findings.append(Finding("health.nvml", Verdict.FAIL,
                                Msg("{desc}, but {on_bus} are on the PCI bus: the driver could not bring up {a1}", desc=desc, on_bus=on_bus, a1=on_bus - f.count), "host", tuple(ev),
                                "Read `dmesg | grep -e NVRM -e Xid` for the missing GPU's PCI address; "
                                "reseat it or RMA if it keeps failing.", SRC_A1))
    else:
        findings.append(Finding("health.nvml", Verdict.PASS, desc, "host", tuple(ev), "", SRC_A1))
    return findings
