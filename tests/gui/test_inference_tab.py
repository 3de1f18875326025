"""Inference memory tab: bars, capacity and labels equal core's per-GPU figures."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.primitives import units
from llm_planner.gui.main_window import MainWindow

from .helpers import bar_widths_gb, choose, type_into

pytestmark = pytest.mark.gui


def test_kv_cache_bar_llama2_7b_is_two_gib(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    choose(window, window.bar.model, "llama-2-7b")
    choose(window, tab.kv, "bf16")
    type_into(qtbot, window, tab.context, "4096")
    type_into(qtbot, window, tab.batch, "1")
    # 2 · 32 layers · 32 kv heads · 128 · 2 bytes · 4096 tokens = 2^31 bytes = 2 GiB
    # (issue 3's hand check; Llama-2-7B config: 32 layers, 32 heads of 128)
    assert bar_widths_gb(tab.bars, "kv_cache") == [pytest.approx(2 * 2**30 / 1e9)]


def test_bars_match_core_and_update_in_place(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    item_before = tab.bars.items["weights"]
    choose(window, tab.weights, "int8")
    type_into(qtbot, window, tab.context, "32k")
    assert window.state.scenario.inference.context == 32 * 1024  # k = 1024 for contexts
    section = estimate(window.state.scenario).inference
    assert bar_widths_gb(tab.bars, "weights") == [
        pytest.approx(section.per_gpu_weights_bytes / 1e9)
    ]
    assert bar_widths_gb(tab.bars, "kv_cache") == [
        pytest.approx(section.per_gpu_kv_cache_bytes / 1e9)
    ]
    assert bar_widths_gb(tab.bars, "overhead") == [
        pytest.approx(section.per_gpu_overhead_bytes / 1e9)
    ]
    assert tab.bars.capacity == section.gpu_memory_bytes
    assert tab.bars.capacity_line.value() == pytest.approx(section.gpu_memory_bytes / 1e9)
    label = tab.bars.labels[0].text()
    assert label.startswith(f"{section.per_gpu_total_bytes / units.GB:,.1f} GB")
    assert "GiB" in label
    assert tab.bars.items["weights"] is item_before  # updated in place, not rebuilt
    assert tab.figures.value_text("max_batch") is not None


def test_over_capacity_shows_red_overflow(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    type_into(qtbot, window, tab.batch, "4096")
    section = estimate(window.state.scenario).inference
    assert not section.fits
    assert len(tab.bars.overflow.opts["width"]) == 1
    xs, _ = tab.context_chart.data("total")
    assert len(xs) > 3


def test_hover_explains_a_segment(window: MainWindow) -> None:
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    hit = tab.bars.segment_at(0.5, 0.0)
    assert hit == (0, "weights")
    text = tab.bars.tooltip_for(*hit)
    assert "GB" in text
    assert "GiB" in text


def test_serving_curve_follows_the_batch(qtbot: Any, window: MainWindow) -> None:
    """Typing 16 concurrent requests moves the operating point to core's figures at 16, on
    the curve core computes (tokens/s per user on x, per GPU on y), drawn in place."""
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    line_before = tab.serving_chart.lines["curve"]
    type_into(qtbot, window, tab.batch, "16")
    serving = estimate(window.state.scenario).inference.serving
    assert serving is not None
    assert serving.concurrency == 16
    xs, ys = tab.serving_chart.data("current")
    assert xs == [pytest.approx(serving.output_tokens_per_s_per_user)]
    assert ys == [pytest.approx(serving.output_tokens_per_s_per_gpu)]
    curve_x, curve_y = tab.serving_chart.data("curve")
    assert curve_x == [pytest.approx(p.output_tokens_per_s_per_user) for p in serving.curve]
    assert curve_y == [pytest.approx(p.output_tokens_per_s_per_gpu) for p in serving.curve]
    at_16 = next(p for p in serving.curve if p.concurrency == 16)
    assert ys[0] == pytest.approx(at_16.output_tokens_per_s_per_gpu)
    type_into(qtbot, window, tab.batch, "1")
    xs_one, _ = tab.serving_chart.data("current")
    assert xs_one[0] > xs[0]  # one request alone decodes faster than sixteen
    assert tab.serving_chart.lines["curve"] is line_before
