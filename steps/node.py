"""Stage 8: validate all GPUs of the node together."""

from wizard.actions import ActionSpec
from wizard.rules.validate import judge_node, judge_soak, results_node, results_soak
from wizard.model import Stage, Step
from wizard.validate import VALIDATE_PROBES, resolve_node, resolve_soak

NODE_VALIDATE = ActionSpec(
    id="validate_node",
    title="torchrun across all GPUs: rank sanity, all-reduce sweep, P2P matrix",
    description=(
        "Starts one rank per GPU with `<python> -m torch.distributed.run --standalone` (NCCL on GPUs, gloo on "
        "cpu; NCCL_DEBUG=INFO): every rank all-reduces ones and passes a monitored barrier, then an "
        "all-reduce sweep 8 B -> 4 GiB with correctness checks and busbw, and a send/recv matrix for every GPU "
        "pair. When nccl-tests' all_reduce_perf is installed it runs too (-c 1). Measures only."),
    resolve=resolve_node,
    probes=VALIDATE_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_node,
    results=results_node,
    command="node",
)

SOAK = ActionSpec(
    id="soak",
    title="Soak: GEMM and all-reduce for the chosen minutes under NVML sampling",
    description=(
        "Alternates GEMM intervals on every GPU and (with more than one GPU) all-reduce intervals for "
        "soak_minutes (default 10; `bringup validate soak --minutes M`), sampling NVML and reading "
        "Xid/ECC/AER/remap counters before and after. Measures only."),
    resolve=resolve_soak,
    probes=VALIDATE_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_soak,
    results=results_soak,
    command="soak",
)

STAGE = Stage(
    id="node",
    title="Validate the node",
    short="Whole node",
    summary="All GPUs together: NCCL ranks, all-reduce bandwidth, peer-to-peer.",
    steps=(
        Step(
            id="node.validate",
            title="torchrun across all GPUs: rank sanity, all-reduce sweep, P2P matrix",
            why=(
                "Training is a collective: one slow or wrong GPU or link slows or corrupts every step. Every rank "
                "must report (Stas Bekman's torch-distributed-gpu-test.py idea), the all-reduce must be correct at "
                "every size with busbw at the largest size at the system's floor (nccl-tests PERFORMANCE.md: "
                "busbw = algbw x 2(n-1)/n; floors from Azure HPC health checks and NVIDIA/nccl-tests#212), and every GPU pair "
                "must copy at about the same speed (nvbandwidth, SuperBench's variance rule)."
            ),
            instructions=(
                "Press a (or `bringup validate node`). One rank per GPU (validate_nproc in the plan, or --nproc, "
                "overrides). Install nccl-tests (all_reduce_perf on PATH) to have its figures in the same run. A run "
                "on the CPU (gloo) tests the software path only and leaves the step cpu-only, not done."
            ),
            action=NODE_VALIDATE,
        ),
        Step(
            id="node.nccl_sanity",
            title="Every rank of an NCCL job starts and all-reduces",
            why=(
                "A torchrun job with one rank per GPU proves the driver, NCCL and the GPUs' "
                "interconnect work together before any bandwidth test (Stas Bekman's ml-engineering "
                "torch-distributed-gpu-test.py, github.com/stas00/ml-engineering)."
            ),
            instructions=(
                "node.validate automates this (rank sanity under torchrun with NCCL_DEBUG=INFO, each phase "
                "behind a monitored barrier that names a missing rank); confirm here once it passes. By hand: "
                "`NCCL_DEBUG=INFO torchrun --nproc_per_node=<GPUs> torch-distributed-gpu-test.py` "
                "(Stas Bekman's ml-engineering script); every rank must print OK within 5 minutes."
            ),
            manual=True,
        ),
        Step(
            id="node.allreduce",
            title="All-reduce bus bandwidth reaches the node's floor",
            why=(
                "nccl-tests all_reduce_perf is the standard measure: #wrong must be 0 at every size "
                "and large-message busbw must reach the SKU's floor. 8x H100/H200 on NVSwitch with NVLS "
                "peaks near 480 GB/s (about 370 GB/s with NCCL_ALGO=Ring), per an NCCL developer in "
                "NVIDIA/nccl-tests#212; Azure's fleet check uses 228 GB/s for 8x A100, while some "
                "vendors' A100 systems measure about 200 GB/s (NVIDIA/nccl-tests#149, #175), so take "
                "your vendor's figure where it has one. Judge the largest sizes (1-16 GB), not the "
                "'Avg bus bandwidth' line."
            ),
            instructions=(
                "node.validate runs a torch all-reduce sweep to 4 GiB and, when installed, `all_reduce_perf -b 8 "
                "-e 4G -f 2 -g <GPUs> -c 1`, and judges both; confirm here once it passes. The per-rank form: "
                "`all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1` with one rank per GPU (mpirun or srun)."
            ),
            manual=True,
        ),
        Step(
            id="node.dcgm_l3",
            title="Run DCGM diagnostics level 3",
            why=(
                "Level 3 (10-15 minutes) adds longer stress and interconnect tests across the node "
                "(DCGM diagnostics documentation)."
            ),
            instructions="`dcgmi diag -r 3 -j > dcgm-r3.json`; all tests must pass before you confirm.",
            manual=True,
        ),
        Step(
            id="node.soak",
            title="Soak the node for the chosen minutes: GEMM + all-reduce under NVML sampling",
            why=(
                "Faults that take heat or time to show (thermal slowdown, power brake, a GPU that falls off the "
                "bus, ECC errors) appear only under sustained load. Pass: no new Xid, ECC, AER or remap, no "
                "sustained HW thermal slowdown or power brake (NVML clock-event reasons; Azure HPC health checks), and the end "
                "within 5% of the start (SuperBench's variance rule)."
            ),
            instructions=(
                "Set soak_minutes in the plan (F2; default 10), then press a (or `bringup validate soak "
                "--minutes M`). It keeps running if the terminal or SSH session closes. For acceptance, soak "
                "for hours (DCGM diag -r 4, gpu-burn). A soak on the CPU judges no performance or GPU counters: "
                "the step is then cpu-only, not done."
            ),
            action=SOAK,
        ),
    ),
)
