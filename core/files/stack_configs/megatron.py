"""Megatron-LM / Megatron-Core: the launch arguments of ``pretrain_gpt.py``, as a bash array.

Flag names are Megatron-LM's (megatron/training/arguments.py; each is the dashed name of a
field of Megatron-Core's ``ModelParallelConfig``, ``TransformerConfig``,
``DistributedDataParallelConfig`` or ``OptimizerConfig``, megatron-core 0.16.1):
``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``,
``--num-layers-per-virtual-pipeline-stage``, ``--context-parallel-size``,
``--expert-model-parallel-size``, ``--sequence-parallel``, ``--use-distributed-optimizer``
(ZeRO-1: optimizer states sharded over dp), ``--recompute-granularity/-method/-num-layers``,
``--recompute-modules``, ``--distribute-saved-activations``, ``--micro-batch-size``,
``--global-batch-size``, ``--seq-length``, ``--bf16``/``--fp16``, ``--grad-reduce-in-bf16``,
``--fp8-param-gather``/``--fp4-param-gather``, ``--cpu-offloading-num-layers``,
``--decoder-first-pipeline-num-layers``/``--decoder-last-pipeline-num-layers`` (uneven
pipeline stages: NVIDIA/Megatron-LM@d98e8a64 transformer_config.py).
ZeRO-2/3 are Megatron-FSDP's ``--data-parallel-sharding-strategy optim_grads`` /
``optim_grads_params`` with ``--use-megatron-fsdp`` (Megatron-LM
megatron/core/distributed/fsdp/README.md, "Required Configurations").
"""

from __future__ import annotations

import argparse
import ast
import operator
import re
import shlex
from collections.abc import Callable
from typing import Any

from llm_planner.core.files.stack_configs.plan import (
    MEGATRON_LOW_PRECISION_ARGS,
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    StackConfigError,
    common_unexpressed,
    export_recompute,
    match_preset,
    offload_unexpressed,
    provenance_lines,
)
from llm_planner.core.quantities.activation_recompute import (
    DEFAULT_RECOMPUTE_MODULES,
    MEGATRON_RECOMPUTE_MODULES,
    checkpointed_layers,
)

STACK = "megatron"
ARRAY = "MEGATRON_ARGS"

_SHARDING = {2: "optim_grads", 3: "optim_grads_params"}
_SHARDING_IN = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}


def _arch_args(plan: LaunchPlan) -> list[str]:
    a = plan.arch
    args = [
        f"--num-layers {a.layers}",
        f"--hidden-size {a.hidden_size}",
        f"--ffn-hidden-size {a.ffn_size}",
        f"--num-attention-heads {a.heads}",
    ]
    if a.kv_heads != a.heads:
        args += ["--group-query-attention", f"--num-query-groups {a.kv_heads}"]
    if a.head_dim * a.heads != a.hidden_size:
        args.append(f"--kv-channels {a.head_dim}")
    args.append(f"--max-position-embeddings {max(a.max_context, plan.seq_len)}")
    if a.ffn_kind == "swiglu":
        args.append("--swiglu")
    if a.norm == "rmsnorm":
        args.append("--normalization RMSNorm")
    if a.positions == "rotary":
        args.append("--position-embedding-type rope")
    if not a.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if a.attention_bias == "none" and not a.mlp_bias:
        args.append("--disable-bias-linear")
    if a.moe is not None:
        args.append(f"--num-experts {a.moe.num_experts}")
    return args


def _zero_args(plan: LaunchPlan, notes: list[str]) -> list[str]:
    args = ["--use-distributed-optimizer"] if plan.zero_stage >= 1 else []
    if plan.zero_stage >= 2:
        args += [
            "--use-megatron-fsdp",
            f"--data-parallel-sharding-strategy {_SHARDING[plan.zero_stage]}",
            "--no-gradient-accumulation-fusion",
            "--ckpt-format fsdp_dtensor",
        ]
    if plan.fsdp_strategy == "HYBRID_SHARD":
        notes.append(
            f"HYBRID_SHARD (shard groups of {plan.shard}): exported as full sharding over dp; "
            "Megatron-FSDP's --num-distributed-optimizer-instances sets the replicas"
        )
    return args


def _recompute_args(plan: LaunchPlan, recompute: str, notes: list[str]) -> list[str]:
    """``--recompute-granularity`` with its method, N and modules
    (NVIDIA/Megatron-LM@d98e8a64 megatron/core/recompute.py, transformer_config.py)."""
    if recompute == "selective":
        args = ["--recompute-granularity selective"]
        if plan.recompute_modules != DEFAULT_RECOMPUTE_MODULES:
            args.append(f"--recompute-modules {' '.join(plan.recompute_modules)}")
        return args
    if recompute != "full":
        return []
    method, n = plan.recompute_method, plan.recompute_layers
    if method == "every":
        notes.append(
            f"full recompute of every {n}-th layer (torchtitan's layer-level option) is not "
            "Megatron's: exported as --recompute-method block with the same number of layers"
            " per stage"
        )
        stage = -(-plan.arch.layers // plan.pp)
        n = int(checkpointed_layers("every", n, stage))
        method = "block"
    args = [
        "--recompute-granularity full",
        f"--recompute-method {method}",
        f"--recompute-num-layers {n or 1}",
    ]
    if plan.recompute_checkpoint == "partitioned":
        args.append("--distribute-saved-activations")
    elif plan.recompute_checkpoint == "cpu":
        notes.append("layer checkpoints in host memory: DeepSpeed's cpu_checkpointing")
    return args


def _precision_args(plan: LaunchPlan, notes: list[str]) -> list[str]:
    args: list[str] = []
    low = MEGATRON_LOW_PRECISION_ARGS.get(plan.precision)
    if plan.precision in {"mixed_bf16", "mixed_bf16_fp32_grads", "pure_bf16"} or low:
        args.append("--bf16")
    elif plan.precision == "mixed_fp16":
        args.append("--fp16")
    bf16 = plan.precision in {"mixed_bf16", "mixed_bf16_fp32_grads", "pure_bf16"} or low
    if plan.grad_reduce_16bit and bf16:
        args.append("--grad-reduce-in-bf16")
    elif plan.precision == "mixed_bf16_fp32_grads" or low:
        args.append("--accumulate-allreduce-grads-in-fp32")
    args.extend(low or ())
    if low and plan.low_precision_params:
        args.append("--fp4-param-gather" if plan.precision == "nvfp4" else "--fp8-param-gather")
    if plan.precision == "pure_bf16":
        notes.append("pure bf16 without fp32 master weights: Megatron keeps fp32 main params")
    if plan.optimizer in {"adam", "adamw"}:
        args.append("--optimizer adam")
    elif plan.optimizer == "adamw_bf16_moments":
        args += [
            "--optimizer adam",
            "--use-precision-aware-optimizer",
            "--exp-avg-dtype bf16",
            "--exp-avg-sq-dtype bf16",
        ]
    elif plan.optimizer in {"sgd", "sgd_momentum"}:
        args.append("--optimizer sgd")
    else:
        notes.append(f"optimizer {plan.optimizer!r}: Megatron-LM offers adam and sgd")
    return args


def _parallel_args(plan: LaunchPlan, notes: list[str]) -> list[str]:
    args = [
        f"--tensor-model-parallel-size {plan.tp}",
        f"--pipeline-model-parallel-size {plan.pp}",
    ]
    if plan.v > 1:
        args.append(f"--num-layers-per-virtual-pipeline-stage {plan.layers_per_virtual_stage}")
    if plan.first_stage_layers is not None:  # uneven pipeline (transformer_config.py)
        args.append(f"--decoder-first-pipeline-num-layers {plan.first_stage_layers}")
    if plan.last_stage_layers is not None:
        args.append(f"--decoder-last-pipeline-num-layers {plan.last_stage_layers}")
    if plan.schedule == "gpipe":
        notes.append("the GPipe schedule: Megatron-LM runs 1F1B (or interleaved 1F1B)")
    args.append(f"--context-parallel-size {plan.cp}")
    if plan.ep > 1:
        args.append(f"--expert-model-parallel-size {plan.ep}")
    if plan.sequence_parallel:
        args.append("--sequence-parallel")
    if plan.activation_offload_layers > 0:
        # Megatron turns cpu_offloading on with it (arguments.py validate_args)
        args.append(f"--cpu-offloading-num-layers {plan.activation_offload_layers}")
    return args


def export(plan: LaunchPlan) -> ExportedConfig:
    """The plan as Megatron-LM arguments."""
    notes = common_unexpressed(plan) + offload_unexpressed(plan)
    args = _parallel_args(plan, notes) + _zero_args(plan, notes)
    args += _recompute_args(plan, export_recompute(plan), notes)
    args += [
        f"--micro-batch-size {plan.micro_batch}",
        f"--global-batch-size {plan.global_batch}",
        f"--seq-length {plan.seq_len}",
    ]
    args += _precision_args(plan, notes)
    if plan.flash_attention:
        args.append("--attention-backend flash")
    if plan.lora_rank:
        notes.append(f"LoRA rank {plan.lora_rank}: not a Megatron-LM pretraining argument")
    args += _arch_args(plan)
    header = [f"# {line}" for line in provenance_lines(plan, "Megatron-LM")]
    if notes:
        header.append("# Not expressible in Megatron-LM's arguments (the plan assumes):")
        header += [f"#   - {n}" for n in notes]
    per_node = min(plan.gpus_per_node, plan.num_gpus)
    header.append(
        f"# Launch: torchrun --nnodes {plan.nodes} --nproc-per-node {per_node} "
        f'pretrain_gpt.py "${{{ARRAY}[@]}}" --data-path ... --tokenizer-model ...'
    )
    body = [f"{ARRAY}=(", *(f"    {a}" for a in args), ")"]
    text = "\n".join(header + body) + "\n"
    return ExportedConfig(stack=STACK, text=text, suffix=".sh", unexpressed=tuple(notes))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for name in (
        "tensor-model-parallel-size",
        "pipeline-model-parallel-size",
        "num-layers-per-virtual-pipeline-stage",
        "virtual-pipeline-model-parallel-size",
        "context-parallel-size",
        "expert-model-parallel-size",
        "micro-batch-size",
        "global-batch-size",
        "seq-length",
        "recompute-num-layers",
        "num-layers",
        "hidden-size",
        "ffn-hidden-size",
        "num-attention-heads",
        "num-query-groups",
        "kv-channels",
        "num-experts",
        "max-position-embeddings",
        "cpu-offloading-num-layers",
        "decoder-first-pipeline-num-layers",
        "decoder-last-pipeline-num-layers",
    ):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--recompute-modules", nargs="*")
    for name in (
        "recompute-granularity",
        "recompute-method",
        "data-parallel-sharding-strategy",
        "optimizer",
        "fp8-format",
        "fp8-recipe",
        "fp4-format",
        "fp4-recipe",
        "exp-avg-dtype",
        "exp-avg-sq-dtype",
        "tokenizer-type",
        "merge-file",
    ):
        p.add_argument(f"--{name}")
    for name in (
        "distribute-saved-activations",
        "sequence-parallel",
        "use-distributed-optimizer",
        "use-megatron-fsdp",
        "use-custom-fsdp",
        "bf16",
        "fp16",
        "accumulate-allreduce-grads-in-fp32",
        "grad-reduce-in-bf16",
        "use-precision-aware-optimizer",
        "fp8-param-gather",
        "fp4-param-gather",
        "group-query-attention",
    ):
        p.add_argument(f"--{name}", action="store_true")
    return p


_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?!\()(.*)$")
_REFERENCE = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)
_ARITHMETIC = re.compile(r"\$\(\((.+?)\)\)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _expand(text: str, known: dict[str, str]) -> str:
    """``$NAME``, ``${NAME}`` and ``${NAME:-default}`` / ``${NAME-default}`` replaced by
    the script's own value (else the default), then ``$(( … ))`` of whole numbers evaluated,
    as bash would before Megatron-LM parses the arguments; a name the script does not set
    (``$1``, ``$MASTER_ADDR`` from the environment) is left as written."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        if name in known:
            return known[name]
        if match.group(2) is not None:
            return match.group(3) or ""
        return match.group(0)

    expanded = _REFERENCE.sub(one, text)

    def arithmetic(match: re.Match[str]) -> str:
        # bash reads a bare name inside $(( )) as that variable's value
        names = set(_NAME.findall(match.group(1)))
        if not names <= known.keys():
            return match.group(0)
        expression = _NAME.sub(lambda n: known[n.group(0)], match.group(1))
        value = _integer_arithmetic(expression)
        return match.group(0) if value is None else str(value)

    return _ARITHMETIC.sub(arithmetic, expanded)


def _integer_arithmetic(expression: str) -> int | None:
    """bash's ``$(( … ))`` on whole numbers with + − × ÷ (integer division) and
    parentheses, read through Python's ``ast`` (nothing is executed); None for anything
    else."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None

    def divide(a: int, b: int) -> int | None:
        return a // b if b else None

    operators: dict[type[ast.operator], Callable[[int, int], int | None]] = {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: divide,
    }

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = value(node.operand)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            left, right = value(node.left), value(node.right)
            if left is None or right is None:
                return None
            return operators[type(node.op)](left, right)
        return None

    return value(tree.body)


def resolve_shell(text: str) -> str:
    """A launch script with its own shell variables resolved, line by line in order, as
    bash assigns them: ``NUM_LAYERS=96`` then ``--num-layers $NUM_LAYERS`` reads 96;
    ``${TP:-8}`` reads the script's TP or 8 (issue 28 item 5). Array assignments
    (``GPT_ARGS=( … )``) are kept as they are: their elements are the arguments."""
    known: dict[str, str] = {}
    out: list[str] = []
    for raw in text.splitlines():
        line = _expand(raw, known)
        match = _ASSIGNMENT.match(line.split(" #")[0])
        if match is not None and not line.lstrip().startswith("#"):
            value = match.group(2).strip()
            try:
                parts = shlex.split(value, comments=True)
            except ValueError:
                parts = [value]
            known[match.group(1)] = parts[0] if len(parts) == 1 else value.strip("\"'")
        out.append(line)
    return "\n".join(out)


def tokens_of(text: str) -> list[str]:
    """The argument tokens of a bash array file or a command line (comments dropped)."""
    lines = [line.split(" #")[0] for line in text.splitlines() if not line.lstrip().startswith("#")]
    try:
        tokens = shlex.split("\n".join(lines), comments=True)
    except ValueError as error:
        raise StackConfigError(f"unreadable arguments ({error})") from None
    out: list[str] = []
    for token in tokens:
        if token in {")", "("} or token.endswith("=("):
            continue
        if "=" in token and token.startswith("--"):
            out += token.split("=", 1)
        else:
            out.append(token)
    start = next((i for i, t in enumerate(out) if t.startswith("--")), len(out))
    return out[start:]


def _layout_fields(args: argparse.Namespace, source: str) -> dict[str, Any]:
    pp = args.pipeline_model_parallel_size or 1
    v = args.virtual_pipeline_model_parallel_size
    if args.num_layers_per_virtual_pipeline_stage and args.num_layers:
        v = args.num_layers // (pp * args.num_layers_per_virtual_pipeline_stage)
    zero = 1 if args.use_distributed_optimizer else 0
    if args.use_megatron_fsdp or args.use_custom_fsdp:
        strategy = args.data_parallel_sharding_strategy or "no_shard"
        if strategy not in _SHARDING_IN:
            raise StackConfigError(
                f"{source}: --data-parallel-sharding-strategy {strategy!r} is not one of "
                f"{', '.join(_SHARDING_IN)}"
            )
        zero = max(zero, _SHARDING_IN[strategy])
    granularity = args.recompute_granularity
    if granularity not in (None, "selective", "full"):
        raise StackConfigError(f"{source}: --recompute-granularity {granularity!r}")
    return {
        "parallelism.tp": args.tensor_model_parallel_size or 1,
        "parallelism.pp": pp,
        "parallelism.cp": args.context_parallel_size or 1,
        "parallelism.sequence_parallel": bool(args.sequence_parallel),
        "parallelism.expert_parallel": args.expert_model_parallel_size or 1,
        "parallelism.schedule": "interleaved" if v and v > 1 else "1f1b",
        "parallelism.interleave_chunks": v if v and v > 1 else 1,
        "parallelism.zero_stage": zero,
        "parallelism.fsdp_strategy": None,
        "training.recompute": granularity or "none",
        **_recompute_fields(args, source),
        **{  # uneven pipeline stages (transformer_config.py at d98e8a64)
            path: n
            for path, n in (
                ("training.first_stage_layers", args.decoder_first_pipeline_num_layers),
                ("training.last_stage_layers", args.decoder_last_pipeline_num_layers),
            )
            if n
        },
    }


def _recompute_fields(args: argparse.Namespace, source: str) -> dict[str, Any]:
    """The recompute method, N and modules as Megatron-LM reads them
    (NVIDIA/Megatron-LM@d98e8a64 megatron/core/recompute.py ``checkpointed_forward``:
    uniform chunks of N layers, each chunk's input kept; block: the first N layers of each
    stage checkpointed, the rest run without; transformer_config.py ``recompute_modules``,
    default ["core_attn"]). Only what the granularity uses is set."""
    granularity, method, n = (
        args.recompute_granularity,
        args.recompute_method,
        args.recompute_num_layers,
    )
    if granularity == "full":
        placement = "partitioned" if args.distribute_saved_activations else "gpu"
        if method not in (None, "uniform", "block"):
            raise StackConfigError(f"{source}: --recompute-method {method!r}")
        if method == "block" and n is None:
            raise StackConfigError(
                f"{source}: --recompute-method block needs --recompute-num-layers"
            )
        return {
            "training.recompute_checkpoint": placement,
            "training.recompute_method": method or "uniform",
            "training.recompute_layers": None if (n in (None, 1) and method != "block") else n,
        }
    if granularity == "selective" and args.recompute_modules is not None:
        known = set(MEGATRON_RECOMPUTE_MODULES)
        unknown = [m for m in args.recompute_modules if m not in known]
        if unknown:
            raise StackConfigError(
                f"{source}: --recompute-modules {' '.join(unknown)}: the planner prices "
                f"{', '.join(MEGATRON_RECOMPUTE_MODULES)}"
            )
        return {"training.recompute_modules": tuple(args.recompute_modules)}
    return {}


def _low_precision_of(args: argparse.Namespace) -> str | None:
    """The recipe that ``--fp8-format``/``--fp8-recipe`` or ``--fp4-format`` name (Megatron's
    default FP8 recipe is delayed, its FP4 one nvfp4), or None."""
    if args.fp4_format:
        return "nvfp4"
    if not args.fp8_format:
        return None
    recipe = args.fp8_recipe or "delayed"
    known = {
        "delayed": "fp8_delayed",
        "tensorwise": "fp8_current",
        "mxfp8": "mxfp8",
        "blockwise": "fp8_blockwise",
    }
    if recipe not in known:
        raise StackConfigError(f"--fp8-recipe {recipe!r} is not one of {', '.join(known)}")
    return known[recipe]


def _batch_fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for value, path in (
        (args.micro_batch_size, "training.micro_batch"),
        (args.global_batch_size, "parallelism.global_batch"),
        (args.seq_length, "training.seq_len"),
    ):
        if value:
            fields[path] = value
    recipe = _low_precision_of(args)
    if recipe is not None:
        fields["training.precision"] = recipe
    elif args.fp16:
        fields["training.precision"] = "mixed_fp16"
    elif args.bf16:
        grads = args.accumulate_allreduce_grads_in_fp32
        fields["training.precision"] = "mixed_bf16_fp32_grads" if grads else "mixed_bf16"
    else:
        fields["training.precision"] = "fp32"
    if args.cpu_offloading_num_layers:
        fields["training.activation_offload_layers"] = args.cpu_offloading_num_layers
    if args.grad_reduce_in_bf16:
        fields["training.grad_reduce_16bit"] = True
    if recipe is not None and (args.fp8_param_gather or args.fp4_param_gather):
        fields["training.low_precision_params"] = True
    optimizer = {"adam": "adamw", "sgd": "sgd"}.get(args.optimizer or "")
    bf16_moments = args.exp_avg_dtype == "bf16" and args.exp_avg_sq_dtype == "bf16"
    if args.optimizer in (None, "adam") and args.use_precision_aware_optimizer and bf16_moments:
        optimizer = "adamw_bf16_moments"  # Adam is Megatron-LM's default --optimizer
    if optimizer:
        fields["training.optimizer"] = optimizer
    return fields


GPT2_BPE_VOCAB = 50257
"""GPT-2's BPE vocabulary (Radford et al. 2019; its encoder.json / gpt2-vocab.json), before
Megatron pads it to a multiple of 128 × tp (``--make-vocab-size-divisible-by``)."""


def _vocab_of(args: argparse.Namespace) -> int | None:
    """The vocabulary the tokenizer arguments name: GPT-2's BPE for ``--tokenizer-type
    GPT2BPETokenizer`` or a ``--merge-file`` (the BPE merges only that tokenizer reads,
    NVIDIA/Megatron-LM megatron/training/tokenizer/tokenizer.py ``_GPT2BPETokenizer(
    vocab_file, merge_file)``); None otherwise."""
    if args.tokenizer_type == "GPT2BPETokenizer" or (
        args.tokenizer_type is None and args.merge_file is not None
    ):
        return GPT2_BPE_VOCAB
    return None


def parse(text: str, source: str) -> ImportedConfig:
    """Megatron-LM arguments (a bash array file or a command line) as scenario fields."""
    text = resolve_shell(text)
    tokens = tokens_of(text)
    try:
        args, rest = _parser().parse_known_args(tokens)
    except argparse.ArgumentError as error:
        raise StackConfigError(f"{source}: {error}") from None
    given = {k for k, v in vars(args).items() if v not in (None, False)}
    read = sorted(f"--{k.replace('_', '-')}" for k in given)
    ignored = {t for t in rest if t.startswith("--")}
    fields = _layout_fields(args, source) | _batch_fields(args)
    nodes = re.search(r"--nnodes[ =](\d+)", text)
    per_node = re.search(r"--nproc[-_]per[-_]node[ =](\d+)", text)
    if nodes and per_node:  # torchrun's own arguments, on the launch line
        fields["num_gpus"] = int(nodes.group(1)) * int(per_node.group(1))
        fields["parallelism.gpus_per_node"] = int(per_node.group(1))
        read += ["--nnodes", "--nproc-per-node"]
        ignored -= {"--nnodes", "--nproc-per-node", "--nproc_per_node"}
    hint = {
        k: v
        for k, v in {
            "layers": args.num_layers,
            "hidden_size": args.hidden_size,
            "heads": args.num_attention_heads,
            "ffn_size": args.ffn_hidden_size,
            "kv_heads": args.num_query_groups if args.group_query_attention else None,
            "max_context": args.max_position_embeddings,
            "vocab_size": _vocab_of(args),
        }.items()
        if v
    }
    return ImportedConfig(
        stack=STACK,
        fields=fields,
        model=match_preset(hint),
        read=tuple(read),
        ignored=tuple(sorted(ignored)),
        arch_hint=hint,
    )


def looks_like(text: str) -> bool:
    return "--tensor-model-parallel-size" in text or "--pipeline-model-parallel-size" in text
