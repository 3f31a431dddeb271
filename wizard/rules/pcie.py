"""PCIe rules: link width and speed, ACS, AER (lspci status bits and sysfs counters), BAR1 and
the PCIe replay counter.

Every rule has the signature ``(outputs, plan) -> list[Finding]`` and reads its probes through
:func:`wizard.facts.facts_of`, so a run parses each probe once. The nvidia-smi/NVML document feeds the
same width/speed rules when ``bringup explain`` is given one (``doc=``), and the replay rule reads only
that document.

Rules, in short:
* PCIe width below the device's capability (lspci LnkSta ``(downgraded)``, sysfs current < max, or
  nvidia-smi current < max) is a FAIL at any load: the width does not change with the power state.
* A lower *speed* (generation) is judged only under load: at idle or at unknown load it is never a
  FAIL, because GPUs lower the link speed at idle to save power (lspci(8); NVIDIA's own advice is to
  read the link under load). Under load it is a FAIL (WARN inside a VM guest). A configuration cap
  (LnkCtl2 target, or nvidia-smi host max below the GPU's max) is a WARN at any load.
* ACS enabled (``ACSCtl: SrcValid+``) on a bare-metal node is a WARN with the NCCL troubleshooting remedy
  when it sits on a PCIe switch port, on a root port/bridge above a GPU (NVIDIA/nccl#2079) or above a
  switch, or on a bridge whose subtree a pasted excerpt does not show; the grepped form (``lspci -vvv |
  grep ACSCtl``) warns on any SrcValid+. On a VM host it is expected.
* AER status bits: uncorrectable + fatal severity -> FAIL, uncorrectable -> WARN, correctable -> noted.
"""

from __future__ import annotations

import dataclasses

import re
from collections.abc import Mapping
from typing import Any

from wizard.common import gpu_subject, human_bytes
from wizard.facts import facts_of
from wizard.model import Finding, Measure, Verdict, measure, tightest
from wizard.parsers.gpu import parse_pci
from wizard.parsers.pcie import PCIE_GEN_BY_GTS, LspciDevice, LspciFacts, fmt_link, gen_of, gts
from wizard.parsers.smi import GpuFacts, SmiDoc
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs, garbled, missing
from wizard.rules.nvlink import sku_row
from wizard.rules.gpu_presence import (
    _lspci_facts,
    _no_gpu,
    _pci,
    _skip_no_gpu,
    _subject,
    _virtualised,
    _who,
    _whole,
    grace_superchip,
    lspci_gpus,
)
from wizard.rules.smi import _ev as _doc_ev
from wizard.rules.smi import _fmt, _pass_group, in_vm, load_state, short_subject, subject, thresholds
from wizard.i18n import N_, Msg, joined, SEMICOLON

SRC_WIDTH = ("lspci(8) man page, https://man7.org/linux/man-pages/man8/lspci.8.html (LnkCap = what the link "
             "can do, LnkSta = what it trained to, '(downgraded)' = below LnkCap); PCI Express Base "
             "Specification, Link Capabilities and Link Status registers; Meta GCM health checks, "
             "https://github.com/facebookresearch/gcm (check-pci: width below max fails)")


SRC_SPEED = ("lspci(8) man page, https://man7.org/linux/man-pages/man8/lspci.8.html; GPUs lower the PCIe link "
             "speed at idle to save power, so read it under load: "
             "https://baaz.dev/blog/understanding-power-management-in-gpu-via-pcie and "
             "http://billauer.co.il/blog/2018/08/nvidia-low-pci-express-speed/; nvidia-smi documentation, "
             "https://docs.nvidia.com/deploy/nvidia-smi/ (pcie.link.gen.gpucurrent / max)")


SRC_ACS = ("NCCL troubleshooting, 'PCI Access Control Services (ACS)', "
           "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs "
           "(check: `sudo lspci -vvv | grep ACSCtl`, SrcValid+ = ACS on); NVIDIA/nccl#2079, "
           "https://github.com/NVIDIA/nccl/issues/2079 (hang traced to ACS on AMD GPP root-complex bridges "
           "above the GPUs); NVIDIA/nccl#606, https://github.com/NVIDIA/nccl/issues/606 (hang with SrcValid+ "
           "on an AMD node); NVIDIA/nccl#523, https://github.com/NVIDIA/nccl/issues/523 (SrcValid+ lines may "
           "be on ports no GPU/NIC traffic uses)")


SRC_AER = ("AER status/severity registers as decoded by lspci -vv (lspci(8) man page, "
           "https://man7.org/linux/man-pages/man8/lspci.8.html); Linux kernel 'The PCI Express Advanced "
           "Error Reporting Driver Guide', https://docs.kernel.org/PCI/pcieaer-howto.html; Meta GCM health "
           "checks, https://github.com/facebookresearch/gcm (pcie-aer: fatal -> fail, uncorrectable "
           "non-fatal -> warn, corrected -> information)")


SRC_BAR = ("NVIDIA GPUDirect RDMA guide, 'PCI BAR sizes', https://docs.nvidia.com/cuda/gpudirect-rdma/ "
           "(large GPU BARs need Above 4G decoding / 64-bit MMIO in the firmware)")


REMEDY_WIDTH = (N_("Power down, reseat the GPU (and its riser or cable), check that the slot is wired x16 and the BIOS "
                "slot bifurcation is x16, then re-check. If it stays narrow, swap slot/riser to find the faulty part."))


REMEDY_SPEED = ("Re-check under load (during gpu-burn or nvbandwidth): `nvidia-smi --query-gpu=index,pcie.link.gen."
                "gpucurrent,pcie.link.gen.max,pcie.link.width.current --format=csv`, or `sudo lspci -vv -s <bdf> | grep "
                "LnkSta`. If it stays below LnkCap under load, set the slot's PCIe speed to Auto (or its Gen) in the "
                "BIOS and check risers/retimers and seating.")


REMEDY_ROOT = ("Run `sudo lspci -vvv` (without root lspci hides the PCIe capabilities), or read the link from sysfs "
               "(no root): `cat /sys/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}`.")
"""For the link's speed and width, which sysfs also shows; :data:`REMEDY_ROOT_CAPS` for what only lspci shows."""
REMEDY_ROOT_CAPS = "Run `sudo lspci -vvv`: without root lspci hides the PCIe capabilities (ACS, AER)."


REMEDY_ACS = (N_("On a bare-metal training node, disable ACS on these ports: in the BIOS if it has the option, else "
              "after every boot `sudo setpci -s <BDF> ECAP_ACS+0x6.w=0000` for each port listed (NCCL "
              "troubleshooting; NVIDIA/nccl#2079 did this on AMD GPP bridges above the GPUs); then check `nvidia-smi "
              "topo -p2p r` and NCCL bandwidth again. If this node hosts VMs, keep ACS and set virtualization=true in "
              "the plan."))


REMEDY_AER_UE = ("Uncorrectable PCIe errors are latched on this link: read `journalctl -k | grep -i -e aer -e "
                 "'PCIe Bus Error'` for when they happened, reseat the GPU/riser and its power cables, and replace "
                 "the part if they come back after a cold boot.")


REMEDY_BAR = ("Enable Above 4G decoding (64-bit MMIO) in the BIOS so the firmware can place the GPU's large BARs, "
              "then reboot and re-check.")


def _under_load(plan: Mapping[str, Any]) -> bool:
    """True only when the caller says the reading was taken under load (``plan["under_load"] is True``)."""
    return plan.get("under_load") is True


WIDTH_BELOW_CAP = Verdict.FAIL
"""A link narrower than the device's capability fails at any load (lspci, sysfs): the width, unlike the speed, does
not change with the power state (lspci(8) marks it "downgraded"). Inside a VM guest (nvidia-smi's Virtualization
Mode) it is a warn: the hypervisor presents the link, as for the speed (:func:`speed_verdict`). From nvidia-smi alone
it fails only for a baseboard module (SXM, ``assets/nvlink_expected.csv`` mode ``all``): its maximum is the GPU's
own, so a PCIe card in a slot wired narrower reads the same as a link that trained down (a warn that says so)."""


def speed_verdict(load: str, vm: bool = False) -> Verdict:
    """The verdict for a link *speed* (generation) below its capability, by when it was read: ``load``
    -> FAIL (WARN inside a VM guest, where the platform presents the link); ``idle`` -> PASS with a note
    (GPUs lower the link speed at idle to save power: normal); ``unknown`` -> WARN "re-check under
    load". Never a FAIL at idle or unknown load. Every input (lspci, sysfs, nvidia-smi) uses this."""
    if load == "load":
        return Verdict.WARN if vm else Verdict.FAIL
    return Verdict.PASS if load == "idle" else Verdict.WARN


def _port_desc(p: LspciDevice) -> str:
    kind = p.port_type or "bridge"
    return f"{p.bus_id} ({kind})"


def _targets(facts: LspciFacts, nics: bool = False) -> list[LspciDevice]:
    """The devices whose link is judged: NVIDIA GPUs, and with ``nics`` the ConnectX/BlueField NICs (their link
    bounds the inter-node rails); for a pasted snippet without header lines, the snippet itself (its device is not
    named)."""
    # an SR-IOV virtual function has no link of its own (lspci: "Speed unknown, Width x0"): its physical function's
    # link is the one to judge (PCI-SIG SR-IOV: a VF shares the PF's physical port)
    found = [d for d in facts.gpus + (facts.rdma_nics if nics else [])
             if not re.search(r"\bVirtual Function\b", d.header)]
    if found:
        return found
    return [d for d in facts.snippets if d.lnksta.present or d.lnkcap.present or d.aer.seen]


def _link_gb_s(speed_gts: float | None, width: int | None) -> float | None:
    """What a PCIe link carries per direction, in GB/s: GT/s x lanes x encoding / 8 bits (8b/10b below 8 GT/s,
    128b/130b from 8 GT/s; PCI Express Base Specification, https://pcisig.com/specifications; derived)."""
    if not speed_gts or not width:
        return None
    return speed_gts * width * (0.8 if speed_gts < 8 else 128 / 130) / 8


NIC_WIDTH_BELOW_CAP = Verdict.WARN
"""A NIC's link narrower than its capability warns (a GPU's fails, :data:`WIDTH_BELOW_CAP`): a x16 card in a slot wired
or bifurcated x8 is a common build choice that halves what the link carries, which may or may not fall below what its
ports run at; the finding gives both figures (:func:`_link_gb_s`)."""
REMEDY_NIC_LINK = ("Check that the NIC's slot is wired x16 at the card's PCIe generation and that the BIOS does not "
                   "bifurcate it (x8x8) or cap its speed, reseat the card (and its riser), then re-check "
                   "`sudo lspci -vv -s <bdf> | grep -e LnkCap -e LnkSta`. A host whose root ports top out at an older "
                   "generation (e.g. PCIe Gen4 for a Gen5 card) caps the speed by design.")


def _nic_rate(d: LspciDevice) -> str:
    """", which carries about 15.8 GB/s (126 Gb/s) per direction" for a NIC's trained link; "" when unknown."""
    gb = _link_gb_s(d.lnksta.speed_gts, d.lnksta.width)
    return Msg(": it carries about {gb:.1f} GB/s ({gbit:.0f} Gb/s) per direction", gb=gb, gbit=gb * 8) if gb else ""


def _link_subject(d: LspciDevice) -> str:
    return f"NIC {d.bus_id}" if d.bdf and d.is_rdma_nic else _subject(d)


def _narrow(d: LspciDevice) -> bool:
    cur, cap = d.lnksta.width, d.lnkcap.width
    return (d.lnksta.width_marker == "downgraded" or cur == 0
            or (cur is not None and cap is not None and cur < cap))


def _slow(d: LspciDevice) -> bool:
    cur, cap = d.lnksta.speed_gts, d.lnkcap.speed_gts
    return d.lnksta.speed_marker == "downgraded" or (cur is not None and cap is not None and cur < cap)


def _where(d: LspciDevice) -> str:
    return f"{d.bus_id} " if d.bdf else ""


def _width_measure(d: LspciDevice, label: str = "link width") -> Measure | None:
    """LnkSta width against LnkCap width (lanes, at least)."""
    return measure(d.lnksta.width, d.lnkcap.width, "lanes", "at_least", f"{_where(d)}{label}")


def _speed_measure(d: LspciDevice, label: str = "link speed") -> Measure | None:
    """LnkSta speed against LnkCap speed (GT/s per lane, at least)."""
    return measure(d.lnksta.speed_gts, d.lnkcap.speed_gts, "GT/s", "at_least", f"{_where(d)}{label}")


_GTS_BY_GEN = {g: r for r, g in PCIE_GEN_BY_GTS.items()}


def _gen_measure(cur: float | None, mx: float | None, label: str) -> Measure | None:
    """A PCIe generation nvidia-smi reports, as its per-lane rate (GT/s, PCI Express Base Specification) against
    the maximum's; ``None`` for a generation outside the table."""
    c = _GTS_BY_GEN.get(int(cur)) if cur is not None and float(cur).is_integer() else None
    m = _GTS_BY_GEN.get(int(mx)) if mx is not None and float(mx).is_integer() else None
    return measure(c, m, "GT/s", "at_least", label) if c is not None else None


def _link_text(d: LspciDevice) -> str:
    """"LnkSta 2.5GT/s (Gen1, downgraded) x16, LnkCap 16GT/s (Gen4) x16" (lspci's own markers kept)."""
    st = d.lnksta
    notes = [f"Gen{gen_of(st.speed_gts)}"] if gen_of(st.speed_gts) else []
    if st.speed_marker == "downgraded":
        notes.append("downgraded")
    speed = "?" if st.speed_gts is None else f"{st.speed_gts:g}GT/s" + (f" ({', '.join(notes)})" if notes else "")
    width = "x?" if st.width is None else f"x{st.width}" + (" (downgraded)" if st.width_marker == "downgraded" else "")
    if d.lnkcap.present:
        return f"LnkSta {speed} {width}, LnkCap {fmt_link(d.lnkcap.speed_gts, d.lnkcap.width)}"
    return Msg("LnkSta {speed} {width}, LnkCap not shown", speed=speed, width=width)  # walk 31: English in Chinese


def _ev(d: LspciDevice, *lines: str) -> list[str]:
    out = [d.header] if d.header else []
    out.extend(x for x in lines if x)
    return out


def no_express(d: LspciDevice) -> bool:
    """Whether ``d``'s whole block (its capabilities listed, ended by lspci's "Kernel driver in use" / "Kernel
    modules" lines, so not cut short) shows no PCI Express capability: a GPU on a conventional PCI bus as a VM shows
    it (QEMU's i440fx machine type, some clouds' guests), where no link width, speed or AER exists to read; the
    hypervisor host sees the real link (PCI Express Base Specification: LnkCap/LnkSta live in the PCI Express
    capability)."""
    caps = [ln for ln in d.lines if "Capabilities:" in ln]
    ended = any(re.match(r"\s*(?:Kernel driver in use|Kernel modules):", ln) for ln in d.lines)
    return bool(caps) and ended and not d.caps_denied and not any("Express" in ln for ln in caps) \
        and not d.lnksta.present and not d.lnkcap.present


REMEDY_NO_EXPRESS = ("Read the link on the hypervisor host (`sudo lspci -vv -s <bdf>` there); a VM with a PCI Express "
                     "machine type (QEMU q35) shows it in the guest too.")


def _no_link(fid: str, d: LspciDevice, what: str, src: str) -> Finding:
    if d.caps_denied:
        return Finding(fid, Verdict.UNKNOWN, Msg("{who}: {what} not readable: lspci ran without root ('Capabilities: <access denied>')", who=_who(d), what=what), _subject(d),
                       tuple(_ev(d, "Capabilities: <access denied>")), REMEDY_ROOT, src)
    if not any("Capabilities:" in ln for ln in d.lines) and any(
            re.match(r"\s*(?:Kernel driver in use|Kernel modules|Subsystem):", ln) for ln in d.lines):
        # lspci -k / -nn: a listing that never prints capabilities, so it says nothing about the link either way
        return Finding(fid, Verdict.SKIP, Msg("{who}: {what} not judged: this lspci listing prints no capabilities (run without -vv)", who=_who(d), what=what), _subject(d), tuple(_ev(d)),
                       "For the link, run `sudo lspci -vv -s <bdf>` (LnkCap / LnkSta).", src)
    if no_express(d):
        return Finding(fid, Verdict.SKIP, Msg("{who}: {what} not judged: the device shows no PCI Express capability "
                                              "(a VM's conventional PCI bus), so there is no link to read here",
                                              who=_who(d), what=what), _subject(d),
                       tuple(_ev(d, *[ln for ln in d.lines if "Capabilities:" in ln][:4])), REMEDY_NO_EXPRESS, src)
    return Finding(fid, Verdict.UNKNOWN, Msg("{who}: no LnkSta line for this device in this output (cut short, or not lspci -vv): "
                                             "{what} unknown", who=_who(d), what=what), _subject(d),
                   tuple(_ev(d, *d.lines[-3:])), "Paste the device's whole `sudo lspci -vv -s <bdf>` section.", src)


def _sysfs_links(out: Outputs, fid: str, plan: Mapping[str, Any], speed: bool) -> list[Finding] | None:
    """Width/speed from the existing sysfs ``pci`` probe (wizard.parsers.gpu.PciFunction), for hosts
    where lspci is missing or ran without root. None when that probe has no GPU links either."""
    o = out.get("pci")
    if o is None or not o.files:
        return None
    facts = facts_of(out).parse("pci", parse_pci, on="output")
    if facts is None:
        return None
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
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("GPU {bdf}: link width not readable in sysfs", bdf=bdf), subj,
                                        tuple(ev), REMEDY_ROOT, SRC_WIDTH))
            elif cur_w < max_w:
                findings.append(Finding(fid, WIDTH_BELOW_CAP, Msg("GPU {bdf}: PCIe link x{cur_w}, narrower than its max x{max_w} (sysfs)", bdf=bdf, cur_w=cur_w, max_w=max_w), subj, tuple(ev), REMEDY_WIDTH, SRC_WIDTH,
                                        measured=measure(cur_w, max_w, "lanes", "at_least", "link width")))
            else:
                findings.append(Finding(fid, Verdict.PASS, Msg("GPU {bdf}: PCIe link {link} (sysfs)", bdf=bdf, link=link), subj,
                                        tuple(ev), "", SRC_WIDTH,
                                        measured=measure(cur_w, max_w, "lanes", "at_least", "link width")))
        else:
            if cur_s is None or max_s is None:
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("GPU {bdf}: link speed not readable in sysfs", bdf=bdf), subj,
                                        tuple(ev), REMEDY_ROOT, SRC_SPEED))
            elif cur_s < max_s:
                v = speed_verdict("load" if _under_load(plan) else "unknown")
                msg = (Msg('GPU {bdf}: PCIe link at {fmt_link} below its max {fmt_link2} ', bdf=bdf, fmt_link=fmt_link(cur_s, cur_w), fmt_link2=fmt_link(max_s, max_w)) + (Msg('under load') if v is Verdict.FAIL else Msg('(read at idle or unknown load: re-check under load)')))
                findings.append(Finding(fid, v, msg, subj, tuple(ev), REMEDY_SPEED, SRC_SPEED,
                                        measured=measure(cur_s, max_s, "GT/s", "at_least", "link speed")))
            else:
                findings.append(Finding(fid, Verdict.PASS, Msg("GPU {bdf}: PCIe link {link} (sysfs)", bdf=bdf, link=link), subj,
                                        tuple(ev), "", SRC_SPEED,
                                        measured=measure(cur_s, max_s, "GT/s", "at_least", "link speed")))
    return findings


def _link_targets(out: Outputs, fid: str, plan: Mapping[str, Any], speed: bool,
                  src: str) -> tuple[LspciFacts | None, list[LspciDevice], list[Finding]]:
    """What the PCIe link width/speed rules judge: (lspci facts, the GPUs in them, []) or, where there is
    nothing to judge from lspci, (None, [], the findings that stand instead): the sysfs ``pci`` probe's
    links when lspci is missing or ran without root, else "missing" or "no GPU in the lspci output"."""
    what = (Msg('link speed') if speed else Msg('link width'))
    facts, o = _lspci_facts(out)
    if facts is None or (facts.non_root and not any(d.lnksta.present for d in _targets(facts, nics=True))):
        fb = _sysfs_links(out, fid, plan, speed=speed)
        if fb is not None:
            return None, [], fb
    if facts is None:
        return None, [], [missing(fid, o, Msg("the GPUs' PCIe {what}", what=what), remedy=REMEDY_ROOT,
                                  source=src)]
    targets = _targets(facts, nics=True)
    if not targets:
        return None, [], _no_gpu_lspci(fid, facts, o, f"PCIe {what}", src)
    return facts, targets, []


def pcie_width(out: Outputs, plan: Mapping[str, Any], doc: SmiDoc | None = None) -> list[Finding]:
    """health.pcie_width: every GPU's PCIe link (and the ports above it) at its full width.

    Reads the ``lspci_vvv`` probe; falls back to the sysfs ``pci`` probe (current/max_link_width)
    when lspci is missing or ran without root. A width below LnkCap is a FAIL at any load
    (:data:`WIDTH_BELOW_CAP`). With ``doc`` (an nvidia-smi/NVML document, for ``bringup explain`` and
    :func:`wizard.rules.smi.judge_doc`) it judges the link widths that document reports instead."""
    fid = "health.pcie_width"
    if doc is not None:
        return _doc_width(doc, plan)
    facts, targets, instead = _link_targets(out, fid, plan, speed=False, src=SRC_WIDTH)
    if facts is None:
        return instead
    findings: list[Finding] = []
    passed: list[str] = []
    pass_ev: list[str] = []
    pass_m: list[Measure | None] = []
    for d in targets:
        if not d.lnksta.present:
            findings.append(_no_link(fid, d, "link width", SRC_WIDTH))
            continue
        bad_ports = [p for p in facts.parents(d) if p.lnksta.present and _narrow(p)]
        if _narrow(d) or bad_ports:
            parts = []
            ev = _ev(d, d.lnkcap.line, d.lnksta.line)
            if _narrow(d):
                cap = f"x{d.lnkcap.width}" if d.lnkcap.width is not None else N_("its LnkCap (not shown)")
                parts.append(Msg("PCIe link x{width} (downgraded), narrower than {cap}", width=str(d.lnksta.width),
                                 cap=cap))
            for p in bad_ports:
                parts.append(Msg("upstream port {port} at x{width} of x{cap}", port=_port_desc(p),
                                 width=str(p.lnksta.width), cap=str(p.lnkcap.width)))
                ev += [p.header, p.lnkcap.line, p.lnksta.line]
            up = facts.parents(d)
            if up and not bad_ports:
                parts.append(Msg("upstream port {port}", port=_port_desc(up[0])))
            # the GPU's own link when it is the narrow one, else the narrowest port above it
            m = _width_measure(d) if _narrow(d) else tightest(_width_measure(p, "upstream port link width")
                                                              for p in bad_ports)
            nic = d.is_rdma_nic
            findings.append(Finding(fid, NIC_WIDTH_BELOW_CAP if nic else WIDTH_BELOW_CAP,
                                    Msg("{who}: ", who=_who(d)) + joined("; ", parts) + (_nic_rate(d) if nic else ""),
                                    _link_subject(d), tuple(x for x in ev if x), REMEDY_NIC_LINK if nic else REMEDY_WIDTH,
                                    SRC_WIDTH, measured=m))
        else:
            up = facts.parents(d)
            upt = Msg(" (upstream port {port})", port=_port_desc(up[0])) if up else ""
            passed.append(Msg("{who} x{width}{upt}", who=_who(d), width=str(d.lnksta.width), upt=upt))
            pass_ev += _ev(d, d.lnkcap.line, d.lnksta.line)
            pass_m.append(_width_measure(d))
    if passed:
        findings.append(Finding(fid, Verdict.PASS, (Msg('PCIe width at LnkCap for {n_passed} link(s): ', n_passed=len(passed)) + joined('; ', passed[:8]) + (' ...' if len(passed) > 8 else '')), "host",
                                tuple(pass_ev[:24]), "", SRC_WIDTH, measured=tightest(pass_m)))
    return findings


def pcie_speed(out: Outputs, plan: Mapping[str, Any], doc: SmiDoc | None = None) -> list[Finding]:
    """health.pcie_speed: PCIe generation of every GPU link, judged by :func:`speed_verdict`. From lspci
    or sysfs the load is unknown unless ``plan["under_load"] is True``: below LnkCap is then a WARN
    "re-check under load" (idle GPUs train down), under load a FAIL. A LnkCtl2 target speed below LnkCap
    (a configuration cap) is a WARN at any load. With ``doc`` (an nvidia-smi/NVML document) it judges
    the generation that document reports, whose utilization/P-state tells idle from load, and a host
    side slower than the GPU (platform-limited, WARN)."""
    fid = "health.pcie_speed"
    if doc is not None:
        return _doc_speed(doc, plan)
    facts, targets, instead = _link_targets(out, fid, plan, speed=True, src=SRC_SPEED)
    if facts is None:
        return instead
    loaded = _under_load(plan)
    findings: list[Finding] = []
    passed: list[str] = []
    pass_ev: list[str] = []
    pass_m: list[Measure | None] = []
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
                parts.append(Msg("upstream port {port} at {link}", port=_port_desc(p),
                                 link=fmt_link(p.lnksta.speed_gts, p.lnksta.width)))
                ev += [p.header, p.lnkcap.line, p.lnksta.line]
            if capped:
                parts.append(Msg("LnkCtl2 target speed {gts}GT/s is below LnkCap: the link is "
                                 "capped by configuration", gts=f"{d.lnkctl2_target_gts:g}"))
            tail: str
            if (_slow(d) or slow_ports) and d.is_rdma_nic:
                verdict, tail = Verdict.WARN, Msg("below LnkCap (a NIC keeps the speed its link trained to; a root "
                                                  "port of an older PCIe generation caps it by design)") + _nic_rate(d)
            elif (_slow(d) or slow_ports) and loaded:
                verdict, tail = speed_verdict("load"), (N_("below LnkCap under load") if d.lnkcap.speed_gts is not None
                                                        or slow_ports else
                                                        N_("marked (downgraded) by lspci under load: below what the "
                                                           "device can do (its LnkCap line is not in this excerpt)"))
            elif _slow(d) or slow_ports:
                # walk 29 #15: "LnkCap not shown - below LnkCap" when only lspci's "(downgraded)" said so
                verdict, tail = speed_verdict("unknown"), (
                    N_("below LnkCap, read at idle or unknown load: GPUs lower the PCIe speed when idle; re-check "
                       "under load") if d.lnkcap.speed_gts is not None or slow_ports else
                    N_("marked (downgraded) by lspci: below what the device can do (its LnkCap line is not in this "
                       "excerpt), read at idle or unknown load: GPUs lower the PCIe speed when idle; re-check under "
                       "load"))
            else:
                verdict, tail = Verdict.WARN, N_("speed capped below LnkCap")
            m = _speed_measure(d) if _slow(d) else tightest(_speed_measure(p, "upstream port link speed")
                                                            for p in slow_ports)
            if m is None and capped:
                m = measure(d.lnkctl2_target_gts, d.lnkcap.speed_gts, "GT/s", "at_least",
                            f"{_where(d)}LnkCtl2 target speed")
            findings.append(Finding(fid, verdict, Msg("{who}: ", who=_who(d)) + joined("; ", parts)
                                    + Msg(" - {tail}", tail=tail), _link_subject(d), tuple(x for x in ev if x),
                                    REMEDY_NIC_LINK if d.is_rdma_nic else REMEDY_SPEED, SRC_SPEED, measured=m))
        elif d.lnkcap.present and d.lnkcap.speed_gts is None and d.lnksta.speed_marker != "ok":
            # held-out round 47: "LnkCap: ... Speed unknown": this lspci cannot name the device's top speed, so
            # whether LnkSta runs at it cannot be told (pciutils ls-caps.c prints "unknown" for a code it predates)
            findings.append(Finding(fid, Verdict.UNKNOWN, Msg(
                "{who}: {link}; LnkCap's speed is 'unknown' to this lspci (a pciutils older than the device's PCIe "
                "generation), so whether the link runs at the device's top speed cannot be told", who=_who(d),
                link=fmt_link(d.lnksta.speed_gts, d.lnksta.width)), _link_subject(d),
                tuple(x for x in _ev(d, d.lnkcap.line, d.lnksta.line) if x),
                "Update pciutils (its lspci then names the speed) and read LnkCap again, or read the device's own "
                "maximum (`nvidia-smi -q`: PCIe Generation Max; `mlxlink --port_type PCIE` on a ConnectX).",
                f"{SRC_SPEED}; pciutils ls-caps.c (link_speed: 'unknown' for a speed code it does not know), "
                "https://github.com/pciutils/pciutils/blob/master/ls-caps.c"))
        else:
            passed.append(Msg("{who} {link}", who=_who(d), link=fmt_link(d.lnksta.speed_gts, d.lnksta.width)))
            pass_ev += _ev(d, d.lnkcap.line, d.lnksta.line)
            pass_m.append(_speed_measure(d))
    if passed:
        findings.append(Finding(fid, Verdict.PASS, (Msg('PCIe speed at LnkCap for {n_passed} link(s): ', n_passed=len(passed)) + joined('; ', passed[:8]) + (' ...' if len(passed) > 8 else '')), "host",
                                tuple(pass_ev[:24]), "", SRC_SPEED, measured=tightest(pass_m)))
    return findings


def _no_gpu_lspci(fid: str, facts: LspciFacts, o: ProbeOutput | None, what: str, src: str) -> list[Finding]:
    if not facts.devices:
        lines = (o.text if o else "").splitlines()
        return [garbled(fid, o or ProbeOutput(fid, "lspci"), "the lspci output", lines, source=src)]
    return [Finding(fid, Verdict.SKIP, Msg("{what} not judged: no NVIDIA GPU in this lspci output (no NVIDIA display or 3D controller "
                                           "listed)", what=what), "host", tuple(d.header for d in facts.devices[:5] if d.header),
                    "", src)]


def _switchy(d: LspciDevice) -> bool:
    """A PCIe switch port: lspci's ``Express ... Upstream/Downstream Port``, or, when the capabilities are not
    shown, a bridge whose name says switch (``PLX ... PEX 8747 ... Switch``, ``Broadcom / LSI PEX880xx``)."""
    return d.is_switch_port or (bool(d.bdf) and d.class_name.lower() == "pci bridge" and
                                bool(re.search(r"\bswitch\b|\bPEX ?\d{3,5}", d.description, re.IGNORECASE)))


def _bridge_kind(d: LspciDevice) -> str:
    if d.port_type:
        return d.port_type
    if _switchy(d):
        return "PCIe switch port"
    desc = re.split(r"\s*\((?:prog-if|rev)\b", d.description, maxsplit=1)[0].strip()
    return f"PCI bridge: {desc[:70]}" if desc else "PCI bridge"


def _acs_grep(facts: LspciFacts, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_acs from ``sudo lspci -vvv | grep ACSCtl``: one
    ACSCtl line per function, without the device it belongs to."""
    fid = "health.pcie_acs"
    lines = [d for d in facts.devices if d.acs_ctl is not None]
    on = [d for d in lines if d.acs_ctl and d.acs_ctl.get("SrcValid")]
    total = len(lines)
    if not on:
        return [Finding(fid, Verdict.PASS, Msg("ACS is off (ACSCtl: SrcValid-) on all {total} function(s) in this `lspci -vvv | grep "
                                               "ACSCtl` output", total=total), "host", tuple(d.acs_line for d in lines[:8]), "",
                        SRC_ACS)]
    ev = tuple(d.acs_line for d in on[:16])
    if _virtualised(plan):
        return [Finding(fid, Verdict.PASS, Msg("ACS is on (SrcValid+) on {n_on} of {total} function(s); expected on a VM host (the plan "
                                               "says virtualization=true)", n_on=len(on), total=total), "host", ev, "", SRC_ACS)]
    return [Finding(fid, Verdict.WARN, Msg("ACS is on (ACSCtl: SrcValid+) on {n_on} of {total} PCI function(s) of this bare-metal "
                                           "node: on the ports above GPUs, NICs or PCIe switches it redirects peer-to-peer traffic "
                                           "through the CPU root complex (slow P2P, NCCL hangs). grep dropped the device names, so "
                                           "which ports these are is not shown", n_on=len(on), total=total), "host", ev,
                    (Msg("Find the ports: `sudo lspci -vvv | grep -E '^[0-9a-f]{{2,4}}:|ACSCtl'` prints each device line with its ACSCtl (or give bringup the whole `sudo lspci -vvv`). Lines on ports that no GPU, NIC or switch sits behind do not matter. ") + REMEDY_ACS), SRC_ACS)]


def pcie_acs(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_acs: ACS (``ACSCtl: SrcValid+``) on a bare-metal node (``plan["virtualization"]`` falsy)
    redirects GPU peer-to-peer traffic through the CPU root complex: WARN with the NCCL troubleshooting
    remedy when it is on a PCIe switch port, on a root port/bridge above a GPU (NVIDIA/nccl#2079), or on a
    root port/bridge above a PCIe switch. ACS on a bridge whose subtree this output does not show is a WARN
    too, saying so; on a bridge shown to have neither GPU nor
    switch behind it, it does not matter. The grepped form (``lspci -vvv | grep ACSCtl``) is judged line by
    line: any SrcValid+ -> WARN."""
    fid = "health.pcie_acs"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "the ACS state of the PCIe switch ports", remedy=REMEDY_ROOT_CAPS, source=SRC_ACS)]
    if facts.acs_grep:
        return _acs_grep(facts, plan)
    bridges = [d for d in facts.devices if d.bdf and (d.is_bridge or d.class_code == "0604" or d.is_switch_port
                                                      or d.class_name.lower() == "pci bridge")]
    denied = [d for d in bridges if d.caps_denied]
    if not bridges:
        if not any(d.bdf for d in facts.devices):
            why = (Msg('this excerpt has no device sections'))
        else:
            why = (Msg('this output has no PCI bridges (lspci -d 10de: lists only NVIDIA functions)'))
        return [Finding(fid, Verdict.SKIP, Msg("ACS not judged: {why}; run the whole `sudo lspci -vvv`", why=why), "host",
                        tuple(d.header for d in facts.devices[:3] if d.header), "", SRC_ACS)]
    if denied and not any(d.acs_ctl is not None for d in bridges):
        return [Finding(fid, Verdict.UNKNOWN, Msg("ACS state unknown: lspci ran without root ({n_denied} bridge(s) show 'Capabilities: "
                                                  "<access denied>')", n_denied=len(denied)), "host",
                        tuple([d.header for d in denied[:5]] + ["Capabilities: <access denied>"]), REMEDY_ROOT_CAPS, SRC_ACS)]
    gpus = facts.gpus
    whole = _whole(o, facts)
    gpu_paths_known = bool(gpus) and all(facts.parents(g) for g in gpus)
    on = [d for d in bridges if d.acs_ctl and d.acs_ctl.get("SrcValid")]
    flagged: list[str] = []
    unseen: list[str] = []
    quiet: list[str] = []
    ev: list[str] = []
    gpus_under: dict[int, list[LspciDevice]] = {}  # bridge -> the GPUs behind it, built once (not per bridge)
    for g in gpus:
        for p in facts.parents(g):
            gpus_under.setdefault(id(p), []).append(g)
    for d in on:
        below = facts.below(d)
        gpus_below = gpus_under.get(id(d), [])
        switch_below = [x for x in below if _switchy(x)]
        kind = _bridge_kind(d)
        if _switchy(d) or gpus_below or switch_below:
            what: list[str] = [Msg("above GPU {gpus}", gpus=', '.join(g.bus_id for g in gpus_below[:4]))] \
                if gpus_below else []
            if switch_below and not _switchy(d):
                what.append(Msg("above PCIe switch {bus}", bus=switch_below[0].bus_id))
            flagged.append(f"{d.bus_id} ({kind}" + (", " + joined("; ", what) if what else "") + ")")
            ev += [d.header, d.acs_line]
        elif below or whole or gpu_paths_known:
            quiet.append(f"{d.bus_id} ({kind})")
        else:
            unseen.append(f"{d.bus_id} ({kind})")
            ev += [d.header] + [x.strip() for x in d.lines if x.strip().startswith(("NUMA node:", "ACSCap:"))] + [
                d.acs_line]
    quiet_note = (Msg("; ACS is on at {ports}, with no GPU or PCIe switch behind it in this output",
                      ports=', '.join(quiet[:4])) if quiet else "")
    if not flagged and not unseen:
        switch = [d for d in bridges if _switchy(d)]
        if switch:
            msg: str = Msg("no PCIe switch port above a GPU has ACS enabled ({n_switch} switch port(s))", n_switch=len(switch))
        elif gpus:
            msg = (Msg("no ACS on the path of the {n_gpus} GPU(s) in this output (their root ports; no PCIe "
                       "switch ports)", n_gpus=len(gpus)))
        else:
            msg = (Msg('no PCIe switch ports and no ACS enabled on the root ports/bridges in this output'))
        pev = [x for d in (on or switch or bridges)[:8] for x in (d.header, d.acs_line) if x]
        return [Finding(fid, Verdict.PASS, msg + quiet_note, "host", tuple(pev[:16]), "", SRC_ACS)]
    if _virtualised(plan):
        return [Finding(fid, Verdict.PASS, Msg("ACS enabled on {a1} PCIe port(s)/bridge(s); expected on a VM host (the plan says "
                                               "virtualization=true)", a1=len(flagged) + len(unseen)), "host", tuple(ev[:24]), "",
                        SRC_ACS)]
    parts: list[str] = []
    if flagged:
        parts.append(Msg("ACS is enabled on {n} PCIe port(s) on the GPUs' peer-to-peer path of this bare-metal "
                         "node: GPU peer-to-peer traffic is redirected through the CPU root complex (slow or hanging "
                         "P2P): ", n=len(flagged))
                     + joined("; ", flagged[:8]) + (" ..." if len(flagged) > 8 else ""))
    if unseen:
        parts.append(Msg("ACS is enabled (SrcValid+) on {ports}", ports=', '.join(unseen[:6]))
                     + ("" if flagged else Msg(" on this bare-metal node"))
                     + Msg("; this excerpt does not show what is behind it: if GPUs, NICs or a PCIe switch are, their "
                           "peer-to-peer traffic goes through the root complex/IOMMU (NCCL hangs, NVIDIA/nccl#2079)"))
    subject = gpu_subject(None, gpus[0].bdf) if len(gpus) == 1 else "host"
    remedy = (REMEDY_ACS if not unseen else Msg('See what is behind it first: `lspci -tv`, or the whole `sudo lspci -vvv`. ') + REMEDY_ACS)
    return [Finding(fid, Verdict.WARN, joined("; ", parts) + quiet_note, subject, tuple(x for x in ev[:24] if x),
                    remedy, SRC_ACS)]


def pcie_aer(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_aer: AER status bits latched on the GPUs and the ports above them (lspci -vv
    ``UESta``/``CESta``; ``UESvrt+`` = fatal). Fatal -> FAIL, uncorrectable -> WARN, corrected -> noted
    in a PASS."""
    fid = "health.pcie_aer"
    facts, o = _lspci_facts(out)
    if facts is None:
        return [missing(fid, o, "the PCIe AER status of the GPU links", remedy=REMEDY_ROOT_CAPS, source=SRC_AER)]
    targets = _targets(facts)
    if not targets:
        return _no_gpu_lspci(fid, facts, o, "PCIe AER status", SRC_AER)
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
        if not any("Capabilities:" in ln for d in checked for ln in d.lines):  # lspci -k / -nn: no capabilities at all
            links = any(d.lnksta.present or d.lnkcap.present for d in checked)  # a grep of -vv's link lines
            return [Finding(fid, Verdict.SKIP, "AER not judged: this excerpt holds the link lines only, not the AER "
                            "capability" if links else "AER not judged: this lspci listing prints no capabilities "
                            "(run without -vv)", "host", tuple(d.header for d in checked if d.header)[:5],
                            "For AER, run `sudo lspci -vvv` (the Advanced Error Reporting capability).", SRC_AER)]
        if all(no_express(d) for d in targets):
            return [Finding(fid, Verdict.SKIP, "AER not judged: the GPUs show no PCI Express capability (a VM's "
                            "conventional PCI bus), so there is no AER to read here", "host",
                            tuple(d.header for d in targets if d.header)[:5], REMEDY_NO_EXPRESS, SRC_AER)]
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
            findings.append(Finding(fid, Verdict.FAIL, Msg("{who}: fatal uncorrectable PCIe error(s) latched: {ue_fatal}", who=who, ue_fatal=', '.join(d.aer.ue_fatal)), _subject(d), tuple(_ev(d, *d.aer.lines)),
                                    REMEDY_AER_UE, SRC_AER))
        elif d.aer.ue_set:
            findings.append(Finding(fid, Verdict.WARN, Msg("{who}: uncorrectable (non-fatal) PCIe error(s) latched: {ue_set}", who=who, ue_set=', '.join(d.aer.ue_set)), _subject(d), tuple(_ev(d, *d.aer.lines)),
                                    REMEDY_AER_UE, SRC_AER))
        elif d.aer.ce_set:
            notes.append(Msg("{who}: corrected {errors}", who=who, errors=", ".join(d.aer.ce_set)))
            ev_ok += _ev(d, *d.aer.lines)
    if not findings:
        msg: str = Msg("no uncorrectable PCIe error latched on {n_with_aer} function(s) with AER", n_with_aer=len(with_aer))
        if notes:
            msg += (Msg('; corrected error status only (informational, B3): ') + SEMICOLON.join(notes[:6]))
        findings.append(Finding(fid, Verdict.PASS, msg, "host",
                                tuple(ev_ok[:20]) or tuple(x for d in with_aer[:4] for x in _ev(d, *d.aer.status_lines)
                                                           if x), "", SRC_AER))
    return findings


def gpu_bar1(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.bar1: each GPU's BAR1 (lspci ``Region 1``) size, for information; a BAR the firmware
    could not assign (``<unassigned>``/``[disabled]``) is a FAIL (Above 4G decoding)."""
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
    bars: list[tuple[LspciDevice, int]] = []
    for g in gpus:
        bad = [r for r in g.regions if r.kind == "Memory" and r.unassigned]
        if bad:
            findings.append(Finding(fid, Verdict.FAIL, Msg("{who}: BAR(s) {a1} not assigned by the firmware", who=_who(g), a1=', '.join(str(r.index) for r in bad)), _subject(g), tuple(_ev(g, *[r.line for r in bad])),
                                    REMEDY_BAR, SRC_BAR))
            continue
        shown = {r.index for r in g.regions if r.kind == "Memory"}
        absent = [i for i in (0, 1) if i not in shown]
        if absent and shown and min(shown) > 0:  # e.g. only "Region 3": BAR0 (registers) and BAR1 (the memory
            # aperture) were not given address space (an L20 bound to vfio-pci, in D3, out of MMIO window)
            findings.append(Finding(fid, Verdict.FAIL, Msg("{who}: BAR(s) {a1} missing (lspci lists only BAR(s) {a2}): "
                                                           "the firmware or kernel did not assign them",
                                                           who=_who(g), a1=", ".join(map(str, absent)),
                                                           a2=", ".join(map(str, sorted(shown)))),
                                    _subject(g), tuple(_ev(g, *[r.line for r in g.regions])), REMEDY_BAR, SRC_BAR))
            continue
        b = g.bar1
        if b is not None:
            sizes.append(f"{g.bus_id} {human_bytes(b.size)}")
            ev += _ev(g, b.line)
            if b.size is not None:
                bars.append((g, b.size))
    if sizes:
        least = min(bars, key=lambda x: x[1]) if bars else None
        # for information: no size is held to a limit here (an unassigned BAR is what fails)
        findings.append(Finding(fid, Verdict.PASS, (Msg('GPU BAR1 size: ') + ', '.join(sizes[:8]) + (' ...' if len(sizes) > 8 else '')), "host", tuple(ev[:16]), "", SRC_BAR,
                                measured=measure(least[1] / (1 << 30), None, "GiB", "at_least",
                                                 f"{_where(least[0])}BAR1 size (the smallest)") if least else None))
    return findings or [Finding(fid, Verdict.SKIP, "BAR1 not shown for the GPUs in this output", "host",
                                tuple(g.header for g in gpus[:3]), "", SRC_BAR)]


LSPCI_CHECKS = (lspci_gpus, pcie_width, pcie_speed, pcie_acs, pcie_aer, gpu_bar1)
"""The lspci-based checks, in the order a report reads best."""


def lspci_all(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """All lspci-based checks (GPU count, driver binding, width, speed, ACS, AER, BAR1) in one call; for a
    grepped ACS listing (``lspci -vvv | grep ACSCtl``) only the ACS check, the others having nothing to read."""
    facts, _ = _lspci_facts(out)
    if facts is not None and facts.acs_grep:
        return pcie_acs(out, plan)
    nv = [d for d in facts.devices if d.is_nvidia] if facts is not None else []
    if nv and all(d.bdf and d.header_only for d in nv):
        # a device list (`lspci | grep -i nvidia`, `lspci -nn -d 10de:`): headers only, so only which GPUs are there
        return lspci_gpus(out, plan) + [Finding(
            "health.pcie_width", Verdict.SKIP, "PCIe link width/speed, ACS, AER and BAR1 not judged: this is a device "
            "list without lspci's -vv detail", "host", tuple(d.header for d in nv)[:4],
            "For the link checks give bringup `sudo lspci -vvv -d 10de:`.", SRC_WIDTH)]
    findings: list[Finding] = []
    for fn in LSPCI_CHECKS:
        findings += fn(out, plan)
    return findings


SRC_HOST_GEN = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (PCIe 'Max' generation of "
                "the GPU and of the host side); PCIe bandwidth per generation, "
                "https://en.wikipedia.org/wiki/PCI_Express")


SRC_REPLAY = ("NVIDIA DCGM, DCGM_FR_PCI_REPLAY_RATE (warns above 8 PCIe replays per minute), "
              "https://github.com/NVIDIA/DCGM; nvidia-smi documentation, "
              "https://docs.nvidia.com/deploy/nvidia-smi/ (pcie.replay_counter)")


def _doc_width(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_width from an nvidia-smi/NVML document (current vs max link width per GPU)."""
    out, ok = [], []
    for g in doc.gpus:
        cur, mx = g.num("pcie.link.width.current"), g.num("pcie.link.width.max")
        if cur is None or mx is None:
            continue
        lines = g.lines("pcie.link.width.current", "pcie.link.width.max")
        wm = measure(cur, mx, "lanes", "at_least", f"{short_subject(g)} link width")
        if cur >= mx:
            ok.append((g, f" (x{_fmt(cur)})", lines, wm))
            continue
        guest = in_vm(g, plan)
        vm = (Msg(" On a cloud VM compare with the instance type's documented link: the platform presents it.")
              if guest else "")

        state, slines = _doc_load(g, plan)
        when = " under load" if state == "load" else Msg(" (the width does not drop at idle)")
        # inside a VM guest the hypervisor presents the link (as for the speed: speed_verdict): a warn to check
        # against the instance type, not a proven fault of this GPU's slot
        # nvidia-smi's maximum is the GPU's own; a card in a slot wired x8 (x8/x8 bifurcation on a workstation board)
        # reads the same as a link that trained down, so only a baseboard module (SXM: no slot) proves a fault here
        row = sku_row(g.name or "")
        baseboard = bool(row and row.get("mode") == "all")
        slot = "" if baseboard or guest else Msg("; nvidia-smi's maximum is the GPU's own: a slot wired x{fmt} reads the "
                                                 "same (lspci -vv of the port above it, its LnkCap, tells which)",
                                                 fmt=_fmt(cur))
        out.append(Finding("health.pcie_width", WIDTH_BELOW_CAP if baseboard and not guest else Verdict.WARN,
                           Msg("{subject}: PCIe link width is x{fmt}, narrower than its maximum x{fmt2}{when}", subject=subject(g), fmt=_fmt(cur), fmt2=_fmt(mx), when=when) + slot,
                           subject(g), _doc_ev(g, lines, slines), REMEDY_WIDTH + vm, SRC_WIDTH, measured=wm))
    out += _pass_group("health.pcie_width", ok, N_("PCIe link at full width"), N_("full PCIe width on {n} GPUs"), SRC_WIDTH,
                       total=len(doc.gpus))
    return out


def _doc_load(g: GpuFacts, plan: Mapping[str, Any]) -> tuple[str, list[str]]:
    state, lines = load_state(g)
    return ("load" if _under_load(plan) else state), lines


SRC_C2C = ("NVIDIA Grace Hopper / Grace Blackwell superchip architecture: the GPU and the Grace CPU are joined by "
           "NVLink-C2C, 900 GB/s (https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/, "
           "https://www.nvidia.com/en-us/data-center/gb200-nvl72/)")


def _doc_speed(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_speed from an nvidia-smi/NVML document (current vs max generation per GPU, and the
    host side's max vs the GPU's)."""
    out, ok = [], []
    for g in doc.gpus:
        cur = g.num("pcie.link.gen.gpucurrent")
        if cur is None:
            cur = g.num("pcie.link.gen.current")
        mx = g.num("pcie.link.gen.max")
        dev_max, host_max = g.num("pcie.link.gen.gpumax"), g.num("pcie.link.gen.hostmax")
        lines = g.lines("pcie.link.gen.current", "pcie.link.gen.gpucurrent", "pcie.link.gen.max",
                        "pcie.link.gen.gpumax", "pcie.link.gen.hostmax")
        if dev_max is not None and host_max is not None and host_max < dev_max and grace_superchip(g.name or ""):
            # a Grace superchip's GPU moves its host data over NVLink-C2C, not PCIe (held-out round 159: 4x GB300)
            out.append(Finding("health.pcie_speed", Verdict.PASS,
                               Msg("{subject}: the host side of its PCIe link offers Gen{fmt2} of the GPU's Gen{fmt}; on a "
                                   "Grace superchip the GPU reaches the CPU and its memory over NVLink-C2C, so PCIe is not "
                                   "its data path", subject=subject(g), fmt=_fmt(dev_max), fmt2=_fmt(host_max)),
                               subject(g), _doc_ev(g, lines), "", SRC_C2C))
        elif dev_max is not None and host_max is not None and host_max < dev_max:
            out.append(Finding("health.pcie_speed", Verdict.WARN,
                               Msg("{subject}: the GPU supports PCIe Gen{fmt} but the host side offers only Gen{fmt2} "
                                   "(platform-limited bandwidth)", subject=subject(g), fmt=_fmt(dev_max), fmt2=_fmt(host_max)), subject(g), _doc_ev(g, lines),
                               "Move the GPU to a slot (or riser) of the GPU's generation, or check the slot's PCIe "
                               "speed setting in the BIOS; accept it only if this platform is built that way.", SRC_HOST_GEN,
                               measured=_gen_measure(host_max, dev_max, f"{short_subject(g)} host side max link speed "
                                                     f"(Gen{_fmt(host_max)}, GPU Gen{_fmt(dev_max)})")))
        if cur is None or mx is None:
            continue
        sm = _gen_measure(cur, mx, f"{short_subject(g)} link speed (Gen{_fmt(cur)}, max Gen{_fmt(mx)})")
        if cur >= mx:
            ok.append((g, f" (Gen{_fmt(cur)})", lines, sm))
            continue
        state, slines = _doc_load(g, plan)
        v = speed_verdict(state, in_vm(g, plan))
        msg = Msg("{subject}: PCIe link at Gen{fmt}, below its maximum Gen{fmt2}", subject=subject(g), fmt=_fmt(cur), fmt2=_fmt(mx))
        if v is Verdict.PASS:
            ok.append((g, Msg(" (Gen{gen} now: idle GPUs lower the link speed to save power, normal; re-check "
                              "under load)", gen=_fmt(cur)), lines + slines, sm))
        elif state == "load":
            out.append(Finding("health.pcie_speed", v, (msg + Msg(' under load')), subject(g), _doc_ev(g, lines, slines),
                               REMEDY_SPEED, SRC_SPEED, measured=sm))
        else:
            out.append(Finding("health.pcie_speed", v,
                               (msg + Msg(': cannot tell whether the GPU was idle (idle GPUs lower the speed); re-check under load')), subject(g), _doc_ev(g, lines, slines), REMEDY_SPEED, SRC_SPEED,
                               measured=sm))
    out += _pass_group("health.pcie_speed", ok, N_("PCIe generation as expected"),
                       N_("PCIe generation as expected on {n} GPUs"), SRC_SPEED, total=len(doc.gpus))
    return out


def pcie_replay(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    """health.pcie_replay: each GPU's PCIe replay counter since reset (one reading, no rate): above
    ``replay_count_warn`` (8, DCGM's per-minute limit) or any rollover warns until read again over a minute of load;
    a few (1-8) pass with the count; none pass."""
    t = thresholds()
    out, ok, few = [], [], []
    bad_n = sum(1 for g in doc.gpus if (g.num("pcie.replay_counter") or 0) > t["replay_count_warn"]
                or (g.num("pcie.replay_rollover_counter") or 0) > 0)
    for g in doc.gpus:
        rep, roll = g.num("pcie.replay_counter"), g.num("pcie.replay_rollover_counter")
        if rep is None and roll is None:
            continue
        lines = g.lines("pcie.replay_counter", "pcie.replay_rollover_counter")
        rm = measure(rep, t["replay_count_warn"], "replays", "at_most", f"{short_subject(g)} PCIe replays since reset")
        if (rep or 0) > t["replay_count_warn"] or (roll or 0) > 0:
            out.append(Finding("health.pcie_replay", Verdict.WARN,
                               (Msg('{subject}: {fmt} PCIe replays since reset', subject=subject(g), fmt=_fmt(rep)) + (Msg(' and {fmt} rollovers', fmt=_fmt(roll)) if roll else '') + Msg(' (on {bad_n} of {n_gpus} GPUs); one reading has no rate, DCGM warns above {fmt} per minute', bad_n=bad_n, n_gpus=len(doc.gpus), fmt=_fmt(t['replay_rate_warn_per_min']))), subject(g), _doc_ev(g, lines),
                               "Read the counter again after a minute of load: a growing count points at a marginal "
                               "link (riser, slot, retimer); check `dmesg` for AER errors on this GPU's bus.", SRC_REPLAY,
                               measured=rm if (rep or 0) > t["replay_count_warn"] else
                               measure(roll, 0, "rollovers", "at_most", f"{short_subject(g)} PCIe replay counter rollovers")))
        elif rep:  # a few since reset: at most DCGM's per-minute limit, so no rate above it over a minute of uptime
            few.append((g, Msg(": {n} since reset, at most {limit}: DCGM warns above {limit} per minute, so no rate "
                               "above it once the GPU has been up a minute; read it again under load", n=_fmt(rep),
                               limit=_fmt(t["replay_count_warn"])), lines, rm))
        else:
            ok.append((g, "", lines, rm))
    out += _pass_group("health.pcie_replay", ok, N_("no PCIe replays"), N_("no PCIe replays on {n} GPUs"), SRC_REPLAY, total=len(doc.gpus))
    out += _pass_group("health.pcie_replay", few, N_("a few PCIe replays"), N_("a few PCIe replays on {n} GPUs"),
                       SRC_REPLAY, total=len(doc.gpus))
    return out


SRC_AER_COUNTERS = ("Linux kernel 'The PCI Express Advanced Error Reporting Driver Guide', "
                    "https://docs.kernel.org/PCI/pcieaer-howto.html (sysfs aer_dev_correctable / aer_dev_fatal / "
                    "aer_dev_nonfatal); Meta GCM health checks, https://github.com/facebookresearch/gcm (pcie-aer: "
                    "fatal -> fail, uncorrectable non-fatal -> warn, corrected -> information)")


def aer_counters(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """AER error counters the kernel keeps per GPU function since boot (sysfs ``aer_dev_*``):
    any fatal -> fail, any non-fatal uncorrectable -> warn, corrected -> pass with the count."""
    facts, err = _pci(out)
    if err is not None or facts is None:  # under this rule's own id: every finding id belongs to one step
        return [dataclasses.replace(err, id="health.pcie_aer_counters")] if err is not None else []
    if _no_gpu(out):
        return [_skip_no_gpu("health.pcie_aer_counters", "AER counter check")]
    findings = []
    for g in facts.gpus:
        subject = f"GPU ({g.bdf})"
        if not g.aer:
            continue
        total = {sev: sum(v for k, v in c.items() if not k.startswith("TOTAL")) for sev, c in g.aer.items()}
        fatal, nonfatal, corr = total.get("fatal", 0), total.get("nonfatal", 0), total.get("correctable", 0)
        lines = [ln for sev in ("fatal", "nonfatal", "correctable") for ln in g.aer_lines.get(sev, [])
                 if not ln.rstrip().endswith(" 0")]
        if fatal:
            findings.append(Finding("health.pcie_aer_counters", Verdict.FAIL,
                                    Msg("{subject}: {fatal} fatal PCIe error(s) since boot", subject=subject, fatal=fatal), subject, tuple(lines[:12]),
                                    "Reseat the GPU or check its riser and slot; read `dmesg | grep -i aer` for the "
                                    "failing port. A GPU with fatal link errors should not train until fixed.", SRC_AER_COUNTERS,
                                    measured=measure(fatal, 0, "errors", "at_most", "fatal PCIe errors since boot")))
        elif nonfatal:
            findings.append(Finding("health.pcie_aer_counters", Verdict.WARN,
                                    Msg("{subject}: {nonfatal} uncorrectable (non-fatal) PCIe error(s) since boot", subject=subject, nonfatal=nonfatal),
                                    subject, tuple(lines[:12]),
                                    "Watch whether the count grows under load; check seating, risers and cables.",
                                    SRC_AER_COUNTERS, measured=measure(nonfatal, 0, "errors", "at_most",
                                                                       "uncorrectable PCIe errors since boot")))
        else:
            findings.append(Finding("health.pcie_aer_counters", Verdict.PASS,
                                    (Msg('{subject}: no uncorrectable PCIe errors since boot', subject=subject) + (Msg(' ({corr} corrected)', corr=corr) if corr else '')), subject, tuple(lines[:6]), "",
                                    SRC_AER_COUNTERS, measured=measure(fatal + nonfatal, 0, "errors", "at_most",
                                                                       "uncorrectable PCIe errors since boot")))
    if not findings:
        return [Finding("health.pcie_aer_counters", Verdict.SKIP,
                        "no AER counters in sysfs (the kernel exposes aer_dev_* only with AER enabled)",
                        "host", (), "", SRC_AER_COUNTERS)]
    return findings
