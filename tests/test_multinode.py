"""Tests of wizard/multinode.py."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from wizard.model import Verdict
from wizard.multinode import (
    mpirun_allreduce_argv,
    nccl_tests_present,
    round_robin,
    sbcast_argv,
    slurm_present,
    srun_argv,
    torchrun_argv,
)
from wizard.rules.multinode import judge_multinode

from tests.conftest import ROOT, env_for_cli


def test_launcher_with_bad_hostfile_exits_3_with_a_judged_error(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("a host-a 8\nb host-b\n")
    r = subprocess.run([sys.executable, "-m", "wizard.multinode", "--hostfile", str(hf)], capture_output=True,
                       text=True, cwd=ROOT, env=env_for_cli(), timeout=60)
    assert r.returncode == 3
    assert "line 2: expected 'name ssh_target gpus'" in r.stderr
    fs = judge_multinode(r.stdout, {})
    assert [(f.id, f.verdict) for f in fs] == [("multinode.nodes", Verdict.FAIL)]
    assert "line 2" in fs[0].message and fs[0].remedy
    from wizard import i18n

    i18n.set_language("zh_CN")
    try:
        msg, remedy = i18n.tr(fs[0].message), i18n.tr(fs[0].remedy)
    finally:
        i18n.set_language("en")
    assert msg.startswith(f"hostfile {hf}：") and "line 2" not in msg, msg  # the problem itself in Chinese too
    assert remedy.startswith("修改所列的行"), remedy


def test_torchrun_argv_uses_c10d_rendezvous():
    argv = torchrun_argv("/opt/py", "/tmp/x/bringup_validate.py", 4, 8, "10.0.0.1:29400", "run1", "cuda", True, 120,
                         "10.0.0.2", ["--quick"])
    assert argv[:3] == ["/opt/py", "-m", "torch.distributed.run"]
    assert "--nnodes=4" in argv and "--nproc_per_node=8" in argv and "--rdzv_backend=c10d" in argv
    assert "--rdzv_endpoint=10.0.0.1:29400" in argv and "--rdzv_id=run1" in argv
    assert "--rdzv_conf=is_host=1,join_timeout=120" in argv and "--local-addr=10.0.0.2" in argv
    assert argv[-5:] == ["/tmp/x/bringup_validate.py", "node", "--device", "cuda", "--quick"]
    other = torchrun_argv("py", "s.py", 2, 1, "h:1", "r", "cpu", False)
    assert any(a.startswith("--rdzv_conf=is_host=0,") for a in other)
    assert not any(a.startswith("--local-addr") for a in other)


def test_srun_sbcast_and_mpirun_argv():
    argv = srun_argv(["gpu1", "gpu2"], "/opt/py", "/tmp/b.py", 8, "gpu1:29400", "r1", "cuda", {"NCCL_DEBUG": "INFO"})
    assert argv[:8] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=gpu1,gpu2", "--label",
                        "--kill-on-bad-exit=1", "--export=ALL,NCCL_DEBUG=INFO"]
    assert "--rdzv_endpoint=gpu1:29400" in argv and argv[-4:] == ["node", "--device", "cuda"][:0] + argv[-4:]
    assert sbcast_argv("/a", "/tmp/b") == ["sbcast", "--force", "/a", "/tmp/b"]
    m = mpirun_allreduce_argv([("root@gpu1", 8), ("gpu2", 8)], {"NCCL_DEBUG": "INFO"}, ssh_config="/c")
    assert m[:6] == ["mpirun", "--allow-run-as-root", "-np", "16", "-H", "gpu1:8,gpu2:8"]
    assert ["-x", "NCCL_DEBUG=INFO"] == m[m.index("-x"):m.index("-x") + 2]
    assert "plm_rsh_agent" in m and "ssh -F /c" in m
    assert m[-11:] == ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1", "-c", "1"]


def _exe(d: Path, name: str) -> None:
    p = d / name
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


def test_srun_and_mpirun_are_chosen_only_when_present(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not slurm_present({"SLURM_JOB_ID": "42"})  # no srun on PATH
    assert nccl_tests_present() == (False, "mpirun, all_reduce_perf")
    _exe(tmp_path, "srun")
    _exe(tmp_path, "mpirun")
    assert slurm_present({"SLURM_JOB_ID": "42"})
    assert not slurm_present({})  # srun installed but no allocation
    assert nccl_tests_present() == (False, "all_reduce_perf")
    _exe(tmp_path, "all_reduce_perf")
    assert nccl_tests_present() == (True, "")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_round_robin_runs_every_pair_once_in_disjoint_rounds(n):
    names = [f"n{i}" for i in range(n)]
    rounds = round_robin(names)
    pairs = [p for r in rounds for p in r]
    assert len(pairs) == n * (n - 1) // 2 == len(set(pairs))
    assert all(names.index(a) < names.index(b) for a, b in pairs)
    for r in rounds:
        used = [x for p in r for x in p]
        assert len(used) == len(set(used))  # no node twice in a round
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert round_robin(["only"]) == []


def test_home_relative_python_paths_reach_the_remote_home():
    from wizard.multinode import _home_relative

    # ssh quotes every word (no ~ expansion) and starts remote commands in the home directory
    assert _home_relative("~/venv/bin/python") == "venv/bin/python"
    assert _home_relative("/opt/venv/bin/python") == "/opt/venv/bin/python"
    assert _home_relative("python3") == "python3"


# ---------------------------------------------------------------- what runs on the nodes (issue 11 #9)

def test_the_copy_makes_a_fresh_private_directory_and_never_uses_one_already_there(tmp_path):
    """The script went to ``mkdir -p /tmp/bringup-validate-<run>-<node>``: a guessable name, and a directory
    someone else made there first was used. Now ``mktemp -d`` makes a new one (the node runs this same argv)."""
    import os

    from wizard.multinode import copy_argv, workdir_template

    planted = tmp_path / "bringup-validate-RUN1-n1"  # the old name, made first by another user
    planted.mkdir()
    planted.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(planted, 65534, 65534)
    template = workdir_template(str(tmp_path), "RUN1", "n 1/x")
    assert template == f"{tmp_path}/bringup-validate-RUN1-n_1_x.XXXXXXXXXX"
    dirs = []
    for _ in range(2):
        r = subprocess.run(copy_argv(template), input=b"print('validate')\n", capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        d = Path(r.stdout.decode().strip())
        assert d.parent == tmp_path and d.name.startswith("bringup-validate-RUN1-n_1_x.") and d != planted
        st = d.stat()
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
        assert (d / "bringup_validate.py").read_bytes() == b"print('validate')\n"
        dirs.append(d)
    assert dirs[0] != dirs[1] and list(planted.iterdir()) == []
    bad = subprocess.run(copy_argv(str(tmp_path / "missing" / "x.XXXXXXXXXX")), input=b"x", capture_output=True,
                         timeout=30)
    assert bad.returncode != 0 and bad.stdout == b""


def test_the_confirmation_lists_every_command_run_on_each_node(tmp_path):
    """Issue 11 #9: `validate nodes` showed `python -m wizard.multinode ...` but not the ssh copy-and-run it does
    on each node."""
    import steps
    from wizard.actions import ActionContext
    from wizard.multinode import WATCHER

    hf = tmp_path / "hosts"
    hf.write_text("n1 node1 2 python=/opt/venv/bin/python\nn2 root@10.0.0.2 4\n")
    spec = steps.step_by_id("multinode.allreduce").action
    shown = spec.resolve(ActionContext({}, {"hostfile": str(hf), "validate_device": "cuda",
                                            "ssh_config": "/etc/ssh/site"}, "/b")).describe()
    assert shown[0].startswith("$ ") and "-m wizard.multinode --hostfile" in shown[0]
    text = "\n".join(shown)
    for name, target, py, nproc, head in (("n1", "node1", "/opt/venv/bin/python", 2, 1),
                                          ("n2", "root@10.0.0.2", "python3", 4, 0)):
        ssh = f"$ ssh -F /etc/ssh/site -o BatchMode=yes -o ConnectTimeout=10 {target} -- "
        at = shown.index(f"    on {name}, over ssh ({target}):")
        copy, facts, job, clean = shown[at + 1:at + 5]
        assert copy.startswith("      " + ssh + "env LC_ALL=C LANG=C sh -c 'umask 077 && d=$(mktemp -d \"$1\")")
        assert copy.endswith(f"sh /tmp/bringup-validate-RUN-{name}.XXXXXXXXXX < {ROOT}/assets/scripts/bringup_validate.py")
        assert facts == f"      {ssh}env LC_ALL=C LANG=C {py} DIR/bringup_validate.py facts"
        assert job.startswith(f"      {ssh}{py} -c '$WATCHER' ") and f"--nproc_per_node={nproc}" in job
        assert f"--rdzv_conf=is_host={head}," in job and "--rdzv_endpoint=HEAD:29400" in job
        assert job.endswith("DIR/bringup_validate.py node --device cuda")
        assert clean == f"      {ssh}env LC_ALL=C LANG=C rm -rf -- DIR"
    assert WATCHER not in text  # named, not pasted (it is in wizard/multinode.py)
    assert "mpirun --allow-run-as-root -np 6 -H node1:2,10.0.0.2:4" in text
    facts_only = steps.step_by_id("multinode.consistency").action.resolve(
        ActionContext({}, {"hostfile": str(hf)}, "/b")).describe()
    assert not any("torch.distributed.run" in ln for ln in facts_only) and any(" facts" in ln for ln in facts_only)


def test_too_few_nodes_is_said_in_the_readers_language_and_stored_in_english(tmp_path):
    """Walk 28 #14 A: with every node unreachable, "only 0 node(s) can take part (none); a multi-node all-reduce
    needs at least 2; left out: ..." and its remedy "Fix the nodes named above ..." stayed English on a Chinese
    screen. The log keeps the English (and the fields it is said again from); the CLI's line and the finding are
    shown in Chinese, the node names as they are."""
    import json

    from wizard import i18n
    from wizard.validate import event_line

    hf = tmp_path / "hosts"
    hf.write_text("n1 nosuchhost.invalid 8\nn2 nosuchhost2.invalid 8\n")
    r = subprocess.run([sys.executable, "-m", "wizard.multinode", "--hostfile", str(hf)], capture_output=True,
                       text=True, cwd=ROOT, env=env_for_cli(), timeout=120)
    line = next(ln for ln in r.stdout.splitlines() if '"too_few_nodes"' in ln)
    e = json.loads(line.split("BRINGUP ", 1)[1])
    assert e["message"] == ("only 0 node(s) can take part (none); a multi-node all-reduce needs at least 2; "
                            "left out: n1 (unreachable); n2 (unreachable)")
    assert e["remedy"] == "Fix the nodes named above (reachable over ssh, Python with torch), then rerun."
    f = next(x for x in judge_multinode(r.stdout, {}) if x.id == "multinode.allreduce")
    assert str(f.message).endswith(e["message"]) and f.remedy == e["remedy"]
    i18n.set_language("zh_CN")
    try:
        shown, msg, remedy = event_line(line), i18n.tr(f.message), i18n.tr(f.remedy)
    finally:
        i18n.set_language("en")
    want = "只有 0 个节点能参加（无）；多节点 all-reduce 至少需要 2 个；未参加：n1（无法连接）；n2（无法连接）"
    assert shown == "多节点运行出错：节点太少：" + want, shown
    assert msg.endswith(want) and "only" not in msg, msg
    assert remedy.startswith("修好上面列出的节点"), remedy
