"""From a parameter count to a plausible dense architecture (the first step of planning a run).

The proposal is a Llama-2-style decoder (Touvron et al. 2023, "Llama 2", section 2.2 and
Meta's reference ``llama/model.py``): SwiGLU MLP of 8/3·h rounded up to a multiple of 256,
RMSNorm, rotary positions, untied embeddings, a 32,000-token vocabulary (the Llama-2
tokenizer), head dimension 128 and multi-head attention (kv heads = heads, as in
Llama-2 7B/13B).

Depth and width follow one published shape rule: keep the aspect ratio
d_model / n_layer near 128. That is the ratio of GPT-3 6.7B (4096/32), 13B (5140/40) and
175B (12288/96) in Brown et al. 2020, Table 2.1, and of Llama-2 7B (4096/32) and 13B
(5120/40). Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", section 3.1 and
figure 5) found that at a fixed non-embedding parameter count the loss depends only
weakly on depth versus width over a wide range of aspect ratios, so holding one ratio
across sizes costs little. Among all (layers, hidden) pairs, hidden a multiple of 128,
whose exact count is within :data:`TOLERANCE` of the target, the one whose ratio is
closest to 128 (in log terms) is chosen.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.primitives import units
from llm_planner.core.primitives.architecture import Architecture, count_parameters

VOCAB_SIZE = 32000
"""Llama-2's SentencePiece vocabulary (Touvron et al. 2023)."""
HEAD_DIM = 128
"""GPT-3 6.7B–175B and every Llama-2 model use 128-wide heads."""
FFN_MULTIPLE = 256
"""Llama reference code's ``multiple_of``."""
TARGET_ASPECT = 128.0
"""d_model / n_layer of GPT-3 6.7B/13B/175B (Brown et al. 2020, Table 2.1) and Llama-2 7B/13B."""
TOLERANCE = 0.03
"""Largest relative gap allowed between the proposal's exact count and the target."""
MIN_PARAMS = 1e7
"""Below ~10M the 32k-entry embedding tables alone (8.2M at h = 128) exceed the budget."""
MAX_PARAMS = 1e14
MAX_CONTEXT = 4096
"""Llama-2's training context; only KV-cache and activation estimates read it."""


class ShapeProposal(BaseModel):
    """A proposed dense architecture for a target size, and the rule that produced it."""

    model_config = ConfigDict(frozen=True)

    architecture: Architecture
    rule: str
    params_exact: int
    params_target: float


def llama_ffn_size(hidden: int) -> int:
    """SwiGLU intermediate size of Meta's Llama reference code: int(2·4h/3) rounded up to a
    multiple of 256 (4096 → 11008, 5120 → 13824, as in Llama-2 7B and 13B)."""
    inner = int(2 * 4 * hidden / 3)
    return FFN_MULTIPLE * math.ceil(inner / FFN_MULTIPLE)


def _per_layer(hidden: int) -> int:
    # attention 4·h² (q, k, v, o with heads·128 = h), SwiGLU 3·h·f, two RMSNorms
    return 4 * hidden * hidden + 3 * hidden * llama_ffn_size(hidden) + 2 * hidden


def _outside_layers(hidden: int) -> int:
    # untied embedding and head V·h each, final RMSNorm
    return 2 * VOCAB_SIZE * hidden + hidden


def _architecture(layers: int, hidden: int, name: str) -> Architecture:
    heads = hidden // HEAD_DIM
    return Architecture(
        name=name,
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=HEAD_DIM,
        ffn_size=llama_ffn_size(hidden),
        ffn_kind="swiglu",
        vocab_size=VOCAB_SIZE,
        max_context=MAX_CONTEXT,
        tied_embeddings=False,
        positions="rotary",
        norm="rmsnorm",
    )


def propose_architecture(params: float) -> ShapeProposal:
    """A dense Llama-style architecture of about ``params`` parameters (see module docstring).

    For each width h = 128·k (k heads) the depth L = (P − 2·V·h − h) / (4h² + 3h·f + 2h)
    is rounded down and up; of the pairs within 3% of P the one with h/L closest to 128 wins
    (if none is within 3%, the closest count). Raises ValueError outside 10M–100T.
    """
    if not math.isfinite(params) or not MIN_PARAMS <= params <= MAX_PARAMS:
        raise ValueError(
            f"cannot propose a shape for {params:g} parameters: the rule covers "
            f"{units.format_count(MIN_PARAMS)} to {units.format_count(MAX_PARAMS)}"
        )
    ideal_hidden = (params * TARGET_ASPECT / 12) ** (1 / 3)  # P ≈ 12·L·h² with L = h/128
    top = max(8, math.ceil(4 * ideal_hidden / HEAD_DIM))
    best: tuple[tuple[float, ...], int, int] | None = None
    for k in range(1, top + 1):
        hidden = k * HEAD_DIM
        per, outside = _per_layer(hidden), _outside_layers(hidden)
        depth = (params - outside) / per
        for layers in {max(1, math.floor(depth)), max(1, math.ceil(depth))}:
            error = abs(outside + layers * per - params) / params
            aspect_gap = abs(math.log(hidden / layers / TARGET_ASPECT))
            key = (0.0, aspect_gap, error) if error <= TOLERANCE else (1.0, error, aspect_gap)
            if best is None or key < best[0]:
                best = (key, layers, hidden)
    assert best is not None  # k = 1 always yields a candidate
    _, layers, hidden = best
    name = f"Proposed {units.format_count(params)} dense"
    architecture = _architecture(layers, hidden, name)
    exact = count_parameters(architecture).total
    gap = (exact - params) / params
    rule = (
        "Llama-2-style dense decoder (SwiGLU FFN = 8/3·h rounded up to a multiple of 256 as in "
        "Meta's Llama reference code; RMSNorm; rotary; untied 32,000-token Llama-2 vocabulary; "
        "head_dim 128; kv heads = heads). Depth/width: the (layers, hidden) pair within 3% of "
        "the target whose aspect ratio hidden/layers is closest to 128, the ratio of GPT-3 "
        "6.7B/13B/175B (Brown et al. 2020, Table 2.1) and Llama-2 7B/13B; Kaplan et al. 2020 "
        "(section 3.1, figure 5) found loss depends only weakly on this ratio over a wide "
        f"range. Chosen: {layers} layers x {hidden} hidden (aspect {hidden / layers:.1f}), "
        f"{exact:,} parameters ({100 * gap:+.2f}% vs target)."
    )
    return ShapeProposal(
        architecture=architecture, rule=rule, params_exact=exact, params_target=params
    )
