"""ZeRO-Offload and ZeRO-Infinity (core/sections/training_offload.py, parallelism/
step_time_offload.py) against hand computations from DeepSpeed's source at
deepspeedai/DeepSpeed@edaa7221:

* stage_1_and_2.py / stage3.py: with ``offload_optimizer`` the fp32 master partition and the
  Adam moments (12 bytes per parameter with mixed precision) sit in host memory beside an
  fp32 gradient partition (4) and a 16-bit partition buffer (2); from ZeRO-2 the GPU keeps
  no gradient partition; with ``offload_param`` (ZeRO-3) the 16-bit partition (2) moves too;
* csrc/includes/cpu_adam.h: DeepSpeedCPUAdam reads the gradient, parameter and both moments
  and writes the last three (28 bytes), then ZeRO copies the fp32 partition into the 16-bit
  buffer (read 4, write 2): 34 bytes of host DRAM traffic per stepped parameter.

Llama-3.1-70B has 70,553,706,496 parameters (Meta's model card: "70B"; the exact count of
its config, which tests/core/test_architecture.py checks)."""

from __future__ import annotations

import pytest
from scenario_helpers import preset_scenario

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.training import (
    TrainingInputs,
    TrainingReport,
    estimate_training,
)
from llm_planner.core.sections.training_offload import OffloadReport

H100 = get_gpu("h100-sxm")
P70 = 70_553_706_496
ARCH = get_preset("llama-3.1-70b").architecture
BASE = TrainingInputs(stack="deepspeed", precision="mixed_bf16", seq_len=4096, recompute="full")
GB = 1e9


def _train(zero: int, dp: int = 8, **offload: object) -> TrainingReport:
    inputs = BASE.model_copy(update=offload)
    return estimate_training(ARCH, inputs, H100, dp=dp, zero_stage=zero, gpus_per_node=8)


def _off(report: TrainingReport) -> OffloadReport:
    assert report.offload is not None
    return report.offload


def test_the_model_has_the_published_count() -> None:
    assert count_parameters(ARCH).total == P70


def test_zero3_without_offload_keeps_16_bytes_per_param_on_the_gpu() -> None:
    r = _train(3)
    n = P70 / 8
    assert r.weights_bytes == pytest.approx(2 * n, rel=1e-9)
    assert r.gradients_bytes == pytest.approx(2 * n, rel=1e-9)
    assert r.optimizer_bytes == pytest.approx(12 * n, rel=1e-9)
    assert r.offload is None  # nothing offloaded: no host or NVMe part


def test_optimizer_offload_moves_optimizer_and_gradients_to_the_host() -> None:
    r = _train(3, offload_optimizer="cpu")
    n = P70 / 8
    assert r.weights_bytes == pytest.approx(2 * n, rel=1e-9)  # parameters stay
    assert r.gradients_bytes == 0.0
    assert r.optimizer_bytes == 0.0
    # 12 (master + m + v) + 4 (fp32 gradient partition) + 2 (16-bit buffer) per parameter
    assert _off(r).host_bytes == pytest.approx(18 * n, rel=1e-9)
    assert _off(r).host_bytes_per_node == pytest.approx(8 * 18 * n, rel=1e-9)


def test_optimizer_and_parameter_offload_leaves_no_state_on_the_gpu() -> None:
    without, with_ = _train(3), _train(3, offload_optimizer="cpu", offload_params="cpu")
    n = P70 / 8
    assert with_.persistent_bytes == 0.0
    assert _off(with_).host_bytes == pytest.approx(20 * n, rel=1e-9)  # 18 + the 2-byte partition
    # 70B on 8 H100: 141 GB of state per GPU without offload, 1,411 GB of host RAM per node
    assert without.persistent_bytes / GB == pytest.approx(141.1, abs=0.1)
    assert _off(with_).host_bytes_per_node / GB == pytest.approx(1411.1, abs=0.1)
    assert not without.fits
    assert with_.fits
    # the GPU peak falls by exactly the state that left (everything else is unchanged)
    drop = (without.peak_bytes - with_.peak_bytes) / (1 + BASE.fragmentation_fraction)
    assert drop == pytest.approx(16 * n, rel=1e-9)


def test_zero1_keeps_full_gradients_on_the_gpu() -> None:
    """ZeRO-1 reduces the full gradients on the GPU at the boundary (stage_1_and_2.py
    ``copy_grads_in_partition`` only under partitioned gradients), so they stay."""
    without, with_ = _train(1), _train(1, offload_optimizer="cpu")
    assert with_.gradients_bytes == without.gradients_bytes == pytest.approx(2 * P70, rel=1e-9)
    assert with_.optimizer_bytes == 0.0
    assert _off(with_).host_bytes == pytest.approx(18 * P70 / 8, rel=1e-9)


def test_nvme_keeps_only_swap_buffers_in_host_memory() -> None:
    r = _train(3, offload_optimizer="nvme", offload_params="nvme")
    n = P70 / 8
    # optimizer: 16-bit buffer (2n) + buffer_count 4 × sub_group_size 1e9 fp32 elements;
    # parameters: buffer_count 5 × buffer_size 1e8 elements of 2 bytes
    assert _off(r).host_bytes == pytest.approx(2 * n + 4 * 1e9 * 4 + 5 * 1e8 * 2, rel=1e-9)
    # NVMe: 12 (optimizer) + 4 (fp32 gradients) + 2 (parameters) per parameter
    assert _off(r).nvme_bytes == pytest.approx(18 * n, rel=1e-9)


def test_host_ram_over_the_stated_node_memory_does_not_fit() -> None:
    r = _train(3, offload_optimizer="cpu", offload_params="cpu", host_memory_bytes_per_node=1e12)
    assert r.peak_bytes <= r.capacity_bytes
    assert not _off(r).host_fits
    assert not r.fits


def test_parameter_offload_needs_zero3() -> None:
    r = _train(2, offload_params="cpu")
    assert r.weights_bytes == pytest.approx(2 * P70, rel=1e-9)
    assert _off(r).host_bytes == 0.0
    assert _off(r).notes == ["parameter offload needs ZeRO-3: not applied at stage 2"]


def _scenario(**training: object) -> Scenario:
    changes: dict[str, object] = {
        "parallelism.zero_stage": 3,
        "parallelism.global_batch": 8,  # one micro-batch per GPU per step: m = 1
        "training.stack": "deepspeed",
        "training.recompute": "full",
    }
    changes.update({f"training.{k}": v for k, v in training.items()})
    return preset_scenario("llama-3.1-70b", "h100-sxm", 8, **changes)


def test_cpu_adam_and_the_copy_back_are_the_offload_time() -> None:
    """Optimizer offload at m = 1: the fp32 gradients go down while the backward runs
    (hidden); the step is CPU Adam over n = P/8 parameters at 34 bytes each over this GPU's
    eighth of the node's host bandwidth (2 sockets × 8 channels × 38.4 GB/s × 0.6), then the
    16-bit partition back over PCIe 5.0 x16 at 80% (63.0 × 0.8 GB/s); the GPU's own Adam
    step is gone."""
    without = estimate(_scenario()).parallelism
    with_ = estimate(_scenario(offload_optimizer="cpu")).parallelism
    n = P70 / 8
    host_bw = 2 * 8 * 38.4e9 * 0.6 / 8
    link = 32e9 * 16 / 8 * 128 / 130 * 0.8
    expected = 34 * n / host_bw + 2 * n / link
    assert expected == pytest.approx(6.857, abs=1e-3)
    assert with_.time_breakdown_seconds["offload"] == pytest.approx(expected, rel=1e-9)
    gpu_adam = without.time_breakdown_seconds["compute"] - with_.time_breakdown_seconds["compute"]
    assert gpu_adam > 0
    assert with_.step_seconds - without.step_seconds == pytest.approx(expected - gpu_adam, rel=1e-6)


def test_a_slow_host_link_exposes_the_parameter_fetches() -> None:
    """At 1 GB/s the parameter fetches outlast the micro-batch's compute t_c they are
    prefetched behind: each layer's 16-bit partition (2n bytes) comes up for the forward, the
    recomputed forward (full recomputation) and the backward, 3 × 2n; the fp32 gradients
    going down (4n) hide behind the backward's 2/3 of t_c, less exposed; PCIe is full duplex,
    so the larger exposed direction counts. Parameters on the host: no 16-bit copy back."""
    r = estimate(
        _scenario(offload_optimizer="cpu", offload_params="cpu", pcie_bandwidth_bytes_per_s=1e9)
    ).parallelism
    n = P70 / 8
    t_c = r.time_breakdown_seconds["compute"]  # m = 1 and no GPU Adam step
    host_bw = 2 * 8 * 38.4e9 * 0.6 / 8
    h2d = 3 * 2 * n / 1e9 - t_c
    d2h = 4 * n / 1e9 - 2 / 3 * t_c
    assert h2d > d2h > 0
    assert r.time_breakdown_seconds["offload"] == pytest.approx(h2d + 34 * n / host_bw, rel=1e-9)


def test_fit_offers_zero3_with_cpu_offload_when_no_layout_of_these_gpus_fits() -> None:
    """70B on 8 H100 at ZeRO-1: 16 bytes per parameter do not fit 80 GB in any layout of 8
    GPUs (ZeRO-3 alone: 141 GB of state per GPU); DeepSpeed's CPU optimizer offload takes
    12 + 2 of them off the GPU (2n weights left = 17.6 GB) and costs the offload time."""
    scenario = preset_scenario(
        "llama-3.1-70b",
        "h100-sxm",
        8,
        **{"training.stack": "deepspeed", "parallelism.zero_stage": 1, "compute.tokens": 1e11},
    )
    report = estimate(scenario)
    assert not report.training.fits
    offload = [s for s in report.training_fit_suggestions if "CPU optimizer offload" in s.label]
    assert offload, [s.label for s in report.training_fit_suggestions]
    suggestion = offload[0]
    assert suggestion.changes["parallelism.zero_stage"] == 3
    assert suggestion.changes["training.offload_optimizer"] == "cpu"
    after = estimate(with_changes(scenario, suggestion.changes))
    assert after.training.fits
    assert after.training.weights_bytes == pytest.approx(2 * P70 / 8, rel=1e-9)
    assert suggestion.wall_seconds == after.compute.wall_seconds
    assert after.parallelism.time_breakdown_seconds["offload"] > 0


def test_fit_does_not_offer_offload_when_a_layout_change_fits() -> None:
    scenario = preset_scenario("llama-3.1-8b", "h100-sxm", 8, **{"training.micro_batch": 16})
    labels = [s.label for s in estimate(scenario).training_fit_suggestions]
    assert any(label.startswith("micro-batch 16 → 1") for label in labels), labels
    assert not any("offload" in label for label in labels)


def test_the_fewest_gpus_search_counts_from_one_when_state_is_offloaded() -> None:
    """The fewest-GPUs search starts at model state ÷ GPU memory (8.03e9 × 16 bytes = 128 GB
    over 80 GB: 2 GPUs) because every byte of state must live on some GPU; with ZeRO offload
    it need not. Llama-3.1-8B with optimizer and parameters on the CPU fits one H100 (the
    scenario on one GPU says so), so the fewest is 1, not 2."""
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.scenario import default_scenario
    from llm_planner.core.inputs.scenario import with_changes

    offload = {
        "training.offload_optimizer": "cpu",
        "training.offload_params": "cpu",
        "parallelism.zero_stage": 3,
    }
    one = with_changes(
        default_scenario(), {**offload, "num_gpus": 1, "parallelism.global_batch": 1}
    )
    assert estimate(one, suggest=False).training.fits
    report = estimate(with_changes(default_scenario(), offload), suggest=False)
    assert report.parallelism.gpus_per_instance == 1
    assert estimate(default_scenario(), suggest=False).parallelism.gpus_per_instance > 1
