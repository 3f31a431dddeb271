"""Plain-text charts for terminals (80 columns, 16 colours, ``TERM=linux``): no Textual, no colour needed.

:func:`bandwidth_chart` draws bus bandwidth (GB/s) against message size as one horizontal bar per size, the
way nccl-tests prints one row per size, with the floor drawn as a column of ``|`` (or ``┆`` in Unicode mode)
so a bar that stops short of it is visible without colour.
"""

from __future__ import annotations

from typing import Sequence

from wizard.common import fmt_value, human_bytes
from wizard.i18n import _

_EIGHTHS = " ▏▎▍▌▋▊▉"


def bandwidth_chart(series: Sequence[tuple[float, float]], floor: float | None = None, *, width: int = 78,
                    unicode: bool = True, unit: str = "GB/s", label: str = "busbw") -> list[str]:
    """Rows of a horizontal bar chart of ``series`` = [(message size in bytes, bandwidth)].

    ``floor`` (same unit as the values) is drawn as a vertical marker in every row and named in the
    header; ``width`` is the whole line width in columns (the default fits 80 columns with a border).
    ``unicode=False`` draws with ``#`` and ``|`` only (basic mode). Returns a list of lines; an empty series
    gives one line saying so. Never raises on odd values: negative or missing values draw as empty bars. A value
    is labelled as the results table shows it (0.0099, not 0.0: walk 19; 0.161, not 0.2: walk 20). The words are in the operator's
    language (:mod:`wizard.i18n`).
    """
    pts = [(float(s), max(0.0, float(v))) for s, v in series if s is not None and v is not None]
    if not pts:
        return [_("(no {label} measurements yet)").format(label=label)]
    size_w = max(len(human_bytes(s)) for s, _ in pts)
    vals = [v for _, v in pts]
    top = max(vals + ([floor] if floor else []))
    top = top * 1.05 if top > 0 else 1.0
    val_w = max(len(fmt_value(v)) for v in vals)
    bar_w = max(10, width - size_w - val_w - 4)
    floor_col = int(round(floor / top * bar_w)) if floor else None
    mark = "┆" if unicode else "|"
    head = _("{label} ({unit}) by message size").format(label=label, unit=unit) + (
        _("; floor {floor:g} {unit} drawn as {mark}").format(floor=floor, unit=unit, mark=mark) if floor else "")
    out = [head]
    for s, v in pts:
        exact = v / top * bar_w
        full = int(exact)
        if unicode:
            bar = "█" * full + (_EIGHTHS[int((exact - full) * 8)] if full < bar_w else "")
        else:
            bar = "#" * full
        bar = bar.ljust(bar_w)[:bar_w]
        if floor_col is not None and 0 <= floor_col < bar_w and bar[floor_col] in (" ",):
            bar = bar[:floor_col] + mark + bar[floor_col + 1:]
        out.append(f"{human_bytes(s).rjust(size_w)} {bar} {fmt_value(v):>{val_w}}")
    return out

