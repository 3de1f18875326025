"""Configs of families the importer has no mapper for (issue 28): read through their
``architectures`` field, a known alias, or a generic decoder that says "approximate" and
what it assumed, instead of refusing.

Counts come from transformers on the meta device (recorded in each fixture's json) or from
the same shapes read as the family they declare.
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
    read_config,
    read_model_type,
)
from llm_planner.core.primitives.architecture import count_parameters

HF = Path(__file__).parent.parent / "fixtures" / "hf"
APPROXIMATE = Path(__file__).parent.parent / "fixtures" / "hf_approximate"


def _config(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "config.json").read_text())
    return data


def test_kimi_k2_reads_through_its_architectures_field() -> None:
    imported = architecture_from_path(HF / "kimi-k2-instruct")
    assert imported.architecture.hf_model_type == "deepseek_v3"
    assert any("DeepseekV3ForCausalLM" in note for note in imported.notes)
    assert not any(note.startswith("approximate") for note in imported.notes)
    expected = json.loads((HF / "kimi-k2-instruct" / "expected.json").read_text())
    counts = count_parameters(imported.architecture)
    # + 60 MoE layers × 384 score-correction biases, buffers in transformers (as DeepSeek-V3)
    assert counts.total == expected["params_total"] + 60 * 384
    assert counts.active == expected["params_active"] + 60 * 384


def test_an_alias_reads_as_the_family_its_code_builds_on() -> None:
    """MiMo's modeling_mimo.py builds on Qwen2: the same fields read as mimo and as qwen2
    give the same shapes."""
    qwen = _config(HF / "qwen2.5-7b")
    mimo = {**qwen, "model_type": "mimo", "architectures": ["MiMoForCausalLM"]}
    reading = read_model_type(mimo)
    assert reading.family == "qwen2"
    assert not reading.approximate
    assert reading.note is not None
    assert "MiMo" in reading.note
    as_mimo = count_parameters(architecture_from_config(mimo))
    assert as_mimo == count_parameters(architecture_from_config(qwen))


def test_an_unknown_decoder_is_read_approximately_and_says_so() -> None:
    folder = APPROXIMATE / "deepseek-v3.2-exp"
    source = json.loads((folder / "source.json").read_text())
    imported = architecture_from_path(folder)
    approximate = [n for n in imported.notes if n.startswith("approximate")]
    assert approximate, imported.notes
    assert "deepseek_v32" in approximate[0]
    unused = " ".join(approximate)
    assert "index_n_heads" in unused
    assert "index_head_dim" in unused
    total = count_parameters(imported.architecture).total
    # transformers counts the lightning indexer too: the reading is 0.13% short
    error = total / source["params_transformers"] - 1
    assert -0.002 < error < 0


def test_a_llama_shaped_config_of_an_unknown_type_counts_as_llama() -> None:
    llama = _config(HF / "llama-3.1-8b")
    renamed = {**llama, "model_type": "my_decoder", "architectures": ["MyDecoderForCausalLM"]}
    reading = read_model_type(renamed)
    assert reading.family == "generic"
    assert reading.approximate
    # Llama-3.1-8B: 8,030,261,248 parameters (transformers, tests/fixtures/hf/llama-3.1-8b)
    assert count_parameters(architecture_from_config(renamed)).total == 8_030_261_248


def test_an_unknown_moe_reads_its_experts() -> None:
    """Mixtral's fields under an unknown name: the generic reading finds the experts
    (num_local_experts, num_experts_per_tok) and counts what transformers counts for
    Mixtral-8x7B, 46,702,792,704 (tests/fixtures/hf/mixtral-8x7b-v0.1)."""
    mixtral = _config(HF / "mixtral-8x7b-v0.1")
    renamed = {**mixtral, "model_type": "my_moe", "architectures": ["MyMoeForCausalLM"]}
    arch = architecture_from_config(renamed)
    assert arch.moe is not None
    assert (arch.moe.num_experts, arch.moe.experts_per_token) == (8, 2)
    assert count_parameters(arch).total == 46_702_792_704


def test_an_unknown_multimodal_config_reads_its_language_model() -> None:
    llama = _config(HF / "llama-3.1-8b")
    text = {k: v for k, v in llama.items() if k not in ("architectures", "model_type")}
    outer = {"model_type": "my_vlm", "text_config": {**text, "model_type": "my_vlm_text"}}
    imported_arch = architecture_from_config(outer)
    assert count_parameters(imported_arch).total == 8_030_261_248


def test_models_that_are_not_decoders_are_refused() -> None:
    bert = {
        "model_type": "bert",
        "architectures": ["BertForMaskedLM"],
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,
    }
    with pytest.raises(HFImportError, match="no causal language model"):
        architecture_from_config(bert)


def test_a_generic_read_that_lacks_shapes_names_the_type() -> None:
    with pytest.raises(HFImportError, match=r"unsupported model_type 'mystery'.*generic decoder"):
        architecture_from_config({"model_type": "mystery"})


def test_baichuan_reads_as_llama() -> None:
    """Baichuan 2's modeling_baichuan.py: Llama's layers with q, k, v fused in W_pack (the
    same 3·h² parameters) and a NormHead output layer (V·h): Llama-2-7B's shapes read as
    baichuan count what transformers counts for Llama-2-7B, 6,738,415,616."""
    llama2 = _config(HF / "llama-2-7b-hf")
    baichuan = {**llama2, "model_type": "baichuan", "architectures": ["BaichuanForCausalLM"]}
    reading = read_model_type(baichuan)
    assert (reading.family, reading.approximate) == ("llama", False)
    assert count_parameters(architecture_from_config(baichuan)).total == 6_738_415_616


def test_kimi_k25_reads_its_kimi_k2_text_model_exactly() -> None:
    """Kimi-K2.5 nests the Kimi-K2 language model in text_config (model_type kimi_k2, no
    architectures field there): read as DeepSeek-V3 by name, exactly, not approximately."""
    kimi = _config(HF / "kimi-k2-instruct")
    text = {k: v for k, v in kimi.items() if k not in ("architectures", "auto_map")}
    outer = {"model_type": "kimi_k25", "architectures": ["KimiK25ForConditionalGeneration"]}
    arch, notes = read_config({**outer, "text_config": text})
    assert not any(note.startswith("approximate") for note in notes)
    expected = json.loads((HF / "kimi-k2-instruct" / "expected.json").read_text())
    assert count_parameters(arch).total == expected["params_total"] + 60 * 384


TINY = {
    "vocab_size": 100,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
}


def test_generic_reads_an_ungated_squared_relu_mlp() -> None:
    """hidden_act relu2 (Nemotron, Arcee): up → relu² → down, no gate. By hand: embeddings
    and head 2·100·64, final norm 64; a layer: 2 norms of 64, q/k/v/o 4·64·64, up and
    down 2·64·128."""
    config = {**TINY, "model_type": "my_relu2", "hidden_act": "relu2"}
    layer = 2 * 64 + 4 * 64 * 64 + 2 * 64 * 128
    assert count_parameters(architecture_from_config(config)).total == (
        2 * 100 * 64 + 64 + 2 * layer
    )


def test_generic_reads_ernie_style_expert_names() -> None:
    """ERNIE-4.5-MoE names: moe_num_experts, moe_k, moe_num_shared_experts,
    moe_layer_start_index. By hand: layer 0 dense SwiGLU 3·64·128; layer 1 a router 64·4,
    4 experts and 1 shared expert of 3·64·32 each."""
    config = {
        **TINY,
        "model_type": "my_ernie_moe",
        "moe_num_experts": 4,
        "moe_k": 2,
        "moe_intermediate_size": 32,
        "moe_num_shared_experts": 1,
        "moe_layer_start_index": 1,
    }
    arch = architecture_from_config(config)
    assert arch.moe is not None
    assert (arch.moe.num_experts, arch.moe.experts_per_token) == (4, 2)
    attention = 2 * 64 + 4 * 64 * 64
    dense = attention + 3 * 64 * 128
    moe = attention + 64 * 4 + 5 * 3 * 64 * 32
    assert count_parameters(arch).total == 2 * 100 * 64 + 64 + dense + moe
