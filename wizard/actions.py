"""Shell actions: what they run, how they run detached, how bringup finds them again.

An :class:`ActionSpec` (in a catalogue step) resolves, for this host, into a list of operations
(argv lists, or backed-up atomic file writes) or into manual instructions when bringup cannot
do it safely here (an unknown distro: no guessing). Before anything runs the operator sees every
argv, whether it changes the system, whether it needs root and what it backs up; ``--dry-run``
prints the same and runs nothing.

A run is started detached (own session) under :mod:`wizard.supervise`, which writes the log and
the exit status. The store records argv, user, pid and the pid's start time, the log path and
the boot id, so a restarted bringup tells a still-running action (same pid *and* start time, same
boot) from one that died without a status (``interrupted``).
"""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from wizard.probes import ProbeOutput
from wizard.store import ActionRun, ActionState, Store


@dataclass(frozen=True)
class ActionContext:
    """What an action may look at to decide its argv: probe outputs, plan answers, paths."""

    outputs: Mapping[str, ProbeOutput]
    plan: Mapping[str, Any]
    backup_dir: str
    python: str = sys.executable
    state_dir: str = ""


@dataclass
class Resolved:
    """An action made concrete for this host.

    ``ops`` are the supervisor's operations (``{"argv": [...]}`` or ``{"write": path, ...}``);
    ``manual`` is set instead when bringup cannot run it here, saying what to do by hand.
    """

    ops: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    manual: str = ""

    def describe(self) -> list[str]:
        """Human-readable lines: one per operation, as they will run."""
        out = []
        for op in self.ops:
            if "argv" in op:
                out.append("$ " + " ".join(_quote(a) for a in op["argv"]))
            elif "write" in op:
                out.append(f"write {op['write']} (backed up first, replaced atomically)")
        return out


def _quote(a: str) -> str:
    return a if re.fullmatch(r"[A-Za-z0-9_./:=,@+%-]+", a) else "'" + a.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class ActionSpec:
    """A step's shell action.

    Attributes:
        id: stable id (``<step id>``-scoped).
        title: what it does, imperative ("Install pciutils").
        description: why and what it changes.
        resolve: host facts -> :class:`Resolved`.
        probes: probes ``resolve`` reads (e.g. ``os_release`` for the package manager).
        changes_system: it modifies the machine (packages, files); asks for confirmation.
        needs_root: it cannot work without root.
        backs_up: files it edits (each is backed up before the write).
        judge: optional, judges an ended run from its log text (+ plan) into findings; without
            it a successful run leaves the step to its check (or, with no check, passed). This is the
            one judge of the step's runs: the engine calls it when a run ends (``Build.run_action``,
            or a re-attached run settling) and stores the findings with the run; the CLI and the TUI
            only show what was stored.
        results: optional, the results table and series of an ended run's log (+ plan):
            ``{"results": [row...], "series": {"points", "floor_gb_s", "floor_basis"}}``; stored with
            the run, printed by ``bringup validate`` and its ``--json``, shown by the TUI's results panel.
        command: the ``bringup validate NAME`` that runs this action ("" when it has none).
    """

    id: str
    title: str
    description: str
    resolve: Callable[[ActionContext], Resolved]
    probes: tuple[str, ...] = ()
    changes_system: bool = True
    needs_root: bool = True
    backs_up: tuple[str, ...] = ()
    judge: "Callable[[str, Mapping[str, Any]], list[Any]] | None" = None
    results: "Callable[[str, Mapping[str, Any]], dict[str, Any]] | None" = None
    command: str = ""


def current_user() -> str:
    """The human behind the run: ``$SUDO_USER`` under sudo, else the login name."""
    return os.environ.get("SUDO_USER") or getpass.getuser()


def process_start_time(pid: int) -> float | None:
    """psutil's create time of ``pid`` (seconds since the epoch), ``None`` if it is gone/zombie."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def read_status(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as fh:
            d = json.load(fh)
        return d if isinstance(d, dict) and "rc" in d else None
    except (OSError, ValueError):
        return None


def start_run(store: Store, actions_dir: Path, step_id: str, title: str, resolved: Resolved,
              boot_id: str, dry_run: bool = False, overrides: Mapping[str, Any] | None = None) -> ActionRun:
    """Record and start one action run detached; with ``dry_run`` record it and run nothing.

    Returns the stored :class:`ActionRun`. Raises ``OSError`` if the supervisor cannot start.
    """
    actions_dir.mkdir(parents=True, exist_ok=True)
    argvs = [op["argv"] if "argv" in op else ["write", op["write"]] for op in resolved.ops
             if "argv" in op or "write" in op]  # in the order they run
    run_id = store.add_action_run(step_id, title, argvs, current_user(), dry_run,
                                  ActionState.DRY_RUN if dry_run else ActionState.RUNNING, "", "", boot_id,
                                  dict(overrides or {}))
    base = actions_dir / f"{run_id:04d}-{step_id}"
    log_path, status_path, spec_path = (str(base) + ".log", str(base) + ".status", str(base) + ".json")
    store.update_action_run(run_id, log_path=log_path, status_path=status_path)
    if dry_run:
        with open(log_path, "w") as fh:
            fh.write(f"# dry run of: {title} (nothing was run)\n")
            for line in resolved.describe():
                fh.write(f"would run: {line}\n")
        store.update_action_run(run_id, ended_at=store.clock())
        run = store.action_run(run_id)
        assert run is not None
        return run
    spec = {"title": title, "ops": resolved.ops, "env": resolved.env, "log": log_path, "status": status_path}
    with open(spec_path, "w") as fh:
        json.dump(spec, fh, indent=1)
    log = open(log_path, "ab")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "wizard.supervise", spec_path],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=_supervisor_env())
    finally:
        log.close()
    _CHILDREN[proc.pid] = proc
    start = process_start_time(proc.pid)
    store.update_action_run(run_id, pid=proc.pid, pid_start=start)
    run = store.action_run(run_id)
    assert run is not None
    return run


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Supervisors this process started; polled so finished ones do not linger as zombies."""


def _supervisor_env() -> dict[str, str]:
    env = dict(os.environ)
    # the supervisor imports wizard from wherever this process did (works from a source tree too)
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def is_alive(run: ActionRun, boot_id: str) -> bool:
    """True if the run's supervisor is still the same live process (pid + start time, same boot)."""
    if run.pid is None or run.boot_id != boot_id:
        return False
    child = _CHILDREN.get(run.pid)
    if child is not None and child.poll() is not None:
        return False
    start = process_start_time(run.pid)
    if start is None or run.pid_start is None:
        return False
    return abs(start - run.pid_start) < 1.0


def refresh(store: Store, run: ActionRun, boot_id: str) -> ActionRun:
    """Bring one running run's record up to date: finished (status file), running, or interrupted."""
    if run.state is not ActionState.RUNNING:
        return run
    status = read_status(run.status_path)
    if status is not None:
        rc = int(status.get("rc", 1))
        state = (ActionState.SUCCEEDED if rc == 0
                 else ActionState.CANCELLED if status.get("signal") else ActionState.FAILED)
        if not store.readonly:
            store.update_action_run(run.id, state=state, exit_status=rc, ended_at=status.get("ended_at"))
        run.state, run.exit_status, run.ended_at = state, rc, status.get("ended_at")
        return run
    if is_alive(run, boot_id):
        return run
    # one more look: it may have finished between the two reads
    status = read_status(run.status_path)
    if status is not None:
        return refresh(store, run, boot_id)
    if not store.readonly:
        store.update_action_run(run.id, state=ActionState.INTERRUPTED, ended_at=store.clock())
        try:
            with open(run.log_path, "a") as fh:
                fh.write("# bringup: this action's supervisor is gone and left no exit status (interrupted)\n")
        except OSError:
            pass
    run.state = ActionState.INTERRUPTED
    return run


def cancel(run: ActionRun, boot_id: str, sig: int = 15) -> bool:
    """Send ``sig`` (default SIGTERM) to a live run's process group. Returns True if sent."""
    if not is_alive(run, boot_id) or run.pid is None:
        return False
    try:
        os.killpg(run.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


# ------------------------------------------------------------------ log following

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


def clean_line(line: str) -> str:
    """Strip VT100 escapes and keep only the last redraw of ``\\r`` progress lines."""
    line = ANSI_RE.sub("", line)
    if "\r" in line:
        parts = [p for p in line.split("\r") if p]
        line = parts[-1] if parts else ""
    return line


class LogTail:
    """Incremental reader of a growing log file: returns complete, cleaned lines.

    Memory is bounded by the unread tail of one line; the file keeps everything.
    """

    def __init__(self, path: str, start: int = 0, max_line: int = 16384) -> None:
        self.path = path
        self.offset = start
        self._partial = b""
        self.max_line = max_line

    def read_new(self, max_bytes: int = 1 << 20) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(max_bytes)
        except OSError:
            return []
        self.offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        if len(self._partial) > self.max_line:
            complete.append(self._partial)
            self._partial = b""
        return [clean_line(c.decode("utf-8", "replace")) for c in complete]

    def flush(self) -> list[str]:
        """The last line even without a trailing newline (once the action has ended)."""
        if self._partial:
            p, self._partial = self._partial, b""
            return [clean_line(p.decode("utf-8", "replace"))]
        return []


def count_lines(path: str) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0
