"""NVLink rules: link state (``nvidia-smi nvlink -s``, ``dcgmi nvlink --link-status``), NVLink error
counters (``nvidia-smi nvlink -e``) and the NVSwitch fabric registration state nvidia-smi reports.

* A link the SKU expects (``assets/nvlink_expected.csv``) that is not up -> FAIL; SKUs without NVLink
  are never failed for "Down" links (DCGM reports those falsely on PCIe cards).
* NVLink error counters: lifetime totals are not a failure; only the delta between two samples is.
* Fabric registration not Completed / Success on an NVSwitch system -> FAIL (Fabric Manager).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from wizard.common import gpu_subject, to_float, to_int
from wizard.data import table
from wizard.facts import facts_of
from wizard.model import Finding, Measure, Verdict, measure, tightest
from wizard.parsers.smi import SmiDoc
from wizard.parsers.topology import parse_dcgmi_nvlink, parse_nvlink
from wizard.rules.common import Outputs, garbled, missing
from wizard.rules.smi import _ev, _pass_group, subject
from wizard.i18n import N_, Msg, SEMICOLON

SRC_NVLINK = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (nvlink -s: link state and "
              "speed); NVLink link counts per GPU model from NVIDIA's data sheets (H100 "
              "https://www.nvidia.com/en-us/data-center/h100/, H200 "
              "https://www.nvidia.com/en-us/data-center/h200/, HGX "
              "https://www.nvidia.com/en-us/data-center/hgx/)")


SRC_DCGM_FALSE = ("NVIDIA/DCGM#49, https://github.com/NVIDIA/DCGM/issues/49, and NVIDIA/NVSentinel PR #1481, "
                  "https://github.com/NVIDIA/NVSentinel/pull/1481: DCGM reports the NVLink links of PCIe GPUs "
                  "without a bridge as Down")


SRC_NVERR = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (nvlink -e: replay, "
             "recovery and CRC error counters are totals since the driver loaded); Meta GCM health checks, "
             "https://github.com/facebookresearch/gcm (NVLink counters: judge growth, not totals)")


def sku_row(name: str) -> dict[str, str] | None:
    """The first ``assets/nvlink_expected.csv`` row whose ``match`` regex finds ``name`` (a GPU name as
    nvidia-smi prints it, or the plan's gpu_model); None when no row matches."""
    if not isinstance(name, str) or not name.strip():
        return None
    for row in table("nvlink_expected.csv"):
        try:
            if re.search(row.get("match", "") or "(?!)", name, re.IGNORECASE):
                return row
        except re.error:
            continue
    return None


def sku_row_by_device(device_id: str) -> dict[str, str] | None:
    """The ``assets/nvlink_expected.csv`` row listing PCI device id ``device_id`` ("2330", "0x2330");
    else, for a device ``assets/pci_ids.csv`` gives an SXM form factor, a synthetic ``mode=all`` row
    named after it (an SXM module sits on an NVLink baseboard); None when neither knows the id."""
    dev = (device_id or "").strip().lower().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-f]{4}", dev):
        return None
    for row in table("nvlink_expected.csv"):
        if dev in (row.get("device_ids") or "").lower().split():
            return row
    for row in table("pci_ids.csv"):
        if (row.get("device_id") or "").lower() == dev and (row.get("form_factor") or "").upper().startswith("SXM"):
            return {"sku": f"{row.get('name', dev)} ({row.get('form_factor')})", "mode": "all", "match": "",
                    "device_ids": dev, "source": row.get("source", "")}
    return None


def _expected(row: dict[str, str] | None) -> tuple[str, int | None, float | None]:
    if row is None:
        return "", None, None
    return row.get("mode", ""), to_int(row.get("links_expected"), max_digits=4), to_float(row.get("link_speed_gb_s"))


def nvlink(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink from ``nvidia-smi nvlink -s``: active links per GPU vs the SKU's expected count
    and speed (assets/nvlink_expected.csv, by the GPU name nvidia-smi prints, else the plan's gpu_model).
    Fewer active links than expected -> FAIL; slower links -> WARN; SKUs without NVLink -> SKIP; an
    unknown SKU is judged by consistency with the node's other GPUs."""
    fid = "health.nvlink"
    o = out.get("nvidia_smi_nvlink_s")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink link state", remedy="Run `nvidia-smi nvlink -s` (no root needed).",
                        source=SRC_NVLINK)]
    rep = facts_of(out).parse("nvidia_smi_nvlink_s", parse_nvlink, on="text+stderr")
    assert rep is not None
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
    pass_m: list[Measure | None] = []
    unknown_sku: list[tuple[Any, list[str]]] = []
    consistency = False
    for g in rep.gpus:
        row = sku_row(g.name) or plan_row
        mode, exp, speed = _expected(row)
        subj = gpu_subject(g.index)
        ev = [g.header] + [g.link_lines[k] for k in sorted(g.link_lines)] + g.notes
        act = len(g.active)
        if not g.links:
            if any(re.search(r"not (have|support)", n, re.IGNORECASE) for n in g.notes) or mode == "none":
                findings.append(Finding(fid, Verdict.SKIP, Msg("GPU {index} ({name}): no NVLink", index=g.index, name=g.name), subj, tuple(ev),
                                        "", SRC_NVLINK))
            elif any("inactive" in n.lower() for n in g.notes) and mode == "bridge_optional" and len(rep.gpus) == 1:
                # a bridge joins two cards: with one GPU listed there is nothing to link
                findings.append(Finding(fid, Verdict.SKIP, Msg("GPU {index} ({name}): NVLink links inactive, as expected with one "
                                                               "GPU listed (an NVLink bridge joins two cards)", index=g.index, name=g.name),
                                        subj, tuple(ev), "", SRC_NVLINK))
            elif any("inactive" in n.lower() for n in g.notes):
                verdict = Verdict.WARN if mode in ("bridge_optional", "") else Verdict.FAIL
                findings.append(Finding(fid, verdict, Msg("GPU {index} ({name}): all NVLink links inactive", index=g.index, name=g.name), subj,
                                        tuple(ev), _nvlink_remedy(mode), SRC_NVLINK))
            else:
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("GPU {index} ({name}): no link lines in this output", index=g.index, name=g.name),
                                        subj, tuple(ev), "Paste the whole `nvidia-smi nvlink -s`.", SRC_NVLINK))
            continue
        if mode == "none":
            findings.append(Finding(fid, Verdict.SKIP, Msg("GPU {index} ({name}): {a1} has no NVLink; {act} link(s) reported active", index=g.index, name=g.name, a1=row['sku'] if row else '', act=act), subj, tuple(ev), "", SRC_NVLINK))
            continue
        if exp is None:
            unknown_sku.append((g, ev))
            continue
        assert row is not None  # exp is read from the row
        inactive = g.inactive
        lm = measure(act, exp, "links", "at_least", f"GPU {g.index} active NVLink links (expected on {row['sku']})")
        if act < exp:
            if rep.ellipsis and not inactive:
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("GPU {index} ({name}): this output elides links ('[...]'); {act} shown active of the {exp} "
                                                                  "expected on {sku}", index=g.index, name=g.name, act=act, exp=exp, sku=row['sku']),
                                        subj, tuple(ev), "Paste the whole `nvidia-smi nvlink -s`.", SRC_NVLINK))
            elif rep.cut and g is rep.gpus[-1] and not inactive:
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("GPU {index} ({name}): the paste ends inside this GPU's link list "
                                                                  "({act} shown active of the {exp} expected on {sku}; nvidia-smi lists "
                                                                  "an inactive link as <inactive>, not by leaving it out)",
                                                                  index=g.index, name=g.name, act=act, exp=exp, sku=row['sku']),
                                        subj, tuple(ev), "Paste the whole `nvidia-smi nvlink -s`.", SRC_NVLINK))
            elif mode == "bridge_optional" and act == 0:
                findings.append(Finding(fid, Verdict.WARN, Msg("GPU {index} ({name}): no NVLink active (0 of {exp}); expected only if no NVLink bridge is "
                                                               "fitted on this {sku}", index=g.index, name=g.name, exp=exp, sku=row['sku']), subj,
                                        tuple(ev), _nvlink_remedy(mode), SRC_NVLINK))
            else:
                findings.append(Finding(fid, Verdict.FAIL, (Msg('GPU {index} ({name}): {act} of {exp} NVLink links active on {row}; inactive: ', index=g.index, name=g.name, act=act, exp=exp, row=row['sku']) + (', '.join(f'link {k}' for k in inactive) or 'not listed')), subj, tuple(ev),
                                        _nvlink_remedy(mode), SRC_NVLINK, measured=lm))
            continue
        slow = [k for k in g.active if speed and (g.links[k] or 0) < speed * 0.99]
        if slow:
            findings.append(Finding(fid, Verdict.WARN, Msg("GPU {index} ({name}): link(s) {map} at {a1:g} GB/s, below {speed:g} GB/s expected on {sku}", index=g.index, name=g.name, map=', '.join(map(str, slow)), a1=g.links[slow[0]], speed=speed, sku=row['sku']),
                                    subj, tuple(ev), "Reset the GPU or reboot; if the speed stays low, contact the "
                                    "vendor (NVLink training problem).", SRC_NVLINK,
                                    measured=measure(min(g.links[k] or 0.0 for k in slow), (speed or 0.0) * 0.99, "GB/s",
                                                     "at_least", f"GPU {g.index} slowest NVLink link speed "
                                                     f"(expected {speed:g} GB/s, 1% tolerance)")))
            continue
        passed.append(f"GPU {g.index} {act}/{exp}")
        pass_ev += ev[:3]
        pass_m.append(lm)
    if unknown_sku:
        most = max(len(g.active) for g, _ in unknown_sku)
        for g, ev in unknown_sku:
            act = len(g.active)
            subj = gpu_subject(g.index)
            if most == 0:
                findings.append(Finding(fid, Verdict.WARN, Msg("GPU {index} ({name}): no NVLink active and bringup has no expected link count for this SKU", index=g.index, name=g.name), subj, tuple(ev), (_nvlink_remedy('') + Msg(' Set gpu_model in the plan so bringup knows whether this SKU has NVLink.')), SRC_NVLINK))
            elif act < most and not ((rep.ellipsis or (rep.cut and g is rep.gpus[-1])) and not g.inactive):
                findings.append(Finding(fid, Verdict.FAIL, (Msg("GPU {index} ({name}): {act} NVLink links active, fewer than the {most} of this node's other GPUs; inactive: ", index=g.index, name=g.name, act=act, most=most) + (', '.join(f'link {k}' for k in g.inactive) or 'not listed')), subj,
                                        tuple(ev), _nvlink_remedy("all"), SRC_NVLINK,
                                        measured=measure(act, most, "links", "at_least", f"GPU {g.index} active NVLink "
                                                         "links (the most on this node's other GPUs)")))
            else:
                passed.append(f"GPU {g.index} {act} active")
                consistency = True
                pass_ev += ev[:3]
                pass_m.append(measure(act, most, "links", "at_least",
                                      f"GPU {g.index} active NVLink links (the most on this node's other GPUs)"))
    if passed:
        note = (Msg(" (no expected link count for this SKU in assets/nvlink_expected.csv: judged by consistency with the node's other GPUs)") if consistency else '')
        findings.append(Finding(fid, Verdict.PASS, (Msg('NVLink links active as expected: ') + SEMICOLON.join(passed[:8]) + (' ...' if len(passed) > 8 else '') + note), "host", tuple(pass_ev[:20]), "",
                                SRC_NVLINK, measured=tightest(pass_m)))
    return findings


def _nvlink_remedy(mode: str) -> str:
    if mode in ("bridge", "bridge_optional"):
        return (N_("Power down and reseat the NVLink bridge(s) between the paired cards (every bridge connector fully "
                "seated), then check `nvidia-smi nvlink -s` again; replace the bridge if links stay down."))
    return (N_("Reset the GPU or reboot; on NVSwitch systems check the fabric manager (`systemctl status "
            "nvidia-fabricmanager`, version equal to the driver); if links stay inactive after a cold boot, contact "
            "the vendor (baseboard/GPU RMA)."))


SATURATED_COUNTS = frozenset({2 ** 16 - 1, 2 ** 32 - 1})
"""A counter at the largest value its 16- or 32-bit register holds has saturated: the link's errors outran it,
whatever the time since the counters were last cleared (derived)."""


def nvlink_errors(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink_errors from ``nvidia-smi nvlink -e``. One sample: lifetime totals, reported but never
    a FAIL (non-zero -> WARN "take a second sample"). Two samples (the output repeats the GPU blocks, e.g.
    before and after a stress stage): replay/CRC delta > 0 -> WARN, recovery delta > 0 -> FAIL (B9)."""
    fid = "health.nvlink_errors"
    o = out.get("nvidia_smi_nvlink_e")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink error counters", remedy="Run `nvidia-smi nvlink -e` (no root needed).",
                        source=SRC_NVERR)]
    rep = facts_of(out).parse_text("nvidia_smi_nvlink_e", parse_nvlink)
    assert rep is not None
    blocks = [g for g in rep.gpus if g.counters]
    if not blocks:
        if rep.gpus and any(re.search(r"not (have|support)", n, re.IGNORECASE) for g in rep.gpus for n in g.notes):
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
            return [Finding(fid, Verdict.PASS, Msg("all NVLink error counters are 0 on {n_blocks} GPU(s), {n_links} link(s) (one sample: "
                                                   "lifetime totals; a delta needs a second sample after the stress stage)", n_blocks=len(blocks), n_links=n_links),
                            "host", tuple(ev[:8]), "", SRC_NVERR)]
        gpus = sorted({g.index for g, *_ in nonzero})
        saturated = [(g, k, name, v) for g, k, name, v in nonzero if v in SATURATED_COUNTS]
        if saturated:
            return [Finding(fid, Verdict.FAIL, (Msg('NVLink error counter saturated at its maximum: ') + SEMICOLON.join((f'GPU {g.index} link {k} {name} {v}' for g, k, name, v in saturated[:6])) + Msg(' (the counter stopped counting: that link has had at least that many errors)')),
                            gpu_subject(saturated[0][0].index), tuple(ev[:16]),
                            "Drain the GPU, reset it (or reboot) to clear the counters, run a stress test with "
                            "`nvidia-smi nvlink -e` sampled before and after: if that link's counters grow again the "
                            "GPU/baseboard link needs service (RMA); `nvidia-smi nvlink -s` shows whether it trains.",
                            SRC_NVERR)]
        return [Finding(fid, Verdict.WARN, (Msg('non-zero NVLink error totals on GPU(s) {map}: ', map=', '.join(map(str, gpus))) + SEMICOLON.join((f'GPU {g.index} link {k} {name} {v}' for g, k, name, v in nonzero[:6])) + Msg(' - one sample only: these are lifetime totals, not a failure by themselves')),
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
            findings.append(Finding(fid, Verdict.FAIL, (Msg('GPU {idx}: NVLink recovery events between the two samples: ', idx=idx) + SEMICOLON.join(recov[:6] + grow[:4])), subj, tuple(ev), _nvlink_remedy("all"), SRC_NVERR))
        elif grow:
            findings.append(Finding(fid, Verdict.WARN, (Msg('GPU {idx}: NVLink error counters grew between the two samples: ', idx=idx) + SEMICOLON.join(grow[:8])), subj, tuple(ev),
                                    "Re-run the stress stage and sample again; if the counters keep growing, reset the "
                                    "GPU and check the NVLink (bridge seating, fabric manager).", SRC_NVERR))
        elif reset:
            findings.append(Finding(fid, Verdict.UNKNOWN, (Msg('GPU {idx}: counters went down between samples (reset?): ', idx=idx) + SEMICOLON.join(reset[:6])), subj, tuple(ev),
                                    "Do not reset the counters between the two samples; sample again.", SRC_NVERR))
    if not findings:
        findings.append(Finding(fid, Verdict.PASS, Msg("no NVLink error counter grew between the two samples on {n_samples} GPU(s)", n_samples=len(samples)), "host", tuple(g.header for g in blocks[:8]), "", SRC_NVERR))
    return findings


def _gib(kib: int) -> str:
    return f"{kib / 2**20:,.1f} GiB"


def nvlink_traffic(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.nvlink from ``nvidia-smi nvlink -gt d`` (data throughput counters since the last reset, KiB a link and
    direction; probe name ``nvidia_smi_nvlink_gt``): every link of every GPU carried data -> PASS (the links trained
    and NCCL used them); a GPU whose other links carried data while some carried none -> WARN naming the links (down,
    or not wired: ``nvidia-smi nvlink -s`` tells); no link carried anything -> UNKNOWN (nothing ran over NVLink since
    the counters were reset). Never FAIL: a counter shows use, not a fault."""
    fid = "health.nvlink"
    o = out.get("nvidia_smi_nvlink_gt")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the NVLink throughput counters", remedy="Run `nvidia-smi nvlink -gt d`.",
                        source=SRC_NVLINK)]
    rep = facts_of(out).parse_text("nvidia_smi_nvlink_gt", parse_nvlink)
    assert rep is not None
    gpus = [g for g in rep.gpus if g.traffic]
    if not gpus:
        return [garbled(fid, o, "nvidia-smi nvlink -gt d", rep.problems or o.lines()[:20], source=SRC_NVLINK)]
    total = {g.index: sum(sum(d.values()) for d in g.traffic.values()) for g in gpus}
    n_links = sum(len(g.traffic) for g in gpus)
    if not any(total.values()):
        return [Finding(fid, Verdict.UNKNOWN, Msg("no data counted on any of {n_links} NVLink link(s) of {n} GPU(s): "
                                                  "nothing has run over NVLink since the counters were reset, so the "
                                                  "counters show neither use nor a fault", n_links=n_links, n=len(gpus)),
                        "host", tuple(g.header for g in gpus[:8]),
                        "Run a multi-GPU workload (nccl-tests all_reduce_perf, or `bringup validate node`) and read the "
                        "counters again; `nvidia-smi nvlink -s` shows each link's state and speed now.", SRC_NVLINK)]
    idle = [(g, k) for g in gpus if total[g.index] for k, d in sorted(g.traffic.items()) if not any(d.values())]
    if idle:
        names = SEMICOLON.join(f"GPU {g.index} link {k}" for g, k in idle[:8])
        ev = [g.header for g in gpus if any(x is g for x, _ in idle)][:4]
        ev += [ln for g, k in idle[:8] for ln in g.traffic_lines if ln.startswith(f"Link {k}:")][:12]
        return [Finding(fid, Verdict.WARN, Msg("NVLink link(s) that carried no data while the same GPU's other links "
                                               "did: {names}: down, or not wired on this board", names=names),
                        gpu_subject(idle[0][0].index), tuple(ev),
                        "Check `nvidia-smi nvlink -s` (an inactive link is down: reseat the bridge, or on an NVSwitch "
                        "board check Fabric Manager) and `nvidia-smi nvlink -e` for that link's error counters.",
                        SRC_NVLINK)]
    busiest = max(total.values())
    return [Finding(fid, Verdict.PASS, Msg("all {n_links} NVLink link(s) of {n} GPU(s) carried data since the counters "
                                           "were reset (up to {most} a GPU, Tx and Rx): the links trained and "
                                           "carried traffic; this shows use, not the links' speed", n_links=n_links,
                                           n=len(gpus), most=_gib(busiest)),
                    "host", tuple(g.header for g in gpus[:8]), "", SRC_NVLINK)]


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
    d = facts_of(out).parse_text("dcgmi_nvlink", parse_dcgmi_nvlink)
    assert d is not None
    if not d.gpus:
        return [garbled(fid, o, "dcgmi nvlink --link-status", d.problems or o.lines()[:20], source=SRC_NVLINK)]
    row = sku_row(str(plan.get("gpu_model") or ""))
    mode, exp, _ = _expected(row)
    key = next((x for x in d.header_lines if x.startswith("Key:")), "")
    findings: list[Finding] = []
    passed: list[str] = []
    up_m: list[Measure | None] = []
    most = max(g.states.count("U") for g in d.gpus)
    for g in d.gpus:
        up, down, dis = g.states.count("U"), g.states.count("D"), g.states.count("X")
        slots = up + down + dis
        subj = gpu_subject(g.id)
        ev = tuple(x for x in (*g.lines, key) if x)
        counts = (Msg("{up} of {slots} NVLink links Up ({down} Down, {dis} Disabled)", up=up, slots=slots, down=down,
                      dis=dis) if dis else
                  Msg("{up} of {slots} NVLink links Up ({down} Down)", up=up, slots=slots, down=down))
        if slots == 0:
            findings.append(Finding(fid, Verdict.SKIP, Msg("GPU {id}: no NVLink (all links Not Supported)", id=g.id), subj, ev, "",
                                    SRC_NVLINK))
        elif mode == "none":
            findings.append(Finding(fid, Verdict.SKIP, Msg("GPU {id}: {counts}; {a1} has no NVLink, so DCGM's 'Down' is not a fault", id=g.id, counts=counts, a1=row['sku'] if row else ''), subj, ev, "", SRC_DCGM_FALSE))
        elif exp is not None:
            assert row is not None  # exp is read from the row
            em = measure(up, exp, "links", "at_least", f"GPU {g.id} NVLink links Up (expected on {row['sku']})")
            if up >= exp:
                passed.append(Msg("GPU {id} {up}/{exp} Up", id=g.id, up=up, exp=exp))
                up_m.append(em)
            elif mode == "bridge_optional" and up == 0:
                findings.append(Finding(fid, Verdict.WARN, Msg("GPU {id}: {counts}; on {sku} that means no NVLink bridge, or a bridge that is down (DCGM "
                                                               "also reports bridge-less PCIe cards as Down)", id=g.id, counts=counts, sku=row['sku']), subj, ev, _nvlink_remedy(mode), f"{SRC_NVLINK}; {SRC_DCGM_FALSE}"))
            else:
                findings.append(Finding(fid, Verdict.FAIL, Msg("GPU {id}: {counts}; {sku} expects {exp} Up", id=g.id, counts=counts, sku=row['sku'], exp=exp),
                                        subj, ev, _nvlink_remedy(mode), SRC_NVLINK, measured=em))
        else:
            if up == 0:
                findings.append(Finding(fid, Verdict.FAIL, Msg("GPU {id}: {counts}: NVLink is down", id=g.id, counts=counts), subj, ev,
                                        (_nvlink_remedy('bridge') + Msg(' If these are PCIe cards deliberately run without NVLink bridges, DCGM reports their links Down by design: set gpu_model in the plan so bringup can tell.')), f"{SRC_NVLINK}; {SRC_DCGM_FALSE}"))
            elif up < most:
                findings.append(Finding(fid, Verdict.FAIL, Msg("GPU {id}: {counts}, fewer than the {most} Up on this node's other GPUs", id=g.id, counts=counts, most=most), subj, ev, _nvlink_remedy("all"), SRC_NVLINK,
                                        measured=measure(up, most, "links", "at_least", f"GPU {g.id} NVLink links Up "
                                                         "(the most on this node's other GPUs)")))
            else:
                passed.append(Msg("GPU {id} {up}/{exp} Up", id=g.id, up=up, exp=slots))
                up_m.append(measure(up, most, "links", "at_least",
                                    f"GPU {g.id} NVLink links Up (the most on this node's other GPUs)"))
    if passed:
        findings.append(Finding(fid, Verdict.PASS, (Msg('NVLink links Up as expected: ') + SEMICOLON.join(passed[:8]) + (' ...' if len(passed) > 8 else '')), "host",
                                tuple(x for g in d.gpus[:8] for x in g.lines), "", SRC_NVLINK, measured=tightest(up_m)))
    return findings


SRC_A3 = ("NVIDIA Fabric Manager user guide, "
          "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/ (GPUs finish fabric "
          "registration only with nvidia-fabricmanager running at the driver's exact version; 'In Progress' "
          "= Fabric Manager not running)")


def fabric(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        state = g.text("fabric.state")
        if state is None or state.lower() in ("not supported", "none"):
            continue
        status = g.text("fabric.status") or ""
        keys = [k for k in g.fields if k.startswith("fabric.")]
        lines = [g.fields[k].line for k in keys if g.text(k) is not None]
        remedy = (Msg("Start Fabric Manager and enable it at boot (`sudo systemctl enable --now nvidia-fabricmanager`); its version must equal the driver's exactly. On NVLink5 systems (B200) it also needs NVLSM and the ib_umad module. Then reset the GPUs or reboot and check that State reads Completed."))
        summary = (g.text("fabric.health.summary") or "").lower()
        degraded = [g.line(k) for k in ("fabric.health.bandwidth", "fabric.health.route_unhealthy",
                                        "fabric.health.route_recovery_in_progress",
                                        "fabric.health.access_timeout_recovery")
                    if re.search(r"degraded|true|yes", g.text(k) or "", re.IGNORECASE)]
        if state.lower() != "completed":
            out.append(Finding("health.fabric", Verdict.FAIL,
                               Msg("{subject}: NVLink fabric registration is '{state}', not Completed: Fabric Manager is not "
                                   "running or does not match the driver", subject=subject(g), state=state), subject(g), _ev(g, lines), remedy, SRC_A3))
        elif status.lower() != "success":
            out.append(Finding("health.fabric", Verdict.FAIL,
                               Msg("{subject}: NVLink fabric registration completed with status '{status}'", subject=subject(g), status=status), subject(g),
                               _ev(g, lines), (remedy + Msg(' Read `journalctl -u nvidia-fabricmanager` for the error.')),
                               SRC_A3))
        elif summary == "unhealthy" or degraded or summary == "limited capacity":
            v = Verdict.FAIL if summary == "unhealthy" else Verdict.WARN
            out.append(Finding("health.fabric", v, Msg("{subject}: NVLink fabric health is degraded", subject=subject(g)), subject(g),
                               _ev(g, lines, degraded),
                               "Read `nvidia-smi nvlink -s` and `journalctl -u nvidia-fabricmanager`; reset the GPUs "
                               "or reboot, and involve the vendor if links stay degraded.",
                               SRC_A3 + "; NVML nvmlGpuFabricInfo health mask"))
        else:
            ok.append((g, "", lines[:2]))
    out += _pass_group("health.fabric", ok, N_("NVLink fabric registration Completed / Success"),
                       N_("NVLink fabric registration Completed / Success on {n} GPUs"), SRC_A3, total=len(doc.gpus))
    return out
