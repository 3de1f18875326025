"""Command-line options of the parallelism tab, for ``report`` and ``search``.

``report`` gains ``--zero 0|1|2|3``, ``--fsdp NAME``, ``--tp N``, ``--pp N``, ``--dp N``,
``--ep N``, ``--sequence-parallel``, ``--global-batch N``, ``--gpus-per-node N``,
``--schedule gpipe|1f1b|interleaved:V``, ``--inter-node-bandwidth BYTES_PER_S``,
``--kernel-efficiency F`` and ``--measured GPUS:TOKENS_PER_S`` (repeatable). Each writes
one field of ``scenario.parallelism``.

"""

from __future__ import annotations

import argparse
from typing import Any

from llm_planner.cli_common import FRACTION, INT
from llm_planner.core.primitives import units

OPTION_OF_FIELD = {
    "parallelism.zero_stage": "--zero",
    "parallelism.fsdp_strategy": "--fsdp",
    "parallelism.tp": "--tp",
    "parallelism.pp": "--pp",
    "parallelism.dp": "--dp",
    "parallelism.expert_parallel": "--ep",
    "parallelism.sequence_parallel": "--sequence-parallel",
    "parallelism.global_batch": "--global-batch",
    "parallelism.gpus_per_node": "--gpus-per-node",
    "parallelism.schedule": "--schedule",
    "parallelism.interleave_chunks": "--schedule",
    "parallelism.inter_node_bandwidth_bytes_per_s": "--inter-node-bandwidth",
    "parallelism.kernel_efficiency": "--kernel-efficiency",
    "parallelism.measured_points": "--measured",
}

FSDP_NAMES = ("NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD")


def _schedule(text: str) -> tuple[str, int]:
    """``gpipe``, ``1f1b`` or ``interleaved:V`` (V ≥ 2 virtual stages per GPU)."""
    kind, _, chunks = text.strip().lower().partition(":")
    if kind in ("gpipe", "1f1b") and not chunks:
        return kind, 1
    if kind == "interleaved" and chunks:
        try:
            v = int(chunks)
        except ValueError:
            v = 0
        if v >= 2:
            return kind, v
        raise argparse.ArgumentTypeError(f"interleaved needs V ≥ 2 chunks, got {chunks!r}")
    raise argparse.ArgumentTypeError(f"{text!r} is not one of gpipe, 1f1b, interleaved:V")


def _bandwidth(text: str) -> float:
    """Bytes per second, as :func:`units.parse_bandwidth` reads it (the window's parser):
    ``400GB/s``, ``3.2e12`` bytes/s; ``400Gbps``, ``400 Gb/s`` bits."""
    try:
        value = units.parse_bandwidth(text)
    except (units.UnitError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _measured(text: str) -> tuple[int, float]:
    """``GPUS:TOKENS_PER_S``, e.g. ``512:1.2M``."""
    gpus, sep, rate = text.partition(":")
    try:
        n = units.parse_int_count(gpus)
        r = units.parse_count(rate)
    except (units.UnitError, ValueError):
        n, r = 0, 0.0
    if not sep or n < 1 or r <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not GPUS:TOKENS_PER_S (e.g. 512:1.2M)")
    return n, r


def _zero(text: str) -> int:
    if text.strip() not in ("0", "1", "2", "3"):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of 0, 1, 2, 3")
    return int(text)


def _fsdp(text: str) -> str:
    name = text.strip().upper()
    if name not in FSDP_NAMES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(FSDP_NAMES)}")
    return name


def add_options(parser: argparse.ArgumentParser) -> None:
    """The parallelism option group (report and search)."""

    group = parser.add_argument_group("parallelism")
    group.add_argument("--zero", type=_zero, metavar="0|1|2|3", help="ZeRO stage")
    group.add_argument(
        "--fsdp", type=_fsdp, metavar="NAME", help=f"FSDP strategy: {', '.join(FSDP_NAMES)}"
    )
    group.add_argument("--tp", type=INT, metavar="N", help="tensor-parallel degree")
    group.add_argument("--pp", type=INT, metavar="N", help="pipeline-parallel degree")
    group.add_argument("--dp", type=INT, metavar="N", help="data-parallel degree")
    group.add_argument("--ep", type=INT, metavar="N", help="expert-parallel degree (MoE)")
    group.add_argument(
        "--sequence-parallel",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Megatron sequence parallelism (with tp > 1)",
    )
    group.add_argument("--global-batch", type=INT, metavar="N", help="sequences per optimizer step")
    group.add_argument("--gpus-per-node", type=INT, metavar="N", help="GPUs in one node")
    group.add_argument(
        "--schedule",
        type=_schedule,
        metavar="gpipe|1f1b|interleaved:V",
        help="pipeline schedule",
    )
    group.add_argument(
        "--inter-node-bandwidth",
        type=_bandwidth,
        metavar="BYTES_PER_S",
        help="network per node, one direction: 400GB/s (bytes) or 3200Gbps, 3.2 Tb/s (bits); "
        "default 400GB/s = 8 × 400 Gb/s",
    )
    group.add_argument(
        "--kernel-efficiency",
        type=FRACTION,
        metavar="F",
        help="share of peak FLOP/s the kernels reach (default 0.70)",
    )
    group.add_argument(
        "--measured",
        type=_measured,
        action="append",
        metavar="GPUS:TOKENS_PER_S",
        help="a measured point for the scaling curve (repeatable)",
    )


def apply_options(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the given parallelism options into the scenario dict."""
    par: dict[str, Any] = data.setdefault("parallelism", {})
    simple = {
        "zero": "zero_stage",
        "fsdp": "fsdp_strategy",
        "tp": "tp",
        "pp": "pp",
        "dp": "dp",
        "ep": "expert_parallel",
        "sequence_parallel": "sequence_parallel",
        "global_batch": "global_batch",
        "gpus_per_node": "gpus_per_node",
        "inter_node_bandwidth": "inter_node_bandwidth_bytes_per_s",
        "kernel_efficiency": "kernel_efficiency",
    }
    for option, field in simple.items():
        value = getattr(args, option, None)
        if value is not None:
            par[field] = value
    schedule = getattr(args, "schedule", None)
    if schedule is not None:
        par["schedule"], par["interleave_chunks"] = schedule
    measured = getattr(args, "measured", None)
    if measured:
        par["measured_points"] = [list(point) for point in measured]


# ------------------------------------------------------------------ search command
