"""Weight formats: bits per weight, including the overhead of scales and zero points.

Plain dtypes take their size from :mod:`llm_planner.core.primitives.dtypes` (the one source of bytes
per element). Quantized formats store, besides the low-bit integers, one or more scales
(and sometimes zero points or minimums) per group of weights; the real cost per weight is
``bits + (bits of per-group metadata) / group size``. Each format below states that sum
and where the layout comes from.

GGUF "K-quant mixes" (Q4_K_M, Q5_K_M ...) are not one layout: llama.cpp keeps some tensors
(parts of attention and FFN down projections) at a higher-precision type, so their size is
a whole-file average that depends slightly on the model. We use the average llama.cpp's
own quantize README measured on Llama 2 7B (``tools/quantize/README.md``, "Bits per Weight
(BPW)" table; 13B and 70B differ by ≤ 0.04 bpw).
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.dtypes import DTYPES, bytes_per_element

GGML_SOURCE = "llama.cpp ggml-common.h block layouts"
QUANTIZE_README = "llama.cpp tools/quantize/README.md, BPW table for Llama 2 7B"


class WeightFormat(BaseModel):
    """How one weight is stored: total bits per weight with its per-group overhead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="lower-case id used on the command line and in files")
    label: str
    bits_per_weight: float = Field(gt=0, description="data bits + per-group metadata bits")
    compute_dtype: str = Field(
        default="bf16", description="dtype the matrix multiplies run in (sets the peak used)"
    )
    formula: str = ""
    source: str = ""

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8.0


def _plain(dtype: str) -> WeightFormat:
    compute = {"fp32": "fp32", "tf32": "tf32", "fp8": "fp8", "fp16": "fp16"}.get(dtype, "bf16")
    return WeightFormat(
        id=dtype,
        label=dtype,
        bits_per_weight=8.0 * bytes_per_element(dtype),
        compute_dtype=compute,
        formula=f"{8.0 * bytes_per_element(dtype):g} bits (per-tensor/channel scales ignored)",
        source="core.dtypes (IEEE 754 / OCP FP8 sizes)",
    )


def _grouped(
    id_: str, label: str, layout: tuple[int, float, int], formula: str, source: str
) -> WeightFormat:
    """A format of ``bits`` per weight plus ``metadata_bits`` per group of ``group``."""
    bits, metadata_bits, group = layout
    return WeightFormat(
        id=id_,
        label=label,
        bits_per_weight=bits + metadata_bits / group,
        formula=formula,
        source=source,
    )


@cache
def weight_formats() -> dict[str, WeightFormat]:
    """Every known weight format by id, plain dtypes first."""
    formats = [_plain(dtype) for dtype in DTYPES]
    formats += [
        _grouped(
            "int4_g128",
            "int4, group 128, fp16 scale",
            (4, 16, 128),
            "4 + 16/128 = 4.125 bits (symmetric, one fp16 scale per 128 weights)",
            "group-wise weight-only quantization as in GPTQ (Frantar et al. 2022) with "
            "symmetric groups",
        ),
        _grouped(
            "awq_int4_g128",
            "AWQ/GPTQ int4, group 128, fp16 scale + int4 zero",
            (4, 16 + 4, 128),
            "4 + (16 + 4)/128 = 4.15625 bits (fp16 scale and packed 4-bit zero per group)",
            "AWQ (Lin et al. 2023) / GPTQ checkpoint layout: qweight, fp16 scales, packed "
            "4-bit qzeros per group of 128",
        ),
        _grouped(
            "nf4",
            "NF4 (QLoRA, double quantization)",
            (4, 8 + 32 / 256, 64),
            "4 + 8/64 + 32/(64·256) ≈ 4.127 bits",
            "Dettmers et al. 2023 (QLoRA, arXiv:2305.14314) sec. 3, double quantization: "
            "fp8 absmax per 64 weights, fp32 second-level scale per 256 blocks",
        ),
        _grouped(
            "mxfp4",
            "MXFP4 (OCP microscaling)",
            (4, 8, 32),
            "4 + 8/32 = 4.25 bits (E2M1 elements, one E8M0 scale per 32)",
            "OCP Microscaling Formats (MX) Specification v1.0 (2023)",
        ),
        _grouped(
            "q8_0",
            "GGUF Q8_0",
            (8, 16, 32),
            "block of 32 int8 + one fp16 scale: 34 bytes / 32 = 8.5 bits",
            GGML_SOURCE + " (block_q8_0)",
        ),
        _grouped(
            "q4_0",
            "GGUF Q4_0",
            (4, 16, 32),
            "block of 32 4-bit + one fp16 scale: 18 bytes / 32 = 4.5 bits",
            GGML_SOURCE + " (block_q4_0)",
        ),
        _grouped(
            "q4_k",
            "GGUF Q4_K (one tensor type)",
            (4, 2 * 16 + 12 * 8, 256),
            "super-block of 256: fp16 d, fp16 dmin, 12 B 6-bit scales/mins, 128 B quants "
            "= 144 B / 256 = 4.5 bits",
            GGML_SOURCE + " (block_q4_K)",
        ),
        _grouped(
            "q6_k",
            "GGUF Q6_K",
            (6, 16 + 16 * 8, 256),
            "super-block of 256: 192 B quants, 16 B 8-bit scales, fp16 d "
            "= 210 B / 256 = 6.5625 bits",
            GGML_SOURCE + " (block_q6_K)",
        ),
    ]
    for id_, label, bpw in (
        ("q2_k", "GGUF Q2_K (mix)", 3.35),
        ("q3_k_m", "GGUF Q3_K_M (mix)", 3.91),
        ("q4_k_s", "GGUF Q4_K_S (mix)", 4.58),
        ("q4_k_m", "GGUF Q4_K_M (mix)", 4.84),
        ("q5_k_s", "GGUF Q5_K_S (mix)", 5.52),
        ("q5_k_m", "GGUF Q5_K_M (mix)", 5.68),
    ):
        formats.append(
            WeightFormat(
                id=id_,
                label=label,
                bits_per_weight=bpw,
                formula=f"{bpw} bits: whole-file average of the tensor-type mix",
                source=QUANTIZE_README,
            )
        )
    return {fmt.id: fmt for fmt in formats}


def get_weight_format(name: str) -> WeightFormat:
    """The format ``name`` (case-insensitive; ``-`` and ``_`` equivalent)."""
    key = name.strip().lower().replace("-", "_")
    formats = weight_formats()
    try:
        return formats[key]
    except KeyError:
        raise ValueError(f"unknown weight format {name!r}; known: {', '.join(formats)}") from None
