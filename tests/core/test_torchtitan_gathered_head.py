"""torchtitan's output head kept gathered under FSDP (issue 31, item 3), against hand
computations from the source.

pytorch/torchtitan@b5bcd76c torchtitan/distributed/fsdp.py ``apply_fsdp_to_decoder``:
``fully_shard([model.norm, model.lm_head], ..., reshard_after_forward=
reshard_after_forward_policy == "always")``: under the default policy the head stays gathered
(bf16, ``mixed_precision_param``) from the forward into its own backward, beside the loss's
logits; its post-backward reshards it, then casts its unsharded bf16 gradient to
``mixed_precision_reduce`` float32 for the reduce-scatter. The embedding and the blocks take
the 'default' policy (resharded when there is no pipeline): no more gathered than before.

Llama 3.1 8B: V = 128,256, h = 4,096 (untied head). The general logits term is the bf16
logits and one fp32 copy, (2 + 4)·s·b·V (core/quantities/activations.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_planner.cli import main

V, H = 128_256, 4_096
GIB = 2**30

BASE = (
    "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--flash-attention",
    "--recompute", "selective", "--num-gpus", "8",
)  # fmt: skip


def _training(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *BASE, *args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return dict(data["training"])


def test_the_gathered_head_sits_beside_the_logits(capsys: pytest.CaptureFixture[str]) -> None:
    t = _training(capsys, "--stack", "torchtitan", "--fsdp", "full_shard", "--seq-len", "8192",
                  "--micro-batch", "2", "--global-batch", "16")  # fmt: skip
    logits = 8192 * 2 * V  # 2,101,346,304 logits on the GPU
    head = 2 * V * H  # 1,050,673,152 bytes of bf16 weights
    loss_moment = (2 + 4) * logits + head  # 13.66e9 bytes
    head_moment = max(2 * logits + 2 * head, head + 4 * V * H)  # 6.30e9
    assert loss_moment == 13_658_750_976
    assert t["logits_bytes"] == pytest.approx(max(loss_moment, head_moment), rel=1e-9)
    assert t["logits_bytes"] / GIB == pytest.approx(12.721, abs=1e-3)


def test_short_sequences_peak_at_the_heads_reduce_scatter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 512 tokens: 6·s·b·V + 2·V·h = 1.44e9 < 2·V·h (bf16 gradient) + 4·V·h (fp32 copy) = 3.15e9
    t = _training(capsys, "--stack", "torchtitan", "--fsdp", "full_shard", "--seq-len", "512",
                  "--micro-batch", "1", "--global-batch", "8")  # fmt: skip
    assert 6 * 512 * V + 2 * V * H < 6 * V * H
    assert t["logits_bytes"] == pytest.approx(6 * V * H, rel=1e-9)


def test_with_tensor_parallelism_the_head_is_vocabulary_parallel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    t = _training(capsys, "--stack", "torchtitan", "--fsdp", "full_shard", "--tp", "2",
                  "--seq-len", "4096", "--micro-batch", "1", "--global-batch", "4")  # fmt: skip
    assert t["logits_bytes"] == pytest.approx(((2 + 4) * 4096 * V + 2 * V * H) / 2, rel=1e-9)


def test_without_fsdp_nothing_is_gathered(capsys: pytest.CaptureFixture[str]) -> None:
    # DDP (no sharding): the head is a plain replicated weight, counted with the weights
    t = _training(capsys, "--stack", "torchtitan", "--zero", "0", "--seq-len", "1024",
                  "--micro-batch", "1", "--global-batch", "8")  # fmt: skip
    assert t["logits_bytes"] == pytest.approx((2 + 4) * 1024 * V, rel=1e-9)


@pytest.mark.parametrize("stack", ["megatron", "deepspeed", "hf", "nanotron"])
def test_other_stacks_reshard_their_head(capsys: pytest.CaptureFixture[str], stack: str) -> None:
    t = _training(capsys, "--stack", stack, "--zero", "3", "--seq-len", "1024",
                  "--micro-batch", "1", "--global-batch", "8")  # fmt: skip
    # Megatron's loss works in place in its saved fp32 softmax: only the bf16 logits on top
    fp32_copy = 0 if stack == "megatron" else 4
    assert t["logits_bytes"] == pytest.approx((2 + fp32_copy) * 1024 * V, rel=1e-9)
