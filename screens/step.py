"""Step screen: why, what to do, findings with expandable evidence; check / action / confirm / skip."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Collapsible, Footer, Static

from screens.glyphs import status_text, verdict_text
from screens.widgets import TopBar
from wizard.engine import is_checked
from wizard.store import ActionState, short_time
from wizard import actions as act
from wizard.model import StepStatus, Verdict

if TYPE_CHECKING:
    from screens.app import BringupApp


class StepScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    BINDINGS = [
        Binding("c", "check", "Check"),
        Binding("a", "run_action", "Run"),
        Binding("l", "show_log", "Log"),
        Binding("d", "confirm", "Confirm"),
        Binding("s", "skip", "Skip"),
        Binding("x", "acknowledge", "Ack event"),
        Binding("z", "sizing", "Sizing"),  # plan stage only (check_action)
        Binding("n", "next", "Next", show=False),
        Binding("p", "prev", "Prev", show=False),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, step_id: str) -> None:
        super().__init__()
        self.step_id = step_id
        self._sig: tuple | None = None

    @property
    def build(self):
        return self.app.build

    @property
    def step(self):
        return self.build.step(self.step_id)

    def compose(self) -> ComposeResult:
        b = self.build
        step = self.step
        stage = b.stage_of(step.id)
        si = [st.id for st in b.stages].index(stage.id) + 1
        pi = [s.id for s in stage.steps].index(step.id) + 1
        yield TopBar()
        with Vertical(id="step-head"):  # stays put while the body scrolls: you always see where you are
            yield Static(f"Stage {si}/{len(b.stages)} {stage.title}  |  step {pi} of {len(stage.steps)}  |  {step.id}",
                         id="step-crumb", markup=False)
            yield Static(step.title, id="step-title", markup=False)
            yield Static("", id="step-status", markup=False)
        with VerticalScroll(id="step-body"):
            yield Static("Why", classes="section first", markup=False)
            yield Static(step.why, id="step-why", markup=False)
            if step.instructions:
                yield Static("What to do", classes="section", markup=False)
                yield Static(step.instructions, id="step-instructions", markup=False)
            if step.action is not None:
                yield Static("Action", classes="section", markup=False)
                yield Static("", id="step-action", markup=False)
            yield Static("Findings", classes="section", id="findings-title", markup=False)
            yield Vertical(id="findings")
        with Horizontal(id="step-buttons"):  # keys in the footer; n/p on the buttons
            if is_checked(step):
                yield Button("Check", id="check", compact=True, variant="primary")
            if step.action is not None:
                yield Button("Run action", id="run_action", compact=True, variant="primary")
                yield Button("Log", id="show_log", compact=True)
            yield Button("Confirm", id="confirm", compact=True)
            yield Button("Skip", id="skip", compact=True)
            yield Button("< p Prev", id="prev", compact=True)
            yield Button("Next n >", id="next", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.build.set_cursor(self.step_id)
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=True)
        self.query_one("#step-body").focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide bindings that do not apply to this step (no check, no action, observing)."""
        step = self.step
        observing = self.build.observing
        if action == "check":
            return is_checked(step) and not observing
        if action == "run_action":
            return step.action is not None and not observing
        if action == "show_log":
            return step.action is not None
        if action in ("confirm", "skip"):
            return not observing
        if action == "sizing":
            return step.stage_id == "plan"
        if action == "acknowledge":
            _, findings = self.build.store.latest_check(step.id)
            return not observing and any(f.key and f.verdict in (Verdict.FAIL, Verdict.WARN) for f in findings)
        return True

    # ------------------------------------------------------------------ view

    def refresh_view(self) -> None:
        b = self.build
        step = self.step
        state = b.store.step_states().get(step.id)
        run_meta, findings = b.store.latest_check(step.id)
        last_run = b.last_run(step.id) if step.action is not None else None
        checking = step.id in self.app.checking
        sig = (state.status if state else None, state.verdict if state else None, state.updated_at if state else None,
               run_meta["id"] if run_meta else None, last_run.state if last_run else None,
               last_run.id if last_run else None, checking, b.stale(step.id), b.observing)
        if sig == self._sig:
            return
        new_results = self._sig is not None and run_meta is not None and self._sig[3] != run_meta["id"]
        self._sig = sig
        self.refresh_bindings()
        basic = self.app.basic
        st = state.status if state else StepStatus.PENDING
        line = status_text(st, basic).plain.strip()
        if state and state.verdict is not None:  # after a CPU run it is the software path's verdict, not the GPU's
            line += (f"  |  {'software path' if st is StepStatus.CPU_ONLY else 'verdict'} "
                     f"{verdict_text(state.verdict, basic).plain}")
        if state:
            line += f"  |  {short_time(state.updated_at)}" + (f" by {state.user}" if state.user else "")
            if state.reason:
                line += f"  |  {state.reason}"
        if checking:
            line += "  |  checking..."
        if b.stale(step.id):
            line += "\nRebooted since this was verified: check it again."
        waiting = [r for r in step.requires if not b.status(r).done]
        if waiting:
            line += "\nDo first: " + ", ".join(f"{b.step(r).title} ({r})" for r in waiting)
        if step.manual and st is StepStatus.PENDING and not b.observing:
            line += "\nThe machine cannot verify this: do it, then Confirm (d)."
        if st is StepStatus.WARNED:
            line += "\nChecked with warnings, not passed: read them below; fix and check again, or Confirm (d) with a note."
        if st is StepStatus.CPU_ONLY:
            line += "\nNot done: validate on the GPUs (validate_device cuda), or Skip (s) with a reason."
        self.query_one("#step-status", Static).update(line)
        if step.action is not None:
            a = step.action
            info = [f"{a.title}: {a.description}",
                    f"Changes the system: {'yes' if a.changes_system else 'no'}; needs root: "
                    f"{'yes' if a.needs_root else 'no'}" + (f"; backs up: {', '.join(a.backs_up)}" if a.backs_up else "")]
            if last_run is not None:
                info.append(f"Last run {last_run.id}: {last_run.state}"
                            + (f" (exit status {last_run.exit_status})" if last_run.exit_status is not None else "")
                            + f", started {short_time(last_run.started_at)} by {last_run.user}; log {last_run.log_path}")
            self.query_one("#step-action", Static).update("\n".join(info))
        self._update_buttons()
        box = self.query_one("#findings", Vertical)
        box.remove_children()
        title = self.query_one("#findings-title", Static)
        if not findings:
            title.update("Findings" + ("" if is_checked(step) else " (none: this step is confirmed by hand)"))
            if is_checked(step):
                box.mount(Static("Not checked yet. Press c to check.", markup=False, classes="muted"))
            return
        title.update(f"Findings ({short_time(run_meta['finished_at']) if run_meta else ''})")
        opened = False
        for f in findings:
            label = verdict_text(f.verdict, basic).plain
            subj = "" if f.subject in ("host", "") or f.message.startswith(f.subject) else f"{f.subject}: "
            open_it = not opened and f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN)
            opened = opened or open_it
            body = []
            if f.evidence:
                body.append(Static("Evidence:\n" + "\n".join("  " + e for e in f.evidence), markup=False,
                                   classes="evidence"))
            if f.remedy:
                body.append(Static(f"What to do: {f.remedy}", markup=False))
            if f.source:
                body.append(Static(f"Source: {f.source}", markup=False, classes="muted"))
            symbols = {"collapsed_symbol": ">", "expanded_symbol": "v"} if basic else {}
            box.mount(Collapsible(*body, title=Content(f"{label:<9} {subj}{f.message}"), collapsed=not open_it,  # type: ignore[arg-type]  # a Content title (no markup parsing) works; Textual types it str
                                  classes=f"finding -{f.verdict.value}", **symbols))  # type: ignore[arg-type]  # symbols: only the two str symbol arguments
        if new_results:  # a check just finished: bring its findings into view
            self.call_after_refresh(title.scroll_visible, top=True, animate=False)

    def _update_buttons(self) -> None:
        b = self.build
        for bid in ("check", "run_action", "confirm", "skip"):
            for btn in self.query(f"#{bid}"):
                btn.display = not b.observing  # read-only window: no write buttons at all

    # ------------------------------------------------------------------ actions

    def on_button_pressed(self, event: Button.Pressed) -> None:
        handler = getattr(self, f"action_{event.button.id}", None)
        if handler is not None:
            handler()

    def _writable(self) -> bool:
        if self.build.observing:
            self.notify(f"read-only: {self.app.read_only_why()}", severity="warning")
            return False
        return True

    def action_check(self) -> None:
        if not is_checked(self.step):
            self.notify("this step has no automatic check; confirm it when done")
            return
        if self._writable():
            self.app.run_checks([self.step_id])

    def action_run_action(self) -> None:
        if self.step.action is None:
            self.notify("this step has no action")
            return
        if self._writable():
            run = self.build.last_run(self.step_id)
            if run is not None and run.state is ActionState.RUNNING:
                from screens.action import ActionScreen

                self.app.push_screen(ActionScreen(run.id))
                return
            self.app.start_action(self.step_id)

    def action_show_log(self) -> None:
        from screens.action import ActionScreen

        run = self.build.last_run(self.step_id)
        if run is None:
            self.notify("no run of this step's action yet")
            return
        self.app.push_screen(ActionScreen(run.id))

    def action_confirm(self) -> None:
        if not self._writable():
            return
        state = self.build.store.step_states().get(self.step_id)
        if state and state.verdict is Verdict.FAIL:
            self.notify("the last check failed: fix it and check again, or skip with a reason",
                        severity="warning")
            return
        why = self.build.confirm_refusal(self.step_id)
        if why:
            self.notify(why, severity="warning")
            return
        from screens.dialogs import ConfirmStep

        def done(note: str | None) -> None:
            if note is not None:
                try:
                    self.build.confirm(self.step_id, note)
                except ValueError as exc:
                    self.notify(str(exc), severity="warning")
                    return
                self.app.bump()

        self.app.push_screen(ConfirmStep(self.step.title, act.current_user()), done)

    def action_skip(self) -> None:
        from screens.dialogs import SkipDialog

        if not self._writable():
            return

        def done(reason: str | None) -> None:
            if reason:
                self.build.skip(self.step_id, reason)
                self.app.bump()

        self.app.push_screen(SkipDialog(self.step.title), done)

    def action_acknowledge(self) -> None:
        """Acknowledge a past event (an old Xid, an AER error) with a reason, then re-check."""
        from screens.dialogs import AckDialog

        _, findings = self.build.store.latest_check(self.step_id)
        ackable = [f for f in findings if f.key and f.verdict in (Verdict.FAIL, Verdict.WARN)]
        if not ackable or not self._writable():
            return

        def done(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            key, reason = result
            f = next(f for f in ackable if f.key == key)
            self.build.acknowledge(f, reason)
            self.notify("acknowledged; checking again")
            if is_checked(self.step):
                self.app.run_checks([self.step_id])
            self.app.bump()

        self.app.push_screen(AckDialog(ackable), done)

    def action_sizing(self) -> None:
        """z on a plan step: the Plan & sizing calculator (screens/sizing.py)."""
        from screens.sizing import SizingScreen

        if self.step.stage_id == "plan":
            self.app.push_screen(SizingScreen())

    def _go(self, delta: int) -> None:
        ids = [s.id for s in self.build.steps()]
        i = ids.index(self.step_id) + delta
        if 0 <= i < len(ids):
            self.app.pop_screen()
            self.app.push_screen(StepScreen(ids[i]))

    def action_next(self) -> None:
        self._go(1)

    def action_prev(self) -> None:
        self._go(-1)

    def action_back(self) -> None:
        self.app.pop_screen()
