"""Tests of wizard/parsers/nccl.py."""

from __future__ import annotations

from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests

from tests.probe_data import CASES, PUBLIC, text


def test_nccl_tests_parse_case() -> None:
    r = parse_nccl_tests(text(CASES / "nccl-tests__2node-16xh100-a3mega-allreduce.txt"))
    assert len(r.rows) == 31 and r.hosts == ["node01", "node02"] and r.avg_busbw_gb_s == 70.742
    assert infer_collective(r) == ("all_reduce", 16)
    assert r.rows[-1].oop.busbw_gb_s == 338.82 and r.rows[-1].oop.wrong == 0


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
