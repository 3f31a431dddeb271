"""wizard/rdma_pairs.py and the multinode.rdma_pairs step: ib_write_bw between neighbouring nodes over ssh.

Real sshd "nodes" on 127.0.0.x (tests/sshd.py), each with its own PATH (sshd's ``SetEnv``): on nodes 1-3 a stand-in
``ib_write_bw`` that prints a REAL captured ib_write_bw run (microsoft/superbenchmark's 8 MiB loopback log, server and
client of one HDR port in one file: no capture of the two sides apart is in tests/data, so both roles print the whole
file, as tests/install/test_perftest.py does); node 4 has no ib_write_bw at all. The stand-in's server waits for its
client (a marker file the client makes) the way a real server does, so the order of the run is tested. The nodes'
ports come from a real H100 node's sysfs listing (4X NDR, 400 Gb/s) through ``--sysfs-root``, or from the plan's
``rdma_device`` (a name no real machine has, so its rate is unknown and the plan's ``nic_gbit_s`` is used).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import steps
from wizard.actions import ActionContext
from wizard.model import Verdict
from wizard.parsers.fabric import parse_perftest, parse_rdma_pairs
from wizard.rdma_pairs import ring
from wizard.rules.fabric import RDMA_PAIRS_ID, judge_rdma_pairs, rdma_pairs_results

from tests.conftest import ROOT, env_for_cli, frozen_clock
from tests.fabric_data import FABRIC, sysfs_tree
from tests.probe_data import PUBLIC

CAPTURE = PUBLIC / "perftest__ib-write-bw-loopback-8m.txt"  # real: 24056.72 MB/sec average on an HDR (200 Gb/s) port
H100_SYSFS = FABRIC / "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt"  # real: mlx5_0 port 1 400 Gb/sec NDR
UBUNTU_OS = "ID=ubuntu\nVERSION_ID=\"22.04\"\n"


def _fake_perftest(d: Path) -> Path:
    """A directory with an ``ib_write_bw`` that prints the real capture; as a server (no address last) it then waits
    for its client's marker file (at most 30 s), as a client (an IPv4 address last) it makes it."""
    d.mkdir(parents=True)
    mark = d / "client-ran"
    exe = d / "ib_write_bw"
    exe.write_text(
        "#!/bin/sh\n# test stand-in: prints a real captured ib_write_bw run\n"
        'last=""; for a in "$@"; do last="$a"; done\n'
        f'case "$last" in *.*.*.*) cat "{CAPTURE}"; : > "{mark}"; exit 0 ;; esac\n'
        f'cat "{CAPTURE}"\n'
        f'i=0; while [ ! -e "{mark}" ]; do i=$((i+1)); [ "$i" -gt 300 ] && exit 1; sleep 0.1; done\n'
        f'rm -f "{mark}"; exit 0\n')
    exe.chmod(0o755)
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """node1-node3 with the stand-in first on PATH, node4 without ib_write_bw, plus ``dead``."""
    from tests.sshd import SshdUnavailable, ensure_openssh, start_cluster

    tmp = tmp_path_factory.mktemp("rdma-pairs")
    fake = _fake_perftest(tmp / "bin")
    path = f"PATH={fake}:/usr/local/bin:/usr/bin:/bin"
    try:
        ensure_openssh()
        c = start_cluster(tmp / "sshd", 4, {n: [f"SetEnv {path}"] for n in ("node1", "node2", "node3")})
    except SshdUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    c.fake_bin = fake  # type: ignore[attr-defined]
    try:
        yield c
    finally:
        c.stop()


def _hostfile(tmp: Path, *targets: str) -> Path:
    hf = tmp / "hostfile"
    hf.write_text("".join(f"n{i + 1} {t} 8\n" for i, t in enumerate(targets)))
    return hf


def _run(cluster, hf: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wizard.rdma_pairs", "--hostfile", str(hf), "--ssh-config",
                           str(cluster.ssh_config), "--seconds", "1", *extra], capture_output=True, text=True,
                          cwd=ROOT, env=env_for_cli(), timeout=timeout)


def _stand_ins_running(fake_bin: Path) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(fake_bin) in a for a in p.info["cmdline"] or ()):
                out.append(p.pid)
        except (psutil.Error, TypeError):
            continue
    return out


def test_the_ring_makes_every_node_a_client_once_and_a_server_once():
    pairs = ring(["a", "b", "c", "d"])
    assert pairs == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    assert sorted(c for c, _ in pairs) == sorted(s for _, s in pairs) == ["a", "b", "c", "d"]
    assert ring(["a", "b"]) == [("a", "b"), ("b", "a")] and ring(["a"]) == []


def test_three_nodes_with_real_ndr_sysfs_run_every_pair_and_fail_below_the_ndr_rate(cluster, tmp_path):
    """The ports come from a real H100 node's sysfs (mlx5_0 port 1, 400 Gb/s NDR, IB first); the real capture's
    24056.72 MB/sec (about 200 Gb/s) is below 0.8 x 400: every pair fails, each named, the slowest named, the table filled."""
    root = sysfs_tree(tmp_path / "root", H100_SYSFS.read_text())
    hf = _hostfile(tmp_path, "node1", "node2", "node3")
    r = _run(cluster, hf, "--sysfs-root", str(root))
    assert r.returncode == 0, r.stdout + r.stderr
    log = r.stdout
    for a, b in (("n1", "n2"), ("n2", "n3"), ("n3", "n1")):
        assert f"# pair {a} -> {b}: mlx5_0 port 1 -> mlx5_0 port 1, line rate 400 Gb/s" in log
        assert f"# pair {a} -> {b} done: client exit status 0, server exit status 0" in log
        assert f"[{a} client]                     RDMA_Write BW Test" in log and f"[{b} server] " in log
    assert "-d mlx5_0 -i 1 -s 8388608 -D 1 --report_gbits -F" in log  # the ssh command lines are in the log
    pairs = parse_rdma_pairs(log)
    assert [(p.client, p.server, p.line_rate_gbit_s, p.done) for p in pairs] == [
        ("n1", "n2", 400.0, True), ("n2", "n3", 400.0, True), ("n3", "n1", 400.0, True)]
    fs = judge_rdma_pairs(log, {})
    per_pair = [f for f in fs if " -> " in f.subject]
    assert [(f.subject, f.verdict) for f in per_pair] == [("n1 -> n2", Verdict.FAIL), ("n2 -> n3", Verdict.FAIL),
                                                         ("n3 -> n1", Verdict.FAIL)]
    gbit = parse_perftest(CAPTURE.read_text()).rows[-1][1]  # the capture's 24056.72 MB/sec, as the parser reads it
    assert gbit < 320 and f"{gbit:.1f} Gb/s" in per_pair[0].message and "below 320 Gb/s" in per_pair[0].message
    assert per_pair[0].measured is not None and per_pair[0].measured.threshold == 320
    slowest = [f for f in fs if f.message.startswith("slowest of 3 pairs")]
    assert len(slowest) == 1 and slowest[0].verdict is Verdict.FAIL
    assert not [f for f in fs if "in two failing pairs" in f.message]  # every node is: none is named
    rows = rdma_pairs_results(log, {})["results"]
    assert [(x["subject"], x["value"], x["floor"], x["verdict"]) for x in rows] == [
        (p, round(gbit, 2), 320.0, "fail") for p in ("n1 -> n2", "n2 -> n3", "n3 -> n1")]


async def test_a_run_through_build_run_action_shows_every_ssh_command_and_stores_the_pairs(cluster, state_dir,
                                                                                        tmp_path, monkeypatch):
    """End to end: the resolver (hostfile, ssh config, the plan's rdma_device and nic_gbit_s), the confirmation's
    ssh command lines, the supervisor running the module for real, the judge's findings and results stored."""
    from wizard.engine import Build
    from wizard.hosts import LocalHost
    from wizard.model import StepStatus
    from wizard.store import ActionState

    monkeypatch.setenv("PATH", f"{cluster.fake_bin}:{__import__('os').environ.get('PATH', '')}")
    hf = _hostfile(tmp_path, "node1", "node2")
    plan = {"hostfile": str(hf), "ssh_config": str(cluster.ssh_config), "rdma_device": "hca_test0:1",
            "nic_gbit_s": 200.0}
    shown: list[str] = []
    b = Build.open(state_dir, steps.STAGES, {"hostname": "head", "boot_id": "boot-rdma"}, create=True,
                   clock=frozen_clock)
    try:
        async def yes(prep):
            shown.extend(prep.resolved.describe())
            return True

        out = await b.run_action(LocalHost(), "multinode.rdma_pairs", plan, confirm=yes, poll_s=0.05,
                                 check_after=False)
        assert out.run is not None and out.run.state is ActionState.SUCCEEDED, (out.error, out.prepared.refusal)
        text = "\n".join(shown)
        assert "-m wizard.rdma_pairs --hostfile" in shown[0] and "--device hca_test0:1" in shown[0]
        assert text.count("BatchMode=yes") == 2 + 2 * 2  # the ports of 2 nodes, then server + client of 2 pairs
        assert "-d hca_test0 -i 1 -s 8388608 -D 5 --report_gbits -F ADDR" in text
        fs = [(f.id, f.subject, f.verdict) for f in out.findings]
        assert fs == [(RDMA_PAIRS_ID, "n1 -> n2", Verdict.PASS), (RDMA_PAIRS_ID, "n2 -> n1", Verdict.PASS),
                      (RDMA_PAIRS_ID, "ring", Verdict.PASS)]
        assert "the plan's 200 Gb/s per NIC" in out.findings[0].message
        assert b.status("multinode.rdma_pairs") is StepStatus.PASSED
        stored = b.store.action_runs("multinode.rdma_pairs")[-1]
        assert [r["subject"] for r in stored.results["results"]] == ["n1 -> n2", "n2 -> n1"]
    finally:
        b.close()


def test_refusals_say_why_no_hostfile_one_node_bad_hostfile_no_perftest(tmp_path, monkeypatch, cluster):
    step = steps.step_by_id("multinode.rdma_pairs")
    assert step.action is not None

    def manual(plan):
        return step.action.resolve(ActionContext({}, plan, str(tmp_path))).manual

    monkeypatch.setenv("PATH", f"{cluster.fake_bin}:/usr/bin:/bin")
    assert "bringup plan hostfile=" in manual({})
    one = tmp_path / "one"
    one.write_text("a host-a 8\n")
    assert "lists 1 node; an RDMA test between nodes needs at least 2" in manual({"hostfile": str(one)})
    bad = tmp_path / "bad"
    bad.write_text("a host-a\n")
    assert "line 1: expected 'name ssh_target gpus'" in manual({"hostfile": str(bad)})
    two = _hostfile(tmp_path, "node1", "node2")
    assert manual({"hostfile": str(two)}) == ""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    m = manual({"hostfile": str(two)})
    assert "ib_write_bw (perftest) is not installed on this node" in m and "`perftest`" in m


def test_an_unreachable_node_fails_its_two_pairs_with_ssh_words_and_exit_1(cluster, tmp_path):
    hf = _hostfile(tmp_path, "node1", "dead")
    r = _run(cluster, hf, "--device", "mlx5_0:1", "--connect-timeout", "3")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "# pair n1 -> n2 failed: ssh to dead failed:" in r.stdout
    assert "# rdma_pairs: 2 pairs, 2 failed" in r.stdout
    fs = judge_rdma_pairs(r.stdout, {})
    assert [(f.subject, f.verdict) for f in fs] == [("n1 -> n2", Verdict.FAIL), ("n2 -> n1", Verdict.FAIL)]
    assert all("did not run" in f.message and "ssh" in f.message for f in fs)
    assert "ssh NODE true" in fs[0].remedy


def test_a_client_without_perftest_stops_the_waiting_server(cluster, tmp_path):
    """node4 has no ib_write_bw: as the server its pair fails before a client starts; as the client (writing to
    node1, whose stand-in server waits up to 30 s for a client) it fails with 127 and node1's server is stopped at
    once, not left waiting."""
    hf = _hostfile(tmp_path, "node1", "node4")
    t0 = time.monotonic()
    r = _run(cluster, hf, "--device", "mlx5_0:1", "--start-wait", "3")
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, r.stdout + r.stderr
    assert "# pair n1 -> n2 failed: the perftest server on n2 exited (status 127) before the client started: " \
           "ib_write_bw (perftest) is not installed there" in r.stdout
    assert "# pair n2 -> n1 failed: the perftest client on n2: ib_write_bw (perftest) is not installed there" \
           in r.stdout
    assert elapsed < 25  # the stand-in server would have waited 30 s
    deadline = time.monotonic() + 10
    while _stand_ins_running(cluster.fake_bin) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _stand_ins_running(cluster.fake_bin)
    fs = judge_rdma_pairs(r.stdout, {})
    assert [f.verdict for f in fs] == [Verdict.FAIL, Verdict.FAIL]
    assert all("perftest" in f.message for f in fs) and "Install perftest" in fs[1].remedy


def test_bad_options_exit_3_with_the_reason(tmp_path):
    hf = _hostfile(tmp_path, "a", "b")
    r = subprocess.run([sys.executable, "-m", "wizard.rdma_pairs", "--hostfile", str(hf), "--device", "mlx5 0"],
                       capture_output=True, text=True, cwd=ROOT, env=env_for_cli(), timeout=60)
    assert r.returncode == 3 and "--device takes DEV or DEV:PORT" in r.stderr
    fs = judge_rdma_pairs(r.stdout, {})
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "could not start" in fs[0].message
