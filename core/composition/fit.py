"""What would make it fit: the few smallest changes that bring a run under the GPU's memory.

When the training peak per GPU (or the inference replica's memory per GPU) exceeds the
GPU's capacity, each candidate change below is applied to the scenario and its peak is
computed **by the same estimator** that produced the failing figure (the caller passes it
in, so there is one producer of every peak). Candidates are tried in order of how much of
the plan they change, the list is bounded (at most :data:`MAX_CANDIDATES` estimates), and
only changes whose resulting peak fits are proposed; when none fits alone, the combination
of the memory-saving training changes is tried once.

The candidate set is the standard memory ladder of large-model training:

- full activation recomputation (Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", section 4: only the layer inputs are kept);
- micro-batch 1 (activations scale with b, section 4.1 of the same paper);
- ZeRO-3 / FSDP FULL_SHARD (Rajbhandari et al. 2020, "ZeRO", section 5: weights,
  gradients and optimizer states divided by the data-parallel degree);
- tensor parallel ×2 within a node (Shoeybi et al. 2019, Megatron-LM, section 3);
- twice the GPUs (ZeRO shards over a larger data-parallel group);
- for inference: a quantized weight format (fp8, int8, 4-bit), an fp8 KV cache,
  twice the GPUs per replica (tensor parallel), or the largest batch that fits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_planner.core.composition.scenario import Scenario

MAX_CANDIDATES = 8
"""Most peak estimates one suggestion list may cost (keeps ``estimate`` fast)."""
MAX_SUGGESTIONS = 4
"""Most suggestions proposed."""


class FitSuggestion(BaseModel):
    """One change that makes the run fit, with the peak the estimator gives after it."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="what to change, in words (e.g. 'ZeRO-3')")
    changes: dict[str, Any] = Field(description="scenario paths → new values ('a.b': v)")
    peak_bytes: float = Field(description="peak per GPU after the change (bytes)")
    capacity_bytes: float
    fits: bool
    wall_seconds: float | None = Field(
        default=None, description="the plan's wall-clock time after the change (s)"
    )
    cost_usd: float | None = Field(default=None, description="its cost after the change (USD)")
    mfu: float | None = Field(default=None, description="its MFU after the change")


class Priced(NamedTuple):
    """Time, cost and MFU of a changed plan, from the same estimate the report uses."""

    wall_seconds: float | None
    cost_usd: float | None
    mfu: float | None


def with_changes(scenario: Scenario, changes: dict[str, Any]) -> Scenario:
    """A new validated scenario with ``changes`` ({"a.b": value}) applied."""
    data = scenario.model_dump()
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[leaf] = copy.deepcopy(value)
    return Scenario.model_validate(data)


def _evaluate(
    scenario: Scenario,
    candidates: Iterable[tuple[str, dict[str, Any]]],
    peak_of: Callable[[Scenario], float],
    capacity: float,
    budget: int,
    *,
    price_of: Callable[[Scenario], Priced] | None = None,
) -> tuple[list[FitSuggestion], int]:
    found: list[FitSuggestion] = []
    settled: set[tuple[str, ...]] = set()  # one proposal per kind: the smallest that fits
    for label, changes in candidates:
        if budget <= 0 or len(found) >= MAX_SUGGESTIONS:
            break
        kind = tuple(sorted(changes))
        if kind in settled:
            continue
        try:
            changed = with_changes(scenario, changes)
        except (ValidationError, ValueError, KeyError):
            continue
        budget -= 1
        try:
            peak = float(peak_of(changed))
        except (ValueError, ZeroDivisionError):
            continue
        if peak <= capacity:
            settled.add(kind)
            priced = price_of(changed) if price_of is not None else Priced(None, None, None)
            found.append(
                FitSuggestion(
                    label=label,
                    changes=changes,
                    peak_bytes=peak,
                    capacity_bytes=capacity,
                    fits=True,
                    wall_seconds=priced.wall_seconds,
                    cost_usd=priced.cost_usd,
                    mfu=priced.mfu,
                )
            )
    return found, budget


def training_candidates(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The single changes to try, smallest first; only those that change something."""
    training, par = scenario.training, scenario.parallelism
    out: list[tuple[str, dict[str, Any]]] = []
    if training.recompute != "full":
        out.append((f"{training.recompute} → full recompute", {"training.recompute": "full"}))
    if training.micro_batch > 1:
        out.append((f"micro-batch {training.micro_batch} → 1", {"training.micro_batch": 1}))
    if par.zero_stage < 3 or par.fsdp_strategy not in (None, "FULL_SHARD"):
        out.append(
            (
                "ZeRO-3 (FULL_SHARD)",
                {"parallelism.zero_stage": 3, "parallelism.fsdp_strategy": None},
            )
        )
    tp = par.tp * 2
    if tp <= par.gpus_per_node and scenario.num_gpus % (tp * par.pp) == 0:
        changes: dict[str, Any] = {"parallelism.tp": tp}
        if par.dp is not None:
            if par.dp % 2:
                changes = {}
            else:
                changes["parallelism.dp"] = par.dp // 2
        if changes:
            out.append((f"TP {par.tp} → {tp}", changes))
    if not training.flash_attention:
        out.append(("FlashAttention on", {"training.flash_attention": True}))
    gpus = scenario.num_gpus * 2
    more: dict[str, Any] = {"num_gpus": gpus}
    if par.dp is not None:
        more["parallelism.dp"] = par.dp * 2
    if par.zero_stage == 0:
        more["parallelism.zero_stage"] = 3
    out.append((f"{gpus:,} GPUs" + (" with ZeRO-3" if par.zero_stage == 0 else ""), more))
    return out


def training_fit_suggestions(
    scenario: Scenario,
    peak_bytes: float,
    capacity_bytes: float,
    peak_of: Callable[[Scenario], float],
    price_of: Callable[[Scenario], Priced] | None = None,
) -> list[FitSuggestion]:
    """Changes that bring the training peak per GPU under capacity ([] when it fits).

    ``peak_of(scenario)`` is the training estimator's peak per GPU (estimate's own wiring);
    ``price_of(scenario)`` the time, cost and MFU of a change that fits (the plan's own
    figures, so the nearest plan that fits is shown priced).
    """
    if peak_bytes <= capacity_bytes:
        return []
    singles = training_candidates(scenario)
    found, budget = _evaluate(
        scenario, singles, peak_of, capacity_bytes, MAX_CANDIDATES - 1, price_of=price_of
    )
    if found:
        return found
    # none fits alone: the shortest prefix of the ladder that fits, one estimate per step
    steps = [(label, changes) for label, changes in singles if "num_gpus" not in changes]
    combined: dict[str, Any] = {}
    prefixes = []
    for count, (_label, changes) in enumerate(steps, start=1):
        combined = {**combined, **changes}
        if count > 1:
            prefixes.append((" + ".join(label for label, _ in steps[:count]), dict(combined)))
    for prefix in prefixes:
        found, budget = _evaluate(
            scenario, [prefix], peak_of, capacity_bytes, max(budget, 1), price_of=price_of
        )
        if found:
            return found
    return []


QUANTIZED_FORMATS = (("fp8", "fp8 weights"), ("int8", "int8 weights"), ("int4", "4-bit weights"))
"""Weight formats tried for inference, largest first (all in ``quantities.quantization``)."""


def inference_candidates(scenario: Scenario, max_batch: int) -> list[tuple[str, dict[str, Any]]]:
    inference = scenario.inference
    out: list[tuple[str, dict[str, Any]]] = []
    if 1 <= max_batch < inference.batch:
        out.append((f"batch {inference.batch} → {max_batch}", {"inference.batch": max_batch}))
    if inference.kv_dtype not in ("fp8", "int8", "int4"):
        out.append(("fp8 KV cache", {"inference.kv_dtype": "fp8"}))
    for fmt, label in QUANTIZED_FORMATS:
        if fmt != inference.weights_format:
            out.append((label, {"inference.weights_format": fmt}))
    for factor in (2, 4, 8):
        gpus = inference.num_gpus * factor
        out.append((f"{gpus} GPUs per replica", {"inference.num_gpus": gpus}))
    return out


def inference_fit_suggestions(
    scenario: Scenario,
    total_bytes: float,
    capacity_bytes: float,
    max_batch: int,
    peak_of: Callable[[Scenario], float],
) -> list[FitSuggestion]:
    """Changes that bring one inference GPU's memory under capacity ([] when it fits)."""
    if total_bytes <= capacity_bytes:
        return []
    found, _ = _evaluate(
        scenario,
        inference_candidates(scenario, max_batch),
        peak_of,
        capacity_bytes,
        MAX_CANDIDATES,
    )
    return found
