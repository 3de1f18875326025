"""Fine-tuning priced by what it runs (issue 31 item 2), unfused attention, the memory
roofline and the launch floor of the step-time model.

Expected values are hand computations written out next to each assertion; the one
published ratio is the LoRA paper's speed-up over full fine-tuning.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from layout_helpers import one_layout

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import step_time

A100 = get_gpu("a100-sxm4-80gb")
LLAMA_8B = get_preset("llama-3.1-8b").architecture

# Llama-3.1-8B (h 4096, 32 layers, 32 heads of 128, 8 KV heads, FFN 14336), rank 16 on all
# seven matrices: r·(in + out) each,
#   q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate/up 4096+14336, down 14336+4096
#   = 8192 + 5120 + 5120 + 8192 + 3 · 18432 = 81,920 per layer; × 16 × 32 layers
ADAPTERS_8B_R16 = 16 * 81_920 * 32  # 41,943,040
# its layer matrices (QLoRA's NF4 base): q, o 4096² each; k, v 4096·1024 each; gate, up,
# down 4096·14336 each = 33,554,432 + 8,388,608 + 176,160,768 = 218,103,808 per layer
MATRICES_8B = 218_103_808 * 32  # 6,979,321,856


def _inputs(**kw: object) -> TrainingInputs:
    return TrainingInputs(seq_len=4096, recompute="none", **kw)  # type: ignore[arg-type]


def _flat_cluster(efficiency: float = 0.5) -> par.Cluster:
    """Every GEMM and attention at one efficiency (no shape model: sms = 0), no memory-bound
    term (infinite bandwidth), no host floor (host time 0 replaces the stack's and the
    launch floor): a step is its FLOPs ÷ (peak · efficiency)."""
    return replace(
        par.cluster_of(A100, par.ParallelInputs(kernel_efficiency=efficiency)),
        sms=0,
        memory_bytes_per_s=math.inf,
        host_seconds_per_layer=0.0,
    )


def test_adapter_and_base_matrix_counts_are_the_hand_counts() -> None:
    si = par.step_inputs_of(LLAMA_8B, _inputs(lora_rank=16))
    assert si.frozen
    assert si.adapter_params == ADAPTERS_8B_R16
    assert si.adapted_matrices_per_layer == 7
    assert si.dequantised_params == 0.0
    qlora = par.step_inputs_of(LLAMA_8B, _inputs(qlora=True, lora_rank=16))
    assert qlora.dequantised_params == MATRICES_8B
    full = par.step_inputs_of(LLAMA_8B, _inputs())
    assert not full.frozen
    assert full.adapter_params == 0.0


def test_lora_runs_no_weight_gradient_for_frozen_weights() -> None:
    """One GPU, 8 sequences of 4096 tokens, flat efficiency 0.5, no recomputation.

    Full: each token costs the model's FLOPs F = 6·P_matmul + attention (the workload's
    model_flops_per_token). LoRA: the frozen weights skip their weight gradient, a third of
    6·P_matmul, and the adapters add 6·P_adapter: F − (F − attention)/3 + 6·41,943,040.
    Step = 8 · 4096 · FLOPs ÷ (312e12 · 0.5) in both (the optimizer step is free at
    infinite bandwidth and DP is absent)."""
    cluster = _flat_cluster()
    lay = one_layout(micro_batch=8)
    full_work = par.workload_of(LLAMA_8B, 4096, 8, training_inputs=_inputs())
    lora_ti = _inputs(lora_rank=16)
    lora_work = par.workload_of(LLAMA_8B, 4096, 8, training_inputs=lora_ti)
    f = full_work.model_flops_per_token
    attention = full_work.attention_flops_per_token
    tokens = 8 * 4096
    rate = 312e12 * 0.5
    full = par.evaluate_layouts(
        full_work, cluster, lay, None, par.step_inputs_of(LLAMA_8B, _inputs())
    )
    lora = par.evaluate_layouts(
        lora_work, cluster, lay, None, par.step_inputs_of(LLAMA_8B, lora_ti)
    )
    assert float(full["step_seconds"][0]) == pytest.approx(tokens * f / rate, rel=1e-9)
    lora_flops = f - (f - attention) / 3.0 + 6.0 * ADAPTERS_8B_R16
    assert float(lora["step_seconds"][0]) == pytest.approx(tokens * lora_flops / rate, rel=1e-9)
    # HFU counts what ran: 0.5 in both (every FLOP at the one efficiency)
    assert float(lora["hfu"][0]) == pytest.approx(0.5, rel=1e-9)
    assert float(full["hfu"][0]) == pytest.approx(0.5, rel=1e-9)


def test_qlora_dequantises_every_frozen_matrix_per_use() -> None:
    """QLoRA less LoRA at the same rank, same workload, finite bandwidth: the difference is
    the dequantisation, per micro-batch (b 8, one micro-batch): 6,979,321,856 parameters ×
    (NF4 4 + 8/64 + 32/(64·256) = 4.126953125 bits ÷ 8 = 0.515869140625 read + 2 written)
    × 2 uses (forward, input gradient; no recomputation) ÷ the A100's achieved HBM bandwidth
    (2.039e12 · 0.8), ≈ 21.5 ms; with full recomputation the replay adds a third use."""
    cluster = replace(_flat_cluster(), memory_bytes_per_s=A100.memory_bandwidth_bytes_per_s * 0.8)
    ti = _inputs(lora_rank=16)
    work = par.workload_of(LLAMA_8B, 4096, 8, training_inputs=ti)
    lora_si = par.step_inputs_of(LLAMA_8B, ti)
    qlora_si = par.step_inputs_of(LLAMA_8B, _inputs(qlora=True, lora_rank=16))
    per_use = MATRICES_8B * (0.515869140625 + 2.0) / (A100.memory_bandwidth_bytes_per_s * 0.8)
    for recompute, uses in ((0, 2), (2, 3)):
        lay = one_layout(micro_batch=8, recompute=recompute)
        lora = float(par.evaluate_layouts(work, cluster, lay, None, lora_si)["step_seconds"][0])
        qlora = float(par.evaluate_layouts(work, cluster, lay, None, qlora_si)["step_seconds"][0])
        assert qlora - lora == pytest.approx(uses * per_use, rel=1e-9)
    assert 2 * per_use == pytest.approx(0.0215, rel=0.01)


def test_lora_speedup_on_gpt3_is_the_published_order() -> None:
    """Hu et al. 2021 (LoRA, arXiv:2106.09685 section 4.2): 'a 25% speedup during training on
    GPT-3 175B compared to full fine-tuning as we do not need to calculate the gradient for
    the vast majority of the parameters'. Hand bound: the weight GEMMs are a share g of a
    step and LoRA drops a third of them, so the speed-up is 1/(1 − g/3): 1.25 at g = 0.6,
    1.43 at g = 0.9. The app, at the paper's scale (175B, 64 A100, tp 8 × pp 8, sequence
    2048, batch 64), with its own GEMM, attention, communication and launch terms, must land
    in that range."""
    arch = get_preset("gpt-3-175b").architecture
    cluster = par.cluster_of(A100, par.ParallelInputs(gpus_per_node=8))
    lay = one_layout(tp=8, pp=8, micro_batch=1)
    speed = {}
    for name, ti in (
        ("full", TrainingInputs(seq_len=2048, recompute="none")),
        (
            "lora",
            TrainingInputs(seq_len=2048, recompute="none", lora_rank=4, lora_targets=("q", "v")),
        ),
    ):
        work = par.workload_of(arch, 2048, 64, training_inputs=ti)
        out = par.evaluate_layouts(work, cluster, lay, None, par.step_inputs_of(arch, ti))
        speed[name] = float(out["tokens_per_s"][0])
    assert 1.20 <= speed["lora"] / speed["full"] <= 1.43


def test_a_memory_bound_gemm_runs_at_its_roofline() -> None:
    """Unfused attention scores on an A100: 64 batched 1024×64 · 64×1024 GEMMs. FLOPs
    2·1024·1024·64 per GEMM; bytes 2·(1024·64 + 64·1024 + 1024·1024) = 2,359,296: 56.9 FLOP
    per byte × 2.039e12 · 0.8 B/s = 92.8 TFLOP/s = 0.2975 of the 312 TFLOP/s peak, below
    the compute side (0.7 × a full last wave (2048 tiles on 108 SMs, 0.998) × size 0.908 =
    0.634)."""
    bandwidth = A100.memory_bandwidth_bytes_per_s * 0.8
    eff = comm.gemm_efficiency(
        1024,
        1024,
        64,
        sms=108,
        large_efficiency=0.7,
        peak_flops=312e12,
        memory_bytes_per_s=bandwidth,
        batch=64,
    )
    intensity = 2.0 * 1024 * 1024 * 64 / 2_359_296
    assert float(eff) == pytest.approx(intensity * bandwidth / 312e12, rel=1e-12)
    assert float(eff) == pytest.approx(0.2975, abs=5e-4)
    # the weight GEMMs of pretraining never meet it: 4096 tokens × 4096 × 4096 (683 FLOP/B)
    big = comm.gemm_efficiency(4096, 4096, 4096, sms=108, large_efficiency=0.7, peak_flops=312e12)
    capped = comm.gemm_efficiency(
        4096,
        4096,
        4096,
        sms=108,
        large_efficiency=0.7,
        peak_flops=312e12,
        memory_bytes_per_s=bandwidth,
    )
    assert float(capped) == float(big)


def test_launch_floor_counts() -> None:
    """Kernels per layer per micro-batch from the counts in step_time (Megatron's GPT layer):
    no recomputation 16 + 44 = 60; full 2·16 + 44 = 76; selective 60 + 4 = 64; tp 2 without
    SP adds 2 all-reduces per forward pass and 2 in the backward (full: 6); LoRA on 7
    matrices, no recomputation: 60 − 4 (no weight gradients) + 7 · (4 + 6) = 126; QLoRA
    adds a dequantisation per matrix per use: + 7 · 2 = 140."""
    assert float(step_time._layer_launches(one_layout())[0]) == 60
    assert float(step_time._layer_launches(one_layout(recompute=2))[0]) == 76
    assert float(step_time._layer_launches(one_layout(recompute=1))[0]) == 64
    assert float(step_time._layer_launches(one_layout(recompute=2, tp=2))[0]) == 82
    lora = par.step_inputs_of(LLAMA_8B, _inputs(lora_rank=16))
    qlora = par.step_inputs_of(LLAMA_8B, _inputs(lora_rank=16, qlora=True))
    assert float(step_time._layer_launches(one_layout(), lora)[0]) == 126
    assert float(step_time._layer_launches(one_layout(), qlora)[0]) == 140


def test_mixed_precision_optimizer_passes() -> None:
    """Bytes per parameter beyond Adam's: fp16 copy (2 + 4) and fp32 read (+2), unscale 8,
    norm 4, weight copy read 4 = 24; bf16 without the unscale 16; fp32 main grads 8; no
    master copy: the norm, 4."""
    assert step_time.mixed_precision_optimizer_extra_bytes("mixed_fp16") == 24
    assert step_time.mixed_precision_optimizer_extra_bytes("mixed_bf16") == 16
    assert step_time.mixed_precision_optimizer_extra_bytes("mixed_bf16_fp32_grads") == 8
    assert step_time.mixed_precision_optimizer_extra_bytes("pure_bf16") == 4


def test_the_optimizer_passes_follow_the_recipe_the_stack_launches() -> None:
    """Megatron-LM launched with ``--bf16`` keeps fp32 main gradients (the stack profile's
    precision_as_launched): mixed_bf16 there steps as mixed_bf16_fp32_grads, 8 extra bytes
    per parameter (no gradient copy), not the 16 of the recipe as named; on the hf stack the
    recipe runs as named."""
    megatron = par.step_inputs_of(LLAMA_8B, _inputs(precision="mixed_bf16", stack="megatron"))
    hf = par.step_inputs_of(LLAMA_8B, _inputs(precision="mixed_bf16", stack="hf"))
    assert megatron.optimizer_extra_bytes_per_param == 8
    assert hf.optimizer_extra_bytes_per_param == 16
