"""The host's floor under a micro-batch: the kernels each part of the model launches and the
launch time they take (:mod:`.step_time`)."""

from __future__ import annotations

import numpy as np

from llm_planner.core.quantities import comm
from llm_planner.core.sections.parallelism.layout import COMPUTE_KEY, Layouts, priced_per_group
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
)

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


MOE_KERNELS_FORWARD = 29.0
"""Kernels an MoE block's forward launches besides its experts' GEMMs, with Megatron-Core's
all-to-all dispatcher and Transformer Engine's fused router and permutation
(``moe_router_fusion``, ``moe_permute_fusion``: what every Megatron-Bridge MoE preset runs,
tests/validation/megatron_bridge_recipes.py ``RELEASE_MOE_FUSION``): the router (7; the Bridge's
Megatron-LM, NVIDIA/Megatron-LM@0d8e0714 and @b0cc2706, megatron/core/transformer/moe/
router.py ``TopKRouter.forward``/``routing``/``_apply_aux_loss``: the gating GEMM, TE's
fused top-k with its softmax, its fused aux-loss scores, the tokens per expert, its fused
aux loss, the loss tracker's divide and add), the dispatcher's preprocessing
(token_dispatcher.py ``MoEAlltoAllTokenDispatcher.preprocess``: the per-expert counts,
their sums per rank, the all-gather of the counts over tp·ep, the local slice and its three
sums: 7; ``_maybe_dtoh_and_synchronize``: the 4 device-to-host copies of the split sizes),
the permutation, the all-to-alls of the tokens and of their probabilities and the
regrouping by local expert (5; moe_utils.py ``permute``, ``sort_chunks_by_idxs``), the
experts' input quantization, weighted SwiGLU and second quantization (experts.py
``TEGroupedMLP``: 3), and the combine (the regrouping back, the all-to-all, ``unpermute``:
3); tallied by hand in tests/core/test_moe_router_kernels.py. Unfused (Megatron-Core's
defaults) the router alone launches 21 more (PyTorch's top-k, softmaxes, scatters and the
loss's reductions), not priced: no calibration row runs it."""

MOE_KERNELS_BACKWARD = 30.0
"""The same block's backward besides its experts' GEMMs: the gradients of the kernels above
travel back through as many kernels (the all-to-alls, permutations, activation and router
each once; the quantizations of the output gradients twice, row- and column-wise)."""

MOE_GEMMS_PER_LOCAL_EXPERT = 6.0
"""Expert GEMM launches per local expert per micro-batch: fc1 and fc2 forward, and each
one's input and weight gradient. ``TEGroupedMLP`` hands Transformer Engine's
``GroupedLinear`` the rows of every local expert (``m_splits`` = tokens per local expert),
which runs one GEMM per expert."""

DENSE_MLP_KERNELS = 10.0
"""What the MoE block replaces of the dense layer's counts (:data:`LAYER_KERNELS_FORWARD`,
:data:`LAYER_KERNELS_BACKWARD`): fc1, bias-GeLU and fc2 forward (3), their four GEMM
gradients, the bias-GeLU gradient and the two bias-gradient reductions (7)."""


def _moe_launches(work: Workload, lay: Layouts) -> FloatArray:
    """Kernels an MoE layer launches per micro-batch beyond the dense layer's count, per
    layout: :data:`MOE_KERNELS_FORWARD` + :data:`MOE_KERNELS_BACKWARD` + ⌈E ÷ ep⌉ local
    experts × :data:`MOE_GEMMS_PER_LOCAL_EXPERT` − :data:`DENSE_MLP_KERNELS`; averaged over
    the layers (× MoE layers ÷ L). 0 for a dense model. A full recomputation replays the
    forward's (not counted: the Bridge recipes and Megatron's MoE defaults recompute
    selectively)."""
    if work.moe_layers <= 0 or work.num_experts <= 0:
        return np.zeros(len(lay.tp), dtype=np.float64)
    local = np.ceil(work.num_experts / lay.as_float("ep"))
    extra = MOE_KERNELS_FORWARD + MOE_KERNELS_BACKWARD + local * MOE_GEMMS_PER_LOCAL_EXPERT
    return np.asarray((extra - DENSE_MLP_KERNELS) * work.moe_layers / work.layers)


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
    (:func:`_launch_seconds`, plus an MoE layer's own kernels: :func:`_moe_launches`); the
    second value is 0 where the stack's host time is the larger (a stack constant fitted
    with the compute-only DP overlap window, nanotron's, keeps that window). CUDA graphs
    (``si.cuda_graphs``) take their captured kernels off the launch floor
    (:func:`_captured_launches`); a full-iteration graph takes all of them (one graph launch
    per step, the host idle while the GPU runs it)."""
    grouped = priced_per_group(  # reads tp, pp, ep, v, SP and the policy: once per group
        lay,
        COMPUTE_KEY,
        [layers, head_on_stage],
        lambda g, a: [_launch_floor(work, cluster, g, a[0], head_on_stage=a[1], si=si)],
    )
    launch = (
        grouped[0]
        if grouped is not None
        else _launch_floor(work, cluster, lay, layers, head_on_stage=head_on_stage, si=si)
    )
    stack_host = _host_seconds(work, cluster, lay, layers)
    binding_launch = np.where(launch > stack_host, launch, 0.0)
    return np.asarray(np.maximum(stack_host, launch)), np.asarray(binding_launch)


def _launch_floor(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    layers: FloatArray,
    *,
    head_on_stage: FloatArray,
    si: StepInputs,
) -> FloatArray:
    """:func:`_host_floor`'s launch floor: :func:`_launch_seconds`, plus an MoE layer's own
    kernels, less what CUDA graphs capture."""
    launch = _launch_seconds(cluster, lay, layers, head_on_stage, si)
    if work.moe_layers > 0 and cluster.host_seconds_per_layer is None:
        launch = launch + layers * _moe_launches(work, lay) * comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    if si.cuda_graphs == "full_iteration":
        launch = np.zeros_like(launch)
    elif si.cuda_graphs != "none" and cluster.host_seconds_per_layer is None:
        captured = _captured_launches(work, lay, si)
        launch = launch - layers * captured * comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    return launch


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


ATTENTION_KERNELS_FORWARD = 11.0
"""Of :data:`LAYER_KERNELS_FORWARD`, the kernels of the attention block (Megatron-Core's
``TransformerLayer._forward_attention``, what the ``attn`` graph captures): input LayerNorm,
QKV GEMM and bias, the query's reshape, scores, softmax, dropout, context, its permute, the
output projection and the bias-dropout-add. The other 5 are the MLP block's
(``_forward_mlp``: LayerNorm, fc1, bias-GeLU, fc2, bias-dropout-add)."""

MLP_KERNELS_BACKWARD = 18.0
"""Of :data:`LAYER_KERNELS_BACKWARD`, the MLP block's: fc1's and fc2's input and weight
gradients (4), their bias gradients (2), the bias-GeLU and bias-dropout-add gradients (2),
the LayerNorm backward (3), the residual sum (1) and the gradient accumulation into its six
parameter tensors (6). The rest of the count is the attention block's."""

MOE_ROUTER_KERNELS = 26.0
"""Of an MoE block's kernels (:data:`MOE_KERNELS_FORWARD`, :data:`MOE_KERNELS_BACKWARD`),
what the ``moe_router`` and ``moe_preprocess`` graphs take off the host: the fused
router's 7 and the preprocessing's 11 forward kernels (:data:`MOE_ROUTER_KERNELS_FORWARD`)
and the router's 8 gradient kernels (TE's four fused backward kernels, the aux-loss scaler's
2, the logits' two gradients summed, the gating GEMM's 2); the preprocessing has no
gradient. Tallied by hand in tests/core/test_moe_router_kernels.py, which also counts what
Transformer Engine's graph of that scope replaces call by call (transformer_layer.py
``_te_cuda_graph_capture``: also the pre-MLP norm and the first permutation with their
backward, while the device-to-host copies stay eager, and TE's ``Graphed`` copies the input
and the incoming gradients into its static buffers): 25 launches net at @0d8e0714, 27 at
@b0cc2706, against the 24 credited here (26 − :data:`GRAPH_LAUNCHES_PER_CAPTURE`). The
Bridge benchmarks' ``moe_router_force_load_balancing`` (RandomSTE: 2 more forward) is
not counted."""

GRAPH_LAUNCHES_PER_CAPTURE = 2.0
"""Graph launches that replace one captured callable's kernels per micro-batch: its forward
graph and its backward graph (Transformer Engine's ``make_graphed_callables`` and Megatron's
local ``CudaGraphManager`` record the two apart), each priced as one kernel launch."""


def _captured_launches(work: Workload, lay: Layouts, si: StepInputs) -> FloatArray:
    """Kernel launches per layer per micro-batch that per-layer CUDA graphs take off the
    host, net of the graph launches replacing them, averaged over the layers.

    Source: NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/transformer_layer.py
    ``_te_cuda_graph_capture`` (the attention block when ``attn`` is in
    ``cuda_graph_modules`` or the list is empty; the MLP/MoE block for an empty list, for
    ``mlp`` in a dense layer, for ``moe`` or ``moe_router`` in an MoE layer) and
    transformer_config.py ``__post_init__`` (``moe`` only with drop-and-pad MoE, ``mlp``
    refused when every layer is MoE, ``moe_preprocess`` only with ``moe_router``).

    - ``attn``: :data:`ATTENTION_KERNELS_FORWARD` + the backward's attention share
      (:data:`LAYER_KERNELS_BACKWARD` − :data:`MLP_KERNELS_BACKWARD`) + the selective replay
      (inside the graphed backward) + half the tensor-parallel collectives, − 2 graph
      launches (:data:`GRAPH_LAUNCHES_PER_CAPTURE`).
    - ``mlp``: the dense MLP block's (5 forward + :data:`MLP_KERNELS_BACKWARD` + half the
      collectives) − 2, in the dense layers only (share 1 − MoE layers ÷ L).
    - ``moe_router``: in the MoE layers :data:`MOE_ROUTER_KERNELS` − 2 (the Megatron-Bridge
      recipes' ``cuda_graph_scope = ["moe_router", "moe_preprocess"]``).
    - ``attn_moe_router``: ``attn`` + ``moe_router``.
    - ``layer``: every kernel of the layer (:func:`_layer_launches`, and an MoE layer's own,
      :func:`_moe_launches`) − 2; for an MoE model without a capacity factor (dropless: the
      experts' token counts, hence their shapes, change every step, and Megatron refuses to
      graph the MoE block) the MoE block's own kernels beyond the router's stay eager.

    Assumptions: each graph's launch costs one kernel launch; the LoRA adapters' and QLoRA's
    extra kernels are counted with the attention block where they sit (q, k, v, o)."""
    scope = si.cuda_graphs
    layer = _layer_launches(lay, si)
    rc = lay.recompute
    forward_passes = np.where(rc == 2, 2.0, 1.0)
    collectives = np.where(lay.sp, 4.0, 2.0) * (forward_passes + 1.0)
    collectives = np.where(lay.as_float("tp") > 1.0, collectives, 0.0)
    mlp = LAYER_KERNELS_FORWARD - ATTENTION_KERNELS_FORWARD + MLP_KERNELS_BACKWARD
    mlp_block = mlp + collectives / 2.0 - GRAPH_LAUNCHES_PER_CAPTURE
    attn_block = layer - mlp - collectives / 2.0 - GRAPH_LAUNCHES_PER_CAPTURE
    moe_share = work.moe_layers / work.layers if work.num_experts > 0 else 0.0
    router = moe_share * (MOE_ROUTER_KERNELS - GRAPH_LAUNCHES_PER_CAPTURE)
    if scope == "attn":
        return np.asarray(attn_block)
    if scope == "mlp":
        return np.asarray((1.0 - moe_share) * mlp_block)
    if scope == "moe_router":
        return np.asarray(np.zeros_like(layer) + router)
    if scope == "attn_moe_router":
        return np.asarray(attn_block + router)
    if scope == "layer":
        if moe_share > 0.0 and work.moe_capacity_factor is None:
            dense_mlp = (1.0 - moe_share) * (mlp + collectives / 2.0)
            return np.asarray(attn_block + dense_mlp + router)
        return np.asarray(layer - GRAPH_LAUNCHES_PER_CAPTURE + _moe_launches(work, lay))
    return np.zeros_like(layer)


MOE_ROUTER_KERNELS_FORWARD = 18.0
"""Of :data:`MOE_KERNELS_FORWARD`, the kernels before the dispatcher's host sync: the
router's 7 and the preprocessing's 11 (the counts, their all-gather and the device-to-host
copies). The other 11 (permutations, all-to-alls, the experts' quantizations and activation,
the combine) and the experts' GEMMs run after it."""


def _syncs_per_micro_batch(
    work: Workload, cluster: Cluster, lay: Layouts, layers: FloatArray, si: StepInputs
) -> FloatArray:
    """Host syncs in one micro-batch's forward on the fullest stage: one per MoE layer
    (``layers`` × MoE layers ÷ L) where the stack's dropless dispatcher syncs
    (:attr:`.stacks.StackProfile.moe_dropless_host_sync`), else 0. None with a capacity
    factor (drop-and-pad: the counts are known on the host; Megatron's ``no_sync``), under a
    full-iteration graph (one static graph: the HybridEP dispatcher with its per-rank
    capacity, ``moe_expert_rank_capacity_factor``, sizes its buffers without the host,
    NVIDIA/Megatron-LM@d98e8a64 token_dispatcher.py ``_HybridEPManager.setup_metadata``),
    nor where the scenario sets its host time per layer (no kernel counts). The backward
    has none: it reuses the split sizes the forward left on the host."""
    zero = np.zeros_like(layers)
    mode = work.stack.moe_dropless_host_sync
    if (
        work.moe_layers <= 0
        or work.num_experts <= 0
        or work.moe_capacity_factor is not None
        or si.cuda_graphs == "full_iteration"
        or cluster.host_seconds_per_layer is not None
        or mode == "never"
    ):
        return zero
    syncs = layers * work.moe_layers / work.layers
    if mode == "expert_parallel":
        syncs = np.where(lay.as_float("ep") > 1.0, syncs, 0.0)
    return np.asarray(syncs)


def _forward_host_parts(
    work: Workload, lay: Layouts, si: StepInputs
) -> tuple[FloatArray, FloatArray]:
    """(before, after): host seconds of one MoE layer's forward on either side of the
    dispatcher's sync. Before: the attention block (:data:`ATTENTION_KERNELS_FORWARD`, its
    half of the forward's tensor-parallel collectives) and the router with the
    preprocessing (:data:`MOE_ROUTER_KERNELS_FORWARD`); after: the MLP side's LayerNorm and
    residual add (:data:`LAYER_KERNELS_FORWARD` − :data:`ATTENTION_KERNELS_FORWARD` − the 3
    dense MLP kernels an MoE block replaces), the rest of :data:`MOE_KERNELS_FORWARD`, 2
    GEMMs per local expert (fc1, fc2) and the other half of the collectives. A captured
    attention block or router (``si.cuda_graphs``: attn, moe_router, attn_moe_router, and
    a dropless ``layer``, which Megatron captures as attention and router) is one graph
    launch instead of its kernels; the experts stay eager."""
    collectives = np.where(lay.sp, 4.0, 2.0)
    collectives = np.where(lay.as_float("tp") > 1.0, collectives, 0.0) / 2.0
    attention = ATTENTION_KERNELS_FORWARD + collectives
    router = np.full_like(collectives, MOE_ROUTER_KERNELS_FORWARD)
    scope = si.cuda_graphs
    if scope in ("attn", "attn_moe_router", "layer"):
        attention = np.ones_like(attention)
    if scope in ("moe_router", "attn_moe_router", "layer"):
        router = np.ones_like(router)
    local = np.ceil(work.num_experts / lay.as_float("ep"))
    after = (
        LAYER_KERNELS_FORWARD
        - ATTENTION_KERNELS_FORWARD
        - 3.0
        + MOE_KERNELS_FORWARD
        - MOE_ROUTER_KERNELS_FORWARD
        + 2.0 * local
        + collectives
    )
    launch = comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    return np.asarray((attention + router) * launch), np.asarray(after * launch)


def synchronised_micro_batch(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    si: StepInputs,
    *,
    layers: FloatArray,
    t_gpu: FloatArray,
    t_host: FloatArray,
    gpu_forward: FloatArray,
    gpu_experts_forward: FloatArray,
) -> FloatArray:
    """One micro-batch's time on the fullest stage when the host waits for the device once
    per MoE layer in the forward (:func:`_syncs_per_micro_batch`: K syncs); else
    max(t_gpu, t_host).

    Across a sync the host cannot run ahead of the device, so the micro-batch costs the sum
    over the stretches between syncs of each stretch's own time, not the larger of the two
    sums. A stretch runs from one MoE layer's sync to the next: the experts' side A of
    layer k (after its sync: dispatch, experts, combine), then the side B of layer k+1 up
    to its sync (attention, router, preprocessing). With host times h_A, h_B
    (:func:`_forward_host_parts`) and GPU times g_A, g_B, the device finishes A at
    max(h_A, g_A) and B at max(h_A + h_B, g_A + g_B, h_A + g_B): B's kernels run after A's
    and after the host launched them. The K stretches take one MoE layer's forward each;
    what is left (the backward, which has no sync, the dense layers, the head and
    embedding, the pipeline sends) runs at max(host left, GPU left). Then
    t_mb = K · stretch + max(t_host − K(h_A + h_B), t_gpu − K(g_A + g_B)), never below
    max(t_gpu, t_host).

    ``gpu_forward``: the GPU's forward time of one MoE layer; ``gpu_experts_forward``: its
    share after the sync (the routed experts' GEMMs and the dispatch all-to-all).

    Assumptions: the MoE layers are alike, each stretch one layer's forward; the host and
    the device run each side at an even pace (the two-part bound, not kernel by kernel);
    the sync's own latency is not counted."""
    base = np.maximum(t_gpu, t_host)
    syncs = _syncs_per_micro_batch(work, cluster, lay, layers, si)
    if not np.any(syncs > 0.0):
        return np.asarray(base)
    h_b, h_a = _forward_host_parts(work, lay, si)
    g_a = np.minimum(gpu_experts_forward, gpu_forward)
    g_b = gpu_forward - g_a
    stretch = np.maximum(np.maximum(h_a + h_b, g_a + g_b), h_a + g_b)
    rest = np.maximum(t_host - syncs * (h_a + h_b), t_gpu - syncs * (g_a + g_b))
    synced = syncs * stretch + np.maximum(rest, 0.0)
    return np.asarray(np.where(syncs > 0.0, np.maximum(synced, base), base))
