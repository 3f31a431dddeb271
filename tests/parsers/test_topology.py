"""Tests of wizard/parsers/topology.py."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from wizard.parsers.topology import parse_nvlink, parse_topo_matrix

from tests.probe_data import CASES, PUBLIC, text
from tests.strategies import mutated


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


def test_topo_matrix_without_header_row_reads_the_column_order_from_each_rows_x():
    # real rows of a DGX A100 matrix (NVIDIA/DCGM#149) pasted without the header: GPU0-GPU5 rows, 18 columns
    mx = parse_topo_matrix(text(PUBLIC / "nvidia-smi-topo__dgx-a100-nv12-rows-no-header-excerpt.txt"))
    assert mx.inferred and mx.header_line == ""
    assert mx.gpus == [f"GPU{i}" for i in range(8)]  # GPU6/GPU7: columns with NV12 after GPU5 are GPUs
    assert mx.unknown_columns == [f"?{i}" for i in range(8, 18)] and mx.nics == []
    assert mx.cell("GPU0", "GPU7") == "NV12" and mx.affinity["GPU4"]["NUMA Affinity"] == "7"
    # real rows of a PCIe-only 8x A5000 box: the two NIC columns stay unnamed (NODE/SYS, no NVLink)
    pcie = parse_topo_matrix(text(PUBLIC / "nvidia-smi-topo__savio4-8x-a5000-rows-no-header-excerpt.txt"))
    assert pcie.gpus == [f"GPU{i}" for i in range(8)] and pcie.unknown_columns == ["?8", "?9"]
    assert pcie.cell("GPU2", "GPU3") == "PIX" and pcie.cell("GPU0", "GPU4") == "SYS"


def test_topo_matrix_without_header_refuses_rows_of_another_shape():
    # two rows claiming the same column, a row with two X, rows of different widths: no matrix
    assert not parse_topo_matrix("GPU0     X      NV4\nGPU1     X      NV4\n").rows
    assert not parse_topo_matrix("GPU0     X      X\nGPU1    NV4      X\n").rows
    assert not parse_topo_matrix("GPU0     X      NV4     SYS\nGPU1    NV4      X\n").rows
    assert not parse_topo_matrix("GPU0     X      NV4\n").rows  # one row says nothing about pairs


@given(mutated([PUBLIC / "nvidia-smi-topo__dgx-a100-nv12-rows-no-header-excerpt.txt",
                PUBLIC / "nvidia-smi-topo__savio4-8x-a5000-rows-no-header-excerpt.txt"],
               ["GPU0", "GPU9", "NIC0", "X", " X ", "NV12", "SYS", "N/A", "\n", " ", "\t"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_headerless_matrix_never_raises_and_each_named_row_keeps_its_x(t):
    mx = parse_topo_matrix(t)
    if mx.inferred:
        for name, cells in mx.rows.items():
            assert cells.get(name) == "X"


def test_dcgmi_nvlink_error_table_reads_like_nvidia_smi_nvlink_e():
    """Real (dcgmi nvlink -g 1 -e on an 8x H800): per link CRC FLIT / CRC Data / Replay / Recovery counters."""
    from wizard.parsers.topology import parse_nvlink

    t = text(PUBLIC / "dcgmi-nvlink__8x-h800-8-links-up-zero-errors.txt")
    rep = parse_nvlink(t[t.index("> dcgmi nvlink -g 1 -e"):].split("\n", 1)[1])
    (g,) = rep.gpus
    assert g.index == 1 and sorted(g.counters) == list(range(8))
    assert g.counters[7] == {"CRC FLIT Error": 0, "CRC Data Error": 0, "Replay Error": 0, "Recovery Error": 0}


def test_a_header_whose_last_nic_column_runs_into_cpu_affinity_is_read():
    """Held-out round 258 (real, vLLM collect_env on 8x B200 with 12 NICs): the header reads "NIC11CPU Affinity", the
    last NIC's name filling its column; the row cells and affinities are read as for any matrix."""
    mx = parse_topo_matrix(text(PUBLIC / "nvidia-smi-topo__b200-8gpu-12nic-two-numa-excerpt.txt"))
    assert mx.rows["GPU0"]["GPU1"] == "NV18" and mx.rows["GPU0"]["NIC0"] == "PIX" and mx.rows["GPU3"]["NIC11"] == "SYS"
    assert mx.affinity["GPU2"]["CPU Affinity"] == "28-55,140-167"
