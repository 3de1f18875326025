"""`llm-planner report`: the compute and inference keys of the JSON contract and options."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.primitives.gpus import get_gpu

HAS_SHAPES = importlib.util.find_spec("llm_planner.core.primitives.shapes") is not None

COMPUTE_KEYS = (
    "flops_total",
    "flops_per_gpu_per_s",
    "gpu_hours",
    "wall_seconds",
    "cost_usd",
    "chinchilla_tokens",
)
INFERENCE_KEYS = (
    "weights_bytes",
    "kv_cache_bytes",
    "overhead_bytes",
    "total_bytes",
    "fits",
    "max_batch",
    "decode_tokens_per_s_bound",
)


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_json_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys)
    for key in COMPUTE_KEYS:
        assert key in data["compute"], key
    for key in INFERENCE_KEYS:
        assert key in data["inference"], key
    assert isinstance(data["inference"]["fits"], bool)
    assert isinstance(data["inference"]["max_batch"], int)


@pytest.mark.skipif(not HAS_SHAPES, reason="--params needs llm_planner.core.primitives.shapes")
def test_gpt3_flops_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys, "--params", "175B", "--tokens", "300B")
    # 6 × 175e9 × 300e9 = 3.15e23 (Transformer Math 101; 3.14e23 in arXiv:2005.14165 D.1)
    assert data["compute"]["flops_total"] == pytest.approx(3.15e23, rel=0.005)
    assert data["model"]["params_total"] == 175e9
    # weights follow P exactly: 175e9 × 2 bytes in the default bf16
    assert data["inference"]["weights_bytes"] == pytest.approx(350e9)


def test_llama2_7b_kv_cache_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys, "--model", "llama-2-7b", "--context", "4096", "--kv-dtype", "bf16")
    assert data["inference"]["kv_cache_bytes"] == 2 * 32 * 32 * 128 * 2 * 4096  # 2 GiB


def test_throughput_options(capsys: pytest.CaptureFixture[str]) -> None:
    peak = get_gpu("h100-sxm").peak_flops.for_dtype("bf16")
    assert peak is not None
    data = _report(capsys, "--mfu", "0.5")
    assert data["compute"]["flops_per_gpu_per_s"] == pytest.approx(peak * 0.5)
    data = _report(capsys, "--tflops", "400")
    assert data["compute"]["flops_per_gpu_per_s"] == pytest.approx(400e12)
    data = _report(capsys, "--model", "llama-2-7b", "--tokens-per-sec-per-gpu", "3000")
    params = data["compute"]["params"]
    assert data["compute"]["flops_per_gpu_per_s"] == pytest.approx(3000 * 6 * params)


def test_price_and_batch_options(capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys, "--price", "4", "--batch", "8", "--inference-gpus", "2")
    compute = data["compute"]
    assert compute["cost_usd"] == pytest.approx(compute["gpu_hours"] * 4)
    assert data["inference"]["batch"] == 8
    assert data["inference"]["num_gpus"] == 2


def test_quantized_weights_option(capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(capsys, "--weights-dtype", "q4_k_m")
    assert data["inference"]["weights_bytes"] == pytest.approx(
        data["model"]["params_total"] * 4.84 / 8
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [("--weights-dtype", "q9"), ("--kv-dtype", "fp5"), ("--mfu", "1.5"), ("--batch", "0")],
)
def test_bad_options_exit_2_naming_the_option(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    assert main(["report", option, value]) == 2
    err = capsys.readouterr().err
    assert option in err
    assert len(err.strip().splitlines()) == 1


def test_text_report_lists_compute_and_inference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "Compute budget" in out
    assert "Training FLOPs (model)" in out
    assert "Inference memory" in out
    assert "KV cache" in out
    assert "GiB" in out


def test_lengths_and_gpu_counts_read_k_as_1024(capsys: pytest.CaptureFixture[str]) -> None:
    """ "8k context" is 8,192 tokens and "1k GPUs" 1,024; tokens stay decimal (8k = 8,000)."""
    data = _report(
        capsys, "--seq-len", "8k", "--context", "32k", "--num-gpus", "1k", "--tokens", "8k"
    )
    assert data["compute"]["seq_len"] == 8192
    assert data["inference"]["context"] == 32768
    assert data["compute"]["num_gpus"] == 1024
    assert data["compute"]["tokens"] == 8000


def test_layout_line_names_every_degree(capsys: pytest.CaptureFixture[str]) -> None:
    """256 GPUs at tp 1, pp 4, cp 2 leave dp = 256 ÷ (1 · 4 · 2) = 32 replicas, on
    256 ÷ 8 = 32 nodes; ep 64 splits the experts inside the data-parallel group and adds no
    GPUs. The line used to read "64 × 1 × 4" whatever cp and ep were."""
    args = ["--model", "deepseek-v3", "--num-gpus", "256", "--tp", "1", "--pp", "4"]
    assert main(["report", *args, "--cp", "2", "--ep", "64"]) == 0
    out = capsys.readouterr().out
    assert "dp 32 × tp 1 × pp 4 × cp 2 = 256 GPUs on 32 nodes; experts over ep 64" in out
    assert main(["report", *args]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("Layout "))
    assert "dp 64 × tp 1 × pp 4 = 256 GPUs on 32 nodes" in line
    assert "cp" not in line
    assert "ep" not in line.replace("experts", "")
