"""wizard/parsers/cuda_samples.py on real deviceQuery, bandwidthTest and p2pBandwidthLatencyTest outputs."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from wizard.parsers.cuda_samples import (
    detect_bandwidth_test,
    detect_device_query,
    detect_p2p_test,
    parse_bandwidth_test,
    parse_device_query,
    parse_p2p_test,
    strip_editor_line_numbers,
)

from tests.probe_data import PUBLIC, text
from tests.strategies import mutated


def body(name: str) -> str:
    return text(PUBLIC / name)


def test_device_query_pass_reads_count_device_and_result() -> None:
    t = body("deviceQuery__geforce-920mx-cuda11.1-pass.txt")
    assert detect_device_query(t) >= 0.9
    dq = parse_device_query(t)
    assert dq.detected == 1 and dq.numdevs == 1 and dq.result == "PASS"
    d = dq.devices[0]
    assert (d.index, d.name, d.compute_capability, d.memory_mib) == (0, "GeForce 920MX", "5.0", 2004.0)
    assert (d.driver_cuda, d.runtime_cuda, d.pci_bus) == ("11.1", "11.1", 3)
    assert not dq.problems


def test_device_query_result_at_the_end_of_its_summary_line_is_read() -> None:
    """Held-out round 112: the paste lost the newline before "Result = PASS", which ends the summary line."""
    dq = parse_device_query(body("devicequery__4xa100-80gb-pcie-cuda12.4-all-peer-access-yes-pass-partial.txt"))
    assert dq.result == "PASS" and dq.numdevs == 4


def test_device_query_error_reads_number_text_and_fail() -> None:
    dq = parse_device_query(body("deviceQuery__docker-without-nvidia-runtime-returned-35-fail.txt"))
    assert dq.error_code == 35
    assert dq.error_text == "CUDA driver version is insufficient for CUDA runtime version"
    assert dq.result == "FAIL" and dq.detected is None and not dq.devices


def test_bandwidth_test_reads_mb_and_gb_units_as_gb_s() -> None:
    bt = parse_bandwidth_test(body("bandwidthTest__gtx1080-cuda9-11.3gbs-pass.txt"))  # MB/s, no indentation
    got = {(m.direction, m.memory): round(m.gb_s, 2) for m in bt.measures}
    assert got == {("h2d", "pinned"): 11.26, ("d2h", "pinned"): 12.88, ("d2d", "pinned"): 231.17}
    assert bt.devices[0][1] == "GeForce GTX 1080" and bt.result == "PASS"
    bt = parse_bandwidth_test(body("bandwidthTest__rtx6000ada-gen4-26.8gbs-pass.txt"))  # GB/s
    assert {(m.direction, m.gb_s) for m in bt.measures} == {("h2d", 26.8), ("d2h", 26.3), ("d2d", 4374.1)}


def test_bandwidth_test_banner_without_bracket_is_still_recognised() -> None:
    t = body("bandwidthTest__p100-pcie-numactl-remote-node-3.8gbs-partial.txt")
    assert detect_bandwidth_test(t) >= 0.9
    assert not parse_bandwidth_test(t).result


def test_p2p_matrices_connectivity_and_access_lines() -> None:
    p = parse_p2p_test(body("p2pBandwidthLatencyTest__2x-rtx4090-525-p2p-disabled-geforce.txt"))
    assert p.access == {(0, 1): False, (1, 0): False}
    conn = p.matrix("Connectivity")
    assert conn is not None and conn.values == {0: {0: 1.0, 1: 0.0}, 1: {0: 0.0, 1: 1.0}}
    on = p.matrix("Unidirectional", "Enabled")
    assert on is not None and on.values[0][1] == 22.18
    assert "P2P=Enabled Latency (P2P Writes) Matrix (us) CPU" in p.matrices  # the latency's CPU half kept apart
    assert p.devices[1][0] == "NVIDIA GeForce RTX 4090"


def test_p2p_tab_separated_rows_and_headless_excerpt() -> None:
    p = parse_p2p_test(body("p2pBandwidthLatencyTest__dgx2-12x-v100-sxm3-nvswitch-145gbs-excerpt.txt"))
    conn = p.matrix("Connectivity")
    assert conn is not None and len(conn.values) == 12 and all(v == 1.0 for r in conn.values.values() for v in r.values())
    t = body("p2pBandwidthLatencyTest__6gpu-p2p-enabled-9.9gbs-below-disabled-22gbs-partial.txt")
    assert detect_p2p_test(t) >= 0.9
    p = parse_p2p_test(t)
    assert p.matrix("Enabled", "Reads") is not None and p.matrix("Disabled") is not None and not p.problems


def test_detectors_do_not_claim_each_other() -> None:
    dq = body("deviceQuery__geforce-920mx-cuda11.1-pass.txt")
    bt = body("bandwidthTest__gtx780ti-11.6gbs-pass.txt")
    p2p = body("p2pBandwidthLatencyTest__2x-rtx6000ada-pcie-p2p-enabled-26gbs.txt")
    assert detect_bandwidth_test(dq) == detect_p2p_test(dq) == 0.0
    assert detect_device_query(bt) == detect_p2p_test(bt) == 0.0
    assert detect_device_query(p2p) == detect_bandwidth_test(p2p) == 0.0


def test_nvbandwidth_matrices_names_and_waived():
    from wizard.parsers.cuda_samples import detect_nvbandwidth, parse_nvbandwidth
    t = (PUBLIC / "nvbandwidth__rtx3050-laptop-v08-all-testcases.txt").read_text()
    nb = parse_nvbandwidth(t)
    assert detect_nvbandwidth(t) >= 0.9 and nb.version == "v0.8"
    assert nb.devices[0][0] == "NVIDIA GeForce RTX 3050 Laptop GPU"
    h2d = nb.testcases[0]
    assert (h2d.name, h2d.direction, h2d.engine, h2d.values[0][0], h2d.total) == ("host_to_device_memcpy_ce", "h2d", "ce", 12.98, 12.98)
    assert len(nb.waived) == 17
    d2d = parse_nvbandwidth((PUBLIC / "nvbandwidth__6xa6000-v08-d2d-read-ce.txt").read_text()).testcases[0]
    assert d2d.name == "device_to_device_memcpy_read_ce" and d2d.values[0][0] is None and d2d.values[0][1] == 26.34
    err = parse_nvbandwidth((PUBLIC / "nvbandwidth__8xa100sxm4-v07-d2d-read-pattern-assert.txt").read_text())
    assert err.error_testcase == "device_to_device_memcpy_read_ce" and any("ASSERT" in x for x in err.error_lines)
    assert detect_nvbandwidth("Host to Device Bandwidth, 1 Device(s)\nPINNED Memory Transfers") == 0.0


LATENCY_49MS = "p2pBandwidthLatencyTest__transformers20438-8gpu-enabled-latency-49ms-every-pair.txt"
LATENCY_4GPU = "p2pBandwidthLatencyTest__cudasamples230-4gpu-latency-matrices-editor-line-numbers.txt"


def test_p2p_latency_only_pastes_are_recognised_and_read() -> None:
    """A paste of the latency matrices alone (no banner, no bandwidth matrix) is p2pBandwidthLatencyTest output:
    the indented 8-GPU P2P=Enabled matrix of huggingface/transformers#20438 and the 4-GPU matrices of
    NVIDIA/cuda-samples#230, which carry the editor's line numbers."""
    t = body(LATENCY_49MS)
    assert detect_p2p_test(t) >= 0.9
    on = parse_p2p_test(t).matrix("Enabled", "Latency")
    assert on is not None and on.cols == list(range(8))
    assert (on.values[0][0], on.values[0][1], on.values[7][6]) == (4.95, 49206.88, 49206.50)
    t = body(LATENCY_4GPU)
    assert detect_p2p_test(t) >= 0.9
    p = parse_p2p_test(t)
    assert list(p.matrices) == ["P2P=Disabled Latency Matrix (us)", "P2P=Disabled Latency Matrix (us) CPU",
                                "P2P=Enabled Latency (P2P Writes) Matrix (us)",
                                "P2P=Enabled Latency (P2P Writes) Matrix (us) CPU"]
    assert p.matrices["P2P=Enabled Latency (P2P Writes) Matrix (us)"].values[2] == {0: 1.81, 1: 1.83, 2: 2.07, 3: 2.31}
    assert p.matrices["P2P=Disabled Latency Matrix (us)"].values[0][2] == 19.61 and not p.problems


def test_editor_line_numbers_are_dropped_only_when_every_line_counts_up() -> None:
    numbered = body(LATENCY_4GPU)
    plain = strip_editor_line_numbers(numbered)
    assert plain.splitlines()[:3] == ["P2P=Disabled Latency Matrix (us)", "   GPU     0      1      2      3",
                                      "     0   2.61  14.95  19.61  14.42"]
    assert plain.splitlines()[6] == ""  # "  7" alone was a blank line
    for untouched in (plain, body(LATENCY_49MS),
                      numbered.replace("  3      0", "  9      0"),  # a gap in the count: not an editor's numbering
                      "   GPU     0      1\n     0   1.39   1.12\n     1   1.14   1.42\n"):  # rows under their column line
        assert strip_editor_line_numbers(untouched) == untouched
    assert strip_editor_line_numbers(plain) == plain


def test_latency_detector_does_not_claim_other_outputs() -> None:
    assert detect_p2p_test("Latency Matrix (us) was fine\nGPU 0 1\n") == 0.0
    assert detect_device_query(body(LATENCY_4GPU)) == detect_bandwidth_test(body(LATENCY_4GPU)) == 0.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated([PUBLIC / LATENCY_49MS, PUBLIC / LATENCY_4GPU],
               ["  1 ", "\n", " ", "GPU", "CPU", "P2P=Enabled Latency (P2P Writes) Matrix (us)", "9" * 400, "1.5"]))
def test_mutated_latency_pastes_never_raise(t: str) -> None:
    assert 0.0 <= detect_p2p_test(t) <= 1.0
    p = parse_p2p_test(t)
    assert isinstance(p.problems, list)
    strip_editor_line_numbers(t)
