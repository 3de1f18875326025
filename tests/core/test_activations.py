"""The activation ledger against Korthikanti et al. 2022 (arXiv:2205.05198) and hand counts.

Every expected value is written out from the paper's formulas or counted by hand from the
tensor list in the test's comment, never copied from the code's output.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import (
    PROFILES,
    activation_bytes_per_layer,
    layer_activations,
    logits_working_bytes,
    outside_layer_ledger,
)

GPT3 = get_preset("gpt-3-175b").architecture
S, B, H, A = 2048, 1, 12288, 96  # GPT-3 175B, Korthikanti 2022 Table 3


def test_gpt3_preset_is_the_paper_shape() -> None:
    assert (GPT3.hidden_size, GPT3.heads, GPT3.layers) == (H, A, 96)
    assert GPT3.ffn_kind == "gelu_mlp"
    assert GPT3.ffn_size == 4 * H


def test_gpt3_layer_equals_korthikanti_34_plus_5as_over_h_exactly() -> None:
    """Section 4.1: s·b·h·(34 + 5·a·s/h) bytes per layer (16-bit, dropout, no TP)."""
    la = layer_activations(GPT3, S, B, profile="megatron", dropout=True, flash=False)
    expected = S * B * H * (34 + 5 * A * S / H)
    assert la.saved_bytes == expected
    assert la.kept_bytes == expected
    assert sum(e.bytes for e in la.ledger) == expected


def test_gpt3_blocks_split_as_in_section_4_1() -> None:
    """Attention 11sbh + 5as²b, MLP 19sbh, the two layer norms 4sbh."""
    la = layer_activations(GPT3, S, B, profile="megatron", dropout=True)
    by_block: dict[str, float] = {}
    for e in la.ledger:
        by_block[e.block] = by_block.get(e.block, 0.0) + e.bytes
    assert by_block["attention"] == 11 * S * B * H + 5 * A * S * S * B
    assert by_block["mlp"] == 19 * S * B * H
    assert by_block["norm"] == 4 * S * B * H


def test_selective_is_34sbh_and_full_is_2sbh() -> None:
    """Section 5: selective recomputation keeps 34·s·b·h; full keeps the layer input 2·s·b·h."""
    sel = activation_bytes_per_layer(GPT3, S, B, 1, False, "selective", False, "megatron")
    full = activation_bytes_per_layer(GPT3, S, B, 1, False, "full", False, "megatron")
    assert sel == 34 * S * B * H
    assert full == 2 * S * B * H


@pytest.mark.parametrize("t", [2, 4, 8])
def test_tensor_parallel_without_and_with_sequence_parallel(t: int) -> None:
    """Eq. (2): s·b·h·(10 + 24/t + 5·a·s/(h·t)); eq. (4) with SP: s·b·h/t·(34 + 5·a·s/h)."""
    tp = activation_bytes_per_layer(GPT3, S, B, t, False, "none", False, "megatron")
    sp = activation_bytes_per_layer(GPT3, S, B, t, True, "none", False, "megatron")
    assert tp == pytest.approx(S * B * H * (10 + 24 / t + 5 * A * S / (H * t)), rel=1e-12)
    assert sp == pytest.approx(S * B * H / t * (34 + 5 * A * S / H), rel=1e-12)
    sel_sp = activation_bytes_per_layer(GPT3, S, B, t, True, "selective", False, "megatron")
    assert sel_sp == pytest.approx(34 * S * B * H / t, rel=1e-12)


def test_vectorised_over_micro_batch_and_tp() -> None:
    """Pure arithmetic: numpy arrays of b and t give the same values as the scalar calls."""
    bs = np.array([1, 2, 4, 8])
    ts = np.array([[1], [2], [4], [8]])
    grid = activation_bytes_per_layer(GPT3, S, bs, ts, True, "none", False, "megatron")
    assert grid.shape == (4, 4)
    for i, t in enumerate([1, 2, 4, 8]):
        for j, b in enumerate([1, 2, 4, 8]):
            scalar = activation_bytes_per_layer(GPT3, S, b, t, True, "none", False, "megatron")
            assert grid[i, j] == pytest.approx(scalar, rel=1e-12)
    thr = activation_bytes_per_layer(
        GPT3, S, bs, 1, False, "threshold", False, "megatron", threshold_bytes=3 * S * H
    )
    assert thr.shape == (4,)


def test_threshold_drops_tensors_above_x() -> None:
    """X = 3·s·b·h bytes: the s² tensors (≥ a·s²·b) and the 8sbh GeLU tensors are dropped;
    the kept ones are 2+2+2+2+2+2+1 (attention, with mask) + 2+2+1 (MLP norm, fc1 in, mask)
    = 18·s·b·h."""
    kept = activation_bytes_per_layer(
        GPT3, S, B, 1, False, "threshold", False, "megatron", threshold_bytes=3 * S * B * H
    )
    assert kept == 18 * S * B * H
    la = layer_activations(
        GPT3, S, B, recompute="threshold", threshold_bytes=3 * S * B * H, profile="megatron"
    )
    assert la.recompute_working_bytes == 16 * S * B * H + 5 * A * S * S * B


def test_flash_keeps_output_and_logsumexp_not_scores() -> None:
    """Flash attention: no a·s² tensor; Q, K, V, the output and an fp32 log-sum-exp
    (a·s·b·4 bytes). GPT with dropout: 34·s·b·h + 4·a·s·b (the dropout inside the kernel
    regenerates its mask from the RNG state)."""
    la = layer_activations(GPT3, S, B, flash=True, profile="megatron", dropout=True)
    assert la.kept_bytes == 34 * S * B * H + 4 * A * S * B
    assert not any("s²" in e.shape for e in la.ledger)


def test_no_dropout_gpt() -> None:
    """No dropout: the two 1-byte residual masks and the attention mask and dropout output
    go; the softmax output is what P·V reads: 32·s·b·h + 2·a·s²·b."""
    la = layer_activations(GPT3, S, B, profile="megatron", dropout=False)
    assert la.kept_bytes == 32 * S * B * H + 2 * A * S * S * B


def test_gqa_swiglu_flash_megatron_by_hand() -> None:
    """Llama-2-70B (h 8192, 64 heads, 8 kv heads of 128, f 28672), flash, no dropout, fused
    SwiGLU: norms 2+2, QKV input 2, Q 2 (sbh); K and V 2·s·b·1024 each; log-sum-exp
    4·a·s·b; O 2sbh; fc1 input 2sbh; fc1 output (gate ‖ up) 2·2·s·b·f; fc2 input 2·s·b·f."""
    arch = get_preset("llama-2-70b").architecture
    s, b, h, f, a = 4096, 2, 8192, 28672, 64
    kv = 8 * 128
    expected = 12 * s * b * h + 2 * 2 * s * b * kv + 4 * a * s * b + 6 * s * b * f
    la = layer_activations(arch, s, b, flash=True, profile="megatron", dropout=False)
    assert la.kept_bytes == expected
    # 8 kv heads: with t = 16 the kv heads are replicated (each GPU keeps one head)
    t16 = layer_activations(arch, s, b, tp=16, flash=True, profile="megatron", dropout=False)
    k_entry = next(e for e in t16.ledger if e.name.startswith("K"))
    assert k_entry.bytes == 2 * s * b * 128


def test_moe_routes_top_k_copies() -> None:
    """Mixtral-8x7B (top-2 of 8, expert f 14336): the routed-token tensors hold k·s·b tokens;
    doubling k doubles every routed-expert tensor."""
    arch = get_preset("mixtral-8x7b").architecture
    assert arch.moe is not None
    s, b, h, f = 1024, 1, arch.hidden_size, arch.moe.expert_ffn_size
    la = layer_activations(arch, s, b, flash=True, profile="megatron", dropout=False)
    moe_bytes = sum(e.bytes for e in la.ledger if e.block == "moe")
    k = 2
    # router probs fp32 s·b·E·4; dispatched tokens 2·k·s·b·h; fc1 out 2·2·k·s·b·f;
    # fc2 in 2·k·s·b·f; each routed copy's probability for the weighted activation, fp32
    # 4·k·s·b (Megatron-Core applies it inside the experts: no expert outputs saved)
    expected = 4 * s * b * 8 + 2 * k * s * b * h + 6 * k * s * b * f + 4 * k * s * b
    assert moe_bytes == expected


def test_pytorch_profile_rmsnorm_keeps_fp32_copy() -> None:
    """HF LlamaRMSNorm: x.to(fp32) saved by pow (4·s·b·h), the normalised value in bf16
    before ·weight (2·s·b·h), rstd fp32 (4·s·b)."""
    arch = get_preset("llama-2-7b").architecture
    s, b, h = 512, 1, arch.hidden_size
    la = layer_activations(arch, s, b, profile="pytorch", dropout=False)
    norm = sum(e.bytes for e in la.ledger if e.name.startswith("attention norm"))
    assert norm == 4 * s * b * h + 2 * s * b * h + 4 * s * b
    softmax = next(e for e in la.ledger if e.name == "softmax output")
    assert softmax.dtype == "fp32"
    assert softmax.bytes == 4 * arch.heads * s * s * b


def test_outside_layers_logits_fp32() -> None:
    """Korthikanti eq. 5 terms: final norm input 2sbh, output projection input 2sbh, the
    fp32 cross-entropy softmax 4·s·b·V/t (vocabulary parallel)."""
    t = 8
    out = outside_layer_ledger(GPT3, S, B, tp=t, profile="megatron", dropout=True)
    by_name = {e.name: e.bytes for e in out}
    assert by_name["cross-entropy: fp32 softmax of logits"] == 4 * S * B * GPT3.vocab_size / t
    assert by_name["embedding dropout mask"] == S * B * H  # not sharded without SP
    assert logits_working_bytes(GPT3, S, B, tp=t) == 6 * S * B * GPT3.vocab_size / t


def test_profiles_documented() -> None:
    assert {"megatron", "pytorch", "pytorch-cpu"} <= set(PROFILES)
    for p in PROFILES.values():
        assert p.description
        assert p.source


@settings(max_examples=40, deadline=None)
@given(
    s=st.sampled_from([128, 512, 2048, 8192]),
    b=st.integers(1, 16),
    t=st.sampled_from([1, 2, 4, 8]),
    sp=st.booleans(),
    flash=st.booleans(),
    profile=st.sampled_from(["megatron", "pytorch"]),
)
def test_recompute_ordering_and_linearity(  # noqa: PLR0917 (hypothesis arguments)
    s: int, b: int, t: int, sp: bool, flash: bool, profile: str
) -> None:
    """full ≤ selective ≤ none; every policy is linear in the micro-batch."""
    arch = get_preset("llama-3.1-8b").architecture

    def kept(kind: str, bb: int) -> float:
        return float(activation_bytes_per_layer(arch, s, bb, t, sp, kind, flash, profile))  # type: ignore[arg-type]

    assert kept("full", b) <= kept("selective", b) <= kept("none", b)
    for kind in ("none", "selective", "full"):
        assert kept(kind, 2 * b) == pytest.approx(2 * kept(kind, b), rel=1e-12)


def test_parallel_attention_keeps_one_norm_for_gptj_style() -> None:
    arch = Architecture(
        layers=2,
        hidden_size=256,
        heads=4,
        kv_heads=4,
        head_dim=64,
        ffn_size=1024,
        ffn_kind="gelu_mlp",
        vocab_size=1000,
        max_context=128,
        norm="layernorm",
        norms_per_layer=1,
        parallel_attention=True,
    )
    la = layer_activations(arch, 64, 1, profile="megatron", dropout=False)
    assert sum(1 for e in la.ledger if e.block == "norm") == 1


def test_lora_frozen_linears_do_not_save_their_inputs() -> None:
    """A frozen linear's backward needs only its weight. LoRA r = 8 on q and v of GPT-3
    (Korthikanti's layer, dropout, no flash): the out-projection input (2sbh), fc1 input
    (2sbh) and fc2 input (8sbh) are no longer saved; the GeLU still saves its input (8sbh),
    and each adapter saves x·A (s·b·r, 2 bytes): s·b·h·(22 + 5as/h) + 2·(2·s·b·8)."""
    la = layer_activations(
        GPT3, S, B, profile="megatron", dropout=True, lora_rank=8, lora_targets=("q", "v")
    )
    assert la.kept_bytes == S * B * H * (22 + 5 * A * S / H) + 2 * (2 * S * B * 8)


@pytest.mark.parametrize("policy", ["none", "selective", "full", "threshold"])
def test_kept_entries_sum_to_the_kept_total(policy: str) -> None:
    """The ledger marks what each policy keeps; the kept lines add up to the kept bytes."""
    la = layer_activations(
        GPT3,
        S,
        B,
        recompute=policy,  # type: ignore[arg-type]
        threshold_bytes=3 * S * B * H,
        profile="megatron",
        dropout=True,
    )
    assert sum(e.bytes for e in la.ledger if e.kept) == la.kept_bytes
