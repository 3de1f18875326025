"""What pricing a layout needs of the model and the cluster: FLOPs per token, hardware ÷
model FLOPs per recomputation policy, the bytes the memory-bound kernels and the optimizer
step move, and the GPU and network with their efficiencies."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import (
    Architecture,
    LayerMatrix,
)
from llm_planner.core.primitives.architecture import count_parameters as _count_parameters
from llm_planner.core.primitives.architecture_groups import layer_groups
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.kept import forgotten
from llm_planner.core.quantities import comm
from llm_planner.core.quantities import moe as moe_work
from llm_planner.core.quantities.activation_recompute import is_partial, recomputed_fraction
from llm_planner.core.quantities.activation_tensors import SavedTensor, tensor_bytes
from llm_planner.core.quantities.activations import get_profile
from llm_planner.core.quantities.flops import (
    attention_forward_flops_per_token,
    mfu_flops_per_token,
    model_flops_per_token,
    mtp_flops_per_token,
)
from llm_planner.core.quantities.stacks import StackProfile, get_stack
from llm_planner.core.sections.parallelism.layout import RECOMPUTE_CODES, Layouts
from llm_planner.core.sections.training import (
    hardware_flops_factor,
    layer_kinds,
    one_layer_params,
    stage_params,
    state_bytes,
)
from llm_planner.core.sections.training_params import layer_saved_tensors_for

# --------------------------------------------------------------------- the workload


@dataclass(frozen=True)
class Workload:
    """The scalars of a model × training setup that layout pricing needs."""

    layers: int
    hidden: int
    seq_len: int
    global_batch: int
    params_total: float
    params_expert: float
    """Routed-expert parameters (divided by expert parallelism)."""
    moe_layers: int
    top_k: int
    model_flops_per_token: float
    """FLOPs the GEMMs and attention execute per token, no recomputation (the step time's)."""
    mfu_flops_per_token: float
    """The count MFU reports (:func:`.flops.mfu_flops_per_token`: 6·P, or with attention)."""
    hw_flops_factor: tuple[float, float, float]
    """Hardware/model FLOPs for recompute none, selective, full."""
    elementwise_bytes: tuple[ElementwiseBytes, ElementwiseBytes, ElementwiseBytes] = (
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
    )
    """HBM bytes the non-GEMM kernels move per token per layer (forward + backward), for
    recompute none, selective, full; each split by how tp divides it (:func:`elementwise_bytes_of`).
    Zeros: no memory-bound term."""
    optimizer_step_bytes_per_param: float = 0.0
    """HBM bytes the optimizer step reads and writes per parameter it updates
    (:func:`optimizer_step_bytes_per_param`)."""
    gemms: tuple[GemmShape, ...] = ()
    """The weight GEMMs one token goes through (:func:`gemm_shapes_of`); empty: every GEMM
    at the large-size kernel efficiency."""
    attention_flops_per_token: float = 0.0
    """Attention score and weighted-sum FLOPs per token, forward + backward (3 × forward),
    run by the fused attention kernel at its own efficiency; part of model_flops_per_token."""
    moe_tokens_share: float = 1.0
    """Share of a micro-batch's tokens one routed expert's GEMM sees (k / E); 1 if dense."""
    num_experts: int = 0
    """Routed experts per MoE layer (0 if dense)."""
    moe_load_factor: float = 1.0
    """Rows the busiest routed expert runs ÷ the mean (:func:`.moe.expert_load_factor`: the
    load imbalance, or the capacity factor when tokens are dropped and padded)."""
    moe_capacity_factor: float | None = None
    """The expert capacity factor (None: dropless)."""
    moe_dispatcher: str = "alltoall"
    """Megatron-Core's token dispatcher (:data:`.moe.DISPATCHERS`)."""
    moe_permute_bytes: tuple[float, float] = (0.0, 0.0)
    """HBM bytes per token per MoE layer of the token permutations (with, without the
    regrouping by local expert): :func:`.moe.permutation_bytes_per_token`."""
    stack: StackProfile = field(default_factory=lambda: get_stack("megatron"))
    """The training stack's profile (buckets, reduce dtype, host overhead, attention kernel)."""
    gradient_reduce_bytes: float = comm.COMM_BYTES_PER_ELEMENT
    """Bytes per element of the data-parallel gradient collective (the stack's, or the
    precision recipe's gradient dtype)."""
    param_gather_bytes: float = comm.COMM_BYTES_PER_ELEMENT
    """Bytes per element of the data-parallel parameter all-gather (ZeRO-1/2 after the step,
    ZeRO-3 before each use): 16 bits, or one direction of the quantized copy when the
    parameters are kept in low precision (Megatron's --fp8-param-gather)."""
    layer_params: float = 0.0
    """Parameters of the largest layer (a ZeRO-3 gather, FSDP2's per-block bucket)."""
    vocab: int = 0
    """Vocabulary: the output head's GEMM (N = V ÷ tp) and the loss over the logits."""
    head_flops_per_token: float = 0.0
    """Output-head GEMM FLOPs per token, forward + backward (6·V·h), part of
    model_flops_per_token; it runs on the last pipeline stage only."""
    recompute_method: str = "uniform"
    """How full recomputation covers a stage (``TrainingInputs.recompute_method``)."""
    recompute_layers: int | None = None
    """Its N; None: every layer alone (``hw_flops_factor`` full is then every layer's)."""
    mtp_layers: int = 0
    """Multi-token prediction depths (``TrainingInputs.mtp_layers``): each one more layer of
    the model's last kind on the last pipeline stage (a slot of the stage split, priced as
    one of its layers), its 2h→h projection and one more output-head pass and loss
    (:func:`.flops.mtp_flops_per_token`); not part of model_flops_per_token, part of
    mfu_flops_per_token."""
    mtp_flops_per_token: float = 0.0
    """FLOPs per token of the MTP depths, forward + backward, attention included
    (:func:`.flops.mtp_flops_per_token`): what executed FLOPs add for them."""
    tied_embedding_params: float = 0.0
    """Parameters of an input embedding tied to the output head (V·h), 0 when untied: with a
    pipeline the two copies sit on the first and the last stage and their gradients are
    summed between them (:attr:`StackProfile.tied_embedding_sync_exposed`)."""


GemmShape = tuple[float, float, float, bool, bool, bool]
"""(N, K, share of the weight FLOPs, N ÷ tp, K ÷ tp, routed expert) of one weight GEMM:
an M×K · K×N product with M the micro-batch's tokens."""

ElementwiseBytes = tuple[float, float, float]
"""(÷ tp always, ÷ tp only with sequence parallelism, never ÷ tp) bytes per token per layer."""

NON_GEMM_TENSORS: tuple[str, ...] = (
    "norm output",
    "rotary",
    "softmax",
    "dropout",
    "activation output",
    "repeated to",
    "routed tokens",
    "router probabilities",
)
"""Name fragments of the ledger tensors written by a non-GEMM kernel, besides every tensor of
the ``norm`` block (a norm's input is the residual add's output; its statistics, fp32 copies
and normalised values are the norm kernel's): norm outputs (LayerNorm/RMSNorm), RoPE outputs,
softmax and dropout outputs and masks (attention when not flash, residual dropout), the
activation function's output (GeLU, SiLU·up), GQA key/value copies, the MoE dispatch copies
and the router softmax. GEMM outputs (Q, K, V, fc1 output, flash attention's output and
log-sum-exp, expert outputs) are not: their traffic is part of the GEMM's time."""


_NON_GEMM = re.compile("|".join(re.escape(part) for part in NON_GEMM_TENSORS))
"""Any of :data:`NON_GEMM_TENSORS` in a name (one search instead of one test per part)."""


def _is_non_gemm(entry: SavedTensor) -> bool:
    return entry.block == "norm" or _NON_GEMM.search(entry.name) is not None


@forgotten
@cache
def elementwise_bytes_of(
    arch: Architecture, training_inputs: TrainingInputs
) -> tuple[ElementwiseBytes, ElementwiseBytes, ElementwiseBytes]:
    """HBM bytes the element-wise and normalisation kernels move, per token per layer.

    Ivanov et al. 2021 ("Data Movement Is All You Need", MLSys, arXiv:2007.00072) split a
    transformer's operators into tensor contractions, statistical normalisations and
    element-wise operators and show the latter two are bound by memory bandwidth (a few FLOPs
    per byte) yet take a large share of training time. Their bytes are read off the
    activation ledger (:func:`.training.layer_activations_for`, recompute "none", b = 1):
    each tensor X a non-GEMM kernel writes (:data:`NON_GEMM_TENSORS`) costs

    - forward: read its input (≈ |X|) + write X = 2·|X| (ELEMENTWISE_PASSES_FORWARD);
    - backward: read dY, read the saved X, write dX = 3·|X| (ELEMENTWISE_PASSES_BACKWARD);
    - recomputation replays the forward, + 2·|X|: for every such tensor with full
      recomputation, for the attention core's (softmax, dropout) with selective, and for
      every such tensor with torchtitan's op-level selective (its policy saves only matmul,
      attention and collective outputs: :func:`.activations.op_sac_tensors`).

    Layers are averaged over dense and MoE layers as the memory screen does. Each total is
    split by the tensor's tp sharding (``tp``, ``sp``, ``none``) so the vectorised step time
    divides it per layout. Assumptions: an input about the size of the output (masks are
    counted at their own 1 byte), fused kernels counted once per saved output, no L2 reuse.
    """
    ti = training_inputs  # the tensors before recomputation (they do not depend on it)
    fwd, bwd = comm.ELEMENTWISE_PASSES_FORWARD, comm.ELEMENTWISE_PASSES_BACKWARD
    totals = {"none": [0.0, 0.0, 0.0], "selective": [0.0, 0.0, 0.0], "full": [0.0, 0.0, 0.0]}
    column = {"tp": 0, "sp": 1, "none": 2}
    op_sac = (
        get_profile(training_inputs.implementation).selective == "op_sac" and arch.recurrent is None
    )
    for moe, n in layer_kinds(arch):
        # at the 16-bit width: the norm and activation kernels write 16-bit outputs; a
        # low-precision recipe's quantization of them is its own memory-bound term
        # (PrecisionRecipe.quantize_bytes_per_element)
        # the ledger's lines under no recompute: each tensor at its bytes (tp = 1, no SP)
        for e in layer_saved_tensors_for(arch, ti, 1, moe_layer=moe, quantized_inputs=False):
            if not _is_non_gemm(e):
                continue
            per_token = float(tensor_bytes(e, 1, False)) / ti.seq_len * n / arch.layers
            k = column[e.shard]
            totals["none"][k] += (fwd + bwd) * per_token
            replayed = 1.0 if op_sac else float(e.attention_core)
            totals["selective"][k] += (fwd + bwd + fwd * replayed) * per_token
            totals["full"][k] += (2.0 * fwd + bwd) * per_token
    none, sel, full = (tuple(totals[rc]) for rc in RECOMPUTE_CODES)
    return (
        (none[0], none[1], none[2]),
        (sel[0], sel[1], sel[2]),
        (full[0], full[1], full[2]),
    )


@forgotten
@cache
def optimizer_step_bytes_per_param(arch: Architecture, training_inputs: TrainingInputs) -> float:
    """HBM bytes the optimizer step moves per parameter of the model, once per step.

    The step reads every gradient, reads and writes every optimizer state (fp32 master
    weights and moments) and writes the updated 16-bit weights: G + 2·O + W, with W, G, O the
    training estimator's state bytes of the whole model (:func:`.training.state_bytes`) ÷
    its parameters; 2 + 2·12 + 2 = 28 bytes for mixed-precision Adam. Under LoRA only the
    adapters are written (W counts the trainable weights, approximated by G's count). ZeRO
    stages ≥ 1 shard this work over the data-parallel group (each rank steps its shard).
    """
    whole = stage_params(
        arch, training_inputs, layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    w, g, o = state_bytes(whole, training_inputs)
    params = whole.layer_params + whole.outside_params
    if params <= 0:
        return 0.0
    recipe = training_inputs.launched_recipe
    trained_w = w if training_inputs.effective_lora_rank is None else 0.0
    if training_inputs.effective_lora_rank is not None and recipe.gradients_bytes > 0:
        trained_w = g / recipe.gradients_bytes * recipe.weights_bytes
    return float((g + 2.0 * o + trained_w) / params)


def workload_of(
    arch: Architecture,
    seq_len: int,
    global_batch: int,
    params_override: float | None = None,
    hw_factors: tuple[float, float, float] | None = None,
    *,
    training_inputs: TrainingInputs | None = None,
    include_attention_flops: bool = False,
    only_recompute: str | None = None,
) -> Workload:
    """Collect the model's scalars; ``params_override`` rescales every parameter count.

    ``hw_factors`` default: :func:`hardware_flops_factors` of ``training_inputs`` (the
    training defaults at ``seq_len`` when None). ``include_attention_flops`` picks the
    count MFU reports (the compute section's ``include_attention_flops``).
    ``only_recompute``: every layout priced with this workload has that recompute policy;
    the other policies' factors are left NaN (:func:`hardware_flops_factors`' ``only``)."""
    counts = _count_parameters(arch)
    scale = params_override / counts.total if params_override else 1.0
    matmul = counts.active_compute * scale
    model = model_flops_per_token(arch, seq_len, matmul)
    ti = training_inputs or TrainingInputs(seq_len=seq_len)
    stack = get_stack(ti.stack)
    factors = hw_factors or hardware_flops_factors(arch, ti, model, only_recompute)
    ti_s = ti if ti.seq_len == seq_len else ti.model_copy(update={"seq_len": seq_len})
    return Workload(
        layers=arch.layers,
        hidden=arch.hidden_size,
        seq_len=seq_len,
        global_batch=global_batch,
        params_total=counts.total * scale,
        params_expert=counts.experts * scale,
        moe_layers=arch.moe_layers,
        top_k=arch.moe.experts_per_token if arch.moe else 0,
        model_flops_per_token=model,
        mfu_flops_per_token=mfu_flops_per_token(
            arch,
            seq_len,
            counts.active * scale,
            include_attention=include_attention_flops,
            mtp_layers=ti.mtp_layers,
        ),
        hw_flops_factor=(float(factors[0]), float(factors[1]), float(factors[2])),
        elementwise_bytes=elementwise_bytes_of(arch, ti_s),
        optimizer_step_bytes_per_param=optimizer_step_bytes_per_param(arch, ti_s),
        gemms=gemm_shapes_of(arch),
        attention_flops_per_token=3.0 * attention_forward_flops_per_token(arch, seq_len),
        moe_tokens_share=(
            arch.moe.experts_per_token / arch.moe.num_experts if arch.moe is not None else 1.0
        ),
        num_experts=arch.moe.num_experts if arch.moe is not None else 0,
        moe_load_factor=(
            moe_work.expert_load_factor(ti.moe_load_imbalance, ti.moe_capacity_factor)
            if arch.moe is not None
            else 1.0
        ),
        moe_capacity_factor=ti.moe_capacity_factor,
        moe_dispatcher=ti.moe_dispatcher,
        moe_permute_bytes=(
            (
                moe_work.permutation_bytes_per_token(
                    arch.moe.experts_per_token, arch.hidden_size, True
                ),
                moe_work.permutation_bytes_per_token(
                    arch.moe.experts_per_token, arch.hidden_size, False
                ),
            )
            if arch.moe is not None
            else (0.0, 0.0)
        ),
        stack=stack,
        gradient_reduce_bytes=stack.gradient_reduce_bytes or ti.launched_recipe.gradients_bytes,
        param_gather_bytes=_param_gather_bytes(ti),
        layer_params=float(one_layer_params(arch)) * scale,
        vocab=arch.vocab_size,
        head_flops_per_token=min(6.0 * arch.vocab_size * arch.hidden_size, model),
        tied_embedding_params=(
            float(arch.vocab_size * arch.hidden_size) if arch.tied_embeddings else 0.0
        ),
        recompute_method=ti.recompute_method,
        recompute_layers=ti.recompute_layers,
        mtp_layers=ti.mtp_layers,
        mtp_flops_per_token=mtp_flops_per_token(arch, seq_len, ti.mtp_layers),
    )


@forgotten
@cache
def gemm_shapes_of(arch: Architecture) -> tuple[GemmShape, ...]:
    """The weight GEMMs of one token's pass through the layers, with their FLOP shares, from
    the layer's matrices (:meth:`.Architecture.layer_matrices`; each kind of layer of a
    hybrid its own, :func:`.architecture.layer_groups`).

    Matrices that read the same input and run as one GEMM (Megatron-LM fuses q, k and v, and
    gate with up; Shoeybi et al. 2019 section 3) are one GEMM with N = the sum of their
    widths and K = their input width; a column-parallel GEMM has N ÷ tp, a row-parallel one
    K ÷ tp, a replicated one (MLA's down-projections) neither. MLA's projections are their
    own GEMMs at their own sizes (wq_a h→r_q, wq_b r_q→a·192, wkv_a h→r_kv + 64, wkv_b
    r_kv→a·256 for DeepSeek-V3). Routed experts run on k/E of the tokens, so a token meets
    k of them; the router (N = E) is not priced as a GEMM, nor is the output head here (it
    runs on the last stage, priced apart). Shares are each GEMM's N·K·copies over the sum
    (every GEMM runs three times, forward, input and weight gradient, so the share holds
    for the backward too)."""
    top_k = arch.moe.experts_per_token if arch.moe is not None else 0
    out: list[tuple[float, float, float, bool, bool, bool]] = []
    kinds = [group for moe, _ in layer_kinds(arch) for group in layer_groups(arch, moe)]
    for layer, n in kinds:
        groups: dict[tuple[str, bool], list[LayerMatrix]] = {}
        for m in layer:
            if m.gemm:
                groups.setdefault((m.gemm, m.routed), []).append(m)
        for (_, routed), mats in groups.items():
            first = mats[0]
            width = float(sum(m.d_out for m in mats))
            copies = float(top_k if routed else first.copies)
            flops = width * first.d_in * n * copies
            split = first.tp_split
            out.append(
                (width, float(first.d_in), flops, split == "columns", split == "rows", routed)
            )
    total = sum(o[2] for o in out) or 1.0
    return tuple((a, b, w / total, c, d, e) for a, b, w, c, d, e in out)


@dataclass(frozen=True)
class Cluster:
    """The GPU and the network, with every efficiency applied."""

    gpu_id: str
    memory_bytes: float
    peak_flops: float
    """Dense bf16 peak per GPU, FLOP/s."""
    gpus_per_node: int
    links: comm.Links
    kernel_efficiency: float
    dp_overlap: float
    tp_overlap: float
    memory_bytes_per_s: float = math.inf
    """Achieved HBM bandwidth for the memory-bound kernels: the GPU's × MEMORY_BANDWIDTH_
    ACHIEVED_FRACTION. Infinite: no memory-bound term."""
    sms: int = 0
    """Streaming multiprocessors (wave quantisation of the GEMMs); 0: no shape model."""
    generation: str = "other"
    """'hopper', 'ampere' or 'other' (:func:`.comm.generation_of`)."""
    gemm_ramp_seconds: float = comm.GEMM_RAMP_SECONDS
    attention_efficiency: float | None = None
    """Override of the attention kernel's share of peak (None: by kernel class and GPU)."""
    host_seconds_per_layer: float | None = None
    """Override of the stack's host time per layer per micro-batch (None: the stack's)."""
    base_latency: float = 0.0
    """Fixed start-up latency of one collective or send, seconds (NCCL's base; 0: none)."""
    intra_step_latency: float = 0.0
    """Latency of one collective step on the intra-node link, seconds (0: no latency)."""
    inter_step_latency: float = 0.0
    """Latency of one collective step across the network, seconds."""
    dp_bucket_bytes: float | None = None
    """Override of the stack's gradient bucket, bytes."""
    inter_p2p_latency: float = 0.0
    """Extra latency of a pipeline send between nodes, seconds."""
    ep_overlap: float = 0.0
    """Share of the MoE all-to-all hidden behind compute."""
    balance_pipeline_head: bool | None = None
    """Override of the stack's pipeline split (None: the stack's)."""
    low_precision_peak_flops: dict[str, float] = field(default_factory=dict)
    """The GPU's dense peaks in the low-precision GEMM dtypes it has (fp8, fp4), for a
    low-precision training recipe's layer GEMMs (:class:`.step_time.StepInputs`)."""
    tensor_rate_fraction: float = 1.0
    """Share of the datasheet's tensor-core peaks the GPU sustains
    (:attr:`.gpus.GPU.tensor_rate_fraction`): the GEMM and attention time is divided by it;
    MFU and HFU still count against the datasheet's peak."""


def nvlink_domain_of(gpu: GPU, inputs: ParallelInputs) -> int:
    """GPUs one NVLink fabric joins: the input, else the GPU's (the catalog's NVL72 racks:
    72, "72 GPUs in one NVLink domain; 4 GPUs per compute tray", NVIDIA's GB200/GB300 NVL72
    specification tables), else a node; never less than a node."""
    domain = inputs.nvlink_domain or gpu.nvlink_domain_gpus or inputs.gpus_per_node
    return max(int(domain), inputs.gpus_per_node)


def network_bytes_per_s_per_node(gpu: GPU, inputs: ParallelInputs) -> float:
    """Scale-out network of one node, one direction: the input, else the GPU's network per
    GPU (its catalog entry's NIC share, else :data:`.comm.NETWORK_BYTES_PER_S_PER_GPU`) × GPUs
    per node. One NIC per GPU: an HGX H100 node's 8 × 400 Gb/s = 400e9 B/s; a GB200 NVL72
    compute tray's 4 GPUs with one 400 Gb/s ConnectX-7 each = 200e9 B/s, not an 8-GPU
    node's 400e9 over 4 GPUs."""
    if inputs.inter_node_bandwidth_bytes_per_s is not None:
        return inputs.inter_node_bandwidth_bytes_per_s
    per_gpu = gpu.network_bytes_per_s_per_gpu or comm.NETWORK_BYTES_PER_S_PER_GPU
    return per_gpu * inputs.gpus_per_node


def cluster_of(gpu: GPU, inputs: ParallelInputs, compute_dtype: str = "bf16") -> Cluster:
    """The cluster of ``inputs`` built on ``gpu`` (intra-node link from the GPU catalog).

    Communication sees the NVLink domain (:func:`nvlink_domain_of`) as its "node": a group
    inside it runs on NVLink although it spans compute trays; the network a domain drives is
    its nodes' together (the per-node input × nodes per domain), so each GPU keeps its own
    NIC share."""
    flops = gpu.peak_flops
    peak = flops.for_dtype(compute_dtype) or flops.for_dtype("bf16") or flops.for_dtype("fp16")
    peak = peak or flops.for_dtype("fp32") or 1.0
    intra = inputs.intra_node_bandwidth_bytes_per_s or gpu.link_bandwidth_bytes_per_s
    domain = nvlink_domain_of(gpu, inputs)
    return Cluster(
        gpu_id=gpu.id,
        memory_bytes=gpu.memory_bytes,
        peak_flops=float(peak),
        low_precision_peak_flops={
            d: float(flops.for_dtype(d) or 0.0) for d in ("fp8", "fp4") if flops.for_dtype(d)
        },
        gpus_per_node=domain,
        links=comm.Links(
            gpus_per_node=domain,
            intra_bytes_per_s=intra * inputs.intra_node_efficiency,
            inter_bytes_per_s_per_node=network_bytes_per_s_per_node(gpu, inputs)
            * inputs.inter_node_efficiency
            * (domain / inputs.gpus_per_node),
        ),
        kernel_efficiency=inputs.kernel_efficiency,
        dp_overlap=inputs.dp_overlap,
        tp_overlap=inputs.tp_overlap,
        memory_bytes_per_s=gpu.memory_bandwidth_bytes_per_s
        * comm.MEMORY_BANDWIDTH_ACHIEVED_FRACTION,
        sms=comm.sms_of(gpu.id),
        generation=comm.generation_of(gpu.id),
        gemm_ramp_seconds=inputs.gemm_ramp_seconds,
        attention_efficiency=inputs.attention_efficiency,
        host_seconds_per_layer=inputs.host_seconds_per_layer,
        base_latency=comm.NCCL_BASE_LATENCY_SECONDS,
        intra_step_latency=inputs.intra_node_step_latency_seconds,
        inter_step_latency=inputs.inter_node_step_latency_seconds,
        dp_bucket_bytes=inputs.dp_bucket_bytes,
        inter_p2p_latency=inputs.inter_node_p2p_latency_seconds,
        ep_overlap=inputs.ep_overlap,
        balance_pipeline_head=inputs.balance_pipeline_head,
        tensor_rate_fraction=gpu.tensor_rate_fraction,
    )


@forgotten
@cache
def hardware_flops_factors(
    arch: Architecture,
    training_inputs: TrainingInputs,
    model_flops: float,
    only: str | None = None,
) -> tuple[float, float, float]:
    """Hardware ÷ model FLOPs for each policy of RECOMPUTE_CODES, relative to
    ``model_flops`` per token (this module's MFU count, :func:`model_flops_per_token`):
    :func:`llm_planner.core.sections.training.hardware_flops_factor`, the one definition.

    ``only`` (a code of RECOMPUTE_CODES): the caller prices layouts of that one policy (a
    report of the scenario's own layout), so only its factor is computed; the others are
    NaN, which a layout of that policy never reads (:func:`layout_hw_factors` takes its
    own policy's entry; full's partial-replay term is kept only where the policy is full).
    """
    ti = training_inputs
    if ti.recompute_layers is not None:
        ti = ti.model_copy(update={"recompute_layers": None})
    values = [
        hardware_flops_factor(
            arch, ti if ti.recompute == rc else ti.model_copy(update={"recompute": rc}), model_flops
        )
        if only is None or rc == only
        else float("nan")
        for rc in RECOMPUTE_CODES
    ]
    return (values[0], values[1], values[2])


def _param_gather_bytes(ti: TrainingInputs) -> float:
    """Bytes per element the data-parallel parameter all-gather moves: 16 bits, or, with the
    layers' matrices kept in low precision (``TrainingInputs.low_precision_params``: Megatron
    "perform the param all-gather in fp8"), one direction of their quantized copy with its
    scales (half of :attr:`.optimizers.PrecisionRecipe.low_precision_copy_bytes`; the
    16-bit rest of the model, embeddings and norms, is a small share and counted so too)."""
    recipe = ti.launched_recipe
    if recipe.quantized_params:
        return recipe.low_precision_copy_bytes / 2
    return comm.COMM_BYTES_PER_ELEMENT


def full_replay_share(work: Workload, lay: Layouts) -> npt.NDArray[np.float64]:
    """Share of the fullest stage's layers whose whole forward is replayed in backward, per
    layout: 1 under full recomputation (and a stack's whole-layer 'selective',
    ``StackProfile.selective_whole_layer``), the replayed share where full covers a stage
    partly (:func:`layout_hw_factors`' share), else 0. What the replay repeats beyond its
    FLOPs (tensor-parallel collectives, kernel launches, context-parallel ring passes,
    adapters' GEMMs) scales with it."""
    full = RECOMPUTE_CODES.index("full")
    selective = 1.0 if work.stack.selective_whole_layer else 0.0
    share = np.take(np.array([0.0, selective, 1.0]), lay.recompute)
    if not is_partial(work.recompute_method, work.recompute_layers):
        return np.asarray(share)
    stage = np.ceil(work.layers / lay.as_float("pp"))
    part = recomputed_fraction(work.recompute_method, work.recompute_layers, stage)
    return np.asarray(np.where(lay.recompute == full, part, share))


def layout_hw_factors(work: Workload, lay: Layouts) -> npt.NDArray[np.float64]:
    """Hardware ÷ model FLOPs of each layout's recompute policy
    (:attr:`Workload.hw_flops_factor`), where full covers a stage partly (Megatron block N,
    torchtitan every N): 1 + share × (full's − 1), the share of the fullest stage's
    ⌈L/pp⌉ layers replayed (:func:`.activation_recompute.recomputed_fraction`; interleaved
    chunks not told apart, as the memory's count). Uniform N replays every layer."""
    factors = np.asarray(work.hw_flops_factor, dtype=np.float64)
    hw = np.take(factors, lay.recompute)
    if not is_partial(work.recompute_method, work.recompute_layers):
        return np.asarray(hw)
    stage = np.ceil(work.layers / lay.as_float("pp"))
    share = recomputed_fraction(work.recompute_method, work.recompute_layers, stage)
    partial = 1.0 + share * (factors[RECOMPUTE_CODES.index("full")] - 1.0)
    return np.asarray(np.where(lay.recompute == RECOMPUTE_CODES.index("full"), partial, hw))
