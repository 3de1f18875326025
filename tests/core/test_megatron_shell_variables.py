"""Megatron-LM launch scripts set their sizes in shell variables and pass them as
``--num-layers $NUM_LAYERS`` (NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh,
examples/mixtral/train_mixtral_8x7b_distributed.sh). Issue 28 item 5: they are read as bash
would expand them, ``${VAR:-default}`` and ``$(( … ))`` included, instead of refused
("argument --num-layers: invalid int value: '$NUM_LAYERS'")."""

from __future__ import annotations

from llm_planner.core.files.stack_configs import megatron

SCRIPT = """#!/bin/bash
# sizes
NUM_LAYERS=96
HIDDEN=${HIDDEN:-12288}
export TP=8
PP="16"
GPUS_PER_NODE=8
NUM_NODES=16
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
CHECKPOINT_PATH=$1
GPT_ARGS=(
    --num-layers $NUM_LAYERS
    --hidden-size ${HIDDEN}
    --num-attention-heads 96
    --seq-length ${SEQ:-2048}
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size ${PP}
    --micro-batch-size 1
    --global-batch-size $((WORLD_SIZE / 128 * 1536))
    --save $CHECKPOINT_PATH
)
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES pretrain_gpt.py ${GPT_ARGS[@]}
"""


def test_the_script_s_variables_are_expanded_as_bash_would() -> None:
    resolved = megatron.resolve_shell(SCRIPT)
    assert "--num-layers 96" in resolved
    assert "--hidden-size 12288" in resolved  # ${HIDDEN:-12288}: unset before, so the default
    assert "--seq-length 2048" in resolved  # ${SEQ:-2048}: never set
    assert "--tensor-model-parallel-size 8" in resolved  # export TP=8
    assert "--pipeline-model-parallel-size 16" in resolved  # PP="16", quotes dropped
    assert "WORLD_SIZE=128" in resolved  # $((8*16))
    assert "--global-batch-size 1536" in resolved  # $((128 / 128 * 1536))
    assert "--save $1" in resolved  # a positional argument stays as written
    assert "${GPT_ARGS[@]}" in resolved  # array expansion stays: its elements are read


def test_the_import_reads_the_expanded_values_and_the_gpu_count() -> None:
    imported = megatron.parse(SCRIPT, "train.sh")
    fields = imported.fields
    assert fields["parallelism.tp"] == 8
    assert fields["parallelism.pp"] == 16
    assert fields["training.seq_len"] == 2048
    assert fields["parallelism.global_batch"] == 1536
    assert fields["num_gpus"] == 128  # --nproc_per_node 8 × --nnodes 16
    assert imported.arch_hint["layers"] == 96
    assert imported.arch_hint["hidden_size"] == 12288


def test_arithmetic_is_whole_numbers_only() -> None:
    assert megatron._integer_arithmetic("(2 + 3) * 4 - 6 / 4") == 19
    assert megatron._integer_arithmetic("8 / 0") is None
    assert megatron._integer_arithmetic("2 ** 8") is None  # bash's ** is not read
    assert megatron._integer_arithmetic("__import__") is None
