"""Reading a Hugging Face ``config.json``: its size limits, the bounded JSON reader every
model file goes through, and typed field access that names the file, field and type on
every failure (:mod:`.hf_import` is the importer that uses them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from llm_planner.core.primitives.reading import FileReadError, read_bounded

CONFIG_MAX_BYTES = 1_000_000
"""config.json files are a few kB; anything above 1 MB is not a model config."""


MAX_DIMENSION = 2**31 - 1
"""Largest width, vocabulary or context accepted from a config (an untrusted file)."""
MAX_LAYERS = 10_000
"""Largest depth accepted: estimators may work layer by layer."""
_LAYER_FIELDS = {"num_hidden_layers", "n_layer", "first_k_dense_replace"}


class HFImportError(ValueError):
    """A config or safetensors file that cannot be imported; the message names the file and
    the field (or byte range) that is wrong."""


# ------------------------------------------------------------------ reading files


def _read_limited(path: Path, limit: int, what: str) -> bytes:
    """Through the one bounded reader: a FIFO or a device is refused, never waited on."""
    try:
        return read_bounded(path, limit, what)
    except FileReadError as error:
        raise HFImportError(str(error)) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _accept_constant(name: str) -> float:
    """``Infinity``, ``-Infinity`` and ``NaN``, which Python's ``json.dumps`` (and so
    transformers' ``save_pretrained``) writes for non-finite floats (Nemotron-H's
    ``time_step_limit``)."""
    return float(name)


def _parse_json_object(
    data: bytes, label: str, what: str, *, tolerant: bool = False
) -> dict[str, Any]:
    """A JSON object from ``data``. ``tolerant``: a third-party file written by Python
    (config.json), where non-finite constants are accepted; otherwise strict JSON.
    Sizes are limited by the caller (:func:`_read_limited`)."""
    constant = _accept_constant if tolerant else _reject_constant
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=constant)
    except UnicodeDecodeError:
        raise HFImportError(f"{label}: {what} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise HFImportError(
            f"{label}: {what} is not valid JSON (line {error.lineno} column {error.colno}: "
            f"{error.msg})"
        ) from None
    except (ValueError, RecursionError) as error:
        raise HFImportError(f"{label}: {what} is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise HFImportError(f"{label}: {what} must be a JSON object, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------ config fields


class _Config:
    """Typed access to config.json fields; every failure names the file, field and type."""

    def __init__(self, data: dict[str, Any], label: str, model_type: str) -> None:
        self.data = data
        self.label = label
        self.model_type = model_type
        self.read: set[str] = set()
        """Every field a mapper looked up (present or not): what the import used."""

    def error(self, message: str) -> HFImportError:
        return HFImportError(f"{self.label}: {message} ({self.model_type})")

    def _lookup(self, names: tuple[str, ...]) -> tuple[str, Any]:
        self.read.update(names)
        for name in names:
            if name in self.data and self.data[name] is not None:
                return name, self.data[name]
        return names[0], None

    def int_(self, *names: str, default: int | None = None, minimum: int = 1) -> int:
        """A required integer (or ``default`` when absent / null)."""
        value = self.opt_int(*names, minimum=minimum)
        if value is None:
            if default is None:
                raise self.error(f"missing field {names[0]!r}")
            return default
        return value

    def opt_int(self, *names: str, minimum: int = 1) -> int | None:
        name, value = self._lookup(names)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"field {name!r} must be an integer, got {value!r}")
        if value < minimum:
            raise self.error(f"field {name!r} must be at least {minimum}, got {value}")
        limit = MAX_LAYERS if name in _LAYER_FIELDS else MAX_DIMENSION
        if value > limit:
            raise self.error(f"field {name!r} is implausibly large ({value:,} > {limit:,})")
        return value

    def bool_(self, *names: str, default: bool) -> bool:
        name, value = self._lookup(names)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"field {name!r} must be true or false, got {value!r}")
        return value

    def str_(self, *names: str, default: str | None = None) -> str | None:
        name, value = self._lookup(names)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(f"field {name!r} must be a string, got {value!r}")
        return value

    def head_dim(self, hidden: int, heads: int) -> int:
        """``head_dim`` when given (Gemma, Mistral-Nemo), else hidden / heads."""
        explicit = self.opt_int("head_dim")
        if explicit is not None:
            return explicit
        if hidden % heads:
            raise self.error(
                f"hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}) "
                "and no 'head_dim' is given"
            )
        return hidden // heads


Fields = dict[str, Any]
_M = TypeVar("_M", bound=BaseModel)
"""Keyword arguments for :class:`Architecture` built by one model type's mapper."""
