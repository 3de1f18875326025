"""Each scalar scenario input described once: its path, label, unit (parser and formatter),
help, command-line flag and whether it may be empty.

The command line's scenario options are generated from :data:`INPUTS`
(:mod:`llm_planner.cli_scenario`) and the window's form rows parse and format through the
same entries (:meth:`llm_planner.gui.tabs.base.Tab.input`), so ``16k`` GPUs, ``400 GB/sec``
or ``400`` TFLOP/s mean the same on both faces. Which abbreviations a unit reads:

- GPU counts, parallel degrees, sequence lengths and contexts: ``k`` = 1024 (``8k`` = 8,192,
  ``16k`` GPUs = 16,384; :func:`.units.parse_length`);
- tokens, parameters, FLOPs, rates and batch sizes: decimal (``1.4T``, ``2k`` = 2,000);
- bytes: ``80 GB`` (10^9) or ``80 GiB`` (2^30); bandwidth: bytes per second (``400 GB/s``,
  ``/sec`` or ``ps``), or bits with a lower-case ``b`` (``400 Gb/s``, ``400 Gbps`` = 50 GB/s);
- fractions: ``0.4`` or ``40%``; TFLOP/s: a bare number is TFLOP/s (``400``), or a stated
  unit (``4e14 FLOP/s``, ``0.4 PFLOP/s``).

Ranges are not the parsers' business: every value goes through the scenario's validation
(:mod:`.primitives.limits`), on both faces. This module imports only ``units``: building
the command-line parser must not import the estimators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from llm_planner.core.primitives import units

Kind = Literal["text", "choice", "switch"]
"""How an input is given: typed text read by its unit, one of a catalog's ids, or on/off."""


@dataclass(frozen=True)
class Unit:
    """How one kind of quantity is read from text and written back (both faces)."""

    name: str
    parse: Callable[[str, str], Any]
    """(text, the input's label for messages) → the value in SI units; raises ValueError."""
    format: Callable[[Any], str]
    metavar: str


@dataclass(frozen=True)
class Input:
    """One scenario input, described once."""

    path: str
    """Dotted scenario path (``"training.seq_len"``)."""
    label: str
    """The window's row label; error messages name it."""
    help: str
    """One line for ``--help`` and the window's tooltip."""
    unit: Unit | None = None
    """How typed text is read (``kind == "text"``)."""
    kind: Kind = "text"
    flag: str | None = None
    """The command-line option; None: set on the command line another way (see ``cli``)."""
    group: str = ""
    """The ``--help`` group the option is listed in."""
    metavar: str = ""
    optional: bool = False
    """Empty text in the window means None (the default the help names)."""
    also: Mapping[str, Any] = field(default_factory=dict)
    """Other fields set with it (``--tflops`` also chooses the measured-TFLOP/s source)."""
    exclusive: str = ""
    """Options sharing a name here are mutually exclusive on the command line."""
    repeat: bool = False
    """The option may be given more than once; the values join into one list."""
    negatable: bool = True
    """A switch also has ``--no-…``."""
    cli: str = ""
    """For an input without its own flag: how the command line writes it, ``{}`` standing
    for the text (``--recompute threshold:{}``)."""
    names: Callable[[], Iterable[str]] | None = None
    """A choice's known ids, looked up only when ``--help`` is printed."""
    fmt: Callable[[Any], str] | None = None
    """How the window shows the value, when not the unit's own formatter."""

    def parse(self, text: str) -> Any:
        """The value ``text`` means (a ValueError, e.g. :class:`.units.UnitError`, when it
        means none); for a choice the text itself, validated with the scenario."""
        if self.unit is None:
            return text.strip()
        return self.unit.parse(text, self.label)

    def format(self, value: Any) -> str:
        """The value as the window shows it (parses back to the same value)."""
        if self.fmt is not None:
            return self.fmt(value)
        return self.unit.format(value) if self.unit is not None else str(value)

    @property
    def dest(self) -> str:
        """argparse's attribute name for the flag (``--seq-len`` → ``seq_len``)."""
        return (self.flag or "").lstrip("-").replace("-", "_")


# ------------------------------------------------------------------ parsers


def parse_length(text: str, what: str) -> int:
    """A GPU count, parallel degree, sequence length or context (``k`` = 1024)."""
    return units.parse_length(text, what)


def parse_whole(text: str, what: str) -> int:
    """A whole number of sequences or a rank (``k`` = 1000)."""
    try:
        return units.parse_int_count(text, what)
    except units.UnitError:
        raise units.UnitError(
            f"{what}: {text.strip()!r} is not a whole number; write e.g. 1, 4, 16"
        ) from None


def parse_chunks(text: str, what: str) -> int:
    """Model chunks per GPU of the interleaved schedule: a whole number, at least 2 (one
    chunk per GPU is no interleaving; Narayanan et al. 2021 section 2.2.2)."""
    value = parse_whole(text, what)
    if value < 2:
        raise units.UnitError(f"{what}: interleaving needs v ≥ 2 model chunks per GPU")
    return value


def parse_count(text: str, what: str) -> float:
    """Tokens, parameters, FLOPs, a rate (decimal suffixes k, M, B, T, P)."""
    return units.parse_count(text, what)


def parse_fraction(text: str, what: str) -> float:
    """``0.4`` or ``40%`` → 0.4."""
    stripped = text.strip()
    if stripped.endswith("%"):
        return units.parse_count(stripped[:-1], what) / 100
    return units.parse_count(stripped, what)


def format_fraction(value: float) -> str:
    return f"{value:.4g}"


def format_int(value: Any) -> str:
    return str(int(value))


def format_count(value: Any) -> str:
    return units.format_count(float(value), digits=4)


def format_bytes_input(value: float) -> str:
    """An allowance as it was most likely meant: a whole number of GiB shows as GiB
    (``1 GiB``, the inference default), anything else in GB (``1.000 GB``). Explicit
    either way, so the same 2^30 bytes never reads 1.074 GB on one tab and 1 GiB on another."""
    gib = value / units.GiB
    if value and gib == round(gib):
        return f"{round(gib)} GiB"
    return units.format_gb(value, digits=4)


def parse_bytes(text: str, what: str) -> float:
    return units.parse_bytes(text, what)


def parse_bandwidth(text: str, what: str) -> float:
    """Bytes per second, or bits as network links are sold (``400 Gb/s`` = ``400 Gbps`` =
    50e9 bytes per second): :func:`.units.parse_bandwidth`, the one reader of data rates."""
    return units.parse_bandwidth(text, what)


def format_bandwidth(value: float) -> str:
    return f"{units.format_gb(value, digits=4)}/s"


_FLOPS_UNITS = {
    "": 1e12,
    "flop/s": 1.0,
    "flops": 1.0,
    "gflop/s": 1e9,
    "gflops": 1e9,
    "tflop/s": 1e12,
    "tflops": 1e12,
    "pflop/s": 1e15,
    "pflops": 1e15,
}


def parse_tflops(text: str, what: str) -> float:
    """Achieved FLOP/s per GPU, typed in TFLOP/s: ``400`` → 4e14 FLOP/s. A stated unit is
    read as stated (``4e14 FLOP/s``, ``0.4 PFLOP/s``, ``400 TFLOPS``); a bare number is
    always TFLOP/s, however large (no guessing)."""
    compact = text.strip().replace(" ", "")
    for unit in sorted(_FLOPS_UNITS, key=len, reverse=True):
        if unit and compact.lower().endswith(unit):
            return units.parse_count(compact[: -len(unit)], what) * _FLOPS_UNITS[unit]
    return units.parse_count(compact, what) * _FLOPS_UNITS[""]


def format_tflops(value: float) -> str:
    return f"{value / 1e12:.4g}"


def parse_points(text: str, what: str) -> list[tuple[int, float]]:
    """``64: 1.1M, 256: 4.2M`` → [(64, 1.1e6), (256, 4.2e6)]: GPUs (``k`` = 1024, as every
    GPU count) and tokens/s (decimal); ``,`` or ``;`` between points."""
    points: list[tuple[int, float]] = []
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        gpus, sep, rate = part.partition(":")
        if not sep:
            raise units.UnitError(
                f"{what}: {part.strip()!r} is not GPUs: tokens/s; write e.g. 64: 1.1M"
            )
        points.append((units.parse_length(gpus, "GPUs"), units.parse_count(rate, "tokens/s")))
    return points


def format_points(points: Any) -> str:
    return ", ".join(f"{g}: {units.format_count(r, 4)}" for g, r in points or [])


def parse_price(text: str, what: str) -> float:
    return units.parse_price_per_hour(text, what)


def format_price(value: float) -> str:
    return f"{value:.4g}"


def parse_usd(text: str, what: str) -> float:
    return units.parse_usd(text, what)


def parse_duration(text: str, what: str) -> float:
    return units.parse_duration(text, what)


LENGTH = Unit("length", parse_length, format_int, "N")
WHOLE = Unit("whole", parse_whole, format_int, "N")
CHUNKS = Unit("chunks", parse_chunks, format_int, "V")
COUNT = Unit("count", parse_count, format_count, "N")
FRACTION = Unit("fraction", parse_fraction, format_fraction, "F")
BYTES = Unit("bytes", parse_bytes, format_bytes_input, "BYTES")
BANDWIDTH = Unit("bandwidth", parse_bandwidth, format_bandwidth, "BYTES_PER_S")
PRICE = Unit("price", parse_price, format_price, "USD_PER_GPU_HOUR")
USD = Unit("usd", parse_usd, format_count, "USD")
DURATION = Unit("duration", parse_duration, units.format_duration, "TIME")
TFLOPS = Unit("tflops", parse_tflops, format_tflops, "F")
POINTS = Unit("points", parse_points, format_points, "GPUS:TOKENS_PER_S")


# ------------------------------------------------------------------ the inputs

MODEL = "model and hardware"
COMPUTE = "compute budget"
INFERENCE = "inference memory"
SCHEDULE = "schedule, budget and failures"
TRAINING = "training memory"
PARALLEL = "parallelism"


def _names(module: str, attribute: str) -> Callable[[], Iterable[str]]:
    """A catalog's ids, imported when ``--help`` prints them (the catalogs import numpy)."""

    def names() -> Iterable[str]:
        import importlib

        catalog: Mapping[str, Any] = getattr(importlib.import_module(module), attribute)
        return list(catalog)

    return names


def _format_gb(value: float) -> str:
    return units.format_gb(value, 4)


def _format_3g(value: float) -> str:
    return f"{value:.3g}"


INPUTS: tuple[Input, ...] = (
    # model and hardware
    Input(
        "num_gpus",
        "GPUs",
        "GPUs used for training, e.g. 512 or 2k",
        LENGTH,
        flag="--num-gpus",
        group=MODEL,
    ),
    Input(
        "gpu.memory_bytes",
        "GPU memory",
        "memory per GPU as sold (e.g. 80 GB, or 80 GiB): a custom GPU",
        BYTES,
        flag="--gpu-memory",
        group=MODEL,
        also={"gpu.custom": True},
        fmt=_format_gb,
    ),
    Input(
        "model.params_override",
        "Parameters",
        "use exactly this many parameters in every P-based formula (e.g. 13B; none: the "
        "architecture's own count)",
        COUNT,
        optional=True,
        cli="--params {}",
    ),
    # compute budget
    Input(
        "compute.tokens",
        "Tokens",
        "training tokens D (e.g. 15T, 1.4T, 300B)",
        COUNT,
        flag="--tokens",
        group=COMPUTE,
    ),
    Input(
        "compute.mfu",
        "MFU",
        "assumed model FLOPs utilisation, 0-1 or a percentage (40%)",
        FRACTION,
        flag="--mfu",
        group=COMPUTE,
        exclusive="rate",
        also={"compute.throughput_mode": "mfu"},
    ),
    Input(
        "compute.achieved_flops_per_gpu",
        "TFLOP/s per GPU",
        "measured achieved TFLOP/s per GPU (400, or 4e14 FLOP/s)",
        TFLOPS,
        flag="--tflops",
        group=COMPUTE,
        exclusive="rate",
        optional=True,
        also={"compute.throughput_mode": "tflops"},
    ),
    Input(
        "compute.tokens_per_s_per_gpu",
        "Tokens/s per GPU",
        "measured training tokens/s per GPU",
        COUNT,
        flag="--tokens-per-sec-per-gpu",
        group=COMPUTE,
        exclusive="rate",
        optional=True,
        also={"compute.throughput_mode": "tokens_per_s"},
    ),
    Input(
        "compute.price_usd_per_gpu_hour",
        "$ per GPU-hour",
        "price per GPU-hour (e.g. 2.5 or $2.50/h); a price given is kept for any GPU "
        "(without one it follows the GPU from the price list)",
        PRICE,
        flag="--price",
        group=COMPUTE,
        also={"compute.price_follows_gpu": False},
    ),
    # inference memory
    Input(
        "inference.weights_format",
        "Weights",
        "weights dtype or quantized format (bf16, fp8, int4, q4_k_m...)",
        kind="choice",
        flag="--weights-dtype",
        group=INFERENCE,
        metavar="D",
    ),
    Input(
        "inference.kv_dtype",
        "KV cache dtype",
        "KV-cache dtype",
        kind="choice",
        flag="--kv-dtype",
        group=INFERENCE,
        metavar="D",
    ),
    Input(
        "inference.batch",
        "Batch",
        "concurrent sequences (requests); on the command line also max: as many as KV memory "
        "and the engine allow",
        WHOLE,
        cli="--batch {}",
        group=INFERENCE,
    ),
    Input(
        "inference.batch_max",
        "As many as fit",
        "the serving figures use as many concurrent requests as KV memory and the engine "
        "allow instead of Batch (the memory bars keep Batch × Context)",
        kind="switch",
        cli="--batch max",
        group=INFERENCE,
    ),
    Input(
        "inference.engine",
        "Engine",
        "serving engine (batching, scheduler limits and kernels)",
        kind="choice",
        cli="--engine {}",
        group=INFERENCE,
        metavar="ENGINE",
        names=_names("llm_planner.core.quantities.engines", "ENGINE_IDS"),
    ),
    Input(
        "inference.prompt_tokens",
        "Prompt tokens",
        "prompt tokens per request (e.g. 1024 or 2k)",
        LENGTH,
        cli="--prompt-tokens {}",
        group=INFERENCE,
    ),
    Input(
        "inference.output_tokens",
        "Output tokens",
        "output tokens per request (e.g. 256 or 1k)",
        LENGTH,
        cli="--output-tokens {}",
        group=INFERENCE,
    ),
    Input(
        "inference.context",
        "Context",
        "tokens per sequence, prompt + output (e.g. 8192 or 128k)",
        LENGTH,
        flag="--context",
        group=INFERENCE,
    ),
    Input(
        "inference.num_gpus",
        "GPUs per replica",
        "GPUs serving one replica (tensor parallel)",
        LENGTH,
        flag="--inference-gpus",
        group=INFERENCE,
    ),
    Input(
        "inference.cuda_context_bytes",
        "CUDA context",
        "CUDA context and library workspaces per serving GPU (default 1 GiB)",
        BYTES,
        flag="--inference-cuda-context",
        group=INFERENCE,
    ),
    Input(
        "inference.prefill_chunk_tokens",
        "Prefill chunk",
        "most tokens processed in one serving step (sets the activation working set)",
        LENGTH,
        flag="--prefill-chunk",
        group=INFERENCE,
    ),
    # schedule, budget and failures
    Input(
        "compute.deadline_seconds",
        "Deadline",
        "time the run must finish in (e.g. 30days, 720h): the smallest deployment "
        "meeting it and the largest compute-optimal model",
        DURATION,
        flag="--deadline",
        group=SCHEDULE,
        optional=True,
    ),
    Input(
        "compute.budget_usd",
        "Budget $",
        "a budget in dollars (e.g. 2M or $2M): the largest compute-optimal model it buys",
        USD,
        flag="--budget-usd",
        group=SCHEDULE,
        optional=True,
    ),
    Input(
        "compute.budget_flops",
        "Budget FLOP",
        "a compute budget in FLOP (e.g. 1e24) for Chinchilla sizing",
        COUNT,
        flag="--budget-flops",
        group=SCHEDULE,
        optional=True,
        metavar="FLOP",
        fmt=_format_3g,
    ),
    Input(
        "compute.compute_dtype",
        "Math dtype",
        "dtype whose peak sets the throughput (bf16, fp8, tf32, ...)",
        kind="choice",
        flag="--compute-dtype",
        group=SCHEDULE,
        metavar="D",
    ),
    Input(
        "compute.include_attention_flops",
        "Count attention FLOPs",
        "count attention-score FLOPs in compute.flops_total (PaLM model FLOPs) instead of 6·P·D",
        kind="switch",
        flag="--attention-flops",
        group=SCHEDULE,
    ),
    Input(
        "compute.failures.gpu_failures_per_hour",
        "Failures /GPU/h",
        "interruptions per GPU-hour (default: Llama 3's 16k-GPU run)",
        COUNT,
        flag="--failure-rate",
        group=SCHEDULE,
        optional=True,
        metavar="PER_GPU_HOUR",
        fmt=_format_3g,
    ),
    Input(
        "compute.failures.checkpoint_write_seconds",
        "Checkpoint write",
        "time the job pauses to write one checkpoint (e.g. 60 s)",
        DURATION,
        flag="--checkpoint-seconds",
        group=SCHEDULE,
    ),
    Input(
        "compute.failures.restart_seconds",
        "Restart",
        "time to detect a failure, reschedule and reload (e.g. 10 min)",
        DURATION,
        flag="--restart-seconds",
        group=SCHEDULE,
    ),
    # training memory
    Input(
        "training.precision",
        "Precision",
        "precision recipe",
        kind="choice",
        flag="--precision",
        group=TRAINING,
        metavar="P",
        names=_names("llm_planner.core.quantities.optimizers", "PRECISIONS"),
    ),
    Input(
        "training.optimizer",
        "Optimizer",
        "optimizer",
        kind="choice",
        flag="--optimizer",
        group=TRAINING,
        metavar="O",
        names=_names("llm_planner.core.quantities.optimizers", "OPTIMIZERS"),
    ),
    Input(
        "training.seq_len",
        "Sequence length",
        "training sequence length s (e.g. 4096 or 8k)",
        LENGTH,
        flag="--seq-len",
        group=TRAINING,
    ),
    Input(
        "training.micro_batch",
        "Micro-batch",
        "sequences per micro-batch b",
        WHOLE,
        flag="--micro-batch",
        group=TRAINING,
    ),
    Input(
        "training.recompute_threshold_bytes",
        "X (threshold)",
        "drop and recompute every saved tensor larger than this (e.g. 100 MB)",
        BYTES,
        optional=True,
        cli="--recompute threshold:{}",
    ),
    Input(
        "training.flash_attention",
        "FlashAttention",
        "fused attention kernel (no s² tensors saved)",
        kind="switch",
        flag="--flash-attention",
        group=TRAINING,
    ),
    Input(
        "training.dropout",
        "Dropout",
        "dropout on attention probabilities and residuals",
        kind="switch",
        flag="--dropout",
        group=TRAINING,
    ),
    Input(
        "training.lora_rank",
        "LoRA rank",
        "LoRA fine-tuning rank (none: full fine-tuning or pretraining)",
        WHOLE,
        flag="--lora-rank",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.qlora",
        "QLoRA (4-bit frozen base)",
        "4-bit NF4 frozen base (QLoRA)",
        kind="switch",
        flag="--qlora",
        group=TRAINING,
        negatable=False,
    ),
    Input(
        "training.implementation",
        "Implementation",
        "activation-ledger profile",
        kind="choice",
        flag="--implementation",
        group=TRAINING,
        metavar="NAME",
        names=_names("llm_planner.core.quantities.activations", "PROFILES"),
    ),
    Input(
        "training.cuda_context_bytes",
        "CUDA context",
        "allowance for the CUDA context and workspaces per GPU (default 1 GB)",
        BYTES,
        flag="--cuda-context",
        group=TRAINING,
    ),
    Input(
        "training.fragmentation_fraction",
        "Fragmentation",
        "allocator fragmentation allowance, fraction of allocated bytes or a percentage "
        "(default 0.05)",
        FRACTION,
        flag="--fragmentation",
        group=TRAINING,
    ),
    # parallelism
    Input(
        "parallelism.tp",
        "Tensor parallel",
        "tensor-parallel degree",
        LENGTH,
        flag="--tp",
        group=PARALLEL,
    ),
    Input(
        "parallelism.pp",
        "Pipeline parallel",
        "pipeline-parallel degree",
        LENGTH,
        flag="--pp",
        group=PARALLEL,
    ),
    Input(
        "parallelism.dp",
        "Data parallel",
        "data-parallel degree (default: GPUs / (tp·pp))",
        LENGTH,
        flag="--dp",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.expert_parallel",
        "Expert parallel",
        "expert-parallel degree (MoE; divides data parallel)",
        LENGTH,
        flag="--ep",
        group=PARALLEL,
    ),
    Input(
        "parallelism.sequence_parallel",
        "Sequence parallel",
        "Megatron sequence parallelism (with tp > 1)",
        kind="switch",
        flag="--sequence-parallel",
        group=PARALLEL,
    ),
    Input(
        "parallelism.global_batch",
        "Global batch",
        "sequences per optimizer step",
        WHOLE,
        flag="--global-batch",
        group=PARALLEL,
    ),
    Input(
        "parallelism.gpus_per_node",
        "GPUs per node",
        "GPUs in one node (NVLink domain)",
        LENGTH,
        flag="--gpus-per-node",
        group=PARALLEL,
    ),
    Input(
        "parallelism.interleave_chunks",
        "Virtual stages v",
        "model chunks per GPU (interleaved schedule)",
        CHUNKS,
        cli="--schedule interleaved:{}",
    ),
    Input(
        "parallelism.inter_node_bandwidth_bytes_per_s",
        "Network per node",
        "network per node, one direction (default 400GB/s = 8 × 400 Gb/s)",
        BANDWIDTH,
        flag="--inter-node-bandwidth",
        group=PARALLEL,
    ),
    Input(
        "parallelism.intra_node_bandwidth_bytes_per_s",
        "Intra-node link",
        "GPU-to-GPU bandwidth per GPU, one direction (default: the GPU's catalog link)",
        BANDWIDTH,
        flag="--intra-node-bandwidth",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.kernel_efficiency",
        "Kernel efficiency",
        "share of peak FLOP/s the kernels reach (default 0.70)",
        FRACTION,
        flag="--kernel-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.intra_node_efficiency",
        "Intra achieved",
        "achieved share of the intra-node link",
        FRACTION,
        flag="--intra-node-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.inter_node_efficiency",
        "Network achieved",
        "achieved share of the network",
        FRACTION,
        flag="--inter-node-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.dp_overlap",
        "DP overlap",
        "share of the backward pass hiding data-parallel communication",
        FRACTION,
        flag="--dp-overlap",
        group=PARALLEL,
    ),
    Input(
        "parallelism.tp_overlap",
        "TP overlap",
        "share of tensor-parallel communication hidden",
        FRACTION,
        flag="--tp-overlap",
        group=PARALLEL,
    ),
    Input(
        "parallelism.measured_points",
        "Measured scaling",
        "measured points for the scaling curve, GPUS:TOKENS_PER_S (e.g. 64:1.1M; several "
        "comma-separated; repeatable)",
        POINTS,
        flag="--measured",
        group=PARALLEL,
        repeat=True,
    ),
)
"""Every described input, in ``--help`` order within each group."""

BY_PATH: dict[str, Input] = {spec.path: spec for spec in INPUTS}


def input_at(path: str) -> Input:
    """The description of the input at ``path`` (KeyError names it)."""
    try:
        return BY_PATH[path]
    except KeyError:
        raise KeyError(f"no described input {path!r}") from None
