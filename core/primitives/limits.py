"""Physical ranges of every numeric input, in one place.

Each input of a scenario (the command line's options, the window's fields and the files
all validate through the same pydantic models) has a range that means something: a GPU
count no cluster exceeds, a parallel degree no model can use, a price no one pays. A value
outside it is refused with one line naming the field and the range, before any formula
sees it, so no estimate can overflow to infinity, divide by a subnormal number or
allocate an array as large as a mistyped degree.

The bounds are generous on purpose (an order of magnitude or more beyond today's largest
runs, stated per range below); they exist to keep the arithmetic finite and the work
bounded, not to second-guess a plan. Ranges are in SI base units (bytes, seconds, FLOP/s,
USD), keyed by the dotted scenario path of the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_GPUS = 2**20
"""1,048,576 GPUs: about ten times the largest cluster announced (xAI Colossus, 2024-25:
100-200k GPUs)."""
MAX_DEGREE = 2**14
"""16,384: no parallel degree (tp, pp, ep, v) can usefully exceed the heads, layers or
experts of any published model (at most 128 heads, 126 layers, 256 experts in 2025)."""
MAX_TOKENS_PER_SEQUENCE = 2**25
"""33,554,432 tokens per sequence: three times the longest context published (10M)."""
MAX_BATCH = 2**24
"""16,777,216 sequences in one optimizer step or one serving batch."""
MAX_TRAINING_TOKENS = 1e18
"""A quintillion tokens: about 50 times Chinchilla's optimum for a 1e15-parameter model."""
MAX_PARAMS = 1e15
"""A quadrillion parameters (the largest published model has about 2e12)."""
MAX_BYTES = 1e15
"""A petabyte: GPU memory and runtime allowances are far smaller."""
MAX_BANDWIDTH_BYTES_PER_S = 1e15
"""1 PB/s per GPU or node, about 100 times HBM3e's 8 TB/s."""
MAX_FLOPS_PER_GPU = 1e18
"""1 EFLOP/s per GPU, about 100 times a B200's dense FP8 rate."""
MAX_SECONDS = 1e10
"""About 317 years."""
MAX_USD = 1e15
"""A quadrillion dollars."""
MAX_USD_PER_GPU_HOUR = 1e4
MIN_PRICE_USD_PER_GPU_HOUR = 1e-4
"""The smallest non-zero price (0 means free); below it a budget buys over 1e19 GPU-hours."""
MAX_MEASURED_POINTS = 1000
"""Measured (GPUs, tokens/s) points kept in one scenario; the files' own limit of 1 MB
holds this many with ample room."""
MAX_INT_DIGITS = 24
"""Longest integer literal a scenario file may hold (any in-range count has at most 19)."""


@dataclass(frozen=True)
class Range:
    """A closed (or left-open) interval of physical values."""

    low: float
    high: float
    low_open: bool = False
    unit: str = ""
    least: float = 0.0
    """With a low of 0: the smallest value above 0 that means something (0, or at least
    this); 1e-300 failures per GPU-hour or 1e-300 bytes of context are not inputs anyone
    means, and were echoed back as plans (issue 29, item 8). Checked by the scenario's own
    validation (:func:`least_problem`), since pydantic's bounds cannot say "0 or ≥ x"."""

    def kwargs(self) -> dict[str, Any]:
        """``Field(**range.kwargs())``: pydantic's bounds for this range."""
        bounds: dict[str, Any] = {"le": self.high}
        bounds["gt" if self.low_open else "ge"] = self.low
        return bounds

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        if self.least and 0 < value < self.least:
            return False
        return above and value <= self.high

    def text(self) -> str:
        """``between 1 and 16,384`` / ``above 0 and at most 1``."""
        low = f"above {_num(self.low)}" if self.low_open else f"between {_num(self.low)}"
        joiner = " and at most " if self.low_open else " and "
        unit = f" {self.unit}" if self.unit else ""
        if self.least:
            return f"0, or between {_num(self.least)} and {_num(self.high)}{unit}"
        return f"{low}{joiner}{_num(self.high)}{unit}"


def _num(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value):,}"
    return f"{value:g}"


def _r(
    low: float, high: float, unit: str = "", *, low_open: bool = False, least: float = 0.0
) -> Range:
    return Range(float(low), float(high), low_open, unit, float(least))


FRACTION = _r(0, 1)
POSITIVE_FRACTION = _r(0, 1, low_open=True)

RANGES: dict[str, Range] = {
    # scenario
    "num_gpus": _r(1, MAX_GPUS, "GPUs"),
    "model.params_override": _r(1e3, MAX_PARAMS, "parameters"),
    # compute
    "compute.tokens": _r(1, MAX_TRAINING_TOKENS, "tokens"),
    "compute.mfu": _r(1e-4, 1),
    "compute.achieved_flops_per_gpu": _r(1e6, MAX_FLOPS_PER_GPU, "FLOP/s"),
    "compute.tokens_per_s_per_gpu": _r(1e-3, 1e12, "tokens/s"),
    "compute.price_usd_per_gpu_hour": _r(0, MAX_USD_PER_GPU_HOUR, "USD per GPU-hour"),
    "compute.deadline_seconds": _r(1, MAX_SECONDS, "s"),
    "compute.budget_usd": _r(1e-2, MAX_USD, "USD"),
    "compute.budget_flops": _r(1e6, 1e40, "FLOP"),
    # 0 means none; below one failure per 10^9 GPU-hours (a GPU failing once in 114,000
    # years) or a millisecond of checkpoint or restart, a value is a typo, not a plan
    "compute.failures.gpu_failures_per_hour": _r(0, 1, "failures per GPU-hour", least=1e-9),
    "compute.failures.checkpoint_write_seconds": _r(0, 1e6, "s", least=1e-3),
    "compute.failures.restart_seconds": _r(0, 1e6, "s", least=1e-3),
    # inference
    "inference.batch": _r(1, MAX_BATCH, "sequences"),
    "inference.context": _r(1, MAX_TOKENS_PER_SEQUENCE, "tokens"),
    "inference.num_gpus": _r(1, MAX_DEGREE, "GPUs"),
    # 0 means none; a runtime's context is megabytes (CUDA's alone is ~300 MB)
    "inference.cuda_context_bytes": _r(0, MAX_BYTES, "bytes", least=1e6),
    "inference.prefill_chunk_tokens": _r(1, MAX_TOKENS_PER_SEQUENCE, "tokens"),
    "inference.prompt_tokens": _r(1, MAX_TOKENS_PER_SEQUENCE, "tokens"),
    "inference.output_tokens": _r(1, MAX_TOKENS_PER_SEQUENCE, "tokens"),
    # training
    "training.seq_len": _r(1, MAX_TOKENS_PER_SEQUENCE, "tokens"),
    "training.micro_batch": _r(1, 2**16, "sequences"),
    "training.recompute_threshold_bytes": _r(1, MAX_BYTES, "bytes", low_open=False),
    "training.lora_rank": _r(1, 2**16),
    "training.activation_offload_layers": _r(0, 2**16, "layers"),
    "training.moe_capacity_factor": _r(0, 64, low_open=True),
    "training.moe_paged_stash": _r(0, 16, low_open=True),
    "training.moe_load_imbalance": _r(1, 1024),
    "training.mtp_layers": _r(0, 64, "layers"),
    "training.recompute_layers": _r(1, 2**16, "layers"),
    "training.cuda_context_bytes": _r(0, MAX_BYTES, "bytes", least=1e6),
    "training.fragmentation_fraction": _r(0, 1, least=1e-6),
    "training.host_memory_bytes_per_node": _r(1e6, MAX_BYTES, "bytes"),
    "training.pcie_bandwidth_bytes_per_s": _r(1e6, MAX_BANDWIDTH_BYTES_PER_S, "B/s"),
    # parallelism
    "parallelism.gpus_per_node": _r(1, 2**12, "GPUs"),
    "parallelism.nvlink_domain": _r(1, 2**12, "GPUs"),
    "parallelism.tp": _r(1, MAX_DEGREE),
    "parallelism.pp": _r(1, MAX_DEGREE),
    "parallelism.cp": _r(1, MAX_DEGREE),
    "parallelism.dp": _r(1, MAX_GPUS),
    "parallelism.global_batch": _r(1, MAX_BATCH, "sequences"),
    "parallelism.interleave_chunks": _r(1, MAX_DEGREE),
    "parallelism.expert_parallel": _r(1, MAX_DEGREE),
    "parallelism.intra_node_bandwidth_bytes_per_s": _r(1e6, MAX_BANDWIDTH_BYTES_PER_S, "B/s"),
    "parallelism.inter_node_bandwidth_bytes_per_s": _r(1e6, MAX_BANDWIDTH_BYTES_PER_S, "B/s"),
    "parallelism.intra_node_efficiency": _r(1e-3, 1),
    "parallelism.inter_node_efficiency": _r(1e-3, 1),
    "parallelism.kernel_efficiency": _r(1e-3, 1),
    "parallelism.dp_overlap": FRACTION,
    "parallelism.tp_overlap": FRACTION,
    "parallelism.measured_points.gpus": _r(1, MAX_GPUS, "GPUs"),
    "parallelism.measured_points.tokens_per_s": _r(1e-3, 1e15, "tokens/s"),
    "parallelism.intra_node_step_latency_seconds": _r(0, 1, "s"),
    "parallelism.inter_node_step_latency_seconds": _r(0, 1, "s"),
    "parallelism.inter_node_p2p_latency_seconds": _r(0, 1, "s"),
    "parallelism.gemm_ramp_seconds": _r(0, 1, "s"),
    "parallelism.ep_overlap": FRACTION,
    "parallelism.attention_efficiency": _r(1e-3, 1),
    "parallelism.host_seconds_per_layer": _r(0, 1, "s"),
    "parallelism.dp_bucket_bytes": _r(1e3, MAX_BYTES, "bytes"),
    "inference.stored_weights.bytes": _r(0, MAX_BYTES, "bytes"),
    # measured runs (calibration): those fields standing for an input share its range below
    "measurements.step_seconds": _r(1e-6, MAX_SECONDS, "s"),
    "measurements.tokens_per_s": _r(1e-3, 1e18, "tokens/s"),
    "measurements.mfu_peak_flops": _r(1e9, MAX_FLOPS_PER_GPU, "FLOP/s"),
    "measurements.peak_allocated_bytes": _r(1e6, MAX_BYTES, "bytes"),
    "measurements.peak_reserved_bytes": _r(1e6, MAX_BYTES, "bytes"),
    # what-ifs (the upper bounds as the what-if models set them)
    "whatif.mixed_cluster.groups.memory_bytes": _r(1e6, 1e13, "bytes"),
    "whatif.mixed_cluster.groups.intra_node_bandwidth_bytes_per_s": _r(1e6, 1e14, "B/s"),
    "whatif.mixed_cluster.groups.inter_node_bandwidth_bytes_per_s": _r(1e6, 1e14, "B/s"),
    "whatif.multimodal.encoder_params": _r(1e3, 1e13, "parameters"),
    "whatif.compression.kernel_bytes_per_s": _r(1e6, 1e15, "B/s"),
    # the GPU carried inline (catalog entries and custom GPUs alike)
    "gpu.memory_bytes": _r(1e6, MAX_BYTES, "bytes"),
    "gpu.memory_bandwidth_bytes_per_s": _r(1e6, MAX_BANDWIDTH_BYTES_PER_S, "B/s"),
    "gpu.link_bandwidth_bytes_per_s": _r(1e6, MAX_BANDWIDTH_BYTES_PER_S, "B/s"),
    "gpu.tdp_watts": _r(1, 1e5, "W"),
    # a GPU under 1 GFLOP/s trains nothing; an unsupported dtype's peak is None, not 0
    "gpu.peak_flops": _r(1e9, MAX_FLOPS_PER_GPU, "FLOP/s"),
    # the architecture carried inline
    "model.architecture.layers": _r(1, 2**12),
    "model.architecture.hidden_size": _r(1, 2**20),
    "model.architecture.heads": _r(1, 2**14),
    "model.architecture.kv_heads": _r(1, 2**14),
    "model.architecture.head_dim": _r(1, 2**16),
    "model.architecture.ffn_size": _r(1, 2**22),
    "model.architecture.vocab_size": _r(1, 2**24),
    "model.architecture.max_context": _r(1, MAX_TOKENS_PER_SEQUENCE),
    "model.architecture.sliding_window": _r(1, MAX_TOKENS_PER_SEQUENCE),
    "model.architecture.moe.num_experts": _r(1, 2**16),
    "model.architecture.moe.experts_per_token": _r(1, 2**16),
    "model.architecture.moe.expert_ffn_size": _r(1, 2**22),
    "model.architecture.moe.num_shared_experts": _r(0, 2**16),
    "model.architecture.moe.first_dense_layers": _r(0, 2**12),
    "model.architecture.mla.q_lora_rank": _r(1, 2**20),
    "model.architecture.mla.kv_lora_rank": _r(1, 2**20),
    "model.architecture.mla.qk_nope_head_dim": _r(0, 2**16),
    "model.architecture.mla.qk_rope_head_dim": _r(0, 2**16),
    "model.architecture.mla.v_head_dim": _r(1, 2**16),
}
"""Every bounded numeric input, by dotted scenario path."""

_MEASURED_AS_INPUT = {
    "gpus": "num_gpus",
    "gpus_per_node": "parallelism.gpus_per_node",
    "dp": "parallelism.dp",
    "tp": "parallelism.tp",
    "pp": "parallelism.pp",
    "cp": "parallelism.cp",
    "ep": "parallelism.expert_parallel",
    "interleave_chunks": "parallelism.interleave_chunks",
    "micro_batch": "training.micro_batch",
    "global_batch": "parallelism.global_batch",
    "seq_len": "training.seq_len",
    "tokens_per_s_per_gpu": "compute.tokens_per_s_per_gpu",
    "flops_per_gpu_per_s": "compute.achieved_flops_per_gpu",
    "mfu": "compute.mfu",
}
"""A measured run's layout and rates are bounded as the inputs they stand for."""
RANGES.update({f"measurements.{k}": RANGES[v] for k, v in _MEASURED_AS_INPUT.items()})


def bounds(path: str) -> dict[str, Any]:
    """``Field(default, **bounds("parallelism.tp"))``: the pydantic bounds of one field."""
    return RANGES[path].kwargs()


_BOUND_ERRORS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}
)


def range_path(loc: tuple[int | str, ...]) -> str:
    """The RANGES key of a pydantic error location (list indices and tuple slots dropped;
    measured points name their two slots)."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    path = ".".join(parts)
    if path == "parallelism.measured_points" and len(loc) >= 3:
        return f"{path}.{'gpus' if loc[-1] == 0 else 'tokens_per_s'}"
    return path


def range_message(loc: tuple[int | str, ...], error_type: str) -> str | None:
    """``must be between 1 and 16,384`` for a bound error on a ranged field, else None."""
    if error_type not in _BOUND_ERRORS:
        return None
    found = RANGES.get(range_path(loc))
    return f"must be {found.text()}" if found else None


def least_problem(values: Mapping[str, Any]) -> str | None:
    """``"path: must be 0, or between …"`` for the first value in ``values`` (dotted path →
    value) above 0 but below its range's :attr:`Range.least`, or None."""
    for path, value in values.items():
        found = RANGES.get(path)
        if found is None or not found.least or not isinstance(value, int | float):
            continue
        if 0 < value < found.least:
            return f"{path}: must be {found.text()} (got {value:g})"
    return None


def least_paths() -> list[str]:
    """The ranged inputs whose smallest non-zero value is stated (:attr:`Range.least`)."""
    return [path for path, found in RANGES.items() if found.least]


def check(path: str, value: float | None) -> str | None:
    """Why ``value`` is out of the range of ``path`` (one phrase), or None when it is in."""
    if value is None:
        return None
    found = RANGES[path]
    if found.contains(float(value)):
        return None
    return f"must be {found.text()} (got {value:g})"


_MODEL_ERROR = re.compile(r"^(?:Value error, )?(?P<field>[a-z_][a-z0-9_.]*): (?P<reason>.+)$", re.S)


def describe_error(error: Mapping[str, Any]) -> tuple[str, str]:
    """(dotted field, one-line reason) for one pydantic error: a bound error on a ranged
    field names the whole range; a scenario-level refusal ("field: reason", raised by the
    scenario's own validators) names its field."""
    loc = tuple(error.get("loc", ()))
    message = str(error.get("msg", "invalid"))
    field = ".".join(str(p) for p in loc)
    ranged = range_message(loc, str(error.get("type", "")))
    if ranged is not None:
        return field, ranged
    found = _MODEL_ERROR.match(message)
    if found and (not loc or error.get("type") == "value_error"):
        inner = found["field"]
        if not field or inner.startswith(field):
            return inner, found["reason"]
    return field, message.removeprefix("Value error, ")
