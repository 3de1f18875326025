"""The transformer decoder families of :mod:`.hf_import`: one mapper per ``model_type``
from a config's fields (with transformers' ``configuration_*.py`` defaults) onto
:class:`Architecture`'s keyword arguments. The recurrent and hybrid families, the table of
mappers and the generic reader are in :mod:`.hf_model_types`.
"""

from __future__ import annotations

from llm_planner.core.files.hf_config import (
    Fields,
    _Config,
)


def _llama_like(c: _Config, max_context: int, tied: bool) -> Fields:
    """Fields shared by the Llama family (LlamaConfig and its descendants)."""
    layers = c.int_("num_hidden_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.int_("num_key_value_heads", default=heads),
        "head_dim": c.head_dim(hidden, heads),
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=max_context),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=tied),
        "positions": "rotary",
        "norm": "rmsnorm",
    }


def _llama(c: _Config) -> Fields:
    """LlamaConfig: attention_bias puts a bias on q, k, v and o; mlp_bias on all three MLP maps."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["mlp_bias"] = c.bool_("mlp_bias", default=False)
    return fields


def _mistral(c: _Config) -> Fields:
    """MistralConfig: Llama without biases, with an optional sliding window (4096 in v0.1)."""
    fields = _llama_like(c, max_context=4096 * 32, tied=False)
    fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _mixtral(c: _Config) -> Fields:
    """MixtralConfig: every layer's FFN is ``num_local_experts`` SwiGLU experts of
    ``intermediate_size``, top ``num_experts_per_tok``; the router has no bias."""
    fields = _mistral(c)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=8),
        "experts_per_token": c.int_("num_experts_per_tok", default=2),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _qwen2(c: _Config) -> Fields:
    """Qwen2Config: q, k and v projections carry a bias (o does not); the window is only used
    when ``use_sliding_window`` is true."""
    fields = _llama_like(c, max_context=32768, tied=False)
    fields["attention_bias"] = "qkv" if c.bool_("attention_bias", default=True) else "none"
    if c.bool_("use_sliding_window", default=False):
        fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _qwen2_moe(c: _Config) -> Fields:
    """Qwen2MoeConfig: routed experts of ``moe_intermediate_size`` plus one shared expert of
    ``shared_expert_intermediate_size`` (expressed as that many routed-size experts) behind
    a 1×h sigmoid gate; MoE on every ``decoder_sparse_step``-th layer."""
    fields = _qwen2(c)
    expert = c.int_("moe_intermediate_size")
    shared = c.opt_int("shared_expert_intermediate_size", minimum=0) or 0
    if shared % expert:
        raise c.error(
            f"shared_expert_intermediate_size ({shared}) is not a multiple of "
            f"moe_intermediate_size ({expert}); not representable"
        )
    fields["moe"] = {
        "num_experts": c.int_("num_experts"),
        "experts_per_token": c.int_("num_experts_per_tok"),
        "expert_ffn_size": expert,
        "num_shared_experts": shared // expert,
        "shared_expert_gate": shared > 0,
        **_sparse_layers(c, "decoder_sparse_step"),
    }
    return fields


def _phi3(c: _Config) -> Fields:
    """Phi3Config: fused qkv_proj and gate_up_proj hold exactly the parameters of separate
    q/k/v and gate/up maps, so the Llama accounting applies; no biases."""
    fields = _llama_like(c, max_context=4096, tied=False)
    fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _gemma(c: _Config) -> Fields:
    """GemmaConfig: GeGLU MLP, head_dim 256 by default, tied embeddings."""
    fields = _llama_like(c, max_context=8192, tied=True)
    fields["head_dim"] = c.int_("head_dim", default=256)
    fields["ffn_kind"] = "geglu"
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    return fields


def _gemma2(c: _Config) -> Fields:
    """Gemma2Config: Gemma plus pre- and post-norms around attention and MLP (4 per layer) and
    a sliding window on alternate layers. ``query_pre_attn_scalar`` scales scores only."""
    fields = _gemma(c)
    fields["norms_per_layer"] = 4
    window = c.opt_int("sliding_window")
    if window is None and "sliding_window" not in c.data:
        window = 4096
    fields["sliding_window"] = window
    fields["sliding_window_layers"] = "alternate"
    return fields


def _gpt_neox(c: _Config) -> Fields:
    """GPTNeoXConfig: LayerNorm, biases everywhere (``attention_bias`` default true), rotary on
    ``rotary_pct`` of each head (no parameters), parallel residual by default, untied."""
    layers = c.int_("num_hidden_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": c.head_dim(hidden, heads),
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "layernorm",
        "attention_bias": "all" if c.bool_("attention_bias", default=True) else "none",
        "mlp_bias": True,
        "parallel_attention": c.bool_("use_parallel_residual", default=True),
    }


def _gpt2(c: _Config) -> Fields:
    """GPT2Config: learned positions (``n_positions``), LayerNorm, biases everywhere, MLP of
    ``n_inner`` (None: 4·n_embd), tied embeddings."""
    hidden = c.int_("n_embd", "hidden_size")
    heads = c.int_("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.error(f"n_embd ({hidden}) is not a multiple of n_head ({heads})")
    return {
        "layers": c.int_("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("n_inner", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("n_positions", "max_position_embeddings", default=1024),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=True),
        "positions": "learned",
        "norm": "layernorm",
        "attention_bias": "all",
        "mlp_bias": True,
    }


def _falcon(c: _Config) -> Fields:
    """FalconConfig (and the older RefinedWeb / RefinedWebModel configs).

    KV heads: ``num_kv_heads`` with ``new_decoder_architecture`` (or without ``multi_query``),
    else 1 (multi-query). Norms per layer: 2 when attention is not parallel or with the new
    architecture (``num_ln_in_parallel_attn`` 2: ln_attn and ln_mlp), else 1. FFN
    ``ffn_hidden_size`` (None: 4·h); ``bias`` on every linear map; ALiBi or rotary; tied.
    """
    hidden = c.int_("hidden_size", "n_embed")
    heads = c.int_("num_attention_heads", "n_head")
    new_arch = c.bool_("new_decoder_architecture", default=c.model_type == "RefinedWeb")
    multi_query = c.bool_("multi_query", default=True)
    kv_heads = c.int_("num_kv_heads", "n_head_kv", default=heads)
    if not (new_arch or not multi_query):
        kv_heads = 1
    parallel = c.bool_("parallel_attn", default=True)
    lns = c.opt_int("num_ln_in_parallel_attn")
    if lns is None and new_arch:
        lns = 2
    bias = c.bool_("bias", default=False)
    if hidden % heads:
        raise c.error(f"hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads})")
    return {
        "layers": c.int_("num_hidden_layers", "n_layer"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("ffn_hidden_size", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=True),
        "positions": "alibi" if c.bool_("alibi", default=False) else "rotary",
        "norm": "layernorm",
        "norms_per_layer": 2 if (not parallel or lns == 2) else 1,
        "attention_bias": "all" if bias else "none",
        "mlp_bias": bias,
        "parallel_attention": parallel,
    }


def _deepseek(c: _Config) -> Fields:
    """DeepseekV2Config / DeepseekV3Config: multi-head latent attention and DeepSeekMoE.

    MLA dims ``q_lora_rank`` (null: direct q projection, V2-Lite), ``kv_lora_rank``,
    ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``. Layers from
    ``first_k_dense_replace`` on are MoE: ``n_routed_experts`` of ``moe_intermediate_size``,
    top ``num_experts_per_tok``, plus ``n_shared_experts``. ``topk_method`` "noaux_tc" (V3's)
    adds the per-expert score-correction bias to the router. The multi-token-prediction
    module (``num_nextn_predict_layers``) is not part of the architecture counted here.
    """
    v3 = c.model_type == "deepseek_v3"
    layers = c.int_("num_hidden_layers")
    heads = c.int_("num_attention_heads")
    v_head_dim = c.int_("v_head_dim")
    fields: Fields = {
        "layers": layers,
        "hidden_size": c.int_("hidden_size"),
        "heads": heads,
        "kv_heads": c.int_("num_key_value_heads", default=heads),
        "head_dim": v_head_dim,
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=4096 if v3 else 2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "rmsnorm",
        "attention_bias": "all" if c.bool_("attention_bias", default=False) else "none",
        "mla": {
            "q_lora_rank": c.opt_int("q_lora_rank"),
            "kv_lora_rank": c.int_("kv_lora_rank"),
            "qk_nope_head_dim": c.int_("qk_nope_head_dim"),
            "qk_rope_head_dim": c.int_("qk_rope_head_dim", minimum=0),
            "v_head_dim": v_head_dim,
        },
    }
    routed = c.opt_int("n_routed_experts")
    if routed is not None:
        topk_method = c.str_("topk_method", default="noaux_tc" if v3 else "greedy")
        fields["moe"] = {
            "num_experts": routed,
            "experts_per_token": c.int_("num_experts_per_tok"),
            "expert_ffn_size": c.int_("moe_intermediate_size"),
            "num_shared_experts": c.opt_int("n_shared_experts", minimum=0) or 0,
            "first_dense_layers": c.opt_int("first_k_dense_replace", minimum=0) or 0,
            "layer_period": c.int_("moe_layer_freq", default=1),
            "router_bias": topk_method == "noaux_tc",
        }
    return fields


def _window_every(c: _Config, layers: int, default_every: int | None) -> int | None:
    """Every N-th layer global, from ``layer_types`` (transformers ≥ 4.53 writes the list)
    or ``sliding_window_pattern``; None: every layer uses the window. A list that is not
    periodic in that way is not representable and is refused."""
    types = c.data.get("layer_types")
    if types is None:
        return c.opt_int("sliding_window_pattern", "_sliding_window_pattern") or default_every
    if (
        not isinstance(types, list)
        or len(types) != layers
        or not all(t in ("sliding_attention", "full_attention", "chunked_attention") for t in types)
    ):
        raise c.error(f"field 'layer_types' must list {layers} attention types")
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    if not full:
        return None
    every = full[0] + 1
    if full != list(range(every - 1, layers, every)):
        raise c.error("field 'layer_types' is not every-N-th-layer global; not representable")
    return every


def _sparse_layers(c: _Config, step_name: str) -> dict[str, int]:
    """MoE placement for Qwen-MoE's ``decoder_sparse_step`` s (layer i is MoE when
    (i+1) % s = 0) after leading ``mlp_only_layers`` (which must be 0..k-1)."""
    step = c.int_(step_name, default=1)
    dense = c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or dense != list(range(len(dense))):
        raise c.error("field 'mlp_only_layers' must list leading layers 0..k-1 to be representable")
    return {"first_dense_layers": len(dense), "layer_period": step, "layer_offset": step - 1}


def _qwen3(c: _Config) -> Fields:
    """Qwen3Config: Llama with per-head RMSNorms on q and k (``q_norm``/``k_norm`` of
    head_dim), ``head_dim`` 128 by default, biases on q/k/v/o only with attention_bias."""
    fields = _llama_like(c, max_context=32768, tied=False)
    fields["head_dim"] = c.int_("head_dim", default=128)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["qk_norm"] = "head"
    if c.bool_("use_sliding_window", default=False):
        fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _qwen3_moe(c: _Config) -> Fields:
    """Qwen3MoeConfig: Qwen3 attention; MoE layers of ``num_experts`` experts of
    ``moe_intermediate_size``, top ``num_experts_per_tok``, no shared expert, router
    without bias; dense layers (``mlp_only_layers``, off the sparse step) of intermediate_size."""
    fields = _qwen3(c)
    fields["moe"] = {
        "num_experts": c.int_("num_experts", default=128),
        "experts_per_token": c.int_("num_experts_per_tok", default=8),
        "expert_ffn_size": c.int_("moe_intermediate_size", default=768),
        **_sparse_layers(c, "decoder_sparse_step"),
    }
    return fields


def _gemma3_text(c: _Config) -> Fields:
    """Gemma3TextConfig: Gemma 2's four norms per layer and GeGLU, per-head q/k RMSNorms,
    and a 1024-token window (default 4096) on all but every 6th layer
    (``sliding_window_pattern``, or ``layer_types``); tied embeddings."""
    defaults = {
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    }  # Gemma3TextConfig's, which a multimodal config's text_config relies on
    c = _Config(
        {**defaults, **{k: v for k, v in c.data.items() if v is not None}}, c.label, c.model_type
    )
    fields = _gemma(c)
    fields["norms_per_layer"] = 4
    fields["qk_norm"] = "head"
    fields["max_context"] = c.int_("max_position_embeddings", default=131072)
    window = c.opt_int("sliding_window")
    fields["sliding_window"] = window if window is not None else 4096
    fields["global_attention_every"] = _window_every(c, fields["layers"], 6)
    return fields


def _olmo(c: _Config) -> Fields:
    """OlmoConfig: Llama-shaped, no biases, and parameter-free LayerNorms (OlmoLayerNorm)."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["norm"] = "nonparametric"
    return fields


def _olmo2(c: _Config) -> Fields:
    """Olmo2Config: RMSNorm after attention and after the MLP (two per layer, none before),
    and RMSNorms over all q heads and all k heads (``q_norm`` a·d, ``k_norm`` kv·d)."""
    fields = _olmo(c)
    fields["norm"] = "rmsnorm"
    fields["qk_norm"] = "full"
    return fields


def _olmoe(c: _Config) -> Fields:
    """OlmoeConfig: OLMo-2's q/k norms (over h and kv·d), pre-norms, every layer MoE with
    ``num_experts`` experts of intermediate_size, top ``num_experts_per_tok``."""
    fields = _llama_like(c, max_context=4096, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["qk_norm"] = "full"
    fields["moe"] = {
        "num_experts": c.int_("num_experts", default=64),
        "experts_per_token": c.int_("num_experts_per_tok", default=8),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _cohere(c: _Config) -> Fields:
    """CohereConfig: one bias-free LayerNorm per layer feeding attention and the SwiGLU MLP
    in parallel; optional LayerNorms over all q and k heads (``use_qk_norm``); tied."""
    fields = _llama_like(c, max_context=8192, tied=True)
    fields["norm"] = "layernorm_nobias"
    fields["norms_per_layer"] = 1
    fields["parallel_attention"] = True
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    if c.bool_("use_qk_norm", default=False):
        fields["qk_norm"] = "full"
    return fields


def _cohere2(c: _Config) -> Fields:
    """Cohere2Config: Cohere with a 4096-token window on all but every 4th layer."""
    fields = _cohere(c)
    fields["sliding_window"] = c.int_("sliding_window", default=4096)
    fields["global_attention_every"] = _window_every(c, fields["layers"], 4)
    return fields


def _starcoder2(c: _Config) -> Fields:
    """Starcoder2Config: GQA, LayerNorms with bias, GELU MLP (c_fc, c_proj), biases on every
    linear map with ``use_bias``, optional sliding window, tied."""
    fields = _llama_like(c, max_context=4096, tied=True)
    bias = c.bool_("use_bias", default=True)
    fields.update(
        ffn_kind="gelu_mlp",
        norm="layernorm",
        attention_bias="all" if bias else "none",
        mlp_bias=bias,
        sliding_window=c.opt_int("sliding_window"),
    )
    return fields


def _gpt_bigcode(c: _Config) -> Fields:
    """GPTBigCodeConfig: GPT-2 with multi-query attention (one k/v head) by default."""
    fields = _gpt2(c)
    if c.bool_("multi_query", default=True):
        fields["kv_heads"] = 1
    return fields


def _gptj(c: _Config) -> Fields:
    """GPTJConfig: one LayerNorm per layer feeding attention (q, k, v, out without bias) and
    the GELU MLP (fc_in, fc_out with bias) in parallel; rotary; untied head with a bias."""
    hidden = c.int_("n_embd", "hidden_size")
    heads = c.int_("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.error(f"n_embd ({hidden}) is not a multiple of n_head ({heads})")
    return {
        "layers": c.int_("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("n_inner", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("n_positions", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "norm": "layernorm",
        "norms_per_layer": 1,
        "parallel_attention": True,
        "mlp_bias": True,
        "head_bias": True,
    }


def _phi(c: _Config) -> Fields:
    """PhiConfig (phi-1, phi-1.5, phi-2): one LayerNorm per layer feeding attention and the
    GELU MLP in parallel, biases on every linear map and the head, partial rotary, untied;
    optional per-head LayerNorms on q and k (``qk_layernorm``)."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields.update(
        ffn_kind="gelu_mlp",
        norm="layernorm",
        norms_per_layer=1,
        parallel_attention=True,
        attention_bias="all",
        mlp_bias=True,
        head_bias=True,
    )
    if c.bool_("qk_layernorm", default=False):
        fields["qk_norm"] = "head"
    return fields


def _stablelm(c: _Config) -> Fields:
    """StableLmConfig: LayerNorms with bias, SwiGLU without bias, q/k/v biases with
    ``use_qkv_bias``, per-head q/k LayerNorms with ``qk_layernorm``, one norm per layer
    with ``use_parallel_residual``."""
    fields = _llama_like(c, max_context=4096, tied=False)
    parallel = c.bool_("use_parallel_residual", default=False)
    fields.update(
        norm="layernorm",
        attention_bias="qkv" if c.bool_("use_qkv_bias", default=False) else "none",
        parallel_attention=parallel,
        norms_per_layer=1 if parallel else 2,
    )
    if c.bool_("qk_layernorm", default=False):
        fields["qk_norm"] = "full"  # one LayerNorm(head_dim) per head: a·d and kv·d, with bias
    return fields


def _granite(c: _Config) -> Fields:
    """GraniteConfig: Llama plus scalar multipliers (no parameters)."""
    return _llama(c)


def _granitemoe(c: _Config) -> Fields:
    """GraniteMoeConfig: every layer MoE, ``num_local_experts`` SwiGLU experts of
    intermediate_size (fused input_linear/output_linear), top ``num_experts_per_tok``,
    router without bias."""
    fields = _llama(c)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=8),
        "experts_per_token": c.int_("num_experts_per_tok", default=2),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _internlm2(c: _Config) -> Fields:
    """InternLM2 (remote code, ``modeling_internlm2.py`` of internlm/internlm2-7b, never run):
    fused ``wqkv`` h → (a + 2·kv)·d and ``wo``, both with bias when ``bias`` (default true),
    SwiGLU ``w1``/``w3``/``w2`` without bias, RMSNorm ``attention_norm``/``ffn_norm``,
    untied ``output``. The fused map holds exactly separate q/k/v's parameters."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("bias", default=True) else "none"
    return fields


def _deepseek_v1(c: _Config) -> Fields:
    """DeepSeekMoE v1 (remote code, ``modeling_deepseek.py`` of deepseek-ai/deepseek-moe-16b-base,
    never run): Llama attention; from ``first_k_dense_replace`` on, every
    ``moe_layer_freq``-th layer is MoE with ``n_routed_experts`` experts of
    ``moe_intermediate_size`` plus one shared MLP of n_shared_experts × that size (the same
    parameters as n_shared experts), a router without bias."""
    fields = _llama(c)
    routed = c.opt_int("n_routed_experts")
    if routed is not None:
        fields["moe"] = {
            "num_experts": routed,
            "experts_per_token": c.int_("num_experts_per_tok"),
            "expert_ffn_size": c.int_("moe_intermediate_size", default=1407),
            "num_shared_experts": c.opt_int("n_shared_experts", minimum=0) or 0,
            "first_dense_layers": c.opt_int("first_k_dense_replace", minimum=0) or 0,
            "layer_period": c.int_("moe_layer_freq", default=1),
        }
    return fields


def _gpt_oss(c: _Config) -> Fields:
    """GptOssConfig: biases on q/k/v/o, one sink logit per head, a 128-token window on every
    other layer (``layer_types``), every layer MoE: ``num_local_experts`` SwiGLU experts of
    intermediate_size with biases, top ``num_experts_per_tok``, router with bias."""
    fields = _llama_like(c, max_context=131072, tied=False)
    fields.update(
        head_dim=c.int_("head_dim", default=64),
        attention_bias="all" if c.bool_("attention_bias", default=True) else "none",
        attention_sinks=True,
        mlp_bias=True,
        sliding_window=c.int_("sliding_window", default=128),
    )
    fields["global_attention_every"] = _window_every(c, fields["layers"], 2)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=128),
        "experts_per_token": c.int_("num_experts_per_tok", "experts_per_token", default=4),
        "expert_ffn_size": fields["ffn_size"],
        "router_bias": True,
    }
    return fields


def _llama4_text(c: _Config) -> Fields:
    """Llama4TextConfig: MoE layers every ``interleave_moe_layer_step`` (or ``moe_layers``)
    with ``num_local_experts`` experts of intermediate_size, top ``num_experts_per_tok``,
    one shared expert of the same size, a router without bias; dense layers of
    ``intermediate_size_mlp``; q/k L2 norms without parameters; chunked attention
    (``attention_chunk_size``, counted as a window) on all but every 4th (NoPE) layer."""
    fields = _llama_like(c, max_context=131072, tied=False)
    layers = fields["layers"]
    fields["head_dim"] = c.int_("head_dim", default=128)
    fields["ffn_size"] = c.int_("intermediate_size_mlp", default=16384)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    step = c.int_("interleave_moe_layer_step", default=1)
    explicit = c.data.get("moe_layers")
    if explicit is not None and explicit != list(range(step - 1, layers, step)):
        raise c.error("field 'moe_layers' is not every interleave_moe_layer_step-th layer")
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=16),
        "experts_per_token": c.int_("num_experts_per_tok", default=1),
        "expert_ffn_size": c.int_("intermediate_size", default=8192),
        "num_shared_experts": 1,
        "layer_period": step,
        "layer_offset": step - 1,
    }
    chunk = c.opt_int("attention_chunk_size")
    if chunk is not None:
        fields["sliding_window"] = chunk
        fields["global_attention_every"] = c.int_("no_rope_layer_interval", default=4)
    return fields


def _chatglm(c: _Config) -> Fields:
    """ChatGLM2/3 and GLM-4 (THUDM, remote code ``modeling_chatglm.py``): ``num_layers``
    blocks of RMSNorm (``rmsnorm``), a fused query_key_value of ``num_attention_heads``
    query heads and ``multi_query_group_num`` key/value groups (``multi_query_attention``)
    of ``kv_channels``, biased when ``add_qkv_bias``; ``dense`` and the SwiGLU MLP
    (dense_h_to_4h h → 2·``ffn_hidden_size``, dense_4h_to_h) biased when
    ``add_bias_linear``; a separate output_layer over ``padded_vocab_size``."""
    layers = c.int_("num_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    grouped = c.bool_("multi_query_attention", default=False)
    linear_bias = c.bool_("add_bias_linear", default=False)
    qkv_bias = c.bool_("add_qkv_bias", default=False)
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.int_("multi_query_group_num", default=1) if grouped else heads,
        "head_dim": c.int_("kv_channels", default=hidden // heads),
        "ffn_size": c.int_("ffn_hidden_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("padded_vocab_size", "vocab_size"),
        "max_context": c.int_("seq_length", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "rmsnorm" if c.bool_("rmsnorm", default=True) else "layernorm",
        "attention_bias": "all" if linear_bias else ("qkv" if qkv_bias else "none"),
        "mlp_bias": linear_bias,
    }
