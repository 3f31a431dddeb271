"""wizard/validate.py: the human lines of a validation log and the live progress line."""

from __future__ import annotations

import json

from wizard.validate import LiveView, event_line


def _ev(**data) -> str:
    return "BRINGUP " + json.dumps({"v": 1, "t": 1.0, "node": "vm", **data})


def test_a_soak_interval_is_said_once_in_seconds():
    """walk 20: each soak interval came twice (once per rank, no rank named) as "[3/120] soak interval 2", which read
    as interval 3 of 120; the figures are seconds. Rank 0's line says it, in seconds."""
    line = {"event": "progress", "test": "soak", "phase": "soak interval 2", "done": 3, "total": 120, "unit": "s"}
    assert event_line(_ev(rank=0, **line)) == "[3 s of 120 s] soak interval 2"
    assert event_line(_ev(rank=1, **line)) is None
    old = {k: v for k, v in line.items() if k != "unit"}  # a script before the unit: counted as before
    assert event_line(_ev(rank=0, **old)) == "[3/120] soak interval 2"
    live = LiveView()
    live.add(0, [_ev(rank=0, **line)])
    assert "(3 s of 120 s)" in live.progress_line()


def test_the_progress_line_before_the_first_progress_event_says_what_runs_in_words():
    """Walk 23 #11: a burn-in's line began as a bare "▶ counters" (the counters event has no test); it names the
    run's test, what it does and the node, as the later phases' lines do."""
    from wizard import i18n

    live = LiveView()
    live.add(0, [_ev(event="start", test="soak", device="cpu", world_size=1),
                 _ev(event="counters", when="before", device=None, available=False)])
    assert live.progress_line() == "\u25b6 soak: reading the error counters before the test on vm"
    assert live.progress_line(basic=True).startswith("> soak: ")
    live.add(2, [_ev(event="counters", when="after", device=None, available=False)])
    assert live.progress_line() == "\u25b6 soak: reading the error counters after the test on vm"
    i18n.set_language("zh_CN")
    try:
        assert "正在读取测试后的错误计数" in live.progress_line()
    finally:
        i18n.set_language("en")
