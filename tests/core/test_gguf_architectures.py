"""GGUF files of the architectures the large models ship as (issue 28): ``deepseek2``
(DeepSeek-V3/R1, Kimi-K2), ``gpt-oss``, ``llama4``.

Each file is a tiny model written by hand in llama.cpp's tensor names (gguf-py
``constants.py`` MODEL_TENSORS; ggml shapes, fastest dimension first). The expected count is
what transformers 5.24.0 reports for the same shapes as a Hugging Face config built on the
meta device (torch 2.13.0+cpu), recorded here; the file's own tensor sum must agree too.
"""

from __future__ import annotations

from pathlib import Path

from gguf_writer import STR, U32, Meta, Tensors, gguf_bytes

from llm_planner.core.files.hf_import import architecture_from_config, architecture_from_path
from llm_planner.core.primitives.architecture import count_parameters

V, H = 100, 64


def _common(arch: str, layers: int, ffn: int, heads: int, kv: int) -> Meta:
    return [
        ("general.architecture", STR, arch),
        (f"{arch}.block_count", U32, layers),
        (f"{arch}.context_length", U32, 256),
        (f"{arch}.embedding_length", U32, H),
        (f"{arch}.feed_forward_length", U32, ffn),
        (f"{arch}.attention.head_count", U32, heads),
        (f"{arch}.attention.head_count_kv", U32, kv),
    ]


def _ends() -> Tensors:
    return [("token_embd.weight", (H, V)), ("output_norm.weight", (H,)), ("output.weight", (H, V))]


def _import(tmp_path: Path, meta: Meta, tensors: Tensors) -> tuple[int, int]:
    path = tmp_path / "model.gguf"
    path.write_bytes(gguf_bytes(meta, tensors))
    imported = architecture_from_path(path)
    assert not imported.warnings, imported.warnings
    assert imported.file_params is not None
    return count_parameters(imported.architecture).total, imported.file_params


# DeepSeek-V3 shapes, tiny: 3 layers (the first dense), 4 heads, q_lora 32, kv_lora 16,
# nope 8, rope 4, v 8, dense FFN 96, 8 experts of 24 (top 2) + 1 shared.
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "vocab_size": V,
    "hidden_size": H,
    "intermediate_size": 96,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_shared_experts": 1,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "n_group": 1,
    "topk_group": 1,
    "tie_word_embeddings": False,
    "max_position_embeddings": 256,
}
DEEPSEEK_V3_TRANSFORMERS = 139_600
"""DeepseekV3ForCausalLM(DEEPSEEK_V3) on the meta device; its 2 MoE layers' 8
score-correction biases are buffers there, tensors in the file (``exp_probs_b``)."""


def _deepseek2_layer(i: int, split_kv_b: bool) -> Tensors:
    p = f"blk.{i}."
    out: Tensors = [
        (p + "attn_norm.weight", (H,)),
        (p + "attn_q_a.weight", (H, 32)),
        (p + "attn_q_a_norm.weight", (32,)),
        (p + "attn_q_b.weight", (32, 4 * (8 + 4))),
        (p + "attn_kv_a_mqa.weight", (H, 16 + 4)),
        (p + "attn_kv_a_norm.weight", (16,)),
        (p + "attn_output.weight", (4 * 8, H)),
        (p + "ffn_norm.weight", (H,)),
    ]
    if split_kv_b:  # newer conversions: k_b [nope, kv_lora, heads], v_b [kv_lora, v, heads]
        out += [(p + "attn_k_b.weight", (8, 16, 4)), (p + "attn_v_b.weight", (16, 8, 4))]
    else:
        out += [(p + "attn_kv_b.weight", (16, 4 * (8 + 8)))]
    if i == 0:
        out += [
            (p + "ffn_gate.weight", (H, 96)),
            (p + "ffn_up.weight", (H, 96)),
            (p + "ffn_down.weight", (96, H)),
        ]
    else:
        out += [
            (p + "ffn_gate_inp.weight", (H, 8)),
            (p + "exp_probs_b.bias", (8,)),
            (p + "ffn_gate_exps.weight", (H, 24, 8)),
            (p + "ffn_up_exps.weight", (H, 24, 8)),
            (p + "ffn_down_exps.weight", (24, H, 8)),
            (p + "ffn_gate_shexp.weight", (H, 24)),
            (p + "ffn_up_shexp.weight", (H, 24)),
            (p + "ffn_down_shexp.weight", (24, H)),
        ]
    return out


def test_deepseek2(tmp_path: Path) -> None:
    meta = [
        *_common("deepseek2", 3, 96, 4, 4),
        ("deepseek2.attention.key_length", U32, 8 + 4),
        ("deepseek2.attention.value_length", U32, 8),
        ("deepseek2.expert_used_count", U32, 2),
        ("deepseek2.expert_count", U32, 8),
    ]
    for split in (False, True):
        tensors = _ends() + [t for i in range(3) for t in _deepseek2_layer(i, split)]
        ours, stored = _import(tmp_path, meta, tensors)
        assert ours == stored == DEEPSEEK_V3_TRANSFORMERS + 2 * 8
    arch = architecture_from_path(tmp_path / "model.gguf").architecture
    assert arch.mla == architecture_from_config(DEEPSEEK_V3).mla
    assert arch.moe == architecture_from_config(DEEPSEEK_V3).moe


GPT_OSS_TRANSFORMERS = 88_784
"""GptOssForCausalLM on the meta device: vocab 100, hidden 64, 2 layers, 4 heads of 16 with
2 KV heads, 4 experts of 32 (top 2), biases on attention, router and experts, sinks."""


def test_gpt_oss(tmp_path: Path) -> None:
    meta = [
        *_common("gpt-oss", 2, 32, 4, 2),
        ("gpt-oss.attention.key_length", U32, 16),
        ("gpt-oss.expert_used_count", U32, 2),
        ("gpt-oss.expert_count", U32, 4),
    ]
    tensors = _ends()
    for i in range(2):
        p = f"blk.{i}."
        tensors += [
            (p + "attn_norm.weight", (H,)),
            (p + "attn_q.weight", (H, 64)),
            (p + "attn_q.bias", (64,)),
            (p + "attn_k.weight", (H, 32)),
            (p + "attn_k.bias", (32,)),
            (p + "attn_v.weight", (H, 32)),
            (p + "attn_v.bias", (32,)),
            (p + "attn_output.weight", (64, H)),
            (p + "attn_output.bias", (H,)),
            (p + "attn_sinks.weight", (4,)),
            (p + "post_attention_norm.weight", (H,)),
            (p + "ffn_gate_inp.weight", (H, 4)),
            (p + "ffn_gate_inp.bias", (4,)),
            (p + "ffn_gate_exps.weight", (H, 32, 4)),
            (p + "ffn_gate_exps.bias", (32, 4)),
            (p + "ffn_up_exps.weight", (H, 32, 4)),
            (p + "ffn_up_exps.bias", (32, 4)),
            (p + "ffn_down_exps.weight", (32, H, 4)),
            (p + "ffn_down_exps.bias", (H, 4)),
        ]
    ours, stored = _import(tmp_path, meta, tensors)
    assert ours == stored == GPT_OSS_TRANSFORMERS


LLAMA4_TRANSFORMERS = 161_344
"""Llama4ForCausalLM (text) on the meta device: vocab 100, hidden 64, 4 layers, 4 heads of
16 with 2 KV heads, dense FFN 96 on layers 0 and 2, MoE on 1 and 3
(interleave_moe_layer_step 2): 4 experts of 32 (top 1) + a shared expert of 32."""


def test_llama4(tmp_path: Path) -> None:
    meta = [
        *_common("llama4", 4, 96, 4, 2),
        ("llama4.attention.key_length", U32, 16),
        ("llama4.expert_used_count", U32, 1),
        ("llama4.expert_count", U32, 4),
    ]
    tensors = _ends()
    for i in range(4):
        p = f"blk.{i}."
        tensors += [
            (p + "attn_norm.weight", (H,)),
            (p + "attn_q.weight", (H, 64)),
            (p + "attn_k.weight", (H, 32)),
            (p + "attn_v.weight", (H, 32)),
            (p + "attn_output.weight", (64, H)),
            (p + "ffn_norm.weight", (H,)),
        ]
        if i % 2 == 0:
            tensors += [
                (p + "ffn_gate.weight", (H, 96)),
                (p + "ffn_up.weight", (H, 96)),
                (p + "ffn_down.weight", (96, H)),
            ]
        else:
            tensors += [
                (p + "ffn_gate_inp.weight", (H, 4)),
                (p + "ffn_gate_exps.weight", (H, 32, 4)),
                (p + "ffn_up_exps.weight", (H, 32, 4)),
                (p + "ffn_down_exps.weight", (32, H, 4)),
                (p + "ffn_gate_shexp.weight", (H, 32)),
                (p + "ffn_up_shexp.weight", (H, 32)),
                (p + "ffn_down_shexp.weight", (32, H)),
            ]
    ours, stored = _import(tmp_path, meta, tensors)
    assert ours == stored == LLAMA4_TRANSFORMERS
    moe = architecture_from_path(tmp_path / "model.gguf").architecture.moe
    assert moe is not None
    assert (moe.layer_period, moe.layer_offset, moe.first_dense_layers) == (2, 1, 0)
