"""The engine: run a step's checks on a host, and hold one build's state.

``run_checks`` is the whole data flow for a set of steps: collect the probes they need
concurrently on the host, run each step's pure check, and return findings. ``Build`` wraps one
build's store, lock and action runs; the CLI and the TUI both go through it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from wizard import actions as act
from wizard.rules.identity import dmi_fields
from wizard.facts import facts_of
from wizard.hosts import Host, LocalHost
from wizard.model import Finding, Stage, Step, StepStatus, Verdict, overall, status_for_verdict
from wizard.parsers.host import parse_os_release
from wizard.probes import BUILTINS, IDENTITY_PROBES, ProbeOutput, collect
from wizard.store import (
    ActionRun, BuildInfo, BuildLock, StateDirError, Store, StoreError, builds_dir, ensure_state_dir,
    list_builds, new_build_id, utcnow,
)


def local_host() -> LocalHost:
    return LocalHost(builtins=BUILTINS)


def checked_steps(stages: Iterable[Stage], stage_id: str | None = None) -> list[Step]:
    """Steps with a check, in catalogue order, optionally of one stage."""
    return [s for st in stages if stage_id in (None, st.id) for s in st.steps if s.check is not None]


def judge(steps: Sequence[Step], outputs: Mapping[str, ProbeOutput], plan: Mapping[str, Any]) -> dict[str, list[Finding]]:
    """Run each step's check on already-collected outputs. A check that raises (a bug) yields an
    ``unknown`` finding naming the exception instead of hiding the other steps' findings."""
    facts = facts_of(outputs)  # one cache per run: every rule shares what the parsers read
    result: dict[str, list[Finding]] = {}
    for s in steps:
        assert s.check is not None
        try:
            findings = list(s.check(facts, plan))
        except Exception as exc:  # noqa: BLE001
            findings = [Finding(s.id, Verdict.UNKNOWN, f"the check crashed: {exc!r}", "host", (),
                                "This is a bringup bug: please report it with a capture bundle.", "")]
        result[s.id] = [dataclasses.replace(f, step=s.id) for f in findings]
    return result


async def run_checks(host: Host, steps: Sequence[Step], plan: Mapping[str, Any]) -> tuple[dict[str, list[Finding]], dict[str, ProbeOutput]]:
    """Collect every probe ``steps`` need (concurrently) and judge them. Returns
    (step id -> findings, probe name -> output)."""
    names = [p for s in steps for p in s.probes]
    outputs = await collect(host, names, plan)
    return judge(steps, outputs, plan), outputs


async def host_identity(host: Host) -> dict[str, Any]:
    """Hostname, machine id, boot id, DMI product/serial, OS and kernel: each may be empty."""
    outs = await collect(host, IDENTITY_PROBES)

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
             clock: Any = utcnow, readonly: bool = False) -> "Build":
        """Open the newest build (or ``build_id``) under ``state_dir``; create one with ``create``.

        ``readonly``: open without the lock and without writing anything (for a state directory
        this user cannot write, e.g. root's build viewed by an operator); ``observing`` is True.

        Raises:
            StateDirError: the state directory is not writable (checked before anything runs).
            StoreError: the build file is corrupt, from a newer bringup, or missing.
        """
        if readonly and create:
            raise ValueError("cannot create a build read-only")
        if not readonly:
            ensure_state_dir(Path(state_dir))
        identity = dict(identity or {})
        existing = list_builds(state_dir)
        if create:
            import datetime as _dt

            try:
                now = _dt.datetime.fromisoformat(clock())
            except (TypeError, ValueError):
                now = None
            base_id = build_id = new_build_id(identity.get("hostname", ""), now)
            n = 1
            while True:  # two builds in the same second get -2, -3, ...
                path = builds_dir(state_dir) / build_id
                try:
                    path.mkdir(parents=True, exist_ok=False)
                    break
                except FileExistsError:
                    n += 1
                    build_id = f"{base_id}-{n}"
            info = BuildInfo(build_id, path)
        elif build_id is not None:
            match = [b for b in existing if b.build_id == build_id]
            if not match:
                raise StoreError(f"no build {build_id} under {builds_dir(state_dir)}")
            info = match[0]
        else:
            if not existing:
                raise StoreError(f"no build under {builds_dir(state_dir)} yet: start one with `bringup`")
            info = existing[-1]
        lock = BuildLock(info.path)
        if not readonly:
            lock.acquire()
        try:
            store = Store.open(info.db, readonly=not lock.acquired, create=create, clock=clock)
        except Exception:
            lock.release()
            raise
        b = cls(info, store, lock, stages, str(identity.get("boot_id", "")), dry_run)
        if create:
            from wizard import __version__

            store.set_meta(build_id=build_id, created=clock(), bringup_version=__version__)
            store.set_host({k: v for k, v in identity.items()})
        return b

    @property
    def observing(self) -> bool:
        return self.store.readonly

    def close(self) -> None:
        self.store.close()
        self.lock.release()

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
        operator acknowledged with a reason; those past events no longer count)."""
        exp = self.plan()
        exp["acknowledged"] = frozenset(self.store.acks())
        serials = self.store.meta().get("gpu_serials")
        if isinstance(serials, dict):
            exp["gpu_serials"] = serials
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

    def stale(self, step_id: str) -> bool:
        """A boot-sensitive step verified under another boot: the reboot may have changed it."""
        s = self.step(step_id)
        st = self.store.step_states().get(step_id)
        return bool(s.boot_sensitive and st and st.status in (StepStatus.PASSED, StepStatus.FAILED)
                    and st.boot_id and self.boot_id and st.boot_id != self.boot_id)

    def stale_steps(self) -> list[Step]:
        """Boot-sensitive checked steps verified under another boot (after a reboot), in order."""
        return [s for s in self.steps() if s.check is not None and self.stale(s.id)]

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
        """A stage is passed when every step is done, failed if any failed, running if any runs."""
        states = self.store.step_states()
        sts = [states[s.id].status if s.id in states else StepStatus.PENDING for s in stage.steps]
        if any(x is StepStatus.RUNNING for x in sts):
            return StepStatus.RUNNING
        if any(x is StepStatus.FAILED for x in sts):
            return StepStatus.FAILED
        if any(x is StepStatus.INTERRUPTED for x in sts):
            return StepStatus.INTERRUPTED
        if sts and all(x is StepStatus.SKIPPED for x in sts):
            return StepStatus.SKIPPED  # nothing here applied (e.g. no GPU yet): not "passed"
        if all(x.done for x in sts):
            return StepStatus.PASSED
        return StepStatus.PENDING

    def set_cursor(self, step_id: str) -> None:
        if not self.observing:
            self.store.set_meta(cursor_step=step_id)

    def resume_point(self) -> ResumePoint:
        """Where to pick up: the step of a running action, else the step the operator last
        opened, else the most recent interrupted step, else the first step not done."""
        meta = self.store.meta()
        states = self.store.step_states()
        running = self.store.action_runs(state=act.RUNNING)
        interrupted = sorted((st for st in states.values() if st.status is StepStatus.INTERRUPTED),
                             key=lambda st: st.updated_at)
        ids = {s.id for s in self.steps()}
        step: Step | None = None
        cursor = meta.get("cursor_step")
        for candidate in ([r.step_id for r in running][-1:] + ([cursor] if isinstance(cursor, str) else [])
                          + [st.step_id for st in interrupted][-1:]):
            if candidate in ids:
                step = self.step(candidate)
                break
        if step is None:
            for s in self.steps():
                st = states.get(s.id)
                if st is None or not st.status.done:
                    step = s
                    break
        if step is None:
            step = self.steps()[-1]
        return ResumePoint(self.stage_of(step.id), step, running,
                           [st.step_id for st in interrupted if st.step_id in ids])

    def record_findings(self, step_id: str, findings: list[Finding], started_at: str, snapshot: str = "") -> Verdict:
        verdict = overall(findings)
        if not self.observing:
            self.store.record_check(step_id, findings, verdict, self.boot_id, started_at, snapshot)
            step = self.step(step_id)
            status = status_for_verdict(verdict)
            if step.manual and status is StepStatus.PENDING and self.status(step_id) is StepStatus.CONFIRMED:
                status = StepStatus.CONFIRMED
            reason = ""
            if status is StepStatus.SKIPPED:
                reason = "not applicable: " + next((f.message for f in findings if f.verdict is Verdict.SKIP), "")
            self.store.set_step(step_id, status, verdict, reason=reason, boot_id=self.boot_id,
                                user=act.current_user())
        return verdict

    def confirm(self, step_id: str, note: str = "") -> None:
        self.store.set_step(step_id, StepStatus.CONFIRMED, reason=note, user=act.current_user(), boot_id=self.boot_id)
        if step_id == "grounding.serials":  # an intended swap: the serials seen last become the reference
            pending = self.store.meta().get("gpu_serials_seen_last")
            if isinstance(pending, dict) and pending:
                rec = dict(self.store.meta().get("gpu_serials") or {})
                rec.update({bus: {"serial": s, "at": self.store.clock()} for bus, s in pending.items()})
                self.store.set_meta(gpu_serials=rec)

    def skip(self, step_id: str, reason: str) -> None:
        if not reason.strip():
            raise ValueError("a skip needs a reason")
        self.store.set_step(step_id, StepStatus.SKIPPED, reason=reason.strip(), user=act.current_user(),
                            boot_id=self.boot_id)

    def reset(self, step_id: str) -> None:
        self.store.set_step(step_id, StepStatus.PENDING, user=act.current_user(), boot_id=self.boot_id)

    # ------------------------------------------------------------ checks

    async def check_steps(self, host: Host, steps: Sequence[Step], snapshot: str = "") -> dict[str, list[Finding]]:
        started = self.store.clock()
        results, outputs = await run_checks(host, steps, self.expectations())
        for sid, findings in results.items():
            self.record_findings(sid, findings, started, snapshot)
        self.remember_gpu_serials(outputs)
        return results

    # ------------------------------------------------------------ actions

    @property
    def actions_dir(self) -> Path:
        return self.info.path / "actions"

    @property
    def backup_dir(self) -> Path:
        return self.info.path / "backups"

    async def resolve_action(self, host: Host, step: Step) -> act.Resolved:
        assert step.action is not None
        outputs = await collect(host, step.action.probes, self.plan()) if step.action.probes else {}
        ctx = act.ActionContext(outputs, self.plan(), str(self.backup_dir), state_dir=str(self.info.path.parent.parent))
        return step.action.resolve(ctx)

    def start_action(self, step: Step, resolved: act.Resolved, dry_run: bool | None = None) -> ActionRun:
        """Start ``step``'s resolved action (detached). Raises ``PermissionError`` when it needs
        root and this is not root, ``StoreError`` when observing, ``ValueError`` for manual-only."""
        import os

        assert step.action is not None
        if self.observing:
            raise StoreError("observing: another bringup holds this build; actions are disabled here")
        if resolved.manual:
            raise ValueError(resolved.manual)
        dry = self.dry_run if dry_run is None else dry_run
        if step.action.needs_root and os.geteuid() != 0 and not dry:
            raise PermissionError(f"'{step.action.title}' needs root: run bringup with sudo")
        run = act.start_run(self.store, self.actions_dir, step.id, step.action.title, resolved, self.boot_id, dry)
        if not dry:
            self.store.set_step(step.id, StepStatus.RUNNING, user=act.current_user(), boot_id=self.boot_id)
        return run

    def refresh_action(self, run: ActionRun) -> ActionRun:
        """Update a run (finished / still running / interrupted) and its step's status."""
        run = act.refresh(self.store, run, self.boot_id)
        if run.state != act.RUNNING and not self.observing:
            last = self.last_run(run.step_id)
            # settle the step once: it still shows this run as running
            if last is not None and last.id == run.id and self.status(run.step_id) is StepStatus.RUNNING:
                self._step_after_action(run)
        return run

    def wait_action(self, run: ActionRun, timeout_s: float | None = None, poll_s: float = 0.1) -> ActionRun:
        """Block until ``run`` ends (or ``timeout_s``), settling its step's status."""
        import time

        t0 = time.monotonic()
        while True:
            run = self.refresh_action(run)
            if run.state != act.RUNNING or (timeout_s is not None and time.monotonic() - t0 > timeout_s):
                return run
            time.sleep(poll_s)

    def _step_after_action(self, run: ActionRun) -> None:
        """Settle a step whose action ended. Success proves only that the commands ran: the step
        is then judged from the run's log (``ActionSpec.judge``), or left pending for its check
        (``needs_check``), or passed when there is nothing to verify."""
        reason = f"action {run.state}" + (f" (exit status {run.exit_status})" if run.exit_status is not None else "")
        step = self.step(run.step_id)
        spec = step.action
        # a judged action's log says why it failed too (a validation script exits 2 when a sub-test errored):
        # judge it, so the failure carries findings instead of only an exit status
        judge_failed = run.state == act.FAILED and spec is not None and spec.judge is not None
        if run.state == act.SUCCEEDED or judge_failed:
            if spec is not None and spec.judge is not None:
                try:
                    with open(run.log_path, encoding="utf-8", errors="replace") as fh:
                        log = fh.read()
                except OSError as exc:
                    log = f"(log unreadable: {exc})"
                try:
                    findings = list(spec.judge(log, self.plan()))
                except Exception as exc:  # noqa: BLE001 - a judging bug must not lose the run
                    findings = [Finding(step.id, Verdict.UNKNOWN, f"judging the run crashed: {exc!r}")]
                findings = [dataclasses.replace(f, step=step.id) for f in findings]
                if judge_failed and not any(f.verdict is Verdict.FAIL for f in findings):
                    findings.append(Finding(step.id, Verdict.FAIL, f"the run {reason}: see its log ({run.log_path})",
                                            "host", [f"exit status {run.exit_status}"],
                                            f"Read the run's log for what failed: {run.log_path} (`l` on the step screen)."))
                self.record_findings(step.id, findings, run.started_at)
                return
            if step.check is not None:
                self.store.set_step(run.step_id, StepStatus.PENDING, reason=reason + NEEDS_CHECK, user=run.user,
                                    boot_id=self.boot_id)
                return
            status = StepStatus.PASSED
        else:
            status = {act.FAILED: StepStatus.FAILED, act.CANCELLED: StepStatus.FAILED,
                      act.INTERRUPTED: StepStatus.INTERRUPTED}.get(run.state)
            if status is None:
                return
        self.store.set_step(run.step_id, status, reason=reason, user=run.user, boot_id=self.boot_id)

    def needs_check(self, step_id: str) -> bool:
        """The step's action succeeded and its check has not run since."""
        st = self.store.step_states().get(step_id)
        return bool(st and st.status is StepStatus.PENDING and st.reason.endswith(NEEDS_CHECK))

    def reconcile(self) -> list[ActionRun]:
        """On start: settle every run recorded as running. Returns the runs still running."""
        still = []
        for run in self.store.action_runs(state=act.RUNNING):
            run = self.refresh_action(run)
            if run.state == act.RUNNING:
                still.append(run)
        return still

    def last_run(self, step_id: str) -> ActionRun | None:
        runs = self.store.action_runs(step_id=step_id)
        return runs[-1] if runs else None


NEEDS_CHECK = "; check it to verify"

__all__ = ["Build", "ResumePoint", "run_checks", "judge", "host_identity", "checked_steps", "local_host",
           "StateDirError", "StoreError"]
