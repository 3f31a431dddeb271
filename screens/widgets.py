"""Small shared widgets: the top bar, the footer that fits its keys to the terminal's width, and the form field
that keeps a burst of keys in order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Input, Static
from textual.widgets._footer import FooterKey

from wizard.i18n import _
from wizard.shellwrap import cells, shell_wrap

if TYPE_CHECKING:
    from screens.app import BringupApp
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement


class TopBar(Static):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    """One line: product, host, build, and OBSERVING / DRY RUN / SNAPSHOT markers (words, not colour)."""

    DEFAULT_CSS = """
    TopBar { height: 1; background: $primary; color: $text; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_text(), init=True)

    def on_resize(self) -> None:
        self.refresh_text()

    def refresh_text(self) -> None:
        app = self.app
        host = getattr(app, "identity", {}).get("hostname") or "?"
        parts = ["bringup", host]
        build = getattr(app, "build", None)
        if build is not None:
            parts.append(_("build {id}").format(id=build.info.build_id))
            if build.observing:
                parts.append(_("READ-ONLY") if getattr(app, "read_only_reason", "") else _("OBSERVING (read-only)"))
        if getattr(app, "dry_run", False):
            parts.append(_("DRY RUN"))
        if getattr(app, "snapshot", None):
            parts.append(_("SNAPSHOT"))
        # too wide for the terminal: the build's word, then the host, go before a mode marker would be cut
        width = (self.app.size.width if self.app else 80) - 2
        if cell_len(" | ".join(parts)) > width and build is not None:
            parts[2] = build.info.build_id
        if cell_len(" | ".join(parts)) > width:
            parts.pop(1)
        self.update(" | ".join(parts))


FOOTER_DROP_FIRST = ("plan", "skip_stage", "switch_list", "prev", "acknowledge", "show_log", "sizing", "quit")
"""Actions a footer too narrow for all its keys leaves out first, in this order (F1 Help lists every key)."""
FOOTER_KEEP = ("help", "back")
"""Actions a footer never leaves out: esc (back) and F1 (the help, which lists what was left out)."""


class KeyFooter(Footer):
    """Textual's footer fitted to the terminal's width, never a key cut at the right edge.

    When the keys do not fit it first draws them compact (one space between a key and its word), then leaves
    out whole keys: those of :data:`FOOTER_DROP_FIRST` in that order, then the rightmost, never those of
    :data:`FOOTER_KEEP`; a screen's own ``FOOTER_KEEP`` (the key the screen is about) goes last. F1's word then says how many keys it left out ("Help +2"); they all still work. Quit is the
    last key left out (walk 32 #5: the overview at 80 columns hid how to leave)."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False)
        self._drawn_width = 0
        self.left_out: list[str] = []
        """The keys (as shown: ``f2``, ``^q``) of the bindings left out at the last draw."""

    @staticmethod
    def _cells(keys: list[tuple[str, str]], compact: bool) -> int:
        # FooterKey: " key " + "word " (padding), or compact "key word" + a margin of 1; in terminal cells (a
        # Chinese word is two cells a character)
        return sum(cell_len(k) + cell_len(d) + (2 if compact else 3) for k, d in keys)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        width = self.size.width or self.app.size.width
        self._drawn_width = width
        seen: set[str] = set()
        items = []  # (binding, enabled, tooltip, key shown), one per action, in Textual's order
        for _key, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                items.append((binding, enabled, tooltip, self.app.get_key_display(binding)))

        def words(kept: list) -> list[tuple[str, str]]:
            n = len(items) - len(kept)
            # each binding's word in the operator's language (the English word is its message id); F1's says how
            # many keys were left out, one way on every screen: "Help +2" (walk 32 #5: "(+2 keys)" here, "+1" there)
            return [(k, f"{word_of(b)} +{n}" if n and b.action == "help" else word_of(b)) for b, _e, _t, k in kept]

        def word_of(b: Binding) -> str:
            # a screen may word a key for its state (a dry run's "y" shows, it does not run): footer_word(binding)
            said = getattr(self.screen, "footer_word", None)
            return (said(b) if callable(said) else None) or _(b.description)

        # a screen may keep the key it is about (the plan steps' z, the overview's tab: walk 35 #8): left out last
        keep = set(getattr(self.screen, "FOOTER_KEEP", ()))
        order = [a for a in FOOTER_DROP_FIRST if a in seen and a not in keep]
        order += [b.action for b, _e, _t, _k in reversed(items)
                  if b.action not in order and b.action not in FOOTER_KEEP and b.action not in keep]
        order += [a for a in FOOTER_DROP_FIRST if a in seen and a in keep]

        kept, todo = list(items), list(order)
        compact = self._cells(words(kept), False) > width
        while self._cells(words(kept), compact) > width and todo:
            action = todo.pop(0)
            kept = [it for it in kept if it[0].action != action]
        self.left_out = [k for b, _e, _t, k in items if all(b is not it[0] for it in kept)]
        self.compact = compact
        for (binding, enabled, tooltip, key), (_key2, word) in zip(kept, words(kept)):
            yield FooterKey(binding.key, key, word, binding.action, disabled=not enabled,
                            tooltip=tooltip).data_bind(compact=Footer.compact)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._drawn_width and self._bindings_ready:
            self.call_after_refresh(self.recompose)


def hanging(mark: str, text: str, indent: int = 0):
    """``mark`` and ``text`` as one item whose wrapped lines sit under ``text``, not under the mark (a grid of two
    columns), after ``indent`` spaces: a command's "$ ", a remedy's "->" (walk 37 #16: a wrapped command's next row
    at the margin read as a second command)."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1, 0, indent), expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(mark, text if isinstance(text, Text) else Text(text))
    return grid


class ShellRows:
    """A ``$ command`` line wrapped to the width it is given as a shell reads it back (:func:`shell_wrap`: each
    row but the last ends in a backslash; walk 44 #5: the dialog wrapped a capture's command at any character,
    without one, so the rows did not paste as the command)."""

    def __init__(self, line: str) -> None:
        self.line = line

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        from rich.text import Text

        for r in shell_wrap(self.line, options.max_width):
            yield Text(r, no_wrap=True, overflow="fold")

    def __rich_measure__(self, console: "Console", options: "ConsoleOptions") -> "Measurement":
        from rich.measure import Measurement

        return Measurement(min(cells(self.line), 20), cells(self.line))


def command_lines(lines: list[str]):
    """An action's operations as the confirmation shows them (already in the operator's language): each ``$ command``
    in rows that paste back as the command (:class:`ShellRows`), the lines under it (a diff, what it runs in turn) with
    their wrapped rows under their text."""
    from rich.console import Group
    from rich.text import Text

    import re

    from rich.table import Table

    def row(ln: str):
        if ln.lstrip(" ").startswith("$ "):
            return ShellRows(ln)
        # the lead (indent, "$ " of a command, a diff's +/-/space column) stays beside every wrapped row of the rest
        # (walk 39: a nested command's and a diff line's next rows sat at the dialog's edge)
        m = re.match(r"^(\s*(?:\$ |[-+] ?|(?=\S)))(.*)$", ln)
        lead, rest = (m.group(1), m.group(2)) if m else ("", ln)
        if not lead or not rest:
            return Text(ln)
        grid = Table.grid(padding=0, expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(Text(lead), Text(rest))
        return grid

    return Group(*(row(ln) for ln in lines))


def prose(text: str):
    """A step's why or instructions as the screen shows them: paragraphs as they are, and the items of a numbered
    or bulleted list ("1. ...", "- ...") with a hanging indent, so a wrapped item's next lines sit under its words,
    not under its number. Plain :class:`rich.text.Text` when there is no list."""
    import re

    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    lines = text.split("\n")
    item = re.compile(r"^(\d+[.)]|[-*\u2022])\s+(.*)$")
    if not any(item.match(ln) for ln in lines):
        return Text(text)
    parts: list = []
    grid = None
    for ln in lines:
        m = item.match(ln)
        if m is None:
            grid = None
            parts.append(Text(ln))
            continue
        if grid is None:
            grid = Table.grid(padding=(0, 1, 0, 0), expand=True)
            grid.add_column(no_wrap=True)
            grid.add_column(ratio=1)
            parts.append(grid)
        grid.add_row(m.group(1), Text(m.group(2)))
    return Group(*parts)


class FormInput(Input):
    """A text field that keeps a burst of keys in the order they were typed.

    Textual runs a widget's key *bindings* (backspace, delete, the arrows, home/end) and the app's tab / shift+tab
    only after the key has bubbled from the focused widget up to the app, one message queue per ancestor, while the
    keys behind it in the same burst (an SSH packet holding several, a console under load, a paste of keys) are
    forwarded straight to the field: "x", backspace, "1", "2" became "x12" and then lost its last character, and a
    tab typed between two values moved the focus after the second value had landed in the first field. This field
    runs its own bindings and tab / shift+tab in its own queue, in order, and a key that reaches it after the focus
    has moved on (it was forwarded before the tab that moved it ran) goes on to the field that has the focus now.
    Used for every text field bringup shows. Textual issue #6605 (github.com/Textualize/textual/issues/6605; the
    open pull request #6631 runs the widget's bindings inline the same way); drop this when Textual does."""

    async def _on_key(self, event: events.Key) -> None:
        focused = self.app.focused
        if focused is not None and focused is not self:
            # forwarded here before a tab of the same burst moved the focus: it was typed for the next field
            event.stop()
            event.prevent_default()
            focused._forward_event(events.Key(event.key, event.character))  # as the app forwards a key: once
            return
        if event.key in ("tab", "shift+tab"):
            event.stop()
            event.prevent_default()
            self.screen.focus_next() if event.key == "tab" else self.screen.focus_previous()
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            event.stop()
            event.prevent_default()
            await self.run_action(binding.action)
            return
        await super()._on_key(event)
