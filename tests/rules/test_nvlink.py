"""Tests of wizard/rules/nvlink.py."""

from __future__ import annotations

import re
from pathlib import Path

from wizard.model import Verdict
from wizard.parsers.topology import parse_dcgmi_nvlink
from wizard.probes import ProbeOutput
from wizard.rules import nvlink

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text

DCGMI_DOWN = CASES / "dcgmi-nvlink__h100nvl-all-links-down.txt"


def out(name: str, path: Path) -> dict[str, ProbeOutput]:
    return {name: ProbeOutput(name, f"$ {name}", text=text(path))}


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


def test_a_saturated_nvlink_error_counter_fails_in_one_sample():
    """Real (V100 SXM2 notes): GPU 2 link 0 CRC Errors 65535 (a 16-bit counter at its maximum) fails; other non-zero
    lifetime totals in one sample only warn."""
    from wizard.explain import explain_text

    e = explain_text(text(PUBLIC / "nvlink-e__2x-v100-sxm2-link3-replay-2353-link0-crc-65535-condensed.txt"))
    (f,) = [x for x in e.findings if x.id == "health.nvlink_errors"]
    assert f.verdict is Verdict.FAIL and "GPU 2 link 0 CRC Errors 65535" in f.message and "saturated" in f.message
    assert "GPU 0 link 3" not in f.message


def test_inactive_links_of_a_single_bridgeable_card_are_expected():
    """The real `nvidia-smi nvlink -s` of one GeForce RTX 2080 SUPER (held-out round 12): 'all links are inActive'
    with one GPU listed: a bridge joins two cards, so nothing to judge (skip), not a warning about a bridge."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "nvidia-smi-nvlink-s__rtx2080super-links-inactive-one-gpu.txt"))
    (f,) = r.findings
    assert f.verdict is Verdict.SKIP and "one GPU listed" in f.message


def test_nvlink_throughput_counters_pass_warn_on_an_idle_link_and_unknown_when_nothing_ran():
    """``nvidia-smi nvlink -gt d`` (real: 6 bridged A100 PCIe, held-out round 128; 8 V100 SXM2, round 124): every link
    carried data -> health.nvlink PASS (use, not speed); the same output with one link's counters zeroed (synthetic,
    built here) -> WARN naming GPU and link; all zero -> UNKNOWN (nothing ran since the reset)."""
    from wizard.explain import explain_text

    real = text(PUBLIC / "nvidia-smi-nvlink-gt-d__6xa100-pcie-40gb-bridged-pairs-all-12-links-carrying-traffic.txt")
    r = explain_text(real, "gt")
    assert r.kind == "nvidia-smi-nvlink-throughput" and r.verdict is Verdict.PASS
    assert "all 72 NVLink link(s) of 6 GPU(s)" in r.findings[0].message
    v100 = explain_text(text(PUBLIC / "nvlink-throughput-gt-d__8xv100-sxm2-all-48-links-carrying-traffic-healthy.txt"), "v")
    assert v100.verdict is Verdict.PASS and "48" in v100.findings[0].message
    lines = real.splitlines()
    first_gpu1 = next(i for i, ln in enumerate(lines) if ln.startswith("GPU 1:"))
    idle = [re.sub(r": \d+ KiB", ": 0 KiB", ln) if i < first_gpu1 and re.match(r"\s*Link 3:", ln) else ln
            for i, ln in enumerate(lines)]
    w = explain_text("\n".join(idle), "synthetic_idle_link")
    assert w.verdict is Verdict.WARN and "GPU 0 link 3" in w.findings[0].message
    zero = explain_text(re.sub(r": \d+ KiB", ": 0 KiB", real), "synthetic_all_zero")
    assert zero.verdict is Verdict.UNKNOWN and "nothing has run over NVLink" in zero.findings[0].message
