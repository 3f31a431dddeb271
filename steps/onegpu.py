"""Stage 7: validate one GPU at a time (each GPU on its own)."""

from wizard import dcgm_diag
from wizard.actions import ActionSpec
from wizard.i18n import N_
from wizard.rules.validate import judge_gpu, results_gpu
from wizard.model import Stage, Step
from wizard.validate import VALIDATE_PROBES, resolve_gpu

GPU_VALIDATE = ActionSpec(
    id="validate_gpu",
    title="Validate each GPU: compute, memory, bandwidth, a short training run",
    description=(
        "Runs bringup's validation script with this machine's own Python and PyTorch (plan torch_python; "
        "validate_device auto|cuda|cpu): per GPU a bf16 GEMM, a device memory copy, pinned host<->device "
        "copies, a pattern test over ~90% of free memory and a tiny transformer's training loop, with NVML "
        "sampled and Xid/ECC/AER/remap counters read before and after. Reads and measures only."),
    resolve=resolve_gpu,
    probes=VALIDATE_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_gpu,
    results=results_gpu,
    command="gpu",
    loads_gpus=True,
)

DCGM_L2 = ActionSpec(
    id="dcgm_l2",
    title="Run DCGM diagnostics level 2 on every GPU (dcgmi diag -r 2 -j)",
    description=(
        "Runs `dcgmi diag -r 2 -j` over every GPU (medium validation: deployment, PCIe, GPU memory; "
        "'approximately two minutes', NVIDIA dcgmi diag reference) with a progress line while it runs, then "
        "judges each test per GPU. Starts nvidia-dcgm first when it is installed and stopped. Measures only."),
    resolve=dcgm_diag.resolve_l2,
    probes=("driver_services",),
    changes_system=False,
    needs_root=False,
    root_when=N_("to start nvidia-dcgm when it is installed and stopped"),
    judge=dcgm_diag.judge_l2,
    judges_exit=True,
    loads_gpus=True,
)

BURNIN = ActionSpec(
    id="burnin",
    title="Burn in every GPU: DCGM stress and power, else sustained GEMM",  # minutes: burnin_minutes
    description=(
        "With DCGM: `dcgmi diag -r targeted_stress` then `-r targeted_power`, each for half of burnin_minutes "
        "(default 10; `-p <test>.test_duration=S`). Without DCGM (or on the CPU): bringup's validation script "
        "runs sustained GEMM on every GPU for burnin_minutes (`bringup validate burnin --minutes M`), sampling NVML "
        "(clocks, temperature, power, clock-event reasons) and reading Xid/ECC/AER/remap counters before and "
        "after; judged like the soak. Measures only."),
    resolve=dcgm_diag.resolve_burnin,
    probes=VALIDATE_PROBES + ("driver_services",),
    changes_system=False,
    needs_root=False,
    root_when=N_("to start nvidia-dcgm when it is installed and stopped"),
    judge=dcgm_diag.judge_burnin,
    results=dcgm_diag.results_burnin,
    command="burnin",
    judges_exit=True,
    loads_gpus=True,
)

STAGE = Stage(
    id="gpu",
    title="Validate one GPU",
    short="One GPU",
    summary="Each GPU alone: diagnostics, host bandwidth, compute under load.",
    steps=(
        Step(
            id="gpu.validate",
            title="Validate each GPU: compute, memory, bandwidth, a short training run",
            why=(
                "A GPU that enumerates can still be slow, corrupt memory or throttle under load. bf16 GEMM is "
                "judged against the measured Maximum Achievable Matmul FLOPS (Stas Bekman, ml-engineering; "
                "DCGM's 0.75 x rule for the fail line), device memory bandwidth against the datasheet, pinned "
                "host<->device copies against the PCIe generation's practical figure (Azure HPC health checks check_cuda_bw "
                "24/52 GB/s), and NVML clock-event reasons and Xid/ECC/AER counters are compared before and "
                "after the load."
            ),
            instructions=(
                "Press a (or `bringup validate gpu`). It runs with the Python that has PyTorch: set "
                "torch_python in the plan (F2) if it is not bringup's own. `--device cpu` (or a machine without "
                "a GPU) tests the software path only: it judges correctness, not performance, and leaves the step "
                "cpu-only, not done, because no GPU was validated."
            ),
            action=GPU_VALIDATE,
        ),
        Step(
            id="gpu.dcgm_l2",
            title="Run DCGM diagnostics level 2 on every GPU",
            why=(
                "Level 2 adds memory, PCIe and short stress tests per GPU ('approximately two minutes', NVIDIA "
                "dcgmi diag reference); treat PCIe, NVLink, ECC and memory failures as fatal (DCGM diagnostics "
                "documentation; IBM Autopilot's fatal list)."
            ),
            instructions=(
                "Press a (or `bringup run gpu.dcgm_l2`): it runs `dcgmi diag -r 2 -j` over every GPU (about 2 "
                "minutes, progress shown), starting nvidia-dcgm first when it is stopped (then it needs root), and "
                "judges each test per GPU; every GPU must pass. Without DCGM, install it with step driver.dcgm; "
                "gpu.validate and the burn-in (gpu.stress) cover part of it meanwhile (not DCGM's memory test with its ECC "
                "checks, nor its PCIe test)."
            ),
            action=DCGM_L2,
        ),
        Step(
            id="gpu.host_bandwidth",
            title="Measure host-to-GPU bandwidth on every GPU",
            why=(
                "Azure's node health check passes pinned copies at 24 GB/s on PCIe Gen4 x16 and 52 "
                "GB/s on Gen5 x16 (Azure HPC health checks check_cuda_bw); H100 measures about 55 GB/s device-to-host, "
                "while host-to-device has been reported as low as ~35 GB/s on some Gen5 systems "
                "(NVIDIA/nvbandwidth#24), so compare both directions and compare GPUs with each "
                "other. Below a quarter of the generation's figure the link trained at x4-equivalent "
                "(IBM Autopilot pciebw guidance). A remote NUMA node cuts the figure several-fold, so "
                "run it on the GPU's own node."
            ),
            instructions=(
                "gpu.validate measures pinned host-to-device and device-to-host copies per GPU and judges "
                "them against these figures; confirm here once it passes. By hand, or to pin the NUMA node: "
                "`nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -j`, or "
                "CUDA samples' bandwidthTest, pinned with `numactl --cpunodebind=N --membind=N` for "
                "the GPU's NUMA node (`nvidia-smi topo -m`). Compare each GPU with the figures under Why."
            ),
            manual=True,
            automated_by="gpu.validate",
        ),
        Step(
            id="gpu.stress",
            title="Stress each GPU's compute with a correctness check",
            why=(
                "A stress run with result checking finds GPUs that compute wrong or throttle under "
                "sustained load; power should reach about 90% of the enforced limit and no HW "
                "thermal slowdown or power brake should stay active (wilicc/gpu-burn; NVML clock-event "
                "reasons; Azure HPC health checks azure_gpu_clock_throttling)."
            ),
            instructions=(
                "Set burnin_minutes in the plan (F2; default 10), then press a (or `bringup validate burnin "
                "--minutes M`). With DCGM it runs `dcgmi diag -r targeted_stress` and `-r targeted_power`, each for "
                "half the time, judged per GPU (DCGM's plugins watch temperature, Xid, memory errors and PCIe "
                "replays while they load the GPU and fail on them: DCGM 'Targeted Stress Plugin', "
                "docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/plugins/targeted-stress.html); "
                "without DCGM, bringup's "
                "sustained GEMM on every GPU under NVML sampling, judged like the soak. A run on the CPU proves the "
                "software path only and leaves the step cpu-only, not done. By hand, gpu-burn does the same: "
                "`gpu_burn -tc 600` (wilicc/gpu-burn; -tc uses tensor cores, the last argument is seconds) while "
                "`nvidia-smi dmon -s pucv` runs in another terminal; every GPU must report OK with zero errors."
            ),
            action=BURNIN,
        ),
    ),
)
