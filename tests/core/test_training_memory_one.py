"""The one-layout training memory (core/sections/training_memory_one.py, Python floats) gives
the array function's values exactly (core/sections/training_memory.py), and the lean
activation pricings the memory terms use give the ledger's: random scenarios (dense, MoE,
MLA and recurrent models, LoRA and QLoRA, every stack, profile, precision recipe and
optimizer, every recomputation policy with partial full recomputation and checkpoint
placements, ZeRO offload of the optimizer and the parameters to CPU or NVMe, CPU
activation offload, a head kept gathered under FSDP) at random layouts (tp, pp, cp, ep,
ZeRO stage and shard group, micro-batch, sequence parallelism, micro-batches in flight)."""

from __future__ import annotations

import random
import typing
from typing import Any

import numpy as np
import pydantic

from llm_planner.core.inputs import training as training_inputs
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.core.quantities.activation_profiles import PROFILES
from llm_planner.core.quantities.activation_tensors import tensor_bytes
from llm_planner.core.quantities.activations import (
    layer_activations,
    layer_kept_bytes,
    layer_saved_tensors,
    outside_layer_bytes,
    outside_stage_bytes,
)
from llm_planner.core.quantities.optimizers import OPTIMIZERS, PRECISIONS
from llm_planner.core.sections.training import TrainingInputs
from llm_planner.core.sections.training_memory import (
    RECOMPUTE_POLICIES,
    memory_terms,
    training_memory_arrays,
)
from llm_planner.core.sections.training_memory_one import training_memory_one

MODELS = sorted(model_presets())
STACKS = list(typing.get_args(training_inputs.Stack))
METHODS = list(typing.get_args(training_inputs.RecomputeMethod))
PLACEMENTS = list(typing.get_args(training_inputs.CheckpointPlacement))


def _inputs(rng: random.Random) -> TrainingInputs | None:
    """Random training inputs; None where the inputs refuse the combination."""
    lora = rng.random() < 0.3
    qlora = lora and rng.random() < 0.5
    fields: dict[str, Any] = {
        "stack": rng.choice(STACKS),
        "precision": rng.choice(list(PRECISIONS)),
        "optimizer": rng.choice(list(OPTIMIZERS)),
        "seq_len": rng.choice([512, 2048, 4096, 8192]),
        "micro_batch": rng.choice([1, 2, 3, 8]),
        "recompute": rng.choice(RECOMPUTE_POLICIES),
        "recompute_threshold_bytes": rng.choice([None, 1e6, 3e7, 2e8]),
        "recompute_method": rng.choice(METHODS),
        "recompute_layers": rng.choice([None, 1, 2, 3, 5]),
        "recompute_modules": rng.choice(
            [("core_attn",), ("core_attn", "mlp"), ("moe", "layernorm"), ("mla_up_proj",)]
        ),
        "recompute_checkpoint": rng.choice(PLACEMENTS),
        "flash_attention": rng.random() < 0.7,
        "implementation": rng.choice(list(PROFILES)),
        "lora_rank": rng.choice([8, 64]) if lora else None,
        "qlora": qlora,
        "dropout": rng.random() < 0.5,
        "fragmentation_fraction": rng.choice([0.0, 0.07, 0.2]),
        "offload_optimizer": rng.choice(["none", "none", "cpu", "nvme"]),
        "offload_params": rng.choice(["none", "none", "cpu", "nvme"]),
        "activation_offload_layers": rng.choice([0, 0, 1, 3]),
        "low_precision_params": rng.random() < 0.2,
        "grad_reduce_16bit": rng.random() < 0.2,
        "mtp_layers": rng.choice([0, 0, 1, 2]),
    }
    if fields["recompute"] == "threshold" and fields["recompute_threshold_bytes"] is None:
        fields["recompute_threshold_bytes"] = 1e7
    try:
        return TrainingInputs(**fields)
    except (pydantic.ValidationError, ValueError):
        return None


def _layout(rng: random.Random, layers: int, moe: bool) -> dict[str, Any]:
    pp = rng.choice([1, 1, 2, 4, 3])
    pp = min(pp, layers)
    flight = rng.choice([1, 2, pp, 2 * pp])
    last = float(rng.choice([1, flight])) if pp > 1 else float(flight)
    return {
        "tp": rng.choice([1, 2, 4, 8]),
        "pp": pp,
        "shard": float(rng.choice([1, 2, 8, 64, 6])),
        "ep": rng.choice([1, 2, 4, 8]) if moe else 1,
        "zero": rng.choice([0, 1, 2, 3]),
        "micro_batch": rng.choice([1, 2, 3, 4, 16]),
        "sp": rng.random() < 0.5,
        "first_in_flight": float(flight),
        "last_in_flight": last,
        # interleaved: the loss-side tensors of one micro-batch (1), else the stage's count
        "loss_in_flight": rng.choice([1.0, last]),
        "cp": rng.choice([1, 1, 2, 4]),
    }


def _check(terms: Any, layouts: list[dict[str, Any]], detail: bool, where: str) -> None:
    """Each layout's floats equal the array function's at that layout alone, among the
    others, and among them 17 times over (68 layouts: past the few-layouts shortcuts of the
    array path)."""
    ones = [training_memory_one(terms, detail=detail, **lay) for lay in layouts]
    few, together = (
        training_memory_arrays(
            terms,
            detail=detail,
            **{k: np.array([lay[k] for lay in layouts] * times) for k in layouts[0]},
        )
        for times in (1, 17)
    )
    for i, (lay, one) in enumerate(zip(layouts, ones, strict=True)):
        alone = training_memory_arrays(terms, detail=detail, **lay)
        assert set(one) == set(alone) == set(together), where
        for key, value in one.items():
            assert type(value) is float, (where, lay, key)
            assert value == float(alone[key][0]), (where, lay, key, value, alone[key][0])
            assert value == float(few[key][i]), (where, lay, key)
            assert value == float(together[key][i]), (where, lay, key)
            assert value == float(together[key][i + 4 * 16]), (where, lay, key)


def test_one_layout_equals_the_array_function_over_random_scenarios() -> None:
    rng = random.Random(20261201)
    compared = 0
    policies: set[int] = set()
    partial = experts = offloaded = activations_offloaded = gathered_heads = 0
    while compared < 400:
        model = rng.choice(MODELS)
        arch = get_preset(model).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        params = rng.choice([None, 1e9, 7.5e9]) or float(count_parameters(arch).total)
        terms = memory_terms(arch, ti, params)
        code = RECOMPUTE_POLICIES.index(ti.recompute)
        layouts = [_layout(rng, arch.layers, arch.moe is not None) for _ in range(4)]
        for lay in layouts:
            lay["recompute"] = code if rng.random() < 0.8 else rng.randrange(3)
        _check(terms, layouts, detail=rng.random() < 0.5, where=f"{model} {ti!r}")
        for lay in layouts:
            policies.add(lay["recompute"])
            partial += lay["recompute"] == 2 and ti.recompute_layers not in (None, 1)
            experts += lay["ep"] > 1
            offloaded += terms.offload is not None and lay["zero"] >= 1
            activations_offloaded += terms.activation_offload_layers > 0
            gathered_heads += terms.gathered_head is not None and lay["zero"] == 3
        compared += len(layouts)
    assert policies == {0, 1, 2, 3}
    assert partial > 10  # full recompute covering stages partly
    assert experts > 10  # expert parallelism
    assert offloaded > 10  # ZeRO offload of the optimizer or the parameters
    assert activations_offloaded > 10  # CPU activation offload
    assert gathered_heads > 10  # torchtitan's head kept gathered under FSDP (ZeRO-3)


def test_lean_pricings_equal_the_ledger() -> None:
    """:func:`layer_kept_bytes` is :func:`layer_activations`' kept bytes and working set;
    :func:`layer_saved_tensors` its ledger's lines without recompute; :func:`outside_stage_
    bytes` is :func:`outside_layer_bytes` of each kind of stage."""
    rng = random.Random(7)
    for _ in range(300):
        arch = get_preset(rng.choice(MODELS)).architecture
        tp, sp = rng.choice([1, 2, 4]), rng.random() < 0.5
        options: dict[str, Any] = {
            "tp": tp,
            "sequence_parallel": sp,
            "profile": rng.choice(list(PROFILES)),
            "dropout": rng.random() < 0.5,
            "activation_dtype": rng.choice(["bf16", "fp32", "fp8"]),
            "recompute": rng.choice(["none", "selective", "full", "threshold"]),
            "flash": rng.random() < 0.5,
        }
        layer = {
            **options,
            "threshold_bytes": rng.choice([None, 1e6, 1e8]),
            "moe_layer": arch.moe is not None and rng.random() < 0.8,
            "lora_rank": rng.choice([None, 16]),
            "recompute_modules": rng.choice([("core_attn",), ("core_attn", "mlp", "moe")]),
            "checkpoint_placement": rng.choice(PLACEMENTS),
        }
        b = rng.choice([1, 2, 5])
        la = layer_activations(arch, 2048, b, **layer)
        assert layer_kept_bytes(arch, 2048, b, **layer) == (
            la.kept_bytes,
            la.recompute_working_bytes,
        )
        tensors = layer_saved_tensors(arch, 2048, b, **{**layer, "recompute": "none"})
        ledger = layer_activations(arch, 2048, b, **{**layer, "recompute": "none"}).ledger
        assert [(t.name, t.block, t.shard, t.attention_core) for t in tensors] == [
            (e.name, e.block, e.shard, e.attention_core) for e in ledger
        ]
        assert [float(tensor_bytes(t, tp, sp)) for t in tensors] == [e.bytes for e in ledger]
        lora = layer["lora_rank"] is not None
        bs = np.array([b, 2 * b])
        stages = outside_stage_bytes(arch, 2048, bs, lora=lora, **options)
        kinds = [(True, False), (False, True), (True, True)]
        for at, (first, last) in zip(stages, kinds, strict=True):
            alone = outside_layer_bytes(
                arch, 2048, bs, first_stage=first, last_stage=last, lora=lora, **options
            )
            assert [float(x) for x in at] == [float(x) for x in alone]


def test_screen_peaks_are_the_memory_screens() -> None:
    """The fewest-GPUs search's peaks (:func:`.parallelism.screen_peaks`: a few layouts one
    by one in floats) are the memory screen's, for enumerated layouts of random scenarios."""
    from llm_planner.core.composition.scenario import default_scenario
    from llm_planner.core.composition.search_engine import _Problem
    from llm_planner.core.composition.search_layouts import SearchOptions, enumerate_layouts
    from llm_planner.core.primitives.gpus import get_gpu
    from llm_planner.core.sections import parallelism as par

    rng = random.Random(12)
    base = default_scenario()
    screened = 0
    while screened < 60:
        arch = get_preset(rng.choice(MODELS)).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        inputs = base.parallelism.model_copy(update={"global_batch": rng.choice([64, 1024])})
        problem = _Problem(arch, get_gpu("h100-sxm"), inputs, ti, params_override=None)
        n = rng.choice([1, 2, 4, 8, 16, 64])
        options = SearchOptions(micro_batches=(1, 2), interleave=(1, 2), max_tp=8)
        lay = enumerate_layouts(arch, n, max(n, inputs.global_batch), options)
        if not len(lay):
            continue
        pick = np.array(sorted(rng.sample(range(len(lay)), min(len(lay), rng.randint(1, 12)))))
        few = lay.take(pick)
        m = par.microbatches_per_step(max(n, inputs.global_batch), few)
        expected = par.memory_screen(None, few, problem.memory, m=m)["peak_bytes"]
        assert par.screen_peaks(few, problem.memory, m=m).tolist() == expected.tolist()
        screened += 1
