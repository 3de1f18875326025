"""The step time ZeRO-Offload and ZeRO-Infinity add: host↔GPU copies over PCIe (or
NVLink-C2C), DeepSpeedCPUAdam's step in host memory, and NVMe swaps.

What moves when (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/zero/stage_1_and_2.py,
stage3.py, partitioned_param_swapper.py, offload_config.py; Ren et al. 2021, ZeRO-Offload,
USENIX ATC, section 4.1-4.2; Rajbhandari et al. 2021, ZeRO-Infinity, arXiv:2104.07857,
section 6), per GPU, n = the parameters its optimizer shard steps, N = the parameters its
ZeRO-3 partition holds:

* gradients device→host during the backward: at the accumulation boundary the reduced
  partition in fp32 (4·n; stage_1_and_2.py ``async_inplace_copy_grad_to_fp32_buffer_
  from_gpu``, stage3.py ``_offload_grad_partition_at_boundary``); with ZeRO-2/3 and
  several micro-batches the host-held partition is also brought back, added to and copied
  out once per micro-batch (``async_accumulate_grad_in_cpu_via_gpu``, stage3.py
  ``partition_grads``: G·n each way; ZeRO-1 accumulates on the GPU). DeepSpeed issues them
  on the reduction stream as buckets are reduced (``overlap_comm``), so they hide behind
  the backward (:data:`.comm.BACKWARD_SHARE` of a micro-batch's compute);
* parameters host→device with ``offload_params``: each layer's 16-bit partition before its
  all-gather, in the forward and the backward (and the recomputed forward under full
  recomputation): 2 (3) · W·N per micro-batch, prefetched ahead of the compute
  (``stage3_prefetch_bucket_size``), so hidden behind the micro-batch's compute; from NVMe
  it is first read into the pinned buffers (``partitioned_param_swapper.py``), so the
  slower of the NVMe share and the host link sets the fetch;
* the optimizer step, after the last backward, not overlapped (DeepSpeed's default: the
  ZeRO-Offload paper's one-step delayed update is not on): DeepSpeedCPUAdam over n
  parameters at :data:`.offload.CPU_ADAM_HOST_BYTES_PER_PARAM` bytes each ÷ this GPU's share
  of the node's host memory bandwidth (its GPUs step at once); with ``nvme`` the optimizer
  state and fp32 gradients read in and the state written out first, at this GPU's share of
  the node's NVMe (``pipeline_read``/``pipeline_write`` default off: not overlapped); then
  the updated 16-bit partition host→device (W·n; none when the parameters live on the
  host: the copy is host memory to host memory, in CPU Adam's bytes), written to NVMe
  with ``offload_params: nvme``. The GPU runs no Adam step of its own.

The host link: ``training.pcie_bandwidth_bytes_per_s`` or the GPU's
(:func:`.offload.host_link_bytes_per_s`), one direction each way (PCIe is full duplex: the
two directions hide independently).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_planner.core.quantities import comm
from llm_planner.core.quantities.offload import (
    CPU_ADAM_HOST_BYTES_PER_PARAM,
    HOST_MEMORY_BANDWIDTH_BYTES_PER_S_PER_NODE,
    MASTER_GRADIENT_BYTES,
    NVME_READ_BYTES_PER_S_PER_NODE,
    NVME_WRITE_BYTES_PER_S_PER_NODE,
    host_link_bytes_per_s,
)
from llm_planner.core.sections.parallelism.layout import Layouts
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.workload import Cluster, Workload


@dataclass(frozen=True)
class OffloadStep:
    """What the offload step time reads beyond the layouts (from the training inputs)."""

    optimizer: str = "none"
    """``none``, ``cpu`` or ``nvme``."""
    params: str = "none"
    host_link_bytes_per_s: float | None = None
    """Override of the GPU's achieved host link, one direction (None: the GPU's)."""
    optimizer_bytes_per_param: float = 12.0
    """O: fp32 master + moments per trained parameter."""
    gradient_bytes_per_param: float = 2.0
    """G: the gradients' dtype bytes."""
    weight_bytes_per_param: float = 2.0
    """W: the 16-bit parameters."""
    trained_fraction: float = 1.0
    """Trained ÷ all parameters (LoRA: the adapters')."""


@dataclass(frozen=True)
class OffloadTimes:
    """Per layout: the exposed seconds offload adds per step, the bytes it moves over the
    host link per step, and where the GPU's own optimizer step no longer runs."""

    exposed: FloatArray
    host_link_bytes: FloatArray
    optimizer_on_cpu: np.ndarray

    def gpu_optimizer(self, seconds: FloatArray) -> FloatArray:
        """The GPU's own optimizer step where it still runs (DeepSpeedCPUAdam steps the
        offloaded layouts instead)."""
        return np.asarray(np.where(self.optimizer_on_cpu, 0.0, seconds))


def _held_params(work: Workload, lay: Layouts, tp_pp: FloatArray) -> FloatArray:
    """Parameters per GPU after tp·pp and the ZeRO shard group (routed experts ÷ ep and the
    expert-data-parallel group within the shard), as :func:`._optimizer_step_seconds`."""
    shard = lay.as_float("shard")
    dense = (work.params_total - work.params_expert) / (tp_pp * shard)
    if work.params_expert <= 0:
        return np.asarray(dense)
    ep = lay.as_float("ep")
    expert_dp = np.minimum(np.maximum(lay.as_float("dp") * lay.as_float("cp") / ep, 1.0), shard)
    return np.asarray(dense + work.params_expert / (tp_pp * ep * expert_dp))


def offload_seconds(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    off: OffloadStep,
    *,
    m: FloatArray,
    t_c: FloatArray,
    tp_pp: FloatArray,
) -> OffloadTimes:
    """The exposed time offload adds per step and the host-link bytes (module docstring).
    ``m`` micro-batches per step, ``t_c`` one micro-batch's compute on this GPU."""
    n_layouts = lay.tp.shape[0]
    zero = lay.zero
    on_o = (zero >= 1) & (off.optimizer != "none")
    on_p = (zero >= 3) & (off.params != "none")
    if not (np.any(on_o) or np.any(on_p)):
        zeros = np.zeros(n_layouts)
        return OffloadTimes(zeros, zeros, np.zeros(n_layouts, dtype=bool))
    link = off.host_link_bytes_per_s or host_link_bytes_per_s(cluster.gpu_id)
    share = float(max(cluster.gpus_per_node, 1))  # GPUs sharing the node's DRAM and NVMe
    held = _held_params(work, lay, tp_pp)
    n = held * off.trained_fraction
    o_b, g_b, w_b = (
        off.optimizer_bytes_per_param,
        off.gradient_bytes_per_param,
        off.weight_bytes_per_param,
    )

    # per micro-batch: gradient accumulation through the host (ZeRO-2/3), parameter fetches
    accumulating = on_o & (zero >= 2) & (m > 1.0)
    accum = np.where(accumulating, g_b * n, 0.0)
    passes = 2.0 + (lay.recompute == 2)
    fetch = np.where(on_p, passes * w_b * held, 0.0)
    fetch_s = fetch / link
    if off.params == "nvme":
        fetch_s = np.maximum(fetch_s, fetch / (NVME_READ_BYTES_PER_S_PER_NODE / share))
    h2d_s = accum / link + fetch_s
    d2h_s = accum / link
    boundary_s = np.where(on_o, MASTER_GRADIENT_BYTES * n, 0.0) / link
    backward = comm.BACKWARD_SHARE * t_c

    def exposed_mb(d2h: FloatArray) -> FloatArray:
        return np.maximum(np.maximum(h2d_s - t_c, 0.0), np.maximum(d2h - backward, 0.0))

    transfers = (m - 1.0) * exposed_mb(d2h_s) + exposed_mb(d2h_s + boundary_s)

    # the optimizer step on the CPU, its NVMe swaps, the updated parameters back
    host_bw = HOST_MEMORY_BANDWIDTH_BYTES_PER_S_PER_NODE / share
    cpu_adam = np.where(on_o, CPU_ADAM_HOST_BYTES_PER_PARAM * n / host_bw, 0.0)
    nvme_o: FloatArray | float = 0.0
    if off.optimizer == "nvme":
        read = (o_b + MASTER_GRADIENT_BYTES) * n / (NVME_READ_BYTES_PER_S_PER_NODE / share)
        write = o_b * n / (NVME_WRITE_BYTES_PER_S_PER_NODE / share)
        nvme_o = np.where(on_o, read + write, 0.0)
    copy_back = np.where(on_o & ~on_p, w_b * n, 0.0)
    nvme_p: FloatArray | float = 0.0
    if off.params == "nvme":
        nvme_p = np.where(on_p, w_b * held / (NVME_WRITE_BYTES_PER_S_PER_NODE / share), 0.0)
    step = cpu_adam + nvme_o + copy_back / link + nvme_p

    link_bytes = m * (2.0 * accum + fetch) + np.where(on_o, MASTER_GRADIENT_BYTES * n, 0.0)
    return OffloadTimes(
        exposed=np.asarray(transfers + step),
        host_link_bytes=np.asarray(link_bytes + copy_back),
        optimizer_on_cpu=np.asarray(on_o),
    )
