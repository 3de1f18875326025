"""A hand-written GGUF v3 file (ggml docs/gguf.md) of F32 tensors, so the GGUF tests run
without the ``gguf`` package (shared by the split-model and architecture tests)."""

from __future__ import annotations

import math
import struct
from typing import Any

# GGUF metadata value types (docs/gguf.md): uint16 2, uint32 4, int32 5, string 8
U16, U32, I32, STR = 2, 4, 5, 8

Meta = list[tuple[str, int, Any]]
Tensors = list[tuple[str, tuple[int, ...]]]


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value: Any) -> bytes:
    if kind == STR:
        return _string(value)
    return struct.pack({U16: "<H", U32: "<I", I32: "<i"}[kind], value)


def gguf_bytes(metadata: Meta, tensors: Tensors) -> bytes:
    """The file: header, metadata, tensor infos (F32, ggml type 0), 32-byte aligned data."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        head += _string(key) + struct.pack("<I", kind) + _value(kind, value)
    offset, data = 0, b""
    for name, shape in tensors:
        head += _string(name) + struct.pack("<I", len(shape))
        head += b"".join(struct.pack("<Q", d) for d in shape)
        head += struct.pack("<IQ", 0, offset)
        size = 4 * math.prod(shape)
        data += bytes(size) + bytes(-size % 32)
        offset += size + (-size % 32)
    head += bytes(-len(head) % 32)
    return head + data
