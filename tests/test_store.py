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
    assert b2.resume_point().step.id == "bios.iommu"
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
    assert s.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    run = s.action_runs()[0]  # schema 3: an action run keeps its overrides, judged check and results
    assert run.state is ActionState.SUCCEEDED and run.state == "succeeded"
    assert run.overrides == {} and run.check_run is None and run.results == {}
    assert s.plan() == {"gpu_count": 8}
    meta, findings = s.latest_check("bios.cpu")
    assert findings[0].evidence == ("line",) and findings[0].key == ""
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
