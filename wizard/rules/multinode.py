"""Judging a multi-node validation run (the log of ``python -m wizard.multinode``).

The log holds every node's lines with a ``[<node>] `` prefix (the validation script's ``BRINGUP`` events, torch
and ``NCCL_DEBUG=INFO`` lines) and the launcher's own ``BRINGUP`` events without a prefix (``hosts``, ``group``
start/end, ``error`` with ``kind`` unreachable/torch_missing/hang/..., ``end``); see :mod:`wizard.multinode`.
:func:`read_log` splits it by node and by torchrun job ("group": ``all``, ``pair:a,b``, ``nccl-tests``);
:func:`judge_multinode` turns it into findings:

* ``multinode.nodes``: every node reachable over ssh with a Python that has torch; an unreachable node is FAIL
  named with ssh's own error; torch/python missing FAIL with the remedy.
* ``multinode.consistency``: driver, CUDA (torch's), NCCL, torch, GPU count, GPU model and VBIOS must match on
  every node (FAIL on any mismatch: NVIDIA/nccl-tests#200, NVIDIA/nccl#1634); kernel, OS and Python
  differences WARN (judgement: not in those sources, but a common cause of "works on one node"). Majority rule: the nodes that differ from the value
  most nodes have are named; without a majority every value is listed with its nodes.
* ``multinode.transport`` (and ``multinode.ib_errors``, ``multinode.nvls``, ``multinode.hang``,
  ``multinode.nccl_errors``): each node's NCCL_DEBUG=INFO lines judged by
  :func:`wizard.rules.nccl.judge_nccl_log` (NET/IB vs NET/Socket, docker0/lo); a CPU run
  (gloo) prints no NCCL lines: ``skip`` with that reason.
* ``multinode.allreduce``: the all-nodes job completed on every node, every rank's sanity all-reduce, ``wrong``
  = 0 at every size; on CUDA, busbw at the largest size (>= 1 GiB) against 0.8 x the node's aggregate NIC
  bandwidth (derived) when the plan gives ``nics_per_node`` and ``nic_gbit_s``, else
  ``unknown`` with the figure; on CPU correctness only. A hang or failure names the node (the launcher's
  ``hang``/``node_failed`` errors, the script's ``collective_timeout`` ranks mapped to nodes). nccl-tests output
  from the same run is judged by :func:`wizard.rules.nccl.judge_nccl_tests`.
* ``multinode.pairwise``: every pair of nodes (Meta GCM's pairwise NCCL check): the node whose every pair failed while
  other pairs passed is named; on CUDA a pair below 0.9 x / 0.75 x the median pair is WARN / FAIL (derived,
  following SuperBench's variance rule) and the node common to the slow pairs is named.

Units: GB/s = 1e9 bytes/s; Gb/s for NIC line rates; sizes in bytes (shown in KiB/MiB/GiB).
Never raises on garbage: a log that is not a multi-node run gives one ``unknown`` finding.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from wizard.common import human_bytes, to_int
from wizard.model import Finding, Measure, Verdict, measure
from wizard.parsers.nccl import parse_nccl_log
from wizard.parsers.validate import Event, num, parse_event_line
from wizard.rules.nccl import (
    MIN_JUDGED_BYTES, MULTINODE_NIC_FRACTION, SRC_E1, SRC_NIC_FLOOR, SRC_PERF, judge_nccl_log, judge_nccl_tests,
)
from wizard.hosts import ssh_failed_words
from wizard.i18n import N_, Msg, SEMICOLON, joined
from wizard.i18n import names as listed
from wizard.common import lazy_re

SRC_E2 = ("consistent configuration across nodes, FAIL on any mismatch: NVIDIA/nccl-tests#200 "
          "(https://github.com/NVIDIA/nccl-tests/issues/200), NVIDIA/nccl#1634 (https://github.com/NVIDIA/nccl/issues/1634)")
SRC_VBIOS = ("Meta GCM health checks, vbios_mismatch (https://github.com/facebookresearch/gcm); Azure "
             "azurehpc-health-checks check_gpu_vbios (https://github.com/Azure/azurehpc-health-checks): VBIOS must "
             "match across the fleet")
SRC_E4 = (f"{SRC_PERF}; #wrong = 0; busbw at the largest size >= 0.8 x the node's aggregate NIC bandwidth, "
          f"{SRC_NIC_FLOOR}")
SRC_E5 = ("Meta GCM health checks, check-nccl pairwise (https://github.com/facebookresearch/gcm): pairwise runs "
          "isolate a bad node or link")
SRC_D1 = ("each pair within 10% (WARN) / 25% (FAIL) of the median pair, derived after SuperBench's variance rule "
          "(https://github.com/microsoft/superbenchmark)")
SRC_E6 = ("NCCL troubleshooting (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html): a "
          "hang is a failure; PyTorch distributed monitored_barrier and collective timeouts "
          "(https://pytorch.org/docs/stable/distributed.html)")
SRC_SSH = "ssh(1) EXIT STATUS (255 = ssh itself failed: connect, authentication, host key)"
SRC_RUN = ("PyTorch torchrun (elastic launch) documentation (https://pytorch.org/docs/stable/elastic/run.html); "
           "ssh(1) man page")
SRC_HOSTFILE = ("Open MPI mpirun(1) man page, hostfile format ('host slots=N'); ssh(1) man page, DESTINATION "
                "([user@]hostname or ssh://[user@]hostname[:port])")

PAIR_WARN_FRACTION = 0.9
"""A pair below this fraction of the median pair's busbw is WARN (derived, the 10% variance rule of SRC_D1)."""
PAIR_FAIL_FRACTION = 0.75
"""A pair below this fraction of the median pair's busbw is FAIL (derived, the 25% variance rule of SRC_D1)."""

FAIL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("driver", N_("NVIDIA driver"), SRC_E2),
    ("torch_cuda", N_("CUDA (torch build)"), SRC_E2),
    ("nccl", "NCCL", SRC_E2),
    ("torch", "PyTorch", SRC_E2),
    ("gpu_count", N_("GPU count"), SRC_E2),
    ("gpu_models", N_("GPU model"), SRC_E2),
    ("vbios", "VBIOS", f"{SRC_E2}; {SRC_VBIOS}"),
)
"""Facts that must be equal on every node (FAIL on a mismatch)."""
WARN_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("kernel", N_("kernel"), f"{SRC_E2}; judgement (not in those issues): a different kernel means different driver "
                         "modules and network stack"),
    ("os", N_("OS"), f"{SRC_E2}; judgement (not in those issues): a different OS release ships different libraries"),
    ("python", "Python", f"{SRC_E2}; judgement (not in those issues): a different Python can load different wheels"),
)
"""Facts that should be equal (WARN on a mismatch)."""

_REMEDY = {
    "driver": N_("Install the fleet's driver version on {nodes} (the same branch and release as the other nodes; the "
               "driver stage shows how), reboot it, then recheck."),
    "vbios": N_("Update the GPU firmware (VBIOS) on {nodes} to the fleet's version with the system vendor's firmware "
              "tool, then recheck."),
    "gpu_count": N_("Find out why {nodes} shows a different number of GPUs: run the health stage there (a GPU missing "
                  "from the bus or from NVML, or one hidden by CUDA_VISIBLE_DEVICES)."),
    "gpu_models": N_("Check {nodes}: a node with other GPUs does not belong in the same job (or fix the hostfile)."),
    "kernel": N_("Boot {nodes} into the same kernel as the other nodes (same package version), so the driver modules "
               "and network stack match."),
}
"""Remedy per differing fact ({nodes}: the odd nodes; {label}: the fact's name); others: :data:`REMEDY_SAME`."""
REMEDY_SAME = N_("Install the same {label} on {nodes} as on the other nodes; a mixed fleet slows or hangs every "
                 "collective the odd node joins.")

_PREFIX = lazy_re(r"^\[(?P<node>[^\]\s]{1,200})\] (?P<rest>.*)$")


# ---------------------------------------------------------------------------------------------- reading


@dataclass
class Group:
    """One torchrun job of the run (or the nccl-tests run): its nodes, events and each node's lines."""

    name: str
    nodes: list[str]
    start: Event
    end: Event | None = None
    events: list[Event] = field(default_factory=list)
    lines: dict[str, list[str]] = field(default_factory=dict)
    errors: list[Event] = field(default_factory=list)  # the launcher's errors about this group

    @property
    def is_pair(self) -> bool:
        return self.name.startswith("pair:")

    def rank_nodes(self) -> dict[int, str]:
        """Global rank -> node name, from each rank's ``start`` event (its line prefix)."""
        out: dict[int, str] = {}
        for e in self.events:
            if e.kind == "start" and e.prefix and isinstance(e.data.get("rank"), int):
                out[e.data["rank"]] = e.prefix
        return out

    def rcs(self) -> dict[str, Any]:
        rc = self.end.get("rc") if self.end else None
        return rc if isinstance(rc, dict) else {}


@dataclass
class MultiLog:
    """A multi-node log, read. ``nodes``: hostfile order; ``facts``: node -> its ``facts`` event."""

    hosts: Event | None = None
    nodes: list[str] = field(default_factory=list)
    targets: dict[str, str] = field(default_factory=dict)
    device: str = ""
    facts: dict[str, Event] = field(default_factory=dict)
    errors: list[Event] = field(default_factory=list)  # launcher errors + script errors outside any group
    groups: list[Group] = field(default_factory=list)
    end: Event | None = None
    node_lines: dict[str, list[str]] = field(default_factory=dict)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def group(self, name: str) -> Group | None:
        for g in self.groups:
            if g.name == name:
                return g
        return None

    def launcher_errors(self, kind: str | None = None) -> list[Event]:
        return [e for e in self.errors if not e.prefix and (kind is None or e.get("kind") == kind)]


def read_log(text: str) -> MultiLog:
    """Split a multi-node log by node and by group. Never raises."""
    ml = MultiLog()
    active: list[Group] = []
    for i, line in enumerate(text.splitlines(), 1):
        r = parse_event_line(line, i)
        if isinstance(r, str):
            ml.bad_lines.append((i, r[:500]))
            continue
        if isinstance(r, Event) and not r.prefix and r.data.get("source") == "launcher":
            _launcher_event(ml, active, r)
            continue
        m = _PREFIX.match(line)
        if not m:
            continue
        node, body = m.group("node"), m.group("rest")
        ml.node_lines.setdefault(node, []).append(body)
        g = next((x for x in reversed(active) if node in x.nodes or (x.name == "nccl-tests" and node == x.name)), None)
        if g is not None:
            g.lines.setdefault(node, []).append(body)
            if isinstance(r, Event):
                g.events.append(r)
        elif isinstance(r, Event):
            if r.kind == "facts":
                ml.facts[node] = r
            elif r.kind == "error":
                ml.errors.append(r)
    return ml


def _launcher_event(ml: MultiLog, active: list[Group], e: Event) -> None:
    if e.kind == "hosts":
        ml.hosts = e
        ml.device = str(e.get("device") or "")
        for n in e.get("nodes") or []:
            if isinstance(n, dict) and isinstance(n.get("name"), str):
                ml.nodes.append(n["name"])
                ml.targets[n["name"]] = str(n.get("target") or n["name"])
    elif e.kind == "group":
        name = str(e.get("group") or "")
        nodes = [str(x) for x in (e.get("nodes") or []) if isinstance(x, str)]
        if e.get("state") == "start":
            g = Group(name, nodes, e)
            ml.groups.append(g)
            active.append(g)
        else:
            for g in reversed(active):
                if g.name == name:
                    g.end = e
                    active.remove(g)
                    break
    elif e.kind == "error":
        gname = e.get("group")
        eg = next((x for x in reversed(ml.groups) if x.name == gname), None) if gname else None
        if eg is not None:
            eg.errors.append(e)
        else:
            ml.errors.append(e)
    elif e.kind == "end":
        ml.end = e


# ---------------------------------------------------------------------------------------------- helpers


def _raw(e: Event) -> str:
    """The event as evidence, with its node (:attr:`wizard.parsers.validate.Event.raw`)."""
    return e.raw


def _g(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"


def _fmt_value(v: Any) -> str:
    if v is None or v == [] or v == "":
        return "none"
    if isinstance(v, list):
        c = Counter(str(x) for x in v)
        return ", ".join(f"{n}x {k}" if n > 1 else k for k, n in c.items())
    return str(v)


def _norm(field_name: str, v: Any) -> Any:
    """A comparable form of one fact (lists of per-GPU values as sorted tuples)."""
    if isinstance(v, list):
        return tuple(sorted(str(x) for x in v))
    if isinstance(v, str):
        return v.strip()
    return v


def _nodes_text(names: list[str]) -> str:
    """Up to 12 node names, "a, b and 3 more"; shown with the reader's list mark (walk 37 #18: "2 个节点（node01,
    node02）" in a Chinese line). Its English is the stored text."""
    return listed(names[:12]) + (Msg(" and {n} more", n=len(names) - 12) if len(names) > 12 else "")


# ---------------------------------------------------------------------------------------------- judges


REMEDY_UNREACHABLE = N_("Check that `ssh {target} true` works from this machine without a password prompt (BatchMode: "
                        "keys in the agent or the ssh config, host key already in known_hosts), that the node is up "
                        "and sshd runs on it; or remove the node from the hostfile.")
"""What to do about a node ssh could not reach (the launcher's event carries it in English; the finding, translated)."""

REMEDY_TOO_FEW = N_("Fix the nodes named above (reachable over ssh, Python with torch), then rerun.")
"""What to do when fewer than two nodes can take part (the launcher's ``too_few_nodes`` event carries it in English)."""

LEFT_OUT_WHY = {w: w for w in (N_("unreachable"), N_("copy failed"), N_("torch missing"), N_("python missing"),
                                N_("no facts"))}
"""Why the launcher left a node out (``NodeState.excluded``): the words it stores, each a message id."""


def too_few_nodes_words(ready: list[str], left: list[tuple[str, str]]) -> str:
    """The ``too_few_nodes`` error's message, a :class:`Msg` (its English is what the launcher stores: "only 0 node(s)
    can take part (none); a multi-node all-reduce needs at least 2; left out: n1 (unreachable)"), so a Chinese screen
    shows it in Chinese (walk 28 #14); the node names as they are."""
    names: str = ", ".join(ready) if ready else Msg.plain("none")
    msg = Msg("only {n} node(s) can take part ({names}); a multi-node all-reduce needs at least 2", n=len(ready),
              names=names)
    if left:
        items = [Msg("{node} ({why})", node=name, why=Msg.plain(why) if why in LEFT_OUT_WHY else why)
                 for name, why in left]
        msg = msg + Msg("; left out: {left}", left=SEMICOLON.join(items))
    return msg


def said(e: Any, key: str, default: str = "") -> str:
    """A launcher event's ``message`` or ``remedy`` (``key``): a :class:`Msg` again where the event carries its template
    and arguments beside the English (``<key>_msg``, written by :meth:`wizard.multinode.Out.error`) and they give the
    same English; else the English as stored (a log from an older bringup), or ``default`` where there is none."""
    english = str(e.get(key) or "")
    if not english:
        return default
    return Msg.from_json(english, e.get(key + "_msg"))


def too_few_nodes_message(e: Any) -> str:
    """A ``too_few_nodes`` error event's message: rebuilt as a :class:`Msg` from its ``ready`` and ``left`` fields
    where it carries them (and they give the same English), else the stored English."""
    ready, left = e.get("ready"), e.get("left")
    stored = str(e.get("message") or "")
    if not (isinstance(ready, list) and isinstance(left, list) and all(isinstance(x, str) for x in ready)
            and all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, str) for y in x) for x in left)):
        return stored
    msg = too_few_nodes_words(ready, [(a, b) for a, b in left])
    return msg if str(msg) == stored else stored


def _nodes(ml: MultiLog) -> list[Finding]:
    out: list[Finding] = []
    problem_kinds = ("unreachable", "copy_failed", "python_missing", "torch_missing", "facts_failed", "launch")
    named: set[str] = set()
    for e in ml.launcher_errors():
        kind = str(e.get("kind") or "")
        if kind == "hostfile":
            probs = [str(p) for p in e.get("problems") or []] or [str(e.get("message") or "")]
            out.append(Finding("multinode.nodes", Verdict.FAIL, said(e, "message", Msg("bad hostfile")), "hostfile",
                               tuple(probs[:20]), said(e, "remedy", Msg("Fix the hostfile.")), SRC_HOSTFILE))
            continue
        if kind not in problem_kinds:
            continue
        node = str(e.get("node") or "nodes")
        named.add(node)
        src = SRC_SSH if kind == "unreachable" else SRC_RUN
        msg, remedy = said(e, "message", f"{node}: {kind}"), said(e, "remedy")
        if kind == "unreachable" and e.get("target") and e.get("error") is not None:  # said again, translatable
            msg = Msg("{node} ({target}) unreachable: {error}", node=node, target=str(e.get("target")),
                      error=ssh_failed_words(str(e.get("error"))))
            remedy = Msg(REMEDY_UNREACHABLE, target=str(e.get("target")))
        out.append(Finding("multinode.nodes", Verdict.FAIL, msg, node, (e.raw,), remedy, src))
    for e in ml.errors:  # the script's own errors during facts (e.g. torch_missing from an old script)
        if e.prefix and e.prefix not in named and e.get("kind") in ("torch_missing",):
            named.add(e.prefix)
            out.append(Finding("multinode.nodes", Verdict.FAIL, Msg("{prefix}: {get}", prefix=e.prefix, get=e.get('message')), e.prefix, (_raw(e),),
                               str(e.get("remedy") or ""), SRC_RUN))
    if not out and ml.hosts is not None:
        ok = [n for n in ml.nodes if n in ml.facts]
        missing = [n for n in ml.nodes if n not in ml.facts]
        if missing:
            out.append(Finding("multinode.nodes", Verdict.UNKNOWN,
                               Msg("no facts from {nodes_text} (the run may have been stopped early)", nodes_text=_nodes_text(missing)),
                               _nodes_text(missing), (ml.hosts.raw,), "Rerun the multi-node validation.", SRC_RUN))
        else:
            via = "srun (Slurm)" if ml.hosts.get("launcher") == "srun" else "ssh"
            out.append(Finding("multinode.nodes", Verdict.PASS,
                               Msg("all {n_ok} nodes reachable over {via}, each with a Python that has torch: {nodes_text}", n_ok=len(ok), via=via, nodes_text=_nodes_text(ok)), f"{len(ok)} nodes", tuple(_raw(ml.facts[n]) for n in ok[:4]), "",
                               SRC_SSH))
    return out


def _consistency(ml: MultiLog) -> list[Finding]:
    have = [n for n in (ml.nodes or list(ml.facts)) if n in ml.facts]
    usable = [n for n in have if ml.facts[n].get("torch") is not None or ml.facts[n].get("driver") is not None]
    nodes = usable if len(usable) >= 2 else have
    if len(nodes) < 2:
        return [Finding("multinode.consistency", Verdict.UNKNOWN,
                        Msg("facts from {n_nodes} node(s) ({a1}): at least 2 are needed to compare driver, CUDA, NCCL, "
                            "torch, kernel and GPUs", n_nodes=len(nodes), a1=_nodes_text(nodes) or Msg("none")), "nodes",
                        tuple(_raw(ml.facts[n]) for n in nodes), "Make at least two nodes reachable and rerun.", SRC_E2)]
    out: list[Finding] = []
    same: list[str] = []
    compared = 0  # fields known on every node (the real comparisons)
    absent: list[str] = []  # fields no node reported: left out
    partial: dict[str, list[str]] = {}  # node -> labels it did not report while other nodes did
    for fields, verdict in ((FAIL_FIELDS, Verdict.FAIL), (WARN_FIELDS, Verdict.WARN)):
        for key, label, src in fields:
            lacking = [n for n in nodes if _missing(ml.facts[n].get(key))]
            if len(lacking) == len(nodes):
                absent.append(label)
                continue
            for n in lacking:
                partial.setdefault(n, []).append(label)
            known = [n for n in nodes if n not in lacking]
            if not lacking:
                compared += 1
            values = {n: _norm(key, ml.facts[n].get(key)) for n in known}
            groups: dict[Any, list[str]] = {}
            for n, v in values.items():
                groups.setdefault(v, []).append(n)
            if len(groups) == 1:
                same.append(Msg("{label} {value}", label=Msg.plain(label),
                                value=_fmt_value(ml.facts[known[0]].get(key)))
                            + (Msg(" (on {nodes})", nodes=_nodes_text(known)) if lacking else ""))
                continue
            ranked = sorted(groups.items(), key=lambda kv: -len(kv[1]))
            majority = ranked[0] if len(ranked[0][1]) > len(ranked[1][1]) else None
            raw = {n: ml.facts[n].get(key) for n in nodes}
            if majority is not None:
                odd = [n for n in known if values[n] != majority[0]]
                detail = SEMICOLON.join(Msg("{n} has {value}", n=n, value=_fmt_value(raw[n])) for n in odd)
                msg = (Msg("{label} differs on {nodes_text}: {detail}, while {n} of {n_known} nodes ({nodes_text2}) "
                           "have {fmt_value}", label=Msg.plain(label), nodes_text=_nodes_text(odd), detail=detail, n=len(majority[1]), n_known=len(known), nodes_text2=_nodes_text(majority[1]), fmt_value=_fmt_value(raw[majority[1][0]])))
                subject = _nodes_text(odd)
            else:
                detail = SEMICOLON.join(Msg("{value} on {nodes}", value=_fmt_value(raw[ns[0]]), nodes=_nodes_text(ns))
                                        for _, ns in ranked)
                msg = Msg("{label} differs across nodes with no majority: {detail}", label=Msg.plain(label), detail=detail)
                subject = f"{len(known)} nodes"
                odd = known
            ev = tuple(_raw(ml.facts[n]) for n in (odd + (majority[1][:1] if majority else []))[:6])
            remedy = Msg(_REMEDY.get(key, REMEDY_SAME), label=Msg.plain(label), nodes=_nodes_text(odd))
            out.append(Finding("multinode.consistency", verdict, msg, subject, ev, remedy, src))
    uuids: dict[str, list[str]] = {}
    for n in nodes:
        for u in ml.facts[n].get("gpu_uuids") or []:
            if isinstance(u, str) and u:
                uuids.setdefault(u, []).append(n)
    dup = {u: ns for u, ns in uuids.items() if len(set(ns)) > 1}
    if dup:
        u, ns = next(iter(dup.items()))
        out.append(Finding("multinode.consistency", Verdict.FAIL,
                           Msg("the same GPU ({u}) is reported by {nodes_text}: the hostfile lists one machine twice", u=u, nodes_text=_nodes_text(sorted(set(ns)))), _nodes_text(sorted(set(ns))), tuple(_raw(ml.facts[n]) for n in ns[:4]),
                           "Give each machine one hostfile line (different ssh targets that reach the same host count "
                           "its GPUs twice).", SRC_E2))
    out += _count_vs_hostfile(ml, nodes)
    left_out = (Msg("; not reported by any node, left out: {labels}",
                    labels=joined(", ", [Msg.plain(a) for a in absent])) if absent else "")
    for n, labels in partial.items():
        others = [m for m in nodes if m != n]
        out.append(Finding("multinode.consistency", Verdict.UNKNOWN,
                           Msg("{n} did not report {labels} (other nodes did: {nodes_text}), so it cannot be compared", n=n, labels=joined(", ", [Msg.plain(x) for x in labels]), nodes_text=_nodes_text(others)), n, (_raw(ml.facts[n]),),
                           Msg("Run `bringup validate nodes` again and read {n}'s facts line: a missing driver, NCCL or "
                               "VBIOS there usually means nvidia-smi/NVML or a CUDA build of torch is missing on that "
                               "node.", n=n), SRC_E2))
    if compared < MIN_COMPARED_FIELDS:
        incomplete = [n for n in nodes if n in partial] or nodes
        return [f for f in out if f.verdict is not Verdict.UNKNOWN] + [Finding(
            "multinode.consistency", Verdict.UNKNOWN,
            (Msg('facts incomplete on {nodes_text}: only {compared} field(s) known on every node were compared (at least {min_compared_fields} are needed to call the nodes consistent)', nodes_text=_nodes_text(incomplete), compared=compared, min_compared_fields=MIN_COMPARED_FIELDS) + (Msg('; missing on some nodes: ') + SEMICOLON.join((Msg("{n}: {labels}", n=n, labels=joined(", ", [Msg.plain(x) for x in ls])) for n, ls in partial.items())) if partial else '') + left_out),
            _nodes_text(incomplete), tuple(_raw(ml.facts[n]) for n in incomplete[:4]),
            "Make every node report its facts (driver, CUDA, NCCL, torch, kernel, GPUs): check that the Python "
            "bringup runs there has torch and that nvidia-smi/NVML work, then rerun `bringup validate nodes`.",
            SRC_E2)]
    if not out:
        out.append(Finding("multinode.consistency", Verdict.PASS,
                           (Msg('{n_nodes} nodes ({nodes_text}) match: ', n_nodes=len(nodes), nodes_text=_nodes_text(nodes)) + SEMICOLON.join(same) + left_out),
                           f"{len(nodes)} nodes", tuple(_raw(ml.facts[n]) for n in nodes[:4]), "", f"{SRC_E2}; {SRC_VBIOS}"))
    return out


def _count_vs_hostfile(ml: MultiLog, nodes: list[str]) -> list[Finding]:
    """Each node's reported GPU count against the one its hostfile line gives (walk 34 #6: every node reporting 0 GPUs
    where the hostfile said 8 "matched"): fewer GPUs than the hostfile says fail on a GPU run (a GPU gone, or the
    driver). A CPU run is not judged so: it uses no GPU, and its step is marked cpu-only whatever it finds."""
    said = {}
    for h in (ml.hosts.get("nodes") if ml.hosts is not None else None) or []:
        if isinstance(h, dict) and isinstance(h.get("gpus"), int) and not isinstance(h.get("gpus"), bool) and h["gpus"] > 0:
            said[str(h.get("name"))] = h["gpus"]
    short = []
    for n in nodes:
        c = ml.facts[n].get("gpu_count")
        if n in said and isinstance(c, int) and not isinstance(c, bool) and c < said[n]:
            short.append((n, c, said[n]))
    cpu = ml.device == "cpu" or (ml.hosts is not None and ml.hosts.get("device") == "cpu")
    if not short or cpu:  # a CPU run uses no GPU (its ranks may follow the GPU column); its step is cpu-only anyway
        return []
    detail = SEMICOLON.join(Msg("{n} reports {c} GPU(s), its hostfile line {h}", n=n, c=c, h=h) for n, c, h in short)
    return [Finding("multinode.consistency", Verdict.FAIL,
                    Msg("fewer GPUs than the hostfile gives: {detail}", detail=detail),
                    _nodes_text([n for n, _c, _h in short]), tuple(_raw(ml.facts[n]) for n, _c, _h in short[:4]),
                    "Check each node's GPUs (`nvidia-smi -L`, `lspci -d 10de:`) and driver, or correct the hostfile's "
                    "GPU column.", f"{SRC_E2}; {SRC_HOSTFILE}")]


MIN_COMPARED_FIELDS = 3
"""Fields that must be known on every node before the nodes are called consistent (judgement, derived: fewer
say too little to PASS)."""


def _missing(v: Any) -> bool:
    """A fact the node did not report: null, an empty list or string, or the word "none"."""
    return v is None or v == [] or (isinstance(v, str) and v.strip().lower() in ("", "none"))


def _mn_id(fid: str) -> str:
    """A finding id of the node stage (``node.nvls``) as the multi-node step's (``multinode.nvls``)."""
    return fid if fid.startswith("multinode.") else "multinode." + fid.split(".", 1)[-1]


def _transport(ml: MultiLog, plan: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    torch_groups = [g for g in ml.groups if g.name != "nccl-tests"]
    if ml.device == "cpu" and torch_groups:
        return [Finding("multinode.transport", Verdict.SKIP,
                        "CPU run (gloo backend): gloo prints no NCCL_DEBUG lines, so NCCL's transport choice "
                        "(NET/IB vs NET/Socket) is not judged; run on the GPU nodes with --device cuda to check it",
                        "nodes", (), "", SRC_E1)]
    per_node: dict[str, list[str]] = {}
    for g in torch_groups:
        for n, lines in g.lines.items():
            per_node.setdefault(n, []).extend(ln for ln in lines if not ln.startswith("BRINGUP "))
    logs = {n: parse_nccl_log("\n".join(ls)) for n, ls in per_node.items()}  # each node's lines, read once
    with_nccl = {n: ls for n, ls in per_node.items() if logs[n].nccl_lines}
    if not with_nccl:
        if not torch_groups:
            return [Finding("multinode.transport", Verdict.SKIP, "no multi-node job ran, so NCCL's transport was not "
                            "seen", "nodes", (), "", SRC_E1)]
        return [Finding("multinode.transport", Verdict.UNKNOWN,
                        "no NCCL_DEBUG=INFO lines from any node: NCCL's transport choice cannot be judged",
                        "nodes", tuple(g.start.raw for g in torch_groups[:2]),
                        "Check that NCCL_DEBUG=INFO reaches the ranks (the launcher sets it; a site wrapper or "
                        "/etc/nccl.conf with NCCL_DEBUG=WARN overrides it) and rerun.", SRC_E1)]
    for n in ml.nodes or sorted(with_nccl):
        if n not in with_nccl:
            if n in per_node:
                out.append(Finding("multinode.transport", Verdict.UNKNOWN, Msg("{n}: no NCCL_DEBUG lines from this node", n=n),
                                   n, tuple(per_node[n][-3:]), "Check NCCL_DEBUG on this node and rerun.", SRC_E1))
            continue
        text = "\n".join(with_nccl[n])
        job = {**plan, "job_nodes": max(len(ml.nodes or with_nccl), 2)}  # one node's lines of a job across nodes
        fs = [f for f in judge_nccl_log(text, job, logs[n]) if f.verdict is not Verdict.UNKNOWN or f.id == "multinode.transport"]
        if not any(f.id == "multinode.transport" for f in fs):
            fs.append(Finding("multinode.transport", Verdict.UNKNOWN,
                              "NCCL lines without a NET/IB or NET/Socket choice", n, tuple(with_nccl[n][:3]),
                              "Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS unset) and at least 2 nodes.", SRC_E1))
        for f in fs:
            out.append(dataclasses.replace(f, id=_mn_id(f.id), subject=n, message=Msg("{n}: {message}", n=n, message=f.message)))
    return out


def _short(text: str, n: int = 180) -> str:
    """The tail of a long error message (the end of an exception names the cause)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else "..." + text[-(n - 3):]


def _group_problems(g: Group) -> tuple[list[str], list[str], list[str]]:
    """(culprit nodes, problem descriptions, evidence lines) for one torchrun job.

    The script's own errors come first (they say why: a collective timeout naming the ranks, a gloo/NCCL
    init failure); the launcher's errors add the nodes that hung, lacked torch or failed without one."""
    culprits: list[str] = []
    what: list[str] = []
    ev: list[str] = []
    explained: set[str] = set()
    ranks = g.rank_nodes()
    for e in g.events:
        if e.kind != "error":
            continue
        kind = str(e.get("kind") or "")
        named = [x for x in (ranks.get(r) for r in (e.get("ranks") or []) if isinstance(r, int)) if x]
        if kind == "collective_timeout" and named and e.get("ranks") != [e.get("rank")]:
            ranks_txt = ", ".join(str(r) for r in e.get("ranks") or [])
            what.append(f"rank(s) {ranks_txt} on {_nodes_text(sorted(set(named)))} did not reach phase "
                        f"{e.get('phase')!r} within the collective timeout (reported by {e.prefix})")
            culprits.extend(x for x in named if x not in culprits)
            explained.update(named)
            explained.add(e.prefix)  # the reporter's own failure follows from the missing ranks
        elif kind == "collective_timeout" and e.get("ranks") == [e.get("rank")]:
            what.append(Msg("{node}: rank {rank} {message}", node=e.prefix, rank=str(e.get('rank')),
                            message=_short(str(e.get('message') or ''))))
            if e.prefix not in culprits:
                culprits.append(e.prefix)
            explained.add(e.prefix)
        elif kind == "collective_timeout":
            continue  # a peer that only learnt the barrier failed; rank 0 names the missing ranks
        else:
            what.append(f"{e.prefix}: {kind}: {_short(str(e.get('message') or ''))}")
            if e.prefix and e.prefix not in culprits:
                culprits.append(e.prefix)
            explained.add(e.prefix)
        ev.append(_raw(e))
    script_cause = bool(culprits)
    for e in g.errors:
        kind = str(e.get("kind") or "")
        node = str(e.get("node") or "?")
        ev.append(e.raw)
        if kind == "stopped" or (kind == "rendezvous" and e.get("culprit") is False):
            continue
        if kind in ("node_failed", "rendezvous") and (node in explained or script_cause):
            continue  # a consequence: the script already said which rank/node failed first
        what.append(said(e, "message", "None"))
        if node not in culprits:
            culprits.append(node)
    rcs = g.rcs()
    bad_rc = [n for n, rc in rcs.items() if rc not in (0, None)]
    if bad_rc and not what:
        what.append("torchrun exit status " + ", ".join(f"{n} {rcs[n]}" for n in bad_rc))
        culprits.extend(n for n in bad_rc if n not in culprits)
    if g.end is None:
        what.append("the job has no end in the log (the launcher was stopped or the log is cut)")
    return culprits, what, ev


def _sweep(g: Group) -> tuple[list[Event], Event | None]:
    ms = [e for e in g.events if e.kind == "measure" and e.test == "allreduce" and to_int(e.get("size_bytes")) is not None]
    res = next((e for e in g.events if e.kind == "result" and e.test == "allreduce"), None)
    return ms, res


def _floor(plan: Mapping[str, Any]) -> tuple[float | None, str]:
    nics, gbit = num(plan.get("nics_per_node")), num(plan.get("nic_gbit_s"))
    if nics and gbit and nics > 0 and gbit > 0:
        floor = MULTINODE_NIC_FRACTION * nics * gbit / 8
        return floor, (f"{MULTINODE_NIC_FRACTION:g} x {nics:g} NICs x {gbit:g} Gb/s / 8 = {floor:.1f} GB/s "
                       "(derived)")
    return None, ""


def _allreduce_finding(g: Group, plan: Mapping[str, Any], device: str, fid: str, where_extra: str = "") -> Finding:
    """One job's all-reduce: completed, correct, fast enough (see the module doc)."""
    nodes = g.nodes
    ws = to_int(g.start.get("world_size"))
    where = (Msg('{n_nodes} nodes ({nodes_text})', n_nodes=len(nodes), nodes_text=_nodes_text(nodes)) + (Msg(', {ws} ranks', ws=ws) if ws else '') + where_extra)
    culprits, what, ev = _group_problems(g)
    ms, res = _sweep(g)
    sanity = [e for e in g.events if e.kind == "measure" and e.test == "sanity"]
    if what:
        named = (Msg(' on {nodes_text}', nodes_text=_nodes_text(culprits)) if culprits else '')
        return Finding(fid, Verdict.FAIL, (Msg('multi-node all-reduce over {where} failed{named}: ', where=where, named=named) + SEMICOLON.join(what[:4])),
                       _nodes_text(culprits) or _nodes_text(nodes), tuple(ev[:10]),
                       "Fix the node named first (its lines in the log show the first error); a node that hangs or "
                       "fails in every pair (--pairwise) is the bad one. Check its health (Xid/ECC, network link, "
                       "NCCL transport) and rerun.", f"{SRC_E4}; {SRC_E6}")
    if not ms:
        return Finding(fid, Verdict.UNKNOWN, Msg("multi-node job over {where} ended without all-reduce measurements", where=where),
                       _nodes_text(nodes), (g.start.raw,) + ((g.end.raw,) if g.end else ()),
                       "Rerun; read the log for why the sweep did not report.", SRC_E4)
    by_size: dict[int, Event] = {}
    for e in ms:
        by_size[to_int(e.get("size_bytes")) or 0] = e
    sizes = sorted(by_size)
    wrong = [e for e in ms if (to_int(e.get("wrong")) or 0) > 0]
    big = by_size[sizes[-1]]
    n = to_int(big.get("world_size")) or ws or 0
    busbw, algbw = num(big.get("busbw_gb_s", big.get("value"))), num(big.get("algbw_gb_s"))
    arith = (f"busbw = algbw x 2(n-1)/n = {_g(algbw)} x 2x{n - 1}/{n} = {_g(busbw)} GB/s at {human_bytes(sizes[-1])}"
             if algbw is not None and n >= 2 else f"busbw {_g(busbw)} GB/s at {human_bytes(sizes[-1])}")
    evs = (_raw(big),) + tuple(_raw(e) for e in wrong[:5])
    if wrong:
        sz = ", ".join(f"{human_bytes(to_int(e.get('size_bytes')))} ({to_int(e.get('wrong'))} wrong)" for e in wrong[:6])
        return Finding(fid, Verdict.FAIL, Msg("multi-node all-reduce over {where} returned wrong results at {sz}", where=where, sz=sz),
                       _nodes_text(nodes), evs,
                       "Data corruption between nodes: rerun, then run --pairwise to find the node or link, and check "
                       "Xid/ECC counters and the NICs' error counters.", SRC_E4)
    if res is not None and res.get("ok") is False:
        return Finding(fid, Verdict.FAIL, Msg("multi-node all-reduce over {where}: the script reported the sweep as not ok", where=where),
                       _nodes_text(nodes), (_raw(res),), "Read the log lines before the result.", SRC_E4)
    reported = {e.get("rank") for e in sanity}
    if ws and len(reported) < ws:
        miss = sorted(set(range(ws)) - {r for r in reported if isinstance(r, int)})
        return Finding(fid, Verdict.FAIL, Msg("multi-node job over {where}: rank(s) {miss} never reported the sanity all-reduce", where=where, miss=miss), _nodes_text(nodes), tuple(_raw(e) for e in sanity[:4]) + (g.start.raw,),
                       "Look for those ranks' errors in the log.", SRC_E4)
    ok_note = (Msg('#wrong 0 at all {n_sizes} sizes ({human_bytes} to {human_bytes2})', n_sizes=len(sizes), human_bytes=human_bytes(sizes[0]), human_bytes2=human_bytes(sizes[-1])))
    if device == "cpu":
        return Finding(fid, Verdict.PASS, Msg("multi-node all-reduce over {where} completed: {ok_note}; {arith}; CPU (gloo): correctness "
                                              "only, bandwidth is not judged", where=where, ok_note=ok_note, arith=arith), _nodes_text(nodes), evs, "", SRC_E4)
    if n < 2 or busbw is None:
        return Finding(fid, Verdict.UNKNOWN, Msg("multi-node all-reduce over {where}: {ok_note}; no busbw to judge", where=where, ok_note=ok_note),
                       _nodes_text(nodes), evs, "Rerun.", SRC_E4)
    if sizes[-1] < MIN_JUDGED_BYTES:
        return Finding(fid, Verdict.UNKNOWN, Msg("multi-node all-reduce over {where}: {ok_note}; {arith}; the largest message {human_bytes} "
                                                 "is below {human_bytes2}, too small to reach the bandwidth plateau", where=where, ok_note=ok_note, arith=arith, human_bytes=human_bytes(sizes[-1]), human_bytes2=human_bytes(MIN_JUDGED_BYTES)), _nodes_text(nodes), evs,
                       "Run the full sweep (--max-bytes 4G or more, not --quick) to judge the bandwidth.", SRC_E4)
    floor, desc = _floor(plan)
    if floor is None:
        return Finding(fid, Verdict.UNKNOWN, Msg("multi-node all-reduce over {where}: {ok_note}; {arith}; no floor: the multi-node floor is "
                                                 "0.8 x the node's aggregate NIC bandwidth (e.g. 8 x 400 Gb/s NICs -> 0.8 x 8 x 400 / 8 = "
                                                 "320 GB/s, derived) and the NIC count/speed are not known", where=where, ok_note=ok_note, arith=arith),
                       _nodes_text(nodes), evs,
                       "Give bringup the NICs (plan nics_per_node and nic_gbit_s) to judge the bandwidth.", SRC_E4)
    bm = measure(busbw, floor, "GB/s", "at_least", f"busbw at {human_bytes(sizes[-1])}")
    if busbw >= floor:
        return Finding(fid, Verdict.PASS, Msg("multi-node all-reduce over {where}: {ok_note}; {arith} >= floor {desc}", where=where, ok_note=ok_note, arith=arith, desc=desc),
                       _nodes_text(nodes), evs, "", SRC_E4, measured=bm)
    return Finding(fid, Verdict.FAIL, Msg("multi-node all-reduce over {where}: {arith}, below the floor {desc}; {ok_note}", where=where, arith=arith, desc=desc, ok_note=ok_note),
                   _nodes_text(nodes), evs,
                   "Check NCCL's transport on every node (multinode.transport: NET/IB on every HCA, GDRDMA), the IB "
                   "port rates and error counters (ibstat, perfquery), then run --pairwise to find the slow node.",
                   SRC_E4, measured=bm)


def _allreduce(ml: MultiLog, plan: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    g = ml.group("all")
    few = ml.launcher_errors("too_few_nodes")
    if g is None:
        if few:
            out.append(Finding("multinode.allreduce", Verdict.FAIL,
                               Msg("multi-node all-reduce not run: {get}", get=too_few_nodes_message(few[0])), "nodes",
                               (few[0].raw,), said(few[0], "remedy", Msg("Fix the nodes named, then rerun.")),
                               SRC_E4))
        elif not any(x.is_pair for x in ml.groups) and ml.hosts is not None:
            out.append(Finding("multinode.allreduce", Verdict.UNKNOWN, "no multi-node job in the log (the run ended "
                               "before it)", "nodes", (ml.hosts.raw,), "Rerun the multi-node validation.", SRC_E4))
    else:
        left = [x for x in (g.start.get("left_out") or []) if isinstance(x, dict)]
        extra = (Msg('; left out: ') + ', '.join(f"{x.get('node')} ({x.get('why')})" for x in left) if left else '')
        out.append(_allreduce_finding(g, plan, ml.device, "multinode.allreduce", extra))
    nt = ml.group("nccl-tests")
    if nt is not None:
        text = "\n".join(nt.lines.get("nccl-tests", []))
        fs = judge_nccl_tests(text, plan) if text.strip() else [Finding(
            "multinode.allreduce", Verdict.UNKNOWN, "nccl-tests under mpirun printed nothing", "nodes", (nt.start.raw,),
            "Run the mpirun command from the log by hand to see why.", SRC_E4)]
        out.extend(dataclasses.replace(f, id=_mn_id(f.id)) for f in fs)
    return out


def _pairwise(ml: MultiLog, plan: Mapping[str, Any]) -> list[Finding]:
    pairs = [g for g in ml.groups if g.is_pair]
    if not pairs:
        return []
    # failures first (errors, hangs, wrong results); bandwidth is judged below, across the pairs
    results: list[tuple[Group, Finding]] = [(g, _allreduce_finding(g, {}, ml.device, "multinode.pairwise"))
                                            for g in pairs]
    failed = [(g, f) for g, f in results if f.verdict is Verdict.FAIL]
    passed = [(g, f) for g, f in results if f.verdict is not Verdict.FAIL]
    out: list[Finding] = []
    nodes = list(dict.fromkeys(n for g in pairs for n in g.nodes))
    if failed:
        count = {n: [g for g, _ in results if n in g.nodes] for n in nodes}
        bad = {n: [g for g, _ in failed if n in g.nodes] for n in nodes}
        suspects = [n for n in nodes if count[n] and len(bad[n]) == len(count[n])]
        cleared = {n for g, _ in passed for n in g.nodes}
        suspects = [n for n in suspects if n not in cleared]
        ev = tuple(e for _, f in failed[:4] for e in f.evidence[:2])
        fail_txt = SEMICOLON.join(f"{'-'.join(g.nodes)}: " + (SEMICOLON.join(_group_problems(g)[1][:2]) or
                                                         f.message.split(': ', 1)[-1][:160]) for g, f in failed[:4])
        if suspects and passed:
            for n in suspects:
                out.append(Finding("multinode.pairwise", Verdict.FAIL,
                                   Msg("{n} is the bad node: all {n2} of its pairs failed ({a1}) while {a2} passed; {fail_txt}", n=n, n2=len(count[n]), a1=', '.join('-'.join(g.nodes) for g in bad[n]), a2=', '.join('-'.join(g.nodes) for g, _ in passed[:6]), fail_txt=fail_txt), n, ev,
                                   Msg("Take {n} out of the job and check it: its lines in the log (first error), Xid/ECC, its "
                                       "network link and NCCL transport, the Python/torch it runs.", n=n), SRC_E5))
        elif not passed:
            out.append(Finding("multinode.pairwise", Verdict.FAIL,
                               Msg("every pair failed ({n_failed} of {n_results}): the fault is common to all nodes (network, "
                                   "configuration, software), not one node; {fail_txt}", n_failed=len(failed), n_results=len(results), fail_txt=fail_txt), "nodes", ev,
                               "Fix the first error in the log (it is the same on every pair), then rerun.", SRC_E5))
        else:
            out.append(Finding("multinode.pairwise", Verdict.FAIL,
                               Msg("{n_failed} of {n_results} pairs failed and no single node is in all of them (a link or a "
                                   "pair-specific fault): {fail_txt}", n_failed=len(failed), n_results=len(results), fail_txt=fail_txt), "nodes", ev,
                               "Test the failing pairs again; check the links/switch ports between them.", SRC_E5))
    slow_found = False
    if ml.device == "cuda" and passed:
        bw: list[tuple[Group, float, Event]] = []
        for g, _ in passed:
            ms, _res = _sweep(g)
            if ms:
                big = max(ms, key=lambda e: to_int(e.get("size_bytes")) or 0)
                v = num(big.get("busbw_gb_s", big.get("value")))
                if v is not None and (to_int(big.get("size_bytes")) or 0) >= MIN_JUDGED_BYTES:
                    bw.append((g, v, big))
        floor, desc = _floor(plan)
        med = statistics.median(v for _, v, _ in bw) if len(bw) >= 3 else None
        slow = [(g, v, e) for g, v, e in bw if (med is not None and v < PAIR_WARN_FRACTION * med) or
                (floor is not None and v < floor)]
        limits = [x for x in (PAIR_WARN_FRACTION * med if med is not None else None, floor) if x is not None]
        pm: Measure | None = None
        if bw and limits:  # the slowest pair against the higher of its limits (the one that warns first)
            sg, sv, _ = min(bw, key=lambda x: x[1])
            pm = measure(sv, max(limits), "GB/s", "at_least", f"slowest node pair {'-'.join(sg.nodes)} busbw")
        if slow:
            slow_found = True
            fail = any((med is not None and v < PAIR_FAIL_FRACTION * med) or (floor is not None and v < floor)
                       for _, v, _ in slow)
            common = set(slow[0][0].nodes)
            for g, _, _ in slow[1:]:
                common &= set(g.nodes)
            slow_names = {g.name for g, _, _ in slow}
            fast_nodes = {n for g, _, _ in bw if g.name not in slow_names for n in g.nodes}
            named = sorted(common - fast_nodes) or sorted(common)
            lst = ", ".join(f"{'-'.join(g.nodes)} {v:.1f} GB/s" + (f" ({v / med:.0%} of the median)" if med else "")
                            for g, v, _ in slow[:6])
            rules = []
            if med is not None:
                rules.append(f"median pair {med:.1f} GB/s: WARN below {PAIR_WARN_FRACTION:g} x = "
                             f"{PAIR_WARN_FRACTION * med:.1f}, FAIL below {PAIR_FAIL_FRACTION:g} x = "
                             f"{PAIR_FAIL_FRACTION * med:.1f} GB/s")
            if floor is not None:
                rules.append(f"floor {desc}")
            out.append(Finding("multinode.pairwise", Verdict.FAIL if fail else Verdict.WARN,
                               ((Msg('{nodes_text} is slow: ', nodes_text=_nodes_text(named)) if named else Msg('slow pairs: ')) + lst + ' (' + SEMICOLON.join(rules) + ')'), _nodes_text(named) or "pairs",
                               tuple(_raw(e) for _, _, e in slow[:6]),
                               "Check the named node's NICs (ibstat: rate and state; error counters), its PCIe links "
                               "to the NICs and its NCCL transport lines.", f"{SRC_E5}; {SRC_D1}; {SRC_E4}",
                               measured=pm))
    if not out and not slow_found:
        lst = SEMICOLON.join(f"{'-'.join(g.nodes)}: {f.message.split(': ', 1)[-1][:120]}" for g, f in results[:6])
        verdict = Verdict.PASS if all(f.verdict is Verdict.PASS for _, f in results) else Verdict.UNKNOWN
        if ml.device == "cuda" and verdict is Verdict.UNKNOWN and len(results) >= 3:
            verdict = Verdict.PASS  # compared with each other (the SRC_D1 variance rule) even without a NIC floor
        out.append(Finding("multinode.pairwise", verdict, Msg("all {n_results} node pairs completed: {lst}", n_results=len(results), lst=lst),
                           f"{len(nodes)} nodes", tuple(f.evidence[0] for _, f in results[:4] if f.evidence),
                           ('' if verdict is Verdict.PASS else Msg("See each pair's figure; give the plan the NICs (nics_per_node, nic_gbit_s) to judge bandwidth.")), SRC_E5))
    return out


def judge_multinode(text: str, plan: Mapping[str, Any]) -> list[Finding]:
    """The ``ActionSpec.judge`` of the multi-node action: log text + plan answers -> findings (ids
    ``multinode.*``; see the module doc). Plan keys read: ``nics_per_node``, ``nic_gbit_s`` (the NIC floor)."""
    try:
        ml = read_log(text)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not lose the run
        return [Finding("multinode.allreduce", Verdict.UNKNOWN, Msg("could not read the multi-node log: {exc!r}", exc=exc), "nodes",
                        tuple(text.splitlines()[:3]), "Report this with the log.", SRC_RUN)]
    if ml.hosts is None and not ml.node_lines:
        errs = ml.launcher_errors()
        if errs:
            return _nodes(ml) or [Finding("multinode.nodes", Verdict.FAIL, said(errs[0], "message", "None"), "nodes",
                                          (errs[0].raw,), said(errs[0], "remedy"), SRC_RUN)]
        return [Finding("multinode.allreduce", Verdict.UNKNOWN, "not a multi-node validation log (no launcher events "
                        "and no [node] lines)", "nodes", tuple(text.splitlines()[:5]),
                        "Run the multi-node validation (python -m wizard.multinode, or the multinode step).", SRC_RUN)]
    out = _nodes(ml)
    out += _consistency(ml)
    out += _transport(ml, plan)
    out += _allreduce(ml, plan)
    out += _pairwise(ml, plan)
    if ml.end is None and ml.hosts is not None:
        out.append(Finding("multinode.allreduce", Verdict.UNKNOWN, "the launcher's log has no end: the run was "
                           "stopped or is still going", "nodes", (ml.hosts.raw,), "Rerun the multi-node validation.",
                           SRC_RUN))
    return out


def judge_consistency(text: str, plan: Mapping[str, Any]) -> list[Finding]:
    """The ``multinode.consistency`` step's judge: only the ``multinode.nodes`` and ``multinode.consistency``
    findings of a run's log (a facts-only run has nothing else)."""
    return [f for f in judge_multinode(text, plan) if f.id in ("multinode.nodes", "multinode.consistency")]


TRANSPORT_IDS = ("multinode.nodes", "multinode.transport", "multinode.ib_errors", "multinode.nvls", "multinode.hang",
                 "multinode.nccl_errors")


def judge_transport(text: str, plan: Mapping[str, Any]) -> list[Finding]:
    """The ``multinode.transport`` step's judge: reachability and NCCL's transport/network findings; when the
    job itself failed (no transport line can be expected) that failure is kept too."""
    fs = judge_multinode(text, plan)
    out = [f for f in fs if f.id in TRANSPORT_IDS]
    out += [f for f in fs if f.id == "multinode.allreduce" and f.verdict is Verdict.FAIL and " failed" in f.message]
    return out


def results_json(text: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """For ``--json`` and the results table: one row per torchrun job (busbw at its largest message, how it
    was judged) and the all-nodes job's busbw-by-size series with its floor::

        {"results": [{"test", "metric", "value", "unit", "floor", "verdict", "subject", "note"}...],
         "series": {"points": [[size_bytes, busbw_gb_s]...], "floor_gb_s": float | None, "floor_basis": str}}
    """
    ml = read_log(text)
    floor, desc = _floor(plan)
    rows: list[dict[str, Any]] = []
    points: list[list[float]] = []
    for g in ml.groups:
        if g.name == "nccl-tests":
            continue
        f = _allreduce_finding(g, plan, ml.device, "multinode.allreduce")
        ms, _ = _sweep(g)
        by_size = {(to_int(e.get("size_bytes")) or 0): e for e in ms}
        big = by_size[max(by_size)] if by_size else None
        value = num(big.get("busbw_gb_s", big.get("value"))) if big is not None else None
        rows.append({"test": "multinode" if g.name == "all" else "pairwise", "metric":
                     f"busbw@{human_bytes(max(by_size))}" if by_size else "busbw", "value": value, "unit": "GB/s",
                     "floor": floor if ml.device == "cuda" else None,
                     "verdict": ("skip" if ml.device == "cpu" and f.verdict is Verdict.PASS else f.verdict.value),
                     "subject": "-".join(g.nodes) if g.is_pair else f"{len(g.nodes)} nodes",
                     "note": "CPU: correctness only" if ml.device == "cpu" else ""})
        if g.name == "all":
            points = [[s, num(by_size[s].get("busbw_gb_s", by_size[s].get("value"))) or 0.0] for s in sorted(by_size)]
    return {"results": rows, "series": {"points": points, "floor_gb_s": floor if ml.device == "cuda" else None,
                                        "floor_basis": desc if ml.device == "cuda" else ""}}
