"""wizard/rules/cuda_env.py: CuPy / xFormers / Numba CUDA environment reports judged on real outputs
(tests/data/public/cuda-env-report__*); the inline variants are one-line edits of those files, each said where it is
built."""

from __future__ import annotations

from hypothesis import given
from wizard.explain import explain_text
from wizard.model import Verdict, overall
from wizard.rules.cuda_env import judge_cuda_env_text

from wizard.rules.toolwords import chain_words

from tests.probe_data import PUBLIC, text
from tests.strategies import TOOLS_FUZZ, inputs

NUMBA = PUBLIC / "cuda-env-report__numba-detect-2x-quadro-rtx8000-2of2-supported.txt"
CUPY8 = PUBLIC / "cuda-env-report__cupy8-show-config-rtx2080ti-runtime10.2-driver11.0.txt"
CUPY13 = PUBLIC / "cuda-env-report__cupy13-show-config-runtime12.6-driver12.4-older.txt"
CUPY6 = PUBLIC / "cuda-env-report__cupy6-show-config-cuda10.0-driver10.1-no-devices.txt"
XFORMERS = PUBLIC / "cuda-env-report__xformers016-info-rtx3090-torch1.13.1-cu117.txt"


def judge(body: str):
    fs = judge_cuda_env_text(body, {})
    assert fs and all(f.id == "driver.cuda_env" and f.source for f in fs)
    assert all(f.remedy for f in fs if f.verdict in (Verdict.FAIL, Verdict.WARN))
    return fs


def said(fs) -> str:
    return " ".join(f.message for f in fs)


def test_devices_seen_and_supported_pass_naming_the_gpus_and_their_compute_capability():
    fs = judge(text(NUMBA))
    assert overall(fs) is Verdict.PASS
    assert "2x NVIDIA Quadro RTX 8000 (compute capability 7.5)" in said(fs) and "2/2 devices supported" in said(fs)
    fs = judge(text(XFORMERS))
    assert overall(fs) is Verdict.PASS and "NVIDIA GeForce RTX 3090 (compute capability 8.6)" in said(fs)


def test_a_driver_newer_than_the_runtime_passes_and_missing_optional_libraries_are_no_fault():
    fs = judge(text(CUPY8))  # cuDNN None, driver CUDA 11.0 over runtime 10.2
    assert [f.verdict for f in fs] == [Verdict.PASS, Verdict.PASS]
    assert "driver supports CUDA 11.0" in said(fs) and "CUDA 10.2 runtime" in said(fs) and "GeForce RTX 2080 Ti" in said(fs)
    assert "cudnn" not in said(fs).lower()


def test_same_major_older_minor_warns_with_what_fails_and_an_older_major_fails():
    fs = judge(text(CUPY13))
    assert [f.verdict for f in fs] == [Verdict.WARN]
    assert "12.4" in fs[0].message and "12.6" in fs[0].message and "PTX JIT" in fs[0].message
    assert "locally installed CUDA runtime is 12.3" in fs[0].message and "docs.nvidia.com/deploy/cuda-compatibility" in fs[0].source
    # CUPY13 with the driver's CUDA lowered to 11.8: another major than the 12.6 runtime
    fs = judge(text(CUPY13).replace("12040", "11080", 1))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "cannot start" in fs[0].message and "Upgrade" in fs[0].remedy
    # CUPY6 with its runtime raised to 10.2 over the driver's 10.1: no minor-version compatibility before CUDA 11
    fs = judge(text(CUPY6).replace("CUDA Runtime Version  : 10000", "CUDA Runtime Version  : 10020"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "before CUDA 11" in fs[0].message


def test_versions_without_a_device_list_pass_but_say_the_gpu_is_not_shown():
    fs = judge(text(CUPY6))
    assert [f.verdict for f in fs] == [Verdict.PASS] and "lists no device" in fs[0].message


def test_unsupported_devices_warn_or_fail_saying_which_and_why():
    body = text(NUMBA)
    # NUMBA with device 1 marked as numba/cuda/api.py marks a GPU below its floor, and the summary to match
    one = body.replace("[SUPPORTED]", "[NOT SUPPORTED: CC < 8.0]", 2).replace(
        "[NOT SUPPORTED: CC < 8.0]", "[SUPPORTED]", 1).replace("2/2", "1/2")
    fs = judge(one)
    assert [f.verdict for f in fs] == [Verdict.WARN] and "not supported, CC < 8.0" in fs[0].message
    assert "1/2 devices supported" in fs[0].message
    none = body.replace("[SUPPORTED]", "[NOT SUPPORTED: CC < 8.0]").replace("2/2", "0/2")
    fs = judge(none)
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "supports none" in fs[0].message


def test_cuda_not_available_no_devices_and_a_cuda_error_in_place_of_a_version_fail():
    fs = judge(text(XFORMERS).replace("pytorch.cuda:                                      available",
                                      "pytorch.cuda:                                      not available"))
    assert overall(fs) is Verdict.FAIL and "CUDA not available" in said(fs)
    fs = judge("Found 0 CUDA devices\nSummary:\n\t0/0 devices are supported\n")  # numba cuda.detect() on no GPU
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "no CUDA device" in fs[0].message
    # CUPY13 with the repr CuPy prints when cudaDriverGetVersion fails (cupyx/_runtime.py _eval_or_error)
    fs = judge(text(CUPY13).replace("12040", "CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is "
                                             "insufficient for CUDA runtime version')", 1))
    assert fs[0].verdict is Verdict.FAIL and "cudaErrorInsufficientDriver" in fs[0].message


def test_xformers_built_for_another_torch_warns():
    # XFORMERS with PyTorch upgraded after xFormers was installed
    fs = judge(text(XFORMERS).replace("pytorch.version:                                   1.13.1+cu117",
                                      "pytorch.version:                                   2.0.1+cu118"))
    assert Verdict.WARN in [f.verdict for f in fs] and "built for PyTorch 1.13.1+cu117" in said(fs)


def test_a_report_with_neither_devices_nor_a_driver_version_is_unknown_and_says_what_it_lacks():
    head = "\n".join(text(CUPY8).splitlines()[:7]) + "\n"  # CUPY8 cut before its CUDA lines
    fs = judge(head + "CUDA Build Version           : 10020\nCUDA Runtime Version         : 10020\n")
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN] and "no GPU and no driver version" in fs[0].message


def test_explain_takes_the_reports_as_their_own_kind():
    for p in (NUMBA, CUPY8, CUPY13, CUPY6, XFORMERS):
        r = explain_text(text(p), p.name)
        assert r.kind == "cuda-env-report", p.name


def test_numba_s_with_cuinit_failing_in_its_warning_log_fails_naming_cuinit():
    # the real numba -s error (numba/numba#8395) under the CUDA section lines numba/misc/numba_sysinfo.py prints
    # before its warning log when the device does not initialise
    body = ("__CUDA Information__\nCUDA Device Initialized                       : False\n"
            "CUDA Driver Version                           : N/A\n"
            + text(PUBLIC / "unrecognised__numba-s-cuinit-unknown-cuda-error.txt"))
    r = explain_text(body)
    assert r.kind == "cuda-env-report" and r.verdict is Verdict.FAIL
    assert "cuInit failed with UNKNOWN_CUDA_ERROR" in r.findings[0].message
    assert any("CUDA not available" in f.message for f in r.findings)


@TOOLS_FUZZ
@given(inputs([NUMBA, CUPY8, CUPY13, CUPY6, XFORMERS, PUBLIC / "unrecognised__numba-s-cuinit-unknown-cuda-error.txt"],
              ["CUDA Driver Version : ", "Device 0 Name : ", "[NOT SUPPORTED: CC < 3.5]", "0/2 devices are supported",
               "pytorch.cuda: not available", "CUDARuntimeError('cudaErrorNoDevice: x')", "call to cuInit results in ",
               "Could not open libcuda.so", "9" * 400]))
def test_the_judge_never_raises_and_every_problem_has_a_remedy_and_source(t: str) -> None:
    fs = judge_cuda_env_text(t, {})
    assert fs and all(f.source and (f.remedy or f.verdict in (Verdict.PASS, Verdict.UNKNOWN)) for f in fs)
    assert all(c.source and c.lines for c in chain_words(t.splitlines()))
