"""wizard.facts: a run's outputs are parsed once per (probe, parser) and shared by every rule."""

from __future__ import annotations

from pathlib import Path

import steps
from wizard import registry
from wizard.capture import load_bundle
from wizard.engine import checked_steps, judge, probes_of, run_checks
from wizard.facts import Facts, facts_of
from wizard.probes import ProbeOutput

DATA = Path(__file__).parent / "data"
CASES = DATA / "cases"

# Real outputs of GPU servers (tests/data/cases, provenance in tests/data/PROVENANCE.md) standing in for
# the probes that read the same commands, so the GPU rules run and share their parsers as on a real node.
GPU_NODE = {
    "nvidia_smi_qx": ("nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml", "$ nvidia-smi -q -x"),
    "lspci_vvv": ("lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt", "$ lspci -D -nn -vvv"),
    "nvidia_smi_topo_m": ("nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt", "$ nvidia-smi topo -m"),
    "kernel_log_journal": ("dmesg__a100-xid63-row-remapper-new-row-marked.txt", "$ journalctl -k -b"),
    "cmdline": ("proc-cmdline__iommu-pt.txt", "/proc/cmdline"),
    "nvidia_driver_version": ("proc-driver-nvidia-version__open-565.txt", "/proc/driver/nvidia/version"),
    "lscpu": ("lscpu__epyc-8434p-nps8-1socket.txt", "$ lscpu"),
    "nvcc_version": ("nvcc-version__cuda-12.4-h100-node.txt", "$ nvcc --version"),
}


def _gpu_node_outputs() -> dict[str, ProbeOutput]:
    out = {}
    for probe, (name, source) in GPU_NODE.items():
        out[probe] = ProbeOutput(name=probe, source=source, text=(CASES / name).read_text(errors="replace"), rc=0)
    return out


def test_parse_runs_once_and_every_rule_gets_the_same_facts():
    calls = []

    def parser(out: ProbeOutput) -> tuple[str, ...]:
        calls.append(out.name)
        return tuple(out.text.split())

    facts = Facts({"x": ProbeOutput("x", "$ x", text="a b")})
    first = facts.parse("x", parser, on="output")
    assert facts.parse("x", parser, on="output") is first and first == ("a", "b")
    assert calls == ["x"] and facts.parse_counts[("x", parser.__qualname__)] == 1
    assert facts.parse("absent", parser, on="output") is None and calls == ["x"]  # a probe not collected is None, not parsed
    assert facts.parse_text("x", str.upper) == "A B"
    assert facts_of(facts) is facts and isinstance(facts_of({"x": facts["x"]}), Facts)
    assert dict(facts) == {"x": facts["x"]}  # still the mapping of raw outputs (evidence)


def _all_counts(outputs: dict[str, ProbeOutput]) -> Facts:
    facts = Facts(outputs)
    judge(checked_steps(steps.STAGES), facts, {"gpu_count": 8})
    return facts


def test_one_full_check_of_a_bundle_parses_each_probe_once_per_parser():
    host, _ = load_bundle(DATA / "bundles" / "devvm.tar.gz")
    import asyncio

    sel = checked_steps(steps.STAGES)
    facts_seen = []
    real_judge = judge

    def spy(s, outputs, plan):
        f = Facts(outputs)
        facts_seen.append(f)
        return real_judge(s, f, plan)

    import wizard.engine as engine

    engine.judge = spy
    try:
        asyncio.run(run_checks(host, sel, {}))
    finally:
        engine.judge = real_judge
    (facts,) = facts_seen
    assert facts.parse_counts, "no rule read its facts through the run's Facts"
    twice = {k: n for k, n in facts.parse_counts.items() if n > 1}
    assert not twice, f"parsed more than once (rules ask with different on=; use the one in registry.PARSERS): {twice}"


def test_gpu_node_outputs_parse_each_probe_once_although_many_rules_read_them():
    facts = _all_counts(_gpu_node_outputs())
    assert all(n == 1 for n in facts.parse_counts.values()), {k: n for k, n in facts.parse_counts.items() if n > 1}
    # the nvidia-smi document and the lspci listing feed several rules each, yet were parsed once
    read = {probe for probe, _ in facts.parse_counts}
    assert {"nvidia_smi_qx", "lspci_vvv", "kernel_log_journal"} <= read


def test_every_parser_a_run_uses_is_declared_in_the_registry():
    facts = _all_counts(_gpu_node_outputs())
    host, _ = load_bundle(DATA / "bundles" / "devvm.tar.gz")
    import asyncio

    _, outputs = asyncio.run(run_checks(host, checked_steps(steps.STAGES), {}))
    facts2 = _all_counts(dict(outputs))
    declared = {(probe, p.fn, p.on) for probe, parsers in registry.PARSERS.items() for p in parsers}
    used = {key for f in (facts, facts2) for key in f._cache}  # (probe, parser, what it reads)
    assert used <= declared, sorted((probe, fn.__qualname__, on) for probe, fn, on in used - declared)


def test_parsers_are_declared_for_known_probes_and_read_a_known_input():
    from wizard.facts import INPUTS

    for probe, parsers in registry.PARSERS.items():
        assert probe in registry.PROBES or probe in ("dcgmi_nvlink", "lspci_iommu_groups", "nvidia_smi_q"), probe
        for p in parsers:
            assert p.on in INPUTS and p.fn.__module__.startswith("wizard.parsers."), (probe, p)


def test_the_engine_collects_the_probes_of_registry_rules_too():
    names = probes_of(checked_steps(steps.STAGES))
    assert len(names) == len(set(names))
    for r in registry.RULES:
        assert set(r.probes) <= set(names), r.id


# Parsed facts are shared by every rule of a run, so they are frozen dataclasses: a rule that wants a changed
# copy uses dataclasses.replace. Dataclasses of wizard/parsers/* left mutable, each with the reason:
MUTABLE_PARSER_DATACLASSES: dict[str, str] = {
    # none today: every dataclass a parser defines is a fact (or part of one) that rules read
}


def _parser_dataclasses() -> list[type]:
    import dataclasses
    import importlib
    import pkgutil

    import wizard.parsers

    found = []
    for info in pkgutil.iter_modules(wizard.parsers.__path__):
        mod = importlib.import_module(f"wizard.parsers.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__:
                found.append(obj)
    return found


def test_every_dataclass_a_parser_defines_is_frozen():
    classes = _parser_dataclasses()
    assert len(classes) > 40, [c.__qualname__ for c in classes]  # the walk found the parsers' facts
    names = {f"{c.__module__}.{c.__qualname__}" for c in classes}
    assert set(MUTABLE_PARSER_DATACLASSES) <= names, sorted(set(MUTABLE_PARSER_DATACLASSES) - names)
    mutable = sorted(n for c in classes if not c.__dataclass_params__.frozen  # type: ignore[attr-defined]
                     for n in [f"{c.__module__}.{c.__qualname__}"] if n not in MUTABLE_PARSER_DATACLASSES)
    assert not mutable, mutable


def test_a_rule_cannot_rebind_the_facts_it_shares():
    import dataclasses

    import pytest

    facts = facts_of(_gpu_node_outputs())
    from wizard.parsers.smi import parse_smi_xml

    doc = facts.parse("nvidia_smi_qx", parse_smi_xml, on="text")
    assert doc is not None and doc.gpus
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.gpus[0].bus_id = "00000000:00:00.0"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.complete = False  # type: ignore[misc]
    copy = dataclasses.replace(doc.gpus[0], bus_id="00000000:00:00.0")  # the way to a changed copy
    assert copy.bus_id != doc.gpus[0].bus_id


def test_only_parsers_write_the_fields_of_frozen_facts():
    # the parsers' one builder helper (wizard/parsers/_frozen.py) is used by parsers only, and nothing
    # outside it goes around frozen with object.__setattr__
    root = Path(__file__).resolve().parents[1]
    for path in sorted([*root.joinpath("wizard").rglob("*.py"), *root.joinpath("steps").rglob("*.py"),
                        *root.joinpath("screens").rglob("*.py")]):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        if rel != "wizard/parsers/_frozen.py":
            assert "object.__setattr__" not in text, rel
        if "build_set" in text:
            assert rel.startswith("wizard/parsers/"), rel


def test_the_nvidia_smi_document_is_judged_once_per_run_for_all_health_steps(monkeypatch):
    """Seven health steps select their concerns from one nvidia-smi document: it is judged once per run."""
    from wizard.rules import smi

    calls = []
    real = smi.judge_doc

    def counting(doc, plan=None, before_tests=False):
        calls.append(doc)
        return real(doc, plan, before_tests)

    monkeypatch.setattr(smi, "judge_doc", counting)
    r = judge(checked_steps(steps.STAGES), Facts(_gpu_node_outputs()), {"gpu_count": 8})
    assert len(calls) == 1
    # the plan answers the one judgement read count as read by every step that selects from it (a later change of
    # gpu_count names them all to check again)
    assert all(r.plan_read[s] == {"gpu_count": 8} for s in ("health.gpu_count", "health.ecc", "health.row_remap"))
