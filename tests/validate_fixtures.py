"""Real validation-script logs for the judge tests, generated once per test session, and ``synthetic_`` editors.

Each log is produced by actually running ``assets/scripts/bringup_validate.py`` with this venv's torch (CPU,
gloo), in its ``--quick`` mode, the first time a test asks for it; the xdist workers of one session share the
files (a lock per log), so every log is made once per session. GPU-only paths (TFLOPS against a spec, NVLink
floors, throttle samples, counter deltas) are tested on copies of these real CPU logs whose event fields are
edited by the ``synthetic_*`` helpers below; each says exactly which fields it changes.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "assets" / "scripts" / "bringup_validate.py"
MARKER = "BRINGUP "


def _torchrun(n: int, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", str(SCRIPT), *args]


LOGS: dict[str, tuple[list[str], dict[str, str]]] = {
    # name: (argv, extra environment)
    "gpu_cpu": ([sys.executable, str(SCRIPT), "gpu", "--device", "cpu", "--quick"], {}),
    "node_cpu": (_torchrun(2, "node", "--device", "cpu", "--quick"), {"NCCL_DEBUG": "INFO"}),
    # 0.3 s intervals over 4.8 s: enough intervals (>= 4) for the end-vs-start comparison after the warm-up
    "soak_cpu": (_torchrun(2, "soak", "--device", "cpu", "--quick", "--minutes", "0.08", "--interval", "0.3"), {}),
    # rank 1 sleeps at the start of the all-reduce phase: rank 0's monitored barrier names it (the script's
    # test-only fault-injection hook)
    "node_hang": (_torchrun(2, "node", "--device", "cpu", "--quick", "--timeout", "3"),
                  {"BRINGUP_TEST_HANG_RANK": "1", "BRINGUP_TEST_HANG_PHASE": "allreduce"}),
    # -S: no site-packages, so this Python has no torch (the script's own torch_missing event)
    "gpu_notorch": ([sys.executable, "-S", str(SCRIPT), "gpu", "--device", "cpu", "--quick"], {}),
    # torchrun itself cannot start without torch: no event at all, only Python's error
    "node_notorch": ([sys.executable, "-S", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                      str(SCRIPT), "node", "--device", "cpu", "--quick"], {}),
}


def _shared_dir(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    # under xdist every worker has its own basetemp below the session's: share the session's
    d = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "validate-logs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def real_log(factory: pytest.TempPathFactory, name: str) -> str:
    """The text of log ``name`` (stdout + stderr of the real run), generating it on first use this session."""
    argv, extra = LOGS[name]
    d = _shared_dir(factory)
    path = d / f"{name}.log"
    with open(d / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            env = dict(os.environ)
            env.update({"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}, **extra)
            r = subprocess.run(argv, capture_output=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=240, env=env, cwd=ROOT)
            (d / f"{name}.rc").write_text(str(r.returncode))
            path.write_text(r.stdout)
    return path.read_text()


def real_rc(factory: pytest.TempPathFactory, name: str) -> int:
    real_log(factory, name)
    return int((_shared_dir(factory) / f"{name}.rc").read_text())


@pytest.fixture(scope="session")
def logs(tmp_path_factory) -> Callable[[str], str]:
    """``logs("gpu_cpu")`` -> the real log's text (made once per session)."""
    return lambda name: real_log(tmp_path_factory, name)


# ------------------------------------------------------------------ editing real logs


def events(text: str) -> list[dict[str, Any] | str]:
    """The log as a list: event dicts for event lines, the raw line otherwise."""
    out: list[dict[str, Any] | str] = []
    for line in text.splitlines():
        if line.startswith(MARKER):
            try:
                out.append(json.loads(line[len(MARKER):]))
                continue
            except ValueError:
                pass
        out.append(line)
    return out


def render(items: list[dict[str, Any] | str]) -> str:
    return "\n".join(MARKER + json.dumps(x, separators=(",", ":")) if isinstance(x, dict) else x for x in items) + "\n"


def synthetic_gpu_log(cpu_log: str, name: str = "NVIDIA H100 80GB HBM3", tflops: float | None = None,
                      d2d_gb_s: float | None = None, h2d_gb_s: float | None = None, d2h_gb_s: float | None = None,
                      pcie: dict[str, int] | None = None, pattern_errors: float | None = None,
                      loss_last: float | None = None, samples: list[int] | None = None,
                      counters_after: dict[str, Any] | None = None, counters_available: bool = True) -> str:
    """A real ``gpu --device cpu`` log turned into one GPU's: edited fields only.

    Edits: ``start.device`` -> "cuda"; the ``device`` event's name -> ``name``, pci_bus_id -> 0000:17:00.0,
    ``pcie`` added when given; every measure's ``device`` -> 0; gemm dtype -> bf16 and value -> ``tflops``;
    memcpy value -> ``d2d_gb_s``; h2d/d2h measures added (copies of the memcpy event with test/metric/value
    changed, pinned true) when given; memory value -> ``pattern_errors``; train loss_last (and value = ratio) ->
    ``loss_last``; ``sample`` events added (one per entry: clock_event_reasons bitmask, temp 70 °C, 650 of
    700 W) before the end; counters -> available with zero before and ``counters_after`` (default zeros) after.
    """
    items = events(cpu_log)
    out: list[dict[str, Any] | str] = []
    zero = {"ecc_volatile_uncorrected": 0, "ecc_volatile_corrected": 0, "remapped_rows_pending": 0,
            "remap_failure": 0, "retired_pages": 0, "aer": {"correctable": 0, "nonfatal": 0, "fatal": 0},
            "xid_count": 0, "xid_lines": []}
    for x in items:
        if not isinstance(x, dict):
            out.append(x)
            continue
        x = dict(x)
        ev = x.get("event")
        if ev == "start":
            x["device"] = "cuda"
        elif ev == "device":
            x.update(name=name, pci_bus_id="0000:17:00.0", compute_capability="9.0")
            if pcie is not None:
                x["pcie"] = pcie
        elif ev == "measure":
            x["device"] = 0
            t = x.get("test")
            if t == "gemm":
                x["dtype"] = "bf16"
                if tflops is not None:
                    x["value"] = tflops
            elif t == "memcpy":
                if d2d_gb_s is not None:
                    x["value"] = d2d_gb_s
                out.append(x)
                for test, v in (("h2d", h2d_gb_s), ("d2h", d2h_gb_s)):
                    if v is not None:
                        out.append({**x, "test": test, "metric": "gb_s", "value": v, "pinned": True})
                continue
            elif t == "memory" and pattern_errors is not None:
                x["value"] = pattern_errors
            elif t == "train" and loss_last is not None:
                x["loss_last"] = loss_last
                x["value"] = loss_last / x["loss_first"]
        elif ev == "counters":
            x.update(device=0, available=counters_available, reason="" if counters_available else x.get("reason"))
            if counters_available:
                x.update(json.loads(json.dumps(zero)))
                if x.get("when") == "after" and counters_after:
                    x.update(counters_after)
                    if "aer" in counters_after:
                        x["aer"] = {**zero["aer"], **counters_after["aer"]}
        elif ev == "end" and samples:
            for i, bits in enumerate(samples):
                out.append({"v": 1, "event": "sample", "t": x["t"] - len(samples) + i, "rank": 0, "node": x["node"],
                            "device": 0, "temp_c": 70, "power_w": 650.0, "power_limit_w": 700.0,
                            "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "clock_event_reasons": bits, "util_pct": 100})
        out.append(x)
    return render(out)


def synthetic_node_log(cpu_log: str, gpus: int = 8, name: str = "NVIDIA H100 80GB HBM3",
                       busbw_at_max: float = 470.0, max_bytes: int = 4 << 30, wrong_at: int | None = None,
                       drop_rank: int | None = None, nvlink: dict[str, Any] | None = None,
                       pcie: dict[str, int] | None = None, p2p: list[float] | None = None) -> str:
    """A real 2-rank ``node --device cpu`` log turned into a ``gpus``-GPU node's: edited fields only.

    Edits: ``start`` device -> "cuda", world_size -> ``gpus`` (one start per rank, copied); rank 0's ``device``
    event copied for every rank with the GPU's name, index, pci_bus_id, compute capability 9.0 and the given
    ``pcie``/``nvlink`` (the CPU's own fields dropped); sanity measures
    copied for every rank with device_name ``name``, pci_bus_id, and ``pcie``/``nvlink`` fields when given
    (rank ``drop_rank`` left out); the all-reduce sweep's sizes continue by factor 2 up to ``max_bytes`` (extra
    events are copies of the real largest-size event with size/count changed) and the busbw of the largest
    size -> ``busbw_at_max`` (algbw = busbw x n / 2(n-1)); world_size -> ``gpus``; ``wrong`` -> 5 at size
    ``wrong_at``; p2p values -> ``p2p`` (one measure per value, pairs 0->1, 1->2, ...; without ``p2p`` the real
    CPU pairs stay, now judged as GPU pairs).
    """
    items = events(cpu_log)
    out: list[dict[str, Any] | str] = []
    sanity_done = False
    sweep: list[dict[str, Any]] = []
    p2p_tmpl: dict[str, Any] | None = None
    factor = 2 * (gpus - 1) / gpus
    for x in items:
        if not isinstance(x, dict):
            out.append(x)
            continue
        x = dict(x)
        ev, t = x.get("event"), x.get("test")
        if ev == "start":
            if x.get("rank") != 0:
                continue
            for r in range(gpus):
                out.append({**x, "rank": r, "local_rank": r, "device": "cuda", "world_size": gpus})
            continue
        if ev == "device":  # the CPU ranks' device events become the GPUs' (one per rank, as the script prints)
            if x.get("rank") != 0:
                continue
            for r in range(gpus):
                if r == drop_rank:
                    continue
                d = {**x, "rank": r, "index": r, "name": name, "pci_bus_id": f"0000:{0x17 + r:02x}:00.0",
                     "compute_capability": "9.0"}
                d.pop("pcie", None)
                d.pop("nvlink", None)
                if nvlink is not None:
                    d["nvlink"] = nvlink
                if pcie is not None:
                    d["pcie"] = pcie
                out.append(d)
            continue
        if ev == "measure" and t == "sanity":
            if sanity_done:
                continue
            sanity_done = True
            for r in range(gpus):
                if r == drop_rank:
                    continue
                s = {**x, "rank": r, "local_rank": r, "world_size": gpus, "allreduce_sum": float(gpus),
                     "device_name": name, "pci_bus_id": f"0000:{0x17 + r:02x}:00.0"}
                if nvlink is not None:
                    s["nvlink"] = nvlink
                if pcie is not None:
                    s["pcie"] = pcie
                out.append(s)
            continue
        if ev == "measure" and t == "allreduce":
            x["world_size"] = gpus
            sweep.append(x)
            continue
        if ev == "progress" and t == "allreduce":
            continue
        if ev == "result" and t == "allreduce":
            size = sweep[-1]["size_bytes"]
            while size < max_bytes:
                size *= 2
                sweep.append({**sweep[-1], "size_bytes": size, "count": size // 4})
            sweep = [s for s in sweep if s["size_bytes"] <= max_bytes]
            for s in sweep:
                if s["size_bytes"] == sweep[-1]["size_bytes"]:
                    s.update(busbw_gb_s=busbw_at_max, value=busbw_at_max, algbw_gb_s=busbw_at_max / factor)
                else:  # smaller sizes: a rising curve below the plateau
                    frac = s["size_bytes"] / sweep[-1]["size_bytes"]
                    b = busbw_at_max * min(1.0, 0.2 + frac)
                    s.update(busbw_gb_s=b, value=b, algbw_gb_s=b / factor)
                s["wrong"] = 5 if wrong_at is not None and s["size_bytes"] == wrong_at else 0
                out.append(s)
            out.append(x)
            continue
        if ev == "measure" and t == "p2p":
            if p2p is None:
                out.append(x)
            elif p2p_tmpl is None:
                p2p_tmpl = x
                for i, v in enumerate(p2p):
                    out.append({**x, "src": i % gpus, "dst": (i + 1) % gpus, "value": v})
            continue
        out.append(x)
    return render(out)


def synthetic_soak_log(cpu_log: str, tflops: list[float]) -> str:
    """A real 2-rank ``soak --device cpu`` log turned into one GPU's soak: edited fields only.

    Edits: ``start.device`` -> "cuda"; rank 0's first ``soak_gemm`` measure is copied once per entry of
    ``tflops`` (interval 1, 2, ...; value, device 0, dtype bf16); every other ``soak_gemm`` and ``soak_allreduce``
    measure is dropped, so the log holds exactly one judged series."""
    out: list[dict[str, Any] | str] = []
    done = False
    for x in events(cpu_log):
        if not isinstance(x, dict):
            out.append(x)
            continue
        x = dict(x)
        if x.get("event") == "start":
            x["device"] = "cuda"
        if x.get("event") == "measure" and x.get("test") in ("soak_gemm", "soak_allreduce"):
            if x.get("test") == "soak_gemm" and x.get("rank") == 0 and not done:
                done = True
                for i, v in enumerate(tflops):
                    out.append({**x, "interval": i + 1, "value": v, "device": 0, "dtype": "bf16"})
            continue
        out.append(x)
    return render(out)
