"""Tests of wizard/parsers/pcie.py."""

from __future__ import annotations

from wizard.parsers.pcie import device_label, marketing_name, parse_header, parse_iommu_groups, parse_link, parse_lspci

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text

SUPERMICRO = PUBLIC / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"


NONROOT = PUBLIC / "lspci-vv__asus-esc4000-g2-nonroot-access-denied-excerpt.txt"


SWITCH = SYNTHETIC / "synthetic_lspci-vvv__pcie-switch-acs-on-h100pcie-x8-aer-fatal.txt"


A100_PARTIAL = CASES / "lspci-vv__a100-sxm4-header-partial.txt"


QUADRO = CASES / "lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt"


IOMMU_H200 = CASES / "lspci-iommu-groups__h200-sxm-8gpu-nvswitch-partial.txt"


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


def test_a_listing_pasted_many_times_has_each_bridge_once_and_stays_linear():
    """issue 11 (fuzz): parents() scanned every device for every device, and the ACS rule asked it for every bridge
    and GPU: a 4 MiB paste of one listing repeated ran past 120 s. Each bus id is now one node of the tree (the first
    listed), the index is built once, and parents() lists at most MAX_PCIE_DEPTH bridges."""
    import time

    from wizard.parsers.pcie import MAX_PCIE_DEPTH
    from wizard.rules.pcie import pcie_acs
    from wizard.probes import ProbeOutput

    once = text(SWITCH)
    f = parse_lspci(once * 300)
    g = next(d for d in f.gpus if d.bus_id == "0000:19:00.0")
    assert [p.bus_id for p in f.parents(g)] == ["0000:18:08.0", "0000:17:00.0", "0000:16:01.0"]  # not 300 copies each
    assert len({id(p) for d in f.devices for p in f.parents(d)}) <= len({d.bus_id for d in f.devices})
    assert all(len(f.parents(d)) <= MAX_PCIE_DEPTH for d in f.devices)
    t0 = time.process_time()
    judged = pcie_acs({"lspci_vvv": ProbeOutput(name="lspci_vvv", source="pasted", text=once * 300)}, {})
    assert judged and time.process_time() - t0 < 30  # generous: quadratic took minutes at this size
    assert [x.verdict for x in judged] == [x.verdict for x in pcie_acs({"lspci_vvv": ProbeOutput(name="lspci_vvv", source="pasted",
                                                                                                 text=once)}, {})]


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


ACS_GREP = PUBLIC / "lspci-acsctl-grep__nccl606-amd-switch-srcvalid.txt"


def test_grep_lines_are_one_function_each():
    facts = parse_lspci(text(ACS_GREP))
    assert facts.acs_grep and len(facts.devices) == 9
    assert [d.acs_ctl["SrcValid"] for d in facts.devices] == [True, True, False, False, False, False, False, True, True]
    # ACSCap/ACSCtl pairs of `grep ACS` split the same way
    pair = "\t\tACSCap:\tSrcValid+ TransBlk+\n\t\tACSCtl:\tSrcValid+ TransBlk-\n"
    assert len(parse_lspci(pair * 3).devices) == 3


def test_the_control_line_is_read_as_flags():
    """Real (NVIDIA/nvtrust#51): `Control: I/O- Mem+ BusMaster- ...` on an H100 that no driver has enabled."""
    from wizard.parsers.pcie import parse_lspci

    facts = parse_lspci(text(PUBLIC / "lspci-vvv__nvtrust51-h100-2331-busmaster-off-irq255-msi-off-header-partial.txt"))
    (g,) = facts.gpus
    assert g.control is not None and g.control["BusMaster"] is False and g.control["Mem"] is True
    assert g.control_line.startswith("Control: I/O- Mem+ BusMaster-")
