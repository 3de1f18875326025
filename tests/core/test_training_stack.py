"""The training stack a scenario names (issue 14): a Hugging Face config import defaults to
the Hugging Face stack, presets keep Megatron; ``--stack`` sets it from the command line;
the activation profile follows the stack unless it was chosen by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files.hf_import import architecture_from_path, training_fields
from llm_planner.core.inputs.training import TrainingInputs, stack_fields
from llm_planner.core.quantities.stacks import STACK_NAMES, STACKS

HF = Path(__file__).parent.parent / "fixtures" / "hf"
LLAMA_DIR = HF / "llama-3.1-8b"


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


# ------------------------------------------------------------------ core


def test_a_stack_brings_its_activation_profile_unless_one_was_chosen() -> None:
    # the default scenario: Megatron with its fused-kernel profile
    inputs = TrainingInputs()
    assert (inputs.stack, inputs.implementation) == ("megatron", "megatron")
    assert inputs.with_stack("hf") == {"stack": "hf", "implementation": "pytorch"}
    # a profile chosen by hand (not the current stack's default) stays under the new stack
    edited = TrainingInputs(implementation="pytorch-cpu")
    assert edited.with_stack("deepspeed") == {"stack": "deepspeed"}
    # from a dumped dict (what the command line edits), and an unset profile
    assert stack_fields("nanotron", current_stack="megatron", current_implementation=None) == {
        "stack": "nanotron",
        "implementation": STACKS["nanotron"].implementation,
    }
    with pytest.raises(ValueError, match="known: megatron"):
        inputs.with_stack("colossalai")


def test_a_hugging_face_config_import_defaults_to_the_hf_stack() -> None:
    imported = architecture_from_path(LLAMA_DIR)
    fields = training_fields(imported, TrainingInputs())
    assert fields == {"stack": "hf", "implementation": "pytorch"}
    # the profile and precision stay editable under the stack
    inputs = TrainingInputs(**fields, precision="mixed_bf16_fp32_grads")
    assert inputs.model_copy(update={"implementation": "megatron"}).implementation == "megatron"
    assert inputs.precision == "mixed_bf16_fp32_grads"
    # a GGUF file is an inference format: it implies no training stack
    gguf = imported.model_copy(update={"model_type": "gguf:llama"})
    assert training_fields(gguf, TrainingInputs()) == {}


# ------------------------------------------------------------------ command line


def test_report_with_an_imported_config_runs_on_the_hf_stack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # without recompute (the Hugging Face stack's selective is whole-layer checkpointing)
    none = ("--recompute", "none")
    imported = _report(capsys, "--model", str(LLAMA_DIR / "config.json"), *none)
    assert imported["training"]["stack"] == "hf"
    assert imported["training"]["stack_name"] == STACK_NAMES["hf"]
    preset = _report(capsys, "--model", "llama-3.1-8b", *none)
    assert preset["training"]["stack"] == "megatron"
    # the HF modules save more than Megatron's fused kernels for the same model
    assert imported["training"]["activations_bytes"] > preset["training"]["activations_bytes"]
    # --implementation overrides the stack's profile; --stack overrides the import's stack
    mixed = _report(capsys, "--model", str(LLAMA_DIR), "--implementation", "megatron", *none)
    assert mixed["training"]["stack"] == "hf"
    assert mixed["training"]["activations_bytes"] == preset["training"]["activations_bytes"]
    ds = _report(capsys, "--model", str(LLAMA_DIR), "--stack", "deepspeed")
    assert ds["training"]["stack"] == "deepspeed"


@pytest.mark.parametrize("stack", list(STACKS))
def test_stack_option_sets_training_stack(capsys: pytest.CaptureFixture[str], stack: str) -> None:
    assert _report(capsys, "--stack", stack)["training"]["stack"] == stack


def test_stack_option_accepts_the_accelerate_alias(capsys: pytest.CaptureFixture[str]) -> None:
    assert _report(capsys, "--stack", "accelerate")["training"]["stack"] == "hf"


def test_a_bad_stack_is_one_line_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--stack", "colossalai"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--stack" in err
    assert "colossalai" in err
    assert "megatron" in err  # it lists the known names


def test_help_lists_the_stack_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for stack in STACKS:
        assert stack in out
    assert "--stack S" in out


def test_import_config_gives_the_config_stack_its_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DeepSpeed JSON puts the run on DeepSpeed with the profile of the HF modules it
    wraps (its StackProfile), not the default Megatron profile."""
    config = tmp_path / "ds.json"
    config.write_text(
        json.dumps({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})
    )
    assert main(["import-config", str(config), "--json"]) == 0
    scenario = json.loads(capsys.readouterr().out)["scenario"]
    training = scenario["training"]
    assert training["stack"] == "deepspeed"
    assert training["implementation"] == STACKS["deepspeed"].implementation
