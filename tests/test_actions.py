"""Actions for real: detached supervisor, logs, exit status, re-attach, interrupted, dry run, edits."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

import steps
from tests.conftest import frozen_clock
from tests.faults import tmpfs_or_skip, wait_supervisors
from wizard import actions as act
from wizard.actions import ActionContext, LogTail, Resolved, clean_line
from wizard.engine import Build
from wizard.fileedit import atomic_write, restore
from wizard.model import StepStatus
from wizard.probes import ProbeOutput
from wizard.supervise import run as supervise_run

BOOT = "boot-test"
GENERIC = "report.capture"  # a step whose action has nothing to verify afterwards: success = passed


@pytest.fixture
def build(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "node1", "boot_id": BOOT}, create=True, clock=frozen_clock)
    yield b
    b.close()


def py(code: str) -> dict:
    return {"argv": [sys.executable, "-c", code]}


def test_supervisor_runs_ops_in_order_and_records_status(tmp_path):
    log, status = tmp_path / "a.log", tmp_path / "a.status"
    target = tmp_path / "etc" / "x.conf"
    target.parent.mkdir()
    target.write_text("old\n")
    rc = supervise_run({"title": "t", "log": str(log), "status": str(status), "ops": [
        py("print('hello')"),
        {"write": str(target), "content": "new\n", "backup_dir": str(tmp_path / "backups")},
        py("import sys; print('failing'); sys.exit(3)"),
        py("print('never')"),
    ]})
    assert rc == 1
    text = log.read_text()
    assert "hello" in text and "failing" in text and "never" not in text
    assert "$ " + sys.executable in text
    st = json.loads(status.read_text())
    assert st["rc"] == 3 and st["failed_op"] == 2
    assert target.read_text() == "new\n"
    backups = list((tmp_path / "backups").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == "old\n"


def test_supervisor_missing_binary_is_a_status_not_a_crash(tmp_path):
    log, status = tmp_path / "a.log", tmp_path / "a.status"
    supervise_run({"title": "t", "log": str(log), "status": str(status),
                   "ops": [{"argv": ["/nonexistent/binary-xyz"]}]})
    assert json.loads(status.read_text())["rc"] == 127
    assert "could not start" in log.read_text()


def test_action_runs_detached_and_completes(build):
    step = steps.step_by_id(GENERIC)
    resolved = Resolved(ops=[py("import time\nfor i in range(3):\n print('line', i, flush=True); time.sleep(0.05)")])
    run = build.start_action(step, resolved)
    assert run.state == act.ActionState.RUNNING and run.pid and run.pid_start
    assert build.status(step.id) is StepStatus.RUNNING
    # it runs in its own session: not in our process group
    assert os.getpgid(run.pid) != os.getpgid(0)
    done = build.wait_action(run, timeout_s=30)
    assert done.state == act.ActionState.SUCCEEDED and done.exit_status == 0
    assert "line 2" in Path(done.log_path).read_text()
    assert build.status(step.id) is StepStatus.PASSED
    rec = build.store.action_run(run.id)
    assert rec.argv == [resolved.ops[0]["argv"]] and rec.user == "tester" and rec.boot_id == BOOT


def test_failed_action_fails_the_step(build):
    step = steps.step_by_id(GENERIC)
    run = build.start_action(step, Resolved(ops=[py("import sys; sys.exit(4)")]))
    run = build.wait_action(run, timeout_s=30)
    assert run.state == act.ActionState.FAILED and run.exit_status == 4
    assert build.status(step.id) is StepStatus.FAILED
    assert "exit status 4" in build.store.step_states()[step.id].reason


def test_reattach_after_the_ui_process_dies(state_dir):
    """A second Build (as after a restart) finds the run still running, then finished."""
    b1 = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, clock=frozen_clock)
    step = steps.step_by_id(GENERIC)
    gate = state_dir / "gate"
    code = (f"import os, time\nprint('started', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\nprint('finished', flush=True)")
    run = b1.start_action(step, Resolved(ops=[py(code)]))
    b1.close()  # the UI goes away; the action does not
    act._CHILDREN.clear()  # a new process would not have the Popen object either

    b2 = Build.open(state_dir, steps.STAGES, {"boot_id": BOOT})
    still = b2.reconcile()
    assert [r.id for r in still] == [run.id]
    assert b2.resume_point().running[0].id == run.id
    gate.write_text("go")
    final = b2.wait_action(still[0], timeout_s=30)
    assert final.state == act.ActionState.SUCCEEDED
    log = Path(final.log_path).read_text()
    assert "started" in log and "finished" in log
    assert b2.status(step.id) is StepStatus.PASSED
    b2.close()


def test_run_that_died_without_status_is_interrupted(build):
    step = steps.step_by_id(GENERIC)
    run = build.start_action(step, Resolved(ops=[py("import time; time.sleep(60)")]))
    os.killpg(run.pid, signal.SIGKILL)  # supervisor and child die; nobody writes a status
    deadline = time.monotonic() + 10
    while act.is_alive(run, BOOT) and time.monotonic() < deadline:
        time.sleep(0.05)
    still = build.reconcile()
    assert still == []
    rec = build.store.action_run(run.id)
    assert rec.state == act.ActionState.INTERRUPTED
    assert build.status(step.id) is StepStatus.INTERRUPTED
    assert "interrupted" in Path(rec.log_path).read_text()


def test_a_supervisor_killed_alone_takes_its_command_with_it(build, tmp_path):
    """Walk 34 #5: `kill -9` of the supervisor alone left its command (torchrun) running while bringup marked the run
    interrupted and offered to run it again. The command is sent SIGTERM when its supervisor dies (PR_SET_PDEATHSIG),
    as a cancel would send it."""
    step = steps.step_by_id(GENERIC)
    pidfile = tmp_path / "child.pid"
    code = f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"
    run = build.start_action(step, Resolved(ops=[py(code)]))
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    sup = act.supervisor_pid(run) or run.pid
    assert sup is not None and sup != child
    os.kill(sup, signal.SIGKILL)  # the supervisor only, not its process group
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        try:  # reap it if it is ours (a zombie still answers kill 0)
            os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pass
        stat = Path(f"/proc/{child}/stat")
        if stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"):
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the command outlived its supervisor")
    assert build.reconcile() == [] and build.store.action_run(run.id).state == act.ActionState.INTERRUPTED


def test_run_from_an_earlier_boot_is_interrupted(build):
    """A reboot (new boot id) means the recorded pid is someone else's: never re-attach to it."""
    step = steps.step_by_id(GENERIC)
    run = build.start_action(step, Resolved(ops=[py("import time; time.sleep(30)")]))
    try:
        assert act.is_alive(run, BOOT)
        assert not act.is_alive(run, "another-boot")
    finally:
        act.cancel(run, BOOT, signal.SIGKILL)


def test_cancel_records_the_signal(build):
    step = steps.step_by_id(GENERIC)
    run = build.start_action(step, Resolved(ops=[py("import time; print('go', flush=True); time.sleep(60)")]))
    deadline = time.monotonic() + 10
    while "go" not in Path(run.log_path).read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert act.cancel(run, BOOT)
    run = build.wait_action(run, timeout_s=30)
    # a cancel is not a failure (issue 9): the step is open again, its reason says what happened
    st = build.store.step_states()[step.id]
    assert st.status is StepStatus.PENDING and "cancelled" in st.reason
    assert run.state == act.ActionState.CANCELLED and run.exit_status == -signal.SIGTERM
    assert act.outcome_words(run.state, run.exit_status) == "cancelled (SIGTERM)"  # words, never "-15"


def test_outcome_words_name_signals_and_never_call_a_cancel_failed():
    S = act.ActionState
    assert act.outcome_words(S.CANCELLED, 143) == "cancelled (SIGTERM)"  # a wrapper or shell reports 128 + N
    assert act.outcome_words(S.CANCELLED, None) == "cancelled"
    assert act.outcome_words(S.FAILED, -9) == "killed by SIGKILL"
    assert act.outcome_words(S.FAILED, 2) == "failed (exit status 2)"
    assert act.outcome_words(S.FAILED, None).startswith("failed (no exit status")
    assert act.outcome_words(S.SUCCEEDED, 0) == "succeeded (exit status 0)"
    assert act.outcome_words(S.INTERRUPTED, None).startswith("interrupted")
    assert act.signal_name(200) == "signal 200"
    assert all("failed" not in act.outcome_words(S.CANCELLED, rc) for rc in (-15, -2, -1, 130, 143, 1, None))


def test_a_runs_expected_duration_is_what_its_commands_declare():
    from wizard import dcgm_diag

    base = steps.step_by_id("health.idle_baseline").action.resolve(ctx({}, {"baseline_minutes": 0.3}))
    assert act.declared_duration_s([op["argv"] for op in base.ops]) == 18.0  # the sampler's --seconds
    c = ActionContext({}, {}, "/tmp/b", python=sys.executable)
    wrapped = dcgm_diag.wrapped(c, "dcgmi diag -r 2", 120.0, ["dcgmi", "diag", "-r", "2", "-j"])
    assert act.declared_duration_s([wrapped]) == 120.0  # the progress wrapper's --expect-s
    two = [["systemctl", "start", "nvidia-dcgm"], wrapped, dcgm_diag.wrapped(c, "x", 60.0, ["true"])]
    assert act.declared_duration_s(two) == 180.0  # summed over the commands that declare one
    # the wrapped command's own options are not the wrapper's; nothing declared, or nonsense, is no declaration
    assert act.declared_duration_s([[sys.executable, "-m", "wizard.progress", "--", "tool", "--expect-s", "9"]]) is None
    assert act.declared_duration_s([["sleep", "60"], [sys.executable, "-m", "wizard.sample", "--seconds", "nan"]]) is None
    assert act.declared_duration_s([[sys.executable, "-m", "wizard.progress", "--expect-s=30", "--", "x"]]) == 30.0


def test_a_dry_runs_log_prefixes_only_the_operations(state_dir):
    """Walk 25 #9: the dry-run log said "would run: /tmp is on ext4" of the lines that say what a command does. Only
    the operations get "would run:"; the lines under one (what it does, what it runs in turn) are kept as notes,
    in the reader's language (walk 25 #2: the fio dialog's lines were English in Chinese)."""
    from wizard import i18n
    from wizard.i18n import Msg

    op = {"argv": ["fio", "--name=read"], "detail": [Msg("{path} is on {fs}", path="/data", fs="ext4")]}
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, dry_run=True)
    step = steps.step_by_id("node.storage_read")
    log = Path(b.start_action(step, Resolved(ops=[op])).log_path).read_text().splitlines()
    assert log[1:] == ["would run: $ fio --name=read", "    /data is on ext4"]
    i18n.set_language("zh_CN")
    try:
        log = Path(b.start_action(step, Resolved(ops=[op])).log_path).read_text().splitlines()
        assert Resolved(ops=[op]).describe()[1] == "    /data is on ext4"  # the English stays what is stored
    finally:
        i18n.set_language("en")
    assert log[1:] == ["将运行：$ fio --name=read", "    /data 位于 ext4 上"]
    b.close()


def test_dry_run_runs_nothing_and_says_what_it_would(state_dir, tmp_path):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, dry_run=True)
    marker = tmp_path / "ran"
    step = steps.step_by_id("os.tools")
    run = b.start_action(step, Resolved(ops=[py(f"open({str(marker)!r}, 'w').write('x')")]))
    assert run.state == act.ActionState.DRY_RUN and run.pid is None
    time.sleep(0.3)
    assert not marker.exists()
    assert "would run: $ " + sys.executable in Path(run.log_path).read_text()
    assert b.status(step.id) is StepStatus.PENDING
    b.close()


def test_dry_run_log_and_the_confirmation_are_in_the_operators_language(state_dir, tmp_path):
    """In Chinese the dry-run log's own words and the confirmation's lines are Chinese; the command and the path
    stay as they are (they are what runs)."""
    from wizard import i18n
    from wizard.engine import PreparedAction

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, dry_run=True)
    step = steps.step_by_id("os.nouveau")
    target = tmp_path / "blacklist.conf"
    resolved = Resolved(ops=[{"write": str(target), "content": "blacklist nouveau\n"}, {"argv": ["true"]}])
    i18n.set_language("zh_CN")
    try:
        log = Path(b.start_action(step, resolved).log_path).read_text()
        lines = [i18n.tr(x) for x in PreparedAction(step, resolved, dry_run=True).confirmation()]
    finally:
        i18n.set_language("en")
        b.close()
    assert log.startswith("# 演练模式：屏蔽 nouveau") and f"将运行：写入 {target}（先备份，原子替换）" in log
    assert "将运行：$ true" in log
    assert lines[0].startswith("os.nouveau：屏蔽 nouveau") and "修改系统：是" in lines[2] and lines[-1] == "  $ true"


def test_root_only_action_refused_for_non_root(build, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    step = steps.step_by_id("os.tools")
    with pytest.raises(PermissionError):
        build.start_action(step, Resolved(ops=[py("pass")]))


def test_manual_only_resolution_cannot_start(build):
    step = steps.step_by_id("os.tools")
    with pytest.raises(ValueError):
        build.start_action(step, Resolved(manual="install it by hand"))


# ---------------------------------------------------------------- resolving actions per distro

def osr(text: str) -> dict:
    return {"os_release": ProbeOutput("os_release", "/etc/os-release", text=text)}


def ctx(outputs, plan=None, tmp="/tmp/b"):
    return ActionContext(outputs, plan or {}, tmp)


def test_pciutils_on_debian_is_noninteractive_apt(tmp_path):
    real = (Path(__file__).parent / "data" / "bundles").exists()
    assert real
    r = steps.step_by_id("os.tools").action.resolve(ctx(osr('ID=debian\nVERSION_ID="12"\n')))
    assert r.ops[0]["argv"] == ["apt-get", "update"]
    assert r.ops[1]["argv"][:3] == ["apt-get", "install", "-y"] and r.ops[1]["argv"][-1] == "pciutils"
    assert r.env["DEBIAN_FRONTEND"] == "noninteractive"


def test_pciutils_on_rocky_uses_dnf_and_unknown_distro_is_manual():
    r = steps.step_by_id("os.tools").action.resolve(ctx(osr('ID="rocky"\nID_LIKE="rhel centos fedora"\n')))
    assert r.ops == [{"argv": ["dnf", "install", "-y", "pciutils"]}]
    r = steps.step_by_id("os.tools").action.resolve(ctx(osr('ID=plan9\nPRETTY_NAME="Plan 9"\n')))
    assert r.ops == [] and "Plan 9" in r.manual


def test_nouveau_blacklist_writes_with_backup_then_rebuilds_initramfs():
    r = steps.step_by_id("os.nouveau").action.resolve(ctx(osr("ID=ubuntu\nID_LIKE=debian\n"), tmp="/var/b"))
    assert r.ops[0]["write"] == "/etc/modprobe.d/blacklist-nouveau.conf"
    assert "blacklist nouveau" in r.ops[0]["content"] and r.ops[0]["backup_dir"] == "/var/b"
    assert r.ops[1]["argv"] == ["update-initramfs", "-u", "-k", "all"]
    assert "write /etc/modprobe.d/blacklist-nouveau.conf" in r.describe()[0]


def test_success_of_an_action_with_a_check_waits_for_the_check(build):
    """os.tools installs pciutils; exit 0 proves only that apt ran: its check (lspci) decides."""
    step = steps.step_by_id("os.tools")
    run = build.start_action(step, Resolved(ops=[py("print('installed')")]), dry_run=False)
    run = build.wait_action(run, timeout_s=30)
    assert run.state == act.ActionState.SUCCEEDED
    assert build.status(step.id) is StepStatus.PENDING and build.needs_check(step.id)


HOT = ('# summary {"gpus": [{"index": 3, "pci_bus_id": "00000000:9B:00.0", "max_temp_c": 78, '
       '"slowdown_c": 87, "reasons_seen": 129, "samples": 12}], "host_max_c": 40.0, "nvml": "ok", "samples": 12}')
COOL = ('# summary {"gpus": [{"index": 0, "pci_bus_id": "00000000:17:00.0", "max_temp_c": 31, '
        '"slowdown_c": 87, "reasons_seen": 1, "samples": 12}], "host_max_c": 40.0, "nvml": "ok", "samples": 12}')


def test_baseline_is_judged_from_its_log_not_its_exit_status(build):
    step = steps.step_by_id("health.idle_baseline")
    for line, status, verdict in ((HOT, StepStatus.WARNED, "warn"), (COOL, StepStatus.PASSED, "pass")):
        run = build.start_action(step, Resolved(ops=[py(f"print({line!r})")]), dry_run=False)
        run = build.wait_action(run, timeout_s=30)
        assert run.state == act.ActionState.SUCCEEDED
        st = build.store.step_states()[step.id]
        assert st.status is status and st.verdict.value == verdict
        _, findings = build.store.latest_check(step.id)
        assert findings[0].subject.startswith("GPU")
        if verdict == "warn":
            assert "within 15 °C" in findings[0].message and "HW power brake" in findings[0].message
            assert findings[0].evidence == (HOT,)
    # nothing sampled: unknown, the step stays open
    run = build.wait_action(build.start_action(step, Resolved(ops=[py(
        "print('# summary {\"gpus\": [], \"nvml\": \"NVML Shared Library Not Found\", \"samples\": 3}')")]),
        dry_run=False), timeout_s=30)
    st = build.store.step_states()[step.id]
    assert st.status is StepStatus.PENDING and st.verdict.value == "unknown"


def test_baseline_duration_from_plan():
    r = steps.step_by_id("health.idle_baseline").action.resolve(ctx({}, {"baseline_minutes": 0.05}))
    argv = r.ops[0]["argv"]
    assert argv[1:3] == ["-m", "wizard.sample"] and argv[argv.index("--seconds") + 1] == "3"


# ---------------------------------------------------------------- edits and logs

def test_atomic_write_backs_up_and_restores(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    fstab = etc / "fstab"
    fstab.write_text("UUID=1 / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n")
    os.chmod(fstab, 0o600)
    backup = atomic_write(fstab, b"UUID=1 / ext4 defaults 0 1\n", tmp_path / "backups")
    assert backup is not None and "swap" in backup.read_text()
    assert fstab.read_text() == "UUID=1 / ext4 defaults 0 1\n"
    assert (fstab.stat().st_mode & 0o777) == 0o600
    assert not [p for p in etc.iterdir() if p.name.endswith(".tmp")]
    restore(fstab, backup)
    assert "swap" in fstab.read_text()
    assert len(list((tmp_path / "backups").iterdir())) == 2  # the rollback backed up too


def test_atomic_write_new_file_has_no_backup(tmp_path):
    assert atomic_write(tmp_path / "new.conf", b"x\n", tmp_path / "b") is None
    assert (tmp_path / "new.conf").read_bytes() == b"x\n"


def test_logtail_is_incremental_and_cleans_progress_lines(tmp_path):
    p = tmp_path / "l.log"
    p.write_bytes(b"one\n\x1b[31mred\x1b[0m\n 10%\r 50%\r100%\npart")
    t = LogTail(str(p))
    assert t.read_new() == ["one", "red", "100%"]
    with open(p, "ab") as fh:
        fh.write(b"ial\n")
    assert t.read_new() == ["partial"]
    assert t.read_new() == []
    assert clean_line("\x1b[2K\x1b[1Gdone") == "done"


# ---------------------------------------------------------------- the one action path: Build.run_action

def test_action_states_are_an_enum_that_stores_and_prints_the_same_strings(build):
    from wizard.store import ActionState

    assert [s.value for s in ActionState] == ["running", "succeeded", "failed", "interrupted", "dry-run", "cancelled"]
    assert json.dumps({"state": ActionState.DRY_RUN}) == '{"state": "dry-run"}' and f"{ActionState.FAILED}" == "failed"
    run = build.start_action(steps.step_by_id(GENERIC), Resolved(ops=[py("pass")]))
    assert build.store.conn.execute("SELECT state FROM action_run WHERE id = ?", (run.id,)).fetchone()[0] == "running"
    assert build.wait_action(run, timeout_s=30).state is ActionState.SUCCEEDED


async def test_run_action_confirms_starts_follows_judges_and_stores_with_the_run(build):
    """health.idle_baseline through the one path: the confirmation shows the exact commands, the log reaches
    on_lines, the engine judges the log when the run ends and stores the findings and the overrides with it."""
    from wizard.engine import local_host
    from wizard.store import ActionState

    host = local_host()
    asked, lines, started = [], [], []
    declined = await build.run_action(host, "health.idle_baseline", {"baseline_minutes": 0.02},
                                      confirm=lambda p: asked.append(p.confirmation()) or False)
    assert declined.declined and declined.run is None and not build.store.action_runs()
    assert any("$ " + sys.executable in ln and "wizard.sample" in ln for ln in asked[0])

    async def yes(p):
        return True

    out = await build.run_action(host, "health.idle_baseline", {"baseline_minutes": 0.02}, confirm=yes,
                                 on_start=started.append, on_lines=lines.extend, poll_s=0.05)
    run = out.run
    assert run is not None and started[0].id == run.id and run.state is ActionState.SUCCEEDED
    assert any(ln.startswith("# summary") for ln in lines)
    assert run.overrides == {"baseline_minutes": 0.02} and run.check_run is not None
    assert out.findings and out.findings == build.run_findings(run) == build.store.latest_check(run.step_id)[1]
    assert out.verdict is build.store.step_states()[run.step_id].verdict


async def test_run_action_refuses_what_cannot_run_here_and_starts_nothing(build, monkeypatch):
    from wizard.engine import local_host

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    out = await build.run_action(local_host(), "os.tools", confirm=lambda p: pytest.fail("asked for a refused action"))
    assert out.prepared.refusal_kind in ("root", "manual") and out.prepared.refusal and out.run is None
    assert not build.store.action_runs()
    dry = await build.run_action(local_host(), "os.tools", dry_run=True)  # a dry run needs no root
    assert dry.prepared.refusal_kind in ("", "manual")
    if dry.run is not None:
        assert dry.run.state is act.ActionState.DRY_RUN and build.status("os.tools") is StepStatus.PENDING


def test_a_cancelled_judged_run_is_judged_but_not_failed(build):
    """A cancel is not a failure: what the run measured is judged and stored; the cancel adds an unknown."""
    step = steps.step_by_id("health.idle_baseline")
    run = build.start_action(step, Resolved(ops=[py("import time; print('go', flush=True); time.sleep(60)")]))
    deadline = time.monotonic() + 10
    while "go" not in Path(run.log_path).read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert act.cancel(run, BOOT)
    run = build.wait_action(run, timeout_s=30)
    assert run.state is act.ActionState.CANCELLED and run.check_run is not None
    found = build.run_findings(run)
    assert any("cancelled" in f.message and f.verdict.value == "unknown" for f in found)
    assert build.status(step.id) is not StepStatus.FAILED


# ---------------------------------------------------------------- kills at any instant, full disks (issue 11)

RUN_STEP = "health.idle_baseline"  # no root needed, judged from its log, 1 s with baseline_minutes=0.01


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def test_a_run_whose_pid_was_never_stored_is_followed_through_its_lock(state_dir):
    """Defect 1 of issue 11: bringup killed after starting the supervisor but before storing its pid left a run
    with pid NULL, which the next bringup marked interrupted while it ran on. The supervisor holds the run's lock
    and writes its pid: the next bringup sees it running, learns the pid, and settles it when it ends."""
    b1 = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, clock=frozen_clock)
    step = steps.step_by_id(GENERIC)
    gate = state_dir / "gate"
    run = b1.start_action(step, Resolved(ops=[py(f"import os, time\nwhile not os.path.exists({str(gate)!r}): "
                                                 "time.sleep(0.02)\nprint('done', flush=True)")]))
    real_pid = run.pid
    b1.store.update_action_run(run.id, pid=None, pid_start=None)  # what a kill before the pid's write leaves
    b1.close()
    act._CHILDREN.clear()  # a new process has no Popen object either

    b2 = Build.open(state_dir, steps.STAGES, {"boot_id": BOOT})
    try:
        assert [r.id for r in b2.reconcile()] == [run.id]  # alive (it may not have written its pid yet)
        deadline = time.monotonic() + 10
        while act.supervisor_pid(run) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        still = b2.reconcile()
        assert [r.id for r in still] == [run.id] and still[0].pid == real_pid  # pid learnt from its lock file
        assert b2.store.action_run(run.id).pid == real_pid and b2.status(step.id) is StepStatus.RUNNING
        assert "supervisor is gone" not in Path(run.log_path).read_text()
    finally:
        gate.write_text("go")  # the action ends either way
    final = b2.wait_action(still[0], timeout_s=30)
    assert final.state is act.ActionState.SUCCEEDED and final.exit_status == 0
    assert b2.status(step.id) is StepStatus.PASSED
    assert not Path(run.status_path + ".tmp").exists()  # the status's reserved space became the status file
    b2.close()


def test_a_run_that_never_started_is_interrupted_and_says_so(build):
    """A run record whose supervisor never started (bringup killed between the record and the start): no lock
    holder, no status: interrupted, and its log says it did not start (not that a supervisor died)."""
    from wizard.store import ActionState

    step = steps.step_by_id(GENERIC)
    with build.store.tx():  # the record and the step's "running", as start_run writes them, and nothing more
        rid = build.store.add_action_run(step.id, "t", [["true"]], "tester", False, ActionState.RUNNING, "", "", BOOT)
        base = build.actions_dir / f"{rid:04d}-{step.id}"
        build.store.update_action_run(rid, log_path=str(base) + ".log", status_path=str(base) + ".status")
        build.store.set_step(step.id, StepStatus.RUNNING)
    build.actions_dir.mkdir(parents=True, exist_ok=True)
    assert build.reconcile() == []
    rec = build.store.action_run(rid)
    assert rec.state is ActionState.INTERRUPTED and build.status(step.id) is StepStatus.INTERRUPTED
    assert "did not start" in Path(rec.log_path).read_text()


def test_a_start_that_fails_records_the_run_failed_and_leaves_the_step_as_it_was(build):
    """A file of the run cannot be made (here: a directory where its spec goes): nothing runs, the run is
    recorded failed without an exit status, the step keeps its status, and the error is raised."""
    step = steps.step_by_id(GENERIC)
    build.confirm(step.id, "done by hand earlier")
    build.actions_dir.mkdir(parents=True, exist_ok=True)
    (build.actions_dir / f"0001-{step.id}.json").mkdir()  # the first run's spec path is taken
    with pytest.raises(OSError):
        build.start_action(step, Resolved(ops=[py("pass")]))
    rec = build.store.action_runs(step_id=step.id)[-1]
    assert rec.state is act.ActionState.FAILED and rec.exit_status is None and rec.pid is None
    assert build.status(step.id) is StepStatus.CONFIRMED
    assert "did not start" in Path(rec.log_path).read_text()


def test_kill_at_every_write_of_run_leaves_a_run_that_settles_right(tmp_path):
    """Issue 11: ``bringup run`` killed (SIGKILL, strace fault injection) at each of its write syscalls, in
    program order, up to its last write to the state dir: right after, ``status`` (reconcile) never calls a live
    run interrupted; once the supervisor ends, the store is intact, a run whose status file says rc 0 is
    succeeded and its step settled from its log (never left running or interrupted), a run without a status is
    interrupted with its step, and no run is left running."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.conftest import bringup_cmd, env_for_cli
    from tests.faults import ToolUnavailable, kill_at, write_syscalls
    from wizard.store import ActionState, Store

    env = env_for_cli()
    template = tmp_path / "template"
    import subprocess

    r = subprocess.run(bringup_cmd("--state", str(template), "plan", "baseline_minutes=0.01"), env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr

    def argv(state: Path) -> list[str]:
        return bringup_cmd("--state", str(state), "run", RUN_STEP, "--yes")

    import shutil

    dry = tmp_path / "dry"
    shutil.copytree(template, dry)
    try:
        calls = write_syscalls(argv(dry), env)
    except ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    last = max(i for i, (name, _k) in enumerate(calls) if name != "write")  # the store's last touch
    points = calls[:last + 1]
    assert len(points) > 40, calls  # the record, the start, the settle and the close are all in there
    boot = _boot_id()

    def one(i_point: tuple[int, tuple[str, int]]) -> str:
        i, (name, k) = i_point
        state = tmp_path / f"k{i:03d}"
        shutil.copytree(template, state)
        killed = kill_at(argv(state), env, name, k).returncode in (137, -9)
        where = f"write syscall {i + 1} ({name} #{k}){' killed' if killed else ' not reached'}"
        b = Build.open(state, steps.STAGES, {"boot_id": boot})  # what `status` does right after
        try:
            b.reconcile()
            early = {r.id: r.state for r in b.store.action_runs()}
        finally:
            b.close()
        wait_supervisors(state)
        b = Build.open(state, steps.STAGES, {"boot_id": boot})
        try:
            assert not b.observing, where
            b.reconcile()
            runs = b.store.action_runs()
            st = b.store.step_states().get(RUN_STEP)
            for run in runs:
                assert run.log_path and run.status_path, f"{where}: run {run.id} was recorded without its files"
                status = act.read_status(run.status_path)
                log = Path(run.log_path).read_text() if Path(run.log_path).is_file() else ""
                if status is not None:
                    assert status["rc"] == 0, where
                    assert run.state is ActionState.SUCCEEDED and run.exit_status == 0, \
                        f"{where}: run {run.id} exited 0 but is {run.state} (right after the kill: {early[run.id]})"
                    assert "supervisor is gone" not in log, where
                    assert run.check_run is not None, f"{where}: the run's log was never judged"
                else:
                    assert run.state is ActionState.INTERRUPTED, f"{where}: run {run.id} is {run.state}"
            if runs and runs[-1].state is ActionState.SUCCEEDED:
                assert st is not None and st.status not in (StepStatus.RUNNING, StepStatus.INTERRUPTED), \
                    f"{where}: the step is {st and st.status} after its run succeeded"
            elif runs:
                assert st is not None and st.status is StepStatus.INTERRUPTED, where
            else:
                assert st is None or st.status is not StepStatus.RUNNING, where
        finally:
            b.close()
        s = Store.open(b.info.db, readonly=True)
        try:
            assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", where
        finally:
            s.close()
        shutil.rmtree(state, ignore_errors=True)
        return "killed" if killed else "ran"

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(one, enumerate(points)))
    assert outcomes.count("killed") >= len(points) - 2, outcomes  # (the count can shift by a write or two)
    print(f"kill at every write of run: {len(points)} write syscalls, {outcomes.count('killed')} kills, "
          f"{len(points)} consistent stores and settled runs")


# ---------------------------------------------------------------- what runs is shown (issue 11 #9), private files (#7)

def test_every_file_write_shows_the_diff_it_makes_before_asking(tmp_path):
    """Issue 11 #9: a write's confirmation showed only its path (the nouveau blacklist's content was not shown)."""
    new_file, edited, same = tmp_path / "new.conf", tmp_path / "edited.conf", tmp_path / "same.conf"
    edited.write_text("keep 1\nkeep 2\nkeep 3\nold line\n")
    same.write_text("x\n")
    lines = Resolved(ops=[{"write": str(new_file), "content": "blacklist nouveau\n"},
                          {"write": str(edited), "content": "keep 1\nkeep 2\nkeep 3\nnew line\n", "summary": "edit"},
                          {"write": str(same), "content": "x\n"},
                          {"write": str(tmp_path), "content": "y\n"}]).describe()  # a directory: cannot be read
    assert lines[:5] == [f"write {new_file} (backed up first, replaced atomically)",
                         f"    --- {new_file} (now: no such file)", f"    +++ {new_file} (after)",
                         "    @@ -0,0 +1 @@", "    +blacklist nouveau"]
    at = lines.index(f"write {edited} (backed up first, replaced atomically): edit")
    assert lines[at + 1:at + 9] == [f"    --- {edited} (now)", f"    +++ {edited} (after)", "    @@ -1,4 +1,4 @@",
                                    "     keep 1", "     keep 2", "     keep 3", "    -old line", "    +new line"]
    assert f"    (no change: {same} already holds exactly this)" in lines
    at = lines.index(f"write {tmp_path} (backed up first, replaced atomically)")
    assert lines[at + 1].startswith(f"    (cannot read {tmp_path} now: ") and lines[at + 2] == "    +y"
    # the resolver's own reading of the host's file wins over this machine's (a snapshot, another node)
    shown = Resolved(ops=[{"write": str(edited), "content": "a\n", "current": "b\n"}]).describe()
    assert shown[-2:] == ["    -b", "    +a"]


def test_a_huge_write_shows_a_bounded_diff(tmp_path):
    lines = Resolved(ops=[{"write": str(tmp_path / "big"), "content": "x\n" * 5000}]).describe()
    assert len(lines) == 1 + act.DIFF_MAX_LINES + 1 and lines[-1] == f"    ... {5000 + 3 - act.DIFF_MAX_LINES} more diff lines"


def test_nouveau_blacklist_diffs_the_file_the_host_has():
    have = "blacklist nouveau\n"
    probe = ProbeOutput("modprobe_d", "/etc/modprobe.d/*.conf", files={"/etc/modprobe.d/blacklist-nouveau.conf": have})
    spec = steps.step_by_id("os.nouveau").action
    assert "modprobe_d" in spec.probes
    r = spec.resolve(ctx({**osr("ID=ubuntu\nID_LIKE=debian\n"), "modprobe_d": probe}))
    shown = r.describe()
    assert shown[1:3] == ["    --- /etc/modprobe.d/blacklist-nouveau.conf (now)",
                          "    +++ /etc/modprobe.d/blacklist-nouveau.conf (after)"]
    assert "     blacklist nouveau" in shown and "    +options nouveau modeset=0" in shown
    none = ProbeOutput("modprobe_d", "/etc/modprobe.d/*.conf", files={})
    shown = spec.resolve(ctx({**osr("ID=ubuntu\n"), "modprobe_d": none})).describe()
    assert shown[1] == "    --- /etc/modprobe.d/blacklist-nouveau.conf (now: no such file)"
    # walk 37 #5d: bringup's labels in the diff read in the operator's language, the file's lines as they are
    from wizard import i18n

    i18n.set_language("zh_CN")
    try:
        zh = [i18n.tr(line) for line in shown]
    finally:
        i18n.set_language("en")
    assert zh[1] == "    --- /etc/modprobe.d/blacklist-nouveau.conf（现在：没有此文件）" and "+options nouveau modeset=0" in zh[-1] + " ".join(zh)


def test_the_supervisor_gives_commands_the_operators_umask_and_keeps_its_own_files_private(tmp_path):
    """bringup runs under umask 077 (its files are private); what an action's commands make is the system's, so
    they get the umask bringup was started with."""
    import subprocess

    made = tmp_path / "made-by-the-command"
    spec = tmp_path / "run.json"
    log, status = tmp_path / "run.log", tmp_path / "run.status"
    spec.write_text(json.dumps({"title": "t", "log": str(log), "status": str(status), "ops": [
        {"argv": ["sh", "-c", f"umask; echo \"$BRINGUP_OPERATOR_UMASK\"; touch {made}"]}]}))
    env = dict(os.environ, BRINGUP_OPERATOR_UMASK="022")
    p = subprocess.run([sys.executable, "-m", "wizard.supervise", str(spec)], env=env, umask=0o077, timeout=60,
                       cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = log.read_text().splitlines()
    assert "0022" in out  # the command's umask; and the variable is not passed on to it
    assert out[out.index("0022") + 1] == ""
    assert made.stat().st_mode & 0o777 == 0o644
    assert log.stat().st_mode & 0o777 == 0o600 and status.stat().st_mode & 0o777 == 0o600


@pytest.fixture
def tmpfs(tmp_path):
    """A real 2 MiB tmpfs (root only; skipped with the reason otherwise)."""
    yield from tmpfs_or_skip(tmp_path)


def test_the_exit_status_is_written_on_a_full_disk_through_its_reserved_space(tmpfs):
    """The supervisor writes its status over bytes reserved before the disk filled: no new space is needed.
    Without a reservation, a full disk makes it retry, then give up saying so, never a traceback."""
    from tests.faults import fill
    from wizard.fileedit import STATUS_RESERVE_BYTES, reserve
    from wizard.supervise import write_status

    status = tmpfs / "0001-x.status"
    reserve(tmpfs / "0001-x.status.tmp", STATUS_RESERVE_BYTES)
    filler = fill(tmpfs, 0)
    with pytest.raises(OSError):
        (tmpfs / "probe").write_bytes(b"x" * 8192)  # the disk really is full
    assert write_status(status, {"rc": 0, "ended_at": "t", "failed_op": None, "signal": None}, retry_s=0)
    assert act.read_status(str(status)) == {"rc": 0, "ended_at": "t", "failed_op": None, "signal": None}
    assert not (tmpfs / "0001-x.status.tmp").exists()
    t0 = time.monotonic()
    assert not write_status(tmpfs / "0002-y.status", {"rc": 0}, retry_s=1.0)  # nothing reserved: retried, refused
    assert 0.5 <= time.monotonic() - t0 < 10
    filler.unlink()


def test_a_disk_filling_during_an_action_keeps_its_exit_status(tmpfs, tmp_path):
    """Defect 6 of issue 11: a disk filling during an action killed the supervisor with a traceback in the log,
    left a .status.tmp, and the run was recorded interrupted though its command exited 0. Now: the status is
    written (over its reserved space), the log has no traceback, recording it fails with DiskFullError while the
    disk is full (the run stays running, nothing lost), and once there is room the run settles as succeeded."""
    from tests.faults import fill
    from wizard.store import DiskFullError

    state = tmpfs / "state"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": BOOT}, create=True, clock=frozen_clock)
    step = steps.step_by_id(GENERIC)
    gate = tmp_path / "gate"  # outside the full disk
    code = (f"import os, time\nprint('started', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\n")  # then exits 0, writing nothing
    run = b.start_action(step, Resolved(ops=[py(code)]))
    try:
        deadline = time.monotonic() + 30
        while "started" not in Path(run.log_path).read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        filler = fill(tmpfs, 0)
    finally:
        gate.write_text("go")  # the action ends either way
    deadline = time.monotonic() + 30
    while act.read_status(run.status_path) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert act.read_status(run.status_path)["rc"] == 0, Path(run.log_path).read_text()
    deadline = time.monotonic() + 30
    while act.supervisor_alive(run) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Traceback" not in Path(run.log_path).read_text()
    assert not Path(run.status_path + ".tmp").exists()
    fill(tmpfs, 0)  # whatever the supervisor's exit freed
    with pytest.raises(DiskFullError) as e:
        b.wait_action(run, timeout_s=5)
    assert "the disk holding the state directory" in str(e.value) and "bytes free" in str(e.value)
    assert b.store.action_run(run.id).state is act.ActionState.RUNNING  # rolled back: nothing half-recorded
    filler.unlink()
    done = b.wait_action(run, timeout_s=30)
    assert done.state is act.ActionState.SUCCEEDED and done.exit_status == 0
    assert b.status(step.id) is StepStatus.PASSED
    b.close()


def test_the_idle_baseline_says_before_it_runs_that_there_is_no_gpu_to_baseline():
    """Walk 29 #8: on a node without a GPU the idle baseline started a 10-minute run that could only sample the host,
    and said so only in its log. The confirmation says it first (pci read: no NVIDIA function); with the PCI state
    unknown it says nothing (unknown is not "no GPU"). The pci probe is the dev VM's real capture."""
    import asyncio as _asyncio

    from tests.conftest import DEVVM_BUNDLE
    from wizard.capture import load_bundle
    from wizard.probes import collect
    from wizard.registry import probes_named

    host, _ = load_bundle(DEVVM_BUNDLE)
    outs = _asyncio.run(collect(host, probes_named(["pci"]), {}))
    step = steps.step_by_id("health.idle_baseline")
    assert "pci" in step.action.probes
    said = step.action.resolve(ctx(outs, {"baseline_minutes": 10})).note
    assert "no NVIDIA GPU on the PCI bus" in said and "10 min" in said
    assert step.action.resolve(ctx({}, {"baseline_minutes": 10})).note == ""
