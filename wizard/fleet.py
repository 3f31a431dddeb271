"""Many nodes at once over SSH: ``bringup check --nodes`` and ``bringup capture --nodes``.

Each node is a :class:`wizard.hosts.SSHHost` (the system OpenSSH client: the operator's config, agent, jump hosts
and known_hosts). One asyncio loop runs them, at most ``fanout`` nodes at a time (an ``asyncio.Semaphore``); each
node first runs ``true`` (one login, which becomes the node's multiplexing master: ``ControlMaster=auto`` with a
private ``ControlPath``, closed with ``ssh -O exit`` when the node is done, so each node costs one SSH
authentication however many probes run), then its work (:func:`wizard.engine.run_checks`, or
:func:`wizard.capture.capture`), at most :data:`SESSIONS_PER_NODE` ssh sessions at a time on that node, all within
``node_timeout_s``. A node ssh cannot reach gives ``fleet.unreachable`` with ssh's own error text, a node past its
time ``fleet.timeout``; the others finish. The nodes' values are then compared (:mod:`wizard.rules.fleet`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Sequence

from wizard.facts import facts_of
from wizard.i18n import N_, Msg, _
from wizard.hosts import (
    DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_TIMEOUT_S, MAX_OUTPUT_BYTES, CommandResult, FileResult, SSHHost, remote_result,
    ssh_failed, ssh_timed_out,
)
from wizard.model import Finding, Step, Verdict, overall, worst
from wizard.rules import fleet as fleet_rules

NODE_REASONS = (N_("unreachable"), N_("timed out"), N_("failed"))
"""Why a node was not judged (``NodeOutcome.reason``): words the fleet view shows translated."""
DEFAULT_FANOUT = 32
"""Nodes checked at once by default (judgement: pdsh and ClusterShell's clush default to a fanout of 32 and 64; each
node costs one ssh master process and up to :data:`SESSIONS_PER_NODE` sessions here)."""
DEFAULT_NODE_TIMEOUT_S = 600.0
"""Seconds one node's whole check may take by default (login included): the slowest probe allows 180 s (importing
torch on a cold cache), and a node runs its probes :data:`SESSIONS_PER_NODE` at a time."""
SESSIONS_PER_NODE = 8
"""Most ssh sessions open at once on one node: sshd's ``MaxSessions`` defaults to 10 sessions per connection
(sshd_config(5)), and every probe is one session over the node's multiplexed connection."""
CONTROL_PERSIST_S = 60
"""``ControlPersist`` of each node's master (seconds idle before it exits by itself, should bringup be killed before
it closes it with ``ssh -O exit``)."""


class FleetError(ValueError):
    """A node list bringup cannot use (the message says why)."""


@dataclass(frozen=True)
class FleetNode:
    """One node: ``name`` (shown, folded into nodesets) and ``target`` (what ssh connects to)."""

    name: str
    target: str


def nodes_from_spec(spec: str) -> list[FleetNode]:
    """A nodeset (``gpu[001-016]``, ``a,b,c[1-3]``; ClusterShell's syntax) -> its nodes, each its own ssh target.

    Raises:
        FleetError: the nodeset cannot be read or is empty (the message says which part).
    """
    from ClusterShell.NodeSet import NodeSet, NodeSetException

    if not spec.strip():
        raise FleetError(Msg("--nodes is empty: give a nodeset such as gpu[001-016]"))
    try:
        names = list(NodeSet(spec))
    except NodeSetException as exc:
        raise FleetError(Msg("--nodes {spec} is not a nodeset: {why}", spec=repr(spec), why=str(exc))) from None
    if not names:
        raise FleetError(Msg("--nodes {spec} names no node", spec=repr(spec)))
    bad = [n for n in names if n.startswith("-")]
    if bad:
        raise FleetError(Msg("--nodes: node {node} starts with '-': ssh would read it as an option", node=repr(bad[0])))
    return [FleetNode(n, n) for n in names]


def nodes_from_hostfile(path: str) -> list[FleetNode]:
    """The nodes of a hostfile (:func:`wizard.parsers.hostfile.parse_hostfile`: ``name ssh_target gpus`` or
    ``host slots=N`` lines): each line's name and ssh target.

    Raises:
        FleetError: the file cannot be read, or has problems (all of them named, with their line numbers).
    """
    from wizard.parsers.hostfile import parse_hostfile

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FleetError(Msg("cannot read the hostfile {path}: {why}", path=path, why=str(exc.strerror or exc))) from None
    hf = parse_hostfile(text, path)
    if not hf.ok:
        raise FleetError(Msg("hostfile {path}: {problems}", path=path, problems="; ".join(hf.problems)))
    return [FleetNode(n.name, n.target) for n in hf.nodes]


_BATCH_SH = (
    'while [ "$#" -ge 2 ]; do k=$1; a=$2; shift 2; '
    'if [ "$k" = g ]; then printf "G "; '
    '(IFS=; for f in $a; do if [ -e "$f" ] || [ -L "$f" ]; then printf "%s\\n" "$f"; fi; done) | base64 -w 0; '
    'printf "\\n"; '
    'else printf "R "; if base64 -w 0 2>/dev/null < "$a"; then printf " ok\\n"; '
    'else printf " err "; cat -- "$a" 2>&1 >/dev/null | head -c 300 | base64 -w 0; printf "\\n"; fi; fi; done')
"""Remote script of one batch: for each (kind, argument) pair, one line: ``G <base64 of the matches, one a line>`` for
a glob (the same expansion as :data:`wizard.hosts._GLOB_SH`), ``R <base64 of the bytes> ok`` or ``R <base64> err
<base64 of cat's message>`` for a file read. base64 keeps the framing exact for any byte (sysfs binary attributes
included)."""
BATCH_MAX_OPS = 256
"""Most file reads and globs in one batch (one ssh session)."""

_RUN_SH = (
    'command -v timeout >/dev/null 2>&1 && command -v base64 >/dev/null 2>&1 || exit 98; '
    'd=$(mktemp -d 2>/dev/null) || exit 97; trap \'rm -rf "$d"\' EXIT; trap \'exit 143\' HUP INT TERM PIPE; n=0; '
    'while [ "$#" -ge 2 ]; do '
    '(timeout -k 2 "$1" sh -c "$2" </dev/null >"$d/$n.o" 2>"$d/$n.e"; echo $? >"$d/$n.r") & '
    'shift 2; n=$((n+1)); done; wait; i=0; '
    'while [ "$i" -lt "$n" ]; do printf "C %s " "$(cat "$d/$i.r" 2>/dev/null)"; '
    f'head -c {MAX_OUTPUT_BYTES} "$d/$i.o" | base64 -w 0; printf " "; '
    f'head -c {MAX_OUTPUT_BYTES} "$d/$i.e" | base64 -w 0; printf "\\n"; i=$((i+1)); done')
"""Remote script of one batch of commands: each (timeout in seconds, command line) pair runs at once in the background
under coreutils ``timeout`` (``-k 2``: SIGKILL 2 s after the SIGTERM it sends at the limit), its output in a private
temporary directory; when all have ended, one line each in order: ``C <exit status> <base64 of stdout> <base64 of
stderr>``. Exit status 98 (no ``timeout`` or ``base64`` there) or 97 (no ``mktemp -d``): the batch is redone one command
a session."""
RUN_BATCH_MAX = 64
"""Most commands in one batch (they run at once on the node)."""
RUN_BATCH_GRACE_S = 10.0
"""Seconds a batch's ssh session may take beyond its slowest command's limit (``timeout -k 2``, the framing, the
login) before bringup stops waiting for it."""


class _FleetHost:
    """A node's :class:`SSHHost` as the fleet uses it: at most ``limit`` ssh sessions at once, and the file reads and
    globs asked for in the same event-loop turn sent together in one session (:data:`_BATCH_SH`): a check reads about a
    hundred sysfs and procfs files, a session each would be most of a node's time. A batch whose output cannot be read
    (no ``base64`` there) is redone one operation at a time, so results are what :meth:`SSHHost.read` and
    :meth:`SSHHost.glob` give; a batch that timed out or whose ssh failed gives each read that error and each glob no
    match, as those methods do (redoing a hundred reads one by one on a node that is already too slow would only
    multiply its time)."""

    def __init__(self, inner: SSHHost, limit: int) -> None:
        self.inner = inner
        self.name = inner.name
        self._sem = asyncio.Semaphore(max(1, limit))
        self._pending: list[tuple[str, str, asyncio.Future[Any]]] = []
        self._commands: list[tuple[list[str], float, asyncio.Future[CommandResult]]] = []

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        """``argv`` on the node, as :meth:`SSHHost.run` gives it; the commands asked for in the same event-loop turn
        run together in one ssh session (:data:`_RUN_SH`): a check runs about thirty commands, a session each was
        most of a node's time (and of this machine's CPU, one ``ssh`` client a command)."""
        argv = [str(a) for a in argv]
        if not argv:
            return await self.inner.run(argv, timeout_s)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[CommandResult] = loop.create_future()
        if not self._commands:
            loop.call_soon(self._flush_commands)
        self._commands.append((argv, float(timeout_s), fut))
        return await fut

    def _flush_commands(self) -> None:
        pending, self._commands = self._commands, []
        for i in range(0, len(pending), RUN_BATCH_MAX):
            task = asyncio.ensure_future(self._run_batch(pending[i:i + RUN_BATCH_MAX]))
            task.add_done_callback(_consume)

    async def _run_one(self, argv: list[str], timeout_s: float, fut: "asyncio.Future[CommandResult]") -> None:
        async with self._sem:
            r = await self.inner.run(argv, timeout_s)
        if not fut.done():
            fut.set_result(r)

    async def _run_batch(self, cmds: list[tuple[list[str], float, "asyncio.Future[CommandResult]"]]) -> None:
        live = [c for c in cmds if not c[2].done()]
        if len(live) == 1:  # alone: its own session, exactly as SSHHost runs it
            await self._run_one(*live[0])
            return
        if not live:
            return
        t0 = time.monotonic()
        try:
            limit = max(t for _, t, _ in live)
            args = [x for argv, t, _ in live
                    for x in (f"{t:.3f}", self.inner.remote_command(argv, {"LC_ALL": "C", "LANG": "C"}))]
            async with self._sem:
                r = await self.inner.run(["sh", "-c", _RUN_SH, "sh", *args], limit + RUN_BATCH_GRACE_S)
            dt = time.monotonic() - t0
            answers = _run_answers(r, len(live)) if r.rc == 0 and not r.error else None
            if answers is None and r.error and r.rc != 127:  # the session timed out or ssh failed: each command did
                for argv, _, fut in live:
                    if not fut.done():
                        fut.set_result(CommandResult(argv, r.rc, duration_s=dt, error=r.error))
                return
            if answers is None:  # not readable as a batch (no timeout/base64/mktemp there): one command a session
                await asyncio.gather(*(self._run_one(*c) for c in live))
                return
            for (argv, t, fut), (rc, out, err) in zip(live, answers):
                if fut.done():
                    continue
                if rc == 124:
                    fut.set_result(CommandResult(argv, 124, out, err, dt, error=ssh_timed_out(t, self.name)))
                else:
                    fut.set_result(remote_result(argv, rc, out, err, dt))
        except BaseException as exc:  # cancelled (node timeout) or a bug: every waiter hears it
            _tell_waiters([fut for *_, fut in live], exc)
            raise

    async def builtin(self, name: str) -> CommandResult:
        return await self.inner.builtin(name)

    async def read(self, path: str) -> FileResult:
        return await self._queue("r", path)

    async def glob(self, pattern: str) -> list[str]:
        return await self._queue("g", pattern)

    def _queue(self, kind: str, arg: str) -> "asyncio.Future[Any]":
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((kind, arg, fut))
        return fut

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for i in range(0, len(pending), BATCH_MAX_OPS):
            task = asyncio.ensure_future(self._batch(pending[i:i + BATCH_MAX_OPS]))
            task.add_done_callback(_consume)

    async def _batch(self, ops: list[tuple[str, str, "asyncio.Future[Any]"]]) -> None:
        live = [op for op in ops if not op[2].done()]
        if not live:
            return
        t0 = time.monotonic()
        try:
            async with self._sem:
                r = await self.inner.run(["sh", "-c", _BATCH_SH, "sh", *(x for k, a, _ in live for x in (k, a))],
                                         DEFAULT_TIMEOUT_S + 0.2 * len(live))
            answers = _read_batch(r, [k for k, _, _ in live]) if r.rc == 0 and not r.error else None
            dt = time.monotonic() - t0
            if answers is None and r.error and r.rc != 127:  # timed out or ssh failed: each operation did too
                for kind, arg, fut in live:
                    if not fut.done():
                        fut.set_result([] if kind == "g" else FileResult(arg, None, r.error, dt))
                return
            each: list[tuple[bytes, bytes | None] | None] = list(answers) if answers else [None] * len(live)
            for (kind, arg, fut), ans in zip(live, each):
                if fut.done():
                    continue
                if ans is None:  # not readable as a batch (no base64 there?): the operation alone, as SSHHost does it
                    async with self._sem:
                        one: Any = await (self.inner.glob(arg) if kind == "g" else self.inner.read(arg))
                    if not fut.done():
                        fut.set_result(one)
                elif kind == "g":
                    fut.set_result(sorted(ln for ln in ans[0].decode("utf-8", "replace").splitlines() if ln))
                else:
                    data, err = ans
                    fut.set_result(FileResult(arg, data, duration_s=dt) if err is None else
                                   FileResult(arg, None, _read_error(err), dt))
        except BaseException as exc:  # cancelled (node timeout) or a bug: every waiter hears it
            _tell_waiters([fut for *_, fut in live], exc)
            raise


def _tell_waiters(futs: "list[asyncio.Future[Any]]", exc: BaseException) -> None:
    """A batch that was cancelled (the node's timeout) or failed: each waiter still waiting is cancelled too, or gets
    the exception."""
    for fut in futs:
        if not fut.done():
            if isinstance(exc, asyncio.CancelledError):
                fut.cancel()
            else:
                fut.set_exception(exc)


def _consume(task: "asyncio.Future[Any]") -> None:
    """Retrieve a batch task's exception (its waiters already got it), so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _read_batch(r: CommandResult, kinds: list[str]) -> list[tuple[bytes, bytes | None]] | None:
    """The answers of a batch (one per operation: (glob matches or file bytes, ``None`` or cat's error message)), or
    ``None`` when its output is not one well-formed line per operation."""
    import base64
    import binascii

    lines = r.stdout.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != len(kinds):
        return None
    out: list[tuple[bytes, bytes | None]] = []
    try:
        for kind, line in zip(kinds, lines):
            parts = line.split(b" ")
            if kind == "g" and len(parts) == 2 and parts[0] == b"G":
                out.append((base64.b64decode(parts[1], validate=True), None))
            elif kind == "r" and len(parts) == 3 and parts[0] == b"R" and parts[2] == b"ok":
                out.append((base64.b64decode(parts[1], validate=True)[:MAX_OUTPUT_BYTES], None))
            elif kind == "r" and len(parts) == 4 and parts[0] == b"R" and parts[2] == b"err":
                out.append((b"", base64.b64decode(parts[3], validate=True)))
            else:
                return None
    except (binascii.Error, ValueError):
        return None
    return out


def _run_answers(r: CommandResult, n: int) -> list[tuple[int | None, bytes, bytes]] | None:
    """The ``n`` answers of a batch of commands (exit status, stdout, stderr), or ``None`` when its output is not one
    well-formed line per command."""
    import base64
    import binascii

    lines = r.stdout.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != n:
        return None
    out: list[tuple[int | None, bytes, bytes]] = []
    try:
        for line in lines:
            parts = line.split(b" ")
            if len(parts) != 4 or parts[0] != b"C":
                return None
            rc = int(parts[1]) if parts[1] else None
            out.append((rc, base64.b64decode(parts[2], validate=True)[:MAX_OUTPUT_BYTES],
                        base64.b64decode(parts[3], validate=True)[:MAX_OUTPUT_BYTES]))
    except (binascii.Error, ValueError):
        return None
    return out


def _read_error(msg: bytes) -> str:
    """cat's message -> the error words :meth:`wizard.hosts.SSHHost.read` gives."""
    text = msg.decode("utf-8", "replace").strip()
    low = text.lower()
    for words, error in (("no such file", "no such file"), ("permission denied", "permission denied"),
                         ("is a directory", "is a directory")):
        if words in low:
            return error
    return f"read error: {text[:200] or 'unreadable'}"


@dataclass
class Progress:
    """Where a fleet run stands: ``done`` of ``total`` nodes, and when each running node started (monotonic s)."""

    total: int
    done: int = 0
    running: dict[str, float] = field(default_factory=dict)

    def line(self, now: float | None = None) -> str:
        """``nodes 7/16 done, slowest still running: gpu012 (14 s)``."""
        now = time.monotonic() if now is None else now
        text = _("nodes {done}/{total} done").format(done=self.done, total=self.total)  # walk 42 #12: in the language
        if self.running:
            name, t0 = min(self.running.items(), key=lambda kv: kv[1])
            text += _(", slowest still running: {name} ({seconds} s)").format(name=name, seconds=f"{now - t0:.0f}")
        return text


@dataclass
class NodeOutcome:
    """What one node's run gave: ``value`` (the work's result) or ``findings`` saying why not (unreachable, timed
    out), ``error`` (ssh's text or the timeout, "" when it ran), ``seconds`` (wall time in its slot)."""

    node: FleetNode
    value: Any = None
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    reason: str = ""
    seconds: float = 0.0


async def for_each_node(nodes: Sequence[FleetNode], work: Callable[[FleetNode, Any], Awaitable[Any]], *,
                        fanout: int = DEFAULT_FANOUT, node_timeout_s: float = DEFAULT_NODE_TIMEOUT_S,
                        ssh_config: str | None = None, on_progress: Callable[[Progress], None] | None = None,
                        ssh: str = "ssh") -> dict[str, NodeOutcome]:
    """Run ``work(node, host)`` on every node, ``fanout`` at a time, each within ``node_timeout_s`` seconds (its login
    included), and return node name -> :class:`NodeOutcome` in ``nodes``' order. A node whose login fails gets a
    ``fleet.unreachable`` finding (ssh's error text) and no ``work``; one past its time ``fleet.timeout`` (its ssh
    processes are killed). ``on_progress`` is called when a node starts and ends. Never raises for a node's problem.
    """
    progress = Progress(len(nodes))
    sem = asyncio.Semaphore(max(1, fanout))
    control = tempfile.mkdtemp(prefix="bringup-ssh-")  # private (0700): the nodes' multiplexing sockets
    mux = (f"ControlPath={control}/%C", "ControlMaster=auto", f"ControlPersist={CONTROL_PERSIST_S}")
    connect_s = max(1.0, min(DEFAULT_CONNECT_TIMEOUT_S, node_timeout_s))

    def tell() -> None:
        if on_progress is not None:
            on_progress(progress)

    async def one(node: FleetNode) -> NodeOutcome:
        async with sem:
            t0 = time.monotonic()
            progress.running[node.name] = t0
            tell()
            ssh_host = SSHHost(node.target, node.name, ssh_config, mux, connect_s, ssh)
            host = _FleetHost(ssh_host, SESSIONS_PER_NODE)
            out = NodeOutcome(node)

            async def body() -> None:
                r = await ssh_host.run(["true"], node_timeout_s)
                if ssh_failed(r) or (r.rc == 127 and r.error.startswith("command not found")):
                    why = r.error.split(": ", 1)[-1] if ssh_failed(r) else r.error
                    out.findings = [fleet_rules.unreachable(node.name, node.target, r.error)]
                    out.error, out.reason = why, "unreachable"
                    return
                out.value = await work(node, host)

            try:
                await asyncio.wait_for(body(), node_timeout_s)
            except asyncio.TimeoutError:
                out.value = None
                out.findings = [fleet_rules.timed_out(node.name, node_timeout_s)]
                out.error, out.reason = f"timed out after {node_timeout_s:g} s", "timed out"
            except Exception as exc:  # noqa: BLE001 - a bringup bug on one node must not lose the others
                out.value = None
                out.findings = [fleet_rules.crashed(node.name, exc)]
                out.error, out.reason = f"bringup failed on this node: {exc!r}", "failed"
            finally:
                await _close_master(ssh_host)
                out.seconds = time.monotonic() - t0
                progress.running.pop(node.name, None)
                progress.done += 1
                tell()
            return out

    try:
        results = await asyncio.gather(*(one(n) for n in nodes))
    finally:
        shutil.rmtree(control, ignore_errors=True)
    return {o.node.name: o for o in results}


async def _close_master(host: SSHHost) -> None:
    """``ssh -O exit``, then ``ssh -O check`` until it says no master is running (at most 3 s): the node's
    multiplexing master, and its connection, are gone before its slot goes to another node (nothing happens when there
    was no master)."""
    base = [host.ssh] + (["-F", host.ssh_config] if host.ssh_config else [])
    for o in host.options:
        base += ["-o", o]
    deadline = time.monotonic() + 3.0
    for op in ("exit", "check", "check", "check", "check", "check", "check"):
        try:
            proc = await asyncio.create_subprocess_exec(*base, "-O", op, host.target, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        except OSError:
            return
        try:
            rc = await asyncio.wait_for(proc.wait(), max(0.1, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            return
        if op == "exit" and rc != 0:
            return  # no master to end
        if op == "check" and rc != 0:
            return  # gone
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------------------- check


@dataclass
class NodeCheck:
    """One node of a fleet check: its findings by step, identity, the values compared across the fleet, and
    ``error``/``reason`` when it could not be judged (then ``findings`` holds that finding)."""

    name: str
    target: str
    verdict: Verdict
    findings: list[Finding]
    by_step: dict[str, list[Finding]] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    reason: str = ""
    seconds: float = 0.0


@dataclass
class FleetCheck:
    """A fleet check: each node (in the order given) and the fleet's findings (:func:`wizard.rules.fleet.judge_fleet`).
    ``verdict`` is the worst of every node's and the fleet's; ``wall_s`` the whole run's seconds."""

    nodes: dict[str, NodeCheck]
    findings: list[Finding]
    wall_s: float = 0.0
    fanout: int = DEFAULT_FANOUT
    node_timeout_s: float = DEFAULT_NODE_TIMEOUT_S

    @property
    def verdict(self) -> Verdict:
        return worst([*(n.verdict for n in self.nodes.values()), overall(self.findings)])

    @property
    def nodeset(self) -> str:
        return fleet_rules.fold(self.nodes)


async def check_fleet(nodes: Sequence[FleetNode], steps: Sequence[Step], plan: Mapping[str, Any], *,
                      fanout: int = DEFAULT_FANOUT, node_timeout_s: float = DEFAULT_NODE_TIMEOUT_S,
                      ssh_config: str | None = None, on_progress: Callable[[Progress], None] | None = None
                      ) -> FleetCheck:
    """Check ``steps`` on every node (:func:`wizard.engine.run_checks` with the node's host, plus the probes the fleet
    comparison reads), then compare the nodes that answered. Nothing is recorded in a build (the findings are the
    nodes', not this machine's). Never raises for a node's problem (see :func:`for_each_node`)."""
    from wizard.engine import host_identity, run_checks

    async def work(node: FleetNode, host: Any) -> tuple[dict[str, Any], dict[str, list[Finding]], dict[str, Any]]:
        identity, (results, outputs) = await asyncio.gather(
            host_identity(host), run_checks(host, steps, plan, also=fleet_rules.FLEET_PROBES))
        return identity, results, fleet_rules.node_values(facts_of(outputs))

    t0 = time.monotonic()
    outcomes = await for_each_node(nodes, work, fanout=fanout, node_timeout_s=node_timeout_s, ssh_config=ssh_config,
                                   on_progress=on_progress)
    checks: dict[str, NodeCheck] = {}
    for name, o in outcomes.items():
        if o.value is None:
            checks[name] = NodeCheck(name, o.node.target, overall(o.findings), list(o.findings), error=o.error,
                                     reason=o.reason, seconds=o.seconds)
            continue
        identity, results, values = o.value
        fs = [f for s in steps for f in results.get(s.id, [])]
        checks[name] = NodeCheck(name, o.node.target, overall(fs), fs, dict(results), dict(identity), values,
                                 seconds=o.seconds)
    judged = {n: c.values for n, c in checks.items() if not c.reason}
    left = {n: c.reason for n, c in checks.items() if c.reason}
    return FleetCheck(checks, fleet_rules.judge_fleet(judged, left), time.monotonic() - t0, fanout, node_timeout_s)


def stage_matrix(fc: FleetCheck, stages: Sequence[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The node x stage table of a fleet check: (stage ids with a checked step, rows). Each row: ``node``, ``verdict``,
    ``cells`` (stage id -> the worst verdict of its steps' findings, ``None`` when not judged), ``odd`` (the stage ids
    whose verdict differs from the one a strict majority of the judged nodes have, three nodes or more, as the report's
    node table marks them), ``error`` and ``reason`` (a node that could not be judged), ``seconds``."""
    ids: list[str] = []
    for st in stages:
        if any(s.id in c.by_step for c in fc.nodes.values() for s in st.steps):
            ids.append(st.id)
    rows: list[dict[str, Any]] = []
    for c in fc.nodes.values():
        cells: dict[str, Verdict | None] = {}
        for st in stages:
            if st.id in ids:
                fs = [f for s in st.steps for f in c.by_step.get(s.id, [])]
                cells[st.id] = overall(fs) if not c.reason and any(s.id in c.by_step for s in st.steps) else None
        rows.append({"node": c.name, "verdict": c.verdict, "cells": cells, "odd": [], "error": c.error,
                     "reason": c.reason, "seconds": c.seconds})
    judged = [r for r in rows if not r["reason"]]
    if len(judged) >= 3:
        for sid in ids:
            counts: dict[Any, int] = {}
            for r in judged:
                counts[r["cells"][sid]] = counts.get(r["cells"][sid], 0) + 1
            common, n = max(counts.items(), key=lambda kv: kv[1])
            if n * 2 > len(judged):
                for r in judged:
                    if r["cells"][sid] != common:
                        r["odd"].append(sid)
    return ids, rows


@dataclass
class FindingGroup:
    """Findings that the same nodes have, word for word: ``nodes`` (in the order given), the non-passing ``findings``,
    and how many passed or were not applicable (``passed``, ``skipped``) on every one of them."""

    nodes: list[str]
    findings: list[Finding] = field(default_factory=list)
    passed: int = 0
    skipped: int = 0


def folded_findings(fc: FleetCheck) -> list[FindingGroup]:
    """Every node's findings, each finding once with the nodes that have it word for word (verdict, id, subject,
    message, remedy), grouped by that set of nodes: the largest set first (``gpu[001-016]``: what all have), then the
    smaller ones (the odd nodes). Order within a group: as the first node gave them."""
    order = list(fc.nodes)
    holders: dict[tuple[str, str, str, str, str], list[str]] = {}
    first: dict[tuple[str, str, str, str, str], Finding] = {}
    for name, c in fc.nodes.items():
        for f in c.findings:
            k = (f.verdict.value, f.id, f.subject, f.message, f.remedy)
            if name not in holders.setdefault(k, []):
                holders[k].append(name)
            first.setdefault(k, f)
    groups: dict[tuple[str, ...], FindingGroup] = {}
    for k, names in holders.items():
        g = groups.setdefault(tuple(names), FindingGroup(list(names)))
        f = first[k]
        if f.verdict is Verdict.PASS:
            g.passed += 1
        elif f.verdict is Verdict.SKIP:
            g.skipped += 1
        else:
            g.findings.append(f)
    return sorted(groups.values(), key=lambda g: (-len(g.nodes), order.index(g.nodes[0])))


# ---------------------------------------------------------------------------------------------- capture


@dataclass
class NodeCapture:
    """One node's capture: ``path`` of its bundle (``None`` when none was written) and why not (``error``)."""

    name: str
    path: Path | None
    error: str = ""
    probes: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0


def bundle_name(node: str) -> str:
    """The bundle file of ``node`` in the output directory: ``<node>.tar.gz`` (``/`` and leading dots made safe)."""
    safe = node.replace("/", "_").replace(os.sep, "_").lstrip(".") or "node"
    return f"{safe}.tar.gz"


async def capture_fleet(nodes: Sequence[FleetNode], out_dir: Path, plan: Mapping[str, Any], *,
                        fanout: int = DEFAULT_FANOUT, node_timeout_s: float = DEFAULT_NODE_TIMEOUT_S,
                        ssh_config: str | None = None, on_progress: Callable[[Progress], None] | None = None
                        ) -> dict[str, NodeCapture]:
    """Capture every probe on every node over ssh into ``out_dir/<node>.tar.gz`` (:func:`wizard.capture.capture` with
    the node's host; the outputs come back over ssh and the bundle is written here). The manifest's host identity
    carries ``fleet_node`` (the node's name in the node list). Returns node name -> :class:`NodeCapture`; a node that
    was unreachable or timed out has no bundle (nothing half-written is left: capture writes ``.part`` and renames).
    Raises ``OSError`` only when ``out_dir`` cannot be made."""
    from wizard.capture import capture
    from wizard.engine import host_identity

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    async def work(node: FleetNode, host: Any) -> tuple[Path, dict[str, Any]]:
        identity = dict(await host_identity(host))
        identity["fleet_node"] = node.name
        path = out_dir / bundle_name(node.name)
        manifest = await capture(host, path, identity, plan=dict(plan))
        return path, manifest

    outcomes = await for_each_node(nodes, work, fanout=fanout, node_timeout_s=node_timeout_s, ssh_config=ssh_config,
                                   on_progress=on_progress)
    out: dict[str, NodeCapture] = {}
    for name, o in outcomes.items():
        if o.value is None:
            part = out_dir / (bundle_name(name) + ".part")
            part.unlink(missing_ok=True)
            out[name] = NodeCapture(name, None, Msg("{kind}: {message}", kind=Msg.plain(o.reason), message=o.error)
                                    if o.reason == "unreachable" else o.error,  # a Msg: said translated (walk 28 #14)
                                    seconds=o.seconds)
            continue
        path, manifest = o.value
        out[name] = NodeCapture(name, path, "", len(manifest["probes"]),
                                [p["name"] for p in manifest["probes"] if p["error"]], o.seconds)
    return out


__all__ = ["DEFAULT_FANOUT", "DEFAULT_NODE_TIMEOUT_S", "FindingGroup", "FleetCheck", "FleetError", "FleetNode",
           "NodeCapture", "NodeCheck", "Progress", "capture_fleet", "check_fleet", "folded_findings", "for_each_node",
           "nodes_from_hostfile", "nodes_from_spec", "stage_matrix"]
