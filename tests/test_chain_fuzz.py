"""Robustness of the chain area: parsers and judges never raise on garbage, and every finding
they return is well formed (DESIGN.md: "Parsers never raise on garbage").

Inputs: random text, random bytes decoded like hosts decode them (UTF-8, errors="replace"),
truncations and line mutations of the real outputs in tests/data (PROVENANCE.md).
"""

from __future__ import annotations


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wizard.rules import dcgm, driver_chain, nccl
from wizard.rules import host as hosttools
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.hosttools import parse_free, parse_lscpu, parse_numactl, parse_swapon
from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests
from wizard.probes import ProbeOutput

from tests.probe_data import CASES, PUBLIC, SYNTHETIC
from tests import strategies

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = ["|", "+", "-", " ", "\n", ":", "#", "GPU", "Pass", "Fail", "Skip", "N/A", "0", "1",
          "9" * 400, "NCCL INFO", "NCCL WARN", "NET/IB : Using", "[0]", "float", "sum", "-1",
          "torch", "True", "12.4", "Mem:", "Swap:", "node 0 size:", "MB", "{", "}", "\"",
          "Successfully ran diagnostic for group.", "CPU(s):", "release 12.4, V12.4.1"]

garbage = strategies.garbage(TOKENS, max_size=1500, max_tokens=80)

REAL = sorted(p for d in (CASES, PUBLIC, SYNTHETIC) for p in d.glob("*")
              if p.is_file() and p.name.startswith(("nvcc", "torch", "nccl", "dcgmi", "free", "swapon", "lscpu",
                                                    "numactl", "synthetic_nccl", "synthetic_dcgm", "synthetic_free",
                                                    "synthetic_lscpu", "synthetic_numactl")))


def mutated() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL, TOKENS)


inputs = st.one_of(garbage, mutated())


def _ok(findings: list[Finding]) -> None:
    assert isinstance(findings, list)
    for f in findings:
        assert isinstance(f.verdict, Verdict) and f.id and f.message
        assert all(isinstance(e, str) for e in f.evidence)


@FUZZ
@given(inputs)
def test_parsers_never_raise(t: str) -> None:
    parse_nvcc_version(t)
    parse_torch_cuda(t)
    r = parse_nccl_tests(t)
    infer_collective(r)
    parse_nccl_log(t)
    parse_dcgm_text(t)
    parse_dcgm_json(t)
    parse_free(t)
    parse_free(t, 1)
    parse_swapon(t)
    parse_lscpu(t)
    parse_numactl(t)


@FUZZ
@given(inputs)
def test_judges_never_raise(t: str) -> None:
    exp = {"gpu_count": 8, "numa_nodes": 2, "host_ram_gib": 512, "scheduler": "kubernetes",
           "nics_per_node": 8, "nic_gbit_s": 400}
    _ok(driver_chain.judge_nvcc_text(t, exp))
    _ok(driver_chain.judge_torch_text(t, exp))
    _ok(nccl.judge_nccl_tests(t, exp))
    _ok(nccl.judge_nccl_log(t, exp))
    _ok(dcgm.judge(parse_dcgm_text(t), t, exp))
    _ok(dcgm.judge(parse_dcgm_json(t), t, exp))
    _ok(hosttools.judge_free_text(t, exp))
    _ok(hosttools.judge_swapon_text(t, exp))
    _ok(hosttools.judge_lscpu_text(t, exp))
    _ok(hosttools.judge_numactl_text(t, exp))


@FUZZ
@given(inputs, st.sampled_from([0, 1, 124, 127, None]), garbage)
def test_checks_over_probe_outputs_never_raise(t: str, rc: int | None, err: str) -> None:
    outs = {
        "nvcc_version": ProbeOutput("nvcc_version", "$ nvcc --version", t, rc=rc, stderr=err),
        "torch_cuda": ProbeOutput("torch_cuda", "$ python3 -c ...", t, rc=rc, stderr=err),
        "nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", t),
        "nvml": ProbeOutput("nvml", "NVML", t),
        "lscpu": ProbeOutput("lscpu", "$ lscpu", t, rc=rc),
        "free_b": ProbeOutput("free_b", "$ free -b", t, rc=rc),
    }
    for fn in (driver_chain.cuda_toolkit, driver_chain.torch_cuda, hosttools.cpu_layout, hosttools.memory_pressure):
        _ok(fn(outs, {}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_explain_on_mutated_real_outputs(t: str) -> None:
    e = explain_text(t)
    _ok(e.findings)
    assert e.findings


def test_real_inputs_found() -> None:
    assert len(REAL) >= 30
