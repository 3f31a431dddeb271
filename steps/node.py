"""Stage 8: validate all GPUs of the node together."""

from wizard.model import Stage, Step

STAGE = Stage(
    id="node",
    title="Validate the node",
    short="Whole node",
    summary="All GPUs together: NCCL ranks, all-reduce bandwidth, peer-to-peer.",
    steps=(
        Step(
            id="node.nccl_sanity",
            title="Every rank of an NCCL job starts and all-reduces",
            why=(
                "A torchrun job with one rank per GPU proves the driver, NCCL and the GPUs' "
                "interconnect work together before any bandwidth test (Stas Bekman's ml-engineering "
                "torch-distributed-gpu-test.py, github.com/stas00/ml-engineering)."
            ),
            instructions=(
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
            instructions="`all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1` with one rank per GPU (mpirun or srun).",
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
    ),
)
