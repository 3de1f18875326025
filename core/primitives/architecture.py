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

from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from llm_planner.core.primitives.architecture_parts import (
    AttentionBias,
    FFNKind,
    MLAConfig,
    MoEConfig,
    NormKind,
    PositionKind,
    QKNormKind,
    RecurrentConfig,
    RecurrentKind,
)
from llm_planner.core.primitives.kept import kept, kept_hash
from llm_planner.core.primitives.layer_matrices import (
    LORA_TARGETS,
    LayerMatrix,
    TensorSplit,
    attention_matrices_of_form,
    layer_counts,
    layers_differ,
)

__all__ = [
    "LORA_TARGETS",
    "AttentionBias",
    "FFNKind",
    "LayerMatrix",
    "MLAConfig",
    "MoEConfig",
    "NormKind",
    "PositionKind",
    "QKNormKind",
    "RecurrentConfig",
    "RecurrentKind",
    "TensorSplit",
]


class Architecture(BaseModel):
    """The shape of a decoder-only transformer: everything a parameter, FLOP or memory
    estimate needs, and nothing about how it is trained."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    __slots__ = ("_kept_hash",)

    def __hash__(self) -> int:
        return kept_hash(self)  # the fields' hash, computed once (frozen)

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
    attention_output_gate: bool = Field(
        default=False,
        description="q_proj also emits a sigmoid gate on the attention output, a·d more "
        "outputs (Qwen3-Next and Qwen3.5 attn_output_gate)",
    )
    global_head_dim: int | None = Field(
        default=None, ge=1, description="head width of the global layers (Gemma 4: 512)"
    )
    global_kv_heads: int | None = Field(
        default=None, ge=1, description="KV heads of the global layers (Gemma 4)"
    )
    global_values_are_keys: bool = Field(
        default=False,
        description="global layers have no v projection; the keys are the values "
        "(Gemma 4 attention_k_eq_v)",
    )
    kv_shared_layers: int = Field(
        default=0,
        ge=0,
        description="the last N layers reuse an earlier layer's keys and values: no k/v "
        "projections and no KV cache of their own (Gemma 4 num_kv_shared_layers)",
    )
    kv_shared_ffn_multiplier: int = Field(
        default=1, ge=1, description="FFN width factor of those layers (use_double_wide_mlp: 2)"
    )
    per_layer_input_size: int = Field(
        default=0,
        ge=0,
        description="width of each layer's per-layer input embedding (Gemma 3n/4 "
        "hidden_size_per_layer_input; 0: none)",
    )
    per_layer_input_vocab: int = Field(
        default=0, ge=0, description="rows of the per-layer embedding table"
    )
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
        pattern = self.recurrent.layer_pattern if self.recurrent is not None else None
        if pattern is not None and len(pattern) != self.layers:
            raise ValueError(
                f"recurrent.layer_pattern has {len(pattern)} letters for {self.layers} layers"
            )
        if self.kv_shared_layers > self.layers:
            raise ValueError(
                f"kv_shared_layers ({self.kv_shared_layers}) exceeds layers ({self.layers})"
            )
        return self

    def _letter(self, index: int) -> str | None:
        """Layer ``index``'s letter in a hybrid's explicit pattern (None: no pattern)."""
        r = self.recurrent
        return r.layer_pattern[index] if r is not None and r.layer_pattern else None

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer ``index`` (0-based) has a mixture-of-experts FFN: past the dense
        lead and on the MoE period (DeepSeek ``first_k_dense_replace``/``moe_layer_freq``,
        Qwen-MoE ``decoder_sparse_step``, Llama 4 ``interleave_moe_layer_step``, Jamba
        ``expert_layer_period``/``offset``)."""
        moe = self.moe
        letter = self._letter(index)
        if letter is not None:
            return moe is not None and letter == "E"
        if moe is None or index < moe.first_dense_layers:
            return False
        return index % moe.layer_period == moe.layer_offset and self.has_ffn(index)

    def is_attention_layer(self, index: int) -> bool:
        """Whether layer ``index`` mixes tokens by attention (else by its recurrent mixer,
        or, in an explicit pattern, not at all: Nemotron-H's MLP layers)."""
        r = self.recurrent
        if r is None:
            return True
        letter = self._letter(index)
        if letter is not None:
            return letter == "*"
        return r.attention_period is not None and index % r.attention_period == r.attention_offset

    def is_recurrent_layer(self, index: int) -> bool:
        """Whether layer ``index`` mixes tokens by its recurrent (state-space) mixer."""
        letter = self._letter(index)
        if letter is not None:
            return letter == "M"
        return self.recurrent is not None and not self.is_attention_layer(index)

    def has_ffn(self, index: int) -> bool:
        """Whether layer ``index`` has an FFN (Mamba and RWKV blocks have none of their own;
        in Nemotron-H's pattern only the ``-`` and ``E`` layers do)."""
        letter = self._letter(index)
        if letter is not None:
            return letter in "-E"
        return self.recurrent is None or self.recurrent.has_ffn or self.is_attention_layer(index)

    def shares_kv(self, index: int) -> bool:
        """Whether layer ``index`` reuses an earlier layer's keys and values (the last
        ``kv_shared_layers``; transformers 5.24.0 ``Gemma4TextConfig.kv_sharing_modes``)."""
        return index >= self.layers - self.kv_shared_layers

    def is_windowed_layer(self, index: int) -> bool:
        """Whether attention layer ``index`` attends within ``sliding_window`` tokens only:
        all but every N-th with ``global_attention_every`` N (Gemma 3's 5 local : 1 global),
        else every other from the first with ``alternate`` (Gemma 2), else all."""
        if self.sliding_window is None:
            return False
        every = self.global_attention_every
        if every is None and self.sliding_window_layers == "alternate":
            every = 2
        return every is None or (index + 1) % every != 0

    def attention_geometry(self, index: int | None = None) -> tuple[int, int]:
        """(KV heads, head width) of layer ``index``'s attention: a global layer's own when
        the model gives them (Gemma 4 ``global_head_dim``, ``num_global_key_value_heads``),
        else the model's; None: the model's."""
        if index is None or self.sliding_window is None or self.is_windowed_layer(index):
            return self.kv_heads, self.head_dim
        return self.global_kv_heads or self.kv_heads, self.global_head_dim or self.head_dim

    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts."""
        if self.moe is None:
            return 0
        return layer_counts(self)[0]

    @property
    def dense_layers(self) -> int:
        """Layers without a mixture of experts (a dense FFN, or none in a Mamba/RWKV block)."""
        return self.layers - self.moe_layers

    @property
    def attention_layers(self) -> int:
        """Layers with attention (all of a transformer's; a hybrid's few; none of Mamba's)."""
        if self.recurrent is None:
            return self.layers
        return layer_counts(self)[1]

    @property
    def recurrent_layers(self) -> int:
        """Layers with a recurrent (state-space) mixer instead of attention."""
        return 0 if self.recurrent is None else layer_counts(self)[2]

    @property
    def windowed_attention_layers(self) -> int:
        """Attention layers that attend within ``sliding_window`` tokens only.

        ``global_attention_every`` N: all but every N-th (Gemma 3's 5 local : 1 global);
        else ``alternate``: every other layer from the first (Gemma 2); else all.
        """
        return 0 if self.sliding_window is None else layer_counts(self)[3]

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

    @kept()  # by the frozen shapes: an estimate asks for the same matrices several times
    def layer_matrices(
        self, moe_layer: bool = False, index: int | None = None
    ) -> tuple[LayerMatrix, ...]:
        """Every weight matrix of one layer (an MoE layer when ``moe_layer``): the one list
        from which parameter counts (:func:`count_parameters`), LoRA adapters, FLOPs per
        token, the training state and the step time's GEMM shapes derive. Without
        ``index``: an attention layer of the model's usual shape; with it, layer ``index``
        as it is (its mixer: attention, recurrent or none; its FFN or none; a global or
        KV-sharing layer's own shapes; ``moe_layer`` then follows the layer).

        Attention (Vaswani et al. 2017; GQA, Ainslie et al. 2023): q h→a·d (2·a·d with an
        output gate), k and v h→kv·d (none on a KV-sharing layer; no v on a global layer
        whose values are its keys), o a·d→h. MLA (DeepSeek-V2, arXiv:2405.04434, section
        2.1; names and tensor-parallel classes from deepseek-ai/DeepSeek-V3
        ``inference/model.py``): wq_a h→r_q (replicated ``Linear``) and wq_b
        r_q→a·(d_nope + d_rope) (``ColumnParallelLinear``), or wq h→a·(d_nope + d_rope)
        without r_q; wkv_a h→(r_kv + d_rope) (replicated), wkv_b r_kv→a·(d_nope + d_v)
        (column-parallel); wo a·d_v→h (row-parallel). As LoRA targets the query matrices
        are q, wkv_a is k and wkv_b is v. Recurrent mixers: :meth:`recurrent_matrices`.
        FFN (Shazeer 2020): gate and up h→f (gated units only), down f→h; an MoE layer has
        E routed and S shared experts of f_expert and a router h→E. Per-layer inputs
        (Gemma 4): a gate h→p and a projection p→h in every layer."""
        if index is not None:
            moe_layer = self.is_moe_layer(index)
        mats: list[LayerMatrix] = []
        if index is None or self.is_attention_layer(index):
            mats += self.attention_matrices(index)
        elif self.is_recurrent_layer(index):
            mats += self.recurrent_matrices()
        if index is None or self.has_ffn(index):
            mats += self.ffn_matrices(moe_layer, index)
        p = self.per_layer_input_size
        if p:
            h = self.hidden_size
            mats.append(LayerMatrix("ple_gate", "", h, p, 1, "none", False, "ple_gate"))
            mats.append(LayerMatrix("ple_proj", "", p, h, 1, "none", False, "ple_proj"))
        return tuple(mats)

    def attention_matrices(self, index: int | None = None) -> tuple[LayerMatrix, ...]:
        """The attention matrices of layer ``index`` (None: the usual layer); see
        :meth:`layer_matrices`."""
        return attention_matrices_of_form(self, *self.attention_form(index))

    def attention_form(self, index: int | None = None) -> tuple[int, int, bool, bool]:
        """(KV heads, head width, has keys, has values) of layer ``index``'s attention: all
        that its matrices take from the layer (:func:`.layer_matrices.
        attention_matrices_of_form`; None: the usual layer)."""
        kv_heads, d = self.attention_geometry(index)
        keys = index is None or not self.shares_kv(index)
        keys_only = (
            index is not None
            and self.global_values_are_keys
            and self.sliding_window is not None
            and not self.is_windowed_layer(index)
        )
        return kv_heads, d, keys, keys and not keys_only

    def recurrent_matrices(self) -> tuple[LayerMatrix, ...]:
        """The weight matrices of one recurrent mixer (none without one).

        Names and shapes from transformers 5.24.0: Mamba (``modeling_mamba.py``
        ``MambaMixer``): in_proj h→2·d, x_proj d→(dt_rank + 2·N), dt_proj dt_rank→d,
        out_proj d→h. Mamba-2 (``modeling_mamba2.py`` ``Mamba2Mixer``, Nemotron-H's
        ``NemotronHMamba2Mixer``): in_proj h→(d + (d + 2·G·N) + H) (z, x·B·C, dt), out_proj
        d→h. Gated DeltaNet (``modeling_qwen3_5.py`` ``Qwen3_5GatedDeltaNet``; Yang et al.
        2024, arXiv:2412.06464): in_proj_qkv h→(2·G·N + d) (G key heads of N, d = H value
        heads of P), in_proj_z h→d, in_proj_b and in_proj_a h→H, out_proj d→h. RWKV-4
        (``modeling_rwkv.py``): key, value, receptance h→d and output d→h; the channel
        mix's key h→f, value f→h, receptance h→h. Tensor parallelism splits d
        (column-parallel in, row-parallel out); the small dt/B/C maps are replicated."""
        r = self.recurrent
        if r is None:
            return ()
        h, d, n = self.hidden_size, r.inner_size, r.state_size

        def mat(name: str, d_in: int, d_out: int, split: TensorSplit) -> LayerMatrix:
            return LayerMatrix(name, "", d_in, d_out, 1, split, False, name)

        if r.kind == "rwkv":
            f = r.ffn_size
            return (
                *(mat(k, h, d, "columns") for k in ("key", "value", "receptance")),
                mat("output", d, h, "rows"),
                mat("ffn_key", h, f, "columns"),
                mat("ffn_value", f, h, "rows"),
                mat("ffn_receptance", h, h, "none"),
            )
        if r.kind == "mamba":
            rank = r.time_step_rank
            return (
                mat("in_proj", h, 2 * d, "columns"),
                mat("x_proj", d, rank + 2 * n, "rows"),
                mat("dt_proj", rank, d, "columns"),
                mat("out_proj", d, h, "rows"),
            )
        conv_dim = d + 2 * r.groups * n
        if r.kind == "mamba2":
            return (
                mat("in_proj", h, d + conv_dim + r.heads, "columns"),
                mat("out_proj", d, h, "rows"),
            )
        return (
            mat("in_proj_qkv", h, conv_dim, "columns"),
            mat("in_proj_z", h, d, "columns"),
            mat("in_proj_b", h, r.heads, "columns"),
            mat("in_proj_a", h, r.heads, "columns"),
            mat("out_proj", d, h, "rows"),
        )

    def ffn_size_of(self, index: int | None) -> int:
        """The dense FFN width of layer ``index`` (a KV-sharing layer's may be wider)."""
        wide = index is not None and self.kv_shared_layers and self.shares_kv(index)
        return self.ffn_size * (self.kv_shared_ffn_multiplier if wide else 1)

    def ffn_matrices(self, moe_layer: bool, index: int | None = None) -> tuple[LayerMatrix, ...]:
        """The FFN matrices of an MoE or a dense layer (``index``: that layer's width)."""
        if moe_layer and self.moe is not None:
            moe = self.moe
            h = self.hidden_size
            mats = list(self.mlp_matrices(moe.expert_ffn_size, moe.num_experts, routed=True))
            if moe.num_shared_experts:
                mats += self.mlp_matrices(moe.expert_ffn_size, moe.num_shared_experts)
            mats.append(LayerMatrix("router", "", h, moe.num_experts, 1, "none", False, ""))
            return tuple(mats)
        return self.mlp_matrices(self.ffn_size_of(index))

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
    per_layer_inputs: int = Field(
        default=0,
        description="Gemma 4's per-layer inputs: the per-layer embedding table, its projection "
        "h → L·p and norm, and each layer's gate h → p and projection p → h",
    )
    per_layer_table: int = Field(
        default=0, description="of which the per-layer embedding table (a lookup, like V·h)"
    )
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

    @model_serializer(mode="wrap")
    def _without_absent_parts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The per-layer-input counts are written only for a model that has them, so every
        other model's breakdown keeps its published keys."""
        data: dict[str, Any] = handler(self)
        if not self.per_layer_inputs:
            data.pop("per_layer_inputs", None)
            data.pop("per_layer_table", None)
        return data

    @property
    def non_embedding(self) -> int:
        """Total without embedding, position and (untied) head tables (Kaplan et al. 2020's N)."""
        return self.total - self.embedding - self.positions - self.head - self.per_layer_table


def norm_params(arch: Architecture, width: int | None = None) -> int:
    """One norm over ``width`` channels (default h): 2·width for LayerNorm (weight and
    bias), width for RMSNorm or a bias-free LayerNorm, 0 for a parameter-free one."""
    n = arch.hidden_size if width is None else width
    return {"layernorm": 2 * n, "nonparametric": 0}.get(arch.norm, n)


def _norm_params(arch: Architecture) -> int:
    return norm_params(arch)


def attention_params_per_layer(arch: Architecture, index: int | None = None) -> int:
    """Parameters of one layer's attention block (``index``: that layer's own shapes).

    Standard / GQA / MQA (Vaswani et al. 2017; Ainslie et al. 2023): the matrices of
    :meth:`.Architecture.attention_matrices` (W_q h×(a·d) or h×(2·a·d) with an output gate,
    W_k and W_v h×(kv·d) unless the layer shares another's, W_o (a·d)×h), plus biases per
    ``attention_bias`` on those matrices' outputs, plus the query/key norms (``qk_norm``:
    d each for per-head norms, none for the keys of a KV-sharing layer; a·d + kv·d over
    all heads, each doubled for a LayerNorm with bias) and gpt-oss's sinks (a per layer;
    Hugging Face ``modeling_gpt_oss.py``, ``GptOssAttention.sinks``). Gemma 4's value norm
    has no scale (``Gemma4RMSNorm(with_scale=False)``): no parameters.
    MLA (DeepSeek-V2 section 2.1, layer names from DeepSeek-V3 ``inference/model.py``):
    wq_a h×r_q, q_norm r_q, wq_b r_q×a·(d_nope+d_rope) (or wq h×a·(d_nope+d_rope) without
    r_q), wkv_a h×(r_kv+d_rope), kv_norm r_kv, wkv_b r_kv×a·(d_nope+d_v), wo a·d_v×h.
    """
    return _attention_params(arch, *arch.attention_form(index))


@kept()
def _attention_params(arch: Architecture, kv_heads: int, d: int, keys: bool, values: bool) -> int:
    """:func:`attention_params_per_layer` of a layer of this form (:meth:`Architecture.
    attention_form`), once per form."""
    mats = attention_matrices_of_form(arch, kv_heads, d, keys, values)
    weights = sum(m.elements for m in mats)
    if arch.mla is not None:  # q_norm (r_q) and kv_norm (r_kv), RMSNorm weights
        return weights + (arch.mla.q_lora_rank or 0) + arch.mla.kv_lora_rank
    bias = 0
    if arch.attention_bias in ("qkv", "all"):
        bias += sum(m.d_out for m in mats if m.name in ("q", "k", "v"))
    if arch.attention_bias == "all":
        bias += arch.hidden_size
    has_keys = any(m.name == "k" for m in mats)
    qk_norm = 0
    if arch.qk_norm == "head":
        qk_norm = norm_params(arch, d) * (2 if has_keys else 1)
    elif arch.qk_norm == "full":
        qk_norm = norm_params(arch, arch.heads * d) + norm_params(arch, kv_heads * d)
    sinks = arch.heads if arch.attention_sinks else 0
    return weights + bias + qk_norm + sinks


def recurrent_params_per_layer(arch: Architecture) -> int:
    """Parameters of one layer's recurrent mixer (0 without one): its matrices
    (:meth:`.Architecture.recurrent_matrices`) and its vectors.

    Layer names and shapes from Hugging Face transformers 5.24.0 ``modeling_mamba.py``
    (``MambaMixer``: conv d·k (+d bias), dt_proj's bias d, A d·N, D d), ``modeling_mamba2.py``
    (``Mamba2Mixer``: conv (d + 2·G·N)·k (+ bias), dt_bias, A_log and D of H each, the
    gated RMSNorm d), ``modeling_jamba.py`` (``JambaMambaMixer``: adds dt/B/C RMSNorms),
    ``modeling_rwkv.py`` (``RwkvSelfAttention``: time_decay and time_first d, three mixes h;
    ``RwkvFeedForward``: two mixes h) and ``modeling_qwen3_5.py`` (``Qwen3_5GatedDeltaNet``:
    conv (2·G·N + d)·k, no bias, dt_bias and A_log of H, a gated RMSNorm of one head's
    width P shared by all heads, no D); see :class:`RecurrentConfig`.
    """
    r = arch.recurrent
    if r is None:
        return 0
    h, d, n, k = arch.hidden_size, r.inner_size, r.state_size, r.conv_kernel
    weights = sum(m.elements for m in arch.recurrent_matrices())
    if r.kind == "rwkv":
        return weights + 2 * d + 3 * h + 2 * h
    bias = r.proj_bias
    if r.kind == "mamba":
        rank = r.time_step_rank
        vectors = d * k + (d if r.conv_bias else 0) + d + d * n + d
        biases = (2 * d + h) if bias else 0
        return weights + vectors + biases + (rank + 2 * n if r.inner_norms else 0)
    conv_dim = d + 2 * r.groups * n
    conv = conv_dim * k + (conv_dim if r.conv_bias else 0)
    if r.kind == "gated_deltanet":
        return weights + conv + 2 * r.heads + r.head_dim
    projection = d + conv_dim + r.heads
    biases = (projection + h) if bias else 0
    return weights + conv + 3 * r.heads + d + biases  # dt_bias, A_log, D; gated norm d


def _moe_layer_params(arch: Architecture) -> tuple[int, int, int, int]:
    """(routed experts, routed active, shared experts, router) of one MoE layer."""
    moe = arch.moe
    if moe is None:
        return 0, 0, 0, 0
    one_expert = mlp_params(arch, moe.expert_ffn_size)
    router = arch.hidden_size * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
    if moe.shared_expert_gate and moe.num_shared_experts:
        router += arch.hidden_size
    if moe.router_scales:
        router += arch.hidden_size + moe.num_experts
    return (
        moe.num_experts * one_expert,
        moe.experts_per_token * one_expert,
        moe.num_shared_experts * one_expert,
        router,
    )


def _layer_mixer(arch: Architecture, index: int) -> tuple[int, int]:
    """(attention, recurrent) parameters of layer ``index``'s mixer (a Nemotron-H MLP layer
    has neither)."""
    return _mixer_params(arch, *_mixer_form(arch, index))


def _mixer_form(arch: Architecture, index: int) -> tuple[bool, bool, tuple[int, int, bool, bool]]:
    """All that :func:`_mixer_params` takes from layer ``index``."""
    return (
        arch.is_attention_layer(index),
        arch.is_recurrent_layer(index),
        arch.attention_form(index),
    )


def _mixer_params(
    arch: Architecture, attention: bool, recurrent: bool, form: tuple[int, int, bool, bool]
) -> tuple[int, int]:
    """:func:`_layer_mixer` of a layer of this form."""
    if attention:
        return _attention_params(arch, *form), 0
    if recurrent:
        return 0, recurrent_params_per_layer(arch)
    return 0, 0


def per_layer_input_params(arch: Architecture) -> tuple[int, int]:
    """(outside the layers, in each layer) parameters of Gemma 4's per-layer inputs
    (transformers 5.24.0 ``modeling_gemma4.py``): ``embed_tokens_per_layer``
    V_p × L·p, ``per_layer_model_projection`` h → L·p and ``per_layer_projection_norm``
    (p) outside; ``per_layer_input_gate`` h → p and ``per_layer_projection`` p → h in each
    layer (its ``post_per_layer_input_norm`` is one of ``norms_per_layer``)."""
    p = arch.per_layer_input_size
    if not p:
        return 0, 0
    lp = arch.layers * p
    outside = arch.per_layer_input_vocab * lp + arch.hidden_size * lp + norm_params(arch, p)
    return outside, 2 * arch.hidden_size * p


def layer_params(arch: Architecture, index: int) -> int:
    """All parameters of layer ``index``: its mixer (attention, recurrent or none), its FFN
    (dense, MoE with router and shared experts, or none), its per-layer-input gate and
    projection (Gemma 4) and its ``norms_per_layer`` norms."""
    attention, recurrent = _layer_mixer(arch, index)
    if arch.is_moe_layer(index):
        experts, _, shared, router = _moe_layer_params(arch)
        ffn = experts + shared + router
    elif arch.has_ffn(index):
        ffn = mlp_params(arch, arch.ffn_size_of(index))
    else:
        ffn = 0
    ple = per_layer_input_params(arch)[1]
    return attention + recurrent + ffn + ple + arch.norms_per_layer * norm_params(arch)


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

    Per layer (each layer as it is: :func:`layer_params`): attention
    (:func:`attention_params_per_layer`), a recurrent mixer (:func:`recurrent_params_per_layer`)
    or none, FFN (:func:`mlp_params`, or for MoE layers routed
    experts + shared experts + router h·E [+E bias], or none in a Mamba/RWKV block) and
    ``norms_per_layer`` norms. Outside the layers: token embedding V·h, learned positions
    (max_context + position_offset)·h, optional embedding norm, final norm, and an untied
    output head V·h (+V with ``head_bias``), Gemma 4's per-layer inputs
    (:func:`per_layer_input_params`). This is the standard accounting of e.g.
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
    attention = recurrent = mlp = 0
    mixers: dict[tuple[bool, bool, tuple[int, int, bool, bool]], tuple[int, int]] = {}
    ffns: dict[int, int] = {}  # layers of one form count alike: each form priced once
    if not layers_differ(arch):  # every layer alike: L × the first, dense FFNs × one FFN
        attention, recurrent = (arch.layers * x for x in _layer_mixer(arch, 0))
        mlp = (arch.layers - arch.moe_layers) * mlp_params(arch, arch.ffn_size_of(0))
    else:  # each layer as it is
        for i in range(arch.layers):
            form = _mixer_form(arch, i)
            if form not in mixers:
                mixers[form] = _mixer_params(arch, *form)
            layer_attention, layer_recurrent = mixers[form]
            attention += layer_attention
            recurrent += layer_recurrent
            if arch.has_ffn(i) and not arch.is_moe_layer(i):
                width = arch.ffn_size_of(i)
                if width not in ffns:
                    ffns[width] = mlp_params(arch, width)
                mlp += ffns[width]
    ple_outside, ple_layer = per_layer_input_params(arch)
    per_layer_inputs = ple_outside + arch.layers * ple_layer
    table = arch.per_layer_input_vocab * arch.layers * arch.per_layer_input_size
    moe_layers = arch.moe_layers
    one_experts, one_active, one_shared, one_router = _moe_layer_params(arch)
    experts = moe_layers * one_experts
    routed_active = moe_layers * one_active
    shared = moe_layers * one_shared
    router = moe_layers * one_router
    total = embedding + positions + attention + recurrent + mlp + experts + shared + router + norms
    total += head + per_layer_inputs
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
        per_layer_inputs=per_layer_inputs,
        per_layer_table=table,
        norms=norms,
        head=head,
        total=total,
        active=active,
        # a tied head multiplies by the embedding table, so only an untied table is lookup-only
        active_compute=active - positions - table - (0 if arch.tied_embeddings else embedding),
        routed_experts_active=routed_active,
    )
