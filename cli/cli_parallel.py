"""Command-line options of the parallelism tab, for ``report`` and ``search``.

The one-field options (``--tp``, ``--pp``, ``--dp``, ``--ep``, ``--sequence-parallel``,
``--global-batch``, ``--gpus-per-node``, the bandwidths, efficiencies and overlaps,
``--measured GPUS:TOKENS_PER_S``) are generated from their descriptions
(:data:`llm_planner.core.inputs.registry.INPUTS`). Written here: ``--zero 0|1|2|3``,
``--fsdp NAME`` and ``--schedule gpipe|1f1b|interleaved:V`` (two fields).
"""

from __future__ import annotations

import argparse
from typing import Any

OPTION_OF_FIELD = {
    "parallelism.zero_stage": "--zero",
    "parallelism.fsdp_strategy": "--fsdp",
    "parallelism.schedule": "--schedule",
    "parallelism.interleave_chunks": "--schedule",
}

FSDP_NAMES = ("NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD")


def _schedule(text: str) -> tuple[str, int]:
    """``gpipe``, ``1f1b`` or ``interleaved:V`` (V ≥ 2 model chunks per GPU, read by the
    window's field's parser)."""
    from llm_planner.core.inputs.registry import input_at

    kind, _, chunks = text.strip().lower().partition(":")
    if kind in ("gpipe", "1f1b") and not chunks:
        return kind, 1
    if kind == "interleaved" and chunks:
        try:
            return kind, int(input_at("parallelism.interleave_chunks").parse(chunks))
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None
    raise argparse.ArgumentTypeError(f"{text!r} is not one of gpipe, 1f1b, interleaved:V")


def _zero(text: str) -> int:
    if text.strip() not in ("0", "1", "2", "3"):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of 0, 1, 2, 3")
    return int(text)


def _fsdp(text: str) -> str:
    name = text.strip().upper()
    if name not in FSDP_NAMES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(FSDP_NAMES)}")
    return name


def add_options(group: Any) -> None:
    """The parallelism options that are not one described field each."""
    group.add_argument("--zero", type=_zero, metavar="0|1|2|3", help="ZeRO stage")
    group.add_argument(
        "--fsdp", type=_fsdp, metavar="NAME", help=f"FSDP strategy: {', '.join(FSDP_NAMES)}"
    )
    group.add_argument(
        "--schedule",
        type=_schedule,
        metavar="gpipe|1f1b|interleaved:V",
        help="pipeline schedule",
    )


def apply_options(args: argparse.Namespace, base: Any, earlier: dict[str, Any]) -> dict[str, Any]:
    """The changes the hand-written parallelism options make."""
    del base, earlier  # each sets its own fields only
    changes: dict[str, Any] = {}
    if getattr(args, "zero", None) is not None:
        changes["parallelism.zero_stage"] = args.zero
    if getattr(args, "fsdp", None) is not None:
        changes["parallelism.fsdp_strategy"] = args.fsdp
    schedule = getattr(args, "schedule", None)
    if schedule is not None:
        changes["parallelism.schedule"], changes["parallelism.interleave_chunks"] = schedule
    return changes


# ------------------------------------------------------------------ search command
