"""Activation-ledger profiles: which tensors a training stack's modules save for the backward
pass. Data, read from each stack's source at the commit its ``source`` names; the formulas
that price the tensors are :mod:`.activations` (and :mod:`.activation_tensors`,
:mod:`.activation_attention`).

:data:`PROFILES` holds one :class:`ImplementationProfile` per stack kind (fused
Megatron-Core kernels, plain PyTorch / Hugging Face modules, nanotron...);
:data:`HF_MODULES` the per-family terms of Hugging Face transformers' modelling files
(:class:`ModuleTraits`, keyed by ``Architecture.hf_model_type``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ImplementationProfile(BaseModel):
    """Which tensors a training stack saves for the same layer. Each flag is one difference."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    norm_stats: bool = Field(
        description="norms also save per-token statistics (mean/rstd), s·b each; Korthikanti "
        "2022 leaves them out of its count"
    )
    norm_stats_fp32: bool = Field(
        default=True, description="statistics in fp32 (CUDA); else in the activation dtype (CPU)"
    )
    hf_rmsnorm: bool = Field(
        description="RMSNorm as Hugging Face writes it: upcasts its input to fp32 (4·s·b·h "
        "saved) and saves the normalised value in the activation dtype before the weight"
    )
    softmax_fp32: bool = Field(
        description="attention softmax computed and saved in fp32, then cast (HF eager)"
    )
    mask_in_activation_dtype: bool = Field(
        default=False,
        description="dropout mask stored in the activation dtype (PyTorch's CPU dropout "
        "multiplies by a noise tensor) instead of 1-byte bool (CUDA native_dropout)",
    )
    fused_swiglu: bool = Field(
        description="gated MLP activation fused (Megatron bias_swiglu): saves the fc1 output "
        "(gate ‖ up, 2·s·b·f) only, instead of gate, SiLU(gate) and up separately"
    )
    flash_repeat_kv: bool = Field(
        description="GQA keys/values expanded to every query head before the fused attention "
        "kernel (HF repeat_kv before SDPA); Megatron/TE flash reads the kv heads directly"
    )
    flash_output_copy: bool = Field(
        description="the fused kernel's output is saved by the kernel AND copied (transpose + "
        "reshape) into the out-projection input; Megatron's sbhd layout makes that a view"
    )
    logits_fp32_saved: bool = Field(
        default=True, description="cross-entropy saves fp32 (log-)softmax of the logits"
    )
    logits_softmax_in_place: bool = Field(
        default=False,
        description="the loss's fp32 working buffer is the saved softmax / gradient itself "
        "(no second fp32 s·b·V buffer beside it): Megatron-Core's vocab_parallel_cross_entropy "
        "(NVIDIA/Megatron-LM@d98e8a64 megatron/core/tensor_parallel/cross_entropy.py: the fp32 "
        "copy of the logits exponentiated and normalised in place, saved, and turned into the "
        "gradient in place) and Transformer Engine's fused cross-entropy that Megatron-Bridge's "
        "recipes select (NVIDIA/TransformerEngine@d0067d0d pytorch/triton/cross_entropy.py: "
        "one fp32 grad_input written in the forward and saved, scaled in place backward)",
    )
    moe_paged_stash: float = Field(
        default=0.0,
        description="the routed experts' saved tensors held in a paged GPU buffer of this "
        "many times their balanced size (0: saved as they are); set from the training input "
        "``moe_paged_stash`` (:func:`.activation_layer.paged_stash`), not by a stack",
    )
    moe_probs_in_experts: bool = Field(
        default=False,
        description="an MoE layer's router probabilities scale each routed copy inside the "
        "experts (the activation function weighted by them), so the combine that restores "
        "the tokens' order saves nothing: no k·s·b·h copy of the expert outputs, only the "
        "probabilities per routed copy (fp32). Megatron-Core at NVIDIA/Megatron-LM@d98e8a64: "
        "megatron/core/transformer/moe/experts.py TEGroupedMLP.forward (bias_act_func: "
        "weighted_bias_swiglu_impl / activation × permuted_probs) and its fused op-fuser path "
        "(ScaledSwiGLU); token_dispatcher.py calls moe_utils.unpermute without probs",
    )
    embedding_ids: bool = Field(description="embedding backward saves the int64 token ids")
    flash_qkv_copy_held: bool = Field(
        default=False,
        description="multi-head attention: q, k and v are one permuted contiguous copy of the "
        "QKV output and the kernel saves q as a view of it, so the whole copy (q + 2·kv "
        "elements) stays alive beside a second copy of k and v (nanotron)",
    )
    flash_output_follows_q: bool = Field(
        default=False,
        description="the fused kernel's output takes q's memory layout (PyTorch's CPU flash "
        "kernel); CUDA's flash and efficient kernels always return a (b, s, a, d) layout",
    )
    hf_modules: bool = Field(
        default=False,
        description="the model runs its Hugging Face transformers modules: each family's "
        "modelling-file terms apply (:data:`HF_MODULES`, keyed by Architecture.hf_model_type)",
    )
    rotary_tables: bool = Field(
        default=False,
        description="RoPE's cos and sin tables (b·s·d each, activation dtype) are saved by "
        "the multiplications that apply them; computed once per forward, shared by layers",
    )
    selective: Literal["attention_core", "op_sac"] = Field(
        default="attention_core",
        description="what 'selective' recomputation means in this stack: Megatron's "
        "recompute of the attention core (Korthikanti 2022 section 5; nothing once flash "
        "attention is on), or torchtitan's op-level selective checkpointing (every block "
        "checkpointed; the outputs of every other matmul, the attention kernel and the "
        "reduce-scatters kept, everything else recomputed)",
    )
    source: str


PROFILES: dict[str, ImplementationProfile] = {
    p.id: p
    for p in (
        ImplementationProfile(
            id="megatron",
            name="Megatron-Core (fused kernels)",
            description=(
                "Korthikanti et al. 2022's accounting of Megatron-LM: fused LayerNorm/RMSNorm "
                "saving its input (statistics ignored), 16-bit softmax, 1-byte dropout masks, "
                "fused bias-GeLU / bias-SwiGLU, TransformerEngine flash attention reading GQA "
                "kv heads directly, output in sbhd layout (a view)."
            ),
            norm_stats=False,
            hf_rmsnorm=False,
            softmax_fp32=False,
            fused_swiglu=True,
            flash_repeat_kv=False,
            flash_output_copy=False,
            embedding_ids=False,
            moe_probs_in_experts=True,
            logits_softmax_in_place=True,
            source="Korthikanti et al. 2022 (arXiv:2205.05198) section 4.1; Megatron-Core "
            "fused_bias_swiglu, TE DotProductAttention; MoE: NVIDIA/Megatron-LM@d98e8a64 "
            "moe/experts.py (probabilities applied in the experts' activation)",
        ),
        ImplementationProfile(
            id="pytorch",
            name="Plain PyTorch / Hugging Face modules (CUDA)",
            description=(
                "nn.LayerNorm (input + fp32 mean/rstd), HF LlamaRMSNorm (fp32 copy of the "
                "input, normalised value, fp32 rstd), HF eager attention (fp32 softmax then "
                "cast; repeat_kv for GQA), unfused SiLU(gate)·up, native_dropout 1-byte masks, "
                "SDPA flash (saves q, k, v, output and fp32 log-sum-exp; GQA in the kernel, "
                "enable_gqa, unless a mask is materialised; the output is laid out so that "
                "o_proj's input is a view of it), RoPE cos/sin tables, cross-entropy on fp32 "
                "logits; each family's own terms (HF_MODULES)."
            ),
            norm_stats=True,
            hf_rmsnorm=True,
            softmax_fp32=True,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            rotary_tables=True,
            hf_modules=True,
            embedding_ids=True,
            source="PyTorch autograd formulas (derivatives.yaml), transformers "
            "modeling_llama/eager_attention_forward; measured in tests/validation",
        ),
        ImplementationProfile(
            id="torchtitan",
            name="torchtitan (PyTorch modules, op-level selective checkpointing)",
            description=(
                "As 'pytorch' without recomputation or with full recomputation. 'selective' "
                "is torchtitan's op-level SAC: each transformer block is checkpointed and "
                "only the block input, the outputs of the 1st, 3rd, 5th and 7th matmul of "
                "the block (wq, wv, w1, w2; wk, wo and w3 are recomputed), the attention "
                "kernel's output and log-sum-exp and the reduce-scatters' outputs are kept."
            ),
            norm_stats=True,
            hf_rmsnorm=True,
            softmax_fp32=True,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            rotary_tables=True,
            hf_modules=True,
            embedding_ids=True,
            selective="op_sac",
            source="pytorch/torchtitan@b5bcd76c: torchtitan/distributed/"
            "activation_checkpoint.py (SelectiveAC._wrap_block: MUST_SAVE for "
            "_get_default_save_ops, i.e. the partitioner's compute-intensive ops (mm, SDPA "
            "flash/efficient), linear, max, topk, reduce_scatter_tensor, all_to_all_single; "
            "'Save all compute/comm ops, except every second mm/linear', counted per block "
            "forward; moe.router.gate force-recomputed), torchtitan/models/common/"
            "attention.py (QKVLinear: wq, wk, wv in that order, then wo), "
            "torchtitan/models/common/feed_forward.py (w2(silu(w1(x)) * w3(x)))",
        ),
        ImplementationProfile(
            id="nanotron",
            name="nanotron (Triton RMSNorm, flash-attn, TP linears)",
            description=(
                "nanotron's Llama: TritonRMSNorm saving its input and fp32 rstd; the column "
                "linears save their (sequence-sharded) input and re-gather it in backward; "
                "q, k, v permuted into one contiguous copy (multi-head) with k, v concatenated "
                "into a second, flash_attn_varlen_func saving q, k, v, output and fp32 "
                "log-sum-exp (o_proj's input is a view of its output); GLUActivation "
                "unfused (gate‖up output, SiLU(gate), their product); sharded cross-entropy "
                "saving the fp32 softmax."
            ),
            norm_stats=True,
            hf_rmsnorm=False,
            softmax_fp32=False,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            flash_qkv_copy_held=True,
            embedding_ids=True,
            source="huggingface/nanotron@2411b022: src/nanotron/models/llama.py "
            "(LlamaDecoderLayer, CausalSelfAttention.forward and _forward_training, "
            "GLUActivation), src/nanotron/nn/layer_norm.py (TritonRMSNorm), "
            "src/nanotron/parallel/tensor_parallel/functional.py (column_linear with "
            "tp_recompute_allgather = True, the default in config/parallelism_config.py: "
            "saves the sharded input; _ShardedCrossEntropy saves the fp32 softmax)",
        ),
        ImplementationProfile(
            id="pytorch-cpu",
            name="Plain PyTorch / Hugging Face modules (CPU)",
            description=(
                "As 'pytorch', but PyTorch's CPU kernels store dropout masks and LayerNorm "
                "statistics in the activation dtype (measured)."
            ),
            norm_stats=True,
            norm_stats_fp32=False,
            hf_rmsnorm=True,
            softmax_fp32=True,
            mask_in_activation_dtype=True,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            rotary_tables=True,
            hf_modules=True,
            flash_output_follows_q=True,
            embedding_ids=True,
            source="measured with torch.autograd.graph.saved_tensors_hooks "
            "(tests/validation/test_torch_activations.py)",
        ),
    )
}


def get_profile(profile_id: str) -> ImplementationProfile:
    """The profile ``profile_id``; a ValueError lists the known ones."""
    try:
        return PROFILES[profile_id]
    except KeyError:
        raise ValueError(
            f"unknown implementation {profile_id!r}; known: {', '.join(PROFILES)}"
        ) from None


TRANSFORMERS = "huggingface/transformers@v5.24.0"
"""The transformers release whose modelling files the family terms below were read from,
and measured against (tests/validation/test_torch_activations.py)."""


class ModuleTraits(BaseModel):
    """What one family's Hugging Face modelling file saves that Llama's does not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    norm_output_fp32: bool = Field(
        default=False,
        description="RMSNorm multiplies its weight in fp32, so the normalised x̂ it saves is "
        "fp32 (4·s·b·h), not the activation dtype (Gemma's x̂·(1 + w), OLMo-2's w·x̂)",
    )
    layernorm_fp32: bool = Field(
        default=False,
        description="LayerNorm runs on an fp32 copy of its input: input and statistics fp32",
    )
    layernorm_manual_fp32: bool = Field(
        default=False,
        description="LayerNorm written out in fp32 (Cohere): x − mean twice, x̂ and rstd, fp32",
    )
    eager_softmax: Literal["fp32_cast", "act", "fp32_qk"] = Field(
        default="fp32_cast",
        description="eager attention: softmax in fp32 then cast (Llama's "
        "eager_attention_forward); in the activation dtype (one tensor serves P·V); or q and "
        "k cast to fp32 for QK^T as well (GPT-J)",
    )
    attention_softcap: bool = Field(
        default=False, description="tanh soft-capping of the attention scores (Gemma-2)"
    )
    qk_norm_weightless: bool = Field(
        default=False, description="q/k norm without a weight (Llama 4's L2 norm): no x̂ saved"
    )
    qk_l2_norm_nope_every: int | None = Field(
        default=None,
        ge=1,
        description="a weightless per-head q/k norm (no parameters, so not in "
        "Architecture.qk_norm) on every layer but each N-th, the NoPE layers (Llama 4: "
        "use_qk_norm, default true, only where use_rope; no_rope_layer_interval 4)",
    )
    sdpa_value_view: bool = Field(
        default=False,
        description="one fused QKV projection whose v SDPA receives as a view: the whole "
        "q + 2·kv output stays alive (GPT-NeoX, Phi-3); eager attention copies v for its bmm",
    )
    q_head_major: bool = Field(
        default=False,
        description="q reaches SDPA laid out (b, a, s, d) in memory (sliced from a fused QKV "
        "output or rebuilt by torch.cat for partial rotary), not as a transposed (b, s, a, d) "
        "view: a kernel whose output follows q's layout then needs a copy for o_proj",
    )
    final_softcap: bool = Field(
        default=False, description="tanh soft-capping of the logits, result saved (Gemma-2)"
    )
    experts_on_every_token: bool = Field(
        default=False,
        description="every routed expert runs on every token, its input scaled by the "
        "token's router score (zero when not chosen): E copies of the tokens, not top-k "
        "(Llama 4's Llama4TextMoe: hidden_states.repeat(num_experts, 1) * router_scores)",
    )
    glu_saved: int = Field(
        default=4,
        ge=1,
        description="f-sized tensors one gated MLP saves per token, down_proj's input "
        "included (unfused SiLU(gate)·up: gate, SiLU(gate), up, product = 4)",
    )
    router_fp32: bool = Field(
        default=False,
        description="the router's linear runs on an fp32 copy of its input (DeepSeek-V2/V3's "
        "TopkRouter: F.linear(hidden_states.type(torch.float32), ...)): 4·s·b·h saved",
    )
    shared_expert_gate: bool = Field(
        default=False,
        description="the shared expert's output times a sigmoid gate: both saved (Qwen2-MoE)",
    )
    source: str


HF_MODULES: dict[str, ModuleTraits] = {
    **dict.fromkeys(
        ("gemma", "gemma3_text"),
        ModuleTraits(
            norm_output_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/gemma/modeling_gemma.py "
            "GemmaRMSNorm: output = self._norm(x.float()) * (1.0 + self.weight.float())",
        ),
    ),
    "olmo2": ModuleTraits(
        norm_output_fp32=True,
        source=f"{TRANSFORMERS} src/transformers/models/olmo2/modeling_olmo2.py "
        "Olmo2RMSNorm: (self.weight * hidden_states).to(input_dtype) in fp32",
    ),
    "olmo": ModuleTraits(
        layernorm_fp32=True,
        source=f"{TRANSFORMERS} src/transformers/models/olmo/modeling_olmo.py "
        "OlmoLayerNorm: F.layer_norm(hidden_states.to(torch.float32), ...)",
    ),
    **dict.fromkeys(
        ("cohere", "cohere2"),
        ModuleTraits(
            layernorm_manual_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/cohere/modeling_cohere.py "
            "CohereLayerNorm: (x - mean).pow(2).mean(...), (x - mean) * rsqrt, weight * x̂ "
            "in fp32",
        ),
    ),
    "gemma2": ModuleTraits(
        norm_output_fp32=True,
        attention_softcap=True,
        final_softcap=True,
        source=f"{TRANSFORMERS} src/transformers/models/gemma2/modeling_gemma2.py "
        "(eager_attention_forward: softcap · tanh(scores / softcap); Gemma2ForCausalLM: "
        "final_logit_softcapping the same on the logits; Gemma2RMSNorm as Gemma's)",
    ),
    **dict.fromkeys(
        ("gpt2", "falcon", "RefinedWeb", "RefinedWebModel"),
        ModuleTraits(
            eager_softmax="act",
            source=f"{TRANSFORMERS} src/transformers/models/gpt2/modeling_gpt2.py, "
            "falcon/modeling_falcon.py (eager: softmax in the activation dtype)",
        ),
    ),
    "gptj": ModuleTraits(
        eager_softmax="fp32_qk",
        source=f"{TRANSFORMERS} src/transformers/models/gptj/modeling_gptj.py _attn: "
        "query.to(torch.float32), key.to(torch.float32), softmax, .to(value.dtype)",
    ),
    "llama4_text": ModuleTraits(
        eager_softmax="act",
        qk_norm_weightless=True,
        qk_l2_norm_nope_every=4,
        experts_on_every_token=True,
        source=f"{TRANSFORMERS} src/transformers/models/llama4/modeling_llama4.py "
        "(Llama4TextL2Norm without weight; eager softmax in the activation dtype; "
        "Llama4TextMoe runs every expert on every token, scaled by its router score)",
    ),
    **dict.fromkeys(
        ("phi", "stablelm"),
        ModuleTraits(
            q_head_major=True,
            source=f"{TRANSFORMERS} src/transformers/models/phi/modeling_phi.py, "
            "stablelm/modeling_stablelm.py (partial rotary: q = torch.cat((q_rot, q_pass)))",
        ),
    ),
    **dict.fromkeys(
        ("gpt_neox", "phi3"),
        ModuleTraits(
            sdpa_value_view=True,
            q_head_major=True,
            source=f"{TRANSFORMERS} src/transformers/models/gpt_neox/modeling_gpt_neox.py, "
            "phi3/modeling_phi3.py (qkv = self.query_key_value(x) / self.qkv_proj(x), then "
            "q, k, v sliced from it; rotary makes new q and k, v stays a view)",
        ),
    ),
    **dict.fromkeys(
        ("deepseek_v2", "deepseek_v3"),
        ModuleTraits(
            router_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/deepseek_v3/modeling_deepseek_v3.py "
            "DeepseekV3TopkRouter.forward",
        ),
    ),
    "qwen2_moe": ModuleTraits(
        shared_expert_gate=True,
        source=f"{TRANSFORMERS} src/transformers/models/qwen2_moe/modeling_qwen2_moe.py "
        "(shared_expert_output = sigmoid(self.shared_expert_gate(x)) * shared_expert_output)",
    ),
    "gpt_oss": ModuleTraits(
        eager_softmax="act",
        norm_output_fp32=True,
        glu_saved=7,
        source=f"{TRANSFORMERS} src/transformers/models/gpt_oss/modeling_gpt_oss.py "
        "(GptOssRMSNorm: (self.weight * hidden_states).to(input_dtype) in fp32; eager: "
        "sinks concatenated to the scores, their max subtracted, softmax in the "
        "activation dtype; GptOssExperts._apply_gate: gate‖up, both clamped, "
        "gate·sigmoid(α·gate), (up + 1)·glu: 7 f-sized tensors with down_proj's input)",
    ),
}
"""Each supported family's departures from Llama's modules (absent: none), read from its
modelling file at :data:`TRANSFORMERS`."""

ACTIVATION_SAVED: dict[str, int] = {"gelu_new": 4, "gelu_fast": 7}
"""f-sized tensors the activation function saves when written out in Python (transformers
src/transformers/activations.py @ v5.24.0): NewGELU 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
saves x (pow), tanh's result, 0.5·x and 1 + tanh; FastGELU 0.5·x·(1 + tanh(0.7978845608·x·
(1 + 0.044715·x²))) saves x, 0.044715·x, 0.7978845608·x, 1 + 0.044715·x², tanh's result,
0.5·x and 1 + tanh. Every other activation (F.gelu, SiLU, GELUTanh) saves its input: 1."""
