"""The hybrid and per-layer-input families (issue 28): Qwen3.5 and Qwen3-Next with Gated
DeltaNet layers, Nemotron-H's Mamba-2 / attention / MLP pattern, Gemma 4's per-layer
inputs, shared KV layers and wider global heads.

Whole-model counts are checked against transformers on the meta device
(tests/core/test_hf_families.py for the real configs in tests/fixtures/hf; here for each
configuration class's own defaults). The per-layer counts, KV caches and recurrent states
below are written out by hand from the modelling files of transformers 5.24.0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.core.files.hf_import import (
    HFImportError,
    architecture_from_config,
    architecture_from_path,
)
from llm_planner.core.primitives.architecture import (
    attention_params_per_layer,
    count_parameters,
    layer_params,
    recurrent_params_per_layer,
)
from llm_planner.core.quantities.flops import attention_forward_flops_per_token
from llm_planner.core.sections.inference import kv_cache_bytes, recurrent_state_bytes

HF = Path(__file__).parent.parent / "fixtures" / "hf"


def _config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF / name / "config.json").read_text())
    return data


@pytest.mark.parametrize(
    "model_type", ["qwen3_5", "qwen3_5_moe", "qwen3_next", "nemotron_h", "gemma4"]
)
def test_each_class_default_config_is_exact_on_the_meta_device(model_type: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type)
    data = config.to_dict()
    text = getattr(config, "text_config", None)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(text or config)
    theirs = sum(p.numel() for p in model.parameters())
    ours = count_parameters(architecture_from_config(data)).total
    # Nemotron-H's MoE routers keep a score-correction bias per expert as a buffer (stored
    # in the checkpoint and counted here, as DeepSeek-V3's)
    buffers = sum(
        b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias")
    )
    assert ours == theirs + buffers


def test_nemotron_h_reads_each_layer_from_its_pattern() -> None:
    arch = architecture_from_path(HF / "nemotron-nano-9b-v2").architecture
    pattern = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"
    assert arch.layers == len(pattern) == 56
    assert (arch.attention_layers, arch.recurrent_layers) == (4, 27)
    assert sum(arch.has_ffn(i) for i in range(56)) == 25
    assert arch.moe_layers == 0
    # one Mamba-2 mixer (NemotronHMamba2Mixer): h 4480, H 128 heads of P 80 (d 10240),
    # G 8 groups of N 128, conv 4 with bias, no projection biases
    h, d, heads, groups, n = 4480, 128 * 80, 128, 8, 128
    conv_dim = d + 2 * groups * n  # 12288
    in_proj = h * (d + conv_dim + heads)  # z, x·B·C, dt
    conv = conv_dim * 4 + conv_dim
    mixer = in_proj + conv + 3 * heads + d + d * h  # dt_bias, A_log, D, gated norm, out_proj
    assert recurrent_params_per_layer(arch) == mixer
    assert layer_params(arch, 0) == mixer + h  # "M": the mixer and one RMSNorm
    assert layer_params(arch, 1) == 2 * h * 15680 + h  # "-": squared-ReLU up and down
    assert layer_params(arch, 14) == 2 * h * 40 * 128 + 2 * h * 8 * 128 + h  # "*"


def test_nemotron_h_moe_layers_by_hand() -> None:
    arch = architecture_from_path(HF / "nemotron-3-nano-30b-a3b").architecture
    pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    assert (arch.recurrent_layers, arch.moe_layers, arch.attention_layers) == (23, 23, 6)
    assert [arch.is_moe_layer(i) for i in range(6)] == [c == "E" for c in pattern[:6]]
    # NemotronHMoE: 128 squared-ReLU experts (up, down) of 1856, the shared MLP of 3712,
    # the router h → 128 and its stored score-correction bias (128), one RMSNorm
    h = 2688
    moe = 128 * 2 * h * 1856 + 2 * h * 3712 + h * 128 + 128 + h
    assert layer_params(arch, 1) == moe


def test_qwen3_5_gated_deltanet_and_gated_attention_by_hand() -> None:
    arch = architecture_from_path(HF / "qwen3.5-27b").architecture
    assert (arch.attention_layers, arch.recurrent_layers) == (16, 48)
    assert [i for i in range(8) if arch.is_attention_layer(i)] == [3, 7]
    # Qwen3_5GatedDeltaNet: 16 key heads of 128 (q and k), 48 value heads of 128
    h, key, value, heads = 5120, 16 * 128, 48 * 128, 48
    conv_dim = 2 * key + value
    projections = h * conv_dim + h * value + 2 * h * heads  # in_proj_qkv, _z, _b, _a
    mixer = projections + conv_dim * 4 + 2 * heads + 128 + value * h  # conv, dt_bias, A_log
    assert recurrent_params_per_layer(arch) == mixer
    # Qwen3_5Attention: q_proj emits queries and the output gate (24·256·2), k and v 4·256,
    # per-head q and k norms of 256
    attention = h * 24 * 256 * 2 + 2 * h * 4 * 256 + 24 * 256 * h + 2 * 256
    assert attention_params_per_layer(arch, 3) == attention
    mlp = 3 * h * 17408
    assert layer_params(arch, 0) == mixer + mlp + 2 * h
    assert layer_params(arch, 3) == attention + mlp + 2 * h


def test_qwen3_5_caches_only_its_attention_layers_and_keeps_a_fixed_state() -> None:
    arch = architecture_from_path(HF / "qwen3.5-27b").architecture
    # 16 attention layers × K and V of 4 heads × 256 × 8192 tokens × 2 bytes
    assert kv_cache_bytes(arch, 8192, 1, "bf16") == 16 * 2 * 4 * 256 * 8192 * 2
    # 48 Gated DeltaNet layers: 48 heads × (128 × 128) state + (2·2048 + 6144) × 4 conv window
    per_layer = 48 * 128 * 128 + 10240 * 4
    assert recurrent_state_bytes(arch, 1, "bf16") == 48 * per_layer * 2


def test_gemma4_e2b_per_layer_inputs_shared_kv_and_global_heads_by_hand() -> None:
    arch = architecture_from_path(HF / "gemma-4-e2b-it").architecture
    counts = count_parameters(arch)
    h, layers, p = 1536, 35, 256
    table = 262144 * layers * p
    outside = table + h * layers * p + p  # embed_tokens_per_layer, projection, its norm
    assert counts.per_layer_table == table
    assert counts.per_layer_inputs == outside + layers * 2 * h * p
    # a tied head multiplies by the token table; the per-layer table is only looked up
    assert counts.active_compute == counts.active - table
    # layer 4: global (every 5th), head width 512, one KV head; layer 15: shares layer
    # 14's keys and values (the last 20 do), so it has no k/v projections, and a
    # double-wide MLP (use_double_wide_mlp)
    names = [m.name for m in arch.layer_matrices(index=4)]
    assert names[:4] == ["q", "k", "v", "o"]
    assert arch.layer_matrices(index=4)[0].d_out == 8 * 512
    shared = {m.name: m for m in arch.layer_matrices(index=15)}
    assert "k" not in shared
    assert "v" not in shared
    assert shared["gate"].d_out == 2 * 6144
    assert attention_params_per_layer(arch, 15) == 2 * h * 8 * 256 + 256  # q, o, q_norm
    # KV cache: layers 0..14 cache, 12 windowed (≤ 512 tokens, 1 head × 256) and 3 global
    # (1 head × 512), K and V, 8192 tokens, bf16
    expected = (12 * 2 * 256 * 512 + 3 * 2 * 512 * 8192) * 2
    assert kv_cache_bytes(arch, 8192, 1, "bf16") == expected


def test_gemma4_attention_flops_use_each_layer_kind_s_width() -> None:
    arch = architecture_from_path(HF / "gemma-4-e2b-it").architecture
    # 28 local layers: Q·Kᵀ and A·V over 8 heads of 256 within 512 tokens; 7 global layers
    # over 8 heads of 512 and the whole 8192-token context (not causal-averaged)
    local = 28 * 2 * (8 * 256 + 8 * 256) * 512
    global_ = 7 * 2 * (8 * 512 + 8 * 512) * 8192
    assert attention_forward_flops_per_token(arch, 8192) == local + global_


def test_gemma4_moe_layer_by_hand() -> None:
    arch = architecture_from_path(HF / "gemma-4-26b-a4b-it").architecture
    counts = count_parameters(arch)
    h, experts, expert = 2816, 128, 704
    # Gemma4TextExperts: gate_up_proj E × 2f × h and down_proj E × h × f
    assert counts.experts == 30 * experts * 3 * h * expert
    # the MLP beside the experts (intermediate_size 2112 = 3 × 704) runs for every token
    assert counts.shared_experts == 30 * 3 * h * 2112
    # Gemma4TextRouter: proj h → E, scale (h), per_expert_scale (E); its norm has no scale
    assert counts.router == 30 * (h * experts + h + experts)
    # every layer: 4 norms of Gemma 3, post_feedforward_layernorm_1/_2 and
    # pre_feedforward_layernorm_2; the final norm (the q/k norms count as attention)
    assert counts.norms == 30 * 7 * h + h
    # global layers (5 of 30) keep 2 KV heads of 512 and no v projection (attention_k_eq_v)
    assert [m.name for m in arch.attention_matrices(5)] == ["q", "k", "o"]
    assert arch.attention_matrices(5)[1].d_out == 2 * 512


def test_gemma4_moe_beside_an_mlp_that_is_not_whole_experts_is_refused() -> None:
    data = _config("gemma-4-26b-a4b-it")
    data["text_config"] = {**data["text_config"], "intermediate_size": 2000}
    with pytest.raises(HFImportError, match="enable_moe_block"):
        architecture_from_config(data)


def test_nemotron_h_pattern_with_unknown_letters_is_refused() -> None:
    data = {**_config("nemotron-nano-9b-v2"), "hybrid_override_pattern": "M*X-"}
    with pytest.raises(HFImportError, match="hybrid_override_pattern"):
        architecture_from_config(data)


def test_qwen3_5_layer_types_off_the_period_are_refused() -> None:
    data = _config("qwen3.5-27b")
    types = list(data["text_config"]["layer_types"])
    types[3], types[4] = types[4], types[3]
    data["text_config"] = {**data["text_config"], "layer_types": types}
    with pytest.raises(HFImportError, match="layer_types"):
        architecture_from_config(data)


@pytest.mark.parametrize(
    "name", ["qwen3.5-27b", "qwen3.5-35b-a3b", "nemotron-3-nano-30b-a3b", "gemma-4-e2b-it"]
)
def test_one_stage_holds_every_parameter_and_lora_adapts_only_attention_layers(name: str) -> None:
    from llm_planner.core.sections.training import TrainingInputs, stage_params

    arch = architecture_from_path(HF / name).architecture
    held = stage_params(
        arch, TrainingInputs(), layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    assert held.layer_params + held.outside_params == count_parameters(arch).total
    lora = stage_params(
        arch,
        TrainingInputs(lora_rank=16, lora_targets=("q", "k", "v", "o")),
        layers_on_stage=arch.layers,
        first=True,
        last=True,
        pp=1,
        scale=1.0,
    )
    # rank 16 on q, k, v, o of the attention layers only (r·(d_in + d_out) each)
    expected = sum(
        16 * (m.d_in + m.d_out)
        for i in range(arch.layers)
        if arch.is_attention_layer(i)
        for m in arch.attention_matrices(i)
    )
    assert lora.lora_params == pytest.approx(expected, rel=1e-12)
