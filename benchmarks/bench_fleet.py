"""Wall time of `bringup check --nodes` over real sshd nodes: 16 nodes against 1, and the effect of --fanout.

The nodes are real OpenSSH servers on 127.0.0.2.. (tests/sshd.py, one per node, as the tests start them), so every
"node" is this machine: its CPUs run all the nodes' sshd sessions and probes as well as bringup's ssh clients. On a
real fleet each node has its own CPUs, so the 16-node figure here is an upper bound (the nodes' own work is spread over
16 machines there). Each figure is the median of N runs of a fresh `bringup check --nodes ... --json` process; CPU is
that process's user+system time with its children's (ssh clients; from ``os.wait4``'s rusage), which is what the
machine running bringup pays; overlap is the nodes' own seconds (the JSON's ``nodes.*.seconds``) summed over the wall
time: how many nodes were being checked at once on average. The target is a 16-node check within 2x the 1-node wall time at the default fanout.

Run as root or a user sshd accepts: .venv/bin/python benchmarks/bench_fleet.py [--nodes 16] [--runs 1] [--stage ID]
[--fanouts 1,4,16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


def one_run(argv: list[str]) -> tuple[float, float, int, dict]:
    """(wall seconds, CPU seconds of bringup and its ssh clients, exit status, the JSON document)."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = child.stdout.read() if child.stdout is not None else b""
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), doc


def main() -> int:
    from tests.sshd import start_cluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--stage", help="only this stage's checks (default: every checked step, as `bringup check`)")
    ap.add_argument("--fanouts", default="1,4,16", help="fanouts to time the whole fleet with (comma-separated)")
    a = ap.parse_args()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` ends it: the sshd servers are still stopped
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        d = Path(tmp)
        cluster = start_cluster(d / "sshd", a.nodes)
        try:
            cfg = d / "ssh_config"
            lines = []
            for i, n in enumerate(cluster.nodes, 1):
                lines += [f"Host gpu{i:03d}", f"  HostName {n.addr}", f"  Port {n.port}"]
            cfg.write_text("\n".join(lines) + "\n" + cluster.ssh_config.read_text())
            base = [*bringup(), "--state", str(d / "state"), "check", "--json", "--ssh-config", str(cfg),
                    "--node-timeout", "600"] + (["--stage", a.stage] if a.stage else [])
            every = f"gpu[001-{a.nodes:03d}]"
            cases = [("1 node", ["--nodes", "gpu001"])]
            cases += [(f"{a.nodes} nodes, fanout {f}", ["--nodes", every, "--fanout", f])
                      for f in a.fanouts.split(",")]
            print(f"{os.cpu_count()} CPUs here, load average {os.getloadavg()[0]:.2f} at the start; "
                  f"{a.runs} runs each, median", flush=True)
            print(f"{'case':<24} {'wall s':>8} {'cpu s':>8} {'per node s':>11} {'overlap':>8}  judged", flush=True)
            figures: dict[str, float] = {}
            for name, extra in cases:
                walls, cpus, overlaps, judged = [], [], [], ""
                for _ in range(a.runs):
                    w, c, rc, doc = one_run(base + extra)
                    walls.append(w)
                    cpus.append(c)
                    nodes = doc.get("nodes", {})
                    overlaps.append(sum(v.get("seconds", 0) for v in nodes.values()) / w)
                    bad = [n for n, v in nodes.items() if "error" in v]
                    judged = f"{len(nodes) - len(bad)}/{len(nodes)} (exit {rc})"
                wall, cpu = statistics.median(walls), statistics.median(cpus)
                figures[name] = wall
                count = 1 if name == "1 node" else a.nodes
                print(f"{name:<24} {wall:8.2f} {cpu:8.2f} {wall / count:11.2f} {statistics.median(overlaps):8.1f}  "
                      f"{judged}", flush=True)
            one = figures["1 node"]
            for name, wall in figures.items():
                if name != "1 node":
                    print(f"{name}: {wall / one:.2f}x the 1-node wall time")
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
