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

A run is reconcilable from what is on disk whatever instant a kill lands: its record (with its file names,
and its step shown running) is one transaction written before anything starts; then ``<run>.pid`` is made
and ``flock``'ed and handed to the supervisor, which holds it for its whole life and writes its pid into it,
so "is the run alive" is "is that lock held" (:func:`supervisor_alive`), even when bringup died before it
stored the pid; the exit status's space is reserved before the start (``<run>.status.tmp``), so a disk that
fills during the run cannot lose it.
"""

from __future__ import annotations

import errno
import fcntl
import getpass
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from wizard.i18n import Msg, tr
from wizard.fileedit import PID_RESERVE_BYTES, STATUS_RESERVE_BYTES, reserve
from wizard.probes import ProbeOutput
from wizard.store import ActionRun, ActionState, DiskFullError, Store, disk_full_message, is_disk_full, state_dir_of
from wizard.common import lazy_re


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
    ``manual`` is set instead when bringup cannot run it here, saying what to do by hand. ``needs_root`` /
    ``changes_system``: this resolution needs root / changes the system although the action does not always (it
    starts a stopped service first); the engine asks and refuses as for :attr:`ActionSpec.needs_root`.
    ``plan_key``: with ``manual``, the plan answer (a :data:`wizard.plan.PLAN_KEYS` key) whose absence or value is
    why it cannot run (no ``hostfile``, or one that cannot be used): the TUI offers a field for it in the dialog that
    says so, where ``bringup plan KEY=VALUE`` would be refused while the TUI holds the build.
    """

    ops: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    manual: str = ""
    needs_root: bool = False
    changes_system: bool = False
    plan_key: str = ""
    done: bool = False
    """With ``manual``: nothing to do, the machine is already as the action would leave it (no swap to turn off,
    nothing to roll back). The CLI says so and exits 0; the TUI's dialog says so and points at the step's check."""
    note: str = ""
    """With ``ops``: what the operator should know before saying yes, shown with the confirmation (CLI and TUI): a
    validation that runs on the CPU says why and that it proves the software path, not a GPU (walk 22)."""

    def describe(self) -> list[str]:
        """Human-readable lines: one per operation, as they will run; under each file write, the unified diff
        it makes (:func:`write_diff`), indented. A write op may say what it does (``"summary"``) and carry the
        file's text as the resolver read it on the host (``"current"``; ``None``: there is no such file); a command
        op may list what it runs in turn (``"detail"`` lines, e.g. the multi-node launcher's ssh commands)."""
        out = []
        for op in self.ops:
            if "argv" in op:
                out.append("$ " + " ".join(_quote(a) for a in op["argv"]))
                out.extend("    " + line for line in op.get("detail", ()))  # what it runs in turn (other nodes); a Msg stays one
            elif "write" in op:
                out.append(Msg("write {path} (backed up first, replaced atomically)", path=op["write"])
                           + (": " + Msg.plain(op["summary"]) if op.get("summary") else ""))
                current = op["current"] if "current" in op else read_current(op["write"])
                out.extend("    " + line for line in write_diff(op["write"], str(op.get("content", "")), current))
        return out


DIFF_MAX_LINES = 400
"""Lines of a write's diff shown before asking; the rest is counted, not shown (the dialog scrolls)."""
READ_MAX_BYTES = 1 << 20
"""Bytes of a file read to show the diff of a write to it (configuration files are far smaller)."""


def read_current(path: str) -> str | None | OSError:
    """The text of ``path`` on this machine, where the supervisor will write it (its first
    :data:`READ_MAX_BYTES`): ``None`` when there is no such file, an ``OSError`` saying why when it cannot be read
    or is not UTF-8 text. Never raises."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(READ_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return OSError(f"not UTF-8 text ({exc.reason})")


def write_diff(path: str, new: str, current: str | None | OSError) -> list[str]:
    """The unified diff (3 lines of context) from ``current`` (the file's text now; ``None``: no such file; an
    ``OSError``: why it could not be read, then the whole new content is shown) to ``new``, at most
    :data:`DIFF_MAX_LINES` lines."""
    import difflib

    # bringup's own words in it are Msg (shown in the operator's language: walk 37 #5d); the file's lines as they are
    lines: list[str]
    if isinstance(current, OSError):
        lines = [Msg("(cannot read {path} now: {why}; the whole file becomes:)", path=path,
                     why=current.strerror or str(current))]
        lines += [f"+{line}" for line in new.splitlines()]
    elif current == new:
        lines = [Msg("(no change: {path} already holds exactly this)", path=path)]
    else:
        lines = list(difflib.unified_diff((current or "").splitlines(), new.splitlines(), lineterm="",
                                          fromfile=path, tofile=path))
        if len(lines) >= 2:
            lines[0] = (Msg("--- {path} (now)", path=path) if current is not None
                        else Msg("--- {path} (now: no such file)", path=path))
            lines[1] = Msg("+++ {path} (after)", path=path)
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [Msg("... {n} more diff lines", n=len(lines) - DIFF_MAX_LINES)]
    return lines


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
        root_when: where ``needs_root`` is False but a resolution may need root (it starts a stopped service first:
            :attr:`Resolved.needs_root`), when: shown beside "needs root: no" so the step does not promise less than
            the run's dialog will ask (walk 35 #10).
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
        judges_exit: the judge reads a failed run's exit status from its log (the progress wrapper's last line,
            :mod:`wizard.progress`) and says what it means (dcgmi that cannot reach its host engine: ``unknown``,
            not a GPU failure); the engine then adds no failing finding of its own for the exit status.
        loads_gpus: it puts this node's GPUs under load, or measures them at rest (validation, DCGM diagnostics,
            burn-in, soak, the idle baseline, torchrun across nodes): two such runs at once spoil each other's
            figures, so :meth:`wizard.engine.Build.prepare_action` refuses one while another runs (DCGM itself
            refuses a second diagnostic with DCGM_ST_IN_USE: NVIDIA DCGM Diagnostics user guide,
            docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html, exit codes).
    """

    id: str
    title: str
    description: str
    resolve: Callable[[ActionContext], Resolved]
    probes: tuple[str, ...] = ()
    changes_system: bool = True
    needs_root: bool = True
    root_when: str = ""
    backs_up: tuple[str, ...] = ()
    judge: "Callable[[str, Mapping[str, Any]], list[Any]] | None" = None
    results: "Callable[[str, Mapping[str, Any]], dict[str, Any]] | None" = None
    command: str = ""
    judges_exit: bool = False
    loads_gpus: bool = False


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


def run_file(run: ActionRun, suffix: str) -> str:
    """A file of ``run`` next to its status file: ``run_file(run, ".pid")`` -> ``actions/0001-step.pid``."""
    base = run.status_path[:-len(".status")] if run.status_path.endswith(".status") else run.status_path
    return base + suffix


def start_run(store: Store, actions_dir: Path, step_id: str, title: str, resolved: Resolved,
              boot_id: str, dry_run: bool = False, overrides: Mapping[str, Any] | None = None,
              on_record: Callable[[int], Any] | None = None,
              on_abort: Callable[[int], Any] | None = None) -> ActionRun:
    """Record and start one action run detached; with ``dry_run`` record it and run nothing.

    The run's record, its file names and whatever ``on_record(run_id)`` writes (the engine: the step shown
    running) are one transaction, committed before anything starts. Then, before the supervisor starts, its
    files exist: the spec (``.json``), the log, the exit status's reserved space (``.status.tmp``) and the lock
    file (``.pid``), ``flock``'ed here and handed to the supervisor (see the module doc). When a file cannot be
    made or the supervisor cannot start, nothing runs: the run is recorded ``failed`` (no exit status) and
    ``on_abort(run_id)`` (the engine: the step as it was) in one transaction, and the error is raised.

    Returns the stored :class:`ActionRun`. Raises :class:`~wizard.store.DiskFullError` when the disk holding
    the state directory is full, ``OSError`` if the supervisor cannot start otherwise.
    """
    try:
        actions_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(disk_full_message(state_dir_of(store.path))) from None
        raise
    argvs = [op["argv"] if "argv" in op else ["write", op["write"]] for op in resolved.ops
             if "argv" in op or "write" in op]  # in the order they run
    with store.tx():  # the record, its paths and the step's "running": all or nothing
        run_id = store.add_action_run(step_id, title, argvs, current_user(), dry_run,
                                      ActionState.DRY_RUN if dry_run else ActionState.RUNNING, "", "", boot_id,
                                      dict(overrides or {}))
        base = actions_dir / f"{run_id:04d}-{step_id}"
        log_path, status_path, spec_path = (str(base) + ".log", str(base) + ".status", str(base) + ".json")
        store.update_action_run(run_id, log_path=log_path, status_path=status_path)
        if on_record is not None:
            on_record(run_id)
    if dry_run:
        with open(log_path, "w") as fh:
            # the operator reads these two words in the interface's language; the commands stay as they are
            fh.write(tr(Msg("# dry run of: {title} (nothing was run)", title=title)) + "\n")
            for line in resolved.describe():  # the operations; the lines under one (what it runs in turn, a diff) as they are
                fh.write((tr(Msg("would run: {command}", command=line)) if not line.startswith(" ") else tr(line)) + "\n")
        store.update_action_run(run_id, ended_at=store.clock())
        run = store.action_run(run_id)
        assert run is not None
        return run
    spec = {"title": title, "ops": resolved.ops, "env": resolved.env, "log": log_path, "status": status_path}
    lock_fd = -1
    try:
        lock_fd = os.open(str(base) + ".pid", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        os.pwrite(lock_fd, b" " * PID_RESERVE_BYTES, 0)
        with open(spec_path, "w") as fh:
            json.dump(spec, fh, indent=1)
        reserve(Path(status_path + ".tmp"), STATUS_RESERVE_BYTES)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "wizard.supervise", spec_path, "--lock-fd", str(lock_fd)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True, pass_fds=(lock_fd,),
                                    env=_supervisor_env())
    except OSError as exc:
        _abort_start(store, run_id, log_path, exc, on_abort)
        if is_disk_full(exc):
            raise DiskFullError(disk_full_message(state_dir_of(store.path))) from None
        raise
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)  # the supervisor holds its own copy of the lock from here on
    _CHILDREN[proc.pid] = proc
    start = process_start_time(proc.pid)
    store.update_action_run(run_id, pid=proc.pid, pid_start=start)
    run = store.action_run(run_id)
    assert run is not None
    return run


def _abort_start(store: Store, run_id: int, log_path: str, exc: OSError,
                 on_abort: Callable[[int], Any] | None) -> None:
    """A run that could not start: recorded ``failed`` without an exit status (and ``on_abort``) in one
    transaction, and said in its log when the disk lets us. When even that cannot be written (a full disk), the
    run stays ``running`` with no supervisor holding its lock: the next bringup marks it interrupted."""
    why = f"# bringup: the action did not start: {exc.strerror or exc}\n"
    try:
        with open(log_path, "a") as fh:
            fh.write(why)
    except OSError:
        pass
    try:
        with store.tx():
            store.update_action_run(run_id, state=ActionState.FAILED, ended_at=store.clock())
            if on_abort is not None:
                on_abort(run_id)
    except Exception:  # noqa: BLE001 - the start's own error is the one to report
        pass


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Supervisors this process started; polled so finished ones do not linger as zombies."""


def _supervisor_env() -> dict[str, str]:
    env = dict(os.environ)
    # the supervisor imports wizard from wherever this process did (works from a source tree too)
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def supervisor_alive(run: ActionRun) -> bool | None:
    """Whether the run's supervisor holds its lock (``<run>.pid``, see the module doc): True held, False not
    held (the supervisor is gone, or never started); ``None`` when there is no lock file to ask (a run started
    by an older bringup, or before the file was made) or this user cannot open it."""
    try:
        fd = os.open(run_file(run, ".pid"), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return True if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
    else:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock, if it was taken


def supervisor_pid(run: ActionRun) -> int | None:
    """The pid the supervisor wrote into its lock file (``None`` before it did, or unreadable)."""
    try:
        with open(run_file(run, ".pid"), "rb") as fh:
            pid = json.loads(fh.read(4096) or b"null")
    except (OSError, ValueError):
        return None
    pid = pid.get("pid") if isinstance(pid, dict) else None
    return pid if isinstance(pid, int) and pid > 0 else None


def is_alive(run: ActionRun, boot_id: str) -> bool:
    """True if the run's supervisor is still alive: it holds the run's lock (:func:`supervisor_alive`), or,
    for a run without a lock file, the same pid with the same start time; same boot either way."""
    if run.boot_id != boot_id:
        return False
    child = _CHILDREN.get(run.pid) if run.pid is not None else None
    if child is not None and child.poll() is not None:
        return False
    held = supervisor_alive(run)
    if held is not None:
        return held
    if run.pid is None:
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
        if run.pid is None:  # bringup was stopped before it stored the pid: the supervisor wrote it
            pid = supervisor_pid(run)
            if pid is not None:
                run.pid, run.pid_start = pid, process_start_time(pid)
                if not store.readonly:
                    store.update_action_run(run.id, pid=run.pid, pid_start=run.pid_start)
        return run
    # one more look: it may have finished between the two reads
    status = read_status(run.status_path)
    if status is not None:
        return refresh(store, run, boot_id)
    if not store.readonly:
        started = run.pid is not None or supervisor_pid(run) is not None
        store.update_action_run(run.id, state=ActionState.INTERRUPTED, ended_at=store.clock())
        note = ("this action's supervisor is gone and left no exit status (interrupted)" if started else
                "this action did not start (bringup was stopped while starting it)")
        try:
            with open(run.log_path, "a") as fh:
                fh.write(f"# bringup: {note}\n")
        except OSError:
            pass
        try:
            os.unlink(run.status_path + ".tmp")  # the exit status's reserved space, unused
        except OSError:
            pass
    run.state = ActionState.INTERRUPTED
    return run


def signal_name(signum: int) -> str:
    """``15`` -> ``"SIGTERM"`` (:class:`signal.Signals`); ``"signal N"`` for a number it does not name."""
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def outcome_words(state: ActionState | str, exit_status: int | None, step_failed: bool = False) -> str:
    """How a run ended, in words, the one wording the screens, the CLI and the report use: ``succeeded (exit status
    0)``, ``failed (exit status 2)``, ``killed by SIGKILL``, ``cancelled (SIGTERM)``, ``interrupted (no exit status:
    its supervisor died)``, ``dry run: nothing was run``, ``running``.

    A negative exit status is the supervisor's "ended by signal N" (``-N``), said with the signal's name; an
    operator's cancel is ``cancelled``, never ``failed``, with the signal's name also when the command reported it
    as a shell does (``128 + N``: the progress wrapper, a shell script). ``step_failed``: what the run measured failed
    (its own findings, :meth:`wizard.engine.Build.run_outcome`, not its step's status now; a multi-node run that
    reached no node exits 0): ``ended (exit status 0)``, never "succeeded". A :class:`wizard.i18n.Msg`: shown
    translated through ``tr()``."""
    state = ActionState(state)
    if state is ActionState.RUNNING:
        return Msg("running")
    if state is ActionState.DRY_RUN:
        return Msg("dry run: nothing was run")
    if state is ActionState.CANCELLED:
        sig = (None if exit_status is None else -exit_status if exit_status < 0
               else exit_status - 128 if 128 < exit_status <= 128 + 64 else None)
        return Msg("cancelled ({signal})", signal=signal_name(sig)) if sig else Msg("cancelled")
    if exit_status is None:
        if state is ActionState.INTERRUPTED:
            return Msg("interrupted (no exit status: its supervisor died)")
        return Msg("{state} (no exit status: it did not start; its log says why)", state=Msg(state.value))
    if exit_status < 0:
        return Msg("killed by {signal}", signal=signal_name(-exit_status))
    if state is ActionState.SUCCEEDED and step_failed:
        return Msg("ended (exit status {status})", status=exit_status)
    return Msg("{state} (exit status {status})", state=Msg(state.value), status=exit_status)


DURATION_OPTIONS = {"wizard.progress": "--expect-s", "wizard.sample": "--seconds"}
"""bringup's own programs whose command line declares how long they run, and the option saying it in seconds: the
progress wrapper (:mod:`wizard.progress`, around DCGM's levels and burn-in and fio) and the idle sampler
(:mod:`wizard.sample`)."""


def declared_duration_s(argvs: list[list[str]]) -> float | None:
    """How long a run is expected to take, seconds, as its commands declare it (:data:`DURATION_OPTIONS`: a
    ``python -m wizard.progress --expect-s S ...`` or ``python -m wizard.sample --seconds S`` command), summed over
    the commands that declare one; ``None`` when none does. Never raises (a value that is not a finite number > 0
    is no declaration)."""
    import math

    total, found = 0.0, False
    for argv in argvs:
        args = [str(a) for a in argv]
        for i in range(len(args) - 1):
            if args[i] == "-m" and args[i + 1] in DURATION_OPTIONS:
                opt = DURATION_OPTIONS[args[i + 1]]
                rest = args[i + 2:]
                rest = rest[:rest.index("--")] if "--" in rest else rest  # the wrapped command's own options
                value = None
                for j, a in enumerate(rest):
                    if a == opt and j + 1 < len(rest):
                        value = rest[j + 1]
                    elif a.startswith(opt + "="):
                        value = a[len(opt) + 1:]
                try:
                    secs = float(value) if value is not None else math.nan
                except ValueError:
                    secs = math.nan
                if math.isfinite(secs) and secs > 0:
                    total, found = total + secs, True
                break
    return total if found else None


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

ANSI_RE = lazy_re(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


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
        self.more = False
        """The last :meth:`read_new` stopped at its byte cap (the writer is ahead of the reader)."""

    def read_new(self, max_bytes: int = 1 << 20) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(max_bytes)
        except OSError:
            return []
        self.offset += len(data)
        self.more = len(data) == max_bytes  # the read stopped at its cap: more is waiting in the file
        data = self._partial + data
        dirty = b"\x1b" in data or b"\r" in data  # escapes or redraws somewhere: clean those lines
        end = data.rfind(b"\n")
        body, self._partial = (data[:end], data[end + 1:]) if end >= 0 else (b"", data)
        lines = body.decode("utf-8", "replace").split("\n") if end >= 0 else []
        if len(self._partial) > self.max_line:
            lines.append(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        if dirty:
            return [clean_line(c) if ("\x1b" in c or "\r" in c) else c for c in lines]
        return lines

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
