"""Sensitivity: how time and cost move with the few inputs that matter most (tornado data).

Each input is moved down and up by a stated factor, the scenario re-estimated
(:func:`~llm_planner.core.composition.estimate.estimate`, one estimate per end), and the
wall time and cost at both ends recorded. One-at-a-time (local) sensitivity: every other
input stays at its value, so interactions are not seen.

The inputs, with the factors used:

- the throughput's own parameter — with the default *modeled* throughput the step-time
  model's kernel efficiency (share of peak FLOP/s a GEMM reaches) and its inter-node
  network efficiency; with an *assumed* MFU that MFU; with a *measured* rate that rate —
  ×0.8 and ×1.2 (capped at 1 for fractions);
- training tokens ×0.8 and ×1.2;
- GPU count ×½ and ×2 (the layout keeps tp and pp; dp follows);
- price per GPU-hour ×0.8 and ×1.2;
- the per-GPU failure rate ×½ and ×2.

With an assumed MFU and no failures t = 6·P·D ÷ (N · peak · MFU) (Transformer Math 101),
so time moves as D, 1/N and 1/MFU, and cost = N·t·price as D·price/MFU: what the tests
check by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.figures import Figure, Unit

DOWN, UP = 0.8, 1.2
"""The ±20% swing of the continuous inputs."""


class SensitivityBar(BaseModel):
    """One input moved down and up: its values and the time and cost at each end."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description="the scenario field moved (dotted path)")
    label: str
    unit: Unit
    base_value: float
    low_value: float
    high_value: float
    time_low_seconds: float | None
    time_high_seconds: float | None
    cost_low_usd: float | None
    cost_high_usd: float | None
    note: str = ""

    @property
    def cost_swing_usd(self) -> float:
        if self.cost_low_usd is None or self.cost_high_usd is None:
            return 0.0
        return abs(self.cost_high_usd - self.cost_low_usd)

    @property
    def time_swing_seconds(self) -> float:
        if self.time_low_seconds is None or self.time_high_seconds is None:
            return 0.0
        return abs(self.time_high_seconds - self.time_low_seconds)


class Sensitivity(BaseModel):
    """The tornado: base time and cost, one bar per input, widest cost swing first."""

    model_config = ConfigDict(frozen=True)

    base_time_seconds: float | None
    base_cost_usd: float | None
    throughput_source: str
    bars: list[SensitivityBar]

    def figures(self) -> list[Figure]:
        """Each bar as two figures (time and cost at both ends), for the text report."""
        figures = [
            Figure(
                key="base_time", label="Time (as is)", value=self.base_time_seconds, unit="seconds"
            ),
            Figure(key="base_cost", label="Cost (as is)", value=self.base_cost_usd, unit="usd"),
        ]
        from llm_planner.core.primitives.figures import format_value

        for bar in self.bars:
            low, high = (
                format_value(bar.low_value, bar.unit),
                format_value(bar.high_value, bar.unit),
            )
            span = f"{low} → {high}"
            figures.append(
                Figure(
                    key=f"{bar.key}.time",
                    label=f"{bar.label} {span}: time",
                    value=f"{format_value(bar.time_low_seconds, 'seconds')} … "
                    f"{format_value(bar.time_high_seconds, 'seconds')}",
                    unit="text",
                    formula="one-at-a-time: the scenario re-estimated at each end",
                )
            )
            figures.append(
                Figure(
                    key=f"{bar.key}.cost",
                    label=f"{bar.label} {span}: cost",
                    value=f"{format_value(bar.cost_low_usd, 'usd')} … "
                    f"{format_value(bar.cost_high_usd, 'usd')}",
                    unit="text",
                )
            )
        return figures


def _inputs(scenario: Scenario) -> list[tuple[str, str, Unit, float, float, float, str]]:
    """(path, label, unit, base, low, high, note) of each input moved."""
    c, p = scenario.compute, scenario.parallelism
    items: list[tuple[str, str, Unit, float, float, float, str]] = []

    def fraction(path: str, label: str, base: float) -> None:
        items.append((path, label, "percent", base, base * DOWN, min(1.0, base * UP), ""))

    if c.throughput_mode == "modeled":
        fraction("parallelism.kernel_efficiency", "Kernel efficiency", p.kernel_efficiency)
        fraction("parallelism.inter_node_efficiency", "Network efficiency", p.inter_node_efficiency)
    elif c.throughput_mode == "mfu":
        fraction("compute.mfu", "MFU (assumed)", c.mfu)
    elif c.throughput_mode == "tflops" and c.achieved_flops_per_gpu is not None:
        base = c.achieved_flops_per_gpu
        items.append(
            (
                "compute.achieved_flops_per_gpu",
                "Measured FLOP/s per GPU",
                "flop/s",
                base,
                base * DOWN,
                base * UP,
                "",
            )
        )
    elif c.tokens_per_s_per_gpu is not None:
        base = c.tokens_per_s_per_gpu
        items.append(
            (
                "compute.tokens_per_s_per_gpu",
                "Measured tokens/s per GPU",
                "tokens/s",
                base,
                base * DOWN,
                base * UP,
                "",
            )
        )
    items.append(
        (
            "compute.tokens",
            "Training tokens",
            "tokens",
            c.tokens,
            c.tokens * DOWN,
            c.tokens * UP,
            "",
        )
    )
    n = scenario.num_gpus
    items.append(("num_gpus", "GPUs", "count", n, max(1, n // 2), n * 2, "tp and pp kept"))
    price = c.price_usd_per_gpu_hour
    items.append(
        (
            "compute.price_usd_per_gpu_hour",
            "Price per GPU-hour",
            "usd/h",
            price,
            price * DOWN,
            price * UP,
            "",
        )
    )
    rate = c.failures.rate_per_gpu_hour
    items.append(
        (
            "compute.failures.gpu_failures_per_hour",
            "Failure rate per GPU-hour",
            "ratio",
            rate,
            rate / 2,
            rate * 2,
            "",
        )
    )
    return items


def _ends(
    scenario: Scenario, path: str, value: float, cast: Callable[[float], Any]
) -> tuple[float | None, float | None, str]:
    try:
        changes: dict[str, Any] = {path: cast(value)}
        if path == "compute.price_usd_per_gpu_hour":  # a price moved by hand is the user's
            changes["compute.price_follows_gpu"] = False
        compute = estimate(with_changes(scenario, changes)).compute
    except (ValidationError, ValueError) as error:
        return None, None, f"not estimated at {value:g}: {str(error).splitlines()[0]}"
    return compute.wall_seconds, compute.cost_usd, ""


def sensitivity(scenario: Scenario) -> Sensitivity:
    """Time and cost at both ends of each input's swing, widest cost swing first."""
    base = estimate(scenario).compute
    bars = []
    for path, label, unit, value, low, high, note in _inputs(scenario):
        cast: Callable[[float], Any] = int if path == "num_gpus" else float
        t_low, c_low, n_low = _ends(scenario, path, low, cast)
        t_high, c_high, n_high = _ends(scenario, path, high, cast)
        bars.append(
            SensitivityBar(
                key=path,
                label=label,
                unit=unit,
                base_value=value,
                low_value=low,
                high_value=high,
                time_low_seconds=t_low,
                time_high_seconds=t_high,
                cost_low_usd=c_low,
                cost_high_usd=c_high,
                note="; ".join(x for x in (note, n_low, n_high) if x),
            )
        )
    bars.sort(key=lambda b: (-b.cost_swing_usd, -b.time_swing_seconds))
    return Sensitivity(
        base_time_seconds=base.wall_seconds,
        base_cost_usd=base.cost_usd,
        throughput_source=base.throughput_label,
        bars=bars,
    )
