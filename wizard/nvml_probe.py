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

Health facts added per GPU (all optional: a call the GPU or driver does not support is left
out and named in ``errors``; the fields above are unchanged)::

    "brand": "NVIDIA",                       # nvmlDeviceGetBrand, as nvidia-smi names it
    "vbios_version": "96.00.74.00.0D", "inforom_image_version": "G520.0200.00.05",
    "persistence_mode": true, "virtualization_mode": "None" | "Pass-Through" | "vGPU" | ...,
    "mig_mode": {"current": false, "pending": false},
    "ecc_mode": {"current": true, "pending": true},
    "ecc_errors": {"volatile" | "aggregate": {"corrected" | "uncorrected":
                   {"total": 0, "dram": 0, "sram": 0}}},           # counts
    "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false, "failure": false},
    "retired_pages": {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": false},
    "temperature_c": 29,                                             # degrees C
    "temperature_thresholds_c": {"shutdown": 92, "slowdown": 89, "gpu_max": 85, "mem_max": 95},
    "temperature_tlimit_c": {"shutdown": -8, "slowdown": -2, "gpu_max": 0, "mem_max": 0},
                                             # relative to T.Limit (Ada and later), degrees C
    "temperature_margin_c": 56,              # nvmlDeviceGetMarginTemperature, degrees C
    "clocks_event_reasons": 136,             # bit mask, nvmlClocksEventReason* constants
    "pstate": "P0", "utilization_gpu_pct": 0,
    "power_draw_w": 67.74, "power_limit_enforced_w": 700.0, "power_limit_default_w": 700.0,
    "pcie": {"gen_current": 5, "gen_max": 5, "gen_gpu_max": 5, "width_current": 16,
             "width_max": 16, "replay_counter": 67},
    "fabric": {"state": "Completed", "status": "Success", "clique_id": 0, "cluster_uuid": "..."},
    "compute_processes": [{"pid": 4242, "used_memory_bytes": 1048576, "name": "python"}]

Sources: NVML API reference (docs.nvidia.com/deploy/nvml-api/), the calls named above.
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any


def _s(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


INIT_ERRORS = {
    "module_missing": "Python module pynvml (nvidia-ml-py) missing",
    "library_not_found": "NVML shared library (libnvidia-ml.so.1) not found",
    "driver_not_loaded": "NVIDIA driver not loaded",
    "no_permission": "no permission to talk to the GPU",
    "error": "nvmlInit failed",
}
"""What each failed ``init`` means, the start of the probe's ``error`` ("<meaning>: <the library's own error>"); the
rules show the meaning translated and the library's words as they are. (Plain strings: this module runs in the
probe's own process without bringup's catalogues; the test of the catalogue reads them from here.)"""


def collect() -> dict[str, Any]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError as exc:
        return {"init": "module_missing", "error": f"{INIT_ERRORS['module_missing']}: {exc}"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound as exc:
        return {"init": "library_not_found", "error": f"{INIT_ERRORS['library_not_found']}: {exc}"}
    except pynvml.NVMLError_DriverNotLoaded as exc:
        return {"init": "driver_not_loaded", "error": f"{INIT_ERRORS['driver_not_loaded']}: {exc}"}
    except pynvml.NVMLError_NoPermission as exc:
        return {"init": "no_permission", "error": f"{INIT_ERRORS['no_permission']}: {exc}"}
    except pynvml.NVMLError as exc:
        return {"init": "error", "error": f"{INIT_ERRORS['error']}: {exc}"}
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
                "name": lambda h=h: _s(pynvml.nvmlDeviceGetName(h)),
                "pci_bus_id": lambda h=h: _s(pynvml.nvmlDeviceGetPciInfo(h).busId),
                "serial": lambda h=h: _s(pynvml.nvmlDeviceGetSerial(h)),
                "uuid": lambda h=h: _s(pynvml.nvmlDeviceGetUUID(h)),
                "memory_total_bytes": lambda h=h: int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
            }
            for key, call in calls.items():
                try:
                    gpu[key] = call()
                except pynvml.NVMLError as exc:
                    gpu["errors"][key] = str(exc)
            _health(pynvml, h, gpu)
            out["gpus"].append(gpu)
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return out


_BRANDS = {0: "Unknown", 1: "Quadro", 2: "Tesla", 3: "NVS", 4: "GRID", 5: "GeForce", 6: "Titan",
           7: "NVIDIA Virtual Applications", 8: "NVIDIA Virtual PC", 9: "NVIDIA Virtual Compute Server",
           10: "NVIDIA RTX Virtual Workstation", 11: "NVIDIA Cloud Gaming", 12: "Quadro RTX",
           13: "NVIDIA RTX", 14: "NVIDIA", 15: "GeForce RTX", 16: "Titan RTX"}
"""nvmlBrandType_t values -> the brand names nvidia-smi prints (NVML API reference, nvmlBrandType_t)."""

_VIRT_MODES = {0: "None", 1: "Pass-Through", 2: "vGPU", 3: "Host vGPU", 4: "Host vSGA"}
"""nvmlGpuVirtualizationMode_t values -> names (NVML API reference)."""

_FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
"""NVML_GPU_FABRIC_STATE_* values -> the names nvidia-smi prints (NVML API reference)."""


def _health(pynvml: Any, h: Any, gpu: dict[str, Any]) -> None:
    """Add the per-GPU health facts (see the module docstring); never raises."""

    def put(key: str, call: Any) -> None:
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - NVMLError, or a call this pynvml lacks
            gpu["errors"][key] = str(exc) or type(exc).__name__
            return
        if value is not None:
            gpu[key] = value

    def both(fn: Any) -> dict[str, bool]:
        cur, pend = fn(h)
        return {"current": bool(cur), "pending": bool(pend)}

    def ecc() -> dict[str, Any]:
        res: dict[str, Any] = {}
        for ctr_name, ctr in (("volatile", pynvml.NVML_VOLATILE_ECC), ("aggregate", pynvml.NVML_AGGREGATE_ECC)):
            for err_name, err in (("corrected", pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                                  ("uncorrected", pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
                cell: dict[str, int] = {}
                try:
                    cell["total"] = int(pynvml.nvmlDeviceGetTotalEccErrors(h, err, ctr))
                except pynvml.NVMLError:
                    pass
                for loc_name, loc in (("dram", pynvml.NVML_MEMORY_LOCATION_DRAM),
                                      ("sram", pynvml.NVML_MEMORY_LOCATION_SRAM)):
                    try:
                        cell[loc_name] = int(pynvml.nvmlDeviceGetMemoryErrorCounter(h, err, ctr, loc))
                    except pynvml.NVMLError:
                        pass
                if cell:
                    res.setdefault(ctr_name, {})[err_name] = cell
        if not res:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return res

    def remap() -> dict[str, Any]:
        corr, unc, pending, failure = pynvml.nvmlDeviceGetRemappedRows(h)
        return {"correctable": int(corr), "uncorrectable": int(unc), "pending": bool(pending),
                "failure": bool(failure)}

    def retired() -> dict[str, Any]:
        return {"single_bit_ecc": len(pynvml.nvmlDeviceGetRetiredPages(
                    h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)),
                "double_bit_ecc": len(pynvml.nvmlDeviceGetRetiredPages(
                    h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)),
                "pending": bool(pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h))}

    def thresholds() -> dict[str, int]:
        res = {}
        for name, t in (("shutdown", pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
                        ("slowdown", pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                        ("gpu_max", pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
                        ("mem_max", pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX)):
            try:
                res[name] = int(pynvml.nvmlDeviceGetTemperatureThreshold(h, t))
            except pynvml.NVMLError:
                pass
        if not res:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return res

    def tlimit() -> dict[str, int]:
        names = (("shutdown", pynvml.NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT),
                 ("slowdown", pynvml.NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT),
                 ("gpu_max", pynvml.NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT),
                 ("mem_max", pynvml.NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT))
        values = pynvml.nvmlDeviceGetFieldValues(h, [fid for _, fid in names])
        res = {}
        for (name, _), v in zip(names, values):
            if v.nvmlReturn != pynvml.NVML_SUCCESS:
                continue
            res[name] = int(v.value.siVal if v.valueType == pynvml.NVML_VALUE_TYPE_SIGNED_INT else v.value.sllVal)
        if not res:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return res

    def pcie() -> dict[str, int]:
        res = {}
        for name, fn in (("gen_current", pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
                         ("gen_max", pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
                         ("gen_gpu_max", getattr(pynvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", None)),
                         ("width_current", pynvml.nvmlDeviceGetCurrPcieLinkWidth),
                         ("width_max", pynvml.nvmlDeviceGetMaxPcieLinkWidth),
                         ("replay_counter", pynvml.nvmlDeviceGetPcieReplayCounter)):
            if fn is None:
                continue
            try:
                res[name] = int(fn(h))
            except pynvml.NVMLError:
                pass
        if not res:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return res

    def fabric() -> dict[str, Any]:
        info = pynvml.c_nvmlGpuFabricInfo_t()
        # the C call fills the structure through a pointer (nvmlDeviceGetGpuFabricInfo(device, *info))
        pynvml.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info) if isinstance(info, ctypes.Structure) else info)
        status = int(info.status)
        return {"state": _FABRIC_STATES.get(int(info.state), str(int(info.state))),
                "status": "Success" if status == pynvml.NVML_SUCCESS else str(pynvml.NVMLError(status)),
                "clique_id": int(info.cliqueId),
                "cluster_uuid": bytes(info.clusterUuid).hex()}

    def procs() -> list[dict[str, Any]]:
        res = []
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            used = getattr(p, "usedGpuMemory", None)
            item: dict[str, Any] = {"pid": int(p.pid),
                                    "used_memory_bytes": int(used) if isinstance(used, int) and used < 2**63 else None}
            try:
                item["name"] = _s(pynvml.nvmlSystemGetProcessName(p.pid))
            except pynvml.NVMLError:
                item["name"] = ""
            res.append(item)
        return res

    put("brand", lambda: _BRANDS.get(int(pynvml.nvmlDeviceGetBrand(h)), "Unknown"))
    put("vbios_version", lambda: _s(pynvml.nvmlDeviceGetVbiosVersion(h)))
    put("inforom_image_version", lambda: _s(pynvml.nvmlDeviceGetInforomImageVersion(h)))
    put("persistence_mode", lambda: bool(pynvml.nvmlDeviceGetPersistenceMode(h)))
    put("virtualization_mode", lambda: _VIRT_MODES.get(int(pynvml.nvmlDeviceGetVirtualizationMode(h)), "Unknown"))
    put("mig_mode", lambda: both(pynvml.nvmlDeviceGetMigMode))
    put("ecc_mode", lambda: both(pynvml.nvmlDeviceGetEccMode))
    put("ecc_errors", ecc)
    put("remapped_rows", remap)
    put("retired_pages", retired)
    put("temperature_c", lambda: int(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)))
    put("temperature_thresholds_c", thresholds)
    put("temperature_tlimit_c", tlimit)
    put("temperature_margin_c", lambda: int(pynvml.nvmlDeviceGetMarginTemperature(h)))
    put("clocks_event_reasons", lambda: int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)))
    put("pstate", lambda: f"P{int(pynvml.nvmlDeviceGetPerformanceState(h))}")
    put("utilization_gpu_pct", lambda: int(pynvml.nvmlDeviceGetUtilizationRates(h).gpu))
    put("power_draw_w", lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
    put("power_limit_enforced_w", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0)
    put("power_limit_default_w", lambda: pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0)
    put("pcie", pcie)
    put("fabric", fabric)
    put("compute_processes", procs)


def main() -> int:
    facts = collect()
    sys.stdout.write(json.dumps(facts, sort_keys=True) + "\n")
    return 0 if facts.get("init") == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
