"""Start screen: resume the build (one-line summary) or start a new one; and the fatal-error screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Static

from screens.widgets import KeyFooter, TopBar
from wizard.i18n import _, ngettext, spaced
from wizard.model import StepStatus
from wizard.store import short_time

if TYPE_CHECKING:
    from screens.app import BringupApp


def progress_words(build) -> str:
    """How far the build is: "18 done (2 with warnings), 40 not applicable, of 88 steps; 1 failed; 29 to do" ("3 done of 88
    steps" when none is not applicable and none failed). A step a check skipped as not applicable here (no GPU in this VM) is counted apart, never
    as done; a validation run on the CPU only is said (the GPU is not validated)."""
    states = build.store.step_states()
    steps = build.steps()
    n_a = done = warned = skipped = cpu_only = failed = 0
    for s in steps:
        st = states.get(s.id)
        if st is None:
            continue
        if st.not_applicable:
            n_a += 1
        elif st.status.done:
            done += 1
            skipped += st.status is StepStatus.SKIPPED  # a person's skip: done, but nothing verified it
        warned += st.status is StepStatus.WARNED
        cpu_only += st.status is StepStatus.CPU_ONLY
        failed += st.status is StepStatus.FAILED
    # the warnings and a person's skips belong to the done steps: said right after them ("17 done (1 with warnings,
    # 5 skipped by a person), 40 not applicable"; walk 18 read "24 done" as 24 verified)
    inner = ([_("{count} with warnings").format(count=warned)] if warned else []) + (
        [_("{count} skipped by a person").format(count=skipped)] if skipped else [])
    done_words = (_("{done} done").format(done=done)
                  + (spaced(_("({items})").format(items=_(", ").join(inner))) if inner else ""))
    text = (_("{done_words}, {not_applicable} not applicable, of {total} steps").format(
                done_words=done_words, not_applicable=n_a, total=len(steps)) if n_a
            else _("{done_words} of {total} steps").format(done_words=done_words, total=len(steps)))
    if failed:  # a failure is what the operator most needs to know on coming back
        text += _("; ") + ngettext("{count} failed", "{count} failed", failed).format(count=failed)
    left = len(steps) - done - n_a - failed  # pending, running, interrupted, CPU-only: what is still to do
    if left and done + n_a + failed:
        text += _("; ") + _("{count} to do").format(count=left)
    if cpu_only:
        text += _("; ") + _("{count} validated on the CPU only: the GPU is not validated").format(count=cpu_only)
    return text


class StartScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    BINDINGS = [
        Binding("r", "resume", "Resume"),
        Binding("n", "new", "New build"),
        Binding("f", "fleet", "Fleet view"),
    ]

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Vertical(id="start-body"):
            yield Static(_("bringup: from a bare GPU server to a machine proven ready for LLM training"),
                         id="start-title", markup=False)
            yield Static("", id="start-host", markup=False)
            yield Static("", id="start-summary", markup=False)
            with Horizontal(id="start-buttons"):
                yield Button(_("Resume (r)"), id="resume", variant="primary", compact=True)
                yield Button(_("New build (n)"), id="new", compact=True)
                yield Button(_("Fleet view (f)"), id="fleet", compact=True)
                yield Button(_("Quit (ctrl+q)"), id="quit", compact=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_view(), init=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        build = self.app.build
        if action == "resume":
            return build is not None
        if action == "new":
            return build is None or not build.observing
        if action == "fleet":  # the window was opened with --nodes: its fleet view is one key away, never lost
            return self.app.fleet_request is not None  # False: not in the footer at all
        return True

    def refresh_view(self) -> None:
        app = self.app
        ident = app.identity
        host = ident.get("hostname") or _("this host")
        bits = [b for b in (ident.get("product"), ident.get("os"),
                            _("kernel {version}").format(version=ident.get("kernel")) if ident.get("kernel") else "")
                if b]
        # the language's brackets and list comma around the OS and kernel (walk 41: "vm (Debian ..., 内核 ...)")
        self.query_one("#start-host", Static).update(_("Host: {host}").format(host=host) + (spaced(
            _("({details})").format(details=_(", ").join(bits))) if bits else ""))
        build = app.build
        resume = self.query_one("#resume", Button)
        summary = self.query_one("#start-summary", Static)
        new = self.query_one("#new", Button)
        self.query_one("#fleet", Button).display = app.fleet_request is not None
        if build is None:
            resume.display = False
            text = _("No build yet on this machine. Start one with New build.")
            if app.build_error:
                text = _("The last build cannot be opened:\n{error}\n\n"
                         "Its file is kept as it is. Start a new build, or quit and move it aside.").format(
                    error=app.build_error)
            if app.other_builds_hint:
                text += "\n\n" + app.other_builds_hint
            summary.update(text)
            new.focus()
            self.refresh_bindings()
            return
        resume.display = True
        new.display = not build.observing
        rp = build.resume_point()
        lines = [app.build_missing, ""] if app.build_missing else []
        lines += [_("Resume build {id} on {host}:").format(id=build.info.build_id,
                                                          host=build.store.host().get('hostname', host)),
                 _("{progress}.").format(progress=progress_words(build)),
                 _("Stage: {stage}  >  Step: {step}").format(stage=_(rp.stage.title), step=_(rp.step.title))]
        for run in rp.running:
            k, n = build.run_ordinal(run)
            lines.append(_("Running: {title} (its step's run {run} of {runs}, pid {pid}, since {since})").format(
                title=_(run.title), run=k, runs=n, pid=run.pid, since=short_time(run.started_at)))
        stale = build.stale_steps()
        if stale and not build.observing:
            lines.append(_("Rebooted since the last checks: {count} boot-sensitive step(s) will be "
                           "re-checked when you resume.").format(count=len(stale)))
        for sid in rp.interrupted:
            lines.append(_("Interrupted: {title}: its action died without an exit status; "
                           "run it again.").format(title=_(build.step(sid).title)))
        if build.observing:
            why = self.app.read_only_why()
            lines.append(_("Read-only: {why}; this window changes nothing.").format(why=why)
                         if self.app.read_only_reason
                         else _("Observing: {why}; this window is read-only.").format(why=why))
            new.disabled = True
        summary.update("\n".join(lines))
        resume.focus()
        self.refresh_bindings()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "resume":
            self.action_resume()
        elif event.button.id == "new":
            self.action_new()
        elif event.button.id == "fleet":
            self.action_fleet()
        elif event.button.id == "quit":
            self.app.exit(0)

    def action_resume(self) -> None:
        from screens.build import BuildScreen
        from screens.step import StepScreen

        app = self.app
        if app.build is None:
            return
        rp = app.build.resume_point()
        app.push_screen(BuildScreen(select_stage=rp.stage.id))
        app.push_screen(StepScreen(rp.step.id))
        if app.build.stale_steps() and not app.build.observing:
            app.recheck_after_reboot()

    def action_fleet(self) -> None:
        """Back to the fleet view of ``--nodes`` (its last result kept; r there checks again)."""
        from screens.fleet import FleetScreen

        if self.app.fleet_request is not None:
            self.app.push_screen(FleetScreen())

    def action_new(self) -> None:
        from screens.dialogs import YesNo

        app = self.app
        if app.build is not None and app.build.observing:
            return
        if app.build is None:
            self._start_new()
            return
        self.app.push_screen(YesNo(_("Start a new build?"),
                                   _("Build {id} stays on disk, and bringup then resumes the new one; `bringup --build {id}` opens "
                                     "the earlier one again, `bringup status --build {id}` shows it.").format(
                                       id=app.build.info.build_id)),
                             lambda yes: self._start_new() if yes else None)

    def _start_new(self) -> None:
        from screens.build import BuildScreen
        from screens.step import StepScreen

        app = self.app
        b = app.new_build()
        first = b.steps()[0]
        app.push_screen(BuildScreen(select_stage=first.stage_id))
        app.push_screen(StepScreen(first.id))


class ErrorScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    """bringup cannot run (e.g. the state directory is not writable): say why, offer quit."""

    BINDINGS = [Binding("escape", "quit_app", "Quit")]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        yield TopBar()
        with Vertical(id="error-body"):
            yield Static(_("bringup cannot start"), id="error-title", markup=False)
            yield Static(self.message, id="error-message", markup=False)
            yield Button(_("Quit"), id="quit", variant="error", compact=True)
        yield KeyFooter()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.app.exit(3)

    def action_quit_app(self) -> None:
        self.app.exit(3)
