"""CPU activation offloading's time: the copies of the offloaded layers' activations to the
host in the forward and back in the backward, on a side stream that overlaps the layers'
compute (Transformer Engine's CPU offload, NVIDIA/TransformerEngine@d0067d0d
transformer_engine/pytorch/cpu_offload.py and docs/features/other_optimizations/
cpu_offloading/cpu_offloading.rst: "Transfers are asynchronous", "The faster the link, the
more effectively transfer time can be hidden behind computation"; PCIe Gen5 x16 128 GB/s and
GB200's NVLink-C2C 900 GB/s, both bidirectional; the links' rates per GPU are
:func:`.offload.host_link_bytes_per_s`). The memory it saves is
:func:`.sections.training_offload.held_layers`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

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
