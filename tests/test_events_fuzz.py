"""Robustness of the events area: the kernel-log, edac-util, ras-mc-ctl and EDAC sysfs parsers,
judges and checks never raise, whatever they are fed, and always return findings with valid
verdicts, ids, subjects and sources.

Inputs: random text, random bytes decoded like hosts decode them (UTF-8, errors="replace"),
text made of the tokens the parsers look for, and truncations / line mutations of this area's
real outputs (tests/data/PROVENANCE.md).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from tests import strategies
from wizard.rules import edac as edac_rules
from wizard.rules import kernel_log as klog
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers import edac as ed
from wizard.parsers import kernellog as kl
from wizard.probes import ProbeOutput

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

REAL: list[Path] = sorted(
    [p for p in CASES.glob("*") if p.name.startswith(("dmesg__", "journal__", "syslog__", "edac-util__",
                                                      "ras-mc-ctl-summary__"))]
    + [p for p in PUBLIC.glob("*") if p.is_file() and p.name.startswith(("kernel-log__", "edac", "ras-mc-ctl"))]
    + [p for p in SYNTHETIC.glob("synthetic_*") if p.is_file() and p.name.startswith(
        ("synthetic_kernel-log", "synthetic_edac", "synthetic_ras"))])
REAL_TEXT = [text(p) for p in REAL]

TOKENS = ["NVRM: Xid (PCI:0000:", "9b:00): ", "154, ", "GPU recovery action changed from 0x0 (None) to 0x",
          "(Drain and Reset)", "79, GPU has fallen off the bus.", "[  12.345678] ", "[Sun Feb 23 16:24:18 2025] ",
          "May  7 06:45:12 node01 kernel: ", "10.0.0.1: kern: warning: [2026-04-22T21:30:51Z]: ", "-- Boot 1a --",
          "pcieport 0000:00:02.0: ", "AER: Corrected error received: id=0010", "PCIe Bus Error: severity=",
          "Uncorrected (Fatal), type=Transaction Layer, ", "  device [8086:6f04] error status/mask=1/2", "[ 5] x",
          "EDAC MC3: ", "1 UE memory read error on ", "DIMM_A1 (channel:2)", "{1}[Hardware Error]: ",
          "section_type: PCIe error", "event severity: fatal", "mce: [Hardware Error]: ", "RmInitAdapter failed! ",
          "limited by 8.0 GT/s PCIe x4 link at ", "(capable of 1 Gb/s with 16.0 GT/s PCIe x16 link)",
          "nouveau 0000:01:00.0: ", "NVRM: GPU 0000:01:00.0 is already bound to nouveau.", "Call Trace:",
          "mc0: csrow0: DIMM: ", "31 Corrected Errors", "No Memory errors.", "MCE records summary:",
          "\t1 Corrected error, no action required. errors", "Label\tCE\tUE", "/sys/devices/system/edac/mc/mc0/",
          "ce_count:", "9" * 5000, "\n", " ", "\t", ":", ",", "(", ")", "\0", "\x1b[31m"]

garbage = strategies.garbage(TOKENS, max_size=2000)


def mutated_real() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL_TEXT, TOKENS)


inputs = st.one_of(garbage, mutated_real())


def _valid(findings: list[Finding]) -> None:
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding)
        assert isinstance(f.verdict, Verdict)
        assert f.id.startswith(("health.", "explain.")) and f.message and f.subject
        assert all(isinstance(e, str) for e in f.evidence)
        if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
            assert f.remedy, f


@FUZZ
@given(inputs)
def test_kernel_log_parser_and_judge_never_raise(t):
    log = kl.parse_kernel_log(t)
    for e in log.events:
        assert e.evidence and len(kl.event_key(e)) == 16
    _valid(klog.judge_kernel_log(log, {"boot_only": True}))
    _valid(klog.judge_kernel_log(log, {"acknowledged": {kl.event_key(e) for e in log.events[:2]}}))
    assert 0.0 <= kl.detect_kernel_log(t) <= 1.0


@FUZZ
@given(inputs)
def test_memory_parsers_and_judges_never_raise(t):
    _valid(edac_rules.judge_edac_facts(ed.parse_edac_util(t), {}))
    _valid(edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl(t), {}))
    _valid(edac_rules.judge_edac_facts(ed.parse_edac_sysfs(ed.parse_edac_grep(t)), {}))
    for d in (ed.detect_edac_util, ed.detect_ras_mc_ctl, ed.detect_edac_sysfs):
        assert 0.0 <= d(t) <= 1.0


@FEW
@given(inputs, st.sampled_from(["kernel-log", "edac-util", "ras-mc-ctl", "edac-sysfs"]))
def test_explain_with_each_kind_never_crashes(t, kind):
    e = explain_text(t, kind=kind)
    assert e.findings and not any("crashed" in f.message for f in e.findings)


@FEW
@given(inputs, st.sampled_from([0, 1, None]), st.sampled_from(["", "Operation not permitted", "timed out"]),
       st.dictionaries(st.sampled_from(["/sys/devices/system/edac/mc/mc0/ce_count",
                                        "/sys/devices/system/edac/mc/mc1/dimm0/dimm_ue_count",
                                        "/sys/devices/system/edac/mc/mc1/dimm0/dimm_label",
                                        "/sys/devices/system/edac/mc/mc0/csrow0/ch1_ce_count", "/sys/x/y"]),
                       st.one_of(st.none(), st.text(max_size=20)), max_size=5))
def test_checks_never_raise(t, rc, error, files):
    outs = {"kernel_log_journal": ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=t, rc=rc, error=error),
            "kernel_log_dmesg": ProbeOutput("kernel_log_dmesg", "$ dmesg", text=t[::-1], rc=rc),
            "nvml": ProbeOutput("nvml", "NVML", text=t),
            "edac_sysfs": ProbeOutput("edac_sysfs", "/sys/devices/system/edac/mc", files=dict(files), error=error)}
    _valid(klog.kernel_log(outs, {"acknowledged": t[:20]}))
    _valid(edac_rules.edac(outs, {}))


def test_garbage_that_is_no_kernel_log_is_unknown():
    (f,) = klog.judge_kernel_log_text("hello\nworld\n", {})
    assert f.verdict is Verdict.UNKNOWN and "hello" in f.evidence
    (g,) = edac_rules.judge_edac_facts(ed.parse_edac_util("hello\nworld"), {})
    assert g.verdict is Verdict.UNKNOWN and "world" in g.evidence
