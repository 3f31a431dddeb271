"""Tests of wizard/rules/rocm.py (AMD GPUs as rocm-smi shows them)."""

from __future__ import annotations

from wizard.explain import clean, explain_text
from wizard.model import Verdict
from wizard.parsers.rocm import parse_topo
from wizard.rules import rocm

from tests.probe_data import PUBLIC, text


def test_an_idle_mi250x_node_passes_and_the_second_dies_power_is_explained():
    """Held-out round 32 (an expert's pass): 8 GCDs of 4 MI250X, idle; AvgPwr N/A and PwrCap 0 W on every second GCD
    is how rocm-smi shows a two-die package, not a fault. No temperature is judged high without a published limit."""
    fs = rocm.judge_rocm_smi(clean(text(PUBLIC / "rocm-smi__cray-nid-mi250x-8gcd-idle.txt")), {})
    assert {f.verdict for f in fs} == {Verdict.PASS}
    resp = next(f for f in fs if f.id == "health.gpu_responsive")
    assert "8 GPUs answer rocm-smi" in resp.message and "39-47 °C" in resp.message
    assert "no power on GPUs 1, 3, 5, 7" in resp.message and "two-die package" in resp.message
    count = rocm.judge_rocm_smi(clean(text(PUBLIC / "rocm-smi__cray-nid-mi250x-8gcd-idle.txt")), {"gpu_count": 16})
    assert next(f for f in count if f.id == "health.gpu_count").verdict is Verdict.FAIL


def test_a_silent_gpu_warns():
    body = text(PUBLIC / "rocm-smi__mi300x-x4-idle-concise.txt").replace(
        "35.0°C      133.0W    NPS1, SPX       131Mhz", "N/A         N/A       NPS1, SPX       N/A   ")  # synthetic_
    fs = rocm.judge_rocm_smi(body, {})
    (w,) = [f for f in fs if f.verdict is Verdict.WARN]
    assert w.id == "health.gpu_responsive" and w.subject == "GPU 0" and "did not answer" in w.message


def test_topology_xgmi_everywhere_passes_pcie_only_warns_a_gpu_without_xgmi_fails():
    (p,) = rocm.judge_topo(parse_topo(text(PUBLIC / "rocm-smi__8x-mi300-mi308-xgmi-weight-15-all-pairs.txt")))
    assert p.verdict is Verdict.PASS and "one XGMI hop" in p.message
    (w,) = rocm.judge_topo(parse_topo(text(PUBLIC / "rocm-smi__4gpu-pcie-only-topo-hops3-no-xgmi.txt")))
    assert w.verdict is Verdict.WARN and "no XGMI" in w.message and "hops 3" in w.message
    pcie = text(PUBLIC / "rocm-smi__4gpu-pcie-only-topo-hops3-no-xgmi.txt")
    head, links = pcie.split("Link Type between two GPUs", 1)
    # synthetic_: GPUs 0-2 joined by XGMI, GPU 3 only over PCIe
    lost = head + "Link Type between two GPUs" + links.replace("GPU0   0            PCIE         PCIE",
                                                               "GPU0   0            XGMI         XGMI").replace(
        "GPU1   PCIE         0            PCIE", "GPU1   XGMI         0            XGMI").replace(
        "GPU2   PCIE         PCIE         0", "GPU2   XGMI         XGMI         0")
    (f,) = rocm.judge_topo(parse_topo(lost))
    assert f.verdict is Verdict.FAIL and f.subject == "GPU 3" and "no XGMI link" in f.message


def test_explain_reads_rocm_smi_as_its_own_kind():
    r = explain_text(text(PUBLIC / "rocm-smi__mi300x-x4-idle-concise.txt"))
    assert r.kind == "rocm-smi" and r.verdict is Verdict.PASS


def test_no_amd_gpu_fails_the_count_and_a_hung_gpu_whose_reads_fail_fails():
    """Held-out round 217 (real): rocm-smi's "No AMD GPUs specified" over an empty table; a GPU whose every sensor
    reads N/A while rocm-smi prints "ERROR: 15 GPU[0]" and "One or more commands failed"."""
    (none,) = rocm.judge_rocm_smi(text(PUBLIC / "rocm-smi__no-amd-gpus-detected-empty-table.txt"), {})
    assert none.id == "health.gpu_count" and none.verdict is Verdict.FAIL and "no AMD GPU" in none.message
    fs = rocm.judge_rocm_smi(text(PUBLIC / "rocm-smi__amd-gpu-hung-after-kill-sensors-unreadable.txt"), {})
    (hung,) = [f for f in fs if f.id == "health.gpu_responsive"]
    assert hung.verdict is Verdict.FAIL and "does not answer the driver" in hung.message
    assert any("commands failed" in e for e in hung.evidence)


def test_rocminfo_passes_on_gpu_agents_and_clinfo_with_no_device_fails():
    r = explain_text(text(PUBLIC / "rocminfo-grep-name__mi300x-node-epyc9534-agents-enumerated-partial.txt"))
    assert r.kind == "rocminfo" and r.verdict is Verdict.PASS
    assert "5 GPU agent(s): 5x AMD Instinct MI300X (gfx942)" in r.findings[0].message
    one = explain_text(text(PUBLIC / "rocminfo__mi250x-agent11-gfx90a-enumerated-partial.txt"))
    assert one.kind == "rocminfo" and "AMD Instinct MI250X (gfx90a)" in one.findings[0].message
    cl = explain_text(text(PUBLIC / "clinfo__4x-mi210-dell-server-zero-devices-rocm-not-loaded.txt"))
    assert cl.kind == "clinfo" and cl.verdict is Verdict.FAIL and "0 devices" in cl.findings[0].message


def test_rocm_smi_id_lines_with_n_a_on_some_gpus_warn():
    r = explain_text(text(PUBLIC / "rocm-smi-i__8x-mi300x-odd-gpus-device-id-na-rocm641.txt"))
    assert r.kind == "rocm-smi" and r.verdict is Verdict.WARN
    assert "GPU[1]" in r.findings[0].message and "GPU[0]" not in r.findings[0].message
    fine = ("GPU[0]\t\t: Device Name: \t\tAMD Instinct MI300X\nGPU[0]\t\t: Device ID: \t\t0x74a1\n"
            "GPU[1]\t\t: Device Name: \t\tAMD Instinct MI300X\nGPU[1]\t\t: Device ID: \t\t0x74a1\n")  # synthetic_
    assert rocm.judge_gpu_fields(__import__("wizard.parsers.rocm", fromlist=["x"]).parse_gpu_fields(fine), fine) == []
