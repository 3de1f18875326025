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

from llm_planner import __version__
from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    known_model,
    provenance_lines,
)
from llm_planner.core.files.stack_configs.textfmt import TextFormatError, dump_yaml, load_yaml

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
    """FSDP unless the plan shards optimizer states only (ZeRO-1, which FSDP cannot)."""
    return "deepspeed" if plan.zero_stage == 1 and plan.fsdp_strategy is None else "fsdp"


def export(plan: LaunchPlan, backend: str | None = None) -> ExportedConfig:
    """The plan as an accelerate config YAML plus its TrainingArguments JSON."""
    backend = backend or default_backend(plan)
    if backend not in BACKENDS:
        raise ValueError(f"accelerate backend must be one of {', '.join(BACKENDS)}")
    notes = common_unexpressed(plan)
    mixed = {
        "mixed_bf16": "bf16",
        "mixed_bf16_fp32_grads": "bf16",
        "bf16": "bf16",
        "mixed_fp16": "fp16",
    }.get(plan.precision, "no")
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "MULTI_GPU",
        "mixed_precision": mixed,
        "num_machines": plan.nodes,
        "num_processes": plan.num_gpus,
        "machine_rank": 0,
        "main_training_function": "main",
    }
    recompute = export_recompute(plan)
    replicate, shard = 1, plan.dp
    if backend == "fsdp" and plan.zero_stage >= 1:
        config["distributed_type"] = "FSDP"
        if plan.zero_stage == 1:
            notes.append("ZeRO-1: FSDP also shards gradients; exported as ZeRO-2 (no reshard)")
        if plan.fsdp_strategy == "HYBRID_SHARD":
            replicate, shard = plan.dp // plan.shard, plan.shard
        config["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_reshard_after_forward": plan.zero_stage == 3,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_offload_params": False,
            "fsdp_activation_checkpointing": recompute == "full",
        }
    elif backend == "deepspeed":
        config["distributed_type"] = "DEEPSPEED"
        config["deepspeed_config"] = {
            "zero_stage": plan.zero_stage,
            "gradient_accumulation_steps": plan.accumulation,
            "offload_optimizer_device": "none",
            "offload_param_device": "none",
            "zero3_init_flag": plan.zero_stage == 3,
        }
        if plan.fsdp_strategy == "HYBRID_SHARD":
            notes.append("HYBRID_SHARD exported as ZeRO-3 over all of dp")
    if plan.tp > 1 or replicate > 1:
        config["parallelism_config"] = {
            "parallelism_config_dp_replicate_size": replicate,
            "parallelism_config_dp_shard_size": shard,
            "parallelism_config_tp_size": plan.tp,
            "parallelism_config_cp_size": 1,
        }
    if recompute == "selective":
        notes.append(
            "selective recomputation: Hugging Face checkpoints whole layers "
            "(gradient_checkpointing, fsdp_activation_checkpointing) or none"
        )
    if plan.pp > 1:
        notes.append(f"pp={plan.pp}: accelerate's FSDP and DeepSpeed plugins do not pipeline")
    if plan.sequence_parallel:
        notes.append("sequence parallelism: not an accelerate setting")
    if plan.ep > 1:
        notes.append(f"ep={plan.ep}: expert parallelism is not an accelerate setting")
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
    else:
        notes.append(f"optimizer {plan.optimizer!r} has no TrainingArguments name")
    if plan.lora_rank:
        notes.append(
            f"LoRA rank {plan.lora_rank}{' on a 4-bit base (QLoRA)' if plan.qlora else ''}: "
            "peft's LoraConfig(r=...) in the training script"
        )
    comments = [
        *provenance_lines(plan, f"Hugging Face accelerate ({backend})"),
        f"Sequence length {plan.seq_len} (the tokenizer's max_length / the data collator)",
        f"TrainingArguments: the companion file *{TRAINING_ARGS_SUFFIX}",
    ]
    if notes:
        comments.append("Not expressible in accelerate's config (the plan assumes):")
        comments += [f"  - {n}" for n in notes]
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
    return ExportedConfig(
        stack=STACK,
        text=dump_yaml(config, comments),
        suffix=".yaml",
        unexpressed=tuple(notes),
        companions={TRAINING_ARGS_SUFFIX: json.dumps(training_args, indent=2) + "\n"},
    )


def _int(data: dict[str, Any], key: str, source: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.isdigit():
            return int(value)
        raise StackConfigError(f"{source}: {where}{key} must be an integer, not {value!r}")
    return value


def parse(text: str, source: str, training_args: str | None = None) -> ImportedConfig:
    """An accelerate config YAML (and, if given, its TrainingArguments JSON) as scenario fields."""
    try:
        data = load_yaml(text)
    except TextFormatError as error:
        raise StackConfigError(f"{source}: {error}") from None
    read: list[str] = []
    fields: dict[str, Any] = {}
    kind = str(data.get("distributed_type", "NO")).upper()
    read.append("distributed_type")
    processes = _int(data, "num_processes", source, "")
    machines = _int(data, "num_machines", source, "")
    if processes and processes > 0:
        fields["num_gpus"] = processes
        read.append("num_processes")
        if machines and machines > 0 and processes % machines == 0:
            fields["parallelism.gpus_per_node"] = processes // machines
            read.append("num_machines")
    mixed = str(data.get("mixed_precision", "no")).lower()
    read.append("mixed_precision")
    fields["training.precision"] = {"bf16": "mixed_bf16", "fp16": "mixed_fp16"}.get(mixed, "fp32")
    par = data.get("parallelism_config") or {}
    tp = _int(par, "parallelism_config_tp_size", source, "parallelism_config.") or 1
    replicate = _int(par, "parallelism_config_dp_replicate_size", source, "parallelism_config.")
    cp = _int(par, "parallelism_config_cp_size", source, "parallelism_config.") or 1
    if cp != 1:
        raise StackConfigError(
            f"{source}: parallelism_config_cp_size {cp}: no context parallel yet"
        )
    read += [f"parallelism_config.{k}" for k in par]
    fields["parallelism.tp"] = tp
    fields["parallelism.pp"] = 1
    fields["parallelism.fsdp_strategy"] = None
    recompute: str | None = None
    if kind == "FSDP":
        fsdp = data.get("fsdp_config") or {}
        version = _int(fsdp, "fsdp_version", source, "fsdp_config.") or 1
        reshard = fsdp.get("fsdp_reshard_after_forward", fsdp.get("fsdp_sharding_strategy"))
        if isinstance(reshard, int) and not isinstance(reshard, bool):
            reshard = _STRATEGIES.get(reshard, str(reshard))
        if version >= 2 or isinstance(reshard, bool):
            strategy = "FULL_SHARD" if reshard in (True, None, "true") else "SHARD_GRAD_OP"
        else:
            strategy = str(reshard or "FULL_SHARD").upper()
        if strategy not in {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"}:
            raise StackConfigError(f"{source}: fsdp_config sharding {strategy!r} is not known")
        if replicate and replicate > 1:
            strategy = "HYBRID_SHARD"
        fields["parallelism.zero_stage"] = {
            "FULL_SHARD": 3,
            "HYBRID_SHARD": 3,
            "SHARD_GRAD_OP": 2,
            "NO_SHARD": 0,
        }[strategy]
        if strategy == "HYBRID_SHARD":
            fields["parallelism.fsdp_strategy"] = "HYBRID_SHARD"
            shard = _int(par, "parallelism_config_dp_shard_size", source, "parallelism_config.")
            if shard:
                fields["parallelism.gpus_per_node"] = shard * tp
        for key in (
            "fsdp_version",
            "fsdp_reshard_after_forward",
            "fsdp_sharding_strategy",
            "fsdp_activation_checkpointing",
        ):
            if key in fsdp:
                read.append(f"fsdp_config.{key}")
        if fsdp.get("fsdp_activation_checkpointing") is True:
            recompute = "full"
    elif kind == "DEEPSPEED":
        ds = data.get("deepspeed_config") or {}
        stage = _int(ds, "zero_stage", source, "deepspeed_config.")
        if stage is not None:
            if stage not in (0, 1, 2, 3):
                raise StackConfigError(f"{source}: deepspeed_config.zero_stage must be 0-3")
            fields["parallelism.zero_stage"] = stage
            read.append("deepspeed_config.zero_stage")
        gas = _int(ds, "gradient_accumulation_steps", source, "deepspeed_config.")
        if gas:
            read.append("deepspeed_config.gradient_accumulation_steps")
    else:
        fields["parallelism.zero_stage"] = 0
    model = None
    if training_args is not None:
        model, recompute = _training_args(training_args, source, fields, read, recompute)
    if recompute is not None:
        fields["training.recompute"] = recompute
    fields.setdefault("parallelism.schedule", "1f1b")
    fields.setdefault("parallelism.interleave_chunks", 1)
    fields.setdefault("parallelism.sequence_parallel", False)
    fields.setdefault("parallelism.expert_parallel", 1)
    leaves = {
        f"{k}.{kk}" if isinstance(v, dict) else k
        for k, v in data.items()
        for kk in (v if isinstance(v, dict) else [None])
    }
    ignored = sorted(leaves - set(read))
    return ImportedConfig(
        stack=STACK, fields=fields, model=model, read=tuple(read), ignored=tuple(ignored)
    )


def _training_args(
    text: str, source: str, fields: dict[str, Any], read: list[str], recompute: str | None
) -> tuple[str | None, str | None]:
    try:
        args = json.loads(text)
    except json.JSONDecodeError as error:
        raise StackConfigError(
            f"{source}: TrainingArguments JSON unreadable ({error.msg})"
        ) from None
    if not isinstance(args, dict):
        raise StackConfigError(f"{source}: TrainingArguments JSON must be an object")
    micro = _int(args, "per_device_train_batch_size", source, "TrainingArguments.")
    gas = _int(args, "gradient_accumulation_steps", source, "TrainingArguments.") or 1
    if micro:
        fields["training.micro_batch"] = micro
        gpus = fields.get("num_gpus")
        tp = fields.get("parallelism.tp", 1)
        if gpus:
            fields["parallelism.global_batch"] = micro * gas * (gpus // tp)
    if args.get("bf16") is True:
        fields["training.precision"] = "mixed_bf16"
    elif args.get("fp16") is True:
        fields["training.precision"] = "mixed_fp16"
    if args.get("gradient_checkpointing") is True and recompute is None:
        recompute = "full"
    elif args.get("gradient_checkpointing") is False:
        recompute = recompute or "none"
    optim = args.get("optim")
    if isinstance(optim, str) and optim in _OPTIM_IN:
        fields["training.optimizer"] = _OPTIM_IN[optim]
    read += [
        f"TrainingArguments.{k}"
        for k in args
        if k
        in {
            "per_device_train_batch_size",
            "gradient_accumulation_steps",
            "bf16",
            "fp16",
            "gradient_checkpointing",
            "optim",
        }
    ]
    block = args.get("llm_planner")
    model = None
    if isinstance(block, dict):
        for key, path in (
            ("seq_len", "training.seq_len"),
            ("global_batch", "parallelism.global_batch"),
            ("gpus_per_node", "parallelism.gpus_per_node"),
        ):
            if isinstance(block.get(key), int) and not isinstance(block.get(key), bool):
                fields[path] = block[key]
                read.append(f"TrainingArguments.llm_planner.{key}")
        if block.get("recompute") in {"none", "selective", "full"}:
            recompute = block["recompute"]
        name = block.get("model")
        model = known_model(name) or (name if isinstance(name, str) else None)
    return model, recompute


def looks_like(text: str) -> bool:
    return "distributed_type:" in text or "compute_environment:" in text
