"""Recomputation granularity as each stack states it: which layers a full recompute
checkpoints, and which submodules Megatron's selective recompute drops.

The ledger (:mod:`.activations`) prices one layer under none / selective / full. Stacks
also recompute *part* of a stage or *some* submodules:

* Megatron-LM ``--recompute-granularity full --recompute-method uniform|block
  --recompute-num-layers N`` (NVIDIA/Megatron-LM@d98e8a64 megatron/core/recompute.py,
  ``checkpointed_forward``): uniform runs the stage's layers in chunks of N, each chunk
  under one checkpoint (only the chunk's input kept; the whole chunk replayed at once in
  backward); block checkpoints the first N layers of the stage one by one and runs the rest
  without checkpointing (all their activations kept).
* torchtitan ``mode = "selective"``, ``selective_ac_option = "N"`` (pytorch/torchtitan@
  1f029641 torchtitan/distributed/activation_checkpoint.py ``_apply_layer_sac``: a counter
  incremented per block, the block wrapped when ``count % N == 0``): the N-th, 2N-th …
  blocks fully checkpointed, ⌊L/N⌋ of L, the others kept whole ("every").
* Megatron-LM ``--recompute-granularity selective --recompute-modules …``
  (megatron/core/transformer/transformer_config.py ``recompute_modules``, default
  ``["core_attn"]``): :data:`MEGATRON_RECOMPUTE_MODULES`, each read from its module.

These functions are pure arithmetic in the layers on a stage (numpy arrays work)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities.activation_tensors import Num, SavedTensor

RecomputeMethod = Literal["uniform", "block", "every"]
"""How a full recompute covers a stage's layers (module docstring)."""

RECOMPUTE_METHODS: tuple[str, ...] = ("uniform", "block", "every")

CheckpointPlacement = Literal["gpu", "partitioned", "cpu"]
CHECKPOINT_PLACEMENTS: tuple[str, ...] = ("gpu", "partitioned", "cpu")
"""Where a full recompute's layer checkpoints (the layer inputs) live: whole on each GPU
(or ÷ tp with sequence parallelism), partitioned over the tensor-parallel group, or in host
memory. DeepSpeed (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/activation_checkpointing/
checkpointing.py ``partition_activations``: each checkpointed input narrowed to 1/mp_size of
its elements; with ``cpu_checkpoint`` that partition is copied to the CPU, ``CheckpointFunction
.forward``); Megatron's ``--distribute-saved-activations`` splits the input over tp the same
way. Priced: the checkpoint bytes on the GPU (÷ tp, or none on the host). Not priced: the
all-gather of the partitions and the host copies in backward."""

MEGATRON_RECOMPUTE_MODULES: tuple[str, ...] = (
    "core_attn",
    "mlp",
    "moe",
    "shared_experts",
    "moe_act",
    "layernorm",
    "mla_up_proj",
)
"""The submodules ``--recompute-modules`` names that the planner prices
(NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/transformer_config.py lines
560-582):

* ``core_attn``: the attention core (QKᵀ, softmax, dropout, P·V) replayed from Q, K, V
  (the ledger's ``attention_core`` tensors; none with a fused flash kernel);
* ``mlp``: a dense layer's MLP under ``tensor_parallel.checkpoint`` with its input
  (transformer_layer.py ``recompute_mlp``, not set on MoE layers): every MLP tensor but the
  fc1 input dropped, its forward (2·s·b·(3 or 2)·h·f) replayed;
* ``moe``: an MoE layer's whole FFN (router, routed and shared experts) checkpointed
  (moe/moe_layer.py ``moe_layer_recompute``), its input kept;
* ``shared_experts``: the shared experts' MLP checkpointed (``shared_experts_recompute``);
* ``moe_act``: the routed experts' activation function, output discarded and recomputed
  (moe/experts.py ``activation_recompute``): their fc2 input dropped, no GEMM replayed;
* ``layernorm``: input_layernorm and pre_mlp_layernorm outputs discarded and recomputed —
  only where they are separate modules: Transformer Engine's spec fuses both into the
  following linear (IdentityOp) except an MoE layer's pre-MLP norm
  (models/gpt/gpt_layer_specs.py ``pre_mlp_layernorm=backend.layer_norm() if num_experts
  else IdentityOp``): an MoE layer's router/fc1 input dropped, no GEMM replayed;
* ``mla_up_proj``: MLA's up-projections and RoPE, outputs discarded and recomputed
  (transformer_config.py: output-discarding checkpointing): Q, K and V (the up-projections'
  outputs after RoPE) dropped, the latent norms' outputs kept; replayed: the q and kv
  up-projection GEMMs, 2·s·b·(r_q·a·(d_nope + d_rope) + r_kv·a·(d_nope + d_v))."""

DEFAULT_RECOMPUTE_MODULES: tuple[str, ...] = ("core_attn",)
"""Megatron's default ``recompute_modules`` (transformer_config.py line 564)."""

FloatArray = npt.NDArray[np.float64]


def checkpointed_layers(method: str, n: int | None, layers_on_stage: npt.ArrayLike) -> FloatArray:
    """Layers of a stage whose forward a full recompute replays in backward.

    uniform: every layer (each chunk of N is replayed whole); block: min(N, layers) — the
    first N; every: ⌊layers/N⌋ (torchtitan's ``count % N == 0``; N of 0 or 1 is every
    layer). ``n`` None: every layer (the plain full recompute)."""
    layers = np.asarray(layers_on_stage, dtype=np.float64)
    if n is None or method == "uniform":
        return layers
    if method == "block":
        return np.minimum(float(n), layers)
    return layers if n <= 1 else np.floor(layers / n)


def recomputed_fraction(method: str, n: int | None, layers_on_stage: npt.ArrayLike) -> FloatArray:
    """Share of a stage's layer forward FLOPs replayed: checkpointed ÷ layers (0 on an
    empty stage)."""
    layers = np.asarray(layers_on_stage, dtype=np.float64)
    done = checkpointed_layers(method, n, layers)
    return np.where(layers > 0, done / np.maximum(layers, 1.0), 0.0)


def partial_full_stage(
    *,
    method: str,
    n: int | None,
    layers_on_stage: npt.ArrayLike,
    checkpoint_bytes: npt.ArrayLike,
    saved_bytes: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """(bytes a stage's layers keep per micro-batch, recompute working set) under a full
    recompute with ``method`` and N = ``n``, from one layer's checkpoint (its input) and
    one layer's saved tensors without recompute.

    uniform N: ⌈layers/N⌉ chunk inputs kept; in backward a chunk's N layers are replayed
    together, so their saved tensors coexist: working set min(N, layers) × saved. block /
    every: c checkpointed layers keep their input, the other layers everything they save;
    working set one layer's saved tensors (c > 0)."""
    layers = np.asarray(layers_on_stage, dtype=np.float64)
    ckpt = np.asarray(checkpoint_bytes, dtype=np.float64)
    saved = np.asarray(saved_bytes, dtype=np.float64)
    if method == "uniform":
        chunk = float(n or 1)
        kept = np.ceil(layers / chunk) * ckpt
        return kept, np.minimum(chunk, layers) * saved
    c = checkpointed_layers(method, n, layers)
    kept = c * ckpt + (layers - c) * saved
    return kept, np.where(c > 0, saved, 0.0)


def is_partial(method: str, n: int | None) -> bool:
    """Whether (method, N) differs from one checkpoint per layer over every layer."""
    return n is not None and not (method in ("uniform", "every") and n <= 1)


MLA_UP_PROJECTION_OUTPUTS = ("Q (nope ‖ rope)", "K (nope ‖ shared rope)", "V")
"""The ledger's names of MLA's up-projection outputs (:mod:`.activation_attention`)."""


def selective_drops(
    t: SavedTensor, modules: frozenset[str], *, moe_layer: bool, mla: bool = False
) -> bool:
    """Whether Megatron's selective recompute with ``modules`` drops the saved tensor ``t``
    (:data:`MEGATRON_RECOMPUTE_MODULES` says what each module's checkpoint keeps: the
    checkpointed module's input stays, everything it saved inside goes)."""
    if len(modules) == 1:  # the default (the attention core): no generator for one module
        (module,) = modules
        return _drops(module, t, moe_layer, mla)
    return any(_drops(m, t, moe_layer, mla) for m in modules)


def _drops(module: str, t: SavedTensor, moe_layer: bool, mla: bool) -> bool:
    """Whether ``module``'s checkpoint drops ``t`` (:func:`selective_drops`, one module; an
    unknown module drops nothing)."""
    name = t.name
    if module == "core_attn":
        return t.attention_core
    if module == "mlp":
        return (
            not moe_layer
            and t.block == "mlp"
            and not name.startswith("fc1 input")
            and "residual dropout mask" not in name
        )
    if module in ("moe", "shared_experts"):
        shared = name.startswith(("shared experts: ", "shared expert output"))
        return moe_layer and (shared or (module == "moe" and t.block == "moe"))
    if module == "moe_act":
        return moe_layer and name.startswith("routed experts: fc2 input")
    if module == "layernorm":
        return moe_layer and name.startswith("router and fc1 input")
    if module == "mla_up_proj":
        return mla and name in MLA_UP_PROJECTION_OUTPUTS
    return False


def selective_module_flops(
    arch: Architecture, tokens: Num, modules: frozenset[str], *, moe_layer: bool
) -> Num:
    """Forward FLOPs the checkpointed modules replay per layer (before tp), beyond the
    attention core: a dense MLP 2·tokens·(3 gated | 2)·h·f (``mlp``); an MoE layer's router
    and its k routed plus shared experts (``moe``), or its shared experts alone
    (``shared_experts``); MLA's q and kv up-projections (``mla_up_proj``). ``moe_act`` and
    ``layernorm`` replay element-wise kernels only."""
    h, per = arch.hidden_size, 3 if arch.gated else 2
    attention = 0.0
    if "mla_up_proj" in modules and arch.mla is not None:
        m, a = arch.mla, arch.heads
        q_up = (m.q_lora_rank or 0) * a * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        attention = 2.0 * tokens * (q_up + m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim))
    if not moe_layer or arch.moe is None:
        return attention + (2.0 * tokens * per * h * arch.ffn_size if "mlp" in modules else 0.0)
    moe = arch.moe
    if "moe" in modules:
        experts = moe.experts_per_token + moe.num_shared_experts
        ffn = 2.0 * tokens * (per * h * moe.expert_ffn_size * experts + h * moe.num_experts)
        return attention + ffn
    if "shared_experts" in modules:
        return attention + 2.0 * tokens * per * h * moe.expert_ffn_size * moe.num_shared_experts
    return attention
