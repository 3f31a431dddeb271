"""Robustness of the links area: parsers, detectors, checks and kinds never raise, whatever they get.

Inputs: random text, random bytes decoded as hosts decode them (UTF-8, errors="replace"), text built
from the tokens these parsers look for, and truncations and line mutations of the real outputs in
tests/data (see PROVENANCE.md). Checks fed garbage still return findings with valid verdicts.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import strategies
from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers import pcie, topology
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence, nvlink
from wizard.rules import pcie as pcie_rules
from wizard.rules import topology as topology_rules

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

REAL = [p for d in (CASES, PUBLIC, SYNTHETIC) for p in sorted(Path(d).iterdir())
        if p.name.startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink", "dcgmi-nvlink", "synthetic_lspci",
                              "synthetic_nvidia-smi-topo", "synthetic_nvidia-smi-nvlink"))]
REAL_TEXT = [text(p) for p in REAL]

TOKENS = ["GPU0", "GPU1", "NIC0", "NV18", "NV", "X", "OK", "CNS", "PIX", "SYS", "CPU Affinity", "LnkSta:", "LnkCap:",
          "Speed 8GT/s", "Speed unknown", "Width x16", "Width x0", "(downgraded)", "(ok)", "\t", "\n", " ", ":",
          "IOMMU Group 1:", "IOMMU Group 7 ", "01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330]",
          "0000:19:00.0 PCI bridge [0604]: x [1000:c010]", "Express (v2) Downstream Port (Slot+), MSI 00",
          "Bus: primary=00, secondary=01, subordinate=ff", "ACSCtl:\tSrcValid+", "UESta:\tDLP+", "UESvrt:\tDLP+",
          "Region 1: Memory at <unassigned> (64-bit, prefetchable)", "[size=99999999999999999999G]",
          "Capabilities: <access denied>", "GPU 0: NVIDIA H100 (UUID: GPU-1)", "Link 0: 26.562 GB/s",
          "Link 1: <inactive>", "Link 0: Replay Errors: 7", "gpuId 0:", "U", "D", "_", "[...]", "9" * 40, "\0", "é"]

garbage = strategies.garbage(TOKENS, max_size=1500, max_tokens=80)


def mutated_real() -> st.SearchStrategy[str]:
    """A real input of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL_TEXT, TOKENS)


inputs = st.one_of(garbage, mutated_real())
plans = st.sampled_from([{}, {"gpu_model": "H100 NVL", "gpu_count": 2}, {"gpu_model": "L40S", "virtualization": True},
                         {"gpu_model": "RTX 5090", "under_load": True, "gpu_count": "eight"},
                         {"gpu_model": 7, "virtualization": "yes"}])

CHECKS = [(pcie_rules.lspci_all, "lspci_vvv"), (gpu_presence.iommu_groups, "lspci_iommu_groups"),
          (topology_rules.topology, "nvidia_smi_topo_m"), (topology_rules.p2p, "nvidia_smi_topo_p2p"),
          (nvlink.nvlink, "nvidia_smi_nvlink_s"), (nvlink.nvlink_errors, "nvidia_smi_nvlink_e"),
          (nvlink.dcgmi_nvlink, "dcgmi_nvlink")]
DETECTORS = [pcie.detect_lspci, pcie.detect_iommu_groups, topology.detect_topo_matrix, topology.detect_p2p_matrix,
             topology.detect_nvlink_status, topology.detect_nvlink_errors, topology.detect_dcgmi_nvlink]


def test_real_inputs_are_there():
    assert len(REAL) >= 25


@FUZZ
@given(inputs)
def test_parsers_never_raise(t):
    f = pcie.parse_lspci(t)
    assert isinstance(f.devices, list) and isinstance(f.problems, list)
    for d in f.devices:
        f.parents(d)
        pcie.device_label(d)
    pcie.parse_iommu_groups(t)
    assert isinstance(topology.parse_topo_matrix(t).gpu_pairs(), list)
    topology.parse_p2p_matrix(t)
    topology.parse_nvlink(t)
    topology.parse_dcgmi_nvlink(t)


@FUZZ
@given(inputs)
def test_detectors_return_a_confidence(t):
    for d in DETECTORS:
        v = d(t)
        assert 0.0 <= v <= 1.0


@FUZZ
@given(inputs, plans)
def test_checks_never_raise_and_give_valid_findings(t, plan):
    for fn, name in CHECKS:
        found = fn({name: ProbeOutput(name, f"$ {name}", text=t)}, plan)
        assert found and all(isinstance(x, Finding) and isinstance(x.verdict, Verdict) for x in found), fn.__name__
        assert all(isinstance(e, str) for x in found for e in x.evidence)


@FUZZ
@given(garbage)
def test_pure_garbage_is_never_a_pass_claim_about_gpus(t):
    # with nothing a parser can read, no check claims a healthy GPU link
    for fn, name in CHECKS:
        for x in fn({name: ProbeOutput(name, f"$ {name}", text=t)}, {}):
            if x.verdict is Verdict.PASS:
                assert x.evidence  # a pass always shows the lines it rests on


@FUZZ
@given(inputs, plans)
def test_explain_never_raises_on_my_inputs(t, plan):
    e = explain_text(t, expectations=plan)
    assert e.findings and not any(x.id.startswith("explain.") and "crashed" in x.message for x in e.findings)
