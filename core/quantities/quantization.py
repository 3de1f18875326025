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

import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.dtypes import DTYPE_ALIASES, DTYPES, bytes_per_element

GGML_SOURCE = "llama.cpp ggml-common.h block layouts"
QUANTIZE_README = "llama.cpp tools/quantize/README.md, BPW table for Llama 2 7B"
QUANTIZE_OPTIONS = (
    "llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (IQ2_M ' 2.7  bpw', IQ3_XS "
    "' 3.3 bpw', IQ3_M ' 3.66 bpw quantization mix')"
)


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
        WeightFormat(
            id="nvfp4",
            label="NVFP4 (NVIDIA 4-bit float, block 16)",
            bits_per_weight=4 + 8 / 16,
            compute_dtype="fp4",
            formula="4 + 8/16 = 4.5 bits (E2M1 elements, one FP8 E4M3 scale per 16; the "
            "one fp32 scale per tensor is ignored)",
            source="NVIDIA, 'Introducing NVFP4 for efficient and accurate low-precision "
            "inference' (developer blog, 2025): 16-element micro-blocks with an E4M3 scale "
            "and an FP32 per-tensor scale; TensorRT Model Optimizer NVFP4 checkpoints "
            "(weights and activations in FP4, so the GEMMs run at the FP4 rate)",
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
        _grouped(
            "q4_1",
            "GGUF Q4_1",
            (4, 2 * 16, 32),
            "block of 32 4-bit + fp16 scale + fp16 min: 20 bytes / 32 = 5 bits",
            GGML_SOURCE + " (block_q4_1)",
        ),
        _grouped(
            "q5_0",
            "GGUF Q5_0",
            (5, 16, 32),
            "block of 32: fp16 scale, 4 B high bits, 16 B low nibbles = 22 bytes / 32 = 5.5 bits",
            GGML_SOURCE + " (block_q5_0)",
        ),
        _grouped(
            "q5_1",
            "GGUF Q5_1",
            (5, 2 * 16, 32),
            "block of 32: fp16 scale and min, 4 B high bits, 16 B low nibbles = 24 bytes "
            "/ 32 = 6 bits",
            GGML_SOURCE + " (block_q5_1)",
        ),
    ]
    # llama.cpp's i-quants and ternary types, one tensor type each: bytes per block of 256
    # (32 for IQ4_NL) from ggml-common.h; bits per weight = 8 · bytes / block. Q3_K_S is the
    # file type that "uses Q3_K for all tensors" (llama.cpp's quantize help).
    for id_, block_bytes, block, layout in (
        ("iq1_s", 50, 256, "fp16 d + qs[32] + uint16 qh[8]"),
        ("iq1_m", 56, 256, "qs[32] + qh[16] + scales[8]"),
        ("iq2_xxs", 66, 256, "fp16 d + uint16 qs[32]"),
        ("iq2_xs", 74, 256, "fp16 d + uint16 qs[32] + scales[8]"),
        ("iq2_s", 82, 256, "fp16 d + qs[64] + qh[8] + scales[8]"),
        ("iq3_xxs", 98, 256, "fp16 d + qs[96]"),
        ("iq3_s", 110, 256, "fp16 d + qs[64] + qh[8] + signs[32] + scales[4]"),
        ("iq4_nl", 18, 32, "fp16 d + qs[16]"),
        ("iq4_xs", 136, 256, "fp16 d + uint16 scales_h + scales_l[4] + qs[128]"),
        ("tq1_0", 54, 256, "qs[48] (5 ternary digits a byte) + qh[4] + fp16 d"),
        ("tq2_0", 66, 256, "qs[64] (2 bits each) + fp16 d"),
        ("q3_k_s", 110, 256, "block_q3_K: hmask[32] + qs[64] + scales[12] + fp16 d"),
    ):
        bpw = 8 * block_bytes / block
        formats.append(
            WeightFormat(
                id=id_,
                label=f"GGUF {id_.upper()}"
                + (" (Q3_K in every tensor)" if id_ == "q3_k_s" else ""),
                bits_per_weight=bpw,
                formula=f"{layout} = {block_bytes} B / {block} = {bpw:g} bits",
                source=GGML_SOURCE + f" (block_{'q3_K' if id_ == 'q3_k_s' else id_})",
            )
        )
    # llama.cpp's i-quant file types that mix tensor types: the quantize tool's own figure.
    for id_, bpw in (("iq2_m", 2.7), ("iq3_xs", 3.3), ("iq3_m", 3.66)):
        formats.append(
            WeightFormat(
                id=id_,
                label=f"GGUF {id_.upper()} (mix)",
                bits_per_weight=bpw,
                formula=f"{bpw} bits: the file type's stated average",
                source=QUANTIZE_OPTIONS,
            )
        )
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


WEIGHT_FORMAT_ALIASES: dict[str, tuple[str, str]] = {
    **DTYPE_ALIASES,  # bfloat16, float16, f16, float8_e4m3fn ... (one table, in dtypes)
    "w8a8": ("int8", "int8 weights and activations (compressed-tensors / SmoothQuant)"),
    # checkpoint families at their default settings
    "awq": ("awq_int4_g128", "AutoAWQ's default: 4 bits, group 128, zero points"),
    "gptq": (
        "awq_int4_g128",
        "GPTQ's default (transformers GPTQConfig): 4 bits, group 128, packed zero points",
    ),
    "w4a16": ("int4_g128", "compressed-tensors W4A16 preset: int4, symmetric, group 128"),
    "fp4": (
        "nvfp4",
        "FP4 as NVIDIA's Blackwell and ModelOpt store it (NVFP4); the OCP "
        "microscaling FP4 is mxfp4",
    ),
    "mxfp4_moe": ("mxfp4", "GGUF file type MXFP4_MOE"),
    "bnb_4bit": ("nf4", "bitsandbytes load_in_4bit (NF4 with double quantization)"),
    "bnb_nf4": ("nf4", "bitsandbytes NF4"),
}
"""Weight dtype names people and files use → (format id, what the name is). Keys are
lower case with ``-`` as ``_``. Each resolution is echoed by the command line."""

_PARAMETRIC = re.compile(r"^(?:(?P<kind>gptq|awq)_)?int(?P<bits>[2-8])(?:_g(?P<group>\d+))?$")


def grouped_int_format(bits: int, group: int | None, kind: str = "int") -> WeightFormat:
    """Integer weights of ``bits`` with one fp16 scale per ``group`` weights (per output
    channel when None). ``kind`` ``"gptq"`` or ``"awq"`` adds a packed ``bits``-bit zero
    point per group: ``bits + (16 + bits)/group`` (their checkpoints store qweight, fp16
    scales and packed qzeros per group); ``"int"`` is symmetric: ``bits + 16/group`` (as
    compressed-tensors' pack-quantized without zero points). Per-channel scales cost one
    value per row, under 0.01 bit per weight: ignored."""
    if not 2 <= bits <= 8:
        raise ValueError(f"integer weights of {bits} bits: 2 to 8 bits are known")
    if group is not None and group < 1:
        raise ValueError(f"group size {group}: must be a positive number of weights")
    zero_point = kind in ("gptq", "awq")
    what = "fp16 scale + packed zero" if zero_point else "fp16 scale"
    name = f"{kind.upper()} int{bits}" if zero_point else f"int{bits}"
    source = (
        "GPTQ (Frantar et al. 2022) / AutoGPTQ and AutoAWQ checkpoint layout: qweight, fp16 "
        "scales, packed qzeros per group"
        if zero_point
        else "compressed-tensors pack-quantized, symmetric: int weights, one scale per group"
    )
    prefix = f"{kind}_" if zero_point else ""
    if group is None:
        return WeightFormat(
            id=f"{prefix}int{bits}_channel",
            label=f"{name}, per-channel {what}",
            bits_per_weight=float(bits),
            formula=f"{bits} bits (one {what} per output channel, ignored)",
            source=source,
        )
    meta = 16 + (bits if zero_point else 0)
    return WeightFormat(
        id=f"{prefix}int{bits}_g{group}",
        label=f"{name}, group {group}, {what}",
        bits_per_weight=bits + meta / group,
        formula=f"{bits} + {meta}/{group} = {bits + meta / group:g} bits ({what} per "
        f"{group} weights)",
        source=source,
    )


def resolve_weight_format(name: str) -> tuple[WeightFormat, str | None]:
    """The format ``name`` means (case-insensitive; ``-`` and ``_`` equivalent), and, when
    ``name`` is an alias (:data:`WEIGHT_FORMAT_ALIASES`: ``bfloat16``, ``awq``, ``gptq``,
    ``fp4``...), a sentence saying how it was read. Besides the listed ids, integer layouts
    are read by their parameters (:func:`grouped_int_format`): ``gptq_int3_g128``,
    ``awq_int4_g64`` (bits + (16 + bits)/group), ``int4_g32`` (bits + 16/group),
    ``gptq_int4_channel`` (per-channel). A ValueError names the known formats and the closest."""
    key = name.strip().lower().replace("-", "_")
    formats = weight_formats()
    if key in formats:
        return formats[key], None
    if key in WEIGHT_FORMAT_ALIASES:
        target, what = WEIGHT_FORMAT_ALIASES[key]
        fmt = formats[target]
        return fmt, f"{name.strip()!r} read as {fmt.id}, {fmt.label} ({what})"
    match = _PARAMETRIC.match(key.removesuffix("_channel"))
    if match:
        group = int(match["group"]) if match["group"] else None
        return grouped_int_format(int(match["bits"]), group, match["kind"] or "int"), None
    import difflib  # only when an id is unknown: not on the report's path

    close = difflib.get_close_matches(key, [*formats, *WEIGHT_FORMAT_ALIASES], n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ";"
    raise ValueError(
        f"unknown weight format {name!r}{hint} known: {', '.join(formats)}; also "
        f"{', '.join(WEIGHT_FORMAT_ALIASES)}, and gptq_int<bits>_g<group> / int<bits>_g<group>"
    )


def get_weight_format(name: str) -> WeightFormat:
    """The format ``name`` means (:func:`resolve_weight_format`)."""
    return resolve_weight_format(name)[0]
