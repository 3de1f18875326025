"""Scenario files and the local library (minimal; issue 6 completes it)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from llm_planner.core.scenario import Scenario

MAX_FILE_BYTES = 1_000_000
"""Largest scenario file accepted (1 MB): real scenarios are a few kB."""


class ScenarioFileError(ValueError):
    """A scenario file could not be read; the message names the file and the field."""


def load_scenario_file(path: Path) -> Scenario:
    """Read and validate one scenario file."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioFileError(f"{path}: {size} bytes is over the {MAX_FILE_BYTES} limit")
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioFileError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise ScenarioFileError(f"{path}: not UTF-8 text") from None
    try:
        return Scenario.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise ScenarioFileError(f"{path}: {field}: {first['msg']}") from None
