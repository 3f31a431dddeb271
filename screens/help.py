"""F1 help: every key each screen binds, read from the screens' own ``BINDINGS`` (so it cannot drift from them),
and how bringup keeps your place."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from wizard.i18n import N_, _

WORDS: dict[tuple[str, str], str] = {
    ("BringupApp", "help"): N_("this help"),
    ("BringupApp", "quit"): N_("quit (your place is saved)"),
    ("BringupApp", "plan"): N_("plan answers (once a build is started)"),
    ("StartScreen", "resume"): N_("resume the build where you left it"),
    ("StartScreen", "new"): N_("start a new build (the old one stays on disk)"),
    ("BuildScreen", "check_stage"): N_("run every automatic check of the highlighted stage"),
    ("BuildScreen", "skip_stage"): N_("skip every open step of the highlighted stage, with one reason (a single-node "
                                      "build's Several nodes)"),
    ("BuildScreen", "back"): N_("back to the welcome screen"),
    ("BuildScreen", "switch_list"): N_("between the stages and the steps"),
    ("StepScreen", "check"): N_("check: run this step's automatic checks"),
    ("StepScreen", "run_action"): N_("run the step's action (asks first, shows every command)"),
    ("StepScreen", "watch_run"): N_("while the step's action runs: open its screen (the log streaming; k cancels)"),
    ("StepScreen", "show_log"): N_("the action's log"),
    ("StepScreen", "confirm"): N_("confirm (done by hand, with an optional note); moves to the next open step"),
    ("StepScreen", "skip"): N_("skip, with a reason"),
    ("StepScreen", "acknowledge"): N_("acknowledge a past event (an old Xid) with a reason"),
    ("StepScreen", "sizing"): N_("plan & sizing (plan steps; F3 there: use the result as the plan)"),
    ("StepScreen", "next"): N_("next step; from a stage's last step, the next stage's first open step"),
    ("StepScreen", "prev"): N_("previous step"),
    ("StepScreen", "open_finding"): N_("on a finding: show or hide its evidence"),
    ("StepScreen", "back"): N_("back to the overview, on this step"),
    ("ActionScreen", "back"): N_("back: the action keeps running, also if SSH drops"),
    ("ActionScreen", "cancel"): N_("cancel the run (SIGTERM to its process group)"),
    ("ActionScreen", "results"): N_("switch between the log and the results (validations; other runs say they have "
                                    "none)"),
    ("SizingScreen", "use_plan"): N_("use the result as the build's plan (a SHORT plan asks first)"),
    ("SizingScreen", "scroll_results(1)"): N_("scroll the results down a page, from any field"),
    ("SizingScreen", "scroll_results(-1)"): N_("scroll the results up a page, from any field"),
    ("PlanDialog", "cancel"): N_("close the form; with unsaved edits it asks first"),
    ("PlanDialog", "save"): N_("save the answers (a value that does not read says so under its field)"),
    ("FleetScreen", "recheck"): N_("check every node again"),
    ("SizingScreen", "back"): N_("back to the step you came from (the form is kept with the build)"),
    ("FleetScreen", "back"): N_("back to the screen you came from"),
    ("NodeFindingsScreen", "back"): N_("back to the fleet view"),
    ("StartScreen", "fleet"): N_("back to the fleet view (only when bringup was started with --nodes)"),
}
"""The help's longer words for a binding (screen class name, action); a binding without them shows its footer
description. A test holds every entry to a binding that exists."""

EXTRA: dict[str, tuple[str, ...]] = {
    "BringupApp": (N_("tab / shift+tab  next / previous control"), N_("arrows  move, scroll"), N_("enter  open")),
    "BuildScreen": (N_("enter  open the highlighted stage or step"),
                    N_("arrows, home, end  move within the focused list")),
    "SizingScreen": (N_("tab / shift+tab  between fields"),
                     N_("enter  open a choice list, or go to the next field")),
    "StepScreen": (N_("tab / shift+tab  next / previous finding; arrows scroll the page"),),
    "PlanDialog": (N_("tab / shift+tab  between fields; an empty field removes the answer"),),
    "FleetScreen": (N_("enter  open the highlighted node's findings"),),
}
"""Keys the widgets of a screen answer (lists, findings, fields), not its own bindings."""


def sections() -> list[tuple[str, Any]]:
    """(heading, class) of each screen the help lists, in the order an operator meets them."""
    from screens.action import ActionScreen
    from screens.app import BringupApp
    from screens.build import BuildScreen
    from screens.fleet import FleetScreen, NodeFindingsScreen
    from screens.plan import PlanDialog
    from screens.sizing import SizingScreen
    from screens.start import StartScreen
    from screens.step import StepScreen

    return [(_("Every screen"), BringupApp), (_("Welcome screen"), StartScreen), (_("Build overview"), BuildScreen),
            (_("Step screen"), StepScreen), (_("Action screen"), ActionScreen),
            (_("Plan answers form (F2)"), PlanDialog), (_("Plan & sizing (z on a plan step)"), SizingScreen),
            (_("Fleet view (bringup --nodes NODESET)"), FleetScreen),
            (_("A node's findings (fleet view)"), NodeFindingsScreen)]


def key_words(key: str) -> str:
    """A binding's key as the help writes it (as the footer does): ``escape`` -> ``esc``, ``ctrl+q`` -> ``^q``,
    ``f1`` -> ``F1``."""
    out = []
    for k in key.split(","):
        k = k.strip()
        k = "^" + k[5:] if k.startswith("ctrl+") else k
        out.append({"escape": "esc"}.get(k, k.upper() if k[:1] == "f" and k[1:].isdigit() else k))
    return " / ".join(out)


def bindings_of(cls: Any) -> list[Binding]:
    """The bindings a screen or app class declares itself (``BINDINGS``, tuples made Bindings)."""
    return [b if isinstance(b, Binding) else Binding(*b) for b in cls.__dict__.get("BINDINGS", [])]


def keys_text(width: int = 54) -> str:
    """Every screen's keys, from its bindings, with :data:`WORDS` and :data:`EXTRA`, in the operator's language (the
    English words are the message ids); a line longer than ``width`` cells goes on under its words (a hanging
    indent), so the keys stay in their column at 60x20."""
    from rich.cells import cell_len

    from wizard.i18n import wrap

    lines: list[str] = []
    for heading, cls in sections():
        lines.append(heading)
        rows: list[tuple[str, str]] = []
        for b in bindings_of(cls):
            words = WORDS.get((cls.__name__, b.action)) or b.tooltip or b.description
            rows.append((key_words(b.key), _(words) if words else ""))
        for x in EXTRA.get(cls.__name__, ()):  # "key  words": the key is what comes before the first two spaces
            key, _sep, words = _(x).partition("  ")
            rows.append((key, words.strip()))
        for key, words in rows:
            # one column for the words at every key (walk 30 #14: "enter" pushed its words a column right, and
            # "tab / shift+tab" ran into them): a key wider than the column gets a line of its own
            if cell_len(key) <= 6:  # "enter", "pageup", "方向键" (six cells) keep the words on their line
                lines += wrap(words, width, "  " + key + " " * (7 - cell_len(key)), 9)
            else:
                lines.append(f"  {key}")
                lines += wrap(words, width, " " * 9, 9)
        lines.append("")
    return "\n".join(lines) + "\n"  # a blank line after the last section too (walk 19: it ran into the paragraph)


PLACE = N_("Your place is saved at every step: start bringup again and choose Resume (it goes on at the step you "
           "were on, or at the next open step after it when that one is done). A restarted bringup re-attaches to a "
           "running action, or marks one that died without an exit status as interrupted. A second bringup on the same "
           "build is read-only. Where the footer is too narrow for every key, F1 says how many it left out (\"Help (+2 "
           "keys)\", or \"Help +2\" where even that is too long): they all work, and this help lists them. Esc or F1 "
           "closes it.")
"""What the help says after the keys: one paragraph, wrapped to the dialog's width (:func:`place_text`)."""


def place_text(width: int) -> str:
    """:data:`PLACE`, translated and wrapped to ``width`` terminal cells."""
    from wizard.i18n import wrap

    return "\n".join(wrap(_(PLACE), width)) + "\n"

def command_lines(width: int = 54) -> str:
    """The command line's subcommands with their one-line help, read from the CLI's own parser (one source)."""
    import argparse

    from wizard.cli import build_parser
    from wizard.i18n import wrap

    out = [_("Command line (bringup SUBCOMMAND --help for more):")]
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                out += wrap(choice.help or "", width, f"  {choice.dest:<9} ", 12)  # the help under itself
    return "\n".join(out)


class HelpScreen(ModalScreen[None]):
    # the help is longer than the screen at 80x24: the footer says how to page through it (walk 36 #13)
    BINDINGS = [Binding("escape", "close", "Close"), Binding("f1", "close", "Close", show=False),
                Binding("q", "close", "Close", show=False),
                Binding("pagedown", "page(1)", "Scroll", priority=True),
                Binding("pageup", "page(-1)", "Scroll", show=False, priority=True)]

    def __init__(self, opened_from: type | None = None) -> None:
        """``opened_from``: the class of the screen F1 was pressed on; the help opens at its section."""
        super().__init__()
        self.opened_from = opened_from

    def compose(self) -> ComposeResult:
        from screens.widgets import KeyFooter

        with VerticalScroll(id="help", classes="dialog"):
            yield Static(_("bringup help: the keys of each screen (esc or F1 closes it)"), classes="dialog-title",
                         markup=False)
            # wrapped to the dialog's text width (74 cells, less its border, padding and scrollbar: 68 at 80 columns,
            # 54 at 60), so a line breaks only where the box does
            width = max(30, min(74, self.app.size.width) - 6)
            self._keys = keys_text(width)
            yield Static(self._keys + place_text(width) + "\n" + command_lines(width), markup=False, id="help-keys")
        yield KeyFooter()  # its own keys (esc Close), not those of the screen under it, which do nothing here

    def on_mount(self) -> None:
        # the welcome screen's keys follow "Every screen" at the top already: scrolled only for a later screen
        heading = next((h for i, (h, cls) in enumerate(sections()) if cls is self.opened_from and i > 1), None)
        lines = self._keys.split("\n")
        if heading is not None and heading in lines:
            row = lines.index(heading)
            # after the first layout: the keys of the screen F1 was pressed on at the top (not "Every screen")
            self.call_after_refresh(lambda: self.query_one("#help", VerticalScroll).scroll_to(
                y=self.query_one("#help-keys").virtual_region.y + row, animate=False))

    def action_page(self, direction: int) -> None:
        """A page down (1) or up (-1), wherever the focus is."""
        box = self.query_one("#help", VerticalScroll)
        (box.scroll_page_down if direction > 0 else box.scroll_page_up)(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
