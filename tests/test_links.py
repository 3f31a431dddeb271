"""PCIe links, lspci inventory, topology, P2P and NVLink: parsers, checks, kinds and probes.

Inputs are the real outputs in tests/data (see tests/data/PROVENANCE.md); files named
``synthetic_*`` were built by hand where no real sample of that case was found, and say why there.
"""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from wizard import probes, registry
from wizard.explain import explain_text
from wizard.hosts import Operation, SnapshotHost, command_key
from wizard.model import Verdict, overall
from wizard.parsers.pcie import (
    device_label,
    marketing_name,
    parse_header,
    parse_iommu_groups,
    parse_link,
    parse_lspci,
)
from wizard.parsers.topology import (
    parse_dcgmi_nvlink,
    parse_nvlink,
    parse_p2p_matrix,
    parse_topo_matrix,
)
from wizard.probes import ProbeOutput
from wizard.registry import KINDS
from wizard.rules import gpu_presence, nvlink, pcie
from wizard.rules import topology as topology_rules

SHARED_EXPECTED = CASES / "expected.csv"
MY_PREFIXES = ("lspci-", "nvidia-smi-topo__", "dcgmi-nvlink__")

SUPERMICRO = PUBLIC / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"
NONROOT = PUBLIC / "lspci-vv__asus-esc4000-g2-nonroot-access-denied-excerpt.txt"
SWITCH = SYNTHETIC / "synthetic_lspci-vvv__pcie-switch-acs-on-h100pcie-x8-aer-fatal.txt"
BAR_UNASSIGNED = SYNTHETIC / "synthetic_lspci-vv__h100pcie-bar1-unassigned.txt"
A100_PARTIAL = CASES / "lspci-vv__a100-sxm4-header-partial.txt"
QUADRO = CASES / "lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt"
RTX4090 = CASES / "lspci-vv__rtx4090-riser-gen1-downgraded-snippet.txt"
IOMMU_H200 = CASES / "lspci-iommu-groups__h200-sxm-8gpu-nvswitch-partial.txt"
DCGMI_DOWN = CASES / "dcgmi-nvlink__h100nvl-all-links-down.txt"


def lspci_out(path: Path) -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(path))}


def out(name: str, path: Path) -> dict[str, ProbeOutput]:
    return {name: ProbeOutput(name, f"$ {name}", text=text(path))}


def by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def all_text(findings) -> str:
    return " ".join(" ".join([f.message, f.subject, f.remedy, *f.evidence]) for f in findings).lower()


# ------------------------------------------------------------------ the shared cases of this area


def _my_cases() -> list[dict[str, str]]:
    with open(SHARED_EXPECTED, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if r["file"].startswith(MY_PREFIXES)]


def test_all_seven_cases_of_this_area_are_here():
    names = {r["file"] for r in _my_cases()}
    assert len(names) == 7
    assert all((CASES / n).is_file() for n in names)


@pytest.mark.parametrize("row", _my_cases(), ids=lambda r: r["file"])
def test_case_verdict_and_mentions_through_explain(row):
    e = explain_text(text(CASES / row["file"]))
    allowed = set(row["verdict"].split("|"))
    assert e.verdict.value in allowed, [(f.verdict.value, f.message) for f in e.findings]
    mentions = [m.lower() for m in row["mentions"].split("|") if m]
    if mentions:
        assert any(m in all_text(e.findings) for m in mentions)


@pytest.mark.parametrize("row", _my_cases(), ids=lambda r: r["file"])
def test_case_is_detected_as_my_kind_even_after_a_prompt_line(row):
    body = text(CASES / row["file"])
    cmd = {"lspci-vv": "sudo lspci -vvv", "lspci-iommu-groups": "./iommu.sh", "nvidia-smi-topo-m": "nvidia-smi topo -m",
           "dcgmi-nvlink-status": "dcgmi nvlink --link-status"}
    plain = explain_text(body)
    prompted = explain_text(f"root@node:~# {cmd.get(plain.kind, 'x')}\n" + body)
    assert plain.kind in cmd and prompted.kind == plain.kind and prompted.verdict == plain.verdict


# ------------------------------------------------------------------ lspci parser


def test_parse_lspci_whole_sections_gpu_root_port_and_hierarchy():
    f = parse_lspci(text(SUPERMICRO))
    assert [d.bus_id for d in f.devices] == ["0000:60:03.1", "0000:60:07.1", "0000:61:00.0"]
    gpu = f.gpus[0]
    assert (gpu.device_id, gpu.class_code, gpu.driver, gpu.numa_node) == ("1eb0", "0300", "nvidia", 0)
    assert (gpu.lnkcap.speed_gts, gpu.lnkcap.width) == (8.0, 16)
    assert (gpu.lnksta.speed_gts, gpu.lnksta.width, gpu.lnksta.speed_marker, gpu.lnksta.width_marker) == \
        (2.5, 16, "downgraded", "ok")
    assert gpu.lnkctl2_target_gts == 8.0 and gpu.port_type == "Legacy Endpoint"
    assert gpu.bar1 is not None and gpu.bar1.size == 256 * 1024 ** 2 and gpu.bar1.prefetchable
    assert [p.bus_id for p in f.parents(gpu)] == ["0000:60:03.1"]
    root, acs_root = f.devices[0], f.devices[1]
    assert root.port_type == "Root Port" and (root.secondary_bus, root.subordinate_bus) == (0x61, 0x61)
    assert acs_root.acs_ctl == {"SrcValid": True, "TransBlk": False, "ReqRedir": False, "CmpltRedir": False,
                                "UpstreamFwd": False, "EgressCtrl": False, "DirectTrans": False}
    assert gpu.aer.seen and not gpu.aer.ue_set and not gpu.aer.ce_set
    assert device_label(gpu) == "Quadro RTX 5000" and not f.problems


def test_parse_lspci_header_partial_keeps_numa_and_bars():
    f = parse_lspci(text(A100_PARTIAL))
    (gpu,) = f.gpus
    assert gpu.bus_id == "0000:da:00.0" and gpu.numa_node == 5 and gpu.bar1.size == 64 * 1024 ** 3
    assert not gpu.lnksta.present and not gpu.caps_denied


def test_parse_lspci_snippet_without_header_and_aer_bits():
    f = parse_lspci(text(QUADRO))
    (snip,) = f.devices
    assert snip.bdf == "" and snip.lnksta.width == 1 and snip.lnksta.width_marker == "downgraded"
    assert snip.aer.ce_set == ["AdvNonFatalErr"] and snip.aer.ue_set == []


def test_parse_lspci_non_root_marks_capabilities_hidden():
    f = parse_lspci(text(NONROOT))
    assert f.non_root and all(d.caps_denied for d in f.devices) and not f.gpus


def test_parse_lspci_fatal_aer_uses_uesvrt():
    f = parse_lspci(text(SWITCH))
    g = next(d for d in f.gpus if d.bus_id == "0000:19:00.0")
    assert g.aer.ue_set == ["DLP", "CmpltTO"] and g.aer.ue_fatal == ["DLP"]
    assert [p.bus_id for p in f.parents(g)] == ["0000:18:08.0", "0000:17:00.0", "0000:16:01.0"]
    assert f.devices[2].is_switch_port and not f.devices[0].is_switch_port


def test_parse_header_variants():
    # the four header forms lspci prints: -nn, plain, -n, and with -D
    nn = parse_header("da:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] (rev a1)")
    plain = parse_header("00:04.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 40GB] (rev a1)")
    numeric = parse_header("02:00.0 0300: 10de:1f08 (rev a1)")
    dom = parse_header("0001:00:00.0 3D controller: NVIDIA Corporation GH100 [H100 PCIe] (rev a1)")
    assert nn.is_gpu and nn.device_id == "20b0" and nn.class_code == "0302"
    assert plain.is_gpu and plain.vendor_id == "10de" and plain.class_code == ""
    assert numeric.is_gpu and numeric.device_id == "1f08"
    assert dom.bus_id == "0001:00:00.0" and dom.is_gpu
    assert parse_header("\tLnkSta: Speed 8GT/s") is None and parse_header("garbage") is None


def test_old_pci_ids_device_number_gets_nvidias_name():
    # what lspci prints with a pci.ids older than the GPU (here an H100 SXM5, 10de:2330)
    d = parse_header("18:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330] (rev a1)")
    assert d.is_gpu and device_label(d) == marketing_name("2330") and "H100" in device_label(d)
    assert marketing_name("ffff") == ""


def test_parse_link_lines():
    assert (parse_link("LnkSta: Speed 2.5GT/s (downgraded), Width x16 (ok)").speed_gts) == 2.5
    old = parse_link("LnkSta:\tSpeed 8GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-")
    assert (old.speed_gts, old.width, old.speed_marker, old.width_marker) == (8.0, 16, "", "")
    down = parse_link("LnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)")
    assert down.speed_gts is None and down.width == 0 and down.width_marker == "downgraded"


def test_parse_iommu_groups_formats():
    h200 = parse_iommu_groups(text(IOMMU_H200))
    assert len(h200.gpus) == 8 and {e.driver for e in h200.gpus} == {"nvidia"}
    assert sum(e.device.is_nvswitch for e in h200.entries) == 2 and not h200.problems
    arch = parse_iommu_groups(text(PUBLIC / "lspci-iommu-groups__rtx2080ti-radeon-shared-group-arch-format.txt"))
    assert [e.device.bus_id for e in arch.gpus] == ["0000:01:00.0"] and arch.gpus[0].group == "1"
    # synthetic: the grouped layout of the Arch-wiki script ("IOMMU Group N:" then tab-indented devices)
    grouped = parse_iommu_groups("IOMMU Group 13:\n\t01:00.0 VGA compatible controller [0300]: NVIDIA Corporation "
                                 "AD102 [GeForce RTX 4090] [10de:2684] (rev a1)\n")
    assert [(e.group, e.device.device_id) for e in grouped.gpus] == [("13", "2684")]


# ------------------------------------------------------------------ PCIe checks


def test_width_fail_names_gpu_and_narrow_upstream_switch_port():
    fs = pcie.pcie_width(lspci_out(SWITCH), {})
    (bad,) = [f for f in fs if f.verdict is Verdict.FAIL]
    assert bad.subject == "GPU (0000:19:00.0)" and "x8" in bad.message and "0000:18:08.0" in bad.message
    assert "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x8 (downgraded)" in bad.evidence
    assert bad.remedy and "lspci(8)" in bad.source
    assert any(f.verdict is Verdict.PASS and "0000:1a:00.0" in f.message for f in fs)


def test_speed_is_warn_at_idle_and_fail_only_under_load():
    idle = pcie.pcie_speed(lspci_out(SUPERMICRO), {})
    assert overall(idle) is Verdict.WARN and "re-check under load" in idle[0].message
    assert "0000:60:03.1" in idle[0].message  # the upstream root port is named
    loaded = pcie.pcie_speed(lspci_out(SUPERMICRO), {"under_load": True})
    assert overall(loaded) is Verdict.FAIL
    assert overall(pcie.pcie_width(lspci_out(SUPERMICRO), {"under_load": True})) is Verdict.PASS


def test_acs_on_switch_port_warns_on_bare_metal_only():
    bare = pcie.pcie_acs(lspci_out(SWITCH), {"virtualization": False})
    assert [f.verdict for f in bare] == [Verdict.WARN]
    assert "0000:18:08.0" in bare[0].message and "0000:19:00.0" in bare[0].message
    assert "0000:18:10.0" not in bare[0].message  # SrcValid- on that port
    assert "setpci" in bare[0].remedy and "troubleshooting" in bare[0].source.lower()
    vm = pcie.pcie_acs(lspci_out(SWITCH), {"virtualization": True})
    assert [f.verdict for f in vm] == [Verdict.PASS]


def test_acs_on_root_port_is_not_a_switch_problem():
    fs = pcie.pcie_acs(lspci_out(SUPERMICRO), {})
    assert [f.verdict for f in fs] == [Verdict.PASS] and "root ports" in fs[0].message


def test_acs_without_root_is_unknown_and_without_bridges_skip():
    assert [f.verdict for f in pcie.pcie_acs(lspci_out(NONROOT), {})] == [Verdict.UNKNOWN]
    assert [f.verdict for f in pcie.pcie_acs(lspci_out(A100_PARTIAL), {})] == [Verdict.SKIP]


def test_aer_fatal_fails_corrected_is_only_noted():
    fatal = pcie.pcie_aer(lspci_out(SWITCH), {})
    assert [f.verdict for f in fatal] == [Verdict.FAIL] and "DLP" in fatal[0].message
    assert any(line.startswith("UESta:") for line in fatal[0].evidence)
    corrected = pcie.pcie_aer(lspci_out(QUADRO), {})
    assert [f.verdict for f in corrected] == [Verdict.PASS] and "AdvNonFatalErr" in corrected[0].message


def test_aer_non_fatal_uncorrectable_warns():
    # synthetic: the real Supermicro GPU section with one non-fatal uncorrectable bit (CmpltTO) set
    t = text(SUPERMICRO).replace("UESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- "
                                 "UnsupReq- ACSViol-\n\t\tUEMsk:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- "
                                 "RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-\n\t\tUESvrt:\tDLP+ SDES+ TLP- FCP+ CmpltTO- "
                                 "CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-\n\t\tCESta:\tRxErr- "
                                 "BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-\n\t\tCEMsk:\tRxErr- BadTLP- "
                                 "BadDLLP- Rollover- Timeout- AdvNonFatalErr+\n\t\tAERCap:\tFirst Error Pointer: 00, "
                                 "ECRCGenCap- ECRCGenEn- ECRCChkCap- ECRCChkEn-\n\t\t\tMultHdrRecCap- MultHdrRecEn- "
                                 "TLPPfxPres- HdrLogCap-\n\t\tHeaderLog: 00000000 00000000 00000000 00000000\n\t"
                                 "Capabilities: [600 v1]",
                                 "UESta:\tDLP- SDES- TLP- FCP- CmpltTO+ CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- "
                                 "UnsupReq- ACSViol-\n\t\tUESvrt:\tDLP+ SDES+ TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- "
                                 "RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-\n\tCapabilities: [600 v1]")
    fs = pcie.pcie_aer({"lspci_vvv": ProbeOutput("lspci_vvv", "x", text=t)}, {})
    assert [f.verdict for f in fs] == [Verdict.WARN] and "CmpltTO" in fs[0].message


def test_bar1_reported_and_unassigned_bar_fails():
    ok = pcie.gpu_bar1(lspci_out(A100_PARTIAL), {})
    assert [f.verdict for f in ok] == [Verdict.PASS] and "64 GiB" in ok[0].message
    bad = pcie.gpu_bar1(lspci_out(BAR_UNASSIGNED), {})
    assert [f.verdict for f in bad] == [Verdict.FAIL] and "Above 4G" in bad[0].remedy


def test_missing_link_status_is_unknown_with_root_remedy_when_hidden():
    assert [f.verdict for f in pcie.pcie_width(lspci_out(A100_PARTIAL), {})] == [Verdict.UNKNOWN]
    # synthetic: the A100 section as a non-root lspci prints it (capabilities hidden)
    t = text(A100_PARTIAL).split("\tCapabilities: [60]")[0] + "\tCapabilities: <access denied>\n"
    fs = pcie.pcie_width({"lspci_vvv": ProbeOutput("lspci_vvv", "x", text=t)}, {})
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN] and "without root" in fs[0].message
    assert "sudo lspci" in fs[0].remedy


def _sysfs_pci(cur_w: str, max_w: str, cur_s: str, max_s: str) -> ProbeOutput:
    # synthetic sysfs tree for one H100 (the files wizard.parsers.gpu.parse_pci reads)
    base = "/sys/bus/pci/devices/0000:19:00.0/"
    files = {base + "vendor": "0x10de\n", base + "device": "0x2331\n", base + "class": "0x030200\n",
             base + "current_link_width": cur_w, base + "max_link_width": max_w,
             base + "current_link_speed": cur_s, base + "max_link_speed": max_s}
    return ProbeOutput("pci", "/sys/bus/pci/devices/*/...", files=files)


def test_sysfs_fallback_when_lspci_ran_without_root():
    o = lspci_out(NONROOT)
    o["pci"] = _sysfs_pci("8\n", "16\n", "2.5 GT/s PCIe\n", "32.0 GT/s PCIe\n")
    width = pcie.pcie_width(o, {})
    assert [f.verdict for f in width] == [Verdict.FAIL] and "x8" in width[0].message
    assert width[0].evidence[2] == "/sys/bus/pci/devices/0000:19:00.0/current_link_width:8"
    speed = pcie.pcie_speed(o, {})
    assert [f.verdict for f in speed] == [Verdict.WARN]
    o["pci"] = _sysfs_pci("16\n", "16\n", "32.0 GT/s PCIe\n", "32.0 GT/s PCIe\n")
    assert [f.verdict for f in pcie.pcie_width(o, {})] == [Verdict.PASS]


def test_lspci_probe_missing_is_unknown_not_pass():
    o = {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", rc=127, error="command not found: lspci")}
    for fn in pcie.LSPCI_CHECKS:
        assert {f.verdict for f in fn(o, {})} == {Verdict.UNKNOWN}, fn.__name__


def test_gpu_count_against_plan():
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=text(IOMMU_H200))}
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 8}), "health.lspci_gpu_count")[0].verdict is Verdict.PASS
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 9}), "health.lspci_gpu_count")[0].verdict is Verdict.FAIL
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 4}), "health.lspci_gpu_count")[0].verdict is Verdict.WARN
    whole_no_gpu = {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(NONROOT) * 2)}
    assert by_id(gpu_presence.lspci_gpus(whole_no_gpu, {}), "health.lspci_gpu_count")[0].verdict is Verdict.FAIL


def test_driver_binding_vfio_on_bare_metal_warns_nouveau_fails():
    # synthetic: the real H200 listing with the drivers edited
    vfio = text(IOMMU_H200).replace("(driver: nvidia)", "(driver: vfio-pci)")
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=vfio)}
    bare = by_id(gpu_presence.iommu_groups(o, {}), "health.gpu_driver_binding")
    assert {f.verdict for f in bare} == {Verdict.WARN} and len(bare) == 8
    vm = by_id(gpu_presence.iommu_groups(o, {"virtualization": True}), "health.gpu_driver_binding")
    assert [f.verdict for f in vm] == [Verdict.PASS]
    # synthetic: the real Supermicro GPU section without its "Kernel driver in use" line (module not loaded)
    t = text(SUPERMICRO).replace("\tKernel driver in use: nvidia\n", "")
    (nodrv,) = by_id(gpu_presence.lspci_gpus({"lspci_vvv": ProbeOutput("lspci_vvv", "x", text=t)}, {}), "health.gpu_driver_binding")
    assert nodrv.verdict is Verdict.WARN and "Kernel modules: nvidiafb, nouveau, nvidia_drm, nvidia" in nodrv.evidence
    nouveau = text(IOMMU_H200).replace("(driver: nvidia)", "(driver: nouveau)", 1)
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=nouveau)}
    assert Verdict.FAIL in {f.verdict for f in gpu_presence.iommu_groups(o, {})}


# ------------------------------------------------------------------ topology and P2P


def test_topo_matrix_parser_reads_pairs_nics_and_affinity():
    m = parse_topo_matrix(text(CASES / "nvidia-smi-topo__dgx-a100-nv12-12nic-partial.txt"))
    assert len(m.gpus) == 8 and len(m.nics) == 12 and list(m.rows) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert m.cell("GPU0", "NIC1") == "PXB" and m.cell("GPU5", "GPU2") == "NV12" and m.cell("GPU5", "GPU6") == ""
    assert m.affinity["GPU2"] == {"CPU Affinity": "16-31,144-159", "NUMA Affinity": "1", "GPU NUMA ID": "N/A"}
    old = parse_topo_matrix(text(PUBLIC / "nvidia-smi-topo__2gpu-nv3-bridge-old-format.txt"))
    assert old.cell("GPU0", "GPU1") == "NV3" and old.affinity["GPU1"]["CPU Affinity"] == "0-47"


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


# ------------------------------------------------------------------ NVLink


def test_nvlink_status_parser():
    rep = parse_nvlink(text(PUBLIC / "nvidia-smi-nvlink-s__v100-sxm2-gpu3-2-inactive-partial.txt"))
    (g,) = rep.gpus
    assert (g.index, g.name, g.active, g.inactive) == (3, "Tesla V100-SXM2-32GB", [0, 1, 2, 4], [3, 5])
    assert g.links[0] == 25.781 and rep.ellipsis


def test_nvlink_inactive_link_fails_against_the_sku_table():
    v100 = nvlink.nvlink(out("nvidia_smi_nvlink_s", PUBLIC / "nvidia-smi-nvlink-s__v100-sxm2-gpu3-2-inactive-partial.txt"), {})
    assert [f.verdict for f in v100] == [Verdict.FAIL] and v100[0].subject == "GPU 3"
    assert "4 of 6" in v100[0].message and "Link 3: <inactive>" in v100[0].evidence
    h100 = nvlink.nvlink(out("nvidia_smi_nvlink_s", SYNTHETIC / "synthetic_nvidia-smi-nvlink-s__8x-h100-gpu5-link7-inactive.txt"), {})
    assert [(f.verdict, f.subject) for f in h100 if f.verdict is not Verdict.PASS] == [(Verdict.FAIL, "GPU 5")]
    assert "17 of 18" in h100[0].message


def test_nvlink_pass_elided_and_consistency_rules():
    a100 = nvlink.nvlink(out("nvidia_smi_nvlink_s", PUBLIC / "nvidia-smi-nvlink-s__a100-sxm4-80gb-gpu0-p4de.txt"), {})
    assert [f.verdict for f in a100] == [Verdict.PASS] and "12/12" in a100[0].message
    elided = nvlink.nvlink(out("nvidia_smi_nvlink_s", PUBLIC / "nvidia-smi-nvlink-s__h100-abridged.txt"), {})
    assert [f.verdict for f in elided] == [Verdict.UNKNOWN]
    h800 = nvlink.nvlink(out("nvidia_smi_nvlink_s", SYNTHETIC / "synthetic_nvidia-smi-nvlink-s__4x-h800-gpu2-two-inactive.txt"), {})
    assert [(f.verdict, f.subject) for f in h800] == [(Verdict.FAIL, "GPU 2"), (Verdict.PASS, "host")]


def test_nvlink_slow_link_warns_and_pcie_sku_is_skipped():
    # synthetic: the real A100 output with one link slower than NVLink3's 25 GB/s
    t = text(PUBLIC / "nvidia-smi-nvlink-s__a100-sxm4-80gb-gpu0-p4de.txt").replace("Link 4: 25 GB/s", "Link 4: 12.5 GB/s")
    fs = nvlink.nvlink({"nvidia_smi_nvlink_s": ProbeOutput("nvidia_smi_nvlink_s", "x", text=t)}, {})
    assert [f.verdict for f in fs] == [Verdict.WARN] and "12.5" in fs[0].message
    # synthetic: an L40S lists links the same way when asked; the SKU has no NVLink (gpu_specs.csv)
    l40s = "GPU 0: NVIDIA L40S (UUID: GPU-1)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n"
    fs = nvlink.nvlink({"nvidia_smi_nvlink_s": ProbeOutput("nvidia_smi_nvlink_s", "x", text=l40s)}, {})
    assert [f.verdict for f in fs] == [Verdict.SKIP]


def test_sku_table_matching_order():
    assert nvlink.sku_row("NVIDIA H100 NVL")["sku"] == "H100 NVL"
    assert nvlink.sku_row("NVIDIA H100 80GB HBM3")["sku"] == "H100 SXM"
    assert nvlink.sku_row("NVIDIA H100 PCIe")["sku"] == "H100 PCIe"
    assert nvlink.sku_row("NVIDIA H200")["sku"] == "H200 SXM"
    assert nvlink.sku_row("NVIDIA GB200")["sku"] == "GB200/GB300" and nvlink.sku_row("NVIDIA B200")["sku"] == "B200"
    assert nvlink.sku_row("NVIDIA A100-SXM4-40GB")["links_expected"] == "12"
    assert nvlink.sku_row("NVIDIA A100 80GB PCIe")["mode"] == "bridge_optional"
    assert nvlink.sku_row("NVIDIA GeForce RTX 4090")["mode"] == "none" and nvlink.sku_row("") is None


def test_dcgmi_all_down_depends_on_the_sku():
    o = out("dcgmi_nvlink", DCGMI_DOWN)
    assert parse_dcgmi_nvlink(text(DCGMI_DOWN)).no_switches
    nvl = nvlink.dcgmi_nvlink(o, {"gpu_model": "H100 NVL"})
    assert {f.verdict for f in nvl} == {Verdict.FAIL} and "expects 12" in nvl[0].message
    assert nvl[0].evidence[:2] == ("gpuId 0:", "D D D D D D D D D D D D D D D D D D")
    l40s = nvlink.dcgmi_nvlink(o, {"gpu_model": "L40S"})
    assert {f.verdict for f in l40s} == {Verdict.SKIP} and "DCGM" in l40s[0].source
    a100pcie = nvlink.dcgmi_nvlink(o, {"gpu_model": "A100 80GB PCIe"})
    assert {f.verdict for f in a100pcie} == {Verdict.WARN}
    up = nvlink.dcgmi_nvlink(out("dcgmi_nvlink", PUBLIC / "dcgmi-nvlink__8x-h100-all-up.txt"), {"gpu_model": "H100 SXM5"})
    assert [f.verdict for f in up] == [Verdict.PASS] and "18/18" in up[0].message


def test_nvlink_error_counters_single_sample_is_never_a_fail():
    zero = nvlink.nvlink_errors(out("nvidia_smi_nvlink_e", PUBLIC / "nvidia-smi-nvlink-e__h100-abridged.txt"), {})
    assert [f.verdict for f in zero] == [Verdict.PASS] and "second sample" in zero[0].message
    two = text(SYNTHETIC / "synthetic_nvidia-smi-nvlink-e__two-samples-recovery-and-replay-growth.txt")
    first = two[:len(two) // 2]
    one = nvlink.nvlink_errors({"nvidia_smi_nvlink_e": ProbeOutput("nvidia_smi_nvlink_e", "x", text=first)}, {})
    assert [f.verdict for f in one] == [Verdict.WARN] and "lifetime" in one[0].message


def test_nvlink_error_counter_deltas():
    fs = nvlink.nvlink_errors(out("nvidia_smi_nvlink_e", SYNTHETIC /
                                 "synthetic_nvidia-smi-nvlink-e__two-samples-recovery-and-replay-growth.txt"), {})
    assert [(f.verdict, f.subject) for f in fs] == [(Verdict.FAIL, "GPU 0"), (Verdict.WARN, "GPU 1")]
    assert "Recovery Errors +2" in fs[0].message and "Replay Errors +5" in fs[1].message


# ------------------------------------------------------------------ kinds and probes


def test_kinds_registered_and_detect_my_public_and_synthetic_files():
    kinds = KINDS
    mine = {"lspci-vv", "lspci-iommu-groups", "nvidia-smi-topo-m", "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-status",
            "nvidia-smi-nvlink-errors", "dcgmi-nvlink-status"}
    assert mine <= set(kinds)
    expected = {"lspci-vv": "lspci-vv", "lspci-acsctl-grep": "lspci-vv", "lspci-iommu-groups": "lspci-iommu-groups", "nvidia-smi-topo__": "nvidia-smi-topo-m",
                "nvidia-smi-topo-p2p": "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-s": "nvidia-smi-nvlink-status",
                "nvidia-smi-nvlink-e": "nvidia-smi-nvlink-errors", "dcgmi-nvlink": "dcgmi-nvlink-status"}
    files = [p for d in (PUBLIC, SYNTHETIC) for p in sorted(d.iterdir())  # by name prefix: other areas' files
             if p.name.removeprefix("synthetic_").startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink",
                                                              "dcgmi-nvlink"))]  # may mention nvlink too
    assert len(files) >= 20
    for p in files:
        want = next(v for k, v in expected.items() if k in p.name)
        assert explain_text(text(p)).kind == want, p.name


def test_probes_are_registered_with_their_commands_and_feed_the_checks():
    names = {"lspci_vvv", "nvidia_smi_topo_m", "nvidia_smi_topo_p2p", "nvidia_smi_nvlink_s", "nvidia_smi_nvlink_e"}
    assert names <= set(registry.PROBES)
    argvs = {"nvidia_smi_topo_m": ["nvidia-smi", "topo", "-m"], "nvidia_smi_topo_p2p": ["nvidia-smi", "topo", "-p2p", "r"],
             "nvidia_smi_nvlink_s": ["nvidia-smi", "nvlink", "-s"], "lspci_vvv": ["lspci", "-D", "-nn", "-vvv"]}
    data = {"nvidia_smi_topo_m": CASES / "nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt",
            "nvidia_smi_topo_p2p": PUBLIC / "nvidia-smi-topo-p2p__8x-h100-ok.txt",
            "nvidia_smi_nvlink_s": PUBLIC / "nvidia-smi-nvlink-s__a100-sxm4-80gb-gpu0-p4de.txt",
            "lspci_vvv": SUPERMICRO}
    ops = [Operation("command", command_key(argv), argv=argv, rc=0, stdout=data[n].read_bytes())
           for n, argv in argvs.items()]
    got = asyncio.run(probes.collect(SnapshotHost(ops), registry.probes_named(names)))
    assert got["nvidia_smi_topo_m"].source == "$ nvidia-smi topo -m"
    assert overall(topology_rules.topology(got, {})) is Verdict.PASS
    assert overall(topology_rules.p2p(got, {})) is Verdict.PASS
    assert overall(nvlink.nvlink(got, {})) is Verdict.PASS
    assert overall(pcie.lspci_all(got, {})) is Verdict.WARN  # idle 2.5 GT/s: re-check under load
    assert got["nvidia_smi_nvlink_e"].error  # not in this snapshot
    assert [f.verdict for f in nvlink.nvlink_errors(got, {})] == [Verdict.UNKNOWN]


def test_every_finding_has_source_and_remedy_when_not_pass():
    inputs = [(pcie.lspci_all, lspci_out(SWITCH)), (pcie.lspci_all, lspci_out(QUADRO)),
              (topology_rules.topology, out("nvidia_smi_topo_m", SYNTHETIC / "synthetic_nvidia-smi-topo__8x-h100-gpu2-gpu5-nv17.txt")),
              (topology_rules.p2p, out("nvidia_smi_topo_p2p", PUBLIC / "nvidia-smi-topo-p2p__2x-l4-cns.txt")),
              (nvlink.dcgmi_nvlink, out("dcgmi_nvlink", DCGMI_DOWN)),
              (nvlink.nvlink_errors, out("nvidia_smi_nvlink_e", SYNTHETIC /
                                        "synthetic_nvidia-smi-nvlink-e__two-samples-recovery-and-replay-growth.txt"))]
    for fn, o in inputs:
        for f in fn(o, {}):
            assert f.source and f.id.startswith("health.") and f.message
            if f.verdict in (Verdict.WARN, Verdict.FAIL, Verdict.UNKNOWN):
                assert f.remedy, f
            if f.verdict in (Verdict.WARN, Verdict.FAIL):
                assert f.evidence and all(isinstance(e, str) for e in f.evidence)
