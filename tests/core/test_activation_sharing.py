"""The activation pricings that one estimate repeats under several (tp, sequence parallel,
policy) share the tensors that do not depend on them (issue 26's speed work): a layer's
saved tensors across the tp degrees up to the kv heads, the tensors outside the layers
across tp, sequence parallelism and every policy but full recomputation without flash
attention. Shared or not, every figure must be the one priced alone: each value below is
priced once after every kept value is forgotten, then again with the pricings of all the
other settings kept, and the two must be equal (a tensor list shared where it differs, e.g.
kv heads replicated at tp > kv heads, or the causal mask held only under full
recomputation, gives a different value here)."""

from __future__ import annotations

import itertools

from llm_planner.core.primitives.kept import forget_all
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import layer_kept_bytes, outside_stage_bytes

# GQA with 8 kv heads (tp 16 replicates them), MHA, few kv heads, MoE, MLA, recurrent
MODELS = ["llama-3.1-8b", "gpt-3-175b", "falcon-40b", "mixtral-8x7b", "deepseek-v3", "jamba-v0.1"]
TPS = [1, 2, 4, 8, 16, 32]


def _layer(model: str, tp: int, sp: bool, recompute: str, profile: str) -> tuple[float, float]:
    arch = get_preset(model).architecture
    return layer_kept_bytes(
        arch,
        4096,
        1,
        tp=tp,
        sequence_parallel=sp,
        recompute=recompute,  # type: ignore[arg-type]
        profile=profile,
        flash=True,
    )


def test_layer_tensors_shared_across_tp_give_each_tp_its_own_value() -> None:
    settings = list(
        itertools.product(
            MODELS, TPS, [False, True], ["none", "selective", "full"], ["megatron", "pytorch"]
        )
    )
    alone = {}
    for setting in settings:
        forget_all()
        alone[setting] = _layer(*setting)
    forget_all()
    for setting in settings:  # tp = 1 first for each model: its tensors kept for the rest
        assert _layer(*setting) == alone[setting], setting
    # kv heads replicate above their count: a different value, not the shared one
    arch = get_preset("llama-3.1-8b").architecture
    assert arch.kv_heads == 8
    per_tp = {tp: alone["llama-3.1-8b", tp, True, "none", "megatron"][0] * tp for tp in TPS}
    assert per_tp[2] == per_tp[8] != per_tp[16]


def _outside(setting: tuple[str, int, bool, str, bool, str]) -> object:
    model, tp, sp, recompute, flash, profile = setting
    arch = get_preset(model).architecture
    return outside_stage_bytes(
        arch,
        2048,
        2,
        tp=tp,
        sequence_parallel=sp,
        recompute=recompute,  # type: ignore[arg-type]
        flash=flash,
        profile=profile,
    )


def test_outside_tensors_shared_across_settings_give_each_setting_its_own_value() -> None:
    settings = list(
        itertools.product(
            ["llama-3.1-8b", "gemma-2-27b", "gpt-3-175b"],
            [1, 4],
            [False, True],
            ["none", "selective", "full", "threshold"],
            [True, False],
            ["megatron", "pytorch"],
        )
    )
    alone = {}
    for setting in settings:
        forget_all()
        alone[setting] = _outside(setting)
    forget_all()
    for setting in settings:
        assert _outside(setting) == alone[setting], setting
    # the held causal mask: full recomputation without flash under HF's modules only
    differs = {s[3] for s in settings if alone[s] != alone[(*s[:3], "none", *s[4:])]}
    assert differs == {"full"}
