"""CPU activation offloading's time: the copies of the offloaded layers' activations to the
host in the forward and back in the backward, on a side stream that overlaps the layers'
compute (Transformer Engine's CPU offload, NVIDIA/TransformerEngine@d0067d0d
transformer_engine/pytorch/cpu_offload.py and docs/features/other_optimizations/
cpu_offloading/cpu_offloading.rst: "Transfers are asynchronous", "The faster the link, the
more effectively transfer time can be hidden behind computation"; PCIe Gen5 x16 128 GB/s and
GB200's NVLink-C2C 900 GB/s, both bidirectional). The memory it saves is
:func:`.sections.training_memory.held_layers`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

NVLINK_C2C_BYTES_PER_S = 450e9
"""Grace's NVLink-C2C to its GPU, one direction: 900 GB/s bidirectional (Transformer
Engine's CPU-offloading page above; NVIDIA GH200/GB200 datasheets)."""
PCIE_GEN5_X16_BYTES_PER_S = 64e9
"""PCIe Gen5 x16, one direction: 128 GB/s bidirectional (Transformer Engine's page above)."""
PCIE_GEN4_X16_BYTES_PER_S = 32e9
"""PCIe Gen4 x16, one direction (half of Gen5's rate)."""
HOST_LINK_ACHIEVED_FRACTION = 0.8
"""Share of the link rate a pinned host-device copy reaches (an assumption: packet headers
and flow control take ~15-20%)."""

_C2C = ("gh200", "gb200", "gb300")
_GEN5 = ("h100", "h200", "h800", "h20", "b200", "b300", "mi300", "mi325", "mi355")


def host_link_bytes_per_s(gpu_id: str) -> float:
    """Achieved host-GPU copy rate per GPU, one direction, by catalog id: NVLink-C2C on the
    Grace superchips, PCIe Gen5 x16 on HGX H100/H200/B200/B300 and MI300-class boards, Gen4
    otherwise; × :data:`HOST_LINK_ACHIEVED_FRACTION`."""
    if gpu_id.startswith(_C2C):
        rate = NVLINK_C2C_BYTES_PER_S
    elif gpu_id.startswith(_GEN5):
        rate = PCIE_GEN5_X16_BYTES_PER_S
    else:
        rate = PCIE_GEN4_X16_BYTES_PER_S
    return rate * HOST_LINK_ACHIEVED_FRACTION


FORWARD_SHARE = 1.0 / 3.0
"""Share of a micro-batch's compute in the forward pass (backward = 2 × forward: the
data- and weight-gradient GEMMs; Narayanan et al. 2021, section 3.5)."""


def exposed_seconds(
    offloaded_bytes: npt.ArrayLike, compute_seconds: npt.ArrayLike, link_bytes_per_s: float
) -> FloatArray:
    """Seconds per micro-batch the activation copies add to the step: the device-to-host
    copy of ``offloaded_bytes`` runs during the forward (``FORWARD_SHARE`` of
    ``compute_seconds``), the host-to-device copy back during the backward (the rest), each
    on one direction of the full-duplex host link at ``link_bytes_per_s``; whatever a copy
    takes beyond the pass it overlaps is exposed. Assumptions: the copies start as each
    layer's forward ends and the reloads run one layer ahead of the backward, so the whole
    pass is the window; the HBM bandwidth the copies take from the compute is not counted
    (Transformer Engine's page warns it may slow memory-bound kernels)."""
    copy = np.asarray(offloaded_bytes, dtype=np.float64) / link_bytes_per_s
    compute = np.asarray(compute_seconds, dtype=np.float64)
    forward = compute * FORWARD_SHARE
    backward = compute - forward
    return np.maximum(copy - forward, 0.0) + np.maximum(copy - backward, 0.0)
