"""Action screen: the exact commands, the run's state, and its log streamed live.

The log is read by the App's watcher (bounded buffer); for a run that is not being watched
(finished before this bringup started) the tail of the log file is shown. The file always keeps
everything; the screen says where it is.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from screens.widgets import TopBar
from wizard import actions as act
from wizard.model import StepStatus
from wizard.store import ActionState, short_time
from wizard.validate import LiveView

if TYPE_CHECKING:
    from screens.app import BringupApp

SHOW_LINES = 5000


def readable(lines: list[str]) -> list[str]:
    """Log lines as shown (a validation event as the CLI's one-line summary): :meth:`LiveView.readable`."""
    return LiveView.readable(lines)


class ActionScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this screen runs in (Textual types it App[object])
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("k", "cancel", "Cancel run"),
        Binding("v", "results", "Results/log"),
    ]

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.next_index = 0
        self._state = ""
        self.live = LiveView()
        """The run's progress as its log grows (the script's events); verdicts come from the stored run."""
        self.showing_results = False

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Vertical(id="action-head"):
            yield Static("", id="action-title", markup=False)
            yield Static("", id="action-commands", markup=False)
            yield Static("", id="action-state", markup=False)
        # outside the height-capped header: a long command line must never push the live progress off screen
        yield Static("", id="action-progress", markup=False)
        yield Log(id="action-log", max_lines=SHOW_LINES, highlight=False)
        with VerticalScroll(id="action-results"):
            yield Static("", id="results-body")
        yield Footer()

    def on_mount(self) -> None:
        from textual.css.query import NoMatches

        try:
            self._fill()
        except NoMatches:  # the app is ending (a dropped session) while this screen mounts: its widgets are going
            return

    def _fill(self) -> None:
        b = self.app.build
        assert b is not None  # this screen is opened on a build
        run = b.store.action_run(self.run_id)
        if not self.query(Log):  # the app ended (a dropped session) before this screen's widgets were mounted
            return
        log = self.query_one(Log)
        if run is None:
            log.write_line(f"no action run {self.run_id}")
            return
        self.query_one("#action-title", Static).update(f"{run.title}  (step {run.step_id}, run {run.id})")
        cmds = ["$ " + " ".join(a) for a in run.argv]
        self.query_one("#action-commands", Static).update("\n".join(cmds))
        self.query_one("#action-results").display = False
        self.query_one("#action-progress").display = False
        if self.live.read_file(run.log_path):
            self.update_progress()
        buf = self.app.logs.get(self.run_id)
        if buf is not None and (self.run_id in self.app.watched or buf.total):
            lines = list(buf.lines)
            if buf.first_index > 0:
                log.write_line(f"... {buf.first_index} earlier lines are in {run.log_path}")
            log.write_lines(readable(lines))
            self.next_index = buf.total
        else:
            total = act.count_lines(run.log_path)
            tail: deque[str] = deque(maxlen=SHOW_LINES)
            reader = act.LogTail(run.log_path)
            while True:
                chunk = reader.read_new()
                if not chunk:
                    break
                tail.extend(chunk)
            tail.extend(reader.flush())
            if total > len(tail):
                log.write_line(f"... {total - len(tail)} earlier lines are in {run.log_path}")
            log.write_lines(readable(list(tail)))
            if run.state is ActionState.RUNNING:
                self.app.watch_run(self.run_id)
                self.next_index = len(tail) if total <= len(tail) else total
        self.watch(self.app, "revision", lambda _: self.refresh_state(), init=True)

    def add_lines(self, start: int, lines: list[str]) -> None:
        """Append lines [start, start+len) of the run's log, skipping any already shown."""
        if not self.query(Log):  # closing before its widgets were mounted: nothing to show them in
            return
        skip = max(0, self.next_index - start)
        new = lines[skip:]
        if new:
            # the Log keeps its last SHOW_LINES lines: a batch longer than that would be drawn only to be dropped
            self.query_one(Log).write_lines(readable(new[-SHOW_LINES:]))
            self.next_index = start + len(lines)
        if self.live.add(start, lines):
            self.update_progress()
            self.refresh_bindings()

    def update_progress(self) -> None:
        text = self.live.progress_line(self.app.basic)
        w = self.query_one("#action-progress", Static)
        w.update(text)
        w.display = bool(text)
        if self.showing_results:
            self.update_results()

    def update_results(self) -> None:
        from screens.validation_view import results_panel

        b = self.app.build
        assert b is not None  # this screen is opened on a build
        run = b.store.action_run(self.run_id)
        ended = run is not None and run.state is not ActionState.RUNNING
        # the engine judged the run when it ended and stored its findings and results with it: shown as stored
        findings = b.run_findings(run) if ended and run is not None else []
        results = run.results if ended and run is not None else {}
        self.query_one("#results-body", Static).update(results_panel(self.live, findings, results, self.app.basic))

    def action_results(self) -> None:
        """Switch between the log and the results panel (table, busbw chart, verdicts)."""
        self.showing_results = not self.showing_results
        self.query_one("#action-log").display = not self.showing_results
        self.query_one("#action-results").display = self.showing_results
        if self.showing_results:
            self.update_results()
        self.query_one("#action-results" if self.showing_results else "#action-log").focus()

    def refresh_state(self) -> None:
        b = self.app.build
        assert b is not None  # this screen is opened on a build
        run = b.store.action_run(self.run_id)
        if run is None:
            return
        if run.state is ActionState.RUNNING:
            text = (f"running (pid {run.pid}) since {short_time(run.started_at)}; it goes on if you leave this "
                    "screen or lose the session")
        elif run.state is ActionState.DRY_RUN:
            text = "dry run: nothing was run"
        else:
            text = f"{run.state}" + (f", exit status {run.exit_status}" if run.exit_status is not None else "") + \
                   (f", ended {short_time(run.ended_at)}" if run.ended_at else "")
            st = b.store.step_states().get(run.step_id)
            last = b.last_run(run.step_id)
            if st is not None and last is not None and last.id == run.id:  # what it left its step in; header capped
                text += f"; step: {st.status}" + (" (the GPU is not validated)" if st.status is StepStatus.CPU_ONLY else "")
        text += f"\nlog file: {run.log_path}"
        self.query_one("#action-state", Static).update(text)
        if run.state != self._state:
            self._state = run.state
            self.refresh_bindings()
            if self.showing_results:
                self.update_results()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Cancel is offered only while the run is running and this window may write."""
        if action == "cancel":
            b = self.app.build
            run = b.store.action_run(self.run_id) if b is not None else None
            return b is not None and run is not None and run.state is ActionState.RUNNING and not b.observing
        if action == "results":
            return self.live.has_events or bool(self._stored_results())
        return True

    def _stored_results(self) -> dict:
        b = self.app.build
        run = b.store.action_run(self.run_id) if b is not None else None
        return run.results if run is not None else {}

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_cancel(self) -> None:
        from screens.dialogs import YesNo

        b = self.app.build
        assert b is not None  # this screen is opened on a build
        run = b.store.action_run(self.run_id)
        if run is None or run.state is not ActionState.RUNNING or b.observing:
            self.notify("nothing to cancel here")
            return

        def done(yes: bool | None) -> None:
            if yes:
                sent = act.cancel(run, b.boot_id)
                self.notify("sent SIGTERM to the run" if sent else "the run had already ended")

        self.app.push_screen(YesNo("Cancel this run?", f"Send SIGTERM to {run.title} (pid {run.pid})?"), done)
