"""Modal dialogs: confirm an action (its exact commands first), skip with a reason, messages."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from wizard.engine import PreparedAction


class ConfirmAction(ModalScreen[bool]):
    """Shows every command, what changes, what is backed up; returns True to run.

    The dialog fills the screen height: the command list scrolls (focused, so arrows and
    PgUp/PgDn work), the buttons and this dialog's own keys stay visible at 80x24."""

    BINDINGS = [Binding("escape", "no", "Cancel"), Binding("y", "yes", "Run it")]

    def __init__(self, prepared: PreparedAction) -> None:
        super().__init__()
        assert prepared.step.action is not None
        self.spec = prepared.step.action
        self.lines = prepared.commands  # the engine's exact commands, as they will run
        self.dry_run = prepared.dry_run

    def compose(self) -> ComposeResult:
        s = self.spec
        facts = [f"Changes the system: {'YES' if s.changes_system else 'no'}",
                 f"Needs root: {'yes' if s.needs_root else 'no'}"]
        if s.backs_up:
            facts.append("Backs up first: " + ", ".join(s.backs_up))
        lines = self.lines
        with Vertical(id="dialog", classes="dialog confirm-action"):
            yield Static(("DRY RUN: " if self.dry_run else "") + s.title, classes="dialog-title", markup=False)
            yield Static(s.description, markup=False, id="confirm-description")
            yield Static("  |  ".join(facts), markup=False)
            yield Static(f"It will run ({len(lines)} line{'s' if len(lines) != 1 else ''}; arrows scroll):",
                         classes="section", markup=False)
            with VerticalScroll(id="dialog-commands", can_focus=True):
                yield Static("\n".join(lines), markup=False, classes="commands")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Show what would run (y)" if self.dry_run else "Run it (y)", id="yes",
                             variant="warning" if s.changes_system else "primary", compact=True)
                yield Button("Cancel (esc)", id="no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#dialog-commands").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class SkipDialog(ModalScreen[str | None]):
    """Asks why the step is skipped; an empty reason is refused."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_title: str) -> None:
        super().__init__()
        self.step_title = step_title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(f"Skip: {self.step_title}", classes="dialog-title", markup=False)
            yield Static("Why? The reason is kept in the build record.", markup=False)
            yield Input(placeholder="e.g. PCIe-only server, no NVSwitch", id="reason")
            yield Static("", id="skip-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Skip (enter)", id="ok", variant="warning", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _submit(self) -> None:
        reason = self.query_one(Input).value.strip()
        if not reason:
            self.query_one("#skip-error", Static).update("A reason is required.")
            return
        self.dismiss(reason)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class MessageDialog(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("enter", "close", "Close", show=False)]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(self.title_text, classes="dialog-title", markup=False)
            with VerticalScroll(id="dialog-text"):
                yield Static(self.text, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", id="ok", compact=True)

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class YesNo(ModalScreen[bool]):
    BINDINGS = [Binding("escape", "no", "No"), Binding("y", "yes", "Yes")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(self.title_text, classes="dialog-title", markup=False)
            yield Static(self.text, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", id="yes", variant="warning", compact=True)
                yield Button("No (esc)", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class ConfirmStep(ModalScreen[str | None]):
    """Confirm a step done by hand; an optional note (serial numbers, who checked) is kept with it."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_title: str, user: str) -> None:
        super().__init__()
        self.step_title = step_title
        self.user = user

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(f"Confirm: {self.step_title}", classes="dialog-title", markup=False)
            yield Static(f"Recorded as done by {self.user}, now. Note (optional): what you did or saw, "
                         f"serial numbers, ...", markup=False)
            yield Input(placeholder="optional note", id="note")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Confirm (enter)", id="ok", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self.query_one(Input).value.strip() if event.button.id == "ok" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class AckDialog(ModalScreen[tuple[str, str] | None]):
    """Pick a past event among the step's findings and say why it no longer counts."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, findings: list) -> None:
        super().__init__()
        self.findings = [f for f in findings if f.key]

    def compose(self) -> ComposeResult:
        from textual.content import Content
        from textual.widgets import OptionList
        from textual.widgets.option_list import Option

        with Vertical(id="dialog", classes="dialog"):
            yield Static("Acknowledge a past event", classes="dialog-title", markup=False)
            yield Static("It will no longer count in this build's checks; the reason, you and the time "
                         "are kept. New events still count.", markup=False, classes="muted")
            yield OptionList(*[Option(Content(f.message if f.subject in f.message else f"{f.subject}: {f.message}"),
                                      id=f.key) for f in self.findings], id="ack-events")
            yield Input(placeholder="reason (required), e.g. old event from burn-in, GPU since replaced",
                        id="ack-reason")
            yield Static("", id="ack-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Acknowledge (enter)", id="ok", variant="warning", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_mount(self) -> None:
        from textual.widgets import OptionList

        lst = self.query_one(OptionList)
        lst.highlighted = 0 if self.findings else None
        lst.focus()

    def _submit(self) -> None:
        from textual.widgets import OptionList

        lst = self.query_one(OptionList)
        reason = self.query_one("#ack-reason", Input).value.strip()
        if lst.highlighted is None:
            return
        if not reason:
            self.query_one("#ack-error", Static).update("A reason is required.")
            self.query_one("#ack-reason", Input).focus()
            return
        self.dismiss((self.findings[lst.highlighted].key, reason))

    def on_option_list_option_selected(self, event) -> None:
        self.query_one("#ack-reason", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
