"""Run one command and say how long it has been running: ``python -m wizard.progress --expect-s 120 --every 15
--label "dcgmi diag -r 2" -- dcgmi diag -r 2 -j``.

Some programs print nothing until they end (``dcgmi diag -j`` writes its JSON document at the end of a run that
takes minutes). Run under this wrapper, the action's log gets one line every ``--every`` seconds::

    # dcgmi diag -r 2: started; expected to take about 2 min
    # dcgmi diag -r 2: 45 s elapsed of about 2 min
    # dcgmi diag -r 2: ended after 2 min 3 s, exit status 0

Every line the wrapper writes starts with ``# `` (:data:`MARK`), so whoever reads the log can drop them
(:func:`strip_marked`) and read the child's output as the child wrote it: the child's standard output and error
are read through a pipe and written out whole lines at a time, never interleaved inside a line.

The child's exit status is the wrapper's (a child killed by signal N: 128 + N, as a shell reports it; a command
that cannot start: 127, said on a ``# `` line). SIGTERM, SIGINT and SIGHUP sent to the wrapper are forwarded to the
child (which then ends as it chooses; its status is passed through). Standard library only; it imports nothing of
bringup's, so it is in the lowest layer.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Sequence

MARK = "# "
"""Prefix of every line the wrapper writes (the child's lines are passed through as they are)."""


def fmt_duration(seconds: float) -> str:
    """A duration for people: ``45 s``, ``2 min``, ``2 min 3 s``, ``1 h 5 min`` (whole seconds, rounded down)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"{m} min" + (f" {r} s" if r else "")
    h, r = divmod(s, 3600)
    return f"{h} h" + (f" {r // 60} min" if r // 60 else "")


def progress_line(label: str, elapsed_s: float, expect_s: float | None) -> str:
    """One progress line (without the newline): ``# LABEL: 45 s elapsed of about 2 min``; past the expected time
    ``# LABEL: 2 min 10 s elapsed (expected about 2 min; still running)``; without an expectation only the
    elapsed time."""
    if expect_s is None or expect_s <= 0:
        return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed"
    if elapsed_s <= expect_s:
        return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed of about {fmt_duration(expect_s)}"
    return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed (expected about {fmt_duration(expect_s)}; still running)"


def strip_marked(text: str) -> str:
    """``text`` without the lines that start with :data:`MARK` (the wrapper's, and bringup's own log notes):
    what the child wrote, as it wrote it."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(MARK))


def run(argv: Sequence[str], label: str = "", expect_s: float | None = None, every_s: float = 15.0,
        out: IO[str] | None = None) -> int:
    """Run ``argv`` (a list, never a shell string), copying its output to ``out`` (default standard output) and
    writing a progress line every ``every_s`` seconds while it runs. Returns the child's exit status (128 + N when
    a signal N ended it; 127 when it could not start). Signals: see the module doc (installed only when called
    from the main thread)."""
    out = out or sys.stdout
    label = label or " ".join(argv[:3])
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            out.write(line + "\n")
            out.flush()

    say(f"{MARK}{label}: started" + (f"; expected to take about {fmt_duration(expect_s)}" if expect_s else ""))
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        say(f"{MARK}{label}: could not start {argv[0]!r}: {exc.strerror or exc}")
        return 127

    def pump() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            text = raw.decode("utf-8", "replace")
            with lock:
                out.write(text if text.endswith("\n") else text + "\n")
                out.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    forwarded: list[int] = []
    if threading.current_thread() is threading.main_thread():
        def forward(signum: int, _frame: object) -> None:
            forwarded.append(signum)
            try:
                proc.send_signal(signum)
            except OSError:
                pass
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, forward)
    every = max(0.05, float(every_s))
    while True:
        try:
            rc = proc.wait(timeout=every)
            break
        except subprocess.TimeoutExpired:
            say(progress_line(label, time.monotonic() - t0, expect_s))
    reader.join(timeout=5.0)
    status = 128 - rc if rc < 0 else rc  # killed by signal N: Popen says -N, a shell 128 + N
    why = f" (after {signal.Signals(forwarded[0]).name} was forwarded to it)" if forwarded else ""
    say(f"{MARK}{label}: ended after {fmt_duration(time.monotonic() - t0)}, exit status {status}{why}")
    return status


def main(args: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wizard.progress",
                                description="run a command, printing '# LABEL: N s elapsed of about M' lines")
    p.add_argument("--label", default="", help="what the lines name (default: the command's first words)")
    p.add_argument("--expect-s", type=float, default=None, help="expected duration, seconds")
    p.add_argument("--every", type=float, default=15.0, help="seconds between progress lines (default 15)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    a = p.parse_args(args)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command given (put it after --)")
    return run(cmd, a.label, a.expect_s, a.every)


if __name__ == "__main__":
    sys.exit(main())
