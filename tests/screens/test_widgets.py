"""screens.widgets: the form field that keeps a burst of keys in order (FormInput); the confirmation's command rows."""

from __future__ import annotations

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Button, Input

from screens.widgets import FormInput


class TwoFields(App):
    def compose(self) -> ComposeResult:
        yield FormInput(id="a")
        yield FormInput(id="b")
        yield Button("ok", id="ok")

    def on_mount(self) -> None:
        self.pressed: list[str] = []

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.pressed.append(event.button.id or "")


BURST = [("x", "x"), ("backspace", None), ("1", "1"), ("2", "2"), ("tab", None), ("5", "5"), ("1", "1"),
         ("2", "2"), ("left", None), ("left", None), ("9", "9")]
"""Keys posted to the app in one go, as an SSH packet or a console under load delivers them (Pilot.press waits
between keys, which hides the race)."""


async def burst(app: App, keys) -> None:
    for key, char in keys:
        app.post_message(events.Key(key, char))


async def test_a_burst_of_keys_lands_in_order_across_editing_keys_and_tab():
    """Textual runs the field's own bindings (backspace, the arrows) and the app's tab only after the key bubbled up
    to the app, while the printable keys behind them went straight to the field: a plain Input ends "x1251" with the
    tab applied last. A FormInput does them in order."""
    app = TwoFields()
    async with app.run_test() as pilot:
        await pilot.pause()
        await burst(app, BURST)
        for _ in range(5):
            await pilot.pause()
        assert app.query_one("#a", Input).value == "12"
        assert app.query_one("#b", Input).value == "5912"  # two lefts put the 9 between 5 and 1
        assert app.focused is app.query_one("#b")


async def test_keys_behind_a_tab_to_a_button_reach_it_once():
    """A key forwarded to the field before the tab that moved the focus goes on to the focused widget, once: an
    enter there presses the button one time (not again when the key bubbles back to the app)."""
    app = TwoFields()
    async with app.run_test() as pilot:
        app.query_one("#b").focus()
        await pilot.pause()
        await burst(app, [("7", "7"), ("tab", None), ("enter", None)])
        for _ in range(5):
            await pilot.pause()
        assert app.query_one("#b", Input).value == "7"
        assert app.focused is app.query_one("#ok") and app.pressed == ["ok"]


def test_a_confirmations_command_wraps_as_a_shell_reads_it_back():
    """walk 44 #5: the confirmation dialog wrapped a capture's command at any character, a path cut after a "/", with
    no continuation, so the rows did not paste back as the command. Each ``$`` line now wraps at the width it is
    drawn in: every row fits, every row but the last ends in a backslash, bash reads the one command; a diff line
    under it keeps its lead."""
    import shlex
    import subprocess

    from rich.console import Console

    from screens.widgets import command_lines

    cmd = ("$ /work/main/.venv/bin/python -m wizard.cli --state /tmp/bringup-snapshots/dlg-report.capture-en-60 "
           "--lang en capture -o /tmp/bringup-snapshots/dlg-report.capture-en-60/builds/x/capture-1.tar.gz")
    diff = "+ # swap commented out by bringup: /swap.img none swap sw 0 0 and more words to wrap it"
    for width in (52, 70):
        console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
        console.print(command_lines([cmd, diff]))
        rows = console.export_text().rstrip("\n").split("\n")
        shown = rows[:next(i for i, r in enumerate(rows) if r.startswith("+ "))]
        assert len(shown) > 1 and all(len(r.rstrip()) <= width for r in rows), rows
        assert all(r.rstrip().endswith("\\") for r in shown[:-1]), shown
        said = subprocess.run(["bash", "-c", "printf '%s\\n' " + "\n".join(r.rstrip() for r in shown)[2:]],
                              capture_output=True, text=True).stdout.split("\n")[:-1]
        assert said == shlex.split(cmd[2:]), (said, shown)
        assert rows[len(shown)].startswith("+ # swap") and rows[len(shown) + 1].startswith("  ")
