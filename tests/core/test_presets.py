"""The model presets file: the issue's ids, a cited source for each, shapes that agree with
their configs, and 'published' figures that the exact count reproduces."""

from __future__ import annotations

import pytest

from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset, model_presets

REQUIRED_IDS = [
    "gpt-3-175b",
    "gpt-neox-20b",
    "bloom-176b",
    "opt-175b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "deepseek-v3",
    "falcon-40b",
    "gemma-2-27b",
    "phi-3-mini",
]


def test_every_required_preset_is_present_and_cited() -> None:
    presets = model_presets()
    assert [pid for pid in REQUIRED_IDS if pid not in presets] == []
    for preset in presets.values():
        assert preset.source.strip(), f"{preset.id} cites no config or paper"
        assert preset.published.params_total is not None, preset.id
        assert preset.published.source.strip(), f"{preset.id}: published figure has no source"


@pytest.mark.parametrize("preset_id", REQUIRED_IDS)
def test_published_figures_in_the_file_match_the_exact_count(preset_id: str) -> None:
    preset = get_preset(preset_id)
    counts = count_parameters(preset.architecture)
    published = preset.published
    assert published.params_total is not None
    assert counts.total == pytest.approx(published.params_total, rel=0.01)
    if published.params_active is not None:
        assert counts.active == pytest.approx(published.params_active, rel=0.01)
    if published.params_active_compute is not None:
        assert counts.active_compute == pytest.approx(published.params_active_compute, rel=0.01)


def test_shapes_from_configs() -> None:
    # Values from the cited HF config.json files / papers.
    llama3_405b = get_preset("llama-3.1-405b").architecture
    assert (llama3_405b.layers, llama3_405b.hidden_size, llama3_405b.ffn_size) == (
        126,
        16384,
        53248,
    )
    assert (llama3_405b.heads, llama3_405b.kv_heads, llama3_405b.vocab_size) == (128, 8, 128256)
    # BLOOM: vocabulary 250,880 (padded), ALiBi, tied embeddings (bigscience/bloom config).
    bloom = get_preset("bloom-176b").architecture
    assert (bloom.vocab_size, bloom.positions, bloom.tied_embeddings) == (250880, "alibi", True)
    # OPT: vocab_size 50272 and learned positions offset by 2 (facebook/opt-* config.json,
    # modeling_opt.OPTLearnedPositionalEmbedding).
    opt = get_preset("opt-175b").architecture
    assert (opt.vocab_size, opt.positions, opt.position_offset) == (50272, "learned", 2)
    # Phi-3-mini-4k-instruct config.json: hidden 3072, intermediate 8192, 32 layers, 32 heads,
    # 32 KV heads, vocab 32064, max_position_embeddings 4096, tie_word_embeddings false.
    phi = get_preset("phi-3-mini").architecture
    assert (phi.hidden_size, phi.ffn_size, phi.layers, phi.heads, phi.kv_heads) == (
        3072,
        8192,
        32,
        32,
        32,
    )
    assert (phi.vocab_size, phi.max_context, phi.tied_embeddings) == (32064, 4096, False)
    # Falcon-40B config.json: n_layer 60, hidden 8192, n_head 128, n_head_kv 8, vocab 65024,
    # parallel_attn, new decoder architecture (ln_attn + ln_mlp), no biases; head tied.
    falcon = get_preset("falcon-40b").architecture
    assert (falcon.layers, falcon.hidden_size, falcon.heads, falcon.kv_heads) == (60, 8192, 128, 8)
    assert (falcon.vocab_size, falcon.norms_per_layer, falcon.tied_embeddings) == (65024, 2, True)
    # DeepSeek-V3 config_671B.json
    ds = get_preset("deepseek-v3").architecture
    assert ds.moe is not None
    assert ds.mla is not None
    assert (ds.moe.num_experts, ds.moe.experts_per_token, ds.moe.num_shared_experts) == (256, 8, 1)
    assert (ds.moe.first_dense_layers, ds.mla.kv_lora_rank, ds.mla.q_lora_rank) == (3, 512, 1536)


def test_unknown_preset_lists_the_known_ids() -> None:
    with pytest.raises(KeyError) as caught:
        get_preset("llama-9")
    message = str(caught.value)
    for preset_id in REQUIRED_IDS:
        assert preset_id in message


def test_lookup_is_case_insensitive() -> None:
    assert get_preset("Llama-2-7B") is get_preset("llama-2-7b")
