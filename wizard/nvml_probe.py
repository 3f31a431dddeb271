"""NVML facts through ``pynvml`` (package nvidia-ml-py), printed as one JSON object.

Run as ``python -m wizard.nvml_probe`` by :mod:`wizard.probes` in a child process, so a hung
or crashing driver cannot hang bringup. Output shape::

    {"init": "ok" | "library_not_found" | "driver_not_loaded" | "no_permission" | "error"
              | "module_missing",
     "error": str,                        # when init != "ok"
     "driver_version": "580.95.05", "cuda_driver_version": 13000,   # int, 1000*major+10*minor
     "count": 8,
     "gpus": [{"index": 0, "name": "...", "pci_bus_id": "00000000:17:00.0", "serial": "...",
               "uuid": "GPU-...", "memory_total_bytes": 85899345920, "errors": {...}}]}

Exit status 0 when NVML initialised, 1 otherwise. Per-GPU calls that fail are listed under
that GPU's ``errors`` (call -> message) instead of aborting the probe.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _s(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def collect() -> dict[str, Any]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError as exc:
        return {"init": "module_missing", "error": f"Python module pynvml (nvidia-ml-py) missing: {exc}"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound as exc:
        return {"init": "library_not_found",
                "error": f"NVML shared library (libnvidia-ml.so.1) not found: {exc}"}
    except pynvml.NVMLError_DriverNotLoaded as exc:
        return {"init": "driver_not_loaded", "error": f"NVIDIA driver not loaded: {exc}"}
    except pynvml.NVMLError_NoPermission as exc:
        return {"init": "no_permission", "error": f"no permission to talk to the GPU: {exc}"}
    except pynvml.NVMLError as exc:
        return {"init": "error", "error": f"nvmlInit failed: {exc}"}
    out: dict[str, Any] = {"init": "ok", "gpus": []}
    try:
        for key, fn in (("driver_version", pynvml.nvmlSystemGetDriverVersion),
                        ("cuda_driver_version", pynvml.nvmlSystemGetCudaDriverVersion_v2),
                        ("count", pynvml.nvmlDeviceGetCount)):
            try:
                out[key] = _s(fn())
            except pynvml.NVMLError as exc:
                out.setdefault("errors", {})[key] = str(exc)
        for i in range(int(out.get("count") or 0)):
            gpu: dict[str, Any] = {"index": i, "errors": {}}
            try:
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
            except pynvml.NVMLError as exc:
                gpu["errors"]["handle"] = str(exc)
                out["gpus"].append(gpu)
                continue
            calls = {
                "name": lambda: _s(pynvml.nvmlDeviceGetName(h)),
                "pci_bus_id": lambda: _s(pynvml.nvmlDeviceGetPciInfo(h).busId),
                "serial": lambda: _s(pynvml.nvmlDeviceGetSerial(h)),
                "uuid": lambda: _s(pynvml.nvmlDeviceGetUUID(h)),
                "memory_total_bytes": lambda: int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
            }
            for key, call in calls.items():
                try:
                    gpu[key] = call()
                except pynvml.NVMLError as exc:
                    gpu["errors"][key] = str(exc)
            out["gpus"].append(gpu)
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return out


def main() -> int:
    facts = collect()
    sys.stdout.write(json.dumps(facts, sort_keys=True) + "\n")
    return 0 if facts.get("init") == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
