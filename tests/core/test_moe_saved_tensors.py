"""What an MoE layer saves under Megatron-Core, and the MoE paged stash (issue 27), against
hand computations from the sources' tensors.

Qwen3-30B-A3B: h 2048, 128 experts, top-8, expert f 768; every layer MoE. Per token of one
MoE layer, Megatron-Core at NVIDIA/Megatron-LM@d98e8a64 with Transformer Engine's MXFP8
recipe (a linear layer saves its input quantized: 1 byte + one E8M0 scale per 32 values):

- router probabilities, fp32 over E experts: 4·128 = 512
- the k routed copies of the token, the experts' fc1 input, MXFP8: 8·2048·(1 + 1/32) = 16,896
- the experts' fc1 output (gate ‖ up), bf16, the SwiGLU's input: 2·8·768·2 = 24,576
- the experts' fc2 input (the SwiGLU output), MXFP8: 8·768·(1 + 1/32) = 6,336
- each routed copy's router probability, fp32, read by the weighted SwiGLU's backward
  (experts.py: the probabilities scale the copies inside the experts): 4·8 = 32
- no copy of the expert outputs: token_dispatcher.py unpermutes without probabilities.
"""

from __future__ import annotations

import pytest

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import layer_activations
from llm_planner.core.sections.training import estimate_training

QWEN = get_preset("qwen3-30b-a3b").architecture
MXFP8 = ("fp8 (mxfp8)", 1.0 + 1.0 / 32.0)
S = 4096

ROUTER = 4 * 128
FC1_INPUT = 8 * 2048 * (1 + 1 / 32)
FC1_OUTPUT = 2 * 8 * 768 * 2
FC2_INPUT = 8 * 768 * (1 + 1 / 32)
COPY_PROBS = 4 * 8
ROUTED = FC1_INPUT + FC1_OUTPUT + FC2_INPUT + COPY_PROBS
"""The tensors the fused grouped MLP saves (the paged stash's), bytes per token."""


def _moe_bytes_per_token(profile: str, gemm_input: tuple[str, float] | None) -> float:
    la = layer_activations(
        QWEN, S, 1, flash=True, dropout=False, profile=profile, gemm_input=gemm_input
    )
    return sum(e.bytes for e in la.ledger if e.block == "moe") / S


def test_megatron_moe_layer_under_mxfp8() -> None:
    assert _moe_bytes_per_token("megatron", MXFP8) == pytest.approx(ROUTER + ROUTED, rel=1e-12)


def test_other_stacks_keep_the_expert_outputs() -> None:
    """Hugging Face's MoE blocks weight the expert outputs in the combine, which saves them:
    bf16 2·k·h = 32,768 bytes per token beyond the routed copies and the experts' tensors
    (those priced in bf16 here: the profile saves no quantized inputs)."""
    megatron = _moe_bytes_per_token("megatron", None)
    # without quantized inputs megatron saves the copies in bf16, and their probabilities
    assert megatron == pytest.approx(
        ROUTER + 2 * 8 * 2048 + FC1_OUTPUT + 2 * 8 * 768 + COPY_PROBS, rel=1e-12
    )
    ledger = layer_activations(QWEN, S, 1, flash=True, dropout=False, profile="pytorch").ledger
    outputs = [e for e in ledger if e.name == "expert outputs (before weighted combine)"]
    assert [e.bytes for e in outputs] == [2 * 8 * 2048 * S]


def _per_layer(stash: float | None, micro_batch: int = 2) -> float:
    ti = TrainingInputs(
        precision="mxfp8",
        seq_len=S,
        micro_batch=micro_batch,
        moe_paged_stash=stash,
        cuda_context_bytes=0.0,
        fragmentation_fraction=0.0,
    )
    report = estimate_training(QWEN, ti, get_gpu("gb200"), ep=8, dp=8, zero_stage=1)
    return report.activations_per_layer_bytes


def test_paged_stash_holds_its_factor_times_the_routed_tensors() -> None:
    """paged_stash.py ``allocate_stash_buffers``: the GPU buffer is the balanced token count
    × ``moe_paged_stash_buffer_size_factor_cuda``; Megatron-Bridge's recipes set 1.2, so a
    layer keeps 0.2 × the routed tensors more than dropless at balanced load: at
    micro-batch 2, 0.2 · 2 · 4096 · 23,800 bytes."""
    plain = _per_layer(None)
    stash = _per_layer(1.2)
    assert abs(ROUTED - (16_896 + 24_576 + 6_336 + 32)) < 1e-6
    assert stash - plain == pytest.approx(0.2 * 2 * S * ROUTED, rel=1e-9)
    # a GPU buffer below the balanced size spills the rest to host memory
    assert _per_layer(0.5) - plain == pytest.approx(-0.5 * 2 * S * ROUTED, rel=1e-9)
    assert _per_layer(1.0) == pytest.approx(plain, rel=1e-12)
