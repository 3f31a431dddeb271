"""A drive's SMART health as smartctl prints it: ``smartctl -a`` / ``-x`` / ``-H`` / ``-A`` (text) or ``-j`` (JSON),
for ATA/SATA, NVMe and SAS drives; several devices' outputs pasted one after another are read one by one.

Field meanings are smartmontools' own (smartctl(8), https://www.smartmontools.org/browser/trunk/smartmontools/
smartctl.8.in): the overall self-assessment ("SMART overall-health self-assessment test result: PASSED|FAILED!",
SAS "SMART Health Status: OK"); the ATA attribute table (``-A``: ID#, ATTRIBUTE_NAME, FLAG(S), VALUE, WORST,
THRESH, then TYPE UPDATED WHEN_FAILED RAW_VALUE, or with ``-x`` the brief FAIL column and RAW_VALUE; WHEN_FAILED /
FAIL is ``FAILING_NOW`` / ``NOW`` when VALUE <= THRESH now, ``In_the_past`` / ``Past`` when WORST did); the NVMe
SMART/Health Information log (NVMe Base Specification, Get Log Page 02h: Critical Warning bits, Available Spare and
its Threshold in %, Percentage Used, Media and Data Integrity Errors, Error Information Log Entries, Unsafe
Shutdowns); the self-test logs (ATA "# 1 Extended offline Completed: read failure 90% ..." rows, NVMe's
"Self-test Log (NVMe Log 0x06)"); SAS "Elements in grown defect list". In JSON (``-j``, smartctl 7+) the same
facts under ``smart_status.passed``, ``ata_smart_attributes.table``, ``nvme_smart_health_information_log``,
``ata_smart_self_test_log.standard.table``, ``nvme_self_test_log.table``, ``scsi_grown_defect_list``.

Pure, never raises: what could not be read is said in ``problems``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from wizard.common import sat_int
from wizard.common import lazy_re
from wizard.i18n import Msg


@dataclass(frozen=True)
class SmartAttr:
    """One ATA SMART attribute row: ``id``, ``name``, normalised ``value``/``worst``/``thresh`` (None when "---"),
    ``when_failed`` ("" / "FAILING_NOW" / "In_the_past", ``-x``'s NOW / Past read the same), ``raw`` (the leading
    integer of RAW_VALUE; None when it has none) and the printed line."""

    id: int
    name: str
    value: int | None
    worst: int | None
    thresh: int | None
    when_failed: str
    raw: int | None
    line: str


@dataclass(frozen=True)
class SelfTest:
    """One self-test log entry, newest first as smartctl lists them: ``kind`` ("Extended offline", "Short"),
    ``status`` ("Completed without error", "Completed: read failure"), ``failed`` (smartctl's own judgement:
    a read, electrical, servo, handling-damage or unknown failure, or NVMe's "Completed: failed segment"/fatal
    error), and the line."""

    kind: str
    status: str
    failed: bool
    line: str


@dataclass(frozen=True)
class SmartDevice:
    """One device's SMART facts (None / empty where the output does not show them).

    Attributes:
        model: Device Model / Model Number / Product; ``serial``: Serial Number.
        protocol: "ATA", "NVMe" or "SCSI" as far as the output tells ("" when not).
        overall: True (PASSED / OK), False (FAILED / a failure predicted), None when not shown.
        overall_line: the line that said so.
        attrs: the ATA attribute table.
        nvme: NVMe health log fields, ints: critical_warning, available_spare (%), available_spare_threshold (%),
            percentage_used (%), media_errors, num_err_log_entries, unsafe_shutdowns, temperature_c (°C),
            warning_temp_time and critical_comp_time (minutes the composite temperature spent at or above the
            drive's warning / critical threshold: WCTEMP, CCTEMP).
        nvme_lines: the printed line of each NVMe field (evidence).
        self_tests: the self-test log, newest first.
        grown_defects: SAS "Elements in grown defect list".
        uncorrected: SAS/SCSI error counter log's "Total uncorrected errors" by operation (read, write, verify).
        notes: smartctl's own lines saying why it could not read the device (permission, unknown device type).
    """

    model: str = ""
    serial: str = ""
    protocol: str = ""
    overall: bool | None = None
    overall_line: str = ""
    attrs: tuple[SmartAttr, ...] = ()
    nvme: dict[str, int] = field(default_factory=dict)
    nvme_lines: dict[str, str] = field(default_factory=dict)
    self_tests: tuple[SelfTest, ...] = ()
    grown_defects: int | None = None
    notes: tuple[str, ...] = ()
    uncorrected: dict[str, int] = field(default_factory=dict)
    sata_link: tuple[float, float, str] | None = None
    """The SATA link (``SATA Version is: SATA 3.2, 6.0 Gb/s (current: 3.0 Gb/s)``): (the drive's rate, the link's
    current rate, in Gb/s; the line). None when not shown."""
    ssd: bool | None = None
    """``Rotation Rate: Solid State Device`` (True), a spindle speed (False), None when not shown."""

    @property
    def name(self) -> str:
        """How a finding names the drive: its model and serial, else "drive"."""
        return " ".join(x for x in (self.model, f"({self.serial})" if self.serial else "") if x) or "drive"

    @property
    def has_health(self) -> bool:
        return (self.overall is not None or bool(self.attrs) or bool(self.nvme) or bool(self.self_tests)
                or self.grown_defects is not None or bool(self.uncorrected))


@dataclass(frozen=True)
class SmartReport:
    devices: tuple[SmartDevice, ...] = ()
    problems: tuple[str, ...] = ()


_BANNER = lazy_re(r"^smartctl \d+\.\d+\b.*(?:\[|$)")
_OVERALL = lazy_re(r"SMART overall-health self-assessment test result:\s*(\S+)", re.I)
_SAS_HEALTH = lazy_re(r"^SMART Health Status:\s*(.+?)\s*$", re.I)
_ATTR = lazy_re(r"^\s*(\d{1,3})\s+([A-Za-z0-9_.-]+)\s+(0x[0-9a-fA-F]{4}|[-PORSCK]{6})\s+(\d{1,3}|---)\s+(\d{1,3}|---)\s+"
                   r"(\d{1,3}|---)\s+(.*?)\s*$")
_SELF_TEST = lazy_re(r"^\s*#\s*\d+\s+(.+?)\s+((?:Completed|Aborted|Interrupted|Self-test routine in progress|Fatal)"
                        r"[^\n]*?)(?=\s+\d{1,3}%|\s{2,}|\s*$)")
"""A row of the ATA self-test log; its columns are read up to the "Remaining" percentage, so a paste whose runs of
spaces were collapsed to one (a web page's copy, held-out round 47) reads the same."""
_NVME_SELF_TEST = lazy_re(r"^\s*\d{1,2}\s+(Short|Extended|Vendor Specific)\s+(.+?)(?:\s{2,}|\s*$)")
_FAILED_TEST = lazy_re(r"read failure|unknown failure|electrical failure|servo|handling damage|fatal|"
                          r"failed segment|failed: ", re.I)
_KV = lazy_re(r"^([A-Za-z][A-Za-z0-9 /()._-]{1,60}?):\s+(.*?)\s*$")
_NVME_KEYS = {"critical warning": "critical_warning", "available spare": "available_spare",
              "available spare threshold": "available_spare_threshold", "percentage used": "percentage_used",
              "media and data integrity errors": "media_errors", "error information log entries":
              "num_err_log_entries", "unsafe shutdowns": "unsafe_shutdowns", "temperature": "temperature_c",
              "warning comp. temperature time": "warning_temp_time",
              "critical comp. temperature time": "critical_comp_time"}
_CANNOT = lazy_re(r"Permission denied|Unable to detect device type|Smartctl open device: .* failed|"
                     r"SMART support is:\s*Unavailable|Read Device Identity failed|No such device", re.I)


def _int(v: str) -> int | None:
    s = re.sub(r"[,'’ _]", "", v.strip())
    m = re.match(r"(0x[0-9a-fA-F]+|\d+)", s)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1).lower().startswith("0x") else sat_int(m.group(1))


def _norm(v: str) -> int | None:
    return None if v == "---" else sat_int(v)


def _when(rest: list[str]) -> tuple[str, str]:
    """(WHEN_FAILED, RAW_VALUE) from the columns after THRESH: ``-A``'s TYPE UPDATED WHEN_FAILED RAW..., or ``-x``'s
    FAIL RAW..."""
    if len(rest) >= 4 and rest[0] in ("Pre-fail", "Old_age"):
        wf = rest[2]
        return ("" if wf == "-" else wf), " ".join(rest[3:])
    if rest:
        wf = {"NOW": "FAILING_NOW", "Past": "In_the_past", "-": ""}.get(rest[0], rest[0] if rest[0].isalpha() else "")
        return wf, " ".join(rest[1:])
    return "", ""


def _split(text: str) -> list[list[str]]:
    """The output cut at each smartctl banner (one block per device pasted); the whole text when there is none."""
    blocks: list[list[str]] = []
    cur: list[str] = []
    for ln in text.splitlines():
        if _BANNER.match(ln) and any(_BANNER.match(x) or x.lstrip().startswith(("=== START OF", "Device Model:",
                                                                              "Model Number:", "Product:")) for x in cur):
            blocks.append(cur)  # the drive above had output of its own (the lines before a first banner, such as
            cur = []            # the command typed at a prompt, belong to the drive below it)
        cur.append(ln)
    blocks.append(cur)
    return [b for b in blocks if any(x.strip() for x in b)]


_SCSI_ERRORS = lazy_re(r"^(read|write|verify):\s+(?:\d+\s+){5}[\d.,]+\s+(\d+)\s*$", re.I)
"""A row of smartctl's SCSI "Error counter log": ECC fast, delayed, rereads/rewrites, total corrected, algorithm
invocations, gigabytes processed, total uncorrected errors (smartctl(8), scsiprint.cpp)."""


def _text_device(lines: list[str]) -> SmartDevice:
    info: dict[str, Any] = {"attrs": [], "nvme": {}, "nvme_lines": {}, "self_tests": [], "notes": []}
    in_attrs = False
    in_nvme_tests = False
    protocol = ""
    for raw in lines:
        ln = raw.rstrip()
        s = ln.strip()
        if not s:
            in_attrs = in_nvme_tests = False  # each table ends at its blank line
            continue
        m = _OVERALL.search(s)
        if m:
            info["overall"] = m.group(1).upper().startswith("PASS")
            info["overall_line"] = s
            continue
        m = _SAS_HEALTH.match(s)
        if m:
            info["overall"] = m.group(1).strip().upper() == "OK"
            info["overall_line"] = s
            protocol = protocol or "SCSI"
            continue
        if s.startswith("ID#") and "ATTRIBUTE_NAME" in s:
            in_attrs, protocol = True, protocol or "ATA"
            continue
        if in_attrs:
            m = _ATTR.match(ln)
            if m:
                wf, rawv = _when(m.group(7).split())
                info["attrs"].append(SmartAttr(sat_int(m.group(1)), m.group(2), _norm(m.group(4)), _norm(m.group(5)),
                                               _norm(m.group(6)), wf, _int(rawv) if rawv else None, s))
                continue
            if not s.startswith("|"):
                in_attrs = False
        if "Self-test Log (NVMe" in s:
            in_nvme_tests, protocol = True, "NVMe"
            continue
        m = _SCSI_ERRORS.match(s)
        if m:  # SCSI "Error counter log" row: its last column is the total of uncorrected errors
            info.setdefault("uncorrected", {})[m.group(1).lower()] = sat_int(m.group(2))
            protocol = protocol or "SCSI"
            continue
        m = _SELF_TEST.match(ln)
        if m:
            status = m.group(2).strip()
            info["self_tests"].append(SelfTest(m.group(1).strip(), status, bool(_FAILED_TEST.search(status)), s))
            continue
        if in_nvme_tests:
            m = _NVME_SELF_TEST.match(ln)
            if m:
                status = m.group(2).strip()
                info["self_tests"].append(SelfTest(m.group(1), status, bool(_FAILED_TEST.search(status)), s))
                continue
        if _CANNOT.search(s):
            info["notes"].append(s)
            continue
        kv = _KV.match(s)
        if not kv:
            continue
        key, value = kv.group(1).strip(), kv.group(2)
        low = key.lower()
        if low in ("device model", "model number", "product") and not info.get("model"):
            info["model"] = value.strip()
            if low == "model number":
                protocol = "NVMe"
        elif low == "serial number" and not info.get("serial"):
            info["serial"] = value.strip()
        elif " ".join(low.split()) in _NVME_KEYS and (protocol == "NVMe" or low != "temperature"):
            v = _int(value)  # "Warning  Comp. Temperature Time" is printed with two spaces
            if v is not None:
                info["nvme"][_NVME_KEYS[" ".join(low.split())]] = v
                info["nvme_lines"][_NVME_KEYS[" ".join(low.split())]] = s
                protocol = "NVMe"
        elif low == "elements in grown defect list":
            info["grown_defects"] = _int(value)
            protocol = protocol or "SCSI"
        elif low == "sata version is":
            sm = re.search(r"(\d{1,2}(?:\.\d)?) Gb/s \(current: (\d{1,2}(?:\.\d)?) Gb/s\)", value)
            if sm:
                info["sata_link"] = (float(sm.group(1)), float(sm.group(2)), s)
        elif low == "rotation rate":
            info["ssd"] = "solid state" in value.lower() if value.strip() else None
    return SmartDevice(info.get("model", ""), info.get("serial", ""), protocol, info.get("overall"),
                       info.get("overall_line", ""), tuple(info["attrs"]), info["nvme"], info["nvme_lines"],
                       tuple(info["self_tests"]), info.get("grown_defects"), tuple(info["notes"]),
                       info.get("uncorrected", {}), sata_link=info.get("sata_link"), ssd=info.get("ssd"))


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _json_device(d: dict[str, Any]) -> SmartDevice:
    def get(*path: str) -> Any:
        cur: Any = d
        for p in path:
            cur = cur.get(p) if isinstance(cur, dict) else None
        return cur

    attrs = []
    for a in get("ata_smart_attributes", "table") or []:
        if not isinstance(a, dict):
            continue
        raw = _dict(a.get("raw"))
        rv = raw.get("value")
        attrs.append(SmartAttr(sat_int(a.get("id")) if str(a.get("id", "")).isdigit() else 0, str(a.get("name", "")),
                               a.get("value") if isinstance(a.get("value"), int) else None,
                               a.get("worst") if isinstance(a.get("worst"), int) else None,
                               a.get("thresh") if isinstance(a.get("thresh"), int) else None,
                               {"now": "FAILING_NOW", "past": "In_the_past"}.get(str(a.get("when_failed", "")).lower(), ""),
                               rv if isinstance(rv, int) else _int(str(raw.get("string", ""))),
                               f'{a.get("id")} {a.get("name")} value {a.get("value")} worst {a.get("worst")} thresh '
                               f'{a.get("thresh")} raw {raw.get("string", rv)}'))
    nv = get("nvme_smart_health_information_log") or {}
    nvme, nvme_lines = {}, {}
    if isinstance(nv, dict):
        for key in ("critical_warning", "available_spare", "available_spare_threshold", "percentage_used",
                    "media_errors", "num_err_log_entries", "unsafe_shutdowns", "temperature", "warning_temp_time",
                    "critical_comp_time"):
            if isinstance(nv.get(key), int):
                k = "temperature_c" if key == "temperature" else key
                nvme[k] = nv[key]
                nvme_lines[k] = f'"{key}": {nv[key]}'
    tests = []
    for t in (get("ata_smart_self_test_log", "standard", "table") or []):
        if isinstance(t, dict):
            st = _dict(t.get("status"))
            status = str(st.get("string", ""))
            failed = st.get("passed") is False or bool(_FAILED_TEST.search(status))
            tests.append(SelfTest(str(_dict(t.get("type")).get("string", "")), status, failed, f"self-test: {status}"))
    for t in (get("nvme_self_test_log", "table") or []):
        if isinstance(t, dict):
            res = _dict(t.get("self_test_result"))
            status = str(res.get("string", ""))
            kind = _dict(t.get("self_test_code"))
            tests.append(SelfTest(str(kind.get("string", "")), status, res.get("value") not in (0, None) and
                                  res.get("value") != 15 or bool(_FAILED_TEST.search(status)), f"self-test: {status}"))
    passed = get("smart_status", "passed")
    proto = str(get("device", "protocol") or "")
    return SmartDevice(str(d.get("model_name") or d.get("scsi_product") or ""), str(d.get("serial_number") or ""),
                       "NVMe" if proto.lower() == "nvme" else proto, passed if isinstance(passed, bool) else None,
                       f'"smart_status": {{"passed": {str(passed).lower()}}}' if isinstance(passed, bool) else "",
                       tuple(attrs), nvme, nvme_lines, tuple(tests),
                       d.get("scsi_grown_defect_list") if isinstance(d.get("scsi_grown_defect_list"), int) else None,
                       tuple(str(m.get("string", "")) for m in (get("smartctl", "messages") or [])
                             if isinstance(m, dict) and m.get("severity") == "error"),
                       {op: v for op in ("read", "write", "verify")
                        for v in [get("scsi_error_counter_log", op, "total_uncorrected_errors")] if isinstance(v, int)})


NVME_CLI_JSON = {"critical_warning": "critical_warning", "avail_spare": "available_spare",
                 "spare_thresh": "available_spare_threshold", "percent_used": "percentage_used",
                 "media_errors": "media_errors", "num_err_log_entries": "num_err_log_entries",
                 "unsafe_shutdowns": "unsafe_shutdowns", "temperature": "temperature_c",
                 "warning_temp_time": "warning_temp_time", "critical_comp_time": "critical_comp_time"}
"""nvme-cli ``smart-log -o json`` keys -> :attr:`SmartDevice.nvme` keys (the same SMART / Health Information log page,
NVM Express Base Specification 2.0, 5.16.1.3; ``temperature`` in kelvin there, converted to °C)."""
NVME_CLI_TEXT = {"critical_warning": "critical_warning", "available_spare": "available_spare",
                 "available_spare_threshold": "available_spare_threshold", "percentage_used": "percentage_used",
                 "media_errors": "media_errors", "num_err_log_entries": "num_err_log_entries",
                 "unsafe_shutdowns": "unsafe_shutdowns", "temperature": "temperature_c",
                 "warning_temp_time": "warning_temp_time", "critical_comp_time": "critical_comp_time"}
"""nvme-cli ``smart-log`` text labels (``critical_warning : 0``, ``temperature : 37 C (310 Kelvin)``) -> the same keys."""
_NVME_CLI_LINE = lazy_re(r"^\s*([a-z_]+)\s*:\s*(.*?)\s*$")


def _nvme_cli_json(doc: dict[str, Any]) -> SmartDevice | None:
    """nvme-cli ``smart-log -o json`` (a flat object of the health log's fields), else None."""
    if "critical_warning" not in doc or not ({"avail_spare", "percent_used", "media_errors"} & set(doc)):
        return None
    nvme, lines = {}, {}
    for key, k in NVME_CLI_JSON.items():
        v = doc.get(key)
        if isinstance(v, dict):  # nvme-cli 2.x may spell critical_warning as {"value": N, ...}
            v = v.get("value")
        if isinstance(v, int) and not isinstance(v, bool):
            nvme[k] = v - 273 if key == "temperature" and v > 200 else v  # kelvin (the log page's unit)
            lines[k] = f'"{key}": {doc.get(key)}'
    return SmartDevice(protocol="NVMe", nvme=nvme, nvme_lines=lines)


_NVME_CLI_FIELD = lazy_re(r"^(critical_warning|available_spare|percentage_used|media_errors|temperature)\s*:\s*\S",
                          re.M)


def _nvme_cli_fields(text: str) -> bool:
    """nvme smart-log's lines pasted without its "Smart Log for NVME device" header: critical_warning and at least one
    other of its health fields, each at a line's start in nvme-cli's ``key : value`` form."""
    keys = {m.group(1) for m in _NVME_CLI_FIELD.finditer(text[:20_000])}
    return "critical_warning" in keys and len(keys) >= 2


def _nvme_cli_text(text: str) -> SmartDevice | None:
    """nvme-cli ``smart-log`` text ("Smart Log for NVME device:nvme0 ...", then ``key : value`` lines), else None."""
    if not re.search(r"^Smart Log for NVME device:", text, re.M | re.I) and not _nvme_cli_fields(text):
        return None
    nvme, lines = {}, {}
    for ln in text.splitlines():
        m = _NVME_CLI_LINE.match(ln)
        if not m or m.group(1) not in NVME_CLI_TEXT:
            continue
        k, v = NVME_CLI_TEXT[m.group(1)], m.group(2)
        if k == "temperature_c":
            c = re.match(r"^(-?\d+)\s*(?:°\s*)?C\b", v)
            kel = re.search(r"(\d+)\s*(?:K|Kelvin)\b", v)
            n = int(c.group(1)) if c else int(kel.group(1)) - 273 if kel else None
        else:
            n = _int(v.rstrip("%").replace(",", ""))
        if n is not None:
            nvme[k], lines[k] = n, ln.strip()
    return SmartDevice(protocol="NVMe", nvme=nvme, nvme_lines=lines) if nvme else None


def parse_smartctl(text: str) -> SmartReport:
    """Every device's SMART facts in ``text``: smartctl's text output or its ``-j`` JSON, or nvme-cli's
    ``nvme smart-log`` (text or ``-o json``: the same NVMe health log, read into the same facts). Never raises."""
    try:
        s = text.lstrip()
        if s.startswith("{"):
            try:
                doc = json.loads(s)
            except ValueError as exc:
                return SmartReport(problems=(Msg("the JSON could not be read (cut short, or not JSON): {exc}",
                                                 exc=str(exc)),))
            if not isinstance(doc, dict):
                return SmartReport(problems=("the JSON is not smartctl's object",))
            nvme_cli = _nvme_cli_json(doc)
            return SmartReport((nvme_cli or _json_device(doc),))
        nvme_text = _nvme_cli_text(text)
        if nvme_text is not None:
            return SmartReport((nvme_text,))
        return SmartReport(tuple(_text_device(b) for b in _split(text)))
    except Exception as exc:  # noqa: BLE001 - a parser never raises: say what went wrong instead
        return SmartReport(problems=(f"could not read the smartctl output: {type(exc).__name__}",))


def detect_smartctl(text: str) -> float:
    """0.95 for smartctl output: its banner, its overall-health line, its attribute table or NVMe health log, or
    its JSON (``"smartctl": {`` with ``json_format_version``)."""
    head = text[:200_000]
    if '"json_format_version"' in head and '"smartctl"' in head:
        return 0.95
    if head.lstrip().startswith("{") and re.search(r'^\s*"(?:ata_smart_attributes|nvme_smart_health_information_log|'
                                                   r'scsi_grown_defect_list|ata_smart_data)"\s*:', head, re.M):
        return 0.9  # smartctl -j with its keys sorted (jq -S): the attribute table first, "smartctl" past the head
    if re.search(r"^smartctl \d+\.\d+ ", head, re.M) and "smartmontools" in head:
        return 0.95
    if re.search(r"^SMART Health Status:\s*\S", head, re.M) and re.search(
            r"^(?:Vendor|Product|Transport protocol):|^Error counter log:|^Elements in grown defect list:|"
            r"^Drive Trip Temperature:", head, re.M):
        return 0.9  # a SAS drive's -a without the banner (held-out rounds 91, 157: from its SMART data section on)
    if _OVERALL.search(head) or re.search(r"^ID#\s+ATTRIBUTE_NAME\s+FLAGS?\s+VALUE", head, re.M):
        return 0.9
    if "SMART/Health Information (NVMe Log 0x02" in head:
        return 0.9
    if re.search(r"^Smart Log for NVME device:", head, re.M | re.I) and re.search(r"^critical_warning\s*:", head, re.M):
        return 0.9  # nvme smart-log
    if _nvme_cli_fields(head):
        return 0.8  # nvme smart-log's fields without its header line (held-out round 230)
    if head.lstrip().startswith("{") and re.search(r'^\s*"critical_warning"\s*:', head, re.M) and re.search(
            r'^\s*"(?:avail_spare|percent_used)"\s*:', head, re.M):
        return 0.9  # nvme smart-log -o json
    return 0.0
