"""Step screen: a three-line header, then the findings (expandable evidence), the action, what to do and why;
check / action / confirm / skip, and n / p through the catalogue (the screen is reused: one step's widgets are
updated in place, so holding n stays responsive)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Collapsible, Static
from textual.widgets._collapsible import CollapsibleTitle

from screens.dialogs import SkipDialog
from screens.glyphs import status_text, verdict_text
from screens.widgets import KeyFooter, TopBar, prose
from wizard.engine import accepted_note, is_checked
from wizard.probes import evidence_shown
from wizard.store import ActionState, short_time
from wizard import actions as act
from wizard.i18n import N_, _, names_listed, spaced, tr, tr_source, tr_subject
from wizard.model import HANDOVER_STEP, proven_by_run, StepStatus, subject_prefix, Verdict

if TYPE_CHECKING:
    from screens.app import BringupApp


SKIP_EXAMPLES = {
    "plan": N_("e.g. single node on an existing rack: sized and budgeted by the vendor"),
    "grounding": N_("e.g. racked, cabled and inventoried by the vendor before delivery"),
    "bios": N_("e.g. cloud instance: no access to the firmware setup"),
    "os": N_("e.g. provider-managed image: the provider owns this setting"),
    "driver": N_("e.g. the provider's image ships and manages the driver"),
    "health": N_("e.g. no GPU in this VM: checked on the GPU node"),
    "gpu": N_("e.g. no GPU in this VM: validated on the GPU node"),
    "node": N_("e.g. no GPU in this VM: validated on the GPU node"),
    "multinode": N_("e.g. a single-node deployment"),
    "report": N_("e.g. the acceptance report is made by the provider"),
    "driver.fabric_manager": N_("e.g. PCIe-only server, no NVSwitch"),
    "plan.power": N_("e.g. single node on an existing rack: power and cooling already budgeted"),
}
"""The skip dialog's example reason: by step id, else by stage id (a reason that fits that step)."""


STATUS_SAYS = {StepStatus.PASSED: Verdict.PASS, StepStatus.WARNED: Verdict.WARN, StepStatus.FAILED: Verdict.FAIL,
               StepStatus.SKIPPED: Verdict.SKIP}
"""The verdict a status already says: the header names the verdict only when it adds to the status (a confirmed
step's, a pending step's unknown, a cpu-only run's software-path verdict)."""


class FindingTitle(CollapsibleTitle):
    """A finding's headline: the open/closed symbol and the verdict in fixed columns, the message wrapped beside
    them (never cut at the right edge)."""

    DEFAULT_CSS = """
    FindingTitle { width: 1fr; padding: 0; }
    """

    def __init__(self, verdict: Text, message: str, collapsed_symbol: str, expanded_symbol: str,
                 collapsed: bool) -> None:
        self.verdict = verdict
        self.message = message
        super().__init__(label=message, collapsed_symbol=collapsed_symbol, expanded_symbol=expanded_symbol,
                         collapsed=collapsed)

    def _update_label(self) -> None:
        if not hasattr(self, "verdict"):  # the base class sets its reactives before ours
            return
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(width=1, no_wrap=True)
        grid.add_column(width=max(9, cell_len(self.verdict.plain)), no_wrap=True)  # "? UNKNOWN": the messages align
        grid.add_column(ratio=1, overflow="fold")  # a long mount option string folds, never cut with an ellipsis
        grid.add_row(self.collapsed_symbol if self.collapsed else self.expanded_symbol, self.verdict,
                     Text(self.message))
        self.update(grid)


class FindingBox(Collapsible):
    """One finding: its wrapped headline, then (expanded) evidence, what to do and the source."""

    def __init__(self, *children, verdict: Text, message: str, collapsed: bool, basic: bool,
                 classes: str = "") -> None:
        symbols = (">", "v") if basic else ("▶", "▼")
        super().__init__(*children, title=f"{verdict.plain} {message}", collapsed=collapsed,
                         collapsed_symbol=symbols[0], expanded_symbol=symbols[1], classes=classes)
        self._title = FindingTitle(verdict, message, symbols[0], symbols[1], collapsed)


class StepScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    FOOTER_KEEP = ("sizing",)  # a plan step is done with z: its footer keeps it at 60 columns (walk 35 #8)
    BINDINGS = [
        Binding("c", "check", "Check"),
        Binding("a", "run_action", "Run"),
        Binding("a", "watch_run", "Watch run"),  # instead of Run while this step's action runs (check_action)
        Binding("l", "show_log", "Log"),
        Binding("d", "confirm", "Confirm"),
        Binding("s", "skip", "Skip"),
        Binding("x", "acknowledge", "Ack"),
        Binding("z", "sizing", "Sizing"),  # plan stage only (check_action)
        Binding("n", "next", "Next"),
        Binding("p", "prev", "Prev"),
        Binding("escape", "back", "Back"),
        Binding("enter", "open_finding", "Details", show=False),
    ]

    def __init__(self, step_id: str) -> None:
        super().__init__()
        self.step_id = step_id
        self._run_running = False  # this step's action ran at the last refresh (check_action reads it: the footer
        # asks often, so no query per call)
        self._sig: tuple | None = None
        self._shown: tuple[str, Any, list[Any]] | None = None  # (step id, its state, its last check's findings)
        self._drawing = False
        self._toasts: list[Any] = []  # what this screen said about the step shown (gone when another is shown)

    @property
    def build(self):
        return self.app.build

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """A toast about the step shown, which goes when the screen shows another step (walk 37 #15: "this step is
        proven only by its run ... multinode.consistency" stayed on multinode.transport after n)."""
        from textual.notifications import Notification, Notify

        toast = Notification(message, title, severity, self.app.NOTIFICATION_TIMEOUT if timeout is None else timeout,
                             markup=markup)
        self._toasts.append(toast)
        self.app.post_message(Notify(toast))

    def on_resize(self) -> None:
        """A new width: the status line, wrapped to the old one, is drawn again (walk 37 #20: at 80 columns it kept its
        60-column break until the step was reopened)."""
        if self.is_mounted:
            self.refresh_view()

    def _drop_toasts(self) -> None:
        """Take this screen's toasts about the step it showed off the screen (Textual's own collection)."""
        shown = getattr(self.app, "_notifications", None)
        gone = [t for t in self._toasts if shown is not None and t in shown]
        self._toasts = []
        for t in gone:
            self.app._unnotify(t, refresh=False)
        if gone:
            self.app._refresh_notifications()

    @property
    def step(self):
        return self.build.step(self.step_id)

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Vertical(id="step-head"):  # stays put while the body scrolls: you always see where you are
            yield Static("", id="step-title", markup=False)
            yield Static("", id="step-status", markup=False)
        with VerticalScroll(id="step-body"):
            yield Static("", id="step-note", markup=False)
            yield Static(_("Findings"), classes="section first", id="findings-title", markup=False)
            yield Vertical(id="findings")
            yield Static(_("Action"), classes="section", id="action-title", markup=False)
            yield Static("", id="step-action", markup=False)
            yield Static(_("What to do"), classes="section", id="instructions-title", markup=False)
            yield Static("", id="step-instructions", markup=False)
            yield Static(_("Why"), classes="section", markup=False)
            yield Static("", id="step-why", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show_step(self.step_id)
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=False)
        self.query_one("#step-body").focus()

    def show_step(self, step_id: str) -> None:
        """Show ``step_id`` in this screen (its header, texts and findings), at the top, and make it the build's
        cursor (where a later bringup resumes). Keys already queued (n held down) are answered first: the screen
        is drawn once, for the step they end on."""
        if step_id != self.step_id:
            self._drop_toasts()
        self.step_id = step_id
        self.app.current_step = step_id
        self.build.set_cursor(step_id)
        if not self._drawing:
            self._drawing = True
            self.call_after_refresh(self._draw_step)

    def _draw_step(self) -> None:
        self._drawing = False
        self._sig = None
        step = self.step
        self.query_one("#step-why", Static).update(prose(_(step.why)))
        todo = step.instructions_for(self.build.store.plan())  # "record X in the plan" only while X is missing
        self.query_one("#step-instructions", Static).update(prose(_(todo)) if todo else "")
        for wid in ("#instructions-title", "#step-instructions"):
            self.query_one(wid).display = bool(todo)
        for wid in ("#action-title", "#step-action"):
            self.query_one(wid).display = step.action is not None
        self.refresh_view()
        self.query_one("#step-body", VerticalScroll).scroll_home(animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide bindings that do not apply to this step (no check, no action, observing)."""
        step = self.step
        observing = self.build.observing
        if action == "check":
            return is_checked(step) and not observing
        if action == "run_action":
            return step.action is not None and not observing and not self._run_running
        if action == "watch_run":  # walk 20: "a Run" stayed in the footer while the action ran
            return step.action is not None and self._run_running
        if action == "show_log":
            return step.action is not None
        if action == "confirm":  # not offered where it is refused (a step only its run proves, a failed check);
            # pressed anyway, on_key has action_confirm say why
            st = self._shown_state()[0]
            return not observing and not (st is not None and st.verdict is Verdict.FAIL) and not (
                proven_by_run(step) and self.build.confirm_refusal(step.id))
        if action == "skip":
            return not observing
        if action == "sizing":
            return step.stage_id == "plan"
        if action == "acknowledge":  # only where the last check reports a past event to acknowledge (an old Xid)
            return not observing and bool(self._ackable())
        return True

    # ------------------------------------------------------------------ view

    def head_text(self) -> Text:
        """The header's first line(s): where the step is (stage and position, muted), then its title (bold)."""
        b = self.build
        step = self.step
        stage = b.stage_of(step.id)
        si = [st.id for st in b.stages].index(stage.id) + 1
        pi = [s.id for s in stage.steps].index(step.id) + 1
        t = Text(f"{_(stage.label)} {si}/{len(b.stages)} > " + _("step {n}/{of}").format(n=pi, of=len(stage.steps))
                 + "  ", style="dim")
        t.append(_(step.title), style="bold")
        return t

    def refresh_view(self) -> None:
        b = self.build
        step = self.step
        state = b.store.step_states().get(step.id)
        run_meta, findings = b.store.latest_check(step.id)
        self._shown = (step.id, state, findings)  # what check_action and x read: no second query per refresh
        last_run = b.last_run(step.id) if step.action is not None else None
        self._run_running = last_run is not None and last_run.state is ActionState.RUNNING
        checking = step.id in self.app.checking
        auto_state = b.store.step_states().get(step.automated_by) if step.automated_by else None
        sig = (auto_state.updated_at if auto_state else None,
               step.id, state.status if state else None, state.verdict if state else None,
               state.updated_at if state else None, run_meta["id"] if run_meta else None,
               last_run.state if last_run else None, last_run.id if last_run else None, checking, b.stale(step.id),
               b.observing, self.size.width)  # the width last: the status line is wrapped to it (walk 37 #20)
        if sig == self._sig:
            return
        new_results = (self._sig is not None and self._sig[1] == step.id and run_meta is not None
                       and self._sig[5] != run_meta["id"])
        self._sig = sig
        self.refresh_bindings()
        basic = self.app.basic
        st = state.status if state else StepStatus.PENDING
        self.query_one("#step-title", Static).update(self.head_text())
        # one line: status (glyph and word), the verdict where the status does not already say it, when, who, id
        line = status_text(st, basic, not_applicable=bool(state and state.not_applicable)).plain.strip()
        if state and state.verdict is not None and STATUS_SAYS.get(st) is not state.verdict:
            # after a CPU run it is the software path's verdict, not the GPU's
            line += (f" | {_('software path') if st is StepStatus.CPU_ONLY else _('verdict')} "
                     f"{verdict_text(state.verdict, basic).plain}")
        if checking:
            line += " | " + _("checking") + "..."
        line += f" | {step.id}"
        if state:
            # who set the status, by their hand or by a check they started: one word for both (walk 27 #16: one `c`
            # said "检查人 root" on one step and "操作人 root" on the next); the status word says which it was
            by = _("by {user}")
            who = (" " + by.format(user=state.user)) if state.user else ""
            when = short_time(state.updated_at)
            width = max(20, self.size.width - 2)
            # too wide: when and who, whole (date, time and zone: walk 19), go on a line of their own, never
            # "by root" or "操作人" / "root" wrapped alone
            line += f" | {when}{who}" if cell_len(line + f" | {when}{who}") <= width else f"\n{when}{who}"
        self.query_one("#step-status", Static).update(line)
        notes = []
        if state and state.reason:
            shown = b.reason_shown(state, brief=bool(findings))  # the findings below carry the detail (walk 30 #8)
            if state.not_applicable:
                notes.append(shown[:1].upper() + shown[1:])  # "Not applicable: ...", the machine's own skip
            else:
                # a person's word (a skip, a confirmation, an accepted warning) is their note; any other status's
                # reason is the machine's (a wait for a GPU, a cancelled run): not under "Note", beside "by root"
                # (walk 38 #6: it read as something root wrote)
                notes.append((_("Skipped: ") if st is StepStatus.SKIPPED else
                              _("Note: ") if st in (StepStatus.CONFIRMED, StepStatus.WARNED) else _("Why: ")) + shown)
        withdrawn = b.withdrawn_confirmation(step.id)
        if withdrawn:  # walk 29 #13: a failing check reopened a hand confirmation, and it left no trace on screen
            notes.append(withdrawn[:1].upper() + withdrawn[1:])
        if b.stale(step.id):
            notes.append(_("Rebooted since this was verified: check it again."))
        changed = b.plan_changed_words(step.id)
        if changed:  # walk 30 #1: the verdict below was judged against the old answer
            notes.append(_("The plan changed since this was checked ({changes}): check it again (c).").format(
                changes=changed))
        waiting = [r for r in step.requires if not b.status(r).done]
        if waiting:
            notes.append(_("Do first: ") + ", ".join(f"{_(b.step(r).title)} ({r})" for r in waiting))
        if step.automated_by:  # what the automating step's run left, as the engine stored it (walk 24)
            auto_st = auto_state.status if auto_state else StepStatus.PENDING
            said = b.reason_shown(auto_state) if auto_state and auto_state.reason else ""
            notes.append(_("{auto} measures this step; its status: {status}").format(
                auto=step.automated_by, status=status_text(auto_st, basic).plain.strip())
                + (_(": ") + said if said else "")
                + ("" if auto_st is StepStatus.PASSED else
                   spaced(_("(until it passes, confirming this step by hand needs a note saying how you verified "
                            "it)"))))
        if step.manual and st is StepStatus.PENDING and not b.observing and not step.automated_by:
            # a step another step's run proves says so above (walk 28 #8: "done by gpu.validate" and "the machine
            # cannot verify this" on one screen)
            notes.append(_("The machine cannot verify this: do it, then Confirm (d)."))
        accepted = state is not None and st is StepStatus.WARNED and accepted_note(state.reason, state.user) is not None
        if st is StepStatus.WARNED and accepted:  # walk 28 #2: after the acceptance it still asked for one
            notes.append(_("Warnings accepted (not a pass): a later check with a new warning opens it again."))
        elif st is StepStatus.WARNED and (findings or is_checked(step)):
            notes.append(_("Done with warnings, not a pass: read them below; fix them and check again, or accept them: "
                           "Confirm (d) with a note."))
        elif st is StepStatus.WARNED:  # confirmed by hand while steps were open (a hand-over of a machine not ready):
            # no findings below and no check to run again (walk 23)
            notes.append(_("Confirmed while not ready, not passed: the report lists what is open; finish those "
                           "steps, then Confirm (d) again."))
        if st is StepStatus.CPU_ONLY:
            notes.append(_("Not done: validate on the GPUs once they are visible (health.gpu_pci; validate_device auto or cuda), or Skip (s) "
                           "with a reason."))
        in_flight = last_run is not None and last_run.state is ActionState.RUNNING
        if in_flight and findings:  # walk 17: the cancelled run's "run it again" read as the running run's result
            notes.insert(0, _("A run is in progress: the findings below are from before it; its result replaces them "
                              "when it ends (l: its log)."))
        note = self.query_one("#step-note", Static)
        note.update("\n".join(notes))
        note.display = bool(notes)
        if step.action is not None:
            a = step.action
            yes, no = _("yes"), _("no")
            # the title heads the section, the description (which says it again, more fully) is under it (walk 21)
            self.query_one("#action-title", Static).update(_("Action: {title}").format(title=_(a.title)))
            info = [_(a.description),
                    _("Changes the system: {changes}; needs root: {root}").format(
                        changes=yes if a.changes_system else no,
                        root=yes if a.needs_root else
                        _("no (yes {when})").format(when=_(a.root_when)) if a.root_when else no)
                    + (_("; backs up: {paths}").format(paths=", ".join(a.backs_up)) if a.backs_up else "")]
            if last_run is not None:
                k, n = b.run_ordinal(last_run)
                info.append(_("Last run ({run} of {runs}): {state}").format(run=k, runs=n, state=tr(
                    b.run_outcome(last_run)))
                            + _(", started {when} by {user}").format(when=short_time(last_run.started_at),
                                                                     user=last_run.user)
                            + "\n" + _("log: {log}").format(log=last_run.log_path))  # a path on its own line
            self.query_one("#step-action", Static).update("\n".join(info))
        box = self.query_one("#findings", Vertical)
        box.remove_children()
        title = self.query_one("#findings-title", Static)
        auto_meta, auto_findings = b.store.latest_check(step.automated_by) if step.automated_by else (None, [])
        if not findings and auto_findings:  # none of its own: the automating step's stored findings (walk 24)
            findings, run_meta = auto_findings, auto_meta
            title.update(_("Findings of {auto}, which measures this ({when})").format(
                auto=step.automated_by, when=short_time(auto_meta["finished_at"]) if auto_meta else ""))
        elif not findings:
            title.update(_("Findings") + ("" if is_checked(step) else
                                          spaced(_("(none yet: this step's run (a) proves it)")) if proven_by_run(step) else
                                          spaced(_("(none: its action (a) completes it)")) if step.action is not None
                                          and not step.manual else
                                          spaced(_("(none: this step is confirmed by hand)"))))
            if is_checked(step):
                box.mount(Static(_("Not checked yet. Press c to check."), markup=False, classes="muted"))
            return
        else:
            bundle = str(run_meta.get("snapshot") or "") if run_meta else ""
            title.update((_("Findings before the run in progress ({when})") if in_flight else
                          _("Findings ({when})")).format(when=short_time(run_meta["finished_at"]) if run_meta else "")
                         # walk 28 #21: a bundle's findings read later as this machine's own
                         + (spaced(_("(from the capture bundle {name}, not this machine read live)").format(
                             name=os.path.basename(bundle))) if bundle else ""))
        opened = False
        widgets = []
        for f in findings:
            subj = tr_subject(subject_prefix(f.subject, f.message))
            open_it = not opened and f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN)
            opened = opened or open_it
            body = []
            if f.evidence:
                body.append(Static(_("Evidence:"), markup=False, classes="evidence"))
                # one Static a line, indented by padding: a long line's wrapped rows stay under its first
                body.extend(Static(evidence_shown(e), markup=False, classes="evidence evidence-line")
                            for e in f.evidence)  # bringup's own notes on a failed probe translated (walk 24 #10)
            if f.remedy:
                body.append(Static(_("What to do: {remedy}").format(remedy=tr(f.remedy)), markup=False))
            if f.source:
                body.append(Static(_("Source: {source}").format(source=tr_source(f.source)), markup=False,
                                   classes="muted"))
            widgets.append(FindingBox(*body, verdict=verdict_text(f.verdict, basic), message=f"{subj}{tr(f.message)}",
                                   collapsed=not open_it, basic=basic, classes=f"finding -{f.verdict.value}"))
        box.mount_all(widgets)
        if new_results:  # a check just finished: its note and findings from their first line (walk 19: scrolled to
            # the findings' title, the note above was left cut mid-sentence at the top)
            self.call_after_refresh(self.query_one("#step-body", VerticalScroll).scroll_home, animate=False)

    # ------------------------------------------------------------------ actions

    def _writable(self) -> bool:
        if self.build.observing:
            self.notify(_("read-only: {why}").format(why=self.app.read_only_why()), severity="warning")
            return False
        return True

    def action_check(self) -> None:
        if self.build.observing and not is_checked(self.step):
            # a window that cannot run anything points at nothing it cannot do (walk 49 #2: "press a" where a is
            # refused read-only)
            self._writable()
            return
        if not is_checked(self.step):
            self.notify(_("this step has no check of its own: {auto}'s run measures it (open {auto} and press a); once "
                          "{auto} has passed, confirm it here (d), or confirm it by hand with a note").format(auto=self.step.automated_by)
                        if self.step.automated_by else  # walk 37 #4: said "confirm it when done" under "X automates"
                        _("this step is proven only by its run: press a, or run `bringup run {step}`").format(
                step=self.step_id) if proven_by_run(self.step) else
                _("this step has no automatic check: its action completes it (a)")  # walk 35 #3: said "confirm (d)"
                if self.step.action is not None and not self.step.manual else
                _("this step has no automatic check; confirm it when done (d)"))
            return
        if self._writable():
            self.app.run_checks([self.step_id])

    def action_run_action(self) -> None:
        if self.step.action is None:
            self.notify(_("this step has no action"))
            return
        if self._writable():
            run = self.build.running_run(self.step_id)
            if run is not None:
                from screens.action import ActionScreen

                self.app.push_screen(ActionScreen(run.id))
                return
            self.app.start_action(self.step_id)

    def action_watch_run(self) -> None:
        """Open the action screen of the run under way (the log streaming, cancel there)."""
        self.action_show_log()

    def action_show_log(self) -> None:
        from screens.action import ActionScreen

        run = self.build.last_run(self.step_id)
        if run is None:
            self.notify(_("no run of this step's action yet"))
            return
        self.app.push_screen(ActionScreen(run.id))

    def action_confirm(self) -> None:
        if not self._writable():
            return
        state = self.build.store.step_states().get(self.step_id)
        if state and state.verdict is Verdict.FAIL:
            # a step its run proves has no check to repeat (walk 48 #2: "check again" where c says "press a")
            self.notify(_("its last run failed: fix the cause and run it again (a), or skip it with a reason (s)")
                        if proven_by_run(self.step) and not is_checked(self.step) else
                        _("the last check failed: fix it and check again, or skip it with a reason (s)"),
                        severity="warning")
            return
        why = self.build.confirm_refusal(self.step_id)
        if why:
            self.notify(tr(why), severity="warning")
            return
        from screens.dialogs import ConfirmStep

        step_id = self.step_id

        def done(note: str | None) -> None:
            if note is not None:
                try:
                    self.build.confirm(step_id, note)
                except ValueError as exc:
                    self.notify(tr(exc.args[0]) if exc.args else str(exc), severity="warning")
                    return
                self.app.bump()
                if self.step_id == step_id:
                    self.next_open((_("accepted: {title}") if self.build.status(step_id) is StepStatus.WARNED
                                    else _("confirmed: {title}")).format(title=_(self.build.step(step_id).title)))

        warning = ""
        unverified = self.build.unverified(step_id)
        auto = self.build.automation_open(step_id)
        if auto:  # walk 24: node.allreduce confirmed with no note after node.validate ran on the CPU only
            warning = _("{auto} measures this step and has not passed ({status}): confirming records your word, not "
                        "the machine's; say how you verified it (the output of the test you ran by hand).").format(
                auto=auto, status=_(self.build.status(auto).value))
        elif unverified:
            warning = _("the machine's check could not tell here ({verdict}): confirming records your word, not the "
                        "machine's.").format(verdict=_(unverified))
        elif is_checked(self.build.step(step_id)) and not self.build.store.latest_check(step_id)[1]:
            # walk 45 #4: a step the machine can check, confirmed before any check ran, said nothing of it
            warning = _("this step has not been checked yet: confirming records your word, not the machine's "
                        "(press c first to let the machine check it).")
        warned = self.build.status(step_id) is StepStatus.WARNED and step_id != HANDOVER_STEP
        if warned and not auto:  # walk 28 #2: "note (optional)", then refused in an English toast for want of one
            warning = _("this step's check warned: confirming accepts the warnings (the step stays warned, not "
                        "passed); the note must say why they are acceptable on this machine.")
        if step_id == "plan.workload":
            warning = self._sizing_short()
            missing = [k for k in ("gpu_model", "gpu_count") if self.build.store.plan().get(k) in (None, "")]
            if missing:  # walk 33 #1: confirmed with nothing written, later steps had nothing to compare with
                sep = "" if warning.endswith(("。", "；", "！")) else " "  # no space after full-width punctuation
                warning = (warning + sep if warning else "") + _(
                    "The plan has no {keys} yet: the checks after this one have nothing to compare the machine with. "
                    "F3 on the sizing screen (z) writes them, or F2.").format(keys=names_listed(missing))
        if step_id == HANDOVER_STEP:
            failed, not_done = self.build.handover_open()
            if failed or not_done:
                warning = _("the acceptance report would say NOT READY: {failed} step(s) failed, {not_done} not done "
                            "(bringup status lists them). Confirming records the hand-over as warned, with these "
                            "counts, not as a clean hand-over.").format(failed=failed, not_done=not_done)
        not_ready = step_id == HANDOVER_STEP and any(self.build.handover_open())
        self.app.push_screen(ConfirmStep(self.step.title, act.current_user(), warning,
                                         note_required=bool(unverified) or not_ready or warned),
                             done)

    def _sizing_short(self) -> str:
        """The confirm dialog's warning for plan.workload when the sizing form kept with the build is SHORT (the
        planned GPUs too few or too small), "" otherwise (or when there is no form)."""
        from wizard import sizing as sz

        raw = self.build.store.meta().get(sz.STORE_KEY)
        if not isinstance(raw, dict):
            return ""
        inputs, errors = sz.parse_inputs(raw)
        if errors:
            return ""
        if not sz.size(inputs).short():  # the sizing screen's own SHORT (its F3 asks on the same results)
            return ""
        return _("the sizing (z) says SHORT for this workload on {count} x {gpu}: confirming records the plan as it "
                 "is; change the workload or the GPUs there first if it should fit.").format(count=inputs.gpu_count,
                                                                                            gpu=inputs.gpu)

    def action_skip(self) -> None:
        if not self._writable():
            return
        step_id = self.step_id

        def done(reason: str | None) -> None:
            if reason:
                try:
                    self.build.skip(step_id, reason)
                except ValueError as exc:  # its action runs: the skip waits for the run's result
                    self.notify(tr(exc.args[0]) if exc.args else str(exc), severity="warning")
                    return
                self.app.bump()
                if self.step_id == step_id:  # as a confirmation does: on to the next open step
                    self.next_open(_("skipped: {title}").format(title=_(self.build.step(step_id).title)))

        example = SKIP_EXAMPLES.get(step_id) or SKIP_EXAMPLES.get(self.step.stage_id, "")
        self.app.push_screen(SkipDialog(self.step.title, _(example) if example else ""), done)

    def action_open_finding(self) -> None:
        """Enter while no finding has the focus: the first finding shows or hides its details and takes the focus
        (Tab moves on to the next); a focused finding answers Enter itself."""
        boxes = list(self.query(FindingBox))
        if not boxes:
            return
        box = boxes[0]
        box.collapsed = not box.collapsed
        box.query_one(FindingTitle).focus()

    def _shown_state(self) -> tuple[Any, list[Any]]:
        """(the step's state, its last check's findings) as the view last read them; read now before the first
        view of this step."""
        if self._shown is not None and self._shown[0] == self.step_id:
            return self._shown[1], self._shown[2]
        return self.build.store.step_states().get(self.step_id), self.build.store.latest_check(self.step_id)[1]

    def _ackable(self) -> list[Any]:
        """The last check's findings about a past event (a key to acknowledge) that warn or fail."""
        return [f for f in self._shown_state()[1] if f.key and f.verdict in (Verdict.FAIL, Verdict.WARN)]

    def action_acknowledge(self) -> None:
        """Acknowledge a past event (an old Xid, an AER error) with a reason, then re-check."""
        from screens.dialogs import AckDialog
        ackable = self._ackable()
        if not ackable:
            never = is_checked(self.step) and not self._shown_state()[1]  # no check recorded yet (walk 45 #3)
            self.notify(_("nothing to acknowledge yet: this step has not been checked (press c first; x then works on "
                          "an old Xid or AER error the check reports)") if never else
                        _("nothing to acknowledge here: the last check of this step found no past event (x works on an "
                          "old Xid or AER error the check reports)") if is_checked(self.step) else
                        _("nothing to acknowledge here: x works on an old Xid or AER error a check reports, and this "
                          "step has no check (what it shows comes from its action's run)"))
            return
        if not self._writable():
            return

        def done(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            key, reason = result
            f = next(f for f in ackable if f.key == key)
            self.build.acknowledge(f, reason)
            self.notify(_("acknowledged; checking again"))
            if is_checked(self.step):
                self.app.run_checks([self.step_id])
            self.app.bump()

        self.app.push_screen(AckDialog(ackable), done)

    def action_sizing(self) -> None:
        """z on a plan step: the Plan & sizing calculator (screens/sizing.py)."""
        from screens.sizing import SizingScreen

        if self.step.stage_id == "plan":
            self.app.push_screen(SizingScreen())
        else:
            self.notify(_("Plan & sizing (z) opens from the Plan & sizing stage's steps; F2 edits the plan answers "
                          "from here"))

    def on_key(self, event: events.Key) -> None:
        """A key the help lists that does not apply to this step (hidden from the footer, so its binding does not
        fire) says why instead of doing nothing: its action's own notice (no check, no action, nothing to
        acknowledge, read-only)."""
        action = next((b.action for b in self.BINDINGS if isinstance(b, Binding) and event.key in b.key.split(",")),
                      None)
        if action is None or self.check_action(action, ()) is not False:
            return
        event.stop()
        if action == "show_log" and self.step.action is None:
            self.notify(_("this step has no action"))
        else:
            getattr(self, f"action_{action}")()

    def next_open(self, said: str = "") -> None:
        """Move to the first step not done after this one in catalogue order (else the first before it), saying
        ``said`` and where it went; stays, and says so, when every step is done."""
        b = self.build
        ids = [s.id for s in b.steps()]
        i = ids.index(self.step_id)
        for sid in ids[i + 1:] + ids[:i]:
            if not b.status(sid).done:
                title = _(b.step(sid).title)
                self.notify(_("{said}; next open step: {title}").format(said=said, title=title) if said
                            else _("next: {title}").format(title=title), timeout=4)
                self.show_step(sid)
                return
        self.notify((f"{said}; " if said else "") + _("every step of the build is done: Report is the last stage"),
                    timeout=6)

    def target(self, delta: int) -> tuple[str | None, str]:
        """Where n (``delta`` 1) or p (-1) goes from this step, and what to say about it: the next step of the
        stage; from a stage's last step, the first open step of the stages after it (the next stage's first step
        when they are all done); none past either end of the build."""
        b = self.build
        stage = b.stage_of(self.step_id)
        stage_ids = [s.id for s in stage.steps]
        i = stage_ids.index(self.step_id) + delta
        if 0 <= i < len(stage_ids):
            return stage_ids[i], ""
        si = [st.id for st in b.stages].index(stage.id)
        if delta < 0:
            if si == 0:
                return None, _("first step of the build")
            prev = b.stages[si - 1]
            return prev.steps[-1].id, _("Stage {n}/{of}: {title}").format(n=si, of=len(b.stages), title=_(prev.title))
        later = b.stages[si + 1:]
        if not later:  # the end: point at the first step still open, if any (walk 18: 55 open, not a word)
            states = b.store.step_states()  # read once, not once a step
            open_steps = [s for s in b.steps() if s.id not in states or not states[s.id].status.done]
            first = next((s for s in open_steps if s.id != self.step_id), None)
            if first is None:
                return None, _("last step of the build")
            # counted as the welcome screen counts them: failed steps apart from those left (walk 38 #2: 66 "not
            # done" here against "62 left" and "4 failed" there)
            failed = sum(1 for s in open_steps if s.id in states and states[s.id].status is StepStatus.FAILED)
            return None, _("last step of the build; {left} left and {failed} failed, the first open: {title} (esc, "
                           "then the overview)").format(left=len(open_steps) - failed, failed=failed,
                                                        title=_(first.title))
        for n, st in enumerate(later, si + 2):
            for s in st.steps:
                if not b.status(s.id).done:
                    return s.id, _("Stage {n}/{of}: {title}, first open step").format(n=n, of=len(b.stages),
                                                                                       title=_(st.title))
        return later[0].steps[0].id, _("Stage {n}/{of}: {title} (every later step done)").format(
            n=si + 2, of=len(b.stages), title=_(later[0].title))

    def _go(self, delta: int) -> None:
        sid, said = self.target(delta)
        if said:
            self.notify(said, timeout=3)
        if sid is not None:
            self.show_step(sid)

    def action_next(self) -> None:
        self._go(1)

    def action_prev(self) -> None:
        self._go(-1)

    def action_back(self) -> None:
        self.app.pop_screen()
