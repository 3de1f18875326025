"""The KV cache's elements per token (core/sections/inference.py _kv_elements_per_token) are
the layers' own summed one by one, for every preset (windowed layers of Mistral and
Gemma 2/3, MLA, hybrids whose recurrent layers cache nothing) and for variants whose layers
differ (a global layer's own width, KV-sharing layers): the counts-times-one-layer path
taken where layers are alike gives the layer-by-layer sums."""

from __future__ import annotations

from llm_planner.core.primitives.kept import forget_all
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.core.sections.inference import (
    _kv_elements_per_token,
    kv_elements_per_token_per_layer,
)


def _layer_by_layer(arch: object) -> tuple[int, int]:
    windowed = full = 0
    for i in range(arch.layers):  # type: ignore[attr-defined]
        if not arch.is_attention_layer(i):  # type: ignore[attr-defined]
            continue
        if arch.kv_shared_layers and arch.shares_kv(i):  # type: ignore[attr-defined]
            continue
        per = kv_elements_per_token_per_layer(arch, i)  # type: ignore[arg-type]
        if arch.is_windowed_layer(i):  # type: ignore[attr-defined]
            windowed += per
        else:
            full += per
    return windowed, full


def test_kv_elements_are_the_layers_summed() -> None:
    windowed_models = 0
    archs = [get_preset(name).architecture for name in sorted(model_presets())]
    gemma = get_preset("gemma-2-27b").architecture
    archs += [
        gemma.model_copy(update={"global_head_dim": 256, "global_kv_heads": 4}),
        gemma.model_copy(update={"layers": 7, "global_attention_every": 3}),
    ]
    for arch in archs:
        forget_all()
        assert _kv_elements_per_token(arch) == _layer_by_layer(arch), arch.name
        windowed_models += _kv_elements_per_token(arch)[0] > 0
    assert windowed_models >= 3
