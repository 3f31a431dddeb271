"""tests/data/PROVENANCE.md lists every file under tests/data, and every file it lists is there.

A manifest row is a Markdown table row whose first cell is one path in backticks, relative to
tests/data (``| `cases/expected.csv` | what it is | origin |``); its origin cell says **real**,
**dev VM**, **synthetic** or **by hand** (the manifest itself).
"""

from __future__ import annotations

import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MANIFEST = DATA / "PROVENANCE.md"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")
ORIGINS = ("**real**", "**dev VM**", "**synthetic**", "**by hand**")


def manifest_rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
            assert m.group(1) not in rows, f"listed twice: {m.group(1)}"
            rows[m.group(1)] = cells
    return rows


def files_on_disk() -> set[str]:
    return {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()}


def test_every_file_under_tests_data_is_listed():
    missing = sorted(files_on_disk() - set(manifest_rows()))
    assert not missing, ("files under tests/data with no row in tests/data/PROVENANCE.md (add one: path, what it "
                         "is, origin):\n  " + "\n  ".join(missing))


def test_every_listed_file_exists():
    gone = sorted(set(manifest_rows()) - files_on_disk())
    assert not gone, "rows of tests/data/PROVENANCE.md naming no file:\n  " + "\n  ".join(gone)


def test_every_row_says_what_and_where_from():
    bad = []
    for path, cells in manifest_rows().items():
        described = len(cells) >= 2 and cells[0] and cells[1].startswith(ORIGINS)
        if not described or ("synthetic_" in path and not cells[1].startswith("**synthetic**")):
            bad.append(path)
    assert not bad, f"rows without a description or an origin ({', '.join(ORIGINS)}): {bad}"


def test_one_manifest():
    assert sorted(p.name for p in DATA.glob("PROVENANCE*")) == ["PROVENANCE.md"]
