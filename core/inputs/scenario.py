"""The scenario: every input of every tab in one validated value.

Every view is a function of a :class:`Scenario`; ``estimate(scenario)`` (in
:mod:`llm_planner.core.composition.estimate`) turns it into a report. A scenario carries its model
architecture and GPU inline, so a file sent to a teammate is self-contained even for a
custom model or GPU. Persistence (files, library, migrations) lives in ``store``.
:func:`with_changes` is the one way to derive a scenario with some fields changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llm_planner.core.inputs.calibration import CalibrationInputs, Measurement
from llm_planner.core.inputs.compute import ComputeInputs
from llm_planner.core.inputs.inference import InferenceInputs
from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.inputs.whatif import WhatIfInputs
from llm_planner.core.primitives import limits
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import GPU, catalog_id, get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.primitives.prices import list_price
from llm_planner.core.primitives.units import clean_text
from llm_planner.core.quantities.pipeline_split import stage_split

SCHEMA_VERSION = 5
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
        **limits.bounds("model.params_override"),
        description="P used by every P-based formula instead of the architecture's exact count",
    )


class Scenario(BaseModel):
    """Every input of the app, plus name, notes and provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    app_version: str = Field(default="", max_length=100)
    name: str = Field(default="Untitled scenario", max_length=200)
    notes: str = Field(default="", max_length=100_000)
    created: datetime = Field(default_factory=_now)
    modified: datetime = Field(default_factory=_now)

    model: ModelChoice
    gpu: GPU
    num_gpus: int = Field(
        default=DEFAULT_NUM_GPUS, description="GPUs used for training", **limits.bounds("num_gpus")
    )

    compute: ComputeInputs = ComputeInputs()
    inference: InferenceInputs = InferenceInputs()
    training: TrainingInputs = TrainingInputs()
    parallelism: ParallelInputs = ParallelInputs()
    price_overrides: dict[
        str, Annotated[float, Field(**limits.bounds("compute.price_usd_per_gpu_hour"))]
    ] = Field(
        default_factory=dict,
        description="USD per GPU-hour by GPU id, overriding resources/prices.json for this "
        "scenario (the hardware ranking reads it)",
    )
    whatif: WhatIfInputs = WhatIfInputs()
    measurements: list[Measurement] = Field(
        default_factory=list, description="measured runs that calibrate the model"
    )
    calibration: CalibrationInputs = CalibrationInputs()

    @model_validator(mode="after")
    def _price_follows_gpu(self) -> Self:
        """With ``compute.price_follows_gpu``, the price is the one for the scenario's GPU:
        the scenario's ``price_overrides`` entry, else the shipped list's cheapest on-demand
        offer (:func:`.prices.list_price`); a GPU with neither keeps the stored price."""
        compute = self.compute
        if not compute.price_follows_gpu:
            return self
        price = self.price_overrides.get(self.gpu.id)
        if price is None:
            price = list_price(self.gpu.id)
        if price is not None and price != compute.price_usd_per_gpu_hour:
            # still being built: the frozen value gets its derived price once, here
            object.__setattr__(
                self, "compute", compute.model_copy(update={"price_usd_per_gpu_hour": price})
            )
        return self

    @field_validator("price_overrides")
    @classmethod
    def _price_keys(cls, value: dict[str, float]) -> dict[str, float]:
        """Keys that name a catalog GPU as people type it (``H100``) are stored as its id,
        so the override applies; other keys (custom GPUs' ids) are kept as they are."""
        return {catalog_id(key) or key: price for key, price in value.items()}

    @field_validator("name")
    @classmethod
    def _clean_name(cls, value: str) -> str:
        """Names are shown in terminals and used for file names: no control or bidi
        characters (a received file must not rewrite the user's terminal)."""
        return " ".join(clean_text(value).split()) or "Untitled scenario"

    @field_validator("app_version")
    @classmethod
    def _clean_version(cls, value: str) -> str:
        return " ".join(clean_text(value).split())

    @field_validator("notes")
    @classmethod
    def _clean_notes(cls, value: str) -> str:
        return clean_text(value, keep_newlines=True)

    @model_validator(mode="after")
    def _physical(self) -> Self:
        """The GPU and architecture carried inline are within physical ranges, and the
        layout can be built: see :func:`layout_refusal`."""
        problem = inline_range_problem(self) or _least_problem(self) or layout_refusal(self)
        if problem is not None:
            raise ValueError(problem)
        return self


def default_scenario() -> Scenario:
    """The first-run scenario: Llama-3.1-8B pretraining on 512 H100s, 15T tokens, priced
    from the price list (the price follows the GPU until the user sets one)."""
    preset = get_preset(DEFAULT_MODEL)
    return Scenario(
        name="Llama-3.1-8B pretraining",
        model=ModelChoice(preset=preset.id, architecture=preset.architecture),
        gpu=get_gpu(DEFAULT_GPU),
        compute=ComputeInputs(price_follows_gpu=True),
    )


def with_changes(scenario: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """A new validated scenario with ``changes`` (``{"a.b": value}``) applied.

    Each dotted path names a field (``"parallelism.tp"``, ``"whatif.rl.prompts_per_step"``);
    a part that is None (an unplanned what-if) starts from its defaults. Values are copied,
    so a list or dict given here is not shared with the new scenario. The whole scenario is
    validated again: a ValidationError (a ValueError) names the first bad field.
    """
    data = scenario.model_dump()
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = data
        for key in parents:
            if node.get(key) is None:
                node[key] = {}
            node = node[key]
        node[leaf] = copy.deepcopy(value)
    return Scenario.model_validate(data)


def inline_range_problem(scenario: Scenario) -> str | None:
    """``"gpu.memory_bytes: must be ..."`` for the first out-of-range number of the GPU or
    architecture the scenario carries inline (their own models bound them only below)."""
    gpu = scenario.gpu
    checks: list[tuple[str, str, float | None]] = [
        (f"gpu.{name}", f"gpu.{name}", getattr(gpu, name))
        for name in (
            "memory_bytes",
            "memory_bandwidth_bytes_per_s",
            "link_bandwidth_bytes_per_s",
            "tdp_watts",
        )
    ]
    checks += [
        (f"gpu.peak_flops.{name}", "gpu.peak_flops", value)
        for name, value in gpu.peak_flops.model_dump().items()
        if isinstance(value, int | float)
    ]
    arch = scenario.model.architecture
    for key in limits.RANGES:
        if not key.startswith("model.architecture."):
            continue
        node: object = arch
        for part in key.split(".")[2:]:
            node = getattr(node, part, None)
            if node is None:
                break
        if isinstance(node, int | float) and not isinstance(node, bool):
            checks.append((key, key, float(node)))
    for where, key, value in checks:
        reason = limits.check(key, value)
        if reason is not None:
            return f"{where}: {reason}"
    return None


def get_path(scenario: Scenario | Mapping[str, Any], path: str) -> Any:
    """``scenario.a.b`` for ``path`` "a.b" (attributes or dict keys; None where absent): the
    reading side of :func:`with_changes`."""
    node: Any = scenario
    for part in path.split("."):
        node = node.get(part, None) if isinstance(node, Mapping) else getattr(node, part, None)
    return node


def _least_problem(scenario: Scenario) -> str | None:
    """A value above 0 but below the smallest that means something (limits' ``least``)."""
    return limits.least_problem({path: get_path(scenario, path) for path in limits.least_paths()})


def layout_refusal(scenario: Scenario) -> str | None:
    """Why the scenario's parallel layout cannot be built (``"field: reason"``), or None.

    Refused rather than priced: tensor parallelism splits attention heads, so tp must
    divide them (Megatron-LM ``megatron/training/arguments.py`` asserts
    ``num_attention_heads % tensor_model_parallel_size == 0``); a pipeline stage holds at
    least one layer (pp·v ≤ L); the degrees multiply to the GPU count (dp·tp·cp·pp = N, so
    tp·cp·pp divides N; Megatron-Core: "The total GPU count is TP × CP × PP × DP",
    NVIDIA/Megatron-LM@d98e8a64 docs/user-guide/features/context_parallel.md). Uneven
    layer splits, an ep that does not divide dp and a global batch that is not a multiple
    of dp·micro-batch (or smaller than it) stay the report's "problems": frameworks run
    them (uneven stages, padding) and published runs state them (the validation runs
    include 2,048 GPUs on 1,024 sequences of 2,048 tokens), so the report names the problem
    rather than refusing the scenario. A stated first/last stage (``training.
    first_stage_layers`` / ``last_stage_layers``) is refused where Megatron-Core refuses it
    (:func:`.pipeline_split.stage_split`).
    """
    par, arch = scenario.parallelism, scenario.model.architecture
    tpcp, pp, n = par.tp * par.cp, par.pp, scenario.num_gpus  # GPUs per sequence: tp·cp
    if arch.heads % par.tp:
        return (
            f"parallelism.tp: tp = {par.tp} does not divide the model's {arch.heads} "
            "attention heads"
        )
    v = par.interleave_chunks if par.schedule == "interleaved" else 1
    if pp * v > arch.layers:
        return (
            f"parallelism.pp: pp·v = {pp}·{v} stages is more than the model's {arch.layers} layers"
        )
    ti = scenario.training
    if ti.first_stage_layers is not None or ti.last_stage_layers is not None:
        split = stage_split(arch.layers, pp, ti.first_stage_layers, ti.last_stage_layers, v)
        if isinstance(split, str):
            return split
    # the degrees as the message names them: cp only when it is used
    names = "tp·cp·pp" if par.cp > 1 else "tp·pp"
    values = f"{par.tp}·{par.cp}·{pp}" if par.cp > 1 else f"{par.tp}·{pp}"
    if par.dp is not None:
        if par.dp * tpcp * pp != n:
            return (
                f"parallelism.dp: dp·{names} = {par.dp}·{values} = {par.dp * tpcp * pp} GPUs, "
                f"not the scenario's {n}"
            )
        return None
    if tpcp * pp > n:
        return f"parallelism.tp: {names} = {values} = {tpcp * pp} GPUs is more than the {n} GPUs"
    if n % (tpcp * pp):
        return f"num_gpus: {n} GPUs are not a multiple of {names} = {values} = {tpcp * pp}"
    return None
