"""Tests of wizard/parsers/cuda.py."""

from __future__ import annotations

from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda

from tests.probe_data import CASES, PUBLIC, text


def test_nvcc_parse_real_outputs() -> None:
    n = parse_nvcc_version(text(CASES / "nvcc-version__cuda-12.4-h100-node.txt"))
    assert (n.release, n.build) == ("12.4", "12.4.131")
    n = parse_nvcc_version(text(PUBLIC / "nvcc-version__cuda-13.0-dev-vm-local.txt"))
    assert n.release == "13.0"


def test_torch_repl_transcript_parse() -> None:
    t = parse_torch_cuda(text(CASES / "torch-cuda__torch12-cu100-vs-cuda90-is-available-false.txt"))
    assert (t.torch_version, t.cuda, t.available, t.toolkit) == ("1.2.0", "10.0.130", False, "9.0.176")


# ------------------------------------------------------------------ CUDA error numbers

from wizard.parsers.cuda import cuda_error_lookup, cuda_error_table, parse_oom, resolve_cuda_error  # noqa: E402


def test_cuda_error_table_is_one_table_with_unique_codes_and_sources() -> None:
    rows = cuda_error_table()
    codes = [r.code for r in rows]
    assert len(codes) == len(set(codes)) and {2, 3, 35, 46, 100, 214, 719, 802, 804, 999} <= set(codes)
    assert all(r.source and r.meaning and r.action and r.klass for r in rows)
    assert cuda_error_lookup(802).klass == "fabric" and "Fabric Manager" in cuda_error_lookup(802).meaning
    assert cuda_error_lookup(804).klass == "driver" and "forward" in cuda_error_lookup(804).meaning


def test_every_form_torch_prints_resolves_to_the_same_row() -> None:
    """Real lines (pytorch#35710, LlamaFactory#7888, Video-LLaVA#22, REDN#5, pytorch#6515): the legacy
    ``cuda runtime error (N)`` / THCudaCheck forms, cudaGetDeviceCount's "Error N:", text only, CUresult names."""
    forms = {
        "RuntimeError: cuda runtime error (802) : system not yet initialized at /opt/x/THCGeneral.cpp:50": (802, 802),
        "THCudaCheck FAIL file=/x/THCGeneral.cpp line=50 error=802 : system not yet initialized": (802, 802),
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
        "before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
        "attempted on non supported HW (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)": (804, 804),
        "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at /x.cpp:50": (100, 100),
        "RuntimeError: CUDA error: no kernel image is available for execution on the device": (None, 209),
        "cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY": (None, 802),
        "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu. "
        "(Triggered internally at /x/CUDAFunctions.cpp:108.)": (None, 3),
    }
    for line, (printed, code) in forms.items():
        n, info = resolve_cuda_error(line)
        assert (n, info.code if info else None) == (printed, code), line


def test_legacy_numbers_are_read_by_their_text_not_todays_numbering() -> None:
    """CUDA <= 10.0 numbered differently: 48 was 'no kernel image' (209 today), 38 'no device' (100), 30 'unknown'
    (999). The text decides; a bare number uses today's numbering first."""
    n, info = resolve_cuda_error("THCudaCheck FAIL file = / pytorch / torch / lib / THC / generic / "
                                 "THCTensorMathPairwise.cu line = 40 error = 48: no kernel image is available for "
                                 "execution on the device")
    assert (n, info.code, info.legacy_code) == (48, 209, 48)
    assert resolve_cuda_error("cuda runtime error (38) : no CUDA-capable device is detected at x")[1].code == 100
    assert resolve_cuda_error("cuda runtime error (30) : unknown error at x")[1].code == 999
    assert cuda_error_lookup(2).name == "cudaErrorMemoryAllocation"
    assert cuda_error_lookup(77).name == "cudaErrorIllegalAddress"  # no 77 today: the old numbering


def test_out_of_memory_numbers_both_formats() -> None:
    new = parse_oom(text(PUBLIC / "torch-cuda__pytorch16417-oom-24gib-gpu-this-process-23gib.txt"))
    assert (new.tried, new.gpu, new.total, new.free, new.process, new.allocated, new.unallocated) == (
        "22.00 MiB", "0", "23.65 GiB", "11.06 MiB", "23.60 GiB", "22.90 GiB", "194.87 MiB")
    old = parse_oom(text(PUBLIC / "torch-cuda__vdsr2-legacy-oom-16gib-gpu-reserved.txt"))
    assert (old.tried, old.total, old.allocated, old.free, old.reserved) == (
        "512.00 MiB", "15.90 GiB", "13.13 GiB", "415.88 MiB", "14.80 GiB")
    assert parse_oom("RuntimeError: CUDA error: an illegal memory access was encountered") is None


def test_collect_env_is_read() -> None:
    t = parse_torch_cuda(text(PUBLIC / "torch-cuda__vllm6134-collect-env-8x-a100-sxm4-40gb-cuda-available-partial.txt"))
    assert (t.torch_version, t.cuda, t.available, t.driver_version, t.toolkit) == (
        "2.3.0+cu121", "12.1", True, "550.54.14", "12.0.140")
    assert len(t.gpus) == 8 and t.gpus[0] == "GPU 0: NVIDIA A100-SXM4-40GB"
    old = parse_torch_cuda("PyTorch version: 1.6.0\nCUDA used to build PyTorch: 10.2\nIs CUDA available: No\n")
    assert (old.torch_version, old.cuda, old.available) == ("1.6.0", "10.2", False)
    na = parse_torch_cuda("PyTorch version: 1.7.0\nCUDA used to build PyTorch: N/A\nIs CUDA available: True\n")
    assert na.cuda == "" and na.available is True  # "N/A" / "Could not collect" are not versions


def test_a_python_c_one_liner_answers_its_prints_in_order():
    """Real (bytedance/Protenix#205): `python -c "...print(torch.__version__); print(torch.cuda.is_available());
    print(torch.cuda.get_device_capability())"` without a prompt, then its three output lines."""
    from wizard.parsers.cuda import parse_torch_cuda

    t = parse_torch_cuda(text(PUBLIC / "torch-nvcc__rtx5090-torch2.9-cu128-available-sm120-nvcc-13.0.txt"))
    assert t.torch_version == "2.9.0+cu128" and t.available is True


def test_pip_show_torch_gives_the_version_and_the_cuda_major_of_its_wheels():
    t = parse_torch_cuda("Name: torch\nVersion: 2.2.1\nSummary: Tensors\nRequires: filelock, nvidia-cublas-cu12, "
                         "nvidia-cuda-runtime-cu12, sympy\nRequired-by: peft\n")
    assert t.torch_version == "2.2.1" and t.cuda == "" and t.cuda_family == "12"
    t = parse_torch_cuda("Name: torch\nVersion: 2.1.0+cu118\nRequires: filelock\n")
    assert t.torch_version == "2.1.0+cu118" and t.cuda == "11.8"


def test_the_cuda_samples_checkcudaerrors_form_resolves_its_number_and_name():
    """helper_cuda.h's checkCudaErrors line (real: NVIDIA/cuda-samples#34, matrixMul with no GPU)."""
    n, info = resolve_cuda_error('CUDA error at ../../Common/helper_cuda.h:791 code=100(cudaErrorNoDevice) '
                                 '"cudaGetDeviceCount(&device_count)"')
    assert n == 100 and info is not None and info.name == "cudaErrorNoDevice"
    t = parse_torch_cuda('[Matrix Multiply Using CUDA] - Starting...\nCUDA error at ../../Common/helper_cuda.h:791 '
                         'code=100(cudaErrorNoDevice) "cudaGetDeviceCount(&device_count)"\n')
    assert [e.code for e in t.errors] == [100]


def test_collect_env_with_aligned_colons_is_read() -> None:
    """Real (held-out round 66): PyTorch 2.13's collect_env aligns its labels ("Is CUDA available            : True",
    "Nvidia driver version        : 580.173.02")."""
    t = parse_torch_cuda(text(PUBLIC / "collect-env__gb10-dgx-spark-german-locale-lscpu-partial.txt"))
    assert t.available is True and t.driver_version == "580.173.02" and t.cuda == "13.0"


def test_a_one_liner_printing_three_values_on_one_line_reads_each():
    """Held-out round 112: `print(torch.__version__, torch.version.cuda, torch.cuda.is_available())` answers on one
    line, "2.5.1+cu121 12.1 True": one value per argument (it was read as one value and lost)."""
    t = parse_torch_cuda(text(PUBLIC / "python-torch-cuda__a100-80gb-pod-torch-2.5.1-cu121-available-true.txt"))
    assert (t.torch_version, t.cuda, t.available) == ("2.5.1+cu121", "12.1", True)
    # a print with sep= has unknown spacing: its line is one value, never split
    t = parse_torch_cuda('$ python -c "import torch; print(torch.__version__, torch.version.cuda, sep=\'|\')"\n'
                         "2.5.1+cu121|12.1\n")
    assert t.torch_version == "" and t.cuda == ""


def test_cudnn_version_incompatibility_is_read_with_both_versions():
    t = parse_torch_cuda(text(PUBLIC / "python-torch-cudnn__cudnn-version-incompatibility-compiled-8.5.0-runtime-8.4.1.txt"))
    e = t.error("cudnn_mismatch")
    assert e is not None and "(8, 4, 1)" in e.line


def test_torch_report_in_python_fstring_debug_form():
    """Held-out round 299 (real): a cluster's environment check printing f"{torch.cuda.is_available()=}" lines
    ("torch.cuda.is_available()=True") under srun --label: read as torch's answers."""
    from wizard.explain import clean
    from wizard.parsers.cuda import parse_torch_cuda

    t = parse_torch_cuda(clean(text(PUBLIC / "torch-cuda__awsome-pytorch-screen-2node-cuda-nccl-available.txt")))
    assert t.available is True
