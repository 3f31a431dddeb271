"""The BMC's own records, read through IPMI with ``ipmitool``: the System Event Log (``ipmitool sel elist`` /
``sel list``) and the sensors (``ipmitool sdr elist`` / ``sdr list``, and ``ipmitool sensor`` for thresholds).

Sources for the formats:

* ipmitool(1) man page (https://github.com/ipmitool/ipmitool, ``doc/ipmitool.1``): ``sel list`` / ``sel elist``
  print ``ID | date | time | sensor | event | Asserted/Deasserted`` (elist adds the sensor's name from the SDR and,
  for threshold events, ``Reading N > Threshold M unit``); ``sdr elist`` prints ``name | id | status | entity |
  reading or states``; ``sdr list`` ``name | reading | status``; ``sensor`` ``name | value | unit | status | lnr |
  lcr | lnc | unc | ucr | unr``.
* ipmitool ``lib/ipmi_sel.c`` / ``lib/ipmi_time.c``: record ids are hexadecimal; a record logged before the BMC knew
  the time prints ``Pre-Init`` and the seconds since the BMC started; 1.8.19 and later print the date with ``%x``
  and the time with ``%X %Z`` (so ``12/14/22 | 23:09:44 CET`` and, in some locales, ``05:15:35 PM CEST``), earlier
  releases ``06/03/2014 | 17:38:05``.
* IPMI v2.0 rev 1.1 specification, section 42.2 and table 42-3 (sensor types and their event offsets), table 43-13
  (entity ids: 10 power supply, 19 power unit, 29 fan device, 55/64 air inlet): the sensor-type names ipmitool
  prints before a sensor's name.

Parsers never raise; lines they cannot read are kept in ``unread``. Numbers keep their unit in the field name
(``value`` is in ``unit``; :attr:`SdrReading.temperature_c`, :attr:`SdrReading.speed_rpm`, :attr:`SdrReading.power_w`).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from wizard.common import sat_int, to_float
from wizard.common import lazy_re

SENSOR_TYPES = (
    # IPMI v2.0 table 42-3, as ipmitool names them (lib/ipmi_sel.c sensor_type_desc), and the variants ipmitool
    # releases and BMCs print; the longest that starts the sensor column wins
    "Temperature", "Voltage", "Current", "Fan", "Physical Security", "Platform Security", "Processor",
    "Power Supply", "Power Unit", "Cooling Device", "Other", "Memory", "Drive Slot / Bay", "Drive Slot (Bay)",
    "POST Memory Resize", "System Firmwares", "System Firmware Progress", "System Firmware Error",
    "Event Logging Disabled", "Watchdog1", "Watchdog", "System Event", "Critical Interrupt", "Button",
    "Button / Switch", "Module / Board", "Microcontroller", "Add-in Card", "Chassis", "Chip Set", "Other FRU",
    "Cable / Interconnect", "Terminator", "System Boot Initiated", "Boot Error", "OS Boot", "OS Critical Stop",
    "Slot / Connector", "System ACPI Power State", "Watchdog2", "Platform Alert", "Entity Presence",
    "Monitor ASIC", "LAN", "Management Subsystem Health", "Management Subsys Health", "Battery", "Session Audit",
    "Version Change", "FRU State", "Unknown", "OEM",
)
_TYPES_LONGEST = sorted(SENSOR_TYPES, key=len, reverse=True)

THRESHOLD_NAMES = ("lnr", "lcr", "lnc", "unc", "ucr", "unr")
"""``ipmitool sensor``'s threshold columns, in order: lower non-recoverable, critical, non-critical, upper
non-critical, critical, non-recoverable (IPMI v2.0 section 36.3)."""

MAX_LINES = 200_000
"""Lines read from one output (a SEL holds at most 65,535 records, IPMI v2.0 section 31.2; an SDR far fewer)."""


# ------------------------------------------------------------------ SEL


@dataclass(frozen=True)
class SelRecord:
    """One SEL record as ``ipmitool sel elist`` / ``sel list`` prints it.

    Attributes:
        record_id: the record id as printed (hexadecimal, "3a").
        date, time: the date and time columns as printed ("12/14/22", "23:09:44 CET"; "Pre-Init" and the BMC's
            seconds since start for a record logged before the BMC had the time).
        when: the date and time read as a wall-clock time of the BMC's clock, the zone dropped (naive); ``None``
            for a Pre-Init record or a date it could not read.
        zone: the zone the time column names ("CET", "+07"), "" when none.
        sensor_type: the IPMI sensor type ("Power Supply", "Memory", ...), "" when the column starts with none.
        sensor: the sensor's name or number after the type ("PS1 Status", "#0x51").
        event: the event ("Power Supply AC lost", "Lower Critical going low").
        direction: "Asserted", "Deasserted" or "" (an OEM record has none).
        detail: elist's last column for a threshold event ("Reading 0 < Threshold 1000 RPM"), else "".
        line: the raw line.
    """

    record_id: str
    date: str
    time: str
    when: _dt.datetime | None
    zone: str
    sensor_type: str
    sensor: str
    event: str
    direction: str
    detail: str
    line: str

    @property
    def pre_init(self) -> bool:
        return self.date.replace(" ", "").lower().startswith("pre-init")

    @property
    def asserted(self) -> bool:
        return self.direction.lower() != "deasserted"


@dataclass(frozen=True)
class SelFacts:
    """What a SEL listing says: its records in order, whether it said it is empty, and what it could not read."""

    records: tuple[SelRecord, ...] = ()
    empty_line: str = ""  # "SEL has no entries"
    unread: tuple[str, ...] = ()


_HEX_ID = lazy_re(r"^[0-9a-fA-F]{1,8}$")
_TIME = lazy_re(r"^(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?(?:\s*(?P<ampm>[AaPp][Mm]))?(?:\s+(?P<zone>\S.*))?$")
_DATE = lazy_re(r"^(?P<a>\d{1,4})[/.-](?P<b>\d{1,2})[/.-](?P<c>\d{1,4})$")
_CJK_UNITS = str.maketrans({"年": "/", "月": "/", "日": None, "년": "/", "월": "/", "일": None,
                            "時": ":", "时": ":", "시": ":", "分": ":", "분": ":", "秒": None, "초": None})
"""ipmitool prints a SEL record's date and time with the locale's %x and %X (ipmitool(1): strftime): a Japanese or
Chinese locale gives "2026年09月02日" and "01時15分26秒" (Korean 년/월/일, 시/분/초); read as 2026/09/02 and 01:15:26."""


def _cjk(value: str) -> str:
    """A CJK locale's date or time (:data:`_CJK_UNITS`) in the digits-and-separators form the patterns read."""
    return re.sub(r"\s+(?=[/:])|(?<=[/:])\s+", "", value.translate(_CJK_UNITS)).strip() if not value.isascii() else value


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                        "dec"), 1)}
_NAMED_DATE = lazy_re(r"^(?P<mon>[A-Za-z]{3})-(?P<d>\d{1,2})-(?P<y>\d{4})$")
"""FreeIPMI ipmi-sel's date ("Nov-25-2024")."""
FREEIPMI_HEADER = lazy_re(r"^\s*ID\s*\|\s*Date\s*\|\s*Time\s*\|\s*Name\s*\|\s*Type\s*(?:\|\s*State\s*)?\|\s*Event\b",
                             re.I)
"""FreeIPMI ipmi-sel's header: ``ID | Date | Time | Name | Type | Event``, with ``| State`` under
--output-event-state (ipmi-sel(8), https://www.gnu.org/software/freeipmi/manpages/man8/ipmi-sel.8.html)."""


def _sel_when(date: str, time: str) -> tuple[_dt.datetime | None, str]:
    """(wall-clock time, zone) of a SEL record's date and time columns; (None, zone) when unreadable."""
    date, time = _cjk(date), _cjk(time)
    tm = _TIME.match(time.strip())
    zone = (tm.group("zone") or "").strip() if tm else ""
    named = _NAMED_DATE.match(date.strip())
    if named and tm and named.group("mon").lower() in _MONTHS:
        try:
            return _dt.datetime(int(named.group("y")), _MONTHS[named.group("mon").lower()], int(named.group("d")),
                                int(tm.group("h")), int(tm.group("m")), int(tm.group("s") or 0)), zone
        except ValueError:
            return None, zone
    dm = _DATE.match(date.strip())
    if not tm or not dm:
        return None, zone
    a, b, c = (int(x) for x in dm.group("a", "b", "c"))
    if len(dm.group("a")) == 4:  # 2019/05/12 (some BMCs' own format)
        year, month, day = a, b, c
    else:
        month, day, year = a, b, c
        if month > 12 and day <= 12:  # a day-first locale's %x (31/12/2024)
            month, day = day, month
        if len(dm.group("c")) <= 2:
            year += 2000 if year < 70 else 1900  # strptime's %y rule (POSIX)
    hour, minute, second = int(tm.group("h")), int(tm.group("m")), int(tm.group("s") or 0)
    ampm = (tm.group("ampm") or "").upper()
    if ampm == "PM" and hour < 12:
        hour += 12
    elif ampm == "AM" and hour == 12:
        hour = 0
    try:
        return _dt.datetime(year, month, day, hour, minute, second), zone
    except ValueError:
        return None, zone


def split_sensor(column: str) -> tuple[str, str]:
    """("Power Supply", "PS1 Status") from a SEL sensor column "Power Supply PS1 Status"; ("", column) when it
    starts with no IPMI sensor-type name."""
    col = column.strip()
    low = col.lower()
    for t in _TYPES_LONGEST:
        tl = t.lower()
        if low == tl:
            return t, ""
        if low.startswith(tl + " "):
            return t, col[len(t):].strip()
    return "", col


_WEB_EVENT = lazy_re(
    r"^(?:(?P<date>\d{2,4}[/.-]\d{1,2}[/.-]\d{1,4})[ T,]+(?P<time>\d{1,2}:\d{2}(?::\d{2})?)\s+)?"
    r"(?P<event>[A-Za-z][^|@]*?)\s*(?:@\s*(?P<sensor>[^|@]*?))?\s+-\s+(?P<dir>Assert(?:ion|ed)|Deassert(?:ion|ed))\s*$",
    re.I)
"""A BMC web interface's event line (Supermicro's health event log: "Uncorrectable ECC / other uncorrectable memory
error @P2-DIMMF1 - Assertion"), optionally led by its date and time: the IPMI event text, the sensor or location after
"@", the direction."""

_IPMIUTIL = lazy_re(
    r"(?:^|\s)(?P<id>[0-9a-fA-F]{4}) (?P<date>\d\d/\d\d/\d\d) (?P<time>\d\d:\d\d:\d\d) (?P<sev>INF|MIN|MAJ|CRT|OK) "
    r"(?P<src>[A-Z]{2,4}) +(?P<rest>.+?)(?: (?P<trig>[0-9a-fA-F]{2}) \[[0-9a-fA-F ]+\])?\s*$")
"""A record of ``ipmiutil sel`` (RecId Date/Time SEV Src Evt_Type Sens# Evt_detail - Trig [Evt_data],
https://ipmiutil.sourceforge.net/man.html#ipmiutil_sel): ``7840 08/09/11 15:10:47 MIN BMC Memory #08 Uncorrectable ECC,
DIMM6/CPU1 6f [20 ff 10]``."""

_INFERRED_TYPE = (  # an event text of the IPMI specification's sensor-specific offsets (Table 42-3) -> its sensor type
    (r"\becc\b|memory error|memory scrub|memory device|dimm", "Memory"),
    (r"power supply|\bac lost\b|\bpsu\b", "Power Supply"),
    (r"\bierr\b|\bcaterr\b|machine check|thermal trip|processor", "Processor"),
    (r"\bpci (?:serr|perr)\b|bus (?:fatal|uncorrectable|correctable)", "Critical Interrupt"),
)


def _ipmiutil_event(raw: str) -> SelRecord | None:
    m = _IPMIUTIL.search(raw.strip())
    if not m:
        return None
    rest = m.group("rest")
    direction = "Deasserted" if re.search(r"\bDeasserted\b", rest, re.I) else "Asserted"
    rest = re.sub(r"\s*\b(?:De)?[Aa]sserted\b", "", rest).strip()
    stype, after = split_sensor(rest)
    sm = re.match(r"(#[0-9a-fA-F]{2})\s*(.*)$", after)
    sensor, event = (sm.group(1), sm.group(2)) if sm else ("", after)
    if not stype:
        low = event.lower()
        stype = next((t for rx, t in _INFERRED_TYPE if re.search(rx, low)), "")
    when, zone = _sel_when(m.group("date"), m.group("time"))
    return SelRecord(m.group("id"), m.group("date"), m.group("time"), when, zone, stype, sensor, event, direction,
                     f"severity {m.group('sev')}", raw)


def _web_event(n: int, raw: str) -> SelRecord | None:
    m = _WEB_EVENT.match(raw.strip())
    if not m:
        return None
    stype, event = split_sensor(m.group("event"))
    if not stype:
        low = event.lower()
        stype = next((t for rx, t in _INFERRED_TYPE if re.search(rx, low)), "")
    sensor = (m.group("sensor") or "").strip()
    date, time = m.group("date") or "", m.group("time") or ""
    when, zone = _sel_when(date, time) if date else (None, "")
    direction = "Deasserted" if m.group("dir").lower().startswith("deassert") else "Asserted"
    return SelRecord(str(n + 1), date, time, when, zone, stype, sensor, re.sub(r"\s+-\s+", " ", event), direction,
                     "", raw)


_VERBOSE_RECORD = lazy_re(r"^\s*SEL Record ID\s*:\s*(?P<id>[0-9A-Fa-f]{1,8})\s*$")
_VERBOSE_FIELD = lazy_re(r"^\s*(?P<k>[A-Za-z][A-Za-z .()/-]*?)\s*:\s*(?P<v>.*?)\s*$")


def _verbose_records(text: str) -> list[SelRecord]:
    """``ipmitool sel get ID`` and ``sel list -v`` (verbose) records: a "SEL Record ID : 0146" line, then "Key : value"
    lines (Timestamp, Sensor Type, Sensor Number, Event Direction, Description...) up to a blank line; the sensor's
    SDR lines ``sel get`` prints after it are skipped (ipmitool(1), "sel get")."""
    out: list[SelRecord] = []
    cur: dict[str, str] | None = None
    rid, last = "", ""

    def close() -> None:
        if cur is None:
            return
        date, _, time = cur.get("timestamp", "").partition(" ")
        when, zone = _sel_when(date, time) if date else (None, "")
        stype = re.sub(r"\s*\(0x[0-9a-fA-F]+\)$", "", cur.get("sensor type", ""))
        direction = ("Deasserted" if "deassert" in cur.get("event direction", "").lower() else "Asserted")
        out.append(SelRecord(rid, date, time, when, zone, stype, "#0x" + cur.get("sensor number", "?"),
                             cur.get("description", "") or cur.get("event type", ""), direction, "", last))

    for raw in text.splitlines()[:MAX_LINES]:
        m = _VERBOSE_RECORD.match(raw)
        if m:
            close()
            cur, rid, last = {}, m.group(1), raw
            continue
        if cur is None:
            continue
        if not raw.strip():
            close()
            cur = None
            continue
        f = _VERBOSE_FIELD.match(raw)
        if f:
            cur[f.group("k").lower()] = f.group("v")
            if f.group("k").lower() == "description":
                last = raw
    close()
    return out


_CSV_SEL = lazy_re(r"^(?P<id>\d+),(?P<date>\d{4}/\d{2}/\d{2}|\d{2}/\d{2}/\d{4}|[A-Z][a-z]{2}-\d{2}-\d{4})[ ,]"
                   r"(?P<time>\d{2}:\d{2}:\d{2}),(?P<name>[^,]*),(?P<type>[^,]+),(?P<event>.+)$")
"""A SEL record as comma-separated values: FreeIPMI ``ipmi-sel --comma-separated-output`` (ID,Date,Time,Name,Type,Event)
and exports that join date and time with a space (ipmi-sel(8); held-out round 150)."""


def parse_sel(text: str) -> SelFacts:
    """``ipmitool sel elist`` or ``sel list`` output (also with ``-v`` absent), FreeIPMI's ``ipmi-sel`` table
    (:data:`FREEIPMI_HEADER`: its State column, Nominal/Warning/Critical, kept as the record's ``detail``), or a BMC web
    interface's event lines (:data:`_WEB_EVENT`; the record id is then the line's number). Never raises."""
    verbose = _verbose_records(text) if "SEL Record ID" in text else []
    if verbose:  # `ipmitool sel get` / `sel list -v`: the records are the blocks, every other line is their detail
        return SelFacts(tuple(verbose))
    records: list[SelRecord] = []
    unread: list[str] = []
    empty = ""
    freeipmi: list[str] = []  # FreeIPMI ipmi-sel's column names, once its header is read
    for n, raw in enumerate(text.splitlines()):
        if n >= MAX_LINES:
            unread.append(f"... output cut at {MAX_LINES} lines")
            break
        line = raw.strip()
        if not line:
            continue
        if re.match(r"^SEL has no entries", line, re.I):
            empty = raw
            continue
        if FREEIPMI_HEADER.match(line):
            freeipmi = [c.strip().lower() for c in line.split("|")]
            continue
        cols = [c.strip() for c in line.split("|")]
        if freeipmi and len(cols) >= len(freeipmi) and cols[0].isdigit():
            # FreeIPMI: ID | Date | Time | Name | Type [| State] | Event; its events are assertions unless it says so
            by = dict(zip(freeipmi, cols[:len(freeipmi) - 1] + [" | ".join(cols[len(freeipmi) - 1:])]))
            event = by.get("event", "")
            direction = "Deasserted" if re.search(r"\bdeassert", event, re.I) else "Asserted"
            when, zone = _sel_when(by.get("date", ""), by.get("time", ""))
            records.append(SelRecord(cols[0], by.get("date", ""), by.get("time", ""), when, zone, by.get("type", ""),
                                     by.get("name", ""), event, direction, by.get("state", ""), raw))
            continue
        if len(cols) >= 5 and _HEX_ID.match(cols[0]):
            rid, date, time = cols[0], cols[1], cols[2]
            sensor_col = cols[3]
            event = cols[4]
            direction = ""
            detail = ""
            rest = cols[5:]
            if rest and rest[0].lower() in ("asserted", "deasserted"):
                direction = rest[0].capitalize() if rest[0].lower() == "asserted" else "Deasserted"
                detail = " | ".join(c for c in rest[1:] if c)
            elif rest:
                # an event text that holds a '|' of its own ("Uncorrectable ECC (UnCorrectable ECC |  DIMMD7)")
                for i, c in enumerate(rest):
                    if c.lower() in ("asserted", "deasserted"):
                        event = " | ".join([event] + rest[:i])
                        direction = "Asserted" if c.lower() == "asserted" else "Deasserted"
                        detail = " | ".join(x for x in rest[i + 1:] if x)
                        break
                else:
                    detail = " | ".join(c for c in rest if c)
            elif event.lower() in ("asserted", "deasserted"):
                direction, event = event.capitalize(), ""
            when, zone = (None, "") if date.replace(" ", "").lower().startswith("pre-init") else _sel_when(date, time)
            stype, sensor = split_sensor(sensor_col)
            records.append(SelRecord(rid, date, time, when, zone, stype, sensor, event, direction, detail, raw))
            continue
        cm = _CSV_SEL.match(line) if "|" not in line else None
        if cm is not None:  # ipmi-sel --comma-separated-output (and Supermicro's exports): ID,Date[,| ]Time,Name,Type,Event
            event = cm.group("event").strip()
            direction = "Deasserted" if re.search(r"\bde-?assert", event, re.I) else "Asserted"
            # "Lower Critical - Going Low - Assertion": the words ipmitool prints ("Lower Critical going low")
            event = re.sub(r"\s+-\s+", " ", re.sub(r"\s*-\s*(?:de-?)?assert(?:ion|ed)\s*$", "", event, flags=re.I))
            when, zone = _sel_when(cm.group("date"), cm.group("time"))
            records.append(SelRecord(cm.group("id"), cm.group("date"), cm.group("time"), when, zone,
                                     cm.group("type").strip(), cm.group("name").strip(), event, direction, "", raw))
            continue
        web = (_web_event(n, raw) or _ipmiutil_event(raw)) if "|" not in line else None
        if web is not None:
            records.append(web)
            continue
        if line.startswith("RecId Date/Time"):  # ipmiutil's header
            continue
        unread.append(raw)
    return SelFacts(tuple(records), empty, tuple(unread))


def detect_sel(text: str) -> float:
    """Confidence that ``text`` is ``ipmitool sel elist`` / ``sel list`` output, or FreeIPMI's ``ipmi-sel``."""
    lines = [ln.strip() for ln in text[:400_000].splitlines()[:2000] if ln.strip()]
    if not lines:
        return 0.0
    if _VERBOSE_RECORD.match(lines[0]) and any(ln.startswith(("Event Direction", "Description")) for ln in lines[:20]):
        return 0.95  # ipmitool sel get / sel list -v
    if len(lines) == 1 and lines[0].lower().startswith("sel has no entries"):
        return 0.95
    if FREEIPMI_HEADER.match(lines[0]) and len(lines) > 1:  # FreeIPMI ipmi-sel
        return 0.95
    csv_rows = sum(1 for ln in lines[:200] if _CSV_SEL.match(ln))
    if csv_rows >= 2 and csv_rows >= 0.8 * min(len(lines), 200):  # ipmi-sel --comma-separated-output
        return 0.9
    hits = 0
    for ln in lines:
        if ln.count("|") < 4:  # cheap first: a SEL row has at least 5 columns
            continue
        cols = [c.strip() for c in ln.split("|")]
        if _HEX_ID.match(cols[0]) and (
                _DATE.match(_cjk(cols[1])) or cols[1].replace(" ", "").lower().startswith("pre-init")) and (
                any(c.lower() in ("asserted", "deasserted") for c in cols[4:]) or split_sensor(cols[3])[0]):
            hits += 1
    if not hits:  # a BMC web interface's or ipmiutil's event lines: at least half of the lines
        if len(lines) > 40 and not any("|" not in ln and (_WEB_EVENT.match(ln) or _IPMIUTIL.search(ln)
                                                         or ln.startswith("RecId Date/Time")) for ln in lines[:20]):
            return 0.0  # cheap first: such a list starts with its events, not 20 lines of something else
        misses, allowed = 0, 0.5 * len(lines)
        for ln in lines:
            if not ("|" not in ln and (_WEB_EVENT.match(ln) or _IPMIUTIL.search(ln) or ln.startswith("RecId Date/Time"))):
                misses += 1
                if misses > allowed:  # fewer than half can match now: stop reading
                    return 0.0
        return 0.7
    return min(0.97, 0.6 + 0.4 * hits / len(lines))


# ------------------------------------------------------------------ is there a BMC? (SMBIOS type 38)


@dataclass(frozen=True)
class BmcDeclared:
    """What the firmware's SMBIOS tables say about a BMC (probe ``smbios_ipmi``).

    Attributes:
        smbios: the firmware's SMBIOS entries could be listed (``/sys/firmware/dmi/entries`` exists).
        type38: the type 38 'IPMI Device Information' entries (DMTF SMBIOS DSP0134, 7.39), by path.
        devices: the IPMI device nodes present (``/dev/ipmi0``, ``/dev/ipmi/0``).
    """

    smbios: bool = False
    type38: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()


def parse_smbios_ipmi(files: Mapping[str, str | None]) -> BmcDeclared:
    """The ``smbios_ipmi`` probe's matched paths -> :class:`BmcDeclared`. Never raises."""
    paths = [str(p) for p in files]
    return BmcDeclared(smbios=any(p.rstrip("/") == "/sys/firmware/dmi/entries" or p.startswith(
        "/sys/firmware/dmi/entries/") for p in paths),
        type38=tuple(sorted(p for p in paths if re.fullmatch(r"/sys/firmware/dmi/entries/38-\d+", p))),
        devices=tuple(sorted(p for p in paths if p.startswith("/dev/ipmi"))))


IPMI_ACCESS_ERROR = lazy_re(r"Could not open device at /dev/ipmi\S*|Unable to establish IPMI v[12] / RMCP\+? session|"
                               r"Unable to establish (?:IPMI v1\.5 / RMCP|LAN) session|"
                               r"Get (?:Device ID|SEL Info|SDR) command failed|Error obtaining SDR info", re.I)
"""ipmitool's own words when it cannot talk to a BMC (lib/ipmi_intf.c, src/plugins/open/open.c, lanplus.c)."""


def detect_ipmi_error(text: str) -> float:
    """Confidence that ``text`` is ipmitool failing to reach a BMC (its error lines, pasted alone)."""
    lines = [ln.strip() for ln in text.splitlines()[:50] if ln.strip()]
    if not lines or len(lines) > 12:
        return 0.0
    hits = sum(1 for ln in lines if IPMI_ACCESS_ERROR.search(ln))
    return 0.0 if not hits else min(0.95, 0.7 + 0.25 * hits / len(lines))


# ------------------------------------------------------------------ SDR and sensor


@dataclass(frozen=True)
class SdrReading:
    """One sensor as ``ipmitool sdr elist`` / ``sdr list`` / ``sensor`` prints it.

    Attributes:
        name: the sensor's name ("Inlet Temp", "PS1 Status").
        sensor_id: the sensor number as ``sdr elist`` prints it ("0Eh"), "" otherwise.
        status: ipmitool's status word, lower case: ``ok``, ``ns`` (no reading: absent or disabled), ``nc``,
            ``cr``, ``nr`` (non-critical, critical, non-recoverable; ``sensor`` says which side: ``lnc``, ``unc``,
            ``lcr``, ``ucr``, ``lnr``, ``unr``), ``na``; "" when the output has none.
        entity: the IPMI entity "id.instance" (``sdr elist``: "10.1" is power supply 1), "" otherwise.
        value: the reading in ``unit``; ``None`` for a discrete sensor or no reading.
        unit: "degrees C", "RPM", "Volts", "Watts", "Amps", "percent", "CFM", ... ; "" for a discrete sensor.
        states: a discrete sensor's asserted states as printed ("Presence detected", "Failure detected").
        state_bits: ``ipmitool sensor``'s discrete state column ("0x0100") as the 15 state bits of the Get Sensor
            Reading response (its bytes 3 and 4: offsets 0-7 in the low byte, 8-14 in the high; ipmitool prints
            byte 3 first, so "0x0100" is offset 0 asserted); ``None`` where not shown. Which event each offset
            means depends on the sensor type (IPMI v2.0 table 42-3), which this listing does not print.
        thresholds: ``sensor``'s thresholds that are set, in ``unit`` (keys from :data:`THRESHOLD_NAMES`).
        line: the raw line.
    """

    name: str
    sensor_id: str = ""
    status: str = ""
    entity: str = ""
    value: float | None = None
    unit: str = ""
    states: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)
    line: str = ""
    state_bits: int | None = None

    @property
    def entity_id(self) -> int | None:
        head = self.entity.split(".", 1)[0]
        return int(head) if head.isdigit() and len(head) <= 3 else None

    @property
    def temperature_c(self) -> float | None:
        return self.value if self.unit.lower() in ("degrees c", "c") else None

    @property
    def speed_rpm(self) -> float | None:
        return self.value if self.unit.upper() == "RPM" else None

    @property
    def power_w(self) -> float | None:
        return self.value if self.unit.lower() in ("watts", "w") else None


@dataclass(frozen=True)
class SdrFacts:
    """A sensor listing: its sensors in order, its format ("elist", "list", "sensor", "" when nothing was read)
    and the lines it could not read."""

    readings: tuple[SdrReading, ...] = ()
    form: str = ""
    unread: tuple[str, ...] = ()


_SENSOR_ID = lazy_re(r"^[0-9A-Fa-f]{1,2}h$")
_ENTITY = lazy_re(r"^\d{1,3}\.\d{1,3}$")
_STATUS = {"ok", "ns", "nc", "cr", "nr", "na", "lnc", "unc", "lcr", "ucr", "lnr", "unr"}
_READING = lazy_re(r"^(?P<v>[-+]?\d+(?:\.\d+)?)(?:\s*\(\+/-\s*[\d.]+\))?\s+(?P<u>[A-Za-z%][A-Za-z %/]*?)\s*$")


def _reading(text: str) -> tuple[float | None, str, tuple[str, ...]]:
    """(value, unit, states) of an ``sdr`` reading column: "19 degrees C", "0 Watts, Presence detected, Failure
    detected", "Disabled", "0x00"."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    value, unit = None, ""
    if parts:
        m = _READING.match(parts[0])
        if m and not parts[0].lower().startswith("0x"):
            value, unit = to_float(m.group("v")), m.group("u").strip()
            parts = parts[1:]
    return value, unit, tuple(parts)


_VERBOSE_ID = lazy_re(r"^Sensor ID\s*:\s*(?P<name>.*?)(?:\s+\((?P<num>0x[0-9A-Fa-f]+)\))?\s*$")
_VERBOSE_KEY = lazy_re(r"^\s+(?P<k>[A-Za-z][A-Za-z0-9 ()/-]*?)\s*:\s*(?P<v>.*?)\s*$")
_VERBOSE_STATUS = {"ok": "ok", "lower non-critical": "lnc", "upper non-critical": "unc", "lower critical": "lcr",
                   "upper critical": "ucr", "lower non-recoverable": "lnr", "upper non-recoverable": "unr",
                   "not available": "na", "no reading": "ns"}
"""``ipmitool sdr -v`` / ``sensor get``'s Status words (ipmitool's ipmi_sdr.c, ``ipmi_sdr_get_status``) -> the status
word of the other forms."""
_VERBOSE_THRESHOLD = {"lower non-recoverable": "lnr", "lower critical": "lcr", "lower non-critical": "lnc",
                      "upper non-critical": "unc", "upper critical": "ucr", "upper non-recoverable": "unr"}


def _parse_sdr_verbose(lines: list[str]) -> SdrFacts:
    """``ipmitool sdr -v`` / ``sdr get NAME`` / ``sensor get NAME``: one record per "Sensor ID : NAME (0xNN)" line,
    its fields indented under it ("Sensor Reading : 20 (+/- 1) degrees C", "Status : Lower Non-Critical", "Upper
    critical : 50.000", a discrete sensor's bracketed states under "States Asserted"). A reading's ``line`` is its
    Sensor ID line."""
    readings: list[SdrReading] = []
    cur: dict[str, Any] | None = None

    def close() -> None:
        if cur is None:
            return
        f = cur["fields"]
        value, unit, states = _reading(f.get("sensor reading", ""))
        states = tuple(s for s in states if not re.fullmatch(r"0x[0-9A-Fa-f]+|[0-9A-Fa-f]+h", s))  # a raw discrete byte
        if f.get("sensor reading", "").lower().startswith(("no reading", "not available", "disabled")):
            value, unit = None, ""
        status = _VERBOSE_STATUS.get(f.get("status", "").lower(), "")
        if not status and f.get("sensor reading", "").lower().startswith("no reading"):
            status = "ns"
        th = {key: v for name, key in _VERBOSE_THRESHOLD.items()
              if (v := to_float(f.get(name, ""))) is not None}
        asserted = tuple(s.strip("[] ") for s in cur["asserted"] if s.strip("[] "))
        entity = f.get("entity id", "").split(" ", 1)[0]
        readings.append(SdrReading(cur["name"], cur["num"], status, entity if _ENTITY.match(entity) else "", value,
                                   unit, states + asserted, th, cur["line"]))

    in_asserted = False
    for raw in lines:
        m = _VERBOSE_ID.match(raw.strip()) if not raw.startswith((" ", "\t")) else None
        if m:
            close()
            cur = {"name": m.group("name"), "num": m.group("num") or "", "line": raw, "fields": {}, "asserted": []}
            in_asserted = False
            continue
        if cur is None:
            continue
        k = _VERBOSE_KEY.match(raw)
        if k and not raw.strip().startswith("["):
            key = re.sub(r"\s*\(.*\)$", "", k.group("k")).strip().lower()  # "Sensor Type (Analog)" -> "sensor type"
            cur["fields"].setdefault(key, k.group("v"))
            in_asserted = key == "states asserted"  # its value is the sensor type; the states follow in brackets
        elif in_asserted and raw.strip().startswith("["):
            cur["asserted"].append(raw.strip())
    close()
    return SdrFacts(tuple(readings), "verbose" if readings else "", ())


_FREEIPMI_STATE = {"Nominal": "ok", "Warning": "nc", "Critical": "cr", "N/A": "ns"}
"""FreeIPMI's sensor State column (ipmi-sensors(8), ipmimonitoring(8): Nominal, Warning, Critical, or N/A) as the
ipmitool status words the rules read (ok, nc non-critical, cr critical, ns no reading)."""


def parse_sdr(text: str) -> SdrFacts:
    """``ipmitool sdr elist`` (5 columns; ``ipmitool -c`` prints them comma-separated), ``sdr list`` (3 columns),
    ``ipmitool sensor`` (10 columns) or FreeIPMI's ``ipmimonitoring`` / ``ipmi-sensors`` (7 columns) output, each
    line read by its own column count; or the verbose records of ``sdr -v`` / ``sdr get`` / ``sensor get``
    (:func:`_parse_sdr_verbose`). Never raises."""
    all_lines = text.splitlines()[:MAX_LINES]
    if any(_VERBOSE_ID.match(ln) for ln in all_lines) and any(
            ln.strip().lower().startswith(("sensor reading", "status")) for ln in all_lines):
        return _parse_sdr_verbose(all_lines)
    readings: list[SdrReading] = []
    unread: list[str] = []
    forms: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines()):
        if n >= MAX_LINES:
            unread.append(f"... output cut at {MAX_LINES} lines")
            break
        line = raw.strip()
        if not line:
            continue
        cols = [c.strip() for c in line.split("|")]
        if len(cols) == 1 and line.count(",") >= 4:  # `ipmitool -c sdr elist` / `-c sdr type X`: the same five, CSV
            cols = [c.strip() for c in line.split(",", 4)]
        name = cols[0]
        if len(cols) == 5 and _SENSOR_ID.match(cols[1]) and cols[2].lower() in _STATUS and (
                _ENTITY.match(cols[3]) or not cols[3]):
            value, unit, states = _reading(cols[4])
            readings.append(SdrReading(name, cols[1], cols[2].lower(), cols[3], value, unit, states, {}, raw))
            forms["elist"] = forms.get("elist", 0) + 1
        elif len(cols) >= 10 and (cols[2].lower() == "discrete" or cols[3].lower() in _STATUS):
            status = cols[3].lower() if cols[3].lower() in _STATUS else ""
            if cols[2].lower() == "discrete":
                bits = re.fullmatch(r"0x([0-9A-Fa-f]{2})([0-9A-Fa-f]{2})", cols[3])
                readings.append(SdrReading(name, status=status, line=raw, state_bits=int(bits.group(1), 16) | (
                    int(bits.group(2), 16) << 8) if bits else None))
            else:
                value = to_float(cols[1]) if cols[1].lower() != "na" else None
                th = {k: v for k, c in zip(THRESHOLD_NAMES, cols[4:10])
                      if c.lower() != "na" and (v := to_float(c)) is not None}
                readings.append(SdrReading(name, status=status, value=value, unit=cols[2], thresholds=th, line=raw))
            forms["sensor"] = forms.get("sensor", 0) + 1
        elif len(cols) == 7 and cols[0].isdigit() and cols[3] in _FREEIPMI_STATE:
            # FreeIPMI ipmimonitoring / ipmi-sensors: ID | Name | Type | State | Reading | Units | Event
            value = to_float(cols[4]) if cols[4] != "N/A" else None
            unit = "" if cols[5] == "N/A" else {"C": "degrees C", "F": "degrees F"}.get(cols[5], cols[5])
            event = cols[6].strip("'")
            states = () if event in ("OK", "N/A", "") else tuple(e.strip() for e in event.split("' '"))
            readings.append(SdrReading(cols[1], cols[0], _FREEIPMI_STATE[cols[3]], "", value, unit, states, {}, raw))
            forms["freeipmi"] = forms.get("freeipmi", 0) + 1
        elif len(cols) == 3 and cols[2].lower() in _STATUS:
            value, unit, states = _reading(cols[1])
            readings.append(SdrReading(name, status=cols[2].lower(), value=value, unit=unit, states=states, line=raw))
            forms["list"] = forms.get("list", 0) + 1
        else:
            unread.append(raw)
    form = max(forms, key=lambda k: forms[k]) if forms else ""
    return SdrFacts(tuple(readings), form, tuple(unread))


def detect_sdr(text: str) -> float:
    """Confidence that ``text`` is ``ipmitool sdr elist`` / ``sdr list`` / ``sensor`` output."""
    lines = [ln for ln in text.splitlines()[:2000] if ln.strip()]
    if not lines:
        return 0.0
    f = parse_sdr("\n".join(lines))
    if not f.readings:
        return 0.0
    if f.form == "verbose":  # one record is many lines: its Sensor ID and Sensor Reading/Status lines say enough
        return 0.9
    share = len(f.readings) / len(lines)
    has_unit = any(r.unit or r.states for r in f.readings)
    if share < 0.5 or not has_unit and f.form != "sensor":
        return 0.0
    return min(0.95, 0.55 + 0.4 * share)


# ------------------------------------------------------------------ how full the SEL is (ipmitool sel info, ipmi-sel -i)


@dataclass(frozen=True)
class SelInfo:
    """``ipmitool sel info`` or FreeIPMI's ``ipmi-sel -i`` (the IPMI Get SEL Info command, IPMI v2.0 section 31.2):
    ``entries``; ``free_bytes``; ``percent_used`` (ipmitool only); ``overflow`` (ipmitool's Overflow flag: events were
    dropped for lack of space; FreeIPMI's "Events dropped due to lack of space"); None where the output does not say.
    ``lines``: the lines read."""

    entries: int | None = None
    free_bytes: int | None = None
    percent_used: float | None = None
    overflow: bool | None = None
    lines: tuple[str, ...] = ()


_SELINFO_ROW = lazy_re(r"^\s*([A-Za-z#][\w #/()-]{1,45}?)\s*:\s*(.*?)\s*$")


def parse_sel_info(text: str) -> SelInfo | None:
    """The SEL's fill state from ``ipmitool sel info`` / ``ipmi-sel -i``; None when neither form is there. Never raises."""
    vals: dict[str, str] = {}
    lines: list[str] = []
    for ln in text.splitlines():
        m = _SELINFO_ROW.match(ln)
        if m:
            vals[m.group(1).strip().lower()] = m.group(2)
            lines.append(ln.rstrip())

    def num(*keys: str) -> str | None:
        for k in keys:
            m = re.match(r"\s*(\d+(?:\.\d+)?)", vals.get(k, ""))
            if m:
                return m.group(1)
        return None

    def flag(*keys: str) -> bool | None:
        for k in keys:
            v = vals.get(k, "").strip().lower()
            if v in ("true", "yes"):
                return True
            if v in ("false", "no"):
                return False
        return None

    entries = num("entries", "number of log entries")
    free = num("free space", "free space remaining")
    if entries is None and free is None:
        return None
    pct = num("percent used")
    return SelInfo(sat_int(entries.split(".")[0]) if entries is not None else None,
                   sat_int(free.split(".")[0]) if free is not None else None,
                   to_float(pct) if pct is not None else None, flag("overflow", "events dropped due to lack of space"),
                   tuple(lines))


def detect_sel_info(text: str) -> float:
    """0.95 for ``ipmitool sel info`` ("SEL Information" with "Percent Used"/"Free Space") or ``ipmi-sel -i``
    ("Number of log entries" with "Free space remaining")."""
    head = text[:20_000]
    if re.search(r"^SEL Information\s*$", head, re.M) and re.search(r"^(Percent Used|Free Space)\s*:", head, re.M):
        return 0.95
    if re.search(r"^Number of log entries\s*:", head, re.M) and re.search(r"^Free space remaining\s*:", head, re.M):
        return 0.95
    return 0.0


CHASSIS_FAULTS = ("power overload", "main power fault", "power control fault", "power fault", "drive fault",
                  "cooling/fan fault", "chassis intrusion", "interlock")
"""The fault fields of ``ipmitool chassis status`` (IPMI v2.0 Get Chassis Status, table 28-3: current power state and
misc. chassis state bits): ``true`` / ``active`` means the BMC reports that fault now."""
_CHASSIS_ROW = lazy_re(r"^\s*(System Power|Power overload|Interlock|Main Power fault|Power fault|Power control fault|"
                       r"Power restore policy|Last Power Event|Chassis intrusion|Front[- ]panel lockout|Drive Fault|"
                       r"Cooling/fan fault)\s*:\s*(.*?)\s*$", re.I)


@dataclass(frozen=True)
class ChassisStatus:
    """``ipmitool chassis status``: ``power`` (on/off, "" unread), ``faults`` (field -> the line) of the
    :data:`CHASSIS_FAULTS` reported true/active, ``clear`` the fault fields read false/inactive, ``lines`` every row read."""

    power: str
    faults: dict[str, str]
    clear: tuple[str, ...]
    lines: tuple[str, ...]


def parse_chassis_status(text: str) -> ChassisStatus | None:
    """``ipmitool chassis status``; None when no field of it is there. Never raises."""
    power, faults, clear, lines = "", {}, [], []
    for ln in text.splitlines():
        m = _CHASSIS_ROW.match(ln)
        if not m:
            continue
        key, val = m.group(1).lower(), m.group(2).strip().lower()
        lines.append(ln.rstrip())
        if key == "system power":
            power = val
        elif key in CHASSIS_FAULTS:
            if val in ("true", "active"):
                faults[key] = ln.strip()
            elif val in ("false", "inactive"):
                clear.append(key)
    if len(lines) < 3:
        return None
    return ChassisStatus(power, faults, tuple(clear), tuple(lines))


def detect_chassis_status(text: str) -> float:
    """0.95 for ``ipmitool chassis status`` (its "System Power" row with three or more of its fault rows)."""
    head = text[:20_000]
    if not re.search(r"^\s*System Power\s*:\s*(on|off)\b", head, re.M | re.I):
        return 0.0
    rows = len(re.findall(r"^\s*(Power overload|Interlock|Power fault|Power control fault|Drive Fault|Cooling/fan fault|"
                          r"Chassis intrusion)\s*:", head, re.M | re.I))
    return 0.95 if rows >= 3 else 0.0


# ------------------------------------------------------------------ Redfish: a BMC's JSON resources


@dataclass(frozen=True)
class RedfishStatus:
    """One resource's ``Status`` (DMTF Redfish Resource.Status): ``name`` (its Name, Id or @odata.id), ``health`` and
    ``rollup`` ("OK", "Warning", "Critical" or ""), ``state`` ("Enabled", "Absent", ...); ``top``: the status of a
    ComputerSystem, Chassis or Manager document itself (a roll-up of everything under it), not a named component's."""

    name: str
    health: str
    rollup: str
    state: str
    top: bool
    line: str


@dataclass(frozen=True)
class RedfishEntry:
    """A LogEntry (DMTF Redfish LogEntry): its ``severity`` ("OK", "Warning", "Critical"), ``message``, ``created``."""

    severity: str
    message: str
    created: str
    line: str


@dataclass(frozen=True)
class RedfishDoc:
    statuses: tuple[RedfishStatus, ...] = ()
    entries: tuple[RedfishEntry, ...] = ()
    documents: int = 0


_REDFISH_MARK = lazy_re(r'"@odata\.(?:id|type|context)"\s*:\s*"[^"]*(?:/redfish/v1|#\w+\.v\d|#\w+\.\w+)')


def _json_documents(text: str) -> list[Any]:
    """Every JSON object in ``text``: one document, JSON lines (one object a line), or objects after a typed command."""
    import json

    dec = json.JSONDecoder()
    docs: list[Any] = []
    i, n = 0, min(len(text), 4_000_000)
    while i < n and len(docs) < 5000:
        j = text.find("{", i)
        if j < 0:
            break
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            i = text.find("\n", j) + 1 or n  # not a JSON object here: try from the next line
            continue
        docs.append(obj)
        i = end
    return docs


def parse_redfish(text: str) -> RedfishDoc:
    """Redfish JSON pasted from a BMC (``curl https://BMC/redfish/v1/...``): each resource's ``Status`` (with the
    Health of the document itself kept apart as its roll-up) and each LogEntry's Severity and Message, from one
    document, several, or JSON lines. Never raises."""
    statuses: list[RedfishStatus] = []
    entries: list[RedfishEntry] = []
    docs = _json_documents(text)

    def walk(node: Any, top: bool, depth: int, key: str = "") -> None:
        if depth > 12 or len(statuses) + len(entries) > 5000:
            return
        if isinstance(node, list):
            for x in node:
                walk(x, False, depth + 1, key)
            return
        if not isinstance(node, dict):
            return
        st = node.get("Status")
        name = str(node.get("Name") or node.get("Id") or key or node.get("@odata.id") or "")
        if isinstance(st, dict) and ("Health" in st or "HealthRollup" in st):
            health, rollup = str(st.get("Health") or ""), str(st.get("HealthRollup") or "")
            line = f'"{name}": "Status": {{"State": "{st.get("State") or ""}", "Health": "{health}"' + (
                f', "HealthRollup": "{rollup}"' if rollup else "") + "}"
            statuses.append(RedfishStatus(name, health, rollup, str(st.get("State") or ""), top, line))
        if "Severity" in node and "Message" in node:
            entries.append(RedfishEntry(str(node.get("Severity") or ""), str(node.get("Message") or ""),
                                        str(node.get("Created") or ""),
                                        f'{node.get("Created") or ""} {node.get("Severity")}: {node.get("Message")}'.strip()))
        for k, v in node.items():
            if k != "Status" and isinstance(v, (dict, list)):
                walk(v, False, depth + 1, k)

    for d in docs:  # a system's or chassis's own Status rolls up every component under it
        walk(d, isinstance(d, dict) and bool(re.search(r"#(?:ComputerSystem|Chassis|Manager)\.", str(d.get("@odata.type")))),
             0)
    return RedfishDoc(tuple(statuses), tuple(entries), len(docs))


def detect_redfish(text: str) -> float:
    """0.9 for Redfish JSON: an object whose ``@odata.id`` / ``@odata.type`` names a Redfish resource (DMTF Redfish
    specification DSP0266: every resource carries them)."""
    head = text[:50_000]
    if "{" not in head or not _REDFISH_MARK.search(head):
        return 0.0
    return 0.9
