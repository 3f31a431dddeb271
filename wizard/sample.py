"""Idle telemetry sampler: ``python -m wizard.sample --seconds 600 --interval 5``.

Prints one line per sample: time, 1-minute load average, the hottest thermal zone (°C), and for
each GPU (through NVML, when the driver is present) temperature (°C), power (W), SM clock (MHz)
and the active clock-event reasons bit mask. Ends with the maxima. Used as the health stage's
idle-baseline action: a GPU already hot at idle has a cooling problem before any test
(checks-catalogue B10 warns within 15 °C of the slowdown threshold at idle).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from typing import Any


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


def nvml_open() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception as exc:  # noqa: BLE001 - library missing, driver not loaded, ...
        print(f"# NVML unavailable ({exc}); sampling host only", flush=True)
        return None


def gpu_samples(nv: Any) -> list[str]:
    out = []
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        parts = [f"GPU{i}"]
        for label, fn in (("C", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                          ("W", lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
                          ("MHz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                          ("reasons", lambda: hex(nv.nvmlDeviceGetCurrentClocksEventReasons(h)))):
            try:
                v = fn()
                parts.append(f"{v:.0f} {label}" if isinstance(v, float) else f"{v} {label}")
            except Exception:  # noqa: BLE001 - not supported on this GPU
                parts.append(f"? {label}")
        out.append(" ".join(parts))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wizard.sample")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--interval", type=float, default=5.0)
    a = ap.parse_args(argv)
    nv = nvml_open()
    end = time.monotonic() + a.seconds
    max_host = None
    n = 0
    print(f"# sampling every {a.interval:g} s for {a.seconds:g} s", flush=True)
    while True:
        n += 1
        load = os.getloadavg()[0]
        t = thermal_max_c()
        if t is not None:
            max_host = t if max_host is None else max(max_host, t)
        line = f"{time.strftime('%H:%M:%S')} load {load:.2f} host {f'{t:.1f} C' if t is not None else 'n/a'}"
        if nv is not None:
            line += " | " + " | ".join(gpu_samples(nv))
        print(line, flush=True)
        remaining = end - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(a.interval, remaining))
    print(f"# {n} samples; hottest thermal zone {max_host if max_host is not None else 'n/a'} C", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
