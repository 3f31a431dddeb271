"""Wall time and peak memory of `bringup check --profile health` (what Slurm pays every HealthCheckInterval).

Targets (issue 13): <= 0.3 s wall and <= 64 MiB peak RSS on the development VM.
Run: .venv/bin/python benchmarks/bench_health.py [--runs 5] [--importtime]

Each figure is the median of N runs of a fresh process, after one warm-up run (bytecode cached, as installed):
``--snapshot`` of the development VM's real bundle (tests/data/bundles/devvm.tar.gz), and this machine itself.
Peak RSS is the largest resident set of the run (``os.wait4``'s rusage: the bringup process and every child it
waited for, the NVML probe's interpreter and nvidia-smi included), in MiB. ``--importtime`` lists the modules the
health path spends most import time in (``python -X importtime``, cumulative microseconds), the first place to
look when the wall time grows.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tests" / "data" / "bundles" / "devvm.tar.gz"
TARGET_WALL_S = 0.3
TARGET_RSS_MIB = 64.0
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit status) of one fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, p.returncode  # ru_maxrss is in KiB on Linux


def measure(argv: list[str], runs: int, env: dict[str, str]) -> dict[str, object]:
    one_run(argv, env)  # warm-up: bytecode, page cache
    got = [one_run(argv, env) for _ in range(runs)]
    return {"wall_s": statistics.median(g[0] for g in got), "rss_mib": statistics.median(g[1] for g in got),
            "max_rss_mib": max(g[1] for g in got), "walls": [round(g[0], 3) for g in got], "rc": got[-1][2]}


def importtime(argv_tail: list[str], env: dict[str, str], top: int = 15) -> list[tuple[int, str]]:
    code = f"from wizard.cli import main; main({argv_tail!r})"
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    rows = []
    for line in r.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) <= 3:  # top-level imports and their direct children
            rows.append((int(m.group(2)), m.group(4)))
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--importtime", action="store_true", help="also list the costliest imports of the health path")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "BRINGUP_STATE_DIR": state}  # never the real state directory
        cases = {
            "check --profile health --snapshot devvm.tar.gz": ["check", "--profile", "health", "--snapshot",
                                                               str(BUNDLE)],
            "check --profile health (this machine)": ["check", "--profile", "health"],
            "check --snapshot devvm.tar.gz (every check, for comparison)": ["check", "--snapshot", str(BUNDLE)],
        }
        print(f"bringup check --profile health: median of {a.runs} fresh processes "
              f"(targets: <= {TARGET_WALL_S} s, <= {TARGET_RSS_MIB:g} MiB)")
        for label, tail in cases.items():
            r = measure(bringup() + tail, a.runs, env)
            ok = "" if "every check" in label else (
                "  OK" if r["wall_s"] <= TARGET_WALL_S and r["max_rss_mib"] <= TARGET_RSS_MIB else "  OVER TARGET")
            print(f"  {label:<60} {r['wall_s']:.3f} s  peak RSS {r['rss_mib']:.1f} MiB (max {r['max_rss_mib']:.1f})  "
                  f"exit {r['rc']}  runs {r['walls']}{ok}")
        if a.importtime:
            print("costliest imports of `check --profile health` (cumulative ms):")
            for us, mod in importtime(["check", "--profile", "health", "--snapshot", str(BUNDLE)], env):
                print(f"  {us / 1000:7.1f}  {mod}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
