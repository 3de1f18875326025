"""Recompute options read from real stack configs (faithful reconstructions: the files'
recompute, layout and model arguments as published, paths and data arguments left out) and
written back by the exporters (issue 31, item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_planner.core.files import stack_configs as sc
from llm_planner.core.files.stack_configs.textfmt import load_yaml
from llm_planner.core.inputs.scenario import default_scenario

DEEPSEEK_V3_MFSDP = """\
# NVIDIA/Megatron-LM@d98e8a64 examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh,
# PRETRAIN_ARGS with the script's defaults (TP 1, EP 8, MBS 4, GBS 2048)
PRETRAIN_ARGS=(
    --tensor-model-parallel-size 1
    --expert-model-parallel-size 8
    --expert-tensor-parallel-size 1
    --context-parallel-size 1
    --use-distributed-optimizer
    --sequence-parallel
    --use-flash-attn
    --micro-batch-size 4
    --global-batch-size 2048
    --recompute-granularity selective
    --recompute-modules mlp moe mla_up_proj layernorm
    --transformer-impl transformer_engine
    --seq-length 4096
    --num-layers 61
    --hidden-size 7168
    --ffn-hidden-size 18432
    --num-attention-heads 128
    --kv-channels 128
    --swiglu
    --multi-latent-attention
    --num-experts 256
    --moe-ffn-hidden-size 2048
    --moe-shared-expert-intermediate-size 2048
    --moe-router-topk 8
    --q-lora-rank 1536
    --kv-lora-rank 512
    --bf16
)
"""

QWEN_NVLM_BLOCK = """\
# NVIDIA/Megatron-LM@d98e8a64 examples/multimodal/nvlm/sft_qwen2p5_7b_internvit_6b_video.sh,
# the language model's OPTIONS (batch mode: MBZ 1, BZ 256; SEQ_LEN 256 with tiling)
torchrun --nproc_per_node 8 examples/multimodal/train.py \\
    --swiglu --use-distributed-optimizer --num-layers 28 --hidden-size 3584 \\
    --normalization RMSNorm --num-attention-heads 28 --group-query-attention \\
    --num-query-groups 4 --ffn-hidden-size 18944 --seq-length 256 \\
    --pipeline-model-parallel-size 1 --tensor-model-parallel-size 4 \\
    --micro-batch-size 1 --global-batch-size 256 --bf16 \\
    --recompute-granularity full --recompute-method block --recompute-num-layers 28
"""

TORCHTITAN_EVERY_2 = """\
# pytorch/torchtitan@42fe05f8 torchtitan/models/llama3_ft/train_configs/debug_model.toml
[model]
name = "llama3"
flavor = "debugmodel"

[optimizer]
name = "AdamW"

[training]
local_batch_size = 8
seq_len = 2048

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 1
pipeline_parallel_degree = 1
context_parallel_degree = 1

[activation_checkpoint]
mode = "selective"  # ["none", "selective", "full"]
selective_ac_option = "2"  # 'int' = ac every positive int layer or 'op', ac based on ops policy
"""

DEEPSPEED_GPT2_PARTITIONED: dict[str, Any] = {
    # deepspeedai/DeepSpeed@edaa7221 tests/model/Megatron_GPT2/ds_config_func_bs8_zero2_offload.json
    "train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "steps_per_print": 1,
    "zero_optimization": {
        "stage": 2,
        "reduce_bucket_size": 7000000,
        "allgather_bucket_size": 7000000,
        "reduce_scatter": True,
        "cpu_offload": True,
    },
    "gradient_clipping": 1.0,
    "fp16": {"enabled": True, "loss_scale": 0},
    "activation_checkpointing": {
        "partition_activations": True,
        "contiguous_memory_optimization": True,
    },
}


def _read(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(text)
    return sc.read_config(path).fields


def test_megatron_fsdp_deepseek_v3_reads_its_selective_modules(tmp_path: Path) -> None:
    fields = _read(tmp_path, "sbatch_mfsdp_deepseek_v3.sh", DEEPSEEK_V3_MFSDP)
    assert fields["training.recompute"] == "selective"
    assert fields["training.recompute_modules"] == ("mlp", "moe", "mla_up_proj", "layernorm")


def test_megatron_nvlm_block_over_all_28_layers(tmp_path: Path) -> None:
    fields = _read(tmp_path, "sft_qwen2p5_7b.sh", QWEN_NVLM_BLOCK)
    assert fields["training.recompute"] == "full"
    assert fields["training.recompute_method"] == "block"
    assert fields["training.recompute_layers"] == 28


def test_torchtitan_llama3_ft_debug_model_every_second_block(tmp_path: Path) -> None:
    fields = _read(tmp_path, "debug_model.toml", TORCHTITAN_EVERY_2)
    assert fields["training.recompute"] == "full"
    assert (fields["training.recompute_method"], fields["training.recompute_layers"]) == (
        "every",
        2,
    )


def test_deepspeed_megatron_gpt2_partitions_its_checkpoints(tmp_path: Path) -> None:
    fields = _read(tmp_path, "ds_config.json", json.dumps(DEEPSPEED_GPT2_PARTITIONED))
    assert fields["training.recompute_checkpoint"] == "partitioned"


def _scenario(**training: Any) -> Any:
    return sc.with_fields(
        default_scenario(),
        {"parallelism.pp": 4, **{f"training.{k}": v for k, v in training.items()}},
    )


def test_megatron_export_writes_method_layers_and_modules(tmp_path: Path) -> None:
    block = sc.export_config(
        _scenario(recompute="full", recompute_method="block", recompute_layers=2), "megatron"
    )
    assert "--recompute-method block" in block.text
    assert "--recompute-num-layers 2" in block.text
    modules = sc.export_config(
        _scenario(recompute="selective", recompute_modules=("core_attn", "mlp")), "megatron"
    )
    assert "--recompute-modules core_attn mlp" in modules.text
    path = tmp_path / "again.sh"
    path.write_text(modules.text)
    assert sc.read_config(path).fields["training.recompute_modules"] == ("core_attn", "mlp")


def test_torchtitan_export_writes_every_n_as_its_layer_option(tmp_path: Path) -> None:
    exported = sc.export_config(
        _scenario(recompute="full", recompute_method="every", recompute_layers=3), "torchtitan"
    )
    assert 'selective_ac_option = "3"' in exported.text
    path = tmp_path / "again.toml"
    path.write_text(exported.text)
    fields = sc.read_config(path).fields
    assert (fields["training.recompute_method"], fields["training.recompute_layers"]) == (
        "every",
        3,
    )


def test_deepspeed_export_states_where_checkpoints_live() -> None:
    exported = sc.export_config(
        _scenario(recompute="full", recompute_checkpoint="cpu"), "deepspeed"
    )
    config = json.loads(exported.text)
    assert config["activation_checkpointing"] == {
        "partition_activations": False,
        "cpu_checkpointing": True,
    }


def test_nanotron_exports_the_release_s_granularity_and_says_what_each_version_does() -> None:
    """The export is parsed in CI by nanotron 0.2 (PyPI), whose ``ParallelismArgs`` has
    ``recompute_granularity`` and refuses unknown keys (dacite strict); its Llama never
    recomputes (models/llama.py hands the field to the FLOP count only), and main
    (huggingface/nanotron@2411b022) renamed it ``recompute_layer``: the notes say both."""
    full = sc.export_config(_scenario(recompute="full"), "nanotron")
    assert "recompute_granularity: FULL" in full.text
    assert "recompute_layer" not in load_yaml(full.text)["parallelism"]
    assert any("recompute_layer: true" in note for note in full.unexpressed)
    selective = sc.export_config(_scenario(recompute="selective"), "nanotron")
    assert "recompute_granularity: SELECTIVE" in selective.text
    assert any("main has no selective" in note for note in selective.unexpressed)
    none = sc.export_config(_scenario(recompute="none"), "nanotron")
    assert not any("recompute" in note for note in none.unexpressed)
