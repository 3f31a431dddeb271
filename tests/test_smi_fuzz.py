"""Robustness of the nvidia-smi family: parsers, detectors and judges never raise, whatever they
are given, and always answer with valid verdicts (unknown, with the raw lines, when nothing could
be read). Inputs: random text, random bytes decoded as hosts decode them, and truncations and
line mutations of the real outputs (tests/data/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from tests import strategies
from wizard.rules import smi as sc
from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers import smi_kinds as sk
from wizard.parsers.smi import (parse_nvml_smi, parse_smi_csv, parse_smi_table, parse_smi_text, parse_smi_xml)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.data_too_large])

PARSERS = (parse_smi_xml, parse_smi_text, parse_smi_table, parse_smi_csv, parse_nvml_smi)
DETECTORS = (sk.detect_xml, sk.detect_q, sk.detect_table, sk.detect_csv)

REAL: list[Path] = sorted([*CASES.glob("nvidia-smi*"), *PUBLIC.glob("nvidia-smi-q*"), *PUBLIC.glob("nvidia-smi__*"),
                           *PUBLIC.glob("nvidia-smi-query-gpu-csv__*"), *SYNTHETIC.glob("synthetic_nvidia-smi-q*")])
TEXTS = {p.name: text(p) for p in REAL if p.suffix in (".txt", ".xml")}

TOKENS = ["ERR!", "N/A", "[N/A]", "GPU is lost", "Active", "Yes", "No", "-", "99999999999999999999999999",
          "<gpu id=\"00000000:19:00.0\">", "</gpu>", "<!ENTITY x \"y\">", "|", ":", ",", "GPU 00000000:19:00.0",
          "Pending                           : Yes", "\t", "\0", "x16", "0x" + "F" * 20, "-2 C", "<", ">", "&"]

garbage = strategies.garbage(TOKENS + ["\n", " ", "    "], max_size=3000, max_tokens=80)


def mutated() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated([TEXTS[n] for n in sorted(TEXTS)], TOKENS, max_ops=6)


def _check(findings) -> None:
    assert isinstance(findings, list)
    for f in findings:
        assert f.verdict in Verdict
        assert isinstance(f.message, str) and f.message
        assert all(isinstance(x, str) for x in f.evidence)
        if f.verdict in (Verdict.WARN, Verdict.FAIL):
            assert f.remedy


@FUZZ
@given(garbage)
def test_parsers_and_judge_never_raise_on_garbage(s):
    for parse in PARSERS:
        doc = parse(s)
        findings = sc.judge_doc(doc, {"gpu_count": 8})
        _check(findings)
        if not doc.gpus and not doc.error_kind:
            assert findings and all(f.verdict in (Verdict.UNKNOWN, Verdict.SKIP) for f in findings)
    for detect in DETECTORS:
        assert 0.0 <= detect(s) <= 1.0


@FUZZ
@given(mutated())
def test_parsers_and_judge_never_raise_on_mutated_real_output(s):
    for parse in PARSERS[:4]:
        _check(sc.judge_doc(parse(s), {}))
        _check(sc.judge_doc(parse(s), {"gpu_count": "x", "virtualization": None}, before_tests=True))


@FEW
@given(mutated())
def test_explain_never_raises_and_never_crashes_a_judge(s):
    e = explain_text(s)
    assert e.verdict in Verdict
    assert not any("crashed" in f.message or "bringup bug" in f.remedy for f in e.findings)


@FEW
@given(st.dictionaries(st.text(max_size=20), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=15), kids, max_size=4),
    max_leaves=25), max_size=8))
def test_nvml_json_of_any_shape(d):
    import json

    d = dict(d)
    d["init"] = "ok"
    doc = parse_nvml_smi(json.dumps(d))
    _check(sc.judge_doc(doc, {}))
    d["gpus"] = [dict(d)]
    _check(sc.judge_doc(parse_nvml_smi(json.dumps(d)), {}))


@FEW
@given(garbage, st.sampled_from([0, 1, 6, 9, 124, 127, None]), st.sampled_from(["", "timed out after 60 s"]))
def test_health_check_functions_never_raise(s, rc, error):
    from wizard.probes import ProbeOutput

    outs = {"nvidia_smi_qx": ProbeOutput("nvidia_smi_qx", "$ nvidia-smi -q -x", text=s, rc=rc, error=error),
            "nvml": ProbeOutput("nvml", "NVML (pynvml)", text=s, rc=rc)}
    for check in (sc.smi_health, sc.nvml_health, sc.ecc_check, sc.gpu_count_check, sc.pcie_check):
        f = check(outs, {"gpu_count": 8})
        assert f
        _check(f)


def test_every_finding_of_the_check_functions_has_evidence():
    from tests.probe_data import LOCAL_VM, collect_tree
    from wizard.probes import ProbeOutput

    qx = ProbeOutput("nvidia_smi_qx", "$ nvidia-smi -q -x", text=TEXTS["nvidia-smi-q-x__a10g-idle-p8-healthy.xml"], rc=0)
    cases = [{"nvidia_smi_qx": qx}, {}, {"pci": collect_tree(LOCAL_VM, ["pci"])["pci"]}]
    for outs in cases:
        for name in sc.TOPICS:
            for f in getattr(sc, f"{name}_check")(outs, {}):
                assert f.evidence, (name, f)
