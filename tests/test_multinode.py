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
