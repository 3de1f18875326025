"""Each stack's recomputation as that stack defines it, against hand computations from the
stack's source (issue 31, item 3).

- torchtitan (pytorch/torchtitan@b5bcd76c, torchtitan/distributed/activation_checkpoint.py,
  ``SelectiveAC``): op-level selective checkpointing. Every transformer block is wrapped in a
  checkpoint; inside it, the outputs of ``_get_default_save_ops`` (the partitioner's
  compute-intensive ops: mm, the SDPA kernels; linear, max, topk, reduce_scatter_tensor,
  all_to_all_single) are MUST_SAVE "except every second mm/linear" (a counter per block
  forward), the rest is recomputed. Llama's block runs wq, wk, wv, wo
  (models/common/attention.py ``QKVLinear``: ``self.wq(x), self.wk(x), self.wv(x)``, then
  ``self.wo``) and ``w2(F.silu(w1(x)) * w3(x))`` (models/common/feed_forward.py), so the 1st,
  3rd, 5th and 7th matmul (wq, wv, w1, w2) are kept and wk, wo, w3 recomputed.
- Megatron-LM's selective (``--recompute-granularity selective``, default module core_attn):
  the attention core, which with a fused flash kernel saves no s² tensor, so nothing is
  dropped (Korthikanti et al. 2022, section 5). Its full granularity
  (NVIDIA/Megatron-LM@d98e8a64 transformer_config.py ``recompute_method``,
  ``recompute_num_layers``; megatron/core/recompute.py) imports as full with its method and
  N, priced in tests/core/test_recompute_granularity.py.
- nanotron (huggingface/nanotron@2411b022): only ``recompute_layer``
  (config/parallelism_config.py), a ``CheckpointFunction`` around each decoder layer
  (models/llama.py ``_checkpointed_forward``) keeping its ``hidden_states`` input;
  ``RecomputeGranularity`` (config/utils_config.py) is declared and never read, so nanotron
  has no selective recomputation: flash attention is always on, and "selective" keeps what
  "none" keeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import activation_bytes_per_layer, layer_activations
from llm_planner.core.quantities.stacks import get_stack

GIB = 2**30
LLAMA_8B = get_preset("llama-3.1-8b").architecture

# Llama 3.1 8B: h 4096, 32 heads of 128, 8 kv heads (kv 1024), f 14336, 32 layers
S, B = 8192, 2
TOKENS = S * B  # 16,384


def test_the_llama_8b_shape_is_what_the_hand_computations_assume() -> None:
    a = LLAMA_8B
    assert (a.hidden_size, a.heads, a.kv_size, a.ffn_size, a.layers) == (
        4096,
        32,
        1024,
        14336,
        32,
    )


def test_torchtitan_runs_its_own_op_level_selective_profile() -> None:
    assert get_stack("torchtitan").implementation == "torchtitan"


def test_torchtitan_op_level_selective_keeps_the_odd_matmuls_and_the_attention_output() -> None:
    # elements per token kept per block: block input h + wq's q (4096) + wv's kv (1024)
    # + the flash kernel's output (4096) + w1's f (14336) + w2's h (4096) = 31,744, bf16;
    # plus the kernel's fp32 log-sum-exp, b·a·s
    per_token = 2 * (4096 + 4096 + 1024 + 4096 + 14336 + 4096)
    lse = 4 * B * 32 * S
    hand = TOKENS * per_token + lse
    assert hand == 1_042_284_544
    kept = activation_bytes_per_layer(
        LLAMA_8B, S, B, recompute="selective", flash=True, profile="torchtitan"
    )
    assert kept == pytest.approx(hand, rel=1e-12)


def test_torchtitan_op_level_selective_recomputes_wk_wo_w3() -> None:
    # 2·tokens·h·(kv + q + f) forward FLOPs replayed: wk (h→kv), wo (q→h), w3 (h→f)
    hand = 2.0 * TOKENS * 4096 * (1024 + 4096 + 14336)
    la = layer_activations(LLAMA_8B, S, B, recompute="selective", flash=True, profile="torchtitan")
    assert la.recompute_flops == pytest.approx(hand, rel=1e-12)
    # the ledger lists what the policy keeps, and nothing else is kept
    assert sum(e.bytes for e in la.ledger if e.kept) == pytest.approx(la.kept_bytes)


def test_torchtitan_op_level_selective_with_tensor_and_sequence_parallelism() -> None:
    # tp 2 with SP: every kept tensor is divided by 2 except w2's output, the row-parallel
    # matmul's full s·b·h partial sum before its reduce-scatter; the two reduce-scatter
    # outputs (after wo and w2) are kept too, s·b·h/2 each
    t = 2
    sharded = (4096 + 4096 + 1024 + 4096 + 14336 + 4096 + 4096) / t  # + wo's and w2's RS
    hand = TOKENS * 2 * (sharded + 4096) + 4 * B * 32 * S / t
    kept = activation_bytes_per_layer(
        LLAMA_8B,
        S,
        B,
        tp=t,
        sequence_parallel=True,
        recompute="selective",
        flash=True,
        profile="torchtitan",
    )
    assert kept == pytest.approx(hand, rel=1e-12)


def test_megatron_selective_drops_nothing_once_flash_attention_is_on() -> None:
    none = activation_bytes_per_layer(LLAMA_8B, S, B, recompute="none", flash=True)
    selective = activation_bytes_per_layer(LLAMA_8B, S, B, recompute="selective", flash=True)
    assert selective == none


def test_nanotron_has_no_selective_and_its_layer_recompute_keeps_the_layer_input() -> None:
    none = activation_bytes_per_layer(
        LLAMA_8B, S, B, recompute="none", flash=True, profile="nanotron"
    )
    selective = activation_bytes_per_layer(
        LLAMA_8B, S, B, recompute="selective", flash=True, profile="nanotron"
    )
    assert selective == none
    # recompute_layer: hidden_states, sequence-sharded with TP (REDUCE_SCATTER mode), bf16
    full = activation_bytes_per_layer(
        LLAMA_8B,
        S,
        B,
        tp=4,
        sequence_parallel=True,
        recompute="full",
        flash=True,
        profile="nanotron",
    )
    assert full == TOKENS * 4096 * 2 / 4


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


TITAN_8B = (
    "--model", "llama-3.1-8b", "--gpu", "h100", "--seq-len", "8192", "--micro-batch", "2",
    "--stack", "torchtitan", "--fsdp", "full_shard", "--recompute", "selective",
    "--flash-attention",
)  # fmt: skip


def test_torchtitan_llama_8b_published_peak(capsys: pytest.CaptureFixture[str]) -> None:
    """pytorch/torchtitan@b5bcd76c benchmarks/llama3_h100_202412_torchtitan.md, Table 1 and
    Table 3: Llama 3.1 8B, FSDP, local batch 2, selective activation checkpointing (op-level,
    the default then and now), torchtitan's logged max reserved memory: 82.4 GiB on 8 H100,
    67.0 GiB on 128. Before op-level selective was modeled this read 142 GiB (Megatron's
    attention-core recompute, which drops nothing under flash attention).

    The model reads 72.6 GiB and 57.9 GiB: 12% and 14% under, by about the same 9.4 GiB on
    both (a term the model does not hold, not a sharding error). The difference between the
    two, FSDP sharding 16 bytes per parameter over 8 vs 128 GPUs, is 15.4 GiB published.
    Priced from the source: ``[norm, lm_head]`` stays gathered after the forward
    (torchtitan/distributed/fsdp.py ``apply_fsdp_to_decoder``), 1.0 GiB of bf16 weights
    beside the logits (tests/core/test_torchtitan_gathered_head.py); before, 71.6 and
    56.9 GiB. Read but not priced: the loss's two fp32 logit tensors (docs/ACCURACY.md,
    "Recomputation as each stack defines it")."""
    eight = _report(capsys, *TITAN_8B, "--num-gpus", "8", "--global-batch", "16")["training"]
    many = _report(capsys, *TITAN_8B, "--num-gpus", "128", "--global-batch", "256")["training"]
    assert eight["peak_bytes"] / GIB == pytest.approx(82.4, rel=0.13)
    assert many["peak_bytes"] / GIB == pytest.approx(67.0, rel=0.15)
    assert (eight["peak_bytes"] - many["peak_bytes"]) / GIB == pytest.approx(82.4 - 67.0, abs=1.0)


def _titan_toml(tmp_path: Path, option: str | None) -> Path:
    path = tmp_path / "llama3_8b.toml"
    extra = "" if option is None else f'selective_ac_option = "{option}"\n'
    path.write_text(
        '[model]\nname = "llama3"\nflavor = "8B"\n\n[training]\nlocal_batch_size = 2\n'
        'seq_len = 8192\n\n[activation_checkpoint]\nmode = "selective"\n' + extra
    )
    return path


@pytest.mark.parametrize(("option", "read_as"), [(None, "selective"), ("op", "selective"),
                                                 ("1", "full"), ("0", "full")])  # fmt: skip
def test_torchtitan_toml_selective_options(
    tmp_path: Path, option: str | None, read_as: str
) -> None:
    """pytorch/torchtitan@169ba3bd7 (the last TOML-era version) torchtitan/distributed/
    activation_checkpoint.py: ``selective_ac_option`` "op" is op-level SAC; digits N are
    ``_apply_layer_sac``, "if not ac_freq or _layer_sac_count % ac_freq == 0" wrap the block
    in a full checkpoint: 0 and 1 checkpoint every block."""
    imported = sc.read_config(_titan_toml(tmp_path, option))
    assert imported.fields["training.recompute"] == read_as


def test_torchtitan_layer_level_every_n_is_full_on_every_nth_block(tmp_path: Path) -> None:
    # every 2nd block checkpointed, the others kept whole: full recompute, method every, N 2
    fields = sc.read_config(_titan_toml(tmp_path, "2")).fields
    assert fields["training.recompute"] == "full"
    assert fields["training.recompute_method"] == "every"
    assert fields["training.recompute_layers"] == 2


def _megatron_sh(tmp_path: Path, recompute: str) -> Path:
    path = tmp_path / "train.sh"
    path.write_text(
        "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\\n"
        "  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 \\\n"
        "  --num-layers 32 --micro-batch-size 1 --global-batch-size 64 --seq-length 4096 \\\n"
        f"  {recompute}\n"
    )
    return path


@pytest.mark.parametrize(
    "recompute",
    [
        "--recompute-granularity full",  # no method: "all layers will do recomputation"
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
        # block: 8 layers per stage (32 / pp 4), all 8 recomputed
        "--recompute-granularity full --recompute-method block --recompute-num-layers 8",
    ],
)
def test_megatron_full_that_covers_every_layer_imports_as_full(
    tmp_path: Path, recompute: str
) -> None:
    """NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/transformer_config.py
    (recompute_method, recompute_num_layers)."""
    imported = sc.read_config(_megatron_sh(tmp_path, recompute))
    assert imported.fields["training.recompute"] == "full"


@pytest.mark.parametrize(
    ("recompute", "method", "n"),
    [
        # one input kept per 4-layer unit, 4 layers replayed at once
        ("--recompute-granularity full --recompute-method uniform --recompute-num-layers 4",
         "uniform", 4),
        # 2 of the stage's 8 layers recomputed, 6 kept whole
        ("--recompute-granularity full --recompute-method block --recompute-num-layers 2",
         "block", 2),
    ],
)  # fmt: skip
def test_megatron_partial_full_recompute_imports_its_method(
    tmp_path: Path, recompute: str, method: str, n: int
) -> None:
    fields = sc.read_config(_megatron_sh(tmp_path, recompute)).fields
    assert fields["training.recompute"] == "full"
    assert (fields["training.recompute_method"], fields["training.recompute_layers"]) == (
        method,
        n,
    )


def test_op_level_selective_leaves_recurrent_mixers_to_the_layer_ledger() -> None:
    """torchtitan has no recurrent models; a Mamba layer under the torchtitan profile keeps
    what the attention-core reading keeps (with no attention core: everything)."""
    mamba = get_preset("mamba-130m").architecture
    titan = activation_bytes_per_layer(
        mamba, 2048, 1, recompute="selective", flash=True, profile="torchtitan"
    )
    none = activation_bytes_per_layer(
        mamba, 2048, 1, recompute="none", flash=True, profile="torchtitan"
    )
    assert titan == none
