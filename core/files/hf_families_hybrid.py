"""The hybrid and per-layer-input families of :mod:`.hf_import`: Qwen3.5 (dense and MoE)
and Qwen3-Next with Gated DeltaNet linear-attention layers, Nemotron-H's pattern of
Mamba-2, attention and MLP layers, and Gemma 4's per-layer inputs, shared KV layers and
wider global heads. Field names and defaults: transformers 5.24.0 ``configuration_*.py``;
shapes: its ``modeling_*.py``.
"""

from __future__ import annotations

from llm_planner.core.files.hf_config import Fields, _Config
from llm_planner.core.files.hf_families import _gemma, _qwen3, _window_every

_NEMOTRON_H_LETTERS = {
    "mamba": "M",
    "linear_attention": "M",
    "attention": "*",
    "full_attention": "*",
    "mlp": "-",
    "moe": "E",
}
"""``layers_block_type`` / ``layer_types`` names → ``hybrid_override_pattern`` letters
(``NemotronHConfig._pattern_to_list`` and its legacy names)."""


def _with_defaults(c: _Config, defaults: dict[str, int]) -> _Config:
    """``c`` with a configuration class's defaults under the fields it leaves out (a
    multimodal config's text_config relies on them)."""
    data = {**defaults, **{k: v for k, v in c.data.items() if v is not None}}
    return _Config(data, c.label, c.model_type)


def _linear_attention_period(c: _Config, layers: int, default: int) -> int:
    """Qwen3.5 / Qwen3-Next: every ``full_attention_interval``-th layer is full attention,
    the others Gated DeltaNet (``layer_types`` when written, which must follow that
    period to be representable)."""
    every = c.int_("full_attention_interval", default=default)
    types = c.data.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise c.error(f"field 'layer_types' must list {layers} layer types")
        full = [i for i, t in enumerate(types) if t == "full_attention"]
        if not full or set(types) - {"full_attention", "linear_attention"}:
            raise c.error("field 'layer_types' must hold full_attention and linear_attention")
        every = full[0] + 1
        if full != list(range(every - 1, layers, every)):
            raise c.error("field 'layer_types' is not every-N-th-layer full; not representable")
    return every


def _gated_deltanet(c: _Config, layers: int, default_every: int) -> dict[str, object]:
    """The Gated DeltaNet mixer (``Qwen3_5GatedDeltaNet``, ``Qwen3NextGatedDeltaNet``):
    ``linear_num_value_heads`` H of ``linear_value_head_dim`` P (d = H·P), in the
    recurrent config's Mamba-2 terms ``linear_num_key_heads`` groups G of
    ``linear_key_head_dim`` N; conv of ``linear_conv_kernel_dim`` without bias; every
    layer also has the model's FFN."""
    every = _linear_attention_period(c, layers, default_every)
    value_heads = c.int_("linear_num_value_heads", default=32)
    return {
        "kind": "gated_deltanet",
        "inner_size": value_heads * c.int_("linear_value_head_dim", default=128),
        "heads": value_heads,
        "groups": c.int_("linear_num_key_heads", default=16),
        "state_size": c.int_("linear_key_head_dim", default=128),
        "conv_kernel": c.int_("linear_conv_kernel_dim", default=4),
        "conv_bias": False,
        "attention_period": every,
        "attention_offset": every - 1,
        "has_ffn": True,
    }


def _qwen3_5_text(c: _Config) -> Fields:
    """Qwen3_5TextConfig: Qwen3 attention (per-head q/k RMSNorms, ``head_dim`` 256) whose
    q_proj also emits the output gate (``Qwen3_5Attention``: a·d·2 outputs), on every
    ``full_attention_interval``-th layer (4); Gated DeltaNet on the others; a SwiGLU MLP
    in every layer; untied. The multi-token-prediction layers (``mtp_num_hidden_layers``)
    are not built by transformers' causal LM and are not counted."""
    c = _with_defaults(
        c,
        {
            "vocab_size": 248320,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 32,
            "num_attention_heads": 16,
            "num_key_value_heads": 4,
        },
    )
    fields = _qwen3(c)
    fields["head_dim"] = c.int_("head_dim", default=256)
    fields["attention_output_gate"] = True
    fields["recurrent"] = _gated_deltanet(c, fields["layers"], 4)
    return fields


def _qwen3_5_moe_text(c: _Config) -> Fields:
    """Qwen3_5MoeTextConfig: Qwen3.5's layers with every FFN a mixture of ``num_experts``
    (256) SwiGLU experts of ``moe_intermediate_size`` (512), top ``num_experts_per_tok``
    (8), a router without bias, and one shared expert of
    ``shared_expert_intermediate_size`` behind a sigmoid gate h → 1."""
    c = _with_defaults(
        c,
        {
            "vocab_size": 248320,
            "hidden_size": 2048,
            "num_hidden_layers": 40,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "intermediate_size": 512,  # unused: every layer is MoE
        },
    )
    fields = _qwen3_5_text(c)
    fields["moe"] = _shared_gate_moe(c, 256, 8, 512)
    return fields


def _shared_gate_moe(c: _Config, experts: int, top_k: int, expert_size: int) -> dict[str, object]:
    """Qwen-style MoE: routed experts plus a shared expert (a multiple of the expert size)
    behind a sigmoid gate."""
    expert = c.int_("moe_intermediate_size", default=expert_size)
    shared = c.int_("shared_expert_intermediate_size", default=expert, minimum=0)
    if shared % expert:
        raise c.error(
            f"shared_expert_intermediate_size ({shared}) is not a multiple of "
            f"moe_intermediate_size ({expert}); not representable"
        )
    return {
        "num_experts": c.int_("num_experts", default=experts),
        "experts_per_token": c.int_("num_experts_per_tok", default=top_k),
        "expert_ffn_size": expert,
        "num_shared_experts": shared // expert,
        "shared_expert_gate": shared > 0,
    }


def _qwen3_next(c: _Config) -> Fields:
    """Qwen3NextConfig: Qwen3.5-MoE's layers (fused in_proj_qkvz and in_proj_ba hold the
    same parameters as Qwen3.5's four projections) with MoE on every
    ``decoder_sparse_step``-th layer after ``mlp_only_layers`` (none by default)."""
    c = _with_defaults(
        c,
        {
            "vocab_size": 151936,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "num_hidden_layers": 48,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
        },
    )
    fields = _qwen3(c)
    fields["head_dim"] = c.int_("head_dim", default=256)
    fields["attention_output_gate"] = True
    fields["recurrent"] = _gated_deltanet(c, fields["layers"], 4)
    moe = _shared_gate_moe(c, 512, 10, 512)
    dense = c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or dense != list(range(len(dense))):
        raise c.error("field 'mlp_only_layers' must list leading layers 0..k-1 to be representable")
    step = c.int_("decoder_sparse_step", default=1)
    moe.update(first_dense_layers=len(dense), layer_period=step, layer_offset=step - 1)
    fields["moe"] = moe
    return fields


def _nemotron_h_pattern(c: _Config) -> str:
    """Nemotron-H's per-layer kinds: ``hybrid_override_pattern`` (M, *, -, E), or the
    names of ``layers_block_type`` / ``layer_types``."""
    pattern = c.data.get("hybrid_override_pattern")
    if pattern is None:
        names = c.data.get("layers_block_type", c.data.get("layer_types"))
        if not isinstance(names, list) or not all(n in _NEMOTRON_H_LETTERS for n in names):
            raise c.error("needs 'hybrid_override_pattern' or 'layers_block_type'")
        pattern = "".join(_NEMOTRON_H_LETTERS[n] for n in names)
    if not isinstance(pattern, str) or not pattern or set(pattern) - set("M*-E"):
        raise c.error("field 'hybrid_override_pattern' must be letters M, *, - and E")
    return pattern


def _nemotron_h(c: _Config) -> Fields:
    """NemotronHConfig: one block per letter of ``hybrid_override_pattern`` (the layer count
    is its length), each one RMSNorm and one of: a Mamba-2 mixer (``mamba_num_heads`` H of
    ``mamba_head_dim`` P, ``n_groups`` G, ``ssm_state_size`` N, conv with bias per
    ``use_conv_bias``, projections with bias per ``use_bias``), attention without bias or
    positions, a squared-ReLU MLP of ``intermediate_size`` (up, down; ``mlp_bias``), or an
    MoE of ``n_routed_experts`` non-gated experts of ``moe_intermediate_size``, top
    ``num_experts_per_tok``, a shared MLP of ``moe_shared_expert_intermediate_size`` and a
    router whose score-correction bias is stored (a buffer in transformers, as
    DeepSeek-V3's). Untied by default."""
    pattern = _nemotron_h_pattern(c)
    hidden = c.int_("hidden_size", default=4096)
    heads = c.int_("num_attention_heads", default=32)
    mamba_heads = c.int_("mamba_num_heads", default=128)
    fields: Fields = {
        "layers": len(pattern),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.int_("num_key_value_heads", default=8),
        "head_dim": c.int_("head_dim", "attention_head_dim", default=128),
        "ffn_size": c.int_("intermediate_size", default=21504),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size", default=131072),
        "max_context": c.int_("max_position_embeddings", default=4096),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "none",
        "norm": "rmsnorm",
        "norms_per_layer": 1,
        "mlp_bias": c.bool_("mlp_bias", default=False),
        "recurrent": {
            "kind": "mamba2",
            "inner_size": mamba_heads * c.int_("mamba_head_dim", default=64),
            "heads": mamba_heads,
            "groups": c.int_("n_groups", "mamba_n_groups", default=8),
            "state_size": c.int_("ssm_state_size", default=128),
            "conv_kernel": c.int_("conv_kernel", "mamba_d_conv", default=4),
            "conv_bias": c.bool_("use_conv_bias", "mamba_conv_bias", default=True),
            "proj_bias": c.bool_("use_bias", default=False),
            "layer_pattern": pattern,
        },
    }
    if "E" in pattern:
        if c.data.get("moe_latent_size") is not None:
            raise c.error("field 'moe_latent_size': latent MoE projections are not representable")
        expert = c.int_("moe_intermediate_size", default=7688)
        shared = c.int_("moe_shared_expert_intermediate_size", default=7688)
        if shared % expert:
            raise c.error(
                f"moe_shared_expert_intermediate_size ({shared}) is not a multiple of "
                f"moe_intermediate_size ({expert}); not representable"
            )
        fields["moe"] = {
            "num_experts": c.int_("n_routed_experts", default=8),
            "experts_per_token": c.int_("num_experts_per_tok", default=2),
            "expert_ffn_size": expert,
            "num_shared_experts": shared // expert,
            "router_bias": True,
        }
    return fields


def _gemma4_text(c: _Config) -> Fields:
    """Gemma4TextConfig: Gemma 3's layers (four norms, per-head q/k RMSNorms, GeGLU, a
    ``sliding_window`` of 512 on all but the ``full_attention`` layers of ``layer_types``)
    with global layers of ``global_head_dim`` (512), and with ``attention_k_eq_v`` no v
    projection there and ``num_global_key_value_heads`` KV heads; the last
    ``num_kv_shared_layers`` reuse earlier keys and values (no k/v projections or k norm)
    and, with ``use_double_wide_mlp``, have a twice-as-wide MLP; per-layer input
    embeddings of ``hidden_size_per_layer_input`` (256; null: none) over
    ``vocab_size_per_layer_input`` rows, with a gate, a projection and one more norm in
    each layer. Tied. With ``enable_moe_block`` every layer adds ``num_experts`` GeGLU
    experts of ``moe_intermediate_size`` (top ``top_k_experts``) beside its MLP, which
    runs for every token as a shared expert does (counted as intermediate_size ÷
    moe_intermediate_size shared experts, refused when that does not divide), a router
    h → E with a per-channel and a per-expert scale, and three more norms."""
    per_layer_raw = c.data.get("hidden_size_per_layer_input", 256)
    c = _with_defaults(
        c,
        {
            "vocab_size": 262144,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 30,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
        },
    )
    fields = _gemma(c)
    layers = fields["layers"]
    per_layer = 0
    if per_layer_raw is not None:
        per_layer = c.int_("hidden_size_per_layer_input", default=256, minimum=0)
    k_eq_v = c.bool_("attention_k_eq_v", default=False)
    moe = c.bool_("enable_moe_block", default=False)
    double_wide = c.bool_("use_double_wide_mlp", default=False)
    fields.update(
        norms_per_layer=4 + (1 if per_layer else 0) + (3 if moe else 0),
        qk_norm="head",
        max_context=c.int_("max_position_embeddings", default=131072),
        sliding_window=c.int_("sliding_window", default=512),
        global_attention_every=_window_every(c, layers, 6),
        global_head_dim=c.int_("global_head_dim", default=512),
        global_values_are_keys=k_eq_v,
        kv_shared_layers=c.int_("num_kv_shared_layers", default=0, minimum=0),
        kv_shared_ffn_multiplier=2 if double_wide else 1,
        per_layer_input_size=per_layer,
        per_layer_input_vocab=c.int_("vocab_size_per_layer_input", default=262144)
        if per_layer
        else 0,
    )
    if k_eq_v:
        fields["global_kv_heads"] = c.opt_int("num_global_key_value_heads")
    if moe:
        expert = c.int_("moe_intermediate_size")
        dense = fields["ffn_size"]
        if dense % expert or (double_wide and fields["kv_shared_layers"]):
            raise c.error(
                f"enable_moe_block: the MLP beside the experts (intermediate_size {dense}, "
                f"double-wide {double_wide}) is not a whole number of experts of "
                f"moe_intermediate_size {expert}; not representable"
            )
        fields["moe"] = {
            "num_experts": c.int_("num_experts"),
            "experts_per_token": c.int_("top_k_experts"),
            "expert_ffn_size": expert,
            "num_shared_experts": dense // expert,
            "router_scales": True,
        }
    return fields
