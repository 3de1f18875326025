"""Command-line options of the training-memory tab (issue 4), for ``report`` and ``search``.

``--precision P``, ``--optimizer O``, ``--seq-len N``, ``--micro-batch N``,
``--recompute none|selective|full|threshold:BYTES``, ``--flash-attention`` /
``--no-flash-attention``, ``--lora-rank N``, ``--qlora``, ``--lora-targets q,v,...``,
``--dropout`` / ``--no-dropout``, ``--implementation NAME``, ``--cuda-context BYTES``,
``--fragmentation F``, ``--stack S``. Each writes one field of ``scenario.training``
(``--stack`` also its default activation profile, unless ``--implementation`` is given or
the profile was edited); the scenario is validated as a whole afterwards.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from llm_planner.cli_common import INT, LENGTH, UsageError, echo_reading
from llm_planner.core.primitives import units

OPTION_OF_FIELD = {
    "training.precision": "--precision",
    "training.optimizer": "--optimizer",
    "training.seq_len": "--seq-len",
    "training.micro_batch": "--micro-batch",
    "training.recompute": "--recompute",
    "training.recompute_threshold_bytes": "--recompute",
    "training.flash_attention": "--flash-attention",
    "training.lora_rank": "--lora-rank",
    "training.qlora": "--qlora",
    "training.lora_targets": "--lora-targets",
    "training.dropout": "--dropout",
    "training.implementation": "--implementation",
    "training.cuda_context_bytes": "--cuda-context",
    "training.fragmentation_fraction": "--fragmentation",
    "training.stack": "--stack",
}

STACK_ALIASES = {"accelerate": "hf", "megatron-core": "megatron", "fsdp2": "torchtitan"}
"""Other names of a stack (``export-config --stack accelerate`` names the format)."""


def _recompute(text: str) -> tuple[str, float | None]:
    """``none``, ``selective``, ``full`` or ``threshold:BYTES`` (e.g. threshold:64MiB)."""
    kind, _, size = text.partition(":")
    kind = kind.strip().lower()
    if kind in ("none", "selective", "full") and not size:
        return kind, None
    if kind == "threshold" and size:
        try:
            value = units.parse_bytes(size)
        except (units.UnitError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"threshold {size!r} must be positive")
        return kind, value
    raise argparse.ArgumentTypeError(
        f"{text!r} is not one of none, selective, full, threshold:BYTES"
    )


def _allowance(text: str) -> float:
    """A fraction in [0, 1], or a percentage (5%)."""
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in [0, 1] (or a percentage)")
    return value


def _size(text: str) -> float:
    try:
        return units.parse_bytes(text)
    except (units.UnitError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None


def _stack(text: str) -> str:
    """A training stack id (core.quantities.stacks.STACKS) or an alias of one."""
    from llm_planner.core.quantities.stacks import STACKS

    key = text.strip().lower()
    key = STACK_ALIASES.get(key, key)
    if key not in STACKS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a training stack; one of {', '.join(STACKS)}"
        )
    return key


def _stacks() -> Iterable[str]:
    from llm_planner.core.quantities.stacks import STACK_NAMES

    return [f"{k} ({v})" for k, v in STACK_NAMES.items()]


def _targets(text: str) -> tuple[str, ...]:
    return tuple(part.strip().lower() for part in text.split(",") if part.strip())


class _NamesHelp(str):
    """A help text ending in a catalog's names, looked up only when the help is printed.

    argparse expands a help text with ``help % params`` when it prints it; the names come
    from modules (the activation profiles import numpy) that ``--version``, ``presets`` or
    ``list`` have no use for, so building the parser must not import them.
    """

    names: Callable[[], Iterable[str]]

    def __new__(cls, text: str, names: Callable[[], Iterable[str]]) -> _NamesHelp:
        help_text = super().__new__(cls, text)
        help_text.names = names
        return help_text

    def __mod__(self, params: Any) -> str:
        text: str = f"{self}: {', '.join(self.names())}" % params
        return text


def _precisions() -> Iterable[str]:
    from llm_planner.core.quantities.optimizers import PRECISIONS

    return PRECISIONS


def _optimizers() -> Iterable[str]:
    from llm_planner.core.quantities.optimizers import OPTIMIZERS

    return OPTIMIZERS


def _profiles() -> Iterable[str]:
    from llm_planner.core.quantities.activations import PROFILES

    return PROFILES


def add_options(parser: argparse.ArgumentParser) -> None:
    """The training-memory option group of ``report``."""
    group = parser.add_argument_group("training memory")
    group.add_argument(
        "--precision",
        metavar="P",
        help=_NamesHelp(
            "precision recipe; the stacks' names are read as they mean them and echoed "
            "(bf16, bf16-mixed, bfloat16: mixed_bf16; fp16, 16-mixed: mixed_fp16; "
            "bf16-true: pure_bf16)",
            _precisions,
        ),
    )
    group.add_argument("--optimizer", metavar="O", help=_NamesHelp("optimizer", _optimizers))
    group.add_argument("--seq-len", type=LENGTH, metavar="N", help="training sequence length")
    group.add_argument("--micro-batch", type=INT, metavar="N", help="sequences per micro-batch")
    group.add_argument(
        "--recompute",
        type=_recompute,
        metavar="none|selective|full|threshold:BYTES",
        help="activation recomputation policy",
    )
    group.add_argument(
        "--flash-attention",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fused attention kernel (no s² tensors saved)",
    )
    group.add_argument(
        "--dropout",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="dropout on attention probabilities and residuals",
    )
    group.add_argument("--lora-rank", type=INT, metavar="N", help="LoRA fine-tuning rank")
    group.add_argument(
        "--lora-targets",
        type=_targets,
        metavar="LIST",
        help="matrices LoRA adapts, comma-separated among q,k,v,o,gate,up,down",
    )
    group.add_argument(
        "--qlora", action="store_true", default=None, help="4-bit NF4 frozen base (QLoRA)"
    )
    group.add_argument(
        "--implementation",
        metavar="NAME",
        help=_NamesHelp("activation-ledger profile", _profiles),
    )
    group.add_argument(
        "--stack",
        type=_stack,
        metavar="S",
        help=_NamesHelp(
            "training stack the run is launched with (default megatron; a "
            "Hugging Face config import: hf)",
            _stacks,
        ),
    )
    group.add_argument(
        "--cuda-context",
        type=_size,
        metavar="BYTES",
        help="allowance for the CUDA context and workspaces per GPU (default 1 GB)",
    )
    group.add_argument(
        "--fragmentation",
        type=_allowance,
        metavar="F",
        help="allocator fragmentation allowance, fraction of allocated bytes (default 0.05)",
    )


def apply_options(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the given training options into the scenario dict."""
    training: dict[str, Any] = data.setdefault("training", {})
    stack = getattr(args, "stack", None)
    if stack is not None:  # first: an --implementation given below overrides its profile
        from llm_planner.core.inputs.training import stack_fields

        training.update(
            stack_fields(
                stack,
                current_stack=str(training.get("stack", "megatron")),
                current_implementation=training.get("implementation"),
            )
        )
    precision = getattr(args, "precision", None)
    if precision is not None:
        from llm_planner.core.quantities.optimizers import resolve_precision

        try:
            recipe, reading = resolve_precision(precision)
        except ValueError as error:
            raise UsageError(f"argument --precision: {error}") from None
        training["precision"] = recipe.id
        echo_reading("--precision", reading)
    simple = {
        "optimizer": "optimizer",
        "seq_len": "seq_len",
        "micro_batch": "micro_batch",
        "flash_attention": "flash_attention",
        "dropout": "dropout",
        "lora_rank": "lora_rank",
        "lora_targets": "lora_targets",
        "qlora": "qlora",
        "implementation": "implementation",
        "cuda_context": "cuda_context_bytes",
        "fragmentation": "fragmentation_fraction",
    }
    for option, field in simple.items():
        value = getattr(args, option, None)
        if value is not None:
            training[field] = list(value) if isinstance(value, tuple) else value
    recompute = getattr(args, "recompute", None)
    if recompute is not None:
        training["recompute"], training["recompute_threshold_bytes"] = recompute
