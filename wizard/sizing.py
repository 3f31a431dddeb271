"""Plan & sizing arithmetic: GPU memory per GPU, GPU count, host RAM, CPU cores, NVMe and power.

Pure functions, no Textual (the "Plan & sizing" screen, ``screens/sizing.py``, only shows what
:func:`size` returns). Every figure comes back as a :class:`Result` that carries its arithmetic
and its source, so the operator sees how each number was reached.

Units, always explicit: **GB = 10^9 bytes**, **GiB = 2^30 bytes**, W (watts), BTU/h.
Ψ (psi) is the parameter count, as in the ZeRO paper.

Sources (each constant below names its own):

* ZeRO paper, Rajbhandari et al. 2019, https://arxiv.org/abs/1910.02054 §3.1, §5, Fig. 1:
  mixed-precision Adam keeps 2Ψ (fp16 weights) + 2Ψ (fp16 gradients) + KΨ optimizer states with
  K = 12 (fp32 master weights, momentum and variance, 4 + 4 + 4 bytes); ZeRO-1/2/3 divide the
  optimizer states / + gradients / + parameters by the data-parallel degree Nd.
* Hugging Face, "Anatomy of model's memory",
  https://huggingface.co/docs/transformers/model_memory_anatomy : weights 4 bytes/param (fp32) or
  6 (mixed precision: fp32 + 16-bit copy); gradients 4; optimizer 8 (AdamW), 2 (8-bit AdamW,
  bitsandbytes), 4 (SGD with momentum): 18 bytes/param for mixed-precision AdamW.
* QLoRA, Dettmers et al. 2023, https://arxiv.org/abs/2305.14314 §3: 4-bit NormalFloat (NF4) base
  weights; double quantization cuts the quantization constants from 32/64 = 0.5 bits to
  8/64 + 32/(64·256) = 0.127 bits per parameter.
* LoRA, Hu et al. 2021, https://arxiv.org/abs/2106.09685 §4.1: a rank-r update BA of a d×k
  weight adds r·(d + k) trainable parameters; the paper's GPT-3 runs adapt W_q and W_v (§7.1).
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  https://arxiv.org/abs/2205.05198 §4 eq. 1: activations per transformer layer
  s·b·h·(34 + 5·a·s/h) bytes (16-bit activations, 1-byte dropout masks, no parallelism);
  §5 selective recomputation: 34·s·b·h; full recomputation keeps only each layer's input,
  2·s·b·h bytes per layer.
* FlashAttention, Dao et al. 2022, https://arxiv.org/abs/2205.14135 §3.1: the s×s attention
  matrices are not stored for the backward pass, which removes the 5·a·s/h term above.
* DeepSpeed configuration reference, https://www.deepspeed.ai/docs/config-json/ :
  ``offload_optimizer`` "Valid for ZeRO stage 1, 2, 3"; ``pin_memory`` "Offload to page-locked
  CPU memory ... at the cost of extra memory overhead". ZeRO-Offload, Ren et al. 2021,
  https://arxiv.org/abs/2101.06840 : gradients, optimizer states and the optimizer step on the CPU.
* DeepSpeed's estimators, deepspeedai/DeepSpeed (HEAD edaa722):
  ``deepspeed/runtime/zero/stage_1_and_2.py`` ``estimate_zero2_model_states_mem_needs``
  (https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage_1_and_2.py):
  GPU 4Ψ + int(16Ψ/N) (``gpu_mem = 4 * total_params + int(16 * total_params / total_gpus)``: 16-bit params and
  grads whole, fp32 params, grads and Adam states sharded), 2Ψ with the optimizer offloaded; host Ψ·4·n·1.5 (every rank builds an
  fp32 model). ``deepspeed/runtime/zero/stage3.py`` ``estimate_zero3_model_states_mem_needs``
  (https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage3.py): GPU
  4·LL + int(18Ψ/N) (LL = the largest layer's parameters: 2 bytes gathered 16-bit params + 2 bytes
  16-bit grads), 4·LL + int(2Ψ/N) with the optimizer offloaded; host with ``zero_init`` (zero.Init)
  LL·4·n·1.5, without Ψ·4·n·1.5. Docs: https://deepspeed.readthedocs.io/en/latest/memory.html .
  ``zero.Init`` "immediately partitions tensors" (``partition_parameters.py`` class Init).
* PyTorch FSDP, https://pytorch.org/docs/stable/fsdp.html : FULL_SHARD shards parameters, gradients
  and optimizer states (ZeRO-3), SHARD_GRAD_OP gradients and optimizer states (ZeRO-2);
  ``param_init_fn`` / meta-device init and ``sync_module_states`` (rank 0 loads, then broadcasts).
  Accelerate FSDP guide, https://huggingface.co/docs/accelerate/usage_guides/fsdp :
  ``cpu_ram_efficient_loading`` "only the first process loads the pretrained model checkpoint while
  all other processes have empty weights"; Accelerate "FSDP vs DeepSpeed": transformers activates
  zero.Init "whenever DeepSpeed Zero3 is used".
* Accelerate ``accelerate estimate-memory``, huggingface/accelerate
  ``src/accelerate/commands/estimate.py`` ``estimate_training_usage``: for bf16/fp16 it prints the
  largest single part (optimizer = 2 x the fp32 size = 8Ψ), not the sum: shown for comparison only.
* Megatron-LM: Shoeybi et al. 2019, https://arxiv.org/abs/1909.08053 (tensor parallelism splits
  each layer's weights over t GPUs); Narayanan et al. 2021, https://arxiv.org/abs/2104.04473 §2
  (pipeline stages hold L/p layers; data-parallel size d = n/(t·p); 1F1B keeps at most p
  micro-batches in flight); Korthikanti et al. 2022 Table 2 (activations per layer with TP t:
  s·b·h·(10 + 24/t + 5as/(ht)), with sequence parallelism s·b·h·(34/t + 5as/(ht)); §4.2.3: the
  first pipeline stage stores L layers' worth whatever p).
* Real systems for context: DGX H100 user guide
  https://docs.nvidia.com/dgx/dgxh100-user-guide/ (2× 56-core Xeon 8480C, 2 TB, 10.2 kW max,
  6× 3.3 kW PSUs 4+2); MLPerf system descriptions (mlcommons inference_results v3.1 Dell XE9680,
  v4.1 NVIDIA H200, v6.0 Nebius B200: 2× 60 cores, 1.8 TB).
* 1 W = 3.412 BTU/h: NIST SP 811 (2008) Appendix B.8, "British thermal unit_IT per hour =
  0.2930711 W".
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from wizard.data import table
from wizard.i18n import Msg, N_
from wizard.i18n import names as listed
from wizard.common import lazy_re

GB = 1e9
"""Bytes in a gigabyte (SI). GPU datasheets and disk vendors quote GB."""
GiB = 2 ** 30
"""Bytes in a gibibyte. ``free -g``, ``/proc/meminfo`` and the plan's host_ram_gib use GiB."""

SRC_ZERO = "ZeRO paper arxiv.org/abs/1910.02054 §5, Fig. 1"
SRC_HF = "huggingface.co/docs/transformers/model_memory_anatomy"
SRC_QLORA = "QLoRA paper arxiv.org/abs/2305.14314 §3"
SRC_LORA = "LoRA paper arxiv.org/abs/2106.09685 §4.1, §7.1"
SRC_ACT = "Korthikanti et al. 2022 arxiv.org/abs/2205.05198 §4 eq. 1, §5"
SRC_FLASH = "FlashAttention paper arxiv.org/abs/2205.14135 §3.1"
SRC_KAPLAN = "Kaplan et al. 2020 arxiv.org/abs/2001.08361 §2.1 (N ≈ 12·n_layer·d_model²)"
SRC_DS = "DeepSpeed config reference deepspeed.ai/docs/config-json/ (offload_optimizer, pin_memory)"
SRC_OFFLOAD = "ZeRO-Offload paper arxiv.org/abs/2101.06840"
SRC_DGX_H100 = "DGX H100 user guide docs.nvidia.com/dgx/dgxh100-user-guide/"
SRC_MLPERF = "MLPerf system JSONs (github.com/mlcommons inference_results v3.1, v4.1, v6.0)"
"""Dell XE9680 8x H100 (v3.1), NVIDIA 8x H200 SXM (v4.1), Nebius 8x B200 nebius_b200_n1.json (v6.0)."""
SRC_NIST = "NIST SP 811 (2008) App. B.8: 1 BTU_IT/h = 0.2930711 W"
SRC_80PLUS = "80 PLUS program table (en.wikipedia.org/wiki/80_Plus): Titanium 230 V redundant 90/94/96/91 %"
SRC_SPECS = "assets/gpu_specs.csv"
SRC_DS2 = ("DeepSpeed estimate_zero2_model_states_mem_needs, deepspeed/runtime/zero/stage_1_and_2.py "
           "github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage_1_and_2.py")
SRC_DS3 = ("DeepSpeed estimate_zero3_model_states_mem_needs, deepspeed/runtime/zero/stage3.py "
           "github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage3.py")
SRC_DSMEM = "DeepSpeed memory requirements deepspeed.readthedocs.io/en/latest/memory.html"
SRC_FSDP = ("PyTorch FSDP pytorch.org/docs/stable/fsdp.html (FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2, "
            "param_init_fn, sync_module_states); Accelerate FSDP guide "
            "huggingface.co/docs/accelerate/usage_guides/fsdp (cpu_ram_efficient_loading)")
SRC_ACCEL = "Accelerate estimate-memory, github.com/huggingface/accelerate src/accelerate/commands/estimate.py"
SRC_MEGATRON = ("Megatron-LM arxiv.org/abs/1909.08053 (tensor parallel); arxiv.org/abs/2104.04473 §2 "
                "(pipeline parallel, d = n/(t·p)); arxiv.org/abs/2205.05198 Table 2, §4.2.3 (activations with TP/SP)")

# ---------------------------------------------------------------------------- bytes per parameter

ADAM_K = 12
"""Optimizer-state bytes per parameter for mixed-precision Adam, fp32 master weights included
(4 master + 4 momentum + 4 variance). ZeRO paper §3.1 ("K = 12")."""

MASTER_FP32_BYTES = 4
"""fp32 master copy of the weights kept in mixed precision (ZeRO paper §3.1: part of K; HF docs:
6 bytes of weights = fp32 + 16-bit copy)."""

OPTIMIZER_STATE_BYTES = {"adamw": 8, "adam8bit": 2, "sgd_momentum": 4, "sgd": 0}
"""Optimizer-state bytes per trainable parameter, master copy excluded. Adam/AdamW: fp32 momentum +
variance = 8; 8-bit AdamW (bitsandbytes) = 2; SGD with momentum = 4 (one fp32 buffer) — all three
from the HF memory-anatomy page. Plain SGD keeps no state (torch.optim.SGD allocates a momentum
buffer only when momentum != 0, pytorch.org/docs/stable/generated/torch.optim.SGD.html)."""

OPTIMIZER_LABEL = {"adamw": "Adam/AdamW", "adam8bit": "8-bit AdamW", "sgd_momentum": "SGD+momentum",
                   "sgd": "SGD"}

NF4_BITS = 4.0
"""Bits per parameter of the 4-bit NormalFloat base weights (QLoRA paper §3)."""
NF4_CONSTANT_BITS_DQ = 8 / 64 + 32 / (64 * 256)
"""Quantization-constant overhead with double quantization, bits per parameter:
8/64 + 32/(64·256) = 0.127 (QLoRA paper §3, "Double Quantization")."""
QLORA_BASE_BYTES = (NF4_BITS + NF4_CONSTANT_BITS_DQ) / 8
"""Bytes per frozen base parameter in QLoRA: (4 + 0.127) / 8 ≈ 0.516 (QLoRA paper §3)."""

ACT_COEFF = 34
"""The 34 in s·b·h·(34 + 5·a·s/h): bytes per (token × hidden unit) of one GPT-style layer's
activations other than the attention scores (16-bit values, 1-byte dropout masks).
Korthikanti et al. 2022 §4.1 eq. 1; also the per-layer total with selective recomputation (§5)."""
ACT_ATTN_COEFF = 5
"""The 5 in 5·a·s/h: softmax output, its dropout mask and the dropout output per attention score
(Korthikanti et al. 2022 §4.1)."""
ACT_FULL_RECOMPUTE = 2
"""Bytes per (token × hidden unit) kept per layer with full recomputation: only each layer's 16-bit
input (Korthikanti et al. 2022 §4: 2·s·b·h·L in total)."""
ACT_TP_REPLICATED = 10
"""With tensor parallelism but no sequence parallelism, 10·s·b·h per layer stays replicated on every
TP rank (layer norms, dropouts, the inputs of the first linear layers) and 24·s·b·h is split by t:
s·b·h·(10 + 24/t + 5as/(ht)) (Korthikanti et al. 2022 Table 2, eq. 2)."""

DS_16BIT_PARAM_BYTES = 2
"""DeepSpeed ZeRO-2 with the optimizer offloaded: ``gpu_mem = 2 * total_params`` (stage_1_and_2.py)."""
DS_Z2_WHOLE_BYTES = 4
"""DeepSpeed ZeRO-2 without offload: ``4 * total_params`` held whole on every GPU (stage_1_and_2.py)."""
DS_Z2_SHARDED_BYTES = 16
"""DeepSpeed ZeRO-2 without offload: ``int(16 * total_params / total_gpus)`` sharded (stage_1_and_2.py)."""
DS_SHARDED_BYTES = 18
"""DeepSpeed ZeRO-3: '18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit(momentum and
variance)', divided by the GPU count (stage3.py, estimate_zero3_model_states_mem_needs)."""
DS_OFFLOAD_SHARDED_BYTES = 2
"""DeepSpeed ZeRO-3 with the optimizer offloaded and parameters on the GPU: int(2·Ψ/N) (stage3.py)."""
DS_GATHER_BYTES = 4
"""DeepSpeed ZeRO-3: largest_layer_memory = 4 x largest_layer_params: '2 bytes fp16 params are
gathered and 2 bytes fp16 grads are computed (total 4x)' (stage3.py; memory.html)."""
DS_BUFFER_FACTOR = 1.5
"""DeepSpeed's estimators' additional_buffer_factor default, applied to host (CPU) memory only."""
DS_HOST_INIT_BYTES = 4
"""DeepSpeed's host estimate: each rank builds an fp32 model on the CPU, 4 bytes/param
(``total_params * 4 * num_gpus_per_node * additional_buffer_factor``)."""

CORES_PER_GPU_REFERENCES = (
    (14, Msg("DGX H100: 2x 56-core Xeon 8480C = 112 cores / 8 GPUs"), SRC_DGX_H100),
    (15, Msg("MLPerf 8x B200 system: 2x 60 cores = 120 / 8 GPUs"), "mlcommons inference_results v6.0 nebius_b200_n1.json"),
)
"""CPU cores per GPU of shipping 8-GPU systems: references, not rules."""

HOST_RAM_RATIOS = (
    ("Nebius 8x B200 (MLPerf): 1.8 TB / 1,440 GB", 1.25),
    ("NVIDIA 8x H200 SXM (MLPerf): 2 TB / 1,128 GB", 1.8),
    ("Dell XE9680 8x H100 (MLPerf): 2 TB / 640 GB", 3.2),
    ("DGX H100: 2 TB / 640 GB", 3.2),
)
"""(system, host RAM / total GPU memory) of real 8-GPU systems as their vendors' system guides list them. Context
only — no vendor states a RAM:GPU-memory rule."""

DGX_H100_MAX_W = 10_200
"""DGX H100 maximum system power, W, with 8 x 700 W GPUs (5.6 kW): the vendor's published system
maximum is the figure to size PSUs, PDUs and cooling for (DGX H100 user guide)."""
DGX_H100_GPU_W = 8 * 700

BTU_PER_W = 3.412
"""BTU/h per watt: 1 / 0.2930711 = 3.412 (NIST SP 811 App. B.8)."""

OBSERVED_TOTAL_MIB = {
    "A100 40GB SXM4": (40960, "nvidia-smi-q-x__a100-sxm4-40gb-mig-passthrough-vm.xml"),
    "A100 80GB SXM4": (81920, "nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml"),
    "H100 SXM5": (81559, "nvidia-smi-q__8x-h100-sxm-hw-power-brake-slowdown-active-all-gpus.txt"),
    "H200 SXM": (143771, "nvidia-smi-q__h200-single-gpu-vm-gpu-burn-load-healthy.txt"),
    "GeForce RTX 4090": (24564, "nvidia-smi-q__8x-rtx4090-server-gpu0-section.txt"),
}
"""FB memory "Total" that nvidia-smi printed on real boards of these models, MiB, with the case
file (shared/cases) it comes from. Shown next to the datasheet figure: the datasheet's "80 GB"
is close to 80 GiB in practice, so comparing against it as 80x10^9 bytes is conservative."""

# ---------------------------------------------------------------------------- model shapes


@dataclass(frozen=True)
class ModelShape:
    """Transformer shape used for the activation estimate and LoRA rank arithmetic."""

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    source: str
    vocab: int = 0
    ffn: int = 0

    @property
    def largest_layer(self) -> int:
        """Parameters of the largest single module, as DeepSpeed's ``model_to_params`` counts them (max over
        modules of their own parameters): the embedding / output layer V·h, or an MLP matrix h·ffn."""
        return max(self.vocab * self.hidden, self.hidden * self.ffn)


KNOWN_SHAPES: tuple[ModelShape, ...] = (
    ModelShape("Llama 2 7B", 7e9, 32, 4096, 32, 32,
               "Llama 2 paper arxiv.org/abs/2307.09288; huggingface.co/meta-llama/Llama-2-7b-hf config.json",
               32000, 11008),
    ModelShape("Llama 3.1 8B", 8e9, 32, 4096, 32, 8, "Llama 3 paper arxiv.org/abs/2407.21783 Table 3",
               128256, 14336),
    ModelShape("Llama 2 13B", 13e9, 40, 5120, 40, 40,
               "Llama 2 paper arxiv.org/abs/2307.09288; huggingface.co/meta-llama/Llama-2-13b-hf config.json",
               32000, 13824),
    ModelShape("Llama 2 70B", 70e9, 80, 8192, 64, 8,
               "Llama 2 paper arxiv.org/abs/2307.09288 (GQA); huggingface.co/meta-llama/Llama-2-70b-hf config.json",
               32000, 28672),
    ModelShape("Llama 3.1 405B", 405e9, 126, 16384, 128, 8, "Llama 3 paper arxiv.org/abs/2407.21783 Table 3",
               128256, 53248),
)
"""A small table of published shapes (layers, hidden size, attention heads, KV heads, vocabulary, MLP
size), keyed by the nominal parameter count. Llama 3.1 70B has the same shape as Llama 2 70B (Llama 3
paper Table 3) but a 128,256-token vocabulary; vocabulary and MLP size are from the same config.json
files (vocab_size, intermediate_size) and the Llama 3 paper (Table 3: 128K vocabulary, FFN 14,336 /
53,248)."""

VOCAB_ASSUMED = 32000
"""Vocabulary assumed for an estimated shape (Llama 2's 32,000): it sets the embedding, the largest
layer DeepSpeed's ZeRO-3 estimator gathers. Type the largest layer to replace it."""

SHAPE_MATCH_TOLERANCE = 0.05
"""A typed parameter count within 5 % of a known nominal size uses that model's shape (e.g. 6.74e9,
Llama 2 7B's exact count). Outside it, the shape is estimated and labelled as such."""

HEAD_DIM_ASSUMED = 128
"""Head dimension assumed for an estimated shape (Llama 2 7B/13B and Llama 3 use 128: 4096/32,
5120/40, 8192/64); with L = h/128 this reproduces the 7B and 13B shapes' layer counts."""


def known_shape(params: float) -> ModelShape | None:
    """The known shape whose nominal size is within :data:`SHAPE_MATCH_TOLERANCE` of ``params``."""
    best = None
    for s in KNOWN_SHAPES:
        rel = abs(params - s.params) / s.params
        if rel <= SHAPE_MATCH_TOLERANCE and (best is None or rel < abs(params - best.params) / best.params):
            best = s
    return best


def estimate_shape(params: float) -> ModelShape:
    """Estimated shape for an unknown model: Ψ ≈ 12·L·h² (Kaplan et al. 2020 §2.1) with
    L = h / 128 assumed, so h = (128·Ψ/12)^(1/3) rounded to a multiple of 128, L = Ψ / (12·h²)."""
    h = max(HEAD_DIM_ASSUMED, round((HEAD_DIM_ASSUMED * params / 12) ** (1 / 3) / HEAD_DIM_ASSUMED) * HEAD_DIM_ASSUMED)
    layers = max(1, round(params / (12 * h * h)))
    heads = h // HEAD_DIM_ASSUMED
    return ModelShape("estimated", params, layers, h, heads, heads,
                      f"ESTIMATE: {SRC_KAPLAN} with L = h/{HEAD_DIM_ASSUMED} assumed, d_ff = 4h, "
                      f"vocabulary {VOCAB_ASSUMED} assumed", VOCAB_ASSUMED, 4 * h)


# ---------------------------------------------------------------------------- GPU specs


@dataclass(frozen=True)
class GpuSpec:
    """One selectable GPU: a row of assets/gpu_specs.csv (V100 rows give a 16 GB and a 32 GB entry).

    memory_gb: datasheet memory, GB as NVIDIA writes it (compared as 10^9 bytes).
    tdp_w: the upper end of the datasheet's TDP/TGP text, W (power is sized on maxima).
    """

    name: str
    memory_gb: float
    tdp_w: float
    memory_text: str
    tdp_text: str
    verification: str
    source: str
    interconnect: str = ""

    @property
    def unverified(self) -> bool:
        return "UNVERIFIED" in self.verification.upper() or "NOT RE-READ" in self.verification.upper()


_NUM = lazy_re(r"\d+(?:\.\d+)?")


def _tdp_max(text: str) -> float | None:
    """Upper end of a TDP cell: '300-350 (product brief: 350 max TDP)' -> 350, 'up to 700' -> 700."""
    nums = [float(n) for n in _NUM.findall(text.split("(")[0])]
    return max(nums) if nums else None


def gpu_specs() -> tuple[GpuSpec, ...]:
    """Selectable GPUs from ``assets/gpu_specs.csv``; rows whose memory or TDP cannot be read are left out."""
    out: list[GpuSpec] = []
    for row in table("gpu_specs.csv"):
        name = row.get("gpu", "")
        mem_text = row.get("memory_gb", "")
        tdp = _tdp_max(row.get("tdp_w", ""))
        head = mem_text.split("(")[0]
        if not name or tdp is None:
            continue
        sizes = [float(n) for n in _NUM.findall(head)] if " or " in head else [float(n) for n in _NUM.findall(head)[:1]]
        base = re.sub(r"\s*\(.*?\)\s*", " ", name).strip() if len(sizes) > 1 else name
        for m in sizes:
            out.append(GpuSpec(f"{base} {m:g}GB" if len(sizes) > 1 else name, m, tdp, mem_text,
                               row.get("tdp_w", ""), row.get("verification", ""), row.get("source", ""),
                               row.get("nvlink_gen", "")))
    return tuple(out)


def datasheet_source(gpu: GpuSpec) -> str:
    """A result's source: the GPU's datasheet row (its ``source`` column as written), "datasheet" in the reader's
    language on screen (walk 23: "H200 SXM datasheet" next to 数据手册)."""
    return Msg("{name} datasheet: {source}", name=gpu.name, source=gpu.source)


def gpu_by_name(name: str) -> GpuSpec | None:
    for g in gpu_specs():
        if g.name == name:
            return g
    return None


# ---------------------------------------------------------------------------- inputs

METHODS = {"pretrain": "pretraining", "full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA"}
PRECISIONS = ("bf16", "fp16", "fp32")
ACCOUNTINGS = {"zero": "ZeRO (16 B)", "hf": "HF (18 B)"}
CHECKPOINTING = {"off": "off", "full": "on, every layer"}
ATTENTION = {"flash": "FlashAttention", "standard": "standard"}
OFFLOAD = {"none": "none", "cpu": "optimizer to CPU"}
CKPT_LOADERS = {"auto": "by ZeRO stage", "all": "full copy/rank", "one": "rank 0 + bcast",
                "sharded": "sharded init", "streamed": "shards to GPU"}
"""How the model reaches the GPUs, which sets the host RAM it takes: every rank loads a full copy
(plain DDP, ZeRO-1/2 with ``from_pretrained`` on each rank), rank 0 loads and broadcasts (FSDP
``sync_module_states``, Accelerate ``cpu_ram_efficient_loading``), or sharded initialisation where no
rank holds a full copy (DeepSpeed ``zero.Init``, FSDP meta-device init), or checkpoint shards streamed to
each rank's GPU one at a time (``from_pretrained(..., device_map=...)``: the way bitsandbytes 4-bit
models load, quantised as each shard lands). ``auto``: sharded at ZeRO-3 (transformers turns zero.Init
on whenever ZeRO-3 is used), streamed for QLoRA below it, a full copy per rank otherwise."""
HF_SHARD_BYTES = 5e9
"""Largest checkpoint shard a streamed load holds in host RAM per rank: transformers ``save_pretrained``
writes shards of at most ``max_shard_size`` = "5GB" by default (Transformers docs, PreTrainedModel.save_pretrained,
https://huggingface.co/docs/transformers/main_classes/model)."""
SEQ_PARALLEL = {"off": "off", "on": "on (with TP)"}


@dataclass(frozen=True)
class SizingInputs:
    """Everything the sizing needs. Counts are plain numbers; sizes GB (10^9); power W.

    lora_rank / lora_fraction: one of them sets the trainable adapter parameters (rank r on W_q and
    W_v of every layer, or a fraction of Ψ); ignored for pretraining and full fine-tune.
    dp_degree: data-parallel degree Nd that ZeRO shards over (default: GPUs / (tp x pp)).
    tp / pp: tensor / pipeline parallel degrees (Megatron-style); sp: sequence parallelism with TP.
    layers/hidden/heads/kv_heads: None = the known shape for this size, else an estimate.
    largest_layer: parameters of the largest module (DeepSpeed ZeRO-3 gathers it); None = from the shape.
    ckpt_loaders: how the model is loaded (:data:`CKPT_LOADERS`), ``auto`` by the ZeRO stage.
    """

    params: float = 7e9
    method: str = "full"
    lora_rank: int | None = 16
    lora_fraction: float | None = None
    precision: str = "bf16"
    optimizer: str = "adamw"
    accounting: str = "zero"
    zero_stage: int = 0
    dp_degree: int | None = None
    tp: int = 1
    pp: int = 1
    sp: str = "off"
    offload: str = "none"
    seq_len: int = 4096
    micro_batch: int = 1
    checkpointing: str = "off"
    attention: str = "flash"
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    largest_layer: float | None = None
    gpu: str = "H100 SXM5"
    gpu_count: int = 8
    loader_gb_per_gpu: float = 0.0
    ckpt_loaders: str = "auto"
    host_ram_gib: float | None = None
    dataset_gb: float = 0.0
    checkpoints_kept: int = 1
    cpu_w: float = 0.0
    other_w: float = 0.0
    psu_w: float = 0.0
    system_max_w: float = 0.0

    @property
    def mp(self) -> int:
        """Model-parallel ranks one copy of the model spans: t x p."""
        return self.tp * self.pp

    @property
    def nd(self) -> int:
        """Data-parallel degree: typed, else GPUs / (t x p) (Narayanan et al. 2021 §2: d = n/(t·p))."""
        return self.dp_degree if self.dp_degree else max(1, self.gpu_count // self.mp)

    @property
    def loading(self) -> str:
        """The loading path: ``ckpt_loaders``, with ``auto`` resolved by the ZeRO stage."""
        if self.ckpt_loaders != "auto":
            return self.ckpt_loaders
        return "sharded" if self.zero_stage == 3 else "streamed" if self.method == "qlora" else "all"

    @property
    def mixed(self) -> bool:
        return self.precision in ("bf16", "fp16")


_COUNT = lazy_re(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:\s*[eE]\s*([+-]?\d{1,3}))?\s*([kKmMbBtT]?)\s*$")
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_count(raw: str) -> float:
    """'7B', '6.74e9', '70 b', '350M', '13000000000' -> parameters. Raises ValueError with a reason."""
    m = _COUNT.match(raw or "")
    if not m:
        raise ValueError(Msg("not a parameter count: {raw!r} (e.g. 7B, 13e9, 350M)", raw=raw))
    try:
        v = float(m.group(1)) * (10.0 ** int(m.group(2)) if m.group(2) else 1.0) * _SUFFIX[m.group(3).lower()]
    except OverflowError:
        v = math.inf
    if not math.isfinite(v) or not (1e6 <= v <= 1e14):
        raise ValueError(Msg("parameter count must be between 1M and 100T"))
    return v


def _int(raw: str, lo: int, hi: int, what: str) -> int:
    s = (raw or "").strip().replace("_", "").replace(",", "")
    if not re.fullmatch(r"\d{1,9}", s):
        raise ValueError(Msg("{what}: whole number, got {raw!r}", what=what, raw=raw))
    v = int(s)
    if not lo <= v <= hi:
        raise ValueError(Msg("{what}: between {lo} and {hi}", what=what, lo=lo, hi=hi))
    return v


def _float(raw: str, lo: float, hi: float, what: str) -> float:
    s = (raw or "").strip().replace("_", "").replace(",", "")
    try:
        v = float(s)
    except ValueError:
        raise ValueError(Msg("{what}: a number, got {raw!r}", what=what, raw=raw)) from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(Msg("{what}: between {lo:g} and {hi:g}", what=what, lo=lo, hi=hi))
    return v


FIELDS: dict[str, str] = {
    "params": "7B", "method": "full", "lora": "16", "precision": "bf16", "optimizer": "adamw",
    "accounting": "zero", "zero_stage": "0", "dp_degree": "", "tp": "1", "pp": "1", "sp": "off", "offload": "none",
    "seq_len": "4096", "micro_batch": "1", "checkpointing": "off", "attention": "flash", "layers": "", "hidden": "",
    "heads": "", "kv_heads": "", "largest_layer": "",
    "gpu": "H100 SXM5", "gpu_count": "8", "loader_gb_per_gpu": "", "ckpt_loaders": "auto", "host_ram_gib": "",
    "dataset_gb": "", "checkpoints_kept": "1", "cpu_w": "", "other_w": "", "psu_w": "", "system_max_w": "",
}
"""Field name -> default raw text, as the screen's inputs hold them (empty = not given)."""


def _why(exc: ValueError) -> str:
    """What a refused field says: the Msg the parsers raise with (shown translated), else the exception's text."""
    first = exc.args[0] if exc.args else ""
    return first if isinstance(first, Msg) else str(exc)


def parse_inputs(raw: Mapping[str, str]) -> tuple[SizingInputs, dict[str, str]]:
    """Raw field texts -> inputs and {field: why it was refused}. A refused field keeps its default,
    so the results stay visible while the operator types. Never raises."""
    errors: dict[str, str] = {}
    kw: dict[str, Any] = {}

    def get(k: str) -> str:
        v = raw.get(k, FIELDS.get(k, ""))
        return v.strip() if isinstance(v, str) else str(v)

    def take(k: str, fn, *, optional: bool = False) -> None:
        s = get(k)
        if optional and s == "":
            return
        try:
            kw[k] = fn(s)
        except ValueError as exc:
            errors[k] = _why(exc)

    def choice(k: str, allowed) -> None:
        s = get(k)
        if s in allowed:
            kw[k] = s
            return
        # the names that hold what was typed ("H200": H200 SXM, H200 NVL), else the close ones; then every choice
        near = [a for a in allowed if s and s.lower() in a.lower()][:4] or difflib.get_close_matches(
            s or "", list(allowed), n=3, cutoff=0.6)
        errors[k] = (Msg("did you mean {near}? (one of {join})", near=" / ".join(near), join=listed(allowed))
                     if near else Msg("one of {join}", join=listed(allowed)))

    take("params", parse_count)
    choice("method", METHODS)
    s = get("lora")
    if s:
        if s.endswith("%"):
            try:
                f = _float(s[:-1], 0, 100, Msg("LoRA fraction %"))
                if f <= 0:
                    raise ValueError(Msg("LoRA fraction %: more than 0"))
                kw["lora_fraction"], kw["lora_rank"] = f / 100, None
            except ValueError as exc:
                errors["lora"] = _why(exc)
        else:
            try:
                kw["lora_rank"] = _int(s.removeprefix("r=").removeprefix("r"), 1, 4096, Msg("LoRA rank"))
            except ValueError:
                errors["lora"] = Msg("LoRA: a rank (16) or a fraction of the parameters (0.5%)")
    choice("precision", PRECISIONS)
    choice("optimizer", OPTIMIZER_STATE_BYTES)
    choice("accounting", ACCOUNTINGS)
    take("zero_stage", lambda v: _int(v, 0, 3, Msg("ZeRO stage")))
    take("dp_degree", lambda v: _int(v, 1, 1_000_000, Msg("data-parallel degree")), optional=True)
    take("tp", lambda v: _int(v, 1, 1024, Msg("tensor-parallel degree")))
    take("pp", lambda v: _int(v, 1, 1024, Msg("pipeline-parallel degree")))
    choice("sp", SEQ_PARALLEL)
    choice("offload", OFFLOAD)
    take("seq_len", lambda v: _int(v, 1, 10_000_000, Msg("sequence length")))
    take("micro_batch", lambda v: _int(v, 1, 100_000, "micro-batch"))
    choice("checkpointing", CHECKPOINTING)
    choice("attention", ATTENTION)
    for k in ("layers", "hidden", "heads", "kv_heads"):
        take(k, lambda v, k=k: _int(v, 1, 1_000_000, k), optional=True)
    take("largest_layer", lambda v: _count_any(v, Msg("largest layer")), optional=True)
    names = [g.name for g in gpu_specs()]
    choice("gpu", names)
    take("gpu_count", lambda v: _int(v, 1, 256, Msg("GPU count")))
    take("loader_gb_per_gpu", lambda v: _float(v, 0, 1e6, Msg("loader GB per GPU")), optional=True)
    choice("ckpt_loaders", CKPT_LOADERS)
    take("host_ram_gib", lambda v: _float(v, 0, 1 << 20, Msg("host RAM GiB")), optional=True)
    take("dataset_gb", lambda v: _float(v, 0, 1e9, Msg("dataset GB")), optional=True)
    take("checkpoints_kept", lambda v: _int(v, 0, 100_000, Msg("checkpoints kept")))
    for k in ("cpu_w", "other_w", "psu_w", "system_max_w"):
        take(k, lambda v, k=k: _float(v, 0, 1e7, k), optional=True)
    if kw.get("host_ram_gib") == 0:
        kw["host_ram_gib"] = None
    inputs = SizingInputs(**kw)
    if inputs.offload == "cpu" and inputs.zero_stage == 0:
        errors["offload"] = Msg("CPU offload needs ZeRO stage 1, 2 or 3 (DeepSpeed offload_optimizer)")
        inputs = replace(inputs, offload="none")
    if inputs.heads and inputs.kv_heads and inputs.heads % inputs.kv_heads:
        errors["kv_heads"] = Msg("KV heads must divide the attention heads")
        inputs = replace(inputs, kv_heads=None)
    if not inputs.dp_degree and inputs.gpu_count % inputs.mp:
        errors["tp"] = (Msg("TP x PP = {mp} must divide the {gpu_count} GPUs (data-parallel degree = GPUs / (TP x "
                            "PP)), or type the DP degree", mp=inputs.mp, gpu_count=inputs.gpu_count))
        inputs = replace(inputs, tp=1, pp=1)
    if inputs.largest_layer and inputs.largest_layer > inputs.params:
        errors["largest_layer"] = Msg("the largest layer cannot hold more parameters than the model")
        inputs = replace(inputs, largest_layer=None)
    return inputs, errors


def _count_any(raw: str, what: str) -> float:
    """A parameter count like :func:`parse_count`, from 1 up (a layer can be small)."""
    m = _COUNT.match(raw or "")
    if not m:
        raise ValueError(Msg("{what}: a parameter count, got {raw!r} (e.g. 262M, 2.1e9)", what=what, raw=raw))
    try:
        v = float(m.group(1)) * (10.0 ** int(m.group(2)) if m.group(2) else 1.0) * _SUFFIX[m.group(3).lower()]
    except OverflowError:
        v = math.inf
    if not math.isfinite(v) or not (1 <= v <= 1e14):
        raise ValueError(Msg("{what}: between 1 and 100T", what=what))
    return v


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Part:
    """One block of model-state memory: ``count`` parameters x ``bytes_per_param``, sharded by ZeRO
    from ``shard_stage`` on (1 optimizer states, 2 gradients, 3 parameters; 4 = never)."""

    name: str
    count: float
    bytes_per_param: float
    shard_stage: int
    offloadable: bool = False

    @property
    def bytes(self) -> float:
        return self.count * self.bytes_per_param


@dataclass(frozen=True)
class Result:
    """One shown result: a title, its value, the arithmetic lines, and its source.

    status: "ok" (fits / enough), "short" (does not fit / not enough), "info", "error".
    """

    key: str
    title: str
    value: str
    math: tuple[str, ...]
    source: str
    status: str = "info"

    @property
    def status_word(self) -> str:
        """The status as a word shown after the value ("OK", "SHORT", "ERROR"; the English, translated by whoever
        shows it): never colour alone. "" for "info", and where the value already says it ("SHORT by 12 GB")."""
        word = STATUS_WORDS.get(self.status, "")
        return "" if not word or word.lower() in str(self.value).lower() else word


STATUS_WORDS = {"ok": N_("OK"), "short": N_("SHORT"), "error": N_("ERROR"), "info": ""}
""":attr:`Result.status_word` per status."""


@dataclass
class Sizing:
    """What :func:`size` computed; numbers in bytes (GPU, host, disk), W, BTU/h.

    ``model_states_per_gpu`` is the ZeRO paper's figure (the chosen accounting), ``ds_states_per_gpu``
    DeepSpeed's estimator (None where it has none), ``states_per_gpu`` the larger, which ``per_gpu``,
    ``fits`` and ``min_gpus`` (total GPUs: Nd x t x p) use."""

    inputs: SizingInputs
    shape: ModelShape
    gpu: GpuSpec | None
    trainable: float
    parts: list[Part]
    bytes_per_param: dict[str, float]
    model_states_per_gpu: float
    activations: float
    per_gpu: float
    gpu_memory: float
    fits: bool
    min_gpus: int | None
    min_gpus_stage3: int | None
    host_offload: float
    host_ckpt_load: float
    host_loaders: float
    host_min: float
    checkpoint_bytes: float
    nvme_total: float
    gpu_w: float
    component_w: float
    load_w: float
    psus: int | None
    psus_n1: int | None
    psus_nn: int | None
    heat_btu_h: float
    results: list[Result] = field(default_factory=list)
    states_per_gpu: float = 0.0
    """The model-state figure used for fitting and the GPU count: the larger of the paper's
    (``model_states_per_gpu``, the chosen accounting) and DeepSpeed's (``ds_states_per_gpu``)."""
    ds_states_per_gpu: float | None = None
    ds_note: str = ""
    min_gpus_paper: int | None = None
    min_gpus_ds: int | None = None
    largest_layer: float = 0.0
    loading: str = "all"
    ds_host: float | None = None
    accelerate_bytes: float | None = None

    def short(self) -> list[Result]:
        """The results that say SHORT (does not fit, not enough): what the sizing screen's F3 and the plan.workload
        confirmation call a SHORT plan."""
        return [r for r in self.results if r.status == "short"]

    def plan_answers(self) -> dict[str, str]:
        """Raw plan answers for ``wizard.plan.parse_value``: gpu_model, gpu_count, and host RAM.

        Two different figures, kept apart: ``host_ram_gib`` is what the machine HAS installed (only
        when the operator typed it: os.memory then finds a missing DIMM), ``host_ram_min_gib`` is
        what the WORKLOAD needs (the counted minimum, rounded up: os.memory warns when the machine
        has less). The counted minimum is never taken as the installed size."""
        out = {"gpu_model": self.inputs.gpu, "gpu_count": str(self.inputs.gpu_count)}
        if self.inputs.host_ram_gib:
            out["host_ram_gib"] = f"{self.inputs.host_ram_gib:g}"
        if self.host_min > 0:
            out["host_ram_min_gib"] = str(math.ceil(self.host_min / GiB))
        return out


PAPER_FORMULA = {0: "(2+2+K)Ψ", 1: "4Ψ + KΨ/Nd", 2: "2Ψ + (2+K)Ψ/Nd", 3: "(2+2+K)Ψ/Nd"}
"""The ZeRO paper's per-GPU model states by stage (§5, Fig. 1), K = 12."""

STORE_KEY = "sizing_inputs"
"""Key in the build's ``meta`` table under which the sizing form's raw field texts are kept."""


def stored_inputs(meta: Mapping[str, Any]) -> dict[str, str]:
    """The sizing form's fields as the build stored them (``meta[STORE_KEY]``): known fields with text
    values only, so a damaged record gives defaults instead of an error."""
    raw = meta.get(STORE_KEY)
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if k in FIELDS and isinstance(v, str)}


def _n(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def to_json(sz: Sizing, raw: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The figures of :func:`size` for ``bringup size --json`` (assets/schema/size.schema.json): bytes as
    integers (GB = 10^9), counts, and every result the screen shows with its arithmetic and source."""
    inp, shape, gpu = sz.inputs, sz.shape, sz.gpu
    values = {k: (raw or {}).get(k, FIELDS[k]) for k in FIELDS}
    return {
        "inputs": values,
        "model": {"params": inp.params, "trainable_params": sz.trainable, "shape": shape.name,
                  "layers": shape.layers, "hidden": shape.hidden, "heads": shape.heads, "kv_heads": shape.kv_heads,
                  "vocab": shape.vocab, "ffn": shape.ffn, "largest_layer_params": sz.largest_layer,
                  "shape_source": shape.source},
        "parallel": {"zero_stage": inp.zero_stage, "dp": inp.nd, "tp": inp.tp, "pp": inp.pp, "sp": inp.sp == "on",
                     "offload": inp.offload},
        "gpu": None if gpu is None else {"name": gpu.name, "memory_bytes": _n(sz.gpu_memory), "tdp_w": gpu.tdp_w,
                                         "count_per_node": inp.gpu_count},
        "per_gpu": {"model_states_bytes": _n(sz.states_per_gpu),
                    "paper_bytes": _n(sz.model_states_per_gpu),
                    "deepspeed_bytes": _n(sz.ds_states_per_gpu),
                    "deepspeed_note": sz.ds_note,
                    "accelerate_estimate_bytes": _n(sz.accelerate_bytes),
                    "accelerate_estimate_scope": ACCELERATE_SCOPE if sz.accelerate_bytes else "",
                    "activations_bytes": _n(sz.activations),
                    "total_bytes": _n(sz.per_gpu),
                    "fits": sz.fits},
        "min_gpus": {"total": sz.min_gpus, "paper": sz.min_gpus_paper, "deepspeed": sz.min_gpus_ds,
                     "zero3": sz.min_gpus_stage3},
        "host_ram": {"loading": sz.loading, "load_bytes": _n(sz.host_ckpt_load), "offload_bytes": _n(sz.host_offload),
                     "loaders_bytes": _n(sz.host_loaders), "min_bytes": _n(sz.host_min),
                     "min_gib": math.ceil(sz.host_min / GiB) if sz.host_min > 0 else 0,
                     "deepspeed_bytes": _n(sz.ds_host)},
        "nvme": {"checkpoint_bytes": _n(sz.checkpoint_bytes), "total_bytes": _n(sz.nvme_total)},
        "power": {"gpu_w": sz.gpu_w, "component_w": sz.component_w, "load_w": sz.load_w, "psus": sz.psus,
                  "psus_n1": sz.psus_n1, "psus_nn": sz.psus_nn, "heat_btu_h": round(sz.heat_btu_h, 1)},
        "results": [{"key": r.key, "title": r.title, "value": r.value, "status": r.status, "math": list(r.math),
                     "source": r.source} for r in sz.results],
    }


def fmt_bytes(b: float, gib: bool = False) -> str:
    """'112.0 GB' (10^9) or, with ``gib``, '112.0 GB = 104.3 GiB'; small values in MB (10^6)."""
    if b < 1e9:
        s = f"{b / 1e6:.1f} MB"
        return s + (f" = {b / 2**20:.1f} MiB" if gib else "")
    s = f"{b / GB:,.1f} GB"
    return s + (f" = {b / GiB:,.1f} GiB" if gib else "")


def fmt_count(n: float) -> str:
    """Parameter counts in scientific form (never 'B', which here means bytes): 7.00e9."""
    return f"{n:.2e}".replace("e+0", "e").replace("e+", "e")


def _b(x: float) -> str:
    return f"{x:g}"


def trainable_params(inp: SizingInputs, shape: ModelShape) -> tuple[float, str]:
    """Trainable parameters and the arithmetic: Ψ for pretraining/full fine-tune; for LoRA/QLoRA
    either fraction·Ψ or L·r·[(h + h) + (h + h_kv)] (rank r on W_q: h->h and W_v: h->h_kv,
    h_kv = h·kv_heads/heads; LoRA paper §4.1: r·(d + k) per adapted d×k matrix)."""
    if inp.method in ("pretrain", "full"):
        return inp.params, Msg("all {params} parameters are trained", params=fmt_count(inp.params))
    if inp.lora_fraction is not None:
        t = inp.params * inp.lora_fraction
        return t, Msg("adapters = {lora_fraction:g}% x {params} = {t}",
                      lora_fraction=inp.lora_fraction * 100, params=fmt_count(inp.params), t=fmt_count(t))
    r = inp.lora_rank or 16
    h = shape.hidden
    hkv = h * shape.kv_heads // shape.heads
    t = shape.layers * r * ((h + h) + (h + hkv))
    return t, (Msg("adapters r={r} on W_q,W_v: L{layers} x {r} x [({h}+{h}) + ({h}+{hkv})] = {t:,.0f}",
                   r=r, layers=shape.layers, h=h, hkv=hkv, t=t))


def _per_param(inp: SizingInputs) -> dict[str, float]:
    """Bytes per trainable parameter by part for the chosen precision, optimizer and accounting."""
    w = 2.0 if inp.mixed else 4.0
    master = float(MASTER_FP32_BYTES) if inp.mixed else 0.0
    grad = 2.0 if (inp.mixed and inp.accounting == "zero") else 4.0
    opt = float(OPTIMIZER_STATE_BYTES[inp.optimizer])
    return {"weights": w, "master": master, "grads": grad, "optimizer": opt}


def model_parts(inp: SizingInputs, trainable: float) -> list[Part]:
    """Model-state blocks: frozen base (LoRA 16-bit, QLoRA NF4) plus the trained parameters'
    weights, fp32 master copy, gradients and optimizer states."""
    pp = _per_param(inp)
    parts: list[Part] = []
    if inp.method == "lora":
        parts.append(Part(Msg("frozen base weights"), inp.params, pp["weights"], 3))
    elif inp.method == "qlora":
        parts.append(Part(Msg("frozen base NF4 + constants"), inp.params, QLORA_BASE_BYTES, 3))
    label = "" if inp.method in ("pretrain", "full") else Msg("adapter ")
    parts.append(Part(Msg("{label}weights ({value})",
                          label=label, value='16-bit' if inp.mixed else 'fp32'), trainable, pp["weights"], 3))
    if pp["master"]:
        parts.append(Part(Msg("{label}fp32 master weights", label=label), trainable, pp["master"], 1, offloadable=True))
    parts.append(Part(Msg("{label}gradients", label=label), trainable, pp["grads"], 2, offloadable=True))
    if pp["optimizer"]:
        parts.append(Part(Msg("{label}optimizer states ({OPTIMIZER_LABEL})",
                              label=label, OPTIMIZER_LABEL=OPTIMIZER_LABEL[inp.optimizer]), trainable,
                          pp["optimizer"], 1, offloadable=True))
    return parts


def gpu_bytes_for(parts: list[Part], stage: int, nd: int, offload: bool, mp: int = 1) -> float:
    """Model-state bytes on one GPU: parts sharded at this ZeRO stage are divided by Nd (ZeRO paper
    §5: stage 1 optimizer states, 2 + gradients, 3 + parameters). With CPU offload the master
    weights and optimizer states leave the GPU, and so do the gradients from stage 2 on
    (ZeRO-Offload; DeepSpeed offload_optimizer). With tensor/pipeline parallelism each GPU holds
    1/(t·p) of the model before ZeRO shards it over Nd (Megatron-LM; ZeRO paper §I: Nd x Nm)."""
    total = 0.0
    for p in parts:
        if offload and p.offloadable and (p.shard_stage == 1 or stage >= 2):
            continue
        total += p.bytes / nd if stage >= p.shard_stage else p.bytes
    return total / mp


@dataclass(frozen=True)
class DsModel:
    """What DeepSpeed's estimators need, per model-parallel rank: trained parameters T, the frozen base's
    bytes (LoRA/QLoRA), the largest layer's parameters LL and the bytes per gathered parameter."""

    stage: int
    offload: bool
    trained: float
    frozen_bytes: float
    largest_layer: float
    gather_bpp: float

    def at(self, n: int) -> float:
        """GPU bytes at data-parallel degree ``n``, DeepSpeed's formulas with total_params = T:
        ZeRO-2 4T + int(16T/n) (offload: 2T), ZeRO-3 gather·LL + int(18T/n) (offload: + int(2T/n));
        a frozen base (no grads, no optimizer states) adds its bytes, divided by n at ZeRO-3."""
        t = self.trained
        if self.stage == 2:
            if self.offload:
                return DS_16BIT_PARAM_BYTES * t + self.frozen_bytes
            return DS_Z2_WHOLE_BYTES * t + int(DS_Z2_SHARDED_BYTES * t / n) + self.frozen_bytes
        mult = DS_OFFLOAD_SHARDED_BYTES if self.offload else DS_SHARDED_BYTES
        return self.gather_bpp * self.largest_layer + int(mult * t / n) + self.frozen_bytes / n


def ds_model(inp: SizingInputs, parts: list[Part], trainable: float, largest_layer: float) -> tuple[DsModel | None, str]:
    """DeepSpeed's ZeRO-2/3 estimator for these inputs, or None and why it does not apply. The estimators
    assume mixed-precision Adam with every parameter trained; for LoRA/QLoRA their multipliers are applied
    to the trained adapters and the frozen base is added at its own bytes (derived). With t x p model
    parallelism they see Ψ/(t·p) and LL/t (the largest layer is split by TP, not by PP; derived)."""
    if inp.zero_stage not in (2, 3):
        return None, Msg("DeepSpeed has no estimator for ZeRO-{zero_stage} (only ZeRO-2 and ZeRO-3)",
                         zero_stage=inp.zero_stage)
    if not (inp.mixed and inp.optimizer == "adamw"):
        return None, Msg("DeepSpeed's estimators assume mixed-precision (bf16/fp16) Adam: not these inputs")
    frozen = sum(p.bytes for p in parts if p.name.startswith("frozen"))
    full = inp.method in ("pretrain", "full")
    gather = float(DS_GATHER_BYTES) if full else (QLORA_BASE_BYTES if inp.method == "qlora" else 2.0)
    offload = inp.offload == "cpu"
    return DsModel(inp.zero_stage, offload, trainable / inp.mp, frozen / inp.mp, largest_layer / inp.tp, gather), ""


def ds_host_bytes(inp: SizingInputs, largest_layer: float) -> float | None:
    """DeepSpeed's own host-RAM figure (its cpu_mem) for this node, full training with mixed-precision Adam,
    ZeRO-2/3: num_gpus_per_node = this node's GPUs, total GPUs = Nd, zero_init = the sharded loading path,
    additional_buffer_factor 1.5 (stage_1_and_2.py, stage3.py)."""
    if inp.zero_stage not in (2, 3) or not (inp.mixed and inp.optimizer == "adamw") or inp.method not in ("pretrain", "full"):
        return None
    psi, n, abf = inp.params / inp.mp, inp.gpu_count, DS_BUFFER_FACTOR
    total = inp.nd
    nodes = max(1, math.ceil(total / n))
    offload = inp.offload == "cpu"
    if inp.zero_stage == 2:
        return psi * (max(4 * total, 16) if offload else 4 * n) * abf
    zero_init = inp.loading == "sharded"
    if offload:
        return psi * (16 / nodes if zero_init else max(4 * n, 16 / nodes)) * abf
    return (largest_layer / inp.tp) * 4 * n * abf if zero_init else psi * 4 * n * abf


ACCELERATE_SCOPE = "whole model on one device, not divided by ZeRO/DP/TP/PP (accelerate estimate-memory's figure)"
"""What ``accelerate_estimate_bytes`` covers: accelerate prints the figure for one device holding everything, so it
sits under ``per_gpu`` for comparison only (the JSON contract keeps its place; this field says its scope)."""


def accelerate_estimate(inp: SizingInputs) -> float | None:
    """What ``accelerate estimate-memory`` prints for "Training using Adam" (its estimate_training_usage):
    the LARGEST single part for the model's fp32 size S = 4Ψ, not their sum: fp32 max(S, S, 2S, 4S) = 4S
    (16Ψ); bf16/fp16 max(S, S + S/2, 2S, 2S) = 2S (8Ψ). Full training only."""
    if inp.method not in ("pretrain", "full") or inp.optimizer != "adamw":
        return None
    fp32 = 4 * inp.params
    return 4 * fp32 if inp.precision == "fp32" else 2 * fp32


def host_offload_bytes(parts: list[Part], stage: int, nd: int, gpus_here: int, offload: bool) -> float:
    """Host RAM on this node for CPU offload: each of this node's ranks keeps its 1/Nd share of the
    master weights, optimizer states and gradients (ZeRO-Offload; DeepSpeed offload_optimizer)."""
    if not offload or stage == 0:
        return 0.0
    share = sum(p.bytes for p in parts if p.offloadable) / nd
    return share * min(gpus_here, nd)


def activation_bytes(seq: int, batch: int, hidden: int, heads: int, layers: int, checkpointing: str = "off",
                     attention: str = "standard", precision: str = "bf16", tp: int = 1,
                     sp: bool = False) -> tuple[float, float]:
    """(bytes kept for all layers, transient bytes) of activations on one GPU — an ESTIMATE.

    Korthikanti et al. 2022: one GPT-style layer keeps s·b·h·(34 + 5·a·s/h) bytes (§4.1 eq. 1), where
    5·a·s/h is the attention-score matrices (softmax output, its dropout mask and output). A kernel
    that keeps no score matrix for the backward pass (FlashAttention, Dao et al. 2022,
    arxiv.org/abs/2205.14135 §3.1) leaves 34·s·b·h, the same figure as the paper's selective
    recomputation (§5). With full recomputation (gradient checkpointing of every layer) only each
    layer's 16-bit input is kept, 2·s·b·h (§4), and one layer's activations are rebuilt at a time in
    the backward pass, added here as the transient (derived). The formulas are for 16-bit
    activations; fp32 doubles them (derived). Embedding and output-layer (logits) activations, and
    FlashAttention's O(s·a) softmax statistics, are not included.

    Tensor parallelism of degree t (Korthikanti et al. 2022 Table 2): s·b·h·(10 + 24/t + 5as/(ht)),
    with sequence parallelism s·b·h·(34/t + 5as/(ht)); full recomputation keeps s·b·h·2 per layer in
    every case. Pipeline parallelism does not lower the first stage's total: with 1F1B it keeps p
    micro-batches of L/p layers, L layers' worth (§4.2.3), so ``layers`` stays L.
    """
    sbh = seq * batch * hidden
    if tp <= 1:
        per_layer: float = sbh * ACT_COEFF
    elif sp:
        per_layer = sbh * ACT_COEFF / tp
    else:
        per_layer = sbh * (ACT_TP_REPLICATED + (ACT_COEFF - ACT_TP_REPLICATED) / tp)
    if attention != "flash":
        per_layer += sbh * ACT_ATTN_COEFF * heads * seq / hidden / max(1, tp)
    scale = 2.0 if precision == "fp32" else 1.0
    if checkpointing == "full":
        return layers * sbh * ACT_FULL_RECOMPUTE * scale, per_layer * scale
    return layers * per_layer * scale, 0.0


def min_dp(states: Callable[[int], float], act: float, mem: float) -> int | None:
    """Smallest data-parallel degree N with states(N) + activations <= ``mem`` bytes, for any figure of
    the form fixed + sharded/N; None when no N does (the unsharded part plus activations is too big)."""
    fixed = states(10 ** 18)  # the part no N reduces (sharded -> ~0)
    sharded = states(1) - fixed
    room = mem - fixed - act
    if room <= 0:
        return None
    if sharded <= 0:
        return 1
    n = max(1, math.ceil(sharded / room - 1e-9))
    while states(n) + act > mem:  # guard against rounding
        n += 1
    return n


def min_gpus(parts: list[Part], stage: int, offload: bool, act: float, mem: float, mp: int = 1) -> int | None:
    """Smallest data-parallel degree N with model states (at ``stage``, ZeRO paper accounting) +
    activations <= ``mem`` bytes; None when no N does."""
    return min_dp(lambda n: gpu_bytes_for(parts, stage, n, offload, mp), act, mem)


def size(inp: SizingInputs) -> Sizing:
    """Compute every figure for ``inp`` and the results the screen shows (see the module docstring
    for the sources)."""
    shape = known_shape(inp.params)
    shape_note = Msg("known shape") if shape else Msg("ESTIMATED shape")
    if shape is None:
        shape = estimate_shape(inp.params)
    over = {k: getattr(inp, k) for k in ("layers", "hidden", "heads", "kv_heads") if getattr(inp, k)}
    if over:
        if "heads" in over and "kv_heads" not in over:
            over["kv_heads"] = over["heads"]
        shape = replace(shape, name=Msg("{name} + typed values", name=shape.name), **over,
                        source=Msg("typed by the operator; rest from: {source}", source=shape.source))
        if shape.heads % shape.kv_heads:
            shape = replace(shape, kv_heads=shape.heads)
        shape_note = Msg("typed shape")
    gpu = gpu_by_name(inp.gpu)
    mem = (gpu.memory_gb if gpu else 0.0) * GB
    nd = inp.nd
    offload = inp.offload == "cpu" and inp.zero_stage > 0

    trainable, train_math = trainable_params(inp, shape)
    parts = model_parts(inp, trainable)
    pp = _per_param(inp)
    mp = inp.mp
    ll = inp.largest_layer or float(shape.largest_layer)
    paper = gpu_bytes_for(parts, inp.zero_stage, nd, offload, mp)
    dsm, ds_note = ds_model(inp, parts, trainable, ll)
    ds = dsm.at(nd) if dsm else None
    states = max(paper, ds) if ds is not None else paper
    kept, transient = activation_bytes(inp.seq_len, inp.micro_batch, shape.hidden, shape.heads, shape.layers,
                                       inp.checkpointing, inp.attention, inp.precision, inp.tp, inp.sp == "on")
    act = kept + transient
    per_gpu = states + act
    fits = gpu is not None and per_gpu <= mem

    def needed(stage: int) -> tuple[int | None, int | None, int | None]:
        """(paper, DeepSpeed, the larger) minimum data-parallel degree at ``stage``."""
        a = min_gpus(parts, stage, offload, act, mem, mp)
        m, _ = ds_model(replace(inp, zero_stage=stage), parts, trainable, ll)
        b = min_dp(m.at, act, mem) if m else None
        if m is None:
            return a, None, a
        return a, b, (None if a is None or b is None else max(a, b))

    n_paper = n_ds = n_min = n_min3 = None
    if gpu:
        n_paper, n_ds, n_min = needed(inp.zero_stage)
        n_min3 = needed(3)[2] if inp.zero_stage < 3 else n_min
    def total(n: int | None) -> int | None:
        return None if n is None else n * mp

    n_paper, n_ds, n_min, n_min3 = total(n_paper), total(n_ds), total(n_min), total(n_min3)

    # host RAM on this node
    host_off = host_offload_bytes(parts, inp.zero_stage, nd, inp.gpu_count, offload)
    load_bpp = 4.0 if inp.precision == "fp32" else 2.0
    loading = inp.loading
    loaders_n = inp.gpu_count if loading == "all" else 1
    if inp.method == "pretrain":
        host_load = 0.0
    elif loading == "sharded":
        host_load = (ll / inp.tp) * DS_HOST_INIT_BYTES * inp.gpu_count * DS_BUFFER_FACTOR
    elif loading == "streamed":
        host_load = min(HF_SHARD_BYTES, load_bpp * inp.params) * inp.gpu_count
    else:  # with tensor/pipeline parallelism each rank loads its own 1/(t x p) slice (Megatron-style checkpoints)
        host_load = load_bpp * inp.params * loaders_n / (inp.mp if loading == "all" else 1)
    host_loaders = inp.loader_gb_per_gpu * GB * inp.gpu_count
    host_min = host_off + host_load + host_loaders

    # NVMe
    ckpt_bpp = pp["weights"] + pp["master"] + pp["optimizer"]
    ckpt = trainable * ckpt_bpp
    base_model = 2.0 * inp.params if inp.method != "pretrain" else 0.0
    nvme = inp.dataset_gb * GB + base_model + ckpt * inp.checkpoints_kept

    # power
    gpu_w = (gpu.tdp_w if gpu else 0.0) * inp.gpu_count
    comp_w = gpu_w + inp.cpu_w + inp.other_w
    load_w = inp.system_max_w if inp.system_max_w else comp_w
    psus: int | None
    n1: int | None
    nn: int | None
    if inp.psu_w > 0 and load_w > 0:
        psus = math.ceil(load_w / inp.psu_w - 1e-9)
        n1, nn = psus + 1, 2 * psus
    else:
        psus = n1 = nn = None
    btu = load_w * BTU_PER_W

    sz = Sizing(inp, shape, gpu, trainable, parts, pp, paper, act, per_gpu, mem, fits, n_min, n_min3,
                host_off, host_load, host_loaders, host_min, ckpt, nvme, gpu_w, comp_w, load_w, psus, n1, nn, btu,
                states_per_gpu=states, ds_states_per_gpu=ds, ds_note=ds_note, min_gpus_paper=n_paper,
                min_gpus_ds=n_ds, largest_layer=ll, loading=loading, ds_host=ds_host_bytes(inp, ll),
                accelerate_bytes=accelerate_estimate(inp))
    sz.results = _results(sz, shape_note, train_math, kept, transient, ckpt_bpp, base_model, loaders_n, load_bpp)
    return sz


# ---------------------------------------------------------------------------- shown text


def _results(sz: Sizing, shape_note: str, train_math: str, kept: float, transient: float, ckpt_bpp: float,
             base_model: float, loaders_n: int, load_bpp: float) -> list[Result]:
    inp, shape, gpu = sz.inputs, sz.shape, sz.gpu
    nd = inp.nd
    out: list[Result] = []
    offload = inp.offload == "cpu" and inp.zero_stage > 0

    # 1. bytes per parameter by part
    pp = sz.bytes_per_param
    per_trained = sum(pp.values())
    parts_txt = Msg("weights {weights}", weights=_b(pp['weights']))
    if pp["master"]:
        parts_txt += Msg(" + fp32 master {master}", master=_b(pp['master']))
    parts_txt += Msg(" + grads {grads}", grads=_b(pp['grads']))
    if pp["optimizer"]:
        parts_txt += f" + {OPTIMIZER_LABEL[inp.optimizer]} {_b(pp['optimizer'])}"
    lines: list[str] = [Msg("{parts_txt} = {per_trained} B per trained param", parts_txt=parts_txt,
                            per_trained=_b(per_trained))]
    if inp.mixed and inp.optimizer == "adamw":
        lines.append(Msg("ZeRO: (2+2+K), K=12 -> 16; HF: 6+4+8 -> 18 (fp32 grads)")
                     if inp.accounting == "zero" else Msg("HF: weights 6 (fp32+16-bit) + grads 4 + AdamW 8 = 18"))
    if inp.method == "lora":
        lines.append(Msg("frozen base: {weights} B/param x {params}, no grads or states",
                         weights=_b(pp['weights']), params=fmt_count(inp.params)))
    if inp.method == "qlora":
        lines.append(Msg("frozen base: NF4 4 bits + constants 8/64 + 32/(64x256) = 4.127 bits = "
                         "{QLORA_BASE_BYTES:.3f} B/param (double quantization)", QLORA_BASE_BYTES=QLORA_BASE_BYTES))
    lines.append(train_math)
    src = {"zero": SRC_ZERO, "hf": SRC_HF}[inp.accounting]
    if inp.method in ("lora", "qlora"):
        src += "; " + SRC_LORA + ("; " + SRC_QLORA if inp.method == "qlora" else "")
    if inp.optimizer in ("adam8bit", "sgd_momentum"):
        src += "; " + SRC_HF
    out.append(Result("bytes_per_param", Msg("Bytes per parameter"), Msg("{per_trained} B/trained param",
                                                                         per_trained=_b(per_trained)),
                      tuple(lines), src))

    # 2. model states per GPU with ZeRO
    lines = []
    for p in sz.parts:
        if offload and p.offloadable and (p.shard_stage == 1 or inp.zero_stage >= 2):
            lines.append(Msg("{name}: {bytes} -> CPU (offload)", name=p.name, bytes=fmt_bytes(p.bytes)))
        elif inp.zero_stage >= p.shard_stage and nd > 1:
            lines.append(Msg("{name}: {bytes} / Nd {nd} = {bytes2}",
                             name=p.name, bytes=fmt_bytes(p.bytes), nd=nd, bytes2=fmt_bytes(p.bytes / nd)))
        else:
            lines.append(Msg("{name}: {count} x {bytes_per_param} B = {bytes}", name=p.name, count=fmt_count(p.count),
                             bytes_per_param=_b(round(p.bytes_per_param, 3)), bytes=fmt_bytes(p.bytes)))
    stage_txt = {0: Msg("ZeRO-0: nothing sharded (plain data parallel, FSDP NO_SHARD)"),
                 1: Msg("ZeRO-1: optimizer states (and fp32 master) / Nd"),
                 2: Msg("ZeRO-2 / FSDP SHARD_GRAD_OP: + gradients / Nd"),
                 3: Msg("ZeRO-3 / FSDP FULL_SHARD: + weights / Nd")}[inp.zero_stage]
    lines.append(stage_txt)
    if inp.mp > 1:
        lines.append(Msg("TP {tp} x PP {pp}: each GPU holds 1/{mp} of the model (Megatron-LM), Nd = {nd}",
                         tp=inp.tp, pp=inp.pp, mp=inp.mp, nd=nd))
    name = Msg("paper") if inp.accounting == "zero" else Msg("HF accounting")
    formula = PAPER_FORMULA[inp.zero_stage] if inp.accounting == "zero" and inp.method in ("pretrain", "full") else ""
    lines.append(Msg("{name} {formula}: {states}", name=name, formula=formula, states=fmt_bytes(sz.model_states_per_gpu))
                 if formula else Msg("{name}: {states}", name=name, states=fmt_bytes(sz.model_states_per_gpu)))
    llp = sz.largest_layer / inp.tp
    if sz.ds_states_per_gpu is not None:
        t = sz.trainable / inp.mp
        if inp.zero_stage == 2:
            f = "2T" if offload else Msg("4T + int(16T/Nd)")
        else:
            g = {"qlora": f"{QLORA_BASE_BYTES:.3f}", "lora": "2"}.get(inp.method, "4")
            f = Msg("{g}xLL + int({value}T/Nd)", g=g, value='2' if offload else '18')
        if inp.method in ("lora", "qlora"):
            f += Msg(" + frozen base") + ("/Nd" if inp.zero_stage == 3 else "")
        fn = "estimate_zero2_model_states_mem_needs" if inp.zero_stage == 2 else "estimate_zero3_model_states_mem_needs"
        lines.append(Msg("DeepSpeed {fn}: {f}", fn=fn, f=f))
        detail: str = Msg("T {t}", t=fmt_count(t))
        if inp.zero_stage == 3:
            detail += Msg(", largest layer LL {llp}", llp=fmt_count(llp))
        lines.append(Msg("  {detail} = {size}", detail=detail, size=fmt_bytes(sz.ds_states_per_gpu)))
        if inp.method in ("lora", "qlora"):
            lines.append(Msg("  (its multipliers on the trained adapters; the frozen base has no grads/states)"))
        used = Msg("DeepSpeed") if sz.ds_states_per_gpu > sz.model_states_per_gpu else name
        lines.append(Msg("used: the larger, {used}", used=used))
    else:
        lines.append(sz.ds_note)
    if sz.accelerate_bytes is not None and inp.zero_stage == 0 and inp.mp == 1:
        lines.append(Msg("accelerate estimate-memory prints {accelerate_bytes}: its largest single part, not the sum "
                         "(not used)", accelerate_bytes=fmt_bytes(sz.accelerate_bytes)))
    src = SRC_ZERO + {2: "; " + SRC_DS2, 3: "; " + SRC_DS3}.get(inp.zero_stage, "") + "; " + SRC_FSDP
    if offload:
        src += "; " + SRC_DS + "; " + SRC_OFFLOAD
    if inp.mp > 1:
        src += "; " + SRC_MEGATRON
    if sz.accelerate_bytes is not None and inp.zero_stage == 0:
        src += "; " + SRC_ACCEL
    out.append(Result("model_states", Msg("Model states per GPU (ZeRO-{zero_stage}, Nd {nd})",
                                          zero_stage=inp.zero_stage, nd=nd),
                      fmt_bytes(sz.states_per_gpu, gib=True), tuple(lines), src))

    # 3. activations
    s, b, h, a, L = inp.seq_len, inp.micro_batch, shape.hidden, shape.heads, shape.layers
    shp = Msg("{shape_note}: L {L}, h {h}, a {a}", shape_note=shape_note, L=L, h=h, a=a) + (
        Msg(", kv {kv_heads}", kv_heads=shape.kv_heads) if shape.kv_heads != a else "")
    if shape.name not in ("estimated",):
        shp += Msg(" ({name})", name=shape.name)
    lines = [shp]
    f32 = " x 2 (fp32)" if inp.precision == "fp32" else ""
    layer = "34" if inp.attention == "flash" else "(34 + 5as/h)"
    if inp.attention == "flash":
        lines.append(Msg("FlashAttention keeps no s x s scores: s x b x h x 34 bytes per layer"))
    t = inp.tp
    if t > 1:
        if inp.sp == "on":
            layer = f"34/{t}" if inp.attention == "flash" else Msg("(34/{t} + 5as/(h x {t}))", t=t)
            lines.append(Msg("TP {t} + sequence parallel: s x b x h x {layer} per layer", t=t, layer=layer))
        else:
            layer = f"(10 + 24/{t})" if inp.attention == "flash" else Msg("(10 + 24/{t} + 5as/(h x {t}))", t=t)
            lines.append(Msg("TP {t}, no sequence parallel: s x b x h x {layer} per layer", t=t, layer=layer))
        lines.append(Msg("= {value} per layer", value=fmt_bytes(kept / L if inp.checkpointing == 'off' else transient)))
    if inp.pp > 1:
        lines.append(Msg("PP {pp}: the first stage keeps {pp} micro-batches x L/{pp} layers = L layers' worth",
                         pp=inp.pp))
    if t > 1 and inp.checkpointing == "off":
        lines.append(Msg("L x that{f32} = {L} layers = {kept}", f32=f32, L=L, kept=fmt_bytes(kept)))
    elif inp.checkpointing == "off":
        if inp.attention == "flash":
            lines.append(f"L x s x b x h x 34{f32} = {L} x {s} x {b} x {h} x 34 = {fmt_bytes(kept)}")
        else:
            lines.append(f"L x s x b x h x (34 + 5 x a x s / h){f32}")
            lines.append(Msg("= {L} x {s} x {b} x {h} x (34 + 5x{a}x{s}/{h}) = {kept}",
                             L=L, s=s, b=b, h=h, a=a, kept=fmt_bytes(kept)))
    else:
        lines.append(Msg("checkpointing, kept: L x 2 x s x b x h{f32} = {kept}", f32=f32, kept=fmt_bytes(kept)))
        lines.append(Msg("+ one layer rebuilt in backward: s x b x h x {layer} = {transient}",
                         layer=layer, transient=fmt_bytes(transient)))
    lines.append(Msg("estimate for GPT-style layers; logits, temp buffers, fragmentation not included"))
    out.append(Result("activations", Msg("Activations per GPU (estimate)"), fmt_bytes(sz.activations, gib=True),
                      tuple(lines), SRC_ACT + ("; " + SRC_FLASH if inp.attention == "flash" else "")
                      + ("; " + SRC_KAPLAN if shape_note == "ESTIMATED shape" else "")
                      + ("; " + SRC_MEGATRON if inp.mp > 1 else "")))

    # 4. per GPU against the GPU's memory
    if gpu is None:
        out.append(Result("per_gpu", Msg("Memory per GPU"), Msg("no GPU chosen"), (), SRC_SPECS, "error"))
    else:
        diff = sz.gpu_memory - sz.per_gpu
        verdict = Msg("fits, {diff} left",
                      diff=fmt_bytes(diff)) if sz.fits else Msg("SHORT by {value}", value=fmt_bytes(-diff, gib=True))
        lines = [Msg("model states {states_per_gpu} + activations {activations} = {per_gpu}",
                     states_per_gpu=fmt_bytes(sz.states_per_gpu), activations=fmt_bytes(sz.activations), per_gpu=fmt_bytes(sz.per_gpu, gib=True)),
                 Msg("{name}: {memory_gb:g} GB datasheet = {gib:.1f} GiB",  # walk 28 #18: "80 GB = 80.0 GB = ..."
                     name=gpu.name, memory_gb=gpu.memory_gb, gib=sz.gpu_memory / 2**30)]
        seen = OBSERVED_TOTAL_MIB.get(gpu.name)
        if seen:
            lines.append(Msg("(nvidia-smi on a real one: {seen} MiB = {seen2:.1f} GB total; CUDA context and "
                             "allocator take part of it)", seen=seen[0], seen2=seen[0] * 2**20 / GB))
        if gpu.unverified:
            lines.append(Msg("this GPU's row is UNVERIFIED in gpu_specs.csv: check the datasheet"))
        out.append(Result("per_gpu", Msg("Memory per GPU"), verdict, tuple(lines),
                          datasheet_source(gpu), "ok" if sz.fits else "short"))

    # 5. minimum GPU count
    if gpu is not None:
        lines = []
        if sz.min_gpus is None:
            value: str = Msg("no count is enough at ZeRO-{zero_stage}", zero_stage=inp.zero_stage)
            if sz.activations >= gpu.memory_gb * GB:
                lines.append(Msg("the activations alone ({activations}) exceed one GPU's {memory_gb:g} GB, whatever "
                                 "is sharded: turn on checkpointing, or cut micro-batch/sequence, or add tensor (and sequence) parallelism", activations=fmt_bytes(sz.activations), memory_gb=gpu.memory_gb))
            else:
                lines.append(Msg("what this stage never shards + activations exceed one GPU"))
        else:
            value = f"{sz.min_gpus} x {gpu.name}"
            if inp.zero_stage == 0:
                lines.append(Msg("ZeRO-0 replicates everything: 1 GPU holds it all, or none does"))
            else:
                lines.append(Msg("smallest Nd with states(Nd) + activations <= {memory_gb:g} GB",
                                 memory_gb=gpu.memory_gb))
        if sz.min_gpus_ds is not None or sz.ds_states_per_gpu is not None:
            def _n(n: int | None) -> str:
                return str(n) if n is not None else Msg("no count is enough")
            lines.append(Msg("paper: {min_gpus_paper}; DeepSpeed estimator: {min_gpus_ds}; the larger counts",
                             min_gpus_paper=_n(sz.min_gpus_paper), min_gpus_ds=_n(sz.min_gpus_ds)))
        if inp.mp > 1:
            lines.append(Msg("x TP {tp} x PP {pp}: GPUs = Nd x {mp}", tp=inp.tp, pp=inp.pp, mp=inp.mp))
        if inp.zero_stage < 3:
            lines.append(Msg("with ZeRO-3: {value}",
                             value=sz.min_gpus_stage3 if sz.min_gpus_stage3 else Msg("no count is enough either")))
        if sz.min_gpus is not None and sz.min_gpus > inp.gpu_count:
            lines.append(Msg("more than this node's {gpu_count}: {min_gpus} nodes",
                             gpu_count=inp.gpu_count, min_gpus=math.ceil(sz.min_gpus / inp.gpu_count)))
        if sz.min_gpus is None and sz.min_gpus_stage3 is None and sz.activations < gpu.memory_gb * GB:
            lines.append(Msg("cut micro-batch or sequence, or turn on checkpointing; or add tensor/pipeline parallelism"))
        ok = sz.min_gpus is not None and sz.min_gpus <= inp.gpu_count
        src = SRC_ZERO + ("; " + SRC_DS2 if inp.zero_stage == 2 else "; " + SRC_DS3 if inp.zero_stage == 3 else "")
        out.append(Result("min_gpus", Msg("Minimum GPU count"), value, tuple(lines),
                          src + ("; " + SRC_MEGATRON if inp.mp > 1 else ""), "ok" if ok else "short"))

    # 6. host RAM
    lines = []
    how = {"all": Msg("a full copy per rank"), "one": Msg("rank 0 loads, then broadcasts (FSDP sync_module_states)"),
           "sharded": Msg("sharded init (zero.Init / FSDP meta device): no rank holds a full copy"),
           "streamed": Msg("checkpoint shards streamed to each rank's GPU (from_pretrained with device_map, as bitsandbytes 4-bit loading does): a rank holds one shard at a time")}[sz.loading]
    auto = (Msg(" (auto at ZeRO-{zero_stage}{qlora})", zero_stage=inp.zero_stage,
                qlora=Msg(", QLoRA") if sz.loading == "streamed" else "")
            if inp.ckpt_loaders == "auto" else "")
    if inp.method == "pretrain":
        lines.append(Msg("model loading{auto}: {how}; pretraining loads no checkpoint", auto=auto, how=how))
    elif sz.loading == "sharded":
        lines.append(Msg("model loading{auto}: {how}", auto=auto, how=how))
        lines.append(Msg("DeepSpeed zero_init: LL {largest_layer} x 4 B x {gpu_count} ranks x {DS_BUFFER_FACTOR:g} = "
                         "{host_ckpt_load}", largest_layer=fmt_count(sz.largest_layer / inp.tp), gpu_count=inp.gpu_count, DS_BUFFER_FACTOR=DS_BUFFER_FACTOR, host_ckpt_load=fmt_bytes(sz.host_ckpt_load)))
    elif sz.loading == "streamed":
        lines.append(Msg("model loading{auto}: {how}", auto=auto, how=how))
        lines.append(Msg("{gpu_count} ranks x one shard (at most {HF_SHARD_BYTES}, transformers' default "
                         "max_shard_size) = {host_ckpt_load}", gpu_count=inp.gpu_count, HF_SHARD_BYTES=fmt_bytes(HF_SHARD_BYTES), host_ckpt_load=fmt_bytes(sz.host_ckpt_load)))
    else:
        lines.append(Msg("model loading{auto}: {how}", auto=auto, how=how))
        slice_ = Msg(" / (TP x PP = {mp})", mp=inp.mp) if sz.loading == "all" and inp.mp > 1 else ""
        lines.append(f"{loaders_n} x {_b(load_bpp)} B x {fmt_count(inp.params)}{slice_} = {fmt_bytes(sz.host_ckpt_load)}")
    shares = min(inp.gpu_count, nd)
    if offload:
        lines.append(Msg("CPU offload: {shares} ranks x 1/{nd} of master+grads+optimizer = {host_offload} (with "
                         "pin_memory it is page-locked: never swapped)", shares=shares, nd=nd, host_offload=fmt_bytes(sz.host_offload)))
    else:
        would = sum(p.bytes for p in sz.parts if p.offloadable) / nd * shares
        lines.append(Msg("no CPU offload (with it at ZeRO-1..3: {would} of master+grads+optimizer here)",
                         would=fmt_bytes(would)))
    if inp.loader_gb_per_gpu:
        lines.append(Msg("data loaders: {loader_gb_per_gpu} GB x {gpu_count} GPUs = {host_loaders}",
                         loader_gb_per_gpu=_b(inp.loader_gb_per_gpu), gpu_count=inp.gpu_count, host_loaders=fmt_bytes(sz.host_loaders)))
    else:
        lines.append(Msg("data loaders: enter GB per GPU (measure a worker's RSS)"))
    if sz.ds_host is not None:
        lines.append(Msg("DeepSpeed's own host estimate (fp32 init, x{DS_BUFFER_FACTOR:g} buffers): {ds_host}",
                         DS_BUFFER_FACTOR=DS_BUFFER_FACTOR, ds_host=fmt_bytes(sz.ds_host)))
    lines.append(Msg("not counted: OS, page cache for the dataset and memory-mapped checkpoint files, other services"))
    total_gpu = (gpu.memory_gb * GB if gpu else 0) * inp.gpu_count
    if total_gpu:
        lo, hi = min(r for _, r in HOST_RAM_RATIOS), max(r for _, r in HOST_RAM_RATIOS)
        lines.append(Msg("context, not a rule: 8-GPU systems ship host RAM of {lo:.2f}x-{hi:.1f}x their GPU memory -> "
                         "{lo2}-{hi2} here", lo=lo, hi=hi, lo2=fmt_bytes(lo * total_gpu), hi2=fmt_bytes(hi * total_gpu)))
    status = "info"
    if inp.host_ram_gib:
        planned = inp.host_ram_gib * GiB
        if planned >= sz.host_min:
            lines.append(Msg("planned {host_ram_gib:g} GiB covers the counted {host_min:,.1f} GiB",
                             host_ram_gib=inp.host_ram_gib, host_min=sz.host_min / GiB))
            status = "ok"
        else:
            lines.append(Msg("planned {host_ram_gib:g} GiB is {host_min:,.1f} GiB short of the counted",
                             host_ram_gib=inp.host_ram_gib, host_min=(sz.host_min - planned) / GiB))
            status = "short"
    out.append(Result("host_ram", Msg("Host RAM (counted minimum)"), fmt_bytes(sz.host_min, gib=True), tuple(lines),
                      f"{SRC_DS}; {SRC_OFFLOAD}; {SRC_DSMEM}; {SRC_DS3}; {SRC_FSDP}; {SRC_MLPERF}; "
                      f"{SRC_DGX_H100}", status))

    # 7. CPU cores
    lines = [Msg("{n}/GPU x {gpu_count} = {n2} cores ({what})",
                 n=n, gpu_count=inp.gpu_count, n2=n * inp.gpu_count, what=what) for n, what, _ in CORES_PER_GPU_REFERENCES]
    lines.append(Msg("references from shipping systems, not rules; loader workers need cores"))
    refs = sorted(n for n, _, _ in CORES_PER_GPU_REFERENCES)
    out.append(Result("cpu_cores", Msg("CPU cores"), Msg("{refs}-{refs2} (references)",
                                                         refs=refs[0] * inp.gpu_count, refs2=refs[-1] * inp.gpu_count),
                      tuple(lines), "; ".join(s for _, _, s in CORES_PER_GPU_REFERENCES)))

    # 8. NVMe
    what = Msg("adapter") if inp.method in ("lora", "qlora") else Msg("model")
    lines = [Msg("checkpoint = {what} weights + optimizer states: {trainable} x ({weights}+{master}+{optimizer}) B = "
                 "{checkpoint_bytes}", what=what, trainable=fmt_count(sz.trainable), weights=_b(pp['weights']), master=_b(pp['master']), optimizer=_b(pp['optimizer']), checkpoint_bytes=fmt_bytes(sz.checkpoint_bytes)),
             Msg("kept: {checkpoints_kept} x {checkpoint_bytes}",
                 checkpoints_kept=inp.checkpoints_kept, checkpoint_bytes=fmt_bytes(sz.checkpoint_bytes))]
    if base_model:
        lines.append(Msg("base model, 16-bit: 2 B x {params} = {base_model}",
                         params=fmt_count(inp.params), base_model=fmt_bytes(base_model)))
    lines.append(Msg("dataset: {dataset_gb}",
                     dataset_gb=fmt_bytes(inp.dataset_gb * GB)) if inp.dataset_gb else Msg("dataset: enter its size in GB"))
    out.append(Result("nvme", Msg("NVMe for data and checkpoints"), fmt_bytes(sz.nvme_total), tuple(lines),
                      f"{SRC_ZERO} (what a resumable checkpoint holds); {SRC_HF}"))

    # 9. power, PSUs, heat
    lines = []
    if gpu is not None:
        # the datasheet's own words only where they say more than the figure used ("300-350 (product brief: ...)")
        said: str = (Msg("up to {n}", n=gpu.tdp_text[6:]) if gpu.tdp_text.startswith("up to ") else gpu.tdp_text)
        if gpu.tdp_text in (f"{gpu.tdp_w:g}", f"up to {gpu.tdp_w:g}"):
            lines.append(Msg("GPUs: {gpu_count} x {tdp_w:g} W = {gpu_w:,.0f} W", gpu_count=inp.gpu_count,
                             tdp_w=gpu.tdp_w, gpu_w=sz.gpu_w))
        else:
            lines.append(Msg("GPUs: {gpu_count} x {tdp_w:g} W ({tdp_text}) = {gpu_w:,.0f} W",
                             gpu_count=inp.gpu_count, tdp_w=gpu.tdp_w, tdp_text=said, gpu_w=sz.gpu_w))
    lines.append(Msg("+ CPU {cpu_w:,.0f} W + other {other_w:,.0f} W = {component_w:,.0f} W (sum of maxima)",
                     cpu_w=inp.cpu_w, other_w=inp.other_w, component_w=sz.component_w))
    if not inp.cpu_w or not inp.other_w:
        lines.append(Msg("enter CPU and other (memory, NICs, drives, fans) maxima"))
    if inp.system_max_w:
        lines.append(Msg("vendor system maximum used: {system_max_w:,.0f} W", system_max_w=inp.system_max_w))
    else:
        lines.append(Msg("use the vendor's system maximum when published: DGX H100 {DGX_H100_MAX_W:,} W for 8 x 700 W "
                         "GPUs ({DGX_H100_MAX_W2:.1f}x the GPU sum)", DGX_H100_MAX_W=DGX_H100_MAX_W, DGX_H100_MAX_W2=DGX_H100_MAX_W / DGX_H100_GPU_W))
    if sz.psus is not None:
        lines.append(Msg("PSUs of {psu_w:,.0f} W: N = ceil({load_w:,.0f} / {psu_w:,.0f}) = {psus}; N+1 = {psus_n1}; "
                         "N+N = {psus_nn} (each feed carries it all)", psu_w=inp.psu_w, load_w=sz.load_w, psus=sz.psus, psus_n1=sz.psus_n1, psus_nn=sz.psus_nn))
    else:
        lines.append(Msg("enter the PSU rating for N+1 / N+N counts"))
    lines.append(Msg("heat: {load_w:,.0f} W x 3.412 = {heat_btu_h:,.0f} BTU/h, plus PSU losses (Titanium 230 V "
                     "redundant: 90-96 % efficient)", load_w=sz.load_w, heat_btu_h=sz.heat_btu_h))
    partial = not inp.system_max_w and (not inp.cpu_w or not inp.other_w)
    value = Msg("{load_w:,.0f} W, {heat_btu_h:,.0f} BTU/h",
                load_w=sz.load_w, heat_btu_h=sz.heat_btu_h) + (Msg(" (GPUs only so far: incomplete)") if partial else "")
    out.append(Result("power", Msg("Power and heat"), value, tuple(lines),
                      (datasheet_source(gpu) if gpu else SRC_SPECS) + f"; {SRC_DGX_H100}; {SRC_NIST}; {SRC_80PLUS}"))
    return out
