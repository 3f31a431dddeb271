"""F1 help: keys and how bringup keeps your place."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
Every screen
  F1  this help        ctrl+q  quit (your place is saved)
  F2  plan answers     esc     back / cancel
  tab next control     arrows  move, scroll   enter  open

Build overview
  enter  open the highlighted stage or step
  c      run every automatic check of the highlighted stage

Step screen
  c  check            a  run the action      l  the action's log
  z  plan & sizing (plan steps; F3 there: use the result as the plan)
  x  acknowledge a past event (an old Xid) with a reason
  d  confirm (done by hand, with an optional note)
  s  skip, with a reason
  n / p  next / previous step
  enter on a finding: show or hide its evidence

Action screen
  esc  back: the action keeps running, also if SSH drops
  k    cancel the run (SIGTERM to its process group)
  v    switch between the log and the results (validations)

Fleet view (bringup --nodes NODESET)
  enter  open the highlighted node's findings
  r      check every node again       esc  back

Your place is saved at every step: start bringup again and
choose Resume. A restarted bringup re-attaches to a running
action, or marks one that died without an exit status as
interrupted. A second bringup on the same build is read-only.
"""


def command_lines(width: int = 60) -> str:
    """The command line's subcommands with their one-line help, read from the CLI's own parser (one source)."""
    import argparse
    import textwrap

    from wizard.cli import build_parser

    out = ["Command line (bringup SUBCOMMAND --help for more):"]
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                out += textwrap.wrap(f"{choice.dest:<9} {choice.help or ''}", width, initial_indent="  ",
                                     subsequent_indent=" " * 12)
    return "\n".join(out)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("f1", "close", "Close", show=False),
                Binding("q", "close", "Close", show=False)]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static("bringup help", classes="dialog-title", markup=False)
            yield Static(HELP + "\n" + command_lines(), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
