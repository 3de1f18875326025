"""Per-GPU training memory of many layouts at once (the search's vectorised screen, a term
by term mirror of the training estimator) and of one layout (the training estimator)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.architecture import count_parameters as _count_parameters
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.quantities.activations import logits_working_bytes
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections.parallelism.layout import (
    RECOMPUTE_CODES,
    Layouts,
    ResolvedLayout,
    resolve_layout,
    training_layout_kwargs,
)
from llm_planner.core.sections.parallelism.schedule import (
    FloatArray,
    training_in_flight,
    training_in_flight_last,
)
from llm_planner.core.sections.parallelism.workload import Workload
from llm_planner.core.sections.training import (
    DDP_BUCKET_BYTES,
    LayerTemporaries,
    StageParams,
    StateBytes,
    TrainingReport,
    estimate_training,
    largest_local_layer,
    layer_activations_for,
    layer_kinds,
    layer_temporaries,
    outside_ledger_for,
    pipeline_stage_layers,
    routed_expert_params,
    stage_params,
    state_bytes,
)

# --------------------------------------------------------------------- memory arithmetic


def model_state_bytes_per_gpu(
    params: npt.ArrayLike,
    zero_stage: npt.ArrayLike,
    dp: npt.ArrayLike,
    *,
    weight_bytes_per_param: float | FloatArray = 2.0,
    grad_bytes_per_param: float | FloatArray = 2.0,
    optimizer_bytes_per_param: float | FloatArray = 12.0,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, gradients, optimizer states) bytes per GPU under ZeRO stage 0-3.

    ``params`` is the GPU's share after tensor/pipeline splitting. Stage 1 divides the
    optimizer states by the data-parallel degree N_d, stage 2 also the gradients, stage 3
    also the parameters (Rajbhandari et al. 2019, arXiv:1910.02054 section 5, Figure 1:
    (2 + 2 + K)·Ψ, 2Ψ + 2Ψ + KΨ/N_d, 2Ψ + (2 + K)Ψ/N_d, (2 + 2 + K)Ψ/N_d with K = 12 for
    mixed-precision Adam). Bytes per parameter may be arrays (one per layout).
    """
    p = np.asarray(params, dtype=np.float64)
    w_div, g_div, o_div = zero_divisors(zero_stage, dp)
    weights = p * weight_bytes_per_param / w_div
    grads = p * grad_bytes_per_param / g_div
    optim = p * optimizer_bytes_per_param / o_div
    return np.asarray(weights), np.asarray(grads), np.asarray(optim)


def zero_divisors(
    zero_stage: npt.ArrayLike, dp: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """What ZeRO divides weights, gradients and optimizer states by: N_d from stage 3, 2
    and 1 on respectively, else 1 (Rajbhandari et al. 2019, section 5)."""
    z = np.asarray(zero_stage)
    n = np.asarray(dp, dtype=np.float64)
    return (
        np.asarray(np.where(z >= 3, n, 1.0)),
        np.asarray(np.where(z >= 2, n, 1.0)),
        np.asarray(np.where(z >= 1, n, 1.0)),
    )


# --------------------------------------------------------------------- the training bridge


@dataclass(frozen=True)
class StageActivations:
    """Activation terms of one (micro-batch, tp, sequence parallel, recompute) choice."""

    kept_per_layer: float
    """Bytes one layer keeps per micro-batch (average over dense and MoE layers)."""
    recompute_working: float
    outside_first: float
    """Tensors saved outside the layers on the first stage, per micro-batch, the part
    proportional to b (per sequence when priced at b = 1)."""
    outside_last: float
    outside_only: float
    logits: float
    outside_first_fixed: float = 0.0
    """The part that does not grow with b (HF's rotary tables are (1, s, d))."""
    outside_last_fixed: float = 0.0
    outside_only_fixed: float = 0.0


@dataclass(frozen=True)
class MemoryRecipe:
    """What the vectorised memory screen needs, read off the training estimator.

    Mirrors :func:`llm_planner.core.sections.training.estimate_training` term by term (persistent
    state of the fullest stage ÷ tp and ÷ dp per ZeRO stage, activations × micro-batches in
    flight, temporaries, overhead) so the search screens millions of layouts without
    calling it; the rows the search returns are re-checked with the estimator itself.
    Persistent state is linear in the parameters (:func:`.training.state_bytes`): a stage
    holds ``layer_state`` × its share of the layers plus its tensors outside the layers.
    """

    layer_params: float
    """All in-layer parameters of the model (scaled by any override)."""
    layer_state: StateBytes
    """Weights, gradients, optimizer bytes of all layers (before ÷ tp and ZeRO)."""
    expert_state: StateBytes
    """The routed experts' part of ``layer_state`` (÷ ep, ZeRO over dp/ep); zeros if dense."""
    outside_first: StateBytes
    """State of the embedding (and learned positions) on the first stage."""
    outside_last: StateBytes
    """State of the output head (or the tied embedding when pp > 1) and final norm."""
    outside_single: StateBytes
    """State outside the layers when one stage holds all (a tied head counted once)."""
    model_state_bytes: float
    """Weights + gradients + optimizer of the whole model (tp = pp = dp = 1)."""
    temporaries: LayerTemporaries
    """One layer's bucket, ZeRO-3 gather and QLoRA dequantised matrix at tp = 1."""
    temporaries_for_ep: Callable[[int], LayerTemporaries]
    """The same with expert parallelism ep (one layer as a GPU holding E/ep experts)."""
    cuda_context_bytes: float
    fragmentation_fraction: float
    megatron_buckets: bool
    """Megatron reduces gradients in place: no DDP bucket with ZeRO 0/1."""
    activations: Callable[[int, int, bool, str], StageActivations]
    stage_layers: Callable[[int], tuple[int, int]]
    """(first, last) stage's layer count for a pipeline degree (:func:`.training.
    pipeline_stage_layers`: equal split, or the stack's cost-balanced one)."""
    logged_stage: str = "fullest"
    """Which GPU's peak the stack's own logs report (``StackProfile.logged_peak_stage``)."""


def memory_recipe(
    arch: Architecture, training_inputs: TrainingInputs, gpu: GPU, params: float
) -> MemoryRecipe:
    """The training estimator's state bytes, temporaries and activation terms for the screen.

    Every term comes from the helpers :func:`.training.estimate_training` itself uses
    (so every precision recipe, optimizer, LoRA and QLoRA setting is honoured).
    """
    del gpu  # the recipe does not depend on the GPU; the screen compares with its memory
    ti = training_inputs
    counts = _count_parameters(arch)
    scale = params / counts.total

    @cache
    def stage_acts(b: int, t: int, sp: bool, rc: str) -> StageActivations:
        ti_rc = ti.model_copy(update={"recompute": rc})
        layers = [
            (n, layer_activations_for(arch, ti_rc, b, tp=t, sequence_parallel=sp, moe_layer=moe))
            for moe, n in layer_kinds(arch)
        ]
        kept = sum(n * la.kept_bytes for n, la in layers) / arch.layers
        working = max(la.recompute_working_bytes for _, la in layers)

        def priced(first_stage: bool, last_stage: bool, n: int) -> float:
            ledger = outside_ledger_for(
                arch, ti_rc, n, tp=t, sequence_parallel=sp, first=first_stage, last=last_stage
            )
            return float(sum(e.bytes for e in ledger))

        def outside(first_stage: bool, last_stage: bool) -> tuple[float, float]:
            """(part ∝ b at this b, part independent of b): linear in b, priced twice."""
            one, two = priced(first_stage, last_stage, b), priced(first_stage, last_stage, 2 * b)
            return two - one, 2 * one - two

        act_dtype = get_precision(ti.precision).activations_dtype
        logits = logits_working_bytes(arch, ti.seq_len, b, tp=t, activation_dtype=act_dtype)
        first, last, only = outside(True, False), outside(False, True), outside(True, True)
        return StageActivations(
            kept_per_layer=float(kept),
            recompute_working=float(working),
            outside_first=first[0],
            outside_last=last[0],
            outside_only=only[0],
            logits=float(logits),
            outside_first_fixed=first[1],
            outside_last_fixed=last[1],
            outside_only_fixed=only[1],
        )

    def params_of(layers: int, first: bool, last: bool, pp: int, ep: int = 1) -> StageParams:
        return stage_params(
            arch, ti, layers_on_stage=layers, first=first, last=last, pp=pp, scale=scale, ep=ep
        )

    layers = params_of(arch.layers, False, False, 1)
    experts = routed_expert_params(arch, ti, layers_on_stage=arch.layers, scale=scale)
    temporaries = layer_temporaries(layers, ti, arch.layers)

    @cache
    def temporaries_for_ep(ep: int) -> LayerTemporaries:
        """As ``params_of(..., ep)`` would give, without recounting the layers: only the
        largest layer and the LoRA adapters (the bucket under LoRA) depend on ep."""
        if ep == 1:
            return temporaries
        local = {
            "one_layer_params": largest_local_layer(arch, ep) * scale,
            "lora_params": layers.lora_params - experts.lora_params * (1.0 - 1.0 / ep),
        }
        return layer_temporaries(layers.model_copy(update=local), ti, arch.layers)

    whole = params_of(arch.layers, True, True, 1)

    @cache
    def stage_layers(pp: int) -> tuple[int, int]:
        return pipeline_stage_layers(arch, ti, pp)

    # any pp > 1: the first stage holds the embedding, the last the head
    return MemoryRecipe(
        layer_params=layers.layer_params,
        layer_state=state_bytes(layers, ti),
        expert_state=state_bytes(experts, ti),
        outside_first=state_bytes(params_of(0, True, False, 2), ti),
        outside_last=state_bytes(params_of(0, False, True, 2), ti),
        outside_single=state_bytes(params_of(0, True, True, 1), ti),
        model_state_bytes=sum(state_bytes(whole, ti)),
        temporaries=temporaries,
        temporaries_for_ep=temporaries_for_ep,
        cuda_context_bytes=float(ti.cuda_context_bytes),
        fragmentation_fraction=float(ti.fragmentation_fraction),
        megatron_buckets=ti.implementation == "megatron",
        activations=stage_acts,
        stage_layers=stage_layers,
        logged_stage=get_stack(ti.stack).logged_peak_stage,
    )


def memory_screen(
    work: Workload,
    lay: Layouts,
    recipe: MemoryRecipe,
    *,
    m: FloatArray,
) -> dict[str, FloatArray]:
    """Per-GPU peak memory of each layout, term by term as the training estimator.

    The fuller of the first stage (embedding, micro-batches in flight) and the last stage
    (head, logits, one micro-batch in flight for 1F1B) sets the peak. With ep > 1 the
    routed experts' state is ÷ ep and ZeRO-sharded over the shard group ÷ ep (at least 1),
    and the bucket and ZeRO-3 gather hold one layer with E/ep experts, as in the estimator;
    rows with ep = 1 take exactly the arithmetic without experts.
    """
    f64 = np.float64
    tp = lay.as_float("tp")
    multi = lay.pp > 1
    # the stage's bytes ÷ tp, ZeRO-sharded (weights, gradients, optimizer)
    divisors = [tp * d for d in zero_divisors(lay.zero, lay.as_float("shard"))]
    has_ep = bool(sum(recipe.expert_state)) and bool(np.any(lay.ep > 1))
    # what depends on pp alone (the first and last stage's layer counts) once per pp value
    pp_index, pp_values = _pipeline_degrees(lay)
    counts = np.array([recipe.stage_layers(int(p)) for p in pp_values.tolist()], dtype=f64)
    multi_of_pp = pp_values > 1

    def state(outside: StateBytes, layers_of_pp: FloatArray) -> list[FloatArray]:
        share_of_pp = layers_of_pp / work.layers
        if not has_ep:
            return [
                (share_of_pp * in_layers + np.where(multi_of_pp, out, single))[pp_index] / div
                for in_layers, out, single, div in zip(
                    recipe.layer_state, outside, recipe.outside_single, divisors, strict=True
                )
            ]
        share = share_of_pp[pp_index]
        held = [
            np.where(multi, out, single)
            for out, single in zip(outside, recipe.outside_single, strict=True)
        ]
        plain = [
            (share * in_layers + out) / div
            for in_layers, out, div in zip(recipe.layer_state, held, divisors, strict=True)
        ]
        return _expert_parallel_state(
            lay, recipe, share=share, outside=held, divisors=divisors, plain=plain
        )

    # every saved tensor is s·b·(something): price b = 1 once per (tp, sp, recompute), × b
    # dense integer code per (tp, sp, recompute): O(n) grouping, no sort
    n_rc = len(RECOMPUTE_CODES)
    code = (lay.tp * 2 + lay.sp) * n_rc + lay.recompute
    present = np.zeros(int(code.max(initial=0)) + 1, dtype=bool)
    present[code] = True
    unique = np.flatnonzero(present)
    inv = (np.cumsum(present) - 1)[code]
    acts = [
        recipe.activations(1, k // n_rc // 2, bool(k // n_rc % 2), RECOMPUTE_CODES[k % n_rc])
        for k in unique.tolist()
    ]
    b = lay.as_float("micro_batch")
    pp = lay.as_float("pp")

    def field(name: str, per_b: bool = True) -> FloatArray:
        values = np.array([getattr(a, name) for a in acts], dtype=f64)[inv]
        return np.asarray(values * b if per_b else values)

    def outside_field(name: str) -> FloatArray:
        return np.asarray(field(name) + field(name + "_fixed", per_b=False))

    kept = field("kept_per_layer")
    working = field("recompute_working")
    logits = field("logits")
    in_flight = training_in_flight(pp, m, lay.gpipe, lay.as_float("v"))  # cached floats
    first_flight = np.where(in_flight > 0, in_flight, pp)
    last_flight = training_in_flight_last(pp, m, lay.gpipe, lay.as_float("v"))
    outside_only = outside_field("outside_only")
    outside_first = np.where(multi, outside_field("outside_first"), outside_only)
    outside_last = np.where(multi, outside_field("outside_last"), outside_only)
    gather, fixed_temps = _fixed_temporaries(lay, recipe, has_ep=has_ep)

    def stage(
        held: StateBytes,
        layers_of_pp: FloatArray,
        flight: FloatArray,
        outside: FloatArray,
        last: bool,
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        w, g, o = state(held, layers_of_pp)
        activ = kept * layers_of_pp[pp_index] * flight + outside * flight
        lg = logits if last else np.where(multi, 0.0, logits)
        temp = fixed_temps + np.maximum(lg, working)
        allocated = w + g + o + activ + temp
        peak = allocated + recipe.cuda_context_bytes + recipe.fragmentation_fraction * allocated
        return w, g, o, activ, peak, allocated

    first = stage(recipe.outside_first, counts[:, 0], first_flight, outside_first, last=False)
    last = stage(recipe.outside_last, counts[:, 1], last_flight, outside_last, last=True)
    use_last = last[4] > first[4]
    pick = [np.where(use_last, b_, a_) for a_, b_ in zip(first, last, strict=True)]
    # torch.cuda.max_memory_reserved: the caching allocator's segments, i.e. allocated plus
    # fragmentation; the CUDA context is outside it (it is in nvidia-smi's figure, the peak)
    reserve = 1.0 + recipe.fragmentation_fraction
    logged_allocated = first[5] if recipe.logged_stage == "first" else pick[5]
    return {
        "weights_bytes": pick[0],
        "gradients_bytes": pick[1],
        "optimizer_bytes": pick[2],
        "activations_bytes": pick[3],
        "zero3_gathered_bytes": gather,
        "peak_bytes": pick[4],
        "allocated_bytes": pick[5],
        "reserved_bytes": pick[5] * reserve,
        "logged_allocated_bytes": logged_allocated,
        "logged_reserved_bytes": logged_allocated * reserve,
    }


def _pipeline_degrees(lay: Layouts) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """(index of each layout's pp among the distinct ones, the distinct pp values): what
    depends on pp alone is priced once per pp value and gathered."""
    seen = np.zeros(int(lay.pp.max(initial=1)) + 1, dtype=bool)
    seen[lay.pp] = True
    values = np.flatnonzero(seen).astype(np.float64)
    return (np.cumsum(seen) - 1)[lay.pp], values


def _fixed_temporaries(
    lay: Layouts, recipe: MemoryRecipe, *, has_ep: bool
) -> tuple[FloatArray, FloatArray]:
    """(ZeRO-3 gathered block, all fixed temporaries) per GPU: the ZeRO-2 bucket or DDP
    bucket, the ZeRO-3 gather and QLoRA's dequantised matrix, each ÷ tp."""
    tp = lay.as_float("tp")
    z = lay.zero
    zero2_bucket, zero3_gather = _layer_temporaries_by_ep(lay, recipe, has_ep=has_ep)
    sharded = lay.shard > 1
    bucket = np.where(
        (z >= 2) & sharded,
        zero2_bucket / tp,
        np.where(sharded & (not recipe.megatron_buckets), float(DDP_BUCKET_BYTES), 0.0),
    )
    gather = np.where((z >= 3) & sharded, zero3_gather / tp, 0.0)
    fixed = bucket + gather
    if recipe.temporaries.dequant:
        fixed = fixed + recipe.temporaries.dequant / tp
    return np.asarray(gather), np.asarray(fixed)


def _expert_parallel_state(
    lay: Layouts,
    recipe: MemoryRecipe,
    *,
    share: FloatArray,
    outside: list[FloatArray],
    divisors: list[FloatArray],
    plain: list[FloatArray],
) -> list[FloatArray]:
    """Weights, gradients, optimizer per GPU where ep > 1 (``plain`` elsewhere): the stage's
    non-expert state (and ``outside``) ÷ ``divisors`` (tp × ZeRO over the shard group), its
    routed experts ÷ tp·ep × ZeRO over the expert-data-parallel group shard/ep (at least 1),
    as :func:`.training.estimate_training`."""
    tp = lay.as_float("tp")
    ep = lay.as_float("ep")
    expert_dp = np.maximum(lay.as_float("shard") / ep, 1.0)
    expert_divisors = [tp * ep * d for d in zero_divisors(lay.zero, expert_dp)]
    split = lay.ep > 1
    return [
        np.where(split, (share * (whole - expert) + out) / div + share * expert / e_div, p)
        for whole, expert, out, div, e_div, p in zip(
            recipe.layer_state,
            recipe.expert_state,
            outside,
            divisors,
            expert_divisors,
            plain,
            strict=True,
        )
    ]


def _layer_temporaries_by_ep(
    lay: Layouts, recipe: MemoryRecipe, *, has_ep: bool
) -> tuple[float | FloatArray, float | FloatArray]:
    """One layer's ZeRO-2 bucket and ZeRO-3 gather (tp = 1) as a GPU holding E/ep experts
    stores it: the recipe's when no layout has ep > 1, else per layout from a table over
    the ep values present, O(n)."""
    if not has_ep:
        return recipe.temporaries.zero2_bucket, recipe.temporaries.zero3_gather
    seen = np.zeros(int(lay.ep.max()) + 1, dtype=bool)
    seen[lay.ep] = True
    table = np.zeros((2, seen.size), dtype=np.float64)
    for e in np.flatnonzero(seen).tolist():
        t_e = recipe.temporaries_for_ep(int(e))
        table[:, e] = (t_e.zero2_bucket, t_e.zero3_gather)
    return table[0][lay.ep], table[1][lay.ep]


def training_memory(
    arch: Architecture,
    gpu: GPU,
    lay: ResolvedLayout,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
) -> TrainingReport:
    """The training estimator's report for this layout."""
    return estimate_training(
        arch, training_inputs, gpu, params_override=params_override, **training_layout_kwargs(lay)
    )


# --------------------------------------------------------------------- GUI series


def zero_stage_comparison(
    arch: Architecture,
    training_inputs: TrainingInputs,
    gpu: GPU,
    inputs: ParallelInputs,
    num_gpus: int,
    *,
    params_override: float | None = None,
) -> list[dict[str, float]]:
    """Per-GPU memory components for ZeRO stages 0-3 at the scenario's tp/pp/dp, from the
    training estimator (one source of truth)."""
    lay = resolve_layout(
        inputs,
        num_gpus,
        int(training_inputs.micro_batch),
        str(training_inputs.recompute),
        arch.layers,
    )
    rows: list[dict[str, float]] = []
    for stage in range(4):
        rep = training_memory(
            arch,
            gpu,
            replace(lay, zero_stage=stage),
            training_inputs,
            params_override=params_override,
        )
        rows.append(
            {
                "zero_stage": float(stage),
                "weights_bytes": float(rep.weights_bytes),
                "gradients_bytes": float(rep.gradients_bytes),
                "optimizer_bytes": float(rep.optimizer_bytes),
                "activations_bytes": float(rep.activations_bytes),
                "temporary_bytes": float(rep.temporary_bytes),
                "overhead_bytes": float(rep.overhead_bytes),
                "peak_bytes": float(rep.peak_bytes),
            }
        )
    return rows
