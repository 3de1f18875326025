"""Model presets: published architectures, each with the config or paper it comes from.

Data lives in ``resources/models.json``; ``published`` holds the parameter figures that
the tests compare :func:`~llm_planner.core.primitives.architecture.count_parameters` against.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.resources import read_json


class PublishedFigures(BaseModel):
    """Parameter counts as published, for comparison (not used by any estimate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    params_total: float | None = None
    params_active: float | None = None
    params_active_compute: float | None = None
    source: str = ""


class ModelPreset(BaseModel):
    """A named architecture from the catalog."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    source: str
    architecture: Architecture
    published: PublishedFigures = PublishedFigures()


@cache
def model_presets() -> dict[str, ModelPreset]:
    """Every preset by id, in catalog order."""
    data = read_json("models.json")
    presets = [ModelPreset.model_validate(entry) for entry in data["models"]]
    return {preset.id: preset for preset in presets}


def get_preset(preset_id: str) -> ModelPreset:
    """The preset ``preset_id``; a KeyError message lists the known ids."""
    presets = model_presets()
    try:
        return presets[preset_id.lower()]
    except KeyError:
        raise KeyError(f"unknown model {preset_id!r}; known: {', '.join(presets)}") from None
