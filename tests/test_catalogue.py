"""The catalogue: every stage of the design card, in order, each walkable."""

import steps
from wizard.model import Step
from wizard.probes import REGISTRY

CARD_ORDER = ["plan", "grounding", "bios", "os", "driver", "health", "gpu", "node", "multinode", "report"]


def test_stages_in_card_order():
    assert [st.id for st in steps.STAGES] == CARD_ORDER


def test_every_stage_has_steps_and_every_step_is_doable():
    for st in steps.STAGES:
        assert st.steps, st.id
        for s in st.steps:
            assert isinstance(s, Step)
            assert s.id.startswith(st.id + "."), s.id
            assert s.title and s.why, s.id
            # the operator must be able to finish it: a check, an action, or a manual confirm
            assert s.check is not None or s.action is not None or s.manual, s.id
            if s.manual:
                assert s.instructions, f"{s.id}: a manual step needs instructions"


def test_step_ids_unique_and_probes_known():
    ids = [s.id for s in steps.all_steps()]
    assert len(ids) == len(set(ids))
    for s in steps.all_steps():
        for p in s.probes:
            assert p in REGISTRY, f"{s.id} uses unknown probe {p}"
        if s.action is not None:
            for p in s.action.probes:
                assert p in REGISTRY


def test_why_texts_name_a_source():
    # every step explains itself with where the rule comes from (vendor doc, spec, tool, paper)
    markers = ("source", "sources", "checks-catalogue", "docs.", "guide", "manual", "nvidia", "paper",
               "lspci", "knowledge base", "smbios", "nvml", "design.md")
    for s in steps.all_steps():
        assert any(m in s.why.lower() for m in markers), s.id


def test_no_known_wrong_advice_in_catalogue():
    """knowledge.md §9: advice bringup must never give."""
    text = " ".join(f"{s.title} {s.why} {s.instructions}" for s in steps.all_steps()).lower()
    for bad in ("ncci_socket_timeout", "nccl_socket_timeout", "barrier=0", "nobarrier",
                "bitsandbytes-cuda", "must match", "disable resizable bar"):
        assert bad not in text, bad
