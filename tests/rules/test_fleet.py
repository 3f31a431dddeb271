"""wizard/rules/fleet.py: the HCA rate and firmware compared across nodes, read from each node's sysfs by the probe."""

from __future__ import annotations

from pathlib import Path

from wizard.facts import facts_of
from wizard.model import Verdict
from wizard.rules.fleet import FLEET_PROBES, judge_fleet, node_values

from tests.fabric_data import FABRIC, fabric_outputs, sysfs_tree

H100 = (FABRIC / "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt").read_text()


def _node(tmp: Path, listing: str) -> dict:
    return node_values(facts_of(fabric_outputs(sysfs_tree(tmp, listing), "ib_sysfs")))


def test_hca_rate_and_firmware_name_the_odd_node_out(tmp_path: Path) -> None:
    """Three nodes from the real H100 tree (leptonai/gpud); gpu03 altered (synthetic): one port trained at HDR and an
    older firmware on mlx5_4."""
    assert "ib_sysfs" in FLEET_PROBES
    odd = H100.replace("mlx5_4/fw_ver:28.41.1000", "mlx5_4/fw_ver:28.39.2048").replace(
        "mlx5_5/ports/1/rate:400 Gb/sec (4X NDR)", "mlx5_5/ports/1/rate:200 Gb/sec (4X HDR)")
    vals = {"gpu01": _node(tmp_path / "1", H100), "gpu02": _node(tmp_path / "2", H100),
            "gpu03": _node(tmp_path / "3", odd)}
    assert vals["gpu01"]["hca_firmware"].text == "8 x MT4129 28.41.1000, MT41692 32.38.3056"
    assert vals["gpu01"]["hca_rate"].text == "1 x 200 Gb/s Ethernet, 8 x 400 Gb/s InfiniBand"
    fs = {f.id: f for f in judge_fleet(vals)}
    rate = fs["fleet.consistency.hca_rate"]
    assert rate.verdict is Verdict.FAIL and rate.subject == "gpu03" and "the other 2" in rate.message
    fw = fs["fleet.consistency.hca_firmware"]
    assert fw.verdict is Verdict.WARN and fw.subject == "gpu03" and "28.39.2048" in fw.message
    assert "28.41.1000" in fw.remedy


def test_nodes_without_rdma_devices_skip_the_hca_comparison(tmp_path: Path) -> None:
    vals = {"a": _node(tmp_path / "a", ""), "b": _node(tmp_path / "b", "")}
    fs = {f.id: f for f in judge_fleet(vals)}
    assert fs["fleet.consistency.hca_rate"].verdict is Verdict.SKIP
    assert fs["fleet.consistency.hca_firmware"].verdict is Verdict.SKIP


def test_a_node_whose_ports_are_all_down_is_the_odd_one_out(tmp_path: Path) -> None:
    down = H100.replace("4: ACTIVE", "1: DOWN")  # synthetic variant of the real tree: every port Down
    vals = {"n1": _node(tmp_path / "1", H100), "n2": _node(tmp_path / "2", H100), "n3": _node(tmp_path / "3", down)}
    rate = {f.id: f for f in judge_fleet(vals)}["fleet.consistency.hca_rate"]
    assert rate.verdict is Verdict.FAIL and rate.subject == "n3" and "no Active port" in rate.message
