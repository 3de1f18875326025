"""Numeric formats: the one place that says how many bytes an element of each dtype takes.

Every estimator imports these figures; none writes ``2`` for "bf16" on its own.
Sizes are those of the IEEE 754 / OCP formats (fp32 4 B, fp16 and bf16 2 B, fp8 E4M3/E5M2
1 B per the OCP 8-bit floating point spec v1.0, 2023) and two's-complement integers.
Quantized weight formats with their real per-weight overhead (scales, zero points) live in
the inference estimator, which builds on these.
"""

from __future__ import annotations

from typing import Literal, get_args

DType = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"]
"""Element types an estimator may be asked about. tf32 is a compute mode: stored as fp32."""

DTYPES: tuple[str, ...] = get_args(DType)

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # TF32 is a tensor-core math mode; tensors are stored in fp32
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


DTYPE_ALIASES: dict[str, tuple[str, str]] = {
    "bfloat16": ("bf16", "torch.bfloat16, safetensors BF16"),
    "float16": ("fp16", "torch.float16"),
    "half": ("fp16", "torch.half"),
    "f16": ("fp16", "GGUF / safetensors F16"),
    "float32": ("fp32", "torch.float32"),
    "float": ("fp32", "torch.float"),
    "f32": ("fp32", "GGUF / safetensors F32"),
    "float8_e4m3fn": ("fp8", "torch.float8_e4m3fn, 1 byte"),
    "fp8_e4m3": ("fp8", "FP8 E4M3, 1 byte"),
    "e4m3": ("fp8", "FP8 E4M3, 1 byte"),
    "float8_e5m2": ("fp8", "torch.float8_e5m2, 1 byte"),
    "fp8_e5m2": ("fp8", "FP8 E5M2, 1 byte"),
    "e5m2": ("fp8", "FP8 E5M2, 1 byte"),
}
"""Dtype names torch, safetensors and GGUF use → (dtype, where the name comes from). Keys
are lower case with ``-`` as ``_`` (:func:`dtype_key`); the sizes are the same formats'."""


def dtype_key(name: str) -> str:
    """The lookup key of a typed dtype name: lower case, ``-`` as ``_``."""
    return name.strip().lower().replace("-", "_")


def canonical_dtype(name: str) -> str:
    """The dtype ``name`` means: a :data:`DTYPES` id in any case, or a name from
    :data:`DTYPE_ALIASES` (``bfloat16`` → ``bf16``). ValueError names the known ones."""
    key = dtype_key(name)
    if key in BYTES_PER_ELEMENT:
        return key
    if key in DTYPE_ALIASES:
        return DTYPE_ALIASES[key][0]
    known = ", ".join(DTYPES)
    raise ValueError(f"unknown dtype {name!r}; known: {known} (also {', '.join(DTYPE_ALIASES)})")


def bytes_per_element(dtype: str) -> float:
    """Bytes one element of ``dtype`` occupies (int4 packs two per byte: 0.5)."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        known = ", ".join(DTYPES)
        raise ValueError(f"unknown dtype {dtype!r}; known: {known}") from None
