"""Kernel log parser: ``journalctl -k``, ``dmesg`` in every time format (plain ``[  5.1]``, ``-T``
ctime, ``--time-format iso``, ``-H``/``-e`` reltime ``[May19 19:57]`` / ``[  +0.000844]``, ``-d``
delta, with ``-x`` decode or ``-r`` raw prefixes), syslog / ``kern.log`` (``host kernel: ...``),
Talos ``kern: level: [ts]: ...``, ``/dev/kmsg`` records (``6,3964,206764307,-;msg``) and bare pasted lines; also
network daemons' carrier lines in a syslog (``systemd-networkd[N]: ib6: lost carrier``) for the link-flap rule.

What it extracts (each event keeps its raw lines, verbatim, as evidence):

* ``xid``: ``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., text`` (NVIDIA Xid catalog,
  docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Step 1: Determine Xid Code"),
  including the Xid 154 recovery action ("... to 0x1 (GPU Reset Required)") and the Xid a line
  says it follows ("... caused by previous Xid 149");
* ``gpu_fell_off``: "fallen off the bus" without an Xid number (NVSentinel issue #155 shows the
  three-line form);
* ``gpu_init``: ``RmInitAdapter failed``, ``rm_init_adapter failed``, "This PCI I/O region assigned
  to your NVIDIA device is invalid", ``nvidia: probe of ... failed``, "The NVIDIA probe routine
  failed", and the BAR / Above-4G hints around them (``BAR 1 ...: can't assign; no space``);
* ``gsp_timeout``: GSP RPC timeouts logged outside an Xid line;
* ``aer``: PCIe AER reports (severity, error type, the device and the port that reported it);
* ``pcie_limited``: "... available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at <port>";
* ``driver_conflict``: nouveau (or another driver) holding an NVIDIA GPU: "The NVIDIA probe
  routine was not called", "NVRM: GPU ... is already bound to ...", ``nouveau 0000:..`` lines;
* ``edac``: ``EDAC MC3: 1 UE memory read error on <DIMM label> (...)`` and CE lines;
* ``mce``: machine-check lines, with the bank status register decoded where the line prints it
  (``Machine Check Event: 0 Bank 8: fc00...``: UC bit = uncorrected) and CMCI storms;
  ``ghes``: APEI GHES ``{n}[Hardware Error]`` records;
* ``unrecognised``: GPU-driver lines that say error/fail/timeout but match no rule above, and
  kernel oops/BUG/hung-task reports.

Parsers never raise: :func:`parse_kernel_log` returns what it could read.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from wizard.common import to_float, sat_int
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re


# ------------------------------------------------------------------ line prefixes

_MONO = r"\[\s*(?P<mono>\d{1,9}\.\d{1,9})\]"  # seconds since boot: ten digits would be 300 years (an epoch stamp, UCX's)
_CTIME = (r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d{1,2} \d\d:\d\d:\d\d \d{4}"
          # dmesg -T in another locale (strftime's %a %b): "[一 8月 25 16:20:28 2025]", "[Пн авг 25 ...]"
          r"|[^\W\d_]{1,9}\.?\s+(?:[^\W\d_]{2,9}\.?|\d{1,2}\s?月)\s+\d{1,2} \d\d:\d\d:\d\d \d{4})\]")
_ISO = r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+[+-]\d\d:\d\d)"
_RELMIN = r"\[(?P<ts>[A-Z][a-z]{2} ?\d{1,2}(?: \d{4})? \d{1,2}:\d\d(?::\d\d)?)\]"
_RELDELTA = r"\[\s*(?P<ts>[+-]\d{1,10}(?:\.\d{1,9})?)\]"
_DELTA = r"\[\s*(?:(?P<mono>\d{1,10}\.\d{1,9})\s*)?<\s*(?P<ts>\d{1,10}\.\d{1,9})>\]"
"""Kernel timestamps as dmesg prints them (util-linux dmesg(1) --time-format): ``[  5.123456]``
(raw seconds since boot), ``-T``/ctime ``[Sun Feb 23 16:24:18 2025]``, iso, ``-H``/``-e``/reltime
(``[May19 19:57]`` at each new minute, then ``[  +0.000127]`` deltas) and ``-d``/delta
(``[    5.123456 <    0.000127>]``, ``[<    0.000127>]``)."""
_HOST_KERNEL = r"(?:(?P<host>\S+)\s+)?(?:kernel|earlyoom|systemd-oomd)(?:\[\d+\])?:[ \t]?"
"""The kernel's own journal/syslog tag, and the userspace OOM killers' (earlyoom, systemd-oomd), whose kills stand for the
kernel OOM killer's on the hosts that run them (earlyoom(1): "sending SIGTERM to process"; systemd-oomd(8))."""
_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Talos: "10.0.0.1: kern: warning: [2026-04-22T21:30:51.52643656Z]: NVRM: ..."
    ("talos", lazy_re(r"^(?:(?P<host>\S+): )?kern:\s+\w+:\s+\[(?P<ts>[^\]]+)\]:\s?(?P<rest>.*)$")),
    # journalctl -o short-monotonic: "[    5.123456] host kernel: msg"
    ("journal-monotonic", lazy_re(r"^" + _MONO + r"\s+" + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # syslog / journalctl -o short(-precise): "May  7 06:45:12 host kernel: ..." (any month word)
    ("syslog", lazy_re(r"^(?P<ts>[^\W\d_]{3,}\.?\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?)\s+"
                          + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # rsyslog RFC 3339 / journalctl -o short-iso: "2025-01-17T17:10:43+0000 host kernel: ..."
    ("syslog-iso", lazy_re(r"^(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+"
                              + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # journalctl -o short-delta: "[    5.123456 <    0.000127>] host kernel: msg"
    ("journal-delta", lazy_re(r"^" + _DELTA + r"\s+" + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # journalctl -o short-full: "Sun 2024-05-19 19:57:01 CEST host kernel: msg"
    ("journal-full", lazy_re(r"^(?P<ts>[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Za-z0-9+:-]+)?)\s+"
                                + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # journalctl -o short-unix: "1700000000.123456 host kernel: ..."
    ("journal-unix", lazy_re(r"^(?P<ts>\d{9,11}\.\d+)\s+" + _HOST_KERNEL + r"(?P<rest>.*)$")),
    # dmesg -x / --decode: "kern  :warn  : [  5.1] msg" or with an iso time
    ("dmesg-decode", lazy_re(r"^(?P<fac>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp"
                                r"|local[0-7])\s*:\s*(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*:\s?"
                                r"(?P<rest>.*)$")),
    # a journal or syslog line whose date and host the paste dropped: "kernel: pcieport 0000:03:04.0: AER: ..."
    ("kernel-tag", lazy_re(r"^kernel(?:\[\d+\])?:[ \t]?(?P<rest>.*)$")),
    # dmesg -r: "<4>[  5.1] msg"
    ("dmesg-raw", lazy_re(r"^<\d{1,3}>(?P<rest>.*)$")),
    # /dev/kmsg records: "6,3964,206764307,-;msg" (priority, sequence, microseconds since boot, flags)
    ("kmsg", lazy_re(r"^\d{1,3},\d+,(?P<usec>\d{1,15}),[-c+][^;]{0,40};(?P<rest>.*)$")),
    # dmesg -T / --ctime: "[Sun Feb 23 16:24:18 2025] msg"
    ("dmesg-ctime", lazy_re(r"^" + _CTIME + r"\s?(?P<rest>.*)$")),
    # dmesg: "[    5.123456] msg"
    ("dmesg", lazy_re(r"^" + _MONO + r"\s?(?P<rest>.*)$")),
    # dmesg --time-format iso: "2025-01-21T04:41:44,283302+00:00 msg"
    ("dmesg-iso", lazy_re(r"^" + _ISO + r"\s(?P<rest>.*)$")),
    # dmesg -H / -e / --time-format reltime: "[May19 19:57] msg" then "[  +0.000127] msg"
    ("dmesg-reltime", lazy_re(r"^" + _RELMIN + r"\s?(?P<rest>.*)$")),
    ("dmesg-reltime", lazy_re(r"^" + _RELDELTA + r"\s?(?P<rest>.*)$")),
    # dmesg -d / --time-format delta: "[    5.123456 <    0.000127>] msg", "[<    0.000127>] msg"
    ("dmesg-delta", lazy_re(r"^" + _DELTA + r"\s?(?P<rest>.*)$")),
)
_INNER_STAMPS: tuple[re.Pattern[str], ...] = tuple(
    lazy_re(r"^" + stamp + r"\s?(?P<rest>.*)$") for stamp in (_MONO, _CTIME, _ISO, _RELMIN, _RELDELTA, _DELTA))
"""The kernel's own stamp, in any dmesg time format, after a syslog/journal/decode/raw prefix."""
_JOURNAL_META = lazy_re(r"^-- (?:Boot [0-9a-f]+|Reboot|Logs begin at .*|Journal begins at .*|No entries"
                           r"|Journal started .*|Subject: .*)\s*--\s*$|^-- (?:Boot [0-9a-f]+|Reboot) --")
_BOOT_META = lazy_re(r"^-- (?:Boot [0-9a-f]+|Reboot) --")


@dataclass(frozen=True, eq=False)
class LogRecord:
    """One kernel message: its first line plus any continuation lines.

    Attributes:
        raw: the input lines, verbatim (evidence).
        msg: the message without the timestamp/host prefix; continuation lines joined by " ".
        stamp: the timestamp as printed ("" when none).
        mono_s: seconds since boot when the line carries a ``[seconds]`` stamp.
        host: host name from a syslog/journal prefix ("" when none).
        fmt: which prefix was recognised ("dmesg", "syslog", "talos", ..., "bare").
        line_no: 1-based line number of the first raw line.
        boot: index of the boot this record belongs to (0 = the first boot in the text).
    """

    raw: list[str]
    msg: str
    stamp: str = ""
    mono_s: float | None = None
    host: str = ""
    fmt: str = "bare"
    line_no: int = 0
    boot: int = 0
    rel_s: float | None = None  # ``dmesg -H``/reltime: the minute anchor plus the ``[+delta]`` stamps so far, seconds


@dataclass(frozen=True, eq=False)
class KernelEvent:
    """Something the checks judge, found in one record (plus related lines).

    Attributes:
        kind: "xid", "gpu_fell_off", "gpu_init", "gsp_timeout", "cc_fatal", "aer", "pcie_limited",
            "driver_conflict", "edac", "mce", "ghes", "link" (a NIC's carrier down/up), "sxid" (an NVSwitch error),
            "unrecognised".
        record: the record it was found in (its first raw line is the event's own line).
        bus_id: PCI address in sysfs form ("0000:9b:00.0"), "" when the line names none.
        fields: what was read (code, severity, label, ...), by kind.
        evidence: raw lines the event rests on (the record's lines first).
    """

    kind: str
    record: LogRecord
    bus_id: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    @property
    def boot(self) -> int:
        return self.record.boot


@dataclass(frozen=True)
class GpuInfo:
    """What the log says about one GPU: its serial and UUID from ``NVRM: GPU at PCI:...``."""

    bus_id: str
    serial: str = ""
    uuid: str = ""
    device_id: str = ""  # "10de:2b85" when the log shows it


_RENAMED = lazy_re(r"\b([\w.-]+): renamed from \w+")
"""udev naming a new network interface (the kernel's "<new>: renamed from <old>")."""


@dataclass(frozen=True)
class KernelLog:
    """Everything read from one kernel log text."""

    records: list[LogRecord] = field(default_factory=list)
    events: list[KernelEvent] = field(default_factory=list)
    gpus: dict[str, GpuInfo] = field(default_factory=dict)
    pci_ids: dict[str, str] = field(default_factory=dict)  # bus id -> "vvvv:dddd" (from pci enumeration)
    pci_class: dict[str, str] = field(default_factory=dict)  # bus id -> "0x030200"
    formats: set[str] = field(default_factory=set)
    named: dict[str, int] = field(default_factory=dict)
    """Network interfaces this log shows being named ("eth1 ... enp27s0f1np1: renamed from eth1"), each with the
    index of its record: an interface born in this log whose first word is "Link down" never had a link."""
    boots: int = 1
    lines: int = 0
    aer_received: list[KernelEvent] = field(default_factory=list)
    """Every AER "error (message) received" line, one per message the port's AER service took in, with
    ``fields`` port, severity, multiple and seconds (:func:`record_seconds`): the rate of corrected errors
    is counted from these (details may be missing: "can't find device of ID...")."""

    @property
    def last_boot(self) -> int:
        return self.boots - 1

    def is_nvidia_gpu(self, bus_id: str) -> bool:
        """True when the log shows ``bus_id`` is an NVIDIA GPU (NVRM lines, or vendor 10de with a
        display class in the PCI enumeration)."""
        if bus_id in self.gpus:
            return True
        vid = self.pci_ids.get(bus_id, "")
        cls = self.pci_class.get(bus_id, "")
        return vid.startswith("10de:") and (not cls or cls.startswith("0x03"))


# ------------------------------------------------------------------ helpers

_BDF_RE = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"


def bus_id(text: str) -> str:
    """"0000:9b:00" / "00000000:9B:00.0" / "9b:00.0" -> "0000:9b:00.0" (sysfs form). "" if empty."""
    b = (text or "").strip().lower()
    if not b:
        return ""
    parts = b.split(":")
    if len(parts) == 2:
        parts = ["0000"] + parts
    if len(parts) != 3:
        return b
    dom, bus, rest = parts
    dom = dom[-4:].rjust(4, "0")
    if "." not in rest:
        rest = rest + ".0"
    return f"{dom}:{bus}:{rest}"


def _strip_prefix(line: str) -> tuple[str, str, float | None, str, str] | None:
    """(fmt, stamp, mono_s, host, msg) for a line with a recognised prefix, else None. A dmesg stamp indented by the
    paste (a tab or spaces before "[   22.33]": held-out round 274) is read as if it began the line."""
    if line[:1] in (" ", "\t") and line.lstrip(" \t")[:1] == "[":
        line = line.lstrip(" \t")
    for fmt, rx in _PREFIXES:
        m = rx.match(line)
        if not m:
            continue
        gd = m.groupdict()
        rest = gd.get("rest") or ""
        stamp = (gd.get("ts") or "").strip()
        mono: float | None = None
        if gd.get("usec"):
            mono = int(gd["usec"]) / 1e6
        if gd.get("mono"):
            try:
                mono = float(gd["mono"])
            except ValueError:
                mono = None
        # a syslog/journal/decode/raw prefix may be followed by the kernel's own stamp
        for inner in _INNER_STAMPS:
            im = inner.match(rest)
            if im:
                igd = im.groupdict()
                if igd.get("mono"):
                    try:
                        mono = float(igd["mono"])
                    except ValueError:
                        pass
                elif igd.get("ts") and not stamp:
                    stamp = igd["ts"]
                rest = igd.get("rest") or ""
                break
        return fmt, stamp, mono, (gd.get("host") or ""), rest
    return None


def _reltime_anchor(stamp: str) -> float:
    """Seconds (on an arbitrary year-1900 clock) of a ``dmesg -H`` minute anchor ("May19 19:57"); 0 if unreadable."""
    m = re.match(r"([A-Z][a-z]{2}) ?(\d{1,2})(?: \d{4})? (\d{1,2}):(\d\d)(?::(\d\d))?$", stamp.strip("[] "))
    if not m:
        return 0.0
    try:
        t = datetime.datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}:{m.group(4)}:{m.group(5) or '00'}",
                                       "%b %d %H:%M:%S")
    except ValueError:
        return 0.0
    return (t - datetime.datetime(1900, 1, 1)).total_seconds()


def _unescape_rsyslog(lines: list[str]) -> list[str]:
    """rsyslog writes a control character inside a message as ``#`` and three octal digits
    ($EscapeControlCharactersOnReceive, on by default: ``#012`` a line feed, ``#011`` a tab; rsyslog.conf(5),
    https://www.rsyslog.com/doc/configuration/global/index.html): a multi-line kernel message (NVRM's "API mismatch")
    arrives as one line. Split it back into lines, each with the first line's syslog prefix."""
    if not any("#012" in ln or "#011" in ln for ln in lines):
        return lines
    out: list[str] = []
    for ln in lines:
        ln = ln.replace("#011", "\t")
        if "#012" not in ln:
            out.append(ln)
            continue
        first, *more = ln.split("#012")
        p = _strip_prefix(first)
        prefix = first[:len(first) - len(p[4])] if p is not None and p[4] and first.endswith(p[4]) else ""
        out.append(first)
        out.extend(prefix + part for part in more if part.strip())
    return out


_TOOL_TAG = lazy_re(r"\[(?:OK|PASS|PASSED|FAIL|FAILED|WARN|WARNING|INFO|ERROR|SKIP)\]\s")
"""A line a tool wrote around the kernel lines it quoted ("[OK] gpu-burn: GPU 0: OK"): its own status tag at the left
edge, never a continuation of the kernel message above it."""


def _records(text: str) -> tuple[list[LogRecord], set[str], int, int]:
    """Split text into records; returns (records, formats seen, number of boots, non-blank lines)."""
    lines = _unescape_rsyslog(text.splitlines())
    parsed = [_strip_prefix(ln) for ln in lines]
    any_prefixed = any(p is not None for p in parsed)
    records: list[LogRecord] = []
    formats: set[str] = set()
    boot = 0
    last_mono: float | None = None
    rel_clock: float | None = None
    nonblank = 0
    after_blank = False
    for i, (line, p) in enumerate(zip(lines, parsed)):
        if not line.strip():
            after_blank = True
            continue
        nonblank += 1
        stripped = line.strip()
        blank_before, after_blank = after_blank, False
        if _JOURNAL_META.match(stripped):
            if _BOOT_META.match(stripped) and records:
                boot += 1
                last_mono = None
            continue
        if p is None:
            # continuation of the previous message; not a line at the left edge after a blank line (held-out round
            # 119: an installer's own "WARNING: ..." after the kernel messages it quoted)
            if any_prefixed and records and not (blank_before and line[:1] not in " \t") and not _TOOL_TAG.match(line):
                records[-1].raw.append(line)
                _set(records[-1], "msg", (records[-1].msg + " " + stripped).strip())
                continue
            rec = LogRecord([line], stripped, line_no=i + 1, boot=boot)
        else:
            fmt, stamp, mono, host, msg = p
            formats.add(fmt)
            rec = LogRecord([line], msg.strip(), stamp, mono, host, fmt, i + 1, boot)
        if rec.fmt == "dmesg-reltime":  # deltas from the message before: a running clock, for rates
            st = rec.stamp.strip()
            if st[:1] in "+-":
                rel_clock = (rel_clock or 0.0) + (to_float(st) or 0.0)
            else:
                rel_clock = _reltime_anchor(st)
            _set(rec, "rel_s", rel_clock)
        new_boot = bool(re.match(r"Linux version \d", rec.msg)) and bool(records)
        if (not new_boot and rec.mono_s is not None and last_mono is not None
                and rec.mono_s < 5.0 and last_mono > rec.mono_s + 1.0):
            new_boot = True  # the kernel's clock restarted: a later boot in the same file
        if new_boot and records and records[-1].boot == boot:
            boot += 1
        _set(rec, "boot", boot)
        if rec.mono_s is not None:
            last_mono = rec.mono_s
        records.append(rec)
    return records, formats, boot + 1, nonblank


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


_STAMP_FORMATS: tuple[tuple[re.Pattern[str], str], ...] = (
    # dmesg -T: "Thu Feb 29 13:47:22 2024"
    (lazy_re(r"^(?P<b>[A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d{1,2} \d\d:\d\d:\d\d \d{4})$"), "%a %b %d %H:%M:%S %Y"),
    # iso, short-iso, rfc3339, short-full ("Thu 2024-02-29 13:47:22 UTC"; the zone is left out)
    (lazy_re(r"^(?:[A-Z][a-z]{2} )?(?P<b>\d{4}-\d\d-\d\d)[T ](?P<t>\d\d:\d\d:\d\d)(?:[.,](?P<f>\d+))?"),
     "%Y-%m-%d %H:%M:%S"),
    # syslog / short(-precise): "Nov  7 15:39:12(.123456)" (no year: differences only)
    (lazy_re(r"^(?P<b>[A-Z][a-z]{2})\.?\s+(?P<d>\d{1,2})\s+(?P<t>\d\d:\d\d:\d\d)(?:\.(?P<f>\d+))?"),
     "%b %d %H:%M:%S"),
)


_LOCAL_CTIME = lazy_re(r"[^\W\d_]{1,9}\.?\s+(?:[^\W\d_]{2,9}\.?|\d{1,2}\s?月)\s+(\d{1,2}) (\d\d):(\d\d):(\d\d) \d{4}")


def record_seconds(rec: LogRecord) -> float | None:
    """Seconds on one clock for the records of one log, for rates: the ``[seconds]`` since boot when the
    line has it, else the wall-clock stamp (``dmesg -T``, iso, syslog, journal short-iso/-full/-unix) as
    seconds, or the running clock of ``dmesg -H`` deltas; None when the line has no stamp that can be read. Only
    differences between records of the same log mean anything (a syslog stamp has no year)."""
    if rec.mono_s is not None:
        return rec.mono_s
    if rec.rel_s is not None:
        return rec.rel_s
    st = rec.stamp.strip()
    if re.fullmatch(r"\d{9,11}\.\d+", st):
        return float(st)
    local = _LOCAL_CTIME.fullmatch(st)
    if local and not _STAMP_FORMATS[0][0].match(st):  # dmesg -T in another locale: seconds within a month
        d, hh, mm, ss = (int(x) for x in local.groups())
        return d * 86400 + hh * 3600 + mm * 60 + ss
    for rx, fmt in _STAMP_FORMATS:
        m = rx.match(st)
        if not m:
            if fmt == "%b %d %H:%M:%S":  # a localised month word ("фев 12 00:48:02", journalctl in that locale)
                lm = re.match(r"^[^\W\d_]{3,}\.?\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)(?:\.(\d+))?", st)
                if lm:  # the month cannot be read: seconds within a month (rates are counted over minutes)
                    d, hh, mm, ss = (int(x) for x in lm.groups()[:4])
                    return d * 86400 + hh * 3600 + mm * 60 + ss + (float("0." + lm.group(5)) if lm.group(5) else 0.0)
            continue
        gd = m.groupdict()
        body = " ".join(x for x in (gd.get("b"), gd.get("d"), gd.get("t")) if x)
        try:
            t = datetime.datetime.strptime(body, fmt)
        except ValueError:
            return None
        frac = float("0." + gd["f"]) if gd.get("f") else 0.0
        return (t - datetime.datetime(1900 if "%Y" not in fmt else 1970, 1, 1)).total_seconds() + frac
    return None


def event_key(event: KernelEvent) -> str:
    """A stable key for one logged event, so the operator can acknowledge it with a reason.

    The key is the first 16 hex digits of SHA-256 over the normalised first line of the event:
    its kernel timestamp (``[seconds]`` since boot formatted to microseconds when present, else
    the printed timestamp) and its message with runs of whitespace collapsed. Host names and
    syslog prefixes are left out, so the same message read through ``dmesg`` and through
    ``journalctl -o short-monotonic`` gets the same key; a later repeat of the same message has
    a different timestamp and so a different key.
    """
    rec = event.record
    if rec.mono_s is not None:
        stamp = f"{rec.mono_s:.6f}"
    else:
        stamp = _norm(rec.stamp)
    first_msg = _norm(rec.msg)
    kind = event.kind
    if kind == "ghes" or kind == "aer":
        first_msg = _norm(event.fields.get("key_line", first_msg))
    return hashlib.sha256(f"{stamp}|{first_msg}".encode("utf-8", "replace")).hexdigest()[:16]


# ------------------------------------------------------------------ message patterns

AMDGPU_FAULT_RE = lazy_re(r"(?:\bamdgpu\b|\[drm:amdgpu\w*).*?(?P<what>uncorrectable hardware error\S*|"
                          r"GPU reset(?:\(\d+\))? failed|ASIC reset failed|GPU recovery failed|ring \S+ timeout|"
                          r"Failed to send message 0x[0-9a-fA-F]+, response 0x[0-9a-fA-F]+)", re.I)
"""The amdgpu driver's fault lines (Linux drivers/gpu/drm/amd/amdgpu: amdgpu_ras.c "uncorrectable hardware error",
amdgpu_job.c "ring %s timeout", amdgpu_device.c "GPU reset(%d) failed", the SMU's "Failed to send message")."""
AMDGPU_INIT_RE = lazy_re(r"(?:\bamdgpu\b|\[amdgpu\]).*?(?P<what>Fatal error during GPU init|"
                         r"probe of (?P<bus>\S+) failed with error -?\d+|hw_init of IP block <\w+> failed -?\d+|"
                         r"\w+ firmware loading failed|failed to load (?:\w+ )?firmware\b\S*)", re.I)
"""The amdgpu driver failing to bring a GPU up (Linux drivers/gpu/drm/amd/amdgpu: amdgpu_drv.c/amdgpu_device.c "Fatal
error during GPU init", the PCI core's "probe of %s failed with error %d", amdgpu_device.c "hw_init of IP block <%s>
failed %d", amdgpu_psp.c "PSP firmware loading failed")."""
AMDGPU_PAGEFAULT_RE = lazy_re(r"\bamdgpu\b.*?\[(?:gfx|mm)hub\d*\] (?:no-)?retry page fault\b(?:[^\n]*?pasid:(?P<pasid>\d+))?",
                              re.I)
"""amdgpu's GPU VM page fault ("[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32772)": Linux
drivers/gpu/drm/amd/amdgpu/gmc_v9_0.c, gmc_v9_0_process_interrupt): a GPU program touched an address its VM does not
map."""
SXID_RE = lazy_re(r"nvidia-nvswitch(?P<sw>\d+): SXid \((?:PCI:)?(?P<bus>" + _BDF_RE + r")\):\s*(?P<code>\d+),\s*"
                     r"(?P<rest>.*)$")
"""An NVSwitch error (the NVSwitch driver's SXid, NVIDIA Fabric Manager user guide, 'NVSwitch SXid Errors'): its
lines say "Non-fatal" or "Fatal" themselves; the "Data {...}" and "Severity N Engine instance" lines are context."""
XID_RE = lazy_re(r"NVRM: Xid \((?:PCI:)?(?P<bus>" + _BDF_RE + r")\):\s*(?P<code>\d+)?(?:,\s*(?P<rest>.*))?$")
XID_PID_RE = lazy_re(r"^pid=(?P<pid>'?<?[\w-]+>?'?),\s*(?:name=(?P<name>[^,]*),\s*)?(?P<text>.*)$")
XID_CAUSED_BY_RE = lazy_re(r"caused by previous Xid (\d{1,4})\b", re.I)
"""An Xid that names the Xid it follows ("Xid ...: 45, pid=..., Ch 00000001 caused by previous Xid 149"):
the NVIDIA Xid catalog's Xid 45 row says "not solo: follow the other Xid"."""
XID154_RE = lazy_re(r"recovery action changed from (?P<from_code>0x[0-9a-fA-F]+)\s*(?:\((?P<from>[^)]*)\))?"
                       r"\s*to\s*(?P<to_code>0x[0-9a-fA-F]+)\s*(?:\((?P<to>[^)]*)\)?)?", re.I)
LINK_RE = lazy_re(r"(?:systemd-networkd|NetworkManager)\[\d+\]:\s+(?P<if1>[\w.@-]+): (?P<s1>[Ll]ost carrier|[Gg]ained carrier)"
                     r"|\b(?P<if2>[\w.@-]+): (?:NIC )?Link is (?P<s2>Down|Up)\b"
                     r"|^mlx[45]_core \S+ (?P<if3>[\w.@-]+): Link (?P<s3>down|up)\b")
"""A network interface's carrier lost or regained: systemd-networkd / NetworkManager (``ib6: lost carrier``), Intel and
Broadcom NIC drivers (``NIC Link is Down``, ``Link is Up``), mlx5_core (``ens1f0np0: Link down``)."""
GPU_AT_RE = lazy_re(r"NVRM: GPU at (?:PCI:)?(?P<bus>" + _BDF_RE + r"):\s*(?P<uuid>GPU-[0-9a-fA-F-]+)")
SERIAL_RE = lazy_re(r"NVRM: GPU Board Serial Number:\s*(?P<serial>\S+)")
FELL_RE = lazy_re(r"fallen off the bus", re.I)
GPU_LOST_RE = lazy_re(r"\bNV_ERR_GPU_IS_LOST\b|\bGPU lost from the bus\b|\bstatus[ =]0x0*f\b", re.I)
"""The driver's status NV_ERR_GPU_IS_LOST (0x0000000F, "GPU lost from the bus": nvstatuscodes.h in NVIDIA's
open-gpu-kernel-modules) on an NVRM line: its calls into the GPU (GSP RPCs, frees) fail because the GPU no longer
answers on PCIe; read as a ``gpu_fell_off`` event with ``lost``."""
NV_GPU_BUS_RE = lazy_re(r"(?:NVRM: (?:The NVIDIA )?GPU(?: at)? (?:PCI:)?|PCI:|nvidia )(?P<bus>" + _BDF_RE + r")")
PCI_ID_RE = lazy_re(r"\(PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\)")
RMINIT_RE = lazy_re(r"RmInitAdapter failed|rm_init_adapter failed|RmInitAdapter: .*(?:fail|Cannot)|"
                    r"RM cannot boot|FSP boot cmds failed|Error preparing GSP-RM image|GSP firmware image version mismatch|"
                    r"kgspBootstrap\w*: Timeout waiting for GSP|returned from kgspWaitForRmInitDone\b"
                    r"|\bBooter failed with non-zero error code\b",
                    re.I)
"""The driver could not bring the GPU up: RmInitAdapter failing, on Hopper and later the GPU's FSP refusing the
driver's boot commands ("kfspSendBootCommands_GH100: FSP boot cmds failed. RM cannot boot.": held-out round 57), or
the GSP firmware file of another driver version than the module ("_kgspFwContainerVerifyVersion: GSP firmware image
version mismatch", "kgspInitRm_IMPL: Error preparing GSP-RM image": held-out round 187), or the GSP never booting
("kgspBootstrapRiscvOSEarly_GH100: Timeout waiting for GSP target mask release": held-out round 281), or GSP-RM
booting but never reporting its initialisation done (an assertion on the status "returned from
kgspWaitForRmInitDone(pGpu, pKernelGsp)": held-out round 310, NV_ERR_OPERATING_SYSTEM), or the Booter ucode that
loads GSP-RM failing ("s_executeBooterUcode_TU102: Booter failed with non-zero error code: 0xa": held-out round 334;
kernel_gsp_tu102.c in open-gpu-kernel-modules)."""
OPEN_RM_REFUSED_RE = lazy_re(r"Open nvidia\.ko is only ready for use on Data Center GPUs", re.I)
"""The open kernel module refusing a GeForce or workstation GPU in a release where their support was not yet
enabled by default (the NVIDIA driver README, "Using the open kernel modules", kernel_open.html: the
NVreg_OpenRmEnableUnsupportedGpus module parameter): the GPU is left uninitialised."""
BAR_INVALID_RE = lazy_re(r"This PCI I/O region assigned to your NVIDIA device is invalid"
                            r"|NVRM: BAR\d+ is \d+M @ 0x[0-9a-fA-F]+|The system BIOS may have misconfigured your"
                            r"|64-bit BAR mapped above 4GB|does not define a matching prefetchable memory window", re.I)
BAR_ASSIGN_RE = lazy_re(r"^(?:pci|pcieport) (?P<bus>" + _BDF_RE + r"):\s*(?P<bar>BAR \d+|bridge window)\b.*"
                           r"(?:can't assign|no space|failed to assign)", re.I)
BAR_ASSIGNED_RE = lazy_re(r"^(?:pci|pcieport) (?P<bus>" + _BDF_RE + r"):\s*(?P<bar>BAR \d+|bridge window)\b"
                             r"[^:]*(?:\[[^\]]*\])?:\s*assigned\b", re.I)
NV_PROBE_FAIL_RE = lazy_re(r"^(?:nvidia: probe of (?P<bus1>" + _BDF_RE + r") failed with error (?P<err1>-?\d+)"
                              r"|nvidia (?P<bus2>" + _BDF_RE + r"): probe with driver nvidia failed with error (?P<err2>-?\d+))")
GPU_LIB_CRASH_RE = lazy_re(r"\b(?:segfault|general protection(?: fault)?|trap \w+) .*\bin (?P<lib>lib(?:nccl|cuda|cudart|"
                              r"nvidia-[\w-]+|cublas\w*|cudnn\w*|nvrtc\w*)\.so[\w.]*)")
"""The kernel reporting a user process that crashed inside a GPU library ("pt_main_thread[2536443]: segfault at ...
error 4 in libnccl.so.2[...]")."""
UNSUPPORTED_GPU_RE = lazy_re(r"NVRM: installed in this system is not supported by|is not supported by the NVIDIA "
                                r"[\d.]+ driver release", re.I)
"""The driver release does not support the GPU it found (NVIDIA driver README, Appendix A: supported GPUs)."""
NVRM_PROBE_FAIL_RE = lazy_re(r"NVRM: (?:The NVIDIA probe routine failed for \d+ device|None of the NVIDIA "
                                r"(?:graphics adapters|devices) were initialized|No NVIDIA (?:graphics adapter|devices?|GPU) "
                                r"(?:probed|found))", re.I)
PROBE_NOT_CALLED_RE = lazy_re(r"NVRM: The NVIDIA probe routine was not called for (?P<n>\d+) device", re.I)
MODULE_SYMBOL_RE = lazy_re(r"^(?P<mod>nvidia(?:[_-][a-z]+)?|nv_peer_mem|gdrdrv): (?:Unknown symbol (?P<sym>\S+)|"
                           r"disagrees about version of symbol (?P<sym2>\S+))")
"""The module loader refusing an NVIDIA module (or the GPUDirect RDMA / GDRCopy module) because a symbol it needs is
missing from the running kernel or another module, or has another version (kernel/module.c: "Unknown symbol",
"disagrees about version of symbol"): the module was built for another kernel or RDMA stack."""
CONFLICT_HINT_RE = lazy_re(r"nouveau, rivafb, nvidiafb or rivatv|obtained ownership of the NVIDIA device", re.I)
ALREADY_BOUND_RE = lazy_re(r"NVRM: GPU (?P<bus>" + _BDF_RE + r") is already bound to (?P<drv>[\w-]+)")
NOUVEAU_RE = lazy_re(r"^(?:nouveau (?P<bus>" + _BDF_RE + r"):|nouveau\s+\[[^\]]*\]\[(?P<bus2>" + _BDF_RE + r")\]"
                        r"|\[drm\] Initialized nouveau .* for (?P<bus3>" + _BDF_RE + r"))")
GSP_RE = lazy_re(r"rpcRecvPoll timedout|Timeout after \d+s of waiting for RPC response|GSP RPC timeout"
                    r"|Rate limiting GSP RPC error prints|_kgspRpcRecvPoll|GPU marked for reset"
                    r"|_kgspLogRpcTimeout|\bGSP Timeout\b|_kgspIsHeartbeatTimedOut|GSP heartbeat timed out"
                    # a row of the GSP RPC history the driver dumps when an RPC failed, still pending (its last
                    # column 'y' where a finished call shows its duration): open-gpu-kernel-modules, kernel_gsp.c
                    # (_kgspLogRpcHistoryEntry)
                    r"|NVRM:\s+-?\d{1,3}\s+\d{1,4}\s+\w+\s+\d{1,12}(?:\s+0x[0-9a-f]{16}){4}\s+y\s*$", re.I)
CC_FATAL_RE = lazy_re(r"ConfCompute: Fatal error|Fatal error detected in GSP-DMA (?:en|de)crypt")
"""The driver's confidential-computing error state (H100 in CC mode: "confComputeSetErrorState_KERNEL: ConfCompute:
Fatal error hit!", after "Fatal error detected in GSP-DMA decrypt"): the GPU takes no more work until the
confidential VM and the GPU are restarted (NVIDIA Confidential Computing release notes, R550 TRD1)."""
RESET_REQUIRED_RE = lazy_re(r"NV_ERR_RESET_REQUIRED|\bReset required\b")
"""The driver's status NV_ERR_RESET_REQUIRED (0x62): a call into the GPU (often a GSP RPC) failed because the GPU is
in a state only a reset clears; read as a ``gsp_timeout`` event with ``reset_required``."""
"""GSP firmware that stopped answering, as the open and proprietary modules log it: RPC timeouts (the Xid 119
path) and the GSP heartbeat check (``_kgspIsHeartbeatTimedOut``), with or without an Xid line."""
AER_RECEIVED_RE = lazy_re(r"^(?P<drv>[\w-]+) (?P<port>" + _BDF_RE + r"): (?:AER: )?(?P<multi>Multiple )?"
                             r"(?P<sev>Corrected|Correctable|Uncorrected \((?:Non-Fatal|Fatal)\)|Uncorrectable "
                             r"\((?:Non-Fatal|Fatal)\)) error (?:message )?received(?: from)?:? ?(?P<src>.*)$", re.I)
AER_BUS_ERROR_RE = lazy_re(r"^(?:(?P<drv>[\w-]+) (?P<dev>" + _BDF_RE + r"): )?(?:AER: )?PCIe Bus Error: "
                              r"severity=(?P<sev>[^,]+), type=(?P<type>[^,]+)(?:, (?P<agent>.*))?$", re.I)
AER_DETAIL_RE = lazy_re(r"^(?P<drv>[\w-]+) (?P<dev>" + _BDF_RE + r"):\s+(?:AER:\s+)?(?:device \[(?P<vid>[0-9a-f]{4}:"
                           r"[0-9a-f]{4})\] error status/mask=(?P<st>\S+)|\[\s*(?P<bit>\d+)\s*\]\s*(?P<name>.*?)\s*$)", re.I)
AER_STATUS_RE = lazy_re(r"^(?P<drv>[\w-]+) (?P<dev>" + _BDF_RE + r"): (?:AER: )?aer_status: (?P<st>0x[0-9a-f]+)", re.I)
"""pci_print_aer()'s first line (firmware-first/GHES, DPC and EDR reports, a vfio-pci device's): the status register
without the "PCIe Bus Error: severity=" line; its severity follows from the error names listed under it
(:data:`AER_DEFAULT_SEVERITY`)."""
AER_DEFAULT_SEVERITY = {
    "dlp": "fatal", "sdes": "fatal", "fcp": "fatal", "rxof": "fatal", "malftlp": "fatal",
    "poisontlp": "nonfatal", "cmpltto": "nonfatal", "cmpltabrt": "nonfatal", "unxcmplt": "nonfatal", "ecrc": "nonfatal",
    "unsupreq": "nonfatal", "acsviol": "nonfatal", "uncorrinterr": "fatal", "blockedtlp": "nonfatal",
    "rxerr": "corrected", "badtlp": "corrected", "baddllp": "corrected", "rollover": "corrected",
    "timeout": "corrected", "nonfatalerr": "corrected", "corrinterr": "corrected", "headerof": "corrected",
}
"""An AER error's severity by its name as the kernel prints it (drivers/pci/pcie/aer.c, aer_*_error_string): the
PCIe Base Specification's default severity of each uncorrectable error (Uncorrectable Error Severity Register, 7.8.4.4:
Data Link Protocol, Surprise Down, Flow Control Protocol, Receiver Overflow, Malformed TLP and Uncorrectable Internal
Error default to Fatal), the correctable ones corrected."""
AER_FAIL_RE = lazy_re(r"^(?P<drv>[\w-]+) (?P<dev>" + _BDF_RE + r"): (?:AER: )?(?:can't recover|device recovery "
                         r"failed|Device recovery failed|AER: subordinate device reset failed)", re.I)
AER_CONTEXT_RE = lazy_re(r"^(?P<drv>[\w-]+) (?P<dev>" + _BDF_RE + r"): (?:AER: )?(?:broadcast error_detected message"
                            r"|device has no AER-aware driver|Error of this Agent is reported first|AER: .*"
                            r"|can't find device of ID\w+)", re.I)
IOMMU_FAULT_RE = lazy_re(
    r"(?:^(?P<drv>[\w-]+) (?P<dev1>" + _BDF_RE + r"): )?(?:AMD-Vi|iommu ivhd\d+): Event logged \[IO_PAGE_FAULT "
    r"(?:device=(?P<dev2>" + _BDF_RE + r") )?domain=0x[0-9a-fA-F]+ address=0x(?P<addr>[0-9a-fA-F]+)"
    r"|DMAR: ?\[(?:DMA|INTR-REMAP) (?:Read|Write)?[^\]]*\] (?:NO_PASID )?Request device \[(?P<dev3>" + _BDF_RE + r")\]"
    r"(?: PASID \w+)? fault (?:addr|index) (?:0x)?(?P<addr2>[0-9a-fA-F]+)")
"""An IOMMU translation fault: a device's DMA to an address its IOMMU domain does not map. AMD
(drivers/iommu/amd/iommu.c, amd_iommu_report_page_fault: "<driver> <bdf>: AMD-Vi: Event logged [IO_PAGE_FAULT
domain=... address=... flags=...]", older kernels "[IO_PAGE_FAULT device=07:00.0 domain=...]") and Intel VT-d
(drivers/iommu/intel/dmar.c, dmar_fault_do_one: "DMAR: [DMA Read NO_PASID] Request device [07:00.0] fault addr 0x...
[fault reason 0x06] PTE Read access is not set")."""


LIMITED_RE = lazy_re(r"^(?:pci|[\w-]+) (?P<dev>" + _BDF_RE + r"): (?P<avail>[\d.]+) Gb/s available PCIe bandwidth, "
                        r"limited by (?P<speed>[\d.]+) GT/s (?:PCIe )?x(?P<width>\d+) link(?: at (?P<port>[^\s(]+))?\s*"
                        r"(?:\(capable of (?P<cap>[\d.]+) Gb/s with (?P<cspeed>[\d.]+) GT/s (?:PCIe )?x(?P<cwidth>\d+) link\))?",
                        re.I)
PCI_ENUM_RE = lazy_re(r"^pci (?P<bus>" + _BDF_RE + r"): \[(?P<id>[0-9a-f]{4}:[0-9a-f]{4})\] type \d+ class "
                         r"(?P<cls>0x[0-9a-f]{6})", re.I)
EDAC_RE = lazy_re(r"^EDAC (?:\S+ )?MC(?P<mc>\d+): (?:(?P<count>\d+) )?(?P<type>CE|UE)\b(?P<rest>.*)$")
EDAC_LABEL_RE = lazy_re(r" on (?P<label>\S+?)(?: \(|\s*$)|labels? \"(?P<qlabel>[^\"]*)\"")
ECC_OFF_RE = lazy_re(r"^EDAC amd64: Node (?P<node>\d+): DRAM ECC disabled", re.I)
"""amd64_edac's word that a memory controller runs without ECC (drivers/edac/amd64_edac.c, ecc_enabled(): "Node %d:
DRAM ECC %s." then "ECC disabled in the BIOS or no ECC capability, module will not load")."""
EDAC_CONTEXT_RE = lazy_re(r"^EDAC (?:\S+ )?MC\d+: HANDLING MCE MEMORY ERROR|^EDAC .*: (?:Giving out|Ver:|ECC is)", re.I)
MCE_RE = lazy_re(r"^(?:mce: )?\[Hardware Error\]: (?P<rest>.*)$|^mce: (?P<rest2>.*)$")
MEMFAIL_RE = lazy_re(r"^(?:Memory failure|mce: Uncorrected hardware memory error)", re.I)
MCE_STATUS_RE = lazy_re(r"^(?:EDAC (?:\S+ )?MC(?P<mc>\d+): |(?:mce: )?\[Hardware Error\]: )?(?:CPU:? ?\d+:? )?"
                           r"(?:Machine Check(?: Event| Exception)?: ?(?P<mcg>[0-9a-fA-F]+) Bank (?P<bank>\d+): "
                           r"|.*?\bMC(?P<bank2>\d+)_STATUS\[[^\]]*\]: ?0x)(?P<status>[0-9a-fA-F]{16})\b")
"""A machine-check record with its raw IA32_MCi_STATUS value: the kernel's ``CPU 10: Machine Check:
0 Bank 8: <status>`` (arch/x86/kernel/cpu/mce/core.c ``__print_mce``), the EDAC copy ``EDAC skx
MC3: CPU 10: Machine Check Event: 0 Bank 8: <status>`` (drivers/edac/skx_common.c, sb_edac.c) and
AMD's ``MC27_STATUS[...]: 0x<status>`` (drivers/edac/mce_amd.c)."""
MCI_STATUS_BITS = {"val": 63, "over": 62, "uc": 61, "en": 60, "miscv": 59, "addrv": 58, "pcc": 57}
"""Bits of the machine-check bank status register (Intel SDM Vol. 3B, "IA32_MCi_STATUS MSRs": VAL
= valid, OVER = overflow (errors were lost), UC = uncorrected error, EN = error reporting enabled,
MISCV/ADDRV = MISC/ADDR registers valid, PCC = processor context corrupt; AMD64 APM Vol. 2
"MCi_STATUS" uses the same positions for these bits)."""
CMCI_STORM_RE = lazy_re(r"^CMCI storm detected", re.I)
"""Corrected machine-check interrupts arrived faster than the kernel's storm threshold, so it
switched that bank to polling (arch/x86/kernel/cpu/mce/intel.c): many corrected errors."""
CMCI_CONTEXT_RE = lazy_re(r"^CMCI storm subsided", re.I)


def decode_mci_status(hexstr: str) -> dict[str, bool]:
    """IA32_MCi_STATUS (16 hex digits) -> its flag bits by name (see :data:`MCI_STATUS_BITS`);
    empty when the value is not hexadecimal."""
    try:
        v = int(hexstr, 16)
    except (TypeError, ValueError):
        return {}
    return {name: bool(v >> bit & 1) for name, bit in MCI_STATUS_BITS.items()}
API_MISMATCH_RE = lazy_re(r"NVRM: API mismatch: the client (?:\S[^\n]{0,80}?\s+(?:NVRM:\s+)?)?has the version "
                          r"(\d+\.\d+(?:\.\d+)?)")
"""NVRM refusing a user-space driver library of another version than the loaded module (the NVIDIA driver README,
"Driver/library version mismatch"); newer drivers name the client process ("the client 'kwin_wayland' (pid 1005)
has the version 595.84", seen in 595-series kernel logs), its lines joined as one message."""
FATAL_OOPS_RE = lazy_re(r"^(?:BUG: unable to handle|BUG: kernel NULL pointer|kernel BUG at|Oops: |Kernel panic"
                           r"|general protection fault)")
"""The oops reports after which the kernel is tainted "D" (died) until a reboot (the kernel's "Tainted kernels"
page, https://docs.kernel.org/admin-guide/tainted-kernels.html): the task was killed mid-way, locks it held stay
held; unlike a WARNING or a hung-task report, which the kernel survives."""
GHES_RE = lazy_re(r"^\{(?P<n>\d+)\}\[Hardware Error\]:\s*(?P<rest>.*)$")
OOPS_RE = lazy_re(r"^(?:BUG: |kernel BUG at|Oops: |Kernel panic|general protection fault|WARNING: CPU: \d+ PID: \d+ at"
                     r"|INFO: task .* blocked for more than|watchdog: BUG: soft lockup|rcu: INFO: rcu_\w+ detected stall"
                     r"|INFO: rcu_\w+ detected stall|UBSAN: |Call Trace:"
                     r"|Bad or missing usercopy whitelist\?|usercopy: Kernel memory (?:exposure|overwrite) attempt)")
"""Kernel reports of a fault in kernel code: oops/BUG/panic, WARNINGs, hung tasks, lockups and RCU stalls, UBSAN, and
hardened usercopy's (mm/usercopy.c, CONFIG_HARDENED_USERCOPY) copy from or to a slab object outside its whitelist (a
module not written for this kernel: a warning with the fallback, a BUG without)."""
GPU_DRIVER_RE = lazy_re(r"^(?:NVRM|nvidia[\w-]*|\[drm\] \[nvidia-drm\]|\[drm:\w+ \[nvidia_drm\]\]|NVLink|nvlink)[:\s]", re.I)
"""A line of the NVIDIA driver's modules, nvidia-drm's included in both its forms ("[drm] [nvidia-drm] ..." and the
DRM core's error form "[drm:nv_drm_load [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to allocate
NvKmsKapiDevice": held-out round 310)."""
ERROR_WORD_RE = lazy_re(r"\b(?:error|errors|fail|failed|failure|fault|timed ?out|timeout|assert(?:ion)?|"
                           r"corrupt\w*|invalid|unable|cannot|can't|bad|halt(?:ed)?|hang|hung|lost|not responding)\b", re.I)
AER_SEVERITY_NORMAL = {"corrected": "corrected", "correctable": "corrected",
                       "uncorrected (non-fatal)": "nonfatal", "uncorrectable (non-fatal)": "nonfatal",
                       "uncorrected (fatal)": "fatal", "uncorrectable (fatal)": "fatal"}
GHES_SEVERITY_NORMAL = {"fatal": "fatal", "recoverable": "nonfatal", "corrected": "corrected", "info": "info"}


def _aer_requester(src: str, port: str) -> str:
    """Source device of an AER report: "0000:03:00.0" as printed, or decoded from "id=0010"
    (bus << 8 | devfn), in the reporting port's PCI domain."""
    src = (src or "").strip()
    m = re.match(_BDF_RE, src)
    if m and ":" in m.group(0):
        return bus_id(m.group(0))
    m = re.match(r"id=([0-9a-fA-F]{4})", src)
    if m:
        v = int(m.group(1), 16)
        dom = port.split(":")[0] if port.count(":") == 2 else "0000"
        return f"{dom}:{v >> 8:02x}:{(v >> 3) & 0x1f:02x}.{v & 7}"
    return ""


# ------------------------------------------------------------------ parser


def parse_kernel_log(text: str) -> KernelLog:
    """Parse a kernel log (any of the formats in the module docstring). Never raises."""
    log = KernelLog()
    try:
        _parse(text, log)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not hide the rest of the input
        log.events.append(KernelEvent("unrecognised", LogRecord([f"(bringup could not parse this log: {exc!r})"],
                                                               "parser error"), fields={"parser_error": True}))
    return log


def _parse(text: str, log: KernelLog) -> None:
    records, formats, boots, nonblank = _records(text)
    _set(log, "records", records)
    _set(log, "formats", formats)
    _set(log, "boots", boots)
    _set(log, "lines", nonblank)
    last_gpu: str = ""
    aer_open: dict[str, KernelEvent] = {}  # device -> last AER event (detail lines attach to it)
    aer_port_src: dict[str, str] = {}  # reporting port -> source device of the last "error received"
    aer_port_line: dict[str, str] = {}
    ghes_open: dict[str, KernelEvent] = {}
    bar_failed: dict[tuple[str, str], list[KernelEvent]] = {}
    recent_oops = -100
    for idx, rec in enumerate(records):
        msg = rec.msg
        # ---- context: GPU identity
        m = GPU_AT_RE.search(msg)
        if m:
            b = bus_id(m.group("bus"))
            _set(log.gpus.setdefault(b, GpuInfo(b)), "uuid", m.group("uuid"))
            last_gpu = b
            continue
        m = SERIAL_RE.search(msg)
        if m:
            if last_gpu:
                _set(log.gpus.setdefault(last_gpu, GpuInfo(last_gpu)), "serial", m.group("serial"))
            continue
        m = PCI_ENUM_RE.match(msg)
        if m:
            b = bus_id(m.group("bus"))
            log.pci_ids[b] = m.group("id").lower()
            log.pci_class[b] = m.group("cls").lower()
            continue
        m = _RENAMED.search(msg)
        if m:
            log.named.setdefault(m.group(1), len(log.records))
        # ---- a network interface's link went down or came up
        m = LINK_RE.search(msg)
        if m:
            iface = next(g for g in (m.group("if1"), m.group("if2"), m.group("if3")) if g)
            state = next(g for g in (m.group("s1"), m.group("s2"), m.group("s3")) if g).lower()
            up = state in ("gained carrier", "up")
            log.events.append(KernelEvent("link", rec, "", {"iface": iface, "up": up}, list(rec.raw)))
            continue
        # ---- Xid
        m = XID_RE.search(msg)
        if m:
            b = bus_id(m.group("bus"))
            log.gpus.setdefault(b, GpuInfo(b))
            f: dict[str, Any] = {"code": sat_int(m.group("code")) if m.group("code") else None}
            rest = (m.group("rest") or "").strip()
            pm = XID_PID_RE.match(rest)
            if pm:
                f["pid"] = pm.group("pid").strip("'")
                f["name"] = (pm.group("name") or "").strip()
                rest = pm.group("text")
            f["text"] = rest
            if f["code"] == 154:
                am = XID154_RE.search(rest)
                if am:
                    f["action_code"] = am.group("to_code").lower()
                    f["action"] = (am.group("to") or "").strip()
                    f["from_action"] = (am.group("from") or "").strip()
            if FELL_RE.search(rest):
                f["fell_off"] = True
            cm = XID_CAUSED_BY_RE.search(rest)
            if cm:
                f["caused_by"] = sat_int(cm.group(1))
            log.events.append(KernelEvent("xid", rec, b, f, list(rec.raw)))
            continue
        if "NVRM: Xid" in msg:  # an Xid line cut before its code
            bm = re.search(r"\((?:PCI:)?(?P<bus>" + _BDF_RE + r")", msg)
            log.events.append(KernelEvent("xid", rec, bus_id(bm.group("bus")) if bm else "", {"code": None, "text": msg},
                                          list(rec.raw)))
            continue
        # ---- GPU fell off the bus (no Xid)
        if FELL_RE.search(msg):
            bm = NV_GPU_BUS_RE.search(msg)
            b = bus_id(bm.group("bus")) if bm else ""
            ev = list(rec.raw)
            if not b:  # syslog may split "The NVIDIA GPU <bus>" and "fallen off the bus" into records
                for back in range(idx - 1, max(-1, idx - 4), -1):
                    bm = NV_GPU_BUS_RE.search(records[back].msg)
                    if bm:
                        b = bus_id(bm.group("bus"))
                        ev = list(records[back].raw) + ev
                        break
            pid = PCI_ID_RE.search(msg)
            if b and pid:
                _set(log.gpus.setdefault(b, GpuInfo(b)), "device_id", pid.group("id").lower())
            log.events.append(KernelEvent("gpu_fell_off", rec, b, {}, ev))
            continue
        if "NVRM" in msg and GPU_LOST_RE.search(msg):
            bm = NV_GPU_BUS_RE.search(msg) or re.search(r"(?:PCI:|GPU at PCI:)(?P<bus>" + _BDF_RE + r")", msg)
            log.events.append(KernelEvent("gpu_fell_off", rec, bus_id(bm.group("bus")) if bm else "", {"lost": True},
                                          list(rec.raw)))
            continue
        # ---- driver could not initialise the GPU
        if RMINIT_RE.search(msg):
            bm = re.search(r"GPU (?P<bus>" + _BDF_RE + r")", msg)
            b = bus_id(bm.group("bus")) if bm else ""
            log.events.append(KernelEvent("gpu_init", rec, b, {"what": "rminit"}, list(rec.raw)))
            continue
        if OPEN_RM_REFUSED_RE.search(msg):
            ev = [ln for r in records[idx:idx + 4] if "NVRM" in r.msg for ln in r.raw]
            log.events.append(KernelEvent("gpu_init", rec, "", {"what": "open_refused"}, ev))
            continue
        if re.match(r"NVRM: (?:To force use of Open nvidia\.ko|'OpenRmEnableUnsupportedGpus' kernel module parameter"
                    r"|in the README\.)", msg):
            continue  # the rest of the open module's refusal: context
        if BAR_INVALID_RE.search(msg):
            bm = re.search(r"\(PCI:(?P<bus>" + _BDF_RE + r")\)", msg)
            b = bus_id(bm.group("bus")) if bm else ""
            log.events.append(KernelEvent("gpu_init", rec, b, {"what": "bar_invalid", "hint": "bar"}, list(rec.raw)))
            continue
        m = BAR_ASSIGN_RE.match(msg)
        if m:
            b, bar = bus_id(m.group("bus")), m.group("bar").lower()
            space = "io" if re.search(r"\[io\b", msg) else "mem" if re.search(r"\[mem\b", msg) else ""
            ev_bar = KernelEvent("gpu_init", rec, b, {"what": "bar_assign", "hint": "bar", "bar": bar, "space": space},
                                 list(rec.raw))
            bar_failed.setdefault((b, bar), []).append(ev_bar)
            log.events.append(ev_bar)
            continue
        m = BAR_ASSIGNED_RE.match(msg)
        if m:  # a later pass of the resource allocator placed it after all
            for ev_bar in bar_failed.pop((bus_id(m.group("bus")), m.group("bar").lower()), []):
                ev_bar.fields["resolved"] = True
            continue
        m = NV_PROBE_FAIL_RE.match(msg)
        if m:
            b = bus_id(m.group("bus1") or m.group("bus2") or "")
            log.events.append(KernelEvent("gpu_init", rec, b, {"what": "probe_failed",
                                                               "error": m.group("err1") or m.group("err2")},
                                          list(rec.raw)))
            continue
        # ---- AMD GPUs: the amdgpu driver's fault lines (RAS, a hang, a reset that failed, an SMU that stopped answering)
        m = AMDGPU_PAGEFAULT_RE.search(msg) if "page fault" in msg else None
        if m:
            bm = re.search(r"\bamdgpu (" + _BDF_RE + r"):", msg)
            log.events.append(KernelEvent("amdgpu_pagefault", rec, bus_id(bm.group(1)) if bm else "",
                                          {"pasid": m.group("pasid") or ""}, list(rec.raw)))
            continue
        m = AMDGPU_INIT_RE.search(msg) if "amdgpu" in msg else None
        if m:
            bm = re.search(r"\bamdgpu (" + _BDF_RE + r"):", msg)
            b = m.group("bus") or (bm.group(1) if bm else "")
            log.events.append(KernelEvent("amdgpu_init", rec, bus_id(b) if re.fullmatch(_BDF_RE, b) else "",
                                          {"what": m.group("what").strip().rstrip("!.")}, list(rec.raw)))
            continue
        m = AMDGPU_FAULT_RE.search(msg) if "amdgpu" in msg or "[drm" in msg else None
        if m:
            bm = re.search(r"\bamdgpu (" + _BDF_RE + r"):", msg)
            log.events.append(KernelEvent("amdgpu_fault", rec, bus_id(bm.group(1)) if bm else "",
                                          {"what": m.group("what").strip().rstrip("!.")}, list(rec.raw)))
            continue
        # ---- NVSwitch errors (SXid): one event per "Fatal"/"Non-fatal" line, the Data/Severity lines as evidence
        m = SXID_RE.search(msg)
        if m:
            rest = m.group("rest")
            sx = re.match(r"(Non-fatal|Fatal)\b,?\s*(.*)$", rest, re.I)
            if sx:
                log.events.append(KernelEvent("sxid", rec, bus_id(m.group("bus")),
                                              {"code": sat_int(m.group("code")), "fatal": sx.group(1).lower() == "fatal",
                                               "switch": m.group("sw"), "text": sx.group(2)}, list(rec.raw)))
            continue
        # ---- an NVIDIA or GPUDirect module that does not fit the running kernel or RDMA stack
        m = MODULE_SYMBOL_RE.match(msg)
        if m:
            log.events.append(KernelEvent("driver_conflict", rec, "", {"what": "unknown_symbol",
                                                                       "module": m.group("mod"),
                                                                       "symbol": m.group("sym") or m.group("sym2")},
                                          list(rec.raw)))
            continue
        # ---- user space and kernel module from two driver versions (NVRM prints it over three or four lines)
        m = API_MISMATCH_RE.search(msg)
        if m:
            near = " ".join(r.msg for r in records[idx:idx + 3])
            km = re.search(r"kernel module has\s+(?:NVRM:\s+)?the version (\d+\.\d+(?:\.\d+)?)", near)
            ev = [ln for r in records[idx:idx + 4] if "NVRM" in r.msg for ln in r.raw]
            log.events.append(KernelEvent("driver_conflict", rec, "", {"what": "api_mismatch", "client": m.group(1),
                                                                       "module": km.group(1) if km else ""}, ev))
            continue
        if re.match(r"NVRM: (?:this kernel module has the version|make sure that this kernel module|components have "
                    r"the same version)", msg):
            continue  # the rest of the API-mismatch message: context
        # ---- driver conflicts (nouveau / nova holding the GPU)
        m = PROBE_NOT_CALLED_RE.search(msg)
        if m:
            ev = list(rec.raw)
            for nxt in records[idx + 1: idx + 4]:
                if CONFLICT_HINT_RE.search(nxt.msg) or "NVRM:" in nxt.msg:
                    ev.extend(nxt.raw)
            log.events.append(KernelEvent("driver_conflict", rec, "", {"what": "probe_not_called",
                                                                       "devices": sat_int(m.group("n"))}, ev))
            continue
        m = ALREADY_BOUND_RE.search(msg)
        if m:
            log.events.append(KernelEvent("driver_conflict", rec, bus_id(m.group("bus")),
                                          {"what": "already_bound", "driver": m.group("drv")}, list(rec.raw)))
            continue
        m = NOUVEAU_RE.match(msg)
        if m:
            b = bus_id(m.group("bus") or m.group("bus2") or m.group("bus3") or "")
            log.events.append(KernelEvent("driver_conflict", rec, b, {"what": "nouveau", "driver": "nouveau"},
                                          list(rec.raw)))
            continue
        if CONFLICT_HINT_RE.search(msg):
            continue  # the explanation printed with "probe routine was not called": context only
        if UNSUPPORTED_GPU_RE.search(msg):
            # "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2330)" / "NVRM: installed in this system is not
            # supported by the" / "NVRM: NVIDIA 550.90.07 driver release.": the GPU is named on the line before
            near = " ".join(r.msg for r in records[max(0, idx - 1):idx + 2])
            bm = re.search(r"NVIDIA GPU (?P<bus>" + _BDF_RE + r")", near)
            rel = re.search(r"NVIDIA (\d+\.\d+(?:\.\d+)?) driver release", near)
            pid = PCI_ID_RE.search(near)
            ev = [r.raw[0] for r in records[max(0, idx - 1):idx + 2] if r.raw]
            log.events.append(KernelEvent("gpu_init", rec, bus_id(bm.group("bus")) if bm else "",
                                          {"what": "unsupported", "release": rel.group(1) if rel else "",
                                           "pci_id": pid.group("id").lower() if pid else ""}, ev))
            continue
        if NVRM_PROBE_FAIL_RE.search(msg):
            log.events.append(KernelEvent("gpu_init", rec, "", {"what": "nvrm_probe_failed"}, list(rec.raw)))
            continue
        # ---- GSP
        if CC_FATAL_RE.search(msg):
            bm = re.search(r"(?:PCI:|GPU at PCI:)(?P<bus>" + _BDF_RE + r")", msg)
            log.events.append(KernelEvent("cc_fatal", rec, bus_id(bm.group("bus")) if bm else "", {}, list(rec.raw)))
            continue
        if RESET_REQUIRED_RE.search(msg):
            bm = re.search(r"(?:PCI:|GPU at PCI:)(?P<bus>" + _BDF_RE + r")", msg)
            log.events.append(KernelEvent("gsp_timeout", rec, bus_id(bm.group("bus")) if bm else "",
                                          {"reset_required": True}, list(rec.raw)))
            continue
        if GSP_RE.search(msg):
            bm = re.search(r"(?:PCI:|GPU at PCI:)(?P<bus>" + _BDF_RE + r")", msg)
            b = bus_id(bm.group("bus")) if bm else ""
            log.events.append(KernelEvent("gsp_timeout", rec, b, {}, list(rec.raw)))
            continue
        # ---- an IOMMU blocked a device's DMA
        m = IOMMU_FAULT_RE.search(msg)
        if m:
            dev = bus_id(m.group("dev1") or m.group("dev2") or m.group("dev3") or "")
            log.events.append(KernelEvent("iommu_fault", rec, dev, {"driver": m.group("drv") or "",
                                                                    "vendor": "AMD-Vi" if m.group("addr") else "DMAR"},
                                          list(rec.raw)))
            continue
        # ---- PCIe "limited by"
        m = LIMITED_RE.match(msg)
        if m:
            gd = m.groupdict()
            log.events.append(KernelEvent("pcie_limited", rec, bus_id(gd["dev"]), {
                "avail_gbit_s": gd["avail"], "speed_gts": gd["speed"], "width": gd["width"],
                "port": bus_id(gd["port"]) if re.match(_BDF_RE, gd["port"] or "") else gd["port"],
                "cap_gbit_s": gd.get("cap") or "", "cap_speed_gts": gd.get("cspeed") or "",
                "cap_width": gd.get("cwidth") or ""}, list(rec.raw)))
            continue
        # ---- AER
        m = AER_RECEIVED_RE.match(msg)
        if m:
            port = bus_id(m.group("port"))
            aer_port_src[port] = _aer_requester(m.group("src"), port)
            aer_port_line[port] = rec.raw[0]
            sev_raw = m.group("sev").strip()
            log.aer_received.append(KernelEvent("aer_received", rec, port, {
                "port": port, "source": aer_port_src[port], "multiple": bool(m.group("multi")),
                "severity": AER_SEVERITY_NORMAL.get(sev_raw.lower(), "nonfatal" if "uncorr" in sev_raw.lower()
                                                    else "corrected"),
                "seconds": record_seconds(rec)}, [rec.raw[0]]))
            continue
        m = AER_BUS_ERROR_RE.match(msg)
        if m:
            dev = bus_id(m.group("dev") or "")
            sev_raw = m.group("sev").strip()
            sev = AER_SEVERITY_NORMAL.get(sev_raw.lower(), "nonfatal" if "uncorr" in sev_raw.lower() else "corrected")
            if m.group("drv") == "pcieport":
                port, source = dev, dev  # the port found the error in its own registers
            else:  # newer kernels print the source device; the "received" line names its port
                port = next((p for p, s_ in reversed(list(aer_port_src.items())) if s_ == dev), "")
                source = dev
            ev = ([aer_port_line[port]] if port in aer_port_line else []) + list(rec.raw)
            f = {"severity": sev, "severity_text": sev_raw, "type": m.group("type").strip(),
                 "agent": (m.group("agent") or "").strip(), "driver": m.group("drv") or "",
                 "port": port, "source": source or "", "errors": [], "key_line": rec.msg}
            event = KernelEvent("aer", rec, dev, f, ev)
            log.events.append(event)
            if dev:
                aer_open[dev] = event
            continue
        m = AER_STATUS_RE.match(msg)
        if m:  # held-out round 50: vfio-pci's "AER: aer_status:" and "[18] MalfTLP (First)" with no severity line
            dev = bus_id(m.group("dev"))
            f = {"severity": "", "severity_text": f"aer_status {m.group('st')}", "type": "", "agent": "",
                 "driver": m.group("drv"), "port": dev if m.group("drv") == "pcieport" else "", "source": dev,
                 "errors": [], "key_line": rec.msg, "severity_from_names": True}
            event = KernelEvent("aer", rec, dev, f, list(rec.raw))
            log.events.append(event)
            aer_open[dev] = event
            continue
        m = AER_DETAIL_RE.match(msg)
        if m and bus_id(m.group("dev")) in aer_open:
            event = aer_open[bus_id(m.group("dev"))]
            event.evidence.extend(rec.raw)
            if m.group("vid"):
                event.fields["pci_id"] = m.group("vid").lower()
            elif m.group("name"):
                name = re.sub(r"\s*\(First\)\s*$", "", m.group("name")).strip()
                event.fields["errors"].append(name)
                if event.fields.get("severity_from_names"):
                    rank = {"": 0, "corrected": 1, "nonfatal": 2, "fatal": 3}
                    sev = AER_DEFAULT_SEVERITY.get(name.lower(), "nonfatal")
                    if rank[sev] > rank[str(event.fields["severity"])]:
                        event.fields["severity"] = sev
            continue
        m = AER_FAIL_RE.match(msg)
        if m:
            dev = bus_id(m.group("dev"))
            if m.group("drv").lower() == "nvidia":  # the NVIDIA driver owns it: a GPU
                log.gpus.setdefault(dev, GpuInfo(dev))
            prior = aer_open.get(dev)
            f = {"severity": "fatal", "severity_text": "recovery failed", "type": "", "agent": "",
                 "driver": m.group("drv"), "port": dev if m.group("drv") == "pcieport" else "",
                 "source": "", "errors": [], "recovery_failed": True, "key_line": rec.msg}
            log.events.append(KernelEvent("aer", rec, dev, f, (prior.evidence[-4:] if prior else []) + list(rec.raw)))
            continue
        m = AER_CONTEXT_RE.match(msg)
        if m:
            dev = bus_id(m.group("dev"))
            target = aer_open.get(dev) or (list(aer_open.values())[-1] if aer_open else None)
            if target is not None:
                target.evidence.extend(rec.raw)
                if "AER-aware" in msg and m.group("drv").lower().startswith("nvidia"):
                    target.fields["affects_gpu"] = dev
                    log.gpus.setdefault(dev, GpuInfo(dev))
            continue  # other "AER:" lines (enabled with IRQ ...) are not error reports
        # ---- host memory: EDAC, MCE, APEI GHES
        m = MCE_STATUS_RE.match(msg)
        if m:
            bits = decode_mci_status(m.group("status"))
            if bits.get("val"):
                sev = "uncorrected" if bits.get("uc") else "corrected"
                log.events.append(KernelEvent("mce", rec, "", {
                    "severity": sev, "text": msg, "status": m.group("status").lower(),
                    "bank": sat_int(m.group("bank") or m.group("bank2") or 0),
                    "mc": sat_int(m.group("mc")) if m.group("mc") else None, "decoded": True,
                    "overflow": bits.get("over", False), "pcc": bits.get("pcc", False)}, list(rec.raw)))
                continue
        if CMCI_STORM_RE.match(msg):
            log.events.append(KernelEvent("mce", rec, "", {"severity": "corrected", "storm": True, "text": msg},
                                          list(rec.raw)))
            continue
        if CMCI_CONTEXT_RE.match(msg):
            continue
        m = EDAC_RE.match(msg)
        if m:
            lm = EDAC_LABEL_RE.search(m.group("rest"))
            label = ((lm.group("label") or lm.group("qlabel")) if lm else "") or ""
            log.events.append(KernelEvent("edac", rec, "", {
                "mc": sat_int(m.group("mc")), "count": sat_int(m.group("count") or 1), "type": m.group("type"),
                "label": label, "detail": m.group("rest").strip()}, list(rec.raw)))
            continue
        m = ECC_OFF_RE.match(msg)
        if m:
            log.events.append(KernelEvent("host_ecc_off", rec, "", {"node": m.group("node")}, list(rec.raw)))
            continue
        if EDAC_CONTEXT_RE.match(msg):
            continue
        m = GHES_RE.match(msg)
        if m:
            n, rest = m.group("n"), m.group("rest")
            if rest.lower().startswith("hardware error from apei") or n not in ghes_open:
                event = KernelEvent("ghes", rec, "", {"severity": "", "section": "", "source_no": n,
                                                      "key_line": rec.msg}, list(rec.raw))
                ghes_open[n] = event
                log.events.append(event)
                continue
            event = ghes_open[n]
            event.evidence.extend(rec.raw)
            low = rest.lower()
            sm = re.match(r"event severity:\s*(\w+)", low)
            if sm:
                event.fields["severity"] = GHES_SEVERITY_NORMAL.get(sm.group(1), sm.group(1))
            sm = re.match(r"section_type:\s*(.+)$", low)
            if sm:
                event.fields["section"] = sm.group(1).strip()
            sm = re.match(r"device_id:\s*(" + _BDF_RE + r")\s*$", rest)
            if sm:
                _set(event, "bus_id", bus_id(sm.group(1)))
            sm = re.match(r"vendor_id:\s*0x([0-9a-f]{4}),\s*device_id:\s*0x([0-9a-f]{4})", low)
            if sm:
                event.fields["pci_id"] = f"{sm.group(1)}:{sm.group(2)}"
            sm = re.match(r"(?:dimm location|fru_text|dimm):\s*(.+)$", low)
            if sm:
                event.fields["label"] = rest.split(":", 1)[1].strip()
            if "it has been corrected by h/w" in low and not event.fields["severity"]:
                event.fields["severity"] = "corrected"
            continue
        if MEMFAIL_RE.match(msg):
            log.events.append(KernelEvent("mce", rec, "", {"severity": "uncorrected", "memory": True,
                                                           "text": msg}, list(rec.raw)))
            continue
        m = MCE_RE.match(msg)
        if m:
            rest = (m.group("rest") or m.group("rest2") or "").strip()
            low = rest.lower()
            if "machine check events logged" in low:
                sev = "logged"
            elif re.search(r"\bcorrected error\b|\bcorrected\b", low) and "uncorrected" not in low:
                sev = "corrected"
            elif re.search(r"uncorrected|fatal|processor context corrupt|panic", low):
                sev = "uncorrected"
            elif rest.startswith("[Hardware Error]") or "hardware error" in msg.lower():
                sev = "logged"
            else:
                continue  # "mce: CPU0: Core temperature above threshold" etc.: not an error report
            log.events.append(KernelEvent("mce", rec, "", {"severity": sev, "text": rest}, list(rec.raw)))
            continue
        # ---- a process that crashed inside a GPU library (libnccl, libcuda, libnvidia-*)
        m = GPU_LIB_CRASH_RE.search(msg)
        if m:
            log.events.append(KernelEvent("unrecognised", rec, "", {"class": "gpu_lib_crash", "lib": m.group("lib")},
                                          list(rec.raw)))
            continue
        # ---- B16: what no rule recognised
        if OOPS_RE.match(msg):
            if msg.startswith("Call Trace:") and idx - recent_oops <= 30 or msg.startswith("Oops: ") and idx - recent_oops <= 5:
                continue  # the same oops report's trace, or its "Oops:" line after "BUG: unable to handle ..."
            recent_oops = idx
            fields: dict[str, Any] = {"class": "oops"}
            ev = list(rec.raw)
            if FATAL_OOPS_RE.match(msg):  # the module it died in ("RIP: 0010:_nv006968rm+0x2c/0x330 [nvidia]")
                fields["fatal"] = True
                for nxt in records[idx + 1: idx + 12]:
                    if OOPS_RE.match(nxt.msg) and not nxt.msg.startswith(("Oops: ", "Call Trace:")):
                        break
                    rm = re.match(r"(?:RIP|pc|PC is at)\s*:?\s*(?:\d{4}:)?(\S+?)(?:\+0x\w+/0x\w+)?\s+\[(\w+)\]", nxt.msg)
                    cm = re.search(r"\bComm: (\S+)", nxt.msg)
                    if cm:
                        fields["comm"] = cm.group(1)
                    if rm:
                        fields["module"], fields["function"] = rm.group(2), rm.group(1)
                        ev.extend(nxt.raw)
                        break
                    if nxt.msg.startswith(("Oops: ", "CPU: ")):
                        ev.extend(nxt.raw)
            log.events.append(KernelEvent("unrecognised", rec, "", fields, ev))
            continue
        if GPU_DRIVER_RE.match(msg) and ERROR_WORD_RE.search(msg):
            bm = re.search(r"(?:PCI:)(?P<bus>" + _BDF_RE + r")", msg)
            log.events.append(KernelEvent("unrecognised", rec, bus_id(bm.group("bus")) if bm else "",
                                          {"class": "gpu_driver"}, list(rec.raw)))
            continue
    # GPUs seen in other events (driver lines name them)
    for kev in log.events:
        if kev.bus_id and (kev.kind in ("gpu_fell_off", "gsp_timeout") or (
                kev.kind == "gpu_init" and kev.fields.get("what") in ("rminit", "bar_invalid", "probe_failed"))):
            log.gpus.setdefault(kev.bus_id, GpuInfo(kev.bus_id))
    _attach_driver_context(log)


_GPU_EVENT_KINDS = ("xid", "gpu_init", "gsp_timeout", "gpu_fell_off", "driver_conflict")
CONTEXT_RECORDS = 2
"""An unrecognised GPU-driver error line this many records or fewer from a recognised GPU event
(same boot) is that event's context (e.g. "osInitNvMapping: *** Cannot attach gpu" next to
"RmInitAdapter failed"): it joins that event's evidence instead of counting on its own."""


def _attach_driver_context(log: KernelLog) -> None:
    index = {id(r): i for i, r in enumerate(log.records)}
    anchor_at: dict[int, list[KernelEvent]] = {}
    for e in log.events:
        if e.kind in _GPU_EVENT_KINDS:
            anchor_at.setdefault(index.get(id(e.record), -1), []).append(e)
    keep: list[KernelEvent] = []
    for ev in log.events:
        if ev.kind == "unrecognised" and ev.fields.get("class") == "gpu_driver":
            i = index.get(id(ev.record), -1)
            target = None
            for dist in range(0, CONTEXT_RECORDS + 1):
                for j in (i - dist, i + dist):
                    for a in anchor_at.get(j, ()):
                        if a.boot == ev.boot and (not ev.bus_id or not a.bus_id or a.bus_id == ev.bus_id):
                            target = a
                            break
                    if target is not None:
                        break
                if target is not None:
                    break
            if target is not None:
                target.evidence.extend(ln for ln in ev.evidence if ln not in target.evidence)
                continue
        keep.append(ev)
    _set(log, "events", keep)


# ------------------------------------------------------------------ detection


KERNEL_SIGNATURES = lazy_re(
    r"NVRM: |\bEDAC (?:\S+ )?MC\d|\bAER: |PCIe Bus Error|\[Hardware Error\]|\bmce: |^nouveau (?:[0-9a-f]{4}:|\s*\[)|\bpcieport \d|^pci \d{4}:"
    r"|available PCIe bandwidth|\bnvidia(?:-\w+)? \d{4}:|Linux version \d|Command line:|\bkernel: "
    r"|systemd-networkd\[\d+\]: [\w.@-]+: (?:[Ll]ost|[Gg]ained) carrier|: (?:NIC )?Link is (?:Down|Up)\b"
    r"|INFO: task \S+ blocked for more than \d+ seconds|hung_task_timeout_secs|^\s*Call Trace:"
    r"|[Oo]ut of memory: Kill(?:ed)? process \d+ \("
    r"|^EXT4-fs (?:error )?\(|^XFS \(|^BTRFS (?:error|warning|critical) \("  # a filesystem's own kernel messages
    # the module loader's own words (kernel/module.c) and an RDMA driver's device prefix (held-out rounds 274, 278)
    r"|^[\w-]+: (?:Unknown symbol \S+ \(err -?\d+\)|disagrees about version of symbol )|^\s*infiniband mlx5_\d+: ")


_NV_DAEMON_RECORD = lazy_re(r"^\[[A-Z][a-z]{2} +\d{1,2} \d{4} \d\d:\d\d:\d\d\] \[(?:INFO|WARNING|WARN|ERROR|FATAL|DEBUG|"
                            r"CRITICAL)\] ")
"""A record of NVIDIA's fabric daemons (nv-fabricmanager, nvidia-imex): a date with its year, then a level in brackets;
no kernel log line has that form."""
_BANNER_ONLY = lazy_re(r"Linux version \d|Command line:")
"""The kernel's boot banner lines: a kernel log holds them, but so does any tool that prints the kernel it runs on
(``cat /proc/version``, enroot-check's "Kernel version:"); in a text without any timestamped line they alone do not
make it a kernel log unless they are most of it."""


def detect_kernel_log(text: str) -> float:
    """Confidence (0..1) that ``text`` is a kernel log. Lines with a kernel-log prefix
    (dmesg stamps, ``host kernel:``, ``kern:``) and kernel-message signatures (``NVRM:``,
    ``EDAC``, ``AER``, ``[Hardware Error]``) count."""
    lines = [ln for ln in text[:400_000].splitlines()[:1000] if ln.strip()][:600]  # the head decides; a long output
    # costs no more
    if not lines:
        return 0.0
    if sum(1 for ln in lines if _NV_DAEMON_RECORD.match(ln)) * 2 >= len(lines):
        return 0.0  # Fabric Manager's or the IMEX daemon's log: "[Apr 20 2026 19:05:12] [INFO] [tid 141] ..."
    prefixed = sum(1 for ln in lines if _strip_prefix(ln) is not None)
    sig = sum(1 for ln in lines if KERNEL_SIGNATURES.search(ln))
    n = len(lines)
    if prefixed / n >= 0.5:
        return 0.85 + 0.1 * min(1.0, (prefixed + sig) / (2 * n)) + (0.05 if sig else 0.0)
    if sig and sig / n >= 0.3:
        return 0.8
    if sig and not prefixed and all(_BANNER_ONLY.search(ln) for ln in lines if KERNEL_SIGNATURES.search(ln)):
        return 0.2  # a tool quoting the kernel's banner ("Kernel version: Linux version ...", enroot-check) among its own lines
    if sig:
        return 0.45 + 0.1 * min(1.0, sig / n * 3)
    if prefixed / n >= 0.2:
        return 0.5
    return 0.0
