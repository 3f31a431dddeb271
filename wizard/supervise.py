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
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from wizard.fileedit import atomic_write


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _log(log: Any, text: str) -> None:
    log.write(text.encode("utf-8", "replace"))
    log.flush()


def run(spec: dict[str, Any]) -> int:
    log_path = Path(spec["log"])
    status_path = Path(spec["status"])
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "LANG": "C"})
    env.update(spec.get("env") or {})
    child: subprocess.Popen[bytes] | None = None
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
    with open(log_path, "ab", buffering=0) as log:
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
                                             env=env, cwd=spec.get("cwd") or None)
                except OSError as exc:
                    _log(log, f"# could not start {argv[0]}: {exc.strerror or exc}\n")
                    rc, failed = (127 if isinstance(exc, FileNotFoundError) else 126), i
                    break
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
    tmp = status_path.with_suffix(status_path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(status, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, status_path)
    return 0 if rc == 0 else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m wizard.supervise RUN.json\n")
        return 2
    with open(args[0]) as fh:
        spec = json.load(fh)
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
