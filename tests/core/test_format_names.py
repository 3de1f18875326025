"""Weight-format and dtype names people type, the formats issue 28 found missing (NVFP4,
llama.cpp's i-quants, GPTQ at any bit width and group size), and data rates in bits.

Expected sizes are computed here from each format's published block layout, written out;
they are not read back from the format table.
"""

from __future__ import annotations

import json

import pytest

from llm_planner.cli import main
from llm_planner.cli_common import input_type
from llm_planner.core.inputs.registry import INPUTS
from llm_planner.core.primitives.dtypes import DTYPE_ALIASES, DTYPES, canonical_dtype
from llm_planner.core.primitives.units import UnitError, parse_bandwidth
from llm_planner.core.quantities.quantization import (
    WEIGHT_FORMAT_ALIASES,
    get_weight_format,
    resolve_weight_format,
    weight_formats,
)
from llm_planner.core.sections.inference import InferenceInputs

cli_bandwidth = input_type(
    next(i for i in INPUTS if i.path == "parallelism.inter_node_bandwidth_bytes_per_s")
)
"""What ``--inter-node-bandwidth`` reads its text with (argparse's ``type=``)."""

# (format, bits per weight, layout) from llama.cpp ggml/src/ggml-common.h: bytes per block
# of 256 weights (32 for IQ4_NL) × 8 / block. llama.cpp's quantize tool states the same
# figures rounded ("IQ2_XXS 2.06 bpw", "IQ2_XS 2.31", "IQ1_S 1.56", "IQ4_XS 4.25" ...).
I_QUANTS = [
    ("iq1_s", 8 * (2 + 32 + 2 * 8) / 256, "fp16 d, qs[QK_K/8], uint16 qh[QK_K/32]"),
    ("iq1_m", 8 * (32 + 16 + 8) / 256, "qs[QK_K/8], qh[QK_K/16], scales[QK_K/32]"),
    ("iq2_xxs", 8 * (2 + 2 * 32) / 256, "fp16 d, uint16 qs[QK_K/8]"),
    ("iq2_xs", 8 * (2 + 2 * 32 + 8) / 256, "fp16 d, uint16 qs[QK_K/8], scales[QK_K/32]"),
    ("iq2_s", 8 * (2 + 64 + 8 + 8) / 256, "fp16 d, qs[QK_K/4], qh, scales[QK_K/32]"),
    ("iq3_xxs", 8 * (2 + 96) / 256, "fp16 d, qs[3*QK_K/8]"),
    ("iq3_s", 8 * (2 + 64 + 8 + 32 + 4) / 256, "fp16 d, qs, qh, signs, scales[QK_K/64]"),
    ("iq4_nl", 8 * (2 + 16) / 32, "fp16 d, qs[QK4_NL/2], block of 32"),
    ("iq4_xs", 8 * (2 + 2 + 4 + 128) / 256, "fp16 d, scales_h, scales_l[4], qs[128]"),
    # ternary: block_tq1_0 qs[(256 - 4·256/64)/5], qh[256/64], fp16 d; block_tq2_0 qs[64], d
    # (the quantize tool: "TQ1_0 1.69 bpw", "TQ2_0 2.06 bpw")
    ("tq1_0", 8 * ((256 - 4 * 256 // 64) // 5 + 256 // 64 + 2) / 256, "qs[48], qh[4], d"),
    ("tq2_0", 8 * (64 + 2) / 256, "qs[64], fp16 d"),
    # Q3_K_S: "Uses Q3_K for all tensors"; block_q3_K hmask[32] + qs[64] + scales[12] + d
    ("q3_k_s", 8 * (32 + 64 + 12 + 2) / 256, "block_q3_K in every tensor"),
]


@pytest.mark.parametrize(("fmt", "bits", "layout"), I_QUANTS)
def test_i_quants_are_their_block_layouts(fmt: str, bits: float, layout: str) -> None:
    assert get_weight_format(fmt).bits_per_weight == pytest.approx(bits), layout
    assert get_weight_format(fmt.upper()).id == fmt


def test_i_quant_quantize_tool_figures() -> None:
    # tools/quantize/quantize.cpp QUANT_OPTIONS: the rounded figures it prints.
    stated = {"iq2_xxs": 2.06, "iq2_xs": 2.31, "iq1_s": 1.56, "iq1_m": 1.75, "iq3_xxs": 3.06}
    for fmt, bpw in stated.items():
        assert get_weight_format(fmt).bits_per_weight == pytest.approx(bpw, abs=0.005), fmt
    # The file types that mix tensor types: the tool's own averages.
    assert get_weight_format("iq2_m").bits_per_weight == 2.7
    assert get_weight_format("iq3_m").bits_per_weight == 3.66


def test_legacy_ggml_blocks() -> None:
    # block_q4_1: fp16 d + fp16 m + 16 B = 20 B / 32; block_q5_0: d + qh[4] + qs[16] = 22 B;
    # block_q5_1: d + m + qh[4] + qs[16] = 24 B.
    assert get_weight_format("q4_1").bits_per_weight == 8 * 20 / 32
    assert get_weight_format("q5_0").bits_per_weight == 8 * 22 / 32
    assert get_weight_format("q5_1").bits_per_weight == 8 * 24 / 32


def test_nvfp4() -> None:
    # NVFP4: E2M1 (4 bits) per weight + one E4M3 (8 bits) scale per 16 weights.
    fmt = get_weight_format("nvfp4")
    assert fmt.bits_per_weight == 4 + 8 / 16
    assert fmt.compute_dtype == "fp4"
    # MXFP4 (OCP MX v1.0): E8M0 scale per 32: 4.25 bits; a different format.
    assert get_weight_format("mxfp4").bits_per_weight == 4 + 8 / 32


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        # GPTQ/AWQ: bits + (fp16 scale + packed bits-wide zero) / group
        ("gptq_int3_g128", 3 + (16 + 3) / 128),
        ("gptq_int4_g32", 4 + (16 + 4) / 32),
        ("gptq_int8_g128", 8 + (16 + 8) / 128),
        ("awq_int4_g64", 4 + (16 + 4) / 64),
        ("gptq-int2-g64", 2 + (16 + 2) / 64),
        # symmetric (compressed-tensors without zero points): bits + 16 / group
        ("int4_g32", 4 + 16 / 32),
        ("int8_g128", 8 + 16 / 128),
        # per-channel: one scale per row, ignored
        ("gptq_int4_channel", 4.0),
    ],
)
def test_integer_layouts_by_their_parameters(name: str, bits: float) -> None:
    fmt = get_weight_format(name)
    assert fmt.bits_per_weight == pytest.approx(bits)
    assert get_weight_format(fmt.id) == fmt  # the id it reports reads back


def test_the_listed_awq_layout_is_the_parametric_one() -> None:
    assert get_weight_format("awq_int4_g128").bits_per_weight == 4 + (16 + 4) / 128
    assert get_weight_format("int4_g128").bits_per_weight == 4 + 16 / 128


def test_impossible_integer_layouts_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown weight format"):
        get_weight_format("gptq_int9_g128")
    with pytest.raises(ValueError, match="unknown weight format"):
        get_weight_format("gptq_int4_g0x")


@pytest.mark.parametrize(
    ("typed", "fmt"),
    [
        ("bfloat16", "bf16"),  # torch / config.json torch_dtype
        ("float16", "fp16"),
        ("F16", "fp16"),  # GGUF / safetensors dtype name
        ("float8_e4m3fn", "fp8"),  # torch
        ("awq", "awq_int4_g128"),  # AutoAWQ default: w_bit 4, q_group_size 128, zero point
        ("gptq", "awq_int4_g128"),  # GPTQConfig default: bits 4, group_size 128
        ("w4a16", "int4_g128"),  # compressed-tensors preset: int4 symmetric, group 128
        ("fp4", "nvfp4"),
        ("MXFP4_MOE", "mxfp4"),  # GGUF file type 38
        ("IQ2_XXS", "iq2_xxs"),
    ],
)
def test_names_files_and_people_use(typed: str, fmt: str) -> None:
    found, reading = resolve_weight_format(typed)
    assert found.id == fmt
    if typed.lower() != fmt:
        assert reading is not None
        assert fmt in reading


def test_every_alias_names_a_format_or_dtype() -> None:
    formats = weight_formats()
    for alias, (target, whose) in WEIGHT_FORMAT_ALIASES.items():
        assert target in formats, alias
        assert alias not in formats, f"{alias} shadows a format id"
        assert whose, alias
    for alias, (dtype, _) in DTYPE_ALIASES.items():
        assert dtype in DTYPES, alias


def test_kv_dtype_names() -> None:
    assert canonical_dtype("bfloat16") == "bf16"
    assert canonical_dtype("FP8") == "fp8"
    assert InferenceInputs(kv_dtype="float16").kv_dtype == "fp16"
    assert InferenceInputs(weights_format="bfloat16").weights_format == "bf16"
    with pytest.raises(ValueError, match="unknown dtype"):
        canonical_dtype("fp7")


def test_cli_weights_dtype_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--weights-dtype", "bfloat16", "--json"]) == 0
    named = capsys.readouterr()
    assert main(["report", "--weights-dtype", "bf16", "--json"]) == 0
    by_id = capsys.readouterr()
    assert json.loads(named.out) == json.loads(by_id.out)
    assert "'bfloat16' read as bf16" in named.err
    assert main(["report", "--weights-dtype", "iq2_xxs", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inference"]["weights_format"] == "iq2_xxs"
    # Llama-3.1-8B, 8,030,261,248 parameters × 2.0625 bits / 8
    assert report["inference"]["weights_bytes"] == pytest.approx(8_030_261_248 * 2.0625 / 8)


# ------------------------------------------------------------------ data rates

RATES = [
    ("400 GB/s", 400e9),
    ("400GBps", 400e9),
    ("400GB", 400e9),
    ("50 GiB/s", 50 * 2**30),
    ("3.2e12", 3.2e12),
    # bits: a 400 Gb/s NIC moves 400e9 / 8 = 50e9 bytes per second
    ("400Gbps", 50e9),
    ("400 Gb/s", 50e9),
    ("400 gbps", 50e9),
    ("400 Gbit/s", 50e9),
    ("3.2 Tb/s", 400e9),
    ("100 Mbps", 12.5e6),
]


@pytest.mark.parametrize(("text", "bytes_per_s"), RATES)
def test_data_rates(text: str, bytes_per_s: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s)
    assert cli_bandwidth(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("text", ["400gb/s", "400gb", "400 mb/s"])
def test_lower_case_rates_that_could_be_either_are_refused(text: str) -> None:
    with pytest.raises(UnitError, match="bits or bytes"):
        parse_bandwidth(text)


def test_unknown_rate_units_are_refused() -> None:
    for text in ("400G", "400 GB/h", "fast", "-1 GB/s"):
        with pytest.raises(UnitError):
            parse_bandwidth(text)
