"""The wizard's overhead on validation: `bringup validate gpu|node` against the same script run by hand.

Target (issue 5): wall time through bringup <= 1.1 x the same script run by hand. bringup adds a fixed cost
(its own start-up, the probes that pick the device and rank count, the detached supervisor, log polling at
0.2 s, judging); the ratio therefore depends on how long the script itself runs. Both are reported: the
fixed overhead in seconds and the ratio, for the default CPU runs (what `bringup validate ... --device cpu`
runs) and for the `--quick` smoke runs (seconds long, where a fixed second is a large fraction).

Run: .venv/bin/python benchmarks/bench_validate.py [--runs 3] [--quick-only]
Each figure is the median of N fresh runs, alternating by-hand and bringup runs so load changes hit both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "assets" / "scripts" / "bringup_validate.py"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"{argv} exited {r.returncode}")
    return dt


def action_env(via: list[str]) -> dict[str, str]:
    """The environment bringup's action gives the script (the run's spec file records it), so the by-hand run
    is the same command in the same environment (e.g. OMP_NUM_THREADS=1 for CPU runs)."""
    import glob
    import json

    with tempfile.TemporaryDirectory() as st:
        wall(bringup() + ["--state", st] + via)
        spec = sorted(glob.glob(f"{st}/builds/*/actions/*.json"))[-1]
        with open(spec) as fh:
            return {k: str(v) for k, v in (json.load(fh).get("env") or {}).items()}


def case(name: str, by_hand: list[str], via: list[str], runs: int) -> tuple[str, float, float]:
    extra_env = action_env(via)  # also warms caches (torch import, bytecode)
    env = dict(os.environ, **extra_env)
    hand, wiz = [], []
    for _ in range(runs):
        hand.append(wall(by_hand, env))
        with tempfile.TemporaryDirectory() as st:
            wiz.append(wall(bringup() + ["--state", st] + via))
    h, w = statistics.median(hand), statistics.median(wiz)
    print(f"{name:<28} by hand {h:7.2f} s   bringup {w:7.2f} s   overhead {w - h:+6.2f} s   ratio {w / h:5.2f}x"
          f"   (runs: hand {', '.join(f'{x:.1f}' for x in hand)}; bringup {', '.join(f'{x:.1f}' for x in wiz)}; "
          f"env of both: {' '.join(f'{k}={v}' for k, v in sorted(extra_env.items())) or '-'})")
    return name, h, w


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick-only", action="store_true")
    ap.add_argument("--only", choices=["gpu", "node"], help="one of the two validations")
    a = ap.parse_args()
    py = sys.executable
    trun = [py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    rows = []
    modes = [("--quick",)] if a.quick_only else [("--quick",), ()]
    for extra in modes:
        tag = " (quick)" if extra else " (default)"
        if a.only != "node":
            rows.append(case("validate gpu --device cpu" + tag,
                             [py, str(SCRIPT), "gpu", "--device", "cpu", *extra],
                             ["validate", "gpu", "--device", "cpu", "--python", py, "--json", *extra], a.runs))
        if a.only != "gpu":
            rows.append(case("validate node --device cpu" + tag,
                             [*trun, str(SCRIPT), "node", "--device", "cpu", *extra],
                             ["validate", "node", "--device", "cpu", "--python", py, "--json", *extra], a.runs))
    worst = max(w / h for name, h, w in rows if "default" in name or a.quick_only)
    print(f"worst ratio on the default runs: {worst:.2f}x (target <= 1.10x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
