"""The summed bytes outside the layers (what the memory terms price) are the ledger's lines
added up, for one micro-batch and for several at once (one sum per micro-batch)."""

from __future__ import annotations

import itertools

import numpy as np

from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activation_profiles import PROFILES
from llm_planner.core.quantities.activations import outside_layer_bytes, outside_layer_ledger

MODELS = ["llama-3.1-8b", "gpt-3-175b", "gemma-2-27b", "mixtral-8x7b", "gpt-oss-20b"]


def test_outside_bytes_are_the_ledger_summed_at_each_micro_batch():
    checked = 0
    for model, profile, (first, last), lora, recompute, flash, (tp, sp) in itertools.product(
        MODELS,
        PROFILES,
        [(True, False), (False, True), (True, True)],
        [False, True],
        ["none", "full"],
        [True, False],
        [(1, False), (2, True), (4, False)],
    ):
        arch = get_preset(model).architecture
        options = {
            "tp": tp,
            "sequence_parallel": sp,
            "profile": profile,
            "first_stage": first,
            "last_stage": last,
            "lora": lora,
            "recompute": recompute,
            "flash": flash,
        }
        bs = [1, 2, 3]
        lines = [outside_layer_ledger(arch, 1000, b, **options) for b in bs]  # type: ignore[arg-type]
        by_hand = [sum(e.bytes for e in ledger) for ledger in lines]
        together = outside_layer_bytes(arch, 1000, np.array(bs), **options)  # type: ignore[arg-type]
        assert [float(x) for x in together] == by_hand
        assert outside_layer_bytes(arch, 1000, 3, **options) == by_hand[2]  # type: ignore[arg-type]
        checked += by_hand[0] > 0
    assert checked  # some stage saves something outside the layers
