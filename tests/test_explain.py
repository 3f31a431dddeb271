"""explain on pastes as operators make them: several outputs in one paste, prompts, colour, CRLF."""

from __future__ import annotations

from tests.conftest import DATA
from wizard.explain import clean, explain_text
from hypothesis import HealthCheck, given, settings, strategies as st
from tests import strategies
from tests.outputs import findings_ok as _ok
from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from tests.strategies import (
    links_mutated as mutated_real,
    LINKS_TOKENS as TOKENS_LINKS,
    plans,
    tools_mutated as mutated,
    TOOLS_REAL as REAL,
)
from wizard.registry import KINDS

CASES = DATA / "cases"
PUBLIC = DATA / "public"


def case(name: str) -> str:
    return (CASES / name).read_text()


def test_table_and_xid_lines_pasted_together_are_both_judged():
    """`nvidia-smi; dmesg | grep -i xid`: a healthy table must not hide a failing GPU's Xid."""
    table = case("nvidia-smi__8x-h100-hbm3-healthy-with-processes.txt")
    xid = case("dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt")
    for text in (table + xid, xid + table):
        r = explain_text(text)
        assert r.kind is not None and "kernel-log" in r.kind and "nvidia-smi" in r.kind
        assert r.verdict.value == "fail"
        assert any("79" in f.message for f in r.findings if f.verdict.value == "fail")
        assert len(r.to_dict()["parts"]) == 2


def test_two_outputs_back_to_back_without_a_prompt():
    r = explain_text((PUBLIC / "concat__nvidia-smi-t4-580-plus-nvcc-12.8.txt").read_text())
    assert r.kind == "nvidia-smi+nvcc-version"
    ids = {f.id for f in r.findings}
    assert "driver.cuda_toolkit" in ids and "health.gpu_count" in ids


def test_prompts_split_a_session_transcript():
    text = ("root@node7:~# nvidia-smi\n" + case("nvidia-smi__driver-not-loaded-failed-to-communicate.txt")
            + "root@node7:~# cat /proc/cmdline\n" + case("proc-cmdline__iommu-pt.txt"))
    r = explain_text(text)
    assert r.kind == "nvidia-smi+proc-cmdline" and r.verdict.value == "fail"
    assert any(f.id == "bios.iommu" and f.verdict.value == "pass" for f in r.findings)


def test_terminal_colour_and_crlf_do_not_change_the_verdict():
    plain = case("nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt")
    coloured = plain.replace("Pending", "\x1b[01;31m\x1b[KPending\x1b[m\x1b[K").replace("\n", "\r\n")
    assert clean(coloured) == plain
    a, b = explain_text(plain), explain_text(coloured)
    assert a.verdict == b.verdict and a.verdict.value == "fail"
    assert [(f.id, f.verdict) for f in a.findings] == [(f.id, f.verdict) for f in b.findings]


def test_an_unrecognised_part_is_said_not_dropped():
    text = case("proc-cmdline__iommu-pt.txt") + "$ uptime\n 10:00  up 3 days,  2 users\nload average: 0.1 0.2 0.3\nsomething else entirely\n"
    r = explain_text(text)
    assert any(f.id == "explain.unrecognised_part" for f in r.findings)
    assert r.verdict.value == "unknown"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_explain_on_mutated_real_outputs(t: str) -> None:
    e = explain_text(t)
    _ok(e.findings)
    assert e.findings


def test_real_inputs_found() -> None:
    assert len(REAL) >= 30


def test_kinds_registered_and_detect_my_public_and_synthetic_files():
    kinds = KINDS
    mine = {"lspci-vv", "lspci-iommu-groups", "nvidia-smi-topo-m", "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-status",
            "nvidia-smi-nvlink-errors", "dcgmi-nvlink-status"}
    assert mine <= set(kinds)
    expected = {"lspci-vv": "lspci-vv", "lspci-acsctl-grep": "lspci-vv", "lspci-iommu-groups": "lspci-iommu-groups", "nvidia-smi-topo__": "nvidia-smi-topo-m",
                "nvidia-smi-topo-p2p": "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-s": "nvidia-smi-nvlink-status",
                "nvidia-smi-nvlink-e": "nvidia-smi-nvlink-errors", "dcgmi-nvlink": "dcgmi-nvlink-status"}
    files = [p for d in (PUBLIC, SYNTHETIC) for p in sorted(d.iterdir())  # by name prefix: other areas' files
             if p.name.removeprefix("synthetic_").startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink",
                                                              "dcgmi-nvlink"))]  # may mention nvlink too
    assert len(files) >= 20
    for p in files:
        want = next(v for k, v in expected.items() if k in p.name)
        assert explain_text(text(p)).kind == want, p.name


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


garbage = strategies.garbage(TOKENS_LINKS, max_size=1500, max_tokens=80)


inputs = st.one_of(garbage, mutated_real())


@FUZZ
@given(inputs, plans)
def test_explain_never_raises_on_my_inputs(t, plan):
    e = explain_text(t, expectations=plan)
    assert e.findings and not any(x.id.startswith("explain.") and "crashed" in x.message for x in e.findings)
