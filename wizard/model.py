"""The vocabulary of bringup: verdicts, step statuses, findings, steps and stages.

Verdict order and exit codes follow DESIGN.md's JSON contract and the health-check convention
used by LBNL NHC and Meta GCM: exit 0 = all pass (or only skips), 1 = warn or unknown,
2 = fail.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from wizard.actions import ActionSpec
    from wizard.probes import ProbeOutput


class Verdict(str, enum.Enum):
    """The outcome of one finding, or the worst of several.

    ``skip`` means "not applicable here"; ``unknown`` means "could not tell" (the probe failed,
    or its output could not be read) and is never silently counted as a pass.
    """

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    UNKNOWN = "unknown"

    def __str__(self) -> str:  # so f-strings print "fail", not "Verdict.FAIL"
        return self.value

    @property
    def rank(self) -> int:
        """Severity rank: fail (4) > warn (3) > unknown (2) > pass (1) > skip (0)."""
        return _RANK[self]

    @property
    def exit_code(self) -> int:
        """Process exit status for this overall verdict: 0 pass/skip, 1 warn/unknown, 2 fail."""
        return {Verdict.FAIL: 2, Verdict.WARN: 1, Verdict.UNKNOWN: 1}.get(self, 0)


_RANK = {Verdict.SKIP: 0, Verdict.PASS: 1, Verdict.UNKNOWN: 2, Verdict.WARN: 3, Verdict.FAIL: 4}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The most severe verdict of ``verdicts``; ``skip`` for an empty iterable."""
    result = Verdict.SKIP
    for v in verdicts:
        if v.rank > result.rank:
            result = v
    return result


class StepStatus(str, enum.Enum):
    """Where one step of a build stands (DESIGN.md "Stages and steps")."""

    PENDING = "pending"
    RUNNING = "running"
    PASSED = "passed"  # verified by a check (or its action succeeded) with no warning
    CONFIRMED = "confirmed"  # a manual step the operator confirmed
    FAILED = "failed"
    SKIPPED = "skipped"  # with a reason
    INTERRUPTED = "interrupted"  # was running when the process died
    WARNED = "warned"  # checked, and its worst finding is a warning: done, never shown as passed
    CPU_ONLY = "cpu-only"  # a GPU validation ran on the CPU: the software path works, the GPU is not validated

    def __str__(self) -> str:
        return self.value

    @property
    def done(self) -> bool:
        """True when the step needs nothing more to move on: passed, confirmed, skipped, or warned (checked,
        with warnings the operator can read; a stage with a warned step is ``warned``, not ``passed``).
        ``cpu-only`` is not done: the GPU it is about was never measured."""
        return self in (StepStatus.PASSED, StepStatus.CONFIRMED, StepStatus.SKIPPED, StepStatus.WARNED)



DIRECTIONS = ("at_least", "at_most", "equal")
"""How a :class:`Measure`'s value is held to its threshold: ``at_least`` (value >= threshold passes: a floor),
``at_most`` (value <= threshold passes: a ceiling, e.g. an error count), ``equal`` (value == threshold)."""

_DIRECTION_SIGN = {"at_least": "\u2265", "at_most": "\u2264", "equal": "="}


def _num_text(v: float) -> str:
    """A figure as a report prints it: integers with thousands separators, else up to 4 significant digits."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


@dataclass(frozen=True)
class Measure:
    """A number a finding judged against a threshold, in structured form (what the report shows as "measured
    against its threshold").

    Attributes:
        value: what was measured, in ``unit`` (a finite number).
        threshold: the limit the verdict compared it with, in ``unit``; ``None`` when the figure is shown as
            evidence without a limit (e.g. a BAR1 size).
        unit: ``GB/s``, ``GT/s``, ``lanes``, ``°C``, ``W``, ``GiB``, ``TFLOPS``, ``count``, ... (free text).
        direction: one of :data:`DIRECTIONS`: the side of ``threshold`` that passes, limit included (a rule whose
            comparison is strict on integer readings gives the next integer as its threshold).
        label: what was measured, e.g. ``"busbw at 8 GiB"``; may be empty.

    Raises:
        ValueError: ``direction`` is not one of :data:`DIRECTIONS`, or ``value``/``threshold`` is not a finite
            number.
    """

    value: float
    threshold: float | None
    unit: str
    direction: str = "at_least"
    label: str = ""

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"measure direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}")
        for name in ("value", "threshold"):
            x = getattr(self, name)
            if x is None and name == "threshold":
                continue
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise ValueError(f"measure {name} {x!r} is not a finite number")

    @property
    def met(self) -> bool | None:
        """True when the value is on the passing side of the threshold (limit included); ``None`` without one."""
        if self.threshold is None:
            return None
        if self.direction == "at_least":
            return self.value >= self.threshold
        if self.direction == "at_most":
            return self.value <= self.threshold
        return self.value == self.threshold

    @property
    def margin(self) -> float:
        """How far the value is on the passing side of its threshold, in ``unit`` (negative: on the failing
        side); ``inf`` without a threshold. The smallest margin of several is the tightest (:func:`tightest`)."""
        if self.threshold is None:
            return math.inf
        if self.direction == "at_least":
            return self.value - self.threshold
        if self.direction == "at_most":
            return self.threshold - self.value
        return -abs(self.value - self.threshold)

    def text(self) -> str:
        """One line for people: ``"busbw at 8 GiB: 182.4 GB/s, expected \u2265 150 GB/s"`` (``"8 lanes, expected
        \u2265 16 lanes"`` without a label; just the value and unit without a threshold)."""
        unit = f" {self.unit}" if self.unit else ""
        s = f"{self.label}: " if self.label else ""
        s += f"{_num_text(self.value)}{unit}"
        if self.threshold is not None:
            s += f", expected {_DIRECTION_SIGN[self.direction]} {_num_text(self.threshold)}{unit}"
        return s

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "threshold", "unit", "direction", "label"}`` (the JSON contract's ``measured`` object)."""
        return {"value": float(self.value), "threshold": None if self.threshold is None else float(self.threshold),
                "unit": self.unit, "direction": self.direction, "label": self.label}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Measure":
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``d`` is not a mapping, lacks ``value``/``unit``/``direction``, or holds a value of the
                wrong type (a non-numeric value or threshold, an unknown direction).
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"a measured value must be an object, not {type(d).__name__}")
        missing = [k for k in ("value", "unit", "direction") if k not in d]
        if missing:
            raise ValueError(f"a measured value lacks {', '.join(missing)}")
        for k in ("unit", "direction", "label"):
            if k in d and not isinstance(d[k], str):
                raise ValueError(f"measured {k} {d[k]!r} is not a string")
        return cls(value=d["value"], threshold=d.get("threshold"), unit=d["unit"], direction=d["direction"],
                   label=d.get("label", ""))


def measure(value: float | int | None, threshold: float | int | None, unit: str, direction: str = "at_least",
            label: str = "") -> Measure | None:
    """A :class:`Measure`, or ``None`` when ``value`` is missing or not a finite number (a rule passes what it
    read; nothing is made up). A non-finite ``threshold`` is dropped (shown without a limit).

    Raises:
        ValueError: an unknown ``direction``.
    """
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        if direction not in DIRECTIONS:
            raise ValueError(f"measure direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
        return None
    if threshold is not None and not math.isfinite(threshold):
        threshold = None
    return Measure(value, threshold, unit, direction, label)


def tightest(measures: Iterable[Measure | None]) -> Measure | None:
    """Of several measures of one kind (one finding about several GPUs or links), the one nearest to failing
    its threshold (smallest :attr:`Measure.margin`; the first on a tie); ``None`` when there is none."""
    best: Measure | None = None
    for m in measures:
        if m is not None and (best is None or m.margin < best.margin):
            best = m
    return best


WHOLE_MACHINE_SUBJECTS = ("", "host", "node", "input")
"""Subjects that name the machine (or the pasted input) as a whole: not printed before a finding's message."""


def subject_prefix(subject: str, message: str) -> str:
    """What the CLI and the screens print before a finding's message: ``"<subject>: "`` when the subject names a part
    (a GPU, a mount, a port) the message does not already name, else nothing. A group of GPUs ("8 GPUs: GPU 0 (...);
    ...") whose message speaks of the whole group ("for all 8 GPUs", "on 8 GPUs") is not listed again before it (walk
    41 #13: eight bus ids and serials before each one-line pass); the subject itself stays whole (JSON, fleet)."""
    import re

    if subject in WHOLE_MACHINE_SUBJECTS or subject in message:
        return ""
    m = re.match(r"(\d+) GPUs: ", subject)
    if m and re.search(rf"\ball {m.group(1)}\b|\b{m.group(1)} GPUs\b", message) \
            and not re.search(rf"\b{m.group(1)} of \d+", message):
        return ""
    return f"{subject}: "


@dataclass(frozen=True)
class Finding:
    """One judgement about the machine: the unit the UI, the JSON output and the report show.

    Attributes:
        id: stable dotted id, e.g. ``health.gpu_pci`` (scripts key on it).
        verdict: see :class:`Verdict`.
        message: one line, naming the subject (GPU index and PCI bus id where relevant).
        subject: what the finding is about ("host", "GPU 3 (0000:9b:00.0)", "/", ...).
        evidence: the raw lines of probe output the verdict rests on (never rewritten).
        remedy: what to do next; empty for a pass.
        source: where the threshold or rule comes from (vendor doc, spec, tool).
        step: the catalogue step that produced it (filled in by the engine).
        key: for a finding about one past event (an Xid, an AER line), a stable key the operator
            can acknowledge with a reason (``bringup ack KEY``); empty otherwise.
        measured: the number the verdict compared with a threshold (:class:`Measure`), for a finding that judged
            one; ``None`` otherwise. Passes carry it too (the figure is the evidence).
        waits_for: for a ``skip``, what would make the step apply: :data:`WAITS_FOR_GPUS` (no GPU on the bus: with
            GPUs in the plan the step waits for them) or ``"plan:KEY"`` (:func:`waits_for_plan`: a plan answer is
            missing). The engine keeps such a step pending, never "not applicable"
            (:meth:`wizard.engine.Build.record_findings`). Not part of the JSON contract (not in :meth:`to_dict`).
    """

    id: str
    verdict: Verdict
    message: str
    subject: str = "host"
    evidence: tuple[str, ...] = ()
    remedy: str = ""
    source: str = ""
    step: str = ""
    key: str = ""
    measured: Measure | None = None
    waits_for: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-contract shape of a finding (DESIGN.md "The machine-readable contract"); ``measured`` only
        when set."""
        d: dict[str, Any] = {
            "id": self.id,
            "verdict": self.verdict.value,
            "subject": self.subject,
            "message": self.message,
            "evidence": list(self.evidence),
            "remedy": self.remedy,
            "source": self.source,
            "step": self.step,
        }
        if self.key:
            d["key"] = self.key
        if self.measured is not None:
            d["measured"] = self.measured.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Finding":
        """Inverse of :meth:`to_dict`; raises ``KeyError``/``ValueError`` on a malformed dict (a malformed
        ``measured`` object included: :meth:`Measure.from_dict`); ``measured`` absent or null reads as ``None``."""
        m = d.get("measured")
        return cls(
            id=str(d["id"]),
            verdict=Verdict(d["verdict"]),
            message=str(d.get("message", "")),
            subject=str(d.get("subject", "host")),
            evidence=tuple(str(x) for x in d.get("evidence", ())),
            remedy=str(d.get("remedy", "")),
            source=str(d.get("source", "")),
            step=str(d.get("step", "")),
            key=str(d.get("key", "")),
            measured=None if m is None else Measure.from_dict(m),
        )


WAITS_FOR_GPUS = "gpus"
"""A skip's :attr:`Finding.waits_for` when no NVIDIA GPU is on the PCI bus."""


WAITS_FOR_PLAN_PREFIX = "plan:"


def waits_for_plan(key: str) -> str:
    """A skip's :attr:`Finding.waits_for` when the plan lacks the answer ``key`` (e.g. ``data_path``)."""
    return f"{WAITS_FOR_PLAN_PREFIX}{key}"


def plan_key_awaited(waits_for: str) -> str:
    """The plan key a :attr:`Finding.waits_for` made by :func:`waits_for_plan` names; "" for anything else."""
    return waits_for[len(WAITS_FOR_PLAN_PREFIX):] if waits_for.startswith(WAITS_FOR_PLAN_PREFIX) else ""


RuleFn = Callable[["Mapping[str, ProbeOutput]", "Mapping[str, Any]"], "list[Finding]"]
"""A rule: a run's facts (a mapping of probe outputs, :class:`wizard.facts.Facts`) + plan answers ->
findings. Pure: no I/O."""


@dataclass(frozen=True)
class Step:
    """One step of the build, defined as data in ``steps/``.

    Attributes:
        id: stable dotted id ``<stage>.<name>``; never renamed (the store keys on it).
        title: short imperative title.
        why: why it matters, with its source.
        instructions: what the operator does by hand where the machine cannot.
        (What judges a step from probes is listed in :data:`wizard.registry.RULES`, by step id.)
        action: optional shell action (see :class:`wizard.actions.ActionSpec`).
        requires: step ids that must be done first.
        boot_sensitive: the verified state depends on the running boot; re-check after reboot.
        manual: the operator must confirm it (the machine cannot fully verify it).
        plan_keys: plan answers ``instructions`` asks the operator to record; when the plan holds any of them the
            screen shows ``instructions_when_set`` instead (walk 18: "record gpu_count" with gpu_count set).
        instructions_when_set: what to do once those answers are recorded.
        automated_by: the step whose run automates this confirm-by-hand step (node.allreduce <- node.validate).
            While that step has not passed, confirming this one needs a note saying how it was verified, and the
            report lists it as confirmed by hand (:meth:`wizard.engine.Build.unverified`); the step screen shows
            that step's stored status and findings.
        per_machine: what a person records for it is about this one machine (its serial numbers, its hand-over):
            ``answers export`` leaves it out, so replaying the file on the next node does not record this one's
            (walk 28 #4: a chassis serial in a confirmation note, replayed onto another node's build).
    """

    id: str
    title: str
    why: str
    instructions: str = ""
    action: "ActionSpec | None" = None
    requires: tuple[str, ...] = ()
    boot_sensitive: bool = False
    manual: bool = False
    plan_keys: tuple[str, ...] = ()
    instructions_when_set: str = ""
    automated_by: str = ""
    per_machine: bool = False

    def instructions_for(self, plan: "Mapping[str, Any]") -> str:
        """The instructions to show under ``plan``: :attr:`instructions_when_set` when the plan holds one of
        :attr:`plan_keys` (a value other than None or ""), else :attr:`instructions`."""
        if self.instructions_when_set and any(plan.get(k) not in (None, "") for k in self.plan_keys):
            return self.instructions_when_set
        return self.instructions

    @property
    def stage_id(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass(frozen=True)
class Stage:
    """An ordered group of steps; stages are walked in catalogue order."""

    id: str
    title: str
    summary: str
    steps: tuple[Step, ...] = field(default_factory=tuple)
    short: str = ""  # label for narrow lists; defaults to the title

    @property
    def label(self) -> str:
        return self.short or self.title

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


def overall(findings: Sequence[Finding]) -> Verdict:
    """Overall verdict of a list of findings (worst wins; empty -> skip)."""
    return worst(f.verdict for f in findings)


def stage_rollup(statuses: Sequence[StepStatus]) -> StepStatus:
    """A stage's status from its steps' statuses: running if any runs, failed if any failed, interrupted if any
    was, skipped when all were skipped, warned when every step is done and one warned, passed when every step is done
    without a warning and one was proven by the machine, confirmed when the rest were confirmed by hand or skipped
    (nothing in it was checked, so it is not shown as passed); else pending (a ``cpu-only`` step is not done: its GPU was never measured)."""
    if any(x is StepStatus.RUNNING for x in statuses):
        return StepStatus.RUNNING
    if any(x is StepStatus.FAILED for x in statuses):
        return StepStatus.FAILED
    if any(x is StepStatus.INTERRUPTED for x in statuses):
        return StepStatus.INTERRUPTED
    if statuses and all(x is StepStatus.SKIPPED for x in statuses):
        return StepStatus.SKIPPED  # nothing here applied (e.g. no GPU yet): not "passed"
    if all(x.done for x in statuses):
        if any(x is StepStatus.WARNED for x in statuses):
            return StepStatus.WARNED
        # the machine proved none of it: every step was confirmed by hand (or skipped): the stage says so
        return StepStatus.PASSED if any(x is StepStatus.PASSED for x in statuses) else StepStatus.CONFIRMED
    return StepStatus.PENDING


AUTO_SKIP_PREFIX = "not applicable: "
"""How the engine words the reason of a step its own check found not applicable (``Build.record_findings``); any
other skip is a person's decision (the report lists it as skipped by a person, with the reason, who and when)."""
UNVERIFIED_PREFIX = "confirmed by hand; the machine's check could not tell here ("
"""The reason a person's confirmation of a checked step gets when its latest check skipped or was unknown, or of a
step another step's run automates (``Step.automated_by``) while that run has not passed (its status word in the
brackets: ``cpu-only``, ``pending``, ...; ``wizard.engine.Build.unverified``); the report lists such steps with the
skips."""

HANDOVER_STAGES = ("report",)
"""Stages about handing the machine over (writing the acceptance report, the hand-over itself): shown in the report,
but a step of theirs still pending does not make the machine "not ready"."""
HANDOVER_STEP = "report.handover"
"""The hand-over step: confirmed while the report would say "not ready", it is recorded ``warned``
(:meth:`wizard.engine.Build.confirm`)."""


def blocks_handover(stage_id: str, status: "StepStatus") -> bool:
    """A step of stage ``stage_id`` at ``status`` keeps the machine "not ready": not done (pending, running, failed,
    interrupted, cpu-only) outside :data:`HANDOVER_STAGES`. The one rule the report's "steps not done"
    (wizard/report.py) and the hand-over's counts (:meth:`wizard.engine.Build.handover_open`) share."""
    return not status.done and stage_id not in HANDOVER_STAGES


def proven_by_run(step: "Step") -> bool:
    """A step only its own judged run can pass (a validation, the idle baseline, the multi-node runs: an action
    with a judge, not a manual step): a person's note never confirms it (:meth:`wizard.engine.Build.confirm`)."""
    return not step.manual and step.action is not None and step.action.judge is not None


def status_for_verdict(verdict: Verdict) -> StepStatus:
    """Step status after a check: pass -> passed, warn -> warned (a warning is not a pass), skip ->
    skipped (not applicable here), fail -> failed, unknown -> pending.

    ``unknown`` leaves the step pending: nothing was verified, so it is not done.
    """
    if verdict is Verdict.SKIP:
        return StepStatus.SKIPPED
    if verdict is Verdict.PASS:
        return StepStatus.PASSED
    if verdict is Verdict.WARN:
        return StepStatus.WARNED
    if verdict is Verdict.FAIL:
        return StepStatus.FAILED
    return StepStatus.PENDING
