"""Every real case file of the "chain" area gets its expected verdict and names its cause.

Reads tests/data/cases/expected.csv (the cases' verdicts and public sources) and
runs each raw file through ``explain_text`` with no kind given, as ``bringup explain`` does.
"""

from __future__ import annotations

import csv

import pytest

from wizard.explain import explain_text

from tests.probe_data import CASES, text

PREFIXES = ("nvcc-version__", "torch-cuda__", "nccl-tests__", "nccl-debug__", "dcgmi-diag__", "free-h__", "swapon-",
            "lscpu__", "numactl-")
EXPECTED_CSV = CASES / "expected.csv"
KINDS = {"nvcc-version__": "nvcc-version", "torch-cuda__": "torch-cuda", "nccl-tests__": "nccl-tests",
         "nccl-debug__": "nccl-debug", "dcgmi-diag__": "dcgmi-diag", "free-h__": "free", "swapon-": "swapon",
         "lscpu__": "lscpu", "numactl-": "numactl-hardware"}


def _rows() -> list[dict[str, str]]:
    src = EXPECTED_CSV if EXPECTED_CSV.exists() else None
    assert src is not None, "tests/data/cases/expected.csv is missing"
    with open(src, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["file"].startswith(PREFIXES)]


ROWS = _rows()


def test_all_nineteen_case_files_are_covered() -> None:
    assert len(ROWS) == 19
    for r in ROWS:
        assert (CASES / r["file"]).exists(), r["file"]


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_verdict_and_mentions(row: dict[str, str]) -> None:
    e = explain_text(text(CASES / row["file"]), row["file"])
    prefix = next(p for p in PREFIXES if row["file"].startswith(p))
    assert e.kind == KINDS[prefix]
    allowed = row["verdict"].split("|")
    assert e.verdict.value in allowed, [(f.id, f.verdict.value, f.message) for f in e.findings]
    words = [w for w in row["mentions"].split("|") if w]
    if words:
        blob = " ".join(" ".join([f.message, f.subject, f.remedy, *f.evidence]) for f in e.findings).lower()
        assert any(w.lower() in blob for w in words), (words, blob[:500])
    for f in e.findings:
        assert f.source, f
        if f.verdict.value not in ("pass", "skip"):
            assert f.remedy, f
        assert f.evidence, f


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_detected_with_command_line_pasted(row: dict[str, str]) -> None:
    """A paste that starts with the command line is recognised the same way."""
    body = text(CASES / row["file"])
    cmd = {"nvcc-version__": "nvcc --version", "torch-cuda__": "python3 train.py", "nccl-tests__": "./all_reduce_perf -b 8",
           "nccl-debug__": "NCCL_DEBUG=INFO torchrun x.py", "dcgmi-diag__": "dcgmi diag -r 2", "free-h__": "free -h",
           "swapon-": "swapon --show --output-all", "lscpu__": "lscpu", "numactl-": "numactl --hardware"}
    prefix = next(p for p in PREFIXES if row["file"].startswith(p))
    e = explain_text(f"user@node:~$ {cmd[prefix]}\n" + body, row["file"])
    assert e.kind == KINDS[prefix]
    assert e.verdict.value in row["verdict"].split("|")
