"""Slurm's view of its nodes: ``scontrol show node`` (one record per node, multi-line or ``-o``) and ``sinfo``
(the default partition summary, ``-N``, ``-l``, ``-R``).

Node state words are Slurm's (scontrol(1) "NODE STATE", sinfo(1) "NODE STATE CODES",
https://slurm.schedmd.com/sinfo.html#SECTION_NODE-STATE-CODES): a base state (IDLE, MIXED, ALLOCATED, DOWN, ...)
with flags joined by ``+`` (``IDLE+DRAIN``), and sinfo's one-character suffixes: ``*`` not responding, ``~``
powered off, ``#`` powering up, ``!`` pending power down, ``%`` powering down, ``$`` in a maintenance reservation,
``@`` pending reboot, ``^`` reboot issued, ``-`` planned by the backfill scheduler. Nothing here raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from wizard.common import lazy_re, sat_int

SUFFIXES = "*~#!%$@^-"
"""sinfo's state suffix characters (sinfo(1), NODE STATE CODES)."""

_SHORT = {  # sinfo's short state names (the default format) -> scontrol's words
    "alloc": "ALLOCATED", "allocated": "ALLOCATED", "comp": "COMPLETING", "drain": "DRAIN", "drained": "DRAINED",
    "drng": "DRAINING", "draining": "DRAINING", "fail": "FAIL", "failg": "FAILING", "failing": "FAILING",
    "futr": "FUTURE", "future": "FUTURE", "idle": "IDLE", "inval": "INVAL", "maint": "MAINT", "mix": "MIXED",
    "mixed": "MIXED", "npc": "PERFCTRS", "plnd": "PLANNED", "pow_dn": "POWER_DOWN", "pow_up": "POWERING_UP",
    "resv": "RESERVED", "reserved": "RESERVED", "unk": "UNKNOWN", "unknown": "UNKNOWN", "down": "DOWN",
    "blocked": "BLOCKED", "reboot": "REBOOT_REQUESTED", "reboot^": "REBOOT_ISSUED", "boot": "REBOOT_ISSUED",
    "completing": "COMPLETING", "planned": "PLANNED", "perfctrs": "PERFCTRS",
}
_SUFFIX_WORD = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "!": "POWER_DOWN",
                "%": "POWERING_DOWN", "$": "MAINT", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "-": "PLANNED"}


def state_words(state: str) -> frozenset[str]:
    """The state words of ``IDLE+DRAIN``, ``DOWN*+NOT_RESPONDING`` (scontrol) or ``drng@``, ``fail*`` (sinfo):
    scontrol's upper-case words, a suffix read as its word (``*`` -> ``NOT_RESPONDING``)."""
    out: set[str] = set()
    for part in re.split(r"[+ ]", state.strip()):
        if not part:
            continue
        word = part.rstrip(SUFFIXES)
        out.update(_SUFFIX_WORD[c] for c in part[len(word):] if c in _SUFFIX_WORD)
        if word:
            out.add(_SHORT.get(word.lower(), word.upper()))
    return frozenset(out)


@dataclass(frozen=True)
class NodeState:
    """A node as ``scontrol show node`` shows it.

    Attributes:
        name: NodeName.
        state: State as printed (``IDLE+DRAIN``).
        reason: Reason, less the ``[user@time]`` Slurm appends; "" when none.
        gres: Gres as printed (``gpu:nvidia-rtx-3090:1``), "" when absent or ``(null)``.
        lines: the record's lines that carry the name, state, gres and reason (evidence).
    """

    name: str
    state: str
    reason: str = ""
    gres: str = ""
    lines: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    """AvailableFeatures / ActiveFeatures (or a slurm.conf NodeName line's Feature=), split at commas."""
    tres_gpus: int | None = None
    """CfgTRES's ``gres/gpu=N``, ``None`` when CfgTRES names no GPU."""

    @property
    def words(self) -> frozenset[str]:
        return state_words(self.state)

    @property
    def drained(self) -> bool:
        """DRAIN set (drained or draining)."""
        return bool(self.words & {"DRAIN", "DRAINED", "DRAINING"})


_FIELD = lazy_re(r"(?:^|\s)(NodeName|State|Reason|Gres|AvailableFeatures|Feature)=")


def _value(key: str, text: str) -> str:
    m = re.search(rf"(?:^|\s){key}=(.*)$" if key == "Reason" else rf"(?:^|\s){key}=(\S+)", text)
    if not m:
        return ""
    val = m.group(1).strip()
    if key == "Reason":
        val = re.sub(r"\s*\[[^\]\[]*@[^\]\[]*\]\s*$", "", val).strip()
    return "" if val in ("(null)", "none", "None") else val


_COMMAND_BEFORE = lazy_re(r"\bscontrol\b|`|^\s*[$#]\s")
"""What stands before ``NodeName=`` on a command line (``scontrol update``, a shell prompt, a Markdown code span) rather
than on a record ``scontrol show node`` prints."""


def parse_show_nodes(text: str) -> list[NodeState]:
    """Every node record of ``scontrol show node`` (a ``NodeName=`` line opens one; its indented lines follow) or
    ``scontrol show node -o`` (one line per node). A record without ``State=`` is left out unless it has a ``Reason=``
    (``scontrol show node | grep -E 'NodeName|Reason'``): then ``state`` is "" and the reason stands for it, since Slurm
    keeps a Reason only while the node is down, drained or failing (scontrol(1), "Reason")."""
    records: list[list[str]] = []
    for line in text.splitlines():
        m = re.search(r"(?:^|\s)NodeName=\S", line)
        if m and _COMMAND_BEFORE.search(line[:m.start()]):  # `scontrol update NodeName=... State=DRAIN` in a runbook or
            continue  # a README is a command that sets a state, not a node's record (walk 27 #4)
        if m and (not line[:1].isspace() or not records):
            records.append([line])
        elif records and line.strip():
            records[-1].append(line)
    out = []
    for rec in records:
        body = "\n".join(rec)
        name, state = _value("NodeName", body), _value("State", body)
        reason = ""
        for ln in rec:
            if re.search(r"(?:^|\s)Reason=", ln):
                reason = _value("Reason", ln)
        if not name or not (state or reason):
            continue
        ev = tuple(ln.rstrip() for ln in rec if _FIELD.search(ln))
        feats = next((v for v in (_value("AvailableFeatures", body), _value("ActiveFeatures", body),
                                  _value("Features", body), _value("Feature", body)) if v), "")
        tres = re.search(r"(?:^|\s)CfgTRES=\S*?\bgres/gpu=(\d+)", body)
        out.append(NodeState(name, state, reason, _value("Gres", body), ev,
                             tuple(f for f in feats.split(",") if f and f != "(null)"),
                             int(tres.group(1)) if tres else None))
    return out


def parse_show_node(text: str) -> NodeState | None:
    """The first node of :func:`parse_show_nodes`, ``None`` when the text has no NodeName and State."""
    nodes = [n for n in parse_show_nodes(text) if n.state]
    return nodes[0] if nodes else None


def detect_scontrol_node(text: str) -> float:
    """0.95 for ``scontrol show node`` output (NodeName= and State= or Reason= in one record)."""
    head = text[:20000]
    if "NodeName=" not in head or ("State=" not in head and "Reason=" not in head):
        return 0.0
    return 0.95 if parse_show_nodes(head) else 0.0


# ------------------------------------------------------------------ sinfo


@dataclass(frozen=True)
class SinfoRow:
    """One row of ``sinfo``: ``state`` as printed (``drng@``), the node names it covers (the NODELIST expanded),
    ``partition`` ("" for ``sinfo -R``), ``reason`` ("" unless a REASON column), ``line`` the raw row."""

    state: str
    nodes: tuple[str, ...]
    partition: str
    reason: str
    line: str

    @property
    def words(self) -> frozenset[str]:
        return state_words(self.state)


@dataclass(frozen=True)
class SinfoFacts:
    header: str = ""
    rows: tuple[SinfoRow, ...] = ()
    unread: tuple[str, ...] = ()


def expand_nodelist(nodelist: str) -> tuple[str, ...]:
    """``c[002,004,008-010]`` -> its node names (ClusterShell's NodeSet); the text itself when it cannot be read."""
    if "[" not in nodelist:
        return tuple(n for n in nodelist.split(",") if n)
    from ClusterShell.NodeSet import NodeSet, NodeSetException  # imported where used: most inputs never need it

    try:
        return tuple(NodeSet(nodelist))
    except (NodeSetException, ValueError, OverflowError):
        return (nodelist,)


def _header(line: str) -> list[str] | None:
    cols = [c.strip() for c in line.split("|")] if "|" in line else line.split()
    up = [c.upper() for c in cols]
    if "NODELIST" in up and ("STATE" in up or up[0] == "REASON") and "JOBID" not in up:
        return up  # a JobID column is sacct's or squeue's table of jobs, not sinfo's of nodes
    return None


_R_ROW = lazy_re(r"^(?P<reason>\S.*?)\s+(?P<user>[A-Za-z_][\w.-]{0,31})\s+"
                    r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}|Unknown)\s+(?P<nodes>[\w.\-\[\],]+)\s*$")
"""A row of ``sinfo -R`` without its header (REASON USER TIMESTAMP NODELIST; Slurm prints ISO 8601 times)."""


_STATE_WORD = lazy_re(
    r"^(?:alloc(?:ated)?|comp(?:leting)?|down|drain(?:ed|ing)?|drng|fail(?:g|ing)?|futr|future|idle|inval|maint|"
    r"mix(?:ed)?|npc|perfctrs|plnd|planned|pow(?:er)?_(?:dn|down|up)|powered_down|powering_(?:up|down)|"
    r"reboot(?:_requested|_issued)?\^?|resv|reserved|unk(?:nown)?|blocked)[*~#!%$@^-]*$", re.I)
"""A node state as sinfo prints it (%t short or %T long form, with its suffix characters)."""
_NODE_NAME = lazy_re(r"^[A-Za-z][\w.-]*$")


_BRACKETED_LIST = lazy_re(r"^[A-Za-z][\w.-]*\[[\d,\-]+\][\w.-]*(?:,[A-Za-z][\w.-]*(?:\[[\d,\-]+\])?[\w.-]*)*$")
"""A node list in Slurm's host-range form with a bracket ("c[005,011]", "gpu[01-04],login1")."""


_DEFAULT_ROW = lazy_re(r"^\s*(?P<part>[\w.\-]+\*?)\s+(?:up|down|drain|inact)\s+\S+\s+\d+\s+(?P<state>\S+)\s+"
                      r"(?P<nodes>\S+)\s*$")
"""A row of plain ``sinfo`` pasted without its header (PARTITION AVAIL TIMELIMIT NODES STATE NODELIST, sinfo(1)'s
default format): ``regular*  up  infinite  2  drain  cbsuecco02,cbsueccosl04`` (held-out round 48)."""


def _default_row(raw: str) -> SinfoRow | None:
    """:data:`_DEFAULT_ROW` read, its STATE a node state; ``None`` for another line."""
    m = _DEFAULT_ROW.match(raw)
    if not m or not _STATE_WORD.match(m.group("state")):
        return None
    return SinfoRow(m.group("state"), expand_nodelist(m.group("nodes")), m.group("part"), "", raw)


def _headerless_row(raw: str) -> SinfoRow | None:
    """A row of ``sinfo -h -o FORMAT`` (no header; fields split by spaces, ``|``, or ``,`` outside a host range's
    brackets) with one field a node state: the node list is the field with a host range ("c[005,011]"), else the
    first field when it is a node name ("%n %T"), else the last when the first is a node count ("%D %t %N" of one
    node); ``None`` for another line."""
    fields = [f.strip() for f in re.split(r"[|\s]+|,(?![^\[]*\])", raw.strip()) if f.strip()]
    if len(fields) < 2 or len(fields) > 30 or any(f.endswith(":") for f in fields):
        return None  # a sentence ("start failed on x3006c0s1b1n0: CXI alloc failed ...": held-out round 319), not a row
    states = [f for f in fields if _STATE_WORD.match(f)]
    if len(states) != 1:
        return None
    ranged = [f for f in fields if "[" in f and _BRACKETED_LIST.match(f)]
    if ranged:
        nodes = ranged[-1]
    elif _NODE_NAME.match(fields[0]) and not _STATE_WORD.match(fields[0]):
        nodes = fields[0]
    elif fields[0].isdigit() and len(fields) >= 3 and _NODE_NAME.match(fields[-1]) and not _STATE_WORD.match(fields[-1]):
        nodes = fields[-1]
    else:
        return None
    return SinfoRow(states[0], expand_nodelist(nodes), "", "", raw)


def parse_sinfo(text: str) -> SinfoFacts:
    """``sinfo`` in its default, ``-N``, ``-l``, ``-Nl`` or ``-R`` format: every row under the header. The last
    column takes the rest of the line (``-Nl``'s REASON holds spaces); with REASON first (``-R``) the columns are
    read from the right. Rows pasted without a header are read by their shape: ``sinfo -R``'s (:data:`_R_ROW`), and
    ``sinfo -h -o FORMAT``'s with a node name first and one node state (:func:`_headerless_row`)."""
    header: list[str] | None = None
    header_line = ""
    rows: list[SinfoRow] = []
    unread: list[str] = []
    for raw in text.splitlines()[:200_000]:
        if not raw.strip():
            continue
        h = _header(raw)
        if h:
            header, header_line = h, raw
            continue
        if header is None:
            m = _R_ROW.match(raw.strip())
            if m:
                rows.append(SinfoRow("", expand_nodelist(m.group("nodes")), "", m.group("reason").strip(), raw))
            elif (plain := _default_row(raw)) is not None:
                rows.append(plain)
            elif (own := _headerless_row(raw)) is not None:
                rows.append(own)
            else:
                unread.append(raw)
            continue
        n = len(header)
        if "|" in header_line:  # sinfo -o "%all" / -o with '|' between fields: split on it, fields may hold spaces
            cols = [c.strip() for c in raw.split("|")]
            cols += [""] * (n - len(cols))
        else:
            cols = raw.split(None, n - 1) if header[0] != "REASON" else raw.rsplit(None, n - 1)
        if len(cols) < n:
            unread.append(raw)
            continue
        row: dict[str, str] = {}
        for k, v in zip(header, cols):
            if v or k not in row:  # a column named twice (%all has STATE, PARTITION twice): keep a filled one
                row[k] = v
        state = row.get("STATE", "")
        nodes = expand_nodelist(row["NODELIST"])
        if not state and header[0] != "REASON":
            unread.append(raw)
            continue
        rows.append(SinfoRow(state, nodes, row.get("PARTITION", ""), row.get("REASON", "").strip(), raw))
    return SinfoFacts(header_line, tuple(rows), tuple(unread))


_SUMMARY_HEAD = lazy_re(r"^\s*PARTITION\s+AVAIL\s+(?:TIMELIMIT\s+)?NODES\(A/I/O/T\)(?:\s+NODELIST)?\s*$", re.M)
_SUMMARY_ROW = lazy_re(r"^\s*(?P<part>\S+)\s+(?P<avail>up|down|drain|inact)\s+(?:\S+\s+)?(?P<a>\d{1,7})/(?P<i>\d{1,7})/"
                       r"(?P<o>\d{1,7})/(?P<t>\d{1,7})(?:\s+(?P<nodes>\S+))?\s*$")
"""``sinfo -s``'s header and rows, TIMELIMIT and NODELIST columns or not (``-o "%P %a %F"``)."""


@dataclass(frozen=True)
class SinfoSummary:
    """A row of ``sinfo -s`` (sinfo(1), --summarize: NODES(A/I/O/T), the partition's nodes allocated, idle, other
    (down, drained, failing, ...) and total)."""

    partition: str
    avail: str
    allocated: int
    idle: int
    other: int
    total: int
    nodes: str
    line: str


def parse_sinfo_summary(text: str) -> list[SinfoSummary]:
    """The rows of ``sinfo -s`` under its header; [] when the text has no such header. Never raises."""
    if not _SUMMARY_HEAD.search(text[:20000]):
        return []
    return [SinfoSummary(m.group("part"), m.group("avail"), int(m.group("a")), int(m.group("i")), int(m.group("o")),
                         int(m.group("t")), m.group("nodes") or "", m.group(0).strip())
            for ln in text.splitlines()[:20000] for m in [_SUMMARY_ROW.match(ln)] if m]


def detect_sinfo(text: str) -> float:
    """0.95 for ``sinfo`` output: its header (NODELIST with STATE, or REASON first, or ``sinfo -s``'s NODES(A/I/O/T))
    and at least one row."""
    head = "\n".join(text[:20000].splitlines()[:400])
    if parse_sinfo_summary(head):
        return 0.95
    if "NODELIST" not in head.upper():
        lines = [ln for ln in head.splitlines() if ln.strip()]
        if lines and all(_R_ROW.match(ln.strip()) for ln in lines):  # stops at the first line that is not a row
            return 0.8
        if lines and all(_default_row(ln) is not None for ln in lines):
            return 0.8  # plain sinfo's rows without the header, one line or more
        if len(lines) < 2:
            return 0.0
        misses, allowed = 0, 0.1 * len(lines)  # sinfo -h -o "%n %T" and the like: 90 % of the lines are its rows
        for ln in lines:
            if _headerless_row(ln) is None:
                misses += 1
                if misses > allowed:  # already below 90 %: the rest cannot bring it back (a long log costs no more)
                    return 0.0
        return 0.75
    f = parse_sinfo(head)
    return 0.95 if f.header and f.rows else 0.0


# ------------------------------------------------------------------ slurmctld's log

_CTLD_EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("INVAL", lazy_re(r"Setting node (?P<node>\S+) state to INVAL with reason:\s*(?P<reason>.+?)\s*$")),
    ("DRAIN", lazy_re(r"drain_nodes: node (?P<node>\S+) state set to DRAIN\b")),
    ("REASON", lazy_re(r"update_node: node (?P<node>\S+) reason set to:\s*(?P<reason>.+?)\s*$")),
    ("STATE", lazy_re(r"update_node: node (?P<node>\S+) state set to (?P<state>[A-Z_+]+)")),
    ("DOWN", lazy_re(r"Nodes? (?P<node>\S+) not responding, setting DOWN")),
    ("UP", lazy_re(r"Node (?P<node>\S+) now responding|node (?P<node2>\S+) returned to service")),
    ("GRES", lazy_re(r"gres/(?P<gres>\w+): Count changed on node (?P<node>\S+) \((?P<was>\d+) != (?P<now>\d+)\)")),
    ("REJECTED", lazy_re(r"_slurm_rpc_node_registration node=(?P<node>\S+):\s*(?P<reason>.+?)\s*$")),
)
"""The node events slurmctld logs (Slurm source, src/slurmctld/node_mgr.c and ping_nodes.c: "Setting node %s state to
INVAL with reason:%s", "drain_nodes: node %s state set to DRAIN", "update_node: node %s reason set to: %s" / "state set
to %s", "Nodes %s not responding, setting DOWN", "Node %s now responding", "node %s returned to service", "gres/%s: Count
changed on node %s (%d != %d)", "_slurm_rpc_node_registration node=%s: %s")."""


@dataclass(frozen=True)
class CtldNode:
    """What slurmctld's log says of one node: ``state`` the state flags still set at the log's end (``INVAL+DRAIN``;
    "" when only a reason or a count was logged; ``UP`` once it answered again or returned to service), ``reason`` the last reason logged, ``gres`` "gpu 4 -> 3" style count
    changes, ``lines`` the log lines about it (evidence)."""

    name: str
    state: str = ""
    reason: str = ""
    gres: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


def parse_slurmctld_log(text: str) -> list[CtldNode]:
    """Every node slurmctld's log (journalctl -u slurmctld, /var/log/slurmctld.log) names in a node event
    (:data:`_CTLD_EVENTS`), in the order first named, with its last state; never raises."""
    nodes: dict[str, dict[str, Any]] = {}
    for raw in text.splitlines()[:200_000]:
        if "ode" not in raw:  # every event names a node ("node", "Node", "Nodes")
            continue
        for kind, rx in _CTLD_EVENTS:
            m = rx.search(raw)
            if not m:
                continue
            name = m.groupdict().get("node") or m.groupdict().get("node2") or ""
            n = nodes.setdefault(name, {"flags": [], "up": False, "reason": "", "gres": [], "lines": []})
            n["lines"].append(raw.strip())
            flags: list[str] = n["flags"]
            if kind in ("INVAL", "DRAIN", "DOWN") and kind not in flags:
                flags.append(kind)
            elif kind == "UP":
                n["flags"] = [f for f in flags if f not in ("DOWN", "INVAL")]
                n["up"] = True
            elif kind == "STATE":
                words = state_words(m.group("state"))
                if words & {"IDLE", "RESUME", "ALLOCATED", "MIXED"}:  # returned to service
                    n["flags"], n["up"] = [], True
                else:
                    flags.extend(w for w in sorted(words) if w not in flags)
            if kind in ("INVAL", "REASON"):
                n["reason"] = m.group("reason")
            elif kind == "DOWN" and not n["reason"]:
                n["reason"] = "Not responding"
            elif kind == "GRES":
                n["gres"].append(f"{m.group('gres')} {m.group('was')} -> {m.group('now')}")
            elif kind == "REJECTED" and not n["reason"]:
                n["reason"] = f"registration rejected: {m.group('reason')}"
            break
    return [CtldNode(k, "+".join(v["flags"]) or ("UP" if v["up"] else ""), v["reason"], tuple(v["gres"]),
                     tuple(v["lines"])) for k, v in nodes.items()]


_CTLD_ANY = lazy_re(r"Setting node \S+ state to INVAL|drain_nodes: node |update_node: node |Nodes? \S+ not responding, "
                       r"setting DOWN|Count changed on node |_slurm_rpc_node_registration node=")
"""Any node event of :data:`_CTLD_EVENTS` but a node answering again: one search over the head decides."""


def detect_slurmctld_log(text: str) -> float:
    """0.9 for slurmctld's log (the journal's ``slurmctld[pid]:`` lines, or its own log file's ``[time] ...`` lines)
    with a node event other than a node answering again (:data:`_CTLD_EVENTS`); 0 otherwise."""
    return 0.9 if _CTLD_ANY.search(text[:200_000]) else 0.0


# ------------------------------------------------------------------ slurmd's log: GPU autodetection


_SLURMD_NVML_COUNT = lazy_re(r"_get_system_gpu_list_(?:nvml|rsmi|oneapi|nrt): (\d{1,6}) GPU system device\(s\) detected")
_SLURMD_GRES = lazy_re(r"GRES\[gpu\] Type:\S+ Count:\d+.*?File:(/dev/nvidia\d+)|Gres Name=gpu .*?File=(/dev/nvidia\d+)")
_SLURMD_TYPE_NULL = lazy_re(r"_normalize_sys_gres_types: .*?system device `([^`]+)`.*Setting system GRES type to NULL")
_SLURMD_IGNORED = lazy_re(r"The following autodetected GPUs are being ignored")
_SLURMD_FATAL = lazy_re(r"\bfatal:\s*(.+)$")
_SLURMD_ERROR = lazy_re(r"\berror:\s*(.+)$")
_SLURMD_MARK = lazy_re(r"\bslurmd(?:\[\d+\])?:|Slurmd (?:started|shutdown)|slurmd version|gpu/nvml: |gres/gpu: |"
                       r"Gres GPU plugin: |GRES\[gpu\] |slurmd initialization failed|\bgres_device_major: ")
SLURMD_NO_DEV = lazy_re(r"(?:gres_device_major: stat\(|gres\.conf file )(?P<dev>/dev/+nvidia\d+)\)?:? "
                         r"No such file or directory")
"""slurmd's GRES plugin finding no device file for a GPU gres.conf names (src/common/gres.c gres_device_major():
``stat(/dev/nvidia0): No such file or directory``; the config reader's "can't stat gres.conf file /dev/nvidia0"):
the NVIDIA driver has not created it (not loaded, or the GPU is missing)."""
_SLURMD_INIT_FAILED = lazy_re(r"\berror:\s*slurmd initialization failed")
"""slurmd's last word before it exits when it cannot start (src/slurmd/slurmd/slurmd.c: ``error("slurmd
initialization failed")``, then exit 1): the error lines before it say why."""


@dataclass(frozen=True)
class SlurmdLog:
    """slurmd's log (``/var/log/slurmd.log``, ``journalctl -u slurmd``), what it says of the node's GPUs (Slurm
    gres.conf(5) AutoDetect=nvml; src/plugins/gpu/nvml): ``detected`` the GPUs NVML autodetection found (None when not
    logged), ``files`` the /dev/nvidiaN of the GPU GRES records it built, ``type_null`` the detected devices no
    configured GRES type matched (slurmd then sets the type to NULL), ``ignored`` the autodetected GPUs it ignores (no
    GRES configured for them: "The following autodetected GPUs are being ignored:"), ``fatal`` / ``errors`` its fatal
    and error lines;
    each list holds (what, line)."""

    detected: tuple[int, str] | None
    files: tuple[tuple[str, str], ...]
    ignored: tuple[tuple[str, str], ...]
    type_null: tuple[tuple[str, str], ...]
    fatal: tuple[tuple[str, str], ...]
    errors: tuple[tuple[str, str], ...]


def parse_slurmd_log(text: str) -> SlurmdLog:
    """:class:`SlurmdLog` of ``text``; never raises."""
    detected: tuple[int, str] | None = None
    files: dict[str, str] = {}
    ignored: dict[str, str] = {}
    in_ignored = False
    ignored_line = ""
    null: dict[str, str] = {}
    fatal: list[tuple[str, str]] = []
    errors: list[tuple[str, str]] = []
    for raw in text.splitlines()[:200_000]:
        s = raw.strip().replace("**", "")
        if m := _SLURMD_NVML_COUNT.search(s):
            detected = (int(m.group(1)), s)
        elif _SLURMD_IGNORED.search(s):
            in_ignored = True
            ignored_line = s
            continue
        elif m := _SLURMD_GRES.search(s):
            (ignored if in_ignored else files).setdefault(m.group(1) or m.group(2), s)
            continue
        elif m := _SLURMD_TYPE_NULL.search(s):
            null.setdefault(m.group(1), s)
        elif m := _SLURMD_FATAL.search(s):
            fatal.append((m.group(1).strip(), s))
        elif _SLURMD_INIT_FAILED.search(s):  # it exits: its first error says why
            fatal.append((errors[0][0] if errors else "slurmd initialization failed", s))
        elif m := _SLURMD_ERROR.search(s):
            errors.append((m.group(1).strip(), s))
        in_ignored = False  # the ignored GPUs' records follow their warning line, one per line
    if ignored_line and not ignored:  # the warning kept, the records under it cut from the paste
        ignored["(the records are cut from this paste)"] = ignored_line
    return SlurmdLog(detected, tuple(files.items()), tuple(ignored.items()), tuple(null.items()), tuple(fatal),
                     tuple(errors))


def detect_slurmd_log(text: str) -> float:
    """0.9 for slurmd's log with what it says of the GPUs (NVML autodetection's count, the GPU GRES records, a GRES type
    it could not match); 0 otherwise."""
    head = text[:200_000]
    if not _SLURMD_MARK.search(head):
        return 0.0
    return 0.9 if (_SLURMD_NVML_COUNT.search(head) or _SLURMD_TYPE_NULL.search(head) or _SLURMD_IGNORED.search(head)
                   or len(_SLURMD_GRES.findall(head)) >= 1 or _SLURMD_INIT_FAILED.search(head)
                   or SLURMD_NO_DEV.search(head)) else 0.0


# ------------------------------------------------------------------ squeue


_SQ_HEADER = lazy_re(r"^\s*JOBID\s+PARTITION\s+NAME\s+USER\s+(?:ST|STATE)\b.*NODELIST\(REASON\)\s*$", re.M)
_SQ_ROW = lazy_re(r"^\s*(?P<job>\d+(?:_\[?[\d\-,%\]]+)?)\s+(?P<part>\S+)\s+\S+\s+\S+\s+(?P<state>[A-Z_]+)\s+.*?"
                  r"(?:\((?P<reason>[^()]*(?:\([^()]*\))?[^()]*)\)|(?P<nodes>\S+))\s*$")


@dataclass(frozen=True)
class SqueueJob:
    """One ``squeue`` row: job id, partition, state (``PD``/``PENDING``, ``R``/``RUNNING``...), the reason in
    parentheses (pending jobs) or the node list, and the line."""

    job: str
    partition: str
    state: str
    reason: str
    nodes: str
    line: str


def parse_squeue(text: str) -> list[SqueueJob]:
    """The rows under ``squeue``'s (or ``squeue -l``'s) header; never raises."""
    out: list[SqueueJob] = []
    seen = False
    for raw in text.splitlines()[:200_000]:
        if _SQ_HEADER.match(raw):
            seen = True
            continue
        if seen and (m := _SQ_ROW.match(raw)):
            out.append(SqueueJob(m.group("job"), m.group("part"), m.group("state"), (m.group("reason") or "").strip(),
                                 m.group("nodes") or "", raw.rstrip()))
    return out


def detect_squeue(text: str) -> float:
    """0.95 for ``squeue`` output: its header and at least one job row."""
    head = text[:50_000]
    return 0.95 if _SQ_HEADER.search(head) and parse_squeue(head) else 0.0


# ------------------------------------------------------------------ LBNL Node Health Check (nhc)


_NHC_MARK = lazy_re(r"Node Health Check (?:starting|completed successfully)|^Running check:\s+\"|\bnhc:\s+Health check failed:|"
                    r"^(?:ERROR:\s+nhc:\s+)?Health check failed:\s|^SUCCESS:\s+nhc:\s+Health check passed:", re.M)
_NHC_PASSED = lazy_re(r"^SUCCESS:\s+nhc:\s+Health check passed:\s+(?P<check>check_\w+):\s*(?P<msg>.*?)\s*$")
"""Azure's NHC-based health checks (azurehpc-health-checks, run-health-checks.sh) print each passing check too."""
_NHC_EXIT = lazy_re(r"^Health checks completed with exit code:\s*(?P<rc>\d{1,3})\b")
_NHC_FAILED = lazy_re(r"Health check failed:\s+(?:(?P<check>check_\w+):\s+)?(?P<msg>.+?)\s*$")
_NHC_DONE = lazy_re(r"Node Health Check completed successfully(?: \((?P<s>[\d.]+)s\))?")


@dataclass(frozen=True)
class NhcRun:
    """What LBNL NHC (Node Health Check, https://github.com/mej/nhc) printed: the checks it ran (``Running check:``
    lines, with -v), each failure (check name where NHC names it, message, line) and whether it completed
    successfully (its last line)."""

    checks: tuple[str, ...]
    failures: tuple[tuple[str, str, str], ...]
    completed: str
    passed: tuple[tuple[str, str, str], ...] = ()
    """Checks reported passed (check, message, line): Azure's azurehpc-health-checks print them."""


def parse_nhc(text: str) -> NhcRun:
    """:class:`NhcRun` of ``text``; never raises."""
    checks: list[str] = []
    fails: dict[tuple[str, str], str] = {}
    done = ""
    passed: list[tuple[str, str, str]] = []
    for raw in text.splitlines()[:100_000]:
        s = raw.strip()
        if s.startswith("Running check:"):
            checks.append(s.split(":", 1)[1].strip().strip('"'))
        elif m := _NHC_PASSED.match(s):
            passed.append((m.group("check"), m.group("msg"), s))
        elif (m := _NHC_EXIT.match(s)) and m.group("rc") == "0":
            done = s
        elif m := _NHC_FAILED.search(s):
            fails.setdefault((m.group("check") or "", m.group("msg")), s)
        elif _NHC_DONE.search(s):
            done = s
    return NhcRun(tuple(checks), tuple((c, msg, ln) for (c, msg), ln in fails.items()), done, tuple(passed))


def detect_nhc(text: str) -> float:
    """0.93 for NHC's own lines (start, checks run, a failed check, completion)."""
    head = text[:100_000]
    return 0.93 if _NHC_MARK.search(head) and ("Node Health Check" in head or "Health check failed:" in head
                                               or "Health check passed:" in head) else 0.0


# ------------------------------------------------------------------ Slurm jobs: sacct, scontrol show job


JOB_STATES = ("BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED", "NODE_FAIL",
              "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED",
              "TIMEOUT", "STOPPED", "SPECIAL_EXIT", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SIGNALING",
              "STAGE_OUT")
"""Slurm's job state names (sacct(1) and squeue(1), JOB STATE CODES, https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES).
sacct's fixed-width columns cut a long word and end it with ``+`` (``OUT_OF_ME+``); :func:`job_state` restores it."""
_SHORT_JOB = {"BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "CG": "COMPLETING", "DL": "DEADLINE",
              "F": "FAILED", "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "PD": "PENDING", "PR": "PREEMPTED",
              "R": "RUNNING", "RQ": "REQUEUED", "S": "SUSPENDED", "TO": "TIMEOUT"}


def job_state(word: str) -> str:
    """A job state word as sacct/scontrol/squeue print it (``CANCELLED by 1234``, ``OUT_OF_ME+``, ``CD``) -> its
    full name in :data:`JOB_STATES`, or ``""`` when it is not one."""
    w = word.strip().split(" ")[0].upper()
    if w in _SHORT_JOB:
        return _SHORT_JOB[w]
    cut = w.rstrip("+")
    return next((s for s in JOB_STATES if s == cut or (w.endswith("+") and len(cut) >= 3 and s.startswith(cut))), "")


_TRES_GPU = lazy_re(r"(?:^|[,\s])(?:gres/)?gpu(?::(?P<type>[\w.\-]+))?[=:](?P<n>\d+)(?=[,\s(]|$)")


def tres_gpus(tres: str) -> tuple[int, str]:
    """GPUs in a TRES or GRES string (``cpu=224,...,gres/gpu=8,gres/gpu:h100=8``; AllocGRES ``gpu:2``;
    ``gpu:ampere:64``) -> (count, type or ""): the untyped count when given, else the sum of the typed ones."""
    total, typed, kinds = None, 0, []
    for m in _TRES_GPU.finditer(tres):
        if m.group("type"):
            if re.fullmatch(r"\d+", m.group("type")):
                continue
            typed += sat_int(m.group("n"))
            kinds.append(m.group("type"))
        else:
            total = sat_int(m.group("n"))
    return (total if total is not None else typed), "/".join(dict.fromkeys(kinds))


@dataclass(frozen=True)
class SlurmJob:
    """One job (or job step) as sacct or ``scontrol show job`` prints it: its id (``123``, ``123.batch``), full state
    name (:func:`job_state`, ``""`` when the output has no state), the raw state text, exit code (``1:0``; sacct's
    ExitCode is ``code:signal``), reason (scontrol's Reason=), node list, GPUs allocated (from AllocTRES/TRES/
    AllocGRES, 0 when not shown), GPU type, and the line or record it came from."""

    job: str
    state: str
    state_text: str
    exit_code: str
    reason: str
    nodes: str
    gpus: int
    gpu_type: str
    line: str

    @property
    def step(self) -> bool:
        """A job step (``123.batch``, ``123.extern``, ``123.0``), not the job itself."""
        return "." in self.job


_TRES_ONLY = lazy_re(r"^\s*(?:[a-z_]+(?:/[\w:.\-]+)?=[\w.:\-]+,)+[a-z_]+(?:/[\w:.\-]+)?=[\w.:\-]+\s*$")
"""A line that is a TRES list alone (``billing=112,cpu=36,gres/gpu=4,mem=180G,node=1``: ``sacct --format alloctres
-P --noheader``, ``squeue -O tres-alloc``)."""
_DASHES = lazy_re(r"^\s*-{2,}(?:\s+-{2,})+\s*$")


def _columns(header: str, dashes: str) -> list[tuple[str, int, int]]:
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]
    return [(header[a:b].strip().lower(), a, b) for a, b in spans]


def _cells(cols: list[tuple[str, int, int]], row: str) -> dict[str, str]:
    """A fixed-width row's words placed in the column whose dashes they overlap most (else the nearest): a redacted
    user name that shifts the row, or an empty cell, does not move the other words into the wrong column."""
    cells: dict[str, list[str]] = {}
    for m in re.finditer(r"\S+", row):
        a, b = m.span()
        best = max(cols, key=lambda c: (min(b, c[2]) - max(a, c[1]), -abs((a + b) / 2 - (c[1] + c[2]) / 2)))
        cells.setdefault(best[0], []).append(m.group())
    return {k: " ".join(v) for k, v in cells.items()}


def _job_from(cols: dict[str, str], line: str) -> SlurmJob | None:
    job = cols.get("jobid") or cols.get("jobidraw") or ""
    st = cols.get("state", "")
    tres = " ".join(v for k, v in cols.items() if k in ("alloctres", "reqtres", "tres", "allocgres", "reqgres",
                                                          "tres_alloc", "gres", "tres-alloc"))
    if not job and not tres:
        return None
    n, kind = tres_gpus(tres)
    return SlurmJob(job.rstrip("+"), job_state(st), st, cols.get("exitcode", ""), cols.get("reason", ""),
                    cols.get("nodelist", ""), n, kind, line.rstrip())


def parse_sacct(text: str) -> list[SlurmJob]:
    """The rows of sacct's table: the default fixed-width form (a header line, then a line of dashes giving each
    column's width), the ``-P``/``--parsable`` form (``|`` between fields, header first) or TRES lists alone
    (``--noheader``). Columns are read by their header names (JobID, State, ExitCode, NodeList, AllocTRES, AllocGRES,
    ...); never raises."""
    lines = text.splitlines()[:200_000]
    out: list[SlurmJob] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        low = raw.lower()
        if i + 1 < len(lines) and _DASHES.match(lines[i + 1]) and re.search(r"\bjobid\b|\bstate\b|\balloctres\b", low):
            cols = _columns(raw, lines[i + 1])
            i += 2
            while i < len(lines) and lines[i].strip() and not _DASHES.match(lines[i]):
                row = lines[i]
                cells = _cells(cols, row)
                if j := _job_from(cells, row):
                    out.append(j)
                i += 1
            continue
        if "|" in raw and re.search(r"(?:^|\|)\s*(?:jobid|state|alloctres)\s*(?:\||$)", low):
            names = [c.strip().lower() for c in raw.split("|")]
            i += 1
            while i < len(lines) and "|" in lines[i]:
                vals = lines[i].split("|")
                if j := _job_from(dict(zip(names, (v.strip() for v in vals))), lines[i]):
                    out.append(j)
                i += 1
            continue
        if _TRES_ONLY.match(raw) and "node=" in raw:
            n, kind = tres_gpus(raw)
            out.append(SlurmJob("", "", "", "", "", "", n, kind, raw.rstrip()))
        i += 1
    return out


def detect_sacct(text: str) -> float:
    """0.9 for sacct's table (a header naming JobID/State/AllocTRES over its dashes, or ``-P`` with ``|``) with a row;
    0.6 for TRES lists alone (``sacct --format alloctres -P --noheader``, ``squeue -O tres-alloc``)."""
    head = text[:50_000]
    jobs = parse_sacct(head)
    if not jobs:
        return 0.0
    return 0.6 if all(not j.job for j in jobs) else 0.9


_JOB_RECORD = lazy_re(r"(?:^|\s)JobId=(?P<id>\d+)")
_JOB_STATE = lazy_re(r"(?:^|\s)JobState=(?P<state>\S+)")


def parse_show_job(text: str) -> list[SlurmJob]:
    """Every record of ``scontrol show job`` (``JobId=`` opens one; without it, a record cut before its first line
    still counts when it has ``JobState=``): state, Reason=, ExitCode=, NodeList=, GPUs from AllocTRES=/TRES=
    (else ReqTRES=, JOB_GRES=, TresPerNode=); never raises."""
    blocks: list[list[str]] = []
    for raw in text.splitlines()[:200_000]:
        if _JOB_RECORD.search(raw) or not blocks:
            blocks.append([])
        blocks[-1].append(raw)
    out: list[SlurmJob] = []
    for b in blocks:
        rec = "\n".join(b)
        st = _JOB_STATE.search(rec)
        if not st:
            continue
        jid = _JOB_RECORD.search(rec)

        def val(key: str, rec: str = rec) -> str:
            m = re.search(rf"(?:^|\s){key}=(\S+)", rec)
            return "" if not m or m.group(1) in ("(null)", "None", "N/A") else m.group(1)

        tres = val("AllocTRES") or val("TRES") or val("ReqTRES") or val("JOB_GRES") or val("TresPerNode")
        n, kind = tres_gpus(tres)
        ev = next((ln for ln in b if "JobState=" in ln), b[0]).strip()
        out.append(SlurmJob(jid.group("id") if jid else "", job_state(st.group("state")), st.group("state"),
                            val("ExitCode"), val("Reason"), val("NodeList"), n, kind, ev))
    return out


def detect_scontrol_job(text: str) -> float:
    """0.95 for ``scontrol show job``: a ``JobState=`` with ``ExitCode=`` or ``JobId=`` beside it."""
    head = text[:50_000]
    if not _JOB_STATE.search(head) or not re.search(r"(?:^|\s)(?:ExitCode|JobId|NumNodes)=", head):
        return 0.0
    return 0.95 if parse_show_job(head) else 0.0
