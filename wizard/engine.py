"""The engine: run a step's checks on a host, and hold one build's state.

``run_checks`` is the whole data flow for a set of steps: collect the probes they need
concurrently on the host, run each step's pure check, and return findings. ``Build`` wraps one
build's store, lock and action runs; the CLI and the TUI both go through it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from wizard import actions as act
from wizard.rules.identity import dmi_fields
from wizard.rules.validate import CPU_ONLY_REASON, ran_on_cpu
from wizard.facts import facts_of
from wizard.hosts import Host, LocalHost
from wizard.model import AUTO_SKIP_PREFIX, UNVERIFIED_PREFIX, WAITS_FOR_GPUS, plan_key_awaited, HANDOVER_STAGES, HANDOVER_STEP, Finding, Stage, Step, StepStatus, Verdict, blocks_handover, overall, proven_by_run, stage_rollup, status_for_verdict
from wizard.parsers.host import parse_os_release
from wizard.probes import BUILTINS, IDENTITY_PROBES, ProbeOutput, collect
from wizard.registry import apply_rules, probes_named, rules_of_step
from wizard.store import (
    ActionRun, ActionState, BuildInfo, BuildLock, StateDirError, StepState, Store, StoreError, builds_dir, create_build,
    creation_lock, ensure_state_dir, list_builds, new_build_id, short_time, utcnow,
)
from wizard.i18n import N_, Msg
from wizard.common import lazy_re


def _create_build(state_dir: Path, identity: Mapping[str, Any], clock: Any) -> tuple[BuildInfo, BuildLock]:
    """A new build (atomically: :func:`wizard.store.create_build`) holding its meta and host identity; the
    caller holds the creation lock. Returns it with its lock held."""
    import datetime as _dt

    from wizard import __version__

    try:
        now = _dt.datetime.fromisoformat(clock())
    except (TypeError, ValueError):
        now = None

    def init(store: Store) -> None:
        store.set_meta(created=clock(), bringup_version=__version__)
        store.set_host(dict(identity))

    return create_build(state_dir, new_build_id(str(identity.get("hostname", "")), now), init, clock)


def local_host() -> LocalHost:
    return LocalHost(builtins=BUILTINS)


def is_checked(step: Step) -> bool:
    """True when rules of the registry judge ``step`` from probes (else it is confirmed or run)."""
    return bool(rules_of_step(step.id))


def checked_steps(stages: Iterable[Stage], stage_id: str | None = None) -> list[Step]:
    """Steps judged from probes (rules in :data:`wizard.registry.RULES`), in catalogue order,
    optionally of one stage."""
    return [s for st in stages if stage_id in (None, st.id) for s in st.steps if is_checked(s)]


class PlanReads(Mapping[str, Any]):
    """The plan as one step's rules read it, recording every key they ask for (``get``, ``[]``, ``in``; all keys
    when a rule iterates it): what that step's verdict depends on, so a later change of one of those answers says
    the check is out of date (walk 30 #1: numa_nodes set after bios.numa was checked, and the step still said the plan
    named none)."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        self._plan = plan
        self.read: set[str] = set()

    @property
    def base(self) -> Mapping[str, Any]:
        """The plan it wraps: what a value computed once per run for every step is keyed by."""
        return self._plan

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._plan[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self._plan.get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self._plan

    def __iter__(self) -> Iterator[str]:
        self.read.update(self._plan)
        return iter(self._plan)

    def __len__(self) -> int:
        return len(self._plan)


class Judged(dict[str, list[Finding]]):
    """step id -> its findings, and ``plan_read``: step id -> {plan answer its rules read: the value it had} (only
    the plan's own keys, :data:`wizard.plan.PLAN_KEYS`; ``None`` for an answer not given)."""

    plan_read: dict[str, dict[str, Any]]


def judge(steps: Sequence[Step], outputs: Mapping[str, ProbeOutput], plan: Mapping[str, Any]) -> Judged:
    """Judge already-collected outputs: every rule the registry puts under each step
    (:data:`wizard.registry.RULES`), all over one :class:`~wizard.facts.Facts`, so each parser runs
    once per probe in the run. A rule that raises (a bug) yields an ``unknown`` finding naming the
    exception instead of hiding the other findings. The plan answers each step's rules read are returned with
    the findings (:class:`Judged`)."""
    from wizard.plan import PLAN_KEYS

    facts = facts_of(outputs)  # one cache per run: every rule shares what the parsers read
    out = Judged()
    out.plan_read = {}
    for s in steps:
        reads = PlanReads(plan)
        out[s.id] = apply_rules(rules_of_step(s.id), facts, reads, step=s.id)
        out.plan_read[s.id] = {k: plan.get(k) for k in sorted(reads.read) if k in PLAN_KEYS}
    return out


def probes_of(steps: Sequence[Step]) -> list[str]:
    """Names of every probe the rules of ``steps`` read (each once)."""
    return list(dict.fromkeys(p for s in steps for r in rules_of_step(s.id) for p in r.probes))


async def run_checks(host: Host, steps: Sequence[Step], plan: Mapping[str, Any], also: Sequence[str] = ()
                     ) -> tuple[Judged, dict[str, ProbeOutput]]:
    """Collect every probe ``steps`` need, and the probes named in ``also`` (concurrently), and judge them. Returns
    (step id -> findings, probe name -> output)."""
    outputs = await collect(host, probes_named([*probes_of(steps), *also]), plan)
    return judge(steps, outputs, plan), outputs


async def host_identity(host: Host) -> dict[str, Any]:
    """Hostname, machine id, boot id, DMI product/serial, OS and kernel: each may be empty."""
    outs = await collect(host, probes_named(IDENTITY_PROBES))

    def text(name: str) -> str:
        o = outs.get(name)
        return o.text.strip() if o is not None and o.ok else ""

    dmi = dmi_fields(outs["dmi"].files) if "dmi" in outs else {}
    osr = parse_os_release(outs["os_release"].text) if outs["os_release"].ok else None
    return {
        "hostname": text("hostname"),
        "machine_id": text("machine_id"),
        "boot_id": text("boot_id"),
        "product": " ".join(x for x in (dmi.get("sys_vendor", ""), dmi.get("product_name", "")) if x),
        "serial": dmi.get("product_serial", ""),
        "bios_version": dmi.get("bios_version", ""),
        "os": osr.pretty_name if osr else "",
        "kernel": text("kernel"),
    }


@dataclass
class ResumePoint:
    """Where to pick up, and what is still going on (running runs, interrupted step ids)."""

    stage: Stage
    step: Step
    running: list[ActionRun] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)


def _warning_keys(findings: Sequence[Finding]) -> set[tuple[str, str]]:
    """What a set of warnings is about: each warning or unknown finding's (id, subject); a re-check whose
    warnings are among the accepted ones keeps their acceptance, a new one drops it."""
    return {(f.id, f.subject) for f in findings if f.verdict in (Verdict.WARN, Verdict.UNKNOWN)}


def same_host(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool | None:
    """Whether two host identities (:func:`wizard.engine.host_identity`, a bundle manifest's ``host``, a build's
    recorded host) are one machine: by machine id when both have one (a renamed host is the same machine; a
    reinstalled one is not), else by hostname; ``None`` when neither can tell (one recorded neither)."""
    ma, mb = str(a.get("machine_id") or "").strip(), str(b.get("machine_id") or "").strip()
    if ma and mb:
        return ma == mb
    ha, hb = str(a.get("hostname") or "").strip(), str(b.get("hostname") or "").strip()
    if ha and hb:
        return ha == hb
    return None


def host_words(identity: Mapping[str, Any]) -> str:
    """A host identity for a message: ``gpu-007 (machine id 0123abcd…)``."""
    name = str(identity.get("hostname") or "").strip() or "an unnamed host"
    mid = str(identity.get("machine_id") or "").strip()
    return name + (f" (machine id {mid[:12]}{'…' if len(mid) > 12 else ''})" if mid else "")


CANCELLED_NOTE = N_("not a failure; run it again to finish it")
"""What a cancelled run's step reason adds after its action words (``action cancelled (exit status 1): ...``)."""
_ACTION_REASON = lazy_re(r"^action ([a-z-]+)(?: \(exit status (-?\d+)\))?(: " + re.escape(CANCELLED_NOTE) + ")?$")
HANDOVER_NOT_READY = N_("handed over while not ready ({failed} step(s) failed, {not_done} not done) by {user}")
ACCEPTED_WARNINGS = N_("warnings accepted by {user}: {note}")
"""The reasons the engine writes, in English, for a hand-over while not ready (then ": " and the note, when there
is one) and for accepted warnings; :meth:`Build.reason_shown` reads them back (:func:`handover_counts`,
:func:`accepted_note`, with the step's recorded user, who may have spaces: "tester (answers file F)") and shows
them in the operator's language, the person's note as typed."""


def accepted_note(reason: str, user: str) -> str | None:
    """The note of a reason :data:`ACCEPTED_WARNINGS` wrote for ``user``, else None."""
    prefix = ACCEPTED_WARNINGS.format(user=user, note="")
    return reason[len(prefix):] if reason.startswith(prefix) else None


def handover_counts(reason: str, user: str) -> tuple[str, str, str] | None:
    """(failed, not done, note) of a reason :data:`HANDOVER_NOT_READY` wrote for ``user`` (note "" when none), else
    None."""
    m = re.match(r"handed over while not ready \((\d+) step\(s\) failed, (\d+) not done\) by "
                 + re.escape(user) + r"(?:: (.*))?$", reason, re.S)
    return (m.group(1), m.group(2), m.group(3) or "") if m else None


def action_reason(state: str, exit_status: int | None) -> str:
    """A step's reason after its action ended: "action succeeded (exit status 0)", "action cancelled" (a :class:`Msg`:
    stored in English, shown translated by :meth:`Build.reason_shown`)."""
    return (Msg("action {state} (exit status {status})", state=Msg(state), status=exit_status)
            if exit_status is not None else Msg("action {state}", state=Msg(state)))


WAITING_FOR_GPUS = "waiting for the planned GPUs (health.gpu_pci finds none on the PCI bus): "
"""A pending step's reason when its check skipped for want of a GPU on the bus (:data:`wizard.model.WAITS_FOR_GPUS`)
while the plan expects GPUs: the step waits for them instead of reading "n/a"."""
WAITING_FOR_A_GPU = "waiting for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus): "
"""The same wait with no GPU named in the plan: health.gpu_pci fails a node with no NVIDIA GPU, so the steps that need
one wait for it; "n/a" would say the stage needs nothing (walk 27 #7: the whole Driver & CUDA stage "n/a")."""
WAITING_FOR_PLAN = "waiting for a plan answer ("
"""A pending step's reason when its check skipped for want of a plan answer (:func:`wizard.model.waits_for_plan`):
``waiting for a plan answer (KEY): <the skip's message>``."""


def waiting_reason(skip: Finding, plan: Mapping[str, Any]) -> str:
    """The pending reason of a step whose check gave ``skip`` when that skip only waits: for a GPU (none on the bus:
    health.gpu_pci fails, whether or not the plan names GPUs) or for a plan answer; "" when the step really does not
    apply here. The one
    decision :meth:`Build.record_findings` (pending, not n/a) and ``bringup check``'s note share."""
    from wizard.rules.gpu_presence import gpus_planned

    if skip.waits_for == WAITS_FOR_GPUS:
        return (WAITING_FOR_GPUS if gpus_planned(plan) else WAITING_FOR_A_GPU) + skip.message
    key = plan_key_awaited(skip.waits_for)
    return f"{WAITING_FOR_PLAN}{key}): {skip.message}" if key else ""


class Build:
    """One build: its directory, store and lock.

    Open with :meth:`open`. When another instance holds the lock, ``observing`` is True and the
    store is read-only: nothing is written, actions cannot start.
    """

    def __init__(self, info: BuildInfo, store: Store, lock: BuildLock, stages: Sequence[Stage],
                 boot_id: str, dry_run: bool = False) -> None:
        self.info = info
        self.store = store
        self.lock = lock
        self.stages = tuple(stages)
        self.boot_id = boot_id
        self.dry_run = dry_run

    # ------------------------------------------------------------ opening

    @classmethod
    def open(cls, state_dir: Path, stages: Sequence[Stage], identity: Mapping[str, Any] | None = None,
             build_id: str | None = None, create: bool = False, dry_run: bool = False,
             clock: Any = utcnow, readonly: bool = False, wait_s: float = 0.0) -> "Build":
        """Open the newest build (or ``build_id``) under ``state_dir``; create one with ``create`` (atomically:
        another bringup never sees it half made, :func:`wizard.store.create_build`).

        ``readonly``: open without the lock and without writing anything (for a state directory
        this user cannot write, e.g. root's build viewed by an operator); ``observing`` is True.
        ``wait_s``: seconds to wait for another instance to let the build's lock go before observing.

        Raises:
            StateDirError: the state directory is not writable (checked before anything runs).
            StoreError: the build file is corrupt, from a newer bringup, or missing.
        """
        if readonly and create:
            raise ValueError("cannot create a build read-only")
        if not readonly:
            ensure_state_dir(Path(state_dir))
        identity = dict(identity or {})
        lock: BuildLock | None = None
        if create:
            with creation_lock(Path(state_dir)):
                info, lock = _create_build(Path(state_dir), identity, clock)
        elif build_id is not None:
            match = [b for b in list_builds(state_dir) if b.build_id == build_id]
            if not match:
                raise StoreError(Msg("no build {build} under {path}", build=build_id, path=str(builds_dir(state_dir))))
            info = match[0]
        else:
            existing = list_builds(state_dir)
            if not existing:
                raise StoreError(Msg("no build under {path} yet: start one with `bringup`", path=str(builds_dir(state_dir))))
            info = existing[-1]
        if lock is None:
            lock = BuildLock(info.path)
            if not readonly:
                lock.acquire(wait_s)
        try:
            store = Store.open(info.db, readonly=not lock.acquired, clock=clock)
        except Exception:
            lock.release()
            raise
        return cls(info, store, lock, stages, str(identity.get("boot_id", "")), dry_run)

    @classmethod
    def open_or_create(cls, state_dir: Path, stages: Sequence[Stage], identity: Mapping[str, Any] | None = None,
                       dry_run: bool = False, clock: Any = utcnow, wait_s: float = 0.0) -> "Build":
        """The newest build under ``state_dir``, or a new one when there is none; decided under the state
        directory's creation lock, so commands started at once on an empty state directory share one build.

        Raises:
            StateDirError: the state directory is not writable (DiskFullError: its disk is full).
            StoreError: the build file is corrupt, from a newer bringup, or unreadable.
        """
        ensure_state_dir(Path(state_dir))
        with creation_lock(Path(state_dir)):
            if not list_builds(state_dir):
                info, lock = _create_build(Path(state_dir), dict(identity or {}), clock)
                try:
                    store = Store.open(info.db, clock=clock)
                except Exception:
                    lock.release()
                    raise
                return cls(info, store, lock, stages, str((identity or {}).get("boot_id", "")), dry_run)
        return cls.open(state_dir, stages, identity, dry_run=dry_run, clock=clock, wait_s=wait_s)

    @property
    def observing(self) -> bool:
        return self.store.readonly

    def close(self) -> None:
        self.store.close()
        self.lock.release()

    def take_over(self) -> bool:
        """An observing build whose holder let its lock go (that bringup quit or died): take the lock and reopen the
        store for writing. Returns whether this instance now holds the build; ``False`` while the other still holds
        it, or when the lock cannot be taken (never raises: an observer keeps observing; walk 32 #2: a second window
        kept naming a pid that had exited)."""
        if not self.observing or self.lock.acquired:
            return False
        try:
            if not self.lock.acquire(0.0):
                return False
            store = Store.open(self.info.db, readonly=False, clock=self.store.clock)
        except (OSError, StoreError):
            self.lock.release()
            return False
        self.store.close()
        self.store = store
        return True

    # ------------------------------------------------------------ catalogue helpers

    def steps(self) -> list[Step]:
        return [s for st in self.stages for s in st.steps]

    def step(self, step_id: str) -> Step:
        for s in self.steps():
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def stage_of(self, step_id: str) -> Stage:
        for st in self.stages:
            if any(s.id == step_id for s in st.steps):
                return st
        raise KeyError(step_id)

    # ------------------------------------------------------------ state

    def plan(self) -> dict[str, Any]:
        """The plan answers, each re-validated (a bad stored value is ignored, never trusted)."""
        from wizard.plan import valid_plan

        return valid_plan(self.store.plan())

    def expectations(self) -> dict[str, Any]:
        """What checks judge against: the plan answers plus ``acknowledged`` (event keys the
        operator acknowledged with a reason; those past events no longer count), the recorded GPU serials and
        ``build_started`` (when this build was created, ISO 8601 UTC: the BMC's event log counts records from then)."""
        exp = self.plan()
        exp["acknowledged"] = frozenset(self.store.acks())
        meta = self.store.meta()
        serials = meta.get("gpu_serials")
        if isinstance(serials, dict):
            exp["gpu_serials"] = serials
        if isinstance(meta.get("created"), str):
            exp["build_started"] = meta["created"]
        return exp

    def remember_gpu_serials(self, outputs: Mapping[str, ProbeOutput]) -> None:
        """Record each GPU slot's serial the first time it is seen (grounding.gpu_serials then
        compares every later check against it). Existing records are kept: a changed serial is
        a finding, not silently overwritten, until the operator confirms the step."""
        if self.observing:
            return
        from wizard.rules.identity import gpu_serials_seen

        seen = gpu_serials_seen(outputs)
        if not seen:
            return
        self.store.set_meta(gpu_serials_seen_last=seen)
        rec = dict(self.store.meta().get("gpu_serials") or {})
        new = {bus: {"serial": serial, "at": self.store.clock()} for bus, serial in seen.items() if bus not in rec}
        if new:
            rec.update(new)
            self.store.set_meta(gpu_serials=rec)

    def acknowledge(self, finding: Finding, reason: str) -> None:
        """Acknowledge the past event(s) behind ``finding`` (it must carry a ``key``)."""
        if not finding.key:
            raise ValueError("this finding is not about one past event: nothing to acknowledge")
        for key in finding.key.split(","):  # a finding may rest on several events: each is acknowledged
            self.store.add_ack(key, finding.id, finding.subject, finding.message, reason,
                               act.current_user(), self.boot_id)

    def status(self, step_id: str) -> StepStatus:
        st = self.store.step_states().get(step_id)
        return st.status if st else StepStatus.PENDING

    def reason_shown(self, state: StepState, brief: bool = False) -> str:
        """A step's reason as the operator reads it, in the current language: a machine's skip ("not applicable: "
        and its skip finding's message) or a pending step's unknown reason is shown from the stored finding it was
        made from (translated, wizard.i18n.tr); a person's words (a skip's reason, a note) as they were typed.
        ``brief``: a waiting step's reason without the finding's words (the step screen shows the finding just
        below; walk 30 #8: the note repeated it word for word)."""
        from wizard.i18n import _, tr

        reason = state.reason
        if not reason:
            return reason
        m = _ACTION_REASON.match(reason)
        if m:  # what the engine wrote when the step's action ended: its words, translated
            return tr(action_reason(m.group(1), None if m.group(2) is None else int(m.group(2)))) + (
                _(": ") + _(CANCELLED_NOTE) if m.group(3) else "")
        if reason == CPU_ONLY_REASON:
            return _(CPU_ONLY_REASON)
        h = handover_counts(reason, state.user)
        if h:  # what confirm() wrote for a hand-over while not ready: its words translated, the note as typed
            return _(HANDOVER_NOT_READY).format(failed=h[0], not_done=h[1], user=state.user) + (
                _(": ") + h[2] if h[2] else "")
        w = accepted_note(reason, state.user)
        if w is not None:
            return _(ACCEPTED_WARNINGS).format(user=state.user, note=w)
        u = re.match(re.escape(UNVERIFIED_PREFIX) + r"([\w-]+)\): (.*)$", reason, re.S)
        if u:  # a person's confirmation over a check that could not tell: the words translated, the note as typed
            return _("confirmed by hand; the machine's check could not tell here ({verdict}): {note}").format(
                verdict=_(u.group(1)), note=u.group(2))
        auto = reason.startswith(AUTO_SKIP_PREFIX)
        waiting = reason.startswith(WAITING_FOR_GPUS)
        a_gpu = reason.startswith(WAITING_FOR_A_GPU)
        plan_key = re.match(re.escape(WAITING_FOR_PLAN) + r"([\w.]+)\): ", reason)
        why = (reason[len(AUTO_SKIP_PREFIX):] if auto else reason[len(WAITING_FOR_GPUS):] if waiting
               else reason[len(WAITING_FOR_A_GPU):] if a_gpu else reason[plan_key.end():] if plan_key else reason)
        _meta, findings = self.store.latest_check(state.step_id)
        shown = next((tr(f.message) for f in findings if str(f.message) == why), why)
        if waiting:
            return (_("waiting for the planned GPUs (health.gpu_pci finds none on the PCI bus)") if brief else
                    _("waiting for the planned GPUs (health.gpu_pci finds none on the PCI bus): {why}").format(why=shown))
        if a_gpu:
            return (_("waiting for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus)") if brief else
                    _("waiting for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus): {why}").format(why=shown))
        if plan_key:
            return (_("waiting for a plan answer ({key})").format(key=plan_key.group(1)) if brief else
                    _("waiting for a plan answer ({key}): {why}").format(key=plan_key.group(1), why=shown))
        return _("not applicable: {why}").format(why=shown) if auto else shown

    def plan_changes(self) -> dict[str, list[tuple[str, Any, Any]]]:
        """step id -> (plan key, the value the step's latest check read, the value now) for each plan answer its rules
        read and that has changed since (:class:`PlanReads`), for every step with one; read once for all steps (the
        store's latest plan reads, the states, the plan). A step a person skipped is left out: the skip stands whatever
        the plan says (a confirmation over a check is named: walk 31)."""
        states = self.store.step_states()
        plan = self.plan()
        out: dict[str, list[tuple[str, Any, Any]]] = {}
        for sid, read in self.store.latest_plan_reads().items():
            st = states.get(sid)
            if st is not None and st.status is StepStatus.SKIPPED and not st.not_applicable:
                continue
            changed = [(k, v, plan.get(k)) for k, v in read.items() if plan.get(k) != v]
            if changed:
                out[sid] = changed
        return out

    def plan_changed(self, step_id: str) -> list[tuple[str, Any, Any]]:
        """:meth:`plan_changes` of one step ([] when none)."""
        return self.plan_changes().get(step_id, [])

    def plan_changed_words(self, step_id: str, changes: Mapping[str, Any] | None = None) -> str:
        """"numa_nodes: unset -> 2" for :meth:`plan_changed`, in the current language; "" when nothing changed.
        ``changes``: :meth:`plan_changes` when the caller read it once for every step."""
        from wizard.i18n import _

        from wizard.plan import whole

        def shown(v: Any) -> str:  # a whole number without ".0", as `bringup plan` and F2 show it (walk 31 #10)
            return _("unset") if v in (None, "") else str(whole(v))

        got = (changes if changes is not None else self.plan_changes()).get(step_id, [])
        return ", ".join(f"{k}: {shown(was)} -> {shown(now)}" for k, was, now in got)  # ASCII: a VGA console

    def set_plan(self, **answers: Any) -> list[str]:
        """Store plan answers (``None`` removes one) and return the ids of the steps whose latest check read an answer
        that changed (:meth:`steps_reading`): what to check again, for the caller to say (walk 30 #1)."""
        before = self.store.plan()
        self.store.set_plan(**answers)
        after = self.store.plan()
        changed = [k for k in answers if before.get(k) != after.get(k)]
        return self.steps_reading(changed) if changed else []

    def steps_reading(self, keys: Iterable[str]) -> list[str]:
        """Ids of the steps whose latest check read any of the plan answers ``keys``, in order: what a change of
        those answers leaves to be checked again."""
        keys = set(keys)
        reads = self.store.latest_plan_reads()
        return [s.id for s in self.steps() if keys & set(reads.get(s.id) or {})]

    def withdrawn_confirmation(self, step_id: str, states: Mapping[str, Any] | None = None) -> str:
        """A line saying that a person's confirmation of ``step_id`` was withdrawn by a later check or run that
        failed or warned (who confirmed, when, their note, and when and how it was reopened), in the current
        language; "" when there is none (:meth:`wizard.store.Store.withdrawn_confirmations`). ``states``: the
        store's ``withdrawn_confirmations()`` when the caller reads it once for every step."""
        from wizard.i18n import _

        got = (states if states is not None else self.store.withdrawn_confirmations()).get(step_id)
        if got is None:
            return ""
        confirmed, reopened = got
        note = self.reason_shown(confirmed)
        args = {"user": confirmed.user or "?", "at": short_time(confirmed.updated_at),
                "note": _(" ({note})").format(note=note) if note else "", "when": short_time(reopened.updated_at)}
        if reopened.status is StepStatus.PASSED:  # proven since: the person's words stay in the record (walk 31 #2)
            return _("confirmed by {user} at {at}{note}; a later check or run passed it at {when}").format(**args)
        return _("confirmed by {user} at {at}{note}; reopened at {when}: a later check or run {verdict}").format(
            verdict=_("failed") if reopened.status is StepStatus.FAILED else _("warned"), **args)

    def stale(self, step_id: str) -> bool:
        """A boot-sensitive step verified under another boot: the reboot may have changed it."""
        s = self.step(step_id)
        st = self.store.step_states().get(step_id)
        return bool(s.boot_sensitive and st and st.status in (StepStatus.PASSED, StepStatus.WARNED, StepStatus.FAILED)
                    and st.boot_id and self.boot_id and st.boot_id != self.boot_id)

    def stale_steps(self) -> list[Step]:
        """Boot-sensitive checked steps verified under another boot (after a reboot), in order."""
        return [s for s in self.steps() if is_checked(s) and self.stale(s.id)]

    async def recheck_after_reboot(self, host: Host) -> list[tuple[Step, Verdict | None, Verdict]]:
        """Re-check every stale boot-sensitive step; returns (step, verdict before, verdict now)
        for each, so the operator sees what the reboot changed (a BIOS setting, a kernel
        argument, a module)."""
        stale = self.stale_steps()
        if not stale or self.observing:
            return []
        before = {sid: st.verdict for sid, st in self.store.step_states().items()}
        results = await self.check_steps(host, stale)
        from wizard.model import overall as _overall

        return [(s, before.get(s.id), _overall(results[s.id])) for s in stale]

    def stage_status(self, stage: Stage) -> StepStatus:
        """A stage is passed when every step is done without a warning, warned when every step is done and
        one warned, failed if any failed, running if any runs; a ``cpu-only`` step is not done (the stage
        stays pending: its GPU was never measured)."""
        states = self.store.step_states()
        return stage_rollup([states[s.id].status if s.id in states else StepStatus.PENDING for s in stage.steps])

    def set_cursor(self, step_id: str) -> None:
        if not self.observing:
            self.store.set_meta(cursor_step=step_id)

    def resume_point(self) -> ResumePoint:
        """Where to pick up: the step of a running action, else the step the operator last
        opened (when it is done, the first step not done after it in catalogue order, else before it), else the
        most recent interrupted step, else the first step not done."""
        meta = self.store.meta()
        states = self.store.step_states()
        running = self.store.action_runs(state=ActionState.RUNNING)
        interrupted = sorted((st for st in states.values() if st.status is StepStatus.INTERRUPTED),
                             key=lambda st: st.updated_at)
        order = self.steps()
        ids = {s.id for s in order}

        def done(s: Step) -> bool:
            st = states.get(s.id)
            return st is not None and st.status.done

        step: Step | None = None
        cursor = meta.get("cursor_step")
        for candidate in ([r.step_id for r in running][-1:] + ([cursor] if isinstance(cursor, str) else [])
                          + [st.step_id for st in interrupted][-1:]):
            if candidate in ids:
                step = self.step(candidate)
                if candidate == cursor and done(step):  # visited and finished: on to the next open step
                    i = order.index(step)
                    step = next((s for s in order[i + 1:] + order[:i] if not done(s)), step)
                break
        if step is None:
            step = next((s for s in order if not done(s)), None)
        if step is None:
            step = self.steps()[-1]
        return ResumePoint(self.stage_of(step.id), step, running,
                           [st.step_id for st in interrupted if st.step_id in ids])

    def record_findings(self, step_id: str, findings: list[Finding], started_at: str, snapshot: str = "",
                        from_run: bool = False, plan_read: Mapping[str, Any] | None = None) -> Verdict:
        """Store a check's findings (``from_run``: a run's, judged from its log) and set the step's status from
        their verdict. A check of a step only its run proves (:func:`~wizard.model.proven_by_run`) never passes it
        and never undoes what its run settled; it skips it ("not applicable: ...") only with a skip finding saying
        why, while no run has settled it. A person's confirmation stands while the check cannot tell, and a person's
        skip (with its reason) unless the check now passes. Returns the verdict."""
        verdict = overall(findings)
        if not self.observing:
            before = self.store.step_states().get(step_id)
            _, before_findings = self.store.latest_check(step_id)
            self.store.record_check(step_id, findings, verdict, self.boot_id, started_at, snapshot, plan_read)
            step = next((s for s in self.steps() if s.id == step_id), None)
            not_applicable = (verdict is Verdict.SKIP and bool(findings)  # the check said why it does not apply
                              and (before is None or before.status is StepStatus.PENDING
                                   or before.not_applicable))
            if (not from_run and step is not None and proven_by_run(step) and not not_applicable
                    and verdict in (Verdict.PASS, Verdict.SKIP, Verdict.UNKNOWN)):
                # a step only its run proves (a DCGM level with a check saying whether dcgmi is there): a check never
                # passes it, never undoes what its run settled, and skips it only when it said why the step does
                # not apply on this machine (no GPU, no RDMA device and none planned) before any run settled it;
                # with no run yet it stays pending
                if before is None or before.status is StepStatus.PENDING:
                    reason = next((f.message for f in findings if f.verdict is Verdict.UNKNOWN), "")
                    self.store.set_step(step_id, StepStatus.PENDING, verdict if findings else None, reason=reason,
                                        boot_id=self.boot_id, user=act.current_user())
                return verdict
            status = status_for_verdict(verdict)
            reason, user = "", act.current_user()
            if status is StepStatus.SKIPPED:
                skip = next((f for f in findings if f.verdict is Verdict.SKIP), None)
                waiting = waiting_reason(skip, self.store.plan()) if skip is not None else ""
                if waiting:
                    # the planned GPUs are not on the bus, or a plan answer is missing: this step waits (and stays on
                    # the report's "not done" list), it is not "n/a"
                    status, reason = StepStatus.PENDING, waiting
                else:
                    reason = AUTO_SKIP_PREFIX + (skip.message if skip is not None else "")
            if before is not None and before.status is StepStatus.CONFIRMED and status is StepStatus.PENDING:
                # the machine still cannot tell (unknown, no check, or waiting for the GPUs or a plan answer): the
                # person's confirmation stands (walk 18: a check wiped a confirmation of a waiting step, note and all)
                # as the person left it: who and when stay theirs (walk 19: each check re-stamped it with the
                # check's time, and the report then named a time nobody confirmed anything)
                return verdict
            if (before is not None and before.status is StepStatus.SKIPPED and not before.not_applicable
                    and status is not StepStatus.PASSED):
                # a person skipped it with a reason: that decision stands through later checks (their findings are
                # stored and shown), as a confirmation does, who, when and why included (walk 24: `bringup check`
                # turned a skipped os.tools back to failed and the reason was gone); a check that proves the step
                # passes it, which says more than the skip
                return verdict
            if (before is not None and before.status is StepStatus.WARNED and status is StepStatus.WARNED
                    and accepted_note(before.reason, before.user) is not None
                    and _warning_keys(findings) <= _warning_keys(before_findings)):
                # the same warnings as the ones accepted (no new one): the acceptance, its note and its time stand
                return verdict
            self.store.set_step(step_id, status, verdict, reason=reason, boot_id=self.boot_id, user=user)
        return verdict

    def confirm_refusal(self, step_id: str, note: str | None = None) -> str:
        """Why ``step_id`` cannot be confirmed now ("" when it can). A ``cpu-only`` validation is never confirmed
        into done (the GPU was not measured: validate on the GPUs, or skip with a reason); a ``warned`` step is
        accepted only with a note (``note`` None: not asked yet), and stays ``warned``."""
        status = self.status(step_id)
        step = next((s for s in self.steps() if s.id == step_id), None)
        if step is not None and proven_by_run(step) and status not in (StepStatus.WARNED, StepStatus.CPU_ONLY):
            return Msg("this step is proven by its run, not by a note: run it (a, or `bringup run {step_id}`), or skip "
                       "it with a reason", step_id=step_id)
        if status is StepStatus.CPU_ONLY:
            return Msg("this validation ran on the CPU only: the GPU is not validated. Run it on the GPUs "
                       "(validate_device cuda), or skip it with a reason")
        if status is StepStatus.WARNED and note is not None and not note.strip():
            return Msg("accepting a warning needs a note: say why it is acceptable on this machine")
        auto = self.automation_open(step_id)
        if auto and note is not None and not note.strip():
            return Msg("{auto} measures this step and has not passed ({status}): confirming it needs a note saying "
                       "how you verified it (the output of the test you ran by hand)", auto=auto,
                       status=Msg.plain(self.status(auto).value))
        if self.unverified(step_id) and note is not None and not note.strip():
            return Msg("the machine could not check this step here: confirming it needs a note saying what you "
                       "checked and how")
        if step_id == HANDOVER_STEP and note is not None and not note.strip() and any(self.handover_open()):
            # walk 18: a person's skip or an unverified confirmation needs a note, a hand-over of a machine the report
            # calls NOT READY did not
            return Msg("handing over a machine the report calls not ready needs a note: say why, and to whom")
        return ""

    def unverified(self, step_id: str) -> str:
        """The verdict ("skip", "unknown") of a step the machine checks (:func:`is_checked`) whose latest check could
        not tell here (nvidia-smi not installed, no GPU on the bus, an unreadable output); "" otherwise. Confirming
        such a step records a person's word over a check that did not run: it needs a note, and the note says so."""
        step = next((s for s in self.steps() if s.id == step_id), None)
        if step is not None and step.automated_by and self.automation_open(step_id):
            # walk 24: node.allreduce confirmed without a note after node.validate ran on the CPU only, and the
            # report called it a confirmed bandwidth
            return self.status(step.automated_by).value
        st = self.store.step_states().get(step_id)
        if step is None or not is_checked(step) or st is None or st.verdict not in (Verdict.SKIP, Verdict.UNKNOWN):
            return ""
        return st.verdict.value

    def automation_open(self, step_id: str) -> str:
        """The id of the step whose run automates ``step_id`` (:attr:`Step.automated_by`) when that step has not
        passed (cpu-only, pending, failed, skipped, ...: nothing measured this on the GPUs); "" otherwise. Confirming
        ``step_id`` then needs a note and is recorded as a person's word (:meth:`unverified`)."""
        step = next((s for s in self.steps() if s.id == step_id), None)
        if step is None or not step.automated_by or self.status(step.automated_by) is StepStatus.PASSED:
            return ""
        return step.automated_by

    def confirm(self, step_id: str, note: str = "", user: str | None = None) -> None:
        """Confirm a manual step, or accept a warned step's warnings with ``note`` (it stays ``warned``, with the
        note as its reason). ``user``: who it is recorded as (default :func:`wizard.actions.current_user`; an
        answers file's walk names the file too). Raises ValueError with :meth:`confirm_refusal`'s text when it
        cannot be confirmed."""
        why = self.confirm_refusal(step_id, note)
        if why:
            raise ValueError(why)
        user = user or act.current_user()
        if self.status(step_id) is StepStatus.WARNED:
            st = self.store.step_states().get(step_id)
            self.store.set_step(step_id, StepStatus.WARNED, verdict=st.verdict if st else None,
                                reason=ACCEPTED_WARNINGS.format(user=user, note=note.strip()),
                                user=user, boot_id=self.boot_id)
            return
        open_steps = self.handover_open() if step_id == HANDOVER_STEP else None
        if open_steps and (open_steps[0] or open_steps[1]):
            # handed over while the report would say "not ready": recorded, but never as a clean hand-over
            failed, not_done = open_steps
            self.store.set_step(step_id, StepStatus.WARNED, verdict=Verdict.WARN,
                                reason=HANDOVER_NOT_READY.format(failed=failed, not_done=not_done, user=user)
                                + (f": {note.strip()}" if note.strip() else ""),
                                user=user, boot_id=self.boot_id)
            return
        unverified = self.unverified(step_id)
        if unverified:  # the person's word over a check that could not run: the record says so, with the note
            said = re.match(re.escape(UNVERIFIED_PREFIX) + r"[\w-]+\): ", note.strip())  # a replayed (exported) note
            note = f"{UNVERIFIED_PREFIX}{unverified}): {note.strip()[said.end():] if said else note.strip()}"
        self.store.set_step(step_id, StepStatus.CONFIRMED, reason=note, user=user, boot_id=self.boot_id)
        if step_id == "grounding.serials":  # an intended swap: the serials seen last become the reference
            pending = self.store.meta().get("gpu_serials_seen_last")
            if isinstance(pending, dict) and pending:
                rec = dict(self.store.meta().get("gpu_serials") or {})
                rec.update({bus: {"serial": s, "at": self.store.clock()} for bus, s in pending.items()})
                self.store.set_meta(gpu_serials=rec)

    def handover_open(self) -> tuple[int, int]:
        """(steps failed, steps not done) outside the hand-over stage: what makes the acceptance report's verdict
        "not ready" (wizard/report.py: a failing finding or a step not done). Confirming the hand-over while either
        is above 0 records the step ``warned`` with the counts in its reason, never a clean confirmation."""
        states = self.store.step_states()
        failed = not_done = 0
        for st in self.stages:
            if st.id in HANDOVER_STAGES:
                continue
            for s in st.steps:
                rec = states.get(s.id)
                status = rec.status if rec is not None else StepStatus.PENDING
                if status is StepStatus.FAILED or (rec is not None and rec.verdict is Verdict.FAIL):
                    failed += 1
                elif blocks_handover(st.id, status):
                    not_done += 1
        return failed, not_done

    def skip(self, step_id: str, reason: str, user: str | None = None) -> None:
        """Skip a step with a reason, recorded as ``user`` (default :func:`wizard.actions.current_user`).
        Raises ValueError for an empty reason, or while the step's action runs (walk 29 #20: a skip made during a
        run kept the earlier run's failure as the step's findings, and the report waived it; the run's own result
        is what a skip must be judged against, so it waits for the run to end or be cancelled)."""
        if not reason.strip():
            raise ValueError("a skip needs a reason")
        running = self.running_run(step_id)
        if running is not None:
            raise ValueError(Msg("run {run} of this step is still running: wait for it to end (or cancel it, k) and "
                                 "then skip the step with its result in view", run=running.id))
        self.store.set_step(step_id, StepStatus.SKIPPED, reason=reason.strip(), user=user or act.current_user(),
                            boot_id=self.boot_id)

    def reset(self, step_id: str) -> None:
        self.store.set_step(step_id, StepStatus.PENDING, user=act.current_user(), boot_id=self.boot_id)

    # ------------------------------------------------------------ checks

    async def check_steps(self, host: Host, steps: Sequence[Step], snapshot: str = "") -> dict[str, list[Finding]]:
        started = self.store.clock()
        results, outputs = await run_checks(host, steps, self.expectations())
        for sid, findings in results.items():
            self.record_findings(sid, findings, started, snapshot, plan_read=results.plan_read.get(sid))
        self.remember_gpu_serials(outputs)
        return results

    # ------------------------------------------------------------ actions

    @property
    def actions_dir(self) -> Path:
        return self.info.path / "actions"

    @property
    def backup_dir(self) -> Path:
        return self.info.path / "backups"

    async def resolve_action(self, host: Host, step: Step, overrides: Mapping[str, Any] | None = None) -> act.Resolved:
        """``step``'s action made concrete for this host (its probes collected), with the plan answers plus
        ``overrides``."""
        assert step.action is not None
        plan = {**self.plan(), **dict(overrides or {})}
        outputs = await collect(host, probes_named(step.action.probes), plan) if step.action.probes else {}
        ctx = act.ActionContext(outputs, plan, str(self.backup_dir), state_dir=str(self.info.path.parent.parent))
        return step.action.resolve(ctx)

    async def prepare_action(self, host: Host, step_id: str, overrides: Mapping[str, Any] | None = None,
                             dry_run: bool | None = None) -> "PreparedAction":
        """What ``step_id``'s action would run here and whether it can: the first half of :meth:`run_action`
        (it starts nothing). Raises ``KeyError`` for an unknown step, ``ValueError`` for a step without action."""
        import os

        step = self.step(step_id)
        if step.action is None:
            raise ValueError(f"step {step.id} has no action (it is checked or confirmed instead)")
        overrides = {k: v for k, v in dict(overrides or {}).items() if v is not None}
        dry = self.dry_run if dry_run is None else dry_run
        resolved = await self.resolve_action(host, step, overrides)
        prep = PreparedAction(step, resolved, overrides, dry, check_passes=self.status(step.id) is StepStatus.PASSED)
        running = None if self.observing else self.running_run(step.id)
        if running is None and not self.observing and step.action.loads_gpus and not dry:
            running = self.gpu_load_run(step.id)  # another step's run loads the same GPUs
        if self.observing:
            prep.refusal, prep.refusal_kind = ("another bringup holds this build: actions are disabled in this "
                                               "window", "observing")
        elif running is not None and running.step_id == step.id:  # never a second run of the step beside it
            prep.running = running
            prep.refusal, prep.refusal_kind = Msg("run {run} of this step's action is still running (pid {pid}); log: "
                                                  "{log}", run=running.id, pid=running.pid, log=running.log_path), "running"
        elif running is not None:  # nor beside another run on the same GPUs (a validation during a burn-in)
            prep.running = running
            prep.refusal, prep.refusal_kind = Msg(
                "run {run} of {step} is still running on this node (pid {pid}); a second load beside it "
                "would spoil both runs' figures; log: {log}", run=running.id, step=running.step_id, pid=running.pid,
                log=running.log_path), "running"
        elif resolved.manual:
            prep.refusal, prep.refusal_kind = resolved.manual, "done" if resolved.done else "manual"
        elif (step.action.needs_root or resolved.needs_root) and os.geteuid() != 0 and not dry:
            prep.refusal, prep.refusal_kind = f"'{step.action.title}' needs root", "root"
        return prep

    async def run_action(self, host: Host, step_id: str, overrides: Mapping[str, Any] | None = None, *,
                         confirm: "Callable[[PreparedAction], Any] | None" = None,
                         on_start: "Callable[[ActionRun], Any] | None" = None,
                         on_lines: "Callable[[list[str]], Any] | None" = None,
                         on_checking: "Callable[[bool], Any] | None" = None,
                         dry_run: bool | None = None, check_after: bool = True,
                         poll_s: float = 0.2) -> "ActionOutcome":
        """The one way an action runs, for the CLI (``run``, ``validate``) and the TUI alike.

        Resolves the step's action on ``host`` with the plan answers plus ``overrides`` (kept with the run, and
        used again to judge it), refuses what cannot run here (observing, manual only, needs root: see
        :attr:`PreparedAction.refusal`), asks ``confirm(prepared)`` (sync or async; false = not run; ``None`` =
        no question), starts the detached supervisor, calls ``on_start(run)``, follows the log (``on_lines``
        gets each batch of new lines) until the run ends, and settles it: the step's judge
        (``ActionSpec.judge``) reads the log (success, failure, cancel: a cancel is not a failure), its findings
        and results (``ActionSpec.results``) are stored with the run; an action whose step has a check is
        then checked (``check_after``). Returns what happened; never raises for a refusal or a failed start
        (``ActionOutcome.error``); ``on_checking(True)`` / ``on_checking(False)`` bracket that check. A caller that stops following (Ctrl-C, a cancelled worker) leaves the run
        running: it is settled by whoever looks at it next (:meth:`reconcile`)."""
        prep = await self.prepare_action(host, step_id, overrides, dry_run)
        out = ActionOutcome(prep)
        if prep.refusal:
            return out
        if confirm is not None:
            ok = await _maybe_await(confirm(prep))
            if not ok:
                out.declined = True
                return out
        try:
            run = self.start_action(prep.step, prep.resolved, dry_run=prep.dry_run, overrides=prep.overrides)
        except (PermissionError, ValueError, StoreError, StateDirError, OSError) as exc:  # a full disk too
            out.error = str(exc)
            return out
        out.run = run
        if on_start is not None:
            await _maybe_await(on_start(run))
        if run.state is ActionState.RUNNING:
            run = await self.follow_action(run, on_lines, poll_s)
            out.run = run
            if check_after and self.needs_check(prep.step.id):  # the commands ran; now verify what they were for
                out.checked = True
                if on_checking is not None:
                    await _maybe_await(on_checking(True))
                try:
                    await self.check_steps(host, [prep.step])
                finally:
                    if on_checking is not None:
                        await _maybe_await(on_checking(False))
        out.run = self.store.action_run(run.id) or run
        out.findings = self.run_findings(out.run)
        return out

    async def follow_action(self, run: ActionRun, on_lines: "Callable[[list[str]], Any] | None" = None,
                            poll_s: float = 0.2, tail: "act.LogTail | None" = None) -> ActionRun:
        """Follow a running run's log until it ends (a re-attached run too), settling its step; ``on_lines``
        gets each batch of new, cleaned log lines (the last batch after the end). Returns the settled run."""
        import asyncio

        tail = tail or act.LogTail(run.log_path)
        while True:
            lines = tail.read_new()
            if lines and on_lines is not None:
                await _maybe_await(on_lines(lines))
            run = self.refresh_action(run)
            if run.state is not ActionState.RUNNING:
                while True:  # everything written before the end, however far the reader was behind
                    rest = tail.read_new()
                    if not rest and not tail.more:
                        break
                    if rest and on_lines is not None:
                        await _maybe_await(on_lines(rest))
                    await asyncio.sleep(0)
                rest = tail.flush()
                if rest and on_lines is not None:
                    await _maybe_await(on_lines(rest))
                return self.store.action_run(run.id) or run
            if tail.more:  # the log grows faster than one read a tick: read on, letting the loop run between reads
                await asyncio.sleep(0)
                continue
            await _tick(run, poll_s)

    def run_outcome(self, run: ActionRun) -> str:
        """How ``run`` ended in words (:func:`wizard.actions.outcome_words`), by what the run itself found (its findings,
        :meth:`run_findings`): a run that exited 0 whose findings fail "ended (exit status 0)", never "succeeded",
        whatever its step's status became later (walk 24: a person's skip afterwards made the action screen say
        "succeeded" beside "Result: FAIL"). The one reading of it the screens and the CLI use."""
        failed = run.state is ActionState.SUCCEEDED and overall(self.run_findings(run)) is Verdict.FAIL
        return act.outcome_words(run.state, run.exit_status, step_failed=failed)

    def run_findings(self, run: ActionRun) -> list[Finding]:
        """The findings stored for an ended run: judged from its log (:attr:`ActionRun.check_run`), else the
        step's latest check when it ran after the run (an action verified by its check)."""
        if run.check_run is not None:
            return self.store.findings_of_check(run.check_run)
        meta, findings = self.store.latest_check(run.step_id)
        if meta is not None and run.ended_at and str(meta.get("finished_at", "")) >= str(run.started_at):
            return findings
        return []

    def start_action(self, step: Step, resolved: act.Resolved, dry_run: bool | None = None,
                     overrides: Mapping[str, Any] | None = None) -> ActionRun:
        """Start ``step``'s resolved action (detached): :meth:`run_action`'s start, for callers that resolved
        it themselves (tests). The run's record and the step's ``running`` commit together; a start that fails
        leaves the run ``failed`` and the step as it was (:func:`wizard.actions.start_run`). Raises
        ``PermissionError`` when it needs root and this is not root, ``StoreError`` when observing, ``ValueError``
        for manual-only, ``DiskFullError`` when the state directory's disk is full, ``OSError`` when the
        supervisor cannot start."""
        import os

        assert step.action is not None
        if self.observing:
            raise StoreError("observing: another bringup holds this build; actions are disabled here")
        if resolved.manual:
            raise ValueError(resolved.manual)
        dry = self.dry_run if dry_run is None else dry_run
        if (step.action.needs_root or resolved.needs_root) and os.geteuid() != 0 and not dry:
            raise PermissionError(f"'{step.action.title}' needs root: run bringup with sudo")
        before = self.store.step_states().get(step.id)

        def mark(_run_id: int) -> None:  # in the run record's transaction: never a run without its step running
            self.store.set_step(step.id, StepStatus.RUNNING, user=act.current_user(), boot_id=self.boot_id)

        def unmark(_run_id: int) -> None:  # it did not start: the step as it was
            if before is None:
                self.store.set_step(step.id, StepStatus.PENDING, user=act.current_user(), boot_id=self.boot_id)
            else:
                self.store.set_step(step.id, before.status, before.verdict, reason=before.reason, user=before.user,
                                    boot_id=before.boot_id)

        return act.start_run(self.store, self.actions_dir, step.id, step.action.title, resolved, self.boot_id, dry,
                             overrides, on_record=None if dry else mark, on_abort=None if dry else unmark)

    def refresh_action(self, run: ActionRun) -> ActionRun:
        """Update a run (finished / still running / interrupted) and, once, settle its step. The run's new
        state, the findings judged from its log and its step's status are written in one transaction: a kill
        at any instant leaves either all of it or a run still recorded running, which the next look settles
        from its status file."""
        if self.observing:
            return act.refresh(self.store, run, self.boot_id)
        with self.store.tx():
            run = act.refresh(self.store, run, self.boot_id)
            if run.state is not ActionState.RUNNING:
                last = self.last_run(run.step_id)
                # settle the step once: it still shows this run as running
                if last is not None and last.id == run.id and self.status(run.step_id) is StepStatus.RUNNING:
                    self._step_after_action(run)
                    run = self.store.action_run(run.id) or run
        return run

    def wait_action(self, run: ActionRun, timeout_s: float | None = None, poll_s: float = 0.1) -> ActionRun:
        """Block until ``run`` ends (or ``timeout_s``), settling its step's status."""
        import time

        t0 = time.monotonic()
        while True:
            run = self.refresh_action(run)
            if run.state is not ActionState.RUNNING or (timeout_s is not None and time.monotonic() - t0 > timeout_s):
                return run
            time.sleep(poll_s)

    def judge_run(self, run: ActionRun) -> list[Finding]:
        """Judge an ended run's log with its step's judge (``ActionSpec.judge``, with the plan answers plus the
        run's overrides) and store the findings and results (``ActionSpec.results``) with the run. The only
        place an action's log is judged. A run that failed without a failing finding gets one naming its exit
        status; a cancelled run gets an ``unknown`` one (a cancel is not a failure, and nothing after it was
        measured). Returns the findings; ``[]`` for a step without a judge."""
        step = self.step(run.step_id)
        spec = step.action
        if spec is None or spec.judge is None:
            return []
        reason = action_reason(run.state.value, run.exit_status)
        plan = {**self.plan(), **run.overrides}
        try:
            with open(run.log_path, encoding="utf-8", errors="replace") as fh:
                log = fh.read()
        except OSError as exc:
            log = f"(log unreadable: {exc})"
        try:
            findings = list(spec.judge(log, plan))
        except Exception as exc:  # noqa: BLE001 - a judging bug must not lose the run
            findings = [Finding(step.id, Verdict.UNKNOWN, Msg("judging the run crashed: {exc!r}", exc=exc))]
        findings = [dataclasses.replace(f, step=step.id) for f in findings]
        if (run.state is ActionState.FAILED and not any(f.verdict is Verdict.FAIL for f in findings)
                and not (spec.judges_exit and findings)):  # that judge said what the exit status means
            findings.append(Finding(step.id, Verdict.FAIL, Msg("the run {reason}: see its log ({log_path})", reason=reason, log_path=run.log_path),
                                    "host", (f"exit status {run.exit_status}",),
                                    Msg("Read the run's log for what failed: {log_path} (`l` on the step screen).", log_path=run.log_path)))
        elif run.state in (ActionState.CANCELLED, ActionState.INTERRUPTED):
            what = Msg("was cancelled") if run.state is ActionState.CANCELLED else Msg("was interrupted (its supervisor is gone)")
            # what the run measured stays; a judge's "could not tell" (no readable summary, nothing sampled) only
            # repeats that the run stopped early, which the finding below says (walk 28 #18: two unknowns for one cancel)
            findings = [f for f in findings if f.verdict is not Verdict.UNKNOWN]
            # first: the cancel is what the screens say of the run (not a judge's "no readable summary" after it)
            import re

            # torchrun's elastic agent turns the cancel's SIGTERM into a SignalException and prints its traceback
            # (walk 39 #1: a traceback on the operator's screen after a cancel read as a crash)
            sig = re.search(r"SignalException: Process \d+ got signal: (\d+)", log)
            said = Msg("the run {what} before it finished: what it measured until then is judged here, the rest was "
                       "not measured", what=what) + (Msg("; the traceback at the end of its log ('{line}') is torchrun "
                                                         "reporting that it was stopped, not a fault",
                                                         line=sig.group(0)) if sig else "")
            findings.insert(0, Finding(step.id, Verdict.UNKNOWN, said, "host",
                                       (reason,), Msg("Not a failure: run it again (a on the step, or `bringup run {step}`) to "
                                                      "finish it.", step=step.id)))
        results: dict[str, Any] = {}
        if spec.results is not None:
            try:
                results = dict(spec.results(log, plan))
            except Exception as exc:  # noqa: BLE001 - the findings stand without the table
                results = {"error": f"the results table could not be read: {exc!r}"}
        if not self.observing:
            self.record_findings(step.id, findings, run.started_at, from_run=True)
            check_id = self.store.latest_check(step.id)[0]
            self.store.update_action_run(run.id, check_run=check_id["id"] if check_id else None, results=results)
        return findings

    def _step_after_action(self, run: ActionRun) -> None:
        """Settle a step whose action ended. Success proves only that the commands ran: the step is then
        judged from the run's log (:meth:`judge_run`), or left pending for its check (``needs_check``), or
        passed when there is nothing to verify. A cancel leaves the step pending (not failed), unless what
        the run measured before the cancel failed. A validation that ran on the CPU (its log says so:
        :func:`wizard.rules.validate.ran_on_cpu`) is ``cpu-only``, never passed, warned or skipped: it proved the
        software path, not the GPU (a failure on the CPU stays failed, an unknown stays pending)."""
        reason = action_reason(run.state.value, run.exit_status)
        step = self.step(run.step_id)
        spec = step.action
        if run.state is ActionState.DRY_RUN:
            return
        if spec is not None and spec.judge is not None:
            self.judge_run(run)
            st = self.store.step_states().get(run.step_id)
            verdict = st.verdict if st else None
            if run.state is ActionState.INTERRUPTED:  # its status says so; the findings say what it measured
                self.store.set_step(run.step_id, StepStatus.INTERRUPTED, verdict, reason=reason, user=run.user,
                                    boot_id=self.boot_id)
            elif run.state is ActionState.CANCELLED and (st is None or st.status is not StepStatus.FAILED):
                self.store.set_step(run.step_id, StepStatus.PENDING, verdict,
                                    reason=reason + ": " + CANCELLED_NOTE, user=run.user,
                                    boot_id=self.boot_id)
            elif (st is not None and st.status in (StepStatus.PASSED, StepStatus.WARNED, StepStatus.SKIPPED)
                  and ran_on_cpu_run(run)):  # a CPU run's skips (performance not judged) are not "not applicable"
                self.store.set_step(run.step_id, StepStatus.CPU_ONLY, verdict, reason=CPU_ONLY_REASON,
                                    user=run.user, boot_id=self.boot_id)
            return
        if run.state is ActionState.SUCCEEDED:
            if is_checked(step):
                self.store.set_step(run.step_id, StepStatus.PENDING, reason=reason + NEEDS_CHECK, user=run.user,
                                    boot_id=self.boot_id)
                return
            status = StepStatus.PASSED
        else:
            status = {ActionState.FAILED: StepStatus.FAILED, ActionState.CANCELLED: StepStatus.PENDING,
                      ActionState.INTERRUPTED: StepStatus.INTERRUPTED}[run.state]
        self.store.set_step(run.step_id, status, reason=reason, user=run.user, boot_id=self.boot_id)

    def needs_check(self, step_id: str) -> bool:
        """The step's action succeeded and its check has not run since."""
        st = self.store.step_states().get(step_id)
        return bool(st and st.status is StepStatus.PENDING and st.reason.endswith(NEEDS_CHECK))

    def reconcile(self) -> list[ActionRun]:
        """On start: settle every run recorded as running, and every step still shown running whose last run
        has ended (an older bringup recorded the two apart). Returns the runs still running."""
        still = []
        for run in self.store.action_runs(state=ActionState.RUNNING):
            run = self.refresh_action(run)
            if run.state is ActionState.RUNNING:
                still.append(run)
        if not self.observing:
            for sid, st in self.store.step_states().items():
                last = self.last_run(sid) if st.status is StepStatus.RUNNING else None
                if last is not None and last.state is not ActionState.RUNNING:
                    self.refresh_action(last)
        return still

    def run_ordinal(self, run: ActionRun) -> tuple[int, int]:
        """(which run of its step this is, how many runs its step has): the number every screen shows ("run 1 of
        1"), not the build-wide run id; (0, 0) for a run the store does not list."""
        ids = [r.id for r in self.store.action_runs(step_id=run.step_id)]
        return (ids.index(run.id) + 1, len(ids)) if run.id in ids else (0, 0)

    def last_run(self, step_id: str) -> ActionRun | None:
        runs = self.store.action_runs(step_id=step_id)
        return runs[-1] if runs else None

    def gpu_load_run(self, except_step: str = "") -> ActionRun | None:
        """A run under way now of any step whose action loads this node's GPUs (``ActionSpec.loads_gpus``: a
        validation, a DCGM diagnostic, a burn-in, a soak, the idle baseline) other than ``except_step``'s, else
        ``None``: :meth:`prepare_action` starts no second GPU load beside it, as DCGM refuses a second diagnostic
        (DCGM_ST_IN_USE)."""
        loads = {s.id for s in self.steps() if s.action is not None and s.action.loads_gpus} - {except_step}
        for run in reversed(self.store.action_runs(state=ActionState.RUNNING)):
            if run.step_id in loads:
                run = self.refresh_action(run)
                if run.state is ActionState.RUNNING:
                    return run
        return None

    def running_run(self, step_id: str) -> ActionRun | None:
        """The run of ``step_id``'s action under way now (its supervisor alive, looked at again: a run recorded
        running whose supervisor died is settled here), else ``None``: the one test of "its action runs" that
        ``run``, ``validate`` (:meth:`prepare_action` refuses a second start) and the TUI's step screen (``a`` opens
        that run's screen) make (walk 24: a second ``validate burnin`` started while the first went on)."""
        for run in reversed(self.store.action_runs(step_id=step_id, state=ActionState.RUNNING)):
            run = self.refresh_action(run)
            if run.state is ActionState.RUNNING:
                return run
        return None


NEEDS_CHECK = "; check it to verify"


def ran_on_cpu_run(run: ActionRun) -> bool:
    """The run's log says it ran on the CPU (a validation run with ``--device cpu``, or ``auto`` without a GPU)."""
    try:
        with open(run.log_path, encoding="utf-8", errors="replace") as fh:
            return ran_on_cpu(fh.read())
    except OSError:
        return False


PASSES_NOTE = N_("This step's last check passes: the machine needs nothing from this action. Run it only to redo it "
                 "on purpose.")


@dataclass
class PreparedAction:
    """An action made concrete for this host, before it starts: what :meth:`Build.run_action` asks the
    operator to confirm. ``refusal`` says why it cannot run here ("" when it can) and ``refusal_kind`` which
    case it is: ``observing`` (another bringup holds the build), ``manual`` (do it by hand: ``refusal`` says
    what), ``done`` (nothing to do: the machine already is as the action would leave it), ``root`` (it needs root),
    ``running`` (a run of the step's action is under way: ``running`` is that run, :meth:`Build.running_run`)."""

    step: Step
    resolved: act.Resolved
    overrides: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    refusal: str = ""
    refusal_kind: str = ""
    running: ActionRun | None = None
    check_passes: bool = False  # the step's last check passed (the confirmation says so: :attr:`needless`)

    @property
    def needless(self) -> str:
        """What the confirmation says first when the step's last check passes and the action changes the system (walk
        32 #9 in the TUI, walk 45 #10 in the CLI); "" otherwise."""
        a = self.step.action
        changes = a is not None and (a.changes_system or self.resolved.changes_system)
        return PASSES_NOTE if self.check_passes and changes else ""

    @property
    def commands(self) -> list[str]:
        """The exact operations, one line each, as they will run."""
        return self.resolved.describe()

    def confirmation(self) -> Confirmation:
        """The text shown before asking: title, why, what it changes (and the run's note), then the exact
        commands; ``words`` are for a printer to wrap, ``commands`` are printed as they are."""
        a = self.step.action
        assert a is not None
        changes, root = a.changes_system or self.resolved.changes_system, a.needs_root or self.resolved.needs_root
        yes_no = {True: Msg("yes"), False: Msg("no")}
        facts = Msg("changes the system: {changes}; needs root: {root}", changes=yes_no[bool(changes)],
                    root=yes_no[bool(root)])
        if a.backs_up:
            facts = facts + Msg("; backs up: {paths}", paths=", ".join(a.backs_up))
        # Msg lines: shown translated (tr) by whoever prints them; the commands stay as they are
        note = ["  " + self.resolved.note] if self.resolved.note else []
        return Confirmation([Msg("{title}  ({step})", title=Msg.plain(a.title), step=self.step.id),
                             "  " + Msg.plain(a.description),
                             "  " + facts] + note, ["  " + line for line in self.commands])


@dataclass
class Confirmation:
    """:meth:`PreparedAction.confirmation`: ``words`` (``Msg`` lines, translated by whoever prints them) then
    ``commands`` (verbatim); iterating gives every line in that order."""

    words: list[str]
    commands: list[str]

    def __iter__(self) -> Iterator[str]:
        return iter(self.words + self.commands)


@dataclass
class ActionOutcome:
    """What :meth:`Build.run_action` did. ``run`` is ``None`` when nothing started (``prepared.refusal``,
    ``declined``, ``error``); ``findings`` are the ones stored for the ended run (judged from its log, or its
    step's check when ``checked``); ``verdict`` is theirs (a warning is a warning, not a pass)."""

    prepared: PreparedAction
    run: ActionRun | None = None
    declined: bool = False
    error: str = ""
    checked: bool = False
    findings: list[Finding] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict | None:
        return overall(self.findings) if self.findings else None

    @property
    def results(self) -> dict[str, Any]:
        return dict(self.run.results) if self.run is not None else {}


async def _maybe_await(value: Any) -> Any:
    import inspect

    return await value if inspect.isawaitable(value) else value


async def _tick(run: ActionRun, poll_s: float) -> None:
    """Wait ``poll_s``, or less when the supervisor this process started exits first (no poll latency at the
    end of a run)."""
    import asyncio
    import subprocess

    child = act._CHILDREN.get(run.pid) if run.pid is not None else None
    if child is None:
        await asyncio.sleep(poll_s)
        return

    def wait() -> None:
        try:
            child.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            pass

    await asyncio.to_thread(wait)

__all__ = ["Build", "ResumePoint", "PreparedAction", "ActionOutcome", "run_checks", "judge", "host_identity", "checked_steps", "local_host",
           "StateDirError", "StoreError"]
