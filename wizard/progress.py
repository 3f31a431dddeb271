"""Run one command and say how long it has been running: ``python -m wizard.progress --expect-s 120 --every 15
--label "dcgmi diag -r 2" -- dcgmi diag -r 2 -j``.

Some programs print nothing until they end (``dcgmi diag -j`` writes its JSON document at the end of a run that
takes minutes). Run under this wrapper, the action's log gets one line every ``--every`` seconds::

    # dcgmi diag -r 2: started; expected to take about 2 min
    # dcgmi diag -r 2: 45 s elapsed of about 2 min
    # dcgmi diag -r 2: ended after 2 min 3 s, exit status 0

Every line the wrapper writes starts with ``# `` (:data:`MARK`), so whoever reads the log can drop them
(:func:`strip_marked`) and read the child's output as the child wrote it: the child's standard output and error
are read through a pipe in chunks of at most :data:`CHUNK_BYTES` and written out whole lines at a time, never
interleaved inside a line; a line longer than :data:`LINE_MAX_BYTES` is written in pieces of that size, each ended
with a newline (the wrapper's memory stays bounded whatever the child writes). ``--note TEXT`` (repeatable) writes
``# TEXT`` before the child starts (what the run is about, for whoever judges the log).

The child's exit status is the wrapper's (a child killed by signal N: 128 + N, as a shell reports it; a command
that cannot start: 127, said on a ``# `` line). The child runs in its own process group; SIGTERM, SIGINT and SIGHUP
sent to the wrapper are forwarded to that group (the child then ends as it chooses; its status is passed through),
and a child still running :data:`KILL_GRACE_S` seconds after the first forwarded signal is sent SIGKILL (said on a
``# `` line). On Linux the child is started with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: if the wrapper itself is
killed (SIGKILL, which it cannot catch), the kernel kills the child too instead of leaving it orphaned.

``--remove PATH`` (repeatable): when the child has ended, however it ended (its own exit, a forwarded signal, the
SIGKILL escalation, a command that could not start), the wrapper removes PATH if it is there (a file or a symlink;
never a directory) and says so: ``# removed PATH``, or ``# could not remove PATH: REASON; delete it by hand``
(:data:`REMOVE_FAILED`). Only a SIGKILL of the wrapper itself skips this.

``--expect-s`` must be a finite number >= 0 and ``--every`` a finite number > 0; anything else (``nan``, ``inf``,
a negative) is refused with a usage error, exit status 2. Standard library only; it imports nothing of bringup's,
so it is in the lowest layer.
"""

from __future__ import annotations

import argparse
import codecs
import math
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Callable, Sequence

MARK = "# "
"""Prefix of every line the wrapper writes (the child's lines are passed through as they are)."""
KILL_GRACE_S = 10.0
"""Seconds a child gets to end after the first forwarded signal before the wrapper sends its process group
SIGKILL (bringup's judgement: long enough for a tool to write its result and remove its files)."""
CHUNK_BYTES = 64 << 10
"""The most bytes read from the child's pipe at once."""
LINE_MAX_BYTES = 1 << 20
"""The longest line held back waiting for its newline, bytes; a longer one is written in pieces of this size."""
REMOVE_FAILED = "could not remove"
"""The words of the line that says a ``--remove`` path is still there (``# could not remove PATH: REASON; ...``)."""
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def fmt_duration(seconds: float) -> str:
    """A duration for people: ``45 s``, ``2 min``, ``2 min 3 s``, ``1 h 5 min`` (whole seconds, rounded down)."""
    s = max(0, int(seconds)) if math.isfinite(seconds) else 0
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
    if expect_s is None or not expect_s > 0:
        return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed"
    if elapsed_s <= expect_s:
        return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed of about {fmt_duration(expect_s)}"
    return f"{MARK}{label}: {fmt_duration(elapsed_s)} elapsed (expected about {fmt_duration(expect_s)}; still running)"


def strip_marked(text: str) -> str:
    """``text`` without the lines that start with :data:`MARK` (the wrapper's, and bringup's own log notes):
    what the child wrote, as it wrote it."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(MARK))


def _child_setup() -> Callable[[], None]:
    """The child's ``preexec_fn``: its own process group (``setpgid(0, 0)``, so signals can be forwarded to everything
    it starts), and on Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (prctl(2)), so the kernel kills it when the wrapper
    dies; where prctl is not available (not Linux) only the process group."""
    prctl = None
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None
    parent = os.getpid()

    def preexec() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the wrapper died before prctl took effect
                os._exit(128 + signal.SIGKILL)
    return preexec


def remove_paths(paths: Sequence[str], say: Callable[[str], None]) -> bool:
    """Remove each of ``paths`` that is there (a file or symlink, never a directory), saying what happened on a
    ``# `` line. Returns True when none is left. Never raises."""
    ok = True
    for p in paths:
        try:
            os.unlink(p)
            say(f"{MARK}removed {p}")
        except FileNotFoundError:
            continue
        except OSError as exc:
            ok = False
            say(f"{MARK}{REMOVE_FAILED} {p}: {exc.strerror or exc}; delete it by hand")
    return ok


def run(argv: Sequence[str], label: str = "", expect_s: float | None = None, every_s: float = 15.0,
        out: IO[str] | None = None, remove: Sequence[str] = (), notes: Sequence[str] = (),
        grace_s: float = KILL_GRACE_S) -> int:
    """Run ``argv`` (a list, never a shell string), copying its output to ``out`` (default standard output) and
    writing a progress line every ``every_s`` seconds while it runs; afterwards remove each of ``remove``
    (:func:`remove_paths`). Returns the child's exit status (128 + N when a signal N ended it; 127 when it could
    not start). Signals and the SIGKILL after ``grace_s`` seconds: see the module doc (installed only when called
    from the main thread)."""
    out = out or sys.stdout
    label = label or " ".join(argv[:3])
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            out.write(line + "\n")
            out.flush()

    for note in notes:
        say(MARK + " ".join(note.splitlines()))
    say(f"{MARK}{label}: started" + (f"; expected to take about {fmt_duration(expect_s)}" if expect_s else ""))
    t0 = time.monotonic()
    forwarded: list[tuple[int, float]] = []
    started: list[subprocess.Popen[bytes]] = []

    def to_child(sig: int) -> None:
        if not started:
            return  # not started yet: it is sent the signal as soon as it is
        try:
            os.killpg(started[0].pid, sig)
        except OSError:
            try:
                started[0].send_signal(sig)
            except OSError:
                pass

    if threading.current_thread() is threading.main_thread():
        def forward(signum: int, _frame: object) -> None:
            forwarded.append((signum, time.monotonic()))
            to_child(signum)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # before the child starts: no signal is missed
            signal.signal(sig, forward)
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=_child_setup())
    except (OSError, subprocess.SubprocessError) as exc:
        say(f"{MARK}{label}: could not start {argv[0]!r}: {getattr(exc, 'strerror', None) or exc}")
        remove_paths(remove, say)
        return 127
    started.append(proc)
    if forwarded:  # a signal came while it was starting
        to_child(forwarded[0][0])

    def write_child(text: str) -> None:
        if text:
            with lock:
                out.write(text)
                out.flush()

    def pump() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        pending = b""
        while True:
            try:
                chunk = os.read(fd, CHUNK_BYTES)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if cut:
                write_child(dec.decode(pending[:cut]))
                pending = pending[cut:]
            while len(pending) >= LINE_MAX_BYTES:  # a line without end: write it in pieces
                write_child(dec.decode(pending[:LINE_MAX_BYTES]) + "\n")
                pending = pending[LINE_MAX_BYTES:]
        tail = dec.decode(pending, final=True)
        write_child(tail + "\n" if tail else "")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    every = max(0.05, float(every_s))
    next_tick = t0 + every
    killed = False
    while True:
        now = time.monotonic()
        deadline = next_tick
        if forwarded and not killed:
            deadline = min(deadline, forwarded[0][1] + grace_s)
        try:
            rc = proc.wait(timeout=max(0.01, deadline - now))
            break
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if forwarded and not killed and now >= forwarded[0][1] + grace_s:
                killed = True
                say(f"{MARK}{label}: still running {fmt_duration(grace_s)} after "
                    f"{signal.Signals(forwarded[0][0]).name}: sending SIGKILL")
                to_child(signal.SIGKILL)
            if now >= next_tick:
                say(progress_line(label, now - t0, expect_s))
                next_tick = now + every
    reader.join(timeout=5.0)
    status = 128 - rc if rc < 0 else rc  # killed by signal N: Popen says -N, a shell 128 + N
    why = f" (after {signal.Signals(forwarded[0][0]).name} was forwarded to it)" if forwarded else ""
    say(f"{MARK}{label}: ended after {fmt_duration(time.monotonic() - t0)}, exit status {status}{why}")
    remove_paths(remove, say)
    return status


def _seconds(positive: bool) -> Callable[[str], float]:
    def conv(raw: str) -> float:
        try:
            v = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {raw!r}") from None
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds {'> 0' if positive else '>= 0'}, "
                                             f"not {raw!r}")
        return v
    return conv


def main(args: Sequence[str] | None = None) -> int:
    """The command line (see the module doc). Exits 2 with a usage error on bad arguments."""
    p = argparse.ArgumentParser(prog="python -m wizard.progress",
                                description="run a command, printing '# LABEL: N s elapsed of about M' lines")
    p.add_argument("--label", default="", help="what the lines name (default: the command's first words)")
    p.add_argument("--expect-s", type=_seconds(False), default=None, help="expected duration, seconds")
    p.add_argument("--every", type=_seconds(True), default=15.0, help="seconds between progress lines (default 15)")
    p.add_argument("--remove", action="append", default=[], metavar="PATH",
                   help="remove PATH (a file) when the command has ended, however it ended (repeatable)")
    p.add_argument("--note", action="append", default=[], metavar="TEXT",
                   help="write '# TEXT' before the command starts (repeatable)")
    p.add_argument("--grace-s", type=_seconds(False), default=KILL_GRACE_S,
                   help=f"seconds after a forwarded signal before SIGKILL (default {KILL_GRACE_S:g})")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    a = p.parse_args(args)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command given (put it after --)")
    return run(cmd, a.label, a.expect_s, a.every, remove=a.remove, notes=a.note, grace_s=a.grace_s)


if __name__ == "__main__":
    sys.exit(main())
