"""wizard/install/perftest.py: the ib_write_bw loopback of node.rdma_bandwidth (resolver, and its script run for real
with a fake ib_write_bw that prints a real captured output)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from wizard.actions import ActionContext
from wizard.install import perftest
from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules.fabric_node import BANDWIDTH_ID, judge_rdma_loopback

from tests.fabric_data import FABRIC, fabric_outputs, sysfs_tree, tree_outputs
from tests.probe_data import PUBLIC

LOOPBACK = PUBLIC / "perftest__ib-write-bw-loopback-8m.txt"  # microsoft/superbenchmark, a real loopback run
UBUNTU = ProbeOutput(name="os_release", source="/etc/os-release", text='ID=ubuntu\nVERSION_ID="22.04"\n')


def _fake_bin(tmp: Path) -> Path:
    """A directory with an ``ib_write_bw`` that prints the real captured output (server and client alike)."""
    d = tmp / "bin"
    d.mkdir()
    exe = d / "ib_write_bw"
    exe.write_text(f"#!/bin/sh\ncat '{LOOPBACK}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return d


def _ctx(outputs: dict) -> ActionContext:
    return ActionContext({**outputs, "os_release": UBUNTU}, {}, "/tmp/backups")


def test_without_perftest_it_is_manual_naming_the_package_and_the_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    r = perftest.resolve_rdma_loopback(_ctx(tree_outputs(tmp_path / "t", "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt")))
    assert not r.ops and "`sudo apt-get install -y perftest`" in r.manual


def test_a_node_without_any_rdma_device_says_so_before_asking_to_install_perftest(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ib_write_bw either
    (tmp_path / "t/sys/class/infiniband").mkdir(parents=True)
    r = perftest.resolve_rdma_loopback(_ctx(fabric_outputs(tmp_path / "t")))
    assert not r.ops and "no RDMA device" in r.manual and "install" not in r.manual.split("perftest")[0]
    assert "apt-get install" not in r.manual


def test_infiniband_port_gets_the_documented_flags_and_the_rate_line_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path)))
    r = perftest.resolve_rdma_loopback(_ctx(tree_outputs(tmp_path / "t", "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt")))
    assert not r.manual and len(r.ops) == 2
    assert r.ops[0]["argv"] == ["sh", "-c", perftest.RATE_SH, "sh", "/sys/class/infiniband/mlx5_0/ports/1/rate",
                                "/sys/class/infiniband/mlx5_0/ports/1/state", "/sys/class/infiniband/mlx5_0/ports/1/link_layer"]
    argv = r.ops[1]["argv"]
    assert argv[:4] == ["sh", "-c", perftest.LOOPBACK_SH, "sh"] and argv[4].endswith("/ib_write_bw")
    assert argv[5:] == ["-d", "mlx5_0", "-i", "1", "-s", "8388608", "-D", "5", "--report_gbits", "-F"]
    assert any("127.0.0.1" in line for line in r.describe())


def test_roce_port_uses_its_ipv4_roce_v2_gid_and_no_active_port_is_manual(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path)))
    r = perftest.resolve_rdma_loopback(_ctx(tree_outputs(tmp_path / "t",
                                                         "synthetic_sysfs__roce-2x200-one-port-down-gids-netdevs.txt")))
    assert r.ops[1]["argv"][-2:] == ["-x", "3"] and "mlx5_0" in r.ops[1]["argv"]
    down = (FABRIC / "synthetic_sysfs__roce-2x200-one-port-down-gids-netdevs.txt").read_text().replace("4: ACTIVE", "1: DOWN")
    r2 = perftest.resolve_rdma_loopback(_ctx(fabric_outputs(sysfs_tree(tmp_path / "d", down))))
    assert not r2.ops and "no Active" in r2.manual


def test_the_loopback_script_runs_server_then_client_and_its_log_is_judged(tmp_path: Path) -> None:
    """LOOPBACK_SH run for real under sh with the fake ib_write_bw: both halves print, exit 0, the judge passes it."""
    exe = _fake_bin(tmp_path) / "ib_write_bw"
    p = subprocess.run(["sh", "-c", perftest.LOOPBACK_SH.replace("sleep 2", "sleep 0"), "sh", str(exe), "-d", "mlx5_0"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout.count("RDMA_Write BW Test") == 4  # the capture holds both sides, run twice
    f = judge_rdma_loopback(p.stdout, {})
    assert [x.verdict for x in f] == [Verdict.PASS] and f[0].id == BANDWIDTH_ID


def test_a_client_that_fails_stops_the_waiting_server_and_returns_its_status(tmp_path: Path) -> None:
    """A stand-in that prints nothing: as client (address 127.0.0.1) it exits 3, as server it waits."""
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "ib_write_bw"
    exe.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = 127.0.0.1 ] && exit 3; done\nexec sleep 30\n')
    exe.chmod(0o755)
    p = subprocess.run(["sh", "-c", perftest.LOOPBACK_SH.replace("sleep 2", "sleep 0"), "sh", str(exe)],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 3


async def test_a_real_run_through_build_run_action_is_judged_and_settles_the_step(state_dir, tmp_path, monkeypatch):
    """Build.run_action end to end: the probes read the real H100 sysfs tree (LocalHost(root=...)), the supervisor runs
    the two ops for real with the fake ib_write_bw (the real capture) first on PATH; this machine has no
    /sys/class/infiniband, so the rate op says it could not read it and the judge compares with the line rates."""
    import steps
    from wizard.engine import Build
    from wizard.hosts import LocalHost
    from wizard.model import StepStatus
    from wizard.store import ActionState

    from tests.conftest import frozen_clock

    monkeypatch.setenv("PATH", f"{_fake_bin(tmp_path)}:{os.environ.get('PATH', '')}")
    root = sysfs_tree(tmp_path / "root", (FABRIC / "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt").read_text())
    b = Build.open(state_dir, steps.STAGES, {"hostname": "node1", "boot_id": "boot-test"}, create=True, clock=frozen_clock)
    try:
        async def yes(_prep):
            return True

        out = await b.run_action(LocalHost(root=str(root)), "node.rdma_bandwidth", confirm=yes, poll_s=0.05,
                                 check_after=False)
        assert out.run is not None and out.run.state is ActionState.SUCCEEDED, out.error or out.prepared.refusal
        assert [(f.id, f.verdict) for f in out.findings] == [(BANDWIDTH_ID, Verdict.PASS)]
        assert "201.8 Gb/s" in out.findings[0].message and "HDR" in out.findings[0].message
        assert b.status("node.rdma_bandwidth") is StepStatus.PASSED
        # a later check (unknown: "not measured yet") never undoes what the run proved
        from wizard import probes
        from wizard.registry import probes_named
        from wizard.rules.fabric_node import bandwidth_pending

        outs = await probes.collect(LocalHost(root=str(root)), probes_named(("ib_sysfs",)))
        b.record_findings("node.rdma_bandwidth", bandwidth_pending(outs, {}), b.store.clock())
        assert b.status("node.rdma_bandwidth") is StepStatus.PASSED
    finally:
        b.close()


def test_a_node_without_rdma_devices_is_not_applicable_until_a_run_settles_it(state_dir, tmp_path):
    """No RDMA device and none planned: the check's skip says why and the step is skipped as not applicable (the
    report lists it apart from a person's skips); once a run settled it, a later check's skip changes nothing."""
    import steps
    from wizard.engine import Build
    from wizard.model import AUTO_SKIP_PREFIX, Finding, StepStatus
    from wizard.rules.fabric_node import bandwidth_pending

    from tests.conftest import frozen_clock

    b = Build.open(state_dir, steps.STAGES, {"hostname": "node1", "boot_id": "boot-test"}, create=True, clock=frozen_clock)
    try:
        f = bandwidth_pending(fabric_outputs(tmp_path), {})
        assert [x.verdict for x in f] == [Verdict.SKIP]
        b.record_findings("node.rdma_bandwidth", f, b.store.clock())
        st = b.store.step_states()["node.rdma_bandwidth"]
        assert st.status is StepStatus.SKIPPED and st.reason.startswith(AUTO_SKIP_PREFIX)
        b.record_findings("node.rdma_bandwidth", [Finding("node.rdma_bandwidth", Verdict.FAIL, "x")], b.store.clock(),
                          from_run=True)  # a run that failed
        b.record_findings("node.rdma_bandwidth", f, b.store.clock())
        assert b.status("node.rdma_bandwidth") is StepStatus.FAILED  # the check's skip does not undo the run
        b.record_findings("node.rdma_bandwidth", [], b.store.clock())
        assert b.status("node.rdma_bandwidth") is StepStatus.FAILED
    finally:
        b.close()
