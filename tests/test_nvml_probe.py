"""Tests of wizard/nvml_probe.py."""

from __future__ import annotations

import json

import pytest
from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.rules import smi as sc

from tests.fakes import probe_json  # noqa: F401  (a fixture)


def test_nvml_probe_keeps_its_old_fields_and_adds_health(probe_json):
    d = probe_json()
    assert d["init"] == "ok" and d["count"] == 2 and d["driver_version"] == "535.161.08"
    g = d["gpus"][0]
    for key in ("index", "name", "pci_bus_id", "serial", "uuid", "memory_total_bytes", "errors"):
        assert key in g  # the JSON shape the existing checks read is unchanged
    assert g["brand"] == "NVIDIA" and g["persistence_mode"] is True
    assert g["ecc_mode"] == {"current": True, "pending": True}
    assert g["ecc_errors"]["aggregate"]["uncorrected"] == {"total": 0, "dram": 0, "sram": 0}
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert g["temperature_tlimit_c"] == {"shutdown": -8, "slowdown": -2, "gpu_max": 0, "mem_max": 0}
    assert g["temperature_margin_c"] == 56 and g["clocks_event_reasons"] == 0x88
    assert g["power_draw_w"] == pytest.approx(67.74) and g["power_limit_default_w"] == 700
    assert g["pcie"]["replay_counter"] == 67 and g["fabric"]["state"] == "Completed"
    assert g["compute_processes"] == [{"pid": 4242, "used_memory_bytes": 2 ** 30, "name": "python3"}]
    assert "retired_pages" not in g and "retired_pages" in g["errors"]  # unsupported: named, not faked
    assert "temperature_thresholds_c" in g["errors"]


def test_nvml_probe_gpu_that_lacks_features(probe_json):
    g = probe_json(old_gpu=True)["gpus"][1]
    assert "ecc_errors" not in g and "remapped_rows" not in g and "mig_mode" not in g
    assert {"ecc_errors", "remapped_rows", "mig_mode"} <= set(g["errors"])


def test_nvml_probe_lost_gpu_still_reported_to_the_existing_check(probe_json):
    d = probe_json(lost_second=True)
    assert d["gpus"][1]["errors"] == {"handle": "GPU is lost"}
    out = ProbeOutput("nvml", "NVML (pynvml)", text=json.dumps(d), rc=0)
    f = gc.nvml({"nvml": out}, {})
    assert f[0].verdict is Verdict.FAIL  # wizard.rules.gpu_presence still reads the extended JSON
    resp = [x for x in sc.nvml_health({"nvml": out}, {}) if x.id == "health.gpu_responsive"]
    assert resp and resp[0].verdict is Verdict.FAIL and "0000:3b:00.0" not in resp[0].subject
