"""A decoder-only transformer's shape, and its exact parameter count.

One :class:`Architecture` describes every model the app knows: dense GPT-style and
Llama-style models, grouped-query / multi-query attention, gated MLPs, mixture-of-experts
(Mixtral, DeepSeek) and multi-head latent attention (DeepSeek-V2/V3).

:func:`count_parameters` is the single source of truth for parameter counts; every
estimator takes P from it (or from a user override that the scenario carries).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

FFNKind = Literal["gelu_mlp", "swiglu", "geglu"]
"""``gelu_mlp``: two matrices (up, down) with GELU/ReLU between, as in GPT-2/3, BLOOM,
NeoX, Falcon. ``swiglu`` / ``geglu``: three matrices (gate, up, down), as in Llama, Mistral,
Qwen (SwiGLU; Shazeer 2020, "GLU Variants Improve Transformer") and Gemma (GeGLU)."""

NormKind = Literal["layernorm", "rmsnorm"]
"""LayerNorm has a weight and a bias per channel (2·h parameters); RMSNorm only a weight (h)."""

PositionKind = Literal["learned", "rotary", "alibi"]
"""Learned absolute positions add a (positions × h) table; rotary (RoPE) and ALiBi add none."""

AttentionBias = Literal["none", "qkv", "all"]
"""Which attention projections carry a bias: none (Llama), q/k/v only (Qwen2), all (GPT)."""


class MoEConfig(BaseModel):
    """Mixture-of-experts feed-forward layers (Shazeer et al. 2017; Fedus et al. 2021).

    Each MoE layer has ``num_experts`` routed experts, of which ``experts_per_token`` are
    applied to each token, plus ``num_shared_experts`` always applied (DeepSeekMoE, Dai et
    al. 2024), and a router (one linear map h → num_experts). The first
    ``first_dense_layers`` layers use a dense FFN of the architecture's ``ffn_size`` instead
    (DeepSeek-V3: 3); the rest are MoE with experts of ``expert_ffn_size``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_experts: int = Field(ge=1, description="routed experts per MoE layer")
    experts_per_token: int = Field(ge=1, description="routed experts applied to each token (top-k)")
    expert_ffn_size: int = Field(ge=1, description="intermediate size of one expert")
    num_shared_experts: int = Field(default=0, ge=0, description="experts every token passes")
    first_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense FFN")
    router_bias: bool = Field(
        default=False, description="router has a per-expert bias (DeepSeek-V3 correction bias)"
    )

    @model_validator(mode="after")
    def _top_k_fits(self) -> Self:
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) exceeds num_experts "
                f"({self.num_experts})"
            )
        return self


class MLAConfig(BaseModel):
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, section 2.1).

    Queries go through a low-rank bottleneck of ``q_lora_rank`` (None: a direct projection);
    keys and values are compressed into a latent of ``kv_lora_rank`` plus a decoupled rotary
    key of ``qk_rope_head_dim`` shared by all heads. Only that latent and rotary key are
    cached at inference: (kv_lora_rank + qk_rope_head_dim) elements per token per layer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_nope_head_dim: int = Field(ge=1)
    qk_rope_head_dim: int = Field(ge=0)
    v_head_dim: int = Field(ge=1)


class Architecture(BaseModel):
    """The shape of a decoder-only transformer: everything a parameter, FLOP or memory
    estimate needs, and nothing about how it is trained."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="custom", description="display name")
    layers: int = Field(ge=1, description="transformer blocks (L)")
    hidden_size: int = Field(ge=1, description="model width (h, d_model)")
    heads: int = Field(ge=1, description="attention (query) heads (a)")
    kv_heads: int = Field(ge=1, description="key/value heads: = heads for MHA, 1 for MQA, else GQA")
    head_dim: int = Field(ge=1, description="width of one head; usually hidden_size / heads")
    ffn_size: int = Field(ge=1, description="MLP intermediate size (dense layers)")
    ffn_kind: FFNKind = "swiglu"
    vocab_size: int = Field(ge=1, description="embedding rows (padded vocabulary)")
    max_context: int = Field(ge=1, description="longest sequence the model was trained for")
    tied_embeddings: bool = Field(default=False, description="output head shares the embedding")
    positions: PositionKind = "rotary"
    position_offset: int = Field(
        default=0, ge=0, description="extra learned position rows (OPT reserves 2)"
    )
    norm: NormKind = "rmsnorm"
    norms_per_layer: int = Field(default=2, ge=0, description="2 pre-norms; Gemma-2 has 4")
    embedding_norm: bool = Field(default=False, description="a norm right after the embedding")
    attention_bias: AttentionBias = "none"
    mlp_bias: bool = False
    parallel_attention: bool = Field(
        default=False, description="attention and MLP read the same input (GPT-J, NeoX, Falcon)"
    )
    sliding_window: int | None = Field(default=None, ge=1, description="local attention window")
    sliding_window_layers: Literal["all", "alternate"] = Field(
        default="all", description="which layers use the window (Gemma-2 alternates)"
    )
    moe: MoEConfig | None = None
    mla: MLAConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.heads % self.kv_heads != 0:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.moe is not None and self.moe.first_dense_layers > self.layers:
            raise ValueError(
                f"moe.first_dense_layers ({self.moe.first_dense_layers}) exceeds layers "
                f"({self.layers})"
            )
        return self

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts."""
        return 0 if self.moe is None else self.layers - self.moe.first_dense_layers

    @property
    def dense_layers(self) -> int:
        """Layers whose FFN is a plain dense MLP."""
        return self.layers - self.moe_layers

    @property
    def gated(self) -> bool:
        """Whether the MLP has three matrices (gate, up, down) instead of two."""
        return self.ffn_kind != "gelu_mlp"

    @property
    def q_size(self) -> int:
        """Width of all query heads together (heads · head_dim; ≠ hidden_size for Gemma)."""
        return self.heads * self.head_dim

    @property
    def kv_size(self) -> int:
        """Width of all key (or value) heads together (kv_heads · head_dim)."""
        return self.kv_heads * self.head_dim


class ParameterCount(BaseModel):
    """Exact parameter count, split by component, total and active per token."""

    model_config = ConfigDict(frozen=True)

    embedding: int = Field(description="token embedding table (vocab × h)")
    positions: int = Field(description="learned position table, 0 for rotary / ALiBi")
    attention: int = Field(description="all layers' attention projections and their biases")
    mlp: int = Field(description="all dense-FFN layers' matrices and biases")
    experts: int = Field(description="all routed experts of all MoE layers")
    shared_experts: int = Field(description="all shared (always-on) experts")
    router: int = Field(description="all MoE routers")
    norms: int = Field(description="every norm: in-layer, embedding, final")
    head: int = Field(description="output projection (0 when tied to the embedding)")
    total: int = Field(description="every stored parameter")
    active: int = Field(
        description="parameters a token touches: all but the routed experts it skips "
        "(includes the one embedding row it reads; Mistral's convention for Mixtral's 12.9B)"
    )
    active_compute: int = Field(
        description="active parameters that do matrix multiplies: ``active`` minus the input "
        "embedding and position tables (DeepSeek's convention for V3's 36.7B activated)"
    )
    routed_experts_active: int = Field(description="routed-expert parameters a token touches")

    @property
    def non_embedding(self) -> int:
        """Total without embedding, position and (untied) head tables (Kaplan et al. 2020's N)."""
        return self.total - self.embedding - self.positions - self.head


def _norm_params(arch: Architecture) -> int:
    return 2 * arch.hidden_size if arch.norm == "layernorm" else arch.hidden_size


def attention_params_per_layer(arch: Architecture) -> int:
    """Parameters of one layer's attention block.

    Standard / GQA / MQA (Vaswani et al. 2017; Ainslie et al. 2023): W_q h×(a·d),
    W_k and W_v h×(kv·d) each, W_o (a·d)×h, plus biases per ``attention_bias``.
    MLA (DeepSeek-V2 section 2.1, layer names from DeepSeek-V3 ``inference/model.py``):
    wq_a h×r_q, q_norm r_q, wq_b r_q×a·(d_nope+d_rope) (or wq h×a·(d_nope+d_rope) without
    r_q), wkv_a h×(r_kv+d_rope), kv_norm r_kv, wkv_b r_kv×a·(d_nope+d_v), wo a·d_v×h.
    """
    h = arch.hidden_size
    if arch.mla is not None:
        m = arch.mla
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            q = h * arch.heads * qk_head
        else:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * arch.heads * qk_head
        kv = (
            h * (m.kv_lora_rank + m.qk_rope_head_dim)
            + m.kv_lora_rank
            + m.kv_lora_rank * arch.heads * (m.qk_nope_head_dim + m.v_head_dim)
        )
        out = arch.heads * m.v_head_dim * h
        return q + kv + out
    weights = h * arch.q_size + 2 * h * arch.kv_size + arch.q_size * h
    bias = 0
    if arch.attention_bias in ("qkv", "all"):
        bias += arch.q_size + 2 * arch.kv_size
    if arch.attention_bias == "all":
        bias += h
    return weights + bias


def mlp_params(arch: Architecture, ffn_size: int) -> int:
    """Parameters of one feed-forward block of intermediate size ``ffn_size``.

    Two matrices h×f and f×h for a GELU MLP (Vaswani et al. 2017; GPT-2/3); three for a
    gated unit, gate and up h×f and down f×h (Shazeer 2020). Biases (f + h, or 2f + h when
    gated) when ``mlp_bias``.
    """
    h = arch.hidden_size
    matrices = 3 if arch.gated else 2
    weights = matrices * h * ffn_size
    bias = ((matrices - 1) * ffn_size + h) if arch.mlp_bias else 0
    return weights + bias


def count_parameters(arch: Architecture) -> ParameterCount:
    """Exact parameter count of ``arch``, component by component.

    Per layer: attention (:func:`attention_params_per_layer`), FFN (:func:`mlp_params`, or
    for MoE layers routed experts + shared experts + router h·E [+E bias]) and
    ``norms_per_layer`` norms. Outside the layers: token embedding V·h, learned positions
    (max_context + position_offset)·h, optional embedding norm, final norm, and an untied
    output head V·h. This is the standard accounting of e.g. Narayanan et al. 2021
    (arXiv:2104.04473, section 5.1) written out term by term rather than approximated as
    12·L·h²; it reproduces published totals (see tests/test_architecture.py).

    Active parameters count, for each MoE layer, only ``experts_per_token`` routed experts.
    """
    h = arch.hidden_size
    embedding = arch.vocab_size * h
    positions = (arch.max_context + arch.position_offset) * h if arch.positions == "learned" else 0
    head = 0 if arch.tied_embeddings else arch.vocab_size * h
    norm = _norm_params(arch)
    norms = arch.layers * arch.norms_per_layer * norm + norm  # in-layer + final
    if arch.embedding_norm:
        norms += norm
    attention = arch.layers * attention_params_per_layer(arch)
    mlp = arch.dense_layers * mlp_params(arch, arch.ffn_size)
    experts = shared = router = routed_active = 0
    if arch.moe is not None:
        moe = arch.moe
        one_expert = mlp_params(arch, moe.expert_ffn_size)
        experts = arch.moe_layers * moe.num_experts * one_expert
        routed_active = arch.moe_layers * moe.experts_per_token * one_expert
        shared = arch.moe_layers * moe.num_shared_experts * one_expert
        router = arch.moe_layers * (
            h * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
        )
    total = embedding + positions + attention + mlp + experts + shared + router + norms + head
    active = total - experts + routed_active
    return ParameterCount(
        embedding=embedding,
        positions=positions,
        attention=attention,
        mlp=mlp,
        experts=experts,
        shared_experts=shared,
        router=router,
        norms=norms,
        head=head,
        total=total,
        active=active,
        # a tied head multiplies by the embedding table, so only an untied table is lookup-only
        active_compute=active - positions - (0 if arch.tied_embeddings else embedding),
        routed_experts_active=routed_active,
    )
