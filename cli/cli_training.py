"""Command-line options of the training-memory tab (issue 4), for ``report`` and ``search``.

The one-field options (``--precision``, ``--optimizer``, ``--seq-len``, ``--micro-batch``,
``--flash-attention``, ``--dropout``, ``--lora-rank``, ``--qlora``, ``--implementation``,
``--cuda-context``, ``--fragmentation``) are generated from their descriptions
(:data:`llm_planner.core.inputs.registry.INPUTS`). Written here: ``--recompute
none|selective|full|threshold:BYTES`` (two fields), ``--lora-targets q,v,...`` (a list) and
``--stack S`` (the stack and its default activation profile, unless ``--implementation`` is
given or the profile was edited).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from llm_planner.cli_common import NamesHelp

OPTION_OF_FIELD = {
    "training.recompute": "--recompute",
    "training.recompute_threshold_bytes": "--recompute",
    "training.lora_targets": "--lora-targets",
    "training.stack": "--stack",
}

STACK_ALIASES = {"accelerate": "hf", "megatron-core": "megatron", "fsdp2": "torchtitan"}
"""Other names of a stack (``export-config --stack accelerate`` names the format)."""


def _recompute(text: str) -> tuple[str, float | None]:
    """``none``, ``selective``, ``full`` or ``threshold:BYTES`` (e.g. threshold:64MiB), the
    bytes read as the window's threshold field reads them."""
    from llm_planner.core.inputs.registry import input_at

    kind, _, size = text.partition(":")
    kind = kind.strip().lower()
    if kind in ("none", "selective", "full") and not size:
        return kind, None
    if kind == "threshold" and size:
        try:
            value = input_at("training.recompute_threshold_bytes").parse(size)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None
        return kind, value
    raise argparse.ArgumentTypeError(
        f"{text!r} is not one of none, selective, full, threshold:BYTES"
    )


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


def add_options(group: Any) -> None:
    """The training options that are not one described field each."""
    group.add_argument(
        "--recompute",
        type=_recompute,
        metavar="none|selective|full|threshold:BYTES",
        help="activation recomputation policy",
    )
    group.add_argument(
        "--lora-targets",
        type=_targets,
        metavar="LIST",
        help="matrices LoRA adapts, comma-separated among q,k,v,o,gate,up,down",
    )
    group.add_argument(
        "--stack",
        type=_stack,
        metavar="S",
        help=NamesHelp(
            "training stack the run is launched with (default megatron; a "
            "Hugging Face config import: hf)",
            _stacks,
        ),
    )


def apply_options(args: argparse.Namespace, base: Any, earlier: dict[str, Any]) -> dict[str, Any]:
    """The changes the hand-written training options make; ``earlier``: the changes made
    before them (an imported model's stack), which ``--stack`` moves from."""
    changes: dict[str, Any] = {}
    stack = getattr(args, "stack", None)
    if stack is not None:
        from llm_planner.core.inputs.training import stack_fields

        fields = stack_fields(
            stack,
            current_stack=str(earlier.get("training.stack", base.training.stack)),
            current_implementation=earlier.get(
                "training.implementation", base.training.implementation
            ),
        )
        changes.update({f"training.{key}": value for key, value in fields.items()})
    targets = getattr(args, "lora_targets", None)
    if targets is not None:
        changes["training.lora_targets"] = list(targets)
    recompute = getattr(args, "recompute", None)
    if recompute is not None:
        changes["training.recompute"], changes["training.recompute_threshold_bytes"] = recompute
    return changes
