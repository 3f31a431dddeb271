"""App-wide messages (past-tense events) posted by the App-level workers."""

from __future__ import annotations

from textual.message import Message


class LogLinesRead(Message):
    """New lines of an action run's log; ``start`` is the index of the first line in the run."""

    def __init__(self, run_id: int, start: int, lines: list[str]) -> None:
        super().__init__()
        self.run_id = run_id
        self.start = start
        self.lines = lines


class ActionEnded(Message):
    def __init__(self, run_id: int, state: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.state = state


class ChecksFinished(Message):
    def __init__(self, step_ids: list[str]) -> None:
        super().__init__()
        self.step_ids = step_ids
