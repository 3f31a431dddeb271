"""Plan answers form (F2): the expectations later checks compare against.

Every field goes through :func:`wizard.plan.parse_value`, so a nonsense value is refused with
the reason next to it; an emptied field removes the answer. Each field shows its key (the name
``bringup plan KEY=VALUE`` uses) with its description under it, wrapped, so nothing is cut and
nothing vanishes while typing; Esc with edits asks before dropping them.
"""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static
from screens.widgets import FormInput, KeyFooter

from wizard.i18n import _, names_listed, ngettext, tr
from wizard.plan import PLAN_KEYS, parse_value, whole


def recheck_words(steps: list[str]) -> str:
    """The line a plan change adds to its message: the steps whose latest check read a changed answer
    (:meth:`wizard.engine.Build.set_plan`), to check again; "" when none (walk 30 #1)."""
    if not steps:
        return ""
    return "\n" + _("these steps were checked before this change; check them again: {steps}").format(steps=names_listed(steps))


def shown(v: object) -> str:
    """A plan answer as the form and the CLI write it: ``38.0`` -> ``38``, booleans as true/false, "" for none."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(whole(v)) if not isinstance(v, (dict, list)) else json.dumps(v)


class PlanDialog(ModalScreen[dict | None]):
    """Returns {key: value or None (remove)} for the changed answers, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save"),
                Binding("f1", "help", "Help", show=False)]

    def __init__(self, current: dict, readonly: bool = False) -> None:
        super().__init__()
        self.current = dict(current)
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog plan-dialog"):
            yield Static(_("Plan answers") + ("  " + _("(read-only here)") if self.readonly else ""),
                         classes="dialog-title", markup=False)
            yield Static(_("What this machine should have; checks compare against it. Empty = no answer."),
                         markup=False, classes="muted")
            with VerticalScroll(id="plan-fields"):
                for k in PLAN_KEYS.values():
                    with Vertical(classes="plan-field", id=f"field-{k.name}"):
                        with Horizontal(classes="plan-row"):
                            yield Label(k.name, classes="plan-key", markup=False)
                            # the Linux console has one background: brackets mark where to type (walk 23: an empty
                            # field showed nothing until focused); shown in basic mode only
                            yield Label("[", classes="plan-mark", markup=False)
                            yield FormInput(shown(self.current.get(k.name)), id=f"plan-{k.name}",
                                        disabled=self.readonly, classes="plan-input")
                            yield Label("]", classes="plan-mark", markup=False)
                        yield Static(_(k.help), classes="plan-help", markup=False)
                        yield Static("", id=f"err-{k.name}", classes="plan-error", markup=False)
            # a refused save says so here, under the fields: a toast lay over the field's own error (walk 23)
            yield Static("", id="plan-refused", classes="plan-refused", markup=False)
            with Horizontal(classes="dialog-buttons"):
                if not self.readonly:
                    yield Button(_("Save (ctrl+s)"), id="save", variant="primary", compact=True)
                yield Button(_("Cancel (esc)"), id="cancel", compact=True)
        yield KeyFooter()  # its own keys, not those of the screen under it (walk 23: the form covered the footer)

    def on_mount(self) -> None:
        self.query(Input).first().focus()

    def on_descendant_focus(self, event) -> None:
        """Keep the focused field's description in view with it (the scroll follows the field, not the line)."""
        field = next((a for a in event.widget.ancestors if a.has_class("plan-field")), None)
        if field is not None:
            self.query_one("#plan-fields", VerticalScroll).scroll_to_widget(field, animate=False)

    def unsaved(self) -> str:
        """What quitting now would drop (the app asks before Ctrl+Q does: walk 34 #14), "" when nothing."""
        edited = [] if self.readonly else self.edited()
        return _("plan answers edited and not saved: {keys}").format(keys=", ".join(edited)) if edited else ""

    def edited(self) -> list[str]:
        """The keys whose field differs from the stored answer."""
        return [k for k in PLAN_KEYS
                if self.query_one(f"#plan-{k}", Input).value.strip() != shown(self.current.get(k))]

    def collect(self) -> dict | None:
        changes: dict = {}
        ok = True
        for k in PLAN_KEYS:
            raw = self.query_one(f"#plan-{k}", Input).value.strip()
            err = self.query_one(f"#err-{k}", Static)
            err.update("")
            err.display = False
            if raw == shown(self.current.get(k)):
                continue
            if raw == "":
                changes[k] = None
                continue
            try:
                changes[k] = parse_value(k, raw)
            except ValueError as exc:
                err.update(f"! {tr(exc.args[0]) if exc.args else exc}")
                err.display = True
                ok = False
        return changes if ok else None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_save()

    def on_input_changed(self, event: Input.Changed) -> None:
        """A field edited after a refused save: its old error no longer describes what is typed (the next save
        judges the new value)."""
        key = (event.input.id or "").removeprefix("plan-")
        if key in PLAN_KEYS:
            err = self.query_one(f"#err-{key}", Static)
            if err.display:
                err.update("")
                err.display = False
            if not any(self.query_one(f"#err-{k}", Static).display for k in PLAN_KEYS):
                self.query_one("#plan-refused", Static).display = False  # nothing refused stands any more

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only: no save (the footer does not offer ^s, walk 29 #18; ctrl+s does nothing)."""
        return not (action == "save" and self.readonly)

    def action_save(self) -> None:
        if self.readonly:
            self.dismiss(None)
            return
        changes = self.collect()
        if changes is not None:
            self.dismiss(changes)
            return
        bad = [k for k in PLAN_KEYS if self.query_one(f"#err-{k}", Static).display]
        if bad:  # the error may sit below the fold: go to the first bad field and say which ones
            self.query_one(f"#plan-{bad[0]}", Input).focus()
            refused = self.query_one("#plan-refused", Static)
            refused.update("! " + ngettext("not saved: {keys} is not valid (its error is under the field)",
                                           "not saved: {keys} are not valid (each error is under its field)",
                                           len(bad)).format(keys=", ".join(bad)))
            refused.display = True
            field = self.query_one(f"#field-{bad[0]}")
            # once the error and this line are laid out: the whole field, its error's last line included, in view
            self.call_after_refresh(lambda: self.query_one("#plan-fields", VerticalScroll).scroll_to_widget(
                field, animate=False))

    def action_help(self) -> None:
        """F1 opens the help at this form's section (walk 20: it did nothing here)."""
        from screens.help import HelpScreen

        self.app.push_screen(HelpScreen(PlanDialog))

    def action_cancel(self) -> None:
        """Close; with edited fields, ask first (the typed values would be lost)."""
        edited = [] if self.readonly else self.edited()
        if not edited:
            self.dismiss(None)
            return
        from screens.dialogs import YesNo

        def answered(drop: bool | None) -> None:
            if drop:
                self.dismiss(None)

        self.app.push_screen(YesNo(_("Discard your edits?"), ngettext(
            "{n} answer was edited and not saved ({keys}). Discard it? (esc goes back to the form, where ctrl+s saves)",
            "{n} answers were edited and not saved ({keys}). Discard them? (esc goes back to the form, where ctrl+s "
            "saves)",
            len(edited)).format(n=len(edited), keys=", ".join(edited))), answered)
