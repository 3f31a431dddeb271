"""The busbw chart: one bar per size, bars proportional to the value, the floor drawn in every row."""

from wizard.common import human_bytes
from wizard.textchart import bandwidth_chart


def test_bars_scale_and_floor_marker():
    series = [(8, 0.0), (1 << 20, 115.0), (1 << 30, 230.0)]
    rows = bandwidth_chart(series, floor=228.0, width=60)
    assert rows[0].startswith("busbw (GB/s) by message size; floor 228 GB/s")
    body = rows[1:]
    assert [r.split()[0] + " " + r.split()[1] for r in body] == ["8 B", "1 MiB", "1 GiB"]
    bars = [r.count("█") for r in body]
    assert bars[0] == 0 and bars[2] >= 2 * bars[1] - 1 and bars[2] > 0
    # the floor marker sits at the same column in every row whose bar has not reached it
    cols = {r.index("┆") for r in body if "┆" in r}
    assert len(cols) == 1 and "┆" in body[0] and "┆" in body[1]
    assert body[2].rstrip().endswith(" 230") and all(len(r) <= 60 for r in body)


def test_basic_mode_is_ascii_and_empty_series_says_so():
    rows = bandwidth_chart([(4096, 1.5), (8192, 3.0)], floor=10, unicode=False)
    assert all(ord(c) < 128 for r in rows for c in r) and "|" in rows[1] and "#" in rows[2]
    assert bandwidth_chart([]) == ["(no busbw measurements yet)"]
    assert bandwidth_chart([(8, -1.0), (16, None)]) [1].rstrip().endswith(" 0")


def test_human_bytes():
    assert [human_bytes(x) for x in (8, 1024, 3 << 20, 4 << 30)] == ["8 B", "1 KiB", "3 MiB", "4 GiB"]
