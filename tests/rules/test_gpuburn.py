"""Tests of wizard/rules/gpuburn.py on real gpu-burn output (wilicc/gpu-burn issues)."""

from __future__ import annotations

from wizard.model import Verdict
from wizard.parsers.gpuburn import parse_gpu_burn
from wizard.rules import gpuburn

from tests.probe_data import PUBLIC, text


def _judge(name: str, exp: dict | None = None):
    return gpuburn.judge_gpu_burn_text(text(PUBLIC / name), exp or {})


def test_faulty_gpus_fail_each_named() -> None:
    f = _judge("gpu-burn__16gpu-all-faulty-exit0-partial.txt")
    assert {x.verdict for x in f} == {Verdict.FAIL} and len(f) == 16
    assert f[1].subject == "GPU 1" and "FAULTY" in f[1].message and "-524288000" in f[1].message and f[1].remedy


def test_died_and_init_failure_fail() -> None:
    f = _judge("gpu-burn__8gpu-all-died-no-clients-alive.txt")
    assert len(f) == 8 and all(x.verdict is Verdict.FAIL and "died" in x.message for x in f)
    f = _judge("gpu-burn__8x-1080ti-cublas-not-initialized-ok-anyway-partial.txt")
    assert [x.verdict for x in f] == [Verdict.FAIL] and "could not start" in f[0].message


def test_ok_without_any_measurement_is_unknown() -> None:
    f = _judge("gpu-burn__rtx-a2000-no-progress-line-ok-anyway.txt")
    assert [x.verdict for x in f] == [Verdict.UNKNOWN] and "no progress line" in f[0].message


def test_gpus_with_no_work_minutes_into_a_run_fail_as_stalled() -> None:
    # real: 7 B300s, 6 of them at 0 Gflop/s 507 s into a 600 s run, the processes killed with SIGKILL (round 26)
    f = _judge("gpu-burn__b300-7gpu-zero-throughput.txt")
    assert [x.verdict for x in f] == [Verdict.FAIL]
    assert "GPU 0, 2, 3, 4, 5, 6 did no work (0 Gflop/s) 507 s into the run while GPU 1 worked" in f[0].message
    assert "SIGKILL" in f[0].message and any("force kill" in e for e in f[0].evidence) and "-i N" in f[0].remedy
    r = parse_gpu_burn(text(PUBLIC / "gpu-burn__b300-7gpu-zero-throughput.txt"))
    assert r.progress_pct == [84.5] and r.duration_s == 600 and r.force_kill_line


def test_clean_runs_pass_and_a_short_run_is_said() -> None:
    f = _judge("gpu-burn__k80-10s-2085-gflops-no-errors.txt")
    assert [x.verdict for x in f] == [Verdict.PASS] and "only 10 s" in f[0].message and "66 C" in f[0].message
    f = _judge("gpu-burn__2x-gtx1080-docker-temps-to-83c-partial.txt")
    assert [x.verdict for x in f] == [Verdict.PASS] and "only" not in f[0].message  # no duration in the excerpt


def test_slow_gpu_against_same_model_median_warns() -> None:
    lines = ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)", "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)",
             "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-c)"]
    for n in (1, 2, 3):
        lines.append(f"{n * 30}.0%  proc'd: {n * 100} (50000 Gflop/s) - {n * 100} (51000 Gflop/s) - {n * 60} (30000 Gflop/s)"
                     "   errors: 0 - 0 - 0   temps: 60 C - 61 C - 75 C")
    r = parse_gpu_burn("\n".join(lines))
    f = gpuburn.burn_speed(r, {})
    assert [(x.verdict, x.subject) for x in f] == [(Verdict.WARN, "GPU 2")] and "60% of the median 50000" in f[0].message
    # the real 2x GTX 1080 run (6500 vs 7000 Gflop/s) is within the spread
    assert gpuburn.burn_speed(parse_gpu_burn(text(PUBLIC / "gpu-burn__2x-gtx1080-docker-temps-to-83c-partial.txt")), {}) == []


def test_temperature_judged_only_against_a_known_slowdown() -> None:
    r = parse_gpu_burn(text(PUBLIC / "gpu-burn__2x-gtx1080-docker-temps-to-83c-partial.txt"))
    assert gpuburn.burn_temperature(r, {}) == []
    f = gpuburn.burn_temperature(r, {"slowdown_c": 82})
    assert [(x.verdict, x.subject) for x in f] == [(Verdict.WARN, "GPU 1")]


def test_garbage_is_unknown_not_a_traceback() -> None:
    f = gpuburn.judge_gpu_burn_text("Initialized device 0 with 100 MB of memory\nrandom\n", {})
    assert [x.verdict for x in f] == [Verdict.UNKNOWN]


def test_gpu_burn_that_cannot_start_names_the_cuda_error_it_printed():
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "gpu-burn__h100-system-not-yet-initialized.txt"))
    f = [x for x in r.findings if x.id == "gpu.stress"]
    assert r.verdict.value == "fail" and f and "CUDA error 802 = cudaErrorSystemNotReady" in f[0].message
    assert "nvidia-fabricmanager" in f[0].remedy


def test_gpu_burns_no_cuda_devices_throw_above_its_gpu_listing_is_gpu_burn():
    """Held-out round 127: gpu-burn's "terminate called ... No CUDA devices" above the nvidia-smi -L listing it prints
    was read as nvidia-smi -L (a pass); it is gpu-burn that could not start (gpu.stress fails)."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "gpu-burn__8xa100-sxm4-40gb-no-cuda-devices-terminate-called.txt"))
    assert r.kind == "gpu-burn"
    f = next(f for f in r.findings if f.id == "gpu.stress")
    assert f.verdict is Verdict.FAIL and "No CUDA devices" in f.message
