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
