"""The bringup Textual app and its launcher.

The App owns the build (store, lock), the host, and every worker: checks, action starts and one
log watcher per running action (workers die with the node that started them, so they never live
on a screen; tui-practices B.3 #7). Screens read the build and react to ``revision``, which the
App bumps whenever the build changes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any, Callable

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.reactive import reactive
from textual.scrollbar import ScrollBar

from screens import linebreak
from screens.glyphs import ConsoleScrollBarRender
from screens.messages import ActionEnded, ChecksFinished, LogLinesRead
from screens.plan import recheck_words
from wizard.engine import Build, host_identity, host_words, local_host, same_host
from wizard.hosts import Host
from wizard.i18n import _, names_listed, tr
from wizard.store import (
    ActionState, StateDirError, StoreError, default_state_dir, ensure_state_dir, list_builds, tighten_state_dir,
    tightened_note, utcnow,
)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
LOG_BUFFER_LINES = 5000
"""Lines of each action's log kept in memory for the UI (the log file keeps everything)."""
HANGUP_EXIT_S = 2.0
"""Seconds the UI gets to end cleanly after SIGHUP (the SSH or tmux session dropped) or SIGTERM; past them the
process ends anyway (``os._exit(128 + signal)``). Nothing is lost by that: every state change is already committed
(SQLite), and actions run detached under their supervisor."""


linebreak.install()  # lines may break between Chinese characters (screens/linebreak.py)


class TerminalFile:
    """The terminal the UI draws on, as Textual's writer thread sees it: once writing fails (EIO after a hangup,
    EPIPE), later output is dropped instead of raising.

    Textual's writer thread dies on the first ``OSError``; later writes queue behind it and, once 30 are queued,
    the UI's thread waits forever in ``Queue.put`` (shutdown included: ``LinuxDriver.close``). Writing never
    raises ``OSError`` here; ``gone`` says the terminal went away."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._file.write(text)
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except OSError:
                self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return not self.gone and self._file.isatty()


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver drawing through a ``TerminalFile``, so a dropped session cannot block the UI."""

    def __init__(self, app: App, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        if self._file is not None:  # sys.__stderr__: None without one
            self._file = TerminalFile(self._file)  # type: ignore[assignment]


class HangupGuard:
    """On SIGHUP or SIGTERM: asks the app to exit (``on_signal`` in its event loop) and ends the process
    ``bound_s`` seconds later if it has not ended by then, whatever blocks it (the UI's shutdown, the loop's
    executor, interpreter exit).

    The handler only sets an event; a watch thread does the rest, so it works while the event loop is blocked.
    ``install`` must be called from the main thread (it returns False elsewhere and changes nothing);
    ``restore`` puts the previous handlers back, and ends the watch unless a signal already came."""

    SIGNALS = (signal.SIGHUP, signal.SIGTERM)

    def __init__(self, on_signal: Callable[[], object], loop: asyncio.AbstractEventLoop,
                 bound_s: float = HANGUP_EXIT_S) -> None:
        self.on_signal = on_signal
        self.loop = loop
        self.bound_s = bound_s
        self.signum = 0
        self._fired = threading.Event()
        self._stop = threading.Event()
        self._previous: dict[int, Any] = {}
        self._thread = threading.Thread(target=self._watch, name="bringup-hangup", daemon=True)

    def install(self) -> bool:
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread
            self.restore()
            return False
        self._thread.start()
        return True

    def _handler(self, signum: int, frame: object) -> None:
        self.signum = self.signum or signum
        self._fired.set()

    def _watch(self) -> None:
        self._fired.wait()
        if self._stop.is_set():
            return
        try:
            self.loop.call_soon_threadsafe(self.on_signal)
        except RuntimeError:  # the loop is closed: the app is already ending
            pass
        if not self._stop.wait(self.bound_s):
            os._exit(128 + self.signum)

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()
        if not self._fired.is_set():
            self._stop.set()
            self._fired.set()


class LogBuffer:
    """The last ``maxlen`` lines of a run's log with the index of the first one kept."""

    def __init__(self, maxlen: int = LOG_BUFFER_LINES) -> None:
        self.lines: deque[str] = deque(maxlen=maxlen)
        self.total = 0

    def extend(self, lines: list[str]) -> int:
        start = self.total
        self.lines.extend(lines)
        self.total += len(lines)
        return start

    @property
    def first_index(self) -> int:
        return self.total - len(self.lines)


def other_builds_hint(state_dir: Path, given: bool) -> str:
    """Under sudo with the default state dir: point at builds the same person made without sudo
    (they live in that user's state dir, not in /var/lib/bringup)."""
    from wizard.store import sudo_user_state_dir

    if given or list_builds(state_dir):
        return ""
    other = sudo_user_state_dir()
    if other is not None and list_builds(other):
        return _("A build made without sudo is in {dir}. To continue it, quit and run: "
                 "bringup --state {dir}").format(dir=other)
    return ""


def root_hint(title: str, state_dir: Path) -> str:
    """How to re-run as root without losing this build (root's default state dir differs)."""
    exe = sys.argv[0] if sys.argv and sys.argv[0] else "bringup"
    return _("'{title}' changes the system and needs root. Quit (ctrl+q) and start bringup again as "
             "root, keeping this build:\n\n  sudo {exe} --state {state_dir}\n\nYou will resume here.").format(
        title=title, exe=exe, state_dir=state_dir)


def detect_basic() -> bool:
    """Basic mode (ANSI theme, ASCII glyphs) on the Linux console, serial lines and NO_COLOR."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM", "") in ("linux", "vt100", "vt220", "dumb"):
        return True
    try:
        name = os.ttyname(sys.stdout.fileno())
    except OSError:
        return False
    return any(x in name for x in ("ttyS", "ttyUSB", "ttyAMA"))


class BringupApp(App[int]):
    """bringup's TUI.

    Args:
        state_dir: the state directory (``None`` = the default for this user).
        host: where probes run (default: this machine).
        snapshot: path of the bundle ``host`` replays, shown in the top bar.
        dry_run: actions print what they would run and run nothing.
        basic: ANSI theme + ASCII glyphs.
        clock: ISO-8601 timestamp source (tests freeze it).
        fleet: nodes to check over ssh (:class:`screens.fleet.FleetRequest`): the app opens on the fleet view.
        notice: one line shown as a notification on start (the language falling back to English on the Linux
            console: :data:`wizard.i18n.CONSOLE_NOTICE`); ``""`` for none.
    """

    CSS_PATH = str(ASSETS / "bringup.tcss")
    TITLE = "bringup"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("f1", "help", "Help"),
        Binding("f2", "plan", "Plan"),
    ]

    revision: reactive[int] = reactive(0)

    def __init__(self, state_dir: Path | str | None = None, host: Host | None = None, snapshot: str | None = None,
                 dry_run: bool = False, basic: bool = False, clock: Callable[[], str] = utcnow,
                 observe_poll_s: float = 2.0, fleet: Any = None, notice: str = "", build_id: str | None = None) -> None:
        super().__init__(ansi_color=basic)
        self.build_id = build_id
        """``bringup --build ID``: open that build, not the newest (walk 29 #16: an earlier build could not be reached)."""
        self.hangup_guard: HangupGuard | None = None
        self.read_only_reason = ""
        """Why the build was opened read-only although no other bringup holds it (the state directory cannot be
        written); see :meth:`read_only_why`."""
        self.basic = basic
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.state_dir_given = bool(state_dir)
        self.bundle_plan: dict[str, Any] = {}
        self.other_builds_hint = ""
        self.host: Host = host if host is not None else local_host()
        self.snapshot = snapshot
        self.dry_run = dry_run
        self.clock = clock
        self.identity: dict[str, Any] = {}
        self.build: Build | None = None
        self.going_on: list[str] = []  # said after the screen is gone: runs that go on without the UI (quit while they ran)
        self.build_error: str = ""
        self.build_missing = ""  # a --build id that is not here (the newest is shown instead)
        self.fatal: str = ""
        self.checking: set[str] = set()
        self.logs: dict[int, LogBuffer] = {}
        self.watched: set[int] = set()
        self.actions_starting: set[str] = set()
        """Steps whose action is being asked for or started (start_action): a second `a` meanwhile does nothing."""
        self.observe_poll_s = observe_poll_s
        self.fleet_request = fleet
        self.start_notice = notice
        self.fleet_check: Any = None
        """The last :class:`wizard.fleet.FleetCheck` of ``fleet_request`` (``None`` until one finished)."""
        self.fleet_progress: Any = None
        self.fleet_running = False
        self.fleet_error = ""
        self.current_step: str | None = None
        """The step the step screen shows (or showed last): the overview highlights it when it comes back."""
        if basic:
            self.add_class("-basic")
        # every scrollbar without the eighth-block glyphs the Linux console's font lacks, in basic mode
        ScrollBar.renderer = ConsoleScrollBarRender

    # ------------------------------------------------------------------ start-up

    def _handle_exception(self, error: Exception) -> None:
        """Textual's handler for an exception in the UI (it ends the app with status 1), except for a widget that
        vanished while the session dropped: after SIGHUP/SIGTERM the app exits and its screens are torn down while
        they may still be mounting (a dialog's on_mount querying its own widgets), which is the ending under way, not a
        fault; every state change is already committed."""
        from textual.css.query import NoMatches

        if isinstance(error, NoMatches) and self.hangup_guard is not None and self.hangup_guard.signum:
            return
        super()._handle_exception(error)

    BASIC_KEYS = {"⏎": "enter", "↑": "up", "↓": "down", "←": "left", "→": "right", "⌫": "backspace"}
    """Textual's key glyphs spelled in ASCII in basic mode: the Linux console's font lacks them (walk 37 #14: the
    dialogs' footers showed "⏎ Confirm" on TERM=linux)."""

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        return self.BASIC_KEYS.get(shown, shown) if self.basic else shown

    async def on_mount(self) -> None:
        if self.basic:
            self.theme = "ansi-dark"
        # SIGHUP (the SSH session dropped) and SIGTERM: leave cleanly, and within HANGUP_EXIT_S whatever
        # blocks. Every state change is already committed, and running actions are detached, so nothing is lost.
        guard = HangupGuard(self.exit, asyncio.get_running_loop())
        if guard.install():
            self.hangup_guard = guard
        if self.start_notice:
            self.notify(self.start_notice, severity="warning", timeout=10)
        from screens.start import ErrorScreen, StartScreen

        readonly = False
        try:
            ensure_state_dir(self.state_dir)
            tightened = tightened_note(self.state_dir, tighten_state_dir(self.state_dir))
            if tightened:
                self.notify(tightened, severity="warning", timeout=10)
        except StateDirError as exc:
            if not list_builds(self.state_dir):
                self.fatal = str(exc)
                await self.push_screen(ErrorScreen(self.fatal))
                return
            readonly = True  # e.g. root's build viewed by an operator, a read-only mount: show it, change nothing
            self.read_only_reason = str(exc)
            self.notify(_("{reason}: this window is read-only").format(reason=exc), severity="warning", timeout=8)
        self.identity = await host_identity(self.host)
        recorded = getattr(self.host, "identity", None)  # a bundle's manifest knows who it was
        if isinstance(recorded, dict):
            for k, v in recorded.items():
                if v and not self.identity.get(k):
                    self.identity[k] = v
        self.other_builds_hint = other_builds_hint(self.state_dir, self.state_dir_given)
        builds = list_builds(self.state_dir)
        if self.build_id is not None and builds and not any(b.build_id == self.build_id for b in builds):
            # walk 42 #6: a mistyped --build left only New build and Quit; the newest build is offered instead, saying
            # so, and which builds there are
            self.build_missing = _("There is no build {build} here; the newest is shown (builds here: {ids}).").format(
                build=self.build_id, ids=names_listed(b.build_id for b in builds[-5:]))
            self.build_id = None
        if builds:
            try:
                self.build = Build.open(self.state_dir, self.stages, self.identity, build_id=self.build_id,
                                        dry_run=self.dry_run, clock=self.clock, readonly=readonly)
            except StoreError as exc:
                self.build_error = str(exc)
        if self.build is not None and self.snapshot and same_host(self.build.store.host(), self.identity) is False:
            # a bundle of another machine: its findings never go into this build (start one for it with n)
            self.notify(_("the newest build is {build_host}'s; this bundle is from {bundle_host}: start a build "
                          "for it to judge it").format(build_host=host_words(self.build.store.host()),
                                                       bundle_host=host_words(self.identity)),
                        severity="warning", timeout=12)
            self.build.close()
            self.build = None
        if self.build is not None:
            self.attach_running()
        if self.build is not None and self.build.observing:
            self._observe_timer = self.set_interval(self.observe_poll_s, self.observe_tick)
        await self.push_screen(StartScreen())
        if self.fleet_request is not None:
            from screens.fleet import FleetScreen

            self.run_fleet_check()
            await self.push_screen(FleetScreen())

    @property
    def fleet_nodeset(self) -> str:
        """The fleet view's nodes, folded (``gpu[001-016]``); "" without any."""
        from wizard.rules.fleet import fold

        return fold([n.name for n in self.fleet_request.nodes]) if self.fleet_request is not None else ""

    @property
    def stages(self):
        import steps

        return steps.STAGES

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        """Textual's push_screen; a dialog (a modal screen) first clears the notifications shown, so none lies over
        its text (walk 19: a stage toast covered an action confirmation's "Needs root" line)."""
        from textual.screen import ModalScreen

        if isinstance(screen, ModalScreen):
            self.clear_notifications()
        return super().push_screen(screen, *args, **kwargs)

    def bump(self) -> None:
        self.revision += 1

    def observe_tick(self) -> None:
        """An observing window's poll: show what the holder changed, and once the holder has let the build go (that
        bringup quit), take it over and say so (walk 32 #2: the window kept naming an exited pid)."""
        self.bump()
        if self.build is None or not self.build.observing or self.read_only_reason:
            return
        holder = self.build.lock.holder or _("another process")
        if self.build.take_over():
            timer = getattr(self, "_observe_timer", None)
            if timer is not None:
                timer.stop()
            self.attach_running()
            self.bump()
            self.notify(_("the other bringup ({holder}) has let this build go: this window holds it now and can "
                          "change it").format(holder=holder), timeout=10)

    def read_only_why(self) -> str:
        """Why this window changes nothing: the state directory cannot be written, or another bringup holds the
        build (its lock holder named); "" when it may write."""
        if self.build is None or not self.build.observing:
            return ""
        if self.read_only_reason:
            return self.read_only_reason
        return _("another bringup ({holder}) holds this build").format(
            holder=self.build.lock.holder or _("another process"))

    def new_build(self) -> Build:
        if self.build is not None:
            self.build.close()
        self.build = Build.open(self.state_dir, self.stages, self.identity, create=True, dry_run=self.dry_run,
                                clock=self.clock)
        if self.bundle_plan:  # judging a bundle: start from the expectations it was captured with
            from wizard.plan import valid_plan

            plan = valid_plan(self.bundle_plan)
            if plan:
                self.build.store.set_plan(**plan)
        self.build_error = ""
        self.bump()
        self.refresh_bindings()  # F2 (plan) applies from now on
        return self.build

    def attach_running(self) -> None:
        """Settle recorded runs (finished/interrupted) and start a watcher for each live one."""
        assert self.build is not None
        for run in (self.build.reconcile() if not self.build.observing
                    else self.build.store.action_runs(state=ActionState.RUNNING)):
            self.watch_run(run.id)
        self.bump()

    # ------------------------------------------------------------------ workers

    def checked_words(self, step_ids: list[str]) -> str:
        """"checked 10 steps: 4 passed, 1 warned, 2 failed, 3 other": the steps' statuses after their checks, counted
        by status in the operator's language (the statuses the overview shows)."""
        assert self.build is not None
        from screens.glyphs import status_word
        from wizard.model import StepStatus

        from wizard.engine import WAITING_FOR_A_GPU, WAITING_FOR_GPUS

        counts: dict[str, int] = {}
        waiting = 0
        states = self.build.store.step_states()
        for sid in step_ids:
            st = states.get(sid)
            word = status_word(st.status, st.not_applicable) if st is not None else status_word(StepStatus.PENDING)
            if (st is not None and st.verdict is not None and st.verdict.value in ("warn", "unknown")
                    and st.status is not StepStatus.WARNED):  # as the overview's list shows it (walk 28 #16: three
                word = _(st.verdict.value)  # "? unknown" there, counted here as "pending")
            counts[word] = counts.get(word, 0) + 1
            waiting += bool(st is not None and st.status is StepStatus.PENDING and (st.reason or "").startswith(
                (WAITING_FOR_GPUS, WAITING_FOR_A_GPU)))
        said = _("checked {n} steps: {counts}").format(
            n=len(step_ids), counts=_(", ").join(f"{n} {w}" for w, n in counts.items()))
        if waiting:  # walk 24: "12 pending" with nothing on the overview saying why
            said += _("; {n} wait for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus)").format(n=waiting)
        return said

    @work(group="checks", exit_on_error=False, description="run step checks")
    async def run_checks(self, step_ids: list[str]) -> None:
        if self.build is None:
            return
        self.checking.update(step_ids)
        self.bump()
        try:
            steps = [self.build.step(s) for s in step_ids]
            await self.build.check_steps(self.host, steps, snapshot=self.snapshot or "")
            if len(step_ids) > 1:  # a stage's checks (c on the overview): say what they found, also when nothing
                # changed on the screen (walk 19: the key looked dead)
                self.notify(self.checked_words(step_ids))
        except Exception as exc:  # noqa: BLE001 - shown, never crashes the UI
            self.notify(_("check failed to run: {error}").format(error=exc), severity="error", timeout=10)
        finally:
            self.checking.difference_update(step_ids)
            self.post_message(ChecksFinished(step_ids))
            self.bump()

    @work(group="checks", exit_on_error=False, description="re-check boot-sensitive steps after a reboot")
    async def recheck_after_reboot(self) -> None:
        """After a reboot (new boot id), re-check the boot-sensitive steps and show what changed."""
        from screens.dialogs import MessageDialog

        if self.build is None or self.build.observing:
            return
        stale = [s.id for s in self.build.stale_steps()]
        if not stale:
            return
        self.checking.update(stale)
        self.bump()
        try:
            changes = await self.build.recheck_after_reboot(self.host)
        except Exception as exc:  # noqa: BLE001
            self.notify(_("re-check after reboot failed: {error}").format(error=exc), severity="error", timeout=10)
            return
        finally:
            self.checking.difference_update(stale)
            self.bump()
        lines = []
        for step, before, now in changes:
            b = _(before.value) if before else _("not checked")
            mark = "  " if before is now else "->"
            lines.append(f"{mark} {_(step.title)}\n     "
                         + _("before the reboot: {before}; now: {now}").format(before=b, now=_(now.value)))
        changed = sum(1 for _unused, b, n in changes if b is not n)
        await self.push_screen_wait(MessageDialog(
            _("Rebooted: {count} boot-sensitive steps re-checked, {changed} changed").format(count=len(changes),
                                                                                          changed=changed),
            "\n".join(lines)))

    @work(group="fleet", exclusive=True, exit_on_error=False, description="check the fleet's nodes over ssh")
    async def run_fleet_check(self) -> None:
        """``check_fleet`` on the fleet view's nodes (every step checked from probes unless the request names some),
        with the open build's plan as the expectation and nothing recorded; ``fleet_progress`` follows it."""
        from wizard.engine import checked_steps
        from wizard.fleet import Progress, check_fleet

        req = self.fleet_request
        if req is None:
            return
        sel = req.steps if req.steps is not None else checked_steps(self.stages)
        plan = self.build.expectations() if self.build is not None else {}
        self.fleet_running, self.fleet_error = True, ""
        self.fleet_progress = Progress(len(req.nodes))

        def on_progress(p: Progress) -> None:
            self.fleet_progress = p

        self.bump()
        try:
            self.fleet_check = await check_fleet(req.nodes, sel, plan, on_progress=on_progress, **req.options)
        except Exception as exc:  # noqa: BLE001 - shown, never crashes the UI
            self.fleet_error = str(exc) or repr(exc)
            self.notify(_("fleet check failed to run: {error}").format(error=self.fleet_error), severity="error",
                        timeout=10)
        finally:
            self.fleet_running = False
            self.bump()

    @work(group="action-start", exit_on_error=False, description="run an action")
    async def start_action(self, step_id: str) -> None:
        """Run a step's action through ``Build.run_action`` (the CLI's path too): the engine resolves it,
        refuses what cannot run here, asks through the confirmation dialog, starts it, follows its log (lines
        go to the action screen) and judges it when it ends; the screens show what it stored."""
        if self.build is None:
            return
        build = self.build
        step = build.step(step_id)
        if step.action is None:
            return
        if step_id in self.actions_starting:  # `a` pressed again while its dialog is up: one dialog, one run (walk 34 #4)
            return
        self.actions_starting.add(step_id)
        try:
            await self._start_action(build, step, step_id)
        finally:
            self.actions_starting.discard(step_id)

    async def _start_action(self, build: Any, step: Any, step_id: str) -> None:
        """:meth:`start_action`'s body, run once at a time per step."""
        from screens.action import ActionScreen
        from screens.dialogs import ConfirmAction, ManualDialog, MessageDialog

        # with --snapshot the facts are another machine's: show what would run there, run nothing here
        dry = self.dry_run or build.dry_run or bool(self.snapshot)
        buf: list[LogBuffer] = []
        run_ids: list[int] = []

        async def confirm(prep) -> bool:
            dialog = ConfirmAction(prep)
            ok = await self.push_screen_wait(dialog)  # bool: ConfirmAction is a ModalScreen[bool]
            return bool(ok)

        async def on_start(run) -> None:
            run_ids.append(run.id)
            if run.state is ActionState.RUNNING:
                self.watched.add(run.id)
                buf.append(self.logs.setdefault(run.id, LogBuffer()))
            self.bump()
            await self.push_screen(ActionScreen(run.id))

        def on_lines(lines: list[str]) -> None:
            if buf and run_ids:
                self.post_message(LogLinesRead(run_ids[0], buf[0].extend(lines), lines))

        def on_checking(on: bool) -> None:
            (self.checking.add if on else self.checking.discard)(step_id)
            if not on:
                self.post_message(ChecksFinished([step_id]))
            self.bump()

        try:
            out = await build.run_action(self.host, step_id, confirm=confirm, on_start=on_start, on_lines=on_lines,
                                         on_checking=on_checking, dry_run=dry, poll_s=0.1)
        except Exception as exc:  # noqa: BLE001 - shown, never crashes the UI
            await self.push_screen_wait(MessageDialog(_("Cannot prepare the action"), str(exc)))
            return
        finally:
            for rid in run_ids:
                self.watched.discard(rid)
            self.bump()
        prep = out.prepared
        if prep.refusal_kind == "observing":
            await self.push_screen_wait(MessageDialog(_("Read-only") if self.read_only_reason else _("Observing"),
                                                      _("{why}: actions are disabled in this window.").format(
                                                          why=self.read_only_why())))
        elif prep.refusal_kind == "running" and prep.running is not None:  # its run goes on: its screen, not a second
            if prep.running.step_id != step_id:  # another step's run on the same GPUs: say why its screen opens
                self.notify(tr(prep.refusal), severity="warning", timeout=12)
            await self.push_screen(ActionScreen(prep.running.id))
        elif prep.refusal_kind in ("manual", "done"):
            # with a field for the plan answer it needs (hostfile) when one is why: saved, it is asked for again
            if await self.push_screen_wait(ManualDialog(prep)) and prep.resolved.plan_key:
                self.start_action(step_id)
        elif prep.refusal_kind == "root":
            await self.push_screen_wait(MessageDialog(_("Needs root"), root_hint(_(step.action.title), self.state_dir)))
        elif out.error:
            await self.push_screen_wait(MessageDialog(_("Not started"), out.error))
        elif out.run is not None and out.run.state is not ActionState.DRY_RUN:
            self.post_message(ActionEnded(out.run.id, out.run.state))

    @work(group="action-watch", exit_on_error=False, description="follow an action's log and status")
    async def watch_run(self, run_id: int, poll_s: float = 0.1) -> None:
        """Follow a run this window did not start (re-attached after a restart, or opened from another
        window's build) with ``Build.follow_action``; the engine settles and judges it when it ends."""
        if self.build is None or run_id in self.watched:
            return
        run = self.build.store.action_run(run_id)
        if run is None:
            return
        self.watched.add(run_id)
        buf = self.logs.setdefault(run_id, LogBuffer())

        def on_lines(lines: list[str]) -> None:
            self.post_message(LogLinesRead(run_id, buf.extend(lines), lines))

        try:
            run = await self.build.follow_action(run, on_lines, poll_s)
            self.post_message(ActionEnded(run_id, run.state))
        finally:
            self.watched.discard(run_id)
            self.bump()

    # ------------------------------------------------------------------ message routing

    def _on_notify(self, event: Any) -> None:
        """A notification with the same words as one still shown replaces it (walk 28 #11: `n` pressed four times on
        the last step stacked four copies, which at 60x20 ran over the header)."""
        for shown in [n for n in self._notifications if n.message == event.notification.message]:
            self._unnotify(shown, refresh=False)
        super()._on_notify(event)

    def _unnotify(self, notification: Any, refresh: bool = True) -> None:
        """A toast gone: the whole screen is drawn again once it is removed. Textual redraws only the toast's region,
        and a double-width character whose left half lies outside it stayed blank (walk 28 #10: "交换" read "交")."""
        super()._unnotify(notification, refresh)
        self.set_timer(0.05, self._repaint_after_toast)

    def _repaint_after_toast(self) -> None:
        if self._unmounted or not self.is_running:
            return
        try:
            self.screen.refresh(repaint=True, layout=True)
        except Exception:  # noqa: BLE001 - no screen (the app is closing): nothing to redraw
            pass

    def on_log_lines_read(self, message: LogLinesRead) -> None:
        from screens.action import ActionScreen

        for scr in self.screen_stack:
            if isinstance(scr, ActionScreen) and scr.run_id == message.run_id:
                scr.add_lines(message.start, message.lines)

    def on_action_ended(self, message: ActionEnded) -> None:
        if self._unmounted:  # a run's end that arrives while the app shuts down: its build is closed already
            return
        self.bump()
        run = self.build.store.action_run(message.run_id) if self.build is not None else None
        if run is not None and self.build is not None and not self.build.observing and self.build.needs_check(run.step_id):
            self.run_checks([run.step_id])  # the commands ran; now verify what they were for
        if message.state in (ActionState.FAILED, ActionState.INTERRUPTED):
            k, n = self.build.run_ordinal(run) if run is not None and self.build is not None else (0, 0)
            self.notify(_("{step} run {run} of {runs}: {state}").format(step=run.step_id, run=k, runs=n,
                                                                        state=_(str(message.state)))
                        if run is not None and k else
                        _("action run {id} {state}").format(id=message.run_id, state=_(str(message.state))),
                        severity="warning", timeout=6)

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """F2 (the plan answers) only once there is a build to keep them: hidden before (the welcome screen)."""
        if action == "plan":
            return self.build is not None
        return True

    def action_plan(self) -> None:
        """F2: view or edit the plan answers of the open build."""
        from screens.dialogs import MessageDialog
        from screens.plan import PlanDialog

        if isinstance(self.screen, PlanDialog):
            return
        if self.build is None:
            self.push_screen(MessageDialog(_("No build yet"), _("Start a build first (New build); its plan "
                                                               "answers are kept with it.")))
            return

        def done(changes: dict | None) -> None:
            if changes and self.build is not None and not self.build.observing:
                from wizard.plan import plan_warnings

                recheck = self.build.set_plan(**changes)
                self.notify(_("plan saved: steps judge against it at their next check (c on a step, or on a stage in the overview)")
                            + recheck_words(recheck),
                            timeout=12 if recheck else 5)
                for said in plan_warnings(changes):
                    self.notify(tr(said), severity="warning", timeout=12)
                self.bump()

        self.push_screen(PlanDialog(self.build.store.plan(), readonly=self.build.observing), done)

    def action_help(self) -> None:
        from screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(type(self.screen)))

    async def action_quit(self) -> None:
        """Quit; when a form or dialog holds what was typed and not saved, ask first, as Esc does (walk 34 #14: Ctrl+Q
        in the F2 form dropped edited answers without a word)."""
        from screens.dialogs import YesNo

        unsaved = [w for s in self.screen_stack for w in [getattr(s, "unsaved", lambda: "")()] if w]
        if not unsaved or isinstance(self.screen, YesNo):
            self.exit(0)
            return

        def answered(drop: bool | None) -> None:
            if drop:
                self.exit(0)

        self.push_screen(YesNo(_("Quit and drop what was not saved?"),
                               _("{what}. Quit anyway? (esc goes back to it)").format(what="; ".join(unsaved))),
                         answered)

    def action_help_quit(self) -> None:
        """Ctrl+C (Textual no longer quits on it): how to leave, in the operator's language, and that leaving loses
        nothing (walk 32 #6: Textual's own English "Do you want to quit? Press ctrl+q to quit the app")."""
        self.notify(_("Press Ctrl+Q to quit bringup. Everything done so far is saved, and a running action goes on; "
                      "`bringup` starts here again."), title=_("Quit?"), markup=False, timeout=8)

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        return TerminalDriver if driver is LinuxDriver else driver

    _unmounted = False

    def on_unmount(self) -> None:
        self._unmounted = True
        if self.hangup_guard is not None:  # a signal that came still ends the process within its bound
            self.hangup_guard.restore()
        if self.build is not None:
            try:
                for r in self.build.store.action_runs(state=ActionState.RUNNING):
                    k, n = self.build.run_ordinal(r)
                    self.going_on.append(_("bringup: note: {title} (run {run} of {runs} of {step}, pid {pid}) goes on "
                                           "without the screen; its log: {log}. `bringup` re-attaches to it, `bringup "
                                           "status` shows it.").format(title=tr(r.title), run=k, runs=n, step=r.step_id,
                                                                       pid=r.pid, log=r.log_path))
            except Exception:  # noqa: BLE001 - a note must never stop the exit
                pass
            self.build.close()


def run_app(state: str | None = None, snapshot: str | None = None, dry_run: bool = False,
            basic: bool | None = None, fleet: tuple[list[Any], dict[str, Any]] | None = None, notice: str = "",
            build_id: str | None = None) -> int:
    """Launcher: terminal defaults for SSH and the console, then the app (tui-practices C.1). ``fleet``: (nodes,
    keyword options of :func:`wizard.fleet.check_fleet`): open on the fleet view of those nodes. ``notice``: one
    line the app shows on start (the language's console fallback; the language itself is chosen before, by
    :func:`wizard.i18n.setup`)."""
    is_basic = detect_basic() if basic is None else basic
    if os.environ.get("SSH_CONNECTION") or is_basic:
        os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
        os.environ.setdefault("ESCDELAY", "25")
    if is_basic:
        os.environ.setdefault("TEXTUAL_FPS", "20")
    host = None
    manifest: dict[str, Any] = {}
    if snapshot:
        from wizard.capture import load_bundle

        host, manifest = load_bundle(snapshot)
    request = None
    if fleet is not None:
        from screens.fleet import FleetRequest

        request = FleetRequest(fleet[0], None, fleet[1])
    app = BringupApp(state_dir=state, host=host, snapshot=snapshot, dry_run=dry_run, basic=is_basic, fleet=request,
                     notice=notice, build_id=build_id)
    app.bundle_plan = dict(manifest.get("plan") or {})
    try:
        app.run(mouse=not is_basic)
    finally:
        # a dropped session can leave the terminal in mouse-reporting mode (tui-practices C.7)
        try:
            if sys.stdout.isatty():
                sys.stdout.write("\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l")
                sys.stdout.flush()
        except OSError:  # the terminal is gone
            pass
    try:
        for line in app.going_on:  # quit while an action ran (walk 17: nothing said it goes on)
            print(line, file=sys.stderr)
    except OSError:  # the terminal is gone (a dropped session): nobody to tell
        pass
    if app.fatal:
        print(_("bringup: error: {error}").format(error=app.fatal), file=sys.stderr)
        return 3
    # Textual sets return_code to 1 when the app died of an exception (it printed the traceback)
    rc = app.return_code or 0
    return 3 if rc == 1 else rc
