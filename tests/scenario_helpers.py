"""Scenarios the issues describe, built from presets (shared by the tests that use them)."""

from __future__ import annotations

from typing import Any

from llm_planner.core.composition.fit import with_changes
from llm_planner.core.composition.scenario import ModelChoice, Scenario, default_scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset


def preset_scenario(model: str, gpu: str, num_gpus: int, **changes: Any) -> Scenario:
    """The default scenario with ``model`` on ``num_gpus`` × ``gpu`` and dotted ``changes``
    (``{"training.micro_batch": 1}`` as ``**{"training.micro_batch": 1}``)."""
    preset = get_preset(model)
    scenario = default_scenario().model_copy(
        update={
            "model": ModelChoice(preset=preset.id, architecture=preset.architecture),
            "gpu": get_gpu(gpu),
            "num_gpus": num_gpus,
        }
    )
    return with_changes(scenario, changes)


def llama_70b_tp1_on_512_h100() -> Scenario:
    """Issue 25 item 2: Llama-3.1-70B at tp 1, pp 1 on 512 H100 (ZeRO-1)."""
    return preset_scenario(
        "llama-3.1-70b", "h100-sxm", 512, **{"parallelism.tp": 1, "parallelism.pp": 1}
    )


def llama_7b_full_fine_tune_on_4090() -> Scenario:
    """Issue 25 items 2 and 5: Llama-2-7B, every weight trained, 1B tokens, one RTX 4090."""
    return preset_scenario("llama-2-7b", "rtx-4090", 1, **{"compute.tokens": 1e9})
