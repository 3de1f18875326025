"""The parts of an :class:`.architecture.Architecture` that are models of their own: the
kinds of FFN, norm, q/k norm, position and recurrent mixer, and the mixture-of-experts,
multi-head latent attention and recurrent (state-space, linear-attention) configurations.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

FFNKind = Literal["gelu_mlp", "swiglu", "geglu"]
"""``gelu_mlp``: two matrices (up, down) with GELU/ReLU between, as in GPT-2/3, BLOOM,
NeoX, Falcon. ``swiglu`` / ``geglu``: three matrices (gate, up, down), as in Llama, Mistral,
Qwen (SwiGLU; Shazeer 2020, "GLU Variants Improve Transformer") and Gemma (GeGLU)."""

NormKind = Literal["layernorm", "rmsnorm", "layernorm_nobias", "nonparametric"]
"""LayerNorm has a weight and a bias per channel (2·h parameters); RMSNorm only a weight (h);
``layernorm_nobias`` a LayerNorm with a weight only (Cohere's, h); ``nonparametric`` a
LayerNorm with neither (OLMo-1's ``OlmoLayerNorm``, 0)."""

QKNormKind = Literal["none", "head", "full"]
"""A norm on queries and keys before attention: ``head`` one norm of head_dim shared by all
heads, once for q and once for k (Qwen3, Gemma 3: ``q_norm``/``k_norm`` of ``head_dim``);
``full`` a norm over all query heads (a·d) and one over all key heads (kv·d) (OLMo-2,
OLMoE, Cohere's ``use_qk_norm``, StableLM's per-head LayerNorms)."""

RecurrentKind = Literal["mamba", "mamba2", "rwkv", "gated_deltanet"]
"""``mamba``: the selective SSM block of Gu & Dao 2023 (arXiv:2312.00752); ``mamba2``: the
SSD block of Dao & Gu 2024 (arXiv:2405.21060); ``rwkv``: RWKV-4's time-mix and channel-mix
(Peng et al. 2023, arXiv:2305.13048), Hugging Face's ``rwkv`` model type;
``gated_deltanet``: the Gated DeltaNet linear attention of Yang et al. 2024
(arXiv:2412.06464), Qwen3-Next's and Qwen3.5's ``linear_attention`` layers."""

LAYER_PATTERN_LETTERS = frozenset("M*-E")
"""Nemotron-H's ``hybrid_override_pattern`` letters, one per layer: ``M`` a Mamba-2 mixer
alone, ``*`` attention alone, ``-`` a dense MLP alone, ``E`` a mixture-of-experts FFN alone
(transformers 5.24.0 ``configuration_nemotron_h.py``, ``layers_block_type``)."""

PositionKind = Literal["learned", "rotary", "alibi", "none"]
"""Learned absolute positions add a (positions × h) table; rotary (RoPE) and ALiBi add none;
``none``: no position encoding (Mamba, RWKV, Jamba's attention layers)."""

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
    layer_period: int = Field(
        default=1, ge=1, description="after the dense lead, layer i is MoE when i % period = offset"
    )
    layer_offset: int = Field(default=0, ge=0, description="see layer_period")
    shared_expert_gate: bool = Field(
        default=False, description="a sigmoid gate h → 1 on the shared experts (Qwen2-MoE)"
    )
    router_scales: bool = Field(
        default=False,
        description="the router scales its input per channel (h) and its weights per expert "
        "(E) (Gemma 4's Gemma4TextRouter.scale and per_expert_scale)",
    )

    @model_validator(mode="after")
    def _top_k_fits(self) -> Self:
        if self.layer_offset >= self.layer_period:
            raise ValueError(
                f"layer_offset ({self.layer_offset}) must be below layer_period "
                f"({self.layer_period})"
            )
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


class RecurrentConfig(BaseModel):
    """State-space or recurrent mixers in place of attention (all layers, or all but a few).

    Mamba (Gu & Dao 2023, section 3.4 and Figure 3): in_proj h → 2·d_inner, a depthwise
    causal conv of ``conv_kernel`` over d_inner, x_proj d_inner → (dt_rank + 2·N),
    dt_proj dt_rank → d_inner, A (d_inner × N), D (d_inner), out_proj d_inner → h; its
    recurrent state is d_inner·N (SSM) + d_inner·(conv_kernel − 1) (conv) per layer.
    Mamba-2 (Dao & Gu 2024, section 7): in_proj h → 2·d_inner + 2·G·N + H, conv over
    d_inner + 2·G·N, per-head dt bias, A and D, a gated RMSNorm over d_inner, out_proj;
    state H·P·N + (d_inner + 2·G·N)·(conv_kernel − 1). RWKV-4 (Peng et al. 2023, section
    3): time-mix with ``inner_size`` channels and channel-mix with ``ffn_size``; state 5·h
    per layer (the previous token for both mixes, and the WKV numerator, denominator and
    running maximum). ``attention_period``/``attention_offset`` make a hybrid: layer i is an
    attention layer when i % period = offset (Jamba: 8, 4).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: RecurrentKind
    inner_size: int = Field(ge=1, description="d_inner (expand·h); RWKV: attention_hidden_size")
    state_size: int = Field(default=16, ge=0, description="SSM state per channel/head (N)")
    conv_kernel: int = Field(default=4, ge=0, description="causal conv width (d_conv)")
    time_step_rank: int = Field(default=0, ge=0, description="Mamba's dt_rank")
    heads: int = Field(default=0, ge=0, description="Mamba-2 heads (H)")
    groups: int = Field(default=1, ge=1, description="Mamba-2 B/C groups (G)")
    conv_bias: bool = True
    proj_bias: bool = Field(default=False, description="in_proj and out_proj carry biases")
    inner_norms: bool = Field(
        default=False, description="RMSNorms on dt, B and C (Jamba's dt/b/c_layernorm)"
    )
    ffn_size: int = Field(default=0, ge=0, description="RWKV channel-mix width")
    attention_period: int | None = Field(
        default=None, ge=1, description="hybrids: layer i is attention when i % period = offset"
    )
    attention_offset: int = Field(default=0, ge=0)
    has_ffn: bool = Field(
        default=False, description="recurrent layers also carry the model's FFN (Jamba)"
    )
    layer_pattern: str | None = Field(
        default=None,
        max_length=4096,
        description="one letter per layer, Nemotron-H's hybrid_override_pattern: M Mamba-2, "
        "* attention, - MLP, E MoE; each layer is that block alone (None: the period above)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.kind in ("mamba2", "gated_deltanet") and (
            self.heads < 1 or self.inner_size % self.heads
        ):
            raise ValueError(
                f"{self.kind} needs heads ≥ 1 dividing inner_size ({self.inner_size}), "
                f"got {self.heads}"
            )
        if self.layer_pattern is not None and set(self.layer_pattern) - LAYER_PATTERN_LETTERS:
            raise ValueError(
                f"layer_pattern letters must be M, *, - or E, got {self.layer_pattern[:80]!r}"
            )
        if self.attention_period is not None and self.attention_offset >= self.attention_period:
            raise ValueError(
                f"attention_offset ({self.attention_offset}) must be below attention_period "
                f"({self.attention_period})"
            )
        return self

    @property
    def head_dim(self) -> int:
        """Mamba-2's P = d_inner / H (Gated DeltaNet: the value head width)."""
        return self.inner_size // self.heads if self.heads else 0
