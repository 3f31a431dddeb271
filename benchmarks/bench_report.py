"""Wall time and peak memory of `bringup report` for a 16-node bundle set.

The set is 16 copies of the development VM's real capture bundle (tests/data/bundles/devvm.tar.gz): each copy is
loaded, judged by every rule and read for its inventory, as 16 different nodes would be. Each figure is the median
of N runs of a fresh `bringup report --snapshot B1 ... B16 -o OUT` process (what an operator pays); peak memory is
the child's maximum resident set size from ``os.wait4``'s rusage (``ru_maxrss``, KiB on Linux).

Run: .venv/bin/python benchmarks/bench_report.py [--nodes 16] [--runs 5] [--format html|md|json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "tests" / "data" / "bundles" / "devvm.tar.gz"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, exit status) of one child."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0 and child.stderr is not None:
        sys.stderr.write(child.stderr.read().decode("utf-8", "replace"))
    if child.stderr is not None:
        child.stderr.close()
    return wall, int(usage.ru_maxrss), child.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--format", choices=("html", "md", "json"), default="html")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        d = Path(tmp)
        bundles = []
        for i in range(a.nodes):
            p = d / f"node{i:02d}.tar.gz"
            shutil.copyfile(BUNDLE, p)
            bundles.append(str(p))
        out = d / f"report.{a.format}"
        env = {**os.environ, "BRINGUP_STATE_DIR": str(d / "state"), "PYTHONPATH": str(ROOT)}
        argv = [*bringup(), "report", "--snapshot", *bundles, "-o", str(out), "--format", a.format]
        one_run(argv, env)  # warm-up: bytecode, page cache
        walls, rss = [], []
        for _ in range(a.runs):
            w, m, rc = one_run(argv, env)
            if rc != 0:
                print(f"bringup report exited {rc}", file=sys.stderr)
                return 1
            walls.append(w)
            rss.append(m)
        size = out.stat().st_size
    print(f"bringup report, {a.nodes} nodes ({BUNDLE.name} copies), {a.format}, {a.runs} runs:")
    print(f"  wall time: median {statistics.median(walls):.2f} s  (min {min(walls):.2f}, max {max(walls):.2f})")
    print(f"  peak RSS:  median {statistics.median(rss) / 1024:.1f} MiB  (min {min(rss) / 1024:.1f}, "
          f"max {max(rss) / 1024:.1f})")
    print(f"  output:    {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
