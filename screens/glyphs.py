"""Status and verdict labels: a one-cell glyph *and* a word, so colour is never the only signal.

Basic mode (TERM=linux, serial consoles, --basic) uses ASCII glyphs: the Linux framebuffer
console has a 256/512-glyph font (tui-practices C.6).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment, Segments
from rich.text import Text
from textual._context import active_app
from textual.scrollbar import ScrollBarRender

from wizard.i18n import _
from wizard.model import StepStatus, Verdict

STATUS_GLYPH = {
    StepStatus.PENDING: ("·", "."), StepStatus.RUNNING: ("▶", ">"), StepStatus.PASSED: ("✓", "+"),
    StepStatus.CONFIRMED: ("✓", "+"), StepStatus.FAILED: ("✗", "x"), StepStatus.SKIPPED: ("–", "-"),
    StepStatus.INTERRUPTED: ("↯", "~"), StepStatus.WARNED: ("!", "!"), StepStatus.CPU_ONLY: ("○", "o"),
}
"""One glyph per status (unicode, ASCII for --basic); ``warned`` shares the WARN verdict's ``!``, never ``✓``."""
STATUS_STYLE = {
    StepStatus.PENDING: "", StepStatus.RUNNING: "bold", StepStatus.PASSED: "green",
    StepStatus.CONFIRMED: "green", StepStatus.FAILED: "bold red", StepStatus.SKIPPED: "",
    StepStatus.INTERRUPTED: "bold yellow", StepStatus.WARNED: "bold yellow", StepStatus.CPU_ONLY: "yellow",
}
VERDICT_LABEL = {Verdict.PASS: "PASS", Verdict.WARN: "WARN", Verdict.FAIL: "FAIL", Verdict.SKIP: "SKIP",
                 Verdict.UNKNOWN: "UNKNOWN"}
VERDICT_GLYPH = {Verdict.PASS: ("✓", "+"), Verdict.WARN: ("!", "!"), Verdict.FAIL: ("✗", "x"),
                 Verdict.SKIP: ("–", "-"), Verdict.UNKNOWN: ("?", "?")}
VERDICT_STYLE = {Verdict.PASS: "green", Verdict.WARN: "bold yellow", Verdict.FAIL: "bold red",
                 Verdict.SKIP: "", Verdict.UNKNOWN: "bold magenta"}


def status_text(status: StepStatus, basic: bool, width: int = 9, not_applicable: bool = False,
                word: str | None = None) -> Text:
    """The status's glyph and word (in the operator's language), the word padded to ``width`` terminal cells;
    ``not_applicable``: a skip the machine's own check made ("n/a"), not a person's ("skipped"); ``word``: said
    instead of the status's own (a stage under way: "4 left")."""
    g = STATUS_GLYPH[status][1 if basic else 0]
    if word is None:
        word = status_word(status, not_applicable)
    return Text(f"{g} {word}" + " " * max(0, width - cell_len(word)), style=STATUS_STYLE[status])


def status_word(status: StepStatus, not_applicable: bool = False) -> str:
    """The status's word in the operator's language; ``not_applicable``: a skip the machine's own check made ("n/a"),
    not a person's ("skipped")."""
    return _("n/a") if not_applicable and status is StepStatus.SKIPPED else _(status.value)


def verdict_text(verdict: Verdict, basic: bool) -> Text:
    """The verdict's glyph and label (in the operator's language; JSON keeps the English words)."""
    g = VERDICT_GLYPH[verdict][1 if basic else 0]
    return Text(f"{g} {_(VERDICT_LABEL[verdict])}", style=VERDICT_STYLE[verdict])


class ConsoleScrollBarRender(ScrollBarRender):
    """Textual's scrollbar, drawn without block glyphs in basic mode.

    Textual draws the ends of a scrollbar's thumb with eighth blocks (``▁ ▂ ▃ ▄ ▅ ▆ ▇``, ``▉ … ▏``), which the
    Linux console's 256/512-glyph fonts lack (they show as diamonds or question marks). In an app whose
    ``basic`` is true this draws the thumb as whole cells in reverse video, each a ``#``; elsewhere it is
    Textual's own. Installed for every scrollbar by :class:`screens.app.BringupApp` (``ScrollBar.renderer``)."""

    @classmethod
    def render_bar(cls, *args: Any, **kwargs: Any) -> Segments:
        app = active_app.get(None)
        if getattr(app, "basic", False):
            return AsciiScrollBarRender.render_bar(*args, **kwargs)
        return super().render_bar(*args, **kwargs)


class AsciiScrollBarRender(ScrollBarRender):
    """A scrollbar thumb of whole cells, each a ``#`` in reverse video: no partial-block glyph at its ends, and a
    thumb that still shows where colour and reverse video do not (a monochrome console, ``tmux capture-pane -p``,
    a screen reader)."""

    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8
    THUMB = "#"

    @classmethod
    def render_bar(cls, *args: Any, **kwargs: Any) -> Segments:
        bar = super().render_bar(*args, **kwargs)

        def thumb(seg: Segment) -> bool:
            return bool(seg.style is not None and seg.style.reverse and seg.text and not seg.text.strip())

        if not bar.new_lines:  # horizontal: rows of cells, each thumb cell a '#'
            bar.segments = [Segment(cls.THUMB * len(seg.text), seg.style) if thumb(seg) else seg for seg in bar.segments]
            return bar
        # vertical: one segment per row. A thumb two cells wide keeps its inner cell blank, track-coloured, so the
        # '#' never touches the text beside it ("...until##" read as part of the text in a capture)
        track = next((seg.style for seg in bar.segments if not thumb(seg)), None)
        rows: list[Segment] = []
        for seg in bar.segments:
            if thumb(seg) and len(seg.text) > 1:
                rows += [Segment(" " * (len(seg.text) - 1), track), Segment(cls.THUMB, seg.style)]
            else:
                rows.append(Segment(cls.THUMB * len(seg.text), seg.style) if thumb(seg) else seg)
            rows.append(Segment.line())
        return Segments(rows, new_lines=False)
