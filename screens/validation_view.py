"""What the action screen shows for a validation run: a live progress line and a results panel.

The progress and the raw measurements come from the run's log as it grows (:class:`wizard.validate.LiveView`), so
they work the same for a run bringup started, one it re-attached to after a restart, and one that ended long ago.
The verdicts, the judged results table (with limits) and the all-reduce series with its floor are the ones the
engine judged and stored with the run when it ended (``Build.run_action``; ``ActionSpec.judge`` and
``ActionSpec.results``): this module only renders them, exactly as ``bringup validate`` stores them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich import box
from rich.table import Table
from rich.text import Text

from screens.glyphs import VERDICT_GLYPH, VERDICT_LABEL, VERDICT_STYLE
from screens.widgets import hanging
from wizard.i18n import N_, _, gettext, subject_name, tr, tr_subject
from wizard.model import Finding, Verdict, subject_prefix
from wizard.textchart import bandwidth_chart
from wizard.validate import LiveView, limit_shown, metric_word, test_word, value_shown


def _subject(subject: str) -> str:
    """A results row's subject in the reader's words: "host" (the node the run measured as a whole) as a word of the
    language (walk 40 #3: "host" in a Chinese table), a rank or a GPU as :func:`wizard.i18n.subject_name` says it."""
    return _("host") if subject == "host" else subject_name(subject)


def stored_rows(results: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """(test, subject, metric, value unit, limit, verdict) of the stored results table."""
    rows = results.get("results") if isinstance(results, Mapping) else None
    return [(test_word(str(r.get("test", ""))), _subject(str(r.get("subject", ""))),
             metric_word(str(r.get("metric", ""))), value_shown(r.get("value"), r.get("unit")), limit_shown(r),
             _verdict_word(r.get("verdict")))
            for r in rows or [] if isinstance(r, Mapping)]




def _verdict_word(value: Any) -> str:
    """A stored row's verdict word ("pass") in the operator's language ("通过"); any other value as it is."""
    word = str(value or "")
    return _(word) if word in {v.value for v in Verdict} else word


def _fits(table: Table, width: int) -> bool:
    """Whether ``table`` fits ``width`` columns without wrapping a cell (its natural width, rich's measurement): a
    six-column table at 60 columns folded values inside their units ("0.856 GB/" over "s") and names inside words
    (walk 39), so a table that does not fit is listed instead (:func:`_listed`)."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=1000)  # room: a measurement is clamped to the console's width
    return Measurement.get(console, console.options, table).maximum <= width


def _listed(title: str, rows: Sequence[Sequence[str]], heads: Sequence[str], width: int) -> list[RenderableType]:
    """``rows`` as a list for a narrow screen of ``width`` columns: the first two cells (what ran, where) on one line,
    the others under them as "metric: value; limit: ...; verdict: ...", packed whole into lines (walk 42 prep: "limit:
    >=" over "0.1"); only an item wider than a line wraps, at its words under an indent."""
    out: list[RenderableType] = [Text(title, style="bold")]
    room = max(20, width - 8)  # the items sit after a 4-column indent, a 2-column mark and its gap
    sep = gettext("; ")
    for r in rows:
        out.append(hanging("", " · ".join(c for c in r[:2] if c), indent=2))
        lines: list[str] = []
        for item in (f"{_(h)}{gettext(': ')}{c}" for h, c in zip(heads[2:], r[2:]) if c and c != "-"):
            if lines and cell_len(lines[-1] + sep + item) <= room:
                lines[-1] += sep + item
            else:
                if lines:
                    lines[-1] += sep.rstrip()
                lines.append(item)
        out.extend(hanging("  ", ln, indent=4) for ln in lines)
    return out


def results_panel(live: LiveView, findings: Sequence[Finding] = (), results: Mapping[str, Any] | None = None,
                  basic: bool = False, width: int = 80) -> RenderableType:
    """The results panel: the stored findings (once judged), the stored results table (the raw measurements
    from the log while there is none), the all-reduce chart with the stored floor, and the log's errors. ``width``
    (columns): a table wider than it is listed instead (:func:`_fits`) and the chart is drawn to fit."""
    results = results or {}
    parts: list[RenderableType] = []
    if findings:
        parts.append(Text(_("Verdicts"), style="bold"))
        grid = Table.grid(padding=(0, 1))  # the message wraps under itself, not under the verdict (walk 20)
        label_w = max(cell_len(_(VERDICT_LABEL[f.verdict])) for f in findings) + 2
        grid.add_column(width=label_w, no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")
        for f in findings:
            g = VERDICT_GLYPH[f.verdict][1 if basic else 0]
            # the subject as the step screen names it ("rank 1 on vm: ..."): two ranks' lines read apart
            who = tr_subject(subject_prefix(f.subject, f.message))
            grid.add_row(Text(f"{g} {_(VERDICT_LABEL[f.verdict])}", style=VERDICT_STYLE[f.verdict]),
                         Text(f"{f.id}{gettext(': ')}{who}{tr(f.message)}"))
        parts.append(grid)
        parts.append(Text(""))
    judged = stored_rows(results)
    rows = [] if judged else live.measurement_rows()
    nodes = {r[0] for r in rows}
    if judged:
        t = Table(title=_("Results"), title_justify="left", expand=False,
                  box=box.ASCII if basic else box.HEAVY_HEAD)
        for c in (N_("test"), N_("subject"), N_("metric"), N_("value"), N_("limit"), N_("verdict")):
            t.add_column(_(c), overflow="fold")
        for r in judged:
            t.add_row(*r)
        parts += [t] if _fits(t, width) else _listed(_("Results"), judged, (N_("test"), N_("subject"), N_("metric"),
                                                                             N_("value"), N_("limit"), N_("verdict")),
                                                                     width)
    if rows:
        t = Table(title=_("Measurements"), title_justify="left", expand=False,
                  box=box.ASCII if basic else box.HEAVY_HEAD)
        if len(nodes) > 1:
            t.add_column(_("node"), no_wrap=True)
        for c in (N_("test"), N_("subject"), N_("metric"), N_("value")):
            t.add_column(_(c), overflow="fold")
        for node, test, what, metric, value in rows:
            t.add_row(*(([node] if len(nodes) > 1 else []) + [test, what, metric, value]))
        parts += [t] if _fits(t, width) else _listed(
            _("Measurements"), [(test, what + (f" ({node})" if len(nodes) > 1 else ""), metric, value)
                                for node, test, what, metric, value in rows],
            (N_("test"), N_("subject"), N_("metric"), N_("value")), width)
    raw_series = results.get("series")
    stored: Mapping[str, Any] = raw_series if isinstance(raw_series, Mapping) else {}
    points = [(float(p[0]), float(p[1])) for p in stored.get("points") or []
              if isinstance(p, (list, tuple)) and len(p) == 2]
    series = points or live.allreduce_series()
    floor, basis = stored.get("floor_gb_s"), str(stored.get("floor_basis") or "")
    if series:
        parts.append(Text(""))
        parts.append(Text("\n".join(bandwidth_chart(series, floor, width=min(74, max(40, width - 2)),
                                                     unicode=not basic))))
        if floor is not None and basis:
            parts.append(Text(_("floor: {basis}").format(basis=basis)))
    for _kind, node, message, remedy in live.errors():
        parts.append(Text(_("error on {node}: {message}").format(node=node, message=message)
                          if node and node not in message else _("error: {message}").format(message=message),
                          style="bold red"))
        if remedy:
            parts.append(hanging("->", tr(remedy), indent=2))  # the script's remedies are in the catalogue (walk 27 #3)
    bad = live.bad_lines
    if bad:
        parts.append(Text(_("{count} unreadable event line(s), first at log line {line}").format(count=len(bad),
                                                                                               line=bad[0][0])))
    if results.get("error"):
        parts.append(Text(str(results["error"])))
    if not parts:
        parts.append(Text(_("No results yet: the run has printed no measurements.")))
    return Group(*parts)
