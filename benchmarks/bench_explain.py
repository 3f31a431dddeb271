"""Wall time of `bringup explain` over every real case at once (interpreter start included).

Target (issue 3): <= 0.5 s, median of 5 fresh processes.
Run: .venv/bin/python benchmarks/bench_explain.py [--runs 5] [--cases DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# measure what an installed bringup costs: bytecode cached as Python normally does (a
# PYTHONDONTWRITEBYTECODE shell would recompile every module on every run)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
DEFAULT_CASES = ROOT / "tests" / "data" / "cases"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    a = ap.parse_args()
    files = sorted(str(p) for p in a.cases.iterdir() if p.is_file() and p.suffix in (".txt", ".xml", ".json", ".log"))
    exe = Path(sys.executable).parent / "bringup"
    argv = ([str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]) + ["explain", "--json", *files]
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)  # warm-up: bytecode
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        if r.returncode not in (0, 1, 2):
            print(r.stderr.decode(errors="replace"), file=sys.stderr)
            return 1
    med = statistics.median(times)
    print(f"bringup explain over {len(files)} case files: median {med * 1000:.0f} ms of {a.runs} runs "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}); target <= 500 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
