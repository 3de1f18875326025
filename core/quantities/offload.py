"""ZeRO-Offload and ZeRO-Infinity: what DeepSpeed moves off the GPU, and the host links
and memories it then runs over.

Read from DeepSpeed at deepspeedai/DeepSpeed@edaa7221 (deepspeed/runtime/zero/
offload_config.py, stage_1_and_2.py, stage3.py, csrc/includes/cpu_adam.h) and the papers
(Ren et al. 2021, "ZeRO-Offload", USENIX ATC, section 4; Rajbhandari et al. 2021,
"ZeRO-Infinity", arXiv:2104.07857, section 5):

* ``offload_optimizer`` (stage 1, 2 or 3): the fp32 master partition and the optimizer
  moments live in (pinned) host memory, with an fp32 gradient partition beside them
  (stage_1_and_2.py ``initialize_optimizer_states``: ``single_partition_of_fp32_groups[i]
  .grad`` on the host) and a 16-bit copy of the partition (``param_buffer_of_bit16_for_
  cpu_offload_groups``; stage3.py keeps its 16-bit gradient partition buffer on the host
  instead). DeepSpeedCPUAdam steps on the CPU; the 16-bit partition is copied back to the
  GPU. With ``device: nvme`` the optimizer state and fp32 gradients are swapped to NVMe
  through ``buffer_count`` host buffers; the step still runs on the CPU.
* ``offload_param`` (stage 3 only): the 16-bit parameter partitions live on the host (or
  NVMe through ``buffer_count`` × ``buffer_size`` host buffers); each layer's partition
  is copied to the GPU before its all-gather, in the forward and again in the backward.
"""

from __future__ import annotations

PCIE_GEN3_X16_BYTES_PER_S = 8e9 * 16 / 8 * 128 / 130
"""PCIe 3.0 x16, one direction: 8 GT/s × 16 lanes, 128b/130b encoding ≈ 15.8 GB/s
(PCI-SIG, PCI Express Base Specification 3.0)."""
PCIE_GEN4_X16_BYTES_PER_S = 2 * PCIE_GEN3_X16_BYTES_PER_S
"""PCIe 4.0 x16, one direction: 16 GT/s ≈ 31.5 GB/s (PCI Express Base Specification 4.0)."""
PCIE_GEN5_X16_BYTES_PER_S = 4 * PCIE_GEN3_X16_BYTES_PER_S
"""PCIe 5.0 x16, one direction: 32 GT/s ≈ 63 GB/s (PCI Express Base Specification 5.0)."""
NVLINK_C2C_BYTES_PER_S = 450e9
"""Grace's NVLink-C2C to its GPU, one direction: 900 GB/s bidirectional (NVIDIA GH200 and
GB200 datasheets)."""

PCIE_ACHIEVED_FRACTION = 0.8
"""Share of the link rate a pinned host↔device copy reaches (an assumption: packet headers
and flow control take ~15-20%; an A100 on PCIe 4.0 x16 copies ~25 GB/s of the 31.5)."""

_HOST_LINKS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("gh200", "gb200", "gb300"), NVLINK_C2C_BYTES_PER_S),
    (
        (
            "h100",
            "h800",
            "h200",
            "h20",
            "b100",
            "b200",
            "b300",
            "mi300",
            "mi325",
            "mi355",
            "rtx-pro-6000",
            "rtx-5090",
        ),
        PCIE_GEN5_X16_BYTES_PER_S,
    ),
    (("v100", "t4"), PCIE_GEN3_X16_BYTES_PER_S),
)
"""Host link of each GPU family by catalog id prefix (the datasheets: H100/H200/B200
HGX and MI300X on PCIe 5.0 x16, A100/L40S/RTX 4090 on 4.0, V100 and T4 on 3.0); any other
GPU: PCIe 4.0 x16."""


def host_link_bytes_per_s(gpu_id: str) -> float:
    """Achieved host↔GPU bandwidth per GPU, one direction: the GPU's host link
    (:data:`_HOST_LINKS`) × :data:`PCIE_ACHIEVED_FRACTION`."""
    for prefixes, rate in _HOST_LINKS:
        if gpu_id.startswith(prefixes):
            return rate * PCIE_ACHIEVED_FRACTION
    return PCIE_GEN4_X16_BYTES_PER_S * PCIE_ACHIEVED_FRACTION


OFFLOAD_HOST_MEMORY_BYTES_PER_NODE = 2e12
"""Host RAM per node offloaded state may use: a DGX H100's 2 TB system memory (NVIDIA DGX
H100 datasheet), the default the host check compares with (an input)."""

HOST_MEMORY_BANDWIDTH_BYTES_PER_S_PER_NODE = 2 * 8 * 4800e6 * 8 * 0.6
"""Achieved host DRAM bandwidth per node: a DGX H100's two Xeon Platinum 8480C with 8
channels of DDR5-4800 each (2 · 8 · 38.4 GB/s = 614 GB/s peak; DGX H100 datasheet and
Intel's ark page) × 0.6, the share a multi-threaded streaming kernel reaches (an
assumption); the node's GPUs share it."""

NVME_READ_BYTES_PER_S_PER_NODE = 8 * 7.0e9
NVME_WRITE_BYTES_PER_S_PER_NODE = 8 * 3.8e9
"""A DGX H100's 8 × 3.84 TB NVMe U.2 data drives (DGX H100 datasheet) striped, each a PCIe
4.0 drive of ~7.0 GB/s sequential read and ~3.8 GB/s write (Samsung PM1733 3.84 TB
datasheet); DeepSpeed's async I/O reaches near the drives' rate (ZeRO-Infinity section
6.3). The node's GPUs share them."""

CPU_ADAM_HOST_BYTES_PER_PARAM = 4 + 2 * (4 + 4 + 4) + 4 + 2
"""Host DRAM bytes per stepped parameter: DeepSpeedCPUAdam's ``Step_AVX`` loads the fp32
gradient, parameter, exp_avg and exp_avg_sq and stores the last three
(csrc/includes/cpu_adam.h: 4 + 12 + 12), then ZeRO copies the fp32 partition into the
16-bit buffer (stage_1_and_2.py ``bit16_partition_buffer.data.copy_``: read 4, write 2)."""

MASTER_GRADIENT_BYTES = 4.0
"""The fp32 gradient partition ZeRO-Offload keeps beside the master weights
(``master_weights_and_grads_dtype``, fp32 by default)."""

OPTIMIZER_SWAP_BUFFERS = 4
"""``offload_optimizer.buffer_count`` default (offload_config.py)."""
PARAM_SWAP_BUFFERS = 5
PARAM_SWAP_BUFFER_ELEMENTS = 1e8
"""``offload_param.buffer_count`` and ``buffer_size`` defaults (offload_config.py)."""
SUB_GROUP_ELEMENTS = 1e9
"""``zero_optimization.sub_group_size`` default (deepspeed/runtime/zero/config.py): the
optimizer state swaps one sub-group at a time."""
