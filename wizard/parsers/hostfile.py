"""The multi-node hostfile: which nodes a multi-node validation runs on, how to reach each, and its GPUs.

A parser (pure, never raises on garbage): :func:`parse_hostfile` turns the file's text into
:class:`Hostfile` facts, the nodes it could read and a ``"line N: what is wrong"`` problem for every
line it could not. The launcher (:mod:`wizard.multinode`) refuses a hostfile with any problem and names
them all; the multi-node steps check the plan's hostfile the same way before they start it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from wizard.common import sat_int
from wizard.common import lazy_re
from wizard.i18n import Msg, N_
from wizard.i18n import names as listed

NAME_RE = lazy_re(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$")
"""Node names: they become the ``[name]`` prefix of log lines, so no spaces or brackets."""
KNOWN_KEYS = ("python", "addr", "slots", "max_slots")
"""Keys a hostfile line may carry: python (the node's interpreter with torch), addr (the address the
other nodes reach this one on; the head's is the rendezvous address), slots/max_slots (MPI hostfile form)."""


@dataclass(frozen=True)
class NodeSpec:
    """One node of a hostfile.

    Attributes:
        name: shown in findings and as the ``[name]`` log prefix.
        target: what ssh connects to (an ssh-config alias, ``host`` or ``user@host``).
        gpus: processes (GPUs) to start on it; ``None`` = the node's GPU count from its facts (1 on CPU).
        python: its interpreter with torch; ``None`` = the launcher's ``--python`` (default ``python3``).
        addr: the address other nodes reach it on (the head's is the rendezvous address); ``None`` = the
            HostName ssh resolves for ``target`` (``ssh -G``).
        line_no: its line in the hostfile (1-based; 0 when it did not come from a file).
    """

    name: str
    target: str
    gpus: int | None = None
    python: str | None = None
    addr: str | None = None
    line_no: int = 0


@dataclass(frozen=True)
class Hostfile:
    """A hostfile, read.

    Attributes:
        source: where it came from (its path, or "hostfile").
        nodes: the nodes of the lines without a problem, in file order.
        problems: one ``"line N: what is wrong"`` per problem (all of them, not only the first); a file
            without nodes has the problem "no nodes ...".
    """

    source: str
    nodes: tuple[NodeSpec, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No problem at all: the hostfile can be used as it is."""
        return not self.problems


MAX_GPUS_PER_NODE = 64
"""Upper bound of a hostfile's GPU count per node (judgement: the largest single systems have 8-72 GPUs in
one NVLink domain but at most 8-16 per host; 64 leaves room and still catches typos such as 800)."""


def _gpus(raw: str, line_no: int, problems: list[str], what: str = "gpus") -> int | None:
    try:
        n = sat_int(raw)
    except ValueError:
        problems.append(Msg("line {line_no}: {what} must be a whole number, got {raw!r}", line_no=line_no, what=what, raw=raw))
        return None
    if not 1 <= n <= MAX_GPUS_PER_NODE:
        problems.append(Msg("line {line_no}: {what} must be from 1 to {most}, got {n}", line_no=line_no, what=what,
                            most=MAX_GPUS_PER_NODE, n=n))
        return None
    return n


def _target_problem(target: str) -> str:
    """Why an ssh target cannot be used, or "".

    * it starts with ``-``: ssh would read it as an option (``-oProxyCommand=...``);
    * ``host:port`` (or ``user@host:port``): ssh takes no port there and would look up a host named
      ``host:port``; an IPv6 literal (several colons, or in brackets) and ``ssh://host:port`` are fine
      (ssh(1) DESTINATION: ``[user@]hostname`` or ``ssh://[user@]hostname[:port]``)."""
    if target.startswith("-"):
        return N_("starts with '-': ssh would read it as an option")
    if target.lower().startswith("ssh://"):
        return ""
    host = target.rsplit("@", 1)[-1]
    if host.count(":") == 1 and not host.startswith("["):
        return N_("looks like host:port, which ssh does not take: use ssh://host:port or a Host alias in your ssh "
                  "config (Port, HostName)")
    return ""


def parse_hostfile(text: str, source: str = "hostfile") -> Hostfile:
    """Hostfile text -> its nodes, in file order, and every problem found. Never raises.

    Two line forms (``#`` starts a comment, blank lines are skipped):

    * bringup's: ``name  ssh_target  gpus  [key=value ...]``, keys ``python=`` and ``addr=``;
    * MPI's: ``host [slots=N] [max_slots=M]`` (Open MPI hostfile; the host is both name and ssh target,
      ``slots`` the GPU count), with the same optional keys.

    :attr:`Hostfile.problems` lists every problem with its line number (bad counts, unknown keys, duplicate
    names or targets, names that cannot be a log prefix, a target or name starting with ``-``, a
    ``host:port`` target, no nodes at all); a line with a problem gives no node. A hostfile with any
    problem must not be used (:attr:`Hostfile.ok`): the launcher refuses it whole.
    """
    nodes: list[NodeSpec] = []
    problems: list[str] = []
    names: dict[str, int] = {}
    targets: dict[str, int] = {}
    if not isinstance(text, str):
        return Hostfile(source, (), (f"not text: {type(text).__name__}",))
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        toks = line.split()
        if "\x00" in line:
            problems.append(Msg("line {line_no}: contains a NUL byte", line_no=line_no))
            continue
        pos = [t for t in toks if "=" not in t]
        kv_toks = [t for t in toks if "=" in t]
        if toks[: len(pos)] != pos:
            problems.append(Msg("line {line_no}: key=value items must come after the name, target and GPU count "
                                "({line!r})", line_no=line_no, line=line))
            continue
        kv: dict[str, str] = {}
        bad = False
        for t in kv_toks:
            k, _, v = t.partition("=")
            if k not in KNOWN_KEYS:
                problems.append(Msg("line {line_no}: unknown key {k!r} (known: {known})", line_no=line_no, k=k,
                                    known=listed(KNOWN_KEYS)))
                bad = True
            elif not v:
                problems.append(Msg("line {line_no}: {k}= has no value", line_no=line_no, k=k))
                bad = True
            elif k in kv:
                problems.append(Msg("line {line_no}: {k}= given twice", line_no=line_no, k=k))
                bad = True
            else:
                kv[k] = v
        gpus: int | None = None
        if len(pos) == 1:  # MPI form: host [slots=N]
            target = pos[0]
            name = target.rsplit("@", 1)[-1]
            if "slots" in kv:
                gpus = _gpus(kv["slots"], line_no, problems, "slots")
                bad = bad or gpus is None
        elif len(pos) == 3:
            name, target = pos[0], pos[1]
            gpus = _gpus(pos[2], line_no, problems)
            bad = bad or gpus is None
            if "slots" in kv:
                problems.append(Msg("line {line_no}: slots= is for the MPI form (host slots=N); this line already "
                                    "gives {gpus} GPUs", line_no=line_no, gpus=pos[2]))
                bad = True
        elif len(pos) == 2:
            problems.append(Msg("line {line_no}: expected 'name ssh_target gpus' (or 'host slots=N'), got {line!r}: "
                                "the GPU count is missing", line_no=line_no, line=line))
            continue
        else:
            problems.append(Msg("line {line_no}: expected 'name ssh_target gpus [key=value ...]' (or 'host slots=N'), "
                                "got {n} words: {line!r}", line_no=line_no, n=len(pos), line=line))
            continue
        target_problem = _target_problem(target)
        if target_problem:
            problems.append(Msg("line {line_no}: ssh target {target!r} {problem}", line_no=line_no, target=target,
                                problem=target_problem))
            bad = True
        if name.startswith("-"):  # a command-line option look-alike (NAME_RE refuses it too)
            if name != target:
                problems.append(Msg("line {line_no}: node name {name!r} starts with '-' (names must start with a letter "
                                    "or digit)", line_no=line_no, name=name))
            bad = True
        elif not NAME_RE.match(name):
            problems.append(Msg("line {line_no}: node name {name!r} may hold only letters, digits and . _ : @ - "
                                "(it prefixes log lines)", line_no=line_no, name=name))
            bad = True
        if name in names:
            problems.append(Msg("line {line_no}: node name {name!r} is already used on line {first}", line_no=line_no,
                                name=name, first=names[name]))
            bad = True
        if target in targets:
            problems.append(Msg("line {line_no}: ssh target {target!r} is already listed on line {first}",
                                line_no=line_no, target=target, first=targets[target]))
            bad = True
        if "addr" in kv and not re.fullmatch(r"[A-Za-z0-9._:%\[\]-]+", kv["addr"]):
            problems.append(Msg("line {line_no}: addr={addr!r} is not a host name or IP address", line_no=line_no,
                                addr=kv["addr"]))
            bad = True
        names.setdefault(name, line_no)
        targets.setdefault(target, line_no)
        if not bad:
            nodes.append(NodeSpec(name, target, gpus, kv.get("python"), kv.get("addr"), line_no))
    if not nodes and not problems:
        problems.append(Msg("no nodes (every line is blank or a comment)"))
    return Hostfile(source, tuple(nodes), tuple(problems))
