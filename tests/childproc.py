"""Run bringup in a child process and measure what it cost: its own peak RSS (``os.wait4``'s rusage) and CPU
time, under an address-space cap so that a regression fails with MemoryError instead of taking the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Measured:
    rc: int
    stdout: str
    stderr: str
    maxrss_mib: float  # the child's peak resident set, MiB
    cpu_s: float  # its user + system time, s


def start_feeder(p: subprocess.Popen, stdin: Path | bytes) -> threading.Thread:
    """Write ``stdin`` (bytes, or a file read 1 MiB at a time) to ``p``'s standard input from a daemon thread, as
    fast as the pipe takes it, and close it; a child that stops reading (EPIPE) ends the thread quietly."""

    def feed() -> None:
        try:
            if isinstance(stdin, bytes):
                p.stdin.write(stdin)  # type: ignore[union-attr]
            else:
                with open(stdin, "rb") as f:
                    while chunk := f.read(1 << 20):
                        p.stdin.write(chunk)  # type: ignore[union-attr]
        except OSError:  # BrokenPipeError: the child read what it wanted
            pass
        finally:
            try:
                p.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    return feeder


def run_measured(args: list[str], stdin: Path | bytes | None = None, timeout_s: float = 120.0,
                 as_gib: float = 2.0) -> Measured:
    """``python -m wizard.cli ARGS`` in a child (stdin from a file or bytes, written by a thread that stops when the
    child stops reading); raises ``subprocess.TimeoutExpired`` after ``timeout_s``."""

    def cap() -> None:
        n = int(as_gib * 1024 ** 3)
        resource.setrlimit(resource.RLIMIT_AS, (n, n))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([sys.executable, "-m", "wizard.cli", *args], cwd=ROOT, stdout=out, stderr=err,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, preexec_fn=cap)
        feeder = start_feeder(p, stdin) if stdin is not None else None
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                p.returncode = -9
                raise subprocess.TimeoutExpired(p.args, timeout_s)
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        if feeder is not None:
            feeder.join(10)
        out.seek(0)
        err.seek(0)
        return Measured(p.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                        ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime)
