"""Tests of wizard/install/catalog.py."""

from __future__ import annotations

import datetime as dt

import pytest
from wizard.install import catalog


@pytest.mark.parametrize("did, arch", [
    ("1db4", "Volta"), ("1c82", "Pascal"), ("1eb8", "Turing"), ("20b2", "Ampere"), ("26b9", "Ada Lovelace"),
    ("2330", "Hopper"), ("2335", "Hopper"), ("2342", "Grace Hopper"), ("2901", "Blackwell"), ("2b85", "Blackwell"),
    ("3182", "Blackwell"), ("102d", "Kepler"),
])
def test_architecture_of_device_ids(did, arch):
    a = catalog.architecture_of(did)
    assert a is not None and a.architecture == arch


def test_unknown_device_id_has_no_architecture():
    assert catalog.architecture_of("0001") is None and catalog.architecture_of("zzzz") is None


D2026 = dt.date(2026, 11, 30)


@pytest.mark.parametrize("archs, flavour, branch", [
    (["Volta"], "proprietary", 580), (["Pascal"], "proprietary", 580), (["Turing"], "open", 580),
    (["Ampere"], "open", 580), (["Ada Lovelace"], "open", 580), (["Hopper"], "open", 580),
    (["Grace Hopper"], "open", 580), (["Blackwell"], "open", 580),
    (["Volta", "Turing"], "proprietary", 580),  # mixed old + new: proprietary
])
def test_recommendation_per_architecture_as_of_2026_11_30(archs, flavour, branch):
    r = catalog.recommend(archs, D2026)
    assert (r.flavour, r.branch.branch if r.branch else None) == (flavour, branch)
    assert not r.conflict
    # R535 (June 2026) and R570 (Feb 2026) are past end of life on this date: never offered
    assert all(b.branch not in (535, 570) for b in r.alternatives)


def test_blackwell_with_volta_has_no_single_flavour():
    r = catalog.recommend(["Blackwell", "Volta"], D2026)
    assert r.flavour == "" and r.branch is None and "open" in r.conflict


def test_kepler_has_no_supported_branch():
    r = catalog.recommend(["Kepler"], D2026)
    assert r.flavour == "proprietary" and r.branch is None


def test_after_r580_end_of_life_the_next_ltsb_is_chosen_and_volta_is_stranded():
    later = dt.date(2028, 6, 1)  # R580: End of Life June 2028 -> EOL from the first of the month
    assert catalog.branches()[580].state(later) == "eol"
    assert catalog.branches()[580].state(dt.date(2028, 5, 31)) == "supported"
    assert catalog.recommend(["Hopper"], later).branch.branch == 620
    assert catalog.recommend(["Volta"], later).branch is None  # R620 ships open modules only, Volta needs proprietary


def test_branch_states_on_fixed_today():
    b = catalog.branches()
    assert b[535].state(D2026) == "eol" and b[570].state(D2026) == "eol" and b[610].state(D2026) == "eol"
    assert b[590].state(D2026) == "nfb" and b[595].state(D2026) == "supported"
    assert b[535].state(dt.date(2026, 5, 31)) == "supported"


def test_branch_data_is_sourced_and_consistent():
    rows = catalog.branches()
    assert all(b.source and b.as_of for b in rows.values())
    assert all(b.designation in ("", "LTSB", "PB", "NFB") for b in rows.values())
    prefs = [b.prefer for b in rows.values() if b.prefer is not None]
    assert len(prefs) == len(set(prefs))
    assert all(r.source for r in catalog.arch_rules().values())


def test_architecture_caps_are_sourced_data():
    rules = catalog.arch_rules()
    assert {a for a, r in rules.items() if r.max_cuda_toolkit == "12.9"} == {"Maxwell", "Pascal", "Volta"}
    assert all("Navigating GPU Architecture Support" in rules[a].source for a in ("Maxwell", "Pascal", "Volta"))
    assert rules["Hopper"].max_cuda_toolkit == "" and rules["Turing"].max_cuda_toolkit == ""


def test_platform_default_branch_docstring_has_the_matrix_date():
    from wizard.rules import os as platform

    doc = platform.__dict__.get("DEFAULT_DRIVER_BRANCH") and open(platform.__file__).read()
    assert "June 2028" in doc and "end of life\nAugust 2028" not in doc
    assert catalog.branches()[580].eol == "2028-06"
