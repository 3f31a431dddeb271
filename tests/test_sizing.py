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


@pytest.mark.parametrize("stage,expected", [(0, None), (1, 3), (2, 3), (3, 2)])
def test_minimum_gpu_count_7b_full_on_h100(stage, expected):
    """Smallest Nd with fixed + sharded/Nd + activations <= 80e9 (ZeRO paper §5):
    act = 32*34*4096*4096 = 18.25 GB; ZeRO-1 fixed 4psi, sharded 12psi; ZeRO-2 2psi / 14psi; ZeRO-3 0 / 16psi."""
    psi, mem = 7e9, 80e9
    act = 32 * 34 * 4096 * 4096
    fixed, sharded = {0: (16 * psi, 0), 1: (4 * psi, 12 * psi), 2: (2 * psi, 14 * psi), 3: (0, 16 * psi)}[stage]
    by_hand = None if fixed + act > mem else max(1, math.ceil(sharded / (mem - fixed - act)))
    assert by_hand == expected
    assert run(params="7B", zero_stage=str(stage)).min_gpus == expected


def test_minimum_gpu_count_70b_full_zero3_with_checkpointing():
    # act = 2*s*h*L + 34*s*h (one layer rebuilt) = 6.51 GB; N = ceil(16*70e9 / (80e9 - act)) = 16
    act = 2 * 4096 * 8192 * 80 + 34 * 4096 * 8192
    s = run(params="70B", zero_stage="3", checkpointing="full")
    assert s.min_gpus == math.ceil(16 * 70e9 / (80e9 - act)) == 16
    r = next(r for r in s.results if r.key == "min_gpus")
    assert "more than this node's 8: 2 nodes" in r.math


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
