"""Precision names people type (issue 28): Lightning's, Hugging Face's and torch's names
read as the recipe they mean, ``bf16`` no longer silently pure bf16, and v2 files keeping
their meaning.

Each expected recipe is written here from what the stack means by the name (sources
below), not read back from the alias table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_planner.cli import main
from llm_planner.core.files.migrations import migrate
from llm_planner.core.files.store import load_scenario_file
from llm_planner.core.quantities.optimizers import (
    PRECISION_ALIASES,
    PRECISIONS,
    get_optimizer,
    resolve_precision,
    state_bytes_per_param,
)
from llm_planner.core.sections.training import TrainingInputs

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scenarios"

# (typed, recipe id): what each stack means by the name.
# Lightning lightning/fabric/plugins/precision/precision.py:
#   _PRECISION_INPUT_STR_ALIAS_CONVERSION = {"64": "64-true", "32": "32-true",
#   "16": "16-mixed", "bf16": "bf16-mixed"}; "*-mixed" = autocast over fp32 parameters.
# Hugging Face TrainingArguments: --bf16 / --fp16 = bf16 / fp16 (mixed) precision.
TYPED_PRECISIONS = [
    ("bf16", "mixed_bf16"),
    ("--bf16", "mixed_bf16"),
    ("bf16-mixed", "mixed_bf16"),
    ("BF16_MIXED", "mixed_bf16"),
    ("bfloat16", "mixed_bf16"),
    ("fp16", "mixed_fp16"),
    ("16-mixed", "mixed_fp16"),
    ("16", "mixed_fp16"),
    ("float16", "mixed_fp16"),
    ("bf16-true", "pure_bf16"),
    ("32-true", "fp32"),
    ("32", "fp32"),
    ("mixed-bf16", "mixed_bf16"),  # the id with a dash
]


@pytest.mark.parametrize(("typed", "recipe_id"), TYPED_PRECISIONS)
def test_precision_names_mean_what_the_stacks_mean(typed: str, recipe_id: str) -> None:
    recipe, reading = resolve_precision(typed)
    assert recipe.id == recipe_id
    if typed.replace("-", "_") != recipe_id:
        assert reading is not None
        assert recipe_id in reading


def test_bf16_is_not_pure_bf16() -> None:
    """The issue's complaint: ``bf16`` gave the pure recipe (8 bytes per parameter with
    Adam) instead of mixed bf16 with fp32 master weights and moments: 2 + 2 + 12 = 16
    (Rajbhandari et al. 2019, section 3.1)."""
    adam = get_optimizer("adamw")
    recipe, reading = resolve_precision("bf16")
    per = state_bytes_per_param(recipe, adam)
    assert (per.weights, per.gradients, per.optimizer) == (2, 2, 12)
    pure = state_bytes_per_param(resolve_precision("pure_bf16")[0], adam)
    assert (pure.weights, pure.gradients, pure.optimizer) == (2, 2, 4)
    assert reading is not None
    assert "pure_bf16" in reading  # the echo says how to ask for the pure recipe


def test_canonical_ids_are_read_silently() -> None:
    for recipe_id in PRECISIONS:
        recipe, reading = resolve_precision(recipe_id)
        assert recipe.id == recipe_id
        assert reading is None


def test_every_precision_alias_names_a_recipe() -> None:
    for alias, (recipe_id, whose) in PRECISION_ALIASES.items():
        assert recipe_id in PRECISIONS, alias
        assert whose.strip(), alias


def test_names_without_a_recipe_are_refused_with_suggestions() -> None:
    # Lightning's "16-true" is pure fp16: no such recipe here; it must not become another.
    with pytest.raises(ValueError, match="did you mean") as caught:
        resolve_precision("16-true")
    assert "unknown precision '16-true'" in str(caught.value)


def test_scenario_files_read_the_same_names() -> None:
    """The window opens files through the same validation: a hand-written file that says
    ``bf16-mixed`` means the recipe the command line reads for it."""
    assert TrainingInputs(precision="bf16-mixed").precision == "mixed_bf16"
    assert TrainingInputs(precision="16-mixed").precision == "mixed_fp16"
    assert TrainingInputs(precision="bf16-true").precision == "pure_bf16"
    with pytest.raises(ValueError, match="16-true"):
        TrainingInputs(precision="16-true")


def test_cli_precision_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--precision", "bf16-mixed", "--num-gpus", "8", "--json"]) == 0
    named = capsys.readouterr()
    assert main(["report", "--precision", "mixed_bf16", "--num-gpus", "8", "--json"]) == 0
    by_id = capsys.readouterr()
    assert json.loads(named.out) == json.loads(by_id.out)
    assert "'bf16-mixed' read as mixed_bf16" in named.err
    assert main(["report", "--precision", "bf16", "--num-gpus", "8", "--json"]) == 0
    plain = capsys.readouterr()
    assert json.loads(plain.out) == json.loads(by_id.out)
    # a stack that runs the recipe as named (DeepSpeed) against one that has no pure bf16
    # (Megatron-LM: --bf16 always keeps fp32 main params and moments)
    args = ["report", "--num-gpus", "8", "--json", "--stack", "deepspeed"]
    assert main([*args, "--precision", "pure_bf16"]) == 0
    pure = json.loads(capsys.readouterr().out)
    assert main([*args, "--precision", "mixed_bf16"]) == 0
    mixed = json.loads(capsys.readouterr().out)
    assert main(["report", "--num-gpus", "8", "--json", "--precision", "pure_bf16"]) == 0
    megatron = json.loads(capsys.readouterr().out)
    # Llama-3.1-8B (8,030,261,248 parameters, counted by transformers on the meta device)
    # on 8 GPUs, ZeRO-1: Adam's fp32 moments and master copy are 12 bytes per parameter
    # mixed, 4 (bf16 moments) pure, each sharded over dp = 8.
    p = 8_030_261_248
    assert mixed["training"]["optimizer_bytes"] == pytest.approx(12 * p / 8, rel=1e-9)
    assert pure["training"]["optimizer_bytes"] == pytest.approx(4 * p / 8, rel=1e-9)
    assert megatron["training"]["optimizer_bytes"] == pytest.approx(12 * p / 8, rel=1e-9)
    assert main(["report", "--precision", "16-true"]) == 2
    assert "argument --precision" in capsys.readouterr().err


def test_v2_pure_bf16_file_keeps_its_meaning() -> None:
    """v2 called pure bf16 ``bf16``; v3 reads ``bf16`` as mixed, so the migration renames
    it and a v2 file's numbers do not change."""
    path = FIXTURES / "v2-pure-bf16.llmplan.json"
    raw = json.loads(path.read_text("utf-8"))
    assert raw["training"]["precision"] == "bf16"
    assert migrate(raw)["training"]["precision"] == "pure_bf16"
    assert load_scenario_file(path).training.precision == "pure_bf16"
    default = json.loads((FIXTURES / "v2-default.llmplan.json").read_text("utf-8"))
    assert migrate(default)["training"]["precision"] == "mixed_bf16"
