"""The shared real cases of the nvidia-smi family, through ``bringup explain`` (auto-detected kind).

Each case file must get its expected verdict (``a|b`` = either) and at least one of its
``mentions`` words somewhere in its findings, exactly as tests/data/cases/expected.csv says (its
rows whose file starts with ``nvidia-smi``; sources in that file and in tests/data/PROVENANCE.md).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.probe_data import CASES, text
from wizard.explain import explain_text
from wizard.model import Verdict

LOCAL = CASES / "expected.csv"


def _mine(name: str) -> bool:
    return name.startswith("nvidia-smi") and not name.startswith("nvidia-smi-topo")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if _mine(r["file"])]


ROWS = _rows(LOCAL)

KIND_BY_PREFIX = (("nvidia-smi-query-gpu-csv__", "nvidia-smi-query-gpu-csv"), ("nvidia-smi-q-x__", "nvidia-smi-q-x"),
                  ("nvidia-smi-q-d-", "nvidia-smi-q"), ("nvidia-smi-q__", "nvidia-smi-q"), ("nvidia-smi__", "nvidia-smi"))


def expected_kind(name: str) -> str:
    return next(kind for prefix, kind in KIND_BY_PREFIX if name.startswith(prefix))


def blob(findings) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


def test_all_seventeen_cases_are_covered():
    assert len(ROWS) == 17
    assert all((CASES / r["file"]).exists() for r in ROWS)


def test_expected_rows_name_their_public_source():
    local = _rows(LOCAL)
    assert len(local) == 17
    assert all(r["source"].strip() for r in local)


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_verdict_and_mentions(row):
    e = explain_text(text(CASES / row["file"]), row["file"])
    allowed = row["verdict"].split("|")
    assert e.kind == expected_kind(row["file"])
    assert e.verdict.value in allowed, [(f.verdict.value, f.id, f.message) for f in e.findings]
    mentions = [m for m in row["mentions"].split("|") if m]
    if mentions:
        assert any(m.lower() in blob(e.findings) for m in mentions), mentions


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_findings_are_well_formed(row):
    e = explain_text(text(CASES / row["file"]), row["file"])
    assert e.findings
    for f in e.findings:
        assert f.subject and f.message and "\n" not in f.message
        assert f.id.split(".")[0] in ("health", "driver")
        if f.verdict in (Verdict.WARN, Verdict.FAIL, Verdict.UNKNOWN):
            assert f.remedy.strip(), f
        if f.verdict in (Verdict.PASS, Verdict.WARN, Verdict.FAIL):
            assert f.source.strip(), f
        assert f.evidence or f.verdict is Verdict.SKIP, f
        body = text(CASES / row["file"])
        for line in f.evidence:  # evidence is quoted from the input, never made up
            if e.kind == "nvidia-smi-query-gpu-csv" and ": " in line:
                header, _, value = line.partition(": ")  # a cell of a row too long to quote whole
                assert header in body and value in body
            else:
                assert line in body, line


@pytest.mark.parametrize("prompt", ["$ {cmd}", "root@gpu-node-01:~# {cmd}", "[user@login1 ~]$ {cmd}"])
@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_with_the_command_line_pasted_first(row, prompt):
    cmd = {"nvidia-smi": "nvidia-smi", "nvidia-smi-q": "nvidia-smi -q", "nvidia-smi-q-x": "nvidia-smi -q -x",
           "nvidia-smi-query-gpu-csv": "nvidia-smi --query-gpu=index,name --format=csv"}[expected_kind(row["file"])]
    e = explain_text(prompt.format(cmd=cmd) + "\n" + text(CASES / row["file"]))
    assert e.kind == expected_kind(row["file"])
    assert e.verdict.value in row["verdict"].split("|")


@pytest.mark.parametrize("row", [r for r in ROWS if len(text(CASES / r["file"]).splitlines()) >= 12],
                         ids=lambda r: r["file"])
def test_case_cut_in_half_is_still_recognised_and_judged(row):
    lines = text(CASES / row["file"]).splitlines()
    cut = "\n".join(lines[: len(lines) // 2]) + "\n"
    e = explain_text(cut)
    assert e.kind == expected_kind(row["file"])
    assert e.findings and all(f.verdict in Verdict for f in e.findings)


def test_evidence_quotes_the_raw_lines():
    """The A10 case: the row-remap failure rests on the lines nvidia-smi printed."""
    e = explain_text(text(CASES / "nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt"))
    f = next(f for f in e.findings if f.id == "health.row_remap")
    assert "Uncorrectable Error               : 4" in f.evidence
    assert "Pending                           : Yes" in f.evidence
    assert "GPU 00000000:07:00.0" in f.evidence


PUBLIC_VERDICTS = {
    # tests/data/PROVENANCE.md, "public/": the verdict bringup gives each, and why
    "nvidia-smi__geforce-fan-err-exclusive-process.txt": ("nvidia-smi", "warn"),  # fan reads ERR!
    "nvidia-smi__h200-mig-load-gpu-burn-processes.txt": ("nvidia-smi", "pass"),
    "nvidia-smi-q__h200-mig-idle-590.txt": ("nvidia-smi-q", "pass"),
    "nvidia-smi-query-gpu-csv__h200-mig-idle-590-all-fields.txt": ("nvidia-smi-query-gpu-csv", "pass"),
    "nvidia-smi-q-x__rtx-pro-6000-blackwell-v13-partial.xml": ("nvidia-smi-q-x", "warn"),  # Gen5 GPU, Gen4 host
    "nvidia-smi-q-x__grid-p4-vgpu-guest-wddm-all-na.xml": ("nvidia-smi-q-x", "pass"),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_VERDICTS))
def test_public_real_outputs(name):
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / name)
    e = explain_text(body, name)
    kind, verdict = PUBLIC_VERDICTS[name]
    assert (e.kind, e.verdict.value) == (kind, verdict), [(f.verdict.value, f.message) for f in e.findings]
    for f in e.findings:
        for line in f.evidence:
            if kind == "nvidia-smi-query-gpu-csv" and ": " in line:
                header, _, value = line.partition(": ")
                assert header in body and value in body
            else:
                assert line in body, line
