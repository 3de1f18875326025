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

from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    Reader,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    flavor_of,
    known_model,
    leaf_paths,
    offload_unexpressed,
    preset_of_flavor,
    provenance_lines,
)
from llm_planner.core.files.stack_configs.textfmt import dump_toml
from llm_planner.core.primitives.version import __version__
from llm_planner.core.quantities.activation_recompute import is_partial

STACK = "torchtitan"

_SCHEDULES = {"1f1b": "1F1B", "interleaved": "Interleaved1F1B", "gpipe": "GPipe"}
_SCHEDULES_IN = {
    "1f1b": "1f1b",
    "interleaved1f1b": "interleaved",
    "gpipe": "gpipe",
    "interleavedzerobubble": "interleaved",
    "loopedbfs": "interleaved",
}


def _sharding(plan: LaunchPlan, notes: list[str]) -> tuple[int, int, str]:
    """(replicate, shard, reshard_after_forward) of FSDP2 for the plan's ZeRO stage."""
    if plan.zero_stage == 0:
        return plan.dp, 1, "always"
    if plan.fsdp_strategy == "HYBRID_SHARD":
        return plan.dp // plan.shard, plan.shard, "always"
    if plan.zero_stage == 1:
        notes.append(
            "ZeRO-1 (only optimizer states sharded): FSDP2 shards gradients too; "
            "exported as reshard-after-forward 'never' (ZeRO-2)"
        )
    return 1, plan.dp, "never" if plan.zero_stage in (1, 2) else "always"


_PRECISIONS = {
    "mixed_bf16": "bfloat16",
    "mixed_bf16_fp32_grads": "bfloat16",
    "fp32": "float32",
    "pure_bf16": "bfloat16",
}


def _precision_notes(plan: LaunchPlan) -> list[str]:
    if plan.precision == "pure_bf16":
        return ["pure bf16: torchtitan keeps fp32 sharded parameters (FSDP2 mixed precision)"]
    if plan.precision == "mixed_bf16":
        return [
            "the plan counts bf16 gradients: FSDP2 reduces them in float32 (mixed_precision_reduce)"
        ]
    if plan.precision not in _PRECISIONS:
        return [f"precision {plan.precision!r}: torchtitan mixes in bf16 or fp32 only"]
    return []


def _parallelism(plan: LaunchPlan, notes: list[str]) -> dict[str, Any]:
    replicate, shard, reshard = _sharding(plan, notes)
    table: dict[str, Any] = {
        "data_parallel_replicate_degree": replicate,
        "data_parallel_shard_degree": shard,
        "fsdp_reshard_after_forward": reshard,
        "tensor_parallel_degree": plan.tp,
        "pipeline_parallel_degree": plan.pp,
        "context_parallel_degree": 1,
        "expert_parallel_degree": plan.ep,
    }
    if plan.pp > 1:
        table["pipeline_parallel_schedule"] = _SCHEDULES[plan.schedule]
        table["pipeline_parallel_microbatch_size"] = plan.micro_batch
        if plan.v > 1:
            table["pipeline_parallel_layers_per_stage"] = plan.layers_per_virtual_stage
    if plan.tp > 1 and not plan.sequence_parallel:
        notes.append(
            "tensor parallelism without sequence parallelism: torchtitan always shards "
            "the norms' activations along the sequence (SequenceParallel)"
        )
    return table


def _model(plan: LaunchPlan, notes: list[str]) -> dict[str, Any]:
    name_flavor = flavor_of(plan.model_id)
    if name_flavor:
        return {"name": name_flavor[0], "flavor": name_flavor[1]}
    notes.append(
        f"model {plan.model_id!r} is not one of torchtitan's flavors: register it "
        "(model.name / model.flavor)"
    )
    return {"name": plan.model_id, "flavor": ""}


def _checkpoint_section(plan: LaunchPlan, notes: list[str]) -> dict[str, Any]:
    """``[activation_checkpoint]``: mode none / full, selective "op" (op-level SAC), or
    selective with digits N for full recompute of every N-th block (pytorch/torchtitan@
    1f029641 torchtitan/distributed/activation_checkpoint.py ``_apply_layer_sac``)."""
    recompute = export_recompute(plan)
    method, n = plan.recompute_method, plan.recompute_layers
    if recompute == "full" and method == "every" and n is not None and n > 1:
        return {"mode": "selective", "selective_ac_option": str(n)}
    if recompute == "full" and is_partial(method, n):
        notes.append(
            f"full recompute with Megatron's method {method} N = {n}: torchtitan checkpoints "
            "every block (mode full) or every N-th (selective_ac_option N)"
        )
    if recompute == "selective":
        return {"mode": "selective", "selective_ac_option": "op"}
    return {"mode": recompute}


def export(plan: LaunchPlan) -> ExportedConfig:
    """The plan as a torchtitan job TOML."""
    notes = common_unexpressed(plan) + offload_unexpressed(plan)
    model = _model(plan, notes)
    notes += _precision_notes(plan)
    training: dict[str, Any] = {
        "local_batch_size": plan.micro_batch * (plan.accumulation if plan.pp > 1 else 1),
        "global_batch_size": plan.global_batch,
        "seq_len": plan.seq_len,
        "mixed_precision_param": _PRECISIONS.get(plan.precision, "bfloat16"),
        "mixed_precision_reduce": "float32",
    }
    parallelism = _parallelism(plan, notes)
    checkpoint = _checkpoint_section(plan, notes)
    sections: dict[str, dict[str, Any]] = {
        "job": {"description": f"{plan.scenario_name} (LLM Planner {__version__})"},
        "model": model,
        "training": training,
        "parallelism": parallelism,
        "activation_checkpoint": checkpoint,
    }
    if plan.optimizer in {"adamw", "adam"}:
        sections["optimizer"] = {"name": "AdamW" if plan.optimizer == "adamw" else "Adam"}
    else:
        notes.append(f"optimizer {plan.optimizer!r}: torchtitan builds Adam or AdamW")
    if plan.lora_rank:
        notes.append(f"LoRA rank {plan.lora_rank}: torchtitan trains full weights")
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


def _sharding_fields(r: Reader, tp: int, pp: int) -> dict[str, Any]:
    replicate = r.get("parallelism.data_parallel_replicate_degree", int, 1)
    shard = r.get("parallelism.data_parallel_shard_degree", int, -1)
    reshard = r.get("parallelism.fsdp_reshard_after_forward", str, "default")
    fields: dict[str, Any] = {"parallelism.fsdp_strategy": None}
    if shard > 0:
        fields["parallelism.dp"] = replicate * shard
        fields["num_gpus"] = replicate * shard * tp * pp
    if shard == 1:
        fields["parallelism.zero_stage"] = 0
    elif replicate > 1:
        fields["parallelism.fsdp_strategy"] = "HYBRID_SHARD"
        fields["parallelism.zero_stage"] = 3
        fields["parallelism.gpus_per_node"] = shard * tp
    else:
        fields["parallelism.zero_stage"] = 2 if reshard == "never" else 3
    return fields


def _model_layers(data: dict[str, Any]) -> int | None:
    table = data.get("model")
    if not isinstance(table, dict):
        return None
    preset = preset_of_flavor(str(table.get("name")), str(table.get("flavor")))
    if preset is None:
        return None
    from llm_planner.core.primitives.presets import get_preset

    return get_preset(preset).architecture.layers


def _schedule_fields(r: Reader, pp: int) -> dict[str, Any]:
    schedule = r.get("parallelism.pipeline_parallel_schedule", str, "1F1B")
    micro = r.get("parallelism.pipeline_parallel_microbatch_size", int, 1)
    per_stage = r.get("parallelism.pipeline_parallel_layers_per_stage", int)
    local = r.get("training.local_batch_size", int)
    if pp == 1:
        fields: dict[str, Any] = {
            "parallelism.schedule": "1f1b",
            "parallelism.interleave_chunks": 1,
        }
        if local is not None:
            fields["training.micro_batch"] = local
        return fields
    kind = _SCHEDULES_IN.get(schedule.lower())
    if kind is None:
        raise r.fail(
            f"parallelism.pipeline_parallel_schedule {schedule!r} is not one of "
            f"{', '.join(_SCHEDULES.values())}"
        )
    layers = _model_layers(r.data)
    v = layers // (pp * per_stage) if kind == "interleaved" and per_stage and layers else 1
    return {
        "parallelism.schedule": kind,
        "parallelism.interleave_chunks": max(1, v),
        "training.micro_batch": micro,
    }


def parse(text: str, source: str) -> ImportedConfig:
    """A torchtitan job TOML as scenario fields."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise StackConfigError(f"{source}: not TOML ({error})") from None
    r = Reader(data, source)
    tp = r.get("parallelism.tensor_parallel_degree", int, 1)
    pp = r.get("parallelism.pipeline_parallel_degree", int, 1)
    cp = r.get("parallelism.context_parallel_degree", int, 1)
    if cp != 1:
        raise r.fail(
            f"parallelism.context_parallel_degree {cp}: the planner has no context-parallel "
            "degree yet"
        )
    fields: dict[str, Any] = {
        "parallelism.tp": tp,
        "parallelism.pp": pp,
        "parallelism.expert_parallel": r.get("parallelism.expert_parallel_degree", int, 1),
        "parallelism.sequence_parallel": tp > 1,
    }
    fields |= _sharding_fields(r, tp, pp) | _schedule_fields(r, pp)
    batch = r.get("training.global_batch_size", int, -1)
    if batch > 0:
        fields["parallelism.global_batch"] = batch
    seq = r.get("training.seq_len", int)
    if seq is not None:
        fields["training.seq_len"] = seq
    param = r.get("training.mixed_precision_param", str, "bfloat16")
    fields["training.precision"] = "mixed_bf16" if param == "bfloat16" else "fp32"
    mode = r.get("activation_checkpoint.mode", str, "selective")
    if mode not in {"none", "selective", "full"}:
        raise r.fail(
            f"activation_checkpoint.mode {mode!r}: the planner knows none, selective, full"
        )
    if mode == "selective":
        # the TOML era (pytorch/torchtitan@1f029641, torchtitan/distributed/
        # activation_checkpoint.py): selective_ac_option "op" is op-level SAC (the planner's
        # torchtitan 'selective'); digits N are _apply_layer_sac, every N-th block fully
        # checkpointed and the others kept whole ("if not ac_freq or count % ac_freq == 0"):
        # 0 and 1 checkpoint every block, i.e. full; N > 1 is full recompute, method every
        option = r.get("activation_checkpoint.selective_ac_option", str, "op")
        if option.isdigit():
            mode = "full"
            if int(option) > 1:
                fields["training.recompute_method"] = "every"
                fields["training.recompute_layers"] = int(option)
        elif option != "op":
            raise r.fail(
                f"activation_checkpoint.selective_ac_option {option!r}: torchtitan takes "
                "'op' (op-level selective) or a number N (every N-th block checkpointed)"
            )
    fields["training.recompute"] = mode
    opt = r.get("optimizer.name", str)
    if opt is not None and opt.lower() in {"adamw", "adam"}:
        fields["training.optimizer"] = opt.lower()
    name = r.get("model.name", str)
    flavor = r.get("model.flavor", str, "")
    model = (preset_of_flavor(name, flavor) or known_model(name) or name) if name else None
    ignored = sorted(leaf_paths(data) - set(r.read))
    return ImportedConfig(
        stack=STACK, fields=fields, model=model, read=tuple(r.read), ignored=tuple(ignored)
    )


def looks_like(text: str) -> bool:
    return "[parallelism]" in text or ("[training]" in text and "[model]" in text)
