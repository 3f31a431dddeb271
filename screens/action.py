"""Action screen: the run in a compact header, its log streamed live, and how it ended, in words.

The header is :data:`HEAD_ROWS` lines (up to five: see there): the action's title, the exact command (where it does
not fit, its long directory paths shortened to ``…/name`` so its arguments stay in view, :func:`short_paths`; cut
with an ellipsis only when even that does not fit: the log shows each command in full as it starts), and one state
line (never cut: it takes the rows it needs, up to three): which run of
its step this is (runs are numbered per step), how long it has run (of how long it is expected to, when its
command declares it: :func:`wizard.actions.declared_duration_s`), how many log lines it wrote, and once it ended
how (:func:`wizard.actions.outcome_words`: a cancel is "cancelled (SIGTERM)", never "failed"). The log wraps long
lines to the pane's width (continuation rows indented) instead of cutting them at the right edge. Under the log: a
validation's live progress line, then the run's judged result as a sentence (the verdict and what its findings
say, as the engine stored them) and where its log file is.

The log is read by the App's watcher (bounded buffer); for a run that is not being watched (finished before this
bringup started) the tail of the log file is shown. The file always keeps everything; the screen says where it is.
"""

from __future__ import annotations

import datetime as _dt
from collections import deque
from typing import TYPE_CHECKING, Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Key, Resize
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Log, Static

from screens.widgets import KeyFooter, TopBar
from wizard import actions as act
from wizard.engine import is_checked
from wizard.i18n import CLOSING, OPENING, _, label, ngettext, spaced, tr, wrap
from wizard.model import StepStatus, Verdict, worst
from wizard.progress import fmt_duration
from wizard.store import ActionRun, ActionState, short_time
from wizard.validate import LiveView

if TYPE_CHECKING:
    from typing_extensions import Self

    from screens.app import BringupApp

SHOW_LINES = 5000
"""Log lines the screen keeps (the log file keeps everything)."""
HEAD_ROWS = 4
"""Lines of the header: title, command (one or two), state (one or two; a third, at the command's cost, where a
narrow terminal needs it). On a terminal of 24 rows or more the command keeps two rows: the header is then five."""
INDENT = "  "
"""What starts a wrapped log line's continuation rows, so they are not taken for lines of their own."""


def readable(lines: list[str]) -> list[str]:
    """Log lines as shown (a validation event as the CLI's one-line summary): :meth:`LiveView.readable`."""
    return LiveView.readable(lines)


def wrap_rows(line: str, width: int) -> list[str]:
    """One log line as the rows it takes at ``width`` cells: itself when it fits, else cut at spaces where it can
    (a word longer than a row is cut anywhere), each continuation row indented by :data:`INDENT`. Tabs are
    expanded and control characters shown as Textual's Log shows them (one cell each), so the widths are the ones
    drawn. Cost: one length check for a line that fits (the common case of a fast log)."""
    if len(line) <= width and line.isascii() and "\t" not in line:  # fast path: ASCII, one cell per character
        return [line]
    from rich.cells import cell_len

    line = Log._process_line(line)
    if width <= len(INDENT) + 1 or cell_len(line) <= width:
        return [line]
    if line.isascii():
        return _wrap_ascii(line, width)
    return _wrap_cells(line, width)


def _wrap_cells(line: str, width: int) -> list[str]:
    """Greedy wrap of a line with wide characters (CJK: two cells each): each row cut at its last break, a space or
    either side of a wide character (Chinese breaks between any two characters), so the English words inside a
    Chinese line are not split (walk 24: "ssh to localhost fa" / "iled"); a run longer than a row without a break is
    cut after its last ``/`` (a path) or at the width (as is one whose last break leaves the row less than half
    full). Continuation rows indented by
    :data:`INDENT`. Linear in the line's length per row."""
    from rich.cells import cell_len, get_character_cell_size

    rows: list[str] = []
    room = width
    while True:
        used, brk, prev, slash, end = 0, 0, 0, 0, len(line)
        for i, ch in enumerate(line):
            w = get_character_cell_size(ch)
            if ch in CLOSING and brk == i:  # never a break right before "，" "：" "）" (kinsoku, walk 28)
                brk = prev
            if used + w > room:
                end = i
                if ch == " " or (w == 2 and ch not in CLOSING):  # it starts a new row cleanly
                    brk = i
                break
            if (ch == " " or (w == 2 and i > 0 and ch not in CLOSING)) and brk != i:
                prev, brk = brk, i  # before a space or a wide character
            used += w
            if w == 2 and ch not in OPENING:
                prev, brk = brk, i + 1  # after a wide character, never after "（" "“"
            elif ch == "/":
                slash = i + 1  # after a path's "/", as _wrap_ascii
        if end == len(line):
            break
        # a break that leaves the row less than half full is for a run longer than a row (a path): after its last
        # "/" that fills half the row, else at the width
        half = room // 2
        at = (brk if line[:brk].strip() and cell_len(line[:brk]) >= half else
              slash if cell_len(line[:slash]) >= half else end)
        rows.append(line[:at].rstrip(" ") if not rows else INDENT + line[:at].rstrip(" "))
        line = line[at:].lstrip(" ")
        room = width - len(INDENT)
    if line or not rows:
        rows.append(line if not rows else INDENT + line)
    return rows


def _wrap_ascii(line: str, width: int) -> list[str]:
    """Greedy wrap of an ASCII line (one cell a character): each row cut at its last space (the spaces at the cut
    dropped); a word longer than the row (a path) after its last ``/`` that fits, so a name is not split (walk 22:
    "capture-...tar.g" / "z"), else at the width; continuation rows indented. Linear in the line's length."""
    rows: list[str] = []
    room = width
    while len(line) > room:
        cut = line.rfind(" ", 0, room + 1)
        head = line[:cut].rstrip(" ") if cut > 0 else ""
        if not head.strip():  # no space to cut at (or only the line's own indentation): cut the word
            slash = line.rfind("/", 0, room)  # after a path's "/" (kept on this row), when that leaves a row's half
            at = slash + 1 if slash >= room // 2 else room
            head, line = line[:at], line[at:]
        else:
            line = line[cut:]
        rows.append(head if not rows else INDENT + head)
        line = line.lstrip(" ")
        room = width - len(INDENT)
    if line or not rows:
        rows.append(line if not rows else INDENT + line)
    return rows


ENDED_FROM_TOP_LINES = 200
"""An ended run whose log has at most this many lines opens at its first line (a dry run's commands, a short check);
a longer one, and a running one, at its end."""


class WrappedLog(Log):
    """Textual's :class:`~textual.widgets.Log` that wraps each line to its width instead of cutting it at the right
    edge (no horizontal scrolling). It keeps the last ``keep`` lines written (not rows) and wraps them again when
    its width changes; rows are what :attr:`lines` returns. Writes go through :meth:`write_lines` (and
    :meth:`write_line`); lines written before the widget has a width are wrapped when it gets one."""

    DEFAULT_CSS = """
    WrappedLog { overflow-x: hidden; overflow-y: scroll; }
    """

    def __init__(self, keep: int = SHOW_LINES, **kwargs) -> None:
        super().__init__(max_lines=keep, **kwargs)
        self.source: deque[str] = deque(maxlen=keep)
        """The last ``keep`` lines written, as written (before wrapping)."""
        self.wrap_width = 0
        self._height = 0

    def _rows(self, lines: Iterable[str], width: int) -> list[str]:
        out: list[str] = []
        for line in lines:
            out.extend(wrap_rows(line, width) if line else [" "])  # a blank line stays a row (Log drops "")
        return out

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> Self:
        new: list[str] = []
        for line in lines:
            new.extend(line.splitlines() or [""])
        self.source.extend(new)
        if self.wrap_width <= 0:  # no width yet: wrapped on the first resize
            return self
        return super().write_lines(self._rows(new[-self.source.maxlen:] if self.source.maxlen else new,
                                              self.wrap_width), scroll_end)

    def on_resize(self, event: Resize) -> None:
        """Wrap again at a new width; a view that showed the end still shows it (the pane grew or shrank)."""
        region = self.scrollable_content_region
        old_height, self._height = self._height, region.height
        at_end = self.wrap_width <= 0 or self.scroll_y >= len(self.lines) - old_height - 1
        if region.width > 0 and region.width != self.wrap_width:
            self.wrap_width = region.width
            super().clear()
            super().write_lines(self._rows(self.source, region.width), scroll_end=at_end)
        elif at_end:
            self.call_after_refresh(self.scroll_end, animate=False, x_axis=False)


def fit(text: str, width: int, rows: int, ellipsis: str = "…") -> list[str]:
    """``text`` wrapped to ``width`` terminal cells (:func:`wizard.i18n.wrap`), at most ``rows`` rows; when it does
    not fit, the last row ends with ``ellipsis``."""
    from rich.cells import cell_len, set_cell_size

    width = max(8, width)
    out = wrap(" ".join(text.split()), width, fold=True) or [""]  # a newline in it is a space: rows are counted
    if len(out) <= rows:
        return out
    out = out[:rows]
    room = width - cell_len(ellipsis)
    # the last row cut between words where it can (walk 28 #12: "torch_pyt…" cut the plan key the operator types)
    last = (wrap(out[-1], room, fold=True) or [""])[0] if room >= 8 else set_cell_size(out[-1], max(0, room))
    out[-1] = last.rstrip() + ellipsis
    return out


def command_line(argv: list[str], short: bool = False, dots: str = "…") -> str:
    """``$ argv`` as a shell would take it (:func:`shlex.quote`), on one line: a newline or tab inside an argument
    (a ``python -c`` program) is shown as ``\\n`` / ``\\t``. ``short``: each absolute path of three or more
    directories as ``dots/name`` (:func:`short_paths`)."""
    import shlex

    words = [shlex.quote(a) for a in argv]
    return "$ " + " ".join(short_paths(words, dots) if short else words).replace("\n", "\\n").replace("\t", "\\t")


def short_paths(argv: list[str], dots: str = "…") -> list[str]:
    """``argv`` (as quoted for the shell: a quoted path is left as it is) with each absolute path (an argument, or an option's ``--x=/path`` value) below three or more
    directories written ``dots/name``: ``/tmp/walk19-torch/bin/python`` → ``…/python`` (walk 19: the header cut
    ``--device cpu`` off the end of a command whose interpreter path took the row)."""
    import re

    return [re.sub(r"(?<![^=])/(?:[^/\s]+/){2,}([^/\s]+)$", rf"{dots}/\1", a) for a in argv]


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from ISO time ``start`` to ``end``; ``None`` when either is missing, does not parse, or the
    difference is negative (clocks that disagree)."""
    try:
        s = _dt.datetime.fromisoformat(start or "")
        e = _dt.datetime.fromisoformat(end or "")
        d = (e - s).total_seconds()
    except (ValueError, TypeError):
        return None
    return d if d >= 0 else None


class ActionScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this screen runs in (Textual types it App[object])
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("k", "cancel", "Cancel run"),
        Binding("v", "results", "Results/log"),
    ]
    DEFAULT_CSS = """
    ActionScreen #action-outcome { height: auto; padding: 0 1; }
    """

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.next_index = 0
        self.line_total = 0
        """Lines of the run's log read so far (all of them, also those the screen no longer keeps)."""
        self._state = ""
        self.live = LiveView()
        """The run's progress as its log grows (the script's events); verdicts come from the stored run."""
        self.showing_results = False
        self.expect_s: float | None = None
        self._run: ActionRun | None = None
        self._ordinal = (0, 0)
        self._state_text = ""
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Vertical(id="action-head"):
            yield Static("", id="action-title", markup=False)
            yield Static("", id="action-commands", markup=False)
            yield Static("", id="action-state", markup=False)
        yield WrappedLog(id="action-log", keep=SHOW_LINES, highlight=False)
        with VerticalScroll(id="action-results"):
            yield Static("", id="results-body")
        # under the log, never pushed off screen by the header: a validation's live progress, then the result
        yield Static("", id="action-progress", markup=False)
        yield Static("", id="action-outcome", markup=False)
        yield KeyFooter()

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
            log.write_line(_("no action run {id}").format(id=self.run_id))
            return
        self._run = run
        self.expect_s = act.declared_duration_s(run.argv)
        self.query_one("#action-results").display = False
        self.query_one("#action-progress").display = False
        if self.live.read_file(run.log_path):
            self.update_progress()
        buf = self.app.logs.get(self.run_id)
        if buf is not None and (self.run_id in self.app.watched or buf.total):
            lines = list(buf.lines)
            if buf.first_index > 0:
                log.write_line(_("... {count} earlier lines are in {path}").format(count=buf.first_index,
                                                                                    path=run.log_path))
            log.write_lines(readable(lines))
            self.next_index = self.line_total = buf.total
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
                log.write_line(_("... {count} earlier lines are in {path}").format(count=total - len(tail),
                                                                                    path=run.log_path))
            log.write_lines(readable(list(tail)))
            self.line_total = max(total, len(tail))
            if run.state is ActionState.RUNNING:
                self.app.watch_run(self.run_id)
                self.next_index = len(tail) if total <= len(tail) else total
        if run.state is not ActionState.RUNNING and self.line_total <= ENDED_FROM_TOP_LINES:
            # an ended run's short log reads from its first line (the commands it ran); a long one opens at its end
            self.call_after_refresh(log.scroll_home, animate=False)
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
        total = max(self.line_total, start + len(lines))
        if total != self.line_total:
            self.line_total = total
            if self._timer is None and self._run is not None:  # the run ended (no tick now): count its last lines
                self._state_text = self.state_words(self._run)
                self.render_head()
        if self.live.add(start, lines):
            self.update_progress()
            self.refresh_bindings()

    def update_progress(self) -> None:
        text = self.live.progress_line(self.app.basic)
        w = self.query_one("#action-progress", Static)
        width = w.content_region.width or max(20, self.app.size.width - 2)
        # two rows at most (three with an error: walk 45 #2, its reason was cut off), a longer one ends in an
        # ellipsis (walk 20: cut mid-word at "ssh to"); the log has it all
        rows = 3 if self.live.vlog.errors else 2
        w.update("\n".join(fit(text, width, rows, "..." if self.app.basic else "…")) if text else "")
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
        # the screen's width less the panel's margins and scrollbar (the Static's own width follows its content)
        width = max(20, self.app.size.width - 4)
        self.query_one("#results-body", Static).update(results_panel(self.live, findings, results, self.app.basic,
                                                                     width))

    def action_results(self) -> None:
        """Switch between the log and the results panel (table, busbw chart, verdicts)."""
        self.showing_results = not self.showing_results
        self.query_one("#action-log").display = not self.showing_results
        self.query_one("#action-results").display = self.showing_results
        if self.showing_results:
            self.update_results()
        self.rerender()
        self.query_one("#action-results" if self.showing_results else "#action-log").focus()

    # ------------------------------------------------------------------ header and result

    def state_words(self, run: ActionRun) -> str:
        """The header's state line: which run of its step, how long, how many lines, how it ended."""
        k, n = self._ordinal
        # the separator after "which run" (a full-width colon in Chinese)
        who = (_("{step} run {run} of {runs}").format(step=run.step_id, run=k, runs=n) if k else run.step_id) + _(": ")
        lines = ngettext("{count} log line", "{count} log lines", self.line_total).format(
            count=f"{self.line_total:,}")
        if run.state is ActionState.DRY_RUN:
            return who + _("dry run: nothing was run")
        if run.state is ActionState.RUNNING:
            took = seconds_between(run.started_at, self.app.clock())
            expect = fmt_duration(self.expect_s) if self.expect_s else ""
            if took is None:
                text = _("running of about {expected}").format(expected=expect) if expect else _("running")
            elif not expect:
                text = _("running {took}").format(took=fmt_duration(took))
            elif took <= (self.expect_s or 0):
                text = _("running {took} of about {expected}").format(took=fmt_duration(took), expected=expect)
            else:
                text = _("running {took} (expected about {expected})").format(took=fmt_duration(took), expected=expect)
            return who + text + _(", ") + lines  # the separators are a language's own (Chinese: "，" and "；")
        took = seconds_between(run.started_at, run.ended_at)
        b = self.app.build
        st = b.store.step_states().get(run.step_id) if b is not None else None
        outcome = b.run_outcome(run) if b is not None else act.outcome_words(run.state, run.exit_status)
        text = (_("{outcome} after {took}").format(outcome=tr(outcome), took=fmt_duration(took)) if took is not None
                else tr(outcome))
        text += _(", ") + lines + (_(", ") + _("ended {when}").format(when=self.when(run.ended_at)) if run.ended_at else "")
        if st is not None and self._ordinal[0] == self._ordinal[1]:  # what the latest run left its step in
            text += _("; ") + _("step: {status}").format(status=_(st.status.value)) + (
                spaced(_("(the GPU is not validated)")) if st.status is StepStatus.CPU_ONLY else "")
        return who + text

    def when(self, iso: str) -> str:
        """``short_time``, without the date when it is today's (by the app's clock)."""
        t, today = short_time(iso), short_time(self.app.clock())[:10]
        return t[11:] if len(t) > 11 and t[:10] == today else t

    def render_head(self) -> None:
        """Fill the header (at most :data:`HEAD_ROWS` lines at this width) from the last state read."""
        run = self._run
        if run is None:
            return
        head = self.query_one("#action-head")
        width = head.content_region.width or max(20, self.app.size.width - 2)
        dots = "..." if self.app.basic else "…"
        state = fit(self._state_text, width, 3, dots)
        # the title wraps to a second row rather than end in "…" (walk 47 #5: "Validate each GPU: compute, memory,
        # bandwidth, a short…" at 60x20), as the step screen's header does
        title = fit(_(run.title), width, 2, dots)
        self.query_one("#action-title", Static).update(Text("\n".join(title), style="bold"))
        # the command gets two rows on a 24-row terminal, whatever the state takes (walk 20: "--nproc_per_node=2…" cut
        # the script and its arguments once the run ended); one on a smaller one, whose log pane needs the rows
        room = max(1, HEAD_ROWS - len(title) - len(state), 2 if self.app.size.height >= 24 else 1)

        def shown(argv: list[str], rows: int) -> list[str]:  # whole, else with short paths, else cut
            whole = wrap(command_line(argv), width, fold=True)
            return whole if len(whole) <= rows else fit(command_line(argv, short=True, dots=dots), width, rows, dots)

        rows = shown(run.argv[0], room) if run.argv else [_("(no command)")]
        if len(run.argv) > 1:
            more = ngettext("(+{count} more command: each in the log as it starts)",
                            "(+{count} more commands: each in the log as it starts)", len(run.argv) - 1).format(
                count=len(run.argv) - 1)
            if len(rows) < room:
                rows += shown(run.argv[1], room - len(rows)) if len(run.argv) == 2 else fit(more, width, room - len(rows), dots)
            else:
                rows[-1] = fit(rows[-1] + " " + more, width, 1, dots)[0]
        self.query_one("#action-commands", Static).update("\n".join(rows))
        self.query_one("#action-state", Static).update("\n".join(state))

    def result_text(self, run: ActionRun) -> Text:
        """The closing lines: the judged result as a sentence once the run ended, then the log file's path (moved
        whole to a row of its own when it fits one, else cut at the width right after its label)."""
        from screens.glyphs import verdict_text

        out = Text()
        b = self.app.build
        width = self.query_one("#action-outcome").content_region.width or max(20, self.app.size.width - 2)
        note = (spaced(_("(the run goes on if you leave this screen or the session drops)"))
                if run.state is ActionState.RUNNING else "")
        where = "\n".join(wrap(_("log file: {path}").format(path=run.log_path) + note, max(20, width), fold=True))
        if run.state is ActionState.RUNNING:
            out.append(where)
            return out
        if run.state is not ActionState.DRY_RUN and b is not None and not self.showing_results:  # the panel has them
            findings = b.run_findings(run)
            if run.step_id in self.app.checking:
                out.append(_("Result: checking the step now that the run ended ...") + "\n")
            elif findings:
                v = worst(f.verdict for f in findings)
                first = next(f for f in findings if f.verdict is v)
                more = len(findings) - 1
                st = b.store.step_states().get(run.step_id)
                cpu = st is not None and st.status is StepStatus.CPU_ONLY and self._ordinal[0] == self._ordinal[1]
                see = _("v shows them") if self.check_action("results", ()) else _("on the step screen")
                out.append(label(_("Result:")))
                out.append_text(verdict_text(v, self.app.basic))
                if more and v in (Verdict.PASS, Verdict.SKIP):  # nothing to single out: say how many (walk 20: one
                    # pass out of 8 read as the run's whole result)
                    said = _("all {count} findings pass or were not judged: {see}").format(count=more + 1, see=see)
                else:
                    said = tr(first.message) + (spaced(ngettext(
                        "(and {count} more finding: {see})", "(and {count} more findings: {see})", more).format(
                        count=more, see=see)) if more else "")
                out.append((spaced(_("(CPU run: the GPU is not validated)")) if cpu else "") + _(": ") + said + "\n")
                if v in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN) and first.remedy:  # walk 21: the log view gave
                    # the failure and no way on (the remedy was only behind v): up to 3 rows of it, the rest there
                    dots = "..." if self.app.basic else "…"
                    if self.check_action("results", ()):  # walk 27 #2: a cut remedy said where the rest is
                        dots += _(" (v: all of it)")
                    out.append("\n".join(fit(_("What to do: {remedy}").format(remedy=tr(first.remedy)), width, 3,
                                              dots)) + "\n")
            else:
                st = b.store.step_states().get(run.step_id)
                checked = is_checked(b.step(run.step_id))
                out.append((_("Result: {outcome}; its output is not judged: the step's check (c) verifies what it changed")
                            if checked else _("Result: {outcome}; the step has no check: the command's exit status is its "
                                              "result")).format(
                    outcome=tr(b.run_outcome(run)))
                    + (spaced(_("(step: {status})").format(status=_(st.status.value))) if st is not None else "") + "\n")
        out.append(where)
        return out

    def refresh_state(self) -> None:
        b = self.app.build
        assert b is not None  # this screen is opened on a build
        run = b.store.action_run(self.run_id)
        if run is None:
            return
        self._run = run
        self._ordinal = b.run_ordinal(run)
        self._state_text = self.state_words(run)
        self.render_head()
        self.query_one("#action-outcome", Static).update(self.result_text(run))
        if run.state is ActionState.RUNNING and self._timer is None:
            self._timer = self.set_interval(1.0, self.tick)
        elif run.state is not ActionState.RUNNING and self._timer is not None:
            self._timer.stop()
            self._timer = None
        if run.state != self._state:
            self._state = run.state
            self.refresh_bindings()
            if self.showing_results:
                self.update_results()

    def tick(self) -> None:
        """Once a second while the run runs: its elapsed time and line count."""
        if self._run is not None and self._run.state is ActionState.RUNNING:
            self._state_text = self.state_words(self._run)
            self.render_head()

    def on_resize(self) -> None:
        self.call_after_refresh(self.rerender)

    def rerender(self) -> None:
        """The header, the closing lines and an open results panel again, at the new width (walk 40 #1: the results
        table kept its 80-column layout at 60x20 after a resize, splitting "0.704 GB/" over "s")."""
        self.render_head()
        if self._run is not None:
            self.query_one("#action-outcome", Static).update(self.result_text(self._run))
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

    def on_key(self, event: Key) -> None:
        """``v`` where the run has no results panel (not a validation): say so, not silence (walk 18)."""
        if event.key == "v" and not self.check_action("results", ()):
            event.stop()
            self.notify(_("this run has no results view: v is for validations; its log is all it printed"))

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
            self.notify(_("nothing to cancel here"))
            return

        def done(yes: bool | None) -> None:
            if yes:
                sent = act.cancel(run, b.boot_id)
                self.notify(_("sent SIGTERM to the run") if sent else _("the run had already ended"))

        self.app.push_screen(YesNo(_("Cancel this run?"), _("Send SIGTERM to {title} (pid {pid})?").format(
            title=_(run.title), pid=run.pid)), done)
