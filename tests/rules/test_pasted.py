"""Tests of wizard/rules/pasted.py (the judges explain uses where a kind needs more than the live rule)."""

from __future__ import annotations

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.rules import pasted

from tests.probe_data import PUBLIC, text


def test_csv_noheader_judge_reads_what_the_values_name_and_says_what_it_cannot_judge():
    body = text(PUBLIC / "nvidia-smi-query-gpu-csv-noheader__8x-h100-580-rows-excerpt.txt")
    fs = pasted.smi_csv_noheader_judge(body, {})
    cols = [f for f in fs if f.id == "health.smi_csv_columns"]
    # names, UUIDs, driver: nothing about health could be named, so the paste cannot pass as healthy
    assert len(cols) == 1 and cols[0].verdict is Verdict.UNKNOWN and "health is not judged" in cols[0].message
    assert "column 3 = PCI bus id" in cols[0].message and "column 5 (a memory size in MiB" in cols[0].message
    assert "0 field(s) N/A" in cols[0].message and "--format=csv" in cols[0].remedy
    assert not [f for f in fs if f.verdict in (Verdict.FAIL, Verdict.WARN)]  # nothing guessed from MiB/W/MHz
    # [N/A] fields are counted, bare numbers (nounits) are not read as a temperature
    fs = pasted.smi_csv_noheader_judge("0, NVIDIA T4, 95, 5, 1000, 16384, [N/A], [N/A], [N/A], P0\n", {})
    msg = [f for f in fs if f.id == "health.smi_csv_columns"][0].message
    assert "3 field(s) N/A" in msg and "column 10 = performance state" in msg
    assert not [f for f in fs if "temperature" in f.message.lower() and f.verdict in (Verdict.PASS, Verdict.WARN, Verdict.FAIL)]


def test_csv_noheader_paste_is_recognised_by_explain():
    e = explain_text(text(PUBLIC / "nvidia-smi-query-gpu-csv-noheader__h100-name-mem-driver-1row.txt"))
    assert e.kind == "nvidia-smi-query-gpu-csv-noheader" and e.verdict is Verdict.UNKNOWN
    assert any("GPU name" in f.message for f in e.findings)

