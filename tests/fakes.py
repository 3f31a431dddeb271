"""Fakes shared by the tests: a fake ``pynvml`` module and the fixture that runs the NVML probe on it."""

from __future__ import annotations

import json
import sys
import types

import pytest
from wizard import nvml_probe


class NVMLError(Exception):
    def __init__(self, value=3):
        super().__init__(value)
        self.value = value

    def __str__(self):
        return {3: "Not Supported", 15: "GPU is lost"}.get(self.value, f"NVML error {self.value}")


def fake_pynvml(lost_second: bool = False, old_gpu: bool = False) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    for n in ("LibraryNotFound", "DriverNotLoaded", "NoPermission"):
        setattr(m, f"NVMLError_{n}", type(f"NVMLError_{n}", (NVMLError,), {}))
    consts = dict(NVML_SUCCESS=0, NVML_ERROR_NOT_SUPPORTED=3, NVML_VOLATILE_ECC=0, NVML_AGGREGATE_ECC=1,
                  NVML_MEMORY_ERROR_TYPE_CORRECTED=0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
                  NVML_MEMORY_LOCATION_DRAM=2, NVML_MEMORY_LOCATION_SRAM=7,
                  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS=0,
                  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR=1, NVML_TEMPERATURE_GPU=0,
                  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN=0, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN=1,
                  NVML_TEMPERATURE_THRESHOLD_MEM_MAX=2, NVML_TEMPERATURE_THRESHOLD_GPU_MAX=3,
                  NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT=192, NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT=193,
                  NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT=194, NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT=195,
                  NVML_VALUE_TYPE_SIGNED_INT=5)
    for k, v in consts.items():
        setattr(m, k, v)
    buses = ["00000000:19:00.0", "00000000:3B:00.0"]

    def unsupported(*_a, **_k):
        raise NVMLError(3)

    def per_gpu(fn):
        def call(h, *a):
            if old_gpu and h == 1:
                raise NVMLError(3)
            return fn(h, *a)
        return call

    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: "535.161.08"
    m.nvmlSystemGetCudaDriverVersion_v2 = lambda: 12020
    m.nvmlDeviceGetCount = lambda: 2

    def handle(i):
        if lost_second and i == 1:
            raise NVMLError(15)
        return i

    m.nvmlDeviceGetHandleByIndex = handle
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=buses[h].encode())
    m.nvmlDeviceGetSerial = lambda h: f"165492200592{h}"
    m.nvmlDeviceGetUUID = lambda h: f"GPU-{h:08x}"
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=85520809984)
    m.nvmlDeviceGetBrand = lambda h: 14
    m.nvmlDeviceGetVbiosVersion = lambda h: "96.00.74.00.0D"
    m.nvmlDeviceGetInforomImageVersion = lambda h: "G520.0200.00.05"
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    m.nvmlDeviceGetVirtualizationMode = lambda h: 0
    m.nvmlDeviceGetMigMode = per_gpu(lambda h: [0, 0])
    m.nvmlDeviceGetEccMode = lambda h: [1, 1]
    m.nvmlDeviceGetTotalEccErrors = per_gpu(lambda h, err, ctr: 0)
    m.nvmlDeviceGetMemoryErrorCounter = per_gpu(lambda h, err, ctr, loc: 0)
    m.nvmlDeviceGetRemappedRows = per_gpu(lambda h: (0, 0, 0, 0))
    m.nvmlDeviceGetRetiredPages = unsupported
    m.nvmlDeviceGetRetiredPagesPendingStatus = unsupported
    m.nvmlDeviceGetTemperature = lambda h, s: 29
    m.nvmlDeviceGetTemperatureThreshold = unsupported  # Hopper reports T.Limit-relative thresholds

    def field_values(h, ids):
        vals = {192: -8, 193: -2, 194: 0, 195: 0}
        return [types.SimpleNamespace(nvmlReturn=0, valueType=5, value=types.SimpleNamespace(siVal=vals[i], sllVal=0))
                for i in ids]

    m.nvmlDeviceGetFieldValues = field_values
    m.nvmlDeviceGetMarginTemperature = lambda h: 56
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x88  # HW slowdown + HW power brake
    m.nvmlDeviceGetPerformanceState = lambda h: 0
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=0, memory=0)
    m.nvmlDeviceGetPowerUsage = lambda h: 67740
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700000
    m.nvmlDeviceGetPowerManagementDefaultLimit = lambda h: 700000
    m.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetGpuMaxPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    m.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16
    m.nvmlDeviceGetPcieReplayCounter = lambda h: 67

    class FabricInfo:
        def __init__(self):
            self.clusterUuid = bytes(16)
            self.status = 0
            self.cliqueId = 0
            self.state = 0

    def fabric(h, info):
        info.state = 3
        return 0

    m.c_nvmlGpuFabricInfo_t = FabricInfo
    m.nvmlDeviceGetGpuFabricInfo = fabric
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: ([types.SimpleNamespace(pid=4242, usedGpuMemory=2 ** 30)]
                                                        if h == 0 else [])
    m.nvmlSystemGetProcessName = lambda pid: b"python3"
    return m


@pytest.fixture
def probe_json(monkeypatch):
    def run(**kw) -> dict:
        monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(**kw))
        return json.loads(json.dumps(nvml_probe.collect(), sort_keys=True))
    return run
