"""torchtitan: the job TOML given to ``train.py --job.config_file``.

Sections and keys of torchtitan v0.2.2's ``JobConfig`` (torchtitan/config/job_config.py):
``[parallelism]`` data_parallel_replicate_degree × data_parallel_shard_degree (FSDP2: shard
inside, replicate across = HSDP), fsdp_reshard_after_forward ("never" keeps the gathered
weights through the backward: ZeRO-2's memory; "always": ZeRO-3), tensor/pipeline/context/
expert degrees, pipeline_parallel_schedule ("1F1B", "Interleaved1F1B", "GPipe") with
pipeline_parallel_layers_per_stage and pipeline_parallel_microbatch_size; ``[training]``
local_batch_size (per data-parallel rank per optimizer step when pipelining, per
micro-batch otherwise: torchtitan accumulates global / (local · dp) steps), global_batch_size,
seq_len, mixed_precision_param/reduce; ``[activation_checkpoint]`` mode none/selective/full
(selective_ac_option "op": per-operator). torchtitan 0.3 replaced TOML files by Python
config functions: the keys stay the same as its ``--section.key`` overrides.
"""

from __future__ import annotations

import tomllib
from typing import Any

from llm_planner import __version__
from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    flavor_of,
    known_model,
    preset_of_flavor,
    provenance_lines,
)
from llm_planner.core.files.stack_configs.textfmt import dump_toml

STACK = "torchtitan"

_SCHEDULES = {"1f1b": "1F1B", "interleaved": "Interleaved1F1B", "gpipe": "GPipe"}
_SCHEDULES_IN = {
    "1f1b": "1f1b",
    "interleaved1f1b": "interleaved",
    "gpipe": "gpipe",
    "interleavedzerobubble": "interleaved",
    "loopedbfs": "interleaved",
}


def export(plan: LaunchPlan) -> ExportedConfig:
    """The plan as a torchtitan job TOML."""
    notes = common_unexpressed(plan)
    replicate, shard = 1, plan.dp
    reshard = "always"
    if plan.zero_stage == 0:
        replicate, shard = plan.dp, 1
    elif plan.fsdp_strategy == "HYBRID_SHARD":
        replicate, shard = plan.dp // plan.shard, plan.shard
    elif plan.zero_stage in (1, 2):
        reshard = "never"
        if plan.zero_stage == 1:
            notes.append(
                "ZeRO-1 (only optimizer states sharded): FSDP2 shards gradients too; "
                "exported as reshard-after-forward 'never' (ZeRO-2)"
            )
    name_flavor = flavor_of(plan.model_id)
    model: dict[str, Any] = {
        "name": name_flavor[0] if name_flavor else plan.model_id,
        "flavor": name_flavor[1] if name_flavor else "",
    }
    if not name_flavor:
        notes.append(
            f"model {plan.model_id!r} is not one of torchtitan's flavors: register it "
            "(model.name / model.flavor)"
        )
    if plan.precision in {"mixed_bf16", "mixed_bf16_fp32_grads"}:
        param, reduce_dtype = "bfloat16", "float32"
    elif plan.precision == "fp32":
        param, reduce_dtype = "float32", "float32"
    elif plan.precision == "bf16":
        param, reduce_dtype = "bfloat16", "float32"
        notes.append("pure bf16: torchtitan keeps fp32 sharded parameters (FSDP2 mixed precision)")
    else:
        param, reduce_dtype = "bfloat16", "float32"
        notes.append(f"precision {plan.precision!r}: torchtitan mixes in bf16 or fp32 only")
    if plan.precision == "mixed_bf16":
        notes.append("FSDP2 reduces gradients in float32 (mixed_precision_reduce)")
    training: dict[str, Any] = {
        "local_batch_size": plan.micro_batch * (plan.accumulation if plan.pp > 1 else 1),
        "global_batch_size": plan.global_batch,
        "seq_len": plan.seq_len,
        "mixed_precision_param": param,
        "mixed_precision_reduce": reduce_dtype,
    }
    parallelism: dict[str, Any] = {
        "data_parallel_replicate_degree": replicate,
        "data_parallel_shard_degree": shard,
        "fsdp_reshard_after_forward": reshard,
        "tensor_parallel_degree": plan.tp,
        "pipeline_parallel_degree": plan.pp,
        "context_parallel_degree": 1,
        "expert_parallel_degree": plan.ep,
    }
    if plan.pp > 1:
        parallelism["pipeline_parallel_schedule"] = _SCHEDULES[plan.schedule]
        parallelism["pipeline_parallel_microbatch_size"] = plan.micro_batch
        if plan.v > 1:
            parallelism["pipeline_parallel_layers_per_stage"] = plan.layers_per_virtual_stage
    if plan.tp > 1 and not plan.sequence_parallel:
        notes.append(
            "tensor parallelism without sequence parallelism: torchtitan always shards "
            "the norms' activations along the sequence (SequenceParallel)"
        )
    recompute = export_recompute(plan)
    checkpoint: dict[str, Any] = {"mode": recompute}
    if recompute == "selective":
        checkpoint["selective_ac_option"] = "op"
    optimizer: dict[str, Any] = {}
    if plan.optimizer in {"adamw", "adam"}:
        optimizer["name"] = "AdamW" if plan.optimizer == "adamw" else "Adam"
    else:
        notes.append(f"optimizer {plan.optimizer!r}: torchtitan builds Adam or AdamW")
    if plan.lora_rank:
        notes.append(f"LoRA rank {plan.lora_rank}: torchtitan trains full weights")
    sections: dict[str, dict[str, Any]] = {
        "job": {"description": f"{plan.scenario_name} (LLM Planner {__version__})"},
        "model": model,
        "training": training,
        "parallelism": parallelism,
        "activation_checkpoint": checkpoint,
    }
    if optimizer:
        sections["optimizer"] = optimizer
    comments = [
        *provenance_lines(plan, "torchtitan"),
        f"Launch: NGPU={plan.num_gpus} ./run_train.sh",
    ]
    if notes:
        comments.append("Not expressible in torchtitan's job config (the plan assumes):")
        comments += [f"  - {n}" for n in notes]
    return ExportedConfig(
        stack=STACK, text=dump_toml(sections, comments), suffix=".toml", unexpressed=tuple(notes)
    )


def parse(text: str, source: str) -> ImportedConfig:
    """A torchtitan job TOML as scenario fields."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise StackConfigError(f"{source}: not TOML ({error})") from None
    read: list[str] = []

    def get(section: str, key: str, kind: type, default: Any = None) -> Any:
        table = data.get(section)
        if not isinstance(table, dict) or key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise StackConfigError(f"{source}: {section}.{key} has the wrong type ({value!r})")
        read.append(f"{section}.{key}")
        return value

    fields: dict[str, Any] = {}
    replicate = get("parallelism", "data_parallel_replicate_degree", int, 1)
    shard = get("parallelism", "data_parallel_shard_degree", int, -1)
    reshard = get("parallelism", "fsdp_reshard_after_forward", str, "default")
    tp = get("parallelism", "tensor_parallel_degree", int, 1)
    pp = get("parallelism", "pipeline_parallel_degree", int, 1)
    cp = get("parallelism", "context_parallel_degree", int, 1)
    ep = get("parallelism", "expert_parallel_degree", int, 1)
    if cp != 1:
        raise StackConfigError(
            f"{source}: parallelism.context_parallel_degree {cp}: the planner has no "
            "context-parallel degree yet"
        )
    fields.update({"parallelism.tp": tp, "parallelism.pp": pp, "parallelism.expert_parallel": ep})
    fields["parallelism.sequence_parallel"] = tp > 1
    if shard > 0:
        dp = replicate * shard
        fields["parallelism.dp"] = dp
        fields["num_gpus"] = dp * tp * pp
    if shard == 1:
        fields["parallelism.zero_stage"] = 0
        fields["parallelism.fsdp_strategy"] = None
    elif replicate > 1:
        fields["parallelism.fsdp_strategy"] = "HYBRID_SHARD"
        fields["parallelism.zero_stage"] = 3
        fields["parallelism.gpus_per_node"] = shard * tp
    else:
        fields["parallelism.zero_stage"] = 2 if reshard == "never" else 3
        fields["parallelism.fsdp_strategy"] = None
    schedule = get("parallelism", "pipeline_parallel_schedule", str, "1F1B")
    micro = get("parallelism", "pipeline_parallel_microbatch_size", int, 1)
    per_stage = get("parallelism", "pipeline_parallel_layers_per_stage", int)
    local = get("training", "local_batch_size", int)
    if pp > 1:
        kind = _SCHEDULES_IN.get(schedule.lower())
        if kind is None:
            raise StackConfigError(
                f"{source}: parallelism.pipeline_parallel_schedule {schedule!r} is not "
                f"one of {', '.join(_SCHEDULES.values())}"
            )
        fields["parallelism.schedule"] = kind
        fields["training.micro_batch"] = micro
        layers = None
        name, flavor = data.get("model", {}).get("name"), data.get("model", {}).get("flavor")
        preset = preset_of_flavor(str(name), str(flavor))
        if preset:
            from llm_planner.core.primitives.presets import get_preset

            layers = get_preset(preset).architecture.layers
        if kind == "interleaved" and per_stage and layers:
            fields["parallelism.interleave_chunks"] = max(1, layers // (pp * per_stage))
        else:
            fields["parallelism.interleave_chunks"] = 1
    else:
        fields["parallelism.schedule"] = "1f1b"
        fields["parallelism.interleave_chunks"] = 1
        if local is not None:
            fields["training.micro_batch"] = local
    batch = get("training", "global_batch_size", int, -1)
    if batch > 0:
        fields["parallelism.global_batch"] = batch
    seq = get("training", "seq_len", int)
    if seq is not None:
        fields["training.seq_len"] = seq
    param = get("training", "mixed_precision_param", str, "bfloat16")
    fields["training.precision"] = "mixed_bf16" if param == "bfloat16" else "fp32"
    mode = get("activation_checkpoint", "mode", str, "selective")
    if mode not in {"none", "selective", "full"}:
        raise StackConfigError(
            f"{source}: activation_checkpoint.mode {mode!r}: the planner knows none, "
            "selective, full"
        )
    fields["training.recompute"] = mode
    opt = get("optimizer", "name", str)
    if opt is not None and opt.lower() in {"adamw", "adam"}:
        fields["training.optimizer"] = opt.lower()
    model = None
    model_table = data.get("model")
    if isinstance(model_table, dict):
        name = get("model", "name", str)
        flavor = get("model", "flavor", str, "")
        model = preset_of_flavor(str(name), flavor) or known_model(name) or name
    leaves = {
        f"{section}.{key}"
        for section, table in data.items()
        if isinstance(table, dict)
        for key in table
    }
    ignored = sorted(leaves - set(read))
    return ImportedConfig(
        stack=STACK, fields=fields, model=model, read=tuple(read), ignored=tuple(ignored)
    )


def looks_like(text: str) -> bool:
    return "[parallelism]" in text or ("[training]" in text and "[model]" in text)
