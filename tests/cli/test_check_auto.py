"""`check` on the Hugging Face Trainer's ZeRO-3 offload config (every batch and precision
value "auto", tests/fixtures/stack_configs/README.md): the command line's options stand for
the launcher's values and the output names each "auto" key, in text and JSON. Before, the
config was refused ("train_micro_batch_size_per_gpu has the wrong type ('auto')")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_planner.cli import main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "stack_configs" / "hf_trainer_zero3_auto.json"
ARGS = ("--model", "llama-3.1-70b", "--num-gpus", "8", "--recompute", "full")
AUTO = [
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "train_batch_size",
    "fp16.enabled",
]


def test_check_names_the_auto_keys(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", str(FIXTURE), *ARGS, "--global-batch", "64", "--micro-batch", "1"])
    out = capsys.readouterr().out
    assert "auto (4, the scenario's value stands): " + ", ".join(AUTO) in out
    # the batch the options gave: 64 = 1 × 8 steps × dp 8
    assert "micro-batch 1 × 8 steps, global batch 64" in out
    main(["check", str(FIXTURE), *ARGS, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["auto"] == AUTO
    assert data["offload"] is not None
