"""What one GPU of a training layout holds before tensor-parallel and ZeRO division: the
parameters of a pipeline stage (dense and MoE layers, routed experts under expert
parallelism, embedding and head), their persistent bytes (weights, gradients, optimizer
state per precision recipe, optimizer, LoRA and QLoRA), one layer's temporaries, and the
activation ledgers of a layer and of the tensors outside the layers under the inputs.

The memory arithmetic over layouts is :mod:`.training_memory`; the report,
:mod:`.training`."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from llm_planner.core.inputs.training import NF4_DOUBLE_QUANT_BITS, TrainingInputs
from llm_planner.core.primitives.architecture import (
    Architecture,
    LayerMatrix,
    ParameterCount,
    attention_params_per_layer,
    count_parameters,
    mean_layer_params,
    mlp_params,
    norm_params,
    per_layer_input_params,
)
from llm_planner.core.primitives.architecture_groups import layer_groups, layers_differ
from llm_planner.core.primitives.kept import kept
from llm_planner.core.quantities.activation_profiles import ImplementationProfile, get_profile
from llm_planner.core.quantities.activation_tensors import (
    LedgerConfig,
    RecomputeKind,
    SavedTensor,
    ledger_config,
)
from llm_planner.core.quantities.activations import (
    LayerActivations,
    LedgerEntry,
    layer_activations,
    layer_saved_tensors,
    outside_layer_ledger,
    outside_stage_bytes,
)
from llm_planner.core.quantities.mtp import MTP_NORMS
from llm_planner.core.quantities.optimizers import (
    factored_state_values,
    get_optimizer,
    get_precision,
)
from llm_planner.core.quantities.stacks import get_stack


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
    (16 layers, head = 4 layers' cost) puts 6 layers on stage 0 of 4, not 4.

    Multi-token prediction (``inputs.mtp_layers`` = D): each depth's transformer layer is a
    layer of the last stage (Megatron-Core builds them there, ``get_mtp_num_layers_to_build``)
    and takes a layer's slot of the equal split, ⌈(L + D)/p⌉, as in Megatron-Bridge's
    DeepSeek-V3 layouts (the step time's ``_fullest_stage``); one stage holds L + D; the
    cost-balanced split adds them to its last stage."""
    depths = inputs.mtp_layers
    equal = math.ceil((arch.layers + depths) / pp)
    if pp <= 1:
        return arch.layers + depths, arch.layers + depths
    if not get_stack(inputs.stack).pipeline_balances_head:
        return equal, equal
    each = layers_differ(arch)  # a hybrid's layers cost their own matrices
    layers = [
        arch.layer_matrices(index=i) if each else arch.layer_matrices(arch.is_moe_layer(i))
        for i in range(arch.layers)
    ]
    costs = [float(sum(m.elements for m in mats)) for mats in layers]
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
    return counts[0], counts[-1] + depths


def layer_kinds(arch: Architecture) -> list[tuple[bool, int]]:
    """(MoE layer?, how many) for each kind of layer the model has: dense, MoE or both."""
    return [(moe, n) for moe, n in ((False, arch.dense_layers), (True, arch.moe_layers)) if n]


def _norm_params(arch: Architecture) -> int:
    """One norm's parameters: weight and bias (LayerNorm) or weight only (RMSNorm)."""
    return norm_params(arch)


@kept()
def _layer_params(arch: Architecture, moe_layer: bool) -> float:
    """All parameters of one layer (matrices, biases, norms); the mean layer of its kind
    when layers differ (QK-norms, sinks, hybrids: :func:`.architecture.mean_layer_params`)."""
    differs = arch.recurrent is not None or arch.qk_norm != "none" or arch.attention_sinks
    differs = differs or arch.attention_output_gate or arch.per_layer_input_size > 0
    differs = differs or arch.kv_shared_layers > 0 or arch.global_head_dim is not None
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
    first holds the embedding, learned positions and embedding norm (and Gemma 4's
    per-layer embedding table, its projection and norm); the last the final
    norm and the output head (a tied head is a copy of the embedding when pp > 1, as in
    Megatron-LM; one stage holding both counts it once)."""
    outside = 0
    if first:
        outside += counts.embedding + counts.positions
        outside += _norm_params(arch) if arch.embedding_norm else 0
        outside += per_layer_input_params(arch)[0]
    if last:
        outside += _head_params(counts, pp) + _norm_params(arch)
    return outside


def mtp_stage_params(
    arch: Architecture, inputs: TrainingInputs, *, first: bool, last: bool, pp: int
) -> float:
    """Parameters the ``inputs.mtp_layers`` multi-token prediction depths put on a stage
    outside their transformer layers (each a layer of the last stage:
    :func:`pipeline_stage_layers`, so its experts are ÷ ep like the stage's other layers):
    all on the last (Megatron-Core ``get_mtp_num_layers_to_build``, NVIDIA/Megatron-LM@d98e8a64
    megatron/core/transformer/multi_token_prediction.py), ``eh_proj`` 2h·h and three norms
    per depth; and, with a pipeline, a copy of the input embedding V·h on the last stage,
    which the MTP input needs (megatron/core/models/gpt/gpt_model.py at d98e8a64: ``if
    self.pre_process or self.mtp_process: self.embedding = LanguageModelEmbedding(...)``),
    unless the head is tied and already that copy. The head pass reuses the main output
    layer (shared). Their gradients and optimizer state follow from the stage's parameters
    (:func:`state_bytes`)."""
    depths = inputs.mtp_layers
    if depths <= 0 or not last:
        return 0.0
    h = arch.hidden_size
    own = depths * (2 * h * h + MTP_NORMS * norm_params(arch))
    copy = arch.vocab_size * h if pp > 1 and not first and not arch.tied_embeddings else 0
    return float(own + copy)


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


def _routed_expert_matrices(arch: Architecture) -> list[LayerMatrix]:
    """One MoE layer's routed-expert matrices (none if dense)."""
    if arch.moe is None:
        return []
    return [m for m in arch.layer_matrices(moe_layer=True) if m.routed]


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
    mat = sum(m.elements for m in mats)
    factored = sum((m.d_in + m.d_out) * m.copies for m in mats) + (total - mat)
    rank = inputs.effective_lora_rank
    lora = lora_factored = 0.0
    if rank is not None:
        adapted = [(m.d_in, m.d_out, m.copies) for m in mats if m.target in inputs.lora_targets]
        lora = float(sum(rank * (r + c) * k for r, c, k in adapted))
        lora_factored = float(sum(2 * (rank + (r + c) / 2) * k for r, c, k in adapted))
    return _Routed(total, mat, factored, lora, lora_factored)


@kept()
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


def _matrix_sums(
    mats: tuple[LayerMatrix, ...], rank: int | None, targets: tuple[str, ...]
) -> tuple[int, float, int, float, float]:
    """(matrix elements, Adafactor factored values, largest matrix, LoRA adapter parameters
    and their factored values) of one layer's matrices ``mats``."""
    mat = sum(m.elements for m in mats)
    # k copies of a matrix: k × its factored values (no k-fold list for 256 experts)
    per_layer = sum(m.copies * factored_state_values([(m.d_in, m.d_out)], 0) for m in mats)
    largest = max(m.d_in * m.d_out for m in mats)
    layer_lora = layer_lora_factored = 0.0
    if rank is not None:
        adapted = [(m.d_in, m.d_out, m.copies) for m in mats if m.target in targets]
        layer_lora = sum(rank * (r + c) * k for r, c, k in adapted)
        layer_lora_factored = sum(2 * (rank + (r + c) / 2) * k for r, c, k in adapted)
    return mat, per_layer, largest, layer_lora, layer_lora_factored


@kept()
def _kind_sums(
    arch: Architecture, moe_layer: bool, rank: int | None, targets: tuple[str, ...]
) -> tuple[float, float, float, int, float, float]:
    """One layer of a kind (the mean layer where a hybrid's differ,
    :func:`.architecture_groups.layer_groups`), as :func:`stage_params` sums it:
    (parameters, matrix elements, Adafactor factored values of the matrices, largest
    matrix, LoRA adapter parameters and
    their factored values on ``targets`` at ``rank``). Kept: every stage of every layout
    the estimate prices has the same layers."""
    total = _layer_params(arch, moe_layer)
    groups = layer_groups(arch, moe_layer)  # a hybrid's layers of the kind, each as it is
    n = sum(count for _, count in groups)
    sums = [_matrix_sums(mats, rank, targets) for mats, _ in groups]
    largest = max(g[2] for g in sums)
    mat: float
    if len(groups) == 1:
        mat, per_layer, _, layer_lora, layer_lora_factored = sums[0]
    else:  # the mean layer of the kind
        mat = sum(c * g[0] for (_, c), g in zip(groups, sums, strict=True)) / n
        per_layer = sum(c * g[1] for (_, c), g in zip(groups, sums, strict=True)) / n
        layer_lora = sum(c * g[3] for (_, c), g in zip(groups, sums, strict=True)) / n
        layer_lora_factored = sum(c * g[4] for (_, c), g in zip(groups, sums, strict=True)) / n
    return total, mat, per_layer, largest, layer_lora, layer_lora_factored


@kept()  # by its (frozen) arguments: the report, the workload and the step inputs ask alike
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
    sums = _layer_sums(arch, inputs, layers_on_stage, ep)
    mtp = mtp_stage_params(arch, inputs, first=first, last=last, pp=pp)
    return _with_outside(arch, sums, first=first, last=last, pp=pp, scale=scale, ep=ep, mtp=mtp)


def stages_params(
    arch: Architecture,
    inputs: TrainingInputs,
    stages: list[tuple[int, bool, bool, int]],
    *,
    scale: float,
) -> list[StageParams]:
    """:func:`stage_params` of each (layers on the stage, first, last, pp) at ep = 1, the
    layers' sums computed once per distinct layer count (the same arithmetic: the memory
    terms ask for five stages of two layer counts)."""
    sums: dict[int, _LayerSums] = {}
    out = []
    counts, one_layer = count_parameters(arch), largest_local_layer(arch, 1)
    for layers, first, last, pp in stages:
        if layers not in sums:
            sums[layers] = _layer_sums(arch, inputs, layers, 1)
        mtp = mtp_stage_params(arch, inputs, first=first, last=last, pp=pp)
        stage = _stage_of(
            arch,
            counts,
            sums[layers],
            first=first,
            last=last,
            pp=pp,
            scale=scale,
            one_layer=one_layer,
            mtp=mtp,
        )
        out.append(stage)
    return out


class _LayerSums(NamedTuple):
    """The in-layer sums of :func:`stage_params` before ``scale``."""

    layer_params: float
    matrix_params: float
    factored: float
    lora: float
    lora_factored: float
    largest: int


def _layer_sums(
    arch: Architecture, inputs: TrainingInputs, layers_on_stage: int, ep: int
) -> _LayerSums:
    """The stage's share of every layer kind (:func:`stage_params`)."""
    routed = _routed_per_layer(arch, inputs) if ep > 1 else None
    share = layers_on_stage / arch.layers
    layer_params = matrix_params = factored = 0.0
    lora = lora_factored = 0.0
    largest = 0
    rank = inputs.effective_lora_rank
    targets = inputs.lora_targets if rank is not None else ()
    for moe_layer, n in layer_kinds(arch):
        total, mat, per_layer, big, layer_lora, layer_lora_factored = _kind_sums(
            arch, moe_layer, rank, targets
        )
        layer_params += n * share * total
        matrix_params += n * share * mat
        factored += n * share * (per_layer + (total - mat))
        largest = max(largest, big)
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
    return _LayerSums(layer_params, matrix_params, factored, lora, lora_factored, largest)


def _with_outside(
    arch: Architecture,
    sums: _LayerSums,
    *,
    first: bool,
    last: bool,
    pp: int,
    scale: float,
    ep: int = 1,
    mtp: float = 0.0,
) -> StageParams:
    """:func:`stage_params` from the stage's layer sums: the embedding (first stage), the
    head (last stage), the factored values outside the layers, ``scale``; ``mtp`` the
    multi-token prediction parameters the stage holds (:func:`mtp_stage_params`)."""
    return _stage_of(
        arch,
        count_parameters(arch),
        sums,
        first=first,
        last=last,
        pp=pp,
        scale=scale,
        one_layer=largest_local_layer(arch, ep),
        mtp=mtp,
    )


def _stage_of(
    arch: Architecture,
    counts: ParameterCount,
    sums: _LayerSums,
    *,
    first: bool,
    last: bool,
    pp: int,
    scale: float,
    one_layer: float,
    mtp: float,
) -> StageParams:
    """:func:`_with_outside` given the model's counts and its largest local layer."""
    h = arch.hidden_size
    outside = outside_layer_params(arch, counts, first=first, last=last, pp=pp) + mtp
    outside_factored = 0.0
    if first:
        outside_factored += arch.vocab_size + h
        if counts.positions:
            outside_factored += counts.positions // h + h
    if last:
        outside_factored += arch.vocab_size + h if _head_params(counts, pp) else 0
        outside_factored += _norm_params(arch)
    return StageParams(
        layer_params=sums.layer_params * scale,
        layer_matrix_params=sums.matrix_params * scale,
        outside_params=outside * scale,
        factored_values=(sums.factored + outside_factored) * scale,
        lora_params=sums.lora,
        lora_factored_values=sums.lora_factored,
        largest_matrix=sums.largest,
        one_layer_params=one_layer * scale,
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
    base's layer matrices in NF4 with double-quantised constants. A low-precision recipe
    (FP8, MXFP8, NVFP4: :func:`.optimizers._low_precision_recipes`) adds its quantized copies
    of the layers' matrices (Transformer Engine keeps them across micro-batches). Linear in
    every count of ``params``, so the layout search may price a stage as layers × share +
    outside.
    """
    recipe = inputs.launched_recipe
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
    if not inputs.qlora:
        # a low-precision recipe's quantized copies of the layers' matrices (row-wise and
        # column-wise, with their scales), next to the 16-bit weights (:mod:`.optimizers`);
        # with the parameters kept in low precision (--fp8-param-gather) they replace them
        weights = weights + params.layer_matrix_params * recipe.low_precision_copy_bytes
        if recipe.quantized_params:
            weights = weights - params.layer_matrix_params * w_bytes
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
    recipe = inputs.launched_recipe
    w_bytes = recipe.weights_bytes
    lora = inputs.effective_lora_rank is not None
    trained = params.lora_params / max(layers_on_stage, 1) if lora else params.one_layer_params
    stored = NF4_DOUBLE_QUANT_BITS / 8 if inputs.qlora else w_bytes
    if recipe.quantized_params:  # gathered in the low-precision dtype, one direction
        stored = recipe.low_precision_copy_bytes / 2
    return LayerTemporaries(
        zero2_bucket=trained * recipe.gradients_bytes,
        zero3_gather=2 * params.one_layer_params * stored,
        dequant=params.largest_matrix * w_bytes if inputs.qlora else 0.0,
    )


# ------------------------------------------------------------------ report


@kept()
def layer_activations_for(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: int,
    *,
    tp: int,
    sequence_parallel: bool,
    moe_layer: bool,
    quantized_inputs: bool = True,
) -> LayerActivations:
    """The activation ledger of one layer under ``inputs`` (recomputation, flash, profile,
    dropout, the recipe's activation dtype and, where the stack saves them quantized, its
    linear layers' inputs at the recipe's width, LoRA) at a micro-batch and tp/SP layout.

    ``quantized_inputs`` False: every saved tensor at the activation dtype (the element-wise
    kernels' traffic, whose quantization is priced apart by the recipe).

    Kept by its (frozen) arguments: the training FLOPs' ledger at b = 1, tp = 1 is the
    report's own for such a scenario, and the workload asks again. Shared: do not modify
    the ledger list."""
    return layer_activations(
        arch,
        inputs.seq_len,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        moe_layer=moe_layer,
        **_ledger_options(inputs, quantized_inputs),
    )


def layer_saved_tensors_for(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: int,
    *,
    moe_layer: bool,
    quantized_inputs: bool = True,
) -> list[SavedTensor]:
    """The tensors of :func:`layer_activations_for`'s ledger before recomputation
    (:func:`.activations.layer_saved_tensors`), at tp = 1 without sequence parallelism:
    each line's bytes are the tensor's :func:`.activation_tensors.tensor_bytes`."""
    return layer_saved_tensors(
        arch,
        inputs.seq_len,
        micro_batch,
        tp=1,
        sequence_parallel=False,
        moe_layer=moe_layer,
        **_ledger_options(inputs, quantized_inputs),
    )


def _ledger_options(inputs: TrainingInputs, quantized_inputs: bool) -> dict[str, Any]:
    """The ledger's arguments the training inputs set (:func:`layer_activations_for`)."""
    recipe = get_precision(inputs.precision)
    quantized = (
        quantized_inputs
        and recipe.saved_input_bytes_per_element > 0
        and get_stack(inputs.stack).saves_quantized_gemm_inputs
    )
    profile: str | ImplementationProfile = inputs.implementation
    if quantized_inputs and inputs.moe_paged_stash is not None:
        # the memory ledger only: the element-wise traffic's ledger leaves the stash out
        profile = get_profile(inputs.implementation).model_copy(
            update={"moe_paged_stash": float(inputs.moe_paged_stash)}
        )
    return {
        "recompute": inputs.priced_recompute,
        "threshold_bytes": inputs.recompute_threshold_bytes,
        "flash": inputs.flash_attention,
        "profile": profile,
        "dropout": inputs.dropout,
        "activation_dtype": recipe.activations_dtype,
        "lora_rank": inputs.effective_lora_rank,
        "lora_targets": inputs.lora_targets,
        "recompute_modules": inputs.recompute_modules,
        "checkpoint_placement": inputs.recompute_checkpoint,
        "gemm_input": (
            (f"{recipe.gemm_dtype} ({recipe.id})", recipe.saved_input_bytes_per_element)
            if quantized
            else None
        ),
    }


_POLICY_OPTIONS = ("recompute", "threshold_bytes")
"""The ledger options that are the recomputation policy's (:func:`_ledger_options`); the
rest make the layer's pricing configuration (:func:`ledger_config_for`)."""


def ledger_config_for(inputs: TrainingInputs, micro_batch: int, tp: int) -> LedgerConfig:
    """The pricing configuration of one layer's ledger (:func:`layer_activations_for`'s)
    under ``inputs`` at this micro-batch and tp, whatever their policy: it is applied to
    the tensors after (:func:`.activations.layer_kept_at`)."""
    options = _ledger_options(inputs, True)
    return ledger_config(
        seq_len=inputs.seq_len,
        micro_batch=micro_batch,
        tp=tp,
        **{k: v for k, v in options.items() if k not in _POLICY_OPTIONS},
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
        recompute=inputs.priced_recompute,
        flash=inputs.flash_attention,
    )


def outside_stage_bytes_for(
    arch: Architecture,
    inputs: TrainingInputs,
    micro_batch: Any,
    *,
    tp: int,
    sequence_parallel: bool,
    recompute: RecomputeKind | None = None,
) -> tuple[Any, Any, Any]:
    """The summed bytes of :func:`outside_ledger_for`'s lines on the first, the last and
    the only stage, in one pass (:func:`.activations.outside_stage_bytes`); ``micro_batch``
    may be an integer array (one sum per entry); ``recompute``: this policy instead of the
    inputs'."""
    return outside_stage_bytes(
        arch,
        inputs.seq_len,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        profile=inputs.implementation,
        dropout=inputs.dropout,
        activation_dtype=get_precision(inputs.precision).activations_dtype,
        lora=inputs.effective_lora_rank is not None,
        recompute=inputs.recompute if recompute is None else recompute,
        flash=inputs.flash_attention,
    )
