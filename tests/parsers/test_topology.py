"""Tests of wizard/parsers/topology.py."""

from __future__ import annotations

from wizard.parsers.topology import parse_nvlink, parse_topo_matrix

from tests.probe_data import CASES, PUBLIC, text


def test_topo_matrix_parser_reads_pairs_nics_and_affinity():
    m = parse_topo_matrix(text(CASES / "nvidia-smi-topo__dgx-a100-nv12-12nic-partial.txt"))
    assert len(m.gpus) == 8 and len(m.nics) == 12 and list(m.rows) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert m.cell("GPU0", "NIC1") == "PXB" and m.cell("GPU5", "GPU2") == "NV12" and m.cell("GPU5", "GPU6") == ""
    assert m.affinity["GPU2"] == {"CPU Affinity": "16-31,144-159", "NUMA Affinity": "1", "GPU NUMA ID": "N/A"}
    old = parse_topo_matrix(text(PUBLIC / "nvidia-smi-topo__2gpu-nv3-bridge-old-format.txt"))
    assert old.cell("GPU0", "GPU1") == "NV3" and old.affinity["GPU1"]["CPU Affinity"] == "0-47"


def test_nvlink_status_parser():
    rep = parse_nvlink(text(PUBLIC / "nvidia-smi-nvlink-s__v100-sxm2-gpu3-2-inactive-partial.txt"))
    (g,) = rep.gpus
    assert (g.index, g.name, g.active, g.inactive) == (3, "Tesla V100-SXM2-32GB", [0, 1, 2, 4], [3, 5])
    assert g.links[0] == 25.781 and rep.ellipsis
