"""The vocabulary of bringup: verdicts, step statuses, findings, steps and stages.

Verdict order and exit codes follow DESIGN.md's JSON contract and the health-check convention
used by LBNL NHC and Meta GCM: exit 0 = all pass (or only skips), 1 = warn or unknown,
2 = fail.
"""

from __future__ import annotations

import enum
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

    def to_dict(self) -> dict[str, Any]:
        """The JSON-contract shape of a finding (DESIGN.md "The machine-readable contract")."""
        d = {
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
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Finding":
        """Inverse of :meth:`to_dict`; raises ``KeyError``/``ValueError`` on a malformed dict."""
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
        )


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
    """

    id: str
    title: str
    why: str
    instructions: str = ""
    action: "ActionSpec | None" = None
    requires: tuple[str, ...] = ()
    boot_sensitive: bool = False
    manual: bool = False

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
    was, skipped when all were skipped, passed when every step is done without a warning, warned when every step
    is done and one warned; else pending (a ``cpu-only`` step is not done: its GPU was never measured)."""
    if any(x is StepStatus.RUNNING for x in statuses):
        return StepStatus.RUNNING
    if any(x is StepStatus.FAILED for x in statuses):
        return StepStatus.FAILED
    if any(x is StepStatus.INTERRUPTED for x in statuses):
        return StepStatus.INTERRUPTED
    if statuses and all(x is StepStatus.SKIPPED for x in statuses):
        return StepStatus.SKIPPED  # nothing here applied (e.g. no GPU yet): not "passed"
    if all(x.done for x in statuses):
        return StepStatus.WARNED if any(x is StepStatus.WARNED for x in statuses) else StepStatus.PASSED
    return StepStatus.PENDING


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
