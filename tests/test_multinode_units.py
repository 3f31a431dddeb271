"""Multi-node pieces without ssh: the hostfile, the launcher's argv builders and choices, and the judges on
edited copies of real logs."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, env_for_cli
from wizard.rules.multinode import judge_multinode, read_log
from wizard.model import Verdict
from wizard.multinode import (HostfileError, hostfile_nodes, mpirun_allreduce_argv, nccl_tests_present, read_hostfile,
                              round_robin, sbcast_argv, slurm_present, srun_argv, torchrun_argv)
from wizard.parsers.hostfile import Hostfile, NodeSpec, parse_hostfile

# ------------------------------------------------------------------------------------------ hostfile


def test_hostfile_native_and_mpi_forms_with_comments():
    text = """# rack 1
    gpu1  admin@10.0.0.11  8  python=/opt/venv/bin/python addr=10.0.0.11   # head
    gpu2  gpu2-ib          8

    gpu3 slots=4 python=/usr/bin/python3
    gpu4
    """
    hf = parse_hostfile(text)
    assert hf.ok and hf.problems == ()
    assert list(hf.nodes) == [
        NodeSpec("gpu1", "admin@10.0.0.11", 8, "/opt/venv/bin/python", "10.0.0.11", 2),
        NodeSpec("gpu2", "gpu2-ib", 8, None, None, 3),
        NodeSpec("gpu3", "gpu3", 4, "/usr/bin/python3", None, 5),
        NodeSpec("gpu4", "gpu4", None, None, None, 6),
    ]
    assert hostfile_nodes(text) == list(hf.nodes)  # the launcher takes them as they are
    assert parse_hostfile("root@n1 slots=2\n").nodes[0] == NodeSpec("n1", "root@n1", 2, None, None, 1)


def test_hostfile_errors_name_every_line_and_problem():
    text = "\n".join([
        "a host-a 8",            # 1 fine
        "b host-b eight",        # 2 gpus not a number
        "c host-c",              # 3 gpus missing
        "a host-d 8",            # 4 duplicate name
        "e host-a 8",            # 5 duplicate target
        "f host-f 8 colour=red",  # 6 unknown key
        "g host-g 0",            # 7 out of range
        "h slots=x",             # 8 bad slots
        "i host-i 8 python=",    # 9 empty value
        "j host-j 8 extra word",  # 10 too many words
        "k[1] host-k 8",         # 11 bad name (it prefixes log lines)
        "l host-l 2 slots=2",    # 12 slots in the native form
        "python=/x m host-m 8",  # 13 key before the positional words
    ])
    hf = parse_hostfile(text, "hosts.txt")  # the parser never raises: it names what it could not read
    assert not hf.ok and [n.name for n in hf.nodes] == ["a"]
    with pytest.raises(HostfileError) as ei:  # the launcher refuses the file whole, naming every problem
        hostfile_nodes(text, "hosts.txt")
    probs = ei.value.problems
    assert probs == list(hf.problems)
    expect = {2: "gpus must be a whole number", 3: "the GPU count is missing", 4: "already used on line 1",
              5: "already listed on line 1", 6: "unknown key 'colour'", 7: "from 1 to 64", 8: "slots must be a whole",
              9: "python= has no value", 10: "got 5 words", 11: "may hold only", 12: "slots= is for the MPI form",
              13: "must come after"}
    for line, what in expect.items():
        assert any(p.startswith(f"line {line}: ") and what in p for p in probs), (line, what, probs)
    assert not any(p.startswith("line 1:") for p in probs)
    assert str(ei.value).startswith("hosts.txt: line 2: ")


def test_hostfile_refuses_host_port_and_option_like_targets():
    text = "\n".join([
        "a admin@host-a:2222 8",      # 1 host:port: ssh takes no port there
        "b host-b:22 8",              # 2 the same without a user
        "c ssh://admin@host-c:2222 8",  # 3 fine: ssh's URI form
        "d fe80::1 8",                # 4 fine: an IPv6 literal (several colons)
        "e [2001:db8::1] 8",          # 5 fine: bracketed IPv6
        "f -oProxyCommand=x 8",       # 6 would be read as an ssh option (it holds '=': a key=value item)
        "g -host-g 8",                # 7 target starts with '-'
        "-h host-h 8",                # 8 name starts with '-'
        "host-i:22 slots=2",          # 9 MPI form with host:port
    ])
    probs = list(parse_hostfile(text).problems)
    with pytest.raises(HostfileError):
        hostfile_nodes(text)
    for line in (1, 2, 9):
        assert any(p.startswith(f"line {line}: ") and "looks like host:port" in p and "ssh://host:port" in p
                   and "Host alias in your ssh config" in p for p in probs), (line, probs)
    assert any(p.startswith("line 7: ssh target '-host-g' starts with '-'") for p in probs), probs
    assert any(p.startswith("line 8: node name '-h' starts with '-'") for p in probs), probs
    assert any(p.startswith("line 6: ") for p in probs), probs
    assert not any(p.startswith(("line 3:", "line 4:", "line 5:")) for p in probs), probs
    nodes = hostfile_nodes("c ssh://admin@host-c:2222 8\nd fe80::1 8\ne [2001:db8::1] 8\n")
    assert [n.target for n in nodes] == ["ssh://admin@host-c:2222", "fe80::1", "[2001:db8::1]"]


def test_hostfile_empty_and_unreadable(tmp_path):
    assert parse_hostfile("# nothing\n\n   \n") == Hostfile("hostfile", (), ("no nodes (every line is blank or a comment)",))
    with pytest.raises(HostfileError, match="no nodes"):
        hostfile_nodes("# nothing\n\n   \n")
    with pytest.raises(HostfileError, match="cannot read it"):
        read_hostfile("/nonexistent/hostfile")
    bad = tmp_path / "hosts"
    bad.write_text("a host-a 8\nb host-b\n")
    with pytest.raises(HostfileError) as ei:
        read_hostfile(bad)
    assert ei.value.source == str(bad) and ei.value.problems[0].startswith("line 2: ")


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


# ------------------------------------------------------------------------------------------ argv builders


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


# ------------------------------------------------------------------------------------------ judges on edited logs


def _facts(node: str, **over) -> str:
    d = {"v": 1, "event": "facts", "t": 1.0, "rank": 0, "node": node, "hostname": node, "kernel": "6.8.0-60",
         "os": "Ubuntu 24.04", "python": "3.12.3", "torch": "2.7.1+cu128", "torch_cuda": "12.8", "nccl": "2.26.2",
         "driver": "570.148.08", "gpu_count": 8, "gpu_models": ["NVIDIA H100 80GB HBM3"] * 8,
         "vbios": ["96.00.99.00.01"] * 8, "gpu_uuids": [f"GPU-{node}-{i}" for i in range(8)]}
    d.update(over)
    return f"[{node}] BRINGUP " + json.dumps(d, separators=(",", ":"))


def _log(*lines: str, device: str = "cuda") -> str:
    hosts = {"v": 1, "event": "hosts", "t": 0.0, "source": "launcher", "device": device, "run_id": "r",
             "nodes": [{"name": n, "target": n} for n in ("a", "b", "c")]}
    end = {"v": 1, "event": "end", "t": 9.0, "source": "launcher", "rc": 0}
    return "\n".join(["BRINGUP " + json.dumps(hosts), *lines, "BRINGUP " + json.dumps(end)])


def test_consistency_names_the_odd_node_by_majority():
    """synthetic_ edited facts: three GPU nodes, c with another driver and VBIOS (the loopback test can only
    make a node differ in its Python)."""
    text = _log(_facts("a"), _facts("b"), _facts("c", driver="550.54.15", vbios=["96.00.74.00.1C"] * 8))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
    bad = {f.message.split(" differs")[0]: f for f in fs if f.verdict is Verdict.FAIL}
    assert set(bad) == {"NVIDIA driver", "VBIOS"}
    d = bad["NVIDIA driver"]
    assert d.subject == "c" and "c has 550.54.15" in d.message and "2 of 3 nodes (a, b) have 570.148.08" in d.message
    assert "driver" in d.remedy and "nccl-tests/issues/200" in d.source and "catalogue" not in d.source
    assert "8x 96.00.74.00.1C" in bad["VBIOS"].message and "VBIOS" in bad["VBIOS"].remedy


def test_consistency_without_majority_lists_every_value_and_kernel_is_a_warning():
    text = _log(_facts("a", kernel="6.8.0-60"), _facts("b", kernel="6.8.0-49"))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
    assert [f.verdict for f in fs] == [Verdict.WARN]
    assert "no majority" in fs[0].message and "6.8.0-60 on a" in fs[0].message and "6.8.0-49 on b" in fs[0].message


def test_consistency_same_gpu_twice_and_gpu_count():
    text = _log(_facts("a"), _facts("b", gpu_uuids=[f"GPU-a-{i}" for i in range(8)]),
                _facts("c", gpu_count=7, gpu_models=["NVIDIA H100 80GB HBM3"] * 7, vbios=["96.00.99.00.01"] * 7,
                       gpu_uuids=[f"GPU-c-{i}" for i in range(7)]))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency" and f.verdict is Verdict.FAIL]
    msgs = " | ".join(f.message for f in fs)
    assert "GPU count differs on c: c has 7" in msgs
    assert "lists one machine twice" in msgs and any(f.subject == "a, b" for f in fs)


def test_consistency_leaves_out_facts_no_node_reported():
    """CPU-like nodes: no driver, CUDA, NCCL, GPU models or VBIOS anywhere: left out (said), the rest compared."""
    cpu = dict(driver=None, torch_cuda=None, nccl=None, gpu_count=0, gpu_models=[], vbios=[], gpu_uuids=[])
    text = _log(_facts("a", **cpu), _facts("b", **cpu), _facts("c", **cpu))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
    assert [f.verdict for f in fs] == [Verdict.PASS], [(f.verdict, f.message) for f in fs]
    assert "not reported by any node, left out: NVIDIA driver, CUDA (torch build), NCCL, GPU model, VBIOS" in fs[0].message
    assert "PyTorch 2.7.1+cu128" in fs[0].message


def test_consistency_names_a_fact_missing_on_some_nodes():
    text = _log(_facts("a"), _facts("b"), _facts("c", driver=None, vbios=[]))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN], [(f.verdict, f.message) for f in fs]
    assert fs[0].subject == "c" and fs[0].message.startswith("c did not report NVIDIA driver, VBIOS") and fs[0].remedy
    assert "differs" not in fs[0].message  # a missing fact is not a different one


def test_consistency_with_too_few_facts_is_unknown_not_pass():
    bare = dict(driver=None, torch_cuda=None, nccl=None, torch=None, gpu_count=None, gpu_models=[], vbios=[],
                os=None, python=None)
    text = _log(_facts("a", **bare), _facts("b", **bare), _facts("c", **{**bare, "os": "Ubuntu 24.04"}))
    fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN], [(f.verdict, f.message) for f in fs]
    msg = fs[0].message
    assert msg.startswith("facts incomplete on a, b: only 1 field(s) known on every node") and "a: OS" in msg
    assert "left out: NVIDIA driver" in msg and fs[0].remedy


def test_garbage_is_unknown_never_a_traceback():
    for text in ("", "random\nlines", "BRINGUP {not json", "[a] BRINGUP {\"event\": 3}", "\x00\xff" * 50):
        fs = judge_multinode(text, {})
        assert fs and all(f.verdict in (Verdict.UNKNOWN, Verdict.FAIL) for f in fs)
    ml = read_log("BRINGUP {bad\n[x] hello")
    assert ml.bad_lines and ml.node_lines == {"x": ["hello"]}


def test_pairwise_slow_pair_names_the_common_node():
    """synthetic_ edited pair results (GPU figures cannot be produced on the CPU test machines)."""
    lines = []
    bw = {("a", "b"): 180.0, ("a", "c"): 178.0, ("a", "d"): 120.0, ("b", "c"): 181.0, ("b", "d"): 118.0,
          ("c", "d"): 121.0}
    for (x, y), v in bw.items():
        g = f"pair:{x},{y}"
        lines.append("BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": g, "state": "start",
                                              "nodes": [x, y], "world_size": 16}))
        for r, n in enumerate((x, y)):
            lines.append(f"[{n}] BRINGUP " + json.dumps({"event": "start", "rank": r * 8, "test": "node"}))
        lines.append(f"[{x}] BRINGUP " + json.dumps({"event": "measure", "rank": 0, "test": "allreduce",
                                                     "metric": "busbw_gb_s", "value": v, "size_bytes": 4 << 30,
                                                     "algbw_gb_s": v / 1.875, "busbw_gb_s": v, "world_size": 16,
                                                     "wrong": 0}))
        for r in range(16):
            lines.append(f"[{x if r < 8 else y}] BRINGUP " + json.dumps({"event": "measure", "rank": r,
                                                                         "test": "sanity", "value": 1.0}))
        lines.append("BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": g, "state": "end",
                                              "nodes": [x, y], "rc": {x: 0, y: 0}}))
    fs = [f for f in judge_multinode(_log(*lines), {"nics_per_node": 8, "nic_gbit_s": 200}) if f.id ==
          "multinode.pairwise"]
    # median 149.5: the d pairs (118-121) are below 0.9 x = 134.6 (WARN) and the E4 floor 160 (FAIL)
    assert len(fs) == 1 and fs[0].verdict is Verdict.FAIL
    assert fs[0].subject == "d" and fs[0].message.startswith("d is slow: a-d 120.0 GB/s (80% of the median)")
    assert "median pair 149.5 GB/s" in fs[0].message and "0.8 x 8 NICs x 200 Gb/s / 8 = 160.0 GB/s" in fs[0].message
    # without a NIC floor only the median rule applies: 118/149.5 = 79% is above 0.75 x -> WARN
    fs2 = [f for f in judge_multinode(_log(*lines), {}) if f.id == "multinode.pairwise"]
    assert [f.verdict for f in fs2] == [Verdict.WARN] and fs2[0].subject == "d"


def test_allreduce_floor_arithmetic_from_the_nics():
    lines = ["BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": "all", "state": "start",
                                      "nodes": ["a", "b"], "world_size": 16}),
             "[a] BRINGUP " + json.dumps({"event": "measure", "rank": 0, "test": "allreduce", "size_bytes": 4 << 30,
                                          "algbw_gb_s": 100.0, "busbw_gb_s": 187.5, "world_size": 16, "wrong": 0})]
    lines += [f"[{'a' if r < 8 else 'b'}] BRINGUP " + json.dumps({"event": "measure", "rank": r, "test": "sanity"})
              for r in range(16)]
    lines.append("BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": "all", "state": "end",
                                          "nodes": ["a", "b"], "rc": {"a": 0, "b": 0}}))
    text = _log(*lines)
    f = next(f for f in judge_multinode(text, {"nics_per_node": 8, "nic_gbit_s": 400}) if f.id == "multinode.allreduce")
    assert f.verdict is Verdict.FAIL  # 187.5 < 0.8 x 8 x 400 / 8 = 320
    assert "busbw = algbw x 2(n-1)/n = 100.00 x 2x15/16 = 187.50 GB/s at 4 GiB" in f.message and "0.8 x 8 NICs x 400 Gb/s / 8 = 320.0 GB/s" in f.message
    f2 = next(f for f in judge_multinode(text, {}) if f.id == "multinode.allreduce")
    assert f2.verdict is Verdict.UNKNOWN and "nics_per_node" in f2.remedy
    f3 = next(f for f in judge_multinode(text, {"nics_per_node": 4, "nic_gbit_s": 400}) if f.id ==
              "multinode.allreduce")
    assert f3.verdict is Verdict.PASS and ">= floor" in f3.message


def test_home_relative_python_paths_reach_the_remote_home():
    from wizard.multinode import _home_relative

    # ssh quotes every word (no ~ expansion) and starts remote commands in the home directory
    assert _home_relative("~/venv/bin/python") == "venv/bin/python"
    assert _home_relative("/opt/venv/bin/python") == "/opt/venv/bin/python"
    assert _home_relative("python3") == "python3"


def test_transport_is_judged_per_node_from_its_own_nccl_lines():
    """A multi-node log assembled from captured NCCL_DEBUG=INFO output: node a's lines are a real 2-node H100
    run on NET/IB (tests/data/cases), node b's the docker0 socket case (tests/data/synthetic)."""
    data = Path(__file__).parent / "data"
    ib = (data / "cases" / "nccl-debug__2node-h100-net-ib-4hca-sharp-init-partial.txt").read_text().splitlines()
    sock = (data / "synthetic" / "synthetic_nccl-debug__socket-on-docker0.txt").read_text().splitlines()
    lines = ["BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": "all", "state": "start",
                                      "nodes": ["a", "b"], "world_size": 16})]
    lines += [f"[a] {ln}" for ln in ib] + [f"[b] {ln}" for ln in sock]
    lines.append("BRINGUP " + json.dumps({"event": "group", "source": "launcher", "group": "all", "state": "end",
                                          "nodes": ["a", "b"], "rc": {"a": 0, "b": 0}}))
    fs = {f.subject: f for f in judge_multinode(_log(*lines), {}) if f.id == "multinode.transport"}
    assert fs["a"].verdict is Verdict.PASS and "NET/IB" in fs["a"].message and fs["a"].message.startswith("a: ")
    assert fs["b"].verdict is Verdict.FAIL and "docker0" in fs["b"].message and "NCCL_SOCKET_IFNAME" in fs["b"].remedy
    assert all(ev.startswith("node0") for ev in fs["b"].evidence)  # the raw NCCL lines, prefix stripped
