"""DeepSpeed: the config JSON given to ``deepspeed.initialize(config=...)``.

Keys as DeepSpeed v0.19.8 reads them (deepspeed/runtime/config.py and
deepspeed/runtime/zero/config.py): ``train_batch_size`` = ``train_micro_batch_size_per_gpu``
× ``gradient_accumulation_steps`` × data-parallel size (its ``_batch_assertion``),
``zero_optimization.stage`` and its buckets, ``bf16``/``fp16``, ``data_types``,
``tensor_parallel.autotp_size`` (AutoTP training), ``optimizer.type``. Pipeline stages,
sequence parallelism and activation checkpointing are chosen in the model code (a
``PipelineModule``, ``deepspeed.checkpointing``), not in this file: the plan's values for
them go into an ``llm_planner`` block DeepSpeed ignores, and are listed as unexpressed.
"""

from __future__ import annotations

import json
from typing import Any

from llm_planner.core.files.stack_configs.defaults import (
    DEEPSPEED_OPTIMIZERS,
    DEEPSPEED_ZERO,
    profile_value,
)
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
from llm_planner.core.primitives.version import __version__

STACK = "deepspeed"
BLOCK = "llm_planner"
"""Top-level key holding what the plan assumes and DeepSpeed's JSON cannot say."""


def _precision(plan: LaunchPlan, config: dict[str, Any], notes: list[str]) -> None:
    if plan.precision in {"mixed_bf16", "mixed_bf16_fp32_grads", "pure_bf16"}:
        config["bf16"] = {"enabled": True}
    elif plan.precision == "mixed_fp16":
        config["fp16"] = {"enabled": True}
    if plan.precision == "mixed_bf16_fp32_grads":
        config["data_types"] = {"grad_accum_dtype": "fp32"}
    if plan.precision == "pure_bf16":
        notes.append(
            "pure bf16 (no fp32 master weights): DeepSpeed's bf16 mode keeps fp32 master "
            "weights in the optimizer"
        )


def _zero(plan: LaunchPlan, notes: list[str]) -> dict[str, Any]:
    zero: dict[str, Any] = {"stage": plan.zero_stage}
    keys: list[str] = []
    if plan.zero_stage >= 1:
        keys += ["reduce_bucket_size", "allgather_bucket_size"]
        zero["overlap_comm"] = True
    if plan.zero_stage == 3:
        keys += [
            "stage3_prefetch_bucket_size",
            "stage3_param_persistence_threshold",
            "stage3_max_live_parameters",
        ]
    zero.update({key: profile_value(STACK, key, DEEPSPEED_ZERO[key]) for key in keys})
    _offload_out(plan, zero, notes)
    if plan.fsdp_strategy == "HYBRID_SHARD":
        notes.append(
            f"HYBRID_SHARD (shard inside groups of {plan.shard}, replicate across) is "
            "exported as ZeRO-3 over all of dp; DeepSpeed's hpZ (zero_hpz_partition_size) "
            "shards only the secondary weight copy"
        )
    return zero


def _offload_out(plan: LaunchPlan, zero: dict[str, Any], notes: list[str]) -> None:
    """``offload_optimizer`` / ``offload_param`` with the plan's devices (DeepSpeed@edaa7221
    deepspeed/runtime/zero/offload_config.py: ``device`` cpu or nvme, ``pin_memory``; an
    nvme device needs ``nvme_path``, which only the user knows)."""
    for key, device, needs in (
        ("offload_optimizer", plan.offload_optimizer, 1),
        ("offload_param", plan.offload_params, 3),
    ):
        if device == "none":
            continue
        if plan.zero_stage < needs:
            notes.append(f"{key} {device!r} needs ZeRO stage ≥ {needs}: not written")
            continue
        block: dict[str, Any] = {"device": device, "pin_memory": True}
        if device == "nvme":
            block["nvme_path"] = "/local_nvme"
            notes.append(f"{key}.nvme_path: set it to the node's NVMe mount")
        zero[key] = block


def _model_code_notes(plan: LaunchPlan, recompute: str) -> list[str]:
    """What DeepSpeed takes from the model code, not from its JSON."""
    notes: list[str] = []
    if plan.pp > 1:
        notes.append(
            f"pp={plan.pp} ({plan.schedule}): DeepSpeed pipelines a PipelineModule built "
            f"in code with num_stages={plan.pp}"
        )
    if recompute != "none":
        notes.append(
            f"recompute {recompute!r}: DeepSpeed checkpoints what the model code wraps in "
            "deepspeed.checkpointing.checkpoint; the JSON only tunes it"
        )
    if plan.sequence_parallel:
        notes.append("Megatron-style sequence parallelism is not a DeepSpeed config setting")
    if plan.ep > 1:
        notes.append(f"ep={plan.ep}: DeepSpeed-MoE takes ep_size in the model's MoE layers")
    if plan.lora_rank:
        notes.append(f"LoRA rank {plan.lora_rank}: adapters come from the model code (PEFT)")
    return notes


def export(plan: LaunchPlan) -> ExportedConfig:
    """The plan as a DeepSpeed config JSON."""
    notes = common_unexpressed(plan)
    config: dict[str, Any] = {
        "train_batch_size": plan.global_batch,
        "train_micro_batch_size_per_gpu": plan.micro_batch,
        "gradient_accumulation_steps": plan.accumulation,
    }
    _precision(plan, config, notes)
    config["zero_optimization"] = _zero(plan, notes)
    if plan.tp > 1:
        config["tensor_parallel"] = {"autotp_size": plan.tp}
    optimizer = DEEPSPEED_OPTIMIZERS.get(plan.optimizer)
    if optimizer:
        config["optimizer"] = {"type": optimizer, "params": {}}
    else:
        notes.append(f"optimizer {plan.optimizer!r} is not one DeepSpeed builds: pass it in code")
    recompute = export_recompute(plan)
    if recompute == "full" and plan.recompute_checkpoint != "gpu":
        config["activation_checkpointing"] = {
            "partition_activations": plan.recompute_checkpoint == "partitioned",
            "cpu_checkpointing": plan.recompute_checkpoint == "cpu",
        }
    notes += _model_code_notes(plan, recompute)
    config[BLOCK] = {
        "app_version": __version__,
        "scenario": plan.scenario_name,
        "model": plan.model_id,
        "num_gpus": plan.num_gpus,
        "gpus_per_node": plan.gpus_per_node,
        "seq_len": plan.seq_len,
        "pipeline_parallel": plan.pp,
        "schedule": plan.schedule,
        "interleave_chunks": plan.v,
        "sequence_parallel": plan.sequence_parallel,
        "expert_parallel": plan.ep,
        "recompute": recompute,
        "recompute_method": plan.recompute_method,
        "recompute_layers": plan.recompute_layers,
        "comment": provenance_lines(plan, "DeepSpeed"),
        "unexpressed": notes,
    }
    text = json.dumps(config, indent=2) + "\n"
    return ExportedConfig(stack=STACK, text=text, suffix=".json", unexpressed=tuple(notes))


_BLOCK_FIELDS: tuple[tuple[str, str, type], ...] = (
    ("seq_len", "training.seq_len", int),
    ("gpus_per_node", "parallelism.gpus_per_node", int),
    ("schedule", "parallelism.schedule", str),
    ("interleave_chunks", "parallelism.interleave_chunks", int),
    ("sequence_parallel", "parallelism.sequence_parallel", bool),
    ("expert_parallel", "parallelism.expert_parallel", int),
    ("recompute", "training.recompute", str),
    ("recompute_method", "training.recompute_method", str),
    ("recompute_layers", "training.recompute_layers", int),
)
"""What an exported file's ``llm_planner`` block restores (DeepSpeed's JSON has no key)."""


def _batch_fields(r: Reader, tp: int, pp: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    micro = r.get("train_micro_batch_size_per_gpu", int)
    accumulation = r.get("gradient_accumulation_steps", int)
    batch = r.get("train_batch_size", int)
    if micro is not None:
        fields["training.micro_batch"] = micro
    if batch is not None:
        fields["parallelism.global_batch"] = batch
    if batch is not None and micro and accumulation:
        if batch % (micro * accumulation):
            raise r.fail(
                f"train_batch_size {batch} is not micro-batch {micro} × accumulation "
                f"{accumulation} × a data-parallel size"
            )
        dp = batch // (micro * accumulation)
        fields["parallelism.dp"] = dp
        fields["num_gpus"] = dp * tp * pp
    return fields


def _precision_in(r: Reader) -> str | None:
    """The recipe the ``fp16`` / ``bf16`` blocks enable; None when they are left to the
    launcher (``"auto"``) and none is enabled outright: the scenario's precision stands."""
    before = len(r.auto)
    fp16 = r.get("fp16.enabled", bool, False)
    bf16 = r.get("bf16.enabled", bool, False) or r.get("bfloat16.enabled", bool, False)
    if not fp16 and not bf16 and len(r.auto) > before:
        return None
    if fp16:
        return "mixed_fp16"
    if bf16:
        grad_fp32 = r.get("data_types.grad_accum_dtype", str) == "fp32"
        return "mixed_bf16_fp32_grads" if grad_fp32 else "mixed_bf16"
    return "fp32"


def _offload_in(r: Reader) -> dict[str, Any]:
    """``zero_optimization.offload_optimizer.device`` / ``offload_param.device`` as the
    offload fields (``none``, ``cpu`` or ``nvme``: DeepSpeed's ``OffloadDeviceEnum``). The
    legacy ``cpu_offload`` / ``cpu_offload_params`` booleans (deepspeed/runtime/zero/
    config.py, deprecated for these blocks) mean ``cpu``."""
    fields: dict[str, Any] = {}
    for key, legacy, path in (
        ("offload_optimizer", "cpu_offload", "training.offload_optimizer"),
        ("offload_param", "cpu_offload_params", "training.offload_params"),
    ):
        device = r.get(f"zero_optimization.{key}.device", str)
        if device is None and r.get(f"zero_optimization.{legacy}", bool, False):
            device = "cpu"
        if device is None:
            continue
        if device.lower() not in ("none", "cpu", "nvme"):
            raise r.fail(f"zero_optimization.{key}.device must be none, cpu or nvme")
        fields[path] = device.lower()
    return fields


def _checkpointing_fields(r: Reader) -> dict[str, Any]:
    """``activation_checkpointing`` (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/
    activation_checkpointing/checkpointing.py): ``partition_activations`` splits each
    checkpointed layer input over the model-parallel group, ``cpu_checkpointing`` moves it
    to host memory; both are priced as where the checkpoints live
    (``training.recompute_checkpoint``). ``number_checkpoints`` and
    ``contiguous_memory_optimization`` (one buffer for them) change no byte count; which
    layers are checkpointed is the model code's, so the policy is not read here."""
    partitioned = r.get("activation_checkpointing.partition_activations", bool, False)
    cpu = r.get("activation_checkpointing.cpu_checkpointing", bool, False)
    r.get("activation_checkpointing.number_checkpoints", int)
    r.get("activation_checkpointing.contiguous_memory_optimization", bool)
    if cpu:
        return {"training.recompute_checkpoint": "cpu"}
    if partitioned:
        return {"training.recompute_checkpoint": "partitioned"}
    return {}


def parse(text: str, source: str) -> ImportedConfig:
    """A DeepSpeed config JSON as scenario fields."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise StackConfigError(f"{source}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(data, dict):
        raise StackConfigError(f"{source}: a DeepSpeed config is a JSON object")
    r = Reader(data, source)
    tp = r.get("tensor_parallel.autotp_size", int, 1)
    pp = r.get(f"{BLOCK}.pipeline_parallel", int)
    fields = _batch_fields(r, tp, pp or 1)
    fields["parallelism.tp"] = tp
    if pp is not None:
        fields["parallelism.pp"] = pp
    stage = r.get("zero_optimization.stage", int)
    if stage is not None:
        if stage not in (0, 1, 2, 3):
            raise r.fail(f"zero_optimization.stage must be 0-3, not {stage}")
        fields["parallelism.zero_stage"] = stage
        fields["parallelism.fsdp_strategy"] = None
    fields.update(_offload_in(r))
    precision = _precision_in(r)
    if precision is not None:
        fields["training.precision"] = precision
    names = {v.lower(): k for k, v in DEEPSPEED_OPTIMIZERS.items()}
    opt = r.get("optimizer.type", str)
    if opt is not None and opt.lower() in names:
        fields["training.optimizer"] = names[opt.lower()]
    elif opt is not None:
        r.read.remove("optimizer.type")
    for key, path, kind in _BLOCK_FIELDS:
        value = r.get(f"{BLOCK}.{key}", kind)
        if value is not None:
            fields[path] = value
    fields |= _checkpointing_fields(r)
    name = r.get(f"{BLOCK}.model", str)
    ignored = sorted(leaf_paths(data, stop=frozenset({BLOCK})) - set(r.read) - {BLOCK})
    return ImportedConfig(
        stack=STACK,
        fields=fields,
        model=known_model(name) or name,
        read=tuple(r.read),
        ignored=tuple(ignored),
        auto=tuple(r.auto),
    )


def looks_like(text: str) -> bool:
    """A JSON object with DeepSpeed's batch or ZeRO keys."""
    head = text.lstrip()
    if not head.startswith("{"):
        return False
    return any(
        k in text
        for k in ('"train_micro_batch_size_per_gpu"', '"zero_optimization"', '"train_batch_size"')
    )
