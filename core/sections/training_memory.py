"""Training memory per GPU, of one layout or of millions: one array-valued function.

:func:`training_memory_arrays` takes a layout's degrees as numpy arrays (tp, pp, the ZeRO
shard group, ep, ZeRO stage, micro-batch, sequence parallelism, recomputation, micro-batches
in flight on the first and the last pipeline stage) and returns every component of the
fuller stage's memory per layout. The layout search (:mod:`.parallelism.memory`) evaluates
it at many layouts; the training report (:func:`.training.estimate_training`) and the
fewest-GPUs screen's few layouts evaluate its one-layout twin in Python floats
(:mod:`.training_memory_one`, about 0.1 ms of numpy calls cheaper per evaluation), which
``tests/core/test_training_memory_one.py`` checks equal to it over random scenarios: a term
added here must be added there.

Per GPU of a pipeline stage (Rajbhandari et al. 2019, arXiv:1910.02054, Figure 1 and
section 5; Narayanan et al. 2021, arXiv:2104.04473, section 2.2.1; Korthikanti et al. 2022,
arXiv:2205.05198, section 4):

* persistent = the stage's weights, gradients and optimizer state
  (:func:`.training_params.state_bytes`, linear in the parameters, so a stage's state is
  its share of the layers' plus its tensors outside the layers) ÷ tp, and ÷ the shard group
  per ZeRO stage (1: optimizer, 2: also gradients, 3: also weights); with ep > 1 the routed
  experts are ÷ tp·ep and sharded over the expert-data-parallel group shard/ep instead;
* activations = kept bytes per layer × layers on the stage × micro-batches in flight +
  the tensors saved outside the layers × micro-batches in flight;
* temporaries = gradient bucket (DDP's 25 MiB, or one layer's gradients with ZeRO-2/3) +
  ZeRO-3's gathered layers + QLoRA's dequantised matrix (each ÷ tp) + the larger of the
  logits working set (last stage) and one layer's recompute working set;
* peak = allocated + CUDA context + fragmentation fraction × allocated.

Every saved tensor is s·b·(something) under none, selective and full recomputation, so the
activation terms are priced at b = 1 once per (tp, sequence parallel, policy) and scaled by
b; the threshold policy drops tensors by size, which depends on b, and is priced at each b.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.training import DDP_BUCKET_BYTES, TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.primitives.groups import Groups, distinct_values, per_group
from llm_planner.core.primitives.kept import forgotten
from llm_planner.core.quantities.activation_profiles import get_profile
from llm_planner.core.quantities.activation_recompute import is_partial, partial_full_stage
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections.training_activations import StageActivations, stage_pricer
from llm_planner.core.sections.training_memory_middle import fuller_middles
from llm_planner.core.sections.training_offload import (
    OffloadTerms,
    held_activations,
    offload_terms,
    offloaded_state,
)
from llm_planner.core.sections.training_params import (
    LayerTemporaries,
    StateBytes,
    largest_local_layer,
    layer_temporaries,
    pipeline_middle_layers,
    pipeline_stage_layers,
    routed_expert_params,
    stages_params,
    state_bytes,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

RECOMPUTE_POLICIES: tuple[str, ...] = ("none", "selective", "full", "threshold")
"""Recomputation policies by integer code (the search enumerates the first three)."""
_THRESHOLD = RECOMPUTE_POLICIES.index("threshold")
_FULL = RECOMPUTE_POLICIES.index("full")


@dataclass(frozen=True)
class GatheredHead:
    """An output head the stack keeps gathered under FSDP (``StackProfile.
    head_kept_gathered``): what :func:`gathered_head_bytes` needs."""

    logits_per_sequence: float
    """s·V: logits of one sequence (÷ tp: vocabulary-parallel)."""
    head_params: float
    """V·h: the output head's weights."""
    weight_bytes: float
    """Bytes per gathered weight and per unsharded gradient (the recipe's weights dtype)."""
    reduce_bytes: float
    """Bytes per element of the gradient's copy for the reduce-scatter."""
    activation_bytes: float
    """Bytes per logit of the logits' gradient (the activation dtype)."""


@dataclass(frozen=True, eq=False)
class MemoryTerms:
    """What is fixed for one model, parameter count and training inputs: the persistent
    state of all layers and of the tensors outside them, one layer's temporaries, the
    activation terms (priced on demand) and the stage split. :func:`memory_terms` builds it
    from the parameter structure (:mod:`.training_params`), so every precision recipe,
    optimizer, LoRA and QLoRA setting is honoured."""

    layers: int
    layer_params: float
    """All in-layer parameters of the model (scaled by any override)."""
    layer_state: StateBytes
    """Weights, gradients, optimizer bytes of all layers (before ÷ tp and ZeRO)."""
    expert_state: StateBytes
    """The routed experts' part of ``layer_state`` (÷ ep, ZeRO over shard/ep); zeros if dense."""
    outside_first: StateBytes
    """State of the embedding (and learned positions) on the first stage."""
    outside_last: StateBytes
    """State of the output head (or the tied embedding when pp > 1) and final norm."""
    outside_single: StateBytes
    """State outside the layers when one stage holds all (a tied head counted once)."""
    model_state_bytes: float
    """Weights + gradients + optimizer of the whole model (tp = pp = dp = 1)."""
    temporaries: LayerTemporaries
    """One layer's bucket, ZeRO-3 gather and QLoRA dequantised matrix at tp = 1."""
    temporaries_for_ep: Callable[[int], LayerTemporaries]
    """The same with expert parallelism ep (one layer as a GPU holding E/ep experts)."""
    cuda_context_bytes: float
    fragmentation_fraction: float
    ddp_bucket_temporary: bool
    """The stack holds a DDP bucket while reducing with ZeRO 0/1 (Megatron reduces in place
    in its contiguous gradient buffer: no; ``StackProfile.ddp_bucket_temporary``)."""
    activations: Callable[[int, int, bool, str], StageActivations]
    """(b, tp, sequence parallel, policy) → the activation terms at that micro-batch."""
    stage_layers: Callable[[int], tuple[int, int]]
    """(first, last) stage's layer count for a pipeline degree (:func:`.training_params.
    pipeline_stage_layers`: equal split, or the stack's cost-balanced one)."""
    middle_layers: Callable[[int], int] | None = None
    """Each middle stage's layer count under a stated first/last stage, 0 where none
    (:func:`.training_params.pipeline_middle_layers`); None: no stated split (two
    candidates, the first and the last stage)."""
    logged_stage: str = "fullest"
    """Which GPU's peak the stack's own logs report (``StackProfile.logged_peak_stage``)."""
    activation_offload_layers: int = 0
    """Layers per stage whose activations go to host memory (``TrainingInputs.
    activation_offload_layers``; :func:`.training_offload.held_layers`)."""
    offload: OffloadTerms | None = None
    """ZeRO-Offload / ZeRO-Infinity (:func:`.training_offload.offload_terms`); None: none."""
    recompute_method: str = "uniform"
    """How full recomputation covers a stage (``TrainingInputs.recompute_method``)."""
    recompute_layers: int | None = None
    """Its N (``TrainingInputs.recompute_layers``); None: every layer alone."""
    gathered_head: GatheredHead | None = None
    """The output head the stack keeps gathered under FSDP (:func:`gathered_head_bytes`);
    None: resharded like the layers."""
    sequence_parallel_never_raises: bool = False
    """Whether, at every (b, tp, policy) but the threshold one, each :class:`StageActivations`
    term with sequence parallelism is at most the term without it, so that a layout's peak
    with SP on is at most its twin's with SP off (the fewest-GPUs screen then need not price
    the twin: :func:`.parallelism.memory.some_peak_fits`). True unless the profile runs
    torchtitan's op-level SAC (:func:`.activations.op_sac_tensors`), which keeps the
    reduce-scatter outputs too under SP: at tp = 2 a gated block keeps 1.5·s·b·h with SP
    against s·b·h without.

    Why, term by term: every tensor's bytes are ``elements × width ÷ divisor``
    (:func:`.activation_tensors.tensor_bytes`) and SP only turns the divisor of the
    ``"sp"``-sharded ones from 1 into tp ≥ 1, the tensor list itself unchanged; the kept
    bytes of none (all), Megatron's selective (the tensors it does not drop: which ones
    does not depend on SP) and full (the layer input ÷ tp with SP) and the working set (all
    tensors) are sums of such bytes; the terms outside the layers are too, and are linear in
    b with non-negative parts; the logits do not depend on SP. The threshold policy is left
    out (a tensor that shrinks below the threshold starts being kept). The peak
    (:func:`.training_memory_one.training_memory_one`) adds, multiplies by non-negative
    factors and takes maxima of these terms (:func:`.activation_recompute.partial_full_stage`
    too), all monotone, in floats as in reals; where no ``"sp"`` tensor has bytes the two
    are computed from the same floats and are equal."""


@forgotten
@lru_cache(maxsize=32)
def memory_terms(arch: Architecture, inputs: TrainingInputs, params: float) -> MemoryTerms:
    """The :class:`MemoryTerms` of ``arch`` with ``params`` parameters under ``inputs``."""
    ti = inputs
    counts = count_parameters(arch)
    scale = params / counts.total

    # the layers, the whole model, the first, last and only stage's outside (any pp > 1: the
    # first stage holds the embedding, the last the head)
    stages = [(arch.layers, False, False, 1), (arch.layers, True, True, 1)]
    stages += [(0, True, False, 2), (0, False, True, 2), (0, True, True, 1)]
    layers, whole, first_out, last_out, single_out = stages_params(arch, ti, stages, scale=scale)
    experts = routed_expert_params(arch, ti, layers_on_stage=arch.layers, scale=scale)
    temporaries = layer_temporaries(layers, ti, arch.layers)

    @cache
    def temporaries_for_ep(ep: int) -> LayerTemporaries:
        """As ``stage_params(..., ep=ep)`` would give, without recounting the layers: only the
        largest layer and the LoRA adapters (the bucket under LoRA) depend on ep."""
        if ep == 1:
            return temporaries
        local = {
            "one_layer_params": largest_local_layer(arch, ep) * scale,
            "lora_params": layers.lora_params - experts.lora_params * (1.0 - 1.0 / ep),
        }
        return layer_temporaries(layers.model_copy(update=local), ti, arch.layers)

    @cache
    def stage_layers(pp: int) -> tuple[int, int]:
        return pipeline_stage_layers(arch, ti, pp)

    stack = get_stack(ti.stack)
    precision = get_precision(ti.precision)
    gathered_head = (
        GatheredHead(
            logits_per_sequence=float(ti.seq_len * arch.vocab_size),
            head_params=float(arch.vocab_size * arch.hidden_size),
            weight_bytes=bytes_per_element(precision.weights_dtype),
            reduce_bytes=stack.gradient_reduce_bytes
            or bytes_per_element(precision.gradients_dtype),
            activation_bytes=bytes_per_element(precision.activations_dtype),
        )
        if stack.head_kept_gathered
        else None
    )

    return MemoryTerms(
        layers=arch.layers,
        layer_params=layers.layer_params,
        layer_state=state_bytes(layers, ti),
        expert_state=state_bytes(experts, ti),
        outside_first=state_bytes(first_out, ti),
        outside_last=state_bytes(last_out, ti),
        outside_single=state_bytes(single_out, ti),
        model_state_bytes=sum(state_bytes(whole, ti)),
        temporaries=temporaries,
        temporaries_for_ep=temporaries_for_ep,
        cuda_context_bytes=float(ti.cuda_context_bytes),
        fragmentation_fraction=float(ti.fragmentation_fraction),
        ddp_bucket_temporary=get_stack(ti.stack).ddp_bucket_temporary,
        activations=stage_pricer(arch, ti),
        stage_layers=stage_layers,
        middle_layers=(
            partial(pipeline_middle_layers, arch, ti)
            if ti.first_stage_layers is not None or ti.last_stage_layers is not None
            else None
        ),
        logged_stage=get_stack(ti.stack).logged_peak_stage,
        activation_offload_layers=ti.activation_offload_layers,
        offload=offload_terms(ti, state_bytes(whole, ti), whole),
        recompute_method=ti.recompute_method,
        recompute_layers=ti.recompute_layers,
        gathered_head=gathered_head,
        sequence_parallel_never_raises=(
            get_profile(ti.implementation).selective != "op_sac" or arch.recurrent is not None
        ),
    )


def zero_divisors(
    zero_stage: npt.ArrayLike, dp: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """What ZeRO divides weights, gradients and optimizer states by: N_d from stage 3, 2
    and 1 on respectively, else 1 (Rajbhandari et al. 2019, section 5)."""
    z = np.asarray(zero_stage)
    n = np.asarray(dp, dtype=np.float64)
    return (
        np.asarray(np.where(z >= 3, n, 1.0)),
        np.asarray(np.where(z >= 2, n, 1.0)),
        np.asarray(np.where(z >= 1, n, 1.0)),
    )


def _activation_terms(
    terms: MemoryTerms,
    tp: IntArray,
    sp: npt.NDArray[np.bool_],
    rc: IntArray,
    b: FloatArray,
    *,
    groups: Groups | None = None,
) -> dict[str, FloatArray]:
    """Each activation term of :class:`StageActivations` per layout at its micro-batch ``b``:
    priced once per distinct (tp, sp, policy) at b = 1 and × b; the threshold policy at its
    own b. ``groups`` (of equal tp, sp, policy and b): priced on one layout of each."""
    if groups is not None:
        f = groups.first
        return {
            k: groups.spread(x)
            for k, x in _activation_terms(terms, tp[f], sp[f], rc[f], b[f]).items()
        }
    n_rc = len(RECOMPUTE_POLICIES)
    threshold = rc == _THRESHOLD
    scale = b
    if threshold.any():
        priced_b = np.where(threshold, b, 1.0)
        scale = b / priced_b
        keys = np.stack([priced_b.astype(np.int64), tp, sp.astype(np.int64), rc])
        unique, inverse = np.unique(keys, axis=1, return_inverse=True)
        inv = inverse.reshape(-1)
        acts = [
            terms.activations(int(k[0]), int(k[1]), bool(k[2]), RECOMPUTE_POLICIES[int(k[3])])
            for k in unique.T.tolist()
        ]
    else:  # dense integer code per (tp, sp, policy): O(n) grouping, no sort
        inv, codes = distinct_values((tp * 2 + sp) * n_rc + rc)
        acts = [
            terms.activations(1, k // n_rc // 2, bool(k // n_rc % 2), RECOMPUTE_POLICIES[k % n_rc])
            for k in codes.tolist()
        ]
    # one table of every term per distinct key (a row per term), each row gathered per layout
    table = np.array([[getattr(a, name) for a in acts] for name in _ACTIVATION_COLUMNS])
    out: dict[str, FloatArray] = {
        name: table[i][inv] * scale for i, name in enumerate(_ACTIVATION_COLUMNS[:6])
    }
    for i, name in enumerate(("outside_first", "outside_last", "outside_only")):
        out[name] = out[name] + table[6 + i][inv]
    return out


_ACTIVATION_COLUMNS = (
    "kept_per_layer",
    "recompute_working",
    "logits",
    "outside_first",
    "outside_last",
    "outside_only",
    "outside_first_fixed",
    "outside_last_fixed",
    "outside_only_fixed",
)
"""The :class:`StageActivations` fields :func:`_activation_terms` gathers: the first six
scale with b, the last three are the outside terms' parts that do not."""


def _saved_without_recompute(
    terms: MemoryTerms, tp: IntArray, sp: npt.NDArray[np.bool_], rc: IntArray, b: FloatArray
) -> FloatArray | None:
    """Each layer's bytes without recompute, only where full covers a stage partly."""
    if not (is_partial(terms.recompute_method, terms.recompute_layers) and (rc == _FULL).any()):
        return None
    return _activation_terms(terms, tp, sp, np.zeros_like(rc), b)["kept_per_layer"]


def _partial_full(
    terms: MemoryTerms,
    acts: dict[str, FloatArray],
    saved: FloatArray | None,
    rc: IntArray,
    layers: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """(bytes the stage's layers keep per micro-batch, recompute working set) per layout:
    kept per layer × layers, except where the policy is full and its method covers the
    stage partly (Megatron uniform N > 1 or block N, torchtitan every N:
    :func:`.activation_recompute.partial_full_stage`, from the layer's checkpoint under full
    and its ``saved`` bytes without recompute). Interleaved chunks are not told apart: N
    counts over the stage's layers."""
    kept, working = acts["kept_per_layer"] * layers, acts["recompute_working"]
    if saved is None:
        return kept, working
    part_kept, part_working = partial_full_stage(
        method=terms.recompute_method,
        n=terms.recompute_layers,
        layers_on_stage=layers,
        checkpoint_bytes=acts["kept_per_layer"],
        saved_bytes=saved,
    )
    full = rc == _FULL
    return np.where(full, part_kept, kept), np.where(full, part_working, working)


class _Sharding(NamedTuple):
    """What each layout divides its state by (the same on every stage)."""

    divisors: list[FloatArray]
    """tp × ZeRO's divisor over the shard group, for weights, gradients, optimizer."""
    expert_divisors: list[FloatArray] | None
    """tp·ep × ZeRO's divisor over shard/ep for the routed experts; None: no ep > 1."""
    split: npt.NDArray[np.bool_] | None
    """ep > 1."""


def _sharding(
    terms: MemoryTerms, tp: FloatArray, zero: IntArray, shard: FloatArray, ep: IntArray
) -> _Sharding:
    """ZeRO shards weights from stage 3, gradients from 2, optimizer from 1 over the shard
    group (Rajbhandari et al. 2019, section 5), after tp; with ep > 1 the routed experts over
    the expert-data-parallel group shard/ep (at least 1), after tp·ep (DeepSpeed-MoE,
    Rajbhandari et al. 2022, arXiv:2201.05596, section 5)."""
    divisors = [tp * d for d in zero_divisors(zero, shard)]
    if not (any(terms.expert_state) and (ep > 1).any()):
        return _Sharding(divisors, None, None)
    epf = ep.astype(np.float64)
    expert_dp = np.maximum(shard / epf, 1.0)
    expert_divisors = [tp * epf * d for d in zero_divisors(zero, expert_dp)]
    return _Sharding(divisors, expert_divisors, ep > 1)


def _state(
    terms: MemoryTerms,
    outside: StateBytes,
    *,
    share_of_pp: FloatArray,
    multi_of_pp: npt.NDArray[np.bool_],
    pp_index: IntArray,
    sharding: _Sharding,
) -> list[FloatArray]:
    """Weights, gradients, optimizer per GPU of a stage holding ``share`` of the layers and
    ``outside`` (one stage: ``terms.outside_single``), divided as :func:`_sharding` says.
    What depends on pp alone (the stage's share and its outside tensors) is summed once per
    distinct pp and gathered."""
    held_of_pp = [
        np.where(multi_of_pp, out, single)
        for out, single in zip(outside, terms.outside_single, strict=True)
    ]
    plain = [
        (share_of_pp * in_layers + out)[pp_index] / div
        for in_layers, out, div in zip(
            terms.layer_state, held_of_pp, sharding.divisors, strict=True
        )
    ]
    if sharding.expert_divisors is None or sharding.split is None:
        return plain
    share = share_of_pp[pp_index]
    return [
        np.where(
            sharding.split,
            (share * (whole - expert) + out[pp_index]) / div + share * expert / e_div,
            p,
        )
        for whole, expert, out, div, e_div, p in zip(
            terms.layer_state,
            terms.expert_state,
            held_of_pp,
            sharding.divisors,
            sharding.expert_divisors,
            plain,
            strict=True,
        )
    ]


def _layer_temporaries_by_ep(terms: MemoryTerms, ep: IntArray) -> tuple[FloatArray, FloatArray]:
    """One layer's ZeRO-2 bucket and ZeRO-3 gather (tp = 1) as a GPU holding E/ep experts
    stores it, per layout from a table over the ep values present, O(n)."""
    index, values = distinct_values(ep)
    table = np.array(
        [
            (t.zero2_bucket, t.zero3_gather)
            for t in (terms.temporaries_for_ep(int(e)) for e in values.tolist())
        ],
        dtype=np.float64,
    )
    return table[index, 0], table[index, 1]


def _fixed_temporaries(
    terms: MemoryTerms, tp: FloatArray, zero: IntArray, shard: FloatArray, ep: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray | float]:
    """(gradient bucket, ZeRO-3 gathered layers, QLoRA's dequantised matrix) per GPU, ÷ tp:
    one layer's gradients with ZeRO-2/3 (reduce-scatter bucket), else the stack's DDP bucket
    (PyTorch bucket_cap_mb = 25) where it holds one, when the shard group is > 1; two layers'
    weights with ZeRO-3 (the current and the prefetched one); independent of the stage."""
    zero2_bucket: FloatArray | float = terms.temporaries.zero2_bucket
    zero3_gather: FloatArray | float = terms.temporaries.zero3_gather
    if any(terms.expert_state) and (ep > 1).any():
        zero2_bucket, zero3_gather = _layer_temporaries_by_ep(terms, ep)
    sharded = shard > 1
    bucket = np.where(
        (zero >= 2) & sharded,
        zero2_bucket / tp,
        np.where(sharded & terms.ddp_bucket_temporary, float(DDP_BUCKET_BYTES), 0.0),
    )
    gather = np.where((zero >= 3) & sharded, zero3_gather / tp, 0.0)
    dequant = terms.temporaries.dequant / tp if terms.temporaries.dequant else 0.0
    return bucket, gather, dequant


def gathered_head_bytes(
    terms: MemoryTerms,
    logits: FloatArray,
    *,
    b: FloatArray,
    tp: IntArray,
    zero: IntArray,
    shard: FloatArray,
) -> FloatArray:
    """The last stage's logits term (``logits``: :func:`.activations.logits_working_bytes`)
    with the output head a stack keeps gathered under FSDP (ZeRO-3 over a shard group > 1);
    ``logits`` itself elsewhere or when the stack reshards it (``terms.gathered_head``
    None). ``b``: sequences per GPU (micro-batch ÷ cp).

    pytorch/torchtitan@b5bcd76c torchtitan/distributed/fsdp.py ``apply_fsdp_to_decoder``
    wraps ``[norm, lm_head]`` with ``reshard_after_forward`` only under the policy 'always',
    so by default the head's weights, w = V·h·weight bytes/t, stay gathered from the end of
    the forward into the head's own backward. The larger of two moments counts:

    * the loss's backward: the logits term with w beside it;
    * the head's backward: the logits' gradient in the activation dtype beside the weights
      and their unsharded gradient (a·s·b·V/t + 2w), then, in its post-backward (PyTorch
      FSDP2 ``FSDPParamGroup.post_backward`` reshards the weights first), the gradient and
      its copy in the reduce dtype for the reduce-scatter (w + w·reduce/weight bytes:
      ``foreach_reduce`` casts to ``mp_policy.reduce_dtype``, torchtitan's
      ``mixed_precision_reduce`` float32).

    Assumes one V·h head (tied or not), trained (a frozen head under LoRA has no gradient)
    and vocabulary-parallel over tp. The embedding and the blocks follow the 'default'
    policy (resharded when there is no pipeline): the model's gradient bucket and two
    gathered layers stay priced beside it."""
    head = terms.gathered_head
    if head is None:
        return logits
    tpf = np.asarray(tp, dtype=np.float64)  # arrays or scalars alike
    w = np.where((zero >= 3) & (shard > 1), head.head_params * head.weight_bytes / tpf, 0.0)
    gradient = head.activation_bytes * head.logits_per_sequence * b / tpf + 2.0 * w
    reduce = w * (1.0 + head.reduce_bytes / head.weight_bytes)
    at_head = np.maximum(gradient, reduce)
    return np.asarray(np.where(w > 0, np.maximum(logits + w, at_head), logits))


def _size(x: npt.ArrayLike) -> int:
    """``np.size(x)``, without its array conversion for an array or a plain scalar (the
    report's few layouts pass Python numbers and short lists)."""
    if isinstance(x, np.ndarray):
        return int(x.size)
    if isinstance(x, int | float | bool | np.generic):
        return 1
    return int(np.size(x))


_FILL_BELOW = 64
"""Layouts up to which a scalar input is filled rather than broadcast (same values)."""


def _spread(x: npt.ArrayLike, dtype: Any, n: int) -> npt.NDArray[Any]:
    """``x`` as ``n`` entries of ``dtype``: itself when it already is one per layout (the
    search's arrays: no view made), else broadcast (a scalar for every layout)."""
    a = np.asarray(x, dtype=dtype)
    if a.shape == (n,):
        return a
    # a few layouts (the report's): a filled array is cheaper than a broadcast view
    return (
        np.full(n, a, dtype=dtype) if a.ndim == 0 and n <= _FILL_BELOW else np.broadcast_to(a, (n,))
    )


_SCREENED = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "allocated_bytes",
    "offloaded_activations_bytes",
)
"""The components :func:`training_memory_arrays` returns without ``detail``."""


def _states(
    terms: MemoryTerms, counts: FloatArray, pp_values: IntArray, cols: list[Any], screen: bool
) -> list[Any]:
    """Fixed temporaries, then each stage's state less ZeRO offload's (w, g, o, host, NVMe;
    ``screen``: host, NVMe 0), of layouts of pp index, tp, ZeRO, shard and ep ``cols``."""
    pp_index, tp, zero, shard, ep = cols
    sharding, multi = _sharding(terms, tp, zero, shard, ep), pp_values > 1
    out: list[Any] = [*_fixed_temporaries(terms, tp, zero, shard, ep)]
    for held, layers_of_pp in zip((terms.outside_first, terms.outside_last), counts.T, strict=True):
        share = layers_of_pp / terms.layers
        state = _state(
            terms, held, share_of_pp=share, multi_of_pp=multi, pp_index=pp_index, sharding=sharding
        )
        w, g, o, host, nvme = offloaded_state(terms.offload, state, zero)
        out += [w, g, o, 0.0, 0.0] if screen else [w, g, o, host, nvme]
    return out


def _middle_state(
    terms: MemoryTerms, layers_of_pp: FloatArray, *, pp_values: IntArray, cols: list[Any]
) -> list[Any]:
    """A middle stage's state less ZeRO offload's (w, g, o, host, NVMe) as :func:`_states`
    gives the first and last stage's: its layers' share, nothing outside the layers."""
    pp_index, tp, zero, shard, ep = cols
    state = _state(
        terms,
        StateBytes(0.0, 0.0, 0.0),
        share_of_pp=layers_of_pp / terms.layers,
        multi_of_pp=pp_values > 1,
        pp_index=pp_index,
        sharding=_sharding(terms, tp, zero, shard, ep),
    )
    return list(offloaded_state(terms.offload, state, zero))


def training_memory_arrays(
    terms: MemoryTerms,
    *,
    tp: npt.ArrayLike,
    pp: npt.ArrayLike,
    shard: npt.ArrayLike,
    ep: npt.ArrayLike,
    zero: npt.ArrayLike,
    micro_batch: npt.ArrayLike,
    sp: npt.ArrayLike,
    recompute: npt.ArrayLike,
    first_in_flight: npt.ArrayLike,
    last_in_flight: npt.ArrayLike,
    detail: bool = True,
    cp: npt.ArrayLike = 1,
    loss_in_flight: npt.ArrayLike | None = None,
    groups: tuple[Groups | None, Groups | None] = (None, None),
) -> dict[str, FloatArray]:
    """Per-GPU training memory of each layout (the module docstring gives the terms).

    Arrays of one entry per layout (scalars broadcast): degrees tp, pp, ep; ``shard``, the
    ZeRO shard group (dp, or its in-node part for HYBRID_SHARD); ZeRO stage; micro-batch;
    sequence parallelism; ``recompute`` as a code of :data:`RECOMPUTE_POLICIES`; the
    micro-batches whose activations the first and the last stage hold at their peak (one
    stage, pp = 1: both the same). The fuller of the first stage (embedding) and the last
    (head, logits) sets the peak; ties go to the first. Under a stated first/last split a
    middle stage fuller in layers than the first is a third candidate
    (:func:`.training_memory_middle.fuller_middles`). Returns arrays: each component of
    that stage (``weights_bytes`` … ``peak_bytes``), ``last_stage`` (1 where it is the last),
    its ``layers_on_stage`` and ``microbatches_in_flight``, and what a stack's log reports
    (``logged_*``: torch's max allocated / reserved, without the CUDA context). ``detail``
    False (the search's millions of layouts): the persistent state, activations and peak
    only, without the breakdown of activations and temporaries the report shows.

    Context parallelism ``cp`` splits every sequence over cp GPUs: each holds s/cp of its
    tokens, so every activation term (linear in the tokens a GPU holds, s·b) is that of
    b/cp sequences: ÷ cp ("The activation memory footprint per GPU is also smaller by the
    CP degree", NVIDIA/Megatron-LM@d98e8a64 docs/user-guide/features/context_parallel.md;
    the attention scores of unfused attention, s/cp query rows × s keys, are ÷ cp too).
    Weights, gradients and optimizer state are replicated over cp as over dp; ZeRO shards
    them over ``shard``, which the layout makes dp·cp (Megatron's distributed optimizer
    shards over the data-and-context-parallel group: :func:`.parallelism.resolve_layout`).

    ``loss_in_flight``: the micro-batches whose tensors outside the layers (final norm and
    output layer inputs, the loss's saved softmax) the last stage holds; None: as its
    layers' (1F1B: 1, GPipe: m). Interleaved, 1: those tensors belong to the last rank's
    last chunk, whose backward runs right after its forward in the steady state
    (NVIDIA/Megatron-LM@d98e8a64 schedules.py: the last rank's warm-up covers chunks
    0 … v − 2 only), though its other chunks hold ((v − 1)·p + 1)/v stage-loads.

    ``groups``: the layouts grouped by equal (pp, tp, ZeRO, shard, ep) and by equal (tp, sp,
    policy, micro-batch, cp), or finer (the search's, found once); None: found here."""
    f64 = np.float64
    given = (tp, pp, shard, ep, zero, micro_batch, sp, recompute, first_in_flight, cp)
    n = max(_size(last_in_flight), *(_size(x) for x in given))

    def ints(x: npt.ArrayLike) -> IntArray:
        return _spread(x, np.int64, n)

    tp_i, pp_i, ep_i, zero_i = ints(tp), ints(pp), ints(ep), ints(zero)
    rc_i = ints(recompute)
    cp_f = _spread(cp, f64, n)
    b_f = _spread(micro_batch, f64, n) / cp_f
    sp_b = _spread(sp, bool, n)
    shard_f = _spread(shard, f64, n)
    tp_f = tp_i.astype(f64)
    multi = pp_i > 1

    pp_index, pp_values = distinct_values(pp_i)
    counts = np.array([terms.stage_layers(int(p)) for p in pp_values.tolist()], dtype=f64)
    acts = _activation_terms(terms, tp_i, sp_b, rc_i, b_f, groups=None if detail else groups[1])
    logits = gathered_head_bytes(terms, acts["logits"], b=b_f, tp=tp_i, zero=zero_i, shard=shard_f)
    saved = _saved_without_recompute(terms, tp_i, sp_b, rc_i, b_f)
    outside_only = acts["outside_only"]

    columns = [pp_index, tp_f, zero_i, shard_f, ep_i]

    def states(r: Any) -> list[Any]:  # the search's: once per (pp, tp, ZeRO, shard, ep)
        return _states(terms, counts, pp_values, [c[r] for c in columns], not detail)

    keyed = None if detail else per_group([pp_i, tp_i, zero_i, shard_f, ep_i], states, n, groups[0])
    bucket, gather, dequant, *state = states(slice(None)) if keyed is None else keyed
    fixed_temporaries = bucket + gather + dequant if terms.temporaries.dequant else bucket + gather

    def stage(
        held: list[Any],
        layers_of_pp: FloatArray,
        flight: FloatArray,
        outside: FloatArray,
        *,
        last: bool,
        outside_flight: FloatArray,
    ) -> dict[str, FloatArray]:
        w, g, o, host, nvme = held
        layers = layers_of_pp[pp_index]
        in_layers, working = _partial_full(terms, acts, saved, rc_i, layers)
        on_gpu, outside_held, activ = held_activations(
            terms.activation_offload_layers, in_layers, layers, (flight, outside, outside_flight)
        )
        lg = logits if last else np.where(multi, 0.0, logits)
        temp = fixed_temporaries + np.maximum(lg, working)
        allocated = w + g + o + activ + temp
        return {
            "weights_bytes": w,
            "gradients_bytes": g,
            "optimizer_bytes": o,
            "activations_bytes": activ,
            "outside_activations_bytes": outside_held,
            "logits_bytes": lg,
            "temporary_bytes": temp,
            "allocated_bytes": allocated,
            "layers_on_stage": layers,
            "microbatches_in_flight": flight,
            "host_bytes": host,
            "nvme_bytes": nvme,
            "recompute_working_bytes": working,
            "layer_activations_bytes": in_layers,
            # one micro-batch's activations this stage copies to the host and back
            "offloaded_activations_bytes": in_layers - on_gpu,
        }

    def peak(allocated: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(peak, fragmentation): allocated + CUDA context + fraction × allocated."""
        fragmentation = terms.fragmentation_fraction * allocated
        return allocated + terms.cuda_context_bytes + fragmentation, fragmentation

    first_flight = _spread(first_in_flight, f64, n)
    last_flight = _spread(last_in_flight, f64, n)
    first = stage(
        state[:5],
        counts[:, 0],
        first_flight,
        np.where(multi, acts["outside_first"], outside_only),
        last=False,
        outside_flight=first_flight,
    )
    last = stage(
        state[5:],
        counts[:, 1],
        last_flight,
        np.where(multi, acts["outside_last"], outside_only),
        last=True,
        outside_flight=np.where(
            multi,
            last_flight if loss_in_flight is None else _spread(loss_in_flight, f64, n),
            last_flight,
        ),
    )
    use_last = peak(last["allocated_bytes"])[0] > peak(first["allocated_bytes"])[0]
    selected = first if detail else (*_SCREENED, "recompute_working_bytes")
    out, use_last = fuller_middles(
        terms.middle_layers,
        stage,
        peak,
        (first, last, use_last, selected),
        pp=(pp_i, pp_index, pp_values, counts),
        first_flight=first_flight,
        held_of=partial(_middle_state, terms, pp_values=pp_values, cols=columns),
    )
    out["peak_bytes"], out["fragmentation_bytes"] = peak(out["allocated_bytes"])
    if detail:  # the mean layer's kept bytes per micro-batch (partial full: its average)
        stage_layers = out["layers_on_stage"]
        out["activations_per_layer_bytes"] = np.where(
            stage_layers > 0, out["layer_activations_bytes"] / np.maximum(stage_layers, 1.0), 0.0
        )
    # torch.cuda.max_memory_reserved: the caching allocator's segments, i.e. allocated plus
    # fragmentation; the CUDA context is outside it (it is in nvidia-smi's figure, the peak)
    reserve = 1.0 + terms.fragmentation_fraction
    logged = first["allocated_bytes"] if terms.logged_stage == "first" else out["allocated_bytes"]
    out.update(
        last_stage=use_last.astype(f64),
        gradient_bucket_bytes=np.asarray(bucket),
        zero3_gathered_bytes=np.asarray(gather),
        dequant_bytes=np.full(n, dequant),
        cuda_context_bytes=np.full(n, terms.cuda_context_bytes),
        reserved_bytes=out["allocated_bytes"] * reserve,
        logged_allocated_bytes=np.asarray(logged),
        logged_reserved_bytes=np.asarray(logged * reserve),
    )
    return out
