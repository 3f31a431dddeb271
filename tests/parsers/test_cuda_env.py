"""wizard/parsers/cuda_env.py: the "Key : value" CUDA environment reports of CuPy, xFormers and Numba, read from real
outputs (tests/data/public/cuda-env-report__*); the inline variants are one-line edits of those files, each said where
it is built."""

from __future__ import annotations

from hypothesis import given

from wizard.parsers.cuda_env import cuda_from_value, detect_cuda_env, parse_cuda_env

from tests.probe_data import CASES, PUBLIC, text
from tests.strategies import TOOLS_FUZZ, inputs

NUMBA = PUBLIC / "cuda-env-report__numba-detect-2x-quadro-rtx8000-2of2-supported.txt"
CUPY8 = PUBLIC / "cuda-env-report__cupy8-show-config-rtx2080ti-runtime10.2-driver11.0.txt"
CUPY13 = PUBLIC / "cuda-env-report__cupy13-show-config-runtime12.6-driver12.4-older.txt"
CUPY6 = PUBLIC / "cuda-env-report__cupy6-show-config-cuda10.0-driver10.1-no-devices.txt"
XFORMERS = PUBLIC / "cuda-env-report__xformers016-info-rtx3090-torch1.13.1-cu117.txt"
REAL = [NUMBA, CUPY8, CUPY13, CUPY6, XFORMERS]


def test_cuda_versions_are_read_in_each_encoding():
    assert cuda_from_value("12040") == "12.4" and cuda_from_value("10020") == "10.2"  # cudaDriverGetVersion
    assert cuda_from_value("1107", hundreds=True) == "11.7"  # xFormers build.cuda_version
    assert cuda_from_value("(12, 2)") == "12.2" and cuda_from_value("11.8") == "11.8"
    assert cuda_from_value("N/A") == "" and cuda_from_value("None") == "" and cuda_from_value("9" * 400) == ""


def test_numba_detect_lists_each_device_with_its_compute_capability_and_support():
    r = parse_cuda_env(text(NUMBA))
    assert r.tool == "Numba" and r.devices_found == 2 and (r.supported, r.listed) == (2, 2)
    assert [(g.index, g.name, g.cc, g.supported) for g in r.gpus] == [
        (0, "NVIDIA Quadro RTX 8000", "7.5", True), (1, "NVIDIA Quadro RTX 8000", "7.5", True)]
    assert r.driver_cuda == "" and r.cuda_available is None


def test_cupy_show_config_driver_runtime_and_build_versions_and_devices():
    r = parse_cuda_env(text(CUPY8))
    assert (r.tool, r.tool_version) == ("CuPy", "8.0.0rc1")
    assert (r.driver_cuda, r.runtime_cuda, r.build_cuda) == ("11.0", "10.2", "10.2")
    assert [(g.name, g.cc) for g in r.gpus] == [("GeForce RTX 2080 Ti", "7.5")]  # "75" as CuPy prints it
    assert r.evidence["driver_cuda"] == "CUDA Driver Version          : 11000"
    assert not r.errors  # cuDNN "None" is an optional library, not an error
    r = parse_cuda_env(text(CUPY13))
    assert (r.driver_cuda, r.runtime_cuda, r.local_runtime_cuda) == ("12.4", "12.6", "12.3") and not r.gpus
    r = parse_cuda_env(text(CUPY6))
    assert (r.driver_cuda, r.runtime_cuda, r.tool_version) == ("10.1", "10.0", "6.4.0")


def test_xformers_info_availability_gpu_and_builds():
    r = parse_cuda_env(text(XFORMERS))
    assert r.tool == "xFormers" and r.cuda_available is True and r.build_cuda == "11.7"
    assert [(g.name, g.cc) for g in r.gpus] == [("NVIDIA GeForce RTX 3090", "8.6")]
    assert r.torch_version == r.build_torch_version == "1.13.1+cu117" and not r.rocm


def test_error_values_not_supported_devices_and_numba_s_fields():
    # CUPY13 with its driver line replaced by the repr CuPy prints when the call fails (cupyx/_runtime.py)
    body = text(CUPY13).replace("12040", "CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is "
                                         "insufficient for CUDA runtime version')", 1)
    r = parse_cuda_env(body)
    assert r.driver_cuda == "" and len(r.errors) == 1 and "cudaErrorInsufficientDriver" in r.errors[0]
    # NUMBA with device 1 marked the way numba/cuda/api.py marks a GPU below its floor
    r = parse_cuda_env(text(NUMBA).replace("[SUPPORTED]", "[NOT SUPPORTED: CC < 8.0]").replace("2/2", "0/2"))
    assert [(g.supported, g.why) for g in r.gpus] == [(False, "CC < 8.0"), (False, "CC < 8.0")] and r.supported == 0
    # numba -s's CUDA section (numba/misc/numba_sysinfo.py), its driver version as cuDriverGetVersion's integer
    r = parse_cuda_env("__CUDA Information__\nCUDA Device Initialized                       : False\n"
                       "CUDA Driver Version                           : 11020\n")
    assert r.tool == "Numba" and r.cuda_available is False and r.driver_cuda == "11.2"


def test_detects_the_reports_and_not_the_outputs_of_other_kinds():
    for p in REAL:
        assert detect_cuda_env(text(p)) >= 0.9, p.name
    for name in ("cuda-devicequery__deviceQuery-h100-sxm-x8.txt",
                 "torch-cuda__warp170-could-not-open-libcuda-driver-0.0.txt",
                 "unrecognised__llamacpp-cuda-init-rtx4050-laptop.txt"):
        assert detect_cuda_env(text(PUBLIC / name)) < 0.9, name
    assert detect_cuda_env(text(CASES / "nvcc-version__cuda-12.4-h100-node.txt")) == 0.0


@TOOLS_FUZZ
@given(inputs(REAL, ["CUDA Driver Version : ", "Device 0 Name : ", "id 0 b'X' [SUPPORTED]", "Found 2 CUDA devices",
                     "0/2 devices are supported", "pytorch.cuda: ", "CUDARuntimeError('", "(12, 2)", "9" * 400]))
def test_never_raises(t: str) -> None:
    r = parse_cuda_env(t)
    assert 0.0 <= detect_cuda_env(t) <= 1.0
    assert all(g.index is None or g.index >= 0 for g in r.gpus)


def test_sglang_check_env_is_a_report_whose_pytorch_build_meets_the_driver():
    """Real ``python3 -m sglang.check_env`` (sgl-project/sglang#12707): "CUDA available: True", "GPU 0,...,7: NAME",
    "CUDA Driver Version: 550.90.07" (the driver's own version), "PyTorch: 2.8.0+cu129" (the wheel's CUDA build) ->
    the CUDA 12.9 build on driver 550 runs under minor-version compatibility (warn), the GPUs read."""
    from wizard.explain import explain_text

    body = text(PUBLIC / "nvcc-version__sglang-check-env-h100-driver550-cu129.txt")
    assert detect_cuda_env(body) == 0.95
    r = parse_cuda_env(body)
    assert (r.driver_version, r.build_cuda, r.torch_version) == ("550.90.07", "12.9", "2.8.0+cu129")
    assert len(r.gpus) == 8 and r.cuda_available is True
    e = explain_text(body)
    assert e.kind == "cuda-env-report" and e.verdict.value == "warn"
    assert any("CUDA 12.9" in f.message and "minor-version compatibility" in f.message for f in e.findings)


def test_openmmlab_collect_env_reports_are_read_not_taken_for_nvcc():
    """Real `lmdeploy check_env` (InternLM/lmdeploy, held-out set 29): OpenMMLab's collect_env lines (sys.platform,
    CUDA available, "GPU 0,1,2,3: NAME", "NVCC: Cuda compilation tools, ...") are one environment report: its GPUs
    are read (the GPU key holds commas) and the NVCC field does not make it nvcc's own output."""
    from wizard.explain import explain_text

    body = (PUBLIC / "cuda-env-report__lmdeploy-check-env-4x-rtx4090.txt").read_text()
    r = parse_cuda_env(body)
    assert r.cuda_available is True and [g.name for g in r.gpus] == ["NVIDIA GeForce RTX 4090"] * 4
    e = explain_text(body, "check_env.txt")
    assert e.kind == "cuda-env-report" and "4x NVIDIA GeForce RTX 4090" in e.findings[0].message
    # its system nvcc (11.5) against torch's CUDA 12.1: the toolkit rule of an nvcc output pasted next to torch's
    (tk,) = [f for f in e.findings if f.id == "driver.cuda_toolkit"]
    assert tk.verdict.value == "warn" and "11.5" in tk.message and "12.1" in tk.message


def test_older_mmcv_and_detectron2_environment_reports_are_read():
    """mmcv's collect_env without its sys.platform line ("GPU: NAME"; real: an MMSegmentation issue paste) and
    detectron2's collect_env table ("GPU 0   NAME (arch=8.0)", "Driver version   515.65.01"; real: a detectron2
    issue paste)."""
    from wizard.parsers.cuda_env import detect_cuda_env, parse_cuda_env

    mm = ("Python: 3.7.7 [GCC 7.3.0]\nCUDA available: True\nGPU: Tesla V100-PCIE-32GB\nGCC: gcc 7.5.0\n"
          "PyTorch: 1.6.0\nTorchVision: 0.7.0\nMMCV: 1.2.4\nMMCV CUDA Compiler: 10.1\n")
    assert detect_cuda_env(mm) >= 0.9
    r = parse_cuda_env(mm)
    assert r.cuda_available is True and [g.name for g in r.gpus] == ["Tesla V100-PCIE-32GB"]
    d2 = ("----------------------  ----------------------------------------------------\n"
          "sys.platform            linux\nPython                  3.9.16\nGPU available           Yes\n"
          "GPU 0                   NVIDIA A100-PCIE-40GB (arch=8.0)\nDriver version          515.65.01\n"
          "CUDA_HOME               None - invalid!\n")
    assert detect_cuda_env(d2) >= 0.9
    r = parse_cuda_env(d2)
    assert r.cuda_available is True and r.driver_version == "515.65.01"
    assert [(g.name, g.cc) for g in r.gpus] == [("NVIDIA A100-PCIE-40GB", "8.0")]
    # a tool's report with PyTorch but no MMCV line stays with the kinds that read it (sglang check_env: nvcc's)
    assert detect_cuda_env("Python: 3.12\nCUDA available: True\nPyTorch: 2.8.0+cu129\n") < 0.9


def test_a_scripts_printout_with_cuda_available_and_indented_gpu_lines_is_a_report():
    """Held-out round 261 (real, a course's check script: "CUDA available: True", "  GPU 0: NVIDIA A10G") above an
    nvidia-smi table: the report is read (its GPU), not an unrecognised part."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "torch-cuda__gpumode-a10g-torch26-cu126-driver-550.txt"))
    assert r.kind == "cuda-env-report+nvidia-smi" and not any(f.id == "explain.unrecognised_part" for f in r.findings)
