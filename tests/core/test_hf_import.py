"""Hugging Face config.json import and safetensors header reading (core/hf_import.py).

Fixtures in tests/fixtures/hf are the official config.json files (sources in its README).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.core.files.hf_import import (
    CONFIG_MAX_BYTES,
    HFImportError,
    architecture_from_config,
    architecture_from_path,
    read_safetensors_header,
)
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hf"


def _imported(name: str) -> Any:
    return architecture_from_path(FIXTURES / name)


def _total(name: str) -> int:
    return count_parameters(_imported(name).architecture).total


# ------------------------------------------------------------------ published totals


def test_llama_2_7b():
    # Llama-2-7B: "6.74B" (HF model card / safetensors metadata). Hand count: 32 layers of
    # 4·4096² attention + 3·4096·11008 SwiGLU + 2·4096 RMSNorm, untied 32000×4096 tables,
    # final norm.
    expected = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert expected == 6_738_415_616
    assert _total("llama-2-7b-hf") == expected


def test_llama_3_1_8b():
    # Llama-3.1-8B: 8.03B (HF model card). GQA 8 kv heads of 128; vocab 128256.
    attention = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    expected = 32 * (attention + 3 * 4096 * 14336 + 2 * 4096) + 2 * 128256 * 4096 + 4096
    assert _total("llama-3.1-8b") == expected == 8_030_261_248


def test_mistral_7b():
    # Mistral-7B-v0.1: 7.24B (HF safetensors metadata; Jiang et al. 2023 "7.3B").
    attention = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    expected = 32 * (attention + 3 * 4096 * 14336 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert _total("mistral-7b-v0.1") == expected == 7_241_732_096
    arch = _imported("mistral-7b-v0.1").architecture
    assert arch.sliding_window == 4096


def test_mixtral_8x7b_total_and_active():
    # Mixtral-8x7B (Jiang et al. 2024, "Mixtral of Experts"): 46.7B total, 12.9B active.
    counts = count_parameters(_imported("mixtral-8x7b-v0.1").architecture)
    attention = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    expert = 3 * 4096 * 14336
    layer = attention + 8 * expert + 4096 * 8 + 2 * 4096  # + router, norms
    assert counts.total == 32 * layer + 2 * 32000 * 4096 + 4096 == 46_702_792_704
    assert counts.active == counts.total - 32 * 6 * expert
    assert abs(counts.active / 12.9e9 - 1) < 0.01


def test_qwen2_5_7b_has_qkv_bias():
    # Qwen2.5-7B: 7.61B (Qwen2.5 technical report, Table 1 / HF card). q, k, v biases.
    arch = _imported("qwen2.5-7b").architecture
    assert arch.attention_bias == "qkv"
    assert arch.sliding_window is None  # use_sliding_window is false
    attention = 2 * 3584 * 3584 + 2 * 3584 * 4 * 128 + (3584 + 2 * 4 * 128)
    expected = 28 * (attention + 3 * 3584 * 18944 + 2 * 3584) + 2 * 152064 * 3584 + 3584
    assert _total("qwen2.5-7b") == expected == 7_615_616_512


def test_gpt_neox_20b():
    # GPT-NeoX-20B (Black et al. 2022, Table 1): 20,554,567,680 parameters.
    h = 6144
    layer = (4 * h * h + 4 * h) + (2 * h * 4 * h + 4 * h + h) + 2 * 2 * h
    expected = 44 * layer + 2 * 50432 * h + 2 * h
    assert _total("gpt-neox-20b") == expected == 20_554_567_680
    arch = _imported("gpt-neox-20b").architecture
    assert arch.parallel_attention
    assert not arch.tied_embeddings


def test_gpt2_small():
    # GPT-2 small: 124,439,808 parameters (HF openai-community/gpt2; "124M").
    # n_inner null → 4·768; learned positions 1024×768; tied head.
    arch = _imported("gpt2").architecture
    assert arch.ffn_size == 4 * 768
    assert arch.positions == "learned"
    assert arch.tied_embeddings
    layer = (4 * 768 * 768 + 4 * 768) + (2 * 768 * 3072 + 3072 + 768) + 2 * 2 * 768
    expected = 12 * layer + 50257 * 768 + 1024 * 768 + 2 * 768
    assert count_parameters(arch).total == expected == 124_439_808


def test_falcon_7b_multi_query_one_norm():
    # Falcon-7B: multi_query → one kv head; old architecture with parallel attention → one
    # LayerNorm per layer; qkv 4544 → 4544 + 2·64 = 4672, as the model's module printout shows.
    arch = _imported("falcon-7b").architecture
    assert (arch.heads, arch.kv_heads, arch.head_dim) == (71, 1, 64)
    assert arch.norms_per_layer == 1
    assert arch.attention_bias == "none"
    h = 4544
    layer = h * (h + 2 * 64) + h * h + 2 * h * 18176 + 2 * h
    expected = 32 * layer + 65024 * h + 2 * h  # tied head
    assert count_parameters(arch).total == expected == 6_921_720_704


def test_falcon_40b_and_its_refinedweb_config_agree():
    # Falcon-40B: GQA via num_kv_heads 8, new decoder architecture (ln_attn + ln_mlp).
    # The first published config (model_type RefinedWeb, n_head / n_head_kv / n_layer)
    # must give the same architecture.
    new = _imported("falcon-40b").architecture
    old = _imported("refinedweb-40b").architecture
    assert new.model_dump(exclude={"name"}) == old.model_dump(exclude={"name"})
    assert (new.kv_heads, new.norms_per_layer) == (8, 2)
    h = 8192
    layer = h * h + 2 * h * 8 * 64 + h * h + 2 * h * 4 * h + 2 * 2 * h
    assert count_parameters(new).total == 60 * layer + 65024 * h + 2 * h == 41_303_293_952


def test_gemma_2_27b():
    # Gemma-2-27B: 27.2B (Gemma 2 report, Table 1 / HF card). head_dim 128 ≠ 4608/32,
    # 4 RMSNorms per layer, GeGLU, tied 256000-row embedding, alternate sliding window.
    arch = _imported("gemma-2-27b").architecture
    assert arch.head_dim == 128
    assert arch.norms_per_layer == 4
    assert arch.ffn_kind == "geglu"
    assert (arch.sliding_window, arch.sliding_window_layers) == (4096, "alternate")
    attention = 4608 * 32 * 128 + 2 * 4608 * 16 * 128 + 32 * 128 * 4608
    layer = attention + 3 * 4608 * 36864 + 4 * 4608
    expected = 46 * layer + 256000 * 4608 + 4608
    assert count_parameters(arch).total == expected == 27_227_128_320


def test_phi_3_mini_fused_projections_count_as_separate():
    # Phi-3-mini: 3.8B (Abdin et al. 2024). qkv_proj and gate_up_proj are fused but hold
    # the same parameters as separate maps.
    layer = 4 * 3072 * 3072 + 3 * 3072 * 8192 + 2 * 3072
    expected = 32 * layer + 2 * 32064 * 3072 + 3072
    assert _total("phi-3-mini-4k-instruct") == expected == 3_821_079_552


def test_deepseek_v3_total_and_active():
    # DeepSeek-V3 (arXiv:2412.19437, abstract): 671B total, 37B activated per token.
    imported = _imported("deepseek-v3")
    arch = imported.architecture
    assert arch.mla is not None
    assert arch.moe is not None
    assert arch.moe.router_bias  # topk_method noaux_tc: per-expert correction bias
    assert (arch.moe.first_dense_layers, arch.moe.num_shared_experts) == (3, 1)
    counts = count_parameters(arch)
    mla = (
        7168 * 1536
        + 1536
        + 1536 * 128 * 192
        + 7168 * 576
        + 512
        + 512 * 128 * 256
        + 128 * 128 * 7168
    )
    expert = 3 * 7168 * 2048
    dense_layer = mla + 3 * 7168 * 18432 + 2 * 7168
    moe_layer = mla + 257 * expert + 7168 * 256 + 256 + 2 * 7168
    expected = 3 * dense_layer + 58 * moe_layer + 2 * 129280 * 7168 + 7168
    assert counts.total == expected == 671_026_419_200
    assert abs(counts.active_compute / 37e9 - 1) < 0.02
    assert any("num_nextn_predict_layers" in note for note in imported.notes)


FIXTURE_PRESETS = {
    "llama-2-7b-hf": "llama-2-7b",
    "llama-3.1-8b": "llama-3.1-8b",
    "mistral-7b-v0.1": "mistral-7b",
    "mixtral-8x7b-v0.1": "mixtral-8x7b",
    "qwen2.5-7b": "qwen2.5-7b",
    "gpt-neox-20b": "gpt-neox-20b",
    "falcon-40b": "falcon-40b",
    "gemma-2-27b": "gemma-2-27b",
    "phi-3-mini-4k-instruct": "phi-3-mini",
    "deepseek-v3": "deepseek-v3",
}


@pytest.mark.parametrize(("fixture", "preset"), FIXTURE_PRESETS.items())
def test_import_matches_the_preset_shape(fixture, preset):
    imported = _imported(fixture).architecture
    expected = get_preset(preset).architecture
    keys = ["layers", "hidden_size", "heads", "kv_heads", "head_dim", "ffn_size", "ffn_kind"]
    keys += ["vocab_size", "tied_embeddings", "norm", "attention_bias", "moe", "mla"]
    for key in keys:
        assert getattr(imported, key) == getattr(expected, key), key
    assert count_parameters(imported).total == count_parameters(expected).total


def test_config_file_path_and_folder_are_equivalent():
    by_folder = _imported("gpt2")
    by_file = architecture_from_path(FIXTURES / "gpt2" / "config.json")
    assert by_folder.architecture == by_file.architecture
    assert by_file.source_path == FIXTURES / "gpt2" / "config.json"
    assert by_file.model_type == "gpt2"
    assert by_folder.safetensors_params is None  # no weights in the fixture folder
    assert _imported("llama-2-7b-hf").config_dtype == "fp16"


# ------------------------------------------------------------------ model types by config dict


def _llama_dict(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    base.update(extra)
    return base


def test_llama_defaults_and_biases():
    arch = architecture_from_config(_llama_dict())
    assert (arch.head_dim, arch.max_context, arch.tied_embeddings) == (16, 2048, False)
    biased = architecture_from_config(_llama_dict(attention_bias=True, mlp_bias=True))
    assert biased.attention_bias == "all"
    assert biased.mlp_bias
    assert architecture_from_config(_llama_dict(num_key_value_heads=None)).kv_heads == 4


def test_gemma_v1_defaults():
    arch = architecture_from_config(_llama_dict(model_type="gemma", head_dim=None))
    assert arch.head_dim == 256  # GemmaConfig default
    assert arch.tied_embeddings
    assert arch.ffn_kind == "geglu"
    assert arch.norms_per_layer == 2


def test_deepseek_v2_lite_style():
    # DeepSeek-V2-Lite: no q low-rank (q_lora_rank null), greedy top-k (no router bias).
    data = {
        "model_type": "deepseek_v2",
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
        "q_lora_rank": None,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "v_head_dim": 16,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "n_shared_experts": 2,
        "first_k_dense_replace": 1,
        "topk_method": "greedy",
    }
    arch = architecture_from_config(data)
    assert arch.mla is not None
    assert arch.mla.q_lora_rank is None
    assert arch.moe is not None
    assert not arch.moe.router_bias
    assert (arch.moe.num_shared_experts, arch.moe.first_dense_layers) == (2, 1)


def test_qwen2_moe_shared_expert_as_routed_size_experts():
    # Qwen1.5-MoE-A2.7B style: shared expert of 4 × moe_intermediate_size.
    data = _llama_dict(
        model_type="qwen2_moe",
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=128,
        decoder_sparse_step=1,
        mlp_only_layers=[],
    )
    arch = architecture_from_config(data)
    assert arch.moe is not None
    assert (arch.moe.num_shared_experts, arch.moe.expert_ffn_size) == (4, 32)
    assert arch.attention_bias == "qkv"
    assert arch.moe.shared_expert_gate  # Qwen2MoeSparseMoeBlock.shared_expert_gate: h → 1
    # decoder_sparse_step 2: layer i is MoE when (i + 1) % 2 == 0, so layer 1 of 2
    sparse = architecture_from_config({**data, "decoder_sparse_step": 2})
    assert (sparse.moe_layers, sparse.dense_layers) == (1, 1)
    assert [sparse.is_moe_layer(i) for i in range(2)] == [False, True]


# ------------------------------------------------------------------ errors


def test_missing_field_names_file_field_and_type():
    data = _llama_dict()
    del data["num_hidden_layers"]
    with pytest.raises(HFImportError) as caught:
        architecture_from_config(data, "some/config.json")
    assert str(caught.value) == "some/config.json: missing field 'num_hidden_layers' (llama)"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"hidden_size": "4096"}, "field 'hidden_size' must be an integer"),
        ({"hidden_size": True}, "field 'hidden_size' must be an integer"),
        ({"num_hidden_layers": 0}, "field 'num_hidden_layers' must be at least 1"),
        ({"num_hidden_layers": 10**6}, "field 'num_hidden_layers' is implausibly large"),
        ({"vocab_size": 2**40}, "field 'vocab_size' is implausibly large"),
        ({"tie_word_embeddings": "no"}, "field 'tie_word_embeddings' must be true or false"),
        ({"num_key_value_heads": 3}, "heads (4) must be a multiple of kv_heads (3)"),
        ({"hidden_size": 66}, "not a multiple of num_attention_heads"),
    ],
)
def test_bad_fields(extra, needle):
    with pytest.raises(HFImportError, match=r"config\.json: .*") as caught:
        architecture_from_config(_llama_dict(**extra))
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_unknown_and_missing_model_type():
    with pytest.raises(HFImportError, match=r"unsupported model_type 'bert' \(supported: "):
        architecture_from_config({"model_type": "bert"})
    with pytest.raises(HFImportError, match="missing field 'model_type'"):
        architecture_from_config({"hidden_size": 10})


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"model_type": "llama",', "not valid JSON (line 1"),
        (b"[1, 2]", "must be a JSON object, not list"),
        (b"\xff\xfe\x00", "not UTF-8"),
        # a config may hold NaN / Infinity (transformers writes them); a shape field may not
        (
            b'{"model_type": "llama", "num_hidden_layers": NaN}',
            "field 'num_hidden_layers' must be an integer",
        ),
    ],
)
def test_malformed_config_files(tmp_path, content, needle):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(HFImportError) as caught:
        architecture_from_path(path)
    assert str(caught.value).startswith(str(path))
    assert needle in str(caught.value)


def test_oversized_config_is_refused_unread(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b" " * (CONFIG_MAX_BYTES + 1))
    with pytest.raises(HFImportError, match="over the 1,000,000-byte limit"):
        architecture_from_path(path)


def test_folder_without_config_and_missing_path(tmp_path):
    with pytest.raises(HFImportError, match=r"no config\.json in this folder"):
        architecture_from_path(tmp_path)
    with pytest.raises(HFImportError, match="no such file or folder"):
        architecture_from_path(tmp_path / "nope")


def test_weights_file_instead_of_folder(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [4])})
    with pytest.raises(HFImportError, match="give the model folder"):
        architecture_from_path(tmp_path / "model.safetensors")


def test_remote_code_is_never_run(tmp_path):
    # a config pointing at custom code next to it: the importer reads JSON only
    marker = tmp_path / "ran"
    (tmp_path / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    data = _llama_dict(auto_map={"AutoModelForCausalLM": "modeling_evil.Evil"})
    (tmp_path / "config.json").write_text(json.dumps(data))
    architecture_from_path(tmp_path)
    assert not marker.exists()


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                *("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads"),
                *("num_key_value_heads", "intermediate_size", "vocab_size", "head_dim"),
                *("n_embd", "n_layer", "n_head", "tie_word_embeddings", "kv_lora_rank"),
                "n_routed_experts",
            ]
        ),
        st.one_of(
            st.sampled_from(["llama", "gpt2", "falcon", "deepseek_v3", "gemma2", "mixtral"]),
            st.integers(-5, 5000),
            st.booleans(),
            st.none(),
            st.floats(allow_nan=False),
            st.text(max_size=5),
        ),
    )
)
def test_arbitrary_configs_raise_only_hf_import_error(data):
    try:
        arch = architecture_from_config(data)
    except HFImportError as error:
        message = str(error)
    else:
        message = ""
        assert count_parameters(arch).total > 0
    assert "\n" not in message


# ------------------------------------------------------------------ safetensors

_WIDTH = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I8": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A minimal safetensors file by hand: 8-byte LE header length, JSON header, zero data."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * _WIDTH[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def _tiny_llama_tensors(layers: range, dtype: str = "BF16") -> dict[str, tuple[str, list[int]]]:
    """HF Llama tensor names and shapes for _llama_dict(): h 64, 4 heads, 2 kv heads of 16."""
    tensors: dict[str, tuple[str, list[int]]] = {}
    for i in layers:
        p = f"model.layers.{i}."
        tensors |= {
            p + "self_attn.q_proj.weight": (dtype, [64, 64]),
            p + "self_attn.k_proj.weight": (dtype, [32, 64]),
            p + "self_attn.v_proj.weight": (dtype, [32, 64]),
            p + "self_attn.o_proj.weight": (dtype, [64, 64]),
            p + "mlp.gate_proj.weight": (dtype, [128, 64]),
            p + "mlp.up_proj.weight": (dtype, [128, 64]),
            p + "mlp.down_proj.weight": (dtype, [64, 128]),
            p + "input_layernorm.weight": (dtype, [64]),
            p + "post_attention_layernorm.weight": (dtype, [64]),
        }
    return tensors


def _tiny_model_folder(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(_llama_dict(torch_dtype="bfloat16")))


def test_single_safetensors_file_gives_exact_count_and_dtype(tmp_path):
    _tiny_model_folder(tmp_path)
    tensors = _tiny_llama_tensors(range(2))
    tensors["model.embed_tokens.weight"] = ("BF16", [100, 64])
    tensors["model.norm.weight"] = ("F32", [64])
    tensors["lm_head.weight"] = ("BF16", [100, 64])
    write_safetensors(tmp_path / "model.safetensors", tensors)
    imported = architecture_from_path(tmp_path)
    # hand count: 2·(64·64 + 2·32·64 + 64·64 + 3·64·128 + 2·64) + 2·100·64 + 64
    expected = 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 2 * 100 * 64 + 64
    assert imported.safetensors_params == expected == 86_848
    assert imported.safetensors_params == count_parameters(imported.architecture).total
    assert imported.safetensors_dtype == "bf16"  # F32 holds only the 64-element final norm
    assert imported.safetensors_files == 1


def test_sharded_checkpoint_with_index_and_fp8_scales(tmp_path):
    _tiny_model_folder(tmp_path)
    first = _tiny_llama_tensors(range(1), "F8_E4M3")
    first["model.embed_tokens.weight"] = ("BF16", [100, 64])
    first["model.layers.0.self_attn.q_proj.weight_scale_inv"] = ("F32", [1, 1])
    second = _tiny_llama_tensors(range(1, 2), "F8_E4M3")
    second["model.norm.weight"] = ("BF16", [64])
    second["lm_head.weight"] = ("BF16", [100, 64])
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", first)
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", second)
    weight_map = dict.fromkeys(first, "model-00001-of-00002.safetensors")
    weight_map |= dict.fromkeys(second, "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    # a stray file that the index does not list is ignored
    write_safetensors(tmp_path / "consolidated.safetensors", {"x": ("F32", [1000])})
    imported = architecture_from_path(tmp_path)
    assert imported.safetensors_params == 86_848  # scale tensor not counted
    # fp8: 2 layers · (4096+2048+2048+4096+3·8192+2·64) = 73,984 elements; bf16 12,864
    assert imported.safetensors_dtype == "fp8"
    assert imported.safetensors_files == 2


def test_missing_shard_is_a_note_not_a_failure(tmp_path):
    _tiny_model_folder(tmp_path)
    write_safetensors(tmp_path / "a.safetensors", {"w": ("BF16", [4])})
    index = {"weight_map": {"w": "a.safetensors", "v": "b.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    imported = architecture_from_path(tmp_path)
    assert imported.safetensors_params is None
    assert any("1 of 2 safetensors shards" in note for note in imported.notes)


def test_index_cannot_point_outside_the_folder(tmp_path):
    _tiny_model_folder(tmp_path)
    index = {"weight_map": {"w": "../elsewhere.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(HFImportError, match="is not a file name in the folder"):
        architecture_from_path(tmp_path)


def _header_file(path: Path, header: bytes, data: bytes = b"", length: int | None = None) -> Path:
    size = len(header) if length is None else length
    path.write_bytes(struct.pack("<Q", size) + header + data)
    return path


@pytest.mark.parametrize(
    ("header", "data", "length", "needle"),
    [
        (b"{}", b"", 1 << 40, "over the 100,000,000-byte limit"),
        (b"{}", b"", 50, "exceeds the file size"),
        (b"not json", b"", None, "is not valid JSON"),
        (b"[]", b"", None, "must be a JSON object"),
        (b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"", None, "outside"),
        (
            b'{"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}',
            bytes(8),
            None,
            "expected 12",
        ),
        (b'{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}', b"", None, "bad shape"),
        (b'{"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}}', bytes(4), None, "bad dtype"),
        (b'{"w": [1, 2]}', b"", None, "entry must be an object"),
    ],
)
def test_malformed_safetensors_headers(tmp_path, header, data, length, needle):
    path = _header_file(tmp_path / "model.safetensors", header, data, length)
    with pytest.raises(HFImportError) as caught:
        read_safetensors_header(path)
    assert needle in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_too_short_file_and_duplicate_tensor(tmp_path):
    (tmp_path / "short.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(HFImportError, match="too short"):
        read_safetensors_header(tmp_path / "short.safetensors")
    (tmp_path / "short.safetensors").unlink()
    _tiny_model_folder(tmp_path)
    write_safetensors(tmp_path / "a.safetensors", {"w": ("BF16", [4])})
    write_safetensors(tmp_path / "b.safetensors", {"w": ("BF16", [4])})
    with pytest.raises(HFImportError, match=r"'w' is also in a\.safetensors"):
        architecture_from_path(tmp_path)


def test_config_and_safetensors_disagreeing_is_a_warning(tmp_path):
    # config.json says 3 layers, the weights hold 2: both totals, and a one-line warning
    folder = tmp_path
    (folder / "config.json").write_text(json.dumps(_llama_dict(num_hidden_layers=3)))
    tensors = _tiny_llama_tensors(range(2))
    tensors["model.embed_tokens.weight"] = ("BF16", [100, 64])
    tensors["model.norm.weight"] = ("BF16", [64])
    tensors["lm_head.weight"] = ("BF16", [100, 64])
    write_safetensors(folder / "model.safetensors", tensors)
    imported = architecture_from_path(folder)
    layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 128 + 2 * 64
    assert imported.safetensors_params == 2 * layer + 2 * 100 * 64 + 64
    assert count_parameters(imported.architecture).total == 3 * layer + 2 * 100 * 64 + 64
    (warning,) = imported.warnings
    assert "config.json describes 123,840 parameters" in warning
    assert "hold 86,848" in warning
    assert imported.weights_bytes == 2 * 86_848  # bf16 data section
    assert imported.weights_format == "bf16"
