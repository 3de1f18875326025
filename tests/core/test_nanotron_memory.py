"""What nanotron allocates (issue 14, memory on the nanotron sweep): its cost-balanced
pipeline split, the activation profile of its Llama modules, and the figure its benchmark
row logs (world rank 0's torch.cuda.max_memory_*). Hand computations from
huggingface/nanotron@2411b022, cited in core/quantities/stacks.py and activations.py."""

from __future__ import annotations

import pytest
from layout_helpers import one_layout

from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.quantities.activations import layer_activations
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.training import (
    TrainingInputs,
    estimate_training,
    pipeline_stage_layers,
)

H100 = get_gpu("h100-sxm")
# the sweep's pb-1B (tests/validation/nanotron-sweep-1b-3b.json, nanotron scaling_benchmarks.py)
PB_1B = Architecture(
    name="pb-1B",
    layers=16,
    hidden_size=2048,
    heads=32,
    kv_heads=32,
    head_dim=64,
    ffn_size=8192,
    vocab_size=131072,
    max_context=4096,
    tied_embeddings=True,
)
NANOTRON = TrainingInputs(stack="nanotron", seq_len=4096, recompute="none")


def _layout(**kw: object) -> par.Layouts:
    return one_layout(**{"dp": 8, **kw})


def test_nanotron_splits_stages_at_cumulative_cost() -> None:
    """A pb-1B layer costs 4·h² + 3·f·h = 67,108,864, the head V·h = 268,435,456 = exactly 4
    layers: 20 units in all. pp = 4 cuts at 5, 10, 15: the block that passes a threshold
    stays, so stage 0 holds layers 1-6, stage 1 layers 7-11, stage 2 layers 12-16 and the
    last stage the head alone. pp = 2 (cut at 10): 11 layers, then 5 and the head."""
    assert 4 * 2048**2 + 3 * 8192 * 2048 == 67_108_864
    assert 131072 * 2048 == 4 * 67_108_864
    assert pipeline_stage_layers(PB_1B, NANOTRON, 4) == (6, 0)
    assert pipeline_stage_layers(PB_1B, NANOTRON, 2) == (11, 5)
    assert pipeline_stage_layers(PB_1B, NANOTRON, 1) == (16, 16)
    # Megatron-LM splits layers evenly (⌈L/p⌉) and adds the head to the last stage
    assert pipeline_stage_layers(PB_1B, TrainingInputs(seq_len=4096), 4) == (4, 4)


def test_nanotron_first_stage_holds_its_layers() -> None:
    """The estimator prices stage 0 with its 6 layers (of 16, pp = 4) and 4 micro-batches
    in flight (1F1B): 6/16 of the layer state and 6 layers of activations per micro-batch."""
    rep = estimate_training(PB_1B, NANOTRON, H100, tp=1, pp=4, dp=8)
    assert rep.stage == "first"
    assert rep.layers_on_stage == 6
    assert rep.microbatches_in_flight == 4
    assert rep.activations_bytes >= 6 * 4 * rep.activations_per_layer_bytes


def test_nanotron_activation_profile_by_hand() -> None:
    """One pb-1B layer under nanotron's modules, s = 4096, b = 1, bf16, tp = 1: each
    TritonRMSNorm saves its input (2·s·h) and fp32 rstd (4·s); the column linears their
    input (2·s·h each); multi-head q, k, v are one permuted copy that q views (6·s·h) and
    k, v a second concatenated copy (4·s·h); flash-attn saves the output (2·s·h, o_proj's
    input is a view of it) and an fp32 log-sum-exp (4·a·s); GLUActivation saves gate‖up
    (4·s·f), SiLU(gate) (2·s·f) and down_proj's input (2·s·f). 20·s·h + 8·s·f + 8·s + 4·a·s."""
    s, h, f, a = 4096, 2048, 8192, 32
    by_hand = 20 * s * h + 8 * s * f + 2 * 4 * s + 4 * a * s
    ledger = layer_activations(
        PB_1B, s, 1, flash=True, profile="nanotron", dropout=False, recompute="none"
    )
    assert ledger.kept_bytes == by_hand
    assert get_stack("nanotron").implementation == "nanotron"
    assert TrainingInputs(stack="nanotron").implementation == "nanotron"


def test_logged_figure_is_rank_zero_reserved_memory() -> None:
    """nanotron's benchmark row holds world rank 0's torch.cuda.max_memory_* (the first
    pipeline stage): the screen's logged figure is the first stage's, and reserved memory
    is allocated plus the fragmentation allowance, without the CUDA context (outside the
    caching allocator). Megatron's memory report is the fullest GPU's."""
    params = float(count_parameters(PB_1B).total)
    work = par.workload_of(PB_1B, 4096, 256, params, training_inputs=NANOTRON)
    recipe = par.memory_terms(PB_1B, NANOTRON, params)
    cluster = par.cluster_of(H100, par.ParallelInputs(gpus_per_node=8))
    one = par.evaluate_layouts(work, cluster, _layout(micro_batch=2), recipe)
    frag, context = NANOTRON.fragmentation_fraction, NANOTRON.cuda_context_bytes
    assert one["reserved_bytes"][0] == pytest.approx(one["allocated_bytes"][0] * (1 + frag))
    assert one["peak_bytes"][0] == pytest.approx(one["reserved_bytes"][0] + context)
    assert one["logged_reserved_bytes"][0] == pytest.approx(one["reserved_bytes"][0])
    # pp = 2 with 2 micro-batches of 4: the first stage (11 layers, 2 in flight) is fullest
    two = par.evaluate_layouts(work, cluster, _layout(pp=2, micro_batch=4), recipe)
    exact = estimate_training(
        PB_1B, NANOTRON.model_copy(update={"micro_batch": 4}), H100, pp=2, dp=8
    )
    assert exact.stage == "first"
    assert two["peak_bytes"][0] == pytest.approx(exact.peak_bytes, rel=1e-6)
    assert two["logged_reserved_bytes"][0] == pytest.approx(exact.peak_bytes - context)
    # one micro-batch of 8 (batch 64 over dp 8): the last stage (5 layers, the head and the
    # 8·s·V fp32 logits) is fuller than the first (11 layers, 1 in flight): the fit check
    # takes the last, the log shows the first
    work_1 = par.workload_of(PB_1B, 4096, 64, params, training_inputs=NANOTRON)
    last = par.evaluate_layouts(work_1, cluster, _layout(pp=2, micro_batch=8), recipe)
    assert last["logged_reserved_bytes"][0] < 0.95 * last["reserved_bytes"][0]
    megatron = TrainingInputs(seq_len=4096, recompute="none")
    recipe_m = par.memory_terms(PB_1B, megatron, params)
    work_m = par.workload_of(PB_1B, 4096, 256, params, training_inputs=megatron)
    out = par.evaluate_layouts(work_m, cluster, _layout(pp=2, micro_batch=4), recipe_m)
    assert out["logged_reserved_bytes"][0] == pytest.approx(out["reserved_bytes"][0])
