"""Training memory with ZeRO-Offload / ZeRO-Infinity: which per-GPU state leaves the GPU
for the host or NVMe, and what the host then holds (:mod:`.quantities.offload` for the
mechanism, read from DeepSpeed@edaa7221).

Per GPU, with n the trained parameters this GPU's optimizer shard steps (its ZeRO
partition: optimizer bytes ÷ the optimizer's bytes per parameter O):

* ``offload_optimizer`` (ZeRO ≥ 1): the optimizer state (fp32 master + moments, O·n) leaves
  the GPU; from ZeRO-2 the gradient partition too (stage_1_and_2.py copies each reduced
  partition into the host's fp32 gradient buffer and frees it on the GPU,
  ``async_inplace_copy_grad_to_fp32_buffer_from_gpu``; stage3.py keeps its gradient
  partition buffer on the host); ZeRO-1 reduces the full gradients on the GPU at the
  accumulation boundary, so they stay. The host holds O·n + 4·n (fp32 gradient partition)
  + 2·n (the 16-bit partition buffer, or stage 3's 16-bit gradient partition): (O + 6)·n.
  With ``nvme`` the O·n + 4·n go to NVMe; the host keeps the 16-bit buffer and
  ``buffer_count`` (4) swap buffers of one sub-group (``sub_group_size`` 1e9 elements,
  at most n) in fp32.
* ``offload_params`` (ZeRO-3 only): the 16-bit parameter partition (the ZeRO-3 weights
  per GPU) leaves the GPU; the host holds it (``cpu``) or ``buffer_count`` × ``buffer_size``
  = 5 × 1e8 elements of it (``nvme``). The layers gathered for compute stay GPU
  temporaries (ZeRO-3's gather, :mod:`.training_memory`).

Assumptions: pinned host buffers only (DeepSpeed's ``pin_memory`` default), nothing else of
the host's (the data loader, the Python process) counted; the host check is per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.quantities.offload import (
    MASTER_GRADIENT_BYTES,
    OPTIMIZER_SWAP_BUFFERS,
    PARAM_SWAP_BUFFER_ELEMENTS,
    PARAM_SWAP_BUFFERS,
    SUB_GROUP_ELEMENTS,
)
from llm_planner.core.sections.training_params import StageParams, StateBytes

FloatArray = npt.NDArray[np.float64]

BUFFER_16BIT_BYTES = 2.0
"""The 16-bit partition copy on the host (bf16/fp16 parameters)."""


class OffloadReport(BaseModel):
    """The training report's offload part (None there when nothing is offloaded)."""

    model_config = ConfigDict(frozen=True)

    optimizer: str = Field(description="ZeRO-Offload device: none, cpu or nvme")
    params: str = Field(description="ZeRO-Infinity parameter device: none, cpu or nvme")
    host_bytes: float = Field(description="offloaded state in host RAM per GPU")
    host_bytes_per_node: float = Field(description="per GPU × the GPUs sharing a node")
    host_capacity_bytes_per_node: float = Field(description="host RAM per node (an input)")
    host_fits: bool = Field(description="host bytes per node ≤ host RAM per node")
    nvme_bytes: float = Field(description="offloaded state on NVMe per GPU")
    notes: list[str] = Field(description="offload settings the layout ignores, and why")


def offload_report(
    inputs: TrainingInputs,
    *,
    host_bytes: float,
    nvme_bytes: float,
    gpus_per_node: int,
    zero_stage: int,
) -> OffloadReport | None:
    """The :class:`OffloadReport` of a layout (None when nothing is offloaded). The notes
    name settings DeepSpeed refuses at this stage (the optimizer offload lives in ZeRO's
    optimizer, stage ≥ 1; parameter offload in stage 3's partitioned parameters)."""
    if inputs.offload_optimizer == "none" and inputs.offload_params == "none":
        return None
    notes: list[str] = []
    if inputs.offload_optimizer != "none" and zero_stage < 1:
        notes.append("optimizer offload needs ZeRO stage 1-3: not applied at stage 0")
    if inputs.offload_params != "none" and zero_stage < 3:
        notes.append(f"parameter offload needs ZeRO-3: not applied at stage {zero_stage}")
    per_node = host_bytes * gpus_per_node
    return OffloadReport(
        optimizer=inputs.offload_optimizer,
        params=inputs.offload_params,
        host_bytes=host_bytes,
        host_bytes_per_node=per_node,
        host_capacity_bytes_per_node=inputs.host_memory_bytes_per_node,
        host_fits=per_node <= inputs.host_memory_bytes_per_node,
        nvme_bytes=nvme_bytes,
        notes=notes,
    )


@dataclass(frozen=True)
class OffloadTerms:
    """What the offload arithmetic needs of one model and its training inputs."""

    optimizer_device: str
    """``none``, ``cpu`` or ``nvme``."""
    params_device: str
    optimizer_bytes_per_param: float
    """O: optimizer bytes per trained parameter (fp32 master + moments)."""
    weight_bytes_per_param: float
    """The weights' bytes per parameter (the swapped 16-bit partition)."""


def offload_terms(
    inputs: TrainingInputs, whole_state: StateBytes, whole: StageParams
) -> OffloadTerms | None:
    """The :class:`OffloadTerms` of these inputs; None when nothing is offloaded."""
    if inputs.offload_optimizer == "none" and inputs.offload_params == "none":
        return None
    lora = inputs.effective_lora_rank is not None
    trained = whole.lora_params if lora else whole.layer_params + whole.outside_params
    return OffloadTerms(
        optimizer_device=inputs.offload_optimizer,
        params_device=inputs.offload_params,
        optimizer_bytes_per_param=whole_state.optimizer / trained if trained else 0.0,
        weight_bytes_per_param=inputs.launched_recipe.weights_bytes,
    )


def offloaded_state(
    terms: OffloadTerms | None,
    state: Sequence[FloatArray],
    zero: npt.NDArray[np.int64],
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """(weights, gradients, optimizer left on the GPU, host bytes, NVMe bytes) per GPU of
    each layout, from its ``state`` (weights, gradients, optimizer per GPU): the
    module docstring gives the terms; the optimizer is offloaded where
    ZeRO ≥ 1, the parameters where ZeRO = 3 (DeepSpeed refuses them otherwise); ``terms``
    None: nothing offloaded (host and NVMe zero)."""
    w, g, o = state
    zeros = np.zeros(np.broadcast(w, g, o, zero).shape)
    host, nvme = zeros, zeros
    if terms is None:
        return w, g, o, zeros, zeros
    if terms.optimizer_device != "none":
        on = zero >= 1
        n = o / terms.optimizer_bytes_per_param if terms.optimizer_bytes_per_param else zeros
        if terms.optimizer_device == "cpu":
            host_o = o + (MASTER_GRADIENT_BYTES + BUFFER_16BIT_BYTES) * n
            nvme_o = zeros
        else:
            swap = OPTIMIZER_SWAP_BUFFERS * np.minimum(n, SUB_GROUP_ELEMENTS) * 4.0
            host_o = BUFFER_16BIT_BYTES * n + swap
            nvme_o = o + MASTER_GRADIENT_BYTES * n
        host = host + np.where(on, host_o, 0.0)
        nvme = nvme + np.where(on, nvme_o, 0.0)
        g = np.where(on & (zero >= 2), 0.0, g)
        o = np.where(on, 0.0, o)
    if terms.params_device != "none":
        on = zero >= 3
        if terms.params_device == "cpu":
            host_p = w
            nvme_p = zeros
        else:
            host_p = np.minimum(
                w, PARAM_SWAP_BUFFERS * PARAM_SWAP_BUFFER_ELEMENTS * terms.weight_bytes_per_param
            )
            nvme_p = w
        host = host + np.where(on, host_p, 0.0)
        nvme = nvme + np.where(on, nvme_p, 0.0)
        w = np.where(on, 0.0, w)
    return (
        np.asarray(w),
        np.asarray(g),
        np.asarray(o),
        np.asarray(host),
        np.asarray(nvme),
    )


def held_layers(layers: npt.ArrayLike, offloaded: int) -> FloatArray:
    """Layers of a stage whose activations stay on the GPU when ``offloaded`` of them go to
    host memory: Transformer Engine's CPU offload (NVIDIA/TransformerEngine@d0067d0d
    transformer_engine/pytorch/cpu_offload.py ``get_cpu_offload_context``: "activation
    memory usage is equal to ``(num_layers - num_offloaded_layers) * T``, where ``T`` is
    the memory footprint of a layer"), which Megatron-Core's ``cpu_offloading`` /
    ``cpu_offloading_num_layers`` drive (NVIDIA/Megatron-LM@d98e8a64 megatron/core/
    transformer/transformer_block.py), at most all layers but one (transformer_config.py:
    ``cpu_offloading_num_layers`` must be below ``num_layers``; the last layer's activations
    are used at once by its backward)."""
    n = np.asarray(layers, dtype=np.float64)
    if offloaded <= 0:
        return n
    return n - np.minimum(float(offloaded), np.maximum(n - 1.0, 0.0))


def _on_gpu_share(layers: FloatArray, offloaded: int) -> FloatArray:
    """Share of what a stage's layers keep that stays on the GPU under CPU activation
    offload (:func:`held_layers` ÷ layers; the offloaded layers taken as keeping the
    stage's mean, which partial full recomputation makes uneven)."""
    if offloaded <= 0:
        return np.ones_like(layers)
    return np.where(layers > 0, held_layers(layers, offloaded) / np.maximum(layers, 1.0), 1.0)


def held_activations(
    offloaded: int,
    in_layers: FloatArray,
    layers: FloatArray,
    flights: tuple[FloatArray, FloatArray, FloatArray],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(what the stage's layers keep on the GPU per micro-batch, the tensors outside the
    layers held, all activations held): ``in_layers`` × :func:`_on_gpu_share` × the
    micro-batches in flight, + the outside tensors × theirs. Without activation offload the
    share is 1 and its product (x · 1 = x) is skipped."""
    flight, outside, outside_flight = flights
    on_gpu = in_layers * _on_gpu_share(layers, offloaded) if offloaded > 0 else in_layers
    outside_held = outside * outside_flight
    return on_gpu, outside_held, on_gpu * flight + outside_held
