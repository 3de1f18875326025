"""The activation terms of training memory (:class:`StageActivations`), priced per
(micro-batch, tp, sequence parallelism, recomputation policy) for one model under one set of
training inputs (:attr:`.training_memory.MemoryTerms.activations`).

What is priced, and from which ledger: the bytes one layer keeps and its recompute working
set (:func:`.activations.layer_kept_bytes`, the sum of the layer's ledger,
Korthikanti et al. 2022, arXiv:2205.05198, section 4), averaged over the model's kinds of
layer; the tensors saved outside the layers on the first, last and only pipeline stage
(:func:`.activations.outside_stage_bytes`, section 4.3), split into their part ∝ b and
their part independent of b from the pricings at b and 2b (they are linear in b); the
logits' working set (:func:`.activations.logits_working_bytes`) and the multi-token
prediction depths' saved softmaxes (:func:`.mtp.mtp_saved_logits_bytes`).

One estimate prices a few such settings (the training report's, the fewest-GPUs search's
tp degrees and policies) of the same inputs, so :func:`stage_pricer` builds what they share
once: the inputs under each policy, the layer's pricing configuration per (b, tp) (its
tensors are kept by :mod:`.activations`), the outside sums per (b, tp, SP) and the one
policy distinction they depend on (:func:`.activation_outside.mask_held`). The values are
the ledger's, the same arithmetic (``tests/core/test_training_activations.py`` compares
them with the ledger's lines summed over random scenarios).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities.activation_outside import mask_held
from llm_planner.core.quantities.activation_profiles import get_profile
from llm_planner.core.quantities.activation_tensors import LedgerConfig, RecomputeKind
from llm_planner.core.quantities.activations import layer_kept_at, logits_working_bytes
from llm_planner.core.quantities.mtp import mtp_saved_logits_bytes
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.sections.training_params import (
    layer_kinds,
    ledger_config_for,
    outside_stage_bytes_for,
)


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


def linear_parts(one: float, two: float) -> tuple[float, float]:
    """(part ∝ b at b, part independent of b) of a term linear in b, from its values at b
    and 2b."""
    return two - one, 2 * one - two


Outside = tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
"""(part ∝ b, fixed part) of the first, the last and the only stage's outside tensors."""


def stage_pricer(
    arch: Architecture, ti: TrainingInputs
) -> Callable[[int, int, bool, str], StageActivations]:
    """(b, tp, sequence parallel, policy) → :class:`StageActivations` of ``arch`` under
    ``ti`` with that policy, each setting priced once."""
    kinds = layer_kinds(arch)
    act_dtype = get_precision(ti.precision).activations_dtype
    in_place = get_profile(ti.implementation).logits_softmax_in_place

    @cache
    def under(rc: str) -> TrainingInputs:
        """The inputs with policy ``rc`` (their ``priced_recompute`` is the ledger's)."""
        return ti if rc == ti.recompute else ti.model_copy(update={"recompute": rc})

    @cache
    def config(b: int, t: int) -> LedgerConfig:
        return ledger_config_for(ti, b, t)

    @cache
    def outside(b: int, t: int, sp: bool, held: bool) -> Outside:
        """Of every policy that holds eager attention's mask or not (``held``: full
        recomputation alone, :func:`.activation_outside.mask_held`; the tensors are the
        same), priced under full recomputation or none."""
        rc: RecomputeKind = "full" if held else "none"
        at = [
            outside_stage_bytes_for(arch, ti, x, tp=t, sequence_parallel=sp, recompute=rc)
            for x in (b, 2 * b)
        ]
        first, last, only = (linear_parts(float(x), float(y)) for x, y in zip(*at, strict=True))
        return first, last, only

    @cache
    def priced(b: int, t: int, sp: bool, rc: str) -> StageActivations:
        inputs = under(rc)
        policy: RecomputeKind = inputs.priced_recompute
        cfg = config(b, t)
        layers = [
            (
                n,
                layer_kept_at(
                    arch,
                    cfg,
                    moe_layer=moe,
                    sequence_parallel=sp,
                    recompute=policy,
                    threshold_bytes=inputs.recompute_threshold_bytes,
                ),
            )
            for moe, n in kinds
        ]
        kept = sum(n * kept for n, (kept, _) in layers) / arch.layers
        working = max(working for _, (_, working) in layers)
        held = mask_held(rc, ti.flash_attention)
        first, last, only = outside(b, t, sp, held)
        logits = logits_working_bytes(
            arch, ti.seq_len, b, tp=t, activation_dtype=act_dtype, softmax_in_place=in_place
        )
        logits += mtp_saved_logits_bytes(arch, ti.seq_len, b, tp=t, depths=ti.mtp_layers)
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

    return priced
