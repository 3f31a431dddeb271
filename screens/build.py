"""Build overview: the stages (status glyph and word) and the steps of the highlighted stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.engine import is_checked

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from screens.glyphs import status_text, verdict_text
from screens.widgets import TopBar
from wizard.model import StepStatus

if TYPE_CHECKING:
    from screens.app import BringupApp


class BuildScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    BINDINGS = [
        Binding("c", "check_stage", "Check stage"),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, select_stage: str | None = None) -> None:
        super().__init__()
        self.stage_id = select_stage

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Horizontal(id="build-body"):
            with Vertical(id="stages-pane"):
                yield Static("Stages", classes="pane-title", markup=False)
                yield OptionList(id="stages")
            with Vertical(id="steps-pane"):
                yield Static("", id="steps-title", classes="pane-title", markup=False)
                yield OptionList(id="steps")
                yield Static("", id="stage-summary", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=True)
        self.query_one("#stages", OptionList).focus()

    @property
    def build(self):
        return self.app.build

    def refresh_view(self) -> None:
        b = self.build
        if b is None:
            return
        basic = self.app.basic
        stages = self.query_one("#stages", OptionList)
        keep = stages.highlighted
        stages.clear_options()
        for i, st in enumerate(b.stages, 1):
            t = Text(f"{i:>2} ")
            t.append_text(status_text(b.stage_status(st), basic))
            t.append(" " + st.label)
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
        self.query_one("#steps-title", Static).update(f"{st.title}: steps")
        lst = self.query_one("#steps", OptionList)
        keep = lst.highlighted
        lst.clear_options()
        states = b.store.step_states()
        for s in st.steps:
            state = states.get(s.id)
            label = status_text(state.status if state else b.status(s.id), self.app.basic)
            if s.id in self.app.checking:
                label = Text(". checking" if self.app.basic else "… checking")
            title = Text(s.title)
            if (state and state.verdict is not None and state.verdict.value in ("warn", "unknown")
                    and state.status is not StepStatus.WARNED):  # "! warned" already says it
                title.append("  ")
                title.append_text(verdict_text(state.verdict, self.app.basic))
            if b.stale(s.id):
                title.append("  (re-check: rebooted)")
            row = Table.grid(padding=(0, 1), expand=True)
            row.add_column(width=11, no_wrap=True)
            row.add_column(ratio=1)
            row.add_row(label, title)
            lst.add_option(Option(row, id=s.id))
        if keep is not None and keep < len(st.steps):
            lst.highlighted = keep
        self.query_one("#stage-summary", Static).update(st.summary)

    def on_descendant_focus(self, event) -> None:
        """Entering the step list (Tab or Enter) highlights its first step, so one Enter opens it."""
        lst = self.query_one("#steps", OptionList)
        if event.widget is lst and lst.highlighted is None and lst.option_count:
            lst.highlighted = 0

    @on(OptionList.OptionHighlighted, "#stages")
    def stage_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id != self.stage_id:
            self.query_one("#steps", OptionList).highlighted = None
        self.show_steps()

    @on(OptionList.OptionSelected, "#stages")
    def stage_selected(self, event: OptionList.OptionSelected) -> None:
        steps = self.query_one("#steps", OptionList)
        steps.focus()
        if steps.highlighted is None and steps.option_count:
            steps.highlighted = 0

    @on(OptionList.OptionSelected, "#steps")
    def step_selected(self, event: OptionList.OptionSelected) -> None:
        from screens.step import StepScreen

        if event.option.id:
            self.app.push_screen(StepScreen(event.option.id))

    def action_check_stage(self) -> None:
        b = self.build
        if b is None or self.stage_id is None:
            return
        ids = [s.id for s in b.stages[[st.id for st in b.stages].index(self.stage_id)].steps if is_checked(s)]
        if ids and not b.observing:
            self.app.run_checks(ids)
        elif not ids:
            self.notify("this stage has no automatic checks; its steps are confirmed by hand")

    def action_back(self) -> None:
        self.app.pop_screen()
