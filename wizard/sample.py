"""Idle telemetry sampler: ``python -m wizard.sample --seconds 600 --interval 5``.

Prints one line per sample: time, 1-minute load average, the hottest thermal zone (°C), and for
each GPU (through NVML, when the driver is present) temperature (°C), power (W), SM clock (MHz)
and the active clock-event reasons bit mask. The last line is a machine-readable summary::

    # summary {"samples": 120, "host_max_c": 41.0, "nvml": "ok" | "<why not>",
               "gpus": [{"index": 0, "name": "...", "pci_bus_id": "...", "max_temp_c": 38,
                         "slowdown_c": 87, "shutdown_c": 92, "reasons_seen": 1, "samples": 120}]}

which :func:`wizard.rules.baseline.judge_baseline` reads. Used as the health stage's idle
baseline: a GPU already hot at idle has a cooling problem before any test.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Any

SUMMARY_PREFIX = "# summary "


def thermal_max_c() -> float | None:
    best = None
    for p in glob.glob("/sys/class/thermal/thermal_zone*/temp"):
        try:
            with open(p) as fh:
                v = int(fh.read().strip()) / 1000.0
        except (OSError, ValueError):
            continue
        best = v if best is None or v > best else best
    return best


def nvml_open() -> tuple[Any, str]:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, "ok"
    except Exception as exc:  # noqa: BLE001 - library missing, driver not loaded, ...
        return None, str(exc) or type(exc).__name__


def _try(fn: Any) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a field this GPU does not support
        return None


def gpu_static(nv: Any) -> list[dict[str, Any]]:
    gpus = []
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        name = _try(lambda h=h: nv.nvmlDeviceGetName(h))
        bus = _try(lambda h=h: nv.nvmlDeviceGetPciInfo(h).busId)
        gpus.append({
            "index": i, "handle": h,
            "name": name.decode() if isinstance(name, bytes) else name,
            "pci_bus_id": bus.decode() if isinstance(bus, bytes) else bus,
            "slowdown_c": _try(lambda h=h: nv.nvmlDeviceGetTemperatureThreshold(
                h, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)),
            "shutdown_c": _try(lambda h=h: nv.nvmlDeviceGetTemperatureThreshold(
                h, nv.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)),
            "max_temp_c": None, "reasons_seen": 0, "samples": 0,
        })
    return gpus


def gpu_sample(nv: Any, g: dict[str, Any]) -> str:
    h = g["handle"]
    t = _try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
    p = _try(lambda: nv.nvmlDeviceGetPowerUsage(h))
    c = _try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
    r = _try(lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
    g["samples"] += 1
    if t is not None:
        g["max_temp_c"] = t if g["max_temp_c"] is None else max(g["max_temp_c"], t)
    if r is not None:
        g["reasons_seen"] |= int(r)
    return (f"GPU{g['index']} {t if t is not None else '?'} C {p / 1000.0 if p is not None else 0:.0f} W "
            f"{c if c is not None else '?'} MHz reasons {hex(r) if r is not None else '?'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wizard.sample")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--interval", type=float, default=5.0)
    a = ap.parse_args(argv)
    nv, nvml_state = nvml_open()
    gpus = gpu_static(nv) if nv is not None else []
    if nv is None:
        print(f"# NVML unavailable ({nvml_state}); sampling host only", flush=True)
    end = time.monotonic() + max(a.seconds, 0.0)
    max_host = None
    n = 0
    print(f"# sampling every {a.interval:g} s for {a.seconds:g} s", flush=True)
    while True:
        n += 1
        t = thermal_max_c()
        if t is not None:
            max_host = t if max_host is None else max(max_host, t)
        line = (f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f} "
                f"host {f'{t:.1f} C' if t is not None else 'n/a'}")
        if gpus:
            line += " | " + " | ".join(gpu_sample(nv, g) for g in gpus)
        print(line, flush=True)
        remaining = end - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(a.interval, remaining))
    summary = {"samples": n, "host_max_c": max_host, "nvml": nvml_state,
               "gpus": [{k: v for k, v in g.items() if k != "handle"} for g in gpus]}
    print(SUMMARY_PREFIX + json.dumps(summary, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
