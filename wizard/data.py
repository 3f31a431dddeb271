"""Reference tables shipped in ``assets/`` (CSV with a ``source`` column), loaded once.

Every number that judges hardware lives in one of these tables or in a named constant whose
docstring names its source (DESIGN.md conventions).
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"


@functools.lru_cache(maxsize=None)
def table(name: str) -> tuple[dict[str, str], ...]:
    """Rows of ``assets/<name>`` as dicts (stripped strings). Raises ``FileNotFoundError``."""
    with open(ASSETS / name, newline="", encoding="utf-8") as fh:
        rows = [{k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
                for row in csv.DictReader(line for line in fh if not line.startswith("#"))]
    return tuple(rows)
