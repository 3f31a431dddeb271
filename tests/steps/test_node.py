"""The node stage's storage read test end to end: fio really runs on this machine's disk through the one action
path (``Build.run_action``: resolve on this host, supervisor, log, judge, stored findings and results), on a small
test file under a temporary data path, and the file is gone after. fio is installed first when missing
(``tests.sshd.ensure_installed``, the one apt-install path of the test set-up)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import steps
from tests.conftest import frozen_clock
from tests.sshd import ensure_installed
from wizard.engine import Build, Confirmation, local_host
from wizard.model import StepStatus, Verdict
from wizard.store import ActionState

INSTALL_LOCK = Path(tempfile.gettempdir()) / "bringup-tests-fio-install.lock"


class FioUnavailable(RuntimeError):
    """fio is missing and the test set-up could not install it (the message says how)."""


@pytest.fixture(scope="session")
def fio_binary() -> str:
    ensure_installed(lambda: [] if shutil.which("fio") else ["fio"], ("fio",),
                     lambda _m: ("fio not found: node.storage_read's test runs the real fio. Install it as root "
                                 "(`apt-get install -y --no-install-recommends fio`) or run the tests as root, and the "
                                 "test set-up installs it"), FioUnavailable, "fio", INSTALL_LOCK)
    return shutil.which("fio") or "fio"


async def test_fio_reads_a_test_file_under_the_data_path_judges_stores_and_removes_it(state_dir, tmp_path, fio_binary):
    data = tmp_path / "data"
    data.mkdir()
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(data), storage_test_mib=64, storage_test_s=3, data_read_gb_s=0.001)
        asked: list[Confirmation] = []

        def yes(prep):
            asked.append(prep.confirmation())
            return True

        out = await b.run_action(local_host(), "node.storage_read", confirm=yes, poll_s=0.1)
        assert not out.prepared.refusal, out.prepared.refusal
        run = out.run
        assert run is not None and run.state is ActionState.SUCCEEDED and run.exit_status == 0
        assert any(f"--filename={data}/.bringup-fio-read-test" in ln for ln in asked[0])
        assert any("changes the system: yes; needs root: no" in ln for ln in asked[0])
        (f,) = out.findings
        assert f.id == "node.storage_read" and f.verdict is Verdict.PASS and "randread read" in f.message
        assert f.measured is not None and f.measured.value > 0.001 and f.measured.threshold == 0.001
        assert b.run_findings(run) == out.findings and b.status("node.storage_read") is StepStatus.PASSED
        rows = b.store.action_run(run.id).results["results"]
        assert [r["test"] for r in rows] == ["fio seqread", "fio randread"] and all(r["value"] > 0 for r in rows)
        assert rows[1]["floor"] == 1.0 and rows[1]["verdict"] == "pass"
        assert list(data.iterdir()) == []  # fio removed its test file
        print("fio on this machine:", f.message)
    finally:
        b.close()


async def test_without_fio_the_read_test_is_refused_and_says_what_to_install(state_dir, tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no fio (and no df) on this PATH
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(tmp_path))
        out = await b.run_action(local_host(), "node.storage_read", confirm=lambda p: pytest.fail("asked"))
        assert out.run is None and out.prepared.refusal_kind == "manual"
        assert "fio is not installed" in out.prepared.refusal and "node.storage_tools" in out.prepared.refusal
        assert not b.store.action_runs()
    finally:
        b.close()


async def test_a_colon_in_the_data_path_touches_nothing_outside_it(state_dir, tmp_path, fio_binary):
    """fio splits --filename at ':' unless escaped: the path `W/ok:W/data` once made fio lay out (and unlink) W/ok.
    Now the colon is escaped, the test file is made and removed inside the data path, and W/ok is untouched."""
    w = tmp_path / "w"
    w.mkdir()
    precious = w / "ok"
    precious.write_text("precious\n")
    data = w / f"ok:{w}" / "data"
    data.mkdir(parents=True)
    before = sorted(p for p in w.rglob("*"))
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(data), storage_test_mib=16, storage_test_s=1, data_read_gb_s=0.001)
        out = await b.run_action(local_host(), "node.storage_read", confirm=lambda p: True, poll_s=0.1)
        assert out.run is not None and out.run.state is ActionState.SUCCEEDED, Path(out.run.log_path).read_text()
        assert precious.read_text() == "precious\n"  # before the fix fio deleted it
        assert sorted(p for p in w.rglob("*")) == before  # nothing made or left anywhere under W
        log = Path(out.run.log_path).read_text()
        assert f"--filename={w}/ok\\:{w}/data/.bringup-fio-read-test" in log
        assert {f.verdict for f in out.findings} == {Verdict.PASS}
    finally:
        b.close()


async def test_the_log_shows_progress_and_the_filesystem_it_measured(state_dir, tmp_path, fio_binary):
    data = tmp_path / "data"
    data.mkdir()
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(data), storage_test_mib=16, storage_test_s=2, data_read_gb_s=0.001)
        out = await b.run_action(local_host(), "node.storage_read", confirm=lambda p: True, poll_s=0.1)
        assert out.run is not None
        log = Path(out.run.log_path).read_text()
        assert "# fio: started; expected to take about 4 s" in log
        assert "# fio: 1 s elapsed of about 4 s" in log  # a line while fio is silent
        assert f"# data path: {data} on " in log and "# fio: ended after " in log
    finally:
        b.close()


async def test_a_cancel_in_the_sequential_phase_removes_the_test_file(state_dir, tmp_path, fio_binary):
    """Before, a cancel left the (4 GiB by default) test file behind, and nothing said so."""
    import signal
    import time

    from wizard import actions as act

    data = tmp_path / "data"
    data.mkdir()
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(data), storage_test_mib=16, storage_test_s=60, data_read_gb_s=0.001)
        prep = await b.prepare_action(local_host(), "node.storage_read")
        assert not prep.refusal, prep.refusal
        run = b.start_action(prep.step, prep.resolved)
        test_file = data / ".bringup-fio-read-test"
        deadline = time.monotonic() + 30
        while not (test_file.exists() and "# fio: started" in Path(run.log_path).read_text()):
            assert time.monotonic() < deadline, Path(run.log_path).read_text()
            time.sleep(0.1)
        time.sleep(1.0)  # fio is in its sequential job
        assert act.cancel(run, "boot-1", signal.SIGTERM)  # as the TUI's cancel does: the run's process group
        run = b.wait_action(run, timeout_s=30)
        log = Path(run.log_path).read_text()
        assert run.state is ActionState.CANCELLED, log
        assert not test_file.exists() and list(data.iterdir()) == [], log
        assert f"# removed {test_file}" in log or "could not remove" not in log
        assert not any(f.verdict is Verdict.FAIL for f in b.run_findings(run))
    finally:
        b.close()


async def test_a_read_only_or_file_data_path_is_refused_before_running(state_dir, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        b.store.set_plan(data_path=str(f))
        out = await b.run_action(local_host(), "node.storage_read", confirm=lambda p: pytest.fail("asked"))
        assert out.run is None and out.prepared.refusal_kind == "manual"
        assert "is not a directory" in out.prepared.refusal and "writable directory" in out.prepared.refusal
    finally:
        b.close()


def test_the_action_description_fits_one_80_column_line():
    """The first line users read in the confirmation (`bringup run`, the TUI dialog) is not cut mid-sentence."""
    spec = steps.step_by_id("node.storage_read").action
    assert spec is not None and spec.judges_exit
    assert len(spec.description) + 2 <= 80 and spec.description.endswith("."), spec.description
