"""Stage 1: plan & sizing. The answers become the build's expectations (``bringup plan``)."""

from wizard.model import Stage, Step

STAGE = Stage(
    id="plan",
    title="Plan & sizing",
    short="Plan & sizing",
    summary="Decide what the machine must do, and write down what later checks should expect.",
    steps=(
        Step(
            id="plan.workload",
            title="Size GPU memory for the training workload",
            why=(
                "Model states alone take about 16 bytes per parameter for mixed-precision training "
                "with Adam (2 bf16 weights + 2 gradients + 12 fp32 master weights and Adam moments; "
                "the ZeRO paper's K = 12), 18 bytes in Hugging Face's accounting, before activations. "
                "A 7B full fine-tune therefore needs ~112-126 GB of GPU memory before activations; "
                "ZeRO-3/FSDP divides model states by the data-parallel degree; LoRA keeps the frozen "
                "base at ~2 bytes/param and QLoRA at ~0.5 bytes/param (4-bit NF4). "
                "Sources: ZeRO paper arxiv.org/abs/1910.02054; huggingface.co/docs/transformers/"
                "model_memory_anatomy; QLoRA paper arxiv.org/abs/2305.14314."
            ),
            instructions=(
                "Work out parameters x bytes/param for your method, add activations (they grow with "
                "sequence length and micro-batch; gradient checkpointing cuts them), and divide by "
                "the GPU's memory to get the minimum GPU count.\n"
                "Record the GPU model and count this machine must have, so later checks compare "
                "against it: press F2 (plan answers), or from a shell while bringup is not running:\n"
                "  bringup plan gpu_model='H100 SXM5' gpu_count=8\n"
                "Then confirm this step."
            ),
            manual=True,
        ),
        Step(
            id="plan.host",
            title="Size host memory, CPU cores and local NVMe",
            why=(
                "No vendor rule fixes host RAM as a multiple of GPU memory: shipping 8-GPU systems "
                "range from 1.25x (8x B200, 1.8 TB) to 3.2x (DGX H100, 2 TB). Size it from the "
                "workload: data-loader workers, pinned buffers, loading a full checkpoint into CPU "
                "memory, and CPU offload (ZeRO-Offload keeps ~12 bytes/param of optimizer state in "
                "host RAM). DGX H100 has 14 CPU cores per GPU. Sources: MLPerf system descriptions "
                "(mlcommons inference_results v3.1/v4.1/v6.0); DGX H100 user guide; ZeRO paper."
            ),
            instructions=(
                "Decide host RAM, cores per GPU and NVMe capacity for datasets and checkpoints; record "
                "what this machine should have so the OS stage can compare:\n"
                "F2 (plan answers), or `bringup plan host_ram_gib=2048 numa_nodes=2 data_path=/raid`\n"
                "Then confirm this step."
            ),
            manual=True,
        ),
        Step(
            id="plan.power",
            title="Budget power, PSU redundancy and cooling",
            why=(
                "A GPU server's maximum draw is well above the sum of GPU TDPs: DGX H100 is rated "
                "10.2 kW with 8 x 700 W GPUs (about 1.8x the GPU sum) on 6 x 3.3 kW PSUs in a 4+2 "
                "configuration. With N+N (two feeds) each half must carry the full load alone. Every "
                "watt becomes heat the room must remove (1 W = 3.412 BTU/h). Sources: DGX H100 user "
                "guide (docs.nvidia.com/dgx/dgxh100-user-guide/); 80 PLUS Titanium table."
            ),
            instructions=(
                "Use the server vendor's published system maximum (not only the GPU TDP sum), decide "
                "N+1 or N+N redundancy, and check the rack PDU circuits and the cooling for that "
                "maximum. Confirm once the rack power and cooling plan is agreed with facilities."
            ),
            manual=True,
        ),
    ),
)
