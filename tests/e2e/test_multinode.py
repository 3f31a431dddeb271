"""End to end: multinode (real inputs through the CLI or explain, as an operator runs them)."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
import steps
from wizard import actions as act
from wizard.actions import ActionContext
from wizard.engine import Build
from wizard.model import Verdict
from wizard.rules.multinode import judge_multinode, read_log, results_json

from tests.conftest import ROOT, bringup_cmd, env_for_cli, frozen_clock
from tests.sshd import _free_port

QUICK = ["--", "--quick", "--timeout", "20"]
"""The script's small sizes (8 B .. 1 MiB on CPU) and a 20 s collective timeout."""


@dataclass
class Run:
    rc: int
    out: str
    err: str
    seconds: float
    logins: dict | None = None

    def events(self, kind: str | None = None) -> list[dict]:
        out = []
        for line in self.out.splitlines():
            if line.startswith("BRINGUP "):
                d = json.loads(line[8:])
                if kind is None or d.get("event") == kind:
                    out.append(d)
        return out

    def findings(self, plan: dict | None = None):
        return judge_multinode(self.out, plan or {})

    def by_id(self, fid: str):
        return [f for f in self.findings() if f.id == fid]


@pytest.fixture(scope="session")
def node_python() -> str:
    """The nodes' Python: this test interpreter, which must import torch (CPU build)."""
    r = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.fail(f"{sys.executable} cannot import torch, which the multi-node tests run on every node: install "
                    f"the CPU wheel (`{sys.executable} -m pip install torch==2.13.0`).\n{r.stderr[-500:]}",
                    pytrace=False)
    return sys.executable


def launch(cluster, hostfile: str, *args: str, timeout: float = 300, tmp: Path) -> Run:
    hf = tmp / f"hostfile-{time.monotonic_ns()}"
    hf.write_text(hostfile)
    argv = [sys.executable, "-m", "wizard.multinode", "--hostfile", str(hf), "--ssh-config", str(cluster.ssh_config),
            "--device", "cpu", "--port", str(_free_port("127.0.0.2")), "--connect-timeout", "5", *args]
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env_for_cli(), timeout=timeout)
    return Run(r.returncode, r.stdout, r.stderr, time.monotonic() - t0)


def wrapper(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def procs_with(marker: str) -> list[str]:
    """Command lines of live processes that contain ``marker`` (the "nodes" are this machine)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if marker in cmd and "pytest" not in cmd:
                found.append(f"{d}: {cmd[:200]}")
    return found


@pytest.fixture(scope="module")
def two_nodes(ssh_cluster, node_python, tmp_path_factory):
    hostfile = f"# two loopback nodes\nn1 node1 2 python={node_python}\nn2 node2 2 python={node_python}\n"

    def logins() -> dict[str, int]:
        return {n.name: n.log.read_text().count("Accepted publickey") for n in ssh_cluster.nodes}

    before = logins()
    r = launch(ssh_cluster, hostfile, *QUICK, tmp=tmp_path_factory.mktemp("two"))
    after = logins()
    r.logins = {k: after[k] - before[k] for k in after}
    return r


def test_two_node_allreduce_completes_through_ssh_and_judges_pass(two_nodes):
    r = two_nodes
    assert r.rc == 0, r.err[-2000:]
    end = [g for g in r.events("group") if g["state"] == "end"]
    assert len(end) == 1 and end[0]["group"] == "all" and end[0]["rc"] == {"n1": 0, "n2": 0}
    fs = r.findings()
    verdicts = {f.id: f.verdict for f in fs}
    assert verdicts == {"multinode.nodes": Verdict.PASS, "multinode.consistency": Verdict.PASS,
                        "multinode.transport": Verdict.SKIP, "multinode.allreduce": Verdict.PASS}, fs
    ar = r.by_id("multinode.allreduce")[0]
    assert "2 nodes (n1, n2), 4 ranks" in ar.message and "#wrong 0 at all" in ar.message
    assert "busbw = algbw x 2(n-1)/n" in ar.message and "x 2x3/4" in ar.message
    assert "gloo" in r.by_id("multinode.transport")[0].message


def test_every_rank_ran_on_its_node_and_lines_carry_the_node(two_nodes, ssh_cluster):
    ml = read_log(two_nodes.out)
    g = ml.group("all")
    assert g is not None and g.end is not None
    ranks = g.rank_nodes()
    assert sorted(ranks) == [0, 1, 2, 3]
    assert sorted(ranks.values()) == ["n1", "n1", "n2", "n2"]
    # every node reached over its own sshd: copy, facts, launch and clean-up are four logins each; none to node3
    assert two_nodes.logins == {"node1": 4, "node2": 4, "node3": 0}
    # the per-run directory is removed from the nodes afterwards
    run_id = two_nodes.events("hosts")[0]["run_id"]
    assert not list(Path("/tmp").glob(f"bringup-validate-{run_id}*"))
    res = results_json(two_nodes.out, {})
    assert res["results"][0]["verdict"] == "skip" and res["results"][0]["value"] > 0
    assert res["series"]["points"][0][0] == 8 and res["series"]["floor_gb_s"] is None


@pytest.fixture(scope="module")
def with_bad_nodes(ssh_cluster, node_python, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    bare = tmp / "bare-venv"  # a real Python without torch (no site packages)
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(bare)
    hostfile = (f"n1 node1 1 python={node_python}\nn2 node2 1 python={node_python}\n"
                f"n3 node3 1 python={bare}/bin/python\ndown dead 1\n")
    return launch(ssh_cluster, hostfile, *QUICK, tmp=tmp), f"{bare}/bin/python"


def test_unreachable_node_is_named_fail_and_the_others_complete(with_bad_nodes, ssh_cluster):
    r, _ = with_bad_nodes
    assert r.rc == 0, r.err[-2000:]
    unreach = [e for e in r.events("error") if e.get("kind") == "unreachable"]
    assert len(unreach) == 1 and unreach[0]["node"] == "down"
    assert "Connection refused" in unreach[0]["message"] and ssh_cluster.dead.addr in unreach[0]["message"]
    nodes = {f.subject: f for f in r.by_id("multinode.nodes")}
    assert nodes["down"].verdict is Verdict.FAIL and "ssh to dead failed" in nodes["down"].message
    assert "ssh dead true" in nodes["down"].remedy
    ar = r.by_id("multinode.allreduce")
    assert [f.verdict for f in ar] == [Verdict.PASS]
    assert "2 nodes (n1, n2)" in ar[0].message and "left out: n3 (torch missing), down (unreachable)" in ar[0].message
    start = [g for g in r.events("group") if g["state"] == "start"][0]
    assert start["nodes"] == ["n1", "n2"]


def test_a_facts_run_that_reaches_no_node_exits_1_not_0(ssh_cluster, tmp_path):
    """Walk 27 #12: a facts-only run whose every node was unreachable ended "exit status 0" over no node read."""
    r = launch(ssh_cluster, "down dead 1\n", "--facts-only", tmp=tmp_path)
    assert r.rc == 1, r.err[-2000:]
    assert [e["node"] for e in r.events("error") if e.get("kind") == "unreachable"] == ["down"]
    assert [e["rc"] for e in r.events("end")] == [1]


def test_torch_missing_on_a_node_is_named_with_the_remedy(with_bad_nodes):
    r, bare = with_bad_nodes
    nodes = {f.subject: f for f in r.by_id("multinode.nodes")}
    f = nodes["n3"]
    assert f.verdict is Verdict.FAIL and f"PyTorch is missing on n3 in {bare}" in f.message
    assert "No module named 'torch'" in f.message
    assert bare in f.remedy and "pip install torch" in f.remedy
    # walk 34 #11: the launcher's own sentences, stored in English, read in Chinese on a Chinese screen (finding and
    # the action log's line); the node name, the path and Python's own error as they are
    from wizard import i18n
    from wizard.validate import event_line

    (ev,) = [e for e in r.events("error") if e.get("kind") == "torch_missing"]
    assert ev["message"] == str(f.message) and ev["message_msg"]["parts"][0][0] == "PyTorch is missing on {name} in {python}"
    line = next(ln for ln in r.out.splitlines() if '"torch_missing"' in ln and "BRINGUP" in ln)
    i18n.set_language("zh_CN")
    try:
        msg, remedy, shown = i18n.tr(f.message), i18n.tr(f.remedy), event_line(line)
    finally:
        i18n.set_language("en")
    assert msg.startswith(f"n3 上的 {bare} 中没有 PyTorch") and "No module named 'torch'" in msg, msg
    assert remedy.startswith("在 n3 上、hostfile 指定的 Python") and "pip install torch" in remedy, remedy
    assert shown is not None and f"n3 上的 {bare} 中没有 PyTorch" in shown and "is missing" not in shown, shown
    # its facts still arrived (the script runs without torch) and are kept out of the comparison
    assert "n3" in read_log(r.out).facts
    cons = r.by_id("multinode.consistency")
    assert [c.verdict for c in cons] == [Verdict.PASS] and "(n1, n2)" in cons[0].message


def _other_python(node_python: str) -> str:
    """A different Python release with the same ABI as the test interpreter (imports the same torch wheel)."""
    mine = subprocess.run([node_python, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True,
                          text=True).stdout.split()
    cands = ["/usr/bin/python3", f"/usr/bin/python{mine[0]}.{mine[1]}", "/usr/local/bin/python3",
             *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{mine[0]}.{mine[1]}.*/bin/python3")))]
    for cand in cands:
        if not os.path.exists(cand) or os.path.realpath(cand) == os.path.realpath(node_python):
            continue
        v = subprocess.run([cand, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True,
                           text=True).stdout.split()
        if v[:2] == mine[:2] and v != mine:
            return cand
    pytest.fail(f"no other Python {mine[0]}.{mine[1]}.x than {node_python} on this machine: the odd-node test needs "
                "one (Debian's python3 package provides /usr/bin/python3)", pytrace=False)


@pytest.fixture(scope="module")
def three_pairwise(ssh_cluster, node_python, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pairs")
    site = subprocess.run([node_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    odd = wrapper(tmp / "odd-python", f'PYTHONPATH={site} GLOO_SOCKET_IFNAME=bogus0 exec {_other_python(node_python)} '
                                     '"$@"')
    hostfile = f"n1 node1 1 python={node_python}\nn2 node2 1 python={node_python}\nn3 node3 1 python={odd}\n"
    return launch(ssh_cluster, hostfile, "--pairwise-only", "--fail-grace", "2", "--kill-grace", "2", *QUICK,
                  tmp=tmp)


def test_pairwise_on_three_nodes_names_the_bad_node(three_pairwise):
    r = three_pairwise
    assert r.rc == 0, r.err[-2000:]
    groups = [g for g in r.events("group") if g["state"] == "end"]
    assert sorted(g["group"] for g in groups) == ["pair:n1,n2", "pair:n1,n3", "pair:n2,n3"]
    assert {g["group"]: g["rc"] for g in groups}["pair:n1,n2"] == {"n1": 0, "n2": 0}
    pw = r.by_id("multinode.pairwise")
    assert len(pw) == 1 and pw[0].verdict is Verdict.FAIL and pw[0].subject == "n3"
    assert pw[0].message.startswith("n3 is the bad node: all 2 of its pairs failed")
    assert "n1-n2 passed" in pw[0].message and "bogus0" in pw[0].message
    assert not r.by_id("multinode.allreduce")  # --pairwise-only: no all-nodes job


def test_facts_consistency_names_the_odd_node(three_pairwise):
    cons = three_pairwise.by_id("multinode.consistency")
    assert [c.verdict for c in cons] == [Verdict.WARN]
    assert cons[0].subject == "n3" and cons[0].message.startswith("Python differs on n3: n3 has 3.")
    assert "2 of 3 nodes (n1, n2) have" in cons[0].message


def test_node_that_never_joins_the_rendezvous_is_named(ssh_cluster, node_python, tmp_path):
    marker = f"{200 + os.getpid() % 1000}.5"
    stuck = wrapper(tmp_path / "stuck-python", f'if [ "$1" = "-m" ] && [ "$2" = "torch.distributed.run" ]; then '
                                               f'sleep {marker}; fi\nexec {node_python} "$@"')
    hostfile = f"n1 node1 1 python={node_python}\nn2 node2 1 python={stuck}\n"
    r = launch(ssh_cluster, hostfile, "--rdzv-timeout", "5", "--fail-grace", "2", "--kill-grace", "2", *QUICK,
               tmp=tmp_path)
    assert r.rc == 0, r.err[-2000:]
    ar = r.by_id("multinode.allreduce")
    assert [f.verdict for f in ar] == [Verdict.FAIL] and ar[0].subject == "n2"
    assert "n2 never completed the rendezvous" in ar[0].message
    from wizard import i18n

    i18n.set_language("zh_CN")
    try:
        zh = i18n.tr(ar[0].message)
    finally:
        i18n.set_language("en")
    assert "n2 在组 all 中始终没有完成 rendezvous" in zh and "never completed" not in zh, zh
    assert not procs_with(f"sleep {marker}"), "the stuck node's process was left running"


def test_hung_rank_is_named_with_its_node(ssh_cluster, node_python, tmp_path):
    hostfile = f"n1 node1 1 python={node_python}\nn2 node2 1 python={node_python}\n"
    r = launch(ssh_cluster, hostfile, "--fail-grace", "2", "--kill-grace", "2", "--env", "BRINGUP_TEST_HANG_RANK=1",
               "--env", "BRINGUP_TEST_HANG_PHASE=allreduce", "--", "--quick", "--timeout", "4", tmp=tmp_path)
    assert r.rc == 0, r.err[-2000:]
    hung = read_log(r.out).group("all").rank_nodes()[1]
    ar = r.by_id("multinode.allreduce")
    assert [f.verdict for f in ar] == [Verdict.FAIL]
    assert ar[0].subject == hung and f"rank(s) 1 on {hung} did not reach phase 'allreduce'" in ar[0].message


def test_sigterm_stops_the_run_and_every_remote_process(ssh_cluster, node_python, tmp_path):
    marker = f"{1200 + os.getpid() % 1000}.5"
    stuck = wrapper(tmp_path / "stuck-python", f'if [ "$1" = "-m" ] && [ "$2" = "torch.distributed.run" ]; then '
                                               f'sleep {marker}; fi\nexec {node_python} "$@"')
    hf = tmp_path / "hostfile"
    hf.write_text(f"n1 node1 1 python={node_python}\nn2 node2 1 python={stuck}\n")
    argv = [sys.executable, "-m", "wizard.multinode", "--hostfile", str(hf), "--ssh-config",
            str(ssh_cluster.ssh_config), "--device", "cpu", "--port", str(_free_port("127.0.0.2")), "--kill-grace", "2",
            *QUICK]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                         env=env_for_cli(), start_new_session=True)
    out = []
    assert p.stdout is not None
    for line in p.stdout:
        out.append(line)
        if '"event":"group"' in line:
            break
    deadline = time.monotonic() + 15.0  # ssh to node2 and its wrapper take a while on a loaded machine
    while not procs_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert procs_with(f"sleep {marker}"), "the stuck node's torchrun should be waiting"
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    rest, _ = p.communicate(timeout=60)
    out.append(rest)
    assert p.returncode == 143 and time.monotonic() - t0 < 20
    end = [json.loads(ln[8:]) for ln in "".join(out).splitlines() if ln.startswith("BRINGUP ") and '"end"' in ln
           and '"source":"launcher"' in ln]
    assert end and end[-1]["rc"] == 143
    deadline = time.monotonic() + 10
    while procs_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not procs_with(f"sleep {marker}")
    # a stopped run leaves no per-run directory on the nodes (they are 127.0.0.x here: this machine's /tmp)
    run_id = next(json.loads(ln[8:])["run_id"] for ln in "".join(out).splitlines()
                  if ln.startswith("BRINGUP ") and '"event":"hosts"' in ln)
    assert not list(Path("/tmp").glob(f"bringup-validate-{run_id}-*"))


def test_consistency_step_runs_detached_and_records_findings(ssh_cluster, node_python, state_dir, tmp_path):
    hf = tmp_path / "hostfile"
    hf.write_text(f"n1 node1 1 python={node_python}\nn2 node2 1 python={node_python}\nn3 node3 1 "
                  f"python={node_python}\n")
    b = Build.open(state_dir, steps.STAGES, {"hostname": "head", "boot_id": "boot-mn"}, create=True,
                   clock=frozen_clock)
    try:
        step = steps.step_by_id("multinode.consistency")
        assert step.action is not None and not step.manual
        # the plan as given (Build.plan() keeps only keys wizard/plan.py knows)
        ctx = ActionContext({}, {"hostfile": str(hf), "ssh_config": str(ssh_cluster.ssh_config),
                                 "validate_device": "cpu"}, str(tmp_path / "backups"))
        resolved = step.action.resolve(ctx)
        assert not resolved.manual, resolved.manual
        argv = resolved.ops[0]["argv"]
        assert argv[1:3] == ["-m", "wizard.multinode"] and "--facts-only" in argv
        run = b.start_action(step, resolved)
        assert os.getpgid(run.pid) != os.getpgid(0)  # detached: its own session
        done = b.wait_action(run, timeout_s=120)
        assert done.state == act.ActionState.SUCCEEDED, Path(done.log_path).read_text()[-3000:]
        _, findings = b.store.latest_check(step.id)
        assert {(f.id, f.verdict) for f in findings} == {("multinode.nodes", Verdict.PASS),
                                                         ("multinode.consistency", Verdict.PASS)}
        assert "3 nodes (n1, n2, n3) match" in next(f for f in findings if f.id == "multinode.consistency").message
        assert '"event":"group"' not in Path(done.log_path).read_text()  # facts only: no torchrun
    finally:
        b.close()


def test_steps_without_a_usable_hostfile_say_what_to_do(tmp_path):
    step = steps.step_by_id("multinode.allreduce")
    ctx = ActionContext({}, {"validate_device": "cpu"}, str(tmp_path))
    assert "bringup plan hostfile=" in step.action.resolve(ctx).manual
    bad = tmp_path / "hosts"
    bad.write_text("a host-a\n")
    ctx = ActionContext({}, {"validate_device": "cpu", "hostfile": str(bad)}, str(tmp_path))
    assert "line 1: expected 'name ssh_target gpus'" in step.action.resolve(ctx).manual
    one = tmp_path / "one"
    one.write_text("a host-a 8\n")
    ctx = ActionContext({}, {"validate_device": "cpu", "hostfile": str(one)}, str(tmp_path))
    assert "at least 2" in step.action.resolve(ctx).manual


def _validate(state, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bringup_cmd("validate", "nodes", "--state", str(state), *args), capture_output=True,
                          text=True, cwd=ROOT, env=env_for_cli(), timeout=timeout)


def test_validate_nodes_json_on_two_loopback_nodes(ssh_cluster, state_dir, tmp_path):
    hf = tmp_path / "hostfile"
    hf.write_text(f"n1 node1 1 python={sys.executable}\nn2 node2 1 python={sys.executable}\n")
    r = _validate(state_dir, "--hostfile", str(hf), "--ssh-config", str(ssh_cluster.ssh_config), "--device", "cpu",
                  "--quick", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["step"] == "multinode.allreduce" and doc["verdict"] == "pass"
    got = {f["id"]: f["verdict"] for f in doc["findings"]}
    assert got == {"multinode.nodes": "pass", "multinode.consistency": "pass", "multinode.transport": "skip",
                   "multinode.allreduce": "pass"}
    assert doc["run"]["argv"][0][1:3] == ["-m", "wizard.multinode"]
    assert doc["results"][0]["subject"] == "2 nodes" and doc["series"]["points"][-1][0] == 1 << 20
    assert "[n1]" in r.stderr and "all-reduce 1 MiB" in r.stderr  # live progress, on stderr with --json


def test_validate_nodes_bad_or_missing_hostfile_is_a_clear_error(state_dir, tmp_path):
    bad = tmp_path / "hosts"
    bad.write_text("gpu1 gpu1 8\ngpu2 gpu2 eight\n")
    r = _validate(state_dir, "--hostfile", str(bad), "--device", "cpu", timeout=60)
    assert r.returncode == 3
    assert "line 2: gpus must be a whole number, got 'eight'" in r.stderr
    r = _validate(state_dir, "--device", "cpu", timeout=60)
    assert r.returncode == 3 and "bringup plan hostfile=" in r.stderr
