"""wizard/rules/gdrcopy.py: GDRCopy test programs judged from real outputs (NVIDIA/gdrcopy issues)."""

from __future__ import annotations

from hypothesis import given

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers.gdrcopy import parse_gdrcopy
from wizard.rules.gdrcopy import GDRCOPY_ID, judge_gdrcopy, judge_gdrcopy_text

from tests.probe_data import PUBLIC, text
from tests.strategies import TOOLS_FUZZ, tools_inputs


def _explain(name: str):
    r = explain_text(text(PUBLIC / name))
    assert r.kind == "gdrcopy", (name, r.kind)
    return r


def test_failed_sanity_test_fails_naming_it_and_quoting_the_assertion() -> None:
    r = _explain("gdrcopy__sanity-basic-with-tokens-fail.txt")
    (f,) = r.findings
    assert f.id == GDRCOPY_ID and f.verdict is Verdict.FAIL
    assert "1 of 28 tests failed (basic_with_tokens; 2 waived)" in f.message
    assert "gdr_pin_buffer could not pin" in f.message and "failed at sanity.cpp:274" in f.message
    assert "gdrcopy_sanity -v -t basic_with_tokens" in f.remedy and "dmesg" in f.remedy
    assert "Total: 28, Passed: 25, Failed: 1, Waived: 2" in f.evidence


def test_copybw_passes_with_both_figures_in_mb_and_gb_and_the_slow_read_explained() -> None:
    (f,) = _explain("gdrcopy__copybw-v100x8.txt").findings
    assert f.verdict is Verdict.PASS and f.subject == "GPU 0 (Tesla V100-SXM2-32GB)"
    assert "write (CPU to GPU memory) 8680 MB/s = 9.10 GB/s at 131072 bytes" in f.message
    assert "read (GPU memory to CPU) 380 MB/s = 0.40 GB/s" in f.message and "2^20 bytes" in f.message
    assert "reads far slower than writes are normal" in f.message and "prefetched" in f.source
    assert f.measured is not None and f.measured.unit == "GB/s" and abs(f.measured.value - 9.10) < 0.01


def test_reads_as_fast_as_writes_are_not_called_normal_asymmetry() -> None:
    body = text(PUBLIC / "gdrcopy__copybw-v100x8.txt").replace("read BW: 379.824MB/s", "read BW: 8000.0MB/s")
    (f,) = judge_gdrcopy_text(body, {})
    assert f.verdict is Verdict.PASS and "reads far slower" not in f.message


def test_gdrdrv_not_open_fails_with_how_to_load_it() -> None:
    (f,) = _explain("gdrcopy__sanity-gdr-open-error-partial.txt").findings
    assert f.verdict is Verdict.FAIL and "could not open /dev/gdrdrv (5 times)" in f.message
    assert "sudo ./insmod.sh" in f.remedy and "systemctl start gdrcopy" in f.remedy and "--device /dev/gdrdrv" in f.remedy


def test_old_sanity_100_percent_summary_does_not_hide_null_gdr_open() -> None:
    (f,) = _explain("gdrcopy__old-sanity-gdrdrv-missing-assertions-100pct.txt").findings
    assert f.verdict is Verdict.FAIL and "/dev/gdrdrv" in f.message and "does not count these" in f.message
    assert "100%: Checks: 15, Failures: 0, Errors: 0" in f.evidence and "gdrcopy/issues/156" in f.source


def test_all_passed_passes_and_waived_are_said() -> None:
    (f,) = _explain("gdrcopy__sanity-28-of-28-passed.txt").findings
    assert f.verdict is Verdict.PASS and "28 of 28 tests passed" in f.message and "waived" not in f.message
    # the real summary with its one failure removed: 26 passed, 2 waived (a variant of the real file, made here)
    body = "Total: 28, Passed: 26, Failed: 0, Waived: 2\n"
    (g,) = judge_gdrcopy_text(body, {})
    assert g.verdict is Verdict.PASS and "2 waived" in g.message


def test_copylat_pin_failure_is_not_reported_as_sanity() -> None:
    # PR NVIDIA/gdrcopy#184's presubmit output on a GeForce RTX 2070 (no GPUDirect RDMA support)
    body = ("GPU id:0; name: GeForce RTX 2070; Bus id: 0000:01:00\nselecting device 0\ndevice ptr: 0x7f47ff000000\n"
            "allocated size: 16777216\n\nerror in gdr_pin_buffer with code=22\n"
            "Does the selected GPU support GPUDirect RDMA?\nAssertion \"(status) == (0)\" failed at copylat.cpp:195\n")
    r = explain_text(body)
    assert r.kind == "gdrcopy"
    (f,) = r.findings
    assert f.verdict is Verdict.FAIL and f.message.startswith("gdrcopy_copylat on GPU 0 (GeForce RTX 2070)")
    assert "not pinned for GPUDirect RDMA" in f.message and "sanity" not in f.message.split(":")[0]


def test_copylat_rows_pass_with_the_smallest_size_latency() -> None:
    # rows from the NVIDIA/gdrcopy README's gdrcopy_copylat example
    body = ("selecting device 0\ninfo.mapped: 1\ninfo.wc_mapping: 1\n"
            "gdr_copy_to_mapping             1         0.0889\ngdr_copy_to_mapping          1024         0.1825\n"
            "gdr_copy_from_mapping           1         0.9069\nclosing gdrdrv\n")
    (f,) = judge_gdrcopy_text(body, {})
    assert f.verdict is Verdict.PASS and "gdr_copy_to_mapping 0.0889 us at 1 bytes" in f.message


def test_nothing_readable_is_unknown() -> None:
    (f,) = judge_gdrcopy(parse_gdrcopy("selecting device 0\n"), "selecting device 0\n")
    assert f.verdict is Verdict.UNKNOWN and f.remedy


@TOOLS_FUZZ
@given(tools_inputs)
def test_judge_never_raises_and_every_problem_has_a_remedy(t: str) -> None:
    for f in judge_gdrcopy_text(t, {"command": t[:20]}):
        assert f.id == GDRCOPY_ID and f.source
        if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
            assert f.remedy
