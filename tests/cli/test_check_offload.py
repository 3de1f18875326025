"""Issue 28's acceptance: `check` on a DeepSpeed ZeRO-3 + CPU offload config for a 70B model
on 8 H100 prices it with offload. The config is DeepSpeed's own ZeRO-3 example with the
offload blocks of its ZeRO-Infinity example (tests/fixtures/stack_configs/README.md names the
source); the same config without the offload blocks does not fit.

Hand computation (Llama-3.1-70B, 70,553,706,496 parameters; mixed fp16 as the config's
``fp16.enabled``; ZeRO-3 over dp = 8 (128 = 1 × 16 × 8); DeepSpeed@edaa7221
stage3.py): without offload every GPU holds 2 + 2 + 12 = 16 bytes per parameter ÷ 8 =
141 GB > 80 GB. With ``offload_optimizer`` and ``offload_param`` on cpu none of it stays on
the GPU; the host holds 12 + 4 + 2 + 2 = 20 bytes per parameter ÷ 8 = 176 GB per GPU, 1,411 GB
per node of 8 GPUs, under the 2 TB default. HF's Trainer turns gradient checkpointing on in
the training script (not in this file), so the run is checked with --recompute full."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files import stack_configs as sc

FIXTURE = Path(__file__).parents[1] / "fixtures" / "stack_configs" / "deepspeed_zero3_offload.json"
P70 = 70_553_706_496
ARGS = ("--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--recompute", "full")


def _check(capsys: pytest.CaptureFixture[str], config: Path) -> tuple[int, dict[str, Any]]:
    status = main(["check", str(config), *ARGS, "--json"])
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return status, data


def test_the_reader_maps_both_offload_devices() -> None:
    imported = sc.read_config(FIXTURE)
    assert imported.stack == "deepspeed"
    assert imported.fields["training.offload_optimizer"] == "cpu"
    assert imported.fields["training.offload_params"] == "cpu"
    assert imported.fields["num_gpus"] == 8
    assert "zero_optimization.offload_optimizer.device" in imported.read
    assert "zero_optimization.offload_param.device" in imported.read


def test_check_prices_the_70b_zero3_cpu_offload_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, data = _check(capsys, FIXTURE)
    assert status == 0
    assert data["fits"] is True
    assert data["num_gpus"] == 8
    off = data["offload"]
    assert (off["optimizer"], off["params"]) == ("cpu", "cpu")
    assert off["host_bytes_per_gpu"] == pytest.approx(20 * P70 / 8, rel=1e-9)
    assert off["host_bytes_per_node"] == pytest.approx(20 * P70, rel=1e-9)
    assert off["host_fits"] is True
    # the step is priced, and offload adds at least CPU Adam's pass over host memory:
    # 34 bytes × P/8 ÷ (614.4 GB/s × 0.6 ÷ 8 GPUs)
    assert off["step_seconds"] >= 34 * P70 / 8 / (614.4e9 * 0.6 / 8) * (1 - 1e-9)
    assert data["step_seconds"] > off["step_seconds"]

    plain = json.loads(FIXTURE.read_text())
    del plain["zero_optimization"]["offload_optimizer"]
    del plain["zero_optimization"]["offload_param"]
    path = tmp_path / "ds_zero3.json"
    path.write_text(json.dumps(plain))
    status, data = _check(capsys, path)
    assert status == 1
    assert data["fits"] is False
    assert data["peak_bytes"] > 16 * P70 / 8 > data["capacity_bytes"]
    assert data["offload"] is None


def test_check_says_what_offload_costs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURE), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "offload: optimizer cpu, parameters cpu; host RAM 1,411 GB per node of 2,000 GB" in out
    assert "step time" in out


def test_export_writes_the_offload_blocks_back(tmp_path: Path) -> None:
    saved = tmp_path / "plan.llmplan.json"
    assert main(["import-config", str(FIXTURE), *ARGS, "--save", str(saved)]) == 0
    out = tmp_path / "ds_out.json"
    assert main(["export-config", str(saved), "--stack", "deepspeed", "--out", str(out)]) == 0
    zero = json.loads(out.read_text())["zero_optimization"]
    assert zero["offload_optimizer"]["device"] == "cpu"
    assert zero["offload_param"]["device"] == "cpu"
    again = sc.read_config(out)
    assert again.fields["training.offload_optimizer"] == "cpu"
    assert again.fields["training.offload_params"] == "cpu"


def test_accelerate_reads_and_writes_its_offload_devices(tmp_path: Path) -> None:
    """accelerate's DeepSpeed plugin keys (``deepspeed_config.offload_optimizer_device``,
    ``offload_param_device``, as ``accelerate config`` writes them)."""
    yaml = tmp_path / "accelerate.yaml"
    yaml.write_text(
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: DEEPSPEED\n"
        "deepspeed_config:\n"
        "  gradient_accumulation_steps: 1\n"
        "  offload_optimizer_device: cpu\n"
        "  offload_param_device: nvme\n"
        "  zero3_init_flag: true\n"
        "  zero_stage: 3\n"
        "mixed_precision: bf16\n"
        "num_machines: 1\n"
        "num_processes: 8\n"
    )
    imported = sc.read_config(yaml)
    assert imported.fields["training.offload_optimizer"] == "cpu"
    assert imported.fields["training.offload_params"] == "nvme"


def test_a_stack_without_zero_offload_says_it_cannot_state_it() -> None:
    """Megatron-LM's config has no DeepSpeed offload: the export lists it as unexpressed."""
    imported = sc.read_config(FIXTURE)
    from llm_planner.core.inputs.scenario import default_scenario

    scenario = sc.apply_import(default_scenario(), imported)
    exported = sc.export_config(scenario, "megatron")
    assert any("ZeRO offload (optimizer: cpu, parameters: cpu)" in n for n in exported.unexpressed)
