"""CPU activation offloading (training.activation_offload_layers): Megatron-Core's
``cpu_offloading_num_layers`` through Transformer Engine's CPU offload, which keeps
``(num_layers - num_offloaded_layers) * T`` of activations on the GPU
(NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/cpu_offload.py).

Llama 3.1 8B on one H100 (32 layers, one stage, one micro-batch in flight)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.sections.training_memory import held_layers

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
