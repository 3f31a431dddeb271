"""wizard.progress for real: a real child process under ``python -m wizard.progress``, its output passed through,
progress lines while it runs, its exit status passed through, SIGTERM forwarded to it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT
from wizard.progress import MARK, fmt_duration, progress_line, strip_marked


def wrapper(*child: str, expect: str = "2", every: str = "0.2", label: str = "child") -> list[str]:
    return [sys.executable, "-m", "wizard.progress", "--label", label, "--expect-s", expect, "--every", every, "--",
            *child]


def test_progress_lines_while_a_silent_child_runs_then_its_output_and_exit_status():
    code = "import time, sys; time.sleep(1.0); print('{\"done\": true}'); sys.exit(3)"
    r = subprocess.run(wrapper(sys.executable, "-c", code), capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 3, r.stdout + r.stderr  # the child's exit status, passed through
    lines = r.stdout.splitlines()
    assert lines[0] == f"{MARK}child: started; expected to take about 2 s"
    ticks = [ln for ln in lines if "elapsed of about 2 s" in ln]
    assert len(ticks) >= 2 and all(ln.startswith(MARK) for ln in ticks), lines  # printed while the child was silent
    assert '{"done": true}' in lines and lines[-1].startswith(f"{MARK}child: ended after ")
    assert lines[-1].endswith("exit status 3")
    assert strip_marked(r.stdout) == '{"done": true}\n'  # the child's output, as it wrote it


def test_a_child_that_cannot_start_is_127_and_said():
    r = subprocess.run(wrapper("/nonexistent/dcgmi", "diag"), capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 127 and "could not start '/nonexistent/dcgmi'" in r.stdout


def test_sigterm_is_forwarded_to_the_child_and_its_status_comes_back():
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda s, f: (print('child got SIGTERM', flush=True), sys.exit(42)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    p = subprocess.Popen(wrapper(sys.executable, "-c", code, every="5"), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout is not None
    seen = []
    t0 = time.monotonic()
    while "ready" not in seen and time.monotonic() - t0 < 20:
        seen.append(p.stdout.readline().strip())
    os.kill(p.pid, signal.SIGTERM)  # to the wrapper only: it must pass it on
    rest = p.stdout.read()
    assert p.wait(timeout=10) == 42, rest  # the child's own exit status after the forwarded signal
    assert "child got SIGTERM" in rest and "after SIGTERM was forwarded to it" in rest


def test_a_child_killed_by_a_signal_reports_128_plus_n():
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    r = subprocess.run(wrapper(sys.executable, "-c", code), capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 128 + signal.SIGKILL and r.stdout.splitlines()[-1].endswith("exit status 137")


def test_the_lines_say_elapsed_and_expected_time():
    assert fmt_duration(45) == "45 s" and fmt_duration(120) == "2 min" and fmt_duration(123) == "2 min 3 s"
    assert fmt_duration(3900) == "1 h 5 min"
    assert progress_line("dcgmi diag -r 2", 45, 120) == "# dcgmi diag -r 2: 45 s elapsed of about 2 min"
    assert "still running" in progress_line("dcgmi diag -r 2", 130, 120)
    assert progress_line("x", 5, None) == "# x: 5 s elapsed"
    assert strip_marked("# a\n{\n# b\n}\n") == "{\n}\n"
