"""Uneven pipeline stages as Megatron-Core states them: the first and/or the last stage
hold a stated number of transformer layers, the rest split evenly over the middle stages.

Source: NVIDIA/Megatron-LM@d98e8a64 ``megatron/core/transformer/transformer_block.py``
``get_num_layers_to_build`` (the layers of rank r) and ``megatron/core/transformer/
transformer_config.py`` ``__post_init__`` "Uneven PP" checks (command line:
``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``).
"""

from __future__ import annotations

from typing import NamedTuple


class StageSplit(NamedTuple):
    """Transformer layers of the first stage, of each middle stage, of the last stage (all
    virtual chunks of a stage together; the multi-token-prediction depths not included)."""

    first: int
    middle: int
    last: int


def stage_split(
    layers: int, pp: int, first: int | None, last: int | None, v: int = 1
) -> StageSplit | str:
    """The stages' layers with ``first`` / ``last`` stated (None: that stage takes a middle
    stage's share), or why Megatron-Core refuses them (a sentence naming the field).

    Megatron-Core's rule (``get_num_layers_to_build`` and the config checks at d98e8a64):
    each stated count is > 0; the L − first − last layers left are divided evenly over the
    pp − (stages stated) middle stages, which must exist exactly when layers are left; under
    interleaving (v chunks) each stated count and each middle stage's count is a multiple of
    v. pp = 1 has no first or last stage to state (Megatron would find the layers left over
    with no stage to take them). Assumptions: the decoder layers only (the embedding and the
    output head stay on the first and last stage; MTP depths are built on the last stage in
    addition, ``get_mtp_num_layers_to_build``)."""
    if first is None and last is None:
        raise ValueError("stage_split needs first or last stage layers")
    if pp < 2:
        field = "first_stage_layers" if first is not None else "last_stage_layers"
        return f"training.{field}: an uneven first/last stage needs pp ≥ 2 (pp = {pp})"
    left, stages = layers, pp
    for name, count in (("first_stage_layers", first), ("last_stage_layers", last)):
        if count is None:
            continue
        if count <= 0:
            return f"training.{name}: must be > 0 (got {count})"
        if count % v:
            return f"training.{name}: {count} layers is not a multiple of the {v} virtual chunks"
        left -= count
        stages -= 1
    name = "first_stage_layers" if first is not None else "last_stage_layers"
    if left < 0 or bool(left) != bool(stages):
        return (
            f"training.{name}: {layers} layers less the first/last stage's leave {left} "
            f"layers for {stages} middle stages"
        )
    if stages and left % stages:
        return (
            f"training.{name}: the {left} layers left do not divide evenly over the "
            f"{stages} middle stages (pp = {pp})"
        )
    middle = left // stages if stages else 0
    if stages and middle % v:
        return (
            f"training.{name}: {middle} layers per middle stage is not a multiple of the "
            f"{v} virtual chunks"
        )
    return StageSplit(
        first if first is not None else middle,
        middle,
        last if last is not None else middle,
    )


def split_or_none(
    layers: int, pp: int, first: int | None, last: int | None, v: int = 1
) -> StageSplit | None:
    """:func:`stage_split` where it applies, else None (no count stated, or a pipeline
    degree the stated counts do not fit: the layout search's other pp values, priced with
    the equal split)."""
    if first is None and last is None:
        return None
    split = stage_split(layers, pp, first, last, v)
    return split if isinstance(split, StageSplit) else None
