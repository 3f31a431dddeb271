"""Tests of wizard/rules/driver_chain.py."""

from __future__ import annotations

import pytest
from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules import driver_chain

from tests.probe_data import CASES, text

NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Sat Aug 19 01:15:15 UTC 2023\n"


def _v(findings, fid=None):
    return [f.verdict for f in findings if fid is None or f.id == fid]


def test_driver_table_lookups() -> None:
    assert driver_chain.min_driver("12.4")[0] == "550.54.14"
    assert driver_chain.min_driver("10.0")[0] == "410.48"
    assert driver_chain.family_floor("12.8") == "525"
    assert driver_chain.family_floor("11.8") == "450.80.02"
    assert driver_chain.family_floor("10.0") == ""
    assert driver_chain.driver_max_cuda("550.90.07") == "12.4"
    assert driver_chain.driver_max_cuda("384.81") == "9.0"


@pytest.mark.parametrize("mm,driver,verdict", [
    ("12.4", "550.90.07", Verdict.PASS),
    ("12.8", "535.104.05", Verdict.WARN),   # minor-version compatibility
    ("12.4", "520.61.05", Verdict.FAIL),    # below the 12.x family floor
    ("10.0", "396.26", Verdict.FAIL),       # before CUDA 11: no minor-version compatibility
    ("13.0", "580.65.06", Verdict.PASS),
    ("14.1", "610.10", Verdict.UNKNOWN),    # not in the table
])
def test_judge_chain(mm: str, driver: str, verdict: Verdict) -> None:
    res = driver_chain.judge_chain(mm, driver)
    assert res is not None and res[0] is verdict


def test_judge_chain_with_driver_cuda_only() -> None:
    assert driver_chain.judge_chain("12.1", driver_cuda="12.4")[0] is Verdict.PASS
    assert driver_chain.judge_chain("12.8", driver_cuda="12.4")[0] is Verdict.WARN
    assert driver_chain.judge_chain("12.1", driver_cuda="11.4")[0] is Verdict.FAIL
    assert driver_chain.judge_chain("12.1") is None


def _out(name: str, source: str, txt: str = "", rc: int | None = 0, stderr: str = "", error: str = "") -> ProbeOutput:
    return ProbeOutput(name=name, source=source, text=txt, rc=rc, stderr=stderr, error=error)


def test_cuda_toolkit_check_never_compares_nvcc_with_smi() -> None:
    nv = _out("nvcc_version", "$ nvcc --version", text(CASES / "nvcc-version__cuda-12.4-h100-node.txt"))
    outs = {"nvcc_version": nv, "nvidia_driver_version": _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                                              NVRM.format(v="560.35.03"), rc=None)}
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.PASS]  # nvcc 12.4 on a 12.6 driver is fine
    assert "need not match" in f[0].message
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                         NVRM.format(v="535.104.05"), rc=None)
    assert _v(driver_chain.cuda_toolkit(outs, {})) == [Verdict.WARN]
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                         NVRM.format(v="515.65.01"), rc=None)
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.FAIL] and f[0].remedy


def test_cuda_toolkit_check_nvcc_missing_is_skip() -> None:
    outs = {"nvcc_version": _out("nvcc_version", "$ nvcc --version", rc=127, error="command not found: nvcc")}
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.SKIP]
    assert driver_chain.cuda_toolkit({}, {})[0].verdict is Verdict.UNKNOWN


def test_torch_probe_without_torch_is_skip_not_crash() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", "", rc=1,
             stderr="Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
                    "ModuleNotFoundError: No module named 'torch'\n")
    f = driver_chain.torch_cuda({"torch_cuda": o}, {})
    assert _v(f) == [Verdict.SKIP] and "no torch" in f[0].message


@pytest.mark.parametrize("driver,verdict", [("560.35.03", Verdict.PASS), ("535.104.05", Verdict.PASS),
                                            ("470.82.01", Verdict.WARN)])
def test_torch_probe_with_driver(driver: str, verdict: Verdict) -> None:
    """A cu124 wheel that sees the GPUs on driver 535 (>= 525, CUDA 12's minor-version-compatibility floor) passes with
    the note: PyTorch's wheels are built to run that way (NVIDIA CUDA compatibility guide, minor-version compatibility);
    on 470 (CUDA 11 family) only forward compatibility explains it: warn."""
    o = _out("torch_cuda", "$ python3 -c ...", "2.5.1+cu124\n12.4\nTrue\n")
    outs = {"torch_cuda": o, "nvidia_driver_version": _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                                           NVRM.format(v=driver), rc=None)}
    f = driver_chain.torch_cuda(outs, {})
    assert _v(f, "driver.torch_cuda") == [verdict]
    if driver.startswith("470"):
        assert "forward-compatibility" in f[0].message
    if driver.startswith("535"):
        assert "minor-version compatibility" in f[0].message


def test_torch_probe_is_available_false_with_old_driver_fails() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", "2.7.0+cu128\n12.8\nFalse\n",
             stderr="UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."
                    " Please update your GPU driver\n")
    f = driver_chain.torch_cuda({"torch_cuda": o}, {})
    assert _v(f) == [Verdict.FAIL]
    assert "11.4" in f[0].message and "570.26" in f[0].message
    assert "torch build" in f[0].remedy


def test_torch_probe_timeout_is_unknown() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", rc=124, error="timed out after 180 s")
    assert _v(driver_chain.torch_cuda({"torch_cuda": o}, {})) == [Verdict.UNKNOWN]


def test_ecc_error_is_hardware_not_version() -> None:
    e = explain_text(text(CASES / "torch-cuda__uncorrectable-ecc-error-encountered.txt"))
    assert [f.id for f in e.findings] == ["health.ecc"]
    assert "not a driver/CUDA version problem" in e.findings[0].message


def test_cpu_only_torch_fails() -> None:
    e = explain_text(">>> import torch\n>>> print(torch.__version__)\n2.3.0+cpu\n>>> print(torch.version.cuda)\nNone\n"
                     ">>> torch.cuda.is_available()\nFalse\n")
    assert e.kind == "torch-cuda" and e.verdict is Verdict.FAIL and "CPU-only" in e.findings[0].message


def test_nvcc_not_found_in_a_paste_is_the_same_skip_as_on_the_machine():
    e = explain_text("user@desk:~$ nvcc --version\n\nCommand 'nvcc' not found, but can be installed with:\n\n"
                     "sudo apt install nvidia-cuda-toolkit\n")
    (f,) = e.findings
    assert e.kind == "nvcc-version" and f.id == "driver.cuda_toolkit" and f.verdict is Verdict.SKIP
    assert "torch wheels bring their own CUDA runtime" in f.message


@pytest.mark.parametrize("name, vgpu", [
    ("GRID A100D-4C", True), ("NVIDIA A100-40C", True), ("GRID T4-16Q", True), ("NVIDIA L40-48C", True),
    ("NVIDIA A100-SXM4-80GB", False), ("NVIDIA H100 80GB HBM3", False), ("Tesla V100-SXM2-16GB", False),
    ("NVIDIA A800-80GB", False), ("NVIDIA GeForce RTX 3090", False),
])
def test_vgpu_type_names(name: str, vgpu: bool) -> None:
    """NVIDIA Virtual GPU Software User Guide, Virtual GPU Types: <board>-<framebuffer GB><series A/B/C/Q>."""
    assert bool(driver_chain.VGPU_TYPE.search(name)) is vgpu


def test_a_tensor_on_cuda_proves_cuda_and_a_vgpu_type_warns() -> None:
    """A print session without its commands: the tensor on cuda:0 proves CUDA ran; the device is a vGPU slice
    (the real GRID A100D-4C session in tests/data/public): warn, not pass. The same session on a whole GPU passes."""
    session = "1.13.1\n11.7\n<torch.cuda.device object at 0x7f>\n{name}\ntensor([0.], device='cuda:0')\n"
    vg = explain_text(session.format(name="GRID A100D-4C"), "paste")
    assert vg.verdict is Verdict.WARN and "4 GB framebuffer" in vg.findings[0].message
    whole = explain_text(session.format(name="NVIDIA A100-SXM4-80GB"), "paste")
    assert whole.verdict is Verdict.PASS and "is_available() True" in whole.findings[0].message


def test_torch_on_windows_warns_that_nccl_is_linux_only() -> None:
    """The real pytorch#40682 collect_env (Windows Server 2019, CUDA available): the CUDA check passes and a WARN says
    PyTorch's NCCL backend is Linux-only (torch.distributed documentation, Backends)."""
    from tests.probe_data import PUBLIC, text

    r = explain_text(text(PUBLIC / "collect-env__windows-2x-titan-rtx-torch150-cu101.txt"), "w")
    assert r.verdict is Verdict.WARN and any("NCCL backend is Linux-only" in f.message for f in r.findings)


def test_nvcc_of_another_major_than_torchs_cuda_warns_about_building_extensions():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "nvcc-version__nvcc118-vs-torch-cu12-pip-show.txt"))
    mism = [f for f in r.findings if f.id == "driver.cuda_toolkit" and f.verdict is Verdict.WARN]
    assert len(mism) == 1 and "11.8" in mism[0].message and "CUDA 12" in mism[0].message
    assert "cpp_extension" in mism[0].message and "CUDA_HOME" in mism[0].remedy
    assert driver_chain.toolkit_torch_mismatch("12.4", "12.1", ()) is None  # same major: builds work
    assert driver_chain.toolkit_torch_mismatch("12.8", "", ()) is None  # torch's CUDA unknown: nothing said


def test_an_extension_build_stopped_by_a_cuda_version_mismatch_fails():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "torch-cuda__apex955-cuda-version-mismatch.txt"))
    f = [x for x in r.findings if x.id == "driver.cuda_toolkit"]
    assert r.verdict is Verdict.FAIL and f and "torch was built with (10.2)" in f[0].message and "CUDA_HOME" in f[0].remedy


def test_another_programs_cuda_error_is_named_generically_and_no_libcuda_fails():
    """NVIDIA Warp's init log (NVIDIA/warp#672) is taken by the torch-cuda kind for its "CUDA error:" lines: the
    findings name "the program", not torch, and "Could not open libcuda.so" fails (no driver user space visible)."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "torch-cuda__warp170-could-not-open-libcuda-driver-0.0.txt"))
    assert r.kind == "torch-cuda" and r.verdict is Verdict.FAIL
    f = r.findings[0]
    assert f.id == "driver.torch_cuda" and f.message.startswith("the program cannot load libcuda.so")
    assert "torch" not in f.message and "Warp CUDA error: Could not open libcuda.so." in f.evidence
    assert "docs.nvidia.com/deploy/cuda-compatibility" in f.source and "--gpus all" in f.remedy
    # a torch traceback still says torch
    r = explain_text("Traceback (most recent call last):\n  File \"t.py\", line 2, in <module>\n    torch.zeros(1).cuda()\n"
                     "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    assert r.findings[0].message.startswith("torch")


def test_a_cuda_error_while_cuda_starts_with_cuda_unavailable_fails_whatever_its_class():
    """collect_env on WSL2: "CUDA initialization: ... Error 2: out of memory" and "Is CUDA available: False" (real:
    vllm-project/vllm#8255): out of memory at start-up left torch without a GPU, not a workload that outgrew one."""
    from wizard.explain import explain_text
    from wizard.model import Verdict

    e = explain_text("Collecting environment information...\n/x/torch/cuda/__init__.py:128: UserWarning: CUDA "
                     "initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
                     "calling NumCudaDevices() that might have already set an error? Error 2: out of memory (Triggered "
                     "internally at ../c10/cuda/CUDAFunctions.cpp:108.)\nPyTorch version: 2.4.0+cu121\nIs debug build: "
                     "False\nCUDA used to build PyTorch: 12.1\nIs CUDA available: False\n", "wsl")
    fs = [f for f in e.findings if f.id == "driver.torch_cuda"]
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "is_available() is False" in fs[0].message
    assert "out of memory" in fs[0].message


def test_a_bare_old_nvcc_warns_unless_the_gpus_named_are_ones_it_builds_for():
    """The real `nvcc -V` of CUDA 10.0 (held-out round 11): too old for Ampere and newer; warns with no GPU named or an
    H100 in the plan, and is judged by the driver alone for a V100 (Volta) it builds for."""
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / "nvcc__cuda-10.0-version-only.txt")
    assert explain_text(body).verdict is Verdict.WARN
    assert explain_text(body, "n", {"gpu_model": "NVIDIA H100 80GB HBM3"}).verdict is Verdict.WARN
    volta = explain_text(body, "n", {"gpu_model": "Tesla V100-SXM2-32GB"})
    assert volta.verdict is Verdict.PASS and "too old" not in volta.findings[0].message


def test_torch_device_count_zero_fails_and_names_a_mig_uuid() -> None:
    """round 19 (pytorch/pytorch#95784): an IPython session's torch.cuda.device_count() -> Out[7]: 0 was "not
    recognised". 0 with no MIG device named: no GPU visible to the process, a fail; 0 with CUDA_VISIBLE_DEVICES set to
    a MIG UUID: the count bug MIG UUIDs met, a warn that says MIG keeps NCCL off NVLink. Synthetic REPL lines."""
    from wizard.explain import explain_text
    from wizard.parsers.cuda import parse_torch_cuda

    repl = ">>> import torch\n>>> torch.cuda.device_count()\n0\n>>> torch.__version__\n'2.3.0+cu121'\n"
    t = parse_torch_cuda(repl)
    assert t.device_count == 0 and t.torch_version == "2.3.0+cu121"
    e = explain_text(repl)
    assert e.verdict is Verdict.FAIL and "device_count() is 0: this process sees no GPU" in e.findings[0].message
    mig = ("CUDA_VISIBLE_DEVICES=MIG-0a1b2c3d-0000-1111-2222-333344445555 ipython\n\n"
           "In [3]: torch.cuda.device_count()\nOut[3]: 0\n")
    t = parse_torch_cuda(mig)
    assert t.device_count == 0 and t.visible_devices.startswith("MIG-0a1b2c3d")
    e = explain_text(mig)
    assert e.verdict is Verdict.WARN and "a MIG instance" in e.findings[0].message
    assert explain_text(">>> torch.cuda.device_count()\n8\n>>> torch.cuda.is_available()\nTrue\n").verdict is Verdict.PASS


async def test_the_torch_probe_runs_the_plans_torch_python(tmp_path):
    """walk 20: driver.torch_cuda asked `python3` after the operator set torch_python (the Python the validations
    use). The probe runs the plan's torch_python when it is set, else python3; a Python without torch is named."""
    import sys

    from wizard import probes
    from wizard.hosts import LocalHost

    host = LocalHost()
    with_torch = await probes.TORCH_CUDA.collect(host, {"torch_python": sys.executable})
    assert with_torch.source.startswith(f"$ {sys.executable} -c") and with_torch.rc == 0
    bare = tmp_path / "venv-without-torch" / "python"
    bare.parent.mkdir()
    bare.symlink_to("/usr/bin/python3")
    out = await probes.TORCH_CUDA.collect(host, {"torch_python": str(bare)})
    assert out.source.startswith(f"$ {bare} -c") and out.rc == 1 and "No module named 'torch'" in out.stderr
    f = driver_chain.torch_cuda({"torch_cuda": out}, {})
    assert f[0].verdict is Verdict.SKIP and f[0].message.startswith(f"{bare} has no torch") and "torch_python" in f[0].remedy
    default = await probes.TORCH_CUDA.collect(host, {})
    assert default.source.startswith("$ python3 -c")


def test_a_plan_torch_python_that_is_not_there_is_named_not_python3():
    """Walk 34 #9: the plan's torch_python=/usr/bin/nonexist was reported as "python3 is not installed here"; the
    finding names the plan's path and how to correct it. Without the answer, python3 missing is a skip as before."""
    o = ProbeOutput(name="torch_cuda", source="$ /usr/bin/nonexist -c import torch", rc=127,
                    error="command not found: /usr/bin/nonexist")
    (f,) = driver_chain.torch_cuda({"torch_cuda": o}, {"torch_python": "/usr/bin/nonexist"})
    assert f.verdict is Verdict.UNKNOWN and "torch_python (/usr/bin/nonexist) cannot be run" in f.message
    assert "bringup plan torch_python=" in f.remedy
    (g,) = driver_chain.torch_cuda({"torch_cuda": o}, {})
    assert g.verdict is Verdict.SKIP and "python3 is not installed" in g.message


def test_a_cudnn_version_incompatibility_fails_torch_cuda_naming_both_versions():
    """Held-out round 112: torch built against cuDNN 8.5.0 loaded 8.4.1 from LD_LIBRARY_PATH; cuDNN cannot initialise."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "python-torch-cudnn__cudnn-version-incompatibility-compiled-8.5.0-runtime-8.4.1.txt"))
    f = next(f for f in r.findings if f.id == "driver.torch_cuda")
    assert f.verdict is Verdict.FAIL and "8.5.0" in f.message and "8.4.1" in f.message
    assert "LD_LIBRARY_PATH" in f.remedy and "torch/backends/cudnn" in f.source


def test_collect_env_gpu_list_with_mig_on_some_gpus_warns():
    """Held-out round 146: collect_env lists GPU 2 with seven MIG 1g.12gb instances under it beside three whole H100s."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "collect-env__4xh100-gpu2-mig-7x1g12gb-mixed-partial.txt"))
    f = next(f for f in r.findings if f.id == "health.mig")
    assert f.verdict is Verdict.WARN and "MIG is on for GPU 2 but off for 3 other GPU(s)" in f.message


def test_a_busy_or_unavailable_gpu_fails():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "llama-bench__3x-grid-a100d-16c-vgpu-cuda-device-busy-unavailable-partial.txt"))
    assert r.verdict is Verdict.FAIL and "cudaErrorDevicesUnavailable" in r.findings[0].message


def test_triton_and_paddle_cuda_errors_are_read():
    """Held-out round 163: Triton's 'Triton Error [CUDA]: ...' and PaddlePaddle's 'Out of memory error on GPU 0'."""
    from tests.probe_data import PUBLIC

    t = explain_text(text(PUBLIC / "sglang-crash-log__moe-align-block-size-triton-illegal-memory-access-cuda-gdb.txt"))
    assert t.kind == "torch-cuda" and "cudaErrorIllegalAddress" in t.findings[0].message
    p = explain_text(text(PUBLIC / "paddle-traceback__windows-laptop-gpu0-argsort-resourceexhausted-out-of-memory.txt"))
    assert p.verdict is Verdict.WARN and "out of memory" in p.findings[0].message


def test_a_grep_of_lsmod_for_another_module_does_not_say_nvidia_is_missing():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "lsmod-grep__gds-nvme-core-mlx-compat-nvidia-fs-peermem-loaded.txt"))
    assert r.verdict is Verdict.PASS
    assert any(f.verdict is Verdict.SKIP and "grep 'nvme_core'" in f.message for f in r.findings)


def test_collect_env_listing_two_gpu_models_warns_as_mixed():
    """Held-out round 249 (real: vLLM's collect_env on an RTX 4080 SUPER and an RTX 3060): the GPU list of two models
    warns health.gpu_count as nvidia-smi's mixed models do (one rule, gpu_presence.mixed_models)."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "collect-env__wsl2-rtx4080super-plus-rtx3060-different-devices.txt"))
    (mixed,) = [f for f in r.findings if f.id == "health.gpu_count"]
    assert mixed.verdict is Verdict.WARN and "mixed GPU models on one node" in mixed.message
    assert "1x NVIDIA GeForce RTX 3060" in mixed.message
