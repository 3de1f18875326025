"""Each stack's recompute options in memory (bytes kept) and time (forward FLOPs replayed),
against hand computations from that stack's source (issue 31, item 3).

The per-layer numbers the hand computations start from (Llama 3.1 8B: h 4096, 32 heads,
kv 1024, f 14336, 32 layers; bf16; flash attention; no dropout):

- Megatron-Core's profile saves per token, per layer: the attention norm's input, the QKV
  input, Q, the attention output, the MLP norm's input and the fc1 input (6·h), K and V
  (2·kv), fc1's gate‖up output and fc2's input (3·f), 2 bytes each, and the flash
  kernel's fp32 log-sum-exp (a): 2·(6·4096 + 2·1024 + 3·14336) + 4·32 = 139,392 bytes.
- A full-recompute checkpoint is the layer input, s·b·h·2 bytes (÷ tp with SP).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.activation_recompute import (
    checkpointed_layers,
    partial_full_stage,
    recomputed_fraction,
)
from llm_planner.core.quantities.activations import layer_activations
from llm_planner.core.sections.training import training_flops

LLAMA_8B = get_preset("llama-3.1-8b").architecture
MIXTRAL = get_preset("mixtral-8x7b").architecture
DEEPSEEK_V3 = get_preset("deepseek-v3").architecture

MEGATRON_PER_TOKEN = 2 * (6 * 4096 + 2 * 1024 + 3 * 14336) + 4 * 32
S = 4096
SAVED = S * MEGATRON_PER_TOKEN  # one layer, b = 1, tp = 1
CHECKPOINT = S * 4096 * 2


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data["training"]


def _in_layers(training: dict[str, Any]) -> float:
    """The stage's activations saved inside its layers (all micro-batches in flight)."""
    return float(training["activations_bytes"] - training["outside_activations_bytes"])


MEGATRON_PP4 = (
    "--model", "llama-3.1-8b", "--num-gpus", "4", "--pp", "4", "--tp", "1", "--seq-len", "4096",
    "--micro-batch", "1", "--global-batch", "16", "--stack", "megatron",
)  # fmt: skip


def test_the_shapes_are_what_the_hand_computations_assume() -> None:
    assert MEGATRON_PER_TOKEN == 139_392
    la = layer_activations(LLAMA_8B, S, 1, recompute="none", flash=True, dropout=False)
    assert la.kept_bytes == SAVED
    assert (MIXTRAL.moe is not None, DEEPSEEK_V3.mla is not None) == (True, True)


# ---------------------------------------------------------------- Megatron full: block, uniform


def test_megatron_block_keeps_the_rest_of_the_stage_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """NVIDIA/Megatron-LM@d98e8a64 megatron/core/recompute.py ``checkpointed_forward``,
    method block: the first N = 2 of the stage's 32 / pp 4 = 8 layers are checkpointed (their
    input kept), the other 6 run without (everything saved). The first 1F1B stage holds
    pp = 4 micro-batches: 4 × (2 × 33,554,432 + 6 × 570,949,632) = 13,971,226,624 bytes.
    Time: 2 of 8 layers replayed, so hardware/model FLOPs − 1 is a quarter of full's."""
    assert (CHECKPOINT, SAVED) == (33_554_432, 570_949_632)
    block = _report(
        capsys, *MEGATRON_PP4, "--recompute", "full", "--recompute-method", "block",
        "--recompute-layers", "2",
    )  # fmt: skip
    full = _report(capsys, *MEGATRON_PP4, "--recompute", "full")
    assert (block["layers_on_stage"], block["microbatches_in_flight"]) == (8, 4)
    assert block["activations_bytes"] == pytest.approx(13_971_226_624, rel=1e-12)
    # full keeps the 8 inputs alone (on whichever stage is fuller: the head's, here)
    assert _in_layers(full) == pytest.approx(
        full["microbatches_in_flight"] * 8 * CHECKPOINT, rel=1e-12
    )
    assert block["recompute_working_bytes"] == SAVED  # one checkpointed layer replayed
    assert (block["hardware_flops_factor"] - 1) == pytest.approx(
        (full["hardware_flops_factor"] - 1) * 2 / 8, rel=1e-12
    )


def test_megatron_block_covering_the_stage_is_full(capsys: pytest.CaptureFixture[str]) -> None:
    block = _report(
        capsys, *MEGATRON_PP4, "--recompute", "full", "--recompute-method", "block",
        "--recompute-layers", "8",
    )  # fmt: skip
    full = _report(capsys, *MEGATRON_PP4, "--recompute", "full")
    assert block["activations_bytes"] == full["activations_bytes"]
    assert block["hardware_flops_factor"] == full["hardware_flops_factor"]


def test_megatron_uniform_keeps_one_input_per_chunk_and_replays_the_chunk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """method uniform, N = 4: the stage's 8 layers run as 2 checkpointed chunks of 4, each
    keeping its input: 2 checkpoints per micro-batch instead of 8; in backward a chunk's 4
    layers are replayed together, so the working set is 4 layers' saved tensors. Every
    layer is replayed: the same FLOPs as full."""
    uniform = _report(
        capsys, *MEGATRON_PP4, "--recompute", "full", "--recompute-method", "uniform",
        "--recompute-layers", "4",
    )  # fmt: skip
    full = _report(capsys, *MEGATRON_PP4, "--recompute", "full")
    assert _in_layers(uniform) == pytest.approx(
        uniform["microbatches_in_flight"] * 2 * CHECKPOINT, rel=1e-12
    )
    assert uniform["recompute_working_bytes"] == pytest.approx(4 * SAVED, rel=1e-12)
    assert uniform["hardware_flops_factor"] == full["hardware_flops_factor"]


def test_partial_full_arithmetic_by_hand() -> None:
    # block N = 3 of 8; torchtitan every 3rd of 8 (count 3 and 6): 2; uniform: all 8
    assert checkpointed_layers("block", 3, 8) == 3
    assert checkpointed_layers("every", 3, 8) == 2
    assert checkpointed_layers("uniform", 3, 8) == 8
    assert checkpointed_layers("every", 1, 8) == 8  # 0 and 1: every block
    assert recomputed_fraction("block", 3, 8) == 3 / 8
    # uniform 3 over 8 layers: chunks 3, 3, 2 → 3 inputs kept; working set 3 layers
    kept, working = partial_full_stage(
        method="uniform", n=3, layers_on_stage=8, checkpoint_bytes=10.0, saved_bytes=100.0
    )
    assert (kept, working) == (30.0, 300.0)
    kept, working = partial_full_stage(
        method="every", n=3, layers_on_stage=8, checkpoint_bytes=10.0, saved_bytes=100.0
    )
    assert (kept, working) == (2 * 10.0 + 6 * 100.0, 100.0)


# ---------------------------------------------------------------- torchtitan layer-level every N


def test_torchtitan_every_second_block(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/torchtitan@1f029641 torchtitan/distributed/activation_checkpoint.py
    ``_apply_layer_sac``: a counter per block, the block wrapped when count % 2 == 0: 16 of
    32 blocks checkpointed. torchtitan's profile (PyTorch modules) saves per token, per layer:
    per RMSNorm an fp32 input copy, the normalised x and rstd (4h + 2h + 4 bytes, two norms),
    QKV input, Q, attention output and fc1 input (4·h), K, V (2·kv), the log-sum-exp (4·a),
    and silu's gate input and output, up and the product (4·f): 2·(6·4096 + 4) + 2·(4·4096 +
    2·1024) + 128 + 8·14336 = 200,840 bytes; FSDP on 8 GPUs, pp 1, one micro-batch in flight.
    none − every-2 = 16 × (saved − checkpoint); 16 of 32 layers replayed."""
    per_token = 2 * (6 * 4096 + 4) + 2 * (4 * 4096 + 2 * 1024) + 128 + 8 * 14336
    assert per_token == 200_840
    saved, ckpt = S * per_token, CHECKPOINT
    base = (
        "--model", "llama-3.1-8b", "--num-gpus", "8", "--stack", "torchtitan", "--fsdp",
        "full_shard", "--seq-len", "4096", "--micro-batch", "1", "--global-batch", "8",
    )  # fmt: skip
    none = _report(capsys, *base, "--recompute", "none")
    every = _report(
        capsys, *base, "--recompute", "full", "--recompute-method", "every",
        "--recompute-layers", "2",
    )  # fmt: skip
    full = _report(capsys, *base, "--recompute", "full")
    assert none["activations_bytes"] - every["activations_bytes"] == pytest.approx(
        16 * (saved - ckpt), rel=1e-12
    )
    assert every["hardware_flops_factor"] - 1 == pytest.approx(
        (full["hardware_flops_factor"] - 1) / 2, rel=1e-12
    )


# ---------------------------------------------------------------- Megatron selective modules


def _ti(**fields: Any) -> TrainingInputs:
    return TrainingInputs(seq_len=S, recompute="selective", flash_attention=True, **fields)


def test_megatron_selective_mlp_drops_the_mlp_interior_and_replays_its_gemms() -> None:
    """transformer_layer.py ``recompute_mlp``: ``tensor_parallel.checkpoint(self.mlp, …,
    pre_mlp_layernorm_output)``: the fc1 input stays, fc1's gate‖up output (2·f) and fc2's
    input (f) go: 3·f·2 bytes per token dropped; its forward 2·3·h·f FLOPs per token per
    layer replayed (32 layers; nothing of the attention core with flash)."""
    la = layer_activations(
        LLAMA_8B, S, 1, recompute="selective", flash=True, dropout=False,
        recompute_modules=("mlp",),
    )  # fmt: skip
    assert la.kept_bytes == SAVED - S * 3 * 14336 * 2
    assert la.recompute_flops == 2.0 * S * 3 * 4096 * 14336
    flops = training_flops(LLAMA_8B, _ti(recompute_modules=("mlp",)))
    assert flops.recomputed == pytest.approx(32 * 2.0 * 3 * 4096 * 14336, rel=1e-12)
    assert training_flops(LLAMA_8B, _ti()).recomputed == 0.0  # core_attn under flash


def test_megatron_selective_moe_modules_on_mixtral() -> None:
    """Mixtral's MoE layer (E 8, k 2, f 14336) saves per token: router probabilities fp32
    4·E = 32, the k routed copies of the input 2·k·h = 16,384, the experts' gate‖up output
    2·k·2·f = 114,688, fc2 input 2·k·f = 57,344, and each routed copy's probability for the
    weighted activation, fp32 4·k = 8 (Megatron-Core scales the copies inside the experts, so
    the combine saves no expert outputs).
    ``moe`` (moe_layer.py ``moe_layer_recompute``): all of them dropped, the router and k
    experts replayed, 2·(3·h·f·k + h·E) FLOPs per token; ``moe_act`` (experts.py
    ``activation_recompute``): the fc2 input only, no GEMM; ``layernorm``
    (gpt_layer_specs.py: an MoE layer's pre_mlp_layernorm is a separate norm): its output,
    the router and fc1 input, 2·h = 8,192; ``mlp`` does nothing on an MoE layer."""
    none = layer_activations(MIXTRAL, S, 1, recompute="none", flash=True, dropout=False)

    def drop(*modules: str) -> float:
        la = layer_activations(
            MIXTRAL, S, 1, recompute="selective", flash=True, dropout=False,
            recompute_modules=modules,
        )  # fmt: skip
        return (none.kept_bytes - la.kept_bytes) / S

    assert drop("moe") == 32 + 16_384 + 114_688 + 57_344 + 8
    assert drop("moe_act") == 57_344
    assert drop("layernorm") == 8_192
    assert drop("mlp") == 0
    la = layer_activations(
        MIXTRAL, S, 1, recompute="selective", flash=True, dropout=False,
        recompute_modules=("moe",),
    )  # fmt: skip
    assert la.recompute_flops == 2.0 * S * (3 * 4096 * 14336 * 2 + 4096 * 8)


def test_megatron_selective_shared_experts_and_mla_up_proj_on_deepseek_v3() -> None:
    """DeepSeek-V3 (h 7168, one shared expert of 2048, MLA r_q 1536, r_kv 512, 128 heads,
    d_nope 128, d_rope 64, d_v 128). ``shared_experts``: the shared expert's gate‖up output
    and fc2 input, 2·(2·2048 + 2048) = 12,288 bytes per token, its 2·3·h·2048 FLOPs.
    ``mla_up_proj`` (output-discarding): Q and K (a·(d_nope + d_rope) each) and V (a·d_v),
    2·128·(192 + 192 + 128) = 131,072 bytes per token; replayed the up-projections,
    2·(1536·128·192 + 512·128·256) FLOPs per token."""
    none = layer_activations(
        DEEPSEEK_V3, S, 1, recompute="none", flash=True, dropout=False, moe_layer=True
    )

    def run(*modules: str) -> tuple[float, float]:
        la = layer_activations(
            DEEPSEEK_V3, S, 1, recompute="selective", flash=True, dropout=False,
            moe_layer=True, recompute_modules=modules,
        )  # fmt: skip
        return (none.kept_bytes - la.kept_bytes) / S, la.recompute_flops / S

    assert run("shared_experts") == (12_288, 2.0 * 3 * 7168 * 2048)
    assert run("mla_up_proj") == (131_072, 2.0 * (1536 * 128 * 192 + 512 * 128 * 256))


# ---------------------------------------------------------------- Hugging Face, DeepSpeed


def test_hugging_face_selective_is_whole_layer_checkpointing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """huggingface/transformers@00029cfa src/transformers/modeling_layers.py
    ``GradientCheckpointingLayer.__call__``: gradient_checkpointing runs each decoder layer
    under the checkpoint function, its input kept; the Trainer has no finer option, and the
    export writes ``gradient_checkpointing: true`` for it: priced as full."""
    base = ("--model", "llama-3.1-8b", "--num-gpus", "8", "--stack", "hf", "--seq-len", "4096")
    selective = _report(capsys, *base, "--recompute", "selective")
    full = _report(capsys, *base, "--recompute", "full")
    none = _report(capsys, *base, "--recompute", "none")
    assert selective["activations_bytes"] == full["activations_bytes"]
    assert selective["hardware_flops_factor"] == full["hardware_flops_factor"] > 1.0
    assert none["activations_bytes"] > full["activations_bytes"]


def test_deepspeed_partitioned_and_cpu_checkpoints() -> None:
    """deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/activation_checkpointing/
    checkpointing.py: ``partition_activations`` keeps 1/mp_size of each checkpointed input
    (tp 2, no sequence parallelism: s·h·2/2 = 16,777,216 bytes instead of 33,554,432);
    ``cpu_checkpointing`` copies it to the host: none on the GPU. The replay is the same."""

    def kept(placement: str) -> tuple[float, float]:
        la = layer_activations(
            LLAMA_8B, S, 1, tp=2, recompute="full", flash=True, dropout=False,
            checkpoint_placement=placement,
        )  # fmt: skip
        return la.kept_bytes, la.recompute_flops

    assert kept("gpu")[0] == CHECKPOINT
    assert kept("partitioned")[0] == CHECKPOINT / 2
    assert kept("cpu")[0] == 0.0
    assert kept("gpu")[1] == kept("partitioned")[1] == kept("cpu")[1]


def test_a_partial_replay_repeats_that_share_of_the_tensor_parallel_collectives() -> None:
    """Megatron's layer does 2 all-reduces of s·b·h forward and 2 backward (Shoeybi et al.
    2019 section 3), 2 more in a replayed forward. Block 2 of a stage's 8 layers replays a
    quarter: 4 + 2/4 = 4.5 per layer on average. tp 2, s·b = 4096, h 4096, bf16: a ring
    all-reduce over 2 GPUs sends 2·(2 − 1)/2 of the 33,554,432-byte message per GPU."""
    message = 4096 * 4096 * 2
    share = float(recomputed_fraction("block", 2, 8))
    sent = comm.tensor_parallel_bytes_per_layer(2, 4096, 4096, full_recompute=share)
    assert float(sent) == 4.5 * message == 150_994_944
