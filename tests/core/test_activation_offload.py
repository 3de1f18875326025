"""CPU activation offloading (training.activation_offload_layers): Megatron-Core's
``cpu_offloading_num_layers`` through Transformer Engine's CPU offload, which keeps
``(num_layers - num_offloaded_layers) * T`` of activations on the GPU
(NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/cpu_offload.py).

Llama 3.1 8B on one H100 (32 layers, one stage, one micro-batch in flight)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.sections.training_offload import held_layers

from .test_precision_switches import _scenario


def test_held_layers_by_hand() -> None:
    """80 layers, 40 offloaded: 40 stay; 0 offloaded: all 80; asking for all 80 keeps the
    last one (Megatron requires cpu_offloading_num_layers < num_layers)."""
    assert held_layers(80, 40) == 40
    assert held_layers(80, 0) == 80
    assert held_layers(80, 80) == 1
    assert np.array_equal(held_layers(np.array([20.0, 2.0]), 5), np.array([15.0, 1.0]))


def test_offloaded_layers_leave_the_gpu() -> None:
    """16 of the 32 layers offloaded: the activations drop by 16 layers' worth; the weights,
    gradients and optimizer state do not move."""
    base = estimate(_scenario("mixed_bf16"), suggest=False).training
    off = estimate(_scenario("mixed_bf16", activation_offload_layers=16), suggest=False).training
    per_layer = base.activations_per_layer_bytes
    assert per_layer > 0
    assert base.activations_bytes - off.activations_bytes == pytest.approx(16 * per_layer)
    assert (off.weights_bytes, off.optimizer_bytes) == (base.weights_bytes, base.optimizer_bytes)


def test_megatron_export_carries_the_offloaded_layers() -> None:
    """Exported as --cpu-offloading-num-layers 16 (Megatron turns cpu_offloading on with it)
    and read back."""
    from llm_planner.core.files.stack_configs import megatron
    from llm_planner.core.files.stack_configs.plan import launch_plan

    text = megatron.export(launch_plan(_scenario("mixed_bf16", activation_offload_layers=16))).text
    assert "--cpu-offloading-num-layers 16" in text
    fields = megatron.parse(text, "exported").fields
    assert fields["training.activation_offload_layers"] == 16


def test_copies_hidden_behind_compute_until_the_link_is_too_slow() -> None:
    """40 layers × 3.9 GB = 156 GB per micro-batch: on NVLink-C2C at 360 GB/s achieved one
    way the copy takes 0.433 s; a 3 s micro-batch (forward 1 s, backward 2 s) hides it; on
    PCIe Gen5 at 50 GB/s it takes 3.12 s: 2.12 s exposed in the forward, 1.12 s in the
    backward."""
    from llm_planner.core.quantities.activation_offload import exposed_seconds

    assert float(exposed_seconds(156e9, 3.0, 360e9)) == 0.0
    assert float(exposed_seconds(156e9, 3.0, 50e9)) == pytest.approx(2.12 + 1.12)


def test_the_copies_on_the_step_time() -> None:
    """Llama 3.1 8B, one micro-batch of 4,096 tokens: each offloaded layer copies what it
    keeps (the report's activations per layer, a) over the H100's PCIe Gen5 x16: 32 GT/s ×
    16 lanes × 128/130 ÷ 8 = 63.0 GB/s one way, × 0.8 achieved. With 31 layers the copy
    C31 = 31·a/link outlasts both passes: exposed 2·C31 − t_c, which gives the
    micro-batch's compute t_c; with 16 layers it outlasts the forward only (t_c/3):
    exposed C16 − t_c/3. On GB200 (NVLink-C2C, 0.8 × 450 GB/s) 16 layers' copies hide
    behind the compute; without offload nothing is added."""
    from llm_planner.core.primitives.gpus import get_gpu

    def report(gpu: str, n: int):  # type: ignore[no-untyped-def]
        sc = _scenario("mixed_bf16", activation_offload_layers=n)
        return estimate(sc.model_copy(update={"gpu": get_gpu(gpu)}), suggest=False)

    link = 0.8 * 32e9 * 16 / 8 * 128 / 130
    per_layer = report("h100-sxm", 0).training.activations_per_layer_bytes
    off31 = report("h100-sxm", 31).parallelism.time_breakdown_seconds["offload"]
    off16 = report("h100-sxm", 16).parallelism.time_breakdown_seconds["offload"]
    t_c = 2 * 31 * per_layer / link - off31
    compute = report("h100-sxm", 0).parallelism.time_breakdown_seconds["compute"]
    assert 0 < t_c < compute
    assert off16 == pytest.approx(16 * per_layer / link - t_c / 3, rel=1e-9)
    assert report("h100-sxm", 0).parallelism.time_breakdown_seconds["offload"] == 0.0
    assert report("gb200", 16).parallelism.time_breakdown_seconds["offload"] == 0.0
