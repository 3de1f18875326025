"""The activation terms the memory terms price (core/sections/training_activations.py) are
the ledger's: over random scenarios (dense, MoE, MLA and recurrent models, LoRA, every
stack, profile, recipe and policy), one pricer asked for a dozen random (b, tp, sequence
parallel, policy) settings in a row (so that what it shares between them is shared) gives
for each the ledger's lines summed afresh, every kept value forgotten first:

- kept per layer: Σ over the kinds of layer of count × the layer ledger's kept bytes
  (:func:`layer_activations_for` under the inputs with that policy) ÷ layers; the working
  set: the largest ledger's recompute working set;
- outside the layers: the lines of :func:`outside_layer_ledger` summed on the first, the
  last and the only stage at b and 2b, split into the part ∝ b (2b's − b's) and the fixed
  part (2 × b's − 2b's), under the inputs' own policy (as the memory terms have always
  priced them);
- the logits' working set: (activation bytes + 4)·s·b·V ÷ tp, by hand (without the 4
  where the profile's loss works in the saved softmax itself), plus each multi-token
  prediction depth's fp32 softmax, 4·s·b·V ÷ tp."""

from __future__ import annotations

import random

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.primitives.kept import forget_all
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activation_profiles import get_profile
from llm_planner.core.quantities.activations import outside_layer_ledger
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.sections.training import TrainingInputs
from llm_planner.core.sections.training_activations import StageActivations, stage_pricer
from llm_planner.core.sections.training_memory import RECOMPUTE_POLICIES
from llm_planner.core.sections.training_params import layer_activations_for, layer_kinds

from .test_training_memory_one import MODELS, _inputs

Setting = tuple[int, int, bool, str]


def _ledger(arch: Architecture, ti: TrainingInputs, setting: Setting) -> list[float]:
    """The terms summed from the ledgers' lines, nothing kept."""
    b, t, sp, rc = setting
    forget_all()
    under = ti.model_copy(update={"recompute": rc})
    kinds = layer_kinds(arch)
    ledgers = [
        (n, layer_activations_for(arch, under, b, tp=t, sequence_parallel=sp, moe_layer=moe))
        for moe, n in kinds
    ]
    kept = sum(n * la.kept_bytes for n, la in ledgers) / arch.layers
    working = max(la.recompute_working_bytes for _, la in ledgers)
    act = get_precision(ti.precision).activations_dtype
    sums = {}
    for x in (b, 2 * b):
        for first, last in ((True, False), (False, True), (True, True)):
            lines = outside_layer_ledger(
                arch,
                ti.seq_len,
                x,
                tp=t,
                sequence_parallel=sp,
                profile=ti.implementation,
                dropout=ti.dropout,
                activation_dtype=act,
                first_stage=first,
                last_stage=last,
                lora=ti.effective_lora_rank is not None,
                recompute=rc,
                flash=ti.flash_attention,
            )
            sums[x, first, last] = sum(e.bytes for e in lines)
    outside = []
    for first, last in ((True, False), (False, True), (True, True)):
        one, two = sums[b, first, last], sums[2 * b, first, last]
        outside.append((two - one, 2 * one - two))
    vocab = arch.vocab_size
    fp32 = 0.0 if get_profile(ti.implementation).logits_softmax_in_place else 4
    logits = (bytes_per_element(act) + fp32) * ti.seq_len * b * vocab / t
    logits += ti.mtp_layers * 4.0 * ti.seq_len * b * vocab / t  # each MTP depth's softmax
    return [
        kept,
        working,
        outside[0][0],
        outside[1][0],
        outside[2][0],
        logits,
        outside[0][1],
        outside[1][1],
        outside[2][1],
    ]


def _fields(a: StageActivations) -> list[float]:
    return [
        a.kept_per_layer,
        a.recompute_working,
        a.outside_first,
        a.outside_last,
        a.outside_only,
        a.logits,
        a.outside_first_fixed,
        a.outside_last_fixed,
        a.outside_only_fixed,
    ]


def test_priced_terms_are_the_ledgers_summed() -> None:
    rng = random.Random(26)
    compared = masks = 0
    while compared < 300:
        arch = get_preset(rng.choice(MODELS)).architecture
        ti = _inputs(rng)
        if ti is None:
            continue
        priced = stage_pricer(arch, ti)
        settings = [
            (
                rng.choice([1, 1, 2, 3]),
                rng.choice([1, 2, 4, 8, 16]),
                rng.random() < 0.5,
                rng.choice(
                    RECOMPUTE_POLICIES[:3] if ti.recompute != "threshold" else ["threshold"]
                ),
            )
            for _ in range(12)
        ]
        values = [priced(*setting) for setting in settings]  # all priced before any compared
        for setting, value in zip(settings, values, strict=True):
            expected = _ledger(arch, ti, setting)
            assert _fields(value) == expected, (arch.name, ti, setting)
            compared += 1
            masks += (
                setting[3] == "full"
                and not ti.flash_attention
                and get_profile(ti.implementation).hf_modules
                and arch.recurrent is None
            )
    assert masks > 10  # the held causal mask: the one policy the outside tensors depend on
