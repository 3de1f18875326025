"""Mixture-of-experts work beyond the expert GEMMs: the load of the busiest expert, the
token dispatch's all-to-all on the links its group spans, and the permutation kernels.

Read from Megatron-Core (NVIDIA/Megatron-LM@d98e8a64, megatron/core/transformer/moe/):
``token_dispatcher.py`` (``MoEAlltoAllTokenDispatcher``), ``moe_utils.py`` (``permute``,
``unpermute``, ``sort_chunks_by_idxs``, ``get_capacity``) and
``megatron/core/transformer/transformer_config.py`` (the defaults named below).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from llm_planner.core.quantities.comm import COMM_BYTES_PER_ELEMENT, Links

FloatArray = npt.NDArray[np.float64]

DEFAULT_LOAD_IMBALANCE = 1.0
"""Tokens of the busiest expert ÷ the mean (k·tokens/E), the default of the training input
``moe_load_imbalance``: 1, a balanced router. Stated, not fitted: it is what an auxiliary
load-balancing loss (Megatron-Core's default ``moe_router_load_balancing_type = "aux_loss"``)
or a forced balance (``moe_router_force_load_balancing``, the setting NVIDIA's published
MoE throughput tables run with) aims at; a run early in training, or without a balancing
loss, sits above it and should say so (1.2-1.5 is a common early-training range)."""


DISPATCHERS = {
    "alltoall": "each token's k copies sent to the ranks of their experts and back "
    "(MoEAlltoAllTokenDispatcher)",
    "allgather": "every token gathered over the tp·ep group, the outputs reduce-scattered "
    "(MoEAllGatherTokenDispatcher)",
}
"""Megatron-Core's token dispatchers the step time prices (``moe_token_dispatcher_type``;
the flex/DeepEP dispatcher is not priced)."""


def expert_load_factor(imbalance: float, capacity_factor: float | None) -> float:
    """Rows the busiest expert runs ÷ the mean rows per expert: it sets the step, as every
    rank waits for the slowest one at the next collective.

    Dropless (``capacity_factor`` None, Megatron-Core's default ``moe_expert_capacity_factor
    = None``): the busiest expert runs all its tokens, ``imbalance`` × the mean. With a
    capacity factor c Megatron-Core drops the tokens beyond ⌈k·tokens/E · c⌉ per expert and
    pads every expert to that capacity (``get_capacity`` in moe_utils.py;
    ``moe_pad_expert_input_to_capacity``, which the token-dropping recipes set): every
    expert runs c × the mean rows, whatever the imbalance (the overflow is dropped)."""
    if capacity_factor is None:
        return max(imbalance, 1.0)
    return capacity_factor


def dispatch_syncs_host(capacity_factor: float | None, ep: int, tp: int) -> bool:
    """Whether the all-to-all dispatcher makes the host wait for the GPU once per MoE layer.

    Dropless with ep·tp > 1: the split sizes of the variable-size all-to-all come from the
    router's counts on the GPU, copied to the host and waited for before the all-to-all
    (``MoEAlltoAllTokenDispatcher.preprocess``: ``cuda_sync_point = "before_ep_alltoall"``,
    ``_maybe_dtoh_and_synchronize``: ``d2h_event.synchronize()``). With a capacity factor
    and padding the sizes are known on the host (``drop_and_pad``: no copy, no sync)."""
    return capacity_factor is None and ep * tp > 1


def permutation_bytes_per_token(top_k: int, hidden: int, sorts_chunks: bool) -> float:
    """HBM bytes per token per MoE layer, forward and backward, of the token permutations
    around the experts, beyond the routed copy the activation ledger already prices
    (``routed tokens (k copies)``: written and read forward, 2 passes, and 3 backward).

    Megatron-Core's all-to-all dispatcher (moe_utils.py): ``permute`` gathers each token's k
    copies (read k·h, write k·h); with ep > 1 and more than one local expert
    ``sort_chunks_by_idxs`` regroups the received rows by local expert (read and write k·h)
    and the combine undoes it (again); ``unpermute`` weights the k outputs by their router
    probabilities and sums them into the token (read k·h, write h). Forward (7k + 1)·h
    elements with the sorts, (3k + 1)·h without; the backward moves the gradients the same
    way back. Less the ledger's 5k·h, in 16-bit (COMM_BYTES_PER_ELEMENT). Fused or not
    (``moe_permute_fusion``), the rows cross HBM the same number of times."""
    k = float(top_k)
    forward = (7.0 * k + 1.0) if sorts_chunks else (3.0 * k + 1.0)
    extra = max(2.0 * forward - 5.0 * k, 0.0)
    return extra * hidden * COMM_BYTES_PER_ELEMENT


def all_to_all_seconds(
    links: Links,
    stride: npt.ArrayLike,
    size: npt.ArrayLike,
    sent_bytes: npt.ArrayLike,
    *,
    base: float,
    intra_step: float,
    inter_step: float,
) -> FloatArray:
    """Time of one all-to-all in which each of ``size`` ranks (``stride`` apart) sends
    ``sent_bytes`` spread evenly over its size − 1 peers.

    NCCL runs an all-to-all as one grouped send and receive per peer, all at once
    (``ncclGroupStart``/``ncclSend``/``ncclRecv``, as torch.distributed's
    ``all_to_all_single`` issues it): the peers inside this rank's NVLink domain (a node, or
    an NVL72 rack: :attr:`.comm.Links.gpus_per_node`) receive over NVLink, the others over
    the network, both at the same time, so the time is the slower of the two shares
    (bytes ÷ the link; the network at this GPU's share of its node's, every GPU of the node
    exchanging at once). Peers on the domain: min(size, ⌊domain ÷ stride⌋) including
    itself. Latency: NCCL's base and one step on each kind of link used
    (:func:`.comm.collective_latency_seconds`' terms; the sends to the peers overlap)."""
    s = np.asarray(stride, dtype=np.float64)
    n = np.asarray(size, dtype=np.float64)
    sent = np.asarray(sent_bytes, dtype=np.float64)
    g = float(links.gpus_per_node)
    local = np.clip(np.floor(g / s), 1.0, n)
    peers = np.maximum(n - 1.0, 1.0)
    off = (n - local) / peers
    nic = min(links.intra_bytes_per_s, links.inter_bytes_per_s_per_node / g)
    t = np.maximum(sent * (1.0 - off) / links.intra_bytes_per_s, sent * off / nic)
    latency = base + np.where(off < 1.0, intra_step, 0.0) + np.where(off > 0.0, inter_step, 0.0)
    return np.asarray(np.where(n > 1.0, t + latency, 0.0))


ALLGATHER_BYTES_PER_ELEMENT = 2.0 + 4.0 + 2.0 + 4.0
"""Bytes per gathered element of the all-gather dispatcher's four collectives per MoE layer:
the forward all-gather of the tokens (16-bit), the reduce-scatter of the expert outputs in
the router probabilities' dtype (fp32: ``token_combine`` casts to ``local_probs.dtype``),
and their backward, a reduce-scatter (16-bit) and an all-gather (fp32)."""


def allgather_dispatch_bytes_per_layer(
    group: npt.ArrayLike, tokens_per_rank: npt.ArrayLike, hidden: float
) -> FloatArray:
    """Bytes each rank sends per MoE layer per micro-batch with the all-gather dispatcher
    (``MoEAllGatherTokenDispatcher.token_dispatch``: ``gather_from_sequence_parallel_region``
    over the tp·ep group; ``token_combine``: ``reduce_scatter_to_sequence_parallel_region``):
    a ring all-gather or reduce-scatter over n ranks sends (n − 1) × each rank's share, here
    its tokens × h, in the bytes of :data:`ALLGATHER_BYTES_PER_ELEMENT`. Every token travels
    once whatever its k experts (the all-to-all sends k copies), so with n > k ranks it moves
    n ÷ k times the all-to-all's bytes. 0 for one rank."""
    n = np.asarray(group, dtype=np.float64)
    per = np.asarray(tokens_per_rank, dtype=np.float64) * hidden * ALLGATHER_BYTES_PER_ELEMENT
    return np.asarray(np.maximum(n - 1.0, 0.0) * per)
