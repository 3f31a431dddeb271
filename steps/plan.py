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
                "with Adam (2 B of bf16 weights + 2 B of gradients + 12 B of fp32 master weights and Adam moments; "
                "the ZeRO paper's K = 12), 18 bytes in Hugging Face's accounting, before activations. "
                "A 7B full fine-tune therefore needs ~112-126 GB of GPU memory before activations; "
                "ZeRO-3/FSDP divides model states by the data-parallel degree; DeepSpeed's own "
                "estimators keep more on each GPU (ZeRO-2: 4 bytes per parameter whole plus 16 sharded; "
                "ZeRO-3: 18 sharded plus the largest layer gathered, 4 bytes per its parameter), so they "
                "ask for more GPUs than the paper; LoRA "
                "keeps the frozen base at ~2 bytes/param and QLoRA at ~0.5 bytes/param (4-bit NF4). "
                "Sources: ZeRO paper arxiv.org/abs/1910.02054; DeepSpeed deepspeed/runtime/zero/"
                "stage_1_and_2.py and stage3.py (estimate_zero2/3_model_states_mem_needs); "
                "huggingface.co/docs/transformers/model_memory_anatomy; QLoRA paper arxiv.org/abs/2305.14314."
            ),
            instructions=(
                "Press z (Plan & sizing): type the parameter count, method (pretraining, full "
                "fine-tune, LoRA, QLoRA), precision, optimizer, ZeRO stage, sequence length, "
                "micro-batch and gradient checkpointing, optional tensor/pipeline parallel degrees, and "
                "pick the GPU. It shows bytes per parameter by part, model states per GPU by the ZeRO "
                "paper and by DeepSpeed's estimator (the larger is used), the activation estimate "
                "(Korthikanti et al. 2022, arxiv.org/abs/2205.05198), memory per GPU against the GPU's "
                "memory (GB = 10^9 bytes, GiB = 2^30) and the minimum GPU count, each with its "
                "arithmetic. The form's fields are kept with the build. The same figures from a shell: "
                "bringup size --params 70e9 --method full --zero 3 --gpus 8 --gpu 'H100 SXM5' [--json]\n"
                "F3 there writes the GPU model and count to the plan answers, so later checks "
                "compare the machine against them. Or press F2, or from a shell while bringup is "
                "not running:\n"
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
                "host RAM). How the model is loaded matters most: a full copy on every rank takes "
                "8 x 140 GB for a 70B model on 8 GPUs, while DeepSpeed zero.Init or FSDP meta-device "
                "loading never holds a full copy (DeepSpeed's estimate: about 13 GB for that 70B). "
                "DGX H100 has 14 CPU cores per GPU. Sources: MLPerf system descriptions "
                "(mlcommons inference_results v3.1/v4.1/v6.0); DGX H100 user guide; ZeRO paper; "
                "DeepSpeed memory requirements deepspeed.readthedocs.io/en/latest/memory.html."
            ),
            instructions=(
                "Press z (Plan & sizing) and read Host RAM, CPU cores and NVMe: it counts what it can "
                "(model loading by the path you pick: a full copy per rank, rank 0 loads and broadcasts, "
                "or sharded init, by default sharded at ZeRO-3; CPU offload of master weights, gradients "
                "and optimizer states; your measured data-loader memory) and shows the real systems' "
                "ratios as context only. Checkpoint size = weights + optimizer states, computed there.\n"
                "Record what this machine should have so the OS stage can compare: F3 on the sizing "
                "screen writes host_ram_min_gib (the counted minimum: os.memory warns below it) and "
                "host_ram_gib when you typed the installed size; F2 or "
                "`bringup plan host_ram_gib=2048 numa_nodes=2 data_path=/raid` for the rest.\n"
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
                "Press z (Plan & sizing): it adds the GPU maxima (TDP from the GPU table) to the CPU "
                "and other maxima you enter, counts PSUs for N+1 and N+N from the PSU rating, and "
                "converts to heat (W and BTU/h). Where the server vendor publishes a system maximum, "
                "enter it: it replaces the component sum.\n"
                "Decide N+1 or N+N redundancy, and check the rack PDU circuits and the cooling for "
                "that maximum. Confirm once the rack power and cooling plan is agreed with facilities."
            ),
            manual=True,
        ),
    ),
)
