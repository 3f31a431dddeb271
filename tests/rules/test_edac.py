"""Tests of wizard/rules/edac.py."""

from __future__ import annotations


from hypothesis import given
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers import edac as ed
from wizard.rules import edac as edac_rules

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, collect_tree, text


def _ids(findings: list[Finding], verdict: Verdict | None = None) -> set[str]:
    return {f.id for f in findings if verdict is None or f.verdict is verdict}


def test_edac_ue_fails_and_apei_pcie_error_on_nvme_warns():
    e = explain_text(text(CASES / "dmesg__edac-ue-memory-error-apei-pcie-error.txt"))
    mem = next(f for f in e.findings if f.id == "health.host_memory")
    assert mem.verdict is Verdict.FAIL and "CPU_SrcID#1_MC#1_Chan#2_DIMM#0" in mem.message
    assert "Replace the DIMM" in mem.remedy
    aer = next(f for f in e.findings if f.id == "health.aer")
    assert aer.verdict is Verdict.WARN and "0000:5e:00.0 [144d:a808]" in aer.message
    # the interleaved "mce: ... Machine check events logged" line is not a third finding
    assert "health.mce" not in _ids(e.findings)


def test_journal_edac_ce_sums_the_counts_per_dimm():
    e = explain_text(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt"))
    (mem,) = [f for f in e.findings if f.id == "health.host_memory"]
    assert mem.verdict is Verdict.WARN and "16 corrected (CE)" in mem.message  # 4+2+6+1+1+1+1
    assert "CPU#0Channel#2_DIMM#0" in mem.subject


def test_ras_memory_ue_names_the_dimm():
    e = explain_text(text(SYNTHETIC / "synthetic_ras-mc-ctl__summary-memory-ue-aer-fatal.txt"))
    ue = next(f for f in e.findings if f.verdict is Verdict.FAIL and f.id == "health.host_memory")
    assert ue.subject == "DIMM CPU1_DIMM_C1" and "Replace the DIMM CPU1_DIMM_C1" in ue.remedy


def test_edac_util_formats():
    f = ed.parse_edac_util("mc0: Correctable errors:   7\nmc0: Uncorrectable errors: 0\nTotal CE: 7\nTotal UE: 0\n")
    (c,) = f.counts
    assert (c.mc, c.ce, c.ue) == ("mc0", 7, 0)
    f = ed.parse_edac_util("edac-util: No errors to report.\n")
    assert f.no_errors_line and not f.counts
    assert edac_rules.judge_edac_facts(f, {})[0].verdict is Verdict.PASS
    f = ed.parse_edac_util("edac-util: Error: No memory controller data found.\n")
    (x,) = edac_rules.judge_edac_facts(f, {})
    assert x.verdict is Verdict.UNKNOWN and "amd64_edac" in x.remedy
    f = ed.parse_edac_util("mc0:csrow0:all:UE:1\nmc0:csrow0:all:CE:4\nmc0:csrow0:DIMM_A1:CE:4\n")
    verdicts = {x.verdict for x in edac_rules.judge_edac_facts(f, {})}
    assert Verdict.FAIL in verdicts


def test_ras_all_clean_passes_and_garbage_is_unknown():
    clean = "No Memory errors.\n\nNo PCIe AER errors.\n\nNo MCE errors.\n"
    assert edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl(clean), {})[0].verdict is Verdict.PASS
    (f,) = edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl("ras-mc-ctl: Error: can't access the database\n"), {})
    assert f.verdict is Verdict.UNKNOWN


def test_sysfs_parser_reads_dimm_rank_csrow_and_noinfo():
    files = {
        "/sys/devices/system/edac/mc/mc0/ce_count": "5\n", "/sys/devices/system/edac/mc/mc0/ue_count": "0\n",
        "/sys/devices/system/edac/mc/mc0/ue_noinfo_count": "2\n",
        "/sys/devices/system/edac/mc/mc0/csrow1/ch0_ce_count": "5\n",
        "/sys/devices/system/edac/mc/mc0/csrow1/ch0_dimm_label": "DIMM_A2\n",
        "/sys/devices/system/edac/mc/mc1/ce_count": None,
    }
    f = ed.parse_edac_sysfs(files)
    by = {(c.mc, c.where): c for c in f.counts}
    assert by[("mc0", "csrow1/ch0")].ce == 5 and by[("mc0", "csrow1/ch0")].label == "DIMM_A2"
    assert by[("mc0", "noinfo")].ue == 2
    assert f.unread == ["/sys/devices/system/edac/mc/mc1/ce_count: <unreadable>"]
    findings = edac_rules.judge_edac_facts(f, {})
    assert {x.verdict for x in findings} == {Verdict.FAIL, Verdict.WARN}
    assert not any(x.message.startswith("host memory mc0:") for x in findings)  # totals not double-counted


def test_edac_check_on_saved_trees():
    outs = collect_tree(SYNTHETIC / "synthetic_edac-tree__dimm-ue", ["edac_sysfs"])
    findings = edac_rules.edac(outs, {})
    assert {(f.verdict, f.subject) for f in findings} == {
        (Verdict.FAIL, "DIMM CPU0_DIMM_B1 (mc0 dimm1)"), (Verdict.WARN, "DIMM CPU0_DIMM_A1 (mc0 dimm0)")}
    outs = collect_tree(PUBLIC / "edac-tree__edac-utils-15-rank-ce", ["edac_sysfs"])
    (f,) = edac_rules.edac(outs, {})
    assert f.verdict is Verdict.WARN and "mc0 rank4" in f.message
    assert "/sys/devices/system/edac/mc/mc0/rank4/dimm_ce_count:1" in f.evidence


def test_edac_check_without_edac_is_unknown(tmp_path):
    outs = collect_tree(tmp_path, ["edac_sysfs"])
    (f,) = edac_rules.edac(outs, {})
    assert f.verdict is Verdict.UNKNOWN and "EDAC" in f.message


from tests.strategies import (  # noqa: F401 - the kernel-log area's fuzz inputs, shared
    EVENTS_FUZZ as FUZZ,
    EVENTS_REAL as REAL,
    EVENTS_REAL_TEXT as REAL_TEXT,
    EVENTS_TOKENS as TOKENS,
    events_findings_valid as _valid,
    events_garbage as garbage,
    events_inputs as inputs,
    events_mutated_real as mutated_real,
)




@FUZZ
@given(inputs)
def test_memory_parsers_and_judges_never_raise(t):
    _valid(edac_rules.judge_edac_facts(ed.parse_edac_util(t), {}))
    _valid(edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl(t), {}))
    _valid(edac_rules.judge_edac_facts(ed.parse_edac_sysfs(ed.parse_edac_grep(t)), {}))
    for d in (ed.detect_edac_util, ed.detect_ras_mc_ctl, ed.detect_edac_sysfs):
        assert 0.0 <= d(t) <= 1.0


def test_an_uncorrected_machine_check_read_at_boot_is_left_over_from_before_it():
    """round 21: the kernel logs the banks at CPU init ("Log the machine checks left over from the previous reset",
    arch/x86/kernel/cpu/mce/core.c): an uncorrected record 0.06 s after boot warns (the previous boot may have
    ended in it); the same record an hour into the boot fails."""
    line = ("[{t}] mce: [Hardware Error]: Machine check events logged\n"
            "[{t}] mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408\n"
            "[{t}] mce: [Hardware Error]: TSC 0 ADDR fef4c9e0\n")
    boot = [f for f in explain_text(line.format(t="    0.064265")).findings if f.id == "health.mce"]
    assert [f.verdict for f in boot] == [Verdict.WARN] and "before this boot" in boot[0].message
    later = [f for f in explain_text(line.format(t=" 3600.064265")).findings if f.id == "health.mce"]
    assert [f.verdict for f in later] == [Verdict.FAIL]


def test_mcelog_records_and_client_counts_are_judged_by_severity():
    """Held-out round 56: mcelog's decoded corrected memory error warns naming the socket, channel and DIMM;
    `mcelog --client` warns per DIMM with its 24-hour count (not the "any" sum again); an uncorrected count fails."""
    r = explain_text(text(PUBLIC / "mcelog__corrected-memory-read-ecc-socket1-channel2-dimm2.txt"))
    assert r.kind == "mcelog" and [f.verdict for f in r.findings] == [Verdict.WARN]
    assert "socket 1" in r.findings[0].message and "DIMM 2" in r.findings[0].message
    body = text(PUBLIC / "mcelog-client__socket1-channel3-2654-corrected-errors.txt")
    c = explain_text(body)
    assert c.kind == "mcelog" and c.verdict is Verdict.WARN
    assert not any("CHANNEL any DIMM any" in f.message for f in c.findings)
    assert any("1651 corrected" in f.message and "10 in the last 24 h" in f.message for f in c.findings)
    head, sep, tail = body.rpartition("uncorrected memory errors:\n        0 total")  # the named DIMM's block
    ue = explain_text(head + "uncorrected memory errors:\n        3 total" + tail)
    assert ue.verdict is Verdict.FAIL
