"""Fleet view (``bringup --nodes NODESET``): a fleet check's progress, then its node x stage verdict matrix with the
odd node out marked, the fleet's consistency findings, and one node's findings on Enter.

The check runs in an App-level worker (:meth:`screens.app.BringupApp.run_fleet_check`); these screens only show what
:func:`wizard.fleet.check_fleet`, :func:`wizard.fleet.stage_matrix` and the fleet judge returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from screens.glyphs import VERDICT_GLYPH, VERDICT_LABEL, VERDICT_STYLE, verdict_text
from screens.widgets import KeyFooter, TopBar, hanging
from wizard.i18n import _, ngettext, tr
from wizard.model import Finding, Verdict

if TYPE_CHECKING:
    from screens.app import BringupApp

PROGRESS_REFRESH_S = 0.5
"""Seconds between redraws of the progress line while the check runs (the slowest node's seconds keep counting)."""
ODD_MARK = "*"
"""Appended to a stage cell whose verdict differs from most nodes' (so the mark is never colour alone)."""


@dataclass
class FleetRequest:
    """What the fleet view checks: ``nodes`` (:class:`wizard.fleet.FleetNode`), ``steps`` (``None``: every step checked
    from probes, as ``bringup check --nodes`` does) and ``options`` (keyword options of
    :func:`wizard.fleet.check_fleet`: fanout, node_timeout_s, ssh_config)."""

    nodes: list[Any]
    steps: list[Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)


def _cell(verdict: Verdict | None, odd: bool, basic: bool) -> Text:
    if verdict is None:
        return Text("-")
    g = VERDICT_GLYPH[verdict][1 if basic else 0]
    t = Text(f"{g} {_(VERDICT_LABEL[verdict])}", style=VERDICT_STYLE[verdict])
    if odd:
        t.append(ODD_MARK)
        t.stylize("reverse")
    return t


def findings_table(findings: list[Finding], basic: bool, brief: bool = False) -> Table:
    """Findings as the fleet screens list them, one row each: verdict glyph and word, then the id, the message and,
    under a non-pass, the remedy (wrapped under the text, not under the verdict). ``brief``: passes and skips on one
    line each, id and message."""
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(width=9, no_wrap=True)
    grid.add_column(ratio=1)
    for f in findings:
        quiet = f.verdict in (Verdict.PASS, Verdict.SKIP)
        if brief and quiet:
            grid.add_row(verdict_text(f.verdict, basic), Text.assemble((f.id, "bold"), f" {tr(f.message)}"))
            continue
        t = Text(f.id, style="bold")
        t.append(f"\n{tr(f.message)}")
        cell: Any = t
        if f.remedy and not quiet:  # the remedy's wrapped rows under its text, not under "->" (walk 42 #23)
            cell = Group(t, hanging("->", tr(f.remedy)))
        grid.add_row(verdict_text(f.verdict, basic), cell)
    return grid


class FleetScreen(Screen[None]):
    """Progress while the fleet check runs, then the node x stage matrix and the fleet's findings."""

    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    BINDINGS = [
        Binding("r", "recheck", "Check again"),
        Binding("escape", "back", "Back"),
    ]
    DEFAULT_CSS = """
    FleetScreen #fleet-head { height: auto; padding: 0 1; }
    FleetScreen #fleet-table { height: auto; max-height: 50%; }
    FleetScreen #fleet-findings { height: 1fr; padding: 0 1; }
    FleetScreen .fleet-finding { margin-bottom: 0; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._shown: object = None
        self._any_odd = False

    def compose(self) -> ComposeResult:
        yield TopBar()
        yield Static("", id="fleet-head", markup=False)
        yield DataTable(id="fleet-table", cursor_type="row", zebra_stripes=False)
        with VerticalScroll(id="fleet-findings"):
            yield Static("", id="fleet-findings-text", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=True)
        self.set_interval(PROGRESS_REFRESH_S, self.refresh_progress)
        self.query_one("#fleet-table", DataTable).focus()

    def refresh_progress(self) -> None:
        if self.app.fleet_running:
            self.refresh_view()

    def refresh_view(self) -> None:
        app = self.app
        head = self.query_one("#fleet-head", Static)
        req = app.fleet_request
        count = len(req.nodes) if req is not None else 0
        title = ngettext("Fleet check of {nodes} ({count} node)", "Fleet check of {nodes} ({count} nodes)",
                         count).format(nodes=app.fleet_nodeset, count=count)
        fc = app.fleet_check
        if app.fleet_running or fc is None:
            line = app.fleet_progress.line() if app.fleet_progress is not None else _("starting")
            if app.fleet_error:
                line = _("the fleet check could not run: {error}").format(error=app.fleet_error)
            head.update(f"{title}\n{line}")
            if fc is None:
                self.query_one("#fleet-findings-text", Static).update(
                    "" if app.fleet_error else _("The node x stage table appears when every node is done."))
                return
        if fc is not None and self._shown is not fc:
            self._shown = fc
            self.show_result(fc)
        if not app.fleet_running and fc is not None:
            legend = _("{mark} differs from most nodes").format(mark=ODD_MARK) + "   " if self._any_odd else ""
            head.update(Text.assemble(_("{title}: {seconds} s, overall").format(title=title, seconds=f"{fc.wall_s:.1f}")
                                      + " ", verdict_text(fc.verdict, app.basic),
                                      "\n" + legend + _("enter: a node's findings")))

    def show_result(self, fc: Any) -> None:
        from wizard.fleet import stage_matrix

        basic = self.app.basic
        ids, rows = stage_matrix(fc, self.app.stages)
        self._any_odd = any(r["odd"] for r in rows)
        table = self.query_one("#fleet-table", DataTable)
        keep = table.cursor_row
        table.clear(columns=True)
        table.add_column(_("name"), key="node")  # "node" is a stage's id too (walk 34 #18)
        table.add_column(_("verdict"), key="verdict")
        for sid in ids:  # keyed apart from the node column: the "Validate the node" stage's id is "node" too
            table.add_column(sid, key=f"stage:{sid}")
        if not ids:  # no node was judged: the column says why
            table.add_column(_("not judged"), key="why")
        table.add_column(_("time"), key="time")
        for r in rows:
            cells: list[Any] = [Text(r["node"]), verdict_text(r["verdict"], basic)]
            if r["reason"]:  # not judged: why, in the first stage column (its findings say ssh's words)
                cells += [Text(_(r["reason"]), style="bold")] + [Text("")] * max(0, len(ids) - 1)
            else:
                cells += [_cell(r["cells"][sid], sid in r["odd"], basic) for sid in ids] or [Text("")]
            cells.append(Text(f"{r['seconds']:.1f} s"))
            table.add_row(*cells, key=r["node"])
        if rows:
            table.move_cursor(row=min(keep, len(rows) - 1))
        judged = sum(1 for r in rows if not r["reason"])
        loud = [f for f in fc.findings if f.verdict not in (Verdict.PASS, Verdict.SKIP)]
        quiet = [f for f in fc.findings if f.verdict in (Verdict.PASS, Verdict.SKIP)]
        self.query_one("#fleet-findings-text", Static).update(Group(
            Text(_("Across the nodes ({count} compared)").format(count=judged), style="bold"),
            findings_table(loud, basic),
            findings_table(quiet, basic, brief=True)))

    @on(DataTable.RowSelected, "#fleet-table")
    def node_selected(self, event: DataTable.RowSelected) -> None:
        fc = self.app.fleet_check
        name = event.row_key.value
        if fc is not None and name is not None and name in fc.nodes:
            self.app.push_screen(NodeFindingsScreen(name))

    def action_recheck(self) -> None:
        if not self.app.fleet_running:
            self._shown = None
            self.app.run_fleet_check()

    def action_back(self) -> None:
        self.app.pop_screen()


class NodeFindingsScreen(Screen[None]):
    """One node of the fleet check: its verdict, why it could not be judged (if so), and every finding it gave."""

    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    BINDINGS = [Binding("escape", "back", "Back")]
    DEFAULT_CSS = """
    NodeFindingsScreen #node-head { height: auto; padding: 0 1; }
    NodeFindingsScreen #node-findings { height: 1fr; padding: 0 1; }
    """

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def compose(self) -> ComposeResult:
        fc = self.app.fleet_check
        c = fc.nodes[self.node] if fc is not None else None
        yield TopBar()
        head = Text(f"{self.node}: ")
        body: Any = Text("")
        if c is not None:
            head.append_text(verdict_text(c.verdict, self.app.basic))
            n = len(c.findings)
            head.append("  " + ngettext("({count} finding, {seconds} s; ssh target {target})",
                                        "({count} findings, {seconds} s; ssh target {target})", n).format(
                count=n, seconds=f"{c.seconds:.1f}", target=c.target))
            if c.reason:
                head.append("\n" + _("{kind}: {message}").format(kind=_(c.reason), message=c.error))
            loud = [f for f in c.findings if f.verdict not in (Verdict.PASS, Verdict.SKIP)]
            quiet = [f for f in c.findings if f.verdict in (Verdict.PASS, Verdict.SKIP)]
            parts: list[Any] = [findings_table(loud, self.app.basic)]
            if quiet:
                parts += [Text(_("passed or not applicable ({count})").format(count=len(quiet)), style="bold"),
                          findings_table(quiet, self.app.basic, brief=True)]
            body = Group(*parts)
        yield Static(head, id="node-head")
        with VerticalScroll(id="node-findings"):
            yield Static(body, id="node-findings-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#node-findings", VerticalScroll).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
