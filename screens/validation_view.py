"""What the action screen shows for a validation run: a live progress line and a results panel.

Both are computed from the script's events (wizard.parsers.validate) as the log grows, so they work the same
for a run bringup started, one it re-attached to after a restart, and one that ended long ago. The results
panel is a table of the measurements (with floor and verdict where the judge gives them), the all-reduce
bus bandwidth chart with the floor drawn (wizard.textchart), and, once the run has been judged, the findings.
"""

from __future__ import annotations

from typing import Any, Sequence

from rich.console import Group, RenderableType
from rich import box
from rich.table import Table
from rich.text import Text

from screens.glyphs import VERDICT_GLYPH, VERDICT_LABEL, VERDICT_STYLE
from wizard.model import Finding
from wizard.parsers.validate import Event, ValidateLog, num
from wizard.textchart import bandwidth_chart, human_bytes


def progress_line(vlog: ValidateLog, basic: bool = False) -> str:
    """One line: the current test and phase, the sweep size and current busbw; errors and the end say so."""
    if not vlog.events:
        return ""
    last = vlog.events[-1]
    ends = vlog.ends
    errs = vlog.errors
    err = f"; {len(errs)} error(s), last: {errs[-1].get('kind', '?')} {str(errs[-1].get('message', ''))[:60]}" \
        if errs else ""
    if ends and last.kind == "end":
        rc = ends[-1].get("rc")
        dur = num(ends[-1].get("duration_s"))
        return f"finished: exit status {rc}" + (f" after {dur:.0f} s" if dur is not None else "") + err
    p = vlog.last_progress()
    arrow = ">" if basic else "▶"
    if p is None:
        return f"{arrow} {last.kind} {last.test}".rstrip() + err
    parts = [f"{arrow} {p.test}: {p.get('phase', '')}".rstrip()]
    done, total = p.get("index", p.get("done")), p.get("total")  # index: 1-based sub-test number
    if isinstance(done, int) and isinstance(total, int) and total > 0:
        parts.append(f"({done}/{total})")
    bw = num(p.get("busbw_gb_s"))
    if bw is not None:
        parts.append(f"busbw {bw:.2f} GB/s")
    if p.node:
        parts.append(f"on {p.node}")
    return " ".join(parts) + err


def _fmt(v: Any) -> str:
    f = num(v)
    if f is None:
        return "-" if v is None else str(v)
    if f == int(f) and abs(f) < 1e6:  # counts (ranks, errors) and whole figures without decimals
        return f"{int(f):,}"
    return f"{f:,.0f}" if abs(f) >= 1000 else (f"{f:.2f}" if abs(f) >= 1 else f"{f:.3g}")


def _what(e: Event) -> str:
    """The measurement's qualifier: device, size or pair."""
    if e.test in ("allreduce", "soak_allreduce") and num(e.get("size_bytes")) is not None:
        return human_bytes(num(e.get("size_bytes")) or 0)
    if e.test == "p2p":
        return f"{e.get('src')}->{e.get('dst')}"
    if e.test == "sanity":
        return f"rank {e.get('rank')}"
    if e.get("interval") is not None:
        return f"interval {e.get('interval')}"
    dev = e.get("device")
    return f"GPU {dev}" if dev is not None else "cpu"


def measurement_rows(vlog: ValidateLog, keep_sweep: int = 3) -> list[tuple[str, str, str, str, str]]:
    """(node, test, what, metric, value unit) rows; of a sweep only the ``keep_sweep`` largest sizes per node
    (the whole sweep is in the chart)."""
    rows: list[tuple[str, str, str, str, str]] = []
    sweep: dict[str, list[Event]] = {}
    for e in vlog.of("measure"):
        if e.test == "allreduce":
            sweep.setdefault(e.node, []).append(e)
            continue
        rows.append((e.node, e.test, _what(e), str(e.get("metric", "")), f"{_fmt(e.get('value'))} {e.get('unit', '')}"))
    for node, evs in sweep.items():
        for e in sorted(evs, key=lambda x: num(x.get("size_bytes")) or 0)[-keep_sweep:]:
            extra = f" (algbw {_fmt(e.get('algbw_gb_s'))}, wrong {e.get('wrong')})"
            rows.append((node, e.test, _what(e), "busbw", f"{_fmt(e.get('value'))} GB/s{extra}"))
    return rows


def allreduce_series(vlog: ValidateLog) -> list[tuple[float, float]]:
    """[(size in bytes, busbw GB/s)] of the all-reduce sweep, one point per size (the last one seen)."""
    pts: dict[float, float] = {}
    for e in vlog.measures("allreduce"):
        s, v = num(e.get("size_bytes")), num(e.get("busbw_gb_s", e.get("value")))
        if s is not None and v is not None:
            pts[s] = v
    return sorted(pts.items())


KIND_OF_STEP = {"gpu.validate": "gpu", "node.validate": "node", "node.soak": "soak"}
"""Which judge (wizard.rules.validate.analyse kind) reads a step's run."""


def _limit(r: Any) -> str:
    """The limit a row was judged against with its direction: "≥ 460" for a floor, "≤ 0.5" for a ceiling."""
    if r.floor is None:
        return "-"
    op = getattr(r, "limit_op", "") or ""
    return f"{op} {_fmt(r.floor)}".strip()


def judged_rows(vlog: ValidateLog, kind: str, plan: Any = None) -> tuple[list[tuple[str, ...]], float | None, str]:
    """(rows of test, subject, metric, value unit, limit, verdict), busbw floor, floor basis: the judge's own
    results table, so the panel shows the same floors and verdicts as the findings. Never raises."""
    from wizard.rules.validate import analyse

    try:
        a = analyse(vlog, plan or {}, kind)
    except Exception:  # noqa: BLE001 - the panel falls back to the raw measurements
        return [], None, ""
    rows = [(r.test, r.subject, r.metric, f"{_fmt(r.value)} {r.unit}".strip(), _limit(r), r.verdict) for r in a.rows]
    return rows, a.floor_gb_s, a.floor_basis


def results_panel(vlog: ValidateLog, findings: Sequence[Finding] = (), floor: float | None = None,
                  basic: bool = False, kind: str = "", plan: Any = None) -> RenderableType:
    """The results panel: findings (when judged), the results table (judged rows for a known ``kind``, the raw
    measurements otherwise), the all-reduce chart with the floor drawn."""
    parts: list[RenderableType] = []
    if findings:
        parts.append(Text("Verdicts", style="bold"))
        for f in findings:
            g = VERDICT_GLYPH[f.verdict][1 if basic else 0]
            line = Text(f"{g} {VERDICT_LABEL[f.verdict]:<7}", style=VERDICT_STYLE[f.verdict])
            line.append(f" {f.id}: {f.message}")
            parts.append(line)
        parts.append(Text(""))
    judged, jfloor, basis = judged_rows(vlog, kind, plan) if kind else ([], None, "")
    if floor is None:
        floor = jfloor
    rows = [] if judged else measurement_rows(vlog)
    nodes = {r[0] for r in rows}
    if judged:
        t = Table(title="Results", title_justify="left", expand=False, pad_edge=False,
                  box=box.ASCII if basic else box.HEAVY_HEAD)
        for c in ("test", "subject", "metric", "value", "limit", "verdict"):
            t.add_column(c, overflow="fold")
        for r in judged:
            t.add_row(*r)
        parts.append(t)
    if rows:
        t = Table(title="Measurements", title_justify="left", expand=False, pad_edge=False,
                  box=box.ASCII if basic else box.HEAVY_HEAD)
        if len(nodes) > 1:
            t.add_column("node", no_wrap=True)
        for c in ("test", "what", "metric", "value"):
            t.add_column(c, overflow="fold")
        for node, test, what, metric, value in rows:
            t.add_row(*(([node] if len(nodes) > 1 else []) + [test, what, metric, value]))
        parts.append(t)
    series = allreduce_series(vlog)
    if series:
        parts.append(Text(""))
        parts.append(Text("\n".join(bandwidth_chart(series, floor, width=74, unicode=not basic))))
        if floor is not None and basis:
            parts.append(Text(f"floor: {basis}"))
    for e in vlog.errors:
        parts.append(Text(f"error ({e.get('kind')}) {('on ' + e.node) if e.node else ''}: {e.get('message', '')}",
                          style="bold red"))
        if e.get("remedy"):
            parts.append(Text(f"  -> {e.get('remedy')}"))
    if vlog.bad_lines:
        parts.append(Text(f"{len(vlog.bad_lines)} unreadable event line(s), first at log line {vlog.bad_lines[0][0]}"))
    if not parts:
        parts.append(Text("No results yet: the run has printed no measurements."))
    return Group(*parts)
