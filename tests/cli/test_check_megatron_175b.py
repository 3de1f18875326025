"""Issue 28's acceptance: `check` on Megatron-LM's public GPT-3 175B example
(tests/fixtures/stack_configs/megatron_gpt3_175b.sh, a reconstruction of
NVIDIA/Megatron-LM@157006d6 examples/gpt3/train_gpt3_175b_distributed.sh) evaluates a 175B
model, not the default Llama-3.1-8B, and says whether it fits.

The script names no model; its shape does: 96 layers, hidden 12288, 96 heads, 2,048
positions (GPT-3 175B, Brown et al. 2020, Table 2.1), and its ``--vocab-file`` +
``--merge-file`` are GPT-2's BPE tokenizer (50,257 tokens), which tells GPT-3 from OPT-175B
(same shape, 50,272 tokens). Its torchrun line takes the GPU count from shell variables
(one node, to be changed for a multi-node run, as its comment says); tp 8 × pp 16 needs at
least 128 GPUs, which the test passes.

Hand lower bound of the first pipeline stage's memory per GPU (mixed fp16, no distributed
optimizer, no recomputation, 1F1B): state 2 + 2 + 12 = 16 bytes × 175e9 ÷ (tp 8 · pp 16) =
21.9 GB, plus 96/16 = 6 layers × 16 micro-batches in flight × s·b·h·(8 + 24/t) bytes of
activations (Korthikanti et al. 2022, Table 2, tensor parallel without sequence parallelism,
less the two dropout masks and the s² attention terms FlashAttention does not keep) =
6 · 16 · 2048 · 12288 · 11 = 26.6 GB: at least 48.4 GB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset

SCRIPT = Path(__file__).parents[1] / "fixtures" / "stack_configs" / "megatron_gpt3_175b.sh"


def test_the_script_reads_as_gpt3_175b() -> None:
    imported = sc.read_config(SCRIPT)
    assert imported.stack == "megatron"
    assert imported.model == "gpt-3-175b"
    params = count_parameters(get_preset(imported.model).architecture).total
    assert params == pytest.approx(175e9, rel=0.005)
    assert imported.fields["parallelism.tp"] == 8
    assert imported.fields["parallelism.pp"] == 16
    assert imported.fields["parallelism.global_batch"] == 1536
    assert imported.fields["training.precision"] == "mixed_fp16"


def test_check_evaluates_175b_and_says_whether_it_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["check", str(SCRIPT), "--gpu", "h100-sxm", "--num-gpus", "128", "--json"])
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert "gpt-3-175b" in data["model"]
    assert data["num_gpus"] == 128
    lower = 16 * 175e9 / 128 + 6 * 16 * 2048 * 12288 * (8 + 24 / 8)
    assert lower == pytest.approx(48.4e9, rel=0.01)
    assert data["peak_bytes"] >= lower
    assert data["fits"] is (data["peak_bytes"] <= data["capacity_bytes"])
    assert status == (0 if data["fits"] else 1)
    assert data["step_seconds"] > 0


def test_check_without_a_gpu_count_reads_the_script_s_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The script's torchrun line is ``--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES``
    with GPUS_PER_NODE=8 and NUM_NODES=1 set above it: resolved as bash would, 8 GPUs, on
    which tp 8 × pp 16 = 128 cannot run. `check` says so (exit 2, a usage error) instead of
    answering for a GPU count the script does not launch."""
    assert main(["check", str(SCRIPT)]) == 2
    err = capsys.readouterr().err
    assert "tp·pp = 8·16 = 128 GPUs is more than the 8 GPUs" in err
    assert "Value error" not in err
