"""The training inputs that move state or traffic between the GPU and the host, and
Megatron's precision switches on stored dtypes: ZeRO-Offload / ZeRO-Infinity, the host
memory and link, CPU activation offloading, low-precision parameters, 16-bit gradient
reduce. Part of :data:`.registry.INPUTS` (split out to keep each module under 800 lines)."""

from __future__ import annotations

from llm_planner.core.inputs.registry_units import BANDWIDTH, BYTES, TRAINING, WHOLE, Input

OFFLOAD_DEVICES = ("none", "cpu", "nvme")
"""DeepSpeed's offload devices (``OffloadDeviceEnum``); the scenario validates them."""

HOST_INPUTS: tuple[Input, ...] = (
    Input(
        "training.offload_optimizer",
        "Offload optimizer",
        "DeepSpeed ZeRO-Offload: optimizer state and fp32 gradients on the host (cpu) or "
        "NVMe, Adam stepped on the CPU (ZeRO 1-3; default none)",
        kind="choice",
        flag="--offload-optimizer",
        group=TRAINING,
        metavar="none|cpu|nvme",
        names=lambda: OFFLOAD_DEVICES,
    ),
    Input(
        "training.offload_params",
        "Offload parameters",
        "DeepSpeed ZeRO-Infinity: 16-bit parameter partitions on the host (cpu) or NVMe, "
        "fetched per layer (ZeRO-3 only; default none)",
        kind="choice",
        flag="--offload-params",
        group=TRAINING,
        metavar="none|cpu|nvme",
        names=lambda: OFFLOAD_DEVICES,
    ),
    Input(
        "training.host_memory_bytes_per_node",
        "Host RAM per node",
        "host memory per node offloaded state may use (default 2 TB, a DGX H100's)",
        BYTES,
        flag="--host-memory",
        group=TRAINING,
    ),
    Input(
        "training.pcie_bandwidth_bytes_per_s",
        "Host link per GPU",
        "achieved host-GPU bandwidth per GPU for offload (empty: the GPU's PCIe "
        "generation, e.g. 25 GB/s on PCIe 4.0, 50 GB/s on 5.0)",
        BANDWIDTH,
        flag="--host-link-bandwidth",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.activation_offload_layers",
        "Activation offload (layers)",
        "layers per pipeline stage whose activations go to host memory and back (Megatron "
        "--cpu-offloading-num-layers; default 0)",
        WHOLE,
        flag="--activation-offload-layers",
        group=TRAINING,
    ),
    Input(
        "training.low_precision_params",
        "Low-precision parameters",
        "FP8/FP4 recipes: the layers' matrices kept only in FP8/FP4, no 16-bit copy, and "
        "all-gathered so (Megatron --fp8-param-gather; default off)",
        kind="switch",
        flag="--low-precision-params",
        group=TRAINING,
    ),
    Input(
        "training.grad_reduce_16bit",
        "16-bit gradient reduce",
        "main gradients kept and reduced in 16 bits, not fp32 (Megatron "
        "--grad-reduce-in-bf16; default off)",
        kind="switch",
        flag="--grad-reduce-16bit",
        group=TRAINING,
    ),
)
"""In the order the command line's help and the generated docs list them."""
