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


def bytes_per_element(dtype: str) -> float:
    """Bytes one element of ``dtype`` occupies (int4 packs two per byte: 0.5)."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        known = ", ".join(DTYPES)
        raise ValueError(f"unknown dtype {dtype!r}; known: {known}") from None
