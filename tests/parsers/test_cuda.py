"""Tests of wizard/parsers/cuda.py."""

from __future__ import annotations

from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda

from tests.probe_data import CASES, PUBLIC, text


def test_nvcc_parse_real_outputs() -> None:
    n = parse_nvcc_version(text(CASES / "nvcc-version__cuda-12.4-h100-node.txt"))
    assert (n.release, n.build) == ("12.4", "12.4.131")
    n = parse_nvcc_version(text(PUBLIC / "nvcc-version__cuda-13.0-dev-vm-local.txt"))
    assert n.release == "13.0"


def test_torch_repl_transcript_parse() -> None:
    t = parse_torch_cuda(text(CASES / "torch-cuda__torch12-cu100-vs-cuda90-is-available-false.txt"))
    assert (t.torch_version, t.cuda, t.available, t.toolkit) == ("1.2.0", "10.0.130", False, "9.0.176")
