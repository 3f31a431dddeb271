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
from wizard.engine import Build, local_host
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
        asked: list[list[str]] = []

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
