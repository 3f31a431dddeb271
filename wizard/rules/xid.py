"""Xid events from the kernel log: their verdict by severity class, Xid 154's recovery action, a GPU
fallen off the bus and GSP timeouts.

* Verdict by the severity class of the code (``assets/xid.csv`` -> ``assets/xid_severity.csv``),
  refined by words in the line itself for the NVLink5 codes (``assets/xid_text_severity.csv``:
  'Fatal' / 'Nonfatal'); codes not in the table warn with "look it up in the catalog".
* Xid 154 reports the recovery action the driver asks for (``assets/xid154_actions.csv``).
* Xid 45 that names the Xid it follows is judged as that Xid (the catalog: "not solo: follow the
  other Xid"). An Xid 45 caused by (or following, on the same GPU) an NVLink Xid (74, 144-150) means
  NVLink errors killed the workload: fail on every GPU it hit (reset, check the links, re-validate).
* "fallen off the bus" without an Xid number: fail, remedy as Xid 79 (bare-metal power cycle).
* GSP RPC timeouts: fail (the Xid 119 class).

Acknowledgement and the boot filter are the kernel-log check's (:mod:`wizard.rules.kernel_log`):
this module judges the events it is handed.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Mapping

from wizard.data import table
from wizard.model import Finding, Verdict
from wizard.parsers.kernellog import KernelEvent, KernelLog
from wizard.rules.kernel_log_common import cap, gpu_name, plural
from wizard.i18n import Msg

XID_CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SRC_XID = f"NVIDIA Xid catalog ({XID_CATALOG_URL})"
SRC_NV_STATUS = ("NVIDIA open-gpu-kernel-modules, src/common/sdk/nvidia/inc/nvstatuscodes.h (NV_ERR_GPU_IS_LOST "
                 "0x0000000F, 'GPU lost from the bus'; https://github.com/NVIDIA/open-gpu-kernel-modules)")

SEVERITY_VERDICT = {"fail": Verdict.FAIL, "warn": Verdict.WARN, "pass": Verdict.PASS, "skip": Verdict.SKIP,
                    "unknown": Verdict.UNKNOWN}


# ------------------------------------------------------------------ reference tables


def xid_rows() -> dict[int, dict[str, str]]:
    """assets/xid.csv by code."""
    out: dict[int, dict[str, str]] = {}
    for r in table("xid.csv"):
        try:
            out[int(r["code"])] = r
        except (KeyError, ValueError):
            continue
    return out


def severity_rows() -> dict[str, dict[str, str]]:
    """assets/xid_severity.csv by severity class."""
    return {r["severity"]: r for r in table("xid_severity.csv")}


def bucket_rows() -> dict[str, dict[str, str]]:
    """assets/xid_buckets.csv by bucket name."""
    return {r["bucket"]: r for r in table("xid_buckets.csv")}


def recovery_actions() -> list[dict[str, str]]:
    """assets/xid154_actions.csv rows."""
    return list(table("xid154_actions.csv"))



# ------------------------------------------------------------------ findings


def xid_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    rows = xid_rows()
    sev = severity_rows()
    buckets = bucket_rows()
    groups: "OrderedDict[tuple[str, int | None], list[KernelEvent]]" = OrderedDict()
    rec154: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    follow: "OrderedDict[tuple[str, int], list[KernelEvent]]" = OrderedDict()  # Xid 45 "caused by previous Xid N"
    for ev in events:
        if ev.kind != "xid":
            continue
        code = ev.fields.get("code")
        cause = ev.fields.get("caused_by")
        if code == 154:
            rec154.setdefault(ev.bus_id, []).append(ev)
        elif code in FOLLOWS_CAUSE and isinstance(cause, int) and cause != code:
            follow.setdefault((ev.bus_id, cause), []).append(ev)
        else:
            groups.setdefault((ev.bus_id, code), []).append(ev)
    killed = nvlink_killed(events)
    extra: dict[tuple[str, int | None], list[str]] = {}
    out: list[Finding] = []
    # fallen off the bus (or lost from it: NV_ERR_GPU_IS_LOST) without an Xid: merged into that GPU's Xid 79 if there
    # is one; one finding a GPU however many lines say it
    fell: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    for ev in events:
        if ev.kind != "gpu_fell_off":
            continue
        if (ev.bus_id, 79) in groups:
            extra.setdefault((ev.bus_id, 79), []).extend(ev.evidence)
            continue
        fell.setdefault(ev.bus_id, []).append(ev)
    row79 = rows.get(79, {})
    for bus, evs in fell.items():
        name = gpu_name(log, bus, gpu_index)
        if all(e.fields.get("lost") for e in evs):
            msg = Msg("{gpu_name} was lost from the bus: the driver's calls into it fail with NV_ERR_GPU_IS_LOST "
                      "(0x0000000F; not responding on PCIe)", gpu_name=name)
            src = "; ".join((row79.get("source", SRC_XID), SRC_NV_STATUS))
        else:
            msg = Msg("{gpu_name} has fallen off the bus (not responding on PCIe)", gpu_name=name)
            src = row79.get("source", SRC_XID) + "; NVSentinel#155 (fallen off the bus without an Xid)"
        out.append(Finding("health.gpu_bus", Verdict.FAIL, msg, name, cap([ln for e in evs for ln in e.evidence]),
                           row79.get("follow_up", ""), src))
    # GSP RPC timeouts: merged into the GPU's Xid 119/120 when present
    gsp_by_bus: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    gpus_in_log = sorted(log.gpus)
    for ev in events:
        if ev.kind != "gsp_timeout":
            continue
        bus = ev.bus_id or (gpus_in_log[0] if len(gpus_in_log) == 1 else "")
        if (bus, 119) in groups:
            extra.setdefault((bus, 119), []).extend(ev.evidence)
        elif (bus, 120) in groups:
            extra.setdefault((bus, 120), []).extend(ev.evidence)
        else:
            gsp_by_bus.setdefault(bus, []).append(ev)
    # Xid 45 that names the Xid it follows: that Xid's finding carries it, or it is judged as that Xid
    lone_follow: list[tuple[str, int, list[KernelEvent]]] = []
    for (bus, cause), evs in follow.items():
        if (bus, cause) in groups:
            extra.setdefault((bus, cause), []).extend(ln for e in evs for ln in e.evidence)
        else:
            lone_follow.append((bus, cause, evs))
    for (bus, code), evs in groups.items():
        name = gpu_name(log, bus, gpu_index)
        evidence = cap([ln for e in evs for ln in e.evidence] + extra.get((bus, code), []))
        n = len(evs)
        if code is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               Msg("{name}: {plural} cut before the Xid number", name=name, plural=plural(n, 'Xid line')), name, evidence,
                               Msg("Read the full line in the kernel log (`journalctl -k | grep -i xid`) and look the code up "
                                   "in the NVIDIA Xid catalog ({XID_CATALOG_URL}).", XID_CATALOG_URL=XID_CATALOG_URL), SRC_XID))
            continue
        row = rows.get(code)
        if row is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               Msg("{name}: Xid {code} ({plural}), a code bringup does not know", name=name, code=code, plural=plural(n, 'event')), name,
                               evidence,
                               Msg("Look Xid {code} up in the NVIDIA Xid catalog ({XID_CATALOG_URL}) and follow its "
                                   "Resolution Bucket (immediate action).", code=code, XID_CATALOG_URL=XID_CATALOG_URL), SRC_XID))
            continue
        verdict, label, remedy, source = _xid_judgement(code, row, evs, sev, buckets)
        msg = (Msg('{name}: Xid {code} {get} ({get2}), {plural}', name=name, code=code, get=row.get('name', ''), get2=Msg(row.get('description', '')), plural=plural(n, 'event')) + (Msg(': {label}', label=label) if label else ''))
        if bus in killed and (code == 45 or code in killed[bus]):
            verdict, remedy, source = Verdict.FAIL, NVLINK_KILL_REMEDY, f"{source}; {SRC_NVLINK_KILL}"
            msg += "; " + _killed_text(killed[bus])
        out.append(Finding("health.xid", verdict, msg, name, evidence, remedy, source))
    for bus, cause, evs in lone_follow:
        name = gpu_name(log, bus, gpu_index)
        evidence = cap(ln for e in evs for ln in e.evidence)
        codes = sorted({int(e.fields.get("code") or 0) for e in evs})
        what = "/".join(str(c) for c in codes)
        row = rows.get(cause)
        r45 = rows.get(codes[0], {}) if codes else {}
        find = Msg("Find the Xid {cause} line itself (`journalctl -k | grep -i xid`, it may be in an earlier part of the "
                   "log) and follow it.", cause=cause)
        if row is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               Msg("{name}: Xid {what} ({plural}) caused by previous Xid {cause}, a code bringup does not know", name=name, what=what, plural=plural(len(evs), 'event'), cause=cause), name, evidence,
                               Msg("{find} Look Xid {cause} up in the NVIDIA Xid catalog ({XID_CATALOG_URL}).", find=find, cause=cause, XID_CATALOG_URL=XID_CATALOG_URL),
                               r45.get("source", SRC_XID)))
            continue
        verdict, label, remedy, source = _xid_judgement(cause, row, [], sev, buckets)
        msg = (Msg('{name}: Xid {what} ({plural}) caused by previous Xid {cause} {get} ({get2}): judged as Xid {cause}', name=name, what=what, plural=plural(len(evs), 'event'), cause=cause, get=row.get('name', ''), get2=Msg(row.get('description', ''))) + (Msg(', {label}', label=label) if label else ''))
        remedy = (find + " " + remedy).strip() if verdict is not Verdict.PASS else ""
        source = (source + "; " + r45.get("source", SRC_XID).split(";")[0]
                  + " (Xid 45 not solo: follow the other Xid)")
        if bus in killed:
            verdict, source = Verdict.FAIL, f"{source}; {SRC_NVLINK_KILL}"
            remedy = Msg("{NVLINK_KILL_REMEDY} {find}", NVLINK_KILL_REMEDY=NVLINK_KILL_REMEDY, find=find)
            msg += "; " + _killed_text(killed[bus])
        out.append(Finding("health.xid", verdict, msg, name, evidence, remedy, source))
    if len(killed) > 1:
        names = [gpu_name(log, b, gpu_index) for b in killed]
        codes = sorted({c for cs in killed.values() for c in cs})
        out.append(Finding("health.xid", Verdict.FAIL,
                           (Msg('NVLink errors (Xid {map}) killed the workload on {n_killed} GPUs: ', map='/'.join(map(str, codes)), n_killed=len(killed)) + ', '.join(names)), f"{len(killed)} GPUs",
                           cap(ln for e in events if e.kind == "xid" and e.bus_id in killed
                               and e.fields.get("code") == 45 for ln in e.evidence[:1]),
                           NVLINK_KILL_REMEDY, SRC_NVLINK_KILL))
    for bus, evs in rec154.items():
        out.append(_xid154_finding(log, bus, evs, gpu_index))
    for bus, evs in gsp_by_bus.items():
        name = gpu_name(log, bus, gpu_index)
        row = rows.get(119, {})
        reset = any(e.fields.get("reset_required") for e in evs)
        what = (Msg("the driver's calls into the GPU fail with NV_ERR_RESET_REQUIRED: the GPU is in a state only a reset clears") if reset and all(e.fields.get('reset_required') for e in evs) else Msg("the GPU's firmware processor stopped answering the driver") + (Msg('; calls now fail with NV_ERR_RESET_REQUIRED') if reset else ''))
        out.append(Finding("health.gsp", Verdict.FAIL,
                           (Msg('{name}: ', name=name) + ('' if reset and all(e.fields.get('reset_required') for e in evs) else Msg('GSP RPC timeout, ')) + Msg("{plural}: {what}", plural=plural(len(evs), 'message'), what=what)), name,
                           cap(ln for e in evs for ln in e.evidence),
                           row.get("follow_up", "Drain the GPU, reset it or power-cycle the node."),
                           row.get("source", SRC_XID) + " (Xid 119 GSP_RPC_TIMEOUT)"))
    return out


NVLINK_XIDS = frozenset({74, 144, 145, 146, 147, 148, 149, 150})
"""NVLink error Xids in the NVIDIA Xid catalog: 74 NVLINK_ERROR (NVLink up to 4th generation) and
144-150 (NVLINK_SAW/RLW/TLW/TREX/NVLPW_CTRL/NETIR..., NVLink 5 naming)."""
SRC_NVLINK_KILL = ("NVIDIA Xid catalog (https://docs.nvidia.com/deploy/xid-errors/): Xid 45 is the driver tearing down "
                   "the channels of the processes on the GPU after an error ('caused by previous Xid N' names it); Xid "
                   "74 and 144-150 are NVLink errors (resolution: reset the GPU, check the links); nvidia-smi(1) "
                   "nvlink -e (error counters)")
NVLINK_KILL_REMEDY = (Msg("NVLink errors killed the workload: drain the GPU(s) named, reset them (`nvidia-smi -r -i <id>`, "
                      "or reboot the node), then re-validate before new jobs (all-reduce test over every GPU, DCGM diag "
                      "level 3). Check the links with `nvidia-smi nvlink -s` (all up) and `nvidia-smi nvlink -e` (error "
                      "counters, also on the peers: a failing peer or NVSwitch can hit healthy GPUs); if it repeats on "
                      "the same GPU or link, open a support case with nvidia-bug-report.sh."))


def nvlink_killed(events: list[KernelEvent]) -> "OrderedDict[str, list[int]]":
    """GPU bus id -> the NVLink Xids behind its Xid 45: an Xid 45 that says "caused by previous Xid N"
    with N an NVLink Xid (:data:`NVLINK_XIDS`), or an Xid 45 that follows an NVLink Xid on the same GPU."""
    seen: dict[str, list[int]] = {}
    out: "OrderedDict[str, list[int]]" = OrderedDict()
    for ev in events:
        if ev.kind != "xid":
            continue
        code = ev.fields.get("code")
        if code in NVLINK_XIDS:
            seen.setdefault(ev.bus_id, []).append(int(code))
            continue
        if code != 45:
            continue
        cause = ev.fields.get("caused_by")
        causes = [cause] if isinstance(cause, int) and cause in NVLINK_XIDS else (
            [] if isinstance(cause, int) else seen.get(ev.bus_id, []))
        for c in causes:
            lst = out.setdefault(ev.bus_id, [])
            if c not in lst:
                lst.append(c)
    return out


def _killed_text(codes: list[int]) -> str:
    xids = '/'.join(map(str, codes))
    return (Msg("NVLink errors (Xid {xids}) killed the workload on this GPU", xids=xids) if len(codes) > 1
            else Msg("NVLink error (Xid {xids}) killed the workload on this GPU", xids=xids))



FOLLOWS_CAUSE = frozenset({45})
"""Xid codes that, when their line names the Xid they follow ("caused by previous Xid N"), take
their verdict from Xid N: the NVIDIA Xid catalog's Xid 45 investigatory action is "Solo:
RESTART_FM; not solo: IGNORE (follow the other Xid)" (assets/xid.csv)."""


def text_severity_rows() -> list[tuple[int, int, re.Pattern[str], Verdict, str, str]]:
    """assets/xid_text_severity.csv as (code_from, code_to, pattern, verdict, meaning, source);
    rows that do not parse are skipped."""
    out = []
    for r in table("xid_text_severity.csv"):
        try:
            out.append((int(r["code_from"]), int(r["code_to"]), re.compile(r["pattern"], re.I),
                        SEVERITY_VERDICT[r["verdict"]], r.get("meaning", ""), r.get("source", "")))
        except (KeyError, ValueError, re.error):
            continue
    return out


RESET_RECURS_EVENTS = 2
"""A reset-class Xid logged this many times on one GPU has recurred: per its class (assets/xid_severity.csv, "a reset
if the event recurs", from the NVIDIA Xid catalog's RESET_GPU bucket) the GPU needs the reset now: FAIL."""


def _xid_judgement(code: int, row: Mapping[str, str], evs: list[KernelEvent], sev: Mapping[str, Mapping[str, str]],
                   buckets: Mapping[str, Mapping[str, str]]) -> tuple[Verdict, str, str, str]:
    """(verdict, label, remedy, source) for Xid ``code`` from its catalog row, refined by words in
    the lines themselves (assets/xid_text_severity.csv: NVLink5 'Fatal' / 'Nonfatal')."""
    cls = sev.get(row.get("severity", ""), sev.get("unknown", {}))
    verdict = SEVERITY_VERDICT.get(cls.get("verdict", "warn"), Verdict.WARN)
    label = {"critical": Msg("hardware-class"), "reset": Msg("needs a GPU reset"),
             "app": Msg("mostly an application fault"), "investigate": Msg("needs a look"),
             "info": Msg("informational")}.get(row.get("severity", ""), "")
    source = row.get("source", SRC_XID)
    rules = [r for r in text_severity_rows() if r[0] <= code <= r[1]]
    said: "OrderedDict[str, int]" = OrderedDict()
    line_verdicts: list[Verdict] = []
    line_source = ""
    for e in evs:
        text = str(e.fields.get("text", ""))
        for _lo, _hi, rx, v, _meaning, src in rules:
            m = rx.search(text)
            if m:
                word = m.group(0)
                said[word[:1].upper() + word[1:].lower()] = said.get(word[:1].upper() + word[1:].lower(), 0) + 1
                line_verdicts.append(v)
                line_source = src
                break
    if line_verdicts:
        verdict = max(line_verdicts, key=lambda v: v.rank)
        label = Msg("the line says {words}", words=", ".join(f"{w} ({n})" if len(said) > 1 or n > 1 else w
                                                         for w, n in said.items()))
        source = line_source + "; " + source
    elif row.get("severity") == "reset" and len(evs) >= RESET_RECURS_EVENTS and verdict.rank < Verdict.FAIL.rank:
        # the class's own rule: "a reset if the event recurs" -- it recurred, so the GPU needs it now
        verdict = Verdict.FAIL
        label = Msg("needs a GPU reset now: it recurred ({n} events)", n=len(evs))
    imm = row.get("immediate_action", "")
    bucket = buckets.get(imm, {}).get("action", "")
    remedy = row.get("follow_up", "")
    if verdict is Verdict.FAIL and line_verdicts:
        remedy = (Msg("The driver marks this error Fatal: drain the GPU (no new jobs) until the sub-code is decoded and its resolution done (often a GPU reset, RESET_GPU, in the catalog's decode sheet). ") + remedy)
    if imm and imm not in str(remedy):  # a follow-up that already weighs NVIDIA's bucket says it once
        # the bucket's words end in their own full stop: "(Restart bare metal: power-cycle the system.)", then none
        remedy += (Msg(' NVIDIA immediate action: {imm}', imm=imm) + (Msg(' ({bucket})', bucket=Msg(bucket)) if bucket else '')
                   + ('' if bucket.rstrip().endswith(".") else Msg('.')))
    if verdict is Verdict.PASS:
        remedy = ""
    return verdict, label, remedy.strip(), source


def _xid154_finding(log: KernelLog, bus: str, evs: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> Finding:
    name = gpu_name(log, bus, gpu_index)
    last = evs[-1]
    action = str(last.fields.get("action", "") or "")
    code = str(last.fields.get("action_code", "") or "").lower()
    rows = recovery_actions()
    row = next((r for r in rows if action and r.get("action", "").lower() == action.lower()), None)
    if row is None and code:
        row = next((r for r in rows if r.get("code", "").lower() == code), None)
        if row is not None and not action:
            action = row.get("action", "")
    evidence = cap(ln for e in evs for ln in e.evidence)
    xrow = xid_rows().get(154, {})
    if row is None:
        shown = action or code or "not readable"
        return Finding("health.xid", Verdict.WARN,
                       Msg("{name}: Xid 154, recovery action '{shown}' that bringup does not know", name=name, shown=shown), name, evidence,
                       Msg("Follow the action the line names; look it up in the NVIDIA Xid catalog "
                           "({XID_CATALOG_URL}).", XID_CATALOG_URL=XID_CATALOG_URL),
                       xrow.get("source", SRC_XID))
    verdict = SEVERITY_VERDICT.get(row.get("verdict", "warn"), Verdict.WARN)
    history = [str(e.fields.get("action", "") or e.fields.get("action_code", "")) for e in evs]
    msg: str = Msg("{name}: Xid 154 GPU_RECOVERY_ACTION_CHANGED: the driver asks for '{get}'", name=name, get=row.get('action', action))
    if len(history) > 1:
        msg += (Msg(' (latest of {n_history} changes: {h})', n_history=len(history), h=' -> '.join(h for h in history if h)))
    return Finding("health.xid", verdict, msg, name, evidence,
                   row.get("remedy", "") if verdict is not Verdict.PASS else "",
                   row.get("source", "") or xrow.get("source", SRC_XID))

