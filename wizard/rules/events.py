"""Health checks over kernel-log events and host memory error counters.

Rules (each finding carries its source):

* Xid (checks-catalogue B5; NVIDIA Xid catalog, assets/xid.csv): verdict by severity class
  (assets/xid_severity.csv); Xid 154 reports the recovery action the driver asks for
  (assets/xid154_actions.csv); codes not in the table warn with "look it up in the catalog".
* "fallen off the bus" without an Xid number: fail, remedy as Xid 79 (bare-metal power cycle).
* RmInitAdapter / invalid BAR / probe failures: fail. A GPU that worked before (the log shows it
  initialised, an Xid from it, or AER errors on it): the PCIe hardware path first (AER, seating,
  riser, power, cold power cycle). Otherwise the remedy gives both cases: intermittent -> that
  hardware path; never initialised -> Above 4G decoding (Resizable BAR left at the vendor default,
  knowledge.md section 3 and section 9 item 4), then a driver new enough for the GPU. BAR mapping
  failures: Above 4G decoding / VM 64-bit MMIO.
* GSP RPC timeouts: fail (the Xid 119 class).
* PCIe AER (B3): fatal or "can't recover" -> fail; uncorrected non-fatal -> warn; corrected ->
  pass (information; only growth during a stage is a warning).
* "limited by ... link at <port>" (B2): warn, naming the upstream port.
* nouveau (or another driver) holding an NVIDIA GPU: fail (blacklist, rebuild initramfs).
* Host memory (B15): UE -> fail (replace the DIMM); CE -> warn.
* Unrecognised GPU-driver error lines and kernel oops/BUG reports (B16): warn, with their keys
  so the operator can acknowledge each one.

Events whose :func:`wizard.parsers.kernellog.event_key` is in ``expectations["acknowledged"]`` do
not count; with ``expectations["boot_only"]`` true, only events of the last boot in the text
count. Both are listed in a ``skip`` finding so nothing is hidden.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from typing import Any, Iterable, Mapping

from wizard.rules.common import Outputs, missing
from wizard.common import gpu_subject
from wizard.data import table
from wizard.model import Finding, Verdict
from wizard.parsers.edac import EdacFacts, RasFacts, parse_edac_sysfs
from wizard.parsers.kernellog import KERNEL_SIGNATURES, KernelEvent, KernelLog, event_key, parse_kernel_log
from wizard.probes import ProbeOutput

XID_CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SRC_XID = f"NVIDIA Xid catalog ({XID_CATALOG_URL}); checks-catalogue B5"
SRC_B2 = ("checks-catalogue B2 (Stas Bekman ml-engineering debug.md; imbue fix_pcie_limited.sh); "
          "knowledge.md section 9 item 19 (GPUs lower PCIe link speed when idle)")
SRC_B3 = "checks-catalogue B3 (Meta GCM pcie-aer): fatal or can't recover -> FAIL, non-fatal -> WARN, corrected -> info"
SRC_B15 = ("checks-catalogue B15 (Meta GCM mce; EDAC practice): UE > 0 -> FAIL, CE -> WARN; "
           "knowledge.md section 8.1 (EDAC sysfs, rasdaemon)")
SRC_B16 = "checks-catalogue B16 (imbue dmesg whitelist): WARN on each unrecognised kernel error message"
SRC_BAR = ("knowledge.md section 3 and section 9 item 4 (Above 4G decoding on, Resizable BAR at the vendor default; "
           "GPUDirect RDMA 'PCI BAR sizes'); NVIDIA/open-gpu-kernel-modules#862 (RTX 5090 RmInitAdapter failed with the "
           "BIOS PCI settings off); NVIDIA/gpu-operator#492 (VM 64-bit MMIO settings)")
SRC_RMINIT = ("knowledge.md section 3 and section 9 item 4 (Above 4G decoding on, Resizable BAR at the vendor default), "
              "section 6 Xid 79 row (AER logs, risers, power cables, full power cycle), section 1.6 (open modules); "
              "illinois-scicomp/machine-shop-maintenance#76 (intermittent RmInitAdapter failure, only a reboot helped, "
              "IPMI PCIe bus error); NVIDIA/open-gpu-kernel-modules#862 (never initialised until the BIOS settings "
              "were changed)")
SRC_NOUVEAU = ("NVIDIA CUDA installation guide for Linux, 'Disabling Nouveau'; the NVRM message itself; "
               "beclab/Olares#3963 (nova_core holding the GPU on Ubuntu 26.04 kernels)")
SRC_MCI = ("Intel SDM Vol. 3B 'IA32_MCi_STATUS MSRs' (bit 61 UC = uncorrected, 57 PCC, 62 OVER); AMD64 APM "
           "Vol. 2 MCi_STATUS (same bits)")
SRC_CMCI = "Linux arch/x86/kernel/cpu/mce/intel.c ('CMCI storm detected': corrected-error interrupts above the storm threshold)"
SRC_GHES = "ACPI APEI GHES (kernel drivers/acpi/apei/ghes.c, CPER severities fatal/recoverable/corrected/info); " + SRC_B3

EVIDENCE_MAX = 12
"""At most this many raw lines per finding; a final line says how many more there were."""

AER_FAIL = frozenset({"fatal"})
AER_WARN = frozenset({"nonfatal"})

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


def benign_patterns() -> list[tuple[re.Pattern[str], str]]:
    """assets/kernel_log_benign.csv as compiled patterns (bad patterns are skipped)."""
    out = []
    for r in table("kernel_log_benign.csv"):
        try:
            out.append((re.compile(r["pattern"]), r.get("reason", "")))
        except (re.error, KeyError):
            continue
    return out


# ------------------------------------------------------------------ helpers


def _cap(lines: Iterable[str], n: int = EVIDENCE_MAX) -> tuple[str, ...]:
    seen = list(dict.fromkeys(lines))
    if len(seen) <= n:
        return tuple(seen)
    return tuple(seen[:n]) + (f"... {len(seen) - n} more lines like these",)


def _acknowledged(exp: Mapping[str, Any]) -> set[str]:
    ack = exp.get("acknowledged") if isinstance(exp, Mapping) else None
    if isinstance(ack, Mapping):
        return {str(k) for k in ack}
    if isinstance(ack, (set, frozenset, list, tuple)):
        return {str(k) for k in ack}
    if isinstance(ack, str) and ack:
        return {ack}
    return set()


def _gpu_name(log: KernelLog, bus: str, gpu_index: Mapping[str, int] | None) -> str:
    info = log.gpus.get(bus)
    idx = (gpu_index or {}).get(bus)
    return gpu_subject(idx, bus, info.serial if info else "") if bus else "GPU (PCI address not in the log)"


def _device_name(log: KernelLog, bus: str, gpu_index: Mapping[str, int] | None, pci_id: str = "") -> str:
    if not bus:
        return "PCIe device (address not in the log)"
    if log.is_nvidia_gpu(bus):
        return _gpu_name(log, bus, gpu_index)
    pid = pci_id or log.pci_ids.get(bus, "")
    return f"PCIe device {bus}" + (f" [{pid}]" if pid else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ------------------------------------------------------------------ kernel log


def judge_kernel_log_text(text: str, expectations: Mapping[str, Any]) -> list[Finding]:
    """``bringup explain`` entry: parse a pasted kernel log and judge it."""
    return judge_kernel_log(parse_kernel_log(text), expectations, "pasted kernel log")


def judge_kernel_log(log: KernelLog, expectations: Mapping[str, Any], source: str = "kernel log",
                     gpu_index: Mapping[str, int] | None = None) -> list[Finding]:
    """Findings for one parsed kernel log. ``gpu_index`` maps PCI bus id ("0000:9b:00.0") to the
    GPU index (from NVML) so subjects can name it. Never raises."""
    exp = expectations if isinstance(expectations, Mapping) else {}
    try:
        return _judge_kernel_log(log, exp, source, gpu_index)
    except Exception as exc:  # noqa: BLE001 - a judge must not crash the stage
        return [Finding("health.kernel_log", Verdict.UNKNOWN, f"could not judge the kernel log: {exc!r}", "host",
                        _cap(r.raw[0] for r in log.records[:5]),
                        "This is a bringup bug: please report it with the log.", SRC_B5_ONLY)]


SRC_B5_ONLY = "checks-catalogue B5, B16"


def _judge_kernel_log(log: KernelLog, exp: Mapping[str, Any], source: str,
                      gpu_index: Mapping[str, int] | None) -> list[Finding]:
    if not log.records:
        return [Finding("health.kernel_log", Verdict.UNKNOWN, "could not tell: no kernel messages in the input",
                        "host", (source, "(no readable kernel log lines)"),
                        "Read the kernel log as root (or as a member of the adm / systemd-journal group): "
                        "`journalctl -k -b` or `dmesg`.", SRC_B5_ONLY)]
    if not log.formats and not log.events and not any(KERNEL_SIGNATURES.search(r.msg) for r in log.records):
        return [Finding("health.kernel_log", Verdict.UNKNOWN, "could not read this as a kernel log: no kernel "
                        "timestamps and no kernel messages", "host", _cap([source] + [r.raw[0] for r in log.records]),
                        "Paste the raw output of `journalctl -k -b` or `dmesg`.", SRC_B5_ONLY)]
    ack = _acknowledged(exp)
    boot_only = bool(exp.get("boot_only"))
    counted: list[KernelEvent] = []
    acked: list[KernelEvent] = []
    earlier: list[KernelEvent] = []
    for ev in log.events:
        if boot_only and ev.boot != log.last_boot:
            earlier.append(ev)
        elif event_key(ev) in ack:
            acked.append(ev)
        else:
            counted.append(ev)
    cause = next((e for e in counted if e.kind in ("driver_conflict", "gpu_fell_off")
                  or (e.kind == "gpu_init" and e.bus_id and e.fields.get("what") != "bar_assign")), None)
    if cause is not None:
        # "The NVIDIA probe routine failed" / "No NVIDIA devices probed" after a conflict, a GPU that
        # fell off the bus or a named GPU's init failure is its consequence, not a second problem
        absorbed = [e for e in counted if e.kind == "gpu_init" and not e.bus_id
                    and e.fields.get("what") == "nvrm_probe_failed"]
        merged = dataclasses.replace(cause, evidence=list(dict.fromkeys(
            list(cause.evidence) + [ln for e in absorbed for ln in e.evidence])))
        gone = {id(e) for e in absorbed}
        counted = [merged if e is cause else e for e in counted if id(e) not in gone]
    findings: list[Finding] = []
    findings += _xid_findings(log, counted, gpu_index)
    findings += _init_findings(log, counted, gpu_index)
    findings += _conflict_findings(log, counted, gpu_index, exp)
    findings += _aer_findings(log, counted, gpu_index)
    findings += _limited_findings(log, counted, gpu_index)
    findings += _memory_findings(log, counted)
    findings += _unrecognised_findings(log, counted)
    findings = _with_keys(findings, counted)
    if acked or earlier:
        parts = []
        if acked:
            parts.append(f"{len(acked)} acknowledged by the operator")
        if earlier:
            parts.append(f"{len(earlier)} from earlier boots")
        ev_lines = [f"{event_key(e)}: {e.record.raw[0]}" for e in (acked + earlier)]
        findings.append(Finding("health.kernel_log_ignored", Verdict.SKIP,
                                f"{_plural(len(acked) + len(earlier), 'kernel log event')} not counted: "
                                + ", ".join(parts), "host", _cap(ev_lines), "", SRC_B5_ONLY))
    if not any(f.verdict is not Verdict.SKIP for f in findings):
        fmts = ", ".join(sorted(log.formats)) or "bare lines"
        findings.insert(0, Finding(
            "health.kernel_log", Verdict.PASS,
            f"no Xid, AER, EDAC/MCE, GPU-initialisation or driver-conflict errors in "
            f"{_plural(log.lines, 'kernel log line')} ({fmts})", "host",
            (source, log.records[0].raw[0], log.records[-1].raw[-1]) if log.records else (source,),
            "", SRC_B5_ONLY))
    return findings


def _with_keys(findings: list[Finding], events: list[KernelEvent]) -> list[Finding]:
    """Give each warn/fail finding the keys of the events it rests on (comma-separated), so the
    operator can acknowledge exactly those events (``bringup ack``, TUI ``x``)."""
    by_line: dict[str, str] = {}
    for e in events:
        if e.record.raw:
            by_line.setdefault(e.record.raw[0], event_key(e))
    out = []
    for f in findings:
        if f.verdict in (Verdict.FAIL, Verdict.WARN) and not f.key:
            keys = sorted({by_line[ln] for ln in f.evidence if ln in by_line})
            if keys:
                f = dataclasses.replace(f, key=",".join(keys))
        out.append(f)
    return out


# ---- Xid, fallen off the bus, GSP


def _xid_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
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
    extra: dict[tuple[str, int | None], list[str]] = {}
    out: list[Finding] = []
    # fallen off the bus without an Xid: merged into that GPU's Xid 79 if there is one
    for ev in events:
        if ev.kind != "gpu_fell_off":
            continue
        if (ev.bus_id, 79) in groups:
            extra.setdefault((ev.bus_id, 79), []).extend(ev.evidence)
            continue
        row = rows.get(79, {})
        out.append(Finding("health.gpu_bus", Verdict.FAIL,
                           f"{_gpu_name(log, ev.bus_id, gpu_index)} has fallen off the bus (not responding on PCIe)",
                           _gpu_name(log, ev.bus_id, gpu_index), _cap(ev.evidence), row.get("follow_up", ""),
                           row.get("source", SRC_XID) + "; NVSentinel#155 (fallen off the bus without an Xid)"))
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
        name = _gpu_name(log, bus, gpu_index)
        evidence = _cap([ln for e in evs for ln in e.evidence] + extra.get((bus, code), []))
        n = len(evs)
        if code is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               f"{name}: {_plural(n, 'Xid line')} cut before the Xid number", name, evidence,
                               f"Read the full line in the kernel log (`journalctl -k | grep -i xid`) and look the "
                               f"code up in the NVIDIA Xid catalog ({XID_CATALOG_URL}).", SRC_XID))
            continue
        row = rows.get(code)
        if row is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               f"{name}: Xid {code} ({_plural(n, 'event')}), a code bringup does not know", name,
                               evidence,
                               f"Look Xid {code} up in the NVIDIA Xid catalog ({XID_CATALOG_URL}) and follow its "
                               f"Resolution Bucket (immediate action).", SRC_XID))
            continue
        verdict, label, remedy, source = _xid_judgement(code, row, evs, sev, buckets)
        out.append(Finding("health.xid", verdict,
                           f"{name}: Xid {code} {row.get('name', '')} ({row.get('description', '')}), "
                           f"{_plural(n, 'event')}" + (f": {label}" if label else ""),
                           name, evidence, remedy, source))
    for bus, cause, evs in lone_follow:
        name = _gpu_name(log, bus, gpu_index)
        evidence = _cap(ln for e in evs for ln in e.evidence)
        codes = sorted({int(e.fields.get("code") or 0) for e in evs})
        what = "/".join(str(c) for c in codes)
        row = rows.get(cause)
        r45 = rows.get(codes[0], {}) if codes else {}
        find = (f"Find the Xid {cause} line itself (`journalctl -k | grep -i xid`, it may be in an earlier part of the "
                f"log) and follow it.")
        if row is None:
            out.append(Finding("health.xid", Verdict.WARN,
                               f"{name}: Xid {what} ({_plural(len(evs), 'event')}) caused by previous Xid {cause}, a "
                               f"code bringup does not know", name, evidence,
                               f"{find} Look Xid {cause} up in the NVIDIA Xid catalog ({XID_CATALOG_URL}).",
                               r45.get("source", SRC_XID)))
            continue
        verdict, label, remedy, source = _xid_judgement(cause, row, [], sev, buckets)
        out.append(Finding("health.xid", verdict,
                           f"{name}: Xid {what} ({_plural(len(evs), 'event')}) caused by previous Xid {cause} "
                           f"{row.get('name', '')} ({row.get('description', '')}): judged as Xid {cause}"
                           + (f", {label}" if label else ""),
                           name, evidence, (find + " " + remedy).strip() if verdict is not Verdict.PASS else "",
                           source + "; " + r45.get("source", SRC_XID).split(";")[0]
                           + " (Xid 45 not solo: follow the other Xid); knowledge.md section 6"))
    for bus, evs in rec154.items():
        out.append(_xid154_finding(log, bus, evs, gpu_index))
    for bus, evs in gsp_by_bus.items():
        name = _gpu_name(log, bus, gpu_index)
        row = rows.get(119, {})
        out.append(Finding("health.gsp", Verdict.FAIL,
                           f"{name}: GSP RPC timeout ({_plural(len(evs), 'message')}): the GPU's firmware processor "
                           f"stopped answering the driver", name, _cap(ln for e in evs for ln in e.evidence),
                           row.get("follow_up", "Drain the GPU, reset it or power-cycle the node."),
                           row.get("source", SRC_XID) + " (Xid 119 GSP_RPC_TIMEOUT)"))
    return out


FOLLOWS_CAUSE = frozenset({45})
"""Xid codes that, when their line names the Xid they follow ("caused by previous Xid N"), take
their verdict from Xid N: the NVIDIA Xid catalog's Xid 45 investigatory action is "Solo:
RESTART_FM; not solo: IGNORE (follow the other Xid)" (assets/xid.csv; knowledge.md section 6)."""


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


def _xid_judgement(code: int, row: Mapping[str, str], evs: list[KernelEvent], sev: Mapping[str, Mapping[str, str]],
                   buckets: Mapping[str, Mapping[str, str]]) -> tuple[Verdict, str, str, str]:
    """(verdict, label, remedy, source) for Xid ``code`` from its catalog row, refined by words in
    the lines themselves (assets/xid_text_severity.csv: NVLink5 'Fatal' / 'Nonfatal')."""
    cls = sev.get(row.get("severity", ""), sev.get("unknown", {}))
    verdict = SEVERITY_VERDICT.get(cls.get("verdict", "warn"), Verdict.WARN)
    label = {"critical": "hardware-class", "reset": "needs a GPU reset", "app": "mostly an application fault",
             "investigate": "needs a look", "info": "informational"}.get(row.get("severity", ""), "")
    source = row.get("source", SRC_XID)
    rules = [r for r in text_severity_rows() if r[0] <= code <= r[1]]
    said: "OrderedDict[str, int]" = OrderedDict()
    line_verdicts: list[Verdict] = []
    line_source = ""
    for e in evs:
        text = str(e.fields.get("text", ""))
        for _lo, _hi, rx, v, meaning, src in rules:
            m = rx.search(text)
            if m:
                word = m.group(0)
                said[word[:1].upper() + word[1:].lower()] = said.get(word[:1].upper() + word[1:].lower(), 0) + 1
                line_verdicts.append(v)
                line_source = src
                break
    if line_verdicts:
        verdict = max(line_verdicts, key=lambda v: v.rank)
        label = "the line says " + ", ".join(f"{w} ({n})" if len(said) > 1 or n > 1 else w for w, n in said.items())
        source = line_source + "; " + source
    imm = row.get("immediate_action", "")
    bucket = buckets.get(imm, {}).get("action", "")
    remedy = row.get("follow_up", "")
    if verdict is Verdict.FAIL and line_verdicts:
        remedy = ("The driver marks this error Fatal: drain the GPU (no new jobs) until the sub-code is decoded and "
                  "its resolution done (often a GPU reset, RESET_GPU, in the catalog's decode sheet). " + remedy)
    if imm:
        remedy += f" NVIDIA immediate action: {imm}" + (f" ({bucket})" if bucket else "") + "."
    if verdict is Verdict.PASS:
        remedy = ""
    return verdict, label, remedy.strip(), source


def _xid154_finding(log: KernelLog, bus: str, evs: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> Finding:
    name = _gpu_name(log, bus, gpu_index)
    last = evs[-1]
    action = str(last.fields.get("action", "") or "")
    code = str(last.fields.get("action_code", "") or "").lower()
    rows = recovery_actions()
    row = next((r for r in rows if action and r.get("action", "").lower() == action.lower()), None)
    if row is None and code:
        row = next((r for r in rows if r.get("code", "").lower() == code), None)
        if row is not None and not action:
            action = row.get("action", "")
    evidence = _cap(ln for e in evs for ln in e.evidence)
    xrow = xid_rows().get(154, {})
    if row is None:
        shown = action or code or "not readable"
        return Finding("health.xid", Verdict.WARN,
                       f"{name}: Xid 154, recovery action '{shown}' that bringup does not know", name, evidence,
                       f"Follow the action the line names; look it up in the NVIDIA Xid catalog ({XID_CATALOG_URL}).",
                       xrow.get("source", SRC_XID))
    verdict = SEVERITY_VERDICT.get(row.get("verdict", "warn"), Verdict.WARN)
    history = [str(e.fields.get("action", "") or e.fields.get("action_code", "")) for e in evs]
    msg = f"{name}: Xid 154 GPU_RECOVERY_ACTION_CHANGED: the driver asks for '{row.get('action', action)}'"
    if len(history) > 1:
        msg += f" (latest of {len(history)} changes: {' -> '.join(h for h in history if h)})"
    return Finding("health.xid", verdict, msg, name, evidence,
                   row.get("remedy", "") if verdict is not Verdict.PASS else "",
                   row.get("source", "") or xrow.get("source", SRC_XID))


# ---- GPU initialisation (RmInitAdapter, BARs, probe failures)

BAR_REMEDY = (
    "The GPU's memory windows (PCI BARs) could not be mapped. Enable 'Above 4G Decoding' (64-bit MMIO) in the BIOS "
    "and leave Resizable BAR at the vendor default, then cold-boot and check again. In a VM, give the guest enough "
    "64-bit MMIO space (UEFI/OVMF firmware; on VMware pciPassthru.use64bitMMIO=TRUE and pciPassthru.64bitMMIOSizeGB).")
RMINIT_HW_PATH = (
    "check the hardware path first: PCIe AER errors on the GPU and its upstream port (`journalctl -k | grep -i aer`, "
    "and the BMC event log), then reseat the GPU, its riser and its auxiliary power cables, and cold power-cycle the "
    "node (power off at the PSUs, not only a reboot); if it fails again in the same slot, swap slots to tell a bad card "
    "from a bad slot, and RMA the card if the failure follows it")
RMINIT_NEVER = (
    "enable 'Above 4G Decoding' (64-bit MMIO) in the BIOS, leaving Resizable BAR at the vendor default; then make sure "
    "the installed driver is new enough for this GPU (Blackwell and Grace Hopper need the open kernel modules) and "
    "that nouveau is not loaded")
RMINIT_REMEDY = (
    "The NVIDIA driver could not initialise the GPU (RmInitAdapter failed). If this GPU worked before or the failure "
    "comes and goes (only a reboot helps), " + RMINIT_HW_PATH + ". If it never initialised on this host, "
    + RMINIT_NEVER + ". If it persists, collect `nvidia-bug-report.sh` for the vendor.")
"""RmInitAdapter remedy when the log does not show whether the GPU ever worked: the intermittent
(hardware path) case first, then the never-initialised (BIOS Above 4G decoding, driver support)
case. Sources: knowledge.md section 3 and section 9 item 4 (Above 4G decoding on; Resizable BAR at
the vendor default), section 6 Xid 79 row (AER logs, risers, power cables; full power cycle),
section 1.6 (open modules for Blackwell / Grace Hopper); illinois-scicomp/machine-shop-maintenance#76
(intermittent RmInitAdapter failure on a Titan V that only a reboot cleared, with an IPMI PCIe bus
error); NVIDIA/open-gpu-kernel-modules#862 (RTX 5090 that never initialised until Above 4G
decoding was enabled)."""
RMINIT_REMEDY_WORKED = (
    "The NVIDIA driver could not initialise this GPU (RmInitAdapter failed), and the log shows it worked before "
    "(or PCIe errors on it), so the BIOS and driver are not the first suspects: " + RMINIT_HW_PATH
    + ". If it persists, collect `nvidia-bug-report.sh` for the vendor.")
"""RmInitAdapter remedy when the same log shows the GPU initialised (``NVRM: GPU at PCI:...`` with
its UUID, or an Xid from it) or PCIe AER errors on it (same sources as :data:`RMINIT_REMEDY`)."""


def _init_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    evs = [e for e in events if e.kind == "gpu_init"]
    if not evs:
        return []
    by_bus: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    hostwide: list[KernelEvent] = []
    for e in evs:
        if e.fields.get("what") == "bar_assign" and not log.is_nvidia_gpu(e.bus_id):
            # BAR assignment trouble on a bridge/port: only a hint for an NVIDIA failure below it
            hostwide.append(e)
            continue
        if e.bus_id:
            by_bus.setdefault(e.bus_id, []).append(e)
        else:
            hostwide.append(e)
    real_host = [e for e in hostwide if e.fields.get("what") != "bar_assign"]
    if not by_bus and real_host:
        by_bus[""] = []
    out: list[Finding] = []
    for bus, group in by_bus.items():
        members = group + (hostwide if len(by_bus) == 1 else real_host if bus == "" else [])
        whats = {e.fields.get("what") for e in members}
        hard = whats & {"rminit", "bar_invalid", "probe_failed", "nvrm_probe_failed"}
        bar = any(e.fields.get("hint") == "bar" for e in members)
        name = _gpu_name(log, bus, gpu_index) if bus else "host"
        ordered = sorted(members, key=lambda e: e.record.line_no)
        evidence = _cap(ln for e in ordered for ln in e.evidence)
        if hard:
            what = []
            if "rminit" in whats:
                what.append("RmInitAdapter failed")
            if "bar_invalid" in whats:
                what.append("its PCI BAR region is invalid")
            if "probe_failed" in whats or "nvrm_probe_failed" in whats:
                what.append("the NVIDIA probe failed")
            subject = name
            msg = (f"{name}: the NVIDIA driver could not initialise the GPU ({'; '.join(what)})" if bus else
                   f"the NVIDIA driver could not initialise a GPU ({'; '.join(what)})")
            worked = bool(bus) and _worked_before(log, bus)
            remedy = BAR_REMEDY if bar else RMINIT_REMEDY_WORKED if worked else RMINIT_REMEDY
            out.append(Finding("health.gpu_init", Verdict.FAIL, msg, subject, evidence, remedy,
                               SRC_BAR if bar else SRC_RMINIT))
        elif bus and any(e.fields.get("what") == "bar_assign" and not e.fields.get("resolved") for e in members):
            out.append(Finding("health.gpu_init", Verdict.WARN,
                               f"{name}: the kernel could not assign all of the GPU's PCI BARs (memory windows)",
                               name, evidence, BAR_REMEDY, SRC_BAR))
    return out


def _worked_before(log: KernelLog, bus: str) -> bool:
    """The log shows GPU ``bus`` initialised at some point (``NVRM: GPU at PCI:<bus>: GPU-<uuid>``,
    printed when the driver brings a GPU up, or an Xid from it), or PCIe AER errors on it."""
    info = log.gpus.get(bus)
    if info is not None and info.uuid:
        return True
    for e in log.events:
        if e.kind == "xid" and e.bus_id == bus:
            return True
        if e.kind == "aer" and bus in (e.bus_id, e.fields.get("source"), e.fields.get("affects_gpu")):
            return True
    return False


# ---- driver conflicts


PASSTHROUGH_DRIVERS = ("vfio-pci", "vfio_pci", "pci-stub", "pci_stub")
"""Drivers that hold a GPU on purpose for VM passthrough (not a conflict to blacklist away)."""


def _conflict_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None,
                       exp: Mapping[str, Any] | None = None) -> list[Finding]:
    evs = [e for e in events if e.kind == "driver_conflict"]
    if not evs:
        return []
    passthrough = [e for e in evs if str(e.fields.get("driver", "")).lower() in PASSTHROUGH_DRIVERS]
    evs = [e for e in evs if e not in passthrough]
    out: list[Finding] = []
    for e in passthrough:
        name = _gpu_name(log, e.bus_id, gpu_index)
        hosts_vms = bool((exp or {}).get("virtualization"))
        out.append(Finding("health.driver_conflict", Verdict.WARN if hosts_vms else Verdict.FAIL,
                           f"{name} is bound to {e.fields.get('driver')} (reserved for VM passthrough), so the NVIDIA "
                           f"driver cannot use it", name, _cap(e.evidence),
                           "If this node should train on the GPU itself, remove its vfio-pci binding (vfio-pci.ids= on "
                           "the kernel command line or in /etc/modprobe.d), rebuild the initramfs and reboot; if the GPU "
                           "is meant for a VM, this is expected.", SRC_NOUVEAU))
    if not evs:
        return out
    drivers = sorted({str(e.fields.get("driver")) for e in evs if e.fields.get("driver")})
    buses = sorted({e.bus_id for e in evs if e.bus_id})
    n_dev = max([int(e.fields.get("devices", 0) or 0) for e in evs] + [len(buses)])
    evidence = _cap(ln for e in evs for ln in e.evidence)
    who = ", ".join(drivers) if drivers else "nouveau, rivafb, nvidiafb or rivatv"
    subject = _gpu_name(log, buses[0], gpu_index) if len(buses) == 1 else "host"
    where = (_plural(n_dev, "GPU") if n_dev else "the GPUs") + (f" ({', '.join(buses)})" if buses else "")
    block = ["nouveau"] + [d for d in drivers if d.lower() not in ("nouveau",)]
    if any(d.lower().startswith("nova") for d in drivers):
        block += ["nova_core", "nova_drm"]
    block = list(dict.fromkeys(b for b in block if not b.lower().startswith("novacore")))
    lines = " + ".join(f"'blacklist {b}'" for b in block)
    remedy = (f"Stop {who} from claiming the GPUs: put {lines} (and 'options nouveau modeset=0') in a file under "
              f"/etc/modprobe.d/, rebuild the initramfs (`update-initramfs -u` on Debian/Ubuntu, `dracut -f` on "
              f"RHEL-family), reboot, then load the NVIDIA driver (`modprobe nvidia`) and check `nvidia-smi`.")
    out.append(Finding("health.driver_conflict", Verdict.FAIL,
                       f"another driver ({who}) holds {where}, so the NVIDIA driver cannot use "
                       f"{'it' if n_dev == 1 else 'them'}", subject, evidence, remedy, SRC_NOUVEAU))
    return out


# ---- PCIe AER (kernel AER lines and firmware-first APEI GHES PCIe records)

_AER_WORDS = {"fatal": "uncorrected fatal", "nonfatal": "uncorrected non-fatal", "corrected": "corrected"}


def _aer_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    groups: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    for e in events:
        if e.kind == "aer":
            dev = e.fields.get("source") or e.bus_id
            groups.setdefault(dev, []).append(e)
        elif e.kind == "ghes" and "pcie" in str(e.fields.get("section", "")):
            groups.setdefault(e.bus_id, []).append(e)
    out: list[Finding] = []
    for dev, evs in groups.items():
        sevs = [str(e.fields.get("severity") or "nonfatal") for e in evs]
        failed = any(e.fields.get("recovery_failed") for e in evs)
        if failed or any(s in AER_FAIL for s in sevs):
            verdict = Verdict.FAIL
        elif any(s in AER_WARN for s in sevs):
            verdict = Verdict.WARN
        else:
            verdict = Verdict.PASS
        worst_sev = "fatal" if verdict is Verdict.FAIL else "nonfatal" if verdict is Verdict.WARN else "corrected"
        pci_id = next((str(e.fields.get("pci_id")) for e in evs if e.fields.get("pci_id")), "")
        gpu = next((str(e.fields.get("affects_gpu")) for e in evs if e.fields.get("affects_gpu")), "")
        port = next((str(e.fields.get("port")) for e in evs if e.fields.get("port")), "")
        is_gpu = bool(dev) and log.is_nvidia_gpu(dev)
        subject = _gpu_name(log, gpu, gpu_index) if (gpu and not is_gpu) else _device_name(log, dev, gpu_index, pci_id)
        where = _device_name(log, dev, gpu_index, pci_id)
        types = sorted({str(e.fields.get("type")) for e in evs if e.fields.get("type")})
        names = sorted({n for e in evs for n in e.fields.get("errors", [])})
        firmware = any(e.kind == "ghes" for e in evs)
        detail = ", ".join(types + [f"'{n}'" for n in names])
        msg = (f"{_plural(len(evs), 'PCIe ' + ('firmware-reported (APEI) ' if firmware else 'AER ') + 'error')} "
               f"on {where}, worst {_AER_WORDS[worst_sev]}" + (f" ({detail})" if detail else ""))
        if failed:
            msg += "; the kernel could not recover the device"
        if port and port != dev:
            msg += f"; reported by upstream port {port}"
        if gpu and gpu != dev:
            msg += f"; the GPU below it is {gpu}"
        if verdict is Verdict.FAIL:
            remedy = ("A fatal PCIe error took this link down. Power-cycle, then reseat the device and its riser/cables "
                      "under this port, check its power and cooling, and update BIOS/firmware; if it repeats in the same "
                      "slot, move the card to another slot to tell a bad card from a bad slot.")
        elif verdict is Verdict.WARN:
            remedy = ("Uncorrected (non-fatal) PCIe errors: watch whether they repeat (`journalctl -k | grep -i aer`, "
                      "/sys/bus/pci/devices/<bdf>/aer_dev_nonfatal); reseat the device and riser, check cables, update "
                      "BIOS/firmware.")
        else:
            remedy = ""
            msg += " (information: corrected errors matter only if their count grows during a stage)"
        out.append(Finding("health.aer", verdict, msg, subject, _cap(ln for e in evs for ln in e.evidence), remedy,
                           SRC_GHES if firmware else SRC_B3))
    return out


# ---- PCIe bandwidth limited by an upstream link


def _num(s: Any) -> float:
    try:
        return float(s)
    except (TypeError, ValueError):
        return 0.0


def _limited_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    out = []
    seen: set[str] = set()
    for e in events:
        if e.kind != "pcie_limited" or e.bus_id in seen:
            continue
        seen.add(e.bus_id)
        f = e.fields
        name = _device_name(log, e.bus_id, gpu_index)
        port = f.get("port") or "an upstream port"
        msg = (f"{name}: {f.get('avail_gbit_s')} Gb/s available PCIe bandwidth, limited by {f.get('speed_gts')} GT/s "
               f"x{f.get('width')} at upstream port {port}")
        if f.get("cap_gbit_s"):
            msg += f" (capable of {f.get('cap_gbit_s')} Gb/s with {f.get('cap_speed_gts')} GT/s x{f.get('cap_width')})"
        narrow = f.get("cap_width") and _num(f.get("width")) < _num(f.get("cap_width"))
        if narrow:
            remedy = (f"The link trained narrower (x{f.get('width')}) than the device can (x{f.get('cap_width')}): "
                      f"reseat the card and riser, check that the slot behind port {port} is wired x{f.get('cap_width')} "
                      f"(some x16 slots are x8 electrically) and the BIOS bifurcation setting for that port.")
        else:
            remedy = (f"The link trained at a lower speed than the device supports. GPUs lower their link speed when "
                      f"idle, so confirm under load (`nvidia-smi -q -d PCIE` 'Link Gen Current', or lspci LnkSta while a "
                      f"job runs); if it stays low, check the BIOS PCIe speed setting for port {port}, risers/retimers, "
                      f"and reseat.")
        out.append(Finding("health.pcie_limited", Verdict.WARN, msg, name, _cap(e.evidence), remedy, SRC_B2))
    return out


# ---- host memory and other hardware errors


def _memory_findings(log: KernelLog, events: list[KernelEvent]) -> list[Finding]:
    out: list[Finding] = []
    edac: "OrderedDict[tuple[int, str], dict[str, Any]]" = OrderedDict()
    for e in events:
        if e.kind != "edac":
            continue
        key = (int(e.fields.get("mc", 0)), str(e.fields.get("label", "")))
        g = edac.setdefault(key, {"ce": 0, "ue": 0, "ev": []})
        g["ue" if e.fields.get("type") == "UE" else "ce"] += int(e.fields.get("count", 1) or 1)
        g["ev"].extend(e.evidence)
    mce = [e for e in events if e.kind == "mce"]
    # a decoded machine-check record that an EDAC driver printed for a memory controller whose CE/UE
    # line is also in the log is that line's detail, not a second error
    edac_mcs = {int(e.fields.get("mc", -1)) for e in events if e.kind == "edac"}
    mce_detail: dict[int, list[str]] = {}
    for e in list(mce):
        mc = e.fields.get("mc")
        if e.fields.get("decoded") and isinstance(mc, int) and mc in edac_mcs:
            mce_detail.setdefault(mc, []).extend(e.evidence)
            mce.remove(e)
        elif e.fields.get("decoded") and isinstance(mc, int):
            # the EDAC driver handled it as a memory error but its CE/UE line is not in the text
            g = edac.setdefault((mc, ""), {"ce": 0, "ue": 0, "ev": [], "mce": []})
            g["ue" if e.fields.get("severity") == "uncorrected" else "ce"] += 1
            g["ev"].extend(e.evidence)
            g.setdefault("mce", []).append(e)
            mce.remove(e)
    ghes_mem = [e for e in events if e.kind == "ghes" and "memory" in str(e.fields.get("section", ""))]
    ghes_other = [e for e in events if e.kind == "ghes" and "pcie" not in str(e.fields.get("section", ""))
                  and "memory" not in str(e.fields.get("section", ""))]
    logged = [e for e in mce if e.fields.get("severity") == "logged"]
    context = _cap(ln for e in logged for ln in e.evidence)
    for (mc, label), g in edac.items():
        where = f"DIMM {label} (memory controller MC{mc})" if label else f"memory controller MC{mc}"
        g["ev"] = mce_detail.pop(mc, []) + g["ev"]
        via = (" reported by a machine-check record" + _mce_where(g["mce"])) if g.get("mce") else ""
        src = SRC_B15 + ("; " + SRC_MCI if g.get("mce") else "")
        if g["ue"]:
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               f"{where}: {g['ue']} uncorrectable (UE) host memory error(s)"
                               + (f" and {g['ce']} corrected (CE)" if g["ce"] else "") + via, where,
                               _cap(g["ev"] + list(context)),
                               f"Replace the DIMM {label or 'on MC' + str(mc)}: an uncorrectable memory error crashes "
                               f"jobs or corrupts data. Confirm the slot in the BMC event log (SEL), and run a memory "
                               f"test before the node returns to service.", src))
        else:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               f"{where}: {g['ce']} corrected (CE) host memory error(s)" + via, where,
                               _cap(g["ev"] + list(context)),
                               f"Corrected errors on {label or 'MC' + str(mc)}: watch the count (`ras-mc-ctl --errors`, "
                               f"/sys/devices/system/edac/mc/mc{mc}/ce_count); if it keeps growing, replace the DIMM at "
                               f"the next maintenance.", src))
    for e in ghes_mem:
        sev = str(e.fields.get("severity", ""))
        label = str(e.fields.get("label", "") or "")
        where = f"DIMM {label}" if label else "host memory"
        if sev in ("fatal", "nonfatal"):
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               f"{where}: firmware (APEI) reported an uncorrected memory error ({sev})", where,
                               _cap(e.evidence), f"Replace the DIMM{(' ' + label) if label else ''}; confirm the slot in "
                               "the BMC event log (SEL).", SRC_B15 + "; " + SRC_GHES))
        else:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               f"{where}: firmware (APEI) reported a corrected memory error", where, _cap(e.evidence),
                               "Watch the corrected-error count; replace the DIMM if it keeps growing.", SRC_B15))
    unc = [e for e in mce if e.fields.get("severity") == "uncorrected"]
    cor = [e for e in mce if e.fields.get("severity") == "corrected" and not e.fields.get("storm")]
    storm = [e for e in mce if e.fields.get("storm")]
    if unc:
        out.append(Finding("health.mce", Verdict.FAIL,
                           f"{_plural(len(unc), 'uncorrected machine-check error')} on this host" + _mce_where(unc),
                           "host", _cap([ln for e in unc for ln in e.evidence] + list(context)),
                           "Read the decoded record (`ras-mc-ctl --errors`, or mcelog) to find the bank/DIMM; replace "
                           "the failing part (DIMM or CPU) before the node returns to service.",
                           SRC_B15 + ("; " + SRC_MCI if any(e.fields.get("decoded") for e in unc) else "")))
    if cor or storm:
        msg = (f"{_plural(len(cor), 'corrected machine-check error')} on this host" + _mce_where(cor)) if cor else ""
        if storm:
            msg = (msg + "; " if msg else "") + ("a corrected-error (CMCI) storm: corrected machine checks came so fast "
                                                 "that the kernel switched to polling")
        out.append(Finding("health.mce", Verdict.WARN, msg, "host",
                           _cap([ln for e in storm + cor for ln in e.evidence] + ([] if unc else list(context))),
                           "Find the bank/DIMM with `ras-mc-ctl --errors` (or the EDAC lines after these); watch whether "
                           "the count grows, and replace the DIMM if it does.",
                           SRC_B15 + ("; " + SRC_MCI if any(e.fields.get("decoded") for e in cor) else "")
                           + ("; " + SRC_CMCI if storm else "")))
    if logged and not (edac or ghes_mem or unc or cor):
        out.append(Finding("health.mce", Verdict.WARN,
                           f"machine-check events were logged ({_plural(len(logged), 'message')}) but the kernel log "
                           "does not say which", "host", context,
                           "Read them with `ras-mc-ctl --errors` (rasdaemon) or `mcelog --client` to see whether they "
                           "are corrected or not, and which DIMM or CPU bank.", SRC_B15))
    for e in ghes_other:
        sev = str(e.fields.get("severity", ""))
        section = str(e.fields.get("section", "") or "unknown section")
        verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN if sev in ("nonfatal", "") else Verdict.PASS
        out.append(Finding("health.hw_error", verdict,
                           f"firmware (APEI) reported a hardware error: {section}, severity {sev or 'not shown'}", "host",
                           _cap(e.evidence),
                           "" if verdict is Verdict.PASS else "Check the BMC event log (SEL) for the same time and the "
                           "named component; contact the server vendor if it repeats.", SRC_GHES))
    return out


def _mce_where(evs: list[KernelEvent]) -> str:
    """" (bank 8 on memory controller MC3, status fc00...: UC set)" for decoded records."""
    parts = []
    for e in evs:
        if not e.fields.get("decoded"):
            continue
        mc = e.fields.get("mc")
        bits = "UC set" if e.fields.get("severity") == "uncorrected" else "UC clear"
        if e.fields.get("pcc"):
            bits += ", processor context corrupt"
        if e.fields.get("overflow"):
            bits += ", overflow: earlier errors were lost"
        parts.append(f"bank {e.fields.get('bank')}" + (f" on memory controller MC{mc}" if mc is not None else "")
                     + f", MCi_STATUS {e.fields.get('status')}: {bits}")
    parts = list(dict.fromkeys(parts))
    return f" ({'; '.join(parts[:3])}{'; ...' if len(parts) > 3 else ''})" if parts else ""


# ---- B16: unrecognised error messages


def _unrecognised_findings(log: KernelLog, events: list[KernelEvent]) -> list[Finding]:
    benign = benign_patterns()
    evs = [e for e in events if e.kind == "unrecognised"
           and not any(rx.search(e.record.msg) for rx, _ in benign)]
    if not evs:
        return []
    keys = [event_key(e) for e in evs]
    oops = any(e.fields.get("class") == "oops" for e in evs)
    what = "kernel warnings/oops reports and GPU-driver error messages" if oops else "GPU-driver error messages"
    return [Finding("health.kernel_log", Verdict.WARN,
                    f"{_plural(len(evs), 'kernel message')} that no rule recognises ({what}): investigate", "host",
                    _cap(ln for e in evs for ln in e.evidence),
                    "Read these lines in context (`journalctl -k -b`). If one is harmless on this system, acknowledge "
                    "it by its key so it stops counting: " + ", ".join(keys[:20])
                    + (f" (and {len(keys) - 20} more)" if len(keys) > 20 else "") + ".", SRC_B16)]


# ------------------------------------------------------------------ the live/snapshot check


def gpu_index_from_outputs(outputs: Outputs) -> dict[str, int]:
    """PCI bus id -> GPU index from the ``nvml`` probe, when it was collected (else empty)."""
    o = outputs.get("nvml") if isinstance(outputs, Mapping) else None
    if o is None or not o.ok:
        return {}
    try:
        from wizard.parsers.gpu import parse_nvml
        from wizard.parsers.kernellog import bus_id

        out = {}
        for g in parse_nvml(o.text).gpus:
            if isinstance(g.get("index"), int) and g.get("pci_bus_id"):
                out[bus_id(str(g["pci_bus_id"]))] = g["index"]
        return out
    except Exception:  # noqa: BLE001 - naming is a nicety; never fail the check over it
        return {}


def _log_output(outputs: Outputs) -> tuple[ProbeOutput | None, list[ProbeOutput]]:
    tried: list[ProbeOutput] = []
    for name in ("kernel_log_journal", "kernel_log_dmesg"):
        o = outputs.get(name)
        if o is None:
            continue
        tried.append(o)
        if o.ok and o.rc in (0, None) and parse_kernel_log(o.text).records:
            return o, tried
    return None, tried


def kernel_log(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over this boot's kernel log.

    Probes: ``kernel_log_journal`` (``journalctl -k -b --no-pager -o short-monotonic``), falling
    back to ``kernel_log_dmesg`` (``dmesg``); optional ``nvml`` to name GPUs by index.
    Findings: ``health.xid``, ``health.gpu_bus``, ``health.gsp``, ``health.gpu_init``,
    ``health.driver_conflict``, ``health.aer``, ``health.pcie_limited``, ``health.host_memory``,
    ``health.mce``, ``health.hw_error``, ``health.kernel_log`` (pass summary, unreadable log,
    or unrecognised messages) and ``health.kernel_log_ignored`` (skip: acknowledged events).
    ``boot_only`` is forced true: both probes read this boot only.
    """
    exp = dict(expectations) if isinstance(expectations, Mapping) else {}
    exp["boot_only"] = True
    chosen, tried = _log_output(outputs)
    if chosen is None:
        if not tried:
            return [missing("health.kernel_log", None, "whether the kernel logged GPU or hardware errors",
                            source=SRC_B5_ONLY)]
        ev: list[str] = []
        for o in tried:
            ev.extend(o.evidence_error() if not o.ok or o.rc not in (0, None) else
                      [o.source, "(no kernel messages in the output)"] + [ln for ln in o.stderr.splitlines()[:3] if ln])
        return [Finding("health.kernel_log", Verdict.UNKNOWN,
                        "could not tell whether the kernel logged GPU or hardware errors: the kernel log was not readable",
                        "host", _cap(ev),
                        "Run bringup as root, or add the user to the adm / systemd-journal group; with "
                        "kernel.dmesg_restrict=1 only root may run dmesg (docs.kernel.org/admin-guide/sysctl/kernel.html).",
                        SRC_B5_ONLY)]
    log = parse_kernel_log(chosen.text)
    return judge_kernel_log(log, exp, chosen.source, gpu_index_from_outputs(outputs))


# ------------------------------------------------------------------ EDAC / rasdaemon

EDAC_MISSING_REMEDY = (
    "No EDAC memory controller is registered: load the EDAC driver for this platform (e.g. `modprobe i10nm_edac` or "
    "`skx_edac` on Intel Xeon, `amd64_edac` on AMD EPYC) and install rasdaemon (`systemctl enable --now rasdaemon`). "
    "Inside a VM, host memory errors are visible only on the hypervisor or the BMC.")


def judge_edac_facts(facts: EdacFacts, expectations: Mapping[str, Any], source: str = "") -> list[Finding]:
    """Findings for EDAC counters (sysfs tree or ``edac-util`` output): any UE -> fail, any CE ->
    warn (B15), all zero -> pass; nothing readable -> unknown."""
    try:
        return _judge_edac(facts, source or facts.source)
    except Exception as exc:  # noqa: BLE001
        return [Finding("health.host_memory", Verdict.UNKNOWN, f"could not judge EDAC counters: {exc!r}", "host memory",
                        (source,), "This is a bringup bug: please report it with the input.", SRC_B15)]


def _judge_edac(facts: EdacFacts, source: str) -> list[Finding]:
    if facts.no_controller_line and not facts.counts:
        return [Finding("health.host_memory", Verdict.UNKNOWN, "could not tell host memory errors: EDAC reports no "
                        "memory controller", "host memory", (source, facts.no_controller_line), EDAC_MISSING_REMEDY,
                        SRC_B15)]
    if not facts.counts:
        if facts.no_errors_line:
            return [Finding("health.host_memory", Verdict.PASS, "EDAC reports no host memory errors", "host memory",
                            (source, facts.no_errors_line), "", SRC_B15)]
        ev = (source,) + _cap(facts.unread) if facts.unread else (source, "(no EDAC counters found)")
        return [Finding("health.host_memory", Verdict.UNKNOWN, "could not tell host memory errors: no EDAC counters",
                        "host memory", ev, EDAC_MISSING_REMEDY, SRC_B15)]
    # the controller totals only when nothing finer is known for that controller
    finer = {c.mc for c in facts.counts if c.where}
    places = [c for c in facts.counts if c.where or c.mc not in finer]
    out: list[Finding] = []
    for c in places:
        where = f"DIMM {c.name}" if c.label else f"host memory {c.name}"
        if c.where == "noinfo":
            where = f"host memory {c.mc} (errors the driver could not place on a DIMM)"
        if c.ue:
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               f"{where}: {c.ue} uncorrectable (UE) memory error(s)"
                               + (f" and {c.ce} corrected (CE)" if c.ce else ""), where, _cap([source] + c.evidence),
                               f"Replace the DIMM {c.label or '(find the slot in the BMC event log)'}: an uncorrectable "
                               f"memory error crashes jobs or corrupts data; run a memory test before returning the node.",
                               SRC_B15))
        elif c.ce:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               f"{where}: {c.ce} corrected (CE) memory error(s) since the counters were reset", where,
                               _cap([source] + c.evidence),
                               "Corrected errors: re-read the counter after the validation stages; if it grows, replace "
                               f"the DIMM {c.label or ''} at the next maintenance (`ras-mc-ctl --errors` shows when).".replace(
                                   "DIMM  at", "DIMM at"), SRC_B15))
    if out:
        return out
    n = len(facts.controllers) or len({c.mc for c in facts.counts})
    ev = [source] + [ln for c in places for ln in c.evidence]
    return [Finding("health.host_memory", Verdict.PASS,
                    f"no host memory errors: 0 corrected and 0 uncorrectable on {_plural(n, 'memory controller')}",
                    "host memory", _cap(ev), "", SRC_B15)]


def judge_ras_mc_ctl(facts: RasFacts, expectations: Mapping[str, Any]) -> list[Finding]:
    """Findings for ``ras-mc-ctl`` output: memory UE / memory-failure -> fail, memory CE and
    corrected MCE -> warn, uncorrected MCE -> fail, PCIe AER by severity (B3), other error
    records -> warn; only "No ... errors." lines -> pass."""
    try:
        return _judge_ras(facts)
    except Exception as exc:  # noqa: BLE001
        return [Finding("health.host_memory", Verdict.UNKNOWN, f"could not judge ras-mc-ctl output: {exc!r}", "host",
                        (), "This is a bringup bug: please report it with the input.", SRC_B15)]


def _judge_ras(facts: RasFacts) -> list[Finding]:
    src = "$ ras-mc-ctl"
    out: list[Finding] = []
    groups: "OrderedDict[tuple[str, str, str], list]" = OrderedDict()
    for it in facts.items:
        if it.section == "error_count" and not it.severity:
            continue
        groups.setdefault((it.section, it.severity, it.label), []).append(it)
    for (section, sev, label), items in groups.items():
        n = sum(i.count for i in items)
        ev = _cap(i.line for i in items)
        if section in ("memory", "error_count"):
            where = f"DIMM {label}" if label else "host memory"
            if sev == "ue":
                out.append(Finding("health.host_memory", Verdict.FAIL, f"{where}: {n} uncorrected (UE) memory error(s) "
                                   "recorded by rasdaemon", where, ev,
                                   f"Replace the DIMM {label}".strip() + ": confirm the slot in the BMC event log (SEL) "
                                   "and run a memory test before returning the node.", SRC_B15))
            elif sev == "ce":
                out.append(Finding("health.host_memory", Verdict.WARN, f"{where}: {n} corrected (CE) memory error(s) "
                                   "recorded by rasdaemon", where, ev,
                                   "Watch the count (`ras-mc-ctl --error-count`); replace the DIMM at the next "
                                   "maintenance if it keeps growing.", SRC_B15))
        elif section == "memory_failure":
            out.append(Finding("health.host_memory", Verdict.FAIL, f"{n} memory-failure event(s): the kernel took memory "
                               "pages offline after uncorrected errors", "host memory", ev,
                               "Find the DIMM (`ras-mc-ctl --errors`, BMC SEL) and replace it.", SRC_B15))
        elif section == "mce":
            if sev == "ue":
                out.append(Finding("health.mce", Verdict.FAIL, f"{n} uncorrected machine-check error(s) recorded by "
                                   "rasdaemon", "host", ev,
                                   "Read the bank in `ras-mc-ctl --errors`; replace the failing DIMM or CPU.", SRC_B15))
            else:
                out.append(Finding("health.mce", Verdict.WARN, f"{n} corrected machine-check (MCE) error(s) recorded by "
                                   "rasdaemon", "host", ev,
                                   "Read the bank and memory channel in `ras-mc-ctl --errors`; watch whether the count "
                                   "grows, and replace the DIMM if it does.", SRC_B15))
        elif section == "aer":
            verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN if sev == "nonfatal" else Verdict.PASS
            out.append(Finding("health.aer", verdict, f"{n} PCIe AER {_AER_WORDS.get(sev, 'unclassified')} error(s) "
                               "recorded by rasdaemon" + (f" on {label}" if label else ""), label or "host", ev,
                               "" if verdict is Verdict.PASS else "Find the device in `ras-mc-ctl --errors`; reseat it "
                               "and its riser, check cables and firmware; power-cycle after a fatal error.", SRC_B3))
        else:
            verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN
            out.append(Finding("health.hw_error", verdict, f"{n} {section.replace('_', ' ')} error record(s) from "
                               "rasdaemon", "host", ev, "Read the records with `ras-mc-ctl --errors` and check the named "
                               "component.", SRC_B15))
    if out:
        return out
    if facts.clean or any(i.section == "error_count" for i in facts.items):
        ev = _cap([src] + facts.clean + [i.line for i in facts.items])
        return [Finding("health.host_memory", Verdict.PASS, "rasdaemon recorded no memory, PCIe AER or MCE errors",
                        "host", ev, "", SRC_B15)]
    return [Finding("health.host_memory", Verdict.UNKNOWN, "could not read this ras-mc-ctl output", "host",
                    _cap([src] + facts.notes + facts.unread),
                    "Run `ras-mc-ctl --summary` as root with rasdaemon running (`systemctl enable --now rasdaemon`).",
                    SRC_B15)]


def edac(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over the EDAC sysfs counters (probe ``edac_sysfs``).

    Findings: ``health.host_memory`` (fail per DIMM/controller with UE > 0, warn with CE > 0,
    pass when all counters are zero, unknown when no EDAC controller is registered)."""
    o = outputs.get("edac_sysfs") if isinstance(outputs, Mapping) else None
    if o is None or (not o.ok and not o.files):
        return [missing("health.host_memory", o, "host memory (EDAC) error counts", "host memory",
                        EDAC_MISSING_REMEDY, SRC_B15)]
    from wizard.parsers.edac import EDAC_ROOT

    facts = parse_edac_sysfs(o.files, EDAC_ROOT)
    return judge_edac_facts(facts, expectations, EDAC_ROOT + " (sysfs)")


__all__ = ["judge_kernel_log", "judge_kernel_log_text", "kernel_log", "edac", "judge_edac_facts", "judge_ras_mc_ctl",
           "xid_rows", "recovery_actions", "event_key"]
