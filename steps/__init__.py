"""The step catalogue: every stage of a bring-up, in the design card's order.

plan & sizing -> grounding & install order -> BIOS -> OS -> driver & CUDA -> health ->
validate one GPU -> validate the node -> validate several nodes -> report.

Each module defines one :class:`wizard.model.Stage`. Step ids are stable: the store keys on them.
"""

from __future__ import annotations

from wizard.model import Stage, Step

from steps import bios, driver, grounding, health, multinode, node, onegpu, osstage, plan, report

STAGES: tuple[Stage, ...] = (
    plan.STAGE, grounding.STAGE, bios.STAGE, osstage.STAGE, driver.STAGE, health.STAGE,
    onegpu.STAGE, node.STAGE, multinode.STAGE, report.STAGE,
)


def all_steps() -> list[Step]:
    return [s for st in STAGES for s in st.steps]


def step_by_id(step_id: str) -> Step:
    for s in all_steps():
        if s.id == step_id:
            return s
    raise KeyError(step_id)


def stage_by_id(stage_id: str) -> Stage:
    for st in STAGES:
        if st.id == stage_id:
            return st
    raise KeyError(stage_id)


def _validate() -> None:
    seen: set[str] = set()
    for st in STAGES:
        for s in st.steps:
            if s.id in seen:
                raise ValueError(f"duplicate step id {s.id}")
            if s.stage_id != st.id:
                raise ValueError(f"step {s.id} is not in stage {st.id}")
            seen.add(s.id)
    for s in all_steps():
        for r in s.requires:
            if r not in seen:
                raise ValueError(f"step {s.id} requires unknown step {r}")


_validate()
