"""Current model families from real public config.json files (tests/fixtures/hf).

Each fixture folder holds a published ``config.json`` and ``expected.json``: where the
config comes from, and the parameter count that ``transformers`` reports when it builds that
config on the meta device (or, for remote-code models, the hand count written out below).
The counts are stored so the comparison runs without torch; where torch and transformers
are installed, :func:`test_transformers_meta_device_count` rebuilds each model and compares
again, parameter for parameter.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from llm_planner.core.files.hf_import import (
    HFImportError,
    architecture_from_config,
    architecture_from_path,
    inference_fields,
    quantization_format,
)
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hf"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/expected.json"))
REMOTE_CODE = {"internlm2_5-7b", "deepseek-moe-16b-base", "refinedweb-40b", "chatglm3-6b"}
BUFFER_PARAMS = {
    "deepseek-v3": 58 * 256,
    "kimi-k2-instruct": 60 * 384,
    "nemotron-3-nano-30b-a3b": 23 * 128,
}
"""DeepSeek-V3's per-expert score-correction biases: stored in the checkpoint (and counted
here), registered as buffers, not parameters, by transformers' DeepseekV3TopkRouter (and
NemotronHTopkRouter: Nemotron 3 Nano's 23 MoE layers of 128 experts)."""

META_MODEL_TYPE = {"kimi-k2-instruct": "deepseek_v3"}
"""Configs whose model_type transformers has no class for, built as the class their
``architectures`` field names (Kimi-K2: DeepseekV3ForCausalLM)."""

REQUIRED_TYPES = {
    *("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "olmo", "olmo2", "olmoe", "cohere"),
    *("cohere2", "starcoder2", "gpt_oss", "llama4", "gptj", "gpt_bigcode", "stablelm", "phi"),
    *("internlm2", "deepseek", "granite", "granitemoe", "mamba", "mamba2", "rwkv", "jamba"),
    *("qwen3_5", "qwen3_5_moe", "nemotron_h", "gemma4"),
}


def _expected(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name / "expected.json").read_text())
    return data


def _config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name / "config.json").read_text())
    return data


def test_every_required_family_has_a_real_config_with_its_source():
    types = {_config(name)["model_type"] for name in CASES}
    assert REQUIRED_TYPES - types == set()
    for name in CASES:
        expected = _expected(name)
        assert expected["hub"].strip(), name
        assert expected["params_total"] > 0, name
        assert expected["counted_by"].strip(), name


@pytest.mark.parametrize("name", CASES)
def test_exact_count_matches_the_recorded_ground_truth(name):
    expected = _expected(name)
    counts = count_parameters(architecture_from_path(FIXTURES / name).architecture)
    assert counts.total == expected["params_total"] + BUFFER_PARAMS.get(name, 0)
    if expected.get("params_active") is not None:
        assert counts.active == expected["params_active"] + BUFFER_PARAMS.get(name, 0)


def _meta_model_count(name: str) -> tuple[int, int, int]:
    """(total, routed expert parameters, top-k over E as k·1e6 // E) from transformers."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    data = _config(name)
    model_type = META_MODEL_TYPE.get(name, data["model_type"])
    data.pop("model_type")
    data.pop("auto_map", None)
    data.pop("quantization_config", None)
    if "text_config" in data:  # multimodal: the language model alone
        text = dict(data["text_config"])
        model_type = text.pop("model_type", f"{model_type}_text")
        text.pop("attn_temperature_tuning", None)  # Scout writes 4; v5 wants a bool
        config = transformers.AutoConfig.for_model(model_type, **text)
        config.tie_word_embeddings = data.get("tie_word_embeddings", config.tie_word_embeddings)
    else:
        config = transformers.AutoConfig.for_model(model_type, **data)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    total = routed = 0
    for parameter_name, tensor in model.named_parameters():
        total += tensor.numel()
        if ".experts" in parameter_name and "shared" not in parameter_name:
            routed += tensor.numel()
    return total, routed, 0


@pytest.mark.parametrize("name", sorted(set(CASES) - REMOTE_CODE))
def test_transformers_meta_device_count(name):
    total, _, _ = _meta_model_count(name)
    ours = count_parameters(architecture_from_path(FIXTURES / name).architecture).total
    assert ours == total + BUFFER_PARAMS.get(name, 0)


# ------------------------------------------------------------------ remote code, by hand


def test_chatglm_hand_count_from_its_modelling_file():
    # modeling_chatglm.py (THUDM/chatglm3-6b, remote code, read not run): embedding and a
    # separate output_layer of padded_vocab_size 65024 × 4096; per block: input and
    # post-attention RMSNorm (4096 each), query_key_value 4096 → 32·128 + 2·2·128 = 4608
    # with bias (add_qkv_bias), dense 4096 → 4096 without bias (add_bias_linear false),
    # dense_h_to_4h 4096 → 2·13696 and dense_4h_to_h 13696 → 4096 (SwiGLU), no biases;
    # 28 blocks; a final RMSNorm.
    embed = 65024 * 4096
    block = 2 * 4096 + 4096 * 4608 + 4608 + 4096 * 4096 + 4096 * 2 * 13696 + 13696 * 4096
    total = 2 * embed + 28 * block + 4096
    assert total == 6_243_584_000  # the count THUDM's model card rounds to 6.2B
    arch = architecture_from_path(FIXTURES / "chatglm3-6b").architecture
    assert count_parameters(arch).total == total == _expected("chatglm3-6b")["params_total"]


def test_internlm2_hand_count_from_its_modelling_file():
    # modeling_internlm2.py (internlm/internlm2_5-7b, remote code, read not run):
    # wqkv h → (a + 2·kv)·d = 4096 → (32 + 16)·128, wo 4096×4096, no bias (config bias false);
    # w1, w3 4096 → 14336 and w2 back; attention_norm, ffn_norm RMSNorm; tok_embeddings and
    # output 92544×4096 (untied); final norm.
    attention = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096
    layer = attention + 3 * 4096 * 14336 + 2 * 4096
    expected = 32 * layer + 2 * 92544 * 4096 + 4096
    assert expected == 7_737_708_544 == _expected("internlm2_5-7b")["params_total"]
    arch = architecture_from_path(FIXTURES / "internlm2_5-7b").architecture
    assert count_parameters(arch).total == expected
    assert arch.attention_bias == "none"
    # InternLM2Config's default bias is True: q/k/v and o carry biases then
    biased = architecture_from_config({**_config("internlm2_5-7b"), "bias": None})
    assert biased.attention_bias == "all"


def test_deepseek_moe_v1_hand_count_from_its_modelling_file():
    # modeling_deepseek.py (deepseek-ai/deepseek-moe-16b-base, remote code, read not run):
    # layer 0 dense (first_k_dense_replace 1, intermediate 10944); layers 1-27 MoE: gate
    # weight 64×2048 (no bias), 64 experts of 1408, shared experts one MLP of 2·1408.
    attention = 4 * 2048 * 2048
    dense = attention + 3 * 2048 * 10944 + 2 * 2048
    expert = 3 * 2048 * 1408
    moe = attention + (64 + 2) * expert + 64 * 2048 + 2 * 2048
    total = dense + 27 * moe + 2 * 102400 * 2048 + 2048
    assert total == 16_375_728_128  # "16.4B" (DeepSeekMoE, arXiv:2401.06066, Table 1)
    counts = count_parameters(
        architecture_from_path(FIXTURES / "deepseek-moe-16b-base").architecture
    )
    assert counts.total == total
    active = total - 27 * (64 - 6) * expert
    assert counts.active == active == 2_828_650_496  # "2.8B activated"


# ------------------------------------------------------------------ per-layer differences


def _arch(name: str) -> Any:
    return architecture_from_path(FIXTURES / name).architecture


def test_sliding_and_global_layers():
    gemma3 = _arch("gemma-3-1b-pt")  # 26 layers, every 6th global: 5, 11, 17, 23
    assert (gemma3.sliding_window, gemma3.global_attention_every) == (512, 6)
    assert gemma3.windowed_attention_layers == 26 - 4
    cohere2 = _arch("command-r7b-12-2024")  # 32 layers, every 4th global
    assert cohere2.windowed_attention_layers == 24
    oss = _arch("gpt-oss-20b")  # layer_types: sliding, full, ... (24)
    assert (oss.sliding_window, oss.global_attention_every, oss.windowed_attention_layers) == (
        128,
        2,
        12,
    )
    scout = _arch("llama-4-scout-17b-16e")  # chunked attention on 3 of every 4 layers
    assert (scout.sliding_window, scout.windowed_attention_layers) == (8192, 36)


def test_layer_types_that_are_not_periodic_are_refused():
    data = _config("gpt-oss-20b")
    data["layer_types"] = ["full_attention", *data["layer_types"][1:]]
    with pytest.raises(HFImportError, match="not every-N-th-layer global"):
        architecture_from_config(data)


def test_qk_norms_sinks_and_biases():
    # Qwen3 / Gemma 3: q_norm, k_norm of head_dim; OLMo-2: over a·d and kv·d
    assert _arch("qwen3-8b").qk_norm == "head"
    assert _arch("gemma-3-1b-pt").qk_norm == "head"
    assert _arch("olmo-2-1124-7b").qk_norm == "full"
    assert _arch("olmoe-1b-7b-0924").qk_norm == "full"
    oss = _arch("gpt-oss-20b")
    assert oss.attention_sinks
    assert (oss.attention_bias, oss.mlp_bias) == ("all", True)
    assert oss.moe is not None
    assert oss.moe.router_bias
    # gpt-oss attention per layer by hand: q 2880×4096 + k, v 2880×512 + o 4096×2880,
    # biases 4096 + 2·512 + 2880, 64 sinks
    h, q, kv = 2880, 64 * 64, 8 * 64
    attention = 2 * h * q + 2 * h * kv + (q + 2 * kv + h) + 64
    assert count_parameters(oss).attention == 24 * attention
    assert _arch("phi-2").head_bias
    assert _arch("gpt-j-6b").head_bias
    assert _arch("stablelm-2-1_6b").attention_bias == "qkv"
    olmo = _arch("olmo-1b-hf")  # OlmoLayerNorm has no parameters at all
    assert count_parameters(olmo).norms == 0


def test_dense_and_moe_layers_interleave():
    jamba = _arch("jamba-v0.1")  # attention at i % 8 == 4, MoE at i % 2 == 1
    assert (jamba.attention_layers, jamba.recurrent_layers) == (4, 28)
    assert (jamba.moe_layers, jamba.dense_layers) == (16, 16)
    assert [i for i in range(32) if jamba.is_attention_layer(i)] == [4, 12, 20, 28]
    qwen_moe = _arch("qwen3-30b-a3b")
    assert qwen_moe.moe_layers == 48
    step2 = architecture_from_config(
        {**_config("qwen3-30b-a3b"), "decoder_sparse_step": 2, "mlp_only_layers": [0, 1]}
    )
    # (i + 1) % 2 == 0 and i ≥ 2: layers 3, 5, ..., 47
    assert step2.moe_layers == 23
    maverick = architecture_from_config(
        {
            **_config("llama-4-scout-17b-16e")["text_config"],
            "interleave_moe_layer_step": 2,
            "moe_layers": list(range(1, 48, 2)),
        }
    )
    assert (maverick.moe_layers, maverick.dense_layers) == (24, 24)


def test_multimodal_configs_import_their_language_model_with_a_note():
    imported = architecture_from_path(FIXTURES / "gemma-3-4b-it")
    assert imported.architecture.layers == 34
    assert any("vision tower" in note for note in imported.notes)


# ------------------------------------------------------------------ weights formats


def test_gpt_oss_mxfp4_experts_bytes_by_hand():
    imported = architecture_from_path(FIXTURES / "gpt-oss-20b")
    assert imported.weights_format == "mxfp4"
    # 24 layers · 32 experts · 3·2880·2880 matrix elements at 4 + 8/32 bits; the rest bf16
    experts = 24 * 32 * 3 * 2880 * 2880
    total = 20_914_757_184
    expected = experts * 4.25 / 8 + (total - experts) * 2
    assert imported.weights_bytes == pytest.approx(expected)
    assert expected / 1e9 == pytest.approx(13.76, abs=0.01)  # the Hub's 13.8 GB checkpoint
    fields = inference_fields(imported)
    assert fields["weights_format"] == "mxfp4"
    assert fields["stored_weights"]["bytes"] == pytest.approx(expected)


def test_deepseek_v3_fp8_is_honoured():
    imported = architecture_from_path(FIXTURES / "deepseek-v3")
    assert imported.weights_format == "fp8"
    assert inference_fields(imported) == {"weights_format": "fp8"}


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "awq_int4_g128"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq_int4_g128"),
        ({"quant_method": "gptq", "bits": 8}, "gptq_int8_g128"),  # GPTQConfig group_size 128
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "nf4"),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "eetq"}, None),
    ],
)
def test_quantization_configs_set_the_weights_format(quant, expected):
    fmt, _, note = quantization_format(quant, _arch("llama-3.1-8b"))
    assert fmt == expected
    assert note


def test_infinity_in_a_third_party_config_is_accepted(tmp_path):
    # transformers writes float("inf") as Infinity (Nemotron-H's time_step_limit); our
    # scenario files stay strict (tests/core/test_store.py), third-party configs do not
    text = (FIXTURES / "mamba-codestral-7b-v0.1" / "config.json").read_text()
    text = text.replace(
        '"time_step_floor"', '"time_step_limit": [0.0, Infinity],\n  "time_step_floor"'
    )
    (tmp_path / "config.json").write_text(text)
    imported = architecture_from_path(tmp_path)
    assert count_parameters(imported.architecture).total == 7_285_403_648


# ------------------------------------------------------------------ new presets


NEW_PRESETS = [
    *("qwen3-8b", "qwen3-30b-a3b", "gemma-3-1b", "gpt-oss-20b", "olmoe-1b-7b"),
    *("jamba-v0.1", "mamba-130m", "mamba-codestral-7b", "rwkv-4-169m"),
]


@pytest.mark.parametrize("preset_id", NEW_PRESETS)
def test_new_presets_match_their_published_figures(preset_id):
    preset = get_preset(preset_id)
    counts = count_parameters(preset.architecture)
    assert preset.published.params_total is not None
    assert counts.total == pytest.approx(preset.published.params_total, rel=0.01)
    if preset.published.params_active is not None:
        assert counts.active == pytest.approx(preset.published.params_active, rel=0.01)
    if preset.published.params_active_compute is not None:
        assert counts.active_compute == pytest.approx(
            preset.published.params_active_compute, rel=0.01
        )
    assert math.isfinite(counts.total)
