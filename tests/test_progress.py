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


def _wait_for_ready(stream) -> None:
    for line in iter(stream.readline, ""):
        if "ready" in line:
            return
    raise AssertionError("the child never said ready")


def test_nan_inf_or_negative_seconds_are_a_usage_error_not_a_traceback():
    for flag, value in (("--expect-s", "nan"), ("--expect-s", "inf"), ("--expect-s", "-5"), ("--every", "nan"),
                        ("--every", "0"), ("--every", "inf")):
        r = subprocess.run([sys.executable, "-m", "wizard.progress", flag, value, "--", "true"], capture_output=True,
                           text=True, timeout=30, cwd=ROOT)
        assert r.returncode == 2, (flag, value, r.stderr)
        assert "Traceback" not in r.stderr and f"argument {flag}" in r.stderr and value in r.stderr, r.stderr


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period():
    code = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n")
    p = subprocess.Popen([*wrapper("x", every="5")[:-2], "--grace-s", "1", "--",
                          sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout is not None
    _wait_for_ready(p.stdout)
    os.kill(p.pid, signal.SIGTERM)
    rest = p.stdout.read()
    assert p.wait(timeout=20) == 128 + signal.SIGKILL, rest  # ended, not running for ever
    assert "still running 1 s after SIGTERM: sending SIGKILL" in rest and "exit status 137" in rest


def test_the_child_dies_with_the_wrapper_when_the_wrapper_is_killed():
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(120)"
    p = subprocess.Popen(wrapper(sys.executable, "-c", code, every="5"), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout is not None
    line = p.stdout.readline()
    while line.startswith(MARK):
        line = p.stdout.readline()
    child = int(line)
    os.kill(p.pid, signal.SIGKILL)  # the wrapper cannot catch this
    p.wait(timeout=10)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as fh:  # a zombie reaped by init is gone soon; it must not keep running
            if fh.read().split(") ", 1)[1].startswith("Z"):
                break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the child outlived the wrapper")


def test_a_child_writing_without_newlines_does_not_grow_the_wrapper():
    import psutil
    code = "import sys\nfor _ in range(300): sys.stdout.buffer.write(b'Z' * (1 << 20))\n"
    p = subprocess.Popen(wrapper(sys.executable, "-c", code, every="5"), stdout=subprocess.PIPE, cwd=ROOT)
    assert p.stdout is not None
    me = psutil.Process(p.pid)
    peak, total, pieces = 0, 0, 0
    while True:
        chunk = p.stdout.read(1 << 20)
        if not chunk:
            break
        total += chunk.count(b"Z")
        pieces += chunk.count(b"\n")
        try:
            peak = max(peak, me.memory_info().rss)
        except psutil.NoSuchProcess:
            pass
    assert p.wait(timeout=60) == 0
    assert total == 300 << 20  # every byte passed through
    assert peak < 100 << 20, f"wrapper RSS peaked at {peak >> 20} MiB"  # it was over 1 GiB before (readline)
    assert pieces >= 300  # written in bounded pieces


def test_remove_deletes_the_path_however_the_child_ends(tmp_path):
    ok = tmp_path / "ok"
    ok.write_text("x")
    r = subprocess.run([*wrapper("true")[:-2], "--remove", str(ok), "--", "true"], capture_output=True, text=True,
                       timeout=30, cwd=ROOT)
    assert r.returncode == 0 and not ok.exists() and f"# removed {ok}" in r.stdout
    nostart = tmp_path / "nostart"
    nostart.write_text("x")
    r = subprocess.run([*wrapper("x")[:-2], "--remove", str(nostart), "--", "/nonexistent/fio"], capture_output=True,
                       text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 127 and not nostart.exists()
    cancelled = tmp_path / "cancelled"
    code = f"import time; open({str(cancelled)!r}, 'w').write('x'); print('ready', flush=True); time.sleep(60)"
    p = subprocess.Popen([*wrapper("x")[:-2], "--remove", str(cancelled), "--", sys.executable, "-c", code],
                         stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout is not None
    _wait_for_ready(p.stdout)
    os.kill(p.pid, signal.SIGTERM)
    rest = p.stdout.read()
    assert p.wait(timeout=20) == 128 + signal.SIGTERM and not cancelled.exists(), rest
    assert f"# removed {cancelled}" in rest
    stuck = tmp_path / "stuck"
    (stuck / "inside").mkdir(parents=True)  # a directory: never removed, and said
    r = subprocess.run([*wrapper("true")[:-2], "--remove", str(stuck), "--", "true"], capture_output=True, text=True,
                       timeout=30, cwd=ROOT)
    assert stuck.exists() and f"# could not remove {stuck}: " in r.stdout and "delete it by hand" in r.stdout


def test_notes_come_first_as_marked_lines():
    r = subprocess.run([*wrapper("true")[:-2], "--note", "data path: /x on tmpfs", "--", "true"], capture_output=True,
                       text=True, timeout=30, cwd=ROOT)
    assert r.stdout.splitlines()[0] == "# data path: /x on tmpfs"
