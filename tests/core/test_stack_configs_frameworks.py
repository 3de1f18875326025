"""Each exported file read by its own framework's parser, and the parsed values compared with
the plan's. Each test skips where its framework is not installed (CI installs them: see
.ci/run); versions: deepspeed 0.19.8, torchtitan 0.2.2 (the last with job TOML files),
accelerate 1.15.0, nanotron 0.2 (0.4 on PyPI does not import: a circular import in
nanotron.config), megatron-core 0.16.1 (its config classes; Megatron-LM's argument parser
is not part of the wheel)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files import stack_configs as sc

pytestmark = pytest.mark.slow

LAYOUT = {
    "parallelism.tp": 2,
    "parallelism.pp": 4,
    "parallelism.sequence_parallel": True,
    "parallelism.schedule": "interleaved",
    "parallelism.interleave_chunks": 2,
    "training.micro_batch": 2,
}
"""Llama-3.1-8B on 512 GPUs: dp = 512 / (2·4) = 64; accumulation = 1024 / (64·2) = 8."""


def planned(**extra: Any) -> Scenario:
    return sc.with_fields(default_scenario(), {**LAYOUT, **extra})


def exported_file(scenario: Scenario, fmt: str, folder: Path, **kw: Any) -> Path:
    exported = sc.export_config(scenario, fmt, **kw)
    path = folder / ("plan" + exported.suffix)
    path.write_text(exported.text, encoding="utf-8")
    for suffix, text in exported.companions.items():
        (folder / ("plan" + suffix)).write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_deepspeed_reads_the_config(stage: int, tmp_path: Path, monkeypatch: Any) -> None:
    pytest.importorskip("torch")
    config_mod = pytest.importorskip("deepspeed.runtime.config")
    scenario = planned(**{"parallelism.zero_stage": stage})
    path = exported_file(scenario, "deepspeed", tmp_path)

    class DataParallel:  # what deepspeed asks of an mpu for the batch rule
        def get_data_parallel_world_size(self) -> int:
            return 64

    monkeypatch.setattr(config_mod.dist, "get_rank", lambda: 0)
    config = config_mod.DeepSpeedConfig(str(path), mpu=DataParallel())
    assert config.world_size == 64
    assert config.train_batch_size == 1024
    assert config.train_micro_batch_size_per_gpu == 2
    assert config.gradient_accumulation_steps == 8
    assert config.zero_optimization_stage == stage
    assert config.bfloat16_config.enabled
    assert config.optimizer_name == "adamw"
    assert config.tensor_parallel_config.autotp_size == 2
    assert config.zero_config.reduce_bucket_size == 500_000_000
    if stage == 3:
        assert config.zero_config.prefetch_bucket_size == 50_000_000


def _torchtitan_config_manager(monkeypatch: Any) -> Any:
    """torchtitan's ConfigManager without its package __init__ (which imports triton)."""
    pytest.importorskip("torch")
    spec = importlib.util.find_spec("torchtitan")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torchtitan is not installed")
    package = types.ModuleType("torchtitan")
    package.__path__ = list(spec.submodule_search_locations)
    monkeypatch.setitem(sys.modules, "torchtitan", package)
    for name in [m for m in sys.modules if m.startswith("torchtitan.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        manager = importlib.import_module("torchtitan.config.manager")
    except ImportError as error:
        pytest.skip(f"torchtitan's config manager does not import: {error}")
    if not hasattr(manager.ConfigManager, "_maybe_load_toml"):
        pytest.skip("this torchtitan reads no TOML job files (0.3 and later)")
    return manager.ConfigManager


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"parallelism.zero_stage": 3}, (1, 64, "always")),
        ({"parallelism.zero_stage": 2}, (1, 64, "never")),
        ({"parallelism.fsdp_strategy": "HYBRID_SHARD"}, (16, 4, "always")),  # 8 per node / tp 2
    ],
)
def test_torchtitan_reads_the_job_toml(
    extra: dict[str, Any], expected: tuple[int, int, str], tmp_path: Path, monkeypatch: Any
) -> None:
    replicate, shard, reshard = expected
    manager = _torchtitan_config_manager(monkeypatch)
    path = exported_file(planned(**extra), "torchtitan", tmp_path)
    job = manager().parse_args(["--job.config_file", str(path)])
    p, t = job.parallelism, job.training
    assert (p.data_parallel_replicate_degree, p.data_parallel_shard_degree) == (replicate, shard)
    assert p.fsdp_reshard_after_forward == reshard
    assert (p.tensor_parallel_degree, p.pipeline_parallel_degree) == (2, 4)
    assert p.pipeline_parallel_schedule == "Interleaved1F1B"
    assert p.pipeline_parallel_layers_per_stage == 4  # 32 layers / (pp 4 · v 2)
    assert p.pipeline_parallel_microbatch_size == 2
    assert t.local_batch_size == 16  # 2 per micro-batch × 8 micro-batches through the pipe
    assert t.global_batch_size == 1024
    assert t.seq_len == 4096
    assert t.mixed_precision_param == "bfloat16"
    assert job.activation_checkpoint.mode == "selective"
    assert (job.model.name, job.model.flavor) == ("llama3", "8B")


@pytest.mark.parametrize("backend", ["fsdp", "deepspeed"])
def test_accelerate_reads_the_config_yaml(backend: str, tmp_path: Path) -> None:
    config_args = pytest.importorskip("accelerate.commands.config.config_args")
    scenario = sc.with_fields(
        default_scenario(),
        {"parallelism.tp": 2, "parallelism.zero_stage": 3, "training.recompute": "full"},
    )
    path = exported_file(scenario, "accelerate", tmp_path, backend=backend)
    config = config_args.load_config_from_file(str(path))
    assert config.num_processes == 512
    assert config.num_machines == 64
    assert str(config.mixed_precision) == "bf16"
    if backend == "fsdp":
        assert str(config.distributed_type) == "DistributedType.FSDP"
        assert config.fsdp_config["fsdp_version"] == 2
        assert config.fsdp_config["fsdp_reshard_after_forward"] is True
        assert config.fsdp_config["fsdp_activation_checkpointing"] is True
    else:
        assert str(config.distributed_type) == "DistributedType.DEEPSPEED"
        assert config.deepspeed_config["zero_stage"] == 3
        assert config.deepspeed_config["gradient_accumulation_steps"] == 4  # 1024 / (256 · 1)
    par = config.parallelism_config
    assert par["parallelism_config_tp_size"] == 2
    assert par["parallelism_config_dp_shard_size"] == 256


def test_transformers_reads_the_training_arguments(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("accelerate")  # TrainingArguments needs it with torch
    transformers = pytest.importorskip("transformers")
    import dataclasses
    import json

    names = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    bf16 = sc.with_fields(default_scenario(), {"parallelism.zero_stage": 3})
    exported_file(bf16, "accelerate", tmp_path)
    data = json.loads((tmp_path / "plan.training_args.json").read_text())
    data.pop("llm_planner")
    assert set(data) <= names
    assert data["bf16"] is True
    # TrainingArguments refuses bf16 without a GPU: parse an fp32 plan on this CPU
    fp32 = sc.with_fields(
        default_scenario(),
        {"parallelism.zero_stage": 3, "training.micro_batch": 2, "training.precision": "fp32"},
    )
    exported_file(fp32, "accelerate", tmp_path)
    parser = transformers.HfArgumentParser(transformers.TrainingArguments)
    (args,) = parser.parse_json_file(
        str(tmp_path / "plan.training_args.json"), allow_extra_keys=True
    )
    assert args.per_device_train_batch_size == 2
    assert args.gradient_accumulation_steps == 1  # 1024 / (512 · 2)
    assert args.gradient_checkpointing is True  # selective: HF checkpoints whole layers
    assert str(args.optim) in {"adamw_torch", "OptimizerNames.ADAMW_TORCH"}


def test_nanotron_reads_the_config_yaml(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    try:
        from nanotron.config import get_config_from_file
    except ImportError as error:
        pytest.skip(f"nanotron's config does not import: {error}")
    path = exported_file(
        planned(**{"parallelism.schedule": "1f1b", "parallelism.interleave_chunks": 1}),
        "nanotron",
        tmp_path,
    )
    config = get_config_from_file(str(path))
    p = config.parallelism
    assert (p.dp, p.tp, p.pp) == (64, 2, 4)
    assert type(p.pp_engine).__name__ == "OneForwardOneBackwardPipelineEngine"
    assert p.tp_mode.name == "REDUCE_SCATTER"
    assert p.recompute_granularity.name == "SELECTIVE"
    assert config.tokens.micro_batch_size == 2
    assert config.tokens.batch_accumulation_per_replica == 8
    assert config.global_batch_size == 1024
    assert config.tokens.sequence_length == 4096
    assert config.optimizer.zero_stage == 1
    assert str(config.model.dtype) == "torch.bfloat16"
    m = config.model.model_config
    assert (m.num_hidden_layers, m.hidden_size, m.num_key_value_heads) == (32, 4096, 8)


MEGATRON_CLASSES = (
    "megatron.core.model_parallel_config.ModelParallelConfig",
    "megatron.core.transformer.transformer_config.TransformerConfig",
    "megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig",
    "megatron.core.optimizer.optimizer_config.OptimizerConfig",
)
MEGATRON_TRAINING_ARGS = {
    # megatron/training/arguments.py arguments that no Megatron-Core config class holds
    "micro_batch_size",
    "global_batch_size",
    "seq_length",
    "max_position_embeddings",
    "use_megatron_fsdp",
    "ckpt_format",
    "no_gradient_accumulation_fusion",
    "swiglu",
    "group_query_attention",
    "position_embedding_type",
    "untie_embeddings_and_output_weights",
    "disable_bias_linear",
    "num_layers_per_virtual_pipeline_stage",
    "optimizer",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "expert_model_parallel_size",
    "context_parallel_size",
    "normalization",
}


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_megatron_core_builds_its_configs_from_the_arguments(stage: int, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("megatron.core")
    import dataclasses

    from megatron.core.distributed.distributed_data_parallel_config import (
        DistributedDataParallelConfig,
    )
    from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator
    from megatron.core.transformer.transformer_config import TransformerConfig

    scenario = planned(**{"parallelism.zero_stage": stage, "training.recompute": "full"})
    text = sc.export_config(scenario, "megatron").text
    flags = [t[2:].replace("-", "_") for t in sc.megatron.tokens_of(text) if t.startswith("--")]
    known = set(MEGATRON_TRAINING_ARGS)
    for dotted in MEGATRON_CLASSES:
        module, name = dotted.rsplit(".", 1)
        known |= {
            f.name for f in dataclasses.fields(getattr(importlib.import_module(module), name))
        }
    assert set(flags) <= known, set(flags) - known
    args = sc.megatron._parser().parse_known_args(sc.megatron.tokens_of(text))[0]
    config = TransformerConfig(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_query_groups=args.num_query_groups,
        ffn_hidden_size=args.ffn_hidden_size,
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        virtual_pipeline_model_parallel_size=32 // (4 * args.num_layers_per_virtual_pipeline_stage),
        sequence_parallel=args.sequence_parallel,
        context_parallel_size=args.context_parallel_size,
        recompute_granularity=args.recompute_granularity,
        recompute_method=args.recompute_method,
        recompute_num_layers=args.recompute_num_layers,
        bf16=args.bf16,
        pipeline_dtype=torch.bfloat16 if args.bf16 else torch.float32,  # as Megatron-LM sets it
    )
    assert (config.tensor_model_parallel_size, config.pipeline_model_parallel_size) == (2, 4)
    assert config.virtual_pipeline_model_parallel_size == 2
    assert config.recompute_granularity == "full"
    ddp = DistributedDataParallelConfig(
        use_distributed_optimizer=args.use_distributed_optimizer,
        use_megatron_fsdp=args.use_megatron_fsdp,
        data_parallel_sharding_strategy=args.data_parallel_sharding_strategy or "no_shard",
    )
    assert ddp.use_distributed_optimizer == (stage >= 1)
    assert (
        ddp.data_parallel_sharding_strategy
        == {0: "no_shard", 1: "no_shard", 2: "optim_grads", 3: "optim_grads_params"}[stage]
    )
    calc = ConstantNumMicroBatchesCalculator(
        global_batch_size=args.global_batch_size,
        micro_batch_size=args.micro_batch_size,
        data_parallel_size=64,
        decrease_batch_size_if_needed=False,
        rank=0,
    )
    assert calc.get() == 8  # 1024 / (2 · 64)
