"""Tests of wizard/parsers/nccl.py."""

from __future__ import annotations

from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests

from tests.probe_data import CASES, PUBLIC, text


def test_nccl_tests_parse_case() -> None:
    r = parse_nccl_tests(text(CASES / "nccl-tests__2node-16xh100-a3mega-allreduce.txt"))
    assert len(r.rows) == 31 and r.hosts == ["node01", "node02"] and r.avg_busbw_gb_s == 70.742
    assert infer_collective(r) == ("all_reduce", 16)
    assert r.rows[-1].oop.busbw_gb_s == 338.82 and r.rows[-1].oop.wrong == 0


def test_all_reduce_ranks_from_busbw_over_algbw_only_when_the_digits_allow_one() -> None:
    # real result tables without '# Rank' lines (round 26): 5.20/3.47 = 1.5 = 2(n-1)/n -> 4; 47.49/47.49 -> 2
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__dgx-a100-4gpu-p2p-disabled.txt"))
    assert not r.devices and infer_collective(r) == ("all_reduce", 4)
    assert infer_collective(parse_nccl_tests(text(PUBLIC / "nccl-tests__a40-nvlink-pair-allreduce.txt")))[1] == 2
    # synthetic: at 0.05 GB/s the two printed decimals allow n from 2 to far more: no count
    row = "  8589934592    2147483648     float     sum      -1  1.0e9    0.05    0.08      0    1.0e9    0.05    0.08      0"
    assert infer_collective(parse_nccl_tests(row + "\n"))[1] is None


AWS = PUBLIC / "nccl-debug__aws-g6e-ofi-efa-init-failed-socket-fallback.txt"


COLLAPSE = PUBLIC / "nccl-tests__nccl1453-rank-tag-interleaved-collapse-partial.txt"


def test_plugin_parse_and_ib_using_without_devices_is_not_ib():
    lg = parse_nccl_log(text(AWS))
    assert lg.plugin_name == "aws-ofi-nccl 1.16.2" and lg.plugin_net == "Libfabric" and lg.ofi_provider == "efa"
    assert len(lg.plugin_failures) == 4 and lg.ib_using and not lg.ib_devices
    assert not lg.uses_ib and lg.uses_socket  # "NET/IB : Using [RO]" lists no HCA port


def test_rank_tags_glued_inside_rows_parse():
    r = parse_nccl_tests(text(COLLAPSE))
    assert len(r.rows) == 10 and not r.problems
    row = r.rows[5]
    assert (row.size_b, row.redop, row.root, row.oop.busbw_gb_s, row.oop.wrong, row.ip.busbw_gb_s) == (
        33554432, "sum", -1, 29.5, 0, 28.14)
    assert row.line.startswith("[0]     33554432") and "-1[0]" in row.line  # evidence stays verbatim
    one = parse_nccl_tests("[1,0]<stdout>:     1048576        262144     float     sum      -1[1,0]<stdout>:"
                           "    1626.5    0.64    1.24      0    2302.3    0.46    0.87      0\n")
    assert one.rows and one.rows[0].oop.busbw_gb_s == 1.24


# ------------------------------------------------------------------ setup failures and PyTorch's NCCL errors

from wizard.parsers.nccl import NCCL_RESULTS, nccl_result_name, setup_failure_class  # noqa: E402


def test_setup_failure_classes_generalise_over_wordings() -> None:
    cases = {
        "x:1:2 [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_3:1, "
        "curr state INIT, next state RTR": "ib_verbs",
        "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed": "ib_verbs",
        "n:1:2 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> failed : Connection "
        "refused": "connect",
        "socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host": "connect",
        "g:1:2 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer g<55693>": "peer_closed",
        "a:1:2 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe":
            "peer_closed",
        "h:1:2 [4] misc/socket.cc:397 NCCL WARN Net : connecting to address  with family 33621 is neither AF_INET(2) "
        "nor AF_INET6(10)": "bootstrap",
        "h:1:2 [0] misc/socket.cc:580 NCCL WARN Call to connect returned Connection refused, retrying": "",
        "h:1:2 [0] NCCL WARN NET/IB : Got async event : port error": "",
    }
    for line, want in cases.items():
        assert setup_failure_class(line) == want, line


def test_pytorch_nccl_errors_and_last_error_are_read() -> None:
    lg = parse_nccl_log(text(PUBLIC / "nccl-debug__hkproj1-distbackenderror-socketstartconnect-no-route-to-host.txt"))
    assert lg.framework_errors[0][0] == "ncclSystemError"
    assert lg.last_errors == ["socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host"]
    assert [k for k, _ in lg.setup_failures] == ["connect"]
    one = parse_nccl_log(text(PUBLIC / "nccl-debug__awsome192-distbackenderror-loopback-connection-abort-one-line.txt"))
    assert one.last_errors and one.last_errors[0].startswith("socketStartConnect: Connect to 127.0.0.1")
    assert nccl_result_name("NCCL error in: x.cpp:1, remote process exited or there was a network error, NCCL "
                            "version 2.18.1") == "ncclRemoteError"
    assert nccl_result_name("RuntimeError: NCCL Error 2: unhandled system error") == "ncclSystemError"
    assert NCCL_RESULTS[1][0] == "ncclUnhandledCudaError" and NCCL_RESULTS[5][0] == "ncclInvalidUsage"


def test_init_complete_lines_are_counted() -> None:
    lg = parse_nccl_log(text(PUBLIC / "nccl-debug__nccl1412-16rank-init-complete-timings-partial.txt"))
    assert len(lg.init_complete) == 5 and lg.nranks == 16 and not lg.warn_lines


REDHAT_AR = PUBLIC / "nccl-tests__redhat-spectrumx-2node-16xh200-allreduce-16g-partial.txt"


def test_split_nccl_tests_one_run_is_the_input() -> None:
    from wizard.parsers.nccl import split_nccl_tests

    t = text(REDHAT_AR)
    assert split_nccl_tests(t) == [t]


def test_split_nccl_tests_runs_of_a_script() -> None:
    """Two runs back to back (each "# Collective test starting:" + "# nThread" header): two texts, each with its
    own header and rows; the starting line stays with its own header."""
    from wizard.parsers.nccl import split_nccl_tests

    t = text(REDHAT_AR)
    ag = text(PUBLIC / "nccl-tests__dgx-spark-2node-gb10-allgather-200g-rs-fec.txt")
    parts = split_nccl_tests(t + ag)
    assert len(parts) == 2
    first, second = (parse_nccl_tests(p) for p in parts)
    assert first.collective == "all_reduce" and len(first.rows) == 25
    assert second.collective == "all_gather" and len(second.rows) == 3
    assert parts[1].splitlines()[0] == "# Collective test starting: all_gather_perf"
    # an old-format script without "Collective test" lines splits at each header
    old = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n       8    2  float  sum  -1  1.0  0.00  0.00  0  1.0  0.00  0.00  0\n"
    assert len(split_nccl_tests(old + old)) == 2


def test_connected_all_rings_and_trees_mean_the_communicator_came_up():
    lg = parse_nccl_log(text(PUBLIC / "nccl-debug__4gpu-single-node-p2p-direct-pointer-rings-trees-connected.txt"))
    assert len(lg.init_complete) == 8 and lg.one_node and not lg.warn_lines


def test_an_ipv6_link_local_socket_interface_is_read_with_its_zone():
    lg = parse_nccl_log("w:1:1 [0] NCCL INFO NET/Socket : Using [0]eno1:172.18.40.41<0> "
                        "[1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>\n")  # the real line's shape (oneflow#3586)
    assert lg.socket_ifaces == ["eno1", "veth25f2e72"]


def test_an_async_nccl_error_without_file_and_line_is_named() -> None:
    """PyTorch's async form "NCCL error: <ncclGetErrorString>, NCCL version X" (real: OpenRLHF/OpenRLHF#621)."""
    line = ("[rank1]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:542] [Rank 12] Collective WorkNCCL(SeqNum=1, "
            "OpType=BROADCAST, NumelIn=778567680, NumelOut=778567680, Timeout(ms)=1800000) raised the following async "
            "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5")
    assert nccl_result_name(line) == "ncclRemoteError"


def test_nccl_tests_2019_format_without_hash_marks_is_read() -> None:
    """nccl-tests before 2.x printed its column header and footers without '#' (real: NVIDIA/nccl-tests#37)."""
    r = parse_nccl_tests(
        "all_gather_perf -g 8 -b 4294967296 -e 4294967296 -n 100\n"
        "                                             out-of-place                       in-place\n"
        "       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00\n"
        " Out of bounds values : 2 FAILED\n"
        " Avg bus bandwidth    : 128.942\n")
    assert len(r.rows) == 1 and r.columns_line.startswith("size") and r.oob_ok is False
    assert r.avg_busbw_gb_s == 128.942


def test_nccl_tests_ncclcheck_failure_line_is_named() -> None:
    """nccl-tests' NCCLCHECK: "NCCL failure common.cu:908 'unhandled cuda error'" (real: NVIDIA/nccl-tests#6)."""
    assert nccl_result_name("NCCL failure common.cu:908 'unhandled cuda error'.") == "ncclUnhandledCudaError"


def test_the_ofi_plugin_saying_only_efa_is_supported_is_a_plugin_that_did_not_load():
    """Held-out round 111: aws-ofi-nccl's "NET/OFI Only EFA provider is supported" (no EFA here) is the plugin not
    loading, not a warning bringup cannot place."""
    lg = parse_nccl_log(text(PUBLIC / "nccl-debug-info__1rank-docker-socket-lo-no-ib-ofi-efa-only-warn-32-channels-"
                                      "init-complete-partial.txt"))
    assert any("Only EFA provider" in s for s in lg.plugin_failures)


def test_libfabric_warnings_that_change_what_the_job_gets_are_warn_lines_and_benign_ones_are_not():
    """Held-out round 226 (real): EFA without RDMA for GPU memory (FI_HMEM), a cxi NIC without a valid VNI; a
    dlopen fallback of the same format is not one of them."""
    hmem = parse_nccl_log(text(PUBLIC / "nccl-debug__sagemaker-efa-hmem-no-rdma-ofi-1.3.txt"))
    assert any("FI_HMEM capability requires RDMA" in ln for ln in hmem.warn_lines)
    vni = parse_nccl_log(text(PUBLIC / "nccl-debug__aarch64-cxi-ofi-rgroup-vni-missing.txt"))
    assert any("rgroup and vni" in ln for ln in vni.warn_lines)
    benign = parse_nccl_log("libfabric:1:2:efa:core:ofi_dl():10<warn> Failed to dlopen libnvidia-ml.so.  Trying "
                            "libnvidia-ml.so.1\n")
    assert not benign.warn_lines
