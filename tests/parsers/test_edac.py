"""Tests of wizard/parsers/edac.py."""

from __future__ import annotations

from wizard.parsers import edac as ed

from tests.probe_data import CASES, PUBLIC, text


def test_edac_util_case_fields():
    f = ed.parse_edac_util(text(CASES / "edac-util__31-corrected-errors-dimm.txt"))
    (c,) = f.counts
    assert (c.mc, c.where, c.label, c.ce, c.ue) == ("mc1", "csrow1", "CPU_SrcID#1_Channel#1_DIMM#0", 31, None)


def test_ras_sections():
    f = ed.parse_ras_mc_ctl(text(CASES / "ras-mc-ctl-summary__1-corrected-mce.txt"))
    (it,) = f.items
    assert (it.section, it.severity, it.count) == ("mce", "ce", 1)
    assert len(f.clean) == 6 and not f.unread
    f = ed.parse_ras_mc_ctl(text(PUBLIC / "ras-mc-ctl__rasdaemon-67-error-count-5539-ce.txt"))
    hits = [i for i in f.items if i.severity]
    assert [(i.label, i.count) for i in hits] == [("CPU_SrcID#1_Ha#0_Chan#0_DIMM#0", 5539)]


def test_a_controller_count_no_machine_has_allocates_nothing():
    """fuzz (issue 11): "EDAC drivers are loaded. N MC" made N names (a mutated N of 99,999,999: 6 GB); 2,000,000 here."""
    import tracemalloc

    tracemalloc.start()
    try:
        f = ed.parse_edac_util("EDAC drivers are loaded. 2000000 MC detected\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not f.controllers and peak < 2 ** 20
    assert ed.parse_edac_util("EDAC drivers are loaded. 2 MC detected\n").controllers == {"mc0", "mc1"}
