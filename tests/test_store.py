"""The build store on real SQLite: reopen, refuse corrupt/newer files untouched, survive a killed writer."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import steps
from tests.conftest import ROOT, frozen_clock
from tests.faults import tmpfs_or_skip, wait_supervisors
from wizard.engine import Build
from wizard.model import Finding, StepStatus, Verdict
from wizard.store import SCHEMA_VERSION, ActionState, StateDirError, Store, StoreError, ensure_state_dir, list_builds


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_build(state_dir: Path) -> Build:
    return Build.open(state_dir, steps.STAGES, {"hostname": "node1", "boot_id": "boot-a"}, create=True,
                      clock=frozen_clock)


def test_create_write_reopen(state_dir):
    b = make_build(state_dir)
    b.store.set_plan(gpu_count=8, data_path="/raid")
    b.confirm("grounding.esd", "strap on")
    b.skip("driver.fabric_manager", "PCIe-only server")
    f = Finding("bios.iommu", Verdict.WARN, "IOMMU is translating DMA", "host", ("raw [line]",), "iommu=pt", "NCCL")
    b.record_findings("bios.iommu", [f], frozen_clock())
    b.set_cursor("bios.iommu")
    bid = b.info.build_id
    b.close()

    b2 = Build.open(state_dir, steps.STAGES, {"boot_id": "boot-a"})
    assert b2.info.build_id == bid
    assert b2.store.plan() == {"gpu_count": 8, "data_path": "/raid"}
    st = b2.store.step_states()
    assert st["grounding.esd"].status is StepStatus.CONFIRMED and st["grounding.esd"].user == "tester"
    assert st["driver.fabric_manager"].status is StepStatus.SKIPPED
    assert st["driver.fabric_manager"].reason == "PCIe-only server"
    assert st["bios.iommu"].status is StepStatus.WARNED and st["bios.iommu"].verdict is Verdict.WARN
    assert st["bios.iommu"].boot_id == "boot-a"
    meta, findings = b2.store.latest_check("bios.iommu")
    assert findings[0].evidence == ("raw [line]",) and meta["boot_id"] == "boot-a"
    assert b2.store.meta()["cursor_step"] == "bios.iommu"  # the place is kept; bios.iommu is done (warned), so
    assert b2.resume_point().step.id == "bios.pcie_acs"  # resuming goes on to the next open step after it
    assert b2.store.host()["hostname"] == "node1"
    b2.close()


def test_wal_and_schema_version(state_dir):
    b = make_build(state_dir)
    c = sqlite3.connect(b.info.db)
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    c.close()
    b.close()


def test_skip_needs_reason(state_dir):
    b = make_build(state_dir)
    with pytest.raises(ValueError):
        b.skip("bios.pcie", "   ")
    b.close()


def test_corrupt_file_is_refused_and_kept(state_dir):
    b = make_build(state_dir)
    db = b.info.db
    b.close()
    for ext in ("-wal", "-shm"):
        Path(str(db) + ext).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database\n" * 100)
    before = digest(db)
    with pytest.raises(StoreError) as e:
        Build.open(state_dir, steps.STAGES, {})
    assert str(db) in str(e.value) and "untouched" in str(e.value)
    assert digest(db) == before


def test_damaged_sqlite_page_is_refused_and_kept(state_dir):
    b = make_build(state_dir)
    for i in range(200):
        b.store.set_plan(**{f"k{i}": "x" * 200})
    db = b.info.db
    b.close()
    # checkpointed on close; overwrite the plan index's b-tree page with garbage, header kept valid
    c = sqlite3.connect(db)
    page = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_plan_1'").fetchone()[0]
    size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    data = bytearray(db.read_bytes())
    off = (page - 1) * size
    data[off + 100:off + size - 100] = os.urandom(size - 200)
    db.write_bytes(bytes(data))
    before = digest(db)
    with pytest.raises(StoreError):
        Store.open(db)
    assert digest(db) == before


def test_newer_schema_is_refused_and_kept(state_dir):
    b = make_build(state_dir)
    db = b.info.db
    b.close()
    c = sqlite3.connect(db)
    c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    c.commit()
    c.close()
    before = digest(db)
    with pytest.raises(StoreError) as e:
        Store.open(db)
    assert "newer" in str(e.value)
    assert digest(db) == before


def test_migration_from_empty_file(tmp_path):
    db = tmp_path / "b.db"
    s = Store.open(db, create=True)
    assert s.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "host", "plan", "step_state", "step_event", "check_run", "finding", "action_run"} <= tables
    s.close()


def test_second_instance_observes_read_only(state_dir):
    first = make_build(state_dir)
    first.confirm("grounding.esd")
    second = Build.open(state_dir, steps.STAGES, {})
    assert second.observing and not first.observing
    assert second.status("grounding.esd") is StepStatus.CONFIRMED
    assert "pid" in second.lock.holder
    with pytest.raises(StoreError):
        second.confirm("grounding.airflow")
    second.close()
    first.close()
    third = Build.open(state_dir, steps.STAGES, {})
    assert not third.observing
    third.close()


def test_unwritable_state_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StateDirError) as e:
        ensure_state_dir(blocker / "state")
    assert str(blocker) in str(e.value)
    with pytest.raises(StateDirError):
        ensure_state_dir(Path("/proc/bringup-state-test"))


WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from wizard.store import Store
    s = Store.open({db!r})
    s.set_plan(committed=1)
    c = s.conn
    c.execute("BEGIN IMMEDIATE")
    for i in range(5000):
        c.execute("INSERT INTO plan(key, value, updated_at) VALUES (?, ?, ?)", (f"uncommitted{{i}}", "1", "t"))
    print("ready", flush=True)
    time.sleep(60)
""")


def test_writer_killed_mid_transaction(state_dir):
    b = make_build(state_dir)
    db = b.info.db
    b.close()
    proc = subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(ROOT), db=str(db))],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    s = Store.open(db)
    plan = s.plan()
    assert plan.get("committed") == 1
    assert not any(k.startswith("uncommitted") for k in plan)
    assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    s.set_plan(after=True)  # still writable
    s.close()


def test_builds_listed_oldest_first(state_dir):
    a = Build.open(state_dir, steps.STAGES, {"hostname": "n"}, create=True, clock=lambda: "2026-01-01T00:00:00+00:00")
    a.close()
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n"}, create=True, clock=lambda: "2026-02-01T00:00:00+00:00")
    b.close()
    ids = [x.build_id for x in list_builds(state_dir)]
    assert ids == sorted(ids) and len(ids) == 2
    newest = Build.open(state_dir, steps.STAGES, {})
    assert newest.info.build_id == ids[-1]
    newest.close()


def test_migration_from_schema_1_keeps_the_data(tmp_path):
    """A build file written by the first release (schema 1) is upgraded in place, data kept."""
    from wizard import store as st

    db = tmp_path / "old.db"
    c = sqlite3.connect(db)
    for stmt in st._statements(st.MIGRATIONS[1]):
        c.execute(stmt)
    c.execute("PRAGMA user_version = 1")
    c.execute("INSERT INTO plan(key, value, updated_at) VALUES ('gpu_count', '8', 't')")
    c.execute("INSERT INTO check_run(step_id, verdict, boot_id, started_at, finished_at) VALUES ('bios.cpu', 'pass', 'b', 't', 't')")
    c.execute("INSERT INTO finding(check_run, step_id, finding_id, verdict, subject, message, evidence, remedy, source)"
              " VALUES (1, 'bios.cpu', 'bios.cpu', 'pass', 'host', 'ok', '[\"line\"]', '', '')")
    c.execute("INSERT INTO action_run(step_id, title, argv, user, state, log_path, status_path, boot_id, started_at)"
              " VALUES ('os.tools', 't', '[]', 'u', 'succeeded', 'l', 's', 'b', 't')")
    c.commit()
    c.close()
    s = Store.open(db)
    assert s.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    run = s.action_runs()[0]  # schema 3: an action run keeps its overrides, judged check and results
    assert run.state is ActionState.SUCCEEDED and run.state == "succeeded"
    assert run.overrides == {} and run.check_run is None and run.results == {}
    assert s.plan() == {"gpu_count": 8}
    meta, findings = s.latest_check("bios.cpu")
    assert findings[0].evidence == ("line",) and findings[0].key == ""
    assert findings[0].measured is None  # schema 4: a finding stored before measured values reads as none
    assert s.latest_plan_read("bios.cpu") is None  # schema 6: a check stored before plan reads says none
    s.add_ack("k1", "health.xid", "GPU 3 (0000:9b:00.0)", "Xid 79", "reseated on 2026-11-29, RMA case 123", "t", "b")
    assert s.acks()["k1"]["reason"] == "reseated on 2026-11-29, RMA case 123"
    with pytest.raises(ValueError):
        s.add_ack("k2", "health.xid", "GPU", "Xid", "  ", "t", "b")
    s.close()


def test_acknowledged_keys_reach_the_checks(state_dir):
    b = make_build(state_dir)
    f = Finding("health.xid", Verdict.FAIL, "Xid 79: GPU has fallen off the bus", "GPU (0000:9b:00.0)",
                ("NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.",), "power cycle", "Xid catalog",
                "health.xid", key="abc123")
    b.record_findings("health.gpu_pci", [f], frozen_clock())
    _, stored = b.store.latest_check("health.gpu_pci")
    assert stored[0].key == "abc123"
    b.acknowledge(stored[0], "old event from burn-in, GPU replaced")
    assert "abc123" in b.expectations()["acknowledged"]
    plain = Finding("bios.cpu", Verdict.PASS, "ok")
    with pytest.raises(ValueError):
        b.acknowledge(plain, "x")
    b.close()


def test_new_step_statuses_round_trip(state_dir):
    """warned and cpu-only are stored and read back like every status (the store keeps the value)."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.store.set_step("gpu.validate", StepStatus.CPU_ONLY, Verdict.PASS, reason="ran on the CPU")
    b.store.set_step("bios.iommu", StepStatus.WARNED, Verdict.WARN)
    b.close()
    b2 = Build.open(state_dir, steps.STAGES, {"boot_id": "b"})
    st = b2.store.step_states()
    assert st["gpu.validate"].status is StepStatus.CPU_ONLY and st["gpu.validate"].reason == "ran on the CPU"
    assert st["bios.iommu"].status is StepStatus.WARNED and st["bios.iommu"].verdict is Verdict.WARN
    b2.close()


# ---------------------------------------------------------------- issue 11: races, kills and full disks

def _bringup(state: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    from tests.conftest import bringup_cmd, env_for_cli

    return subprocess.run(bringup_cmd("--state", str(state), *args), env=env_for_cli(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_nested_transactions_commit_together_or_not_at_all(state_dir):
    """``store.tx()`` inside another is a savepoint: the outer one commits both, or rolls both back."""
    b = make_build(state_dir)
    s = b.store
    with pytest.raises(RuntimeError):
        with s.tx():
            s.set_plan(gpu_count=8)
            s.set_step("bios.iommu", StepStatus.PASSED)
            raise RuntimeError("killed halfway")
    assert "gpu_count" not in s.plan() and "bios.iommu" not in s.step_states()
    with s.tx():
        s.set_plan(gpu_count=8)
        with pytest.raises(ValueError):
            with s.tx():  # an inner failure undoes only the inner part
                s.set_step("bios.iommu", StepStatus.PASSED)
                raise ValueError("inner")
    assert s.plan()["gpu_count"] == 8 and "bios.iommu" not in s.step_states()
    b.close()


def test_commands_started_together_on_an_empty_state_dir_share_one_build(tmp_path):
    """Defect 8 of issue 11: two commands at once on an empty state dir failed 1-2 in 30 ("build file is empty",
    "older schema") and made two builds in 14 of 30, the older one's answer lost. The build is made atomically
    under a lock: every command succeeds, there is one build, and it holds every answer."""
    rounds, keys = 4, ("gpu_count=4", "data_path=/raid", "numa_nodes=2", "baseline_minutes=5")
    for r in range(rounds):
        state = tmp_path / f"s{r}"
        from tests.conftest import bringup_cmd, env_for_cli

        procs = [subprocess.Popen(bringup_cmd("--state", str(state), "plan", kv), env=env_for_cli(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for kv in keys]
        outs = [(p.wait(120), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        assert all(rc == 0 for rc, _ in outs), outs
        builds = list_builds(state)
        assert len(builds) == 1, [b.build_id for b in builds]
        assert [p.name for p in (state / "builds").iterdir()] == [builds[0].build_id]  # no leftover
        s = Store.open(builds[0].db, readonly=True)
        assert s.plan() == {"gpu_count": 4, "data_path": "/raid", "numa_nodes": 2, "baseline_minutes": 5.0}
        assert s.meta()["build_id"] == builds[0].build_id and s.host().get("boot_id")
        s.close()


def test_a_build_being_made_is_never_seen_half_made(state_dir):
    """What a killed creation leaves (``builds/.new-*``) is never listed as a build, and the next creation
    removes it under the creation lock."""
    (state_dir / "builds" / ".new-abc").mkdir(parents=True)
    (state_dir / "builds" / ".new-abc" / "build.db").write_bytes(b"")  # a creation killed before its schema
    assert list_builds(state_dir) == []
    b = Build.open_or_create(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, clock=frozen_clock)
    assert [p.name for p in (state_dir / "builds").iterdir()] == [b.info.build_id]
    assert b.store.meta()["build_id"] == b.info.build_id and not b.observing
    b.close()
    again = Build.open_or_create(state_dir, steps.STAGES, {"boot_id": "b"})
    assert again.info.build_id == b.info.build_id  # there is one now: opened, not made again
    again.close()


def _kill_sweep(tmp_path: Path, template: Path | None, args: tuple[str, ...], check) -> tuple[int, int]:
    """Run ``bringup --state S ARGS`` killed at each of its write syscalls (in program order, up to its last
    write that is not to stdout), each on a fresh copy of ``template`` (or an empty state dir), and call
    ``check(state, where)`` after each. Returns (write syscalls, kills)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from tests.conftest import bringup_cmd, env_for_cli
    from tests.faults import ToolUnavailable, kill_at, write_syscalls

    env = env_for_cli()

    def fresh(name: str) -> Path:
        state = tmp_path / name
        if template is not None:
            shutil.copytree(template, state)
        return state

    try:
        calls = write_syscalls(bringup_cmd("--state", str(fresh("dry")), *args), env)
    except ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    last = max(i for i, (name, _k) in enumerate(calls) if name != "write")
    points = calls[:last + 1]

    def one(i_point):
        i, (name, k) = i_point
        state = fresh(f"k{i:03d}")
        killed = kill_at(bringup_cmd("--state", str(state), *args), env, name, k).returncode in (137, -9)
        check(state, f"write syscall {i + 1} ({name} #{k}){' killed' if killed else ' not reached'}")
        shutil.rmtree(state, ignore_errors=True)
        return killed

    with ThreadPoolExecutor(max_workers=4) as pool:
        kills = sum(pool.map(one, enumerate(points)))
    assert kills >= len(points) - 2, (kills, len(points))  # (the count can shift by a write or two)
    return len(points), kills


def _intact(db: Path, where: str) -> None:
    s = Store.open(db)  # quick_check, schema, every table decodes; writable again (the lock was let go)
    try:
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", where
    finally:
        s.close()


def test_kill_at_every_write_of_plan_leaves_a_consistent_store(tmp_path):
    """Issue 11: ``bringup plan gpu_count=8`` on an empty state dir (the build is made too), killed at each of
    its write syscalls: at most one build, complete (schema, meta, host) or absent, never an empty or
    unmigrated file; the answer is there or not; the next command works."""
    def check(state: Path, where: str) -> None:
        builds = list_builds(state)
        assert len(builds) <= 1, where
        for info in builds:
            _intact(info.db, where)
            s = Store.open(info.db, readonly=True)
            assert s.meta().get("build_id") == info.build_id and s.host(), f"{where}: a build without its meta"
            assert s.plan().get("gpu_count") in (None, 8), where
            s.close()
        b = Build.open_or_create(state, steps.STAGES, {"boot_id": "b"})
        assert not b.observing, where
        b.store.set_plan(gpu_count=8)
        b.close()

    n, kills = _kill_sweep(tmp_path, None, ("plan", "gpu_count=8"), check)
    print(f"kill at every write of plan (new build): {n} write syscalls, {kills} kills, {n} consistent stores")


def test_kill_at_every_write_of_check_leaves_a_consistent_store(tmp_path):
    """Issue 11: ``bringup check`` on a build, killed at each of its write syscalls up to its last write to the
    store: the store is intact and writable again, and the check is recorded whole (a record for every checked
    step) or not at all."""
    template = tmp_path / "template"
    assert _bringup(template, "plan", "gpu_count=8").returncode == 0
    full = tmp_path / "full"
    import shutil

    shutil.copytree(template, full)
    assert _bringup(full, "check").returncode in (0, 1, 2)
    s = Store.open(list_builds(full)[0].db, readonly=True)
    n_steps = s.conn.execute("SELECT count(*) FROM check_run").fetchone()[0]
    s.close()
    assert n_steps > 10

    def check(state: Path, where: str) -> None:
        info = list_builds(state)[0]
        _intact(info.db, where)
        s = Store.open(info.db, readonly=True)
        recorded = s.conn.execute("SELECT count(*) FROM check_run").fetchone()[0]
        s.close()
        assert recorded in (0, n_steps), f"{where}: {recorded} of {n_steps} steps' checks recorded"

    n, kills = _kill_sweep(tmp_path, template, ("check",), check)
    print(f"kill at every write of check: {n} write syscalls, {kills} kills, {n} consistent stores")


# ---------------------------------------------------------------- private state (issue 11 #7, #10)

def _umask(mask: int):
    """Run a block under ``mask`` (the process umask; put back after)."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        old = os.umask(mask)
        try:
            yield
        finally:
            os.umask(old)
    return cm()


def _mode(p: Path) -> int:
    return os.lstat(p).st_mode & 0o777


def test_the_state_dir_is_made_private_under_umask_022(tmp_path):
    d = tmp_path / "a" / "state"
    with _umask(0o022):
        ensure_state_dir(d)
    assert _mode(d) == 0o700


@pytest.fixture
def searchable_tmp():
    """A temporary directory other users can reach (pytest's own are under a 0700 directory, so nothing in them
    is ever readable by another user): under the system's temporary directory, mode 0755, removed after."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="bringup-test-"))
    d.chmod(0o755)
    if not all(os.stat(p).st_mode & 0o001 for p in d.parents):
        shutil.rmtree(d)
        pytest.skip(f"{d.parent} is not searchable by other users (TMPDIR?)")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_loose_state_tree_is_tightened_and_only_what_others_could_read_is_said(searchable_tmp, tmp_path):
    from wizard.store import tighten_state_dir, tightened_note

    state = searchable_tmp / "state"
    with _umask(0o022):
        b = make_build(state)
        b.close()
        (b.info.path / "actions").mkdir()
        log = b.info.path / "actions" / "0001-x.log"
        log.write_text("dmesg lines\n")
        tool = b.info.path / "tool.sh"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        outside = tmp_path / "outside.txt"
        outside.write_text("not bringup's")
        outside.chmod(0o644)
        (b.info.path / "link").symlink_to(outside)
    for p in (state, state / "builds", b.info.path, b.info.path / "actions"):
        p.chmod(0o755)
    b.info.db.chmod(0o644)
    exposed = tighten_state_dir(state)
    assert {state, state / "builds", b.info.path, b.info.db, log, tool} <= set(exposed)
    assert "could be read by other users" in tightened_note(state, exposed) and str(len(exposed)) in \
        tightened_note(state, exposed)
    for dirpath, dirnames, filenames in os.walk(state):
        for name in dirnames:
            assert _mode(Path(dirpath) / name) == 0o700, name
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                assert _mode(p) & 0o077 == 0, name
    assert _mode(state) == 0o700 and _mode(tool) == 0o700  # the owner's bits are kept
    assert _mode(outside) == 0o644  # a link is not followed
    assert tighten_state_dir(state) == [] and tightened_note(state, []) == ""  # said once
    # a loose file nobody else could reach (its directory is private) is tightened without a word
    log.chmod(0o644)
    assert tighten_state_dir(state) == [] and _mode(log) == 0o600


def test_a_shared_directory_given_as_state_dir_is_left_as_it_is(tmp_path):
    from wizard.store import tighten_state_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    (shared / "someone-elses.txt").write_text("x")
    (shared / "someone-elses.txt").chmod(0o644)
    with _umask(0o022):
        make_build(shared).close()
    tighten_state_dir(shared)
    assert _mode(shared) == 0o755 and _mode(shared / "someone-elses.txt") == 0o644
    assert _mode(shared / "builds") == 0o700


def test_use_private_umask_keeps_the_operators_for_actions():
    code = ("import os\nos.umask(0o022)\nfrom wizard.store import use_private_umask, operator_umask\n"
            "old = use_private_umask()\nprint(oct(old), oct(os.umask(0o077)), os.environ['BRINGUP_OPERATOR_UMASK'], "
            "oct(operator_umask()))\n")
    env = {k: v for k, v in os.environ.items() if k != "BRINGUP_OPERATOR_UMASK"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.stdout.split() == ["0o22", "0o77", "022", "0o22"], r.stderr
    from wizard.store import operator_umask

    assert operator_umask({"BRINGUP_OPERATOR_UMASK": "banana"}) is None and operator_umask({}) is None


def test_an_unwritable_state_dir_never_tells_root_to_run_as_root(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", str(d)], check=True)  # even root gets EPERM
    else:
        d.chmod(0o500)
    try:
        with pytest.raises(StateDirError) as err:
            ensure_state_dir(d)
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(d)], check=True)
        else:
            d.chmod(0o700)
    msg = str(err.value)
    assert "not writable" in msg and str(d) in msg and "--state DIR" in msg
    assert ("run as root" in msg) is (not root), msg


@pytest.fixture
def tmpfs(tmp_path):
    """A real 2 MiB tmpfs (root only; skipped with the reason otherwise)."""
    yield from tmpfs_or_skip(tmp_path)


FULL_WORDS = "the disk holding the state directory"


def test_a_store_write_on_a_full_disk_says_so_and_rolls_back(tmpfs):
    """SQLite's "database or disk is full" becomes DiskFullError naming the state dir and the bytes free; the
    transaction is rolled back and the build is intact and writable once there is room."""
    from tests.faults import fill
    from wizard.store import DiskFullError

    state = tmpfs / "state"
    b = make_build(state)
    b.store.set_plan(gpu_count=8)
    filler = fill(tmpfs, 0)
    big = [Finding("bios.iommu", Verdict.WARN, "x" * 2000, "host", ("e" * 2000,) * 50, "r", "s")] * 20
    with pytest.raises(DiskFullError) as e:
        b.record_findings("bios.iommu", big, frozen_clock())
    assert FULL_WORDS in str(e.value) and f"({state})" in str(e.value) and "bytes free" in str(e.value)
    assert "Move it aside" not in str(e.value)
    assert b.store.latest_check("bios.iommu") == (None, []) and b.store.plan() == {"gpu_count": 8}
    filler.unlink()
    b.record_findings("bios.iommu", big[:1], frozen_clock())
    assert b.store.latest_check("bios.iommu")[1]
    b.close()
    _intact(list_builds(state)[0].db, "after the full disk")


def test_a_full_disk_is_said_plainly_at_every_write_point_and_loses_nothing(tmpfs):
    """Defect 6 of issue 11: with 0-8 KB free every command said the build "cannot be read as a database ...
    Move it aside", with 32-300 KB free "internal error: database or disk is full". At free space from 0 to
    512 KiB (the full disk hits each command at a different write): ``status`` and ``check`` still read the
    build (read-only, saying why), writers refuse with "the disk holding the state directory (PATH) is full:
    N bytes free", nothing says "move it aside", "internal error" or a traceback, and once space is freed the
    store is intact, its answers kept, a started run settled from its exit status."""
    from tests.faults import fill

    state = tmpfs / "state"
    assert _bringup(state, "plan", "gpu_count=8", "baseline_minutes=0.01").returncode == 0
    assert _bringup(state, "check").returncode in (0, 1, 2)
    said_full = 0
    for free in (0, 8 << 10, 32 << 10, 128 << 10, 300 << 10, 512 << 10):
        filler = fill(tmpfs, free)
        for args in (("status",), ("plan", "gpu_count=4"), ("check",), ("run", "health.idle_baseline", "--yes")):
            r = _bringup(state, *args)
            where = f"{' '.join(args)} with {free} bytes free: rc {r.returncode}: {r.stderr[-600:]}"
            assert "Traceback" not in r.stderr + r.stdout and "internal error" not in r.stderr, where
            assert "Move it aside" not in r.stderr and "run as root" not in r.stderr, where
            if args[0] in ("status", "check"):
                assert r.returncode in (0, 1, 2), where  # a reader still reads
            if r.returncode == 3:
                assert FULL_WORDS in r.stderr and "is full:" in r.stderr and "bytes free" in r.stderr, where
            said_full += FULL_WORDS in r.stderr
        filler.unlink()
        wait_supervisors(state)
        st = _bringup(state, "status", "--json")  # settles what ran, now that there is room
        assert st.returncode == 0, st.stderr
        import json

        doc = json.loads(st.stdout)
        assert doc["running_actions"] == [], doc["running_actions"]
        info = list_builds(state)
        assert len(info) == 1
        _intact(info[0].db, f"after {free} bytes free")
        s = Store.open(info[0].db, readonly=True)
        assert s.plan()["gpu_count"] in (4, 8) and s.plan()["baseline_minutes"] == 0.01
        for run in s.action_runs():
            status = run.status_path and Path(run.status_path).exists()
            assert run.state in ((ActionState.SUCCEEDED,) if status else
                                 (ActionState.FAILED, ActionState.INTERRUPTED)), (free, run)
        s.close()
    assert said_full >= 3  # the full disk was hit, and said


def test_a_findings_measured_value_round_trips_and_a_garbled_one_is_refused_at_open(state_dir):
    """A finding's measured value (value, threshold, unit, direction, label) is stored with it and read back equal;
    a finding without one reads back without one; a stored measured column that is not a measure is refused when
    the build is opened, the file left as it was."""
    from wizard.model import Finding, Measure

    b = make_build(state_dir)
    m = Measure(8.0, 16.0, "lanes", "at_least", "PCIe link width")
    fs = [Finding("health.pcie_width", Verdict.FAIL, "GPU 0: x8 of x16", "GPU 0", ("LnkSta: x8",), "reseat", "lspci(8)",
                  measured=m),
          Finding("health.pcie_speed", Verdict.PASS, "ok", "host", (), "", "lspci(8)")]
    run = b.store.record_check("health.pcie", fs, Verdict.FAIL, "boot", "t")
    got = b.store.findings_of_check(run)
    assert got[0].measured == m and got[0].measured.text() == "PCIe link width: 8 lanes, expected ≥ 16 lanes"
    assert got[1].measured is None and "measured" not in got[1].to_dict()
    path = b.store.path
    b.close()
    c = sqlite3.connect(path)
    c.execute("UPDATE finding SET measured = '{\"value\": \"x8\", \"unit\": \"lanes\", \"direction\": \"at_least\"}' "
              "WHERE finding_id = 'health.pcie_width'")
    c.commit()
    c.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="cannot read"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_findings_message_template_round_trips_so_a_screen_can_show_it_in_another_language(state_dir):
    """A finding whose message and remedy are built from templates (wizard.i18n.Msg) is stored with the English
    text (what JSON and the report read) and the template and arguments beside it: read back, it is a Msg again,
    equal to the English; a plain message stays plain; an i18n column that is not JSON, or whose template no longer
    formats to the stored English, falls back to the English text (nothing lost, nothing refused)."""
    from wizard.i18n import Msg
    from wizard.model import Finding

    b = make_build(state_dir)
    msg = Msg("GPU {index}: PCIe x{width} of x{cap}", index=3, width=8, cap=16)
    rem = Msg("reseat GPU {index}", index=3)
    joined = Msg("no headers for {rel}", rel="6.1") + "; other kernels: 6.0" + Msg(": DKMS cannot build")
    fs = [Finding("health.pcie_width", Verdict.FAIL, msg, "GPU 3", (), rem, "lspci(8)"),
          Finding("health.pcie_speed", Verdict.PASS, "ok", "host", (), "", "lspci(8)"),
          Finding("os.kernel_headers", Verdict.WARN, joined, "host", (), "", "dkms(8)")]
    run = b.store.record_check("health.pcie", fs, Verdict.FAIL, "boot", "t")
    got = b.store.findings_of_check(run)
    assert isinstance(got[2].message, Msg) and got[2].message == "no headers for 6.1; other kernels: 6.0: DKMS cannot build"
    assert got[2].message.parts == joined.parts  # a concatenated Msg keeps its pieces
    assert isinstance(got[0].message, Msg) and got[0].message == "GPU 3: PCIe x8 of x16"
    assert got[0].message.template == "GPU {index}: PCIe x{width} of x{cap}" and got[0].message.args["width"] == 8
    assert isinstance(got[0].remedy, Msg) and got[0].remedy == "reseat GPU 3"
    assert not isinstance(got[1].message, Msg) and got[1].message == "ok"
    assert got[0].to_dict()["message"] == "GPU 3: PCIe x8 of x16"  # the JSON contract: the English string
    path = b.store.path
    b.close()
    c = sqlite3.connect(path)
    c.execute("UPDATE finding SET i18n = '{\"message\": [\"GPU {index} is gone\", {\"index\": 3}], \"remedy\": 7}' "
              "WHERE finding_id = 'health.pcie_width'")
    c.execute("UPDATE finding SET i18n = 'not json' WHERE finding_id = 'health.pcie_speed'")
    c.commit()
    c.close()
    s = Store.open(path)
    got = s.findings_of_check(run)
    assert got[0].message == "GPU 3: PCIe x8 of x16" and not isinstance(got[0].message, Msg)
    assert got[0].remedy == "reseat GPU 3" and not isinstance(got[0].remedy, Msg)
    assert got[1].message == "ok"
    s.close()


def test_an_acknowledged_findings_message_is_listed_in_the_readers_language(state_dir):
    """Walk 28 #13: `bringup ack` listed the acknowledged Xid in English under LANG=zh_CN while `check` showed it in
    Chinese: the ack keeps the English; its message is the stored finding's Msg again, shown translated."""
    from wizard import i18n
    from wizard.i18n import Msg

    b = make_build(state_dir)
    msg = Msg("{gpu_name} has fallen off the bus (not responding on PCIe)", gpu_name="GPU (0000:18:00.0)")
    f = Finding("health.xid", Verdict.FAIL, msg, "GPU (0000:18:00.0)", ("NVRM: Xid (PCI:0000:18:00): 79",),
                "power cycle", "Xid catalog", "health.kernel_log", key="k79")
    b.record_findings("health.kernel_log", [f], frozen_clock())
    _, stored = b.store.latest_check("health.kernel_log")
    b.acknowledge(stored[0], "GPU reseated")
    ack = b.store.acks()["k79"]
    assert ack["message"] == str(msg) and ack["reason"] == "GPU reseated"  # the English as stored
    i18n.set_language("zh_CN")
    try:
        shown = i18n.tr(ack["message"])
    finally:
        i18n.set_language("en")
    assert shown != str(msg) and "has fallen off the bus" not in shown and "GPU (0000:18:00.0)" in shown
    b.store.add_ack("k80", "health.xid", "GPU", "an English line no finding has", "why", "t", "b")
    assert b.store.acks()["k80"]["message"] == "an English line no finding has"
    b.close()
