"""The scenario: every input of every tab in one validated value.

Every view is a function of a :class:`Scenario`; ``estimate(scenario)`` (in
:mod:`llm_planner.core.composition.estimate`) turns it into a report. A scenario carries its model
architecture and GPU inline, so a file sent to a teammate is self-contained even for a
custom model or GPU. Persistence (files, library, migrations) lives in ``store``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.composition.calibration import CalibrationInputs, Measurement
from llm_planner.core.composition.whatif.inputs import WhatIfInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import GPU, get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.compute import ComputeInputs
from llm_planner.core.sections.inference import InferenceInputs
from llm_planner.core.sections.parallelism import ParallelInputs
from llm_planner.core.sections.training import TrainingInputs

SCHEMA_VERSION = 2
"""Version of the scenario file format written by this app (see ``store`` migrations)."""

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_GPU = "h100-sxm"
DEFAULT_NUM_GPUS = 512


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class ModelChoice(BaseModel):
    """The model: its architecture inline, where it came from, and an optional size override."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: str | None = Field(default=None, description="preset id it came from, if any")
    architecture: Architecture
    params_override: float | None = Field(
        default=None,
        gt=0,
        description="P used by every P-based formula instead of the architecture's exact count",
    )


class Scenario(BaseModel):
    """Every input of the app, plus name, notes and provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    app_version: str = ""
    name: str = Field(default="Untitled scenario", max_length=200)
    notes: str = Field(default="", max_length=100_000)
    created: datetime = Field(default_factory=_now)
    modified: datetime = Field(default_factory=_now)

    model: ModelChoice
    gpu: GPU
    num_gpus: int = Field(default=DEFAULT_NUM_GPUS, ge=1, description="GPUs used for training")

    compute: ComputeInputs = ComputeInputs()
    inference: InferenceInputs = InferenceInputs()
    training: TrainingInputs = TrainingInputs()
    parallelism: ParallelInputs = ParallelInputs()
    price_overrides: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict,
        description="USD per GPU-hour by GPU id, overriding resources/prices.json for this "
        "scenario (the hardware ranking reads it)",
    )
    whatif: WhatIfInputs = WhatIfInputs()
    measurements: list[Measurement] = Field(
        default_factory=list, description="measured runs that calibrate the model"
    )
    calibration: CalibrationInputs = CalibrationInputs()


def default_scenario() -> Scenario:
    """The first-run scenario: Llama-3.1-8B pretraining on 512 H100s, 15T tokens."""
    preset = get_preset(DEFAULT_MODEL)
    return Scenario(
        name="Llama-3.1-8B pretraining",
        model=ModelChoice(preset=preset.id, architecture=preset.architecture),
        gpu=get_gpu(DEFAULT_GPU),
    )
