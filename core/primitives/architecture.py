"""A decoder-only transformer's shape, and its exact parameter count.

One :class:`Architecture` describes every model the app knows: dense GPT-style and
Llama-style models, grouped-query / multi-query attention, gated MLPs, mixture-of-experts
(Mixtral, DeepSeek, gpt-oss, Llama 4), multi-head latent attention (DeepSeek-V2/V3), and
state-space / recurrent layers (Mamba, Mamba-2, RWKV, and hybrids such as Jamba).

Layers may differ: sliding-window and global attention layers (Gemma 2/3, Cohere 2,
gpt-oss), dense and MoE FFN layers (DeepSeek's leading dense layers, Llama 4 Maverick's
and Jamba's interleaving), attention and recurrent mixers (Jamba). Each difference is a
periodic pattern with a default that means "every layer the same", so older scenario
files load unchanged.

:func:`count_parameters` is the single source of truth for parameter counts; every
estimator takes P from it (or from a user override that the scenario carries).
"""

from __future__ import annotations

from typing import Literal, NamedTuple, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llm_planner.core.primitives.kept import kept

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

RecurrentKind = Literal["mamba", "mamba2", "rwkv"]
"""``mamba``: the selective SSM block of Gu & Dao 2023 (arXiv:2312.00752); ``mamba2``: the
SSD block of Dao & Gu 2024 (arXiv:2405.21060); ``rwkv``: RWKV-4's time-mix and channel-mix
(Peng et al. 2023, arXiv:2305.13048), Hugging Face's ``rwkv`` model type."""

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

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.kind == "mamba2" and (self.heads < 1 or self.inner_size % self.heads):
            raise ValueError(
                f"mamba2 needs heads ≥ 1 dividing inner_size ({self.inner_size}), got {self.heads}"
            )
        if self.attention_period is not None and self.attention_offset >= self.attention_period:
            raise ValueError(
                f"attention_offset ({self.attention_offset}) must be below attention_period "
                f"({self.attention_period})"
            )
        return self

    @property
    def head_dim(self) -> int:
        """Mamba-2's P = d_inner / H."""
        return self.inner_size // self.heads if self.heads else 0


TensorSplit = Literal["columns", "rows", "none"]
"""How tensor parallelism splits a matrix (Shoeybi et al. 2019, arXiv:1909.08053, section 3):
``columns`` (column-parallel: d_out ÷ tp, Q/K/V and the MLP's first linear), ``rows``
(row-parallel: d_in ÷ tp, the attention output and the MLP's second linear), ``none``
(replicated on every tp rank: MLA's down-projections, the router)."""


LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
"""The names a layer's weight matrices answer to as LoRA targets (:attr:`LayerMatrix.target`,
PEFT's ``target_modules`` for Llama: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
down_proj; the router is not a target)."""


class LayerMatrix(NamedTuple):
    """One weight matrix of a layer: a token's (1 × d_in) input times W (d_in × d_out)."""

    name: str
    """The layer's own name for it (q, k, v, o; MLA: q_a, q_b, kv_a, kv_b; gate, up, down;
    router)."""
    target: str
    """The LoRA target it belongs to (q, k, v, o, gate, up, down; the router is none)."""
    d_in: int
    d_out: int
    copies: int
    """Copies in the layer: 1, or the routed or shared experts' number."""
    tp_split: TensorSplit
    routed: bool
    """A routed expert: expert parallelism splits the copies over ep ranks; each token passes
    ``experts_per_token`` of them."""
    gemm: str
    """The GEMM it runs in (Megatron-LM fuses q, k, v into one, and gate with up); ""
    for the router, which the step time does not price as a GEMM."""

    @property
    def elements(self) -> int:
        """d_in · d_out · copies."""
        return self.d_in * self.d_out * self.copies


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
    global_attention_every: int | None = Field(
        default=None,
        ge=1,
        description="with a window: every N-th layer (N-1, 2N-1, ...) attends globally, the "
        "others within the window (Gemma 3: 6, Cohere 2 and Llama 4: 4, gpt-oss: 2)",
    )
    qk_norm: QKNormKind = "none"
    attention_sinks: bool = Field(
        default=False, description="one learned sink logit per head per layer (gpt-oss)"
    )
    head_bias: bool = Field(default=False, description="the output head has a bias (GPT-J, Phi-2)")
    hf_model_type: str | None = Field(
        default=None,
        max_length=64,
        description="the Hugging Face model_type the shape was imported from: selects that "
        "modelling file's saved tensors under the Hugging Face activation profiles "
        "(None: Llama's modules)",
    )
    hidden_act: str | None = Field(
        default=None,
        max_length=64,
        description="the MLP activation as transformers names it (silu, gelu, gelu_new, "
        "gelu_fast, gelu_pytorch_tanh...); None: the usual one for ffn_kind",
    )
    moe: MoEConfig | None = None
    mla: MLAConfig | None = None
    recurrent: RecurrentConfig | None = None

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

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer ``index`` (0-based) has a mixture-of-experts FFN: past the dense
        lead and on the MoE period (DeepSeek ``first_k_dense_replace``/``moe_layer_freq``,
        Qwen-MoE ``decoder_sparse_step``, Llama 4 ``interleave_moe_layer_step``, Jamba
        ``expert_layer_period``/``offset``)."""
        moe = self.moe
        if moe is None or index < moe.first_dense_layers:
            return False
        return index % moe.layer_period == moe.layer_offset and self.has_ffn(index)

    def is_attention_layer(self, index: int) -> bool:
        """Whether layer ``index`` mixes tokens by attention (else by its recurrent mixer)."""
        r = self.recurrent
        if r is None:
            return True
        return r.attention_period is not None and index % r.attention_period == r.attention_offset

    def has_ffn(self, index: int) -> bool:
        """Whether layer ``index`` has an FFN (Mamba and RWKV blocks have none of their own)."""
        return self.recurrent is None or self.recurrent.has_ffn or self.is_attention_layer(index)

    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts."""
        if self.moe is None:
            return 0
        return sum(1 for i in range(self.layers) if self.is_moe_layer(i))

    @property
    def dense_layers(self) -> int:
        """Layers without a mixture of experts (a dense FFN, or none in a Mamba/RWKV block)."""
        return self.layers - self.moe_layers

    @property
    def attention_layers(self) -> int:
        """Layers with attention (all of a transformer's; a hybrid's few; none of Mamba's)."""
        if self.recurrent is None:
            return self.layers
        return sum(1 for i in range(self.layers) if self.is_attention_layer(i))

    @property
    def recurrent_layers(self) -> int:
        """Layers with a recurrent (state-space) mixer instead of attention."""
        return self.layers - self.attention_layers

    @property
    def windowed_attention_layers(self) -> int:
        """Attention layers that attend within ``sliding_window`` tokens only.

        ``global_attention_every`` N: all but every N-th (Gemma 3's 5 local : 1 global);
        else ``alternate``: every other layer from the first (Gemma 2); else all.
        """
        if self.sliding_window is None:
            return 0
        every = self.global_attention_every
        if every is None and self.sliding_window_layers == "alternate":
            every = 2
        if every is None:
            return self.attention_layers
        return sum(1 for i in range(self.layers) if self.is_attention_layer(i) and (i + 1) % every)

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

    def layer_matrices(self, moe_layer: bool = False) -> tuple[LayerMatrix, ...]:
        """Every weight matrix of one attention layer (an MoE layer when ``moe_layer``): the
        one list from which parameter counts (:func:`count_parameters`), LoRA adapters,
        FLOPs per token, the training state and the step time's GEMM shapes derive.

        Attention (Vaswani et al. 2017; GQA, Ainslie et al. 2023): q h→a·d, k and v h→kv·d,
        o a·d→h. MLA (DeepSeek-V2, arXiv:2405.04434, section 2.1; names and tensor-parallel
        classes from deepseek-ai/DeepSeek-V3 ``inference/model.py``): wq_a h→r_q
        (replicated ``Linear``) and wq_b r_q→a·(d_nope + d_rope) (``ColumnParallelLinear``),
        or wq h→a·(d_nope + d_rope) without r_q; wkv_a h→(r_kv + d_rope) (replicated),
        wkv_b r_kv→a·(d_nope + d_v) (column-parallel); wo a·d_v→h (row-parallel). As LoRA
        targets the query matrices are q, wkv_a is k and wkv_b is v. FFN (Shazeer 2020):
        gate and up h→f (gated units only), down f→h; an MoE layer has E routed and S shared
        experts of f_expert and a router h→E. Recurrent mixers (Mamba, RWKV) are not listed:
        their parameters are counted by :func:`recurrent_params_per_layer`."""
        h = self.hidden_size
        mats: list[LayerMatrix] = []
        if self.mla is not None:
            m = self.mla
            qk = self.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
            if m.q_lora_rank is None:
                mats.append(LayerMatrix("q", "q", h, qk, 1, "columns", False, "q"))
            else:
                mats.append(LayerMatrix("q_a", "q", h, m.q_lora_rank, 1, "none", False, "q_a"))
                mats.append(LayerMatrix("q_b", "q", m.q_lora_rank, qk, 1, "columns", False, "q_b"))
            kv_a = m.kv_lora_rank + m.qk_rope_head_dim
            kv_b = self.heads * (m.qk_nope_head_dim + m.v_head_dim)
            mats.append(LayerMatrix("kv_a", "k", h, kv_a, 1, "none", False, "kv_a"))
            mats.append(LayerMatrix("kv_b", "v", m.kv_lora_rank, kv_b, 1, "columns", False, "kv_b"))
            mats.append(LayerMatrix("o", "o", self.heads * m.v_head_dim, h, 1, "rows", False, "o"))
        else:
            mats += [
                LayerMatrix("q", "q", h, self.q_size, 1, "columns", False, "qkv"),
                LayerMatrix("k", "k", h, self.kv_size, 1, "columns", False, "qkv"),
                LayerMatrix("v", "v", h, self.kv_size, 1, "columns", False, "qkv"),
                LayerMatrix("o", "o", self.q_size, h, 1, "rows", False, "o"),
            ]
        if moe_layer and self.moe is not None:
            moe = self.moe
            mats += self.mlp_matrices(moe.expert_ffn_size, moe.num_experts, routed=True)
            if moe.num_shared_experts:
                mats += self.mlp_matrices(moe.expert_ffn_size, moe.num_shared_experts)
            mats.append(LayerMatrix("router", "", h, moe.num_experts, 1, "none", False, ""))
        else:
            mats += self.mlp_matrices(self.ffn_size)
        return tuple(mats)

    def mlp_matrices(
        self, ffn_size: int, count: int = 1, *, routed: bool = False
    ) -> tuple[LayerMatrix, ...]:
        """The matrices of ``count`` feed-forward blocks of intermediate size ``ffn_size``:
        gate and up h→f (fused into one column-parallel GEMM, fc1) for a gated unit, up
        alone for a GELU MLP, and down f→h (row-parallel, fc2) (Shazeer 2020; Shoeybi et
        al. 2019, section 3)."""
        h = self.hidden_size
        up = [LayerMatrix("up", "up", h, ffn_size, count, "columns", routed, "fc1")]
        if self.gated:
            up.insert(0, LayerMatrix("gate", "gate", h, ffn_size, count, "columns", routed, "fc1"))
        down = LayerMatrix("down", "down", ffn_size, h, count, "rows", routed, "fc2")
        return (*up, down)


class ParameterCount(BaseModel):
    """Exact parameter count, split by component, total and active per token."""

    model_config = ConfigDict(frozen=True)

    embedding: int = Field(description="token embedding table (vocab × h)")
    positions: int = Field(description="learned position table, 0 for rotary / ALiBi")
    attention: int = Field(description="all layers' attention projections and their biases")
    mlp: int = Field(description="all dense-FFN layers' matrices and biases")
    experts: int = Field(description="all routed experts of all MoE layers")
    shared_experts: int = Field(description="all shared (always-on) experts")
    router: int = Field(description="all MoE routers (and Qwen2-MoE's shared-expert gates)")
    recurrent: int = Field(default=0, description="all recurrent / state-space mixers")
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


def norm_params(arch: Architecture, width: int | None = None) -> int:
    """One norm over ``width`` channels (default h): 2·width for LayerNorm (weight and
    bias), width for RMSNorm or a bias-free LayerNorm, 0 for a parameter-free one."""
    n = arch.hidden_size if width is None else width
    return {"layernorm": 2 * n, "nonparametric": 0}.get(arch.norm, n)


def _norm_params(arch: Architecture) -> int:
    return norm_params(arch)


@kept()
def attention_params_per_layer(arch: Architecture) -> int:
    """Parameters of one layer's attention block.

    Standard / GQA / MQA (Vaswani et al. 2017; Ainslie et al. 2023): W_q h×(a·d),
    W_k and W_v h×(kv·d) each, W_o (a·d)×h, plus biases per ``attention_bias``, plus the
    query/key norms (``qk_norm``: 2·d for per-head norms, a·d + kv·d over all heads, each
    doubled for a LayerNorm with bias) and gpt-oss's sinks (a per layer; Hugging Face
    ``modeling_gpt_oss.py``, ``GptOssAttention.sinks``).
    MLA (DeepSeek-V2 section 2.1, layer names from DeepSeek-V3 ``inference/model.py``):
    wq_a h×r_q, q_norm r_q, wq_b r_q×a·(d_nope+d_rope) (or wq h×a·(d_nope+d_rope) without
    r_q), wkv_a h×(r_kv+d_rope), kv_norm r_kv, wkv_b r_kv×a·(d_nope+d_v), wo a·d_v×h.
    """
    h = arch.hidden_size
    weights = sum(m.elements for m in arch.layer_matrices() if m.target in ("q", "k", "v", "o"))
    if arch.mla is not None:  # q_norm (r_q) and kv_norm (r_kv), RMSNorm weights
        return weights + (arch.mla.q_lora_rank or 0) + arch.mla.kv_lora_rank
    bias = 0
    if arch.attention_bias in ("qkv", "all"):
        bias += arch.q_size + 2 * arch.kv_size
    if arch.attention_bias == "all":
        bias += h
    qk_norm = 0
    if arch.qk_norm == "head":
        qk_norm = 2 * norm_params(arch, arch.head_dim)
    elif arch.qk_norm == "full":
        qk_norm = norm_params(arch, arch.q_size) + norm_params(arch, arch.kv_size)
    sinks = arch.heads if arch.attention_sinks else 0
    return weights + bias + qk_norm + sinks


def recurrent_params_per_layer(arch: Architecture) -> int:
    """Parameters of one layer's recurrent mixer (0 without one).

    Layer names and shapes from Hugging Face transformers ``modeling_mamba.py``
    (``MambaMixer``), ``modeling_mamba2.py`` (``Mamba2Mixer``), ``modeling_jamba.py``
    (``JambaMambaMixer``: adds dt/B/C RMSNorms) and ``modeling_rwkv.py``
    (``RwkvSelfAttention`` + ``RwkvFeedForward``); see :class:`RecurrentConfig`.
    """
    r = arch.recurrent
    if r is None:
        return 0
    h, d, n, k = arch.hidden_size, r.inner_size, r.state_size, r.conv_kernel
    if r.kind == "rwkv":
        time_mix = 4 * h * d + 2 * d + 3 * h  # key/value/receptance/output, decay, first, mixes
        channel_mix = 2 * h * r.ffn_size + h * h + 2 * h  # key, value, receptance, mixes
        return time_mix + channel_mix
    proj_bias = r.proj_bias
    if r.kind == "mamba":
        rank = r.time_step_rank
        in_proj = h * 2 * d + (2 * d if proj_bias else 0)
        conv = d * k + (d if r.conv_bias else 0)
        x_proj = d * (rank + 2 * n)
        dt_proj = rank * d + d
        out_proj = d * h + (h if proj_bias else 0)
        norms = rank + 2 * n if r.inner_norms else 0
        return in_proj + conv + x_proj + dt_proj + d * n + d + out_proj + norms
    heads = r.heads
    conv_dim = d + 2 * r.groups * n
    projection = d + conv_dim + heads
    in_proj = h * projection + (projection if proj_bias else 0)
    conv = conv_dim * k + (conv_dim if r.conv_bias else 0)
    out_proj = d * h + (h if proj_bias else 0)
    return in_proj + conv + 3 * heads + d + out_proj  # dt_bias, A_log, D; gated norm d


def _moe_layer_params(arch: Architecture) -> tuple[int, int, int, int]:
    """(routed experts, routed active, shared experts, router) of one MoE layer."""
    moe = arch.moe
    if moe is None:
        return 0, 0, 0, 0
    one_expert = mlp_params(arch, moe.expert_ffn_size)
    router = arch.hidden_size * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
    if moe.shared_expert_gate and moe.num_shared_experts:
        router += arch.hidden_size
    return (
        moe.num_experts * one_expert,
        moe.experts_per_token * one_expert,
        moe.num_shared_experts * one_expert,
        router,
    )


def layer_params(arch: Architecture, index: int) -> int:
    """All parameters of layer ``index``: its mixer (attention or recurrent), its FFN
    (dense, MoE with router and shared experts, or none) and its ``norms_per_layer`` norms."""
    mixer = (
        attention_params_per_layer(arch)
        if arch.is_attention_layer(index)
        else recurrent_params_per_layer(arch)
    )
    if arch.is_moe_layer(index):
        experts, _, shared, router = _moe_layer_params(arch)
        ffn = experts + shared + router
    elif arch.has_ffn(index):
        ffn = mlp_params(arch, arch.ffn_size)
    else:
        ffn = 0
    return mixer + ffn + arch.norms_per_layer * norm_params(arch)


def mean_layer_params(arch: Architecture, moe_layer: bool) -> float:
    """Mean parameters of the model's MoE layers (``moe_layer``) or of its other layers;
    layers × mean = those layers' exact total (hybrids mix attention and recurrent layers)."""
    picked = [
        layer_params(arch, i) for i in range(arch.layers) if arch.is_moe_layer(i) == moe_layer
    ]
    return sum(picked) / len(picked) if picked else 0.0


@kept()
def mlp_params(arch: Architecture, ffn_size: int) -> int:
    """Parameters of one feed-forward block of intermediate size ``ffn_size``.

    Two matrices h×f and f×h for a GELU MLP (Vaswani et al. 2017; GPT-2/3); three for a
    gated unit, gate and up h×f and down f×h (Shazeer 2020). Biases (f + h, or 2f + h when
    gated) when ``mlp_bias``.
    """
    matrices = arch.mlp_matrices(ffn_size)
    weights = sum(m.elements for m in matrices)
    bias = ((len(matrices) - 1) * ffn_size + arch.hidden_size) if arch.mlp_bias else 0
    return weights + bias


@kept()
def count_parameters(arch: Architecture) -> ParameterCount:
    """Exact parameter count of ``arch`` (:func:`_count_parameters`), kept for the last
    shapes counted (:func:`.kept.kept`: ``Architecture`` is frozen, so equal shapes count
    the same, and one estimate asks for the count of one shape a dozen times). The value
    is the count's own (frozen) object."""
    return _count_parameters(arch)


def _count_parameters(arch: Architecture) -> ParameterCount:
    """Exact parameter count of ``arch``, component by component.

    Per layer: attention (:func:`attention_params_per_layer`) or a recurrent mixer
    (:func:`recurrent_params_per_layer`), FFN (:func:`mlp_params`, or for MoE layers routed
    experts + shared experts + router h·E [+E bias], or none in a Mamba/RWKV block) and
    ``norms_per_layer`` norms. Outside the layers: token embedding V·h, learned positions
    (max_context + position_offset)·h, optional embedding norm, final norm, and an untied
    output head V·h (+V with ``head_bias``). This is the standard accounting of e.g.
    Narayanan et al. 2021 (arXiv:2104.04473, section 5.1) written out term by term rather
    than approximated as 12·L·h²; it reproduces published totals (see
    tests/core/test_architecture.py).

    Active parameters count, for each MoE layer, only ``experts_per_token`` routed experts.
    """
    h = arch.hidden_size
    embedding = arch.vocab_size * h
    positions = (arch.max_context + arch.position_offset) * h if arch.positions == "learned" else 0
    head = 0 if arch.tied_embeddings else arch.vocab_size * h
    head += arch.vocab_size if arch.head_bias else 0
    norm = _norm_params(arch)
    norms = arch.layers * arch.norms_per_layer * norm + norm  # in-layer + final
    if arch.embedding_norm:
        norms += norm
    attention_layers = arch.attention_layers
    attention = attention_layers * attention_params_per_layer(arch)
    recurrent = (arch.layers - attention_layers) * recurrent_params_per_layer(arch)
    moe_layers = arch.moe_layers
    ffn_layers = sum(1 for i in range(arch.layers) if arch.has_ffn(i))
    mlp = (ffn_layers - moe_layers) * mlp_params(arch, arch.ffn_size)
    one_experts, one_active, one_shared, one_router = _moe_layer_params(arch)
    experts = moe_layers * one_experts
    routed_active = moe_layers * one_active
    shared = moe_layers * one_shared
    router = moe_layers * one_router
    total = embedding + positions + attention + recurrent + mlp + experts + shared + router + norms
    total += head
    active = total - experts + routed_active
    return ParameterCount(
        embedding=embedding,
        positions=positions,
        attention=attention,
        mlp=mlp,
        experts=experts,
        shared_experts=shared,
        router=router,
        recurrent=recurrent,
        norms=norms,
        head=head,
        total=total,
        active=active,
        # a tied head multiplies by the embedding table, so only an untied table is lookup-only
        active_compute=active - positions - (0 if arch.tied_embeddings else embedding),
        routed_experts_active=routed_active,
    )
