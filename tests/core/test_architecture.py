"""Exact parameter counts: every preset against its published total, hand-computed counts
written out term by term, the MoE/MLA components of DeepSeek-V3, and properties that hold
for any architecture.

The published figures and their sources are written here, next to each assertion; they
are not read from resources/models.json (test_presets.py checks that file separately).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_planner.core.primitives.architecture import (
    Architecture,
    MoEConfig,
    attention_params_per_layer,
    count_parameters,
    mlp_params,
)
from llm_planner.core.primitives.presets import get_preset, model_presets


def _total(preset_id: str) -> int:
    return count_parameters(get_preset(preset_id).architecture).total


# preset id -> (published total parameters, where it is published)
PUBLISHED_TOTALS: dict[str, tuple[float, str]] = {
    "gpt-3-175b": (174_600e6, "Brown et al. 2020, arXiv:2005.14165, Table D.1: 174,600M"),
    "gpt-neox-20b": (
        20_556_201_984,
        "Black et al. 2022, arXiv:2204.06745; EleutherAI/gpt-neox-20b model card",
    ),
    "bloom-176b": (176_247_271_424, "bigscience/bloom model card: 176,247,271,424"),
    "opt-175b": (175e9, "Zhang et al. 2022, arXiv:2205.01068, Table 1: 175B"),
    "llama-2-7b": (6.74e9, "meta-llama/Llama-2-7b-hf safetensors: 6.74B"),
    "llama-2-13b": (13.0e9, "meta-llama/Llama-2-13b-hf safetensors: 13.0B"),
    "llama-2-70b": (68.98e9, "meta-llama/Llama-2-70b-hf safetensors: 68.98B"),
    "llama-3.1-8b": (8.03e9, "meta-llama/Llama-3.1-8B safetensors: 8.03B"),
    "llama-3.1-70b": (70.6e9, "meta-llama/Llama-3.1-70B safetensors: 70.6B"),
    "llama-3.1-405b": (405.9e9, "meta-llama/Llama-3.1-405B safetensors: 405.9B"),
    "mistral-7b": (7.24e9, "mistralai/Mistral-7B-v0.1 safetensors: 7.24B"),
    "mixtral-8x7b": (46.7e9, "Mistral AI, 'Mixtral of experts' (2023-12-11): 46.7B total"),
    "qwen2.5-7b": (7.61e9, "Qwen/Qwen2.5-7B model card: 7.61B"),
    "qwen2.5-72b": (72.7e9, "Qwen/Qwen2.5-72B model card: 72.7B"),
    "deepseek-v3": (671e9, "deepseek-ai/DeepSeek-V3 README_WEIGHTS.md: main model 671B"),
    # tiiuae/falcon-40b pytorch_model.bin.index.json: total_size 83,671,941,120 bytes of
    # bf16 = 41,835,970,560 stored values, among them lm_head.weight, a copy of the tied
    # word embedding (config.json sets no tie_word_embeddings, so transformers' default
    # True ties them; modelling_RW.py exposes lm_head as the output embeddings).
    "falcon-40b": (
        83_671_941_120 / 2 - 65_024 * 8_192,
        "falcon-40b checkpoint index, less the duplicated tied head",
    ),
    "gemma-2-27b": (27.2e9, "google/gemma-2-27b safetensors: 27.2B"),
    "phi-3-mini": (3.8e9, "Abdin et al. 2024, arXiv:2404.14219, section 2: 3.8B"),
    # issue 16: current families and state-space models
    "qwen3-8b": (8.2e9, "Qwen/Qwen3-8B model card: 8.2B"),
    "qwen3-30b-a3b": (30.5e9, "Qwen/Qwen3-30B-A3B model card: 30.5B total"),
    "gemma-3-1b": (1.0e9, "Gemma 3 report, arXiv:2503.19786, Table 1: 1B"),
    "gpt-oss-20b": (20.9e9, "gpt-oss model card, arXiv:2508.10925, Table 1: 20.9B"),
    "olmoe-1b-7b": (6.9e9, "Muennighoff et al. 2024, arXiv:2409.02060: 6.9B total"),
    "jamba-v0.1": (52e9, "Lieber et al. 2024, arXiv:2403.19887, section 3.1: 52B"),
    "mamba-130m": (130e6, "Gu & Dao 2023, arXiv:2312.00752, Table 12: 130M"),
    "mamba-codestral-7b": (7_285_403_648, "mistralai/Mamba-Codestral-7B-v0.1 model card"),
    "rwkv-4-169m": (169e6, "Peng et al. 2023, arXiv:2305.13048, Table 1: 169M"),
}


def test_every_preset_has_a_published_total_here() -> None:
    assert set(PUBLISHED_TOTALS) == set(model_presets())


@pytest.mark.parametrize("preset_id", sorted(PUBLISHED_TOTALS))
def test_preset_total_within_one_percent_of_published(preset_id: str) -> None:
    published, source = PUBLISHED_TOTALS[preset_id]
    total = _total(preset_id)
    assert abs(total - published) / published <= 0.01, (
        f"{preset_id}: {total:,} vs {published:,.0f} ({source})"
    )


# ------------------------------------------------------------------ named in the issue


def test_llama_2_7b_exact() -> None:
    # 32 layers of [W_q, W_k, W_v, W_o 4·h² + SwiGLU 3·h·f + two RMSNorms 2·h]
    # + embedding and untied head 2·V·h + final RMSNorm h; h=4096, f=11008, V=32000.
    expected = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert expected == 6_738_415_616  # HF meta-llama/Llama-2-7b-hf: 6,738,415,616 ("6.74B")
    assert _total("llama-2-7b") == expected


def test_llama_2_70b_exact() -> None:
    # GQA: W_q and W_o h×h, W_k and W_v h×(8·128); SwiGLU f=28672; 80 layers; V=32000.
    h, kv = 8192, 8 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * 28672 + 2 * h
    expected = 80 * per_layer + 2 * 32000 * h + h
    assert expected == 68_976_648_192  # HF meta-llama/Llama-2-70b-hf: "68.98B"
    assert _total("llama-2-70b") == expected


def test_llama_3_1_405b_exact() -> None:
    # arXiv:2407.21783 Table 3: 126 layers, dim 16384, FFN 53248, 128 heads, 8 KV heads,
    # vocabulary 128,256; untied head.
    h, kv = 16384, 8 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * 53248 + 2 * h
    expected = 126 * per_layer + 2 * 128256 * h + h
    assert expected / 1e9 == pytest.approx(405.9, abs=0.05)  # published 405.9B
    assert _total("llama-3.1-405b") == expected


def test_gpt_neox_20b() -> None:
    # Black et al. 2022: 20,556,201,984 parameters. The HF config's exact count
    # (44 layers of 12·h² + 13·h with biases and two LayerNorms, untied 50432-row
    # embedding and head, final LayerNorm 2·h) is 1,634,304 (0.008%) lower; the card's
    # figure is matched to 1e-4, the config's count exactly.
    h, vocab = 6144, 50432
    expected = 44 * (12 * h * h + 13 * h) + 2 * vocab * h + 2 * h
    assert _total("gpt-neox-20b") == expected
    assert expected == pytest.approx(20_556_201_984, rel=1e-4)


def test_bloom_176b_exact() -> None:
    # BLOOM: 70 layers of [attention 4·h² + 4·h, MLP 8·h² + 5·h, two LayerNorms 4·h],
    # tied 250,880-row embedding, embedding LayerNorm and final LayerNorm (2·h each).
    h = 14336
    expected = 70 * (12 * h * h + 13 * h) + 250880 * h + 4 * h
    assert expected == 176_247_271_424  # bigscience/bloom model card: 176,247,271,424
    assert _total("bloom-176b") == expected


def test_mixtral_8x7b_total_and_active() -> None:
    # Mistral AI, "Mixtral of experts" (2023-12-11): "46.7B total parameters but only uses
    # 12.9B parameters per token". Per layer: attention 2·h² + 2·h·(8·128), router h·8,
    # two RMSNorms, and 8 SwiGLU experts of 3·h·14336 (2 of them per token).
    h = 4096
    expert = 3 * h * 14336
    shared = 2 * h * h + 2 * h * 1024 + h * 8 + 2 * h
    outside = 2 * 32000 * h + h
    total = 32 * (shared + 8 * expert) + outside
    active = 32 * (shared + 2 * expert) + outside
    assert (total, active) == (46_702_792_704, 12_879_925_248)
    counts = count_parameters(get_preset("mixtral-8x7b").architecture)
    assert counts.total == total
    # Mistral's 12.9B counts the input embedding as active (12,879,925,248 with it,
    # 12,748,853,248 without): ``active`` is that convention.
    assert counts.active == active
    assert counts.active == pytest.approx(12.9e9, rel=0.01)
    assert counts.total == pytest.approx(46.7e9, rel=0.01)


# ------------------------------------------------------------------ DeepSeek-V3 (MoE + MLA)

DSV3_H = 7168


def test_deepseek_v3_mla_attention_per_layer() -> None:
    # config_671B.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
    # v_head 128, 128 heads. Layers as in DeepSeek-V3 inference/model.py (MLA):
    h, heads = DSV3_H, 128
    wq_a = h * 1536  # down-projection of the query
    q_norm = 1536
    wq_b = 1536 * heads * (128 + 64)  # up-projection to no-rope + rope query parts
    wkv_a = h * (512 + 64)  # KV latent + the shared rotary key
    kv_norm = 512
    wkv_b = 512 * heads * (128 + 128)  # latent -> no-rope keys and values
    wo = heads * 128 * h
    expected = wq_a + q_norm + wq_b + wkv_a + kv_norm + wkv_b + wo
    assert expected == 187_107_328
    assert attention_params_per_layer(get_preset("deepseek-v3").architecture) == expected


def test_deepseek_v3_components_and_total() -> None:
    arch = get_preset("deepseek-v3").architecture
    counts = count_parameters(arch)
    h = DSV3_H
    expert = 3 * h * 2048  # moe_intermediate_size 2048, SwiGLU
    assert mlp_params(arch, 2048) == expert
    # 61 layers: the first 3 dense (intermediate 18432), 58 MoE layers of 256 routed
    # experts + 1 shared expert + a router h×256 with a 256-entry correction bias.
    assert counts.mlp == 3 * 3 * h * 18432
    assert counts.experts == 58 * 256 * expert
    assert counts.shared_experts == 58 * 1 * expert
    assert counts.router == 58 * (h * 256 + 256)
    assert counts.attention == 61 * 187_107_328
    assert counts.norms == 61 * 2 * h + h
    assert counts.embedding == counts.head == 129280 * h
    total = (
        61 * 187_107_328
        + 3 * 3 * h * 18432
        + 58 * (257 * expert + h * 256 + 256)
        + 61 * 2 * h
        + h
        + 2 * 129280 * h
    )
    assert counts.total == total == 671_026_419_200
    # README_WEIGHTS.md: main model 671B (the MTP module's 11.5B is not part of it).
    assert counts.total == pytest.approx(671e9, rel=0.01)


def test_deepseek_v3_activated_parameters() -> None:
    # deepseek-ai/DeepSeek-V3 README_WEIGHTS.md, main model: "Activation parameters:
    # 36.7B" (README.md rounds to 37B). Per MoE layer a token uses 8 routed + 1 shared
    # expert. The exact count of everything a token touches (embedding row and output head
    # included) is 37,552,297,472 (37.55B, 1.5% above 37B). Without the input embedding,
    # which is a table lookup and does no matrix multiply, it is 36,625,618,432 = 36.6B,
    # 0.2% from 36.7B: ``active_compute`` is that convention and is what is compared.
    # (README_WEIGHTS adds that its 36.7B includes 0.9B embedding and 0.9B head; the exact
    # count cannot reproduce that split, since with both tables it is 37.55B.)
    counts = count_parameters(get_preset("deepseek-v3").architecture)
    h = DSV3_H
    expert = 3 * h * 2048
    active = (
        61 * 187_107_328
        + 3 * 3 * h * 18432
        + 58 * (9 * expert + h * 256 + 256)
        + 61 * 2 * h
        + h
        + 2 * 129280 * h
    )
    assert counts.active == active == 37_552_297_472
    assert counts.active_compute == active - 129280 * h == 36_625_618_432
    assert counts.active_compute == pytest.approx(36.7e9, rel=0.01)
    assert counts.routed_experts_active == 58 * 8 * expert


# ------------------------------------------------------------------ conventions


def test_tied_head_counts_once_and_stays_in_active_compute() -> None:
    # BLOOM ties its head to the embedding: no separate head, and the tied table does a
    # matrix multiply (the output projection), so active_compute keeps it.
    counts = count_parameters(get_preset("bloom-176b").architecture)
    assert counts.head == 0
    assert counts.active_compute == counts.total
    # Llama-2-7B's untied embedding is lookup-only: active_compute drops 32000·4096.
    llama = count_parameters(get_preset("llama-2-7b").architecture)
    assert llama.head == 32000 * 4096
    assert llama.active_compute == llama.total - 32000 * 4096


def test_learned_positions_are_counted() -> None:
    # OPT: learned positions with 2 extra rows (OPTLearnedPositionalEmbedding offset 2),
    # (2048 + 2)·12288; GPT-3: 2048·12288.
    assert count_parameters(get_preset("opt-175b").architecture).positions == 2050 * 12288
    assert count_parameters(get_preset("gpt-3-175b").architecture).positions == 2048 * 12288


def test_qwen_non_embedding_matches_model_card() -> None:
    # Qwen/Qwen2.5-7B model card: "Number of Parameters: 7.61B; Non-Embedding: 6.53B"
    # (embedding and untied head 2·152064·3584 excluded).
    counts = count_parameters(get_preset("qwen2.5-7b").architecture)
    assert counts.non_embedding == counts.total - 2 * 152064 * 3584
    assert counts.non_embedding == pytest.approx(6.53e9, rel=0.01)


# ------------------------------------------------------------------ properties


@st.composite
def architectures(draw: st.DrawFn) -> Architecture:
    kv_heads = draw(st.integers(1, 8))
    heads = kv_heads * draw(st.integers(1, 8))
    head_dim = draw(st.sampled_from([16, 32, 64, 128]))
    layers = draw(st.integers(1, 12))
    moe: MoEConfig | None = None
    if draw(st.booleans()):
        experts = draw(st.integers(1, 16))
        moe = MoEConfig(
            num_experts=experts,
            experts_per_token=draw(st.integers(1, experts)),
            expert_ffn_size=draw(st.integers(1, 512)),
            num_shared_experts=draw(st.integers(0, 2)),
            first_dense_layers=draw(st.integers(0, layers)),
            router_bias=draw(st.booleans()),
        )
    fields: dict[str, Any] = {
        "layers": layers,
        "hidden_size": draw(st.integers(8, 1024)),
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn_size": draw(st.integers(1, 4096)),
        "ffn_kind": draw(st.sampled_from(["gelu_mlp", "swiglu", "geglu"])),
        "vocab_size": draw(st.integers(1, 100_000)),
        "max_context": draw(st.integers(1, 8192)),
        "tied_embeddings": draw(st.booleans()),
        "positions": draw(st.sampled_from(["learned", "rotary", "alibi"])),
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])),
        "attention_bias": draw(st.sampled_from(["none", "qkv", "all"])),
        "mlp_bias": draw(st.booleans()),
        "moe": moe,
    }
    return Architecture(**fields)


@given(architectures())
def test_total_is_the_sum_of_its_parts(arch: Architecture) -> None:
    c = count_parameters(arch)
    parts = (
        c.embedding
        + c.positions
        + c.attention
        + c.mlp
        + c.experts
        + c.shared_experts
        + c.router
        + c.norms
        + c.head
    )
    assert c.total == parts
    assert 0 < c.active_compute <= c.active <= c.total
    assert c.active == c.total - c.experts + c.routed_experts_active
    if arch.moe is None or arch.moe.experts_per_token == arch.moe.num_experts:
        assert c.active == c.total


@given(architectures())
def test_untying_adds_exactly_one_vocab_by_hidden_table(arch: Architecture) -> None:
    tied = count_parameters(arch.model_copy(update={"tied_embeddings": True}))
    untied = count_parameters(arch.model_copy(update={"tied_embeddings": False}))
    assert untied.total - tied.total == arch.vocab_size * arch.hidden_size


@given(architectures())
def test_one_more_dense_layer_adds_one_layer_of_parameters(arch: Architecture) -> None:
    if arch.moe is not None:
        return
    longer = arch.model_copy(update={"layers": arch.layers + 1})
    norm = 2 * arch.hidden_size if arch.norm == "layernorm" else arch.hidden_size
    per_layer = (
        attention_params_per_layer(arch)
        + mlp_params(arch, arch.ffn_size)
        + arch.norms_per_layer * norm
    )
    assert count_parameters(longer).total - count_parameters(arch).total == per_layer


# ------------------------------------------------------------------ one list of a layer's matrices


def test_layer_matrices_of_llama_3_8b() -> None:
    """Llama-3-8B (Meta's params.json: dim 4096, 32 heads, 8 KV heads of 128, FFN 14336):
    q 4096→4096 and k, v 4096→1024 fused in one column-parallel GEMM, o 4096→4096
    row-parallel, gate and up 4096→14336 (fc1, column-parallel), down 14336→4096 (fc2)."""
    mats = get_preset("llama-3.1-8b").architecture.layer_matrices()
    got = [(m.name, m.d_in, m.d_out, m.copies, m.tp_split, m.gemm) for m in mats]
    assert got == [
        ("q", 4096, 4096, 1, "columns", "qkv"),
        ("k", 4096, 1024, 1, "columns", "qkv"),
        ("v", 4096, 1024, 1, "columns", "qkv"),
        ("o", 4096, 4096, 1, "rows", "o"),
        ("gate", 4096, 14336, 1, "columns", "fc1"),
        ("up", 4096, 14336, 1, "columns", "fc1"),
        ("down", 14336, 4096, 1, "rows", "fc2"),
    ]
    assert sum(m.elements for m in mats) == 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336


def test_mla_matrices_are_exact_for_deepseek_v3() -> None:
    """DeepSeek-V3 (config_671B.json: dim 7168, 128 heads, q_lora_rank 1536, kv_lora_rank
    512, qk_nope 128, qk_rope 64, v_head 128; inference/model.py: wq_a and wkv_a plain
    Linear, wq_b and wkv_b ColumnParallelLinear, wo RowParallelLinear), listed as the model
    stores them, not folded into one QKV matrix."""
    arch = get_preset("deepseek-v3").architecture
    attention = [m for m in arch.layer_matrices() if m.target in ("q", "k", "v", "o")]
    got = [(m.name, m.d_in, m.d_out, m.tp_split) for m in attention]
    assert got == [
        ("q_a", 7168, 1536, "none"),
        ("q_b", 1536, 128 * (128 + 64), "columns"),
        ("kv_a", 7168, 512 + 64, "none"),
        ("kv_b", 512, 128 * (128 + 128), "columns"),
        ("o", 128 * 128, 7168, "rows"),
    ]
    # the attention count adds the two RMSNorms of the latents (q_norm 1536, kv_norm 512)
    weights = 7168 * 1536 + 1536 * 24576 + 7168 * 576 + 512 * 32768 + 16384 * 7168
    assert attention_params_per_layer(arch) == weights + 1536 + 512


def test_moe_layer_matrices_split_routed_and_shared_experts() -> None:
    """DeepSeek-V3's MoE layer: 256 routed experts (split over ep) and 1 shared expert of
    three 7168×2048 matrices each, and a router 7168→256."""
    arch = get_preset("deepseek-v3").architecture
    ffn = [m for m in arch.layer_matrices(moe_layer=True) if m.target not in ("q", "k", "v", "o")]
    routed = [m for m in ffn if m.routed]
    assert [(m.name, m.copies) for m in routed] == [("gate", 256), ("up", 256), ("down", 256)]
    shared = [m for m in ffn if not m.routed and m.name != "router"]
    assert [(m.name, m.copies) for m in shared] == [("gate", 1), ("up", 1), ("down", 1)]
    router = next(m for m in ffn if m.name == "router")
    assert (router.d_in, router.d_out, router.target) == (7168, 256, "")
    assert sum(m.elements for m in routed) == 256 * 3 * 7168 * 2048


def test_every_matrix_target_is_a_lora_target() -> None:
    """Each matrix of every preset's layers answers to one of PEFT's Llama target names
    (q, k, v, o, gate, up, down), the router to none, so adapting "all linear" adapts every
    matrix but the router."""
    from llm_planner.core.primitives.architecture import LORA_TARGETS

    assert LORA_TARGETS == ("q", "k", "v", "o", "gate", "up", "down")
    for preset_id in model_presets():
        arch = get_preset(preset_id).architecture
        for moe in (False, True):
            for m in arch.layer_matrices(moe):
                assert m.target in LORA_TARGETS or (m.name, m.target) == ("router", "")
