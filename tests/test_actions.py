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
