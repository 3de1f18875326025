"""Read the data files shipped in ``llm_planner.resources`` (works from a frozen bundle too)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def read_text(name: str) -> str:
    """The text of resource file ``name`` (UTF-8)."""
    return resources.files("llm_planner.resources").joinpath(name).read_text(encoding="utf-8")


def read_json(name: str) -> Any:
    """Resource file ``name`` parsed as JSON."""
    return json.loads(read_text(name))
