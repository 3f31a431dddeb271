"""Tests of wizard/parsers/rocm.py (rocm-smi's Concise Info table and --showtopo matrices)."""

from __future__ import annotations

from wizard.explain import clean
from wizard.parsers.rocm import detect_rocm_smi, parse_concise, parse_topo

from tests.probe_data import PUBLIC, text


def test_both_concise_layouts_read_by_their_units():
    """ROCm 5 (GPU Temp AvgPwr ... on one line; held-out round 32, an MI250X node) and ROCm 6 (Device [Model :
    Revision] ... with the GPU's name on a second line; round 31, MI300X)."""
    old = parse_concise(clean(text(PUBLIC / "rocm-smi__cray-nid-mi250x-8gcd-idle.txt")))
    assert len(old.gpus) == 8 and not old.problems
    g0, g1 = old.gpus[:2]
    assert (g0.temp_c, g0.power_w, g0.power_cap_w, g0.sclk_mhz, g0.mclk_mhz) == (47.0, 91.0, 560.0, 800.0, 1600.0)
    assert (g1.power_w, g1.power_cap_w, g1.sclk_mhz, g1.vram_pct, g1.gpu_pct) == (None, 0.0, 800.0, 0.0, 0.0)
    new = parse_concise(text(PUBLIC / "rocm-smi__mi300x-x4-idle-concise.txt"))
    assert [g.name for g in new.gpus] == ["AMD Instinct MI300X"] * 4
    assert (new.gpus[3].temp_c, new.gpus[3].power_w, new.gpus[3].power_cap_w) == (38.0, 137.0, 750.0)


def test_showtopo_matrices_and_a_paste_cut_inside_one():
    t = parse_topo(text(PUBLIC / "rocm-smi__4gpu-pcie-only-topo-hops3-no-xgmi.txt"))
    assert t.gpus == (0, 1, 2, 3) and set(t.matrices) == {"weight", "hops", "link type"}
    assert set(t.matrices["link type"].values()) == {"PCIE"} and len(t.matrices["link type"]) == 12
    cut = parse_topo(text(PUBLIC / "rocm-smi__8x-mi300-mi308-xgmi-weight-15-all-pairs.txt"))
    assert len(cut.matrices["weight"]) == 56 and len(cut.matrices["hops"]) == 7  # one row of hops before the cut


def test_detector_knows_rocm_smi_and_nothing_else():
    assert detect_rocm_smi(text(PUBLIC / "rocm-smi__mi300x-x4-idle-concise.txt")) >= 0.9
    assert detect_rocm_smi(text(PUBLIC / "nvidia-smi__8xb200-idle-persistence-on.txt")) == 0.0
