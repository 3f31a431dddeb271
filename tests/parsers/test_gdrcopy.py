"""Tests of wizard/parsers/gdrcopy.py on real GDRCopy test-program outputs (NVIDIA/gdrcopy issues)."""

from __future__ import annotations

from hypothesis import given

from wizard.parsers.gdrcopy import GDRCOPY_MB_BYTES, detect_gdrcopy, parse_gdrcopy

from tests.probe_data import PUBLIC, text
from tests.strategies import TOOLS_FUZZ, tools_inputs


def test_sanity_summary_failed_and_waived_lists_assertion_and_exit_line() -> None:
    r = parse_gdrcopy(text(PUBLIC / "gdrcopy__sanity-basic-with-tokens-fail.txt"))
    assert r.program == "gdrcopy_sanity" and r.command_line.endswith("# gdrcopy_sanity")
    assert (r.total, r.passed, r.failed, r.waived) == (28, 25, 1, 2)
    assert r.failed_tests == ["basic_with_tokens"]
    assert r.waived_tests == ["invalidation_access_after_free_cumemalloc", "invalidation_access_after_free_vmmalloc"]
    assert len(r.assertions) == 1 and "gdr_pin_buffer" in r.assertions[0] and "sanity.cpp:274" in r.assertions[0]
    assert r.errors == ["Error: Encountered an error or a test failure with status=1"]
    assert not r.open_errors and not r.problems


def test_copybw_gpus_mapping_and_bandwidth_in_2_to_the_20_bytes() -> None:
    r = parse_gdrcopy(text(PUBLIC / "gdrcopy__copybw-v100x8.txt"))
    assert r.program == "gdrcopy_copybw" and r.device == 0 and r.closed
    assert len(r.gpus) == 8 and r.gpus[0] == (0, "Tesla V100-SXM2-32GB", "0001:00:00")
    assert (r.mapped, r.wc_mapping) == (1, 1)
    w, rd = r.bandwidth
    assert (w.direction, w.size, w.mib_s) == ("write", 131072, 8680.15)
    assert (rd.direction, rd.size, rd.mib_s) == ("read", 131072, 379.824)
    # tests/copybw.cpp: MB/s = bytes/s / 1024 / 1024, so 8680.15 "MB/s" is 9.10 GB/s (10^9 bytes/s)
    assert GDRCOPY_MB_BYTES == 1048576 and abs(w.gb_s - 9.1018) < 0.001 and abs(rd.gb_s - 0.3983) < 0.001


def test_gdr_open_failures_new_message_and_old_null_assertion() -> None:
    r = parse_gdrcopy(text(PUBLIC / "gdrcopy__sanity-gdr-open-error-partial.txt"))
    assert r.program == "gdrcopy_sanity" and len(r.open_errors) == 5
    old = parse_gdrcopy(text(PUBLIC / "gdrcopy__old-sanity-gdrdrv-missing-assertions-100pct.txt"))
    assert old.program == "gdrcopy_sanity" and old.check_summary.startswith("100%:")
    assert (old.check_failures, old.check_errors) == (0, 0)
    # 16 of the 17 assertions are gdr_open returning NULL (g or t.g); the read() one is not an open failure
    assert len(old.open_errors) == 16 and len(old.assertions) == 17


def test_healthy_sanity_and_the_command_passed_separately() -> None:
    r = parse_gdrcopy(text(PUBLIC / "gdrcopy__sanity-28-of-28-passed.txt"))
    assert (r.total, r.passed, r.failed, r.waived) == (28, 28, 0, 0) and not r.assertions
    # explain splits the prompt off and passes the command: it names the program
    body = "\n".join(text(PUBLIC / "gdrcopy__copybw-v100x8.txt").splitlines()[8:])
    assert parse_gdrcopy(body, "sudo gdrcopy_copybw -s 131072").program == "gdrcopy_copybw"
    assert parse_gdrcopy("write BW: 1.0MB/s\n", "./copybw").program == "gdrcopy_copybw"


def test_older_gpu_line_copylat_rows_and_unreadable_figures() -> None:
    # "GPU id:0 name:Tesla K80 PCI domain: 0 bus: 0 device: 4" is copybw 1.x's line (NVIDIA/gdrcopy#72); the
    # copylat rows are the README's (NVIDIA/gdrcopy README, Tests)
    r = parse_gdrcopy("GPU id:0 name:Tesla K80 PCI domain: 0 bus: 0 device: 4\n"
                      "gdr_copy_to_mapping             1         0.0889\n"
                      "gdr_copy_from_mapping    16777216     36758.8342\n"
                      "write BW: nanMB/s\ninfo.mapped: x\n")
    assert r.gpus == [(0, "Tesla K80", "")]
    assert [(t, s, us) for t, s, us, _ in r.latency] == [("gdr_copy_to_mapping", 1, 0.0889),
                                                       ("gdr_copy_from_mapping", 16777216, 36758.8342)]
    assert r.program == "gdrcopy_copylat" and r.problems == ["write BW: nanMB/s", "info.mapped: x"]


def test_detector_takes_gdrcopy_outputs_and_not_others() -> None:
    for name in ("gdrcopy__sanity-basic-with-tokens-fail.txt", "gdrcopy__copybw-v100x8.txt",
                 "gdrcopy__sanity-28-of-28-passed.txt", "gdrcopy__sanity-gdr-open-error-partial.txt",
                 "gdrcopy__old-sanity-gdrdrv-missing-assertions-100pct.txt"):
        assert detect_gdrcopy(text(PUBLIC / name)) >= 0.9, name
    for name in ("gpu-burn__k80-10s-2085-gflops-no-errors.txt", "perftest__ib-write-bw-loopback-8m.txt",
                 "dcgmi-discovery__4x-h100-name-null-partial.txt"):
        assert detect_gdrcopy(text(PUBLIC / name)) == 0.0, name


@TOOLS_FUZZ
@given(tools_inputs)
def test_never_raises_on_garbage_or_mutated_real_output(t: str) -> None:
    r = parse_gdrcopy(t, t[:30])
    assert 0.0 <= detect_gdrcopy(t) <= 1.0
    assert all(b.mib_s >= 0 for b in r.bandwidth)
