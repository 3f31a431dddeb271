"""The detached supervisor of one action run: ``python -m wizard.supervise RUN.json``.

bringup starts it in its own session (``start_new_session``), so closing the terminal, a
dropped SSH connection or ``kill -9`` of bringup does not stop the action. It runs the run's
operations in order, appends everything to the log file, and writes the exit status to the
status file atomically when it ends. Operations (from the JSON spec)::

    {"argv": ["apt-get", "install", "-y", "pciutils"]}           # run a command
    {"write": "/etc/modprobe.d/x.conf", "content": "...",         # back up + atomic write
     "backup_dir": "/var/lib/bringup/builds/<id>/backups"}

Status file: ``{"rc": int, "ended_at": ISO-8601, "failed_op": int | null, "signal": int | null}``.
SIGTERM/SIGINT/SIGHUP to the supervisor are passed to the running command, whose status is then
recorded (as ``rc`` = -signal).

A full disk does not lose the exit status: the status is written into ``<status>.tmp``, whose space bringup
reserved before the supervisor started (:data:`STATUS_RESERVE_BYTES`; overwriting reserved bytes needs no
new space), then renamed over the status file; a write that still fails is retried for up to
:data:`STATUS_RETRY_S` seconds while the supervisor stays alive (so the run shows running, not
interrupted). A log line the full disk refuses is dropped; the run goes on.

``--lock-fd N``: a descriptor of ``<run>.pid`` that bringup holds an exclusive ``flock`` on and hands over;
the supervisor keeps it open (never to its commands) for its whole life, so the run is alive exactly while the
lock is held, and writes ``{"pid": N}`` into it first (in place, over bytes bringup reserved).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from wizard.fileedit import PID_RESERVE_BYTES, STATUS_RESERVE_BYTES, atomic_write, reserve
from wizard.store import OPERATOR_UMASK_ENV, operator_umask


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


STATUS_RETRY_S = 3600.0
"""How long a supervisor keeps retrying a status write that fails (a full or failing disk), seconds."""


def _log(log: Any, text: str) -> None:
    """Append to the log; a line the disk refuses (full) is dropped, never fatal."""
    try:
        log.write(text.encode("utf-8", "replace"))
        log.flush()
    except OSError:
        pass


def write_status(status_path: Path, status: dict[str, Any], retry_s: float = STATUS_RETRY_S) -> bool:
    """Write the status file atomically: into ``<status>.tmp`` in place (over its reserved bytes, without
    truncating first), fsync, rename. A failure (a full or failing disk) is retried with backoff for
    ``retry_s`` seconds. Returns whether it was written."""
    tmp = status_path.with_suffix(status_path.suffix + ".tmp")
    data = json.dumps(status).encode()
    deadline = time.monotonic() + retry_s
    delay = 0.5
    while True:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.pwrite(fd, data, 0)
                try:
                    os.ftruncate(fd, len(data))  # shrinking never needs space; trailing blanks would parse too
                except OSError:
                    pass
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, status_path)
            return True
        except OSError as exc:
            if time.monotonic() + delay > deadline:
                sys.stderr.write(f"# bringup supervisor: could not write the exit status {data.decode()} to "
                                 f"{status_path}: {exc.strerror or exc}\n")
                return False
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def _announce(lock_fd: int | None) -> None:
    """Write this supervisor's pid into the lock file bringup handed over (in place, over reserved bytes)."""
    if lock_fd is None:
        return
    line = json.dumps({"pid": os.getpid()}).encode()
    try:
        os.pwrite(lock_fd, line.ljust(PID_RESERVE_BYTES), 0)
    except OSError:
        pass  # the lock itself is what says "alive"; the pid is for cancel and display


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the calling process gets when its parent dies (Linux)."""


def _stop_with_supervisor() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks the kernel to send the command SIGTERM when this supervisor dies (prctl(2),
    PR_SET_PDEATHSIG), as a cancel would send it: a supervisor killed by ``kill -9`` or the OOM killer no longer leaves
    its command (torchrun, a soak) running while bringup marks the run interrupted and offers to run it again (walk 34
    #5). None where libc's prctl cannot be reached; the command then runs on as before."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # pragma: no cover - not Linux / no libc
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the supervisor died before the request took hold
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def run(spec: dict[str, Any], lock_fd: int | None = None) -> int:
    """Run the spec's operations in order (see the module doc), write the status file; returns 0 when every
    operation succeeded, else 1. ``lock_fd``: the run's lock, kept open until this returns."""
    _announce(lock_fd)
    log_path = Path(spec["log"])
    status_path = Path(spec["status"])
    tmp = status_path.with_suffix(status_path.suffix + ".tmp")
    if not tmp.exists():  # a spec bringup did not reserve for (tests, older bringup): reserve now if we can
        try:
            reserve(tmp, STATUS_RESERVE_BYTES)
        except OSError:
            pass
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "LANG": "C"})
    env.update(spec.get("env") or {})
    umask = operator_umask(env)  # the commands get the umask bringup was started with: what they make is the system's
    env.pop(OPERATOR_UMASK_ENV, None)
    child: subprocess.Popen[bytes] | None = None
    stop_with_me = _stop_with_supervisor()
    got_signal: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        got_signal.append(signum)
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signum)
            except ProcessLookupError:
                pass

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, forward)
    rc = 0
    failed: int | None = None
    try:
        log = open(log_path, "ab", buffering=0)
    except OSError:
        log = open(os.devnull, "ab", buffering=0)
    with log:
        _log(log, f"# bringup action: {spec.get('title', '')} started {_now()} (supervisor pid {os.getpid()})\n")
        for i, op in enumerate(spec.get("ops", [])):
            if got_signal:
                rc = -got_signal[0]
                failed = i
                break
            if "argv" in op:
                argv = [str(a) for a in op["argv"]]
                _log(log, "$ " + " ".join(argv) + "\n")
                try:
                    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             env=env, cwd=spec.get("cwd") or None, umask=-1 if umask is None else umask,
                                             preexec_fn=stop_with_me)
                except OSError as exc:
                    _log(log, f"# could not start {argv[0]}: {exc.strerror or exc}\n")
                    rc, failed = (127 if isinstance(exc, FileNotFoundError) else 126), i
                    break
                if got_signal and child.poll() is None:
                    # a cancel that came while the command was starting: the forked child, before its exec, ran this
                    # process's handler and so swallowed the group's SIGTERM (CI under load: a cancelled sleep ran on
                    # for its whole minute); it gets the signal now
                    try:
                        child.send_signal(got_signal[0])
                    except ProcessLookupError:
                        pass
                while True:
                    try:
                        rc = child.wait()
                        break
                    except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                        continue
                child = None
            elif "write" in op:
                target = Path(op["write"])
                _log(log, f"# write {target} ({len(op.get('content', ''))} bytes, backup first)\n")
                try:
                    backup = atomic_write(target, str(op.get("content", "")).encode(), op.get("backup_dir"))
                    _log(log, f"# backed up to {backup}\n" if backup else "# (new file, nothing to back up)\n")
                    rc = 0
                except OSError as exc:
                    _log(log, f"# write failed: {exc.strerror or exc}\n")
                    rc = 1
            else:
                _log(log, f"# unknown operation {op!r}\n")
                rc = 2
            if rc != 0:
                failed = i
                break
        _log(log, f"# exit status {rc} at {_now()}\n")
    status = {"rc": rc, "ended_at": _now(), "failed_op": failed,
              "signal": got_signal[0] if got_signal else None}
    write_status(status_path, status)
    return 0 if rc == 0 else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    lock_fd: int | None = None
    if len(args) == 3 and args[1] == "--lock-fd" and args[2].isdigit():
        lock_fd, args = int(args[2]), args[:1]
    if len(args) != 1:
        sys.stderr.write("usage: python -m wizard.supervise RUN.json [--lock-fd N]\n")
        return 2
    try:
        with open(args[0]) as fh:
            spec = json.load(fh)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"# bringup supervisor: cannot read the run's spec {args[0]}: {exc}\n")
        return 2
    return run(spec, lock_fd)


if __name__ == "__main__":
    sys.exit(main())
