"""Tests of wizard/install/catalog.py."""

from __future__ import annotations

import datetime as dt
import re

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


def _sizing_names_with_datasheet_arch() -> list[tuple[str, str]]:
    """Every GPU name `bringup size --gpu ?` lists, with the architecture its datasheet row gives
    (assets/gpu_specs.csv's ``arch`` column; the V100 rows stand for a 16 GB and a 32 GB name)."""
    from wizard import sizing
    from wizard.data import table

    arch = {re.sub(r"\s*\(.*?\)\s*", " ", r["gpu"]).strip(): r["arch"] for r in table("gpu_specs.csv")}
    arch.update({r["gpu"]: r["arch"] for r in table("gpu_specs.csv")})
    out = []
    for g in sizing.gpu_specs():
        a = arch.get(g.name) or next(v for k, v in arch.items() if g.name.startswith(k))
        out.append((g.name, a))
    return out


def test_every_sizing_gpu_name_has_an_architecture_and_a_driver():
    """Walk 24: 'A100 80GB SXM4' (and four more names of the sizing list) had no architecture, so driver.branch sent
    the operator back to `bringup size --gpu ?` in a loop. Each name resolves to its datasheet's architecture and
    gets a recommended branch and flavour."""
    from tests.outputs import pci
    from wizard.model import Verdict
    from wizard.rules import driver_install as ds

    names = _sizing_names_with_datasheet_arch()
    assert len(names) >= 18 and {"A100 40GB PCIe", "A100 40GB SXM4", "A100 80GB SXM4", "H200 NVL",
                                 "B200 (HGX/DGX B200)"} <= {n for n, _ in names}
    for name, arch in names:
        gs = catalog.gpus_of({}, {"gpu_model": name})
        assert gs.source == "plan" and [g.arch.architecture for g in gs.gpus if g.arch] == [arch], (name, gs)
        rec = catalog.recommend([arch], D2026)
        assert rec.branch is not None and rec.flavour in ("open", "proprietary"), name
        (f,) = [f for f in ds.branch_choice({"pci": pci()}, {"today": D2026.isoformat(), "gpu_model": name})
                if f.id == "driver.branch"]
        assert f.verdict is Verdict.PASS and arch in f.message and "in the plan" in f.message, (name, f.message)
    expect = {"A100 80GB SXM4": "Ampere", "A100 40GB SXM4": "Ampere", "A100 40GB PCIe": "Ampere", "H200 NVL": "Hopper",
              "B200 (HGX/DGX B200)": "Blackwell"}
    assert {n: a for n, a in names if n in expect} == expect


def test_plan_model_matches_a_pci_name_as_a_whole_word():
    """'L4' is the L4, not the 'NVIDIA L40' whose name contains it."""
    gs = catalog.gpus_of({}, {"gpu_model": "L4"})
    assert gs.gpus[0].arch is not None and gs.gpus[0].arch.architecture == "Ada Lovelace"
    assert "L40" not in gs.evidence[0]
    assert catalog.gpus_of({}, {"gpu_model": "no such gpu"}).gpus == []
