"""wizard.sizing: every figure recomputed here by hand from its published formula, then compared.

Each test names the formula and its source next to the arithmetic. Units: GB = 10^9 bytes,
GiB = 2^30 bytes. Shapes (layers L, hidden h, heads a, KV heads) are the Llama 2 configs
(huggingface.co/meta-llama/Llama-2-{7b,13b,70b}-hf config.json; Llama 2 paper arxiv.org/abs/2307.09288).
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import DATA
from tests.outputs import _vm_base, vm  # noqa: F401  (fixtures: the dev VM's real outputs)
from wizard import sizing as sz
from wizard.plan import parse_value

GB, GiB = 1e9, 2 ** 30
LLAMA2 = {  # params: (L, h, a, kv_heads)
    7e9: (32, 4096, 32, 32),
    13e9: (40, 5120, 40, 40),
    70e9: (80, 8192, 64, 8),
}
# QLoRA paper §3: NF4 = 4 bits; double quantization leaves 8/64 + 32/(64*256) bits of constants per parameter
QLORA_BPP = (4 + 8 / 64 + 32 / (64 * 256)) / 8


def run(**raw: str) -> sz.Sizing:
    inputs, errors = sz.parse_inputs(raw)
    assert errors == {}, errors
    return sz.size(inputs)


def lora_qv_params(psi: float, r: int = 16) -> int:
    """LoRA paper §4.1: rank r on a d x k matrix adds r*(d+k) params; adapters on W_q (h x h) and
    W_v (h x h_kv, h_kv = h * kv/a) in every layer (the paper's GPT-3 setting, §7.1)."""
    L, h, a, kv = LLAMA2[psi]
    return L * (r * (h + h) + r * (h + h * kv // a))


# ------------------------------------------------------------------ the 9 hand-computed figures

NINE = [(m, p) for m in ("full", "lora", "qlora") for p in (7e9, 13e9, 70e9)]


@pytest.mark.parametrize("method,psi", NINE, ids=[f"{m}-{int(p / 1e9)}B" for m, p in NINE])
def test_model_states_by_method_and_size(method, psi):
    """Model states on one GPU, bf16 + AdamW, ZeRO-0, one GPU.

    full:  (2 + 2 + K) * psi, K = 12                  (ZeRO paper arxiv.org/abs/1910.02054 §3.1, Fig. 1)
    LoRA:  2 * psi (frozen bf16 base) + 16 * T        (frozen base has no grads/states; T adapters
                                                       carry the full 16 B/param; LoRA paper §4.1)
    QLoRA: psi * (4 + 0.127) / 8 + 16 * T             (QLoRA paper arxiv.org/abs/2305.14314 §3)
    """
    s = run(params=f"{psi:g}", method=method, lora="16", gpu_count="1")
    T = lora_qv_params(psi)
    expected = {"full": 16 * psi, "lora": 2 * psi + 16 * T, "qlora": QLORA_BPP * psi + 16 * T}[method]
    assert s.model_states_per_gpu == pytest.approx(expected, rel=1e-12)
    assert s.trainable == (psi if method == "full" else T)


def test_nine_figures_in_gb():
    """The same nine figures as the operator reads them (GB = 10^9 bytes), rounded to 0.1 GB."""
    got = {(m, p): round(run(params=f"{p:g}", method=m, gpu_count="1").model_states_per_gpu / GB, 1)
           for m, p in NINE}
    assert got == {
        ("full", 7e9): 112.0, ("full", 13e9): 208.0, ("full", 70e9): 1120.0,
        ("lora", 7e9): 14.1, ("lora", 13e9): 26.2, ("lora", 70e9): 140.5,
        ("qlora", 7e9): 3.7, ("qlora", 13e9): 6.9, ("qlora", 70e9): 36.6,
    }


def test_lora_adapter_counts_for_rank_16():
    # r*(d+k) per matrix (LoRA paper §4.1): 7B 32*16*(8192+8192) = 8,388,608; 70B has GQA, W_v is 8192 x 1024
    assert lora_qv_params(7e9) == 8_388_608
    assert lora_qv_params(13e9) == 40 * 16 * (10240 + 10240) == 13_107_200
    assert lora_qv_params(70e9) == 80 * 16 * ((8192 + 8192) + (8192 + 1024)) == 32_768_000


def test_lora_fraction_input():
    # 0.5 % of 7e9 trained: 2*psi + 16*(0.005*psi)
    s = run(params="7B", method="lora", lora="0.5%", gpu_count="1")
    assert s.trainable == pytest.approx(0.005 * 7e9)
    assert s.model_states_per_gpu == pytest.approx(2 * 7e9 + 16 * 0.005 * 7e9)


def test_pretraining_has_the_same_model_states_as_full_fine_tune():
    assert run(params="13B", method="pretrain").model_states_per_gpu == run(params="13B").model_states_per_gpu


# ------------------------------------------------------------------ accounting, optimizers, precision


@pytest.mark.parametrize("accounting,optimizer,precision,bpp", [
    ("zero", "adamw", "bf16", 2 + 2 + 12),      # ZeRO paper: (2 + 2 + K), K = 12
    ("hf", "adamw", "bf16", 6 + 4 + 8),         # HF docs: weights 6 (fp32 + 16-bit) + grads 4 + AdamW 8 = 18
    ("hf", "adam8bit", "bf16", 6 + 4 + 2),      # HF docs: 8-bit AdamW keeps 2 bytes/param
    ("zero", "adam8bit", "bf16", 2 + 2 + 4 + 2),  # ZeRO split with K = 4 (fp32 master) + 2 (8-bit states)
    ("hf", "sgd_momentum", "fp16", 6 + 4 + 4),  # HF docs: SGD with momentum keeps 4 bytes/param
    ("hf", "sgd", "bf16", 6 + 4 + 0),           # torch.optim.SGD without momentum keeps no buffer
    ("hf", "adamw", "fp32", 4 + 4 + 8),         # HF docs: fp32 training, weights 4 + grads 4 + AdamW 8
    ("zero", "adamw", "fp32", 4 + 4 + 8),       # no master copy in fp32
])
def test_bytes_per_parameter_by_part(accounting, optimizer, precision, bpp):
    s = run(params="7B", accounting=accounting, optimizer=optimizer, precision=precision, gpu_count="1")
    assert sum(s.bytes_per_param.values()) == bpp
    assert s.model_states_per_gpu == pytest.approx(bpp * 7e9)


def test_hf_accounting_7b_is_126_gb():
    # knowledge.md §7.1: 16-18 B/param -> 7B needs ~112-126 GB before activations
    assert run(params="7B", accounting="hf", gpu_count="1").model_states_per_gpu == pytest.approx(126e9)


# ------------------------------------------------------------------ ZeRO stages


@pytest.mark.parametrize("stage,expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1_example(stage, expected_gb):
    """ZeRO paper Fig. 1: psi = 7.5B, Nd = 64, K = 12:
    baseline (2+2+K)psi = 120 GB; P_os 4psi + K*psi/Nd = 31.4; P_os+g 2psi + 14psi/Nd = 16.6; P_os+g+p 16psi/Nd = 1.9."""
    psi, nd, K = 7.5e9, 64, 12
    by_formula = {0: (2 + 2 + K) * psi, 1: 4 * psi + K * psi / nd, 2: 2 * psi + (2 + K) * psi / nd,
                  3: (2 + 2 + K) * psi / nd}[stage]
    s = run(params="7.5e9", zero_stage=str(stage), dp_degree=str(nd))
    assert s.model_states_per_gpu == pytest.approx(by_formula)
    assert round(s.model_states_per_gpu / GB, 1) == expected_gb


def test_zero3_shards_the_frozen_lora_base_too():
    # ZeRO-3 partitions parameters (frozen or not): (2*psi + 16*T) / Nd
    T = lora_qv_params(70e9)
    s = run(params="70B", method="lora", zero_stage="3", dp_degree="8")
    assert s.model_states_per_gpu == pytest.approx((2 * 70e9 + 16 * T) / 8)


def test_dp_degree_defaults_to_the_gpu_count():
    s = run(params="7B", zero_stage="3", gpu_count="4")
    assert s.model_states_per_gpu == pytest.approx(16 * 7e9 / 4)


def test_cpu_offload_moves_master_grads_and_optimizer_to_host():
    """ZeRO-Offload (arxiv.org/abs/2101.06840), ZeRO-2 + DeepSpeed offload_optimizer: the GPU keeps the
    16-bit weights (2psi); each of this node's ranks keeps 1/Nd of master 4 + grads 2 + Adam 8 in host RAM."""
    psi, nd = 7e9, 8
    s = run(params="7B", zero_stage="2", offload="cpu", gpu_count="8")
    assert s.model_states_per_gpu == pytest.approx(2 * psi)
    assert s.host_offload == pytest.approx(8 * (4 + 2 + 8) * psi / nd)
    # ZeRO-1 + offload: gradients are not partitioned on the GPU (stage 1), so they stay there
    s1 = run(params="7B", zero_stage="1", offload="cpu", gpu_count="8")
    assert s1.model_states_per_gpu == pytest.approx(2 * psi + 2 * psi)


def test_offload_needs_zero_stage_1_to_3():
    inputs, errors = sz.parse_inputs({"offload": "cpu", "zero_stage": "0"})
    assert "offload" in errors and "stage 1, 2 or 3" in errors["offload"]
    assert inputs.offload == "none"


# ------------------------------------------------------------------ activations


def test_activations_standard_attention_no_recomputation():
    """Korthikanti et al. 2022 eq. 1: L * s*b*h*(34 + 5*a*s/h) bytes. 7B, s=4096, b=1."""
    L, h, a, _ = LLAMA2[7e9]
    s, b = 4096, 1
    expected = L * s * b * h * (34 + 5 * a * s / h)
    got = run(params="7B", attention="standard", checkpointing="off", seq_len="4096", micro_batch="1")
    assert got.activations == pytest.approx(expected)
    assert expected == 32 * 4096 * 4096 * 194  # 104.2 GB
    assert round(got.activations / GB, 1) == 104.2


def test_activations_flash_attention_drop_the_score_term():
    """No s x s scores kept (FlashAttention arxiv.org/abs/2205.14135; = the paper's selective recompute): 34*s*b*h*L."""
    L, h, a, _ = LLAMA2[13e9]
    got = run(params="13B", attention="flash", seq_len="2048", micro_batch="4")
    assert got.activations == pytest.approx(L * 34 * 2048 * 4 * h)


def test_activations_with_full_checkpointing():
    """Full recomputation keeps 2*s*b*h per layer (Korthikanti §4) plus one layer rebuilt in backward."""
    L, h, a, _ = LLAMA2[70e9]
    s, b = 4096, 2
    kept = 2 * s * b * h * L
    std = run(params="70B", checkpointing="full", attention="standard", seq_len="4096", micro_batch="2")
    assert std.activations == pytest.approx(kept + s * b * h * (34 + 5 * a * s / h))
    fl = run(params="70B", checkpointing="full", attention="flash", seq_len="4096", micro_batch="2")
    assert fl.activations == pytest.approx(kept + 34 * s * b * h)
    off = run(params="70B", checkpointing="off", attention="flash", seq_len="4096", micro_batch="2")
    assert fl.activations < off.activations / 10


def test_fp32_doubles_the_16_bit_activation_estimate():
    a16 = run(params="7B", precision="bf16").activations
    a32 = run(params="7B", precision="fp32").activations
    assert a32 == pytest.approx(2 * a16)


def test_activations_are_labelled_an_estimate():
    s = run(params="7B")
    act = next(r for r in s.results if r.key == "activations")
    assert "estimate" in act.title.lower() and "2205.05198" in act.source


def test_shape_from_table_or_estimate():
    assert sz.known_shape(6.74e9).name == "Llama 2 7B"           # within 5 % of 7e9
    assert sz.known_shape(7.5e9) is None
    est = sz.estimate_shape(7.5e9)
    # Kaplan et al. 2020: psi ~ 12*L*h^2, with L = h/128: h = (128*psi/12)^(1/3) -> multiple of 128
    h = round((128 * 7.5e9 / 12) ** (1 / 3) / 128) * 128
    assert (est.hidden, est.layers) == (h, round(7.5e9 / (12 * h * h)))
    assert "ESTIMATE" in est.source
    s = run(params="7.5e9")
    assert "ESTIMATED shape" in next(r for r in s.results if r.key == "activations").math[0]


def test_typed_shape_overrides_the_table():
    s = run(params="7B", layers="10", hidden="1000", heads="10", attention="standard", seq_len="100")
    assert s.activations == pytest.approx(10 * 100 * 1 * 1000 * (34 + 5 * 10 * 100 / 1000))


# ------------------------------------------------------------------ per GPU against the GPU, GPU count


def test_fits_or_short_with_gb_and_gib():
    # 7B full, ZeRO-0, flash, s=4096 b=1: 112 GB + 32*34*4096*4096 = 18.25 GB -> 130.3 GB vs H100 80 GB (80e9 bytes)
    s = run(params="7B", gpu="H100 SXM5")
    need = 16 * 7e9 + 32 * 34 * 4096 * 4096
    assert s.per_gpu == pytest.approx(need) and not s.fits
    r = next(r for r in s.results if r.key == "per_gpu")
    assert r.status == "short"
    assert f"SHORT by {(need - 80e9) / GB:,.1f} GB = {(need - 80e9) / GiB:,.1f} GiB" == r.value
    ok = run(params="7B", method="qlora", gpu="H100 SXM5")
    assert ok.fits and next(r for r in ok.results if r.key == "per_gpu").value.startswith("fits, ")


@pytest.mark.parametrize("stage,paper,deepspeed", [(0, None, None), (1, 3, None), (2, 3, 4), (3, 2, 3)])
def test_minimum_gpu_count_7b_full_on_h100(stage, paper, deepspeed):
    """Smallest Nd with fixed + sharded/Nd + activations <= 80e9, by the larger of two figures.
    ZeRO paper §5: ZeRO-1 fixed 4psi, sharded 12psi; ZeRO-2 2psi / 14psi; ZeRO-3 0 / 16psi.
    DeepSpeed estimate_zero2_model_states_mem_needs: 4psi + 16psi/N; estimate_zero3_model_states_mem_needs:
    4*LL + 18psi/N, LL = Llama 2 7B's embedding 32000 x 4096. act = 32*34*4096*4096 = 18.25 GB."""
    psi, mem, LL = 7e9, 80e9, 32000 * 4096
    act = 32 * 34 * 4096 * 4096

    def n_for(fixed, sharded):
        return None if fixed + act > mem else max(1, math.ceil(sharded / (mem - fixed - act)))

    by_paper = n_for(*{0: (16 * psi, 0), 1: (4 * psi, 12 * psi), 2: (2 * psi, 14 * psi), 3: (0, 16 * psi)}[stage])
    by_ds = {2: n_for(4 * psi, 16 * psi), 3: n_for(4 * LL, 18 * psi)}.get(stage)
    assert (by_paper, by_ds) == (paper, deepspeed)
    s = run(params="7B", zero_stage=str(stage))
    assert (s.min_gpus_paper, s.min_gpus_ds) == (paper, deepspeed)
    assert s.min_gpus == (max(paper, deepspeed) if deepspeed else paper)


def test_minimum_gpu_count_70b_full_zero3_with_checkpointing():
    """The issue's case: act = 2*s*h*L + 34*s*h (one layer rebuilt) = 6.51 GB. ZeRO paper: N = ceil(16psi /
    (80e9 - act)) = 16; DeepSpeed estimate_zero3_model_states_mem_needs: 4*LL + 18psi/N with LL = 32000 x 8192
    (Llama 2 70B's embedding): N = ceil(18psi / (80e9 - 4LL - act)) = 18. The larger counts: 18."""
    act = 2 * 4096 * 8192 * 80 + 34 * 4096 * 8192
    LL = 32000 * 8192
    s = run(params="70B", zero_stage="3", checkpointing="full")
    assert s.min_gpus_paper == math.ceil(16 * 70e9 / (80e9 - act)) == 16
    assert s.min_gpus_ds == math.ceil(18 * 70e9 / (80e9 - 4 * LL - act)) == 18
    assert s.min_gpus == 18
    r = next(r for r in s.results if r.key == "min_gpus")
    assert "more than this node's 8: 3 nodes" in r.math
    assert "paper: 16; DeepSpeed estimator: 18; the larger counts" in r.math


def test_no_gpu_count_when_activations_alone_do_not_fit():
    # 70B, s=4096, b=1, flash, no checkpointing: 80*34*4096*8192 = 91.3 GB > 80 GB on any count
    s = run(params="70B", method="qlora")
    assert s.min_gpus is None and s.min_gpus_stage3 is None


# ------------------------------------------------------------------ host RAM, CPU cores, NVMe


def test_host_ram_is_the_sum_of_counted_reasons_with_no_ratio():
    """Counted: checkpoint load (ranks x 2 B x psi), CPU offload share, loaders (GB x GPUs). No ratio rule
    (knowledge.md §9 #10): the real systems' 1.25x-3.2x appear only as labelled context."""
    psi = 7e9
    s = run(params="7B", zero_stage="2", offload="cpu", loader_gb_per_gpu="10", ckpt_loaders="all")
    assert s.loading == "all"
    assert s.host_ckpt_load == 8 * 2 * psi
    assert s.host_loaders == 8 * 10 * GB
    assert s.host_offload == pytest.approx(8 * 14 * psi / 8)
    assert s.host_min == pytest.approx(8 * 2 * psi + 80e9 + 14 * psi)
    one = run(params="7B", ckpt_loaders="one")
    assert one.host_ckpt_load == 2 * psi
    r = next(r for r in s.results if r.key == "host_ram")
    text = " ".join(r.math).lower()
    assert "context, not a rule" in text and "1.25x-3.2x" in text
    assert "page-locked" in text and "offload" in text and "loaders" in text
    assert s.plan_answers()["host_ram_min_gib"] == str(math.ceil(s.host_min / GiB)) and "host_ram_gib" not in s.plan_answers()


def test_planned_host_ram_is_compared_and_written():
    s = run(params="7B", host_ram_gib="2048")
    r = next(r for r in s.results if r.key == "host_ram")
    assert r.status == "ok" and s.plan_answers()["host_ram_gib"] == "2048"
    small = run(params="70B", host_ram_gib="64")
    assert next(r for r in small.results if r.key == "host_ram").status == "short"


def test_cpu_cores_are_references():
    s = run(gpu_count="8")
    r = next(r for r in s.results if r.key == "cpu_cores")
    assert r.value == "112-120 (references)"  # DGX H100 112/8 = 14; MLPerf B200 120/8 = 15
    assert any("not rules" in m for m in r.math)


def test_checkpoint_and_nvme():
    """Checkpoint = weights + optimizer states (master 4 + 16-bit 2 + Adam 8 = 14 B/param; gradients are not
    saved); NVMe = dataset + 16-bit base model (2 B x psi) + kept x checkpoint."""
    s = run(params="7B", dataset_gb="500", checkpoints_kept="3")
    assert s.checkpoint_bytes == 14 * 7e9
    assert s.nvme_total == pytest.approx(500e9 + 2 * 7e9 + 3 * 14 * 7e9)
    lora = run(params="7B", method="lora", checkpoints_kept="2")
    assert lora.checkpoint_bytes == 14 * lora_qv_params(7e9)
    pre = run(params="7B", method="pretrain", checkpoints_kept="1")
    assert pre.nvme_total == 14 * 7e9  # nothing downloaded, no dataset given


# ------------------------------------------------------------------ power


def test_power_psus_and_heat():
    """Sum of component maxima: 8 x 700 W (H100 SXM5 TDP, gpu_specs.csv) + 700 + 1000 = 7300 W;
    3300 W PSUs: N = ceil(7300/3300) = 3, N+1 = 4, N+N = 6; heat 7300 x 3.412 BTU/h (NIST SP 811)."""
    s = run(gpu="H100 SXM5", gpu_count="8", cpu_w="700", other_w="1000", psu_w="3300")
    assert (s.gpu_w, s.component_w, s.load_w) == (5600, 7300, 7300)
    assert (s.psus, s.psus_n1, s.psus_nn) == (3, 4, 6)
    assert s.heat_btu_h == pytest.approx(7300 * 3.412)
    r = next(r for r in s.results if r.key == "power")
    assert "DGX H100 10,200 W for 8 x 700 W GPUs (1.8x the GPU sum)" in " ".join(r.math)


def test_vendor_system_maximum_replaces_the_component_sum():
    # DGX H100: 10.2 kW max; with 3.3 kW PSUs: N = 4, N+1 = 5, N+N = 8 (each feed carries the full load)
    s = run(gpu="H100 SXM5", cpu_w="700", other_w="1000", psu_w="3300", system_max_w="10200")
    assert s.load_w == 10200 and (s.psus, s.psus_n1, s.psus_nn) == (4, 5, 8)
    assert s.heat_btu_h == pytest.approx(10200 * 3.412)


def test_no_psu_count_without_a_rating():
    s = run()
    assert s.psus is None and any("PSU rating" in m for m in next(r for r in s.results if r.key == "power").math)


# ------------------------------------------------------------------ GPU table, plan answers


def test_gpu_table_parsing():
    g = {x.name: x for x in sz.gpu_specs()}
    assert (g["H100 SXM5"].memory_gb, g["H100 SXM5"].tdp_w) == (80, 700)   # "up to 700"
    assert g["H100 PCIe"].tdp_w == 350                                      # "300-350 (product brief: 350 max TDP)"
    assert g["B200 (HGX/DGX B200)"].memory_gb == 180                        # "180 (1440 per 8-GPU DGX)"
    assert g["GeForce RTX 4090"].tdp_w == 450                               # "450 (TGP)"
    assert {"V100 SXM2 16GB", "V100 SXM2 32GB", "V100 PCIe 16GB", "V100 PCIe 32GB"} <= set(g)
    assert g["H100 NVL"].unverified and not g["H100 SXM5"].unverified
    assert all(x.source for x in g.values())


def test_observed_nvidia_smi_totals_are_in_the_real_outputs():
    for name, (mib, case) in sz.OBSERVED_TOTAL_MIB.items():
        text = (DATA / "cases" / case).read_text(errors="replace")
        assert re.search(rf"(Total\s*:\s*{mib} MiB|<total>{mib} MiB</total>)", text), (name, case)


def test_every_gpu_name_is_a_valid_plan_answer_known_to_the_nvlink_table():
    """The gpu_model written by "Use as plan" passes wizard.plan validation, and the NVLink checks
    (wizard.rules.nvlink.sku_row, assets/nvlink_expected.csv) recognise every one of them."""
    from wizard.rules.nvlink import sku_row

    unmatched = set()
    for g in sz.gpu_specs():
        s = run(gpu=g.name)
        answers = {k: parse_value(k, v) for k, v in s.plan_answers().items()}
        assert answers["gpu_model"] == g.name and answers["gpu_count"] == 8
        if sku_row(g.name) is None:
            unmatched.add(g.name)
    assert unmatched == set()


# ------------------------------------------------------------------ input parsing


def test_parse_count_forms():
    assert sz.parse_count("7B") == 7e9
    assert sz.parse_count("6.74e9") == 6.74e9
    assert sz.parse_count("70 b") == 70e9
    assert sz.parse_count("350M") == 350e6
    assert sz.parse_count("13000000000") == 13e9
    for bad in ("", "seven", "7GB", "-7B", "1e400", "0"):
        with pytest.raises(ValueError):
            sz.parse_count(bad)


def test_refused_fields_keep_defaults_and_say_why():
    inputs, errors = sz.parse_inputs({"params": "[red]x", "seq_len": "0", "gpu": "H999", "lora": "abc",
                                      "heads": "32", "kv_heads": "5"})
    assert set(errors) == {"params", "seq_len", "gpu", "lora", "kv_heads"}
    assert "'[red]x'" in errors["params"]
    assert inputs.params == 7e9 and inputs.seq_len == 4096 and inputs.gpu == "H100 SXM5"


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(sz.FIELDS)), st.text(max_size=12), max_size=12))
def test_parse_and_size_never_raise(raw):
    inputs, errors = sz.parse_inputs(raw)
    s = sz.size(inputs)
    assert all(r.source for r in s.results)
    assert set(errors) <= set(sz.FIELDS)


# ------------------------------------------------------------------ what is shown


def test_every_result_shows_arithmetic_and_source():
    s = run(params="70B", method="qlora", zero_stage="3", offload="cpu", checkpointing="full", cpu_w="700",
            other_w="900", psu_w="3000", dataset_gb="100")
    keys = [r.key for r in s.results]
    assert keys == ["bytes_per_param", "model_states", "activations", "per_gpu", "min_gpus", "host_ram",
                    "cpu_cores", "nvme", "power"]
    for r in s.results:
        assert r.math and r.source and r.value, r.key


def test_no_advice_from_knowledge_section_9():
    """knowledge.md §9 #10, #11, #22: no RAM ratio rule, no PSU = components x 1.3, no step-time anecdote."""
    texts = []
    for method in sz.METHODS:
        s = run(params="13B", method=method, cpu_w="500", other_w="500", psu_w="2000")
        texts += [f"{r.title} {r.value} {' '.join(r.math)}" for r in s.results]
    text = " ".join(texts).lower()
    for bad in ("1.5x gpu memory", "2x gpu memory", "must be", "1.14 s", "step time"):
        assert bad not in text, bad
    assert not re.search(r"[x×] ?1\.3(?![0-9e])", text)  # "components x 1.3" (not "x 1.30e10" params)
    assert not re.search(r"\b1\.[35] ?[x×] (the )?(total )?gpu memory", text)


# ------------------------------------------------------------------ DeepSpeed's estimators, the paper, Accelerate
# The two DeepSpeed functions as published (deepspeedai/DeepSpeed HEAD edaa722, deepspeed/runtime/zero/
# stage_1_and_2.py and stage3.py), transcribed here so the test recomputes them independently of wizard.sizing.


def ds_estimate_zero2(total_params, num_gpus_per_node=1, num_nodes=1, cpu_offload=True, additional_buffer_factor=1.5):
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu_mem = 4 * total_params + int(16 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def ds_estimate_zero3(total_params, largest_layer_params, num_gpus_per_node=1, num_nodes=1, cpu_offload=True,
                      cpu_offload_params=True, zero_init=True, additional_buffer_factor=1.5):
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = (4 * largest_layer_params)
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            cpu_mem = (total_params * 18 * gpus_factor * additional_buffer_factor if zero_init else
                       total_params * max(4 * num_gpus_per_node, 18 * gpus_factor) * additional_buffer_factor)
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            cpu_mem = (total_params * 16 * gpus_factor * additional_buffer_factor if zero_init else
                       total_params * max(4 * num_gpus_per_node, 16 * gpus_factor) * additional_buffer_factor)
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        cpu_mem = (largest_layer_params * 4 * num_gpus_per_node * additional_buffer_factor if zero_init else
                   total_params * 4 * num_gpus_per_node * additional_buffer_factor)
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


# exact parameter counts (HF config.json shapes: Psi = L(2h^2 + 2h*kv*h/a + 3h*ffn + 2h) + 2Vh + h) and the
# largest module (DeepSpeed model_to_params: max over modules of their own parameters = the V x h embedding)
EXACT = {"7B": (6_738_415_616, 32000 * 4096), "70B": (68_976_648_192, 32000 * 8192),
         "405B": (405_853_388_800, 128256 * 16384)}


@pytest.mark.parametrize("model", sorted(EXACT))
@pytest.mark.parametrize("offload", ["none", "cpu"])
def test_deepspeed_zero2_estimator_8_gpus(model, offload):
    """estimate_zero2_model_states_mem_needs(psi, num_gpus_per_node=8, cpu_offload=...)[1]:
    2psi + int(18psi/8), or 2psi with the optimizer offloaded."""
    psi, _ = EXACT[model]
    s = run(params=str(psi), zero_stage="2", offload=offload, gpu_count="8")
    assert s.ds_states_per_gpu == ds_estimate_zero2(psi, 8, cpu_offload=offload == "cpu")[1]
    # the paper's ZeRO-2 (2psi + 14psi/Nd) is smaller, so the DeepSpeed figure is the one used
    if offload == "none":
        assert s.model_states_per_gpu == pytest.approx(2 * psi + 14 * psi / 8)
    assert s.states_per_gpu == max(s.model_states_per_gpu, s.ds_states_per_gpu)


@pytest.mark.parametrize("model,gb", [("7B", 15.69), ("70B", 156.25), ("405B", 921.58)])
def test_deepspeed_zero3_estimator_8_gpus(model, gb):
    """estimate_zero3_model_states_mem_needs(psi, LL, 8, cpu_offload=False)[1] = 4*LL + int(18psi/8):
    7B 15.69 GB, 70B 156.25 GB, 405B 921.58 GB; the paper's (2+2+K)psi/Nd = 16psi/8 is below it."""
    psi, LL = EXACT[model]
    s = run(params=str(psi), zero_stage="3", gpu_count="8")
    assert s.largest_layer == LL
    assert s.ds_states_per_gpu == ds_estimate_zero3(psi, LL, 8, cpu_offload=False)[1]
    assert round(s.ds_states_per_gpu / GB, 2) == gb
    assert s.model_states_per_gpu == pytest.approx(16 * psi / 8)
    assert s.states_per_gpu == s.ds_states_per_gpu
    off = run(params=str(psi), zero_stage="3", offload="cpu", gpu_count="8")
    # optimizer offloaded, parameters on the GPU: cpu_offload=True, cpu_offload_params=False -> 4*LL + int(2psi/8)
    assert off.ds_states_per_gpu == ds_estimate_zero3(psi, LL, 8, cpu_offload=True, cpu_offload_params=False)[1]


def test_deepspeed_has_no_estimator_for_stage_0_1_or_other_optimizers():
    for raw in ({"zero_stage": "0"}, {"zero_stage": "1"}, {"zero_stage": "3", "optimizer": "sgd"},
                {"zero_stage": "3", "precision": "fp32"}):
        s = run(params="7B", **raw)
        assert s.ds_states_per_gpu is None and s.ds_note
        assert s.states_per_gpu == s.model_states_per_gpu


def test_deepspeed_multipliers_on_lora_adapters():
    """LoRA at ZeRO-3, 8 GPUs: DeepSpeed's 18 B/param sharded on the trained adapters T, the frozen bf16 base
    (2psi) sharded too, and the gathered largest layer at 2 B (16-bit params, no grads: frozen)."""
    T, LL = lora_qv_params(70e9), 32000 * 8192
    s = run(params="70B", method="lora", zero_stage="3", gpu_count="8")
    assert s.ds_states_per_gpu == pytest.approx(2 * LL + int(18 * T / 8) + 2 * 70e9 / 8)
    q = run(params="70B", method="qlora", zero_stage="2", gpu_count="8")
    # ZeRO-2: 2T + int(18T/8) + the NF4 base (not partitioned at stage 2)
    assert q.ds_states_per_gpu == pytest.approx(4 * T + int(16 * T / 8) + QLORA_BPP * 70e9)


def test_fsdp_sharding_strategies_are_named_with_their_zero_stage():
    for stage, word in ((2, "SHARD_GRAD_OP"), (3, "FULL_SHARD")):
        r = next(r for r in run(params="7B", zero_stage=str(stage)).results if r.key == "model_states")
        assert word in " ".join(r.math) and "pytorch.org/docs/stable/fsdp.html" in r.source


def test_accelerate_estimate_memory_is_its_largest_part_not_the_sum():
    """accelerate estimate_training_usage: bf16 -> max(model S, grads S + S/2, optimizer 2S, step 2S) with S the
    fp32 size 4psi = 8psi; fp32 -> step 4S = 16psi. Shown for comparison, never used."""
    assert run(params="7B").accelerate_bytes == 2 * (4 * 7e9)
    assert run(params="7B", precision="fp32").accelerate_bytes == 4 * (4 * 7e9)
    assert run(params="7B", method="lora").accelerate_bytes is None
    r = next(r for r in run(params="7B").results if r.key == "model_states")
    assert "not the sum" in " ".join(r.math) and "accelerate" in r.source.lower()


# ------------------------------------------------------------------ host RAM by loading path


def test_host_ram_zero3_sharded_init_is_deepspeeds_zero_init_figure():
    """The issue's case: 70B, ZeRO-3, 8 GPUs. Loading defaults to sharded init at ZeRO-3 (zero.Init / FSDP meta
    device): estimate_zero3_model_states_mem_needs(..., zero_init=True, cpu_offload=False)[0] =
    LL x 4 x 8 x 1.5 = 12.58 GB, not 8 x 2 B x 70e9 = 1,120 GB."""
    LL = 32000 * 8192
    s = run(params="70B", zero_stage="3", gpu_count="8")
    assert s.loading == "sharded"
    expected = ds_estimate_zero3(70e9, LL, 8, cpu_offload=False, zero_init=True)[0]
    assert s.host_ckpt_load == pytest.approx(expected) and round(expected / GB, 2) == 12.58
    assert s.host_min == pytest.approx(expected) and s.ds_host == pytest.approx(expected)
    assert s.plan_answers()["host_ram_min_gib"] == str(math.ceil(expected / GiB)) == "12"
    # the same plan with every rank loading a full copy, and with rank 0 loading then broadcasting
    assert run(params="70B", zero_stage="3", ckpt_loaders="all").host_ckpt_load == 8 * 2 * 70e9
    assert run(params="70B", zero_stage="3", ckpt_loaders="one").host_ckpt_load == 2 * 70e9


def test_host_ram_loading_default_follows_the_zero_stage():
    for stage, path in ((0, "all"), (1, "all"), (2, "all"), (3, "sharded")):
        assert run(params="7B", zero_stage=str(stage)).loading == path
    # QLoRA loads through bitsandbytes with a device_map: shards stream to each GPU, one 5 GB shard per rank
    # (transformers' save_pretrained max_shard_size default), not 8 x 140 GB of bf16 copies
    q = run(params="70B", method="qlora", zero_stage="0", gpu_count="8")
    assert q.loading == "streamed" and q.host_ckpt_load == 8 * 5e9
    assert run(params="70B", method="qlora", zero_stage="3").loading == "sharded"
    assert run(params="1B", method="qlora", zero_stage="0", gpu_count="8").host_ckpt_load == 8 * 2 * 1e9  # < one shard
    # DeepSpeed's own ZeRO-2 host figure (each rank builds an fp32 model, x1.5) is shown, not counted
    s = run(params="7B", zero_stage="2", gpu_count="8")
    assert s.ds_host == ds_estimate_zero2(7e9, 8, cpu_offload=False)[0]
    assert s.host_min == 8 * 2 * 7e9
    text = " ".join(next(r for r in s.results if r.key == "host_ram").math)
    assert "DeepSpeed's own host estimate" in text and "a full copy per rank" in text


def test_counted_host_ram_feeds_os_memory(vm):  # noqa: F811 - the fixture imported above
    """os.memory compares MemTotal with the plan's host_ram_min_gib (what Use as plan writes). On the dev VM's
    real /proc/meminfo (23.5 GiB) the 70B ZeRO-3 plan's sharded-init figure (12 GiB) passes; the same plan
    loading a full copy per rank (1,120 GB = 1,044 GiB) warns."""
    from wizard.model import Verdict
    from wizard.rules.host import memory

    def verdict(s):
        plan = {k: parse_value(k, v) for k, v in s.plan_answers().items()}
        return [f.verdict for f in memory(vm, plan)]

    assert verdict(run(params="70B", zero_stage="3")) == [Verdict.PASS]
    assert verdict(run(params="70B", zero_stage="3", ckpt_loaders="all")) == [Verdict.WARN]


# ------------------------------------------------------------------ tensor / pipeline parallelism


def test_tensor_and_pipeline_parallel_divide_model_states():
    """Megatron-LM: each GPU of a t x p group holds psi/(t*p) (arXiv 1909.08053, 2104.04473); ZeRO shards that
    over d = n/(t*p) (2104.04473 §2). 70B, 16 GPUs, TP 4, PP 2 -> d 2; ZeRO-1 (paper): (4psi + 12psi/2)/8."""
    psi = 70e9
    s = run(params="70B", gpu_count="16", tp="4", pp="2", zero_stage="1")
    assert s.inputs.nd == 2
    assert s.model_states_per_gpu == pytest.approx((4 * psi + 12 * psi / 2) / 8)
    t8 = run(params="70B", tp="8", zero_stage="0")
    assert t8.inputs.nd == 1 and t8.model_states_per_gpu == pytest.approx(16 * psi / 8)
    # DeepSpeed ZeRO-3 on each model-parallel rank: 4*LL/t + int(18*(psi/(t*p))/d)
    LL = 32000 * 8192
    z3 = run(params="70B", gpu_count="16", tp="4", pp="2", zero_stage="3")
    assert z3.ds_states_per_gpu == pytest.approx(4 * LL / 4 + int(18 * (psi / 8) / 2))


def test_min_gpus_with_tp_pp_is_a_multiple_of_the_model_parallel_group():
    s = run(params="70B", tp="4", pp="2", zero_stage="3", checkpointing="full")
    assert s.min_gpus is not None and s.min_gpus % 8 == 0
    assert "x TP 4 x PP 2: GPUs = Nd x 8" in next(r for r in s.results if r.key == "min_gpus").math


def test_tp_pp_must_divide_the_gpus():
    inputs, errors = sz.parse_inputs({"gpu_count": "8", "tp": "3"})
    assert "tp" in errors and "must divide" in errors["tp"] and inputs.tp == 1
    inputs, errors = sz.parse_inputs({"gpu_count": "8", "tp": "3", "dp_degree": "2"})
    assert errors == {} and inputs.nd == 2


@pytest.mark.parametrize("attention", ["flash", "standard"])
def test_activations_with_tensor_and_sequence_parallel(attention):
    """Korthikanti et al. 2022 Table 2, per layer: TP t: sbh(10 + 24/t + 5as/(ht)); TP + SP: sbh(34/t + 5as/(ht));
    FlashAttention drops the 5as/(ht) score term. 70B: L 80, h 8192, a 64; s 4096, b 1, t 8."""
    L, h, a, _ = LLAMA2[70e9]
    s_, b, t = 4096, 1, 8
    score = 0 if attention == "flash" else 5 * a * s_ / (h * t)
    tp = run(params="70B", tp="8", attention=attention)
    assert tp.activations == pytest.approx(L * s_ * b * h * (10 + 24 / t + score))
    sp = run(params="70B", tp="8", sp="on", attention=attention)
    assert sp.activations == pytest.approx(L * s_ * b * h * (34 / t + score))
    ck = run(params="70B", tp="8", sp="on", attention=attention, checkpointing="full")
    assert ck.activations == pytest.approx(L * 2 * s_ * b * h + s_ * b * h * (34 / t + score))  # full: sbh(2)


def test_pipeline_parallel_keeps_l_layers_of_activations_on_the_first_stage():
    """Korthikanti §4.2.3: with 1F1B the first stage stores p micro-batches x L/p layers = L layers' worth."""
    one = run(params="70B", gpu_count="8", pp="1")
    four = run(params="70B", gpu_count="8", pp="4")
    assert four.activations == one.activations
    assert four.model_states_per_gpu == pytest.approx(one.model_states_per_gpu / 4)


# ------------------------------------------------------------------ stored inputs, JSON


def test_stored_inputs_keep_only_known_text_fields():
    assert sz.stored_inputs({}) == {}
    assert sz.stored_inputs({sz.STORE_KEY: "junk"}) == {}
    assert sz.stored_inputs({sz.STORE_KEY: {"params": "70B", "zero_stage": 3, "nope": "x"}}) == {"params": "70B"}


def test_json_has_the_screens_numbers():
    s = run(params="70B", zero_stage="3", checkpointing="full")
    doc = sz.to_json(s, {"params": "70B"})
    assert doc["per_gpu"]["model_states_bytes"] == round(s.states_per_gpu)
    assert doc["min_gpus"] == {"total": 18, "paper": 16, "deepspeed": 18, "zero3": 18}
    assert doc["host_ram"]["loading"] == "sharded" and doc["host_ram"]["min_gib"] == 12
    assert [r["key"] for r in doc["results"]] == [r.key for r in s.results]
    assert doc["inputs"]["params"] == "70B" and set(doc["inputs"]) == set(sz.FIELDS)


def test_host_ram_with_tensor_parallelism_loads_one_slice_per_rank():
    """Megatron-style TP: each of the 8 ranks loads its 1/8 slice of 70B x 2 B, not a full copy (140 GB, not 1,120)."""
    s = run(params="70B", zero_stage="1", tp="8", gpu_count="8", ckpt_loaders="all")
    assert s.host_ckpt_load == pytest.approx(8 * 2 * 70e9 / 8)


def test_no_gpu_count_says_when_the_activations_alone_do_not_fit():
    """70B, ZeRO-3, no checkpointing: 80 x 4096 x 8192 x 34 B = 91.3 GB of activations > 80 GB: no Nd helps."""
    s = run(params="70B", zero_stage="3", gpu="H100 SXM5", gpu_count="8")
    r = next(r for r in s.results if r.key == "min_gpus")
    assert s.min_gpus is None and any("activations alone (91.3 GB)" in ln and "checkpointing" in ln for ln in r.math)


def test_a_results_source_names_the_datasheet_in_the_readers_language():
    """Walk 23 #5: the source read "H200 SXM datasheet: ..." under "H200 SXM：数据手册 141 GB"; the row's own source
    text stays as written, the JSON keeps the English."""
    from wizard import i18n
    from wizard.i18n import tr

    s = run(gpu="H200 SXM")
    src = next(r.source for r in s.results if r.key == "per_gpu")
    power = next(r.source for r in s.results if r.key == "power")
    row = sz.gpu_by_name("H200 SXM")
    assert row is not None and src == f"H200 SXM datasheet: {row.source}" and power.startswith(src + "; ")
    i18n.set_language("zh_CN")
    try:
        # the sources' joiner in the reader's language too (walk 24 #12)
        assert tr(src) == f"H200 SXM 数据手册：{row.source}" and tr(power).startswith(f"H200 SXM 数据手册：{row.source}；")
    finally:
        i18n.set_language("en")
