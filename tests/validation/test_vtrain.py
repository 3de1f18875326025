"""The vTrain single-node set (issue 31): 1,440 measured Megatron-DeepSpeed steps on 2-8
A100 against the app's step-time model (``vtrain.py``; the page's section is written by
``scripts/gen_accuracy.py``).

The bounds are the figures reached when the launch floor was fitted (docs/ACCURACY.md
states them): issue 31's target is a median |error| ≤ 8% (the vTrain authors' own simulator
reaches 8.37% on this set).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


vtrain = _load("llm_planner_vtrain", HERE / "vtrain.py")


def test_the_copy_holds_every_row_of_the_shared_file() -> None:
    """1,440 rows, 2/4/8 GPUs, each layout's GPUs = tp·pp·dp, step times as published."""
    rows = vtrain.vtrain_rows()
    assert len(rows) == 1440
    assert {r.gpus for r in rows} == {2, 4, 8}
    assert len({r.id for r in rows}) == 1440
    first = next(r for r in rows if r.id == "vtrain-single-2")
    # row 2 of data/ground_truth_single.csv: h1024 L24, tp1 pp2 dp1, b8/B16, 372.160408 ms
    assert (first.hidden, first.layers, first.tp, first.pp, first.dp) == (1024, 24, 1, 2, 1)
    assert (first.micro_batch, first.global_batch) == (8, 16)
    assert abs(first.measured_seconds - 0.372160408) < 1e-12


def test_vtrain_median_error_meets_issue_31s_target() -> None:
    """Median |error| of the step time over all rows ≤ 8% (reached: 7.7%), p90 ≤ 25%
    (reached: 20.7%; 173% before issue 31)."""
    st = vtrain.stats(list(vtrain.vtrain_rows()))
    assert st.median_abs_error <= 0.08, st
    assert st.p90_abs_error <= 0.25, st


def test_held_out_rows_stay_within_their_reached_figure() -> None:
    """The launch constant is fitted on hidden 1024; the held-out hidden-2048 rows reached
    10.3% (16.7% before), the other split (fit on even CSV rows, odd held out) 7.6%."""
    rows = vtrain.vtrain_rows()
    assert vtrain.stats(vtrain.held_out_rows(rows)).median_abs_error <= 0.11
    assert vtrain.stats(vtrain.odd_rows(rows)).median_abs_error <= 0.08


def test_the_launch_constant_is_the_fit() -> None:
    """HOST_SECONDS_PER_KERNEL_LAUNCH is the grid point of least median |error| on the
    hidden-1024 rows, as its docstring says: changing the step-time model without refitting
    it (or the constant without the model) fails here."""
    from llm_planner.core.quantities import comm

    best, scores = vtrain.fit_launch()
    assert best == comm.HOST_SECONDS_PER_KERNEL_LAUNCH, scores


def test_small_steps_are_launch_bound() -> None:
    """Hand computation from the counts in step_time.py: h1024, 24 layers, tp 1, pp 1,
    micro-batch 1, full recompute launches per layer 16 · 2 + 44 = 76, plus 61 + 17 outside
    the layers: (24 · 76 + 78) · 42.5 µs = 80.8 ms per micro-batch, above the GPU work (the
    layer GEMMs of 1,024 tokens: 24 · 4 · 24·h²·s ≈ 2.5e12 FLOP, ≈ 12 ms at 70% of 312
    TFLOP/s); 4 micro-batches (B8 over dp 2) ⇒ the step is 4 × 80.8 ms + the optimizer.
    Measured (csv): 326.5 ms."""
    from llm_planner.core.quantities import comm

    assert comm.HOST_SECONDS_PER_KERNEL_LAUNCH == 4.25e-5
    row = next(
        r
        for r in vtrain.vtrain_rows()
        if (r.hidden, r.layers, r.tp, r.pp, r.dp, r.micro_batch, r.global_batch)
        == (1024, 24, 1, 1, 2, 1, 8)
    )
    per_microbatch = (24 * 76 + 61 + 17) * 4.25e-5
    assert abs(per_microbatch - 0.0808) < 1e-3
    assert 4 * per_microbatch <= row.predicted_seconds <= 4 * per_microbatch * 1.05
    assert abs(row.measured_seconds - 0.3265) < 1e-3
