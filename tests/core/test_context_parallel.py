"""Context parallelism (issue 27 step 2): a layout degree cp, dp = N/(tp·pp·cp), activations
÷ cp, and the K/V ring of Megatron-Core's p2p context parallelism priced on the link the cp
group spans, hidden behind attention where it can be.

Sources: NVIDIA/Megatron-LM@d98e8a64 docs/user-guide/features/context_parallel.md ("The
total GPU count is TP × CP × PP × DP"; "The activation memory footprint per GPU is also
smaller by the CP degree"; K/V all-gathered forward and again backward, their gradients
reduce-scattered, as ring P2P) and megatron/core/transformer/transformer_config.py lines
1030-1044 ("P2P is async and can be overlapped with attention compute").
"""

from __future__ import annotations

import json

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario, layout_refusal
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset


def _llama8b(num_gpus: int, seq_len: int = 8192, **parallel: object) -> Scenario:
    """Llama 3.1 8B (32 layers, 8 K/V heads of 128: Meta's config.json) on B200s, BF16,
    micro-batch 1, no recomputation, Megatron."""
    sc = default_scenario()
    return sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={
                    "preset_id": "llama-3.1-8b",
                    "architecture": get_preset("llama-3.1-8b").architecture,
                }
            ),
            "gpu": get_gpu("b200"),
            "num_gpus": num_gpus,
            "training": sc.training.model_copy(
                update={
                    "seq_len": seq_len,
                    "micro_batch": 1,
                    "recompute": "none",
                    "stack": "megatron",
                }
            ),
            "parallelism": sc.parallelism.model_validate(
                {**sc.parallelism.model_dump(), **parallel}
            ),
        }
    )


def test_cli_takes_cp_and_dp_follows() -> None:
    """16 GPUs at tp 2 · cp 4 · pp 1 ⇒ dp = 16 / 8 = 2."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "report",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "b200",
                "--num-gpus",
                "16",
                "--tp",
                "2",
                "--cp",
                "4",
                "--global-batch",
                "16",
                "--json",
            ]
        )
    assert code == 0
    par = json.loads(out.getvalue())["parallelism"]
    assert (par["tp"], par["cp"], par["pp"], par["dp"], par["gpus"]) == (2, 4, 1, 2, 16)


def test_gpus_not_a_multiple_of_tp_cp_pp_are_refused() -> None:
    """12 GPUs cannot hold tp 2 · cp 4 = 8 GPUs per replica."""
    reason = layout_refusal(_llama8b(12, tp=2, cp=4))
    assert reason is not None
    assert "tp·cp·pp" in reason


def test_activations_divide_by_cp() -> None:
    """Each GPU holds s/cp of every sequence: activations ÷ 2 at cp 2; the weights, replicated
    over the cp group, stay (the same 2 GPUs: dp 2 at cp 1, dp 1 at cp 2)."""
    one = estimate(_llama8b(2, global_batch=2), suggest=False).training
    two = estimate(_llama8b(2, cp=2, global_batch=2), suggest=False).training
    assert two.activations_bytes == pytest.approx(one.activations_bytes / 2, rel=1e-9)
    assert two.weights_bytes == pytest.approx(one.weights_bytes, rel=1e-12)


def test_ring_bytes_by_hand() -> None:
    """Llama 3.1 8B, s 8192, b 1, cp 2, tp 1, one micro-batch: per layer each GPU sends its
    4,096 tokens' K and V (2 · 8 heads · 128 = 2,048 elements, 2 bytes each) cp − 1 = 1 time
    forward, and K/V plus their gradients backward: 3 · 1 · 4096 · 2048 · 2 bytes × 32
    layers = 1,610,612,736 bytes."""
    par = estimate(_llama8b(2, cp=2, global_batch=1), suggest=False).parallelism
    assert par.comm_bytes_breakdown["context_parallel"] == pytest.approx(3 * 32 * 4096 * 2048 * 2)
    assert par.links["context_parallel"] == "intra-node"


def test_ring_hides_behind_attention_on_nvlink_but_not_on_a_slow_network() -> None:
    """On NVLink (900 GB/s) the 1.61 GB take ~2 ms, under the attention of 4,096 tokens at
    s 8192 (≈ 12 · s · 4096 FLOP per token per layer forward and backward, halved for the
    causal mask: ≈ 2.6e13 FLOP, ≈ 20 ms on a B200): nothing exposed. One GPU per node on a
    1 GB/s network: ≥ 1.61e9 / 1e9 − 0.02 ≈ 1.6 s exposed (the ring's time less the
    attention's)."""
    fast = estimate(_llama8b(2, cp=2, global_batch=1), suggest=False).parallelism
    assert fast.time_breakdown_seconds["context_parallel"] == 0.0
    slow = estimate(
        _llama8b(
            2,
            cp=2,
            global_batch=1,
            gpus_per_node=1,
            inter_node_bandwidth_bytes_per_s=1e9,
        ),
        suggest=False,
    ).parallelism
    assert slow.links["context_parallel"] == "inter-node"
    assert slow.time_breakdown_seconds["context_parallel"] > 1.5


def test_cp_one_changes_nothing() -> None:
    """cp 1 is the layout without context parallelism: the same step as before the field."""
    base = estimate(_llama8b(8, global_batch=8), suggest=False).parallelism
    explicit = estimate(_llama8b(8, cp=1, global_batch=8), suggest=False).parallelism
    assert explicit.step_seconds == base.step_seconds
    assert base.comm_bytes_breakdown["context_parallel"] == 0.0


def test_search_tries_cp_on_long_sequences_and_its_rows_apply() -> None:
    """At s = 32,768 (≥ LONG_CONTEXT_TOKENS) the search enumerates cp 2, 4 and 8 as well, each
    layout's degrees multiplying to the GPUs (tp·cp·pp·dp = 16) and 2·cp dividing s; at
    s = 4,096 only cp 1. A row with cp > 1 applies to the scenario as is (dp from the count)."""
    from llm_planner.core.composition import search as srch

    arch = get_preset("llama-3.1-8b").architecture
    opts = srch.SearchOptions()
    long = srch.enumerate_layouts(arch, 16, 16, opts, seq_len=32768)
    assert set(long.cp.tolist()) == {1, 2, 4, 8}
    assert (long.tp * long.cp * long.pp * long.dp == 16).all()
    short = srch.enumerate_layouts(arch, 16, 16, opts, seq_len=4096)
    assert set(short.cp.tolist()) == {1}

    sc = _llama8b(16, seq_len=32768, global_batch=16)
    result = srch.search_scenario(sc, top=200)
    rows = [r for r in result.rows if r.cp > 1]
    assert rows, "no context-parallel layout ranked"
    applied = srch.apply_row(sc, rows[0])
    assert applied.parallelism.cp == rows[0].cp
    assert applied.parallelism.dp is None
    par = estimate(applied, suggest=False).parallelism
    assert (par.tp, par.cp, par.pp, par.dp) == (rows[0].tp, rows[0].cp, rows[0].pp, rows[0].dp)


def test_distributed_optimizer_shards_over_dp_and_cp() -> None:
    """Megatron-Core shards its distributed optimizer (ZeRO-1) over the data-and-context-
    parallel group (megatron/core/distributed/param_and_grad_buffer.py at d98e8a64): on 2
    GPUs the optimizer state per GPU is the same at cp 2 · dp 1 as at dp 2 (half of one
    GPU's), while the activations halve."""
    dp2 = estimate(_llama8b(2, zero_stage=1, global_batch=2), suggest=False).training
    cp2 = estimate(_llama8b(2, cp=2, zero_stage=1, global_batch=2), suggest=False).training
    one = estimate(_llama8b(1, zero_stage=1, global_batch=2), suggest=False).training
    assert cp2.optimizer_bytes == pytest.approx(dp2.optimizer_bytes, rel=1e-12)
    assert cp2.optimizer_bytes == pytest.approx(one.optimizer_bytes / 2, rel=1e-12)
