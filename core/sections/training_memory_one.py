"""Training memory per GPU of ONE layout, in plain Python floats.

:func:`training_memory_one` is :func:`.training_memory.training_memory_arrays` at one
layout: the same terms (the module docstring of :mod:`.training_memory` gives them and
their sources), the same operations in the same order, so each component is the very float
the array function returns for that layout. It exists for speed alone: the array function
pays about 0.1 ms of numpy calls whatever its length, and the training report evaluates a
handful of single layouts per estimate (the scenario's micro-batch, b = 1 and 2, the
neighbours of the largest micro-batch that fits), where Python arithmetic takes a few
microseconds. ``tests/core/test_training_memory_one.py`` checks it equal to the array
function over random scenarios and layouts; a term added to one must be added to the other.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from llm_planner.core.inputs.training import DDP_BUCKET_BYTES
from llm_planner.core.quantities.activation_recompute import is_partial, partial_full_stage
from llm_planner.core.sections.training_activations import StageActivations
from llm_planner.core.sections.training_memory import (
    RECOMPUTE_POLICIES,
    MemoryTerms,
    gathered_head_bytes,
)
from llm_planner.core.sections.training_offload import offloaded_state
from llm_planner.core.sections.training_params import StateBytes

_THRESHOLD = RECOMPUTE_POLICIES.index("threshold")
_FULL = RECOMPUTE_POLICIES.index("full")


def _zero_divisors(zero: int, dp: float) -> tuple[float, float, float]:
    """:func:`.training_memory.zero_divisors` of one layout."""
    return (dp if zero >= 3 else 1.0, dp if zero >= 2 else 1.0, dp if zero >= 1 else 1.0)


def _activation_terms(
    terms: MemoryTerms, tp: int, sp: bool, rc: int, b: float
) -> tuple[float, float, float, float, float, float]:
    """:func:`.training_memory._activation_terms` of one layout: priced at b = 1 and × b,
    the threshold policy at its own b (× b / b): (kept per layer, recompute working set,
    logits, outside the first, the last and the only stage)."""
    if rc == _THRESHOLD:
        a: StageActivations = terms.activations(int(b), tp, sp, RECOMPUTE_POLICIES[rc])
        scale = b / b
    else:
        a = terms.activations(1, tp, sp, RECOMPUTE_POLICIES[rc])
        scale = b
    return (
        a.kept_per_layer * scale,
        a.recompute_working * scale,
        a.logits * scale,
        a.outside_first * scale + a.outside_first_fixed,
        a.outside_last * scale + a.outside_last_fixed,
        a.outside_only * scale + a.outside_only_fixed,
    )


def _on_gpu_share(layers: float, offloaded: int) -> float:
    """:func:`.training_offload._on_gpu_share` of one layout (CPU activation offload)."""
    if offloaded <= 0:
        return 1.0
    held = layers - min(float(offloaded), max(layers - 1.0, 0.0))
    return held / max(layers, 1.0) if layers > 0 else 1.0


def _fixed_temporaries(
    terms: MemoryTerms, tp: float, zero: int, shard: float, ep: int
) -> tuple[float, float, float]:
    """:func:`.training_memory._fixed_temporaries` of one layout."""
    experts = ep > 1 and any(terms.expert_state)
    one_layer = terms.temporaries_for_ep(ep) if experts else terms.temporaries
    sharded = shard > 1
    if zero >= 2 and sharded:
        bucket = one_layer.zero2_bucket / tp
    else:
        bucket = float(DDP_BUCKET_BYTES) if sharded and terms.ddp_bucket_temporary else 0.0
    gather = one_layer.zero3_gather / tp if zero >= 3 and sharded else 0.0
    dequant = terms.temporaries.dequant / tp if terms.temporaries.dequant else 0.0
    return bucket, gather, dequant


def _sharding(
    terms: MemoryTerms, tp: float, zero: int, shard: float, ep: int
) -> tuple[list[float], list[float] | None]:
    """:func:`.training_memory._sharding` of one layout: (divisors, the routed experts'
    divisors or None)."""
    divisors = [tp * d for d in _zero_divisors(zero, shard)]
    if not (any(terms.expert_state) and ep > 1):
        return divisors, None
    epf = float(ep)
    expert_dp = max(shard / epf, 1.0)
    return divisors, [tp * epf * d for d in _zero_divisors(zero, expert_dp)]


def training_memory_one(
    terms: MemoryTerms,
    *,
    tp: int,
    pp: int,
    shard: float,
    ep: int,
    zero: int,
    micro_batch: float,
    sp: bool,
    recompute: int,
    first_in_flight: float,
    last_in_flight: float,
    detail: bool = True,
    cp: float = 1,
    loss_in_flight: float | None = None,
) -> dict[str, float]:
    """:func:`.training_memory.training_memory_arrays` at one layout (its arguments as
    plain numbers): the same keys, each value that layout's float."""
    tp, pp, ep, zero, rc = int(tp), int(pp), int(ep), int(zero), int(recompute)
    b = float(micro_batch) / float(cp)
    sp, shard_f, tp_f, multi = bool(sp), float(shard), float(tp), pp > 1
    first_layers, last_layers = terms.stage_layers(pp)

    kept, working_one, logits, outside_first, outside_last, outside_only = _activation_terms(
        terms, tp, sp, rc, b
    )
    if terms.gathered_head is not None:  # a head kept gathered under FSDP (rare: numpy's)
        logits = float(
            gathered_head_bytes(
                terms,
                np.array([logits]),
                b=np.array([b]),
                tp=np.array([tp]),
                zero=np.array([zero]),
                shard=np.array([shard_f]),
            )[0]
        )
    partial = is_partial(terms.recompute_method, terms.recompute_layers) and rc == _FULL
    saved = _activation_terms(terms, tp, sp, 0, b)[0] if partial else None

    bucket, gather, dequant = _fixed_temporaries(terms, tp_f, zero, shard_f, ep)
    fixed_temporaries = bucket + gather + dequant if terms.temporaries.dequant else bucket + gather
    divisors, expert_divisors = _sharding(terms, tp_f, zero, shard_f, ep)
    (layer_w, layer_g, layer_o), (d_w, d_g, d_o) = terms.layer_state, divisors

    def state(held: StateBytes, share: float) -> tuple[float, float, float]:
        """:func:`.training_memory._state` of one layout."""
        out_w, out_g, out_o = held if multi else terms.outside_single
        if expert_divisors is None:
            return (
                (share * layer_w + out_w) / d_w,
                (share * layer_g + out_g) / d_g,
                (share * layer_o + out_o) / d_o,
            )
        (e_w, e_g, e_o), (x_w, x_g, x_o) = terms.expert_state, expert_divisors
        return (
            (share * (layer_w - e_w) + out_w) / d_w + share * e_w / x_w,
            (share * (layer_g - e_g) + out_g) / d_g + share * e_g / x_g,
            (share * (layer_o - e_o) + out_o) / d_o + share * e_o / x_o,
        )

    def stage(
        held: StateBytes,
        layers: float,
        flight: float,
        outside: float,
        *,
        last: bool,
        outside_flight: float,
    ) -> tuple[float, ...]:
        """The stage's terms, in the order of :data:`_STAGE_KEYS`."""
        w, g, o = state(held, layers / terms.layers)
        host = nvme = 0.0
        if terms.offload is not None:  # what ZeRO offload takes off the GPU (rare: numpy's)
            w, g, o, host, nvme = (
                float(x[0])
                for x in offloaded_state(
                    terms.offload, [np.array([w]), np.array([g]), np.array([o])], np.array([zero])
                )
            )
        outside_acts = outside * outside_flight
        in_layers, working = kept * layers, working_one
        if saved is not None:  # full recompute covering the stage partly
            part_kept, part_working = partial_full_stage(
                method=terms.recompute_method,
                n=terms.recompute_layers,
                layers_on_stage=layers,
                checkpoint_bytes=kept,
                saved_bytes=saved,
            )
            in_layers, working = float(part_kept), float(part_working)
        on_gpu = in_layers * _on_gpu_share(layers, terms.activation_offload_layers)
        activ = on_gpu * flight + outside_acts
        lg = logits if last else (0.0 if multi else logits)
        temp = fixed_temporaries + max(lg, working)
        allocated = w + g + o + activ + temp
        return (
            w,
            g,
            o,
            activ,
            outside_acts,
            lg,
            temp,
            allocated,
            layers,
            flight,
            host,
            nvme,
            working,
            in_layers,
            in_layers - on_gpu,
        )

    def peak(allocated: float) -> tuple[float, float]:
        fragmentation = terms.fragmentation_fraction * allocated
        return allocated + terms.cuda_context_bytes + fragmentation, fragmentation

    first = stage(
        terms.outside_first,
        float(first_layers),
        float(first_in_flight),
        outside_first if multi else outside_only,
        last=False,
        outside_flight=float(first_in_flight),
    )
    loss_flight = last_in_flight if loss_in_flight is None or not multi else loss_in_flight
    last = stage(
        terms.outside_last,
        float(last_layers),
        float(last_in_flight),
        outside_last if multi else outside_only,
        last=True,
        outside_flight=float(loss_flight),
    )
    use_last = peak(last[_ALLOCATED])[0] > peak(first[_ALLOCATED])[0]
    chosen, use_last = _fuller_middle(
        terms,
        stage,
        peak,
        last if use_last else first,
        use_last,
        pp=pp,
        first=(float(first_layers), float(first_in_flight)),
    )
    out = (
        dict(zip(_STAGE_KEYS, chosen, strict=True))
        if detail
        else {k: chosen[i] for k, i in _SCREENED_AT}
    )
    out["peak_bytes"], out["fragmentation_bytes"] = peak(out["allocated_bytes"])
    if detail:
        layers = out["layers_on_stage"]
        out["activations_per_layer_bytes"] = (
            out["layer_activations_bytes"] / max(layers, 1.0) if layers > 0 else 0.0
        )
    reserve = 1.0 + terms.fragmentation_fraction
    logged = first[_ALLOCATED] if terms.logged_stage == "first" else out["allocated_bytes"]
    out.update(
        last_stage=float(use_last),
        gradient_bucket_bytes=bucket,
        zero3_gathered_bytes=gather,
        dequant_bytes=dequant,
        cuda_context_bytes=terms.cuda_context_bytes,
        reserved_bytes=out["allocated_bytes"] * reserve,
        logged_allocated_bytes=logged,
        logged_reserved_bytes=logged * reserve,
    )
    return out


def _fuller_middle(
    terms: MemoryTerms,
    stage: Callable[..., tuple[float, ...]],
    peak: Callable[[float], tuple[float, float]],
    chosen: tuple[float, ...],
    use_last: bool,
    *,
    pp: int,
    first: tuple[float, float],
) -> tuple[tuple[float, ...], bool]:
    """The chosen stage, or a middle stage of a stated split (:attr:`.MemoryTerms.
    middle_layers`) where it holds more layers than the first and its peak is higher: no
    embedding or head, p − 1 of the first stage's p micro-batches in flight (1F1B's stage 1,
    Narayanan et al. 2021 section 2.2; interleaved, the same share of the first's: an
    approximation)."""
    middle_layers = terms.middle_layers(pp) if terms.middle_layers is not None else 0
    first_layers, first_flight = first
    if middle_layers <= first_layers:
        return chosen, use_last
    flight = first_flight * (pp - 1) / pp
    middle = stage(
        StateBytes(0.0, 0.0, 0.0),
        float(middle_layers),
        flight,
        0.0,
        last=False,
        outside_flight=flight,
    )
    if peak(middle[_ALLOCATED])[0] > peak(chosen[_ALLOCATED])[0]:
        return middle, False
    return chosen, use_last


_SCREENED = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "allocated_bytes",
    "offloaded_activations_bytes",
    "recompute_working_bytes",
)
"""The components :func:`training_memory_one` returns without ``detail`` (as the array
function: its screened ones and the recompute working set)."""

_STAGE_KEYS = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "outside_activations_bytes",
    "logits_bytes",
    "temporary_bytes",
    "allocated_bytes",
    "layers_on_stage",
    "microbatches_in_flight",
    "host_bytes",
    "nvme_bytes",
    "recompute_working_bytes",
    "layer_activations_bytes",
    "offloaded_activations_bytes",
)
"""A stage's components, in the order :func:`training_memory_one`'s ``stage`` returns them
(tuples: no dict per stage, only the chosen stage's)."""
_ALLOCATED = _STAGE_KEYS.index("allocated_bytes")
_SCREENED_AT = tuple((key, _STAGE_KEYS.index(key)) for key in _SCREENED)
