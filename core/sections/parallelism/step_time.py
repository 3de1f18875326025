"""Step time of many layouts at once: compute, memory-bound kernels, exposed communication
per kind, pipeline bubble, optimizer step; tokens/s, MFU and HFU."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.training import NF4_DOUBLE_QUANT_BITS, TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.sections.parallelism.layout import Layouts
from llm_planner.core.sections.parallelism.memory import memory_screen
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
)
from llm_planner.core.sections.training_memory import MemoryTerms
from llm_planner.core.sections.training_params import stage_params

TIME_PARTS = (
    "compute",
    "bubble",
    "tensor_parallel",
    "pipeline_p2p",
    "expert_all_to_all",
    "context_parallel",
    "data_parallel",
    "overhead",
)
"""Keys of the step-time breakdown, in display order."""

LAYER_KERNELS_FORWARD = 16.0
"""Kernels one transformer layer's forward launches for one micro-batch (tp = 1), counted in
Megatron-LM's GPT layer (NVIDIA/Megatron-LM@5c7968af megatron/legacy/model/transformer.py,
the layer Megatron-DeepSpeed forked; ``ParallelTransformerLayer.forward``,
``ParallelAttention``, ``CoreAttention``, ``ParallelMLP``): input LayerNorm (1), QKV GEMM
and its bias add (2; megatron/core/tensor_parallel/layers.py
``LinearWithGradAccumulationAndAsyncCommunication.forward``), the query's reshape copy (1),
``baddbmm`` scores (1), fused scale-mask-softmax (1), attention dropout (1), ``bmm`` context
(1), the context's ``permute(...).contiguous()`` (1), output-projection GEMM (1; bias
skipped into the fused bias-dropout-add), bias-dropout-add (1, TorchScript-fused), post-
attention LayerNorm (1), fc1 GEMM (1), fused bias-GeLU (1), fc2 GEMM (1), bias-dropout-add
(1). Tensor-parallel collectives are counted apart (:func:`_layer_launches`)."""

LAYER_KERNELS_BACKWARD = 44.0
"""Kernels of the same layer's backward (same files): two GEMMs per linear (input and
weight gradient, 8) and a bias-gradient reduction for each of the four biases (4), two per
batched matmul (4), softmax, dropout, bias-GeLU and the two bias-dropout-adds (5), the
permute and reshape copies (2), three per fused LayerNorm backward (6; apex
``FusedLayerNormAffineFunction``: input gradient, partial and final γ/β reductions), the
two residual-gradient sums (2), and the gradient accumulation into each of the layer's 12
parameter tensors (12: every micro-batch after the first adds into ``.grad`` or
``main_grad``, one kernel per tensor)."""

HEAD_KERNELS = 61.0
"""Kernels a micro-batch launches outside the layers on the last pipeline stage (forward and
backward), counted in Megatron-LM's GPT training step (NVIDIA/Megatron-LM@fd443f26, the
parent of the legacy model's removal: megatron/legacy/model/gpt_model.py
``post_language_model_processing``, megatron/core/tensor_parallel/cross_entropy.py
``_VocabParallelCrossEntropy``, pretrain_gpt.py ``get_batch`` and ``loss_func``): final
LayerNorm (1 + 3), the logits GEMM (1 + 2), the labels' and the loss's transposed copies
(3), the fp32 cast of the logits and its gradient (2), the unfused vocab-parallel
cross-entropy (18 forward: max, subtract, target masking and gather, exp, sum, log, divide;
6 backward), the loss mask's weighted mean and its gradient (8), the data-parallel loss
average (3), and the batch itself (14: the tensor-parallel broadcast of the tokens, the
labels' and tokens' slices, the causal mask, loss mask and position ids)."""

EMBEDDING_KERNELS = 17.0
"""Kernels of the input embedding on the first stage, forward and backward (megatron/legacy/
model/language_model.py ``Embedding.forward``): word and position lookups, their sum, the
transposed copy, dropout (5), and their backward, two embedding backward passes of ~5 kernels
each (sort, count and segment-reduce of the token indices) with the dropout's and copy's
(12)."""

LAYER_KERNELS_ATTENTION_CORE = 4.0
"""Kernels selective recomputation replays: the attention core's ``baddbmm``, softmax,
dropout and ``bmm`` (Korthikanti et al. 2022 section 5; ``CoreAttention.forward``)."""


@dataclass(frozen=True)
class StepInputs:
    """What the step time reads from the model and the training inputs beyond the
    :class:`.workload.Workload` (issue 31): whether attention is fused, its head shape, and
    what a fine-tuning method runs. Computed here from the architecture and the training
    inputs (:func:`step_inputs_of`) while the workload module is being restructured; the
    defaults price full training with FlashAttention, the step time before issue 31."""

    flash_attention: bool = True
    heads: float = 0.0
    """Attention heads: an unfused attention's batched GEMMs per sequence and layer
    (``baddbmm``/``bmm`` over b·heads ÷ tp)."""
    head_dim: float = 0.0
    """The query-key width per head (the scores GEMM's K)."""
    frozen: bool = False
    """The base weights are frozen (LoRA, QLoRA): no weight-gradient GEMM for them."""
    adapter_params: float = 0.0
    """LoRA adapter parameters of the whole model (:func:`.training.stage_params`)."""
    lora_rank: float = 0.0
    adapted_matrices_per_layer: float = 0.0
    """Base matrices of one layer that carry an adapter (the LoRA targets present)."""
    layers: float = 0.0
    dequantised_params: float = 0.0
    """QLoRA: the layers' matrix parameters stored in NF4 and dequantised per use."""
    optimizer_extra_bytes_per_param: float = 0.0
    """HBM bytes per stepped parameter that a mixed-precision optimizer moves beyond Adam's
    own update (:func:`mixed_precision_optimizer_extra_bytes`)."""
    kv_width: float = 0.0
    """Elements of keys and values per token per layer, all heads (before tp): what context
    parallelism passes round its ring (:func:`_context_parallel`)."""
    gemm_dtype: str | None = None
    """A low-precision recipe's dtype for the layers' linear GEMMs (None: the compute
    dtype's peak for every GEMM; :class:`.optimizers.PrecisionRecipe`)."""
    quantize_bytes_per_element: float = 0.0
    """HBM bytes per GEMM operand element the recipe quantizes, per pass."""


@cache
def step_inputs_of(arch: Architecture, training_inputs: TrainingInputs) -> StepInputs:
    """:class:`StepInputs` of a model trained with ``training_inputs``."""
    ti = training_inputs
    rank = ti.effective_lora_rank
    whole = stage_params(
        arch, ti, layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    targets = [t for t in ti.lora_targets if t != "gate" or arch.gated]
    recipe = get_precision(ti.precision)
    return StepInputs(
        flash_attention=ti.flash_attention,
        heads=float(arch.heads),
        head_dim=float(arch.q_size // max(arch.heads, 1)),
        frozen=rank is not None,
        adapter_params=float(whole.lora_params) if rank is not None else 0.0,
        lora_rank=float(rank or 0),
        adapted_matrices_per_layer=float(len(targets)) if rank is not None else 0.0,
        layers=float(arch.layers),
        dequantised_params=float(whole.layer_matrix_params) if ti.qlora else 0.0,
        optimizer_extra_bytes_per_param=mixed_precision_optimizer_extra_bytes(ti.precision),
        kv_width=float(_kv_width(arch)),
        gemm_dtype=recipe.gemm_dtype,
        quantize_bytes_per_element=recipe.quantize_bytes_per_element,
    )


def _kv_width(arch: Architecture) -> int:
    """Keys and values per token per layer, all heads: 2 · kv_heads · head_dim; with MLA
    the up-projected keys (nope + rope) and values of every head, which Megatron-Core's
    context-parallel attention receives (the latent is expanded before the core
    attention)."""
    if arch.mla is not None:
        m = arch.mla
        return arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    return 2 * arch.kv_size


def mixed_precision_optimizer_extra_bytes(precision: str) -> float:
    """HBM bytes per parameter a mixed-precision optimizer step moves besides Adam's update
    of the fp32 master weights and moments (which :func:`.workload.
    optimizer_step_bytes_per_param` prices: read the gradient, read and write 12 bytes of
    state, write the 16-bit weight).

    Megatron-LM's ``Float16OptimizerWithFloat16Params.step`` (NVIDIA/Megatron-LM@fd443f26
    megatron/core/optimizer/optimizer.py; DeepSpeed's FP16_Optimizer does the same passes):
    copy the 16-bit gradients into fp32 main gradients (read G, write 4) that Adam then reads
    in fp32 (+4 − G), unscale them and check for inf/NaN with fp16 loss scaling
    (``_amp_foreach_non_finite_check_and_unscale_``: read 4, write 4), the gradient norm
    for clipping (``clip_grad_norm_fp32``: read 4), and copy the fp32 master weights back
    into the 16-bit model weights (read 4, besides the write Adam's count has): 8 + 8 + 4 + 4
    = 24 bytes for ``mixed_fp16``, 16 for ``mixed_bf16``, 8 with fp32 main gradients
    (Megatron-Core's ``mixed_bf16_fp32_grads``: no copy), 4 (the norm) without a master
    copy."""
    recipe = get_precision(precision)
    grad = recipe.gradients_bytes
    norm = 4.0
    if recipe.master_bytes <= 0:
        return norm
    copy = (grad + 4.0 + (4.0 - grad)) if grad < 4.0 else 0.0
    unscale = 8.0 if recipe.weights_dtype == "fp16" else 0.0
    return copy + unscale + norm + 4.0


def _replicas_at_work(
    global_batch: float, dp: FloatArray, b: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The data-parallel replicas that hold work and each one's micro-batches per step:
    replicas beyond the batch hold no sequence and sit out (at least one micro-batch each);
    m = global batch ÷ (working replicas · micro-batch)."""
    dp_work = np.minimum(dp, np.maximum(1.0, np.floor(global_batch / b)))
    return dp_work, global_batch / (dp_work * b)


def microbatches_per_step(global_batch: float, lay: Layouts) -> FloatArray:
    """Micro-batches per step of each layout, as :func:`evaluate_layouts` counts them."""
    return _replicas_at_work(global_batch, lay.as_float("dp"), lay.as_float("micro_batch"))[1]


def evaluate_layouts(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    recipe: MemoryTerms | None = None,
    step_inputs: StepInputs | None = None,
) -> dict[str, FloatArray]:
    """Price every layout: step time and its breakdown, comm bytes, MFU, HFU, memory screen.

    Step-time model (all per GPU, per optimizer step):

    - one micro-batch's GPU work on the fullest stage, t_gpu:
      - GEMMs: each weight GEMM's FLOPs at peak × its own efficiency
        (:func:`.comm.gemm_efficiency`: the large-size kernel efficiency × wave quantisation
        over the SMs × a size term), the attention core at the fused attention kernel's rate
        (:data:`.comm.ATTENTION_EFFICIENCY`), × hardware/model FLOPs of the recompute policy,
        × ⌈L/(p·v)⌉·p·v/L (the fullest stage sets the pace);
      - the memory-bound kernels (norms, activation functions, rotary, softmax/dropout when
        not flash, residual adds): bytes ÷ (HBM bandwidth · MEMORY_BANDWIDTH_ACHIEVED_FRACTION),
        on the same CUDA stream as the GEMMs, so added (Ivanov et al. 2021, arXiv:2007.00072);
      - exposed tensor-parallel time (1 − TP overlap) · (bytes ÷ link + collectives ×
        latency): 4 all-reduces per layer (8 all-gathers/reduce-scatters with sequence
        parallelism), each priced with NCCL's latency model (:func:`.comm.
        collective_latency_seconds`); a TP group larger than a node uses the network as
        NCCL's rings do (:meth:`.comm.Links.group_bandwidth`, hierarchical: each ring
        enters and leaves a node once, its channels spread over the node's NICs, so a rank
        gets up to gpus-per-node × its NIC share, capped by NVLink). The nanotron sweep's
        tp 16 runs without a pipeline bear that out: their time per layer grows by ~1 ms
        per sequence of micro-batch (1B), i.e. ~150-200 GB/s per rank, where one NIC's
        share would be 50 GB/s at most;
      - pipeline point-to-point: bytes ÷ link + 2·v sends × P2P latency (+ a network step
        when stages sit on different nodes), per micro-batch; the MoE all-to-all, less the
        share ``ep_overlap`` a schedule hides (DeepSeek-V3's DualPipe, arXiv:2412.19437
        section 3.2.1);
    - context parallelism (cp > 1): every per-GPU term above on s·b/cp tokens (each GPU
      holds that share of every sequence; GPUs = tp·cp·pp·dp), plus the K/V ring's time
      left over after the attention kernels it overlaps (:func:`_context_parallel`);
    - the host: a micro-batch cannot finish before the CPU has launched its kernels: the
      larger of ⌈L/(p·v)⌉·v layers × the stack's host seconds per layer and the launch
      floor, (those layers × the kernels each launches + the head's and embedding's) ×
      :data:`.comm.HOST_SECONDS_PER_KERNEL_LAUNCH` (:func:`_launch_seconds`, kernel counts
      read from Megatron-LM's GPT layer): t_mb = max(t_gpu, t_host);
      the difference is reported as ``overhead``. When the pipeline spans nodes
      (p > 1 and t·d·p > GPUs per node) a stack with host-synchronous pipeline sends
      (nanotron) adds tp × its ``pipeline_spanning_nodes_host_seconds_per_layer_per_tp``
      to each layer's floor (:data:`.stacks.PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_
      PER_TP_NANOTRON`: measured on the sweep, 0 for the other stacks);
    - pipeline: (m + (p−1)/v) · t_mb (Narayanan et al. 2021 section 2.2: bubble (p−1)/(v·m)
      of the ideal time);
    - data parallel (:func:`_data_parallel`): gradients reduced bucket by bucket (the
      stack's bucket size), each collective latency + bytes ÷ link; the buckets are hidden
      behind DP_OVERLAP × the backward compute (+ the GPU's idle time when the launch floor
      sets the pace) that runs while they are issued (the last
      micro-batch for ZeRO-0/1, every micro-batch's backward for ZeRO-2, every micro-batch
      for ZeRO-3, whose per-layer gathers prefetch one layer ahead) but the last bucket is
      always exposed (it is ready only when the backward ends); ZeRO-1/2's parameter
      all-gather after the optimizer step is exposed; a stack that sums a tied embedding's
      gradient between the first and last stage after the flush (nanotron) adds that
      all-reduce, exposed (:func:`_tied_embedding_sync_seconds`, counted with the data-
      parallel time);
    - the optimizer step, once per step after the last backward: G + 2·O + W bytes per
      parameter this GPU steps, + the mixed-precision optimizer's own passes, ÷ HBM
      bandwidth (:func:`_optimizer_step_seconds`).

    ``step_inputs`` (:func:`step_inputs_of`): unfused attention priced as its batched GEMMs,
    fine-tuning (LoRA, QLoRA) as what it runs (:func:`_compute_seconds`); None: full
    training with fused attention and no optimizer passes beyond Adam's.

    tokens/s = global batch · s ÷ step; MFU = the estimate's model FLOPs/token (6·P, or with
    attention: :func:`llm_planner.core.quantities.flops.mfu_flops_per_token`) · tokens/s ÷
    (GPUs · peak); HFU = the FLOPs executed (matmuls, attention, recomputation) ÷ peak
    (Korthikanti et al. 2022 section 6; Chowdhery et al. 2022 Appendix B).
    """
    f64 = np.float64
    si = step_inputs or StepInputs()
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    b = lay.as_float("micro_batch")
    v = lay.as_float("v")
    tp_pp = tp * pp
    gpus = tp_pp * dp * lay.as_float("cp")
    # replicas beyond the batch hold no sequence and sit out (at least one micro-batch each)
    dp_work, m = _replicas_at_work(work.global_batch, dp, b)
    tokens_mb = work.seq_len * b / lay.as_float("cp")  # this GPU's share of the sequences
    hw_factor = np.asarray(work.hw_flops_factor, dtype=f64)[lay.recompute]
    peak = cluster.peak_flops
    # the slowest stage sets the pace: ceil(L/(p·v)) layers per chunk when L does not split
    chunk_layers = np.ceil(work.layers / (pp * v))
    balanced = cluster.balance_pipeline_head
    if balanced is None:
        balanced = work.stack.pipeline_balances_head
    fullest_layers, fullest_head = _fullest_stage(work, pp, v, balanced=balanced)
    stage_tokens = tokens_mb * fullest_layers / (work.layers * tp)  # s·b·(layers share) ÷ t
    t_c, t_mem = _compute_seconds(
        work, cluster, lay, stage_tokens, tokens_mb, head_on_stage=fullest_head, step_inputs=si
    )
    t_opt = _optimizer_step_seconds(work, lay, cluster, tp_pp, si)

    links = cluster.links
    layers_stage = work.layers / pp
    full = lay.recompute == 2
    regathers = lay.sp & work.stack.tp_backward_regathers_input
    tp_bytes_mb = layers_stage * comm.tensor_parallel_bytes_per_layer(
        tp, tokens_mb, work.hidden, full, regathers
    )
    tp_lat_mb = _tensor_parallel_latency(
        cluster,
        lay,
        chunk_layers * v,
        full,
        regathers=regathers,
        network_step=work.stack.tp_network_step_latency_seconds,
    )
    t_tp = (tp_bytes_mb / links.group_bandwidth(1.0, tp) + tp_lat_mb) * (1.0 - cluster.tp_overlap)
    pp_bytes_mb, t_pp, ep_bytes_mb, t_ep = _pipeline_and_experts(work, cluster, lay, tokens_mb)

    dp_bytes, t_dp, t_last, t_gather = _data_parallel(work, lay, cluster, m, dp_work, si=si)
    # (np.where nested: np.select's first true condition, without its per-call set-up)
    window_share = np.where(
        lay.zero <= 1, comm.BACKWARD_SHARE, np.where(lay.zero == 2, comm.BACKWARD_SHARE * m, m)
    )
    t_host, t_launch = _host_floor(
        work, cluster, lay, chunk_layers * v, head_on_stage=fullest_head, si=si
    )
    cp_bytes_mb, t_cp = _context_parallel(
        work, cluster, lay, tokens_mb, layers=chunk_layers * v, si=si
    )
    t_gpu = t_c + t_tp + t_pp + t_ep + t_cp
    # when the launches set the pace the backward lasts longer by the GPU's idle time
    hidden_by_compute = (
        cluster.dp_overlap * window_share * (t_c + np.maximum(t_launch - t_gpu, 0.0))
    )
    exposed_dp = np.maximum(t_last, t_dp - t_gather - hidden_by_compute) + t_gather

    t_mb = np.maximum(t_gpu, t_host)
    bubble = comm.pipeline_bubble_fraction(pp, m, v)
    slots = m + (pp - 1.0) / v
    exposed_dp = exposed_dp + _tied_embedding_sync_seconds(work, cluster, lay)
    step = slots * t_mb + exposed_dp + t_opt
    tokens_per_s = work.global_batch * work.seq_len / step
    mfu = work.mfu_flops_per_token * tokens_per_s / (gpus * peak)
    hfu = _executed_flops_per_token(work, lay, si, hw_factor) * tokens_per_s / (gpus * peak)

    out: dict[str, FloatArray] = {
        "microbatches": m,
        "bubble_fraction": bubble,
        "step_seconds": step,
        "tokens_per_s": tokens_per_s,
        "mfu": mfu,
        "hfu": hfu,
        "time_compute": m * t_c + t_opt,
        "time_memory_bound": m * t_mem + t_opt,
        "time_bubble": (slots - m) * t_mb,
        "time_tensor_parallel": m * t_tp,
        "time_pipeline_p2p": m * t_pp,
        "time_expert_all_to_all": m * t_ep,
        "time_context_parallel": m * t_cp,
        "time_data_parallel": exposed_dp,
        "time_data_parallel_total": t_dp,
        "time_overhead": m * (t_mb - t_gpu),
        "time_gemm_attention": m * (t_c - t_mem),
        "comm_tp_bytes": m * tp_bytes_mb,
        "comm_pp_bytes": m * pp_bytes_mb,
        "comm_ep_bytes": m * ep_bytes_mb,
        "comm_cp_bytes": m * cp_bytes_mb,
        "comm_dp_bytes": dp_bytes,
    }
    out["comm_bytes_per_step"] = (
        out["comm_tp_bytes"]
        + out["comm_pp_bytes"]
        + out["comm_ep_bytes"]
        + out["comm_cp_bytes"]
        + dp_bytes
    )
    if recipe is not None:
        out.update(memory_screen(work, lay, recipe, m=m))
    return out


def _pipeline_and_experts(
    work: Workload, cluster: Cluster, lay: Layouts, tokens_mb: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(bytes, seconds) per micro-batch of the pipeline sends and of the MoE all-to-all."""
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    ep = lay.as_float("ep")
    v = lay.as_float("v")
    links = cluster.links
    g = float(cluster.gpus_per_node)
    pp_bytes_mb = comm.pipeline_p2p_bytes_per_microbatch(pp, tp, tokens_mb, work.hidden, v)
    stage_ranks = tp * lay.as_float("cp") * dp  # Megatron's rank order tp-cp-ep-dp-pp
    pp_inside = stage_ranks * pp <= g
    pp_bw = np.where(
        pp_inside, links.intra_bytes_per_s, links.group_bandwidth(stage_ranks, 2.0, False)
    )
    p2p_latency = cluster.base_latency + np.where(pp_inside, 0.0, cluster.inter_p2p_latency)
    t_pp = pp_bytes_mb / pp_bw + np.where(pp > 1, 2.0 * v * p2p_latency, 0.0)
    if work.moe_layers > 0:
        ep_bytes_mb = (work.moe_layers / pp) * comm.moe_all_to_all_bytes_per_layer(
            ep, tp, tokens_mb, work.hidden, work.top_k
        )
        t_ep = ep_bytes_mb / links.group_bandwidth(tp, ep, False) * (1.0 - cluster.ep_overlap)
    else:
        ep_bytes_mb = np.zeros_like(tp)
        t_ep = np.zeros_like(tp)

    return pp_bytes_mb, np.asarray(t_pp), ep_bytes_mb, np.asarray(t_ep)


def _context_parallel(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    tokens_mb: FloatArray,
    *,
    layers: FloatArray,
    si: StepInputs,
) -> tuple[FloatArray, FloatArray]:
    """(bytes, exposed seconds) per micro-batch of context parallelism's K/V ring on the
    fullest stage (``layers`` layers; ``tokens_mb`` = s·b/cp, this GPU's tokens).

    Megatron-Core's default ``cp_comm_type = "p2p"`` (NVIDIA/Megatron-LM@d98e8a64
    megatron/core/transformer/transformer_config.py lines 1030-1044: "Exchange KV chunks with
    P2P communications in ring topology. P2P is async and can be overlapped with attention
    compute"; docs/user-guide/features/context_parallel.md: the all-gather of K/V in the
    forward and the reduce-scatter of their gradients in the backward run as ring P2P, and
    K/V are gathered again in the backward rather than stored). Per layer each GPU sends
    cp − 1 chunks of its s·b/cp tokens' keys and values (``si.kv_width`` elements per token
    ÷ tp: the K/V heads are split by tensor parallelism) in the forward, the same again in
    the backward plus as many K/V gradients, and once more when full recomputation replays
    the forward: (3, or 4) · (cp − 1) · s·b/cp · kv_width/tp · 2 bytes (16-bit K/V and
    gradients: an assumption). The ring spans the cp group, ranks tp apart (Megatron-Core's
    order tp-cp-ep-dp-pp, parallel_state.py line 617), on the link that group spans
    (:meth:`.comm.Links.group_bandwidth`, point-to-point), each of the (cp − 1) steps a P2P
    latency. Overlapped with the attention kernels of the same layers: exposed = max(0,
    ring time − attention time) (the fused attention's FLOPs of this GPU's tokens at the
    attention kernel's rate). Causal load balance as Megatron does it (each rank holds
    chunks i and 2·cp − 1 − i of 2·cp) makes every rank's attention work 1/cp of the
    sequence's, which the per-token attention FLOPs × s·b/cp tokens already price."""
    tp = lay.as_float("tp")
    cp = lay.as_float("cp")
    if not np.any(cp > 1.0) or si.kv_width <= 0.0:
        zero = np.zeros_like(tp)
        return zero, zero
    passes = np.where(lay.recompute == 2, 4.0, 3.0)
    steps = passes * (cp - 1.0) * layers
    bytes_mb = steps * tokens_mb * si.kv_width / tp * comm.COMM_BYTES_PER_ELEMENT
    links = cluster.links
    spans = tp * cp > float(cluster.gpus_per_node)
    latency = cluster.base_latency + np.where(spans, cluster.inter_p2p_latency, 0.0)
    t_ring = bytes_mb / links.group_bandwidth(tp, cp, False) + steps * latency
    attention_eff = cluster.attention_efficiency or comm.ATTENTION_EFFICIENCY[
        work.stack.flash_attention_generation
    ].get(cluster.generation, cluster.kernel_efficiency)
    hw = np.take(np.asarray(work.hw_flops_factor, dtype=np.float64), lay.recompute)
    attention = min(work.attention_flops_per_token, work.model_flops_per_token)
    t_attention = (
        layers
        / work.layers
        * tokens_mb
        / tp
        * attention
        * hw
        / (cluster.peak_flops * attention_eff)
    )
    exposed = np.where(cp > 1.0, np.maximum(t_ring - t_attention, 0.0), 0.0)
    return np.where(cp > 1.0, bytes_mb, 0.0), exposed


def _host_seconds(work: Workload, cluster: Cluster, lay: Layouts, layers: FloatArray) -> FloatArray:
    """The host's floor under one micro-batch on the fullest stage: ``layers`` (⌈L/(p·v)⌉·v)
    × the stack's host seconds per layer (or the cluster's override), plus, when the
    pipeline spans nodes (p > 1 and t·d·p > GPUs per node), tp × the stack's
    ``pipeline_spanning_nodes_host_seconds_per_layer_per_tp`` per layer (nanotron's
    host-synchronous pipeline: :data:`.stacks.PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_
    LAYER_PER_TP_NANOTRON`; 0 for the other stacks)."""
    host: float | FloatArray = work.stack.host_seconds_per_layer
    if cluster.host_seconds_per_layer is not None:
        host = cluster.host_seconds_per_layer
    per_tp = work.stack.pipeline_spanning_nodes_host_seconds_per_layer_per_tp
    if per_tp > 0.0:
        tp = lay.as_float("tp")
        pp = lay.as_float("pp")
        gpus = tp * pp * lay.as_float("dp") * lay.as_float("cp")
        spans_nodes = (pp > 1.0) & (gpus > float(cluster.gpus_per_node))
        host = host + np.where(spans_nodes, per_tp * tp, 0.0)
    return np.asarray(layers * host)


def _host_floor(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    layers: FloatArray,
    *,
    head_on_stage: FloatArray,
    si: StepInputs,
) -> tuple[FloatArray, FloatArray]:
    """(the host's floor under a micro-batch, the launch floor where it is the larger): the
    larger of the stack's host time (:func:`_host_seconds`) and the launch floor
    (:func:`_launch_seconds`); the second value is 0 where the stack's host time is the
    larger (a stack constant fitted with the compute-only DP overlap window, nanotron's,
    keeps that window)."""
    launch = _launch_seconds(cluster, lay, layers, head_on_stage, si)
    stack_host = _host_seconds(work, cluster, lay, layers)
    binding_launch = np.where(launch > stack_host, launch, 0.0)
    return np.asarray(np.maximum(stack_host, launch)), np.asarray(binding_launch)


def _layer_launches(lay: Layouts, si: StepInputs | None = None) -> FloatArray:
    """Kernels one layer launches per micro-batch, forward, replay and backward.

    :data:`LAYER_KERNELS_FORWARD` (twice under full recomputation: the backward replays the
    forward, Megatron's ``CheckpointFunction``), + :data:`LAYER_KERNELS_ATTENTION_CORE`
    under selective recomputation, + :data:`LAYER_KERNELS_BACKWARD`, + the tensor-parallel
    collectives when tp > 1 (2 all-reduces forward, 2 backward, Shoeybi et al. 2019
    section 3; with sequence parallelism 4 all-gathers/reduce-scatters each way,
    Korthikanti et al. 2022 section 4.2.2; the replayed forward's again under full
    recomputation). Fine-tuning (``si.frozen``): no weight-gradient GEMM for the 4 base
    linears, + :data:`ADAPTER_KERNELS_FORWARD` per adapted matrix per forward pass and
    :data:`ADAPTER_KERNELS_BACKWARD` in the backward; QLoRA one dequantisation kernel per
    adapted matrix per use (forward, input gradient, replay)."""
    rc = lay.recompute
    forward_passes = np.where(rc == 2, 2.0, 1.0)
    replay = np.where(rc == 1, LAYER_KERNELS_ATTENTION_CORE, 0.0)
    collectives = np.where(lay.sp, 4.0, 2.0) * (forward_passes + 1.0)
    collectives = np.where(lay.as_float("tp") > 1.0, collectives, 0.0)
    launches = (
        LAYER_KERNELS_FORWARD * forward_passes + replay + LAYER_KERNELS_BACKWARD + collectives
    )
    if si is not None and si.frozen:
        adapted = si.adapted_matrices_per_layer
        launches = (
            launches
            - 4.0
            + adapted * (ADAPTER_KERNELS_FORWARD * forward_passes + ADAPTER_KERNELS_BACKWARD)
        )
        if si.dequantised_params > 0:
            launches = launches + adapted * (forward_passes + 1.0)
    return np.asarray(launches)


ADAPTER_KERNELS_FORWARD = 4.0
"""Kernels a LoRA adapter launches in the forward: A, B, the scale and the add to the base
output (PEFT ``lora.Linear.forward``; dropout 0 is an identity)."""

ADAPTER_KERNELS_BACKWARD = 6.0
"""Kernels of its backward: input and weight gradients of A and B (4), the scale's gradient
and the sum of the two branches' input gradients (2)."""


def _launch_seconds(
    cluster: Cluster,
    lay: Layouts,
    layers: FloatArray,
    head_on_stage: FloatArray,
    si: StepInputs | None = None,
) -> FloatArray:
    """The host's launch floor under one micro-batch on the fullest stage: (``layers``
    (⌈L/(p·v)⌉·v) × :func:`_layer_launches` + :data:`HEAD_KERNELS` where the stage holds
    the output head + :data:`EMBEDDING_KERNELS` where it also holds the embedding (p = 1))
    × :data:`.comm.HOST_SECONDS_PER_KERNEL_LAUNCH`. A scenario that sets its host time per
    layer (``ParallelInputs.host_seconds_per_layer``) replaces this floor as it replaces the
    stack's."""
    if cluster.host_seconds_per_layer is not None:
        return np.zeros_like(layers)
    outside = head_on_stage * HEAD_KERNELS + np.where(
        lay.as_float("pp") <= 1.0, EMBEDDING_KERNELS, 0.0
    )
    kernels = layers * _layer_launches(lay, si) + outside
    return np.asarray(kernels * comm.HOST_SECONDS_PER_KERNEL_LAUNCH)


def _tied_embedding_sync_seconds(work: Workload, cluster: Cluster, lay: Layouts) -> FloatArray:
    """Exposed time per step of summing a tied embedding's gradient between the first and the
    last pipeline stage, for a stack that does it after the pipeline flush
    (``StackProfile.tied_embedding_sync_exposed``; nanotron: src/nanotron/trainer.py
    ``training_step`` calls ``sync_tied_weights_gradients`` after the pipeline and the DP
    sync, not overlapped; src/nanotron/parallel/tied_parameters.py all-reduces the gradient
    buffers, fp32 under its FP32GradientAccumulator, over the ranks that hold the tied copy).

    One ring all-reduce over 2 ranks of V·h/tp elements in the stack's reduce dtype: each
    rank sends and receives the whole buffer once, bytes ÷ the point-to-point link between
    the two stages (the network when the job spans nodes: the last stage is on another node)
    + NCCL's latency. 0 without a pipeline or an untied head."""
    pp = lay.as_float("pp")
    if not work.stack.tied_embedding_sync_exposed or work.tied_embedding_params <= 0:
        return np.zeros_like(pp)
    tp = lay.as_float("tp")
    dp = lay.as_float("dp")
    g = float(cluster.gpus_per_node)
    links = cluster.links
    message = work.tied_embedding_params / tp * work.gradient_reduce_bytes
    stage_ranks = tp * lay.as_float("cp") * dp  # Megatron's rank order tp-cp-ep-dp-pp
    inside = stage_ranks * pp <= g
    bw = np.where(inside, links.intra_bytes_per_s, links.group_bandwidth(stage_ranks, 2.0, False))
    nodes = np.where(inside, 1.0, 2.0)
    latency = comm.collective_latency_seconds(
        "all_reduce",
        2.0,
        nodes,
        intra_step=cluster.intra_step_latency,
        inter_step=cluster.inter_step_latency,
        base=cluster.base_latency,
    )
    seconds = comm.ring_all_reduce_bytes(2.0, message) / bw + latency
    return np.asarray(np.where(pp > 1.0, seconds, 0.0))


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
    cost is the fullest. Computed once per distinct (p, v)."""
    layers = np.ceil(work.layers / (pp * v)) * v
    head = np.ones_like(pp)
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


def _tensor_parallel_latency(
    cluster: Cluster,
    lay: Layouts,
    layers: FloatArray,
    full_recompute: npt.NDArray[np.bool_],
    *,
    regathers: npt.NDArray[np.bool_],
    network_step: float | None,
) -> FloatArray:
    """Latency of one micro-batch's tensor-parallel collectives on the fullest stage.

    Per layer: 2 all-reduces forward and 2 backward (Shoeybi et al. 2019 section 3), or with
    sequence parallelism 2 all-gathers + 2 reduce-scatters forward and as many backward
    (Korthikanti et al. 2022 section 4.2.2); full recomputation replays the forward's;
    ``regathers``: 2 more all-gathers in the backward (the column-parallel linears gather
    their input again, :attr:`.stacks.StackProfile.tp_backward_regathers_input`).
    Each costs NCCL's latency over tp ranks on the nodes the group spans; a network step
    costs the stack's ``network_step`` (:attr:`.stacks.StackProfile.
    tp_network_step_latency_seconds`) where it sets one, else the cluster's."""
    tp = lay.as_float("tp")
    nodes = comm.nodes_spanned(1.0, tp, cluster.gpus_per_node)
    intra, inter = cluster.intra_step_latency, cluster.inter_step_latency
    if network_step is not None:
        inter = network_step
    base = cluster.base_latency
    all_reduce = comm.collective_latency_seconds(
        "all_reduce", tp, nodes, intra_step=intra, inter_step=inter, base=base
    )
    gather = comm.collective_latency_seconds(
        "all_gather", tp, nodes, intra_step=intra, inter_step=inter, base=base
    )
    passes = np.where(full_recompute, 3.0, 2.0)
    per_layer = np.where(lay.sp, 4.0 * gather, 2.0 * all_reduce) * passes
    per_layer = per_layer + np.where(regathers, 2.0 * gather, 0.0)
    return np.asarray(layers * per_layer)


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
    and the gradient accumulation of every micro-batch (the stack's bytes per parameter).

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
    si = step_inputs
    hw = np.take(np.asarray(work.hw_flops_factor, dtype=np.float64), lay.recompute)
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
    full = lay.recompute == 2
    if si.adapter_params > 0:
        adapter_flops = si.adapter_params * np.where(full, 8.0, 6.0)
        inverse_adapter = (
            _adapter_inverse_efficiency(cluster, tokens_mb, si)
            if work.gemms and cluster.sms > 0
            else 1.0 / cluster.kernel_efficiency
        )
        per_token = per_token + layers_share * adapter_flops * inverse_adapter
    t_gemm = tokens_mb / tp * per_token / cluster.peak_flops
    t_mem = _elementwise_seconds(work, lay, cluster, stage_tokens) + _quantize_seconds(
        work, cluster, stage_tokens, layer_gemm, si
    )
    stack = work.stack
    if work.vocab:
        t_mem = t_mem + head_on_stage * tokens_mb * work.vocab * stack.loss_bytes_per_logit / (
            tp * cluster.memory_bytes_per_s
        )
    trained = si.adapter_params if si.frozen else work.params_total
    accumulate = trained / (tp * pp) * stack.grad_accumulation_bytes_per_param
    t_mem = t_mem + accumulate / cluster.memory_bytes_per_s
    if si.adapter_params > 0 and si.lora_rank > 0:
        merge_bytes = ADAPTER_MERGE_BYTES_PER_OUTPUT * si.adapter_params / (2.0 * si.lora_rank)
        t_mem = t_mem + stage_tokens * merge_bytes / cluster.memory_bytes_per_s
    if si.dequantised_params > 0:
        uses = np.where(full, 3.0, 2.0)
        per_use = NF4_DOUBLE_QUANT_BITS / 8.0 + comm.COMM_BYTES_PER_ELEMENT
        dequant = si.dequantised_params * layers_share / tp * per_use * uses
        t_mem = t_mem + dequant / cluster.memory_bytes_per_s
    return np.asarray(t_gemm + t_mem), np.asarray(t_mem)


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
        executed = executed + si.adapter_params * np.where(lay.recompute == 2, 8.0, 6.0)
    return np.asarray(executed)


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
    to them (k/E · ep · s·b rows per local expert). Evaluated once per distinct (tokens, tp,
    ep, cp): the search's million layouts share a few hundred."""
    tp = lay.as_float("tp")
    if not work.gemms or cluster.sms <= 0:
        flat = np.full_like(tp, 1.0 / cluster.kernel_efficiency)
        return flat, flat
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
    for n_dim, k_dim, share, n_tp, k_tp, expert in work.gemms:
        rows = tok * work.moe_tokens_share * e if expert else tok
        n_ = n_dim / t if n_tp else np.full_like(t, n_dim)
        k_ = k_dim / t if k_tp else np.full_like(t, k_dim)
        passes = (
            eff(rows, n_, k_, lp),
            eff(rows, k_, n_, lp),
            eff(k_, n_, rows, lp),
        )
        inverse = inverse + share * sum(1.0 / e for e in passes) / 3.0
    h, v = float(work.hidden), float(work.vocab or 1)
    head_n = v / t
    head = (1.0 / eff(tok, head_n, h) + 1.0 / eff(tok, h, head_n) + 1.0 / eff(h, head_n, tok)) / 3.0
    shape = (len(b_values), len(t_values), len(e_values), len(c_values))
    flat_index = np.ravel_multi_index((b_code, t_code, e_code, c_code), shape)
    return np.asarray(inverse[flat_index]), np.asarray(head[flat_index])


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
    adapters' only under LoRA)."""
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


def _data_parallel(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    m: FloatArray,
    dp_work: FloatArray,
    *,
    si: StepInputs | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Data-parallel bytes per GPU per step, their time before overlap, the last bucket's
    time (always exposed) and the parameter all-gather after the optimizer step.
    ``dp_work``: the replicas that hold a sequence (dp capped at the global batch ÷ b).

    Dense parameters are synchronised over the ZeRO shard group (plus an all-reduce of the
    shards across replicas for HYBRID_SHARD); expert parameters over the expert-data-parallel
    group dp/ep (Megatron-LM's expert data parallelism). Gradients travel in the stack's
    reduce dtype (nanotron and torchtitan reduce in fp32), parameters in 16 bits. The
    gradients go in buckets of the stack's size (a stack without one reduces one layer per
    bucket, as FSDP2 does per block); each bucket's collective costs NCCL's latency
    (:func:`.comm.collective_latency_seconds`) + bytes ÷ link; ZeRO-3 all-gathers every
    layer before its forward and its backward. Fine-tuning (``si.frozen``): only the
    adapters' gradients are reduced and, after a ZeRO-1/2 step, gathered; ZeRO-3 still
    gathers the frozen weights before each use.
    """
    links = cluster.links
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = dp_work * lay.as_float("cp")  # gradients reduce over the dp·cp group (Megatron)
    ep = lay.as_float("ep")
    params_gpu_dense, params_gpu_expert = _trained_params_per_gpu(work, lay, si)
    shard = np.minimum(lay.as_float("shard"), dp)
    replicas = dp / shard
    gbytes = work.gradient_reduce_bytes
    pbytes = comm.COMM_BYTES_PER_ELEMENT
    gathered, experts = _gathered_params_per_gpu(work, lay, params_gpu_dense, params_gpu_expert)
    dp_bytes = comm.data_parallel_bytes(
        lay.zero, shard, params_gpu_dense * gbytes, gathered * pbytes, m
    )
    if work.params_expert > 0:
        expert_dp = np.minimum(np.maximum(dp / ep, 1.0), shard)
        dp_bytes = dp_bytes + comm.data_parallel_bytes(
            lay.zero, expert_dp, params_gpu_expert * gbytes, experts * pbytes, m
        )
    bw = links.group_bandwidth(tp, shard)
    t_dp = dp_bytes / bw
    # latency: buckets of gradients, per-layer gathers under ZeRO-3
    g = cluster.gpus_per_node
    nodes = comm.nodes_spanned(tp, shard, g)
    intra, inter = cluster.intra_step_latency, cluster.inter_step_latency
    base = cluster.base_latency
    lat_ar = comm.collective_latency_seconds(
        "all_reduce", shard, nodes, intra_step=intra, inter_step=inter, base=base
    )
    lat_g = comm.collective_latency_seconds(
        "all_gather", shard, nodes, intra_step=intra, inter_step=inter, base=base
    )
    stack = work.stack
    grad_gpu = (params_gpu_dense + params_gpu_expert) * gbytes
    layer_grad = np.maximum(work.layer_params / tp * gbytes, 1.0)
    bucket = cluster.dp_bucket_bytes or stack.dp_bucket_bytes
    if bucket is None:
        bucket_bytes = layer_grad
    else:
        grows = stack.dp_bucket_params_per_rank * dp * gbytes
        bucket_bytes = np.maximum(float(bucket), grows)
    buckets = np.maximum(1.0, np.ceil(grad_gpu / bucket_bytes))
    layers_gpu = np.ceil(work.layers / pp)
    count_lat = np.where(
        lay.zero == 0,
        buckets * lat_ar,
        np.where(
            lay.zero == 1,
            buckets * lat_g + lat_g,
            np.where(
                lay.zero == 2,
                m * buckets * lat_g + lat_g,
                m * (buckets + 2.0 * layers_gpu) * lat_g,
            ),
        ),
    )
    single = shard <= 1
    t_dp = np.where(single, 0.0, t_dp + count_lat)
    reduce_share = np.where(lay.zero == 0, 2.0, 1.0) * (shard - 1.0) / np.maximum(shard, 1.0)
    last_bucket = np.minimum(bucket_bytes, grad_gpu) * reduce_share / bw + np.where(
        lay.zero == 0, lat_ar, lat_g
    )
    t_last = np.where(single, 0.0, last_bucket)
    gather_bytes = comm.ring_gather_bytes(shard, (params_gpu_dense + params_gpu_expert) * pbytes)
    t_gather = np.where(
        single | (lay.zero == 0) | (lay.zero == 3), 0.0, gather_bytes / bw + buckets * lat_g
    )
    if stack.zero1_syncs_whole_buffer and work.params_expert <= 0:
        dp_bytes, t_dp, t_last, t_gather = _zero1_whole_buffer(
            work,
            lay,
            (dp_bytes, t_dp, t_last, t_gather),
            shard=shard,
            grad_gpu=grad_gpu,
            gather_bytes=gather_bytes,
            bw=bw,
            latencies=(lat_ar, lat_g),
            layers_gpu=layers_gpu,
        )
    if np.any(replicas > 1):
        dense_bytes = params_gpu_dense * gbytes
        hybrid = np.where(
            replicas > 1, comm.ring_all_reduce_bytes(replicas, dense_bytes / shard), 0.0
        )
        t_dp = t_dp + hybrid / links.group_bandwidth(tp * shard, replicas)
        dp_bytes = dp_bytes + hybrid
    return dp_bytes, np.asarray(t_dp), np.asarray(t_last), np.asarray(t_gather)


def _trained_params_per_gpu(
    work: Workload, lay: Layouts, si: StepInputs | None
) -> tuple[FloatArray, FloatArray]:
    """(dense, routed-expert) parameters per GPU whose gradients are reduced: the model's
    ÷ (t·p) (experts ÷ ep more), or the adapters' only when the base is frozen."""
    tp_pp = lay.as_float("tp") * lay.as_float("pp")
    if si is not None and si.frozen:
        return np.asarray(si.adapter_params / tp_pp), np.zeros_like(tp_pp)
    dense = (work.params_total - work.params_expert) / tp_pp
    return np.asarray(dense), np.asarray(work.params_expert / (tp_pp * lay.as_float("ep")))


def _gathered_params_per_gpu(
    work: Workload, lay: Layouts, trained_dense: FloatArray, trained_expert: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(dense, routed-expert) parameters per GPU that the data-parallel group all-gathers:
    the trained ones after a ZeRO-1/2 step, every parameter (frozen ones included) before
    each use under ZeRO-3."""
    tp_pp = lay.as_float("tp") * lay.as_float("pp")
    zero3 = lay.zero == 3
    dense = np.where(zero3, (work.params_total - work.params_expert) / tp_pp, trained_dense)
    expert_all = work.params_expert / (tp_pp * lay.as_float("ep"))
    return np.asarray(dense), np.asarray(np.where(zero3, expert_all, trained_expert))


def _zero1_whole_buffer(
    work: Workload,
    lay: Layouts,
    parts: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    *,
    shard: FloatArray,
    grad_gpu: FloatArray,
    gather_bytes: FloatArray,
    bw: FloatArray,
    latencies: tuple[FloatArray, FloatArray],
    layers_gpu: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`_data_parallel`'s ``parts`` (bytes, seconds, last bucket, gather) with the
    ZeRO-1 layouts replaced by a ZeRO-1 that syncs its whole gradient buffer
    (``StackProfile.zero1_syncs_whole_buffer``: nanotron).

    huggingface/nanotron@0e0a27ea: with fp32 gradient accumulation and ZeRO-1 the model is
    not wrapped in DDP (src/nanotron/trainer.py ``make_ddp``); after the pipeline flush
    ``sync_gradients_across_dp(..., reduce_scatter=False)`` runs one ``dist.all_reduce`` of
    the whole contiguous fp32 gradient buffer (optim/gradient_accumulator.py), and after the
    optimizer step ``ZeroDistributedOptimizer._all_gather_params`` (optim/zero.py) one
    ``dist.all_gather`` of the updated bf16 shards, then a Python loop copying each rank's
    slice of each parameter back (distributed.py ``all_gather_coalesced``): the stack's
    ``zero1_gather_host_seconds_per_rank_per_layer`` × dp × the GPU's layers. Neither is
    overlapped with the backward: the all-reduce is the 'last bucket' (always exposed) and
    the gather is exposed after the step. One collective each: one NCCL latency each
    (``latencies`` = all-reduce, all-gather), bytes ÷ the DP link ``bw``."""
    dp_bytes, t_dp, t_last, t_gather = parts
    whole = (lay.zero == 1) & (shard > 1)
    lat_ar, lat_g = latencies
    reduce_bytes = comm.ring_all_reduce_bytes(shard, grad_gpu)
    t_reduce = reduce_bytes / bw + lat_ar
    unpack = work.stack.zero1_gather_host_seconds_per_rank_per_layer * shard * layers_gpu
    t_whole_gather = gather_bytes / bw + lat_g + unpack
    return (
        np.asarray(np.where(whole, reduce_bytes + gather_bytes, dp_bytes)),
        np.asarray(np.where(whole, t_reduce + t_whole_gather, t_dp)),
        np.asarray(np.where(whole, t_reduce, t_last)),
        np.asarray(np.where(whole, t_whole_gather, t_gather)),
    )


def bottleneck_of(row: dict[str, float]) -> str:
    """Name the largest non-compute part of a step, or 'compute' when compute dominates."""
    parts = {name: row.get(f"time_{name}", 0.0) for name in TIME_PARTS}
    overhead = {k: v for k, v in parts.items() if k != "compute"}
    worst = max(overhead, key=lambda k: overhead[k])
    total = sum(parts.values()) or 1.0
    if not all(math.isfinite(v) for v in parts.values()):
        return "— (a part of the step time could not be computed)"
    if overhead[worst] < 0.05 * total:
        return "compute"
    labels = {
        "bubble": "pipeline bubble",
        "tensor_parallel": "tensor-parallel all-reduce",
        "pipeline_p2p": "pipeline send/receive",
        "expert_all_to_all": "MoE all-to-all",
        "context_parallel": "context-parallel K/V ring",
        "data_parallel": "data-parallel gradient sync",
        "overhead": "host (CPU) launch overhead",
    }
    return f"{labels[worst]} ({100 * overhead[worst] / total:.0f}% of step)"
