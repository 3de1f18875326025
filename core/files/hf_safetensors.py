"""Safetensors headers (https://github.com/huggingface/safetensors, "Format"): a file starts
with an 8-byte little-endian header length N, then N bytes of JSON mapping each tensor name
to its ``dtype``, ``shape`` and ``data_offsets``. Only that header is read, so the exact
parameter count and the stored dtype come without loading a single weight.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_planner.core.files.hf_config import (
    HFImportError,
    _parse_json_object,
    _read_limited,
)
from llm_planner.core.primitives.reading import FileReadError, open_regular

INDEX_MAX_BYTES = 64_000_000
"""``model.safetensors.index.json`` lists every tensor name (DeepSeek-V3's is ~9 MB)."""

SAFETENSORS_HEADER_MAX_BYTES = 100_000_000
"""The reference safetensors implementation refuses headers above 100 MB; so do we."""

SAFETENSORS_MAX_FILES = 4096


SAFETENSORS_DTYPES: dict[str, tuple[str, int | None]] = {
    # safetensors dtype → (our name, bytes per element; None: sub-byte, size not checked)
    "BF16": ("bf16", 2),
    "F16": ("fp16", 2),
    "F32": ("fp32", 4),
    "F64": ("fp64", 8),
    "F8_E4M3": ("fp8", 1),
    "F8_E5M2": ("fp8", 1),
    "F8_E8M0": ("fp8_e8m0", 1),
    "F6_E2M3": ("fp6", None),
    "F6_E3M2": ("fp6", None),
    "F4": ("fp4", None),
    "I8": ("int8", 1),
    "U8": ("uint8", 1),
    "I16": ("int16", 2),
    "U16": ("uint16", 2),
    "I32": ("int32", 4),
    "U32": ("uint32", 4),
    "I64": ("int64", 8),
    "U64": ("uint64", 8),
    "BOOL": ("bool", 1),
}

NON_PARAMETER_SUFFIXES = ("weight_scale_inv", "weight_scale", "input_scale", "k_scale", "v_scale")
"""Tensors stored beside fp8 weights (block / per-tensor quantization scales, e.g. DeepSeek-V3's
``weight_scale_inv``): metadata of the weight format, not model parameters; not counted."""


# ------------------------------------------------------------------ safetensors


class SafetensorsSummary(BaseModel):
    """Parameter tensors found in safetensors headers."""

    model_config = ConfigDict(frozen=True)

    params: int
    dtype: str | None
    files: int
    elements_by_dtype: dict[str, int]
    data_bytes: int = 0
    """Σ byte ranges of every tensor (parameters and quantization scales): the weights'
    memory as stored."""


def read_safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each tensor of a .safetensors file → (safetensors dtype, shape), from its header only.

    Checks that the header length fits the file and :data:`SAFETENSORS_HEADER_MAX_BYTES`,
    that it is a JSON object of ``{dtype, shape, data_offsets}`` entries, that each byte range
    lies inside the data section and (for whole-byte dtypes) holds exactly
    product(shape) · bytes per element.
    """
    try:
        file = open_regular(path, 2**63 - 1, "a safetensors file")
    except FileReadError as error:
        raise HFImportError(str(error)) from None
    try:
        size = os.fstat(file.fileno()).st_size
        with file:
            prefix = file.read(8)
            if len(prefix) < 8:
                raise HFImportError(f"{path}: too short for a safetensors file ({size} bytes)")
            (length,) = struct.unpack("<Q", prefix)
            if length > SAFETENSORS_HEADER_MAX_BYTES:
                raise HFImportError(
                    f"{path}: safetensors header of {length:,} bytes is over the "
                    f"{SAFETENSORS_HEADER_MAX_BYTES:,}-byte limit"
                )
            if 8 + length > size:
                raise HFImportError(
                    f"{path}: safetensors header length {length:,} exceeds the file size {size:,}"
                )
            raw = file.read(length)
    except OSError as error:
        raise HFImportError(f"{path}: cannot read ({error.strerror or error})") from None
    header = _parse_json_object(raw, str(path), "the safetensors header")
    data_bytes = size - 8 - length
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor_entry(path, name, entry, data_bytes)
    return tensors


def _tensor_entry(
    path: Path, name: str, entry: Any, data_bytes: int
) -> tuple[str, tuple[int, ...]]:
    def bad(message: str) -> HFImportError:
        return HFImportError(f"{path}: tensor {name[:200]!r}: {message}")

    if not isinstance(entry, dict):
        raise bad("entry must be an object with dtype, shape and data_offsets")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or not dtype or len(dtype) > 32:
        raise bad(f"bad dtype {dtype!r}")
    if not isinstance(shape, list) or len(shape) > 16:  # real tensors have at most 8 axes
        raise bad(f"bad shape {str(shape)[:80]}")
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**63 for d in shape):
        raise bad(f"bad shape {str(shape)[:80]}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_bytes
    ):
        raise bad(f"data_offsets {offsets!r} outside the {data_bytes:,}-byte data section")
    elements = math.prod(shape)
    width = SAFETENSORS_DTYPES.get(dtype, (dtype, None))[1]
    if width is not None and offsets[1] - offsets[0] != elements * width:
        raise bad(
            f"{offsets[1] - offsets[0]:,} bytes for shape {shape} of {dtype} "
            f"(expected {elements * width:,})"
        )
    return dtype, tuple(shape)


def _is_parameter(name: str) -> bool:
    return not name.endswith(NON_PARAMETER_SUFFIXES)


def safetensors_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The safetensors files of a model folder and notes on any that are missing.

    With ``model.safetensors.index.json``, the shards its ``weight_map`` names (plain file
    names inside the folder only); otherwise every ``*.safetensors`` file in the folder.
    """
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return sorted(p for p in folder.glob("*.safetensors") if p.is_file()), []
    data = _parse_json_object(
        _read_limited(index, INDEX_MAX_BYTES, "the index"), str(index), "the index"
    )
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise HFImportError(f"{index}: field 'weight_map' must map tensor names to file names")
    names = sorted(set(weight_map.values()))
    for name in names:
        if Path(name).name != name or name in ("", ".", ".."):
            raise HFImportError(f"{index}: shard {name[:200]!r} is not a file name in the folder")
    if len(names) > SAFETENSORS_MAX_FILES:
        raise HFImportError(f"{index}: {len(names)} shards, over the {SAFETENSORS_MAX_FILES} limit")
    present = [folder / n for n in names if (folder / n).is_file()]
    missing = [n for n in names if not (folder / n).is_file()]
    notes = []
    if missing:
        notes.append(
            f"{len(missing)} of {len(names)} safetensors shards listed in {index.name} are "
            f"missing (first: {missing[0]}); no parameter count read"
        )
    return present, notes


def summarize_safetensors(paths: list[Path]) -> SafetensorsSummary:
    """Exact parameter count and dominant dtype over the headers of ``paths``.

    Counts product(shape) of every tensor except quantization scales
    (:data:`NON_PARAMETER_SUFFIXES`); a tensor name present in two files is an error.
    The dominant dtype is the one holding the most elements.
    """
    if len(paths) > SAFETENSORS_MAX_FILES:
        raise HFImportError(
            f"{len(paths)} safetensors files, over the {SAFETENSORS_MAX_FILES} limit"
        )
    seen: dict[str, Path] = {}
    by_dtype: dict[str, int] = {}
    data_bytes = 0
    for path in paths:
        for name, (dtype, shape) in read_safetensors_header(path).items():
            width = SAFETENSORS_DTYPES.get(dtype, (dtype, None))[1]
            if width is None:  # sub-byte types: packed elements, ⌈bits·n / 8⌉
                bits = {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}.get(dtype, 8)
                data_bytes += -(-math.prod(shape) * bits // 8)
            else:
                data_bytes += math.prod(shape) * width
            if name in seen:
                raise HFImportError(f"{path}: tensor {name[:200]!r} is also in {seen[name].name}")
            seen[name] = path
            if not _is_parameter(name):
                continue
            ours = SAFETENSORS_DTYPES.get(dtype, (dtype.lower(), None))[0]
            by_dtype[ours] = by_dtype.get(ours, 0) + math.prod(shape)
    total = sum(by_dtype.values())
    dominant = max(by_dtype, key=lambda d: by_dtype[d]) if total else None
    return SafetensorsSummary(
        params=total,
        dtype=dominant,
        files=len(paths),
        elements_by_dtype=by_dtype,
        data_bytes=data_bytes,
    )
