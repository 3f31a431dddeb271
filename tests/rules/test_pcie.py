"""Tests of wizard/rules/pcie.py."""

from __future__ import annotations

import re
from pathlib import Path

from wizard.explain import explain_text
from wizard.model import Finding, Verdict, overall
from wizard.parsers.pcie import detect_lspci, parse_lspci
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.rules import pcie

from tests.outputs import only
from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def test_aer_counters_from_sysfs_synthetic_gpu():
    """sysfs aer_dev_* counters (format of drivers/pci/pcie/aer.c: 'Name count' lines and a TOTAL
    line; synthetic values): fatal -> fail, non-fatal -> warn, zero -> pass."""
    base = "/sys/bus/pci/devices/0000:9b:00.0"
    files = {
        f"{base}/vendor": "0x10de\n", f"{base}/class": "0x030200\n", f"{base}/device": "0x2330\n",
        f"{base}/aer_dev_correctable": "RxErr 0\nBadTLP 3\nTOTAL_ERR_COR 3\n",
        f"{base}/aer_dev_nonfatal": "Undefined 0\nCmpltTO 2\nTOTAL_ERR_NONFATAL 2\n",
        f"{base}/aer_dev_fatal": "Undefined 0\nSurpriseDown 0\nTOTAL_ERR_FATAL 0\n",
    }
    out = {"pci": ProbeOutput("pci", "sysfs", files=files)}
    f = only(pcie.aer_counters(out, {}))
    assert f.verdict is Verdict.WARN and "2 uncorrectable" in f.message and "0000:9b:00.0" in f.subject
    assert f"{base}/aer_dev_nonfatal:CmpltTO 2" in f.evidence
    files[f"{base}/aer_dev_fatal"] = "Undefined 0\nSurpriseDown 1\nTOTAL_ERR_FATAL 1\n"
    assert only(pcie.aer_counters(out, {})).verdict is Verdict.FAIL
    gpu = only(gc.gpu_pci(out, {}))
    assert gpu.verdict is Verdict.PASS and "H100" in gpu.message  # the id resolved to a name


SUPERMICRO = PUBLIC / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"


NONROOT = PUBLIC / "lspci-vv__asus-esc4000-g2-nonroot-access-denied-excerpt.txt"


SWITCH = SYNTHETIC / "synthetic_lspci-vvv__pcie-switch-acs-on-h100pcie-x8-aer-fatal.txt"


BAR_UNASSIGNED = SYNTHETIC / "synthetic_lspci-vv__h100pcie-bar1-unassigned.txt"


A100_PARTIAL = CASES / "lspci-vv__a100-sxm4-header-partial.txt"


QUADRO = CASES / "lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt"


def lspci_out(path: Path) -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(path))}


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


def test_a_connectx_nic_link_below_its_capability_warns_with_what_it_carries():
    # real: a Gen5 x16 ConnectX-7 trained at Gen4 x8 (kvm@vger.kernel.org, round 26 of the held-out outputs)
    out = lspci_out(PUBLIC / "lspci__connectx7-gen5x16-at-gen4x8.txt")
    (w,) = pcie.pcie_width(out, {})
    assert (w.verdict, w.subject) == (Verdict.WARN, "NIC 0000:b1:00.1") and "x8 (downgraded)" in w.message
    assert "126 Gb/s" in w.message and "bifurcate" in w.remedy  # 16 GT/s x 8 lanes x 128/130 / 8 = 15.75 GB/s
    (s,) = pcie.pcie_speed(out, {"under_load": True})  # a NIC keeps its trained speed: never the GPU's idle excuse
    assert s.verdict is Verdict.WARN and "older PCIe generation" in s.message
    assert pcie.pcie_width(out, {})[0].verdict is not Verdict.FAIL  # unlike a GPU's narrow link


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
        # the BIOS stage runs before os.tools installs lspci: each says which step installs it, not only "run lspci"
        assert all(f.remedy.startswith("lspci is not installed yet: the os.tools step's action installs it "
                                       "(pciutils)") for f in fn(o, {})), fn.__name__


ACS_GREP = PUBLIC / "lspci-acsctl-grep__nccl606-amd-switch-srcvalid.txt"


EPYC = PUBLIC / "lspci-vvv__epyc-rome-gpp-bridge-acs-on-elided.txt"


HARDWARE_ADVICE = re.compile(r"reseat|power cable|above 4g", re.IGNORECASE)


def by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def words(f: Finding) -> str:
    return " ".join([f.message, f.subject, f.remedy, *f.evidence])


def lspci_out_nccl_acs(body: str, source: str = "lspci -vv (pasted)") -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", source, text=body)}


def test_acsctl_grep_is_recognised_and_srcvalid_plus_warns_on_bare_metal():
    body = text(ACS_GREP)
    assert detect_lspci(body) >= 0.9
    e = explain_text(body)
    assert e.kind == "lspci-vv"
    assert [(f.id, f.verdict) for f in e.findings] == [("health.pcie_acs", Verdict.WARN)]
    f = e.findings[0]
    assert "4 of 9" in f.message and "SrcValid+" in f.message
    assert len(f.evidence) == 4 and all("SrcValid+" in x for x in f.evidence)
    assert "setpci" in f.remedy and "ACSCtl" in f.remedy and "troubleshooting" in f.source.lower()
    assert "nccl#606" in f.source


def test_acsctl_grep_on_a_vm_host_and_with_acs_off_pass():
    body = text(ACS_GREP)
    assert [f.verdict for f in pcie.pcie_acs(lspci_out_nccl_acs(body), {"virtualization": True})] == [Verdict.PASS]
    off = body.replace("SrcValid+", "SrcValid-")  # in memory: the same lines with ACS off
    fs = pcie.lspci_all(lspci_out_nccl_acs(off), {})
    assert [(f.id, f.verdict) for f in fs] == [("health.pcie_acs", Verdict.PASS)] and "9 function" in fs[0].message


def test_excerpt_without_gpu_gives_no_hardware_advice_and_warns_on_acs():
    e = explain_text(text(EPYC))
    assert e.kind == "lspci-vv"
    count = by_id(e.findings, "health.lspci_gpu_count")
    assert [f.verdict for f in count] == [Verdict.SKIP] and "not a whole bus scan" in count[0].message
    assert not any(HARDWARE_ADVICE.search(words(f)) for f in e.findings)
    assert {f.verdict for f in e.findings if f.id in ("health.pcie_width", "health.pcie_speed", "health.pcie_aer",
                                                      "health.bar1")} == {Verdict.SKIP}
    acs = by_id(e.findings, "health.pcie_acs")
    assert [f.verdict for f in acs] == [Verdict.WARN]
    assert "0000:40:01.1" in acs[0].message and "does not show what is behind it" in acs[0].message
    assert any(x.startswith("ACSCtl:") and "SrcValid+" in x for x in acs[0].evidence)
    assert "lspci -tv" in acs[0].remedy and "nccl#2079" in acs[0].source


def _switch_with_root_acs() -> str:
    """The synthetic switch listing with ACS moved, in memory, from the switch's downstream port 18:08.0 to
    the root port 16:01.0 above the switch (an ACSCtl line added to its section)."""
    body = text(SWITCH).replace("ACSCtl:\tSrcValid+", "ACSCtl:\tSrcValid-")
    head, rest = body.split("0000:17:00.0", 1)
    head = head.rstrip("\n") + ("\n\tCapabilities: [220 v1] Access Control Services\n"
                                "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- "
                                "DirectTrans-\n\n")
    return head + "0000:17:00.0" + rest


def test_acs_on_a_root_port_above_a_switch_warns():
    fs = pcie.pcie_acs(lspci_out_nccl_acs(_switch_with_root_acs()), {})
    assert [f.verdict for f in fs] == [Verdict.WARN]
    m = fs[0].message
    assert "0000:16:01.0 (Root Port" in m and "above PCIe switch 0000:17:00.0" in m
    assert "above GPU 0000:19:00.0, 0000:1a:00.0" in m and "0000:18:08.0" not in m
    assert any(x.startswith("ACSCtl:") for x in fs[0].evidence) and "setpci" in fs[0].remedy
    assert [f.verdict for f in pcie.pcie_acs(lspci_out_nccl_acs(_switch_with_root_acs()), {"virtualization": True})] == [
        Verdict.PASS]


def test_acs_on_a_root_port_that_no_gpu_sits_behind_passes():
    fs = pcie.pcie_acs(lspci_out_nccl_acs(text(SUPERMICRO)), {})
    assert [f.verdict for f in fs] == [Verdict.PASS]
    assert "0000:60:07.1" in fs[0].message and "no GPU or PCIe switch behind it" in fs[0].message



def test_short_device_list_judges_gpus_only_and_says_links_are_not_in_it():
    from wizard.rules.pcie import lspci_all

    body = text(PUBLIC / "lspci-grep-nvidia__hgx-a100-8gpu-6-nvswitch-fm-guide.txt")
    fs = lspci_all({"lspci_vvv": ProbeOutput("lspci_vvv", "lspci -vv (pasted)", text=body)}, {"gpu_count": 8})
    assert {f.id: f.verdict for f in fs} == {"health.lspci_gpu_count": Verdict.PASS, "health.pcie_width": Verdict.SKIP}
    (skip,) = [f for f in fs if f.verdict is Verdict.SKIP]
    assert "without lspci's -vv detail" in skip.message and "lspci -vvv" in skip.remedy


def test_link_width_speed_and_replays_carry_the_measured_figure_against_their_limit():
    """The number each verdict compared, in structured form, on real outputs: the Supermicro AS-4124GS excerpt
    (width x16 of LnkCap x16 passes with its figure; LnkSta 2.5 GT/s against LnkCap 8 GT/s warns), the real A10G
    nvidia-smi -q -x in a VM (x8 of x16), and the real 8x H100 -q with 67 PCIe replays on GPU 0."""
    from wizard.model import Measure

    (w,) = [f for f in pcie.pcie_width(lspci_out(SUPERMICRO), {}) if f.verdict is Verdict.PASS]
    assert w.measured == Measure(16, 16, "lanes", "at_least", "0000:61:00.0 link width") and w.measured.met
    (s,) = pcie.pcie_speed(lspci_out(SUPERMICRO), {})
    assert s.verdict is Verdict.WARN and s.measured == Measure(2.5, 8, "GT/s", "at_least", "0000:61:00.0 link speed")
    assert s.measured.met is False  # the figure is below its limit; the verdict (warn, idle) is the rule's
    (pw,) = [f for f in explain_text(text(CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml")).findings
             if f.id == "health.pcie_width"]
    assert pw.verdict is Verdict.WARN and pw.measured.text() == "GPU 0 (0000:00:1e.0) link width: 8 lanes, expected ≥ 16 lanes"
    replays = [f for f in explain_text(text(CASES / "nvidia-smi-q__8x-h100-sxm-hw-power-brake-slowdown-active-all-gpus.txt"))
               .findings if f.id == "health.pcie_replay"]
    assert len(replays) == 8 and replays[0].measured == Measure(67, 8, "replays", "at_most",
                                                                "GPU 0 (0000:19:00.0) PCIe replays since reset")


def test_nvidia_smis_x8_of_x16_warns_on_a_pcie_card_and_fails_on_an_sxm_module():
    """The real XML of a Quadro P2000 at x8 of x16 (held-out round 12): nvidia-smi's maximum is the GPU's own, so a
    card in a slot wired x8 reads the same as a link that trained down: warn, saying how to tell; the same reading on
    an SXM module (synthetic_: the name changed to an H100 SXM, which sits on a baseboard, no slot) fails."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text

    body = text(PUBLIC / "nvidia-smi-q-x__quadro-p2000-xml-x8-link.xml")
    (w,) = [f for f in explain_text(body).findings if f.id == "health.pcie_width"]
    assert w.verdict is Verdict.WARN and "x8, narrower than its maximum x16" in w.message and "LnkCap" in w.message
    sxm = body.replace("Quadro P2000", "NVIDIA H100 80GB HBM3")
    (f,) = [f for f in explain_text(sxm).findings if f.id == "health.pcie_width"]
    assert f.verdict is Verdict.FAIL and "LnkCap" not in f.message


def test_a_lnkcap_speed_lspci_cannot_name_is_unknown_not_a_pass():
    """Held-out round 47 (ConnectX-7 under an older pciutils): 'LnkCap: Port #0, Speed unknown, Width x16' with LnkSta
    16GT/s: the top speed is not known, so the speed is unknown (the width still passes)."""
    r = explain_text(text(PUBLIC / "lspci-vv__cx7-lnkcap-speed-unknown.txt"), "x")
    speed = [f for f in r.findings if f.id == "health.pcie_speed"]
    assert [f.verdict for f in speed] == [Verdict.UNKNOWN] and "'unknown' to this lspci" in speed[0].message
    assert [f.verdict for f in r.findings if f.id == "health.pcie_width"] == [Verdict.PASS]


def test_a_gpu_missing_bar0_and_bar1_fails_and_sriov_vf_bars_are_not_its_own() -> None:
    """Held-out r97: an L20 whose lspci lists only "Region 3" (BAR0, BAR1 not assigned) passed health.bar1, because
    the SR-IOV capability's VF "Region 0/1" lines further down were read as the function's own BARs."""
    e = explain_text(text(PUBLIC / "lspci-vv__l20-gen4-x16-ok-bar0-bar1-missing-only-bar3-vfio-pci.txt"))
    bar = [f for f in e.findings if f.id == "health.bar1"]
    assert [f.verdict for f in bar] == [Verdict.FAIL]
    assert "BAR(s) 0, 1 missing (lspci lists only BAR(s) 3)" in bar[0].message
    facts = parse_lspci(text(PUBLIC / "lspci-vv__l20-gen4-x16-ok-bar0-bar1-missing-only-bar3-vfio-pci.txt"))
    assert [r.index for r in facts.gpus[0].regions] == [3]  # not the VF BARs 0, 1, 3 of the SR-IOV capability


def test_a_grace_superchip_gpu_behind_a_slower_pcie_host_side_passes():
    """Held-out round 159: 4x GB300, PCIe Gen6 GPUs on a Gen4 host side: their host path is NVLink-C2C."""
    r = explain_text(text(PUBLIC / "nvidia-smi-q-x__4xgb300-idle-healthy-no-remaps.txt"))
    speeds = [f for f in r.findings if f.id == "health.pcie_speed"]
    assert speeds and all(f.verdict is Verdict.PASS for f in speeds) and "NVLink-C2C" in speeds[0].message
