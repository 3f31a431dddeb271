"""Checks for PCIe links, lspci inventory, GPU topology, P2P and NVLink (checks-catalogue A1, A10,
A11, B1, B2 (lspci/sysfs part), B3 (lspci AER status bits), B8, B9; knowledge.md §3 and §9 item 19).

Every function here has the check signature ``(outputs: Mapping[str, ProbeOutput], plan) -> list[Finding]``
and is pure: the probes it reads are registered below (``bringup capture`` collects them), and the
``bringup explain`` kinds of :mod:`wizard.parsers.pcie` / :mod:`wizard.parsers.topology` feed pasted
text through the same functions.

Rules, in short:
* PCIe width below LnkCap (lspci ``(downgraded)``, or sysfs current < max) is a FAIL, naming the GPU
  and the port above it. A lower *speed* is only judged under load (``plan["under_load"] is True``);
  otherwise it is a WARN "re-check under load": NVIDIA GPUs train down to 2.5 GT/s at idle.
* ACS enabled (``ACSCtl: SrcValid+``) on a bare-metal node is a WARN with the NCCL troubleshooting remedy
  when it sits on a PCIe switch port, on a root port/bridge above a GPU (NVIDIA/nccl#2079) or above a
  switch, or on a bridge whose subtree a pasted excerpt does not show; the grepped form (``lspci -vvv |
  grep ACSCtl``, knowledge.md §3) warns on any SrcValid+. On a VM host it is expected.
* A pasted lspci excerpt without an NVIDIA GPU is not a bus scan: GPU count ``unknown``, no hardware advice.
* AER status bits: uncorrectable + fatal severity -> FAIL, uncorrectable -> WARN, correctable -> noted.
* NVLink: a link the SKU expects (``assets/nvlink_expected.csv``) that is not up -> FAIL; SKUs
  without NVLink are never failed for "Down" links (DCGM reports those falsely on PCIe cards).
* NVLink error counters: lifetime totals are not a failure; only the delta between two samples is.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.rules.common import Outputs, garbled, missing
from wizard.common import gpu_subject
from wizard.data import table
from wizard.model import Finding, Verdict
from wizard.parsers.pcie import (
    LspciDevice, LspciFacts, device_label, fmt_link, fmt_size, gen_of, gts, parse_iommu_groups, parse_lspci,
)
from wizard.parsers.topology import (
    P2P_CODES, Matrix, nv_count, parse_dcgmi_nvlink, parse_nvlink, parse_p2p_matrix, parse_topo_matrix,
)
from wizard.probes import ProbeOutput, command_probe

# ------------------------------------------------------------------ probes

LSPCI_VVV = command_probe("lspci_vvv", "PCI devices with link, ACS and AER detail (lspci -D -nn -vvv)",
                          ["lspci", "-D", "-nn", "-vvv"], timeout_s=60)
"""Whole ``lspci -vvv`` (the GPUs' upstream switch ports are needed); ``-nn`` adds class codes and
vendor:device ids (GPU detection that does not depend on the host's pci.ids), ``-D`` the PCI domain.
Without root lspci prints ``Capabilities: <access denied>``: the findings then say so."""
TOPO_M = command_probe("nvidia_smi_topo_m", "GPU/NIC topology matrix (nvidia-smi topo -m)",
                       ["nvidia-smi", "topo", "-m"], timeout_s=60)
TOPO_P2P = command_probe("nvidia_smi_topo_p2p", "GPU peer-to-peer read status (nvidia-smi topo -p2p r)",
                         ["nvidia-smi", "topo", "-p2p", "r"], timeout_s=60)
NVLINK_S = command_probe("nvidia_smi_nvlink_s", "NVLink link speeds (nvidia-smi nvlink -s)",
                         ["nvidia-smi", "nvlink", "-s"], timeout_s=60)
NVLINK_E = command_probe("nvidia_smi_nvlink_e", "NVLink error counters (nvidia-smi nvlink -e)",
                         ["nvidia-smi", "nvlink", "-e"], timeout_s=60)

# ------------------------------------------------------------------ sources

SRC_WIDTH = ("checks-catalogue B1 (width below max -> FAIL; GCM check-pci); lspci(8): LnkSta '(downgraded)' "
             "= below LnkCap")
SRC_SPEED = ("checks-catalogue B1 (generation judged only under load); knowledge.md §3 'PCIe link speed' and §9 "
             "item 19: GPUs train the link down to 2.5 GT/s at idle (lspci man page; baaz.dev and billauer.co.il "
             "practitioner reports)")
SRC_ACS = ("NCCL troubleshooting, 'PCI Access Control Services (ACS)' "
           "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs); "
           "checks-catalogue A11; knowledge.md §3 (check: `sudo lspci -vvv | grep ACSCtl`, SrcValid+ = ACS on); "
           "NVIDIA/nccl#2079 (hang traced to ACS on AMD GPP root-complex bridges above the GPUs); NVIDIA/nccl#606 "
           "(hang with SrcValid+ on an AMD node, NCCL team's script disables ACS); NVIDIA/nccl#523 (NCCL developer: "
           "SrcValid+ lines may be on ports no GPU/NIC traffic uses)")
SRC_AER = ("checks-catalogue B3 (GCM pcie-aer: fatal -> FAIL, uncorrectable non-fatal -> WARN, corrected -> INFO); "
           "AER status/severity registers as decoded by lspci -vv")
SRC_BAR = ("knowledge.md §3: Above 4G decoding must be on for large-BAR GPUs; BAR1 size "
           "(GPUDirect RDMA doc 'PCI BAR sizes', https://docs.nvidia.com/cuda/gpudirect-rdma/)")
SRC_COUNT = "checks-catalogue A1 (GPU count from lspci class 0300/0302 vs the plan; NVHV gpu_count, GCM gpu_num)"
SRC_DRIVER = ("NVIDIA CUDA installation guide for Linux ('Disabling Nouveau'); knowledge.md §3 "
              "(IOMMU/VFIO only for VMs and passthrough)")
SRC_TOPO = "checks-catalogue A10 (nvidia-smi topo -m; AzNHC check_hw_topology); nvidia-smi topo -m legend"
SRC_NIC = ("GPUDirect RDMA works best when GPU and NIC share a PCIe switch (https://docs.nvidia.com/cuda/gpudirect-rdma/, "
           "knowledge.md §3); checks-catalogue A10 (WARN if the GPU-NIC pairing is not PIX/PXB)")
SRC_P2P = "checks-catalogue A11 (FAIL if P2P is expected but the matrix shows CNS/GNS/TNS/NS); nvidia-smi topo -p2p legend"
SRC_NVLINK = ("checks-catalogue B8 (FAIL if any link the SKU expects is inactive; NVHV nvlink_active); "
              "assets/nvlink_expected.csv")
SRC_DCGM_FALSE = ("NVIDIA/DCGM#49 and NVIDIA/NVSentinel PR #1481: DCGM reports the NVLink links of PCIe GPUs "
                  "without a bridge as Down")
SRC_NVERR = ("checks-catalogue B9 (NVLink error counters: judge the delta between two samples; replay/CRC delta -> "
             "WARN, recovery -> FAIL; never fail on lifetime totals)")

REMEDY_WIDTH = ("Power down, reseat the GPU (and its riser or cable), check that the slot is wired x16 and the BIOS "
                "slot bifurcation is x16, then re-check. If it stays narrow, swap slot/riser to find the faulty part.")
REMEDY_SPEED = ("Re-check under load (during gpu-burn or nvbandwidth): `nvidia-smi --query-gpu=index,pcie.link.gen."
                "gpucurrent,pcie.link.gen.max,pcie.link.width.current --format=csv`, or `sudo lspci -vv -s <bdf> | grep "
                "LnkSta`. If it stays below LnkCap under load, set the slot's PCIe speed to Auto (or its Gen) in the "
                "BIOS and check risers/retimers and seating.")
REMEDY_ROOT = ("Run `sudo lspci -vvv` (without root lspci hides the PCIe capabilities), or read the link from sysfs "
               "(no root): `cat /sys/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}`.")
REMEDY_ACS = ("On a bare-metal training node, disable ACS on these ports: in the BIOS if it has the option, else "
              "after every boot `sudo setpci -s <BDF> ECAP_ACS+0x6.w=0000` for each port listed (NCCL "
              "troubleshooting; NVIDIA/nccl#2079 did this on AMD GPP bridges above the GPUs); then check `nvidia-smi "
              "topo -p2p r` and NCCL bandwidth again. If this node hosts VMs, keep ACS and set virtualization=true in "
              "the plan.")
REMEDY_AER_UE = ("Uncorrectable PCIe errors are latched on this link: read `journalctl -k | grep -i -e aer -e "
                 "'PCIe Bus Error'` for when they happened, reseat the GPU/riser and its power cables, and replace "
                 "the part if they come back after a cold boot.")
REMEDY_BAR = ("Enable Above 4G decoding (64-bit MMIO) in the BIOS so the firmware can place the GPU's large BARs, "
              "then reboot and re-check.")


# ------------------------------------------------------------------ helpers


def _under_load(plan: Mapping[str, Any]) -> bool:
    """True only when the caller says the reading was taken under load (``plan["under_load"] is True``)."""
    return plan.get("under_load") is True


def _virtualised(plan: Mapping[str, Any]) -> bool:
    v = plan.get("virtualization")
    return bool(v) and v not in ("false", "no", "0")


def _plan_count(plan: Mapping[str, Any]) -> int | None:
    v = plan.get("gpu_count")
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def sku_row(name: str) -> dict[str, str] | None:
    """The first ``assets/nvlink_expected.csv`` row whose ``match`` regex finds ``name`` (a GPU name as
    nvidia-smi prints it, or the plan's gpu_model); None when no row matches."""
    if not isinstance(name, str) or not name.strip():
        return None
    for row in table("nvlink_expected.csv"):
        try:
            if re.search(row.get("match", "") or "(?!)", name, re.I):
                return row
        except re.error:
            continue
    return None


def _int(s: str | None) -> int | None:
    return int(s) if s and re.fullmatch(r"\d{1,4}", s.strip()) else None


def _float(s: str | None) -> float | None:
    try:
        return float(s) if s else None
    except ValueError:
        return None


def _subject(d: LspciDevice) -> str:
    return gpu_subject(None, d.bdf) if d.bdf else "device in this excerpt"


def _who(d: LspciDevice) -> str:
    if not d.bdf:
        return "the device in this excerpt (its lspci header line is not included)"
    label = device_label(d)
    return f"{label} {d.bus_id}".strip() if label else d.bus_id


def _port_desc(p: LspciDevice) -> str:
    kind = p.port_type or "bridge"
    return f"{p.bus_id} ({kind})"


def _lspci_facts(out: Outputs) -> tuple[LspciFacts | None, ProbeOutput | None]:
    o = out.get("lspci_vvv")
    if o is None or (not o.ok and not o.text.strip()):
        return None, o
    return parse_lspci(o.text), o


def _targets(facts: LspciFacts) -> list[LspciDevice]:
    """The devices whose link is judged: NVIDIA GPUs; for a pasted snippet without header lines,
    the snippet itself (its device is not named)."""
    if facts.gpus:
        return facts.gpus
    return [d for d in facts.snippets if d.lnksta.present or d.lnkcap.present or d.aer.seen]


# ------------------------------------------------------------------ PCIe width / speed


def _narrow(d: LspciDevice) -> bool:
    cur, cap = d.lnksta.width, d.lnkcap.width
    return (d.lnksta.width_marker == "downgraded" or cur == 0
            or (cur is not None and cap is not None and cur < cap))


def _slow(d: LspciDevice) -> bool:
    cur, cap = d.lnksta.speed_gts, d.lnkcap.speed_gts
    return d.lnksta.speed_marker == "downgraded" or (cur is not None and cap is not None and cur < cap)


def _link_text(d: LspciDevice) -> str:
    """"LnkSta 2.5GT/s (Gen1, downgraded) x16, LnkCap 16GT/s (Gen4) x16" (lspci's own markers kept)."""
    st = d.lnksta
    notes = [f"Gen{gen_of(st.speed_gts)}"] if gen_of(st.speed_gts) else []
    if st.speed_marker == "downgraded":
        notes.append("downgraded")
    speed = "?" if st.speed_gts is None else f"{st.speed_gts:g}GT/s" + (f" ({', '.join(notes)})" if notes else "")
    width = "x?" if st.width is None else f"x{st.width}" + (" (downgraded)" if st.width_marker == "downgraded" else "")
    cap = fmt_link(d.lnkcap.speed_gts, d.lnkcap.width) if d.lnkcap.present else "not shown"
    return f"LnkSta {speed} {width}, LnkCap {cap}"


def _ev(d: LspciDevice, *lines: str) -> list[str]:
    out = [d.header] if d.header else []
    out.extend(x for x in lines if x)
    return out


def _no_link(fid: str, d: LspciDevice, what: str, src: str) -> Finding:
    if d.caps_denied:
        return Finding(fid, Verdict.UNKNOWN, f"{_who(d)}: {what} not readable: lspci ran without root "
                       "('Capabilities: <access denied>')", _subject(d),
                       tuple(_ev(d, "Capabilities: <access denied>")), REMEDY_ROOT, src)
    return Finding(fid, Verdict.UNKNOWN, f"{_who(d)}: no LnkSta line for this device in this output "
                   f"(cut short, or not lspci -vv): {what} unknown", _subject(d),
                   tuple(_ev(d, *d.lines[-3:])), "Paste the device's whole `sudo lspci -vv -s <bdf>` section.", src)


def _sysfs_links(out: Outputs, fid: str, plan: Mapping[str, Any], speed: bool) -> list[Finding] | None:
    """Width/speed from the existing sysfs ``pci`` probe (wizard.parsers.gpu.PciFunction), for hosts
    where lspci is missing or ran without root. None when that probe has no GPU links either."""
    from wizard.parsers.gpu import parse_pci

    o = out.get("pci")
    if o is None or not o.files:
        return None
    facts = parse_pci(o)
    gpus = [g for g in facts.gpus if g.current_link_width is not None or g.current_link_speed]
    if not gpus:
        return None
    findings: list[Finding] = []
    for g in gpus:
        bdf = g.bdf
        ev = [f"/sys/bus/pci/devices/{bdf}/current_link_speed:{g.current_link_speed}",
              f"/sys/bus/pci/devices/{bdf}/max_link_speed:{g.max_link_speed}",
              f"/sys/bus/pci/devices/{bdf}/current_link_width:{g.current_link_width}",
              f"/sys/bus/pci/devices/{bdf}/max_link_width:{g.max_link_width}"]
        cur_s, max_s = gts(g.current_link_speed), gts(g.max_link_speed)
        cur_w, max_w = g.current_link_width, g.max_link_width
        link = f"{fmt_link(cur_s, cur_w)} of {fmt_link(max_s, max_w)}"
        subj = gpu_subject(None, bdf)
        if not speed:
            if cur_w is None or max_w is None:
                findings.append(Finding(fid, Verdict.UNKNOWN, f"GPU {bdf}: link width not readable in sysfs", subj,
                                        tuple(ev), REMEDY_ROOT, SRC_WIDTH))
            elif cur_w < max_w:
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {bdf}: PCIe link x{cur_w}, narrower than its "
                                        f"max x{max_w} (sysfs)", subj, tuple(ev), REMEDY_WIDTH, SRC_WIDTH))
            else:
                findings.append(Finding(fid, Verdict.PASS, f"GPU {bdf}: PCIe link {link} (sysfs)", subj,
                                        tuple(ev), "", SRC_WIDTH))
        else:
            if cur_s is None or max_s is None:
                findings.append(Finding(fid, Verdict.UNKNOWN, f"GPU {bdf}: link speed not readable in sysfs", subj,
                                        tuple(ev), REMEDY_ROOT, SRC_SPEED))
            elif cur_s < max_s:
                v = Verdict.FAIL if _under_load(plan) else Verdict.WARN
                msg = (f"GPU {bdf}: PCIe link at {fmt_link(cur_s, cur_w)} below its max {fmt_link(max_s, max_w)} "
                       + ("under load" if v is Verdict.FAIL else "(read at idle or unknown load: re-check under load)"))
                findings.append(Finding(fid, v, msg, subj, tuple(ev), REMEDY_SPEED, SRC_SPEED))
            else:
                findings.append(Finding(fid, Verdict.PASS, f"GPU {bdf}: PCIe link {link} (sysfs)", subj,
                                        tuple(ev), "", SRC_SPEED))
    return findings


def pcie_width(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_width: every GPU's PCIe link (and the ports above it) at its full width.

    Reads the ``lspci_vvv`` probe; falls back to the sysfs ``pci`` probe (current/max_link_width)
    when lspci is missing or ran without root. A width below LnkCap is a FAIL at any load
    (checks-catalogue B1)."""
    fid = "health.pcie_width"
    facts, o = _lspci_facts(out)
    if facts is None or (facts.non_root and not any(d.lnksta.present for d in _targets(facts))):
        fb = _sysfs_links(out, fid, plan, speed=False)
        if fb is not None:
            return fb
    if facts is None:
        return [missing(fid, o, "the GPUs' PCIe link width", remedy="Install pciutils (lspci) and run as root.",
                        source=SRC_WIDTH)]
    targets = _targets(facts)
    if not targets:
        return _no_gpu(fid, facts, o, "PCIe link width", SRC_WIDTH)
    findings: list[Finding] = []
    passed: list[str] = []
    pass_ev: list[str] = []
    for d in targets:
        if not d.lnksta.present:
            findings.append(_no_link(fid, d, "link width", SRC_WIDTH))
            continue
        bad_ports = [p for p in facts.parents(d) if p.lnksta.present and _narrow(p)]
        if _narrow(d) or bad_ports:
            parts = []
            ev = _ev(d, d.lnkcap.line, d.lnksta.line)
            if _narrow(d):
                cap = f"x{d.lnkcap.width}" if d.lnkcap.width is not None else "its LnkCap (not shown)"
                parts.append(f"PCIe link x{d.lnksta.width} (downgraded), narrower than {cap}")
            for p in bad_ports:
                parts.append(f"upstream port {_port_desc(p)} at x{p.lnksta.width} of x{p.lnkcap.width}")
                ev += [p.header, p.lnkcap.line, p.lnksta.line]
            up = facts.parents(d)
            if up and not bad_ports:
                parts.append(f"upstream port {_port_desc(up[0])}")
            findings.append(Finding(fid, Verdict.FAIL, f"{_who(d)}: " + "; ".join(parts), _subject(d),
                                    tuple(x for x in ev if x), REMEDY_WIDTH, SRC_WIDTH))
        else:
            up = facts.parents(d)
            upt = f" (upstream port {_port_desc(up[0])})" if up else ""
            passed.append(f"{_who(d)} x{d.lnksta.width}{upt}")
            pass_ev += _ev(d, d.lnkcap.line, d.lnksta.line)
    if passed:
        findings.append(Finding(fid, Verdict.PASS, f"PCIe width at LnkCap for {len(passed)} link(s): "
                                + "; ".join(passed[:8]) + (" ..." if len(passed) > 8 else ""), "host",
                                tuple(pass_ev[:24]), "", SRC_WIDTH))
    return findings


def pcie_speed(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_speed: PCIe generation of every GPU link. Below LnkCap is a WARN "re-check under
    load" unless ``plan["under_load"] is True`` (then FAIL): idle GPUs train down (knowledge.md §9 #19).
    A LnkCtl2 target speed below LnkCap (a configuration cap) is a WARN at any load."""
    fid = "health.pcie_speed"
    facts, o = _lspci_facts(out)
    if facts is None or (facts.non_root and not any(d.lnksta.present for d in _targets(facts))):
        fb = _sysfs_links(out, fid, plan, speed=True)
        if fb is not None:
            return fb
    if facts is None:
        return [missing(fid, o, "the GPUs' PCIe link speed", remedy="Install pciutils (lspci) and run as root.",
                        source=SRC_SPEED)]
    targets = _targets(facts)
    if not targets:
        return _no_gpu(fid, facts, o, "PCIe link speed", SRC_SPEED)
    loaded = _under_load(plan)
    findings: list[Finding] = []
    passed: list[str] = []
    pass_ev: list[str] = []
    for d in targets:
        if not d.lnksta.present:
            findings.append(_no_link(fid, d, "link speed", SRC_SPEED))
            continue
        slow_ports = [p for p in facts.parents(d) if p.lnksta.present and _slow(p)]
        capped = (d.lnkctl2_target_gts is not None and d.lnkcap.speed_gts is not None
                  and d.lnkctl2_target_gts < d.lnkcap.speed_gts)
        if _slow(d) or slow_ports or capped:
            parts = [_link_text(d)]
            ev = _ev(d, d.lnkcap.line, d.lnksta.line, d.lnkctl2_line if capped else "")
            for p in slow_ports:
                parts.append(f"upstream port {_port_desc(p)} at {fmt_link(p.lnksta.speed_gts, p.lnksta.width)}")
                ev += [p.header, p.lnkcap.line, p.lnksta.line]
            if capped:
                parts.append(f"LnkCtl2 target speed {d.lnkctl2_target_gts:g}GT/s is below LnkCap: the link is "
                             "capped by configuration")
            if (_slow(d) or slow_ports) and loaded:
                verdict, tail = Verdict.FAIL, "below LnkCap under load"
            elif _slow(d) or slow_ports:
                verdict, tail = Verdict.WARN, ("below LnkCap, read at idle or unknown load: GPUs lower the PCIe "
                                               "speed when idle; re-check under load")
            else:
                verdict, tail = Verdict.WARN, "speed capped below LnkCap"
            findings.append(Finding(fid, verdict, f"{_who(d)}: " + "; ".join(parts) + f" - {tail}", _subject(d),
                                    tuple(x for x in ev if x), REMEDY_SPEED, SRC_SPEED))
        else:
            passed.append(f"{_who(d)} {fmt_link(d.lnksta.speed_gts, d.lnksta.width)}")
            pass_ev += _ev(d, d.lnkcap.line, d.lnksta.line)
    if passed:
        findings.append(Finding(fid, Verdict.PASS, f"PCIe speed at LnkCap for {len(passed)} link(s): "
                                + "; ".join(passed[:8]) + (" ..." if len(passed) > 8 else ""), "host",
                                tuple(pass_ev[:24]), "", SRC_SPEED))
    return findings


def _no_gpu(fid: str, facts: LspciFacts, o: ProbeOutput | None, what: str, src: str) -> list[Finding]:
    if not facts.devices:
        lines = (o.text if o else "").splitlines()
        return [garbled(fid, o or ProbeOutput(fid, "lspci"), "the lspci output", lines, source=src)]
    return [Finding(fid, Verdict.SKIP, f"{what} not judged: no NVIDIA GPU in this lspci output (see "
                    "health.lspci_gpu_count)", "host", tuple(d.header for d in facts.devices[:5] if d.header),
                    "", src)]


# ------------------------------------------------------------------ ACS


def _switchy(d: LspciDevice) -> bool:
    """A PCIe switch port: lspci's ``Express ... Upstream/Downstream Port``, or, when the capabilities are not
    shown, a bridge whose name says switch (``PLX ... PEX 8747 ... Switch``, ``Broadcom / LSI PEX880xx``)."""
    return d.is_switch_port or (bool(d.bdf) and d.class_name.lower() == "pci bridge" and
                                bool(re.search(r"\bswitch\b|\bPEX ?\d{3,5}", d.description, re.I)))


def _bridge_kind(d: LspciDevice) -> str:
    if d.port_type:
        return d.port_type
    if _switchy(d):
        return "PCIe switch port"
    desc = re.split(r"\s*\((?:prog-if|rev)\b", d.description, maxsplit=1)[0].strip()
    return f"PCI bridge: {desc[:70]}" if desc else "PCI bridge"


def _acs_grep(facts: LspciFacts, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_acs from ``sudo lspci -vvv | grep ACSCtl`` (the check knowledge.md §3 prescribes): one
    ACSCtl line per function, without the device it belongs to."""
    fid = "health.pcie_acs"
    lines = [d for d in facts.devices if d.acs_ctl is not None]
    on = [d for d in lines if d.acs_ctl and d.acs_ctl.get("SrcValid")]
    total = len(lines)
    if not on:
        return [Finding(fid, Verdict.PASS, f"ACS is off (ACSCtl: SrcValid-) on all {total} function(s) in this "
                        "`lspci -vvv | grep ACSCtl` output", "host", tuple(d.acs_line for d in lines[:8]), "",
                        SRC_ACS)]
    ev = tuple(d.acs_line for d in on[:16])
    if _virtualised(plan):
        return [Finding(fid, Verdict.PASS, f"ACS is on (SrcValid+) on {len(on)} of {total} function(s); expected on a "
                        "VM host (the plan says virtualization=true)", "host", ev, "", SRC_ACS)]
    return [Finding(fid, Verdict.WARN, f"ACS is on (ACSCtl: SrcValid+) on {len(on)} of {total} PCI function(s) of this "
                    "bare-metal node: on the ports above GPUs, NICs or PCIe switches it redirects peer-to-peer traffic "
                    "through the CPU root complex (slow P2P, NCCL hangs). grep dropped the device names, so which "
                    "ports these are is not shown", "host", ev,
                    "Find the ports: `sudo lspci -vvv | grep -E '^[0-9a-f]{2,4}:|ACSCtl'` prints each device line "
                    "with its ACSCtl (or give bringup the whole `sudo lspci -vvv`). Lines on ports that no GPU, NIC "
                    "or switch sits behind do not matter. " + REMEDY_ACS, SRC_ACS)]


def pcie_acs(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_acs: ACS (``ACSCtl: SrcValid+``) on a bare-metal node (``plan["virtualization"]`` falsy)
    redirects GPU peer-to-peer traffic through the CPU root complex: WARN with the NCCL troubleshooting
    remedy when it is on a PCIe switch port, on a root port/bridge above a GPU (NVIDIA/nccl#2079), or on a
    root port/bridge above a PCIe switch. ACS on a bridge whose subtree this output does not show is a WARN
    too (knowledge.md §3: SrcValid+ means ACS is on), saying so; on a bridge shown to have neither GPU nor
    switch behind it, it does not matter. The grepped form (``lspci -vvv | grep ACSCtl``) is judged line by
    line: any SrcValid+ -> WARN."""
    fid = "health.pcie_acs"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "the ACS state of the PCIe switch ports", remedy=REMEDY_ROOT, source=SRC_ACS)]
    if facts.acs_grep:
        return _acs_grep(facts, plan)
    bridges = [d for d in facts.devices if d.bdf and (d.is_bridge or d.class_code == "0604" or d.is_switch_port
                                                      or d.class_name.lower() == "pci bridge")]
    denied = [d for d in bridges if d.caps_denied]
    if not bridges:
        if not any(d.bdf for d in facts.devices):
            why = "this excerpt has no device sections"
        else:
            why = "this output has no PCI bridges (lspci -d 10de: lists only NVIDIA functions)"
        return [Finding(fid, Verdict.SKIP, f"ACS not judged: {why}; run the whole `sudo lspci -vvv`", "host",
                        tuple(d.header for d in facts.devices[:3] if d.header), "", SRC_ACS)]
    if denied and not any(d.acs_ctl is not None for d in bridges):
        return [Finding(fid, Verdict.UNKNOWN, f"ACS state unknown: lspci ran without root ({len(denied)} bridge(s) "
                        "show 'Capabilities: <access denied>')", "host",
                        tuple([d.header for d in denied[:5]] + ["Capabilities: <access denied>"]), REMEDY_ROOT, SRC_ACS)]
    gpus = facts.gpus
    whole = _whole(o, facts)
    gpu_paths_known = bool(gpus) and all(facts.parents(g) for g in gpus)
    on = [d for d in bridges if d.acs_ctl and d.acs_ctl.get("SrcValid")]
    flagged: list[str] = []
    unseen: list[str] = []
    quiet: list[str] = []
    ev: list[str] = []
    for d in on:
        below = facts.below(d)
        gpus_below = [g for g in gpus if d in facts.parents(g)]
        switch_below = [x for x in below if _switchy(x)]
        kind = _bridge_kind(d)
        if _switchy(d) or gpus_below or switch_below:
            what = [f"above GPU {', '.join(g.bus_id for g in gpus_below[:4])}"] if gpus_below else []
            if switch_below and not _switchy(d):
                what.append(f"above PCIe switch {switch_below[0].bus_id}")
            flagged.append(f"{d.bus_id} ({kind}{', ' + '; '.join(what) if what else ''})")
            ev += [d.header, d.acs_line]
        elif below or whole or gpu_paths_known:
            quiet.append(f"{d.bus_id} ({kind})")
        else:
            unseen.append(f"{d.bus_id} ({kind})")
            ev += [d.header] + [x.strip() for x in d.lines if x.strip().startswith(("NUMA node:", "ACSCap:"))] + [
                d.acs_line]
    quiet_note = (f"; ACS is on at {', '.join(quiet[:4])}, with no GPU or PCIe switch behind it in this output"
                  if quiet else "")
    if not flagged and not unseen:
        switch = [d for d in bridges if _switchy(d)]
        if switch:
            msg = f"no PCIe switch port above a GPU has ACS enabled ({len(switch)} switch port(s))"
        elif gpus:
            msg = (f"no ACS on the path of the {len(gpus)} GPU(s) in this output (their root ports; no PCIe switch "
                   "ports)")
        else:
            msg = "no PCIe switch ports and no ACS enabled on the root ports/bridges in this output"
        pev = [x for d in (on or switch or bridges)[:8] for x in (d.header, d.acs_line) if x]
        return [Finding(fid, Verdict.PASS, msg + quiet_note, "host", tuple(pev[:16]), "", SRC_ACS)]
    if _virtualised(plan):
        return [Finding(fid, Verdict.PASS, f"ACS enabled on {len(flagged) + len(unseen)} PCIe port(s)/bridge(s); "
                        "expected on a VM host (the plan says virtualization=true)", "host", tuple(ev[:24]), "",
                        SRC_ACS)]
    parts: list[str] = []
    if flagged:
        parts.append(f"ACS is enabled on {len(flagged)} PCIe port(s) on the GPUs' peer-to-peer path of this bare-metal "
                     "node: GPU peer-to-peer traffic is redirected through the CPU root complex (slow or hanging P2P): "
                     + "; ".join(flagged[:8]) + (" ..." if len(flagged) > 8 else ""))
    if unseen:
        parts.append(f"ACS is enabled (SrcValid+) on {', '.join(unseen[:6])}"
                     + ("" if flagged else " on this bare-metal node")
                     + "; this excerpt does not show what is behind it: if GPUs, NICs or a PCIe switch are, their "
                     "peer-to-peer traffic goes through the root complex/IOMMU (NCCL hangs, NVIDIA/nccl#2079)")
    subject = gpu_subject(None, gpus[0].bdf) if len(gpus) == 1 else "host"
    remedy = REMEDY_ACS if not unseen else (
        "See what is behind it first: `lspci -tv`, or the whole `sudo lspci -vvv`. " + REMEDY_ACS)
    return [Finding(fid, Verdict.WARN, "; ".join(parts) + quiet_note, subject, tuple(x for x in ev[:24] if x),
                    remedy, SRC_ACS)]


def _whole(o: ProbeOutput | None, facts: LspciFacts) -> bool:
    """The output is a whole ``lspci`` listing (this node's probe), not a pasted excerpt."""
    return bool(o and o.source.startswith("$ lspci") and len(facts.devices) > 3)


# ------------------------------------------------------------------ AER


def pcie_aer(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_aer: AER status bits latched on the GPUs and the ports above them (lspci -vv
    ``UESta``/``CESta``; ``UESvrt+`` = fatal). Fatal -> FAIL, uncorrectable -> WARN, corrected -> noted
    in a PASS (checks-catalogue B3; the kernel-log side of B3 belongs to the events checks)."""
    fid = "health.pcie_aer"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "the PCIe AER status of the GPU links", remedy=REMEDY_ROOT, source=SRC_AER)]
    targets = _targets(facts)
    if not targets:
        return _no_gpu(fid, facts, o, "PCIe AER status", SRC_AER)
    checked: list[LspciDevice] = []
    seen_ids: set[int] = set()
    for d in targets:
        for x in [d] + facts.parents(d):
            if id(x) not in seen_ids:
                seen_ids.add(id(x))
                checked.append(x)
    with_aer = [d for d in checked if d.aer.seen]
    if not with_aer:
        if any(d.caps_denied for d in checked):
            return [Finding(fid, Verdict.UNKNOWN, "AER status unknown: lspci ran without root", "host",
                            tuple([d.header for d in checked if d.header][:5] + ["Capabilities: <access denied>"]),
                            REMEDY_ROOT, SRC_AER)]
        return [Finding(fid, Verdict.UNKNOWN, "no AER capability decoded for the GPU links in this output "
                        "(cut short, or the device has none)", "host",
                        tuple(d.header for d in checked if d.header)[:5] or tuple(targets[0].lines[:3]),
                        "Paste the whole `sudo lspci -vvv` section of the GPU and the ports above it.", SRC_AER)]
    findings: list[Finding] = []
    notes: list[str] = []
    ev_ok: list[str] = []
    for d in with_aer:
        who = _who(d) if (d.is_gpu or not d.bdf) else f"port {_port_desc(d)}"
        if d.aer.ue_fatal:
            findings.append(Finding(fid, Verdict.FAIL, f"{who}: fatal uncorrectable PCIe error(s) latched: "
                                    f"{', '.join(d.aer.ue_fatal)}", _subject(d), tuple(_ev(d, *d.aer.lines)),
                                    REMEDY_AER_UE, SRC_AER))
        elif d.aer.ue_set:
            findings.append(Finding(fid, Verdict.WARN, f"{who}: uncorrectable (non-fatal) PCIe error(s) latched: "
                                    f"{', '.join(d.aer.ue_set)}", _subject(d), tuple(_ev(d, *d.aer.lines)),
                                    REMEDY_AER_UE, SRC_AER))
        elif d.aer.ce_set:
            notes.append(f"{who}: corrected {', '.join(d.aer.ce_set)}")
            ev_ok += _ev(d, *d.aer.lines)
    if not findings:
        msg = f"no uncorrectable PCIe error latched on {len(with_aer)} function(s) with AER"
        if notes:
            msg += "; corrected error status only (informational, B3): " + "; ".join(notes[:6])
        findings.append(Finding(fid, Verdict.PASS, msg, "host",
                                tuple(ev_ok[:20]) or tuple(x for d in with_aer[:4] for x in _ev(d, *d.aer.status_lines)
                                                           if x), "", SRC_AER))
    return findings


# ------------------------------------------------------------------ BAR1, count, driver


def gpu_bar1(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.bar1: each GPU's BAR1 (lspci ``Region 1``) size, for information; a BAR the firmware
    could not assign (``<unassigned>``/``[disabled]``) is a FAIL (Above 4G decoding, knowledge.md §3)."""
    fid = "health.bar1"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "the GPUs' BAR1 size", source=SRC_BAR)]
    gpus = [g for g in facts.gpus if g.regions]
    if not gpus:
        return [Finding(fid, Verdict.SKIP, "BAR1 not judged: no GPU BARs in this output", "host",
                        tuple(d.header for d in facts.gpus[:3] if d.header), "", SRC_BAR)]
    findings: list[Finding] = []
    sizes: list[str] = []
    ev: list[str] = []
    for g in gpus:
        bad = [r for r in g.regions if r.kind == "Memory" and r.unassigned]
        if bad:
            findings.append(Finding(fid, Verdict.FAIL, f"{_who(g)}: BAR(s) {', '.join(str(r.index) for r in bad)} "
                                    "not assigned by the firmware", _subject(g), tuple(_ev(g, *[r.line for r in bad])),
                                    REMEDY_BAR, SRC_BAR))
            continue
        b = g.bar1
        if b is not None:
            sizes.append(f"{g.bus_id} {fmt_size(b.size)}")
            ev += _ev(g, b.line)
    if sizes:
        findings.append(Finding(fid, Verdict.PASS, "GPU BAR1 size: " + ", ".join(sizes[:8])
                                + (" ..." if len(sizes) > 8 else ""), "host", tuple(ev[:16]), "", SRC_BAR))
    return findings or [Finding(fid, Verdict.SKIP, "BAR1 not shown for the GPUs in this output", "host",
                                tuple(g.header for g in gpus[:3]), "", SRC_BAR)]


def _count_finding(fid: str, gpus: list[LspciDevice], switches: int, plan: Mapping[str, Any], ev: list[str],
                   whole: bool, extra: str = "") -> Finding:
    names: dict[str, int] = {}
    for g in gpus:
        key = f"{device_label(g)} (10de:{g.device_id})" if g.device_id else device_label(g)
        names[key] = names.get(key, 0) + 1
    desc = f"{len(gpus)} NVIDIA GPU(s) in lspci" + (": " + ", ".join(f"{n}x {k}" for k, n in names.items()) if names else "")
    if switches:
        desc += f"; {switches} NVSwitch function(s)"
    numa = sorted({g.numa_node for g in gpus if g.numa_node is not None})
    if numa:
        desc += f"; NUMA node(s) {', '.join(str(n) for n in numa)}"
    desc += extra
    expected = _plan_count(plan)
    if expected is not None and len(gpus) < expected:
        return Finding(fid, Verdict.FAIL, f"{desc}; the plan expects {expected}", "host", tuple(ev[:20]),
                       "A GPU is missing from the PCI bus: reseat it and its power cables, check the BIOS sees it "
                       "(Above 4G decoding on), then re-check.", SRC_COUNT)
    if expected is not None and len(gpus) > expected:
        return Finding(fid, Verdict.WARN, f"{desc}; the plan expects only {expected}", "host", tuple(ev[:20]),
                       "Update gpu_count in the plan (`bringup plan gpu_count=N`) if the node has more GPUs.", SRC_COUNT)
    if not gpus:
        v = Verdict.FAIL if whole else Verdict.WARN
        return Finding(fid, v, "no NVIDIA GPU (class 0300/0302) in this lspci output", "host", tuple(ev[:20]),
                       "If this is the whole listing, the GPUs did not enumerate: reseat them, check power cables "
                       "and enable Above 4G decoding in the BIOS. `lspci -d 10de:` lists NVIDIA functions.", SRC_COUNT)
    return Finding(fid, Verdict.PASS, desc + ("" if expected is None else f" (the plan expects {expected})"), "host",
                   tuple(ev[:20]), "", SRC_COUNT)


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
            bad.append(Finding(fid, Verdict.FAIL, f"{_who(d)} is bound to nouveau, not nvidia", _subject(d),
                               tuple(x for x in (d.header, line) if x),
                               "Blacklist nouveau (blacklist nouveau + options nouveau modeset=0 in /etc/modprobe.d/), "
                               "rebuild the initramfs and reboot, then install the NVIDIA driver.", SRC_DRIVER))
        elif drv.startswith("vfio"):
            if _virtualised(plan):
                ok.append(f"{d.bus_id} (vfio-pci, for a VM)")
                ev_ok += [x for x in (d.header, line) if x]
            else:
                bad.append(Finding(fid, Verdict.WARN, f"{_who(d)} is bound to {drv} (reserved for VM passthrough): "
                                   "the host's CUDA cannot use it", _subject(d), tuple(x for x in (d.header, line) if x),
                                   "On a bare-metal training node remove the vfio-pci ids for this GPU (/etc/modprobe.d, "
                                   "kernel command line), rebuild the initramfs and reboot.", SRC_DRIVER))
        elif not drv:
            bad.append(Finding(fid, Verdict.WARN, f"{_who(d)}: no kernel driver bound", _subject(d),
                               tuple(x for x in (d.header, line) if x),
                               "Load the driver (`sudo modprobe nvidia`) and read `dmesg | grep -i nvrm` if it fails.",
                               SRC_DRIVER))
        else:
            ok.append(f"{d.bus_id} ({drv})")
            ev_ok += [x for x in (d.header, line) if x]
    if ok and not bad:
        return [Finding(fid, Verdict.PASS, f"{len(ok)} GPU(s) bound to their driver: " + ", ".join(ok[:8])
                        + (" ..." if len(ok) > 8 else ""), "host", tuple(ev_ok[:16]), "", SRC_DRIVER)]
    return bad


def lspci_gpus(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.lspci_gpu_count and health.gpu_driver_binding: NVIDIA display-class functions in lspci vs
    the plan's gpu_count (fewer -> FAIL, more -> WARN; checks-catalogue A1), and which kernel driver
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
    ev = [g.header for g in gpus] + [d.header for d in facts.devices if d.is_nvswitch]
    if not gpus:
        ev = [d.header for d in facts.devices if d.is_nvidia][:10] or [d.header for d in facts.devices[:10]]
    whole = _whole(o, facts)
    if not gpus and not whole and not any(d.is_nvidia for d in facts.devices):
        # a pasted excerpt is not a bus scan: no GPU in it says nothing about the GPUs of the node
        return [Finding(fid, Verdict.UNKNOWN, f"this lspci excerpt has no NVIDIA GPU ({len(facts.devices)} other "
                        "device section(s)): it is not a whole bus scan, so it says nothing about whether the GPUs "
                        "enumerated; the GPU link, AER and BAR checks are skipped", "host",
                        tuple(d.header for d in facts.devices[:5] if d.header),
                        "To check the GPUs, give bringup `lspci -nn -d 10de:` (every NVIDIA function) or the whole "
                        "`sudo lspci -vvv`.", SRC_COUNT)]
    extra = " (lspci ran without root: capabilities hidden)" if facts.non_root else ""
    findings = [_count_finding(fid, gpus, switches, plan, ev, whole, extra)]
    findings += _driver_findings("health.gpu_driver_binding", [
        (g, g.driver, g.driver_line or next((x.strip() for x in g.lines if x.strip().startswith("Kernel modules:")), ""))
        for g in gpus], plan)
    return findings


def iommu_groups(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """The lspci-based IOMMU group listing (``lspci_iommu_groups`` output): GPU count vs the plan
    (checks-catalogue A1) and the driver each GPU is bound to."""
    fid = "health.lspci_gpu_count"
    o = out.get("lspci_iommu_groups")
    if o is None or not o.text.strip():
        return [missing(fid, o, "the GPUs in the IOMMU group listing", source=SRC_COUNT)]
    g = parse_iommu_groups(o.text)
    if not g.entries:
        return [garbled(fid, o, "the IOMMU group listing", o.lines(), source=SRC_COUNT)]
    gpus = [e.device for e in g.gpus]
    switches = sum(1 for e in g.entries if e.device.is_nvswitch)
    groups = sorted({e.group for e in g.gpus}, key=lambda x: int(x))
    ev = [e.line for e in g.gpus] + [e.line for e in g.entries if e.device.is_nvswitch]
    extra = f"; in IOMMU group(s) {', '.join(groups)}" if groups else ""
    findings = [_count_finding(fid, gpus, switches, plan, ev, whole=False, extra=extra)]
    findings += _driver_findings("health.gpu_driver_binding",
                                 [(e.device, e.driver, e.line if e.driver else "") for e in g.gpus], plan)
    return findings


# ------------------------------------------------------------------ topology


def _gpu_index(name: str) -> int | None:
    m = re.fullmatch(r"GPU(\d{1,3})", name)
    return int(m.group(1)) if m else None


def _pair_subject(a: str, b: str) -> str:
    return f"{gpu_subject(_gpu_index(a))} and {gpu_subject(_gpu_index(b))}"


def topology(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.topology and health.gpu_nic_affinity from ``nvidia-smi topo -m``: every GPU pair's link
    type is reported; in a node where every pair is NVLink-connected, a pair bonded over fewer links than
    the others is a WARN (a link may be down; B8); a GPU whose nearest NIC is not PIX/PXB while NICs are
    present is a WARN (checks-catalogue A10)."""
    fid = "health.topology"
    o = out.get("nvidia_smi_topo_m")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the GPU topology", remedy="Run `nvidia-smi topo -m` (no root needed).",
                        source=SRC_TOPO)]
    mx = parse_topo_matrix(o.text)
    if not mx.rows or not mx.gpus:
        return [garbled(fid, o, "nvidia-smi topo -m", mx.problems or o.lines()[:20], source=SRC_TOPO)]
    findings: list[Finding] = []
    pairs = mx.gpu_pairs()
    rows_ev = [mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")]
    gpu_rows = [r for r in mx.rows if r.startswith("GPU")]
    cut = len(gpu_rows) < len(mx.gpus)
    types: dict[str, int] = {}
    for _, _, t in pairs:
        types[t] = types.get(t, 0) + 1
    summary = ", ".join(f"{n} pair(s) {t}" for t, n in sorted(types.items(), key=lambda kv: -kv[1]))
    if len(types) > 1:  # name the pairs of each link type (the minority types first)
        by_type: dict[str, list[str]] = {}
        for a, b, t in pairs:
            by_type.setdefault(t, []).append(f"{a}-{b}")
        summary = "; ".join(f"{t}: " + ", ".join(v[:12]) + (f" (+{len(v) - 12} more)" if len(v) > 12 else "")
                            for t, v in sorted(by_type.items(), key=lambda kv: len(kv[1])))
    nvs = [nv_count(t) for _, _, t in pairs]
    head = f"{len(mx.gpus)} GPU(s)" + (f" ({len(gpu_rows)} rows in this excerpt)" if cut else "")
    if pairs and all(n is not None for n in nvs):
        top = max(n for n in nvs if n is not None)
        low = [(a, b, t) for a, b, t in pairs if nv_count(t) is not None and nv_count(t) < top]  # type: ignore[operator]
        if low:
            findings.append(Finding(fid, Verdict.WARN, f"{head}: every pair is NVLink-connected but "
                                    + "; ".join(f"{a}-{b} {t}" for a, b, t in low[:8])
                                    + f" bond fewer links than the others (NV{top}): an NVLink may be down",
                                    _pair_subject(low[0][0], low[0][1]), tuple(rows_ev[:20]),
                                    "Run `nvidia-smi nvlink -s` to see which link is inactive; reset or reboot, and "
                                    "reseat the GPU/baseboard if it stays down.", SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, f"{head}: {summary} (NVLink, {top} links bonded per pair)",
                                    "host", tuple(rows_ev[:20]), "", SRC_TOPO))
    elif pairs:
        row = sku_row(str(plan.get("gpu_model") or ""))
        non_nv = [(a, b, t) for a, b, t in pairs if nv_count(t) is None]
        if row and row.get("mode") == "all" and non_nv and any(n is not None for n in nvs):
            findings.append(Finding(fid, Verdict.FAIL, f"{head}: {summary}; on {row['sku']} every GPU pair should be "
                                    "NVLink-connected, but " + "; ".join(f"{a}-{b} {t}" for a, b, t in non_nv[:8])
                                    + " go over PCIe", _pair_subject(non_nv[0][0], non_nv[0][1]), tuple(rows_ev[:20]),
                                    "Check `nvidia-smi nvlink -s` and the fabric manager (`systemctl status "
                                    "nvidia-fabricmanager`) on NVSwitch systems; reset or reboot.", SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, f"{head}: {summary}", "host", tuple(rows_ev[:20]), "",
                                    SRC_TOPO))
    else:
        findings.append(Finding(fid, Verdict.PASS, f"{head}: no GPU pair (one GPU)", "host", tuple(rows_ev[:4]), "",
                                SRC_TOPO))
    # CPU / NUMA affinity summary (appended to the first finding's message)
    aff = {r: a for r, a in mx.affinity.items() if r.startswith("GPU")}
    if aff:
        groups: dict[str, list[str]] = {}
        for r, a in aff.items():
            key = f"NUMA {a.get('NUMA Affinity', '?')} (CPUs {a.get('CPU Affinity', '?')})"
            groups.setdefault(key, []).append(r)
        f0 = findings[0]
        findings[0] = Finding(f0.id, f0.verdict, f0.message + "; " + "; ".join(
            f"{','.join(v)} on {k}" for k, v in groups.items()), f0.subject, f0.evidence, f0.remedy, f0.source)
    findings += _nic_affinity(mx)
    return findings


_NEAR = ("PIX", "PXB")


def _nic_affinity(mx: Matrix) -> list[Finding]:
    fid = "health.gpu_nic_affinity"
    nics = mx.nics
    if not nics:
        return []
    far: list[str] = []
    near: list[str] = []
    ev = [mx.header_line]
    for g in [r for r in mx.rows if r.startswith("GPU")]:
        types = {n: mx.rows[g].get(n, "") for n in nics}
        best = [n for n, t in types.items() if t in _NEAR]
        label = mx.nic_legend
        if best:
            near.append(f"{g}->{'/'.join(label.get(n, n) for n in best)}")
        else:
            far.append(f"{g} (nearest: {sorted(set(types.values()))})")
            ev.append(mx.row_lines[g])
    if far:
        return [Finding(fid, Verdict.WARN, f"{len(far)} GPU(s) share no PCIe switch with any NIC: "
                        + "; ".join(far[:8]), gpu_subject(_gpu_index(far[0].split()[0])), tuple(ev[:20]),
                        "Compare with the server's topology map: GPUDirect RDMA needs GPU and NIC under one PCIe "
                        "switch (PIX/PXB) for full speed; check the NICs sit in the intended slots. If this node has "
                        "no per-GPU NIC by design, this is expected.", SRC_NIC)]
    return [Finding(fid, Verdict.PASS, "every GPU shares a PCIe switch with a NIC (PIX/PXB): " + ", ".join(near[:8])
                    + (" ..." if len(near) > 8 else ""), "host",
                    tuple([mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")][:8]), "",
                    SRC_NIC)]


def p2p(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.p2p from ``nvidia-smi topo -p2p r``: any GPU pair not ``OK`` where P2P is expected is a
    FAIL (checks-catalogue A11). P2P is not expected on GeForce boards (the plan's gpu_model): WARN there."""
    fid = "health.p2p"
    o = out.get("nvidia_smi_topo_p2p")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the GPU peer-to-peer status", remedy="Run `nvidia-smi topo -p2p r` (no root needed).",
                        source=SRC_P2P)]
    mx = parse_p2p_matrix(o.text)
    if not mx.rows or not mx.gpus:
        return [garbled(fid, o, "nvidia-smi topo -p2p", mx.problems or o.lines()[:20], source=SRC_P2P)]
    pairs = mx.gpu_pairs()
    ev = [mx.header_line] + [mx.row_lines[r] for r in mx.rows]
    if not pairs:
        return [Finding(fid, Verdict.SKIP, "one GPU: no peer-to-peer pair to judge", "host", tuple(ev[:4]), "", SRC_P2P)]
    bad = [(a, b, t) for a, b, t in pairs if t != "OK"]
    if not bad:
        return [Finding(fid, Verdict.PASS, f"P2P OK between all {len(pairs)} GPU pair(s)", "host", tuple(ev[:20]), "",
                        SRC_P2P)]
    codes = sorted({t for _, _, t in bad})
    row = sku_row(str(plan.get("gpu_model") or ""))
    consumer = bool(row and row.get("sku") == "GeForce")
    remedy = {
        "CNS": "The chipset/PCIe path blocks P2P: on bare metal disable ACS on the PCIe switches and keep the IOMMU "
               "off or in pass-through (iommu=pt) (NCCL troubleshooting, knowledge.md §3).",
        "GNS": "The GPU or driver does not support P2P (GeForce boards: by design). NCCL then stages GPU-to-GPU "
               "traffic through host memory; use data-center GPUs for P2P.",
        "TNS": "P2P is not supported across this topology (e.g. between CPU sockets); check `nvidia-smi topo -m`.",
        "NS": "P2P is not supported between these GPUs; check the driver and `nvidia-smi topo -m`.",
        "DR": "P2P is disabled by a driver registry key: remove the NVreg setting that disables it and reload the driver.",
        "U": "The driver could not tell: check `dmesg | grep -i nvrm` and re-run.",
    }
    rem = " ".join(remedy.get(c, "") for c in codes).strip()
    desc = "; ".join(f"{a}-{b} {t} ({P2P_CODES.get(t, t)})" for a, b, t in bad[:8]) + (" ..." if len(bad) > 8 else "")
    if consumer:
        return [Finding(fid, Verdict.WARN, f"P2P not available for {len(bad)} of {len(pairs)} GPU pair(s): {desc} "
                        "(not expected on GeForce boards)", _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem,
                        SRC_P2P)]
    return [Finding(fid, Verdict.FAIL, f"P2P not available for {len(bad)} of {len(pairs)} GPU pair(s): {desc}",
                    _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem, SRC_P2P)]


# ------------------------------------------------------------------ NVLink


def _expected(row: dict[str, str] | None) -> tuple[str, int | None, float | None]:
    if row is None:
        return "", None, None
    return row.get("mode", ""), _int(row.get("links_expected")), _float(row.get("link_speed_gb_s"))


def nvlink(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink from ``nvidia-smi nvlink -s``: active links per GPU vs the SKU's expected count
    and speed (assets/nvlink_expected.csv, by the GPU name nvidia-smi prints, else the plan's gpu_model).
    Fewer active links than expected -> FAIL; slower links -> WARN; SKUs without NVLink -> SKIP; an
    unknown SKU is judged by consistency with the node's other GPUs (checks-catalogue B8)."""
    fid = "health.nvlink"
    o = out.get("nvidia_smi_nvlink_s")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink link state", remedy="Run `nvidia-smi nvlink -s` (no root needed).",
                        source=SRC_NVLINK)]
    rep = parse_nvlink(o.text + ("\n" + o.stderr if o.stderr else ""))
    if not rep.gpus:
        low = (o.text + o.stderr).lower()
        if "does not have or support nvlink" in low or "not supported" in low:
            return [Finding(fid, Verdict.SKIP, "no NVLink on these GPUs (nvidia-smi: not supported)", "host",
                            tuple(o.lines()[:4]), "", SRC_NVLINK)]
        return [garbled(fid, o, "nvidia-smi nvlink -s", rep.problems or o.lines()[:20], source=SRC_NVLINK)]
    plan_row = sku_row(str(plan.get("gpu_model") or ""))
    findings: list[Finding] = []
    passed: list[str] = []
    pass_ev: list[str] = []
    unknown_sku: list[tuple[Any, list[str]]] = []
    consistency = False
    for g in rep.gpus:
        row = sku_row(g.name) or plan_row
        mode, exp, speed = _expected(row)
        subj = gpu_subject(g.index)
        ev = [g.header] + [g.link_lines[k] for k in sorted(g.link_lines)] + g.notes
        act = len(g.active)
        if not g.links:
            if any(re.search(r"not (have|support)", n, re.I) for n in g.notes) or mode == "none":
                findings.append(Finding(fid, Verdict.SKIP, f"GPU {g.index} ({g.name}): no NVLink", subj, tuple(ev),
                                        "", SRC_NVLINK))
            elif any("inactive" in n.lower() for n in g.notes):
                verdict = Verdict.WARN if mode in ("bridge_optional", "") else Verdict.FAIL
                findings.append(Finding(fid, verdict, f"GPU {g.index} ({g.name}): all NVLink links inactive", subj,
                                        tuple(ev), _nvlink_remedy(mode), SRC_NVLINK))
            else:
                findings.append(Finding(fid, Verdict.UNKNOWN, f"GPU {g.index} ({g.name}): no link lines in this output",
                                        subj, tuple(ev), "Paste the whole `nvidia-smi nvlink -s`.", SRC_NVLINK))
            continue
        if mode == "none":
            findings.append(Finding(fid, Verdict.SKIP, f"GPU {g.index} ({g.name}): {row['sku'] if row else ''} has no "
                                    f"NVLink; {act} link(s) reported active", subj, tuple(ev), "", SRC_NVLINK))
            continue
        if exp is None:
            unknown_sku.append((g, ev))
            continue
        inactive = g.inactive
        if act < exp:
            if rep.ellipsis and not inactive:
                findings.append(Finding(fid, Verdict.UNKNOWN, f"GPU {g.index} ({g.name}): this output elides links "
                                        f"('[...]'); {act} shown active of the {exp} expected on {row['sku']}",
                                        subj, tuple(ev), "Paste the whole `nvidia-smi nvlink -s`.", SRC_NVLINK))
            elif mode == "bridge_optional" and act == 0:
                findings.append(Finding(fid, Verdict.WARN, f"GPU {g.index} ({g.name}): no NVLink active (0 of {exp}); "
                                        f"expected only if no NVLink bridge is fitted on this {row['sku']}", subj,
                                        tuple(ev), _nvlink_remedy(mode), SRC_NVLINK))
            else:
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {g.index} ({g.name}): {act} of {exp} NVLink links "
                                        f"active on {row['sku']}; inactive: "
                                        + (", ".join(f"link {k}" for k in inactive) or "not listed"), subj, tuple(ev),
                                        _nvlink_remedy(mode), SRC_NVLINK))
            continue
        slow = [k for k in g.active if speed and (g.links[k] or 0) < speed * 0.99]
        if slow:
            findings.append(Finding(fid, Verdict.WARN, f"GPU {g.index} ({g.name}): link(s) {', '.join(map(str, slow))} "
                                    f"at {g.links[slow[0]]:g} GB/s, below {speed:g} GB/s expected on {row['sku']}",
                                    subj, tuple(ev), "Reset the GPU or reboot; if the speed stays low, contact the "
                                    "vendor (NVLink training problem).", SRC_NVLINK))
            continue
        passed.append(f"GPU {g.index} {act}/{exp}")
        pass_ev += ev[:3]
    if unknown_sku:
        most = max(len(g.active) for g, _ in unknown_sku)
        for g, ev in unknown_sku:
            act = len(g.active)
            subj = gpu_subject(g.index)
            if most == 0:
                findings.append(Finding(fid, Verdict.WARN, f"GPU {g.index} ({g.name}): no NVLink active and bringup "
                                        "has no expected link count for this SKU", subj, tuple(ev), _nvlink_remedy("") + " Set gpu_model "
                                        "in the plan so bringup knows whether this SKU has NVLink.", SRC_NVLINK))
            elif act < most and not (rep.ellipsis and not g.inactive):
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {g.index} ({g.name}): {act} NVLink links active, "
                                        f"fewer than the {most} of this node's other GPUs; inactive: "
                                        + (", ".join(f"link {k}" for k in g.inactive) or "not listed"), subj,
                                        tuple(ev), _nvlink_remedy("all"), SRC_NVLINK))
            else:
                passed.append(f"GPU {g.index} {act} active")
                consistency = True
                pass_ev += ev[:3]
    if passed:
        note = (" (no expected link count for this SKU in assets/nvlink_expected.csv: judged by consistency with the "
                "node's other GPUs)" if consistency else "")
        findings.append(Finding(fid, Verdict.PASS, "NVLink links active as expected: " + "; ".join(passed[:8])
                                + (" ..." if len(passed) > 8 else "") + note, "host", tuple(pass_ev[:20]), "",
                                SRC_NVLINK))
    return findings


def _nvlink_remedy(mode: str) -> str:
    if mode in ("bridge", "bridge_optional"):
        return ("Power down and reseat the NVLink bridge(s) between the paired cards (every bridge connector fully "
                "seated), then check `nvidia-smi nvlink -s` again; replace the bridge if links stay down.")
    return ("Reset the GPU or reboot; on NVSwitch systems check the fabric manager (`systemctl status "
            "nvidia-fabricmanager`, version equal to the driver); if links stay inactive after a cold boot, contact "
            "the vendor (baseboard/GPU RMA).")


def nvlink_errors(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink_errors from ``nvidia-smi nvlink -e``. One sample: lifetime totals, reported but never
    a FAIL (non-zero -> WARN "take a second sample"). Two samples (the output repeats the GPU blocks, e.g.
    before and after a stress stage): replay/CRC delta > 0 -> WARN, recovery delta > 0 -> FAIL (B9)."""
    fid = "health.nvlink_errors"
    o = out.get("nvidia_smi_nvlink_e")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink error counters", remedy="Run `nvidia-smi nvlink -e` (no root needed).",
                        source=SRC_NVERR)]
    rep = parse_nvlink(o.text)
    blocks = [g for g in rep.gpus if g.counters]
    if not blocks:
        if rep.gpus and any(re.search(r"not (have|support)", n, re.I) for g in rep.gpus for n in g.notes):
            return [Finding(fid, Verdict.SKIP, "no NVLink on these GPUs", "host", tuple(o.lines()[:4]), "", SRC_NVERR)]
        return [garbled(fid, o, "nvidia-smi nvlink -e", rep.problems or o.lines()[:20], source=SRC_NVERR)]
    samples: dict[int, list[Any]] = {}
    for g in blocks:
        samples.setdefault(g.index, []).append(g)
    two = any(len(v) >= 2 for v in samples.values())
    findings: list[Finding] = []
    if not two:
        nonzero = [(g, k, name, v) for g in blocks for k, c in sorted(g.counters.items()) for name, v in c.items() if v]
        ev = []
        for g in blocks:
            hits = [ln for ln in g.counter_lines if re.search(r": [1-9]\d*$", ln)]
            if hits or not nonzero:
                ev += [g.header] + hits[:6]
        if not nonzero:
            n_links = sum(len(g.counters) for g in blocks)
            return [Finding(fid, Verdict.PASS, f"all NVLink error counters are 0 on {len(blocks)} GPU(s), {n_links} "
                            "link(s) (one sample: lifetime totals; a delta needs a second sample after the stress stage)",
                            "host", tuple(ev[:8]), "", SRC_NVERR)]
        gpus = sorted({g.index for g, *_ in nonzero})
        return [Finding(fid, Verdict.WARN, f"non-zero NVLink error totals on GPU(s) {', '.join(map(str, gpus))}: "
                        + "; ".join(f"GPU {g.index} link {k} {name} {v}" for g, k, name, v in nonzero[:6])
                        + " - one sample only: these are lifetime totals, not a failure by themselves",
                        gpu_subject(gpus[0]), tuple(ev[:16]),
                        "Take a second sample after the stress stage (`nvidia-smi nvlink -e` before and after) and "
                        "judge the difference; only growing counters mean a failing link.", SRC_NVERR)]
    for idx, gs in sorted(samples.items()):
        first, last = gs[0], gs[-1]
        grow: list[str] = []
        recov: list[str] = []
        reset: list[str] = []
        for k, c in sorted(last.counters.items()):
            for name, v in c.items():
                before = first.counters.get(k, {}).get(name)
                if before is None:
                    continue
                d = v - before
                if d < 0:
                    reset.append(f"link {k} {name}")
                elif d > 0:
                    (recov if "recover" in name.lower() else grow).append(f"link {k} {name} +{d}")
        ev = [first.header] + [ln for ln in last.counter_lines if re.search(r": [1-9]\d*$", ln)][:12]
        subj = gpu_subject(idx)
        if recov:
            findings.append(Finding(fid, Verdict.FAIL, f"GPU {idx}: NVLink recovery events between the two samples: "
                                    + "; ".join(recov[:6] + grow[:4]), subj, tuple(ev), _nvlink_remedy("all"), SRC_NVERR))
        elif grow:
            findings.append(Finding(fid, Verdict.WARN, f"GPU {idx}: NVLink error counters grew between the two samples: "
                                    + "; ".join(grow[:8]), subj, tuple(ev),
                                    "Re-run the stress stage and sample again; if the counters keep growing, reset the "
                                    "GPU and check the NVLink (bridge seating, fabric manager).", SRC_NVERR))
        elif reset:
            findings.append(Finding(fid, Verdict.UNKNOWN, f"GPU {idx}: counters went down between samples (reset?): "
                                    + "; ".join(reset[:6]), subj, tuple(ev),
                                    "Do not reset the counters between the two samples; sample again.", SRC_NVERR))
    if not findings:
        findings.append(Finding(fid, Verdict.PASS, f"no NVLink error counter grew between the two samples on "
                                f"{len(samples)} GPU(s)", "host", tuple(g.header for g in blocks[:8]), "", SRC_NVERR))
    return findings


def dcgmi_nvlink(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink from ``dcgmi nvlink --link-status`` (probe name ``dcgmi_nvlink``; not registered by
    default: DCGM is optional). dcgmi names no GPU model, so the SKU comes from the plan's gpu_model.
    Links a SKU expects that are not Up -> FAIL; SKUs without NVLink -> SKIP (DCGM reports their links
    Down falsely); with no SKU, GPUs with fewer Up links than the others, or none at all, -> FAIL."""
    fid = "health.nvlink"
    o = out.get("dcgmi_nvlink")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink link state (DCGM)", remedy="Run `dcgmi nvlink --link-status` (needs "
                        "nv-hostengine running).", source=SRC_NVLINK)]
    d = parse_dcgmi_nvlink(o.text)
    if not d.gpus:
        return [garbled(fid, o, "dcgmi nvlink --link-status", d.problems or o.lines()[:20], source=SRC_NVLINK)]
    row = sku_row(str(plan.get("gpu_model") or ""))
    mode, exp, _ = _expected(row)
    key = next((x for x in d.header_lines if x.startswith("Key:")), "")
    findings: list[Finding] = []
    passed: list[str] = []
    most = max(g.states.count("U") for g in d.gpus)
    for g in d.gpus:
        up, down, dis = g.states.count("U"), g.states.count("D"), g.states.count("X")
        slots = up + down + dis
        subj = gpu_subject(g.id)
        ev = tuple(x for x in (*g.lines, key) if x)
        counts = f"{up} of {slots} NVLink links Up ({down} Down{f', {dis} Disabled' if dis else ''})"
        if slots == 0:
            findings.append(Finding(fid, Verdict.SKIP, f"GPU {g.id}: no NVLink (all links Not Supported)", subj, ev, "",
                                    SRC_NVLINK))
        elif mode == "none":
            findings.append(Finding(fid, Verdict.SKIP, f"GPU {g.id}: {counts}; {row['sku'] if row else ''} has no NVLink, "
                                    "so DCGM's 'Down' is not a fault", subj, ev, "", SRC_DCGM_FALSE))
        elif exp is not None:
            if up >= exp:
                passed.append(f"GPU {g.id} {up}/{exp}")
            elif mode == "bridge_optional" and up == 0:
                findings.append(Finding(fid, Verdict.WARN, f"GPU {g.id}: {counts}; on {row['sku']} that means no NVLink "
                                        "bridge, or a bridge that is down (DCGM also reports bridge-less PCIe cards as "
                                        "Down)", subj, ev, _nvlink_remedy(mode), f"{SRC_NVLINK}; {SRC_DCGM_FALSE}"))
            else:
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {g.id}: {counts}; {row['sku']} expects {exp} Up",
                                        subj, ev, _nvlink_remedy(mode), SRC_NVLINK))
        else:
            if up == 0:
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {g.id}: {counts}: NVLink is down", subj, ev,
                                        _nvlink_remedy("bridge") + " If these are PCIe cards deliberately run without "
                                        "NVLink bridges, DCGM reports their links Down by design: set gpu_model in the "
                                        "plan so bringup can tell.", f"{SRC_NVLINK}; {SRC_DCGM_FALSE}"))
            elif up < most:
                findings.append(Finding(fid, Verdict.FAIL, f"GPU {g.id}: {counts}, fewer than the {most} Up on this "
                                        "node's other GPUs", subj, ev, _nvlink_remedy("all"), SRC_NVLINK))
            else:
                passed.append(f"GPU {g.id} {up}/{slots} Up")
    if passed:
        findings.append(Finding(fid, Verdict.PASS, "NVLink links Up as expected: " + "; ".join(passed[:8])
                                + (" ..." if len(passed) > 8 else ""), "host",
                                tuple(x for g in d.gpus[:8] for x in g.lines), "", SRC_NVLINK))
    return findings


# ------------------------------------------------------------------ convenience for the health stage

LSPCI_CHECKS = (lspci_gpus, pcie_width, pcie_speed, pcie_acs, pcie_aer, gpu_bar1)
"""The lspci-based checks, in the order a report reads best."""


def lspci_all(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """All lspci-based checks (GPU count, driver binding, width, speed, ACS, AER, BAR1) in one call; for a
    grepped ACS listing (``lspci -vvv | grep ACSCtl``) only the ACS check, the others having nothing to read."""
    facts, _ = _lspci_facts(out)
    if facts is not None and facts.acs_grep:
        return pcie_acs(out, plan)
    findings: list[Finding] = []
    for fn in LSPCI_CHECKS:
        findings += fn(out, plan)
    return findings

