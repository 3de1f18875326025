"""Hugging Face accelerate: the ``accelerate launch --config_file`` YAML (FSDP or DeepSpeed)
with the matching ``TrainingArguments`` as a JSON file (``HfArgumentParser.parse_json_file``).

YAML keys as accelerate v1.15.0 writes them (accelerate/commands/config/cluster.py,
config_args.py ``ClusterConfig``): ``distributed_type`` FSDP / DEEPSPEED / MULTI_GPU,
``num_processes`` (all GPUs), ``num_machines``, ``mixed_precision`` no/fp16/bf16,
``fsdp_config`` (``fsdp_version`` 2 with ``fsdp_reshard_after_forward`` true = ZeRO-3,
false = ZeRO-2; version 1 names a ShardingStrategy there), ``deepspeed_config``
(``zero_stage``, ``gradient_accumulation_steps``), ``parallelism_config``
(``parallelism_config_dp_replicate_size``/``_dp_shard_size``/``_tp_size``/``_cp_size``).
TrainingArguments names from transformers (src/transformers/training_args.py:
per_device_train_batch_size, gradient_accumulation_steps, bf16, fp16, gradient_checkpointing,
optim with OptimizerNames "adamw_torch", "adafactor", "adamw_bnb_8bit", "sgd", "lion_32bit").
"""

from __future__ import annotations

import json
from typing import Any

from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    Reader,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    known_model,
    leaf_paths,
    provenance_lines,
)
from llm_planner.core.files.stack_configs.textfmt import TextFormatError, dump_yaml, load_yaml
from llm_planner.core.primitives.version import __version__
from llm_planner.core.quantities.activation_recompute import is_partial

STACK = "accelerate"
TRAINING_ARGS_SUFFIX = ".training_args.json"
BACKENDS = ("fsdp", "deepspeed")

_OPTIM = {
    "adamw": "adamw_torch",
    "adam": "adamw_torch",
    "adafactor": "adafactor",
    "adam8bit": "adamw_bnb_8bit",
    "adamw8bit": "adamw_bnb_8bit",
    "sgd": "sgd",
    "sgd_momentum": "sgd",
    "lion": "lion_32bit",
}
_OPTIM_IN = {
    "adamw_torch": "adamw",
    "adamw_torch_fused": "adamw",
    "adafactor": "adafactor",
    "adamw_bnb_8bit": "adamw8bit",
    "sgd": "sgd",
    "lion_32bit": "lion",
}
_STRATEGIES = {1: "FULL_SHARD", 2: "SHARD_GRAD_OP", 3: "NO_SHARD", 4: "HYBRID_SHARD"}
"""accelerate's numeric sharding strategies (accelerate/utils/constants.py FSDP_SHARDING_STRATEGY,
1-based as torch's ShardingStrategy)."""


def default_backend(plan: LaunchPlan) -> str:
    """FSDP unless the plan shards optimizer states only (ZeRO-1, which FSDP cannot) or
    offloads as DeepSpeed does (ZeRO-Offload's optimizer on the host, which FSDP's
    all-or-nothing ``CPUOffload`` is not)."""
    offloaded = plan.offload_optimizer != "none" or plan.offload_params != "none"
    zero1 = plan.zero_stage == 1 and plan.fsdp_strategy is None
    return "deepspeed" if zero1 or offloaded else "fsdp"


def _backend_config(
    plan: LaunchPlan, backend: str, recompute: str, notes: list[str]
) -> tuple[dict[str, Any], int, int]:
    """(the YAML's backend keys, dp replicate size, dp shard size)."""
    if backend == "deepspeed":
        if plan.fsdp_strategy == "HYBRID_SHARD":
            notes.append("HYBRID_SHARD exported as ZeRO-3 over all of dp")
        return (
            {
                "distributed_type": "DEEPSPEED",
                "deepspeed_config": {
                    "zero_stage": plan.zero_stage,
                    "gradient_accumulation_steps": plan.accumulation,
                    "offload_optimizer_device": plan.offload_optimizer,
                    "offload_param_device": plan.offload_params,
                    "zero3_init_flag": plan.zero_stage == 3,
                },
            },
            1,
            plan.dp,
        )
    if plan.zero_stage == 0:
        return {"distributed_type": "MULTI_GPU"}, 1, plan.dp
    if plan.zero_stage == 1:
        notes.append("ZeRO-1: FSDP also shards gradients; exported as ZeRO-2 (no reshard)")
    hybrid = plan.fsdp_strategy == "HYBRID_SHARD"
    fsdp = {
        "fsdp_version": 2,
        "fsdp_reshard_after_forward": plan.zero_stage == 3,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_offload_params": False,
        "fsdp_activation_checkpointing": recompute == "full",
    }
    replicate, shard = (plan.dp // plan.shard, plan.shard) if hybrid else (1, plan.dp)
    return {"distributed_type": "FSDP", "fsdp_config": fsdp}, replicate, shard


def _layout_notes(plan: LaunchPlan, recompute: str) -> list[str]:
    notes: list[str] = []
    if recompute == "selective":
        notes.append(
            "selective recomputation: Hugging Face's only option is whole-layer "
            "checkpointing (gradient_checkpointing; transformers GradientCheckpointingLayer)"
            + (
                ", which is how the plan prices it on this stack"
                if plan.stack == "hf"
                else f"; the plan prices {plan.stack}'s selective, this file checkpoints whole "
                "layers"
            )
        )
    if recompute == "full" and is_partial(plan.recompute_method, plan.recompute_layers):
        notes.append(
            f"full recompute {plan.recompute_method} N = {plan.recompute_layers}: Hugging "
            "Face checkpoints every layer"
        )
    if plan.pp > 1:
        notes.append(f"pp={plan.pp}: accelerate's FSDP and DeepSpeed plugins do not pipeline")
    if plan.sequence_parallel:
        notes.append("sequence parallelism: not an accelerate setting")
    if plan.ep > 1:
        notes.append(f"ep={plan.ep}: expert parallelism is not an accelerate setting")
    if plan.lora_rank:
        notes.append(
            f"LoRA rank {plan.lora_rank}{' on a 4-bit base (QLoRA)' if plan.qlora else ''}: "
            "peft's LoraConfig(r=...) in the training script"
        )
    if plan.optimizer not in _OPTIM:
        notes.append(f"optimizer {plan.optimizer!r} has no TrainingArguments name")
    return notes


def _training_args_json(plan: LaunchPlan, mixed: str, recompute: str, notes: list[str]) -> str:
    training_args: dict[str, Any] = {
        "output_dir": "output",
        "per_device_train_batch_size": plan.micro_batch,
        "gradient_accumulation_steps": plan.accumulation,
        "bf16": mixed == "bf16",
        "fp16": mixed == "fp16",
        "gradient_checkpointing": recompute != "none",
    }
    if plan.optimizer in _OPTIM:
        training_args["optim"] = _OPTIM[plan.optimizer]
    training_args["llm_planner"] = {
        "app_version": __version__,
        "scenario": plan.scenario_name,
        "model": plan.model_id,
        "seq_len": plan.seq_len,
        "global_batch": plan.global_batch,
        "gpus_per_node": plan.gpus_per_node,
        "recompute": recompute,
        "unexpressed": notes,
    }
    return json.dumps(training_args, indent=2) + "\n"


_MIXED = {
    "mixed_bf16": "bf16",
    "mixed_bf16_fp32_grads": "bf16",
    "pure_bf16": "bf16",
    "mixed_fp16": "fp16",
}


def export(plan: LaunchPlan, backend: str | None = None) -> ExportedConfig:
    """The plan as an accelerate config YAML plus its TrainingArguments JSON."""
    backend = backend or default_backend(plan)
    if backend not in BACKENDS:
        raise ValueError(f"accelerate backend must be one of {', '.join(BACKENDS)}")
    notes = common_unexpressed(plan)
    mixed = _MIXED.get(plan.precision, "no")
    recompute = export_recompute(plan)
    backend_keys, replicate, shard = _backend_config(plan, backend, recompute, notes)
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "mixed_precision": mixed,
        "num_machines": plan.nodes,
        "num_processes": plan.num_gpus,
        "machine_rank": 0,
        "main_training_function": "main",
        **backend_keys,
    }
    if plan.tp > 1 or replicate > 1:
        config["parallelism_config"] = {
            "parallelism_config_dp_replicate_size": replicate,
            "parallelism_config_dp_shard_size": shard,
            "parallelism_config_tp_size": plan.tp,
            "parallelism_config_cp_size": 1,
        }
    notes += _layout_notes(plan, recompute)
    comments = [
        *provenance_lines(plan, f"Hugging Face accelerate ({backend})"),
        f"Sequence length {plan.seq_len} (the tokenizer's max_length / the data collator)",
        f"TrainingArguments: the companion file *{TRAINING_ARGS_SUFFIX}",
    ]
    if notes:
        comments.append("Not expressible in accelerate's config (the plan assumes):")
        comments += [f"  - {n}" for n in notes]
    return ExportedConfig(
        stack=STACK,
        text=dump_yaml(config, comments),
        suffix=".yaml",
        unexpressed=tuple(notes),
        companions={TRAINING_ARGS_SUFFIX: _training_args_json(plan, mixed, recompute, notes)},
    )


def _int(r: Reader, path: str) -> int | None:
    """An integer key (accelerate's own config writer may quote numbers)."""
    node = r.data
    for part in path.split(".")[:-1]:
        node = node.get(part) or {}
    value = node.get(path.rsplit(".", maxsplit=1)[-1]) if isinstance(node, dict) else None
    if isinstance(value, str) and value.isdigit():
        r.read.append(path)
        return int(value)
    result: int | None = r.get(path, int)
    return result


def _fsdp_fields(r: Reader, replicate: int, shard: int | None, tp: int) -> dict[str, Any]:
    version = _int(r, "fsdp_config.fsdp_version") or 1
    reshard = r.data.get("fsdp_config", {}).get("fsdp_reshard_after_forward")
    if reshard is None:
        reshard = r.data.get("fsdp_config", {}).get("fsdp_sharding_strategy")
    for key in ("fsdp_reshard_after_forward", "fsdp_sharding_strategy"):
        if key in r.data.get("fsdp_config", {}):
            r.read.append(f"fsdp_config.{key}")
    if isinstance(reshard, int) and not isinstance(reshard, bool):
        reshard = _STRATEGIES.get(reshard, str(reshard))
    if version >= 2 or isinstance(reshard, bool):
        strategy = "FULL_SHARD" if reshard in (True, None, "true") else "SHARD_GRAD_OP"
    else:
        strategy = str(reshard or "FULL_SHARD").upper()
    if strategy not in _ZERO_OF:
        raise r.fail(f"fsdp_config sharding {strategy!r} is not known")
    if replicate > 1:
        strategy = "HYBRID_SHARD"
    fields: dict[str, Any] = {"parallelism.zero_stage": _ZERO_OF[strategy]}
    if strategy == "HYBRID_SHARD":
        fields["parallelism.fsdp_strategy"] = "HYBRID_SHARD"
        if shard:
            fields["parallelism.gpus_per_node"] = shard * tp
    if r.get("fsdp_config.fsdp_activation_checkpointing", bool, False):
        fields["training.recompute"] = "full"
    return fields


_ZERO_OF = {"FULL_SHARD": 3, "HYBRID_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}


def _deepspeed_fields(r: Reader) -> dict[str, Any]:
    stage = _int(r, "deepspeed_config.zero_stage")
    _int(r, "deepspeed_config.gradient_accumulation_steps")
    if stage is None:
        return {}
    if stage not in (0, 1, 2, 3):
        raise r.fail("deepspeed_config.zero_stage must be 0-3")
    fields: dict[str, Any] = {"parallelism.zero_stage": stage}
    for key, path in (
        ("offload_optimizer_device", "training.offload_optimizer"),
        ("offload_param_device", "training.offload_params"),
    ):
        device = r.get(f"deepspeed_config.{key}", str)
        if device is None:
            continue
        if device.lower() not in ("none", "cpu", "nvme"):
            raise r.fail(f"deepspeed_config.{key} must be none, cpu or nvme")
        fields[path] = device.lower()
    return fields


def _cluster_fields(r: Reader) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    processes = _int(r, "num_processes")
    machines = _int(r, "num_machines")
    if processes and processes > 0:
        fields["num_gpus"] = processes
        if machines and machines > 0 and processes % machines == 0:
            fields["parallelism.gpus_per_node"] = processes // machines
    mixed = str(r.get("mixed_precision", str, "no")).lower()
    fields["training.precision"] = {"bf16": "mixed_bf16", "fp16": "mixed_fp16"}.get(mixed, "fp32")
    return fields


def parse(text: str, source: str, training_args: str | None = None) -> ImportedConfig:
    """An accelerate config YAML (and, if given, its TrainingArguments JSON) as scenario fields."""
    try:
        data = load_yaml(text)
    except TextFormatError as error:
        raise StackConfigError(f"{source}: {error}") from None
    r = Reader(data, source)
    kind = str(r.get("distributed_type", str, "NO")).upper()
    fields = _cluster_fields(r)
    tp = _int(r, "parallelism_config.parallelism_config_tp_size") or 1
    replicate = _int(r, "parallelism_config.parallelism_config_dp_replicate_size") or 1
    shard = _int(r, "parallelism_config.parallelism_config_dp_shard_size")
    cp = _int(r, "parallelism_config.parallelism_config_cp_size") or 1
    if cp != 1:
        raise r.fail(f"parallelism_config_cp_size {cp}: no context parallel yet")
    fields |= {
        "parallelism.tp": tp,
        "parallelism.pp": 1,
        "parallelism.fsdp_strategy": None,
        "parallelism.schedule": "1f1b",
        "parallelism.interleave_chunks": 1,
        "parallelism.sequence_parallel": False,
        "parallelism.expert_parallel": 1,
    }
    if kind == "FSDP":
        fields |= _fsdp_fields(r, replicate, shard, tp)
    elif kind == "DEEPSPEED":
        fields |= _deepspeed_fields(r)
    else:
        fields["parallelism.zero_stage"] = 0
    model = None
    if training_args is not None:
        model = _training_args(training_args, source, fields, r.read)
    ignored = sorted(leaf_paths(data) - set(r.read))
    return ImportedConfig(
        stack=STACK,
        fields=fields,
        model=model,
        read=tuple(r.read),
        ignored=tuple(ignored),
        auto=tuple(r.auto),
    )


_TRAINING_ARGS_READ = {
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "bf16",
    "fp16",
    "gradient_checkpointing",
    "optim",
}


def _training_args(text: str, source: str, fields: dict[str, Any], read: list[str]) -> str | None:
    """Read the TrainingArguments JSON into ``fields``; the model it names, if any."""
    try:
        args = json.loads(text)
    except json.JSONDecodeError as error:
        raise StackConfigError(
            f"{source}: TrainingArguments JSON unreadable ({error.msg})"
        ) from None
    if not isinstance(args, dict):
        raise StackConfigError(f"{source}: TrainingArguments JSON must be an object")
    r = Reader(args, f"{source} (TrainingArguments)")
    micro = r.get("per_device_train_batch_size", int)
    gas = r.get("gradient_accumulation_steps", int, 1)
    if micro:
        fields["training.micro_batch"] = micro
    if micro and fields.get("num_gpus"):
        fields["parallelism.global_batch"] = (
            micro * gas * (fields["num_gpus"] // fields["parallelism.tp"])
        )
    if r.get("bf16", bool, False):
        fields["training.precision"] = "mixed_bf16"
    elif r.get("fp16", bool, False):
        fields["training.precision"] = "mixed_fp16"
    checkpointing = r.get("gradient_checkpointing", bool)
    if checkpointing is not None and "training.recompute" not in fields:
        fields["training.recompute"] = "full" if checkpointing else "none"
    optim = r.get("optim", str)
    if optim in _OPTIM_IN:
        fields["training.optimizer"] = _OPTIM_IN[optim]
    for key, path in (
        ("seq_len", "training.seq_len"),
        ("global_batch", "parallelism.global_batch"),
        ("gpus_per_node", "parallelism.gpus_per_node"),
    ):
        value = r.get(f"llm_planner.{key}", int)
        if value is not None:
            fields[path] = value
    recompute = r.get("llm_planner.recompute", str)
    if recompute in {"none", "selective", "full"}:
        fields["training.recompute"] = recompute
    read += [f"TrainingArguments.{k}" for k in r.read]
    name = r.get("llm_planner.model", str)
    return known_model(name) or name


def looks_like(text: str) -> bool:
    return "distributed_type:" in text or "compute_environment:" in text
