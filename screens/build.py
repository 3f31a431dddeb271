"""Build overview: the stages (status glyph and word) and the steps of the highlighted stage.

Coming back from a step (esc) the overview shows that step: its stage highlighted, the step list focused with the
step under its cursor. Tab and shift+tab move between the two lists; the arrows, home and end move within the
focused one. Below 76 columns the stage list drops its status words (the glyph stays; the highlighted stage's word
is in the step list's title) so the step titles keep their room."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.engine import WAITING_FOR_A_GPU, WAITING_FOR_GPUS, WAITING_FOR_PLAN, is_checked

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from screens.glyphs import VERDICT_GLYPH, VERDICT_STYLE, status_text
from screens.widgets import KeyFooter, TopBar
from wizard.i18n import _, ngettext, spaced
from wizard.model import StepStatus, proven_by_run
from wizard.store import ActionState

if TYPE_CHECKING:
    from screens.app import BringupApp


class PaneList(OptionList):
    """An overview list whose Enter is named in the footer ("enter Open")."""

    BINDINGS = [Binding("enter", "select", "Open", key_display="enter")]


class BuildScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    FOOTER_KEEP = ("switch_list",)  # tab is the way between the two lists: kept at 60 columns (walk 35 #8)
    BINDINGS = [
        Binding("tab,shift+tab", "switch_list", "Switch"),  # short: the 80-column footer keeps s (walk 33 #3)
        Binding("c", "check_stage", "Check stage"),
        Binding("s", "skip_stage", "Skip stage"),
        Binding("escape", "back", "Back"),
    ]
    NARROW_BELOW = 76
    """Columns below which the stage list drops its status words."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]

    def __init__(self, select_stage: str | None = None) -> None:
        super().__init__()
        self.stage_id = select_stage
        self._shown_step: str | None = None
        self._suspended = False
        self._narrow: bool | None = None

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Horizontal(id="build-body"):
            with Vertical(id="stages-pane"):
                yield Static(_("Stages"), id="stages-title", classes="pane-title", markup=False)
                yield PaneList(id="stages")
            with Vertical(id="steps-pane"):
                yield Static("", id="steps-title", classes="pane-title", markup=False)
                yield PaneList(id="steps")
                yield Static("", id="stage-summary", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=True)
        self.query_one("#stages", OptionList).focus()

    def on_screen_suspend(self) -> None:
        self._suspended = True

    def on_screen_resume(self) -> None:
        """Back from a step screen (not when first shown): show the step it showed last (its stage, the step list
        focused on it)."""
        sid = self.app.current_step
        b = self.build
        if not self._suspended or b is None or sid is None or sid == self._shown_step:
            return
        try:
            stage = b.stage_of(sid)
        except KeyError:
            return
        self._shown_step = sid
        stages = self.query_one("#stages", OptionList)
        lst = self.query_one("#steps", OptionList)
        self.stage_id = stage.id
        stages.highlighted = [st.id for st in b.stages].index(stage.id)  # its handler keeps the step list's cursor
        self.show_steps()
        lst.highlighted = [s.id for s in stage.steps].index(sid)
        lst.focus()
        lst.scroll_to_highlight()

    def narrow(self) -> bool:
        return self.app.size.width < self.NARROW_BELOW

    def on_resize(self, event: events.Resize) -> None:
        if (event.size.width < self.NARROW_BELOW) != self._narrow:
            self.refresh_view()

    @property
    def build(self):
        return self.app.build

    def refresh_view(self) -> None:
        b = self.build
        if b is None:
            return
        basic = self.app.basic
        narrow = self._narrow = self.narrow()
        stages = self.query_one("#stages", OptionList)
        keep = stages.highlighted
        stages.clear_options()
        states = b.store.step_states()
        for i, st in enumerate(b.stages, 1):
            t = Text(f"{i:>2} ")
            # a stage the machine's own checks found not applicable throughout reads n/a, not a person's "skipped"
            n_a = all(s.id in states and states[s.id].not_applicable for s in st.steps)
            rollup = b.stage_status(st)
            left = sum(1 for s in st.steps if not (s.id in states and states[s.id].status.done))
            # a stage not done says how many steps are still open (not "pending" beside finished work), begun or not,
            # as `bringup status` counts them (walk 35 #11)
            under_way = rollup is StepStatus.PENDING and left > 0
            # a done stage with a person's skip in it says so in the list too, as `status` does (walk 30 #7)
            skipped = sum(1 for s in st.steps if s.id in states and states[s.id].status is StepStatus.SKIPPED
                          and not states[s.id].not_applicable)
            status = status_text(rollup, basic, not_applicable=n_a,
                                 word=_("{n} left").format(n=left) if under_way else
                                 _("{n} skipped").format(n=skipped) if skipped and rollup.done and not n_a else None)
            t.append_text(status[:1] if narrow else status)  # narrow: the glyph; the word is in the steps' title
            t.append(" " + _(st.label))  # the catalogue's English title is the message id
            stages.add_option(Option(t, id=st.id))
        if self.stage_id is not None and keep is None:
            ids = [st.id for st in b.stages]
            keep = ids.index(self.stage_id) if self.stage_id in ids else 0
        stages.highlighted = keep if keep is not None else 0
        self.show_steps()

    def show_steps(self) -> None:
        b = self.build
        stages = self.query_one("#stages", OptionList)
        if b is None or stages.highlighted is None:
            return
        st = b.stages[stages.highlighted]
        self.stage_id = st.id
        states_now = b.store.step_states()
        word = status_text(b.stage_status(st), self.app.basic,
                           not_applicable=all(s.id in states_now and states_now[s.id].not_applicable
                                              for s in st.steps)).plain.strip()
        n_a = sum(1 for s in st.steps if s.id in states_now and states_now[s.id].not_applicable)
        self._steps_title = (_("{stage}: {status}").format(stage=_(st.title), status=word) if self.narrow()
                             else _("{stage}: {count} steps").format(stage=_(st.title), count=len(st.steps)))
        if n_a:  # a passed stage whose steps were found not applicable says so: not everything was verified
            self._steps_title += spaced(ngettext("({n} not applicable)", "({n} not applicable)", n_a).format(n=n_a))
        by_person = sum(1 for s in st.steps if s.id in states_now and states_now[s.id].status is StepStatus.SKIPPED
                        and not states_now[s.id].not_applicable)
        if by_person:  # walk 27 #5: a done stage with a person's skip in it is not simply "confirmed"
            self._steps_title += spaced(ngettext("({n} skipped by a person)", "({n} skipped by a person)",
                                                 by_person).format(n=by_person))
        self.mark_focused_pane()
        lst = self.query_one("#steps", OptionList)
        keep = lst.highlighted
        lst.clear_options()
        states = b.store.step_states()
        plan_changed = b.plan_changes()  # one query for every step (Store.latest_plan_reads)
        for s in st.steps:
            state = states.get(s.id)
            label = status_text(state.status if state else b.status(s.id), self.app.basic,
                                not_applicable=bool(state and state.not_applicable))
            if s.id in self.app.checking:
                label = Text((". " if self.app.basic else "… ") + _("checking"))
            title = Text(_(s.title))
            if b.stale(s.id):
                title.append(spaced(_("(re-check: rebooted)")))
            elif plan_changed.get(s.id):  # judged against plan answers since changed (walk 32 #7), as the report's ↻
                title.append(spaced(_("(re-check: the plan changed)")))
            elif state and state.status is StepStatus.PENDING and state.reason.startswith(
                    (WAITING_FOR_GPUS, WAITING_FOR_A_GPU)):  # checked, and waiting (walk 32 #20: "pending" as before c)
                title.append(spaced(_("(waits for a GPU)")))
            elif state and state.status is StepStatus.PENDING and state.reason.startswith(WAITING_FOR_PLAN):
                title.append(spaced(_("(waits for a plan answer)")))
            row = Table.grid(padding=(0, 1), expand=True)
            row.add_column(width=11, no_wrap=True)
            row.add_column(ratio=1)
            if (state and state.verdict is not None and state.verdict.value in ("warn", "unknown")
                    and state.status is StepStatus.PENDING):  # "! warned", "↯ interrupted" say it (walk 30 #6)
                # under the status, in its column: "? UNKNOWN" stays whole (walk 17 saw "?" / "UNKNOWN"), the title keeps
                # its width (walk 18: "uncorrectab…") and reads as one (walk 19: a badge column to the right of a
                # wrapped title read "Host memory reports ? UNKNOWN no uncorrectable errors")
                # walk 20: "? UNKNOWN" there read as a second step's status: it is the status's qualifier, "(unknown)",
                # as `bringup status` writes it
                # walk 23: on its second line "(unknown)" sat beside the title's wrapped line and read as part of the
                # title ("(unknown) (NTP)"): the status says it on its one line, the verdict's glyph and word
                word = _(state.verdict.value)
                label = Text(f"{VERDICT_GLYPH[state.verdict][1 if self.app.basic else 0]} {word}"
                             + " " * max(0, 9 - cell_len(word)), style=VERDICT_STYLE[state.verdict])
            row.add_row(label, title)
            lst.add_option(Option(row, id=s.id))
        if keep is not None and keep < len(st.steps):
            lst.highlighted = keep
        self.query_one("#stage-summary", Static).update(_(st.summary))
        # Textual's OptionList measures each row's height once, at the width it had then; when its scrollbar
        # appears the rows are drawn 2 columns narrower and a title that now wraps lost its second line (a
        # Chinese title's unbroken run of characters, often). Measure again once the scrollbar is settled.
        self.call_after_refresh(lst._clear_caches)

    def mark_focused_pane(self) -> None:
        """The focused list's title starts with a marker (▶, '>' in basic mode), so where the keys go shows even
        without colour."""
        focused = self.focused
        mark = ">" if self.app.basic else "▶"
        for title_id, list_id, text in (("#stages-title", "stages", _("Stages")),
                                        ("#steps-title", "steps", getattr(self, "_steps_title", ""))):
            on = focused is not None and focused.id == list_id
            grid = Table.grid(expand=True)  # a title too long for the pane wraps under its words, not under the mark
            grid.add_column(width=2, no_wrap=True)
            grid.add_column(ratio=1)
            grid.add_row(f"{mark} " if on else "  ", Text(text))
            self.query_one(title_id, Static).update(grid)

    def on_descendant_focus(self, event) -> None:
        """Entering the step list (Tab or Enter) highlights its first open step, so one Enter opens it."""
        lst = self.query_one("#steps", OptionList)
        if event.widget is lst and lst.highlighted is None and lst.option_count:
            lst.highlighted = self.first_open()
        self.mark_focused_pane()

    def first_open(self) -> int:
        """Index of the highlighted stage's first step not done (0 when all are)."""
        b = self.build
        if b is None or self.stage_id is None:
            return 0
        steps = b.stages[[st.id for st in b.stages].index(self.stage_id)].steps
        return next((i for i, s in enumerate(steps) if not b.status(s.id).done), 0)

    def action_switch_list(self) -> None:
        """Tab / shift+tab: the other list (there are two)."""
        stages = self.query_one("#stages", OptionList)
        (self.query_one("#steps", OptionList) if self.focused is stages else stages).focus()

    @on(OptionList.OptionHighlighted, "#stages")
    def stage_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id != self.stage_id:
            self.query_one("#steps", OptionList).highlighted = None
        self.show_steps()

    @on(OptionList.OptionSelected, "#stages")
    def stage_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a stage opens its first step not done (F1: "open the highlighted stage or step"; walk 29 #4: it
        only moved the focus to the step list, and a new operator thought the key was lost); the step list keeps
        that step highlighted for the way back (Tab moves to the list without opening one)."""
        from screens.step import StepScreen

        steps = self.query_one("#steps", OptionList)
        if not steps.option_count:
            return
        steps.highlighted = self.first_open()
        steps.focus()
        option = steps.get_option_at_index(steps.highlighted)
        if option.id:
            self.app.push_screen(StepScreen(option.id))

    @on(OptionList.OptionSelected, "#steps")
    def step_selected(self, event: OptionList.OptionSelected) -> None:
        from screens.step import StepScreen

        if event.option.id:
            self.app.push_screen(StepScreen(event.option.id))

    def action_check_stage(self) -> None:
        b = self.build
        if b is None or self.stage_id is None:
            return
        stage_steps = b.stages[[st.id for st in b.stages].index(self.stage_id)].steps
        ids = [s.id for s in stage_steps if is_checked(s)]
        by_run = [s for s in stage_steps if proven_by_run(s)]
        if b.observing:
            self.notify(_("read-only: {why}").format(why=self.app.read_only_why()), severity="warning")
            return
        if ids:
            self.app.run_checks(ids)
        if by_run:  # a check leaves these pending: only their runs prove them (a validation, a DCGM level)
            self.notify(_("{n} step(s) of this stage are proven only by their runs: open one and press a "
                          "(or `bringup run STEP`)").format(n=len(by_run)))
        elif not ids and any(s.action is not None for s in stage_steps):  # walk 33 #5: the report stage's actions
            self.notify(_("this stage has no automatic checks: its steps are completed by their actions (a on each) "
                          "or confirmed by hand"))
        elif not ids:
            self.notify(_("this stage has no automatic checks; its steps are confirmed by hand"))

    def action_skip_stage(self) -> None:
        """Skip every step of the highlighted stage that is not done (pending, failed, interrupted, waiting, CPU-only),
        with one reason, as the step screen's s does for one step (a single-node build's "Several nodes"); the dialog
        says how many of them failed (their failures are waived with the skip, as the report lists). Steps done or
        running stay as they are; the Report stage is the hand-over and is not skipped this way."""
        from screens.dialogs import SkipDialog
        from screens.step import SKIP_EXAMPLES
        from wizard.model import HANDOVER_STAGES

        b = self.build
        if b is None or self.stage_id is None:
            return
        if b.observing:
            self.notify(_("read-only: {why}").format(why=self.app.read_only_why()), severity="warning")
            return
        stage = b.stages[[st.id for st in b.stages].index(self.stage_id)]
        if stage.id in HANDOVER_STAGES:
            self.notify(_("the Report stage is the hand-over: open its steps to make the report or skip one with a "
                          "reason"), severity="warning")
            return
        states = b.store.step_states()
        running = {r.step_id for r in b.store.action_runs(state=ActionState.RUNNING)}
        open_ids = [s.id for s in stage.steps if s.id not in running and not (
            s.id in states and states[s.id].status.done)]
        failed = [sid for sid in open_ids if sid in states and states[sid].status is StepStatus.FAILED]
        if not open_ids:
            self.notify(_("nothing to skip: every step of this stage is done or running"))
            return

        def done(reason: str | None) -> None:
            if reason:
                for sid in open_ids:
                    b.skip(sid, reason)
                self.app.bump()
                self.notify(ngettext("skipped {n} step of {stage}", "skipped {n} steps of {stage}",
                                     len(open_ids)).format(n=len(open_ids), stage=_(stage.title)))

        example = SKIP_EXAMPLES.get(stage.id, "")
        title = ngettext("{n} open step of {stage}", "all {n} open steps of {stage}", len(open_ids)).format(
            n=len(open_ids), stage=_(stage.title))
        if failed:  # walk 29 #5: a failed step stayed, so the stage stayed failed after "skip the stage"
            title += spaced(ngettext("({n} of them failed: its failure is waived with the skip)",
                                     "({n} of them failed: their failures are waived with the skip)",
                                     len(failed)).format(n=len(failed)))
        self.app.push_screen(SkipDialog(title, _(example) if example else ""), done)

    def action_back(self) -> None:
        self.app.pop_screen()
