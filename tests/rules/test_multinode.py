"""Tests of wizard/rules/multinode.py."""

from __future__ import annotations

import json

from wizard.model import Verdict
from wizard.rules.multinode import judge_multinode, read_log
from tests.conftest import DATA


def _facts(node: str, **over) -> str:
    d = {"v": 1, "event": "facts", "t": 1.0, "rank": 0, "node": node, "hostname": node, "kernel": "6.8.0-60",
         "os": "Ubuntu 24.04", "python": "3.12.3", "torch": "2.7.1+cu128", "torch_cuda": "12.8", "nccl": "2.26.2",
         "driver": "570.148.08", "gpu_count": 8, "gpu_models": ["NVIDIA H100 80GB HBM3"] * 8,
         "vbios": ["96.00.99.00.01"] * 8, "gpu_uuids": [f"GPU-{node}-{i}" for i in range(8)]}
    d.update(over)
    return f"[{node}] BRINGUP " + json.dumps(d, separators=(",", ":"))


def _log(*lines: str, device: str = "cuda", gpus: int | None = None) -> str:
    hosts = {"v": 1, "event": "hosts", "t": 0.0, "source": "launcher", "device": device, "run_id": "r",
             "nodes": [{"name": n, "target": n, **({"gpus": gpus} if gpus else {})} for n in ("a", "b", "c")]}
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
    # walk 34 #11: the fact names and bringup's words around them in the reader's language, the values as they are
    from wizard import i18n

    i18n.set_language("zh_CN")
    try:
        zh = i18n.tr(fs[0].message)
    finally:
        i18n.set_language("en")
    assert "内核 6.8.0-60" in zh and "没有任何节点报告、因而未比较：NVIDIA 驱动，CUDA（torch 构建）" in zh, zh
    assert "kernel" not in zh and "left out" not in zh and "PyTorch 2.7.1+cu128" in zh, zh


def test_nodes_that_all_report_fewer_gpus_than_their_hostfile_lines_do_not_match():
    """Walk 34 #6: both nodes reported 0 GPUs where the hostfile said 8, and "2 nodes match: GPU count 0" passed. The
    hostfile's GPU column is compared on a GPU run: fewer fail. A CPU run uses no GPU (its step is cpu-only)."""
    cpu = dict(driver=None, torch_cuda=None, nccl=None, gpu_count=0, gpu_models=[], vbios=[], gpu_uuids=[])
    for device, verdict in (("cpu", Verdict.PASS), ("cuda", Verdict.FAIL)):
        text = _log(_facts("a", **cpu), _facts("b", **cpu), _facts("c", **cpu), device=device, gpus=8)
        fs = [f for f in judge_multinode(text, {}) if f.id == "multinode.consistency"]
        assert [f.verdict for f in fs] == [verdict], [(f.verdict, f.message) for f in fs]
    assert "a reports 0 GPU(s), its hostfile line 8" in fs[0].message
    text = _log(_facts("a"), _facts("b"), _facts("c"), gpus=8)  # 8 as said: the nodes match
    assert [f.verdict for f in judge_multinode(text, {}) if f.id == "multinode.consistency"] == [Verdict.PASS]


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


def test_transport_is_judged_per_node_from_its_own_nccl_lines():
    """A multi-node log assembled from captured NCCL_DEBUG=INFO output: node a's lines are a real 2-node H100
    run on NET/IB (tests/data/cases), node b's the docker0 socket case (tests/data/synthetic)."""
    data = DATA
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


def test_evidence_is_the_events_words_not_the_protocol_record():
    """Walk 25 #11: an unreachable node's finding showed `BRINGUP {"v":1,"event":"error",...}` (the remedy inside it,
    in English) as its evidence, and the report showed every measure that way. Evidence is the event in words: its
    log line, its node, and ssh's own message; measures as key=value with their units' numbers."""
    why = "ssh: connect to host 127.0.0.2 port 22: Connection refused"
    err = {"v": 1, "event": "error", "t": 1.0, "source": "launcher", "test": "multinode", "kind": "unreachable",
           "node": "b", "target": "root@127.0.0.2", "error": f"ssh to root@127.0.0.2 failed: {why}",
           "message": f"b (root@127.0.0.2) unreachable: ssh to root@127.0.0.2 failed: {why}",
           "remedy": "Check that `ssh root@127.0.0.2 true` works"}
    findings = judge_multinode(_log("BRINGUP " + json.dumps(err)), {})
    bad = [f for f in findings if f.verdict is Verdict.FAIL and "unreachable" in f.message]
    assert bad, findings
    ev = " ".join(e for f in bad for e in f.evidence)
    assert "BRINGUP" not in ev and '{"v"' not in ev and "Check that" not in ev
    assert f"log line 2: error multinode (unreachable): b (root@127.0.0.2) unreachable: ssh to root@127.0.0.2 failed: {why}" in ev

    from wizard.parsers.validate import parse_event_line
    e = parse_event_line('[a] BRINGUP {"v":1,"event":"measure","t":2.5,"test":"allreduce","rank":0,"node":"a",'
                         '"size_bytes":1073741824,"busbw_gb_s":352.25,"unit":"GB/s"}', 7)
    assert e.raw == "log line 7: [a] measure allreduce: rank=0, size_bytes=1073741824, busbw_gb_s=352.25, unit=GB/s"
    assert e.line.startswith("BRINGUP {")  # the record itself is kept for the log's readers


def test_facts_from_no_node_say_none_in_the_readers_language():
    """Walk 27 #11: "只收到 0 个节点的信息（none）" in Chinese: the empty list is a word of bringup's, translated."""
    from wizard import i18n
    from wizard.rules.multinode import judge_consistency

    (f,) = [f for f in judge_consistency(_log(), {}) if f.id == "multinode.consistency"]
    assert "(none)" in f.message
    i18n.set_language("zh_CN")
    try:
        zh = i18n.tr(f.message)
    finally:
        i18n.set_language("en")
    assert "（无）" in zh and "none" not in zh


def test_node_names_in_a_finding_use_the_readers_list_mark():
    """Walk 37 #18: "2 个节点（node01, node02）" in a Chinese line; the names keep their English text (stored, JSON) and
    show with the reader's list mark."""
    from wizard import i18n
    from wizard.rules.multinode import _nodes_text

    t = _nodes_text(["node01", "node02"])
    assert str(t) == "node01, node02"
    i18n.set_language("zh_CN")
    try:
        assert i18n.tr(t) == "node01、node02"
    finally:
        i18n.set_language("en")
