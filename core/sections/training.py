"""Training memory per GPU: persistent state, activations, temporaries, peak and fit.

A model can load and still run out of memory during an iteration: persistent state
(weights, gradients, optimizer) stays resident; activations grow during the forward pass;
temporaries peak on top. :func:`estimate_training` reports both "after load" and "peak"
for one GPU of a (tp, pp, dp, ep, ZeRO) layout:

* persistent = weights + gradients + optimizer state (:mod:`.optimizers`), divided by
  tp·pp (the first pipeline stage also holds the embedding, the last the output head and
  final norm) and by dp per ZeRO stage (Rajbhandari et al. 2019, Figure 1 and section 5:
  stage 1 shards optimizer state, 2 also gradients, 3 also weights); with expert
  parallelism the routed experts are also ÷ ep and ZeRO-sharded over dp/ep instead
  (:func:`estimate_training`);
* activations = the per-layer ledger (:mod:`.activations`) × layers on the stage ×
  micro-batches in flight (1F1B: the first stage holds pp of them, Narayanan et al. 2021,
  arXiv:2104.04473 section 2.2.1; Korthikanti et al. 2022 section 4.2.3) + tensors
  outside the layers;
* temporaries = gradient buckets + ZeRO-3 gathered weights + QLoRA dequantised weight +
  the larger of the logits working set and one layer's recompute working set;
* overhead = CUDA context allowance + allocator-fragmentation allowance (stated
  assumptions, user-settable).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from llm_planner.core.inputs.training import (
    TrainingInputs,
)
from llm_planner.core.primitives.architecture import (
    Architecture,
    ParameterCount,
    attention_params_per_layer,
    count_parameters,
    mean_layer_params,
    mlp_params,
    norm_params,
)
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.quantities.activations import (
    LayerActivations,
    LedgerEntry,
    layer_activations,
    logits_working_bytes,
    outside_layer_ledger,
)
from llm_planner.core.quantities.flops import attention_forward_flops_per_token
from llm_planner.core.quantities.optimizers import (
    factored_state_values,
    get_optimizer,
    get_precision,
)
from llm_planner.core.quantities.stacks import get_stack

NF4_DOUBLE_QUANT_BITS = 4 + 8 / 64 + 32 / (64 * 256)
"""QLoRA's frozen base: 4-bit NF4 with blocks of 64 weights, each block's fp32 constant
double-quantised to 8 bits with one fp32 constant per 256 blocks: 4 + 8/64 + 32/(64·256)
≈ 4.127 bits per parameter (Dettmers et al. 2023, arXiv:2305.14314, section 3, "Double
Quantization": 0.127 bits of constants instead of 0.5)."""

DDP_BUCKET_BYTES = 25 * 2**20
"""PyTorch DDP's gradient bucket, ``bucket_cap_mb=25`` (MiB)."""


def pipeline_stage_layers(arch: Architecture, inputs: TrainingInputs, pp: int) -> tuple[int, int]:
    """(layers on the first pipeline stage, layers on the last) with ``pp`` stages.

    Equal split (Megatron-LM, DeepSpeed, torchtitan): ⌈L/p⌉ on each, the head added to the
    last. Cost-balanced split (``StackProfile.pipeline_balances_head``, nanotron): the blocks
    in order (embedding: cost 0, L layers, the output head) go to stage r until their
    cumulative cost passes (r + 1)/p of the total; the block that passes it stays on r
    (huggingface/nanotron@2411b022 src/nanotron/models/base.py build_model; costs from
    src/nanotron/models/llama.py get_block_compute_costs: a decoder layer 4·a·d·h + 3·f·h,
    the head V·h, i.e. each block's weight-matrix count, used here for every layer kind).
    A head worth several layers pushes layers towards the first stage: the 1B sweep model
    (16 layers, head = 4 layers' cost) puts 6 layers on stage 0 of 4, not 4."""
    equal = math.ceil(arch.layers / pp)
    if pp <= 1:
        return arch.layers, arch.layers
    if not get_stack(inputs.stack).pipeline_balances_head:
        return equal, equal
    costs = [
        float(sum(r * c * k for _, r, c, k in _layer_matrices(arch, arch.is_moe_layer(i))))
        for i in range(arch.layers)
    ]
    costs.append(float(arch.vocab_size * arch.hidden_size))
    total = sum(costs)
    counts = [0] * pp
    rank, cumulative = 0, 0.0
    for i, cost in enumerate(costs):
        cumulative += cost
        if i < arch.layers:
            counts[rank] += 1
        if cumulative > total * (rank + 1) / pp and rank < pp - 1:
            rank += 1
    return counts[0], counts[-1]


def _layer_matrices(arch: Architecture, moe_layer: bool) -> list[tuple[str, int, int, int]]:
    """(LoRA target, rows, cols, count) of every weight matrix of one layer."""
    h = arch.hidden_size
    mats: list[tuple[str, int, int, int]] = []
    if arch.mla is not None:
        m = arch.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            mats.append(("q", h, arch.heads * qk, 1))
        else:
            mats += [("q", h, m.q_lora_rank, 1), ("q", m.q_lora_rank, arch.heads * qk, 1)]
        mats.append(("k", h, m.kv_lora_rank + m.qk_rope_head_dim, 1))
        mats.append(("v", m.kv_lora_rank, arch.heads * (m.qk_nope_head_dim + m.v_head_dim), 1))
        mats.append(("o", arch.heads * m.v_head_dim, h, 1))
    else:
        mats += [
            ("q", h, arch.q_size, 1),
            ("k", h, arch.kv_size, 1),
            ("v", h, arch.kv_size, 1),
            ("o", arch.q_size, h, 1),
        ]

    def mlp(f: int, count: int) -> list[tuple[str, int, int, int]]:
        out = [("up", h, f, count), ("down", f, h, count)]
        return ([("gate", h, f, count)] if arch.gated else []) + out

    if moe_layer and arch.moe is not None:
        moe = arch.moe
        mats += mlp(moe.expert_ffn_size, moe.num_experts + moe.num_shared_experts)
        mats.append(("router", h, moe.num_experts, 1))
    else:
        mats += mlp(arch.ffn_size, 1)
    return mats


def layer_kinds(arch: Architecture) -> list[tuple[bool, int]]:
    """(MoE layer?, how many) for each kind of layer the model has: dense, MoE or both."""
    return [(moe, n) for moe, n in ((False, arch.dense_layers), (True, arch.moe_layers)) if n]


def _norm_params(arch: Architecture) -> int:
    """One norm's parameters: weight and bias (LayerNorm) or weight only (RMSNorm)."""
    return norm_params(arch)


def _layer_params(arch: Architecture, moe_layer: bool) -> float:
    """All parameters of one layer (matrices, biases, norms); the mean layer of its kind
    when layers differ (QK-norms, sinks, hybrids: :func:`.architecture.mean_layer_params`)."""
    differs = arch.recurrent is not None or arch.qk_norm != "none" or arch.attention_sinks
    if differs or (arch.moe is not None and arch.moe.shared_expert_gate):
        return mean_layer_params(arch, moe_layer)
    norm = _norm_params(arch) * arch.norms_per_layer
    if moe_layer and arch.moe is not None:
        moe = arch.moe
        ffn = (moe.num_experts + moe.num_shared_experts) * mlp_params(arch, moe.expert_ffn_size)
        ffn += arch.hidden_size * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
    else:
        ffn = mlp_params(arch, arch.ffn_size)
    return attention_params_per_layer(arch) + ffn + norm


def one_layer_params(arch: Architecture) -> float:
    """Parameters of the largest layer (a ZeRO-3 gather or a gradient bucket holds one)."""
    return max(_layer_params(arch, moe_layer) for moe_layer, _ in layer_kinds(arch))


def outside_layer_params(
    arch: Architecture, counts: ParameterCount, *, first: bool, last: bool, pp: int
) -> int:
    """Parameters outside the layers on a pipeline stage (``counts``: the model's): the
    first holds the embedding, learned positions and embedding norm; the last the final
    norm and the output head (a tied head is a copy of the embedding when pp > 1, as in
    Megatron-LM; one stage holding both counts it once)."""
    outside = 0
    if first:
        outside += counts.embedding + counts.positions
        outside += _norm_params(arch) if arch.embedding_norm else 0
    if last:
        outside += _head_params(counts, pp) + _norm_params(arch)
    return outside


def _head_params(counts: ParameterCount, pp: int) -> int:
    return counts.head if counts.head else (counts.embedding if pp > 1 else 0)


class StageParams(BaseModel):
    """Parameters held by one pipeline stage before tp/ZeRO sharding."""

    model_config = ConfigDict(frozen=True)

    layer_params: float  # in-layer parameters of the stage's layers
    layer_matrix_params: float  # of which in weight matrices (QLoRA quantises these)
    outside_params: float  # embedding / head / final norm on this stage
    factored_values: float  # Adafactor second-moment values for all of the above
    lora_params: float  # LoRA adapter parameters on this stage
    lora_factored_values: float
    largest_matrix: int  # elements of the largest single layer matrix
    one_layer_params: float  # the largest layer's parameters (ZeRO-3 gather, buckets)


def _routed_expert_matrices(arch: Architecture) -> list[tuple[str, int, int, int]]:
    """(LoRA target, rows, cols, count) of one MoE layer's routed experts (none if dense)."""
    if arch.moe is None:
        return []
    h, f, n = arch.hidden_size, arch.moe.expert_ffn_size, arch.moe.num_experts
    out = [("up", h, f, n), ("down", f, h, n)]
    return ([("gate", h, f, n)] if arch.gated else []) + out


class _Routed(NamedTuple):
    """One MoE layer's routed-expert share of each :class:`StageParams` count."""

    params: int
    matrix_params: int
    factored_values: int
    lora_params: float
    lora_factored_values: float


def _routed_per_layer(arch: Architecture, inputs: TrainingInputs) -> _Routed:
    """The routed experts of one MoE layer: parameters (matrices and any MLP biases),
    matrix elements, Adafactor factored values (rows + cols per matrix, biases in full)
    and the LoRA adapters on them (same terms as :func:`stage_params`)."""
    if arch.moe is None:
        return _Routed(0, 0, 0, 0.0, 0.0)
    mats = _routed_expert_matrices(arch)
    total = arch.moe.num_experts * mlp_params(arch, arch.moe.expert_ffn_size)
    mat = sum(r * c * k for _, r, c, k in mats)
    factored = sum((r + c) * k for _, r, c, k in mats) + (total - mat)
    rank = inputs.effective_lora_rank
    lora = lora_factored = 0.0
    if rank is not None:
        adapted = [(r, c, k) for t, r, c, k in mats if t in inputs.lora_targets]
        lora = float(sum(rank * (r + c) * k for r, c, k in adapted))
        lora_factored = float(sum(2 * (rank + (r + c) / 2) * k for r, c, k in adapted))
    return _Routed(total, mat, factored, lora, lora_factored)


def largest_local_layer(arch: Architecture, ep: int = 1) -> float:
    """Parameters of the largest layer as one expert-parallel rank holds it (E/ep of the
    routed experts of an MoE layer; unscaled): what a ZeRO-3 gather or a bucket holds."""
    totals = {moe_layer: _layer_params(arch, moe_layer) for moe_layer, _ in layer_kinds(arch)}
    if ep == 1 or arch.moe is None or True not in totals:
        return max(totals.values())
    away = 1.0 - 1.0 / ep
    routed = arch.moe.num_experts * mlp_params(arch, arch.moe.expert_ffn_size)
    return max(totals.get(False, 0), totals[True] - routed * away)


def routed_expert_params(
    arch: Architecture,
    inputs: TrainingInputs,
    *,
    layers_on_stage: int,
    scale: float,
    ep: int = 1,
) -> StageParams:
    """The routed-expert part of :func:`stage_params` (same ``ep``): the experts of the
    stage's share of the MoE layers, ÷ ep (each expert-parallel rank holds E/ep experts of
    every MoE layer). ``one_layer_params`` is one MoE layer's routed experts ÷ ep. Zero for
    a dense model."""
    r = _routed_per_layer(arch, inputs)
    n = arch.moe_layers * layers_on_stage / arch.layers / ep
    return StageParams(
        layer_params=n * r.params * scale,
        layer_matrix_params=n * r.matrix_params * scale,
        outside_params=0.0,
        factored_values=n * r.factored_values * scale,
        lora_params=n * r.lora_params,
        lora_factored_values=n * r.lora_factored_values,
        largest_matrix=0,
        one_layer_params=r.params / ep * scale,
    )


def stage_params(
    arch: Architecture,
    inputs: TrainingInputs,
    *,
    layers_on_stage: int,
    first: bool,
    last: bool,
    pp: int,
    scale: float,
    ep: int = 1,
) -> StageParams:
    """Parameters one GPU of a pipeline stage holds before tp/ZeRO sharding: the stage's
    share of every layer kind (dense, MoE), plus the embedding (first stage) and the head
    (last stage). With expert parallelism ``ep`` the routed experts of every MoE layer are
    spread over ep ranks, E/ep each (Lepikhin et al. 2020, GShard, section 2.2; Rajbhandari
    et al. 2022, DeepSpeed-MoE, arXiv:2201.05596, section 5): their parameters, LoRA
    adapters and factored values are ÷ ep, and so is the largest layer's (the ZeRO-3
    gather, the gradient bucket). Attention, norms, router and shared experts are not."""
    counts = count_parameters(arch)
    routed = _routed_per_layer(arch, inputs) if ep > 1 else None
    share = layers_on_stage / arch.layers
    layer_params = matrix_params = factored = 0.0
    lora = lora_factored = 0.0
    largest = 0
    rank = inputs.effective_lora_rank
    for moe_layer, n in layer_kinds(arch):
        mats = _layer_matrices(arch, moe_layer)
        total = _layer_params(arch, moe_layer)
        mat = sum(r * c * k for _, r, c, k in mats)
        layer_params += n * share * total
        matrix_params += n * share * mat
        # k copies of a matrix: k × its factored values (no k-fold list for 256 experts)
        per_layer = sum(k * factored_state_values([(r, c)], 0) for _, r, c, k in mats)
        factored += n * share * (per_layer + (total - mat))
        largest = max(largest, *(r * c for _, r, c, _ in mats))
        layer_lora = layer_lora_factored = 0.0
        if rank is not None:
            adapted = [(r, c, k) for t, r, c, k in mats if t in inputs.lora_targets]
            layer_lora = sum(rank * (r + c) * k for r, c, k in adapted)
            layer_lora_factored = sum(2 * (rank + (r + c) / 2) * k for r, c, k in adapted)
        if moe_layer and routed is not None:  # other ranks hold (1 − 1/ep) of the experts
            away = 1.0 - 1.0 / ep
            layer_params -= n * share * routed.params * away
            matrix_params -= n * share * routed.matrix_params * away
            factored -= n * share * routed.factored_values * away
            layer_lora -= routed.lora_params * away
            layer_lora_factored -= routed.lora_factored_values * away
        if rank is not None:
            lora += n * share * layer_lora
            lora_factored += n * share * layer_lora_factored
    h = arch.hidden_size
    outside = outside_layer_params(arch, counts, first=first, last=last, pp=pp)
    outside_factored = 0.0
    if first:
        outside_factored += arch.vocab_size + h
        if counts.positions:
            outside_factored += counts.positions // h + h
    if last:
        outside_factored += arch.vocab_size + h if _head_params(counts, pp) else 0
        outside_factored += _norm_params(arch)
    return StageParams(
        layer_params=layer_params * scale,
        layer_matrix_params=matrix_params * scale,
        outside_params=outside * scale,
        factored_values=(factored + outside_factored) * scale,
        lora_params=lora,
        lora_factored_values=lora_factored,
        largest_matrix=largest,
        one_layer_params=largest_local_layer(arch, ep) * scale,
    )


class StateBytes(NamedTuple):
    """Persistent bytes of a stage's parameters before tensor-parallel and ZeRO division."""

    weights: float
    gradients: float
    optimizer: float


def state_bytes(params: StageParams, inputs: TrainingInputs) -> StateBytes:
    """Weights, gradients and optimizer state of ``params`` (whole, before ÷ tp and ZeRO).

    Full training: every parameter is trained (:mod:`.optimizers` bytes per parameter).
    LoRA (Hu et al. 2021): the base is frozen in the recipe's weight dtype, only the
    adapters have gradients and optimizer state; QLoRA (Dettmers et al. 2023) stores the
    base's layer matrices in NF4 with double-quantised constants. Linear in every count
    of ``params``, so the layout search may price a stage as layers × share + outside.
    """
    recipe = get_precision(inputs.precision)
    opt = get_optimizer(inputs.optimizer)
    lora = inputs.effective_lora_rank is not None
    base = params.layer_params + params.outside_params
    trainable = params.lora_params if lora else base
    factored = params.lora_factored_values if lora else params.factored_values
    w_bytes = recipe.weights_bytes
    if not lora:
        weights = base * w_bytes
    elif inputs.qlora:
        nf4 = NF4_DOUBLE_QUANT_BITS / 8
        weights = (
            params.layer_matrix_params * nf4
            + (base - params.layer_matrix_params) * w_bytes
            + trainable * w_bytes
        )
    else:
        weights = (base + trainable) * w_bytes
    # the stack's own gradient buffers (nanotron: fp32 accumulation buffer + DDP bucket copy)
    gradients = trainable * (
        recipe.gradients_bytes + get_stack(inputs.stack).extra_gradient_bytes_per_param
    )
    moments = opt.full_states * trainable + (factored if opt.factored_second_moment else 0.0)
    optimizer = trainable * recipe.master_bytes + moments * opt.state_bytes_per_value(recipe)
    return StateBytes(weights, gradients, optimizer)


class LayerTemporaries(NamedTuple):
    """Temporaries of one layer at tp = 1 (divide by tp), independent of the micro-batch."""

    zero2_bucket: float
    """One layer's trained gradients, unsharded (ZeRO-2/3 reduce-scatter bucket)."""
    zero3_gather: float
    """Two layers' weights as stored (ZeRO-3: the current layer and the prefetched one)."""
    dequant: float
    """QLoRA: the largest base matrix dequantised to the recipe's weight dtype."""


def layer_temporaries(
    params: StageParams, inputs: TrainingInputs, layers_on_stage: int
) -> LayerTemporaries:
    """The per-layer temporaries of a stage holding ``params`` over ``layers_on_stage``
    layers: a bucket holds one layer's gradients (under LoRA its adapters' only); ZeRO-3
    gathers weights in their stored dtype (NF4 under QLoRA); QLoRA dequantises one matrix
    at a time to 16 bits for its matmul (Dettmers et al. 2023, section 3)."""
    recipe = get_precision(inputs.precision)
    w_bytes = recipe.weights_bytes
    lora = inputs.effective_lora_rank is not None
    trained = params.lora_params / max(layers_on_stage, 1) if lora else params.one_layer_params
    stored = NF4_DOUBLE_QUANT_BITS / 8 if inputs.qlora else w_bytes
    return LayerTemporaries(
        zero2_bucket=trained * recipe.gradients_bytes,
        zero3_gather=2 * params.one_layer_params * stored,
        dequant=params.largest_matrix * w_bytes if inputs.qlora else 0.0,
    )


# ------------------------------------------------------------------ report


class TrainingReport(BaseModel):
    """Training memory for one GPU (bytes), for the most loaded pipeline stage."""

    model_config = ConfigDict(frozen=True)

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    temporary_bytes: float
    overhead_bytes: float
    persistent_bytes: float
    peak_bytes: float
    fits: bool
    max_micro_batch: int = Field(description="largest micro-batch whose peak fits; 0 if none")
    capacity_bytes: float
    after_load_bytes: float = Field(description="persistent state + CUDA context")
    hardware_flops_factor: float = Field(
        description="hardware FLOPs / model FLOPs from recomputation (full ≈ 8/6; "
        ":func:`hardware_flops_factor`)"
    )
    ledger: list[LedgerEntry] = Field(description="one layer's saved tensors, bytes per GPU")
    outside_ledger: list[LedgerEntry] = Field(description="saved tensors outside the layers")
    # context
    stack: str = Field(default="megatron", description="training stack id (quantities.stacks)")
    stack_name: str = Field(default="", description="the stack's name")
    peak_memory_figure: str = Field(
        default="",
        description="what the peak estimates: reserved memory (allocated + fragmentation "
        "allowance + CUDA context); the stack's logs report allocated, reserved or both",
    )
    precision: str
    optimizer: str
    implementation: str
    recompute: str
    stage: Literal["only", "first", "last"]
    layers_on_stage: int
    microbatches_in_flight: int
    trainable_params: float = Field(description="trained parameters, whole model")
    frozen_params: float = Field(description="frozen parameters, whole model (LoRA base)")
    activations_per_layer_bytes: float = Field(description="kept per layer per micro-batch")
    outside_activations_bytes: float
    logits_bytes: float = Field(description="logits working set (last stage)")
    recompute_working_bytes: float
    gradient_bucket_bytes: float
    zero3_gather_bytes: float
    dequant_bytes: float
    cuda_context_bytes: float
    fragmentation_bytes: float

    def figures(self) -> list[Figure]:
        zero = "ZeRO (Rajbhandari et al. 2019, Figure 1)"
        kor = "Korthikanti et al. 2022 (arXiv:2205.05198) section 4"
        rows: list[tuple[str, str, float | int | bool, Unit, str, str]] = [
            (
                "weights_bytes",
                "Weights",
                self.weights_bytes,
                "bytes",
                "P_stage·bytes/(tp[·dp])",
                zero,
            ),
            (
                "gradients_bytes",
                "Gradients",
                self.gradients_bytes,
                "bytes",
                "trainable·bytes/(tp[·dp])",
                zero,
            ),
            (
                "optimizer_bytes",
                "Optimizer state",
                self.optimizer_bytes,
                "bytes",
                "trainable·(master + moments)/(tp[·dp])",
                zero,
            ),
            (
                "persistent_bytes",
                "Persistent state",
                self.persistent_bytes,
                "bytes",
                "weights + gradients + optimizer",
                zero,
            ),
            (
                "after_load_bytes",
                "After load",
                self.after_load_bytes,
                "bytes",
                "persistent + CUDA context",
                "",
            ),
            (
                "activations_bytes",
                "Activations",
                self.activations_bytes,
                "bytes",
                "ledger per layer × layers on stage × micro-batches in flight + outside layers",
                kor,
            ),
            (
                "temporary_bytes",
                "Temporaries",
                self.temporary_bytes,
                "bytes",
                "buckets + ZeRO-3 gather + dequant + max(logits, recompute working set)",
                "",
            ),
            (
                "logits_bytes",
                "  logits working set",
                self.logits_bytes,
                "bytes",
                "(act + 4)·s·b·V/t",
                kor,
            ),
            (
                "recompute_working_bytes",
                "  recompute working set",
                self.recompute_working_bytes,
                "bytes",
                "one layer's regenerated tensors",
                kor,
            ),
            (
                "gradient_bucket_bytes",
                "  gradient bucket",
                self.gradient_bucket_bytes,
                "bytes",
                "DDP 25 MiB bucket, or one layer's gradients with ZeRO-2/3",
                "PyTorch DDP bucket_cap_mb",
            ),
            (
                "zero3_gather_bytes",
                "  ZeRO-3 gathered weights",
                self.zero3_gather_bytes,
                "bytes",
                "2 layers' full weights (current + prefetch)",
                zero,
            ),
            (
                "dequant_bytes",
                "  QLoRA dequantised matrix",
                self.dequant_bytes,
                "bytes",
                "largest base matrix in 16 bits",
                "Dettmers et al. 2023",
            ),
            (
                "overhead_bytes",
                "Overhead allowance",
                self.overhead_bytes,
                "bytes",
                "CUDA context + fragmentation fraction × allocated",
                "assumption",
            ),
            (
                "cuda_context_bytes",
                "  CUDA context allowance",
                self.cuda_context_bytes,
                "bytes",
                "stated allowance (--cuda-context)",
                "assumption",
            ),
            (
                "fragmentation_bytes",
                "  fragmentation allowance",
                self.fragmentation_bytes,
                "bytes",
                "fraction × allocated (--fragmentation)",
                "assumption",
            ),
            (
                "peak_bytes",
                "Peak per GPU",
                self.peak_bytes,
                "bytes",
                "persistent + activations + temporaries + overhead",
                "",
            ),
            (
                "capacity_bytes",
                "GPU memory",
                self.capacity_bytes,
                "bytes",
                "as sold",
                "GPU catalog",
            ),
            ("fits", "Fits", self.fits, "bool", "peak ≤ GPU memory", ""),
            (
                "max_micro_batch",
                "Largest micro-batch that fits",
                self.max_micro_batch,
                "count",
                "largest b with peak(b) ≤ memory",
                "",
            ),
            (
                "hardware_flops_factor",
                "Hardware/model FLOPs (recompute)",
                self.hardware_flops_factor,
                "ratio",
                "1 + recomputed/model FLOPs; model = k·weights + 3·attention, k = 3 (2 LoRA)",
                kor + " section 5",
            ),
            (
                "trainable_params",
                "Trainable parameters",
                self.trainable_params,
                "params",
                "all, or LoRA r·(d_in + d_out) per adapted matrix",
                "Hu et al. 2021",
            ),
        ]
        optional = {"gradient_bucket_bytes", "zero3_gather_bytes", "dequant_bytes"}
        return [
            Figure(key=k, label=label, value=v, unit=unit, formula=f, source=src)
            for k, label, v, unit, f, src in rows
            if not (k in optional and v == 0)
        ]


class _StageResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    weights: float
    gradients: float
    optimizer: float
    activations: float
    outside_activations: float
    logits: float
    recompute_working: float
    bucket: float
    gather: float
    dequant: float
    context: float
    fragmentation: float
    per_layer: float

    @property
    def persistent(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def temporary(self) -> float:
        return self.bucket + self.gather + self.dequant + max(self.logits, self.recompute_working)

    @property
    def overhead(self) -> float:
        return self.context + self.fragmentation

    @property
    def peak(self) -> float:
        return self.persistent + self.activations + self.temporary + self.overhead


def layer_activations_for(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: int,
    *,
    tp: int,
    sequence_parallel: bool,
    moe_layer: bool,
) -> LayerActivations:
    """The activation ledger of one layer under ``inputs`` (recomputation, flash, profile,
    dropout, the recipe's activation dtype, LoRA) at a micro-batch and tp/SP layout."""
    recipe = get_precision(inputs.precision)
    return layer_activations(
        arch,
        inputs.seq_len,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        recompute=inputs.recompute,
        threshold_bytes=inputs.recompute_threshold_bytes,
        flash=inputs.flash_attention,
        profile=inputs.implementation,
        dropout=inputs.dropout,
        activation_dtype=recipe.activations_dtype,
        moe_layer=moe_layer,
        lora_rank=inputs.effective_lora_rank,
        lora_targets=inputs.lora_targets,
    )


def outside_ledger_for(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: int,
    *,
    tp: int,
    sequence_parallel: bool,
    first: bool,
    last: bool,
) -> list[LedgerEntry]:
    """Tensors saved outside the layers on a first and/or last pipeline stage."""
    return outside_layer_ledger(
        arch,
        inputs.seq_len,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        profile=inputs.implementation,
        dropout=inputs.dropout,
        activation_dtype=get_precision(inputs.precision).activations_dtype,
        first_stage=first,
        last_stage=last,
        lora=inputs.effective_lora_rank is not None,
        recompute=inputs.recompute,
        flash=inputs.flash_attention,
    )


def _stage(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: int,
    *,
    params: StageParams,
    routed: StageParams | None,
    tp: int,
    dp: int,
    ep: int,
    zero_stage: int,
    sequence_parallel: bool,
    first: bool,
    last: bool,
    in_flight: int,
    layers_on_stage: int,
) -> _StageResult:
    """One pipeline stage's memory at ``micro_batch`` (``params``: the stage's parameters on
    one GPU, ``routed``: their routed-expert part when ep > 1, ZeRO-sharded over dp/ep)."""
    recipe = get_precision(inputs.precision)
    state = state_bytes(params, inputs)
    if routed is None:
        weights, gradients, optimizer = (
            state.weights / tp,
            state.gradients / tp,
            state.optimizer / tp,
        )
        if zero_stage >= 1:
            optimizer /= dp
        if zero_stage >= 2:
            gradients /= dp
        if zero_stage >= 3:
            weights /= dp
    else:
        # state_bytes is linear: the non-expert state is all less the routed experts'
        experts = state_bytes(routed, inputs)
        expert_dp = max(dp / ep, 1.0)

        def sharded(whole: float, expert: float, stage: int) -> float:
            div, expert_div = (dp, expert_dp) if zero_stage >= stage else (1, 1.0)
            return (whole - expert) / (tp * div) + expert / (tp * expert_div)

        weights = sharded(state.weights, experts.weights, 3)
        gradients = sharded(state.gradients, experts.gradients, 2)
        optimizer = sharded(state.optimizer, experts.optimizer, 1)

    # activations: average layer kind on the stage, × micro-batches in flight
    kinds = layer_kinds(arch)
    acts = {
        moe: layer_activations_for(
            arch, inputs, micro_batch, tp=tp, sequence_parallel=sequence_parallel, moe_layer=moe
        )
        for moe, _ in kinds
    }
    share = layers_on_stage / arch.layers
    kept_stage = sum(n * share * acts[moe].kept_bytes for moe, n in kinds)
    per_layer = kept_stage / layers_on_stage if layers_on_stage else 0.0
    outside = outside_ledger_for(
        arch,
        inputs,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        first=first,
        last=last,
    )
    outside_bytes = sum(e.bytes for e in outside) * in_flight
    activations = kept_stage * in_flight + outside_bytes

    logits = (
        logits_working_bytes(
            arch, inputs.seq_len, micro_batch, tp=tp, activation_dtype=recipe.activations_dtype
        )
        if last
        else 0.0
    )
    working = max(a.recompute_working_bytes for a in acts.values())
    temps = layer_temporaries(params, inputs, layers_on_stage)
    bucket = 0.0
    if zero_stage >= 2 and dp > 1:
        bucket = temps.zero2_bucket / tp  # one layer's unsharded (trained) gradients
    elif dp > 1 and inputs.implementation != "megatron":
        bucket = DDP_BUCKET_BYTES  # Megatron reduces in place in its contiguous grad buffer
    gather = temps.zero3_gather / tp if zero_stage >= 3 and dp > 1 else 0.0
    dequant = temps.dequant / tp
    allocated = weights + gradients + optimizer + activations
    allocated += bucket + gather + dequant + max(logits, working)
    return _StageResult(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        outside_activations=outside_bytes,
        logits=logits,
        recompute_working=working,
        bucket=bucket,
        gather=gather,
        dequant=dequant,
        context=inputs.cuda_context_bytes,
        fragmentation=inputs.fragmentation_fraction * allocated,
        per_layer=per_layer,
    )


_MLP_TARGETS = frozenset({"gate", "up", "down"})


def _matmul_params_per_token(arch: Architecture, moe_layer: bool) -> int:
    """Weight-matrix elements one token multiplies in one layer (an MoE layer: the router,
    the shared experts and the k routed experts the token is sent to)."""
    mats = _layer_matrices(arch, moe_layer)
    if not moe_layer or arch.moe is None:
        return sum(r * c * k for _, r, c, k in mats)
    active = arch.moe.experts_per_token + arch.moe.num_shared_experts
    return sum(r * c * (active if t in _MLP_TARGETS else k) for t, r, c, k in mats)


class TrainingFlops(NamedTuple):
    """Forward FLOPs per trained token, and what recomputation replays (:func:`training_flops`)."""

    weights_forward: float
    """2 × weight-matrix elements a token multiplies: every layer and the output head."""
    attention_forward: float
    """Attention scores and weighted sum (:mod:`llm_planner.core.quantities.flops`)."""
    recomputed: float
    """Forward FLOPs run again during the backward pass under the recomputation policy."""
    weight_passes: int
    """Passes over the weight matrices: 3 (forward, input and weight gradients), 2 under
    LoRA (frozen weights get no weight gradient; Hu et al. 2021)."""

    @property
    def model(self) -> float:
        """Model FLOPs per token: passes × weights + 3 × attention (PaLM's 6N + 12·L·H·Q·T
        when every weight is trained)."""
        return self.weight_passes * self.weights_forward + 3.0 * self.attention_forward


def training_flops(arch: Architecture, inputs: TrainingInputs) -> TrainingFlops:
    """Model and recomputed FLOPs per token of one training step under ``inputs``.

    Model FLOPs follow Chowdhery et al. 2022 (PaLM, arXiv:2204.02311) Appendix B: 6·N per
    token for the weights (forward 2N, backward 4N) plus 12·L·H·Q·T for attention (here
    with sliding windows capping T and MLA's own widths). What is recomputed is what the
    activation ledger drops (Korthikanti et al. 2022, arXiv:2205.05198, section 5):

    - none: nothing;
    - full: every layer's forward (weights and attention), 2N_layers + 4·L·H·Q·T; the
      output head and loss sit outside the checkpointed layers and are not replayed, so
      a GPT layer stack gets exactly 8/6 of 6·P·D and a whole model slightly less;
    - selective: the attention core (Q·Kᵀ, softmax, A·V), 4·L·H·Q·T, when the ledger
      drops it; with a fused (flash) kernel no s² tensor is saved, so nothing is dropped;
    - threshold: the producers of every dropped tensor, from the ledger.

    LoRA adapters' own FLOPs (r·(d_in + d_out) per token per matrix) are neglected.
    """
    s = inputs.seq_len
    head = 2.0 * arch.hidden_size * arch.vocab_size
    layers = sum(2.0 * n * _matmul_params_per_token(arch, moe) for moe, n in layer_kinds(arch))
    attention = attention_forward_flops_per_token(arch, s)
    recomputed = 0.0
    if inputs.recompute == "full":
        recomputed = layers + attention
    elif inputs.recompute in ("selective", "threshold"):
        kinds = [
            (n, layer_activations_for(arch, inputs, 1, tp=1, sequence_parallel=False, moe_layer=m))
            for m, n in layer_kinds(arch)
        ]
        if inputs.recompute == "selective":
            dropped = any(la.recompute_working_bytes > 0 for _, la in kinds)
            recomputed = attention if dropped else 0.0
        else:
            recomputed = sum(n * la.recompute_flops for n, la in kinds) / s
    passes = 2 if inputs.effective_lora_rank is not None else 3
    return TrainingFlops(layers + head, attention, recomputed, passes)


def hardware_flops_factor(
    arch: Architecture, inputs: TrainingInputs, model_flops_per_token: float | None = None
) -> float:
    """Hardware FLOPs ÷ model FLOPs: 1 + recomputed ÷ model, per token.

    Model FLOPs count what the model needs, hardware FLOPs add what the implementation
    recomputes (Chowdhery et al. 2022, Appendix B: MFU vs HFU; Korthikanti et al. 2022,
    section 6). ``model_flops_per_token`` is the count the caller's MFU divides by (6·P,
    or 6·N + 12·L·H·Q·T), so HFU − MFU is exactly the recomputed FLOPs' share of peak;
    default: this training step's own (:attr:`TrainingFlops.model`). The recomputed
    FLOPs come from :func:`training_flops`: none → 1; full → 4/3 for a layer stack.
    """
    flops = training_flops(arch, inputs)
    model = flops.model if model_flops_per_token is None else model_flops_per_token
    return 1.0 + flops.recomputed / model if model > 0 else 1.0


def estimate_training(
    arch: Architecture,
    inputs: TrainingInputs,
    gpu: GPU,
    *,
    params_override: float | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 0,
    sequence_parallel: bool = False,
    microbatches_in_flight: int | None = None,
    ep: int = 1,
    last_stage_microbatches_in_flight: int | None = None,
) -> TrainingReport:
    """Training memory per GPU for ``arch`` under ``inputs`` on ``gpu`` with a layout.

    Reports the most loaded pipeline stage: the first (embedding; ``microbatches_in_flight``
    defaults to pp there, as 1F1B holds pp micro-batches on the first stage — Narayanan et
    al. 2021) or the last (output head, final norm, logits;
    ``last_stage_microbatches_in_flight``, default 1: in 1F1B the last stage runs each
    micro-batch's backward right after its forward). The schedule decides both counts
    (``parallelism.training_layout_kwargs``). ``params_override`` scales every parameter
    count so the total equals it.

    Expert parallelism ``ep`` (MoE; ep divides dp): each GPU holds E/ep of every MoE
    layer's routed experts (÷ tp as well: expert tensor parallelism = tp), so their
    weights, gradients and optimizer state are ÷ ep; everything else (attention, norms,
    router, shared experts, embedding, head) is not. ZeRO shards the non-expert state over
    ``dp`` and the expert state over the expert-data-parallel group of dp/ep ranks holding
    the same experts (DeepSpeed-MoE, Rajbhandari et al. 2022, arXiv:2201.05596, section 5,
    "E + Z"; DeepSpeed-TED, Singh et al. 2023, arXiv:2303.06318, section 3: expert data
    parallel = dp/ep; Megatron-Core's expert-data-parallel group and distributed
    optimizer). ZeRO-3's gather and the ZeRO-2 bucket hold one layer as this GPU stores
    it (its own E/ep experts). Activations are unchanged by ep: the all-to-all dispatches
    each token to the GPUs holding its experts, so on average each GPU still processes
    top_k × its own tokens in its experts (balanced routing; Fedus et al. 2021, Switch
    Transformer, section 2.2), and the per-GPU MoE ledger (:mod:`.activations`) stays as
    it is. A dense model ignores ep.
    """
    if ep < 1:
        raise ValueError(f"expert parallelism ep must be ≥ 1, got {ep}")
    if arch.moe is None:
        ep = 1
    total = count_parameters(arch).total
    scale = params_override / total if params_override is not None else 1.0
    first_layers, last_layers = pipeline_stage_layers(arch, inputs, pp)
    if pp > 1:
        stages: list[tuple[Literal["only", "first", "last"], bool, bool, int, int]] = [
            ("first", True, False, microbatches_in_flight or pp, first_layers),
            ("last", False, True, last_stage_microbatches_in_flight or 1, last_layers),
        ]
    else:
        stages = [("only", True, True, microbatches_in_flight or 1, arch.layers)]
    # a stage's parameters do not depend on the micro-batch: count them once per stage
    per_stage = [
        stage_params(
            arch,
            inputs,
            layers_on_stage=n_layers,
            first=f,
            last=last,
            pp=pp,
            scale=scale,
            ep=ep,
        )
        for _, f, last, _, n_layers in stages
    ]
    routed_of = {
        n_layers: routed_expert_params(arch, inputs, layers_on_stage=n_layers, scale=scale, ep=ep)
        if ep > 1
        else None
        for *_, n_layers in stages
    }

    def worst(b: int) -> tuple[Literal["only", "first", "last"], int, _StageResult]:
        results = [
            (
                name,
                n,
                _stage(
                    arch,
                    inputs,
                    b,
                    params=params,
                    routed=routed_of[n_layers],
                    tp=tp,
                    dp=dp,
                    ep=ep,
                    zero_stage=zero_stage,
                    sequence_parallel=sequence_parallel,
                    first=f,
                    last=last,
                    in_flight=n,
                    layers_on_stage=n_layers,
                ),
            )
            for (name, f, last, n, n_layers), params in zip(stages, per_stage, strict=True)
        ]
        return max(results, key=lambda r: r[2].peak)

    stage_name, in_flight, result = worst(inputs.micro_batch)
    stage_layers = {"only": arch.layers, "first": first_layers, "last": last_layers}
    capacity = gpu.memory_bytes

    def fits(b: int) -> bool:
        return worst(b)[2].peak <= capacity

    max_b = 0
    if fits(1):
        lo, hi = 1, 2
        while hi <= 2**20 and fits(hi):
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        max_b = lo

    la = layer_activations_for(
        arch,
        inputs,
        inputs.micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        moe_layer=arch.moe is not None,
    )
    outside = outside_ledger_for(
        arch,
        inputs,
        inputs.micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        first=stage_name in ("only", "first"),
        last=stage_name in ("only", "last"),
    )
    whole = stage_params(
        arch, inputs, layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=scale
    )
    lora = inputs.effective_lora_rank is not None
    base_total = whole.layer_params + whole.outside_params
    return TrainingReport(
        weights_bytes=result.weights,
        gradients_bytes=result.gradients,
        optimizer_bytes=result.optimizer,
        activations_bytes=result.activations,
        temporary_bytes=result.temporary,
        overhead_bytes=result.overhead,
        persistent_bytes=result.persistent,
        peak_bytes=result.peak,
        fits=result.peak <= capacity,
        max_micro_batch=max_b,
        capacity_bytes=capacity,
        after_load_bytes=result.persistent + result.context,
        hardware_flops_factor=hardware_flops_factor(arch, inputs),
        ledger=la.ledger,
        outside_ledger=outside,
        stack=inputs.stack,
        stack_name=get_stack(inputs.stack).name,
        peak_memory_figure="reserved (allocated + fragmentation allowance + CUDA context); "
        f"{get_stack(inputs.stack).name} logs {get_stack(inputs.stack).memory_figure}",
        precision=inputs.precision,
        optimizer=inputs.optimizer,
        implementation=inputs.implementation,
        recompute=inputs.recompute,
        stage=stage_name,
        layers_on_stage=stage_layers[stage_name],
        microbatches_in_flight=in_flight,
        trainable_params=whole.lora_params if lora else base_total,
        frozen_params=base_total if lora else 0.0,
        activations_per_layer_bytes=result.per_layer,
        outside_activations_bytes=result.outside_activations,
        logits_bytes=result.logits,
        recompute_working_bytes=result.recompute_working,
        gradient_bucket_bytes=result.bucket,
        zero3_gather_bytes=result.gather,
        dequant_bytes=result.dequant,
        cuda_context_bytes=result.context,
        fragmentation_bytes=result.fragmentation,
    )
