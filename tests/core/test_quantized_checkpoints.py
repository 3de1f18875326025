"""Quantized checkpoints read as what they store (issue 28): compressed-tensors W4A16,
ModelOpt NVFP4 (``hf_quant_config.json``), GPTQ at 3 bits and at group size 32.

Fixtures (tests/fixtures/hf_quantized, each with a source.json naming the Hub checkpoint)
are the published shapes with the quantization block each tool writes. Expected bytes are
written out from each layout: parameters × bits per weight / 8.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files.hf_import import (
    architecture_from_path,
    inference_fields,
    quantization_format,
)
from llm_planner.core.primitives.presets import get_preset

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hf_quantized"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/source.json"))


def _source(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name / "source.json").read_text())
    return data


@pytest.mark.parametrize("name", CASES)
def test_each_checkpoint_gets_its_own_format(name: str) -> None:
    imported = architecture_from_path(FIXTURES / name)
    assert imported.weights_format == _source(name)["weights_format"]
    assert inference_fields(imported)["weights_format"] == _source(name)["weights_format"]
    assert any(note for note in imported.notes)


# (fixture, bits per weight written out from the layout, parameters)
BYTES = [
    # compressed-tensors W4A16: int4 + one 16-bit scale per 128 weights, no zero points
    ("llama-3.1-8b-w4a16", 4 + 16 / 128, 8_030_261_248),
    # GPTQ 3-bit, group 128: 3 bits + (fp16 scale + packed 3-bit zero) per 128
    ("llama-2-7b-gptq-3bit-128g", 3 + (16 + 3) / 128, 6_738_415_616),
    # GPTQ 4-bit, group 32: 4 + (16 + 4) / 32 = 4.625 bits (not the group-128 4.156)
    ("llama-2-7b-gptq-4bit-32g", 4 + (16 + 4) / 32, 6_738_415_616),
    # NVFP4: E2M1 + one E4M3 scale per 16 = 4.5 bits; DeepSeek-V3's 671,026,404,352
    # parameters (transformers) + 58 × 256 score-correction biases it stores
    ("deepseek-v3.1-nvfp4", 4 + 8 / 16, 671_026_404_352 + 58 * 256),
]


@pytest.mark.parametrize(("name", "bits", "params"), BYTES)
def test_weights_are_priced_at_the_checkpoints_bits(
    name: str, bits: float, params: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--model", str(FIXTURES / name), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inference"]["weights_bytes"] == pytest.approx(params * bits / 8, rel=1e-9)


def test_deepseek_nvfp4_is_not_priced_as_bf16(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's figure: the NVFP4 export was priced at 1,342 GB (2 bytes per parameter);
    at 4.5 bits it is 671e9 × 4.5 / 8 ≈ 377 GB."""
    assert main(["report", "--model", str(FIXTURES / "deepseek-v3.1-nvfp4"), "--json"]) == 0
    weights = json.loads(capsys.readouterr().out)["inference"]["weights_bytes"]
    assert weights / 1e9 == pytest.approx(377.5, abs=0.5)


def test_modelopt_in_config_json() -> None:
    """Newer ModelOpt exports also write ``quant_method: modelopt`` into config.json."""
    arch = get_preset("llama-3.1-8b").architecture
    fmt, _, note = quantization_format({"quant_method": "modelopt", "quant_algo": "FP8"}, arch)
    assert fmt == "fp8"
    fmt, _, note = quantization_format(
        {
            "quant_method": "modelopt",
            "quant_algo": "MIXED_PRECISION",
            "quantized_layers": {
                "model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
                "model.layers.1.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
                "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
            },
        },
        arch,
    )
    assert fmt == "nvfp4"
    assert note is not None
    assert "2 of 3" in note


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        # transformers GPTQConfig defaults: bits 4, group_size 128; -1 = per channel
        ({"quant_method": "gptq", "bits": 8}, "gptq_int8_g128"),
        ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "gptq_int4_channel"),
        ({"quant_method": "gptq", "bits": 2, "group_size": 64}, "gptq_int2_g64"),
        # AutoAWQ: w_bit / q_group_size; without zero points it is symmetric
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64}, "awq_int4_g64"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}, "int4_g128"),
        # compressed-tensors: fp8, NVFP4 (group 16), MXFP4 (group 32), asymmetric int8
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}
                },
            },
            "fp8",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "nvfp4-pack-quantized",
                "config_groups": {
                    "group_0": {
                        "weights": {
                            "num_bits": 4,
                            "type": "float",
                            "strategy": "tensor_group",
                            "group_size": 16,
                        }
                    }
                },
            },
            "nvfp4",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {
                        "weights": {
                            "num_bits": 4,
                            "type": "float",
                            "strategy": "group",
                            "group_size": 32,
                        }
                    }
                },
            },
            "mxfp4",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {
                        "weights": {
                            "num_bits": 8,
                            "type": "int",
                            "symmetric": False,
                            "strategy": "group",
                            "group_size": 128,
                        }
                    }
                },
            },
            "gptq_int8_g128",
        ),
        # not a layout: refused with a note, never read as something close
        ({"quant_method": "gptq", "bits": 9, "group_size": 128}, None),
        ({"quant_method": "modelopt", "quant_algo": "W8A8_SQ_PER_CHANNEL"}, None),
    ],
)
def test_quantization_blocks(quant: dict[str, Any], expected: str | None) -> None:
    fmt, _, note = quantization_format(quant, get_preset("llama-3.1-8b").architecture)
    assert fmt == expected
    assert note
