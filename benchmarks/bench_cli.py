"""Wall time of `bringup --version` and `bringup check --json`, next to the slowest single probe.

Targets (issue 2): --version <= 0.25 s; check <= 1.5 x the slowest single probe.
Run: .venv/bin/python benchmarks/bench_cli.py [--runs 5]
Each figure is the median of N runs of a fresh process (what an operator or a scheduler hook
pays), except the per-probe times, which are the median of N in-process collections of that probe
alone on this machine (a command probe's time includes its process start).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# measure what an installed bringup costs: bytecode cached as Python normally does (a
# PYTHONDONTWRITEBYTECODE shell would recompile every module on every run)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.path.insert(0, str(ROOT))


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


def timed(argv: list[str], runs: int) -> tuple[float, list[float]]:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # warm-up: bytecode
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def probe_times(runs: int) -> dict[str, float]:
    from wizard.engine import local_host
    from wizard.probes import collect
    from wizard.registry import PROBES

    host = local_host()
    out = {}
    for name, probe in PROBES.items():
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            asyncio.run(collect(host, [probe]))
            ts.append(time.perf_counter() - t0)
        out[name] = statistics.median(ts)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="bringup-bench-")
    try:
        v, _ = timed(bringup() + ["--version"], a.runs)
        c, _ = timed(bringup() + ["--state", state, "check", "--json"], a.runs)
        probes = probe_times(a.runs)
        start, _ = timed([sys.executable, "-c", "pass"], a.runs)
        imports, _ = timed([sys.executable, "-c", "import asyncio, steps, wizard.engine, wizard.cli"], a.runs)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    slow_name = max(probes, key=probes.get)
    slow = probes[slow_name]
    res = {"version_s": round(v, 4), "check_s": round(c, 4), "slowest_probe": slow_name,
           "slowest_probe_s": round(slow, 4), "check_over_slowest": round(c / slow, 2),
           "probes_s": {k: round(x, 4) for k, x in sorted(probes.items(), key=lambda kv: -kv[1])},
           "interpreter_start_s": round(start, 4), "interpreter_and_imports_s": round(imports, 4),
           "runs": a.runs, "cpus": os.cpu_count()}
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"bringup --version         median {v * 1000:7.1f} ms   (target <= 250 ms)")
        print(f"bringup check --json      median {c * 1000:7.1f} ms")
        print(f"slowest probe ({slow_name:<12}) median {slow * 1000:7.1f} ms")
        print(f"check / slowest probe     {c / slow:5.2f} x       (target <= 1.5 x)")
        print(f"fixed cost: python start {start * 1000:.1f} ms; start + bringup's imports {imports * 1000:.1f} ms")
        print("per probe (ms): " + ", ".join(f"{k} {x * 1000:.1f}" for k, x in res["probes_s"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
