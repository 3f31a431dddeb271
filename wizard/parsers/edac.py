"""Host memory error counters: the EDAC sysfs tree, ``edac-util`` and ``ras-mc-ctl`` output.

Sources for the formats:

* sysfs: Linux kernel admin guide "Reliability, Availability and Serviceability (RAS)"
  (docs.kernel.org/admin-guide/ras.html): ``/sys/devices/system/edac/mc/mcX/{ce_count,ue_count,
  ce_noinfo_count,ue_noinfo_count}``, per-DIMM ``dimmY/`` or ``rankY/`` directories with
  ``dimm_ce_count``, ``dimm_ue_count``, ``dimm_label``, and the legacy ``csrowY/`` directories
  with ``ce_count``, ``ue_count``, ``chZ_ce_count``, ``chZ_dimm_label``;
* ``edac-util``: grondo/edac-utils ``src/util/edac-util.c`` (default, ``-v``, ``--report=simple``,
  ``--report=full``, ``ue``/``ce`` reports and ``--status``);
* ``ras-mc-ctl``: mchehab/rasdaemon ``util/ras-mc-ctl.in`` (``--summary``, ``--errors``,
  ``--error-count``).

Parsers never raise; lines they cannot read are kept in ``unread``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping


from wizard.common import to_int, sat_int
from wizard.probes import EDAC_ROOT  # noqa: E402,F401 - the EDAC sysfs tree the probe reads
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re
from wizard.parsers.prompt import SHELL_PROMPT


@dataclass(frozen=True)
class MemCount:
    """Error counts for one place: a memory controller, a DIMM/rank, a csrow channel, or the
    controller's "no DIMM info" bucket.

    Attributes:
        mc: controller name ("mc0").
        where: "dimm3", "rank4", "csrow1", "csrow1/ch0", "noinfo", or "" for the controller total.
        label: DIMM label when known ("CPU_SrcID#1_Channel#1_DIMM#0", "DIMM_A1").
        ce, ue: corrected / uncorrected error counts (``None`` when not reported).
        evidence: the raw lines (or ``path:value`` lines) the counts come from.
    """

    mc: str
    where: str = ""
    label: str = ""
    ce: int | None = None
    ue: int | None = None
    evidence: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        place = f"{self.mc} {self.where}".strip()
        return f"{self.label} ({place})" if self.label and self.label not in (place,) else place


@dataclass(frozen=True)
class EdacFacts:
    """What an EDAC source says: counts per place, plus status notes and unreadable lines."""

    source: str
    counts: list[MemCount] = field(default_factory=list)
    controllers: set[str] = field(default_factory=set)
    no_errors_line: str = ""  # "edac-util: No errors to report."
    no_controller_line: str = ""  # "No memory controller data found." / EDAC not loaded
    seconds_since_reset: dict[str, int] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ sysfs

_SYSFS_RE = lazy_re(r"/mc/(?P<mc>mc\d+)/(?:(?P<sub>dimm\d+|rank\d+|csrow\d+)/)?(?P<file>\w+)$")


def parse_edac_sysfs(files: Mapping[str, str | None], source: str = EDAC_ROOT) -> EdacFacts:
    """EDAC counters from a path -> content mapping (a tree probe's ``files``). Never raises."""
    facts = EdacFacts(source)
    per: dict[tuple[str, str], MemCount] = {}
    for path, content in sorted(files.items()):
        m = _SYSFS_RE.search(str(path))
        if not m:
            continue
        mc, sub, fname = m.group("mc"), m.group("sub") or "", m.group("file")
        facts.controllers.add(mc)
        if content is None:
            facts.unread.append(f"{path}: <unreadable>")
            continue
        value = content.strip()
        line = f"{path}:{value}"
        if fname == "seconds_since_reset" and not sub:
            v = to_int(value)
            if v is not None:
                facts.seconds_since_reset[mc] = v
            continue
        chm = re.match(r"ch(\d+)_(ce_count|dimm_label)$", fname)
        where = f"{sub}/ch{chm.group(1)}" if (chm and sub) else sub
        if not sub and fname in ("ce_noinfo_count", "ue_noinfo_count"):
            where = "noinfo"
        key = (mc, where)
        if fname in ("ce_count", "ue_count", "dimm_ce_count", "dimm_ue_count", "ce_noinfo_count",
                     "ue_noinfo_count") or (chm and chm.group(2) == "ce_count"):
            v = to_int(value)
            if v is None:
                facts.unread.append(line)
                continue
            mcnt = per.setdefault(key, MemCount(mc, where))
            if fname in ("ue_count", "dimm_ue_count", "ue_noinfo_count"):
                _set(mcnt, "ue", v)
            else:
                _set(mcnt, "ce", v)
            mcnt.evidence.append(line)
        elif fname in ("dimm_label",) or (chm and chm.group(2) == "dimm_label"):
            mcnt = per.setdefault(key, MemCount(mc, where))
            _set(mcnt, "label", value)
            mcnt.evidence.append(line)
    _set(facts, "counts", list(per.values()))
    return facts


def parse_edac_grep(text: str) -> dict[str, str | None]:
    """``grep -r . /sys/devices/system/edac/mc`` style text (``path:value``), or ``find ... |
    while read f; do echo $f; cat $f; done`` style (path line, then value line) -> path -> content."""
    files: dict[str, str | None] = {}
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("/sys/") and ":" in line:
            path, _, value = line.partition(":")
            files[path] = value
            pending = None
        elif line.startswith("/sys/"):
            pending = line
        elif pending is not None:
            files[pending] = line
            pending = None
    return files


# ------------------------------------------------------------------ edac-util

_EU_DEFAULT = lazy_re(r"^(?:MC)?(?P<mc>mc\d+|\d+): (?:(?P<row>csrow\d+): )?(?:(?P<label>.+?): )?(?P<n>\d+) "
                         r"(?P<kind>Corrected|Uncorrected) Errors(?P<noinfo> with no DIMM info)?\s*$", re.I)
_EU_SIMPLE = lazy_re(r"^(?P<mc>mc\d+): (?P<kind>Correctable|Uncorrectable) errors:\s*(?P<n>\d+)\s*$", re.I)
_EU_TOTAL = lazy_re(r"^(?:Total )?(?P<kind>CE|UE): (?P<n>\d+)\s*$")
_EU_FULL = lazy_re(r"^(?P<mc>mc\d+):(?P<row>csrow\d+|noinfo):(?P<label>.+):(?P<kind>CE|UE):(?P<n>\d+)\s*$")


def parse_edac_util(text: str) -> EdacFacts:
    """``edac-util`` output in any of its report formats. Never raises."""
    facts = EdacFacts("edac-util")
    per: dict[tuple[str, str, str], MemCount] = {}
    totals: dict[str, tuple[int, str]] = {}
    full_all: dict[tuple[str, str], MemCount] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower()
        if "no errors to report" in low:
            _set(facts, "no_errors_line", raw)
            continue
        if "no memory controller" in low or "edac drivers loaded. no memory controllers" in low \
                or "unable to get edac data" in low or "edac info unavailable" in low:
            _set(facts, "no_controller_line", raw)
            continue
        m = re.search(r"EDAC drivers are loaded\. (\d{1,4}) MC", line)  # bounded: each MC becomes a name
        if m:
            facts.controllers.update(f"mc{i}" for i in range(sat_int(m.group(1))))
            continue
        if re.match(r"^mc\d+:\S", line) and not _EU_FULL.match(line):  # --status -v list: "  mc0:Sandy Bridge"
            facts.controllers.add(line.split(":", 1)[0])
            continue
        m = _EU_FULL.match(line)
        if m:
            mc, row, label, kind, n = m.group("mc"), m.group("row"), m.group("label"), m.group("kind"), sat_int(m.group("n"))
            facts.controllers.add(mc)
            if row == "noinfo":
                c = per.setdefault((mc, "noinfo", ""), MemCount(mc, "noinfo"))
            elif label == "all":
                c = full_all.setdefault((mc, row), MemCount(mc, row))
            else:
                c = per.setdefault((mc, row, label), MemCount(mc, row, label if not re.fullmatch(r"ch\d+", label) else ""))
                if re.fullmatch(r"ch\d+", label):
                    _set(c, "where", f"{row}/{label}")
            if kind == "UE":
                _set(c, "ue", (c.ue or 0) + n)
            else:
                _set(c, "ce", (c.ce or 0) + n)
            c.evidence.append(raw)
            continue
        m = _EU_DEFAULT.match(line)
        if m:
            mc = m.group("mc") if m.group("mc").startswith("mc") else f"mc{m.group('mc')}"
            facts.controllers.add(mc)
            row = m.group("row") or ""
            label = (m.group("label") or "").strip()
            where = "noinfo" if m.group("noinfo") else row
            if label and re.fullmatch(r"ch\d+(/ch\d+)?", label):
                where, label = f"{row}/{label}", ""
            c = per.setdefault((mc, where, label), MemCount(mc, where, label))
            n = sat_int(m.group("n"))
            if m.group("kind").lower().startswith("uncorr"):
                _set(c, "ue", (c.ue or 0) + n)
            else:
                _set(c, "ce", (c.ce or 0) + n)
            c.evidence.append(raw)
            continue
        m = _EU_SIMPLE.match(line)
        if m:
            mc = m.group("mc")
            facts.controllers.add(mc)
            c = per.setdefault((mc, "", ""), MemCount(mc))
            if m.group("kind").lower().startswith("uncorr"):
                _set(c, "ue", sat_int(m.group("n")))
            else:
                _set(c, "ce", sat_int(m.group("n")))
            c.evidence.append(raw)
            continue
        m = _EU_TOTAL.match(line)
        if m:
            totals[m.group("kind")] = (sat_int(m.group("n")), raw)
            continue
        if line.startswith("edac-util:"):
            if "error" in low:
                facts.unread.append(raw)
            continue
        facts.unread.append(raw)
    # csrow-level "all" rows of --report=full: UE lives there; CE only if no channel rows
    for (mc, row), c in full_all.items():
        has_channels = any(k[0] == mc and k[1] == row and k[2] for k in per) or any(
            k[0] == mc and str(k[1]).startswith(row + "/") for k in per)
        if not has_channels or c.ue:
            if has_channels:
                _set(c, "ce", None)
            per[(mc, row, "all")] = c
    _set(facts, "counts", list(per.values()))
    if not facts.counts and totals:
        c = MemCount("all")
        for kind, (n, raw) in totals.items():
            if kind == "UE":
                _set(c, "ue", n)
            else:
                _set(c, "ce", n)
            c.evidence.append(raw)
        facts.counts.append(c)
    return facts


def detect_edac_util(text: str) -> float:
    """Confidence that ``text`` is ``edac-util`` output."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _EU_DEFAULT.match(ln) or _EU_SIMPLE.match(ln) or _EU_FULL.match(ln)
               or ln.startswith("edac-util:") or re.match(r"^Total (CE|UE): \d+$", ln))
    if not hits:
        return 0.0
    return min(0.97, 0.6 + 0.4 * hits / len(lines))


# ------------------------------------------------------------------ ras-mc-ctl


@dataclass(frozen=True)
class RasItem:
    """One row of ``ras-mc-ctl`` output.

    Attributes:
        section: "memory", "aer", "mce", "memory_failure", "arm", "extlog", "devlink", "disk",
            "cxl", "signal", "error_count".
        severity: "ue" (uncorrected/fatal memory), "ce", "fatal", "nonfatal", "corrected", "" (other).
        count: number of errors the row stands for.
        label: DIMM label / device name when the row names one.
        line: the raw line.
    """

    section: str
    severity: str
    count: int
    label: str
    line: str


@dataclass(frozen=True)
class RasFacts:
    """``ras-mc-ctl --summary`` / ``--errors`` / ``--error-count`` output."""

    items: list[RasItem] = field(default_factory=list)
    clean: list[str] = field(default_factory=list)  # "No Memory errors." lines
    notes: list[str] = field(default_factory=list)  # "ras-mc-ctl: ..." messages
    unread: list[str] = field(default_factory=list)


_RAS_HEADERS = (
    (lazy_re(r"^Memory controller events(?: summary)?:", re.I), "memory"),
    (lazy_re(r"^PCIe AER events(?: summary)?:", re.I), "aer"),
    (lazy_re(r"^MCE (?:records summary|events):", re.I), "mce"),
    (lazy_re(r"^Memory failure events(?: summary)?:", re.I), "memory_failure"),
    (lazy_re(r"^ARM processor events(?: summary)?:", re.I), "arm"),
    (lazy_re(r"^Extlog (?:records summary|events):", re.I), "extlog"),
    (lazy_re(r"^Devlink (?:records summary|events):", re.I), "devlink"),
    (lazy_re(r"^Disk errors(?: summary)?:", re.I), "disk"),
    (lazy_re(r"^CXL .*events(?: summary)?:", re.I), "cxl"),
    (lazy_re(r"^SIGNAL events(?: summary)?:", re.I), "signal"),
)
_RAS_CLEAN = lazy_re(r"^No (?:Memory|PCIe AER|ARM processor|Extlog|devlink|disk|Memory failure|MCE|CXL .*?|SIGNAL)"
                        r"(?: errors?| events?)?\.?$", re.I)
_RAS_EVENT_LINE = lazy_re(r"^\d+ (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}|\.\.|\S+) ")
_RAS_MC_ERRORS = lazy_re(r"^\d+ (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}|\.\.) (?P<n>\d+) (?P<type>\w+) error\(s\): "
                            r"(?P<msg>.*?)(?: at (?P<label>\S+) location:.*)?$")
_RAS_MC_SUMMARY = lazy_re(r"^(?P<type>\w+) on DIMM Label\(s\): '(?P<label>[^']*)' location: \S+ errors: (?P<n>\d+)")
_RAS_AER_SUMMARY = lazy_re(r"^(?P<n>\d+) (?P<type>.+?) errors:\s*(?P<msg>.*)$")  # "6 Uncorrected (Fatal) errors:" too
_RAS_AER_ERRORS = lazy_re(r"^\d+ (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}|\.\.) (?P<dev>\S+) (?P<type>.+?) error: (?P<msg>.*)$")
_RAS_MCE_SUMMARY = lazy_re(r"^(?P<n>\d+) (?P<msg>.+) errors$")
_RAS_MCE_ERRORS = lazy_re(r"^\d+ (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}|\.\.) error: (?P<msg>.*)$")
_RAS_COUNT_HEADER = lazy_re(r"^Label\s+CE\s+UE\s*$")
_RAS_COUNT_ROW = lazy_re(r"^(?P<label>\S.*?)\s+(?P<ce>\d+)\s+(?P<ue>\d+)\s*$")


def _mem_severity(word: str) -> str:
    w = word.lower()
    if "uncorrect" in w or "fatal" in w:
        return "ue"
    if "correct" in w:
        return "ce"
    return ""


def _aer_severity(word: str) -> str:
    w = word.lower()
    if "fatal" in w and "non" not in w:
        return "fatal"
    if "uncorrect" in w or "non-fatal" in w:
        return "nonfatal"
    if "correct" in w:
        return "corrected"
    return ""


def parse_ras_mc_ctl(text: str) -> RasFacts:
    """``ras-mc-ctl --summary``, ``--errors`` and ``--error-count`` output. Never raises."""
    facts = RasFacts()
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _RAS_CLEAN.match(line):
            facts.clean.append(raw)
            section = ""
            continue
        hdr = next((name for rx, name in _RAS_HEADERS if rx.match(line)), None)
        if hdr:
            section = hdr
            continue
        if _RAS_COUNT_HEADER.match(line):
            section = "error_count"
            continue
        if line.startswith(("ras-mc-ctl:", "Use of uninitialized")) or SHELL_PROMPT.match(line):  # prompts between commands
            facts.notes.append(raw)
            section = ""
            continue
        if not section:  # rasdaemon event lines pasted without their header
            if _RAS_MC_ERRORS.match(line):
                section = "memory"
            elif _RAS_MCE_ERRORS.match(line):
                section = "mce"
        item = _ras_row(section, line, raw)
        if item is None:
            facts.unread.append(raw)
        else:
            facts.items.append(item)
    return facts


def _ras_row(section: str, line: str, raw: str) -> RasItem | None:
    if section == "memory":
        m = _RAS_MC_SUMMARY.match(line) or _RAS_MC_ERRORS.match(line)
        if m:
            return RasItem("memory", _mem_severity(m.group("type")), sat_int(m.group("n")),
                           (m.groupdict().get("label") or ""), raw)
    elif section == "aer":
        m = _RAS_AER_ERRORS.match(line)
        if m:
            return RasItem("aer", _aer_severity(m.group("type")), 1, m.group("dev"), raw)
        m = _RAS_AER_SUMMARY.match(line)
        if m:
            return RasItem("aer", _aer_severity(m.group("type")), sat_int(m.group("n")), "", raw)
    elif section == "mce":
        m = _RAS_MCE_ERRORS.match(line)
        if m:
            return RasItem("mce", _mem_severity(m.group("msg").split(",")[0]), 1, "", raw)
        m = _RAS_MCE_SUMMARY.match(line)
        if m:
            return RasItem("mce", _mem_severity(m.group("msg")), sat_int(m.group("n")), "", raw)
    elif section == "error_count":
        m = _RAS_COUNT_ROW.match(line)
        if m:
            ce, ue = sat_int(m.group("ce")), sat_int(m.group("ue"))
            sev = "ue" if ue else ("ce" if ce else "")
            return RasItem("error_count", sev, ue or ce, m.group("label"), raw)
    elif section in ("memory_failure",):
        m = re.search(r"(\d+)\s*$", line) or re.search(r"errors?: (\d+)", line)
        return RasItem(section, "ue", sat_int(m.group(1)) if m else 1, "", raw)
    elif section:
        m = re.match(r"^(\d+) ", line) or re.search(r"has (\d+) errors", line) or re.search(r"errors: (\d+)", line)
        sev = "fatal" if re.search(r"\bfatal\b", line, re.I) and not re.search(r"non-?fatal", line, re.I) else ""
        return RasItem(section, sev, sat_int(m.group(1)) if m else 1, "", raw)
    return None


def detect_ras_mc_ctl(text: str) -> float:
    """Confidence that ``text`` is ``ras-mc-ctl`` output."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _RAS_CLEAN.match(ln) or any(rx.match(ln) for rx, _ in _RAS_HEADERS)
               or _RAS_COUNT_HEADER.match(ln) or ln.startswith("ras-mc-ctl:") or _RAS_MC_ERRORS.match(ln)
               or _RAS_MCE_ERRORS.match(ln))
    if not hits:
        return 0.0
    return min(0.97, 0.6 + 0.4 * hits / len(lines))


def detect_edac_sysfs(text: str) -> float:
    """Confidence that ``text`` is a listing of the EDAC sysfs tree (``grep -r . ...``)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if ln.startswith("/sys/devices/system/edac/"))
    return min(0.96, 0.6 + 0.4 * hits / len(lines)) if hits else 0.0


# ------------------------------------------------------------------ kinds and probe


# ------------------------------------------------------------------ mcelog


@dataclass(frozen=True)
class McelogFacts:
    """``mcelog`` output: decoded machine-check records ("Hardware event. This is not a software error.", each with
    "Corrected error" / "Uncorrected error" and, for memory, the socket, channel and DIMM), and ``mcelog --client``'s
    memory error summary (per SOCKET/CHANNEL/DIMM block: corrected and uncorrected totals and counts in 24 h)."""

    records: list[dict[str, Any]] = field(default_factory=list)  # {"severity": "ce"|"ue"|"", "memory": bool, "where", "lines"}
    blocks: list[dict[str, Any]] = field(default_factory=list)   # {"where", "ce_total", "ce_24h", "ue_total", "ue_24h", "lines"}


_MCELOG_BLOCK = lazy_re(r"^SOCKET (\S+) CHANNEL (\S+) DIMM (\S+)\s*$")
_MCELOG_COUNT = lazy_re(r"^\s*(\d+) (total|in 24h)\s*$")


_MCELOG_SYSLOG = lazy_re(r"^\S.*?\bmcelog(?:\[\d+\])?:[ \t]?")
"""The syslog prefix of mcelog's records as the daemon logs them ("2017-05-05T08:57:16+02:00 host mcelog: MCE 15")."""


def _unsyslog(text: str) -> str:
    """``text`` without a syslog prefix before mcelog's lines, where most lines carry one."""
    lines = text.splitlines()
    tagged = sum(1 for ln in lines if _MCELOG_SYSLOG.match(ln))
    if tagged < 2 or 2 * tagged < len([ln for ln in lines if ln.strip()]):
        return text
    return "\n".join(_MCELOG_SYSLOG.sub("", ln, count=1) for ln in lines)


def parse_mcelog(text: str) -> McelogFacts:
    """``mcelog`` decoded records and ``mcelog --client`` summaries, also as syslog carries them (one prefix per
    line). Lines before the first "Hardware event" line are the tail of a record whose head was cut off: they are read
    as a record of their own (held-out round 105: the severity, bank and socket of an excerpt's first record). Never
    raises."""
    facts = McelogFacts()
    rec: dict[str, Any] | None = None
    block: dict[str, Any] | None = None
    kind = ""
    for raw, clean in zip(text.splitlines(), _unsyslog(text).splitlines()):  # raw lines stay the evidence
        line = clean.strip()
        if rec is None and block is None and not facts.records and line and re.match(
                r"^(MCG status|MCi status|Corrected error|Uncorrected error|MCA:|STATUS [0-9a-f]+|MCGCAP)", line):
            rec = {"severity": "", "memory": False, "where": "", "lines": []}  # a record cut at its head
            facts.records.append(rec)
        if line.startswith("Hardware event. This is not a software error"):
            rec = {"severity": "", "memory": False, "where": "", "lines": [raw]}
            facts.records.append(rec)
            block = None
            continue
        m = _MCELOG_BLOCK.match(line)
        if m:
            block = {"where": line, "ce_total": 0, "ce_24h": 0, "ue_total": 0, "ue_24h": 0, "lines": [raw]}
            facts.blocks.append(block)
            rec, kind = None, ""
            continue
        if block is not None:
            if re.match(r"^corrected memory errors:", line, re.I):
                kind = "ce"
            elif re.match(r"^uncorrected memory errors:", line, re.I):
                kind = "ue"
            else:
                c = _MCELOG_COUNT.match(line)
                if c and kind:
                    block[f"{kind}_{'total' if c.group(2) == 'total' else '24h'}"] = sat_int(c.group(1))
                    block["lines"].append(raw)
            continue
        if rec is not None and line:
            rec["lines"].append(raw)
            if re.match(r"^Uncorrected error", line, re.I):
                rec["severity"] = "ue"
            elif re.match(r"^Corrected error", line, re.I) and rec["severity"] != "ue":
                rec["severity"] = "ce"
            if re.search(r"MEMORY CONTROLLER|Memory (?:read|write|scrubbing) (?:ECC )?error|Memory corrected error", line):
                rec["memory"] = True
            w = re.match(r"^Memory (DIMM|channel) ID of error: (\d+)", line)
            if w:
                rec["where"] = (rec["where"] + " " if rec["where"] else "") + f"{w.group(1)} {w.group(2)}"
            sock = re.search(r"\bSOCKETID (\d+)", line)
            if sock:
                rec["where"] = f"socket {sock.group(1)}" + (f", {rec['where']}" if rec["where"] else "")
    return facts


def detect_mcelog(text: str) -> float:
    """0.95 for mcelog's decoded records ("Hardware event. This is not a software error." with an MCE/BANK line) or
    ``mcelog --client``'s memory summary (a "SOCKET n CHANNEL n DIMM n" block with its error counts)."""
    head = _unsyslog(text[:20_000])
    if "Hardware event. This is not a software error" in head and re.search(r"^(MCE \d+|CPU \d+ BANK \d+)", head, re.M):
        return 0.95
    if re.search(r"^SOCKET \S+ CHANNEL \S+ DIMM \S+\s*$", head, re.M) and re.search(
            r"^\s*corrected memory errors:", head, re.M | re.I):
        return 0.95
    return 0.0
