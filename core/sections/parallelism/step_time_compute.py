"""Compute and memory-bound time of one micro-batch on the fullest pipeline stage: GEMM
efficiencies, elementwise kernels, quantization, the optimizer step (:mod:`.step_time`)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.training import NF4_DOUBLE_QUANT_BITS
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.pipeline_split import split_or_none
from llm_planner.core.sections.parallelism.layout import (
    COMPUTE_KEY,
    DEGREES_KEY,
    Layouts,
    priced_per_group,
)
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.step_time_inputs import (
    StepInputs,
)
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
    full_replay_share,
    layout_hw_factors,
)


def _fullest_stage(
    work: Workload, pp: FloatArray, v: FloatArray, *, balanced: bool
) -> tuple[FloatArray, FloatArray]:
    """(layers, 1 if it holds the output head) of the pipeline stage that sets the pace.

    Equal split (Megatron-LM): ⌈L/(p·v)⌉·v layers per stage, and the last stage also runs
    the output head and the loss; with one stage that is the whole model. Cost-balanced split
    (nanotron, ``StackProfile.pipeline_balances_head``; Llama 3 removes a layer from the
    last stage for the same reason, arXiv:2407.21783 section 3.3.2): blocks (layers, then
    the head) are cut where the cumulative cost passes k/p of the total
    (src/nanotron/models/base.py), cost = the block's weight FLOPs; the stage of the largest
    cost is the fullest. Computed once per distinct (p, v). Multi-token prediction
    (``work.mtp_layers`` = D) sits on the last stage (Megatron-Core ``mtp_on_this_rank``);
    in the equal split each depth takes a layer's slot, ⌈(L + D)/(p·v)⌉ per chunk, as
    Megatron-Bridge's DeepSeek-V3 layouts place it (recipes/deepseek/deepseek_v3.py
    ``set_deepseek_v3_pipeline_model_parallel_layout`` at v0.3.0, 21b02e0c: pp 16
    ``[["embedding"] + ["decoder"] * 4] + [["decoder"] * 4] * 14 + [["decoder"] + ["mtp",
    "loss"]]``, 61 layers + 1 MTP = 62 = 15 × 4 + 2); the cost-balanced split ignores it.
    A stated first/last stage (``work.first_stage_layers`` / ``last_stage_layers``) wins
    over both where it fits the layout's pp and v (:func:`_stated_stage`)."""
    layers = np.ceil((work.layers + work.mtp_layers) / (pp * v)) * v
    head = np.ones_like(pp)
    if work.first_stage_layers is not None or work.last_stage_layers is not None:
        return _stated_stage(work, pp, v, layers, head)
    if not balanced or work.head_flops_per_token <= 0:
        return np.asarray(layers), head
    layer_cost = max(work.model_flops_per_token - work.head_flops_per_token, 0.0) / work.layers
    head_cost = work.head_flops_per_token
    for p_value in np.unique(pp):
        costs = [layer_cost] * work.layers + [head_cost]
        cumulative = np.cumsum(costs)
        thresholds = [cumulative[-1] * (r + 1) / p_value for r in range(int(p_value))]
        stages: list[list[int]] = [[0, 0] for _ in range(int(p_value))]
        rank = 0
        for i, c in enumerate(cumulative):
            stages[rank][0 if i < work.layers else 1] += 1
            if c > thresholds[rank] and rank < int(p_value) - 1:
                rank += 1
        best = max(stages, key=lambda st: st[0] * layer_cost + st[1] * head_cost)
        sel = pp == p_value
        layers = np.where(sel, float(best[0]), layers)
        head = np.where(sel, float(best[1]), head)
    return np.asarray(layers), np.asarray(head)


def _chunk_layers(work: Workload, pp: FloatArray, v: FloatArray, fullest: FloatArray) -> FloatArray:
    """Layers of one virtual chunk of the pacing stage: ⌈(L + D)/(p·v)⌉ (the equal split,
    an MTP depth taking a layer's slot); under a stated first/last stage, the pacing stage's
    layers ÷ v (:func:`_stated_stage`)."""
    if work.first_stage_layers is not None or work.last_stage_layers is not None:
        return np.asarray(fullest / v)
    return np.asarray(np.ceil((work.layers + work.mtp_layers) / (pp * v)))


def _stated_stage(
    work: Workload, pp: FloatArray, v: FloatArray, layers: FloatArray, head: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`_fullest_stage` under a stated first/last stage (Megatron-Core's uneven
    pipeline, :func:`.pipeline_split.stage_split`): the first stage's f layers, each middle
    stage's m, the last stage's l + D (the MTP depths, built on the last stage besides its
    decoder layers: NVIDIA/Megatron-LM@d98e8a64 ``get_mtp_num_layers_to_build``) with the
    output head and each depth's projection and head pass. The stage of the largest weight
    FLOPs per token sets the pace: a layer costs the layers' GEMM FLOPs ÷ L, the head
    6·V·h, a depth's projection and head pass 6·h·(2h + V). The embedding lookup is not
    counted. Layouts whose (pp, v) the stated counts do not fit keep the equal split
    (``layers``, ``head``: :func:`_fullest_stage`'s)."""
    layer_cost = max(work.model_flops_per_token - work.head_flops_per_token, 0.0) / work.layers
    depths = work.mtp_layers
    head_cost = work.head_flops_per_token + 6.0 * depths * work.hidden * (
        2.0 * work.hidden + work.vocab
    )
    layers, head = np.array(layers, dtype=np.float64), np.array(head, dtype=np.float64)
    for p_value, v_value in set(
        zip(pp.tolist(), np.broadcast_to(v, pp.shape).tolist(), strict=True)
    ):
        split = split_or_none(
            work.layers,
            int(p_value),
            work.first_stage_layers,
            work.last_stage_layers,
            int(v_value),
        )
        if split is None:
            continue
        candidates = [(float(split.first), 0.0), (float(split.last + depths), 1.0)]
        if p_value > 2:
            candidates.append((float(split.middle), 0.0))
        best = max(candidates, key=lambda c: c[0] * layer_cost + c[1] * head_cost)
        sel = (pp == p_value) & (v == v_value)
        layers = np.where(sel, best[0], layers)
        head = np.where(sel, best[1], head)
    return layers, head


def _compute_seconds(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    stage_tokens: FloatArray,
    tokens_mb: FloatArray,
    *,
    head_on_stage: FloatArray,
    step_inputs: StepInputs,
) -> tuple[FloatArray, FloatArray]:
    """(t_c, t_mem) of one micro-batch on the fullest stage, and the memory-bound part.

    ``stage_tokens`` = s·b · (the stage's layers ÷ L) ÷ t; ``head_on_stage`` 1 where the
    fullest stage holds the output head and the loss (:func:`_fullest_stage`). Layer GEMMs
    at their shape's efficiency, attention at the fused kernel's (or, unfused, as its
    batched GEMMs: :func:`_unfused_attention_inverse_efficiency`), the head GEMM at its own;
    memory-bound kernels on the same CUDA stream (not overlapped): the layers' element-wise
    kernels, the loss over the logits (the stack's bytes per logit, ÷ tp: vocab-parallel),
    the gradient accumulation of every micro-batch (the stack's bytes per parameter), and
    an MoE model's token permutations (:func:`_permutation_seconds`).

    Fine-tuning (``step_inputs.frozen``, LoRA and QLoRA; Hu et al. 2021, arXiv:2106.09685
    section 4; Dettmers et al. 2023, arXiv:2305.14314 section 3): the frozen weights get no
    weight-gradient GEMM, a third of their GEMM FLOPs (forward 2·P, input gradient 2·P,
    weight gradient 2·P per token; the input gradient still runs, to reach the adapters
    below); the adapters run their own GEMMs, 6·P_adapter per token (+ 2·P_adapter replayed
    under full recomputation) at the efficiency of their rank-r shapes
    (:func:`_adapter_inverse_efficiency`), plus the scale-and-add that merges each adapter's
    output into its base matrix's (PEFT's ``lora.Linear.forward``: result + B(A(x))·scale),
    ≈ 8 bytes per element of the adapted outputs per token forward and backward; QLoRA
    dequantises every frozen NF4 matrix to 16 bits before each use (forward, input gradient,
    and the replay under full recomputation; bitsandbytes ``dequantize_4bit`` in
    ``MatMul4Bit``): (NF4 bits ÷ 8 read + 2 written) bytes per parameter per use, per
    micro-batch, memory-bound. Accumulated gradients are the adapters' only."""
    grouped = priced_per_group(  # once per distinct (degrees, micro-batch, v, SP, policy)
        lay,
        COMPUTE_KEY,
        [stage_tokens, tokens_mb, head_on_stage],
        lambda g, arrays: _compute_seconds_arrays(
            work, cluster, g, arrays[0], arrays[1], head_on_stage=arrays[2], step_inputs=step_inputs
        ),
    )
    if grouped is not None:
        return grouped[0], grouped[1]
    return _compute_seconds_arrays(
        work,
        cluster,
        lay,
        stage_tokens,
        tokens_mb,
        head_on_stage=head_on_stage,
        step_inputs=step_inputs,
    )


def _compute_seconds_arrays(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    stage_tokens: FloatArray,
    tokens_mb: FloatArray,
    *,
    head_on_stage: FloatArray,
    step_inputs: StepInputs,
) -> tuple[FloatArray, FloatArray]:
    """:func:`_compute_seconds` of every layout."""
    si = step_inputs
    hw = layout_hw_factors(work, lay)
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    attention = min(work.attention_flops_per_token, work.model_flops_per_token)
    head = work.head_flops_per_token
    layer_gemm = max(work.model_flops_per_token - attention - head, 0.0)
    layer_peak = _layer_gemm_peak(cluster, si)
    inverse, inverse_head = _gemm_inverse_efficiency(work, cluster, lay, layer_peak=layer_peak)
    # a low-precision recipe runs the layers' GEMMs at its dtype's peak, the rest at the
    # compute dtype's: the layer-GEMM term in units of the compute peak
    inverse = inverse * (cluster.peak_flops / layer_peak)
    attention_eff = cluster.attention_efficiency or comm.ATTENTION_EFFICIENCY[
        work.stack.flash_attention_generation
    ].get(cluster.generation, cluster.kernel_efficiency)
    inverse_attention: float | FloatArray = 1.0 / attention_eff
    if not work.gemms or cluster.sms <= 0:  # no shape model: one efficiency for all
        inverse_attention = 1.0 / cluster.kernel_efficiency
    elif not si.flash_attention and si.head_dim > 0 and cluster.attention_efficiency is None:
        inverse_attention = _unfused_attention_inverse_efficiency(work, cluster, lay, si)
    frozen = 1.0 / 3.0 if si.frozen else 0.0  # the weight-gradient third, not run
    layers_share = stage_tokens * tp / tokens_mb  # layers on the stage ÷ L
    per_token = layers_share * (
        layer_gemm * inverse * (hw - frozen) + attention * inverse_attention * hw
    )
    per_token = per_token + head_on_stage * head * inverse_head * (hw - frozen)
    if work.mtp_layers:  # each MTP depth's eh_proj 2h→h and head pass, at the head's efficiency
        mtp_gemm = 6.0 * work.mtp_layers * work.hidden * (2.0 * work.hidden + work.vocab)
        per_token = per_token + head_on_stage * mtp_gemm * inverse_head * (hw - frozen)
    full = full_replay_share(work, lay)  # the share of the layers' forward replayed
    if si.adapter_params > 0:
        adapter_flops = si.adapter_params * (6.0 + 2.0 * full)
        inverse_adapter = (
            _adapter_inverse_efficiency(cluster, tokens_mb, si)
            if work.gemms and cluster.sms > 0
            else 1.0 / cluster.kernel_efficiency
        )
        per_token = per_token + layers_share * adapter_flops * inverse_adapter
    # the datasheet's peak at the share the GPU sustains (:attr:`.Cluster.tensor_rate_fraction`)
    t_gemm = tokens_mb / tp * per_token / (cluster.peak_flops * cluster.tensor_rate_fraction)
    t_mem = _elementwise_seconds(work, lay, cluster, stage_tokens) + _quantize_seconds(
        work, cluster, stage_tokens, layer_gemm, si
    )
    if work.moe_layers > 0:
        t_mem = t_mem + _permutation_seconds(work, cluster, lay, stage_tokens)
    stack = work.stack
    if work.vocab:
        losses = 1.0 + work.mtp_layers  # the main loss and one per MTP depth
        t_mem = t_mem + head_on_stage * losses * tokens_mb * work.vocab * (
            stack.loss_bytes_per_logit / (tp * cluster.memory_bytes_per_s)
        )
    trained = si.adapter_params if si.frozen else work.params_total
    accumulate = trained / (tp * pp) * stack.grad_accumulation_bytes_per_param
    t_mem = t_mem + accumulate / cluster.memory_bytes_per_s
    if si.adapter_params > 0 and si.lora_rank > 0:
        merge_bytes = ADAPTER_MERGE_BYTES_PER_OUTPUT * si.adapter_params / (2.0 * si.lora_rank)
        t_mem = t_mem + stage_tokens * merge_bytes / cluster.memory_bytes_per_s
    if si.dequantised_params > 0:
        uses = 2.0 + full
        per_use = NF4_DOUBLE_QUANT_BITS / 8.0 + comm.COMM_BYTES_PER_ELEMENT
        dequant = si.dequantised_params * layers_share / tp * per_use * uses
        t_mem = t_mem + dequant / cluster.memory_bytes_per_s
    return np.asarray(t_gemm + t_mem), np.asarray(t_mem)


def _permutation_seconds(
    work: Workload, cluster: Cluster, lay: Layouts, stage_tokens: FloatArray
) -> FloatArray:
    """The MoE token permutations of one micro-batch on the fullest stage, memory-bound:
    the stage's MoE layers (its share of the layers × the model's MoE layers) × this GPU's tokens
    (``stage_tokens`` = s·b·(stage layers ÷ L) ÷ tp: the dispatcher splits the tokens over
    the tensor-parallel ranks) × :func:`.moe.permutation_bytes_per_token` (with the
    regrouping by local expert where ep > 1 and a rank holds more than one expert) ×
    the busiest rank's load factor ÷ achieved HBM bandwidth."""
    ep = lay.as_float("ep")
    with_sorts, without = work.moe_permute_bytes
    sorts = (ep > 1.0) & (work.num_experts > ep)
    per_token = np.where(sorts, with_sorts, without) * work.moe_load_factor
    # stage_tokens carries the stage's share of the L layers: × the model's MoE layers
    return np.asarray(stage_tokens * work.moe_layers * per_token / cluster.memory_bytes_per_s)


ADAPTER_MERGE_BYTES_PER_OUTPUT = 16.0
"""HBM bytes per token per element of an adapted matrix's output that merging the adapter
moves, forward and backward: forward ``B(A(x)) · scale`` (read 2, write 2) and the add to
the base output (read 4, write 2), backward the scale of the incoming gradient (read 2,
write 2) and its copy to the two branches (2): 16 bytes in 16-bit (PEFT's
``lora.Linear.forward``, huggingface/peft src/peft/tuners/lora/layer.py). The adapted
outputs are counted as half of the adapters' r·(in + out) parameters ÷ r."""


def _executed_flops_per_token(
    work: Workload, lay: Layouts, si: StepInputs, hw_factor: FloatArray
) -> FloatArray:
    """FLOPs executed per token (HFU's numerator): the model's × the recompute policy's
    hardware factor, less the frozen weights' weight-gradient third, plus the adapters'
    (:func:`_compute_seconds`)."""
    executed = work.model_flops_per_token * hw_factor
    if si.frozen:
        attention = min(work.attention_flops_per_token, work.model_flops_per_token)
        executed = executed - (work.model_flops_per_token - attention) / 3.0
    if si.adapter_params > 0:
        executed = executed + si.adapter_params * (6.0 + 2.0 * full_replay_share(work, lay))
    return np.asarray(executed + work.mtp_flops_per_token)


def _unfused_attention_inverse_efficiency(
    work: Workload, cluster: Cluster, lay: Layouts, si: StepInputs
) -> FloatArray:
    """1 / efficiency of an unfused attention's batched GEMMs (Megatron-LM's ``CoreAttention``:
    ``baddbmm`` for the scores, ``bmm`` for the context; NVIDIA/Megatron-LM@5c7968af
    megatron/legacy/model/transformer.py), per layout.

    Per layer and micro-batch, b·heads÷tp GEMMs of each shape in one call: the scores
    s×d · d×s and, in the backward, the probabilities' gradient of the same shape; the
    context s×s · s×d and the three backward GEMMs of that shape (query, key and value
    gradients). Each priced by :func:`.comm.gemm_efficiency` with the memory roofline: the
    scores' K is the head dimension (64-128), so they move as many bytes as FLOPs allow.
    Equal FLOPs each, so the mean of the six inverses. Softmax and dropout are the
    element-wise ledger's."""
    tp = lay.as_float("tp")
    b = lay.as_float("micro_batch")
    s = float(work.seq_len)
    d = si.head_dim
    batch = np.maximum(b * si.heads / tp, 1.0)

    def inv(m_: float, n_: float, k_: float) -> FloatArray:
        return np.asarray(
            1.0
            / comm.gemm_efficiency(
                m_,
                n_,
                k_,
                sms=cluster.sms,
                large_efficiency=cluster.kernel_efficiency,
                peak_flops=cluster.peak_flops,
                ramp_seconds=cluster.gemm_ramp_seconds,
                memory_bytes_per_s=cluster.memory_bytes_per_s,
                batch=batch,
            )
        )

    return np.asarray((2.0 * inv(s, s, d) + 4.0 * inv(s, d, s)) / 6.0)


def _adapter_inverse_efficiency(
    cluster: Cluster, tokens_mb: FloatArray, si: StepInputs
) -> FloatArray:
    """1 / efficiency of a LoRA adapter's GEMMs: T×h · h×r (A), T×r · r×h (B) and the
    weight gradients r×T · T×h, T = the micro-batch's tokens, h = the adapted matrix's
    width (taken as the adapted parameters ÷ (2 · r · matrices)), the mean of the three
    inverses (:func:`.comm.gemm_efficiency` with the memory roofline: rank r = 8-64 makes
    them memory-bound)."""
    matrices = max(si.adapted_matrices_per_layer * si.layers, 1.0)
    r = max(si.lora_rank, 1.0)
    width = max(si.adapter_params / (2.0 * r * matrices), 1.0)

    def inv(m_: npt.ArrayLike, n_: npt.ArrayLike, k_: npt.ArrayLike) -> FloatArray:
        return np.asarray(
            1.0
            / comm.gemm_efficiency(
                m_,
                n_,
                k_,
                sms=cluster.sms,
                large_efficiency=cluster.kernel_efficiency,
                peak_flops=cluster.peak_flops,
                ramp_seconds=cluster.gemm_ramp_seconds,
                memory_bytes_per_s=cluster.memory_bytes_per_s,
            )
        )

    passes = inv(tokens_mb, r, width) + inv(tokens_mb, width, r) + inv(r, width, tokens_mb)
    return np.asarray(passes / 3.0)


def _layer_gemm_peak(cluster: Cluster, si: StepInputs) -> float:
    """The peak the layers' linear GEMMs run at: a low-precision recipe's dtype where the
    GPU has it (Transformer Engine's FP8 recipes need FP8 tensor cores, NVFP4 FP4 ones; a
    GPU without them keeps the compute dtype's peak), else the compute dtype's."""
    if si.gemm_dtype is None:
        return cluster.peak_flops
    return max(cluster.low_precision_peak_flops.get(si.gemm_dtype, 0.0), cluster.peak_flops)


def _quantize_seconds(
    work: Workload,
    cluster: Cluster,
    stage_tokens: FloatArray,
    layer_gemm: float,
    si: StepInputs,
) -> FloatArray:
    """A low-precision recipe's quantization kernels for one micro-batch on the fullest
    stage, memory-bound: every layer GEMM's input (K values per token) in the forward and
    its output gradient (N values) in the backward, each quantized once per pass
    (``si.quantize_bytes_per_element``: the 16-bit read and the row-wise and column-wise
    copies written, Transformer Engine's cast-transpose kernels), ÷ tp; the weights' copies
    are made once per step and reused by the micro-batches (not counted). Values per token
    from the GEMM list: a GEMM of share w of the layers' 6·Σ N·K·copies FLOPs per token
    carries N·K·copies = w · layer_gemm / 6, so (N + K)·copies = w · layer_gemm/6 · (1/K +
    1/N)."""
    if si.quantize_bytes_per_element <= 0.0 or not work.gemms:
        return np.zeros_like(stage_tokens)
    per_token = sum(
        share * layer_gemm / 6.0 * (1.0 / n_dim + 1.0 / k_dim)
        for n_dim, k_dim, share, *_ in work.gemms
    )
    # stage_tokens = s·b·(stage layers ÷ L) ÷ tp; per_token counts all L layers
    return np.asarray(
        stage_tokens * per_token * si.quantize_bytes_per_element / cluster.memory_bytes_per_s
    )


def _gemm_inverse_efficiency(
    work: Workload, cluster: Cluster, lay: Layouts, *, layer_peak: float | None = None
) -> tuple[FloatArray, FloatArray]:
    """FLOP-weighted mean of 1 / efficiency over the layers' weight GEMMs, and 1 / the
    output head's efficiency (N = V ÷ tp, K = h), per layout. ``layer_peak``: the peak the
    layers' GEMMs run at (a low-precision recipe's; the size term of
    :func:`.comm.gemm_efficiency` is relative to it, so a small FP8 GEMM reaches a smaller
    fraction of its peak than the same GEMM in BF16); the head runs at the compute dtype's.

    Forward (M×K·K×N), input gradient (M×N·N×K) and weight gradient (K×M·M×N) are priced with
    :func:`.comm.gemm_efficiency` each, M = s·b/cp tokens (the GPU's part of the sequence:
    with sequence parallelism the input is all-gathered before the column-parallel GEMM;
    context parallelism keeps s/cp of it), N or K ÷ tp as
    Megatron splits them, routed experts on k/E of the tokens of the ep ranks that dispatch
    to them (k/E · ep · s·b rows per local expert; Megatron-Core's grouped GEMM runs each
    local expert's rows as its own GEMM, TEGroupedMLP in megatron/core/transformer/moe/
    experts.py, NVIDIA/Megatron-LM@d98e8a64). The busiest expert sets the step: its rows and
    its FLOPs are the mean's × ``work.moe_load_factor`` (:func:`.moe.expert_load_factor`: the
    load imbalance, or the capacity factor when tokens are dropped and padded), so the
    experts' term weighs share × that factor. Evaluated once per distinct (tokens, tp,
    ep, cp): the search's million layouts share a few hundred."""
    tp = lay.as_float("tp")
    if not work.gemms or cluster.sms <= 0:
        flat = np.full_like(tp, 1.0 / cluster.kernel_efficiency)
        return flat, flat
    if len(tp) == 1:  # the scenario's one layout: no grouping (the same tokens as below)
        tok = lay.as_float("micro_batch") * work.seq_len / lay.cp
        one = _one_gemm_inverse_efficiency(
            work, cluster, tok, tp, lay.as_float("ep"), layer_peak=layer_peak
        )
        if one is not None:
            return np.array([one[0]]), np.array([one[1]])
    (b_values, b_code), (t_values, t_code), (e_values, e_code), (c_values, c_code) = (
        _distinct(lay.micro_batch),
        _distinct(lay.tp),
        _distinct(lay.ep),
        _distinct(lay.cp),
    )
    grid_b, grid_t, grid_e, grid_c = np.meshgrid(
        b_values, t_values, e_values, c_values, indexing="ij"
    )
    # this GPU's tokens: context parallelism splits each sequence over cp GPUs
    tok = grid_b.reshape(-1).astype(np.float64) * work.seq_len / grid_c.reshape(-1)
    t = grid_t.reshape(-1).astype(np.float64)
    e = grid_e.reshape(-1).astype(np.float64)
    one = (
        _one_gemm_inverse_efficiency(work, cluster, tok, t, e, layer_peak=layer_peak)
        if len(tok) == 1
        else None
    )
    if one is not None:  # one (tokens, tp, ep, cp): the scenario's layout, in Python floats
        inverse, head = np.array([one[0]]), np.array([one[1]])
        shape = (len(b_values), len(t_values), len(e_values), len(c_values))
        flat_index = np.ravel_multi_index((b_code, t_code, e_code, c_code), shape)
        return np.asarray(inverse[flat_index]), np.asarray(head[flat_index])
    inverse = np.zeros_like(tok)

    def eff(
        m_: npt.ArrayLike, n_: npt.ArrayLike, k_: npt.ArrayLike, peak: float = cluster.peak_flops
    ) -> FloatArray:
        return comm.gemm_efficiency(
            m_,
            n_,
            k_,
            sms=cluster.sms,
            large_efficiency=cluster.kernel_efficiency,
            peak_flops=peak,
            ramp_seconds=cluster.gemm_ramp_seconds,
        )

    lp = layer_peak or cluster.peak_flops
    load = work.moe_load_factor
    for n_dim, k_dim, share, n_tp, k_tp, expert in work.gemms:
        rows = tok * work.moe_tokens_share * e * load if expert else tok
        n_ = n_dim / t if n_tp else np.full_like(t, n_dim)
        k_ = k_dim / t if k_tp else np.full_like(t, k_dim)
        passes = (
            eff(rows, n_, k_, lp),
            eff(rows, k_, n_, lp),
            eff(k_, n_, rows, lp),
        )
        weight = share * load if expert else share
        inverse = inverse + weight * sum(1.0 / e for e in passes) / 3.0
    h, v = float(work.hidden), float(work.vocab or 1)
    head_n = v / t
    head = (1.0 / eff(tok, head_n, h) + 1.0 / eff(tok, h, head_n) + 1.0 / eff(h, head_n, tok)) / 3.0
    shape = (len(b_values), len(t_values), len(e_values), len(c_values))
    flat_index = np.ravel_multi_index((b_code, t_code, e_code, c_code), shape)
    return np.asarray(inverse[flat_index]), np.asarray(head[flat_index])


def _one_gemm_inverse_efficiency(
    work: Workload,
    cluster: Cluster,
    tok: FloatArray,
    t: FloatArray,
    e: FloatArray,
    *,
    layer_peak: float | None,
) -> tuple[float, float] | None:
    """:func:`_gemm_inverse_efficiency`'s (layers, head) for one (tokens, tp, ep, cp), in
    Python floats: the same operations in the same order as the array path (IEEE double
    either way), each GEMM by :func:`.comm.gemm_efficiency`'s one-GEMM form. None where that
    form declines (a zero or non-finite size): the array path keeps numpy's rules."""
    tok0, t0, e0 = float(tok[0]), float(t[0]), float(e[0])

    def eff(m_: float, n_: float, k_: float, peak: float) -> float | None:
        return comm.gemm_efficiency_one(
            m_,
            n_,
            k_,
            1.0,
            sms=cluster.sms,
            large_efficiency=cluster.kernel_efficiency,
            peak_flops=peak,
            ramp_seconds=cluster.gemm_ramp_seconds,
            memory_bytes_per_s=math.inf,
        )

    lp = layer_peak or cluster.peak_flops
    inverse = 0.0
    load = work.moe_load_factor
    for n_dim, k_dim, share, n_tp, k_tp, expert in work.gemms:
        rows = tok0 * work.moe_tokens_share * e0 * load if expert else tok0
        n_ = n_dim / t0 if n_tp else float(n_dim)
        k_ = k_dim / t0 if k_tp else float(k_dim)
        passes = [eff(rows, n_, k_, lp), eff(rows, k_, n_, lp), eff(k_, n_, rows, lp)]
        inverses = [1.0 / x for x in passes if x]
        if len(inverses) < len(passes):
            return None
        weight = share * load if expert else share
        inverse = inverse + weight * (inverses[0] + inverses[1] + inverses[2]) / 3.0
    h, v = float(work.hidden), float(work.vocab or 1)
    head_n = v / t0
    peak = cluster.peak_flops
    heads = [eff(tok0, head_n, h, peak), eff(tok0, h, head_n, peak), eff(h, head_n, tok0, peak)]
    head = [1.0 / x for x in heads if x]
    if len(head) < len(heads):
        return None
    return inverse, (head[0] + head[1] + head[2]) / 3.0


def _distinct(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(distinct values, each entry's index among them) of small positive integers, in
    O(n) with a bincount (np.unique sorts: too slow for the search's millions)."""
    present = np.flatnonzero(np.bincount(values))
    lookup = np.zeros(int(present[-1]) + 1, dtype=np.int64)
    lookup[present] = np.arange(len(present))
    return present.astype(np.int64), lookup[values]


def _elementwise_seconds(
    work: Workload, lay: Layouts, cluster: Cluster, stage_tokens: FloatArray
) -> FloatArray:
    """One micro-batch's memory-bound kernel time on the fullest stage.

    bytes/token/layer (tp part ÷ t, sequence-parallel region ÷ t only with SP, the rest
    whole) · s·b · L/p ÷ bandwidth, written as s·b/(t·p) · L/bandwidth · (tp part + SP part ·
    (1 with SP, else t) + rest · t). ``stage_tokens`` = s·b·imbalance/(t·p)."""
    per_layer = np.asarray(work.elementwise_bytes, dtype=np.float64).T
    per_layer = per_layer * (work.layers / cluster.memory_bytes_per_s)
    rc = lay.recompute
    tp = lay.as_float("tp")
    coefficient = np.take(per_layer[0], rc)
    if np.any(per_layer[1]):
        coefficient = coefficient + np.take(per_layer[1], rc) * np.where(lay.sp, 1.0, tp)
    if np.any(per_layer[2]):
        coefficient = coefficient + np.take(per_layer[2], rc) * tp
    return np.asarray(stage_tokens * coefficient)


def _optimizer_step_seconds(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    tp_pp: FloatArray,
    si: StepInputs | None = None,
) -> FloatArray:
    """The optimizer step's HBM time per GPU per step: bytes/param × the parameters this GPU
    steps ÷ achieved bandwidth. Dense parameters ÷ (t·p), routed experts ÷ (t·p·ep); ZeRO ≥ 1
    steps only this rank's shard (÷ the shard group, experts ÷ dp/ep within it). Plus the
    mixed-precision optimizer's own passes (``si.optimizer_extra_bytes_per_param``:
    :func:`mixed_precision_optimizer_extra_bytes`) over the parameters it steps (the
    adapters' only under LoRA). The search's layouts once per distinct degrees."""
    grouped = priced_per_group(
        lay,
        DEGREES_KEY,
        [tp_pp],
        lambda g, arrays: [_optimizer_step_arrays(work, g, cluster, arrays[0], si)],
    )
    if grouped is not None:
        return grouped[0]
    return _optimizer_step_arrays(work, lay, cluster, tp_pp, si)


def _optimizer_step_arrays(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    tp_pp: FloatArray,
    si: StepInputs | None = None,
) -> FloatArray:
    """:func:`_optimizer_step_seconds` of every layout."""
    step_bytes = work.optimizer_step_bytes_per_param
    if si is not None and si.optimizer_extra_bytes_per_param > 0 and work.params_total > 0:
        trained = si.adapter_params / work.params_total if si.frozen else 1.0
        step_bytes = step_bytes + si.optimizer_extra_bytes_per_param * trained
    per_param = step_bytes / cluster.memory_bytes_per_s
    sharded = lay.zero >= 1
    shard = lay.as_float("shard")
    dense = (work.params_total - work.params_expert) * per_param
    seconds = dense / (tp_pp * np.where(sharded, shard, 1.0))
    if work.params_expert > 0:
        ep = lay.as_float("ep")
        dp_cp = lay.as_float("dp") * lay.as_float("cp")
        expert_dp = np.minimum(np.maximum(dp_cp / ep, 1.0), shard)
        expert = work.params_expert * per_param / (tp_pp * ep * np.where(sharded, expert_dp, 1.0))
        seconds = seconds + expert
    return np.asarray(seconds)
