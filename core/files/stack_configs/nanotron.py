"""nanotron: the config YAML given to ``run_train.py --config-file``.

Sections as nanotron v0.2 reads them (src/nanotron/config/config.py ``Config``, read with
dacite strict: unknown keys are refused, so provenance goes into comments and
``general.run``): ``parallelism`` dp, tp, pp, pp_engine "1f1b" / "afab" (all forward then
all backward: GPipe), tp_mode ALL_REDUCE / REDUCE_SCATTER (= sequence parallelism),
recompute_granularity SELECTIVE / FULL (nanotron main, 2411b022, renamed it recompute_layer
and reshaped the optimizer section; both spellings are read on import, the export writes the
release's, which CI parses with nanotron 0.2 from PyPI), expert_parallel_size
(parallelism_config.py);
``tokens`` sequence_length, micro_batch_size, batch_accumulation_per_replica (global batch =
micro × accumulation × dp, ``Config.global_batch_size``); ``optimizer`` zero_stage (0 or 1),
accumulate_grad_in_fp32; ``model`` dtype, ddp_bucket_cap_mb and a LlamaConfig.
"""

from __future__ import annotations

from typing import Any

from llm_planner.core.files.stack_configs.defaults import NANOTRON_DDP_BUCKET_CAP_MB, profile_value
from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    Reader,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    leaf_paths,
    match_preset,
    offload_unexpressed,
    provenance_lines,
)
from llm_planner.core.files.stack_configs.textfmt import TextFormatError, dump_yaml, load_yaml
from llm_planner.core.primitives.version import __version__
from llm_planner.core.quantities.activation_recompute import is_partial

STACK = "nanotron"


def export(plan: LaunchPlan) -> ExportedConfig:
    """The plan as a nanotron config YAML."""
    notes = common_unexpressed(plan) + offload_unexpressed(plan)
    a = plan.arch
    if plan.zero_stage > 1:
        notes.append(f"ZeRO-{plan.zero_stage}: nanotron shards optimizer states only (ZeRO-1)")
    engine = "afab" if plan.schedule == "gpipe" else "1f1b"
    if plan.v > 1:
        notes.append(
            f"interleaved schedule (v={plan.v}): nanotron runs 1F1B or all-forward-all-backward"
        )
    recompute = export_recompute(plan)
    notes += _recompute_notes(plan, recompute)
    if plan.fsdp_strategy is not None:
        notes.append(f"FSDP {plan.fsdp_strategy}: nanotron has no FSDP")
    if a.ffn_kind != "swiglu" or a.norm != "rmsnorm" or a.moe is not None or a.mla is not None:
        notes.append(f"{a.name} is not a Llama-shaped model: the LlamaConfig below is its nearest")
    dtype = {"fp32": "float32", "mixed_fp16": "float16"}.get(plan.precision, "bfloat16")
    if plan.optimizer not in {"adamw", "adam"}:
        notes.append(f"optimizer {plan.optimizer!r}: nanotron v0.2 builds AdamW")
    if plan.lora_rank:
        notes.append(f"LoRA rank {plan.lora_rank}: nanotron trains full weights")
    config: dict[str, Any] = {
        "general": {"project": "llm-planner", "run": plan.scenario_name, "seed": 42},
        "parallelism": {
            "dp": plan.dp,
            "tp": plan.tp,
            "pp": plan.pp,
            "pp_engine": engine,
            "tp_mode": "REDUCE_SCATTER" if plan.sequence_parallel else "ALL_REDUCE",
            "tp_linear_async_communication": plan.sequence_parallel,
            "recompute_granularity": None if recompute == "none" else recompute.upper(),
            "expert_parallel_size": plan.ep,
        },
        "model": {
            "dtype": dtype,
            "make_vocab_size_divisible_by": 1,
            "ddp_bucket_cap_mb": profile_value(
                STACK, "ddp_bucket_cap_mb", NANOTRON_DDP_BUCKET_CAP_MB
            ),
            "init_method": {"std": 0.02},
            "model_config": {
                "hidden_size": a.hidden_size,
                "intermediate_size": a.ffn_size,
                "num_attention_heads": a.heads,
                "num_hidden_layers": a.layers,
                "num_key_value_heads": a.kv_heads,
                "max_position_embeddings": max(a.max_context, plan.seq_len),
                "vocab_size": a.vocab_size,
                "tie_word_embeddings": a.tied_embeddings,
                "hidden_act": "silu",
                "is_llama_config": True,
            },
        },
        "tokenizer": {"tokenizer_name_or_path": None},
        "tokens": {
            "sequence_length": plan.seq_len,
            "train_steps": 1,
            "micro_batch_size": plan.micro_batch,
            "batch_accumulation_per_replica": plan.accumulation,
        },
        "optimizer": {
            "zero_stage": min(plan.zero_stage, 1),
            "weight_decay": 0.1,
            "clip_grad": 1.0,
            "accumulate_grad_in_fp32": plan.precision in {"mixed_bf16_fp32_grads", "fp32"},
            "adam_eps": 1.0e-8,
            "adam_beta1": 0.9,
            "adam_beta2": 0.95,
            "torch_adam_is_fused": True,
            "learning_rate_scheduler": {
                "learning_rate": 3.0e-4,
                "lr_warmup_steps": 0,
                "lr_warmup_style": "linear",
                "lr_decay_style": "cosine",
            },
        },
    }
    comments = [
        *provenance_lines(plan, "nanotron"),
        f"LLM Planner {__version__}: train_steps, learning rate and tokenizer are placeholders",
        f"Launch: torchrun --nproc-per-node {min(plan.gpus_per_node, plan.num_gpus)} "
        f"--nnodes {plan.nodes} run_train.py --config-file THIS_FILE",
    ]
    if plan.global_batch != plan.micro_batch * plan.accumulation * plan.dp:
        notes.append(
            f"global batch {plan.global_batch}: nanotron's is micro × accumulation × dp = "
            f"{plan.micro_batch * plan.accumulation * plan.dp}"
        )
    if notes:
        comments.append("Not expressible in nanotron's config (the plan assumes):")
        comments += [f"  - {n}" for n in notes]
    return ExportedConfig(
        stack=STACK, text=dump_yaml(config, comments), suffix=".yaml", unexpressed=tuple(notes)
    )


def _recompute_notes(plan: LaunchPlan, recompute: str) -> list[str]:
    """What the written ``recompute_granularity`` does on each nanotron: the PyPI release
    (0.2) reads it but its Llama never recomputes (models/llama.py passes it only to the FLOP
    count; ``checkpoint_attention`` is False); main (huggingface/nanotron@2411b022) renamed it
    ``recompute_layer``, which checkpoints whole decoder layers, and has no selective."""
    if recompute == "none":
        return []
    notes = [
        f"{recompute} recomputation: nanotron 0.2's Llama does not recompute "
        "(recompute_granularity only feeds its FLOP count); on nanotron main set "
        f"recompute_layer: {'true' if recompute == 'full' else 'false'} (whole layers; main "
        "has no selective)"
    ]
    if recompute == "full" and is_partial(plan.recompute_method, plan.recompute_layers):
        notes.append(
            f"full recompute {plan.recompute_method} N = {plan.recompute_layers}: nanotron "
            "main's recompute_layer checkpoints every layer"
        )
    return notes


def _parallel_fields(r: Reader) -> dict[str, Any]:
    if not isinstance(r.data.get("parallelism"), dict):
        raise r.fail("no 'parallelism' section (dp, tp, pp)")
    dp = r.get("parallelism.dp", int, 1)
    tp = r.get("parallelism.tp", int, 1)
    pp = r.get("parallelism.pp", int, 1)
    engine = r.get("parallelism.pp_engine", str, "afab")
    if engine not in {"1f1b", "afab"}:
        raise r.fail("parallelism.pp_engine must be 1f1b or afab")
    mode = r.get("parallelism.tp_mode", str, "ALL_REDUCE").upper()
    # huggingface/nanotron@2411b022 config/parallelism_config.py: recompute_layer (a
    # CheckpointFunction around each decoder layer, models/llama.py); the older
    # recompute_granularity (deprecated in d0f74c76) is still read from old files
    recompute = r.get("parallelism.recompute_granularity", str, "none").lower()
    if recompute not in {"none", "selective", "full"}:
        raise r.fail(f"parallelism.recompute_granularity {recompute!r}")
    if r.get("parallelism.recompute_layer", bool, False):
        recompute = "full"
    return {
        "num_gpus": dp * tp * pp,
        "parallelism.dp": dp,
        "parallelism.tp": tp,
        "parallelism.pp": pp,
        "parallelism.expert_parallel": r.get("parallelism.expert_parallel_size", int, 1),
        "parallelism.schedule": "gpipe" if engine == "afab" else "1f1b",
        "parallelism.interleave_chunks": 1,
        "parallelism.sequence_parallel": mode == "REDUCE_SCATTER",
        "parallelism.fsdp_strategy": None,
        "training.recompute": recompute,
    }


def _training_fields(r: Reader, dp: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    micro = r.get("tokens.micro_batch_size", int)
    accumulation = r.get("tokens.batch_accumulation_per_replica", int)
    seq = r.get("tokens.sequence_length", int)
    if micro:
        fields["training.micro_batch"] = micro
    if micro and accumulation:
        fields["parallelism.global_batch"] = micro * accumulation * dp
    if seq:
        fields["training.seq_len"] = seq
    stage = r.get("optimizer.zero_stage", int)
    if stage is not None and stage not in (0, 1):
        raise r.fail(f"optimizer.zero_stage {stage}: nanotron has 0 or 1")
    if stage is not None:
        fields["parallelism.zero_stage"] = stage
    fp32_grads = r.get("optimizer.accumulate_grad_in_fp32", bool, False)
    dtype = r.get("model.dtype", str, "bfloat16")
    if dtype in {"float16", "fp16"}:
        fields["training.precision"] = "mixed_fp16"
    elif dtype in {"bfloat16", "bf16"}:
        fields["training.precision"] = "mixed_bf16_fp32_grads" if fp32_grads else "mixed_bf16"
    else:
        fields["training.precision"] = "fp32"
    return fields


_HINT_KEYS = {
    "layers": "num_hidden_layers",
    "hidden_size": "hidden_size",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "ffn_size": "intermediate_size",
    "vocab_size": "vocab_size",
}
"""Architecture field → nanotron's LlamaConfig key."""


def parse(text: str, source: str) -> ImportedConfig:
    """A nanotron config YAML as scenario fields."""
    try:
        data = load_yaml(text)
    except TextFormatError as error:
        raise StackConfigError(f"{source}: {error}") from None
    r = Reader(data, source)
    fields = _parallel_fields(r)
    fields |= _training_fields(r, fields["parallelism.dp"])
    hint = {k: r.get(f"model.model_config.{key}", int) for k, key in _HINT_KEYS.items()}
    hint = {k: v for k, v in hint.items() if v}
    return ImportedConfig(
        stack=STACK,
        fields=fields,
        model=match_preset(hint),
        read=tuple(r.read),
        ignored=tuple(sorted(leaf_paths(data) - set(r.read))),
        arch_hint=hint,
    )


def looks_like(text: str) -> bool:
    return "batch_accumulation_per_replica" in text or (
        "parallelism:" in text and "tokens:" in text
    )
