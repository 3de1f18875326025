"""The fewest-GPUs search screens a few layouts one by one, each count up to its first
layout that fits, pricing layouts whose ZeRO stage cannot matter once
(:func:`.parallelism.some_peak_fits`). It must answer exactly as the search it replaced,
which screened every layout of each group in one call: that search is kept here as the
reference and both run over random scenarios (dense, MoE, MLA, recurrent models; GPUs
small and large; LoRA/QLoRA, offload, precisions, recompute, fragmentation)."""

from __future__ import annotations

import random
import typing
from typing import Any

import numpy as np
import pydantic
import pytest

from llm_planner.core.composition import search_deployment
from llm_planner.core.composition.search_deployment import (
    FRUGAL_OPTIONS,
    min_gpus_per_instance,
)
from llm_planner.core.composition.search_engine import _Problem
from llm_planner.core.composition.search_layouts import SearchOptions, enumerate_layouts
from llm_planner.core.inputs import training as training_inputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.gpus import gpu_catalog
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.core.quantities.optimizers import OPTIMIZERS, PRECISIONS
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.training_memory import RECOMPUTE_POLICIES

MODELS = sorted(model_presets())
GPUS = sorted(gpu_catalog())
STACKS = list(typing.get_args(training_inputs.Stack))


def _reference_first_that_fits(
    problem: _Problem, counts: list[tuple[int, int]], options: SearchOptions
) -> int | None:
    """The search before the one-by-one screen (as it stood at fdb2a63), unchanged: each
    group's layouts screened in one call, every layout priced."""
    if options.max_tp is None:
        options = options.model_copy(update={"max_tp": problem.gpus_per_node})
    pieces: list[tuple[int, int, par.Layouts]] = []
    for i, (n, batch) in enumerate(counts):
        lay = enumerate_layouts(problem.arch, n, batch, options)
        plain = lay.tp == 1
        split = [lay.take(plain), lay.take(~plain)] if 0 < plain.sum() < len(lay) else [lay]
        pieces += [(n, batch, part) for part in split if len(part)]
        if i == 0 and pieces and _reference_fitting_count(problem, pieces[:1]) is not None:
            return n
    start = 1 if pieces and pieces[0][0] == counts[0][0] else 0
    for group in [pieces[i : i + 2] for i in range(start, len(pieces), 2)]:
        found = _reference_fitting_count(problem, group)
        if found is not None:
            return found
    return None


def _reference_fitting_count(
    problem: _Problem, group: list[tuple[int, int, par.Layouts]]
) -> int | None:
    lay = (
        group[0][2]
        if len(group) == 1
        else par.Layouts(
            **{
                name: np.concatenate([getattr(p, name) for *_, p in group])
                for name in par.LAYOUT_FIELDS
            }
        )
    )
    m = np.concatenate([par.microbatches_per_step(batch, part) for _, batch, part in group])
    fits = par.screen_peaks(lay, problem.memory, m=m) <= problem.cluster.memory_bytes
    offset = 0
    for n, _, part in group:
        if np.any(fits[offset : offset + len(part)]):
            return n
        offset += len(part)
    return None


def _inputs(rng: random.Random) -> TrainingInputs | None:
    """Random training inputs; None where the inputs refuse the combination."""
    lora = rng.random() < 0.3
    fields: dict[str, Any] = {
        "stack": rng.choice(STACKS),
        "precision": rng.choice(list(PRECISIONS)),
        "optimizer": rng.choice(list(OPTIMIZERS)),
        "seq_len": rng.choice([512, 2048, 4096, 8192, 32768]),
        "recompute": rng.choice(RECOMPUTE_POLICIES),
        "flash_attention": rng.random() < 0.7,
        "lora_rank": rng.choice([8, 64]) if lora else None,
        "qlora": lora and rng.random() < 0.5,
        "fragmentation_fraction": rng.choice([0.0, 0.05, 0.2]),
        "offload_optimizer": rng.choice(["none", "none", "cpu", "nvme"]),
        "offload_params": rng.choice(["none", "none", "none", "cpu"]),
        "activation_offload_layers": rng.choice([0, 0, 0, 2]),
        "cuda_context_bytes": rng.choice([0.0, 1e9, 3e9]),
    }
    if fields["recompute"] == "threshold":
        fields["recompute_threshold_bytes"] = 1e7
    try:
        return TrainingInputs(**fields)
    except (pydantic.ValidationError, ValueError):
        return None


def test_fewest_gpus_answers_as_the_search_it_replaced() -> None:
    from llm_planner.core.composition.scenario import default_scenario

    rng = random.Random(20261201)
    base = default_scenario()
    compared = found = 0
    while compared < 160:
        arch = get_preset(rng.choice(MODELS)).architecture
        gpu = gpu_catalog()[rng.choice(GPUS)]
        ti = _inputs(rng)
        if ti is None:
            continue
        inputs = base.parallelism.model_copy(
            update={"global_batch": rng.choice([1, 8, 64, 1024]), "gpus_per_node": 8}
        )
        max_gpus = rng.choice([8, 64, 1 << 12])
        got = min_gpus_per_instance(arch, gpu, inputs, ti, max_gpus=max_gpus)
        # the reference, driven as min_gpus_per_instance drives the search
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(search_deployment, "_first_that_fits", _reference_first_that_fits)
            want = min_gpus_per_instance(arch, gpu, inputs, ti, max_gpus=max_gpus)
        assert got == want, (arch.name, gpu.name, ti, inputs.global_batch, max_gpus)
        compared += 1
        found += got is not None
    assert 40 < found < compared  # both answers occur: counts found and nothing fitting


def test_some_peak_fits_is_any_screened_peak_at_most_the_capacity() -> None:
    """At capacities on and beside each layout's own peak (where one layout priced for
    another would tell), :func:`.parallelism.some_peak_fits` is whether any of
    :func:`.parallelism.screen_peaks`' values fits."""
    from llm_planner.core.composition.scenario import default_scenario

    rng = random.Random(26)
    base = default_scenario()
    checked = 0
    while checked < 80:
        arch = get_preset(rng.choice(MODELS)).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        gpu = gpu_catalog()[rng.choice(GPUS)]
        problem = _Problem(arch, gpu, base.parallelism, ti, params_override=None)
        n = rng.choice([1, 2, 4, 8, 16])
        options = FRUGAL_OPTIONS.model_copy(update={"max_tp": 8})
        lay = enumerate_layouts(arch, n, max(n, 64), options)
        if not len(lay) or len(lay) > par.FIRST_FIT_UP_TO:
            continue
        m = par.microbatches_per_step(max(n, 64), lay)
        peaks = par.screen_peaks(lay, problem.memory, m=m)
        for peak in peaks.tolist():
            for capacity in (peak, np.nextafter(peak, 0.0), peak * 0.999):
                want = bool(np.any(peaks <= capacity))
                got = par.some_peak_fits(lay, problem.memory, m=m, capacity=capacity)
                assert got == want, (arch.name, ti, n, capacity)
        checked += 1


def test_layouts_of_one_memory_key_have_one_peak() -> None:
    """Layouts :func:`.parallelism.memory.memory_key` prices once have the very same memory
    screen peak (the array function's), over random scenarios, offload and the stacks that
    keep the head gathered among them, and every enumerated layout."""
    from llm_planner.core.composition.scenario import default_scenario
    from llm_planner.core.sections.parallelism.memory import _one_by_one, memory_key

    rng = random.Random(2026)
    base = default_scenario()
    merged = scenarios = 0
    while scenarios < 60:
        arch = get_preset(rng.choice(MODELS)).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        problem = _Problem(
            arch, gpu_catalog()["h100-sxm"], base.parallelism, ti, params_override=None
        )
        n = rng.choice([1, 2, 4, 8, 16])
        options = SearchOptions(micro_batches=(1, 2), interleave=(1, 2), max_tp=8)
        lay = enumerate_layouts(arch, n, max(n, 64), options)
        if not len(lay):
            continue
        m = par.microbatches_per_step(max(n, 64), lay)
        peaks = par.memory_screen(None, lay, problem.memory, m=m)["peak_bytes"].tolist()
        first: dict[tuple[Any, ...], float] = {}
        for args, peak in zip(_one_by_one(lay, m), peaks, strict=True):
            key = memory_key(problem.memory, args)
            merged += key in first
            assert first.setdefault(key, peak) == peak, (arch.name, ti, args)
        scenarios += 1
    assert merged > 100  # the key does merge layouts


def _sp_twins(lay: par.Layouts, m: Any) -> list[tuple[int, int]]:
    """(index with SP off, index of its twin with SP on) of every such pair of ``lay``: every
    other argument of the one-layout screen equal, the micro-batches in flight included."""
    from llm_planner.core.sections.parallelism.memory import _one_by_one

    args = _one_by_one(lay, m)
    on = {(*a[:7], *a[8:]): i for i, a in enumerate(args) if a[7]}
    return [
        (i, on[(*a[:7], *a[8:])]) for i, a in enumerate(args) if not a[7] and (*a[:7], *a[8:]) in on
    ]


def test_sequence_parallelism_never_raises_the_screened_peak_where_the_terms_say_so() -> None:
    """Where ``MemoryTerms.sequence_parallel_never_raises`` holds, every enumerated layout
    with sequence parallelism on has a screened peak (the array function's) at most its
    twin's with it off, over random scenarios (every stack, recompute policy, LoRA,
    offload, MoE, MLA, recurrent models), so the screen may leave the twin out; and the
    terms say so wherever the profile is not torchtitan's op-level SAC."""
    from llm_planner.core.composition.scenario import default_scenario

    rng = random.Random(4)
    base = default_scenario()
    pairs = scenarios = 0
    while scenarios < 60:
        arch = get_preset(rng.choice(MODELS)).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        problem = _Problem(
            arch, gpu_catalog()["h100-sxm"], base.parallelism, ti, params_override=None
        )
        terms = problem.memory
        op_sac = ti.implementation == "torchtitan" and arch.recurrent is None
        assert terms.sequence_parallel_never_raises == (not op_sac), (ti.implementation, arch)
        if not terms.sequence_parallel_never_raises:
            continue
        n = rng.choice([2, 4, 8, 16])
        options = SearchOptions(micro_batches=(1, 2), interleave=(1, 2), max_tp=8)
        lay = enumerate_layouts(arch, n, max(n, 64), options, seq_len=int(ti.seq_len))
        m = par.microbatches_per_step(max(n, 64), lay)
        twins = _sp_twins(lay, m)
        if not twins:
            continue
        peaks = par.memory_screen(None, lay, terms, m=m)["peak_bytes"]
        for off, on in twins:
            if int(lay.recompute[on]) != RECOMPUTE_POLICIES.index("threshold"):
                assert peaks[on] <= peaks[off], (arch.name, ti, off, on)
                pairs += 1
        scenarios += 1
    assert pairs > 200


def test_op_level_sac_keeps_more_with_sequence_parallelism_at_tp_2() -> None:
    """Why the terms exclude torchtitan's op-level SAC: with SP a gated block also keeps
    the two reduce-scatter outputs, s·b·h/tp each, and its input ÷ tp, so at tp = 2 it keeps
    3·s·b·h/2 against s·b·h without SP (the tp-sharded outputs alike): Llama 3.1 8B,
    s = 4096, b = 1, bf16 (2 bytes): 4096·4096·2·(3/2 − 1) = 16 MiB more per layer."""
    arch = get_preset("llama-3.1-8b").architecture
    ti = TrainingInputs(stack="torchtitan", recompute="selective", seq_len=4096)
    terms = par.memory_terms(arch, ti, float(arch_params(arch)))
    assert not terms.sequence_parallel_never_raises
    on = terms.activations(1, 2, True, "selective").kept_per_layer
    off = terms.activations(1, 2, False, "selective").kept_per_layer
    assert on - off == 4096 * 4096 * 2 * 0.5


def arch_params(arch: Any) -> int:
    from llm_planner.core.primitives.architecture import count_parameters

    return count_parameters(arch).total
