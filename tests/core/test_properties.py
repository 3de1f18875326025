"""Property tests over the whole input space (issue 20): whatever a user types or a file
holds, validation refuses it in one line or the estimate is finite, bounded and honest.

For every generated scenario (every numeric input drawn from in-range, boundary and
absurd values; every catalog choice; every model and GPU):

- validation raises only pydantic's ValidationError (the one-line refusal), never another
  exception, and its message names a field;
- an accepted scenario estimates without an exception, within 1 s and 500 MB;
- ``report --json`` serialises with ``allow_nan=False`` (no NaN, no infinity);
- every fraction (bubble, goodput, fragmentation) is in [0, 1], MFU and HFU in [0, 1];
- a layout that "fits" has a finite peak.

CI runs a small budget. The full run (issue 20's ≥ 20,000 examples each)::

    LLM_PLANNER_PROPERTY_EXAMPLES=20000 \
        .venv/bin/python -m pytest -q -s tests/core/test_properties.py

prints the counts (tried / refused / accepted / failures) of each property.
"""

from __future__ import annotations

import json
import math
import os
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files import store
from llm_planner.core.primitives import limits
from llm_planner.core.primitives.gpus import gpu_catalog
from llm_planner.core.primitives.presets import model_presets
from llm_planner.core.sections.parallelism.report import MFU_ABOVE_ONE

EXAMPLES = int(os.environ.get("LLM_PLANNER_PROPERTY_EXAMPLES", "60"))
COLLECT = os.environ.get("LLM_PLANNER_PROPERTY_COLLECT", "") == "1"
"""Measurement runs: count each failure by its reason and go on (the counts are written to
``LLM_PLANNER_PROPERTY_COUNTS`` after every example) instead of stopping at the first."""
COUNTS_FILE = os.environ.get("LLM_PLANNER_PROPERTY_COUNTS", "")
FAILURES_FILE = os.environ.get("LLM_PLANNER_PROPERTY_FAILURES", "")
"""Measurement runs: append each failing example (one JSON line: the property, the reason,
the input) to this file, so a failure found in a 20,000-example run can be replayed."""
SECONDS_PER_ESTIMATE = 3.0
"""CPU seconds one estimate may take (a bound on work, not a speed test: wall time moves
with the machine's load, and CI's 2 cores are shared)."""
BYTES_PER_ESTIMATE = 500e6
COUNTS: dict[str, Counter[str]] = {}

BASE = default_scenario().model_dump(mode="json")
PRESETS = sorted(model_presets())
GPUS = sorted(gpu_catalog())

ENUMS: dict[str, list[Any]] = {
    "compute.throughput_mode": ["modeled", "mfu", "tflops", "tokens_per_s"],
    "compute.include_attention_flops": [False, True],
    "compute.compute_dtype": ["bf16", "fp16", "fp8", "fp32", "tf32", "int8"],
    "inference.weights_format": ["bf16", "fp16", "fp8", "int8", "int4", "q4_k_m", "nf4"],
    "inference.kv_dtype": ["bf16", "fp8", "fp32", "int8"],
    "training.recompute": ["none", "selective", "full", "threshold"],
    "training.flash_attention": [False, True],
    "training.qlora": [False, True],
    "training.dropout": [False, True],
    "parallelism.zero_stage": [0, 1, 2, 3],
    "parallelism.sequence_parallel": [False, True],
    "parallelism.schedule": ["gpipe", "1f1b", "interleaved"],
    "parallelism.fsdp_strategy": [None, "NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"],
}


def _get(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        if node.get(key) is None:  # an empty what-if: plan it with this one field set
            node[key] = {}
        node = node[key]
    node[leaf] = value


INPUT_PATHS = [
    path
    for path in limits.RANGES
    if not path.startswith(
        (
            "gpu.",
            "model.architecture.",
            "parallelism.measured_points",
            "measurements.",
            "whatif.mixed_cluster.groups.",
        )
    )
]
MEASUREMENT_PATHS = [path for path in limits.RANGES if path.startswith("measurements.")]
_FLOAT_OPTIONAL = {
    "model.params_override",
    "compute.achieved_flops_per_gpu",
    "compute.tokens_per_s_per_gpu",
    "compute.deadline_seconds",
    "compute.budget_usd",
    "compute.budget_flops",
    "compute.failures.gpu_failures_per_hour",
    "training.recompute_threshold_bytes",
    "parallelism.intra_node_bandwidth_bytes_per_s",
    "parallelism.attention_efficiency",
    "parallelism.host_seconds_per_layer",
    "parallelism.dp_bucket_bytes",
    "whatif.compression.kernel_bytes_per_s",
    "whatif.rl.reshard_seconds",
    "whatif.multimodal.encoder_gpus",
}
_MEASURED_FLOATS = ("seconds", "tokens_per_s", "flops", "mfu", "bytes")
INT_PATHS = (
    {path for path in INPUT_PATHS if path not in _FLOAT_OPTIONAL and type(_get(BASE, path)) is int}
    | {"training.lora_rank", "parallelism.dp", "whatif.multimodal.encoder_gpus"}
    | {p for p in MEASUREMENT_PATHS if not any(w in p for w in _MEASURED_FLOATS)}
)


def _number(path: str) -> st.SearchStrategy[Any]:
    """In-range (log-uniform), on and just past the bounds, and absurd values."""
    found = limits.RANGES[path]
    low, high = max(found.low, 1e-12), found.high
    inside = st.floats(math.log10(low), math.log10(high)).map(lambda e: 10.0**e)
    edges = st.sampled_from([found.low, found.high, found.high * 1.0001, -1.0, 0.0])
    absurd = st.sampled_from([1e300, 1e-300, 5e-324, 10**30, 2**62, 7e9, 65536, 1e308])
    strategy = st.one_of(inside, inside, inside, edges, absurd)
    if path in INT_PATHS:
        return strategy.map(lambda v: int(min(max(v, -(2**70)), 2**70)))
    return strategy


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario document: a preset model, a catalog GPU, some inputs changed."""
    from llm_planner.core.primitives.presets import get_preset

    data = json.loads(json.dumps(BASE))
    preset = get_preset(draw(st.sampled_from(PRESETS)))
    data["model"] = {
        "preset": preset.id,
        "architecture": preset.architecture.model_dump(mode="json"),
        "params_override": None,
    }
    data["gpu"] = gpu_catalog()[draw(st.sampled_from(GPUS))].model_dump(mode="json")
    for path in draw(st.lists(st.sampled_from(INPUT_PATHS), max_size=8, unique=True)):
        _set(data, path, draw(_number(path)))
    for path in draw(st.lists(st.sampled_from(sorted(ENUMS)), max_size=4, unique=True)):
        _set(data, path, draw(st.sampled_from(ENUMS[path])))
    if draw(st.integers(0, 3)) == 0:  # a measured run: calibration fits the model to it
        measurement: dict[str, Any] = {"gpus": 512, "tokens_per_s_per_gpu": 9000.0}
        for path in draw(st.lists(st.sampled_from(MEASUREMENT_PATHS), max_size=4, unique=True)):
            measurement[path.split(".", 1)[1]] = draw(_number(path))
        data["measurements"] = [measurement]
    if draw(st.booleans()):  # a plausible layout, so that many scenarios are accepted
        n = draw(st.sampled_from([1, 2, 8, 64, 512, 4096]))
        tp = draw(st.sampled_from([1, 2, 4, 8]))
        pp = draw(st.sampled_from([1, 2, 4]))
        if tp * pp <= n:
            _set(data, "num_gpus", n)
            _set(data, "parallelism.tp", tp)
            _set(data, "parallelism.pp", pp)
            _set(data, "parallelism.dp", None)
            _set(data, "parallelism.global_batch", max(n // (tp * pp), 1) * 4)
    return data


def _fractions(node: Any, path: str = "") -> list[tuple[str, float]]:
    """(key, value) of every fraction-like figure in a report_json tree."""
    found: list[tuple[str, float]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _fractions(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _fractions(value, f"{path}[{i}]")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        leaf = path.rsplit(".", 1)[-1]
        # memory_fraction_used is used ÷ capacity: above 1 means "does not fit"
        ratio = leaf.endswith("fraction") and leaf != "memory_fraction_used"
        if ratio or leaf in ("mfu", "hfu", "goodput"):
            found.append((path, float(node)))
    return found


def check_estimate(scenario: Scenario) -> None:
    """The estimate's invariants (raises AssertionError naming what broke)."""
    start = time.process_time()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report = estimate(scenario)
    data = report_json(report)
    text = json.dumps(data, allow_nan=False)
    elapsed = time.process_time() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert elapsed < SECONDS_PER_ESTIMATE, f"estimate took {elapsed:.2f} s"
    assert grown < BYTES_PER_ESTIMATE, f"estimate grew the process by {grown / 1e6:.0f} MB"
    assert len(text) < 10_000_000
    par = data.get("parallelism") or {}
    # MFU's 6·P count may credit more FLOPs than the model multiplies (an untied embedding
    # lookup); then MFU may pass 1, but only with the problem that says so, and HFU may not
    explained = any(p.startswith(MFU_ABOVE_ONE) for p in par.get("problems") or [])
    credited = {".compute.mfu", ".compute.hfu", ".parallelism.mfu"}
    for key, value in _fractions(data):
        if explained and key in credited:
            assert value >= 0.0, f"{key} = {value}"
            continue
        assert 0.0 <= value <= 1.0 + 1e-9, f"{key} = {value}"
    if par.get("fits"):
        assert par.get("peak_bytes") is not None
        assert math.isfinite(par["peak_bytes"])


def _count(name: str, outcome: str) -> None:
    COUNTS.setdefault(name, Counter())[outcome] += 1
    if COUNTS_FILE and sum(COUNTS[name].values()) % 50 == 0:
        Path(COUNTS_FILE).write_text(json.dumps(COUNTS, indent=1))


def _failed(name: str, error: BaseException, example: Any = None) -> None:
    """Count a failure; re-raise it unless this is a measurement run."""
    _count(name, "failure")
    reason = str(error).splitlines()[0][:60] if str(error) else type(error).__name__
    _count(name, f"failure: {type(error).__name__}: {reason.split(' = ')[0]}")
    if FAILURES_FILE:
        if isinstance(example, bytes):
            example = example.decode("utf-8", "replace")
        line = {"property": name, "reason": f"{type(error).__name__}: {error}"[:300]}
        with Path(FAILURES_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps({**line, "example": example}) + "\n")
    if not COLLECT:
        raise error


@pytest.fixture(scope="module", autouse=True)
def _print_counts() -> Any:
    yield
    for name, counts in COUNTS.items():
        tried = counts["refused"] + counts["accepted"] + counts["failure"]
        print(
            f"\n{name}: tried {tried}, refused {counts['refused']}, "
            f"accepted {counts['accepted']}, failures {counts['failure']}"
        )
        for reason, n in counts.items():
            if reason.startswith("failure:"):
                print(f"  {n} × {reason}")
    if EXAMPLES >= 60:
        # a property that accepted nothing checked no estimate: the generator is broken
        for name, counts in COUNTS.items():
            assert counts["accepted"] >= EXAMPLES // 10, f"{name}: accepted {counts['accepted']}"


PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    derandomize=not COLLECT,  # CI: the same examples on every run
)


@PROPERTY
@given(scenarios())
def test_any_input_is_refused_in_one_line_or_estimated_honestly(data: dict[str, Any]) -> None:
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        _, message = limits.describe_error(error.errors()[0])
        assert message
        assert "\n" not in message
        _count("input space", "refused")
        return
    try:
        check_estimate(scenario)
    except Exception as error:
        _failed("input space", error, data)
        return
    _count("input space", "accepted")


# ------------------------------------------------------------------ mutated files

VALID_FILE = store.dumps_scenario(default_scenario())
_V2_DEFAULT = Path(__file__).parent.parent / "fixtures" / "scenarios" / "v2-default.llmplan.json"
_RICH = json.loads(_V2_DEFAULT.read_text())
_RICH["measurements"] = [{"gpus": 512, "tp": 1, "step_seconds": 9.5, "peak_reserved_bytes": 6e10}]
RICH_FILE = store.dumps_scenario(Scenario.model_validate(_RICH))
"""The committed v2 file (what-ifs, price overrides) with a measured run: the fields the
default scenario leaves empty are mutated too."""
HOSTILE = [
    "1" + "0" * 400,
    "-" + "9" * 30,
    "1e400",
    "5e-324",
    "NaN",
    "Infinity",
    '"\\u001b[2J"',
    '"\\u202e evil"',
    "[" * 40 + "]" * 40,
    "[" + ",".join(["[1, 1.0]"] * 2000) + "]",
    "null",
    "true",
    '""',
    "{}",
    "[]",
    "1000000000",
    "100000000",
    "0",
    "-1",
]


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    """A valid scenario file with a few values, keys or bytes replaced."""
    valid = draw(st.sampled_from([VALID_FILE, RICH_FILE]))
    data = json.loads(valid)
    paths: list[str] = []

    def collect(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                collect(value, f"{prefix}.{key}" if prefix else key)
        else:
            paths.append(prefix)

    collect(data, "")
    numeric = [p for p in paths if type(_get(data, p)) in (int, float)]
    # half the files only move numbers near their valid values (most of those are accepted and
    # estimated); the other half also take hostile literals anywhere (most are refused)
    gentle = draw(st.booleans())
    text = valid
    chosen = st.sampled_from(numeric if gentle else paths)
    for path in draw(st.lists(chosen, min_size=1, max_size=4, unique=True)):
        doc = json.loads(text)
        original = _get(doc, path)
        replacement = draw(st.sampled_from(HOSTILE) | st.integers().map(str))
        if (
            isinstance(original, int | float)
            and not isinstance(original, bool)
            and (gentle or draw(st.booleans()))
        ):
            scaled = original * 10.0 ** draw(st.integers(-4, 4))  # near the valid value
            replacement = json.dumps(int(scaled) if isinstance(original, int) else scaled)
        _set(doc, path, "__HOLE__")
        text = json.dumps(doc).replace('"__HOLE__"', replacement, 1)
    data_bytes = text.encode("utf-8")
    if not gentle and draw(st.integers(0, 9)) == 0:  # sometimes flip a byte as well
        at = draw(st.integers(0, len(data_bytes) - 1))
        data_bytes = data_bytes[:at] + bytes([draw(st.integers(0, 255))]) + data_bytes[at + 1 :]
    return data_bytes


@PROPERTY
@given(mutated_files())
def test_any_mutated_file_is_refused_in_one_line_or_estimated_honestly(data: bytes) -> None:
    try:
        scenario = store.parse_scenario(data, "mutated.llmplan.json")
    except store.ScenarioFileError as error:
        message = str(error)
        _count("mutated files", "refused")
        assert "\n" not in message
        assert len(message) <= 300
        return
    try:
        check_estimate(scenario)
        written = store.dumps_scenario(scenario).encode("utf-8")
        assert len(written) <= store.MAX_FILE_BYTES  # what is written back can be read back
        again = store.parse_scenario(written, "again")
        assert again.model_dump(exclude={"app_version"}) == scenario.model_dump(
            exclude={"app_version"}
        )
        assert not any(ch in scenario.name for ch in "\x00\x1b\n\u202e")
    except Exception as error:
        _failed("mutated files", error, data)
        return
    _count("mutated files", "accepted")
