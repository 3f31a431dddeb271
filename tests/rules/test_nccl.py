"""Tests of wizard/rules/nccl.py."""

from __future__ import annotations

import pytest
from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests
from wizard.rules import nccl

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def _v(findings, fid=None):
    return [f.verdict for f in findings if fid is None or f.id == fid]


def test_nccl_tests_never_judged_on_avg_line() -> None:
    f = nccl.judge_nccl_tests(text(CASES / "nccl-tests__1node-8xh100-allreduce-256m-2g.txt"), {})
    assert _v(f) == [Verdict.PASS]
    assert "448.212" in f[0].message and "not judged" in f[0].message
    assert "268.99 x 14/8" in f[0].message  # the arithmetic is shown


def test_nccl_tests_wrong_results_fail() -> None:
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-wrong-3-at-2g.txt"), {})
    assert Verdict.FAIL in _v(f) and "#wrong" in f[0].message


def test_nccl_tests_below_floor_fails_and_unchecked_warns() -> None:
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-below-floor.txt"), {})
    assert _v(f) == [Verdict.FAIL] and "460" in f[0].message and f[0].remedy
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-c0-wrong-na.txt"), {})
    assert _v(f) == [Verdict.WARN, Verdict.PASS] and "-c 1" in f[0].remedy


def test_nccl_tests_multinode_floor_from_plan() -> None:
    t = text(CASES / "nccl-tests__2node-16xh100-a3mega-allreduce.txt")
    assert _v(nccl.judge_nccl_tests(t, {"nics_per_node": 8, "nic_gbit_s": 400})) == [Verdict.PASS]  # floor 320
    assert _v(nccl.judge_nccl_tests(t, {"allreduce_floor_gb_s": 370})) == [Verdict.FAIL]


def test_nccl_tests_a100_row_matches_real_device_name() -> None:
    body = text(CASES / "nccl-tests__1node-8xh100-allreduce-256m-2g.txt").replace("NVIDIA H100 80GB HBM3",
                                                                                  "NVIDIA A100-SXM4-80GB")
    f = nccl.judge_nccl_tests(body, {})
    assert "A100" in f[0].message and "228" in f[0].message and f[0].verdict is Verdict.PASS


def test_nccl_tests_old_and_other_collectives() -> None:
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt"))
    assert not r.wrong_is_count and r.oob_ok is True and r.rows[0].oop.error == 2e-06
    f = nccl.judge_nccl_tests(text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt"), {})
    assert _v(f) == [Verdict.UNKNOWN] and "below 1 GiB" in f[0].message
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__2gpu-h800-broadcast-header-partial.txt"))
    assert infer_collective(r) == ("broadcast", 2)
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__2gpu-allgather-bf16-partial.txt"))
    assert infer_collective(r)[1] == 2
    bad = text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt").replace("0 OK", "1 FAILED")
    assert Verdict.FAIL in _v(nccl.judge_nccl_tests(bad, {}))


@pytest.mark.parametrize("name,fid,verdict", [
    ("nccl-debug__docker-bond-ibv-open-failed-socket-fallback.txt", "multinode.transport", Verdict.FAIL),
    ("nccl-debug__nccl-2.3-virbr0-interfaces-socket.txt", "multinode.transport", Verdict.FAIL),
    ("nccl-debug__container-net-ib-plugin-2.28-partial.txt", "multinode.transport", Verdict.PASS),
    ("nccl-debug__libibverbs-missing-socket-creation-failed.txt", "multinode.transport", Verdict.WARN),
    ("nccl-debug__h800-nvls-invalid-argument-chain.txt", "node.nvls", Verdict.FAIL),
])
def test_nccl_logs_public(name: str, fid: str, verdict: Verdict) -> None:
    e = explain_text(text(PUBLIC / name))
    assert e.kind == "nccl-debug"
    assert verdict in _v(e.findings, fid), [(f.id, f.verdict, f.message) for f in e.findings]


def test_nccl_log_docker0_and_new_completion_format() -> None:
    f = nccl.judge_nccl_log(text(SYNTHETIC / "synthetic_nccl-debug__socket-on-docker0.txt"), {})
    assert _v(f, "multinode.transport") == [Verdict.FAIL] and "docker0" in f[0].message
    # the newer NCCL wording, built by hand (no real sample at hand): status name with the number
    line = ("n1:10:20 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with "
            "status=IBV_WC_RETRY_EXC_ERR(12) opcode=0 len=0 vendor err 129 (Recv)")
    lg = parse_nccl_log(line)
    assert lg.completion_errors[0][0] == 12
    f = nccl.judge_nccl_log(line, {})
    assert _v(f, "multinode.ib_errors") == [Verdict.FAIL] and "RETRY_EXC" in f[0].message


def test_nccl_log_bond_warns() -> None:
    line = "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB bond0:10.0.0.1<0>"
    assert _v(nccl.judge_nccl_log(line, {}), "multinode.transport") == [Verdict.WARN]


GCP = PUBLIC / "nccl-debug__lab-gcp-24gpu-ib-none-socket-eth0.txt"


AWS = PUBLIC / "nccl-debug__aws-g6e-ofi-efa-init-failed-socket-fallback.txt"


MN5 = PUBLIC / "nccl-debug__mn5-2node-ib-plus-stray-roce-hca.txt"


MN5_PREFIXED = SYNTHETIC / "synthetic_nccl-debug__mn5-with-nccl-prefix.txt"


RAY = PUBLIC / "nccl-debug__ray-vllm-8xgpu-net-ib-8hca-ray-prefix.txt"


EFA_OK = PUBLIC / "nccl-debug__nccl1597-h200-efa-libfabric-gdrdma-channel-line-partial.txt"


COLLAPSE = PUBLIC / "nccl-tests__nccl1453-rank-tag-interleaved-collapse-partial.txt"


ONE_RANK = PUBLIC / "nccl-tests__5090-single-gpu-alltoall-na-sudo-prompt.txt"


DIP = PUBLIC / "nccl-tests__aws-ofi-nccl65-p4d-dip-at-64m-recovers-partial.txt"


def by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def test_no_rdma_device_socket_is_a_warning_not_an_ib_failure():
    e = explain_text(text(GCP))
    assert e.kind == "nccl-debug"
    t = by_id(e.findings, "multinode.transport")
    assert [f.verdict for f in t] == [Verdict.WARN] and e.verdict is Verdict.WARN
    f = t[0]
    assert "No device found" in f.message and "TCP" in f.message and "eth0" in f.message
    assert "NCCL INFO NET/IB : No device found." in f.evidence
    assert "nothing to fix" in f.remedy and "NCCL_IB_DISABLE" not in f.remedy


def test_failed_efa_plugin_is_named_in_message_evidence_and_remedy():
    e = explain_text(text(AWS))
    t = by_id(e.findings, "multinode.transport")
    assert [f.verdict for f in t] == [Verdict.FAIL]
    f = t[0]
    assert "aws-ofi-nccl 1.16.2" in f.message and "EFA" in f.message and "No eligible providers" in f.message
    assert any(x.endswith("NET/OFI No eligible providers were found") for x in f.evidence)
    assert any("aws-ofi-nccl initialization failed" in x for x in f.evidence)
    assert any("Using [0]eth0" in x for x in f.evidence)  # the socket fallback it led to
    assert "vpc.amazonaws.com/efa" in f.remedy and "fi_info -p efa" in f.remedy
    assert "ibv_devinfo" not in f.remedy and "not the fault" in f.remedy  # not an InfiniBand remedy
    assert "nccl#229" in f.source and "EFA" in f.source
    # the plugin's WARN lines are explained by that finding, not counted again as loose warnings
    assert not by_id(e.findings, "node.nccl_errors")


def test_efa_libfabric_channel_in_use_passes():
    e = explain_text(text(EFA_OK))
    assert e.kind == "nccl-debug"
    assert [(f.id, f.verdict) for f in e.findings] == [("multinode.transport", Verdict.PASS)]
    assert "AWS Libfabric" in e.findings[0].message and "GDRDMA" in e.findings[0].message


def test_grepped_summary_without_nccl_prefix_is_read_and_stray_roce_warns():
    e = explain_text(text(MN5))
    assert e.kind == "nccl-debug"
    t = by_id(e.findings, "multinode.transport")
    assert [f.verdict for f in t] == [Verdict.WARN]
    f = t[0]
    assert "mlx5_2:1 is RoCE" in f.message and "mlx5_3" in f.message and "unintended" in f.message
    assert f.evidence == ("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/RoCE [3]mlx5_4:1/IB "
                          "[4]mlx5_5:1/IB [RO]",)
    assert 'NCCL_IB_HCA="=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1"' in f.remedy
    assert "/etc/nccl.conf" in f.remedy and "mlx5_2" not in f.remedy.split("/etc/nccl.conf")[1]
    assert "NCCL_IB_HCA" in f.source and "nccl/user-guide/docs/env.html" in f.source and "knowledge" not in f.source


def test_stray_roce_with_nccl_prefix_warns_too():
    e = explain_text(text(MN5_PREFIXED))
    assert e.kind == "nccl-debug" and e.verdict is Verdict.WARN
    assert "RoCE" in by_id(e.findings, "multinode.transport")[0].message


def test_eight_ib_rails_pass_and_a_plan_with_more_nics_warns():
    e = explain_text(text(RAY))
    assert [f.verdict for f in by_id(e.findings, "multinode.transport")] == [Verdict.PASS]
    assert "8 HCA port(s)" in e.findings[0].message
    assert explain_text(text(RAY), expectations={"nics_per_node": 8}).verdict is Verdict.PASS
    more = explain_text(text(RAY), expectations={"nics_per_node": 16})
    assert more.verdict is Verdict.WARN and "16 NICs per node" in more.findings[0].message


def test_summary_detector_needs_an_nccl_transport_line():
    assert explain_text("8 channels (Channel 00/08 .. 07/08), 4 ring + 4 tree\nsome other line\n").kind is None
    assert nccl.judge_nccl_log("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]", {})[0].verdict is Verdict.PASS


def test_busbw_collapse_is_reported():
    e = explain_text(text(COLLAPSE))
    assert e.kind == "nccl-tests" and e.verdict is Verdict.WARN
    warn = [f for f in e.findings if f.verdict is Verdict.WARN]
    assert len(warn) == 1 and warn[0].id == "node.allreduce"
    m = warn[0].message
    assert "collapses" in m and "29.50 GB/s at 32 MiB" in m and "5.27 GB/s at 64 MiB" in m and "512 MiB" in m
    assert warn[0].evidence[0].startswith("[0]     33554432") and "nccl#1453" in warn[0].source
    assert nccl.COLLAPSE_FRACTION == 0.5


def test_a_dip_that_recovers_is_not_a_collapse():
    fs = nccl.judge_nccl_tests(text(DIP), {})
    assert not any("collapses" in f.message for f in fs)
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN]  # 256 MiB is too small to judge the plateau


def test_single_rank_run_measures_nothing_and_names_its_collective():
    e = explain_text(text(ONE_RANK))  # explain drops the prompt line naming alltoall_perf
    assert e.kind == "nccl-tests" and [f.verdict for f in e.findings] == [Verdict.UNKNOWN]
    f = e.findings[0]
    assert "1 rank" in f.message and "nothing" in f.message and "alltoall" in f.message
    assert "all_reduce_perf" not in f.remedy and "-g <gpus>" in f.remedy
    whole = nccl.judge_nccl_tests(text(ONE_RANK), {})  # with the command line kept
    assert "nccl-tests alltoall ran on 1 rank" in whole[0].message and "alltoall_perf" in whole[0].remedy
    cmd = nccl.judge_nccl_tests(text(ONE_RANK).split("\n", 1)[1], {"command": "sudo ./build/./alltoall_perf"})
    assert "nccl-tests alltoall ran on 1 rank" in cmd[0].message
