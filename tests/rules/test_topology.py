"""Tests of wizard/rules/topology.py."""

from __future__ import annotations

from pathlib import Path

from wizard.model import Verdict
from wizard.parsers.topology import parse_p2p_matrix
from wizard.probes import ProbeOutput
from wizard.rules import topology as topology_rules

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def out(name: str, path: Path) -> dict[str, ProbeOutput]:
    return {name: ProbeOutput(name, f"$ {name}", text=text(path))}


def by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def test_topology_reports_every_pair_and_warns_on_a_weaker_nvlink_pair():
    ok = topology_rules.topology(out("nvidia_smi_topo_m", CASES / "nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt"), {})
    assert [f.verdict for f in ok] == [Verdict.PASS] and "28 pair(s) NV18" in ok[0].message
    weak = topology_rules.topology(out("nvidia_smi_topo_m", SYNTHETIC / "synthetic_nvidia-smi-topo__8x-h100-gpu2-gpu5-nv17.txt"), {})
    assert [f.verdict for f in weak] == [Verdict.WARN] and "GPU2-GPU5 NV17" in weak[0].message
    assert weak[0].subject == "GPU 2 and GPU 5"


def test_topology_pcie_pairs_fail_only_when_the_plans_sku_needs_nvlink_everywhere():
    # synthetic: the real 4x H100 NV6 matrix with the GPU2-GPU3 pair over PCIe (SYS)
    t = text(PUBLIC / "nvidia-smi-topo__4x-h100-nv6-4nic-pix-partial.txt")
    t = t.replace("GPU2    NV6     NV6      X      NV6 ", "GPU2    NV6     NV6      X      SYS ")
    t = t.replace("GPU3    NV6     NV6     NV6      X ", "GPU3    NV6     NV6     SYS      X ")
    o = {"nvidia_smi_topo_m": ProbeOutput("nvidia_smi_topo_m", "x", text=t)}
    assert by_id(topology_rules.topology(o, {}), "health.topology")[0].verdict is Verdict.PASS
    f = by_id(topology_rules.topology(o, {"gpu_model": "H100 SXM5"}), "health.topology")[0]
    assert f.verdict is Verdict.FAIL and "GPU2-GPU3 SYS" in f.message


def test_gpu_nic_affinity():
    good = topology_rules.topology(out("nvidia_smi_topo_m", PUBLIC / "nvidia-smi-topo__4x-h100-nv6-4nic-pix-partial.txt"), {})
    assert by_id(good, "health.gpu_nic_affinity")[0].verdict is Verdict.PASS
    far = topology_rules.topology(out("nvidia_smi_topo_m", SYNTHETIC / "synthetic_nvidia-smi-topo__4x-h100-gpu3-no-near-nic.txt"), {})
    (f,) = by_id(far, "health.gpu_nic_affinity")
    assert f.verdict is Verdict.WARN and f.subject == "GPU 3" and "GPU3" in f.message
    assert by_id(topology_rules.topology(out("nvidia_smi_topo_m", PUBLIC / "nvidia-smi-topo__2x-rtx5090-phb-tabs.txt"), {}),
                 "health.gpu_nic_affinity") == []


def test_p2p_matrix():
    m = parse_p2p_matrix(text(PUBLIC / "nvidia-smi-topo-p2p__2x-rtx5090-gns-tabs.txt"))
    assert m.cell("GPU0", "GPU1") == "GNS"
    ok = topology_rules.p2p(out("nvidia_smi_topo_p2p", PUBLIC / "nvidia-smi-topo-p2p__8x-h100-ok.txt"), {})
    assert [f.verdict for f in ok] == [Verdict.PASS] and "28" in ok[0].message
    cns = topology_rules.p2p(out("nvidia_smi_topo_p2p", PUBLIC / "nvidia-smi-topo-p2p__2x-l4-cns.txt"), {})
    assert [f.verdict for f in cns] == [Verdict.FAIL] and "ACS" in cns[0].remedy
    gns = out("nvidia_smi_topo_p2p", PUBLIC / "nvidia-smi-topo-p2p__2x-rtx5090-gns-tabs.txt")
    assert [f.verdict for f in topology_rules.p2p(gns, {})] == [Verdict.FAIL]
    geforce = topology_rules.p2p(gns, {"gpu_model": "RTX 5090"})
    assert [f.verdict for f in geforce] == [Verdict.WARN] and "GeForce" in geforce[0].message
