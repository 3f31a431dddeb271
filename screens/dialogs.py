"""Modal dialogs: confirm an action (what it does, then its exact commands), an action to do by hand (with a field
for the plan answer it needs), skip with a reason, messages."""

from __future__ import annotations

import sqlite3
from typing import Any, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from screens.widgets import FormInput, KeyFooter, command_lines
from screens.plan import recheck_words
from wizard.i18n import Msg, _, ngettext, spaced, tr
from wizard.engine import PreparedAction
from wizard.store import StoreError


def enter_word(screen: Any) -> str | None:
    """The word of the dialog's button that says "(enter)", without that hint ("Confirm (enter)" -> "Confirm", in the
    operator's language): the footer's word for Enter, so the two never disagree. None without such a button."""
    for b in screen.query(Button):
        label = str(b.label)
        if label.endswith("(enter)"):
            return label[: -len("(enter)")].rstrip()
    return None


class EnterSubmits:
    """Enter submits the dialog from its field, and the footer says so ("enter Confirm", walk 33 #13: the dialog's
    button said "(enter)" and its footer only "esc Cancel"): a priority binding, so the field's own Enter does not
    hide it. On a focused button Enter presses that button, as it would without the binding."""

    focused: Any
    _submit: Callable[[], None]
    """Each dialog's own submit (its field's answer checked, then dismissed)."""

    def action_submit(self) -> None:
        if isinstance(self.focused, Button):
            self.focused.press()
            return
        if isinstance(self.focused, Input):
            # after the keys already queued for the field: an Enter in the same burst as the text (a paste ending in
            # a newline, an input method's commit then Enter over SSH) ran this priority binding before the field had
            # the text, so a typed note was refused as empty (walk 43 #1)
            self.focused.call_later(self._submit)
            return
        self._submit()


    def footer_word(self, binding: Binding) -> str | None:
        """Enter's word is the word of the button it stands for (KeyFooter asks)."""
        return enter_word(self) if binding.action == "submit" else None

    def unsaved(self) -> str:
        """What quitting now would drop (the dialog's typed text)."""
        return typed_in(self)


class ConfirmAction(ModalScreen[bool]):
    """Shows what the action does (its whole description), whether it changes the system and needs root, what it
    backs up, and every command as it will run; returns True to run.

    The dialog fills the screen height: the title and the facts stay on top, the buttons and this dialog's keys at
    the bottom; between them one pane holds the description (wrapped, never cut) and the commands, and scrolls
    (focused, so arrows and PgUp/PgDn work) when they do not fit; the line under it says which lines are shown and
    that more follow, at 80x24 and 60x20 alike."""

    # n cancels too, as in every y/n question (walk 33 #4); esc stays the key shown
    BINDINGS = [Binding("escape", "no", "Cancel"), Binding("y", "yes", "Run it"), Binding("n", "no", "Cancel", show=False)]

    def __init__(self, prepared: PreparedAction) -> None:
        super().__init__()
        assert prepared.step.action is not None
        self.spec = prepared.step.action
        self.resolved = prepared.resolved
        self.lines = prepared.commands  # the engine's exact commands, as they will run
        self.dry_run = prepared.dry_run
        self.needless = prepared.needless  # the step's last check passed: this changes a system that needs nothing

    def compose(self) -> ComposeResult:
        s = self.spec
        changes = s.changes_system or self.resolved.changes_system  # a resolution may (start a stopped service)
        root = s.needs_root or self.resolved.needs_root
        facts = [_("Changes the system: YES") if changes else _("Changes the system: no"),
                 _("Needs root: yes") if root else _("Needs root: no")]
        if s.backs_up:
            facts.append(_("Backs up first: {paths}").format(paths=", ".join(s.backs_up)))
        lines = self.lines
        with Vertical(id="dialog", classes="dialog confirm-action"):
            yield Static((_("DRY RUN: ") if self.dry_run else "") + _(s.title), classes="dialog-title", markup=False)
            yield Static("  |  ".join(facts), markup=False, id="confirm-facts")
            with VerticalScroll(id="dialog-commands", can_focus=True):
                yield Static(_(s.description), markup=False, id="confirm-what")
                if self.needless:
                    yield Static("! " + _(self.needless), markup=False, id="confirm-passes", classes="dialog-warning")
                if self.resolved.note:  # what to know before yes (a validation on the CPU: why, and what it proves)
                    yield Static("! " + tr(self.resolved.note), markup=False, id="confirm-note",
                                 classes="dialog-warning")
                ops = len(self.resolved.ops)  # commands and file edits, each shown with what it changes under it
                yield Static(ngettext("Exactly what it does ({count} operation):",
                                      "Exactly what it does ({count} operations):", ops).format(count=ops),
                             classes="section", markup=False)
                yield Static(command_lines([tr(x) for x in lines]), markup=False, classes="commands")
            yield Static("", id="confirm-scroll", markup=False, classes="muted")
            with Horizontal(classes="dialog-buttons"):
                yield Button(_("Show what would run (y)") if self.dry_run else _("Run it (y)"), id="yes",
                             variant="warning" if changes else "primary", compact=True)
                yield Button(_("Cancel (esc)"), id="no", compact=True)
        yield KeyFooter()

    def footer_word(self, binding: Binding) -> str | None:
        """The footer's word for y matches the button: in a dry run it shows what would run, it runs nothing."""
        return _("Show what would run") if self.dry_run and binding.action == "yes" else None

    def on_mount(self) -> None:
        body = self.query_one("#dialog-commands", VerticalScroll)
        body.focus()
        self.watch(body, "scroll_y", lambda _: self.show_position(), init=False)
        self.watch(body, "virtual_size", lambda _: self.show_position(), init=False)
        self.call_after_refresh(self.show_position)

    def on_resize(self) -> None:
        self.call_after_refresh(self.show_position)

    def show_position(self) -> None:
        """Say under the pane which of its lines are shown, and that more follow (nothing is cut, it scrolls)."""
        body = self.query_one("#dialog-commands", VerticalScroll)
        total, shown, top = body.virtual_size.height, body.scrollable_content_region.height, round(body.scroll_y)
        if total <= 0 or shown <= 0:
            return
        if total <= shown:
            text = _("all shown (nothing to scroll)")
        else:
            last = min(total, top + shown)
            text = (_("lines {first}-{last} of {total} (more below): arrows, PgUp/PgDn") if last < total else
                    _("lines {first}-{last} of {total}: arrows, PgUp/PgDn")).format(first=top + 1, last=last, total=total)
        self.query_one("#confirm-scroll", Static).update(text)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


def typed_in(screen: Any) -> str:
    """The text typed into a dialog's fields and not saved ("" when none): what quitting would drop (the app asks
    before Ctrl+Q does: walk 34 #14)."""
    words = [w.value.strip() for w in screen.query(Input) if w.value.strip() and not w.disabled]
    return _("typed and not saved: {typed}").format(typed="; ".join(words)[:80]) if words else ""


def close_keeping_typed(screen: ModalScreen, typed: str, closed: object) -> None:
    """Close ``screen`` with ``closed``; when something was typed into it, ask first ("Discard what you typed?"):
    Esc never drops typed input without a word (esc there keeps editing, y discards)."""
    if not typed.strip():
        screen.dismiss(closed)
        return

    def answered(drop: bool | None) -> None:
        if drop:
            screen.dismiss(closed)

    screen.app.push_screen(YesNo(_("Discard what you typed?"),
                                 _("You typed '{typed}' and did not save it. Discard it? (esc keeps editing)").format(
                                     typed=typed.strip()[:60])), answered)


class SkipDialog(EnterSubmits, ModalScreen[str | None]):
    """Asks why the step is skipped; an empty reason is refused."""

    BINDINGS = [Binding("enter", "submit", "Skip", priority=True), Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_title: str, example: str = "") -> None:
        """``example``: a reason that fits the step, shown whole under the question (a placeholder would be cut at
        the field's edge and vanish at the first key)."""
        super().__init__()
        self.step_title = step_title
        self.example = example

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(_("Skip: {title}").format(title=_(self.step_title)), classes="dialog-title", markup=False)
            yield Static(_("Why? The reason is kept in the build record."), markup=False)
            if self.example:
                yield Static(self.example, classes="muted", markup=False)
            yield FormInput(placeholder=_("the reason (required)"), id="reason")
            yield Static("", id="skip-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(_("Skip (enter)"), id="ok", variant="warning", compact=True)
                yield Button(_("Cancel (esc)"), id="cancel", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _submit(self) -> None:
        reason = self.query_one(Input).value.strip()
        if not reason:
            self.query_one("#skip-error", Static).update(_("A reason is required."))
            return
        self.dismiss(reason)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        close_keeping_typed(self, self.query_one(Input).value, None)


class ScrollsText:
    """Up/Down and PageUp/PageDown scroll a dialog's text wherever the focus is (its button, its field): walk 42 #K,
    the last line of a "Cannot run this here" at 60x20 sat below the text's edge and the arrows did nothing until Tab
    moved the focus into it. Mixed into dialogs whose text is a :class:`VerticalScroll`."""

    # priority: a text field (Textual's Input is a ScrollView) has scroll bindings of its own for these keys, which
    # ran first and scrolled nothing (walk 47 #4: the hostfile format's last line unreachable with the field focused)
    TEXT_KEYS = [Binding("down", "scroll_text(1)", show=False, priority=True),
                 Binding("up", "scroll_text(-1)", show=False, priority=True),
                 Binding("pagedown", "scroll_text(10)", show=False, priority=True),
                 Binding("pageup", "scroll_text(-10)", show=False, priority=True)]

    def action_scroll_text(self, rows: int) -> None:
        for scroll in self.query(VerticalScroll):  # type: ignore[attr-defined]
            scroll.scroll_relative(y=rows, animate=False, immediate=True)  # a burst of keys adds up (walk 44)
            break


class MessageDialog(ScrollsText, ModalScreen[None]):
    BINDINGS = [Binding("enter", "ok", "OK", priority=True), Binding("escape", "close", "Close"),
                *ScrollsText.TEXT_KEYS]

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
                yield Button(_("OK (enter)"), id="ok", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_ok(self) -> None:
        self.dismiss(None)

    def footer_word(self, binding: Binding) -> str | None:
        return enter_word(self) if binding.action == "ok" else None

    def action_close(self) -> None:
        self.dismiss(None)


FILE_PLAN_KEYS = ("hostfile", "ssh_config")
"""Plan answers that name a file bringup reads when an action runs: set from a dialog, the file must be there, a
regular file and readable (a hostfile must also parse)."""


def plan_file_problem(key: str, path: str) -> str:
    """Why the file ``path`` cannot serve as the plan answer ``key`` ("" when it can): missing, not a regular file
    (a FIFO would block the reader), unreadable by this user, or a hostfile that does not parse
    (:func:`wizard.multinode.read_hostfile`, every problem with its line). Never raises."""
    import os
    import stat

    from wizard.i18n import os_error

    try:
        st = os.stat(path)
    except OSError as exc:
        return tr(Msg("{path}: {why}", path=path, why=os_error(exc)))
    if not stat.S_ISREG(st.st_mode):
        return _("{path} is not a regular file").format(path=path)
    if not os.access(path, os.R_OK):
        return _("{path} cannot be read by this user").format(path=path)
    if key == "hostfile":
        from wizard.multinode import HostfileError, read_hostfile

        try:
            read_hostfile(path)
        except HostfileError as exc:
            return tr(exc.message)
    return ""


class ManualDialog(ScrollsText, EnterSubmits, ModalScreen[bool]):
    """An action bringup cannot run here: why, and what to do by hand (``prepared.refusal``).

    When a plan answer is why (:attr:`wizard.actions.Resolved.plan_key`: no hostfile, or one that cannot be used),
    it also offers a field for that answer (``bringup plan KEY=VALUE`` is refused while this window holds the
    build). The value goes through :func:`wizard.plan.parse_value`, as in the F2 plan form (``~`` and a relative
    path are made absolute), and a file it names must be usable (:func:`plan_file_problem`); it is then stored in
    the build's plan as F2 stores it and the dialog returns True (the caller asks for the action again). A bad
    value is refused with the reason under the field, which keeps what was typed, and nothing is stored. Returns
    False when closed without saving."""

    # Enter: the "(enter)" button's word (save, or OK), else it closes like esc
    BINDINGS = [Binding("enter", "submit", "Close", priority=True), Binding("escape", "close", "Close"),
                *ScrollsText.TEXT_KEYS]
    DEFAULT_CSS = """
    ManualDialog #manual-error { color: $error; height: auto; display: none; }
    ManualDialog #manual-text { height: auto; max-height: 40vh; }
    """

    def __init__(self, prepared: PreparedAction, readonly: bool | None = None) -> None:
        super().__init__()
        self.text = prepared.refusal
        self.key = prepared.resolved.plan_key
        self.done = prepared.refusal_kind == "done"
        self._readonly = readonly

    @property
    def readonly(self) -> bool:
        """Nothing can be saved here: as given, else whether the app's build is held by another bringup."""
        if self._readonly is not None:
            return self._readonly
        build = getattr(self.app, "build", None)
        return build is None or bool(build.observing)

    def compose(self) -> ComposeResult:
        from wizard.plan import key_help

        with Vertical(id="dialog", classes="dialog"):
            yield Static(_("Nothing to run") if self.done else _("Cannot run this here") if not self.key else
                         _("Needs the plan answer {key}").format(key=self.key), classes="dialog-title", markup=False)
            with VerticalScroll(id="manual-text" if self.key else "dialog-text"):  # room for the field at 60x20
                yield Static(tr(self.text), markup=False)
                if self.done:
                    # the refusal says why there is nothing to do; this line only what follows (walk 37 #3: "already
                    # as this action would leave it" was false for os.swap_rollback, whose aim is swap back on)
                    yield Static(_("Nothing was run: press c on the step to check it."), markup=False, classes="muted")
                if key_help(self.key):  # what the answer is, whole (not a placeholder)
                    yield Static(key_help(self.key), markup=False, classes="muted")
            if self.key:
                build = getattr(self.app, "build", None)
                current = build.store.plan().get(self.key) if build is not None else None
                yield Static(self.key + spaced(_("(read-only here: {why})").format(why=self.app.read_only_why())
                                               if self.readonly and hasattr(self.app, "read_only_why") else
                                               _("(read-only here)") if self.readonly else
                                               _("(enter saves it, as F2 would, and tries again)")),
                             markup=False, classes="section", id="manual-help")
                # one row, as the plan form's fields (walk 42 #J: the bordered field's 3 rows pushed the dialog's
                # bottom edge off a 60x20 screen)
                yield FormInput("" if current is None else str(current), placeholder=self.key,
                                id="manual-value", disabled=self.readonly, classes="plan-input")
                yield Static("", id="manual-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                if self.key and not self.readonly:
                    yield Button(_("Save and continue (enter)"), id="save", variant="primary", compact=True)
                yield Button(_("Close (esc)") if self.key else _("OK (enter)"), id="ok", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        if self.key and not self.readonly:
            self.query_one("#manual-value", Input).focus()
        else:
            self.query_one("#ok", Button).focus()

    def save(self) -> None:
        import os

        from wizard.plan import parse_value

        build = getattr(self.app, "build", None)
        if not self.key or self.readonly or build is None or build.observing:
            return
        err = self.query_one("#manual-error", Static)
        err.display = True  # each refusal below says why there
        raw = self.query_one("#manual-value", Input).value.strip()
        self.refused = self.query_one("#manual-value", Input).value  # until saved: what was refused (esc drops it)
        if not raw:
            err.update((_("! type the {key} file's path") if self.key in FILE_PLAN_KEYS else _("! type the {key}")).format(key=self.key))
            return
        value = os.path.abspath(os.path.expanduser(raw)) if self.key in FILE_PLAN_KEYS else raw
        try:
            parsed = parse_value(self.key, value)
        except ValueError as exc:
            err.update(f"! {exc}")
            return
        why = plan_file_problem(self.key, str(parsed)) if self.key in FILE_PLAN_KEYS else ""
        if why:
            err.update(f"! {why}")
            return
        try:
            recheck = build.set_plan(**{self.key: parsed})
        except (StoreError, sqlite3.Error) as exc:  # a full disk (DiskFullError), a read-only store: said, value kept
            err.update(_("! not saved: {error}").format(error=exc))
            return
        self.app.notify(_("plan saved: {key}={value}").format(key=self.key, value=parsed) + recheck_words(recheck))
        bump = getattr(self.app, "bump", None)
        if callable(bump):
            bump()
        self.dismiss(True)

    def _submit(self) -> None:
        if self.key and not self.readonly:
            self.save()
        else:
            self.dismiss(False)


    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.save()
        else:
            self.action_close()

    def unsaved(self) -> str:
        """The answer typed and not saved ("" when the field holds the stored answer)."""
        typed = self._typed()
        return _("typed and not saved: {typed}").format(typed=typed.strip()[:80]) if typed.strip() else ""

    def _typed(self) -> str:
        typed = ""
        if self.key and not self.readonly:
            build = getattr(self.app, "build", None)
            current = build.store.plan().get(self.key) if build is not None else None
            value = self.query_one("#manual-value", Input).value
            typed = "" if value.strip() == ("" if current is None else str(current)).strip() else value
            if value == getattr(self, "refused", None):  # the dialog refused it (walk 27 #1: esc then asked
                typed = ""  # "discard?" again and again): nothing worth keeping, so esc closes
        return typed

    def action_close(self) -> None:
        close_keeping_typed(self, self._typed(), False)


class YesNo(ModalScreen[bool]):
    # n answers no as well (walk 32 #12: a y/n question that ignored n looked hung); esc stays the key shown
    BINDINGS = [Binding("escape", "no", "No"), Binding("y", "yes", "Yes"), Binding("n", "no", "No", show=False)]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(self.title_text, classes="dialog-title", markup=False)
            yield Static(self.text, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(_("Yes (y)"), id="yes", variant="warning", compact=True)
                yield Button(_("No (esc)"), id="no", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class ConfirmStep(EnterSubmits, ModalScreen[str | None]):
    """Confirm a step done by hand; an optional note (serial numbers, who checked) is kept with it."""

    BINDINGS = [Binding("enter", "submit", "Confirm", priority=True), Binding("escape", "cancel", "Cancel")]

    def __init__(self, step_title: str, user: str, warning: str = "", note_required: bool = False) -> None:
        super().__init__()
        self.step_title = step_title
        self.user = user
        self.warning = warning  # said before the note (the hand-over of a machine the report calls not ready)
        self.note_required = note_required  # a checked step the machine could not tell: the note is the evidence

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(_("Confirm: {title}").format(title=_(self.step_title)), classes="dialog-title", markup=False)
            if self.warning:
                yield Static("! " + self.warning, classes="dialog-warning", markup=False)
            yield Static((_("Recorded as done by {user}, now. Note (required): what you checked and how.")
                          if self.note_required else
                          _("Recorded as done by {user}, now. Note (optional): what you did or saw, "
                            "serial numbers, ...")).format(user=self.user), markup=False)
            yield FormInput(placeholder=_("the note (required)") if self.note_required else _("optional note"), id="note")
            yield Static("", id="confirm-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(_("Confirm (enter)"), id="ok", variant="primary", compact=True)
                yield Button(_("Cancel (esc)"), id="cancel", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        self.query_one("#confirm-error").display = False  # shown with the error only
        self.query_one(Input).focus()

    def _submit(self) -> None:
        """A required note left empty keeps the dialog open with the error under the field (walk 20: it closed and a
        toast said so)."""
        note = self.query_one(Input).value.strip()
        if self.note_required and not note:
            err = self.query_one("#confirm-error", Static)
            err.update(_("A note is required."))
            err.display = True
            return
        self.dismiss(note)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        # a typed note (serial numbers copied from labels) is never dropped without a word (walk 32 #3)
        close_keeping_typed(self, self.query_one(Input).value, None)


class AckDialog(EnterSubmits, ModalScreen[tuple[str, str] | None]):
    """Pick a past event among the step's findings and say why it no longer counts."""

    BINDINGS = [Binding("enter", "submit", "Acknowledge", priority=True), Binding("escape", "cancel", "Cancel")]

    def __init__(self, findings: list) -> None:
        super().__init__()
        self.findings = [f for f in findings if f.key]

    def compose(self) -> ComposeResult:
        from textual.content import Content
        from textual.widgets import OptionList
        from textual.widgets.option_list import Option

        with Vertical(id="dialog", classes="dialog"):
            yield Static(_("Acknowledge a past event"), classes="dialog-title", markup=False)
            yield Static(_("It will no longer count in this build's checks; the reason, you and the time "
                           "are kept. New events still count."), markup=False, classes="muted")
            yield OptionList(*[Option(Content(tr(f.message) if f.subject in f.message else f"{f.subject}: {tr(f.message)}"),
                                      id=f.key) for f in self.findings], id="ack-events")
            yield FormInput(placeholder=_("reason (required), e.g. old event from burn-in, GPU since replaced"),
                        id="ack-reason")
            yield Static("", id="ack-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(_("Acknowledge (enter)"), id="ok", variant="warning", compact=True)
                yield Button(_("Cancel (esc)"), id="cancel", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it

    def on_mount(self) -> None:
        from textual.widgets import OptionList

        lst = self.query_one(OptionList)
        lst.highlighted = 0 if self.findings else None
        if len(self.findings) == 1:  # one event, already chosen: the cursor in the reason (walk 28 #15: typed text lost)
            self.query_one("#ack-reason", Input).focus()
        else:
            lst.focus()

    def _submit(self) -> None:
        from textual.widgets import OptionList

        lst = self.query_one(OptionList)
        reason = self.query_one("#ack-reason", Input).value.strip()
        if lst.highlighted is None:
            return
        if not reason:
            self.query_one("#ack-error", Static).update(_("A reason is required."))
            self.query_one("#ack-reason", Input).focus()
            return
        self.dismiss((self.findings[lst.highlighted].key, reason))

    def on_option_list_option_selected(self, event) -> None:
        self.query_one("#ack-reason", Input).focus()

    def action_submit(self) -> None:
        from textual.widgets import OptionList

        if isinstance(self.focused, OptionList):  # Enter on the list picks the event, then the reason is asked
            self.query_one("#ack-reason", Input).focus()
            return
        super().action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        close_keeping_typed(self, self.query_one("#ack-reason", Input).value, None)
