"""Issue 29, item 6: a file of 1,000 measured points took 10 s to report (each point priced
on its own at every step of the fit). Points measured at the same layout share one pricing
per step; the fit and its figures are the same as pricing each point."""

from __future__ import annotations

import time
from typing import Any

import pytest

from llm_planner.core.composition import calibration
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario, with_changes


def _points(n: int) -> list[tuple[int, float]]:
    # 16 GPU counts (64 … 1,024), rates cycling through 7 values: many runs, few layouts
    return [(64 * (1 + i % 16), 1e5 * (1 + i % 7)) for i in range(n)]


def test_runs_at_one_layout_are_priced_once_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = calibration._Pricing.priced

    def counted(self: Any, values: dict[str, float], case: Any) -> Any:
        calls.append(case.num_gpus)
        return original(self, values, case)

    monkeypatch.setattr(calibration._Pricing, "priced", counted)
    scenario = with_changes(default_scenario(), {"parallelism.measured_points": _points(1000)})
    start = time.process_time()
    report = estimate(scenario)
    assert time.process_time() - start < 5.0  # CPU seconds (it took 10 s of wall before)
    assert report.calibration is not None
    # each evaluation of the fit prices the 16 distinct layouts, not the 1,000 runs: before,
    # 20,000 pricings (1,000 runs × 20 evaluations); a fit of ~200 evaluations × 16 now
    assert len(calls) < 1000 * 5
    assert len(set(calls)) <= 16


def test_the_fit_is_the_same_with_runs_repeated() -> None:
    """The same 16 points once or repeated ten times: the same fitted parameters (the fit's
    residuals repeat; their least squares has the same minimum)."""
    once = estimate(with_changes(default_scenario(), {"parallelism.measured_points": _points(16)}))
    many = estimate(
        with_changes(default_scenario(), {"parallelism.measured_points": _points(16) * 10})
    )
    assert once.calibration is not None
    assert many.calibration is not None
    a = {p.name: p.value for p in once.calibration.parameters}
    b = {p.name: p.value for p in many.calibration.parameters}
    assert a.keys() == b.keys()
    for name, value in a.items():
        assert b[name] == pytest.approx(value, rel=1e-6)
