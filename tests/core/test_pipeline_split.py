"""Uneven pipeline stages (Megatron-Core --decoder-first/last-pipeline-num-layers): the
split rule, its refusals, the step time's pacing stage, the memory's stages, the Megatron
exporter and importer. Expected values are hand computations from Megatron-Core's rule
(NVIDIA/Megatron-LM@d98e8a64 transformer_block.py ``get_num_layers_to_build``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.pipeline_split import StageSplit, stage_split
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import step_time
from llm_planner.core.sections.training_memory import memory_terms, training_memory_arrays
from llm_planner.core.sections.training_memory_one import training_memory_one
from llm_planner.core.sections.training_params import (
    pipeline_middle_layers,
    pipeline_stage_layers,
)

DSV3 = get_preset("deepseek-v3").architecture


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # DeepSeek-V3: 61 layers over 16 stages, 3 first / 2 last: (61 − 5)/14 = 4 each
        ((61, 16, 3, 2, 1), (3, 4, 2)),
        # Megatron-Bridge's DeepSeek-V3 pp 16 layout: 4 / 14 × 4 / 1: (61 − 5)/14 = 4
        ((61, 16, 4, 1, 1), (4, 4, 1)),
        # its pp 8 layout: 8 / 6 × 8 / 5: (61 − 13)/6 = 8
        ((61, 8, 8, 5, 1), (8, 8, 5)),
        # first only: the last stage is a middle one, (32 − 5)/3 = 9
        ((32, 4, 5, None, 1), (5, 9, 9)),
        # last only: (32 − 2)/3 = 10
        ((32, 4, None, 2, 1), (10, 10, 2)),
        # two stages, both stated: no middle stage
        ((32, 2, 20, 12, 1), (20, 0, 12)),
        # interleaved v = 2: 4 and 2 are multiples of 2, (32 − 6)/2 = 13 is not → refused below;
        # 4 / (32 − 8)/2 = 12 / 4 are
        ((32, 4, 4, 4, 2), (4, 12, 4)),
    ],
)
def test_megatron_split_by_hand(
    args: tuple[int, int, int | None, int | None, int], expected: tuple[int, int, int]
) -> None:
    """(layers, pp, first, last, v) → (first, each middle, last)."""
    assert stage_split(*args) == StageSplit(*expected)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((61, 16, 4, None, 1), "training.first_stage_layers: the 57 layers left do not divide"),
        ((61, 16, None, 2, 1), "training.last_stage_layers: the 59 layers left"),
        ((61, 1, 4, 1, 1), "needs pp ≥ 2"),
        ((32, 2, 20, 2, 1), "leave 10 layers for 0 middle stages"),
        ((32, 4, 30, 4, 1), "leave -2 layers"),
        ((32, 4, 3, 4, 2), "training.first_stage_layers: 3 layers is not a multiple of the 2"),
        ((32, 4, 2, 4, 2), "13 layers per middle stage is not a multiple of the 2"),
    ],
)
def test_megatron_refusals_name_the_field(
    args: tuple[int, int, int | None, int | None, int], words: str
) -> None:
    problem = stage_split(*args)
    assert isinstance(problem, str)
    assert words in problem


def _dsv3_scenario(pp: int, first: int | None, last: int | None, mtp: int = 0) -> Scenario:
    sc0 = default_scenario()
    model = sc0.model.model_copy(update={"preset_id": "deepseek-v3", "architecture": DSV3})
    return sc.with_fields(
        sc0.model_copy(update={"model": model}),
        {
            "num_gpus": 256,
            "parallelism.tp": 1,
            "parallelism.pp": pp,
            "parallelism.expert_parallel": 8,
            "parallelism.global_batch": 4096,
            "training.seq_len": 4096,
            "training.micro_batch": 1,
            "training.stack": "megatron",
            "training.mtp_layers": mtp,
            "training.first_stage_layers": first,
            "training.last_stage_layers": last,
        },
    )


def test_a_scenario_that_does_not_split_is_refused_naming_the_field() -> None:
    with pytest.raises((ValidationError, ValueError), match=r"training\.first_stage_layers"):
        _dsv3_scenario(16, 4, None)


def test_stage_layers_of_the_memory() -> None:
    """pp 16, first 4, last 1, one MTP depth: the first stage 4, the last 1 + 1 (the depth is
    built on the last stage besides its decoder layer), the middle (61 − 5)/14 = 4. Without
    the split: ⌈(61 + 1)/16⌉ = 4 on both."""
    ti = TrainingInputs(mtp_layers=1, first_stage_layers=4, last_stage_layers=1)
    assert pipeline_stage_layers(DSV3, ti, 16) == (4, 2)
    assert pipeline_middle_layers(DSV3, ti, 16) == 4
    assert pipeline_stage_layers(DSV3, TrainingInputs(mtp_layers=1), 16) == (4, 4)
    # a pp the stated counts do not fit (the layout search's others): the equal split
    assert pipeline_stage_layers(DSV3, ti, 8) == (8, 8)  # ⌈62/8⌉
    assert pipeline_middle_layers(DSV3, ti, 8) == 0


def test_the_fullest_stage_under_a_stated_split() -> None:
    """16 layers of cost 1 each (model FLOPs 20, the head 4), pp 4. First 7, last 1: the
    middle stages hold (16 − 8)/2 = 4; costs 7, 4, 1 + 4 = 5: the first (7 layers, no head)
    is the fullest. First 2, last 6: middle 4; costs 2, 4, 6 + 4 = 10: the last, with the
    head."""
    base = replace(
        par.workload_of(get_preset("llama-3.1-8b").architecture, 4096, 8),
        layers=16,
        model_flops_per_token=20.0,
        head_flops_per_token=4.0,
        mtp_layers=0,
    )
    pp, v = np.array([4.0]), np.ones(1)
    work = replace(base, first_stage_layers=7, last_stage_layers=1)
    layers, head = step_time._fullest_stage(work, pp, v, balanced=False)
    assert (layers.tolist(), head.tolist()) == ([7.0], [0.0])
    work = replace(base, first_stage_layers=2, last_stage_layers=6)
    layers, head = step_time._fullest_stage(work, pp, v, balanced=False)
    assert (layers.tolist(), head.tolist()) == ([6.0], [1.0])
    # without a stated split: ⌈16/4⌉ = 4 layers and the head on the last stage
    layers, head = step_time._fullest_stage(base, pp, v, balanced=False)
    assert (layers.tolist(), head.tolist()) == ([4.0], [1.0])
    # a pp the counts do not fit (2: 16 − 8 left for no middle stage): the equal split, 8
    work = replace(base, first_stage_layers=7, last_stage_layers=1)
    layers, head = step_time._fullest_stage(work, np.array([2.0]), v, balanced=False)
    assert (layers.tolist(), head.tolist()) == ([8.0], [1.0])


def test_deepseek_v3_pp16_bridge_layout_speeds_the_step() -> None:
    """Megatron-Bridge's pp-16 layout (4 / 14 × 4 / 1 + MTP) takes two layers off the last
    stage, which also runs the head and the MTP depth: the pace is no longer 4 layers + head
    + MTP, so tokens/s rise (the equal split prices the last stage with ⌈62/16⌉ = 4)."""
    from llm_planner.core.composition.estimate import estimate

    even = estimate(_dsv3_scenario(16, None, None, mtp=1), suggest=False).parallelism
    split = estimate(_dsv3_scenario(16, 4, 1, mtp=1), suggest=False).parallelism
    assert split.tokens_per_s > 1.1 * even.tokens_per_s


def test_a_fuller_middle_stage_sets_the_memory_peak() -> None:
    """DeepSeek-V3 pp 16, first 3 / last 2: the middle stages hold (61 − 5)/14 = 4 layers, more
    than the first's 3; under 1F1B stage 1 holds p − 1 = 15 micro-batches (the first p = 16).
    Its 4 × 15 = 60 layer-loads of activations beat the first stage's 3 × 16 = 48 plus the
    embedding at micro-batch 1 with no recomputation: the peak is a middle stage's, 4 layers,
    15 in flight; the one-layout and the array function agree."""
    ti = TrainingInputs(
        seq_len=4096, micro_batch=1, stack="megatron", first_stage_layers=3, last_stage_layers=2
    )
    terms = memory_terms(DSV3, ti, float(count_parameters(DSV3).total))
    kwargs: dict[str, Any] = {
        "tp": 1,
        "pp": 16,
        "shard": 16,
        "ep": 8,
        "zero": 1,
        "micro_batch": 1,
        "sp": False,
        "recompute": 0,
    }
    one = training_memory_one(terms, first_in_flight=16, last_in_flight=1, **kwargs)
    assert one["layers_on_stage"] == 4.0
    assert one["microbatches_in_flight"] == 15.0
    arrays = training_memory_arrays(terms, first_in_flight=16, last_in_flight=1, **kwargs)
    assert float(arrays["layers_on_stage"][0]) == 4.0
    assert float(arrays["peak_bytes"][0]) == pytest.approx(one["peak_bytes"], rel=1e-9)
    even = memory_terms(
        DSV3,
        ti.model_copy(update={"first_stage_layers": None, "last_stage_layers": None}),
        float(count_parameters(DSV3).total),
    )
    flat = training_memory_one(even, first_in_flight=16, last_in_flight=1, **kwargs)
    assert flat["layers_on_stage"] == 4.0  # ⌈61/16⌉ on the first stage, 16 in flight
    assert flat["microbatches_in_flight"] == 16.0


def test_megatron_export_writes_the_flags_and_reads_them_back(tmp_path: Path) -> None:
    scenario = _dsv3_scenario(16, 4, 1, mtp=1)
    text = sc.export_config(scenario, "megatron").text
    assert "--decoder-first-pipeline-num-layers 4\n" in text
    assert "--decoder-last-pipeline-num-layers 1\n" in text
    path = tmp_path / "plan.sh"
    path.write_text(text)
    fields = sc.read_config(path).fields
    assert fields["training.first_stage_layers"] == 4
    assert fields["training.last_stage_layers"] == 1
    plain = sc.export_config(_dsv3_scenario(16, None, None), "megatron").text
    assert "pipeline-num-layers" not in plain
