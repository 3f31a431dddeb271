"""``bringup validate nodes``: the multi-node validation from the command line, on real sshd "nodes".

Needs the plan keys ``hostfile``, ``ssh_config`` and ``multinode_pairwise`` in wizard/plan.py (the CLI turns its
options into plan answers for the run)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, bringup_cmd, env_for_cli


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
