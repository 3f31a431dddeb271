"""The catalogue: every stage of the design card, in order, each walkable."""

import re

import steps
from wizard.engine import is_checked
from wizard.model import Step
from wizard.registry import PROBES as REGISTRY

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
            assert is_checked(s) or s.action is not None or s.manual, s.id
            if s.manual:
                assert s.instructions, f"{s.id}: a manual step needs instructions"


def test_step_ids_unique_and_probes_known():
    from wizard.registry import RULES

    ids = [s.id for s in steps.all_steps()]
    assert len(ids) == len(set(ids))
    for r in RULES:
        assert r.step in ids, f"rule {r.id} joins unknown step {r.step}"
        for p in r.probes:
            assert p in REGISTRY, f"{r.id} uses unknown probe {p}"
    for s in steps.all_steps():
        if s.action is not None:
            for p in s.action.probes:
                assert p in REGISTRY


SOURCE = re.compile(
    r"(https?://|docs\.|\.(com|org|io|html)\b|arxiv|github|[A-Za-z]+/[A-Za-z0-9_.-]+#\d+|\(8\)|man page|"
    r"\bGCM\b|Azure HPC health checks|Azure's|DCGM|Health Validation|nccl-tests|NCCL troubleshooting|SMBIOS|NVML|"
    r"installation guide|user guide|service manual|Verda|Autopilot|NVSentinel|Kubernetes|kubernetes\.io|"
    r"nvidia-bug-report|sosreport|Xid catalog)")


def test_why_texts_name_a_source():
    """Every step says where its rule comes from: a document, a spec, a named tool or a paper
    the operator can look up; not just the word "guide" or "NVIDIA"."""
    own = {"report.handover"}  # describes bringup's own build record: there is no outside rule to cite
    for s in steps.all_steps():
        assert s.id in own or SOURCE.search(s.why), f"{s.id}: no followable source in its why text"
        assert not re.search(r"checks-catalogue|knowledge base|knowledge\.md|\bAzNHC\b|\bVerda\b", s.why), s.id


def test_no_known_wrong_advice_in_catalogue():
    """knowledge.md §9: advice bringup must never give (each entry is a phrase that would give it)."""
    text = " ".join(f"{s.title} {s.why} {s.instructions}" for s in steps.all_steps()).lower()
    never = (
        "525.60.13", "cudnn 8.6",                                   # 1: outdated version chain
        "must match", "must be equal",                               # 2: nvcc vs nvidia-smi CUDA
        "5.15 is the only", "only choice", "6.2 breaks",             # 3: Ubuntu 22.04 + 5.15 only
        "disable resizable bar", "resizable bar off", "rebar off",   # 4
        "iommu must be", "vt-d must be", "enable vt-d",              # 5: IOMMU required for nvidia-smi
        "nccl_socket_timeout",                                       # 6: no such variable
        "export nccl_async_error_handling",                          # 7: renamed TORCH_NCCL_...
        "nccl_min_nrings",                                           # 8: legacy alias
        "nccl_p2p_disable=1", "nccl_shm_disable=1", "nccl_ib_disable=1", ".bashrc",  # 9
        "1.5x gpu memory", "2x gpu memory", "1.5× gpu memory",       # 10: RAM ratio as a rule
        "x 1.3", "× 1.3",                                             # 11: PSU formula as complete sizing
        "barrier=0", "nobarrier",                                    # 12
        "100% cpu", "pegs the cpu",                                  # 13: mdadm RAID0 claim
        "bitsandbytes-cuda",                                         # 14
        "torch==2.0.1", "2.0.1+cu118",                               # 15
        "trust_remote_code=true",                                    # 16
        "nvidia-smi -r ",                                            # 17: reset as a routine fix
        "-lgc", "nvidia-smi -pl",                                    # 18: clock locks as a cooling fix
        "ddr4-3200",                                                 # 21
        "1.14 s",                                                    # 22: anecdote as a target
    )
    for bad in never:
        assert bad not in text, bad


def test_instructions_that_ask_for_a_plan_answer_give_way_once_it_is_recorded():
    """Walk 18: "record gpu_count in the plan" stayed on the step with gpu_count=8 set. A step names the answers its
    instructions ask for; with one of them recorded the screen shows the other text. Every step that names keys has
    both texts."""
    step = steps.step_by_id("health.gpu_pci")
    assert "record the expected count" in step.instructions_for({})
    assert "counted against the plan's gpu_count" in step.instructions_for({"gpu_count": 8})
    assert steps.step_by_id("os.filesystem").instructions_for({"data_path": ""}).startswith("Record the data path")
    for s in steps.all_steps():
        assert bool(s.plan_keys) == bool(s.instructions_when_set), s.id


def test_the_report_action_says_the_report_is_written_in_english():
    """Walk 38 #7: the Chinese step and action did not say the report comes out in English (only `report --help` did)."""
    import steps
    from wizard.i18n import set_language, _

    action = next(s for st in steps.STAGES for s in st.steps if s.id == "report.document").action
    assert "in English" in action.description
    try:
        set_language("zh_CN")
        assert "英文" in _(action.description)
    finally:
        set_language("en")
