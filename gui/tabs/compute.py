"""Compute budget: FLOPs, throughput, time and cost; time and cost against GPU count."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report, estimate
from llm_planner.core.composition.fit import FitSuggestion
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.inputs.registry import input_at
from llm_planner.core.inputs.scenario import with_changes
from llm_planner.core.primitives import units
from llm_planner.core.sections.compute import chinchilla_tokens
from llm_planner.gui import colors
from llm_planner.gui.binding import validation_message
from llm_planner.gui.tabs.base import (
    Tab,
    visible_indicator,
)
from llm_planner.gui.widgets.still_splitter import StillSplitter

if TYPE_CHECKING:
    from llm_planner.core.composition.scaling import TimeVsGpus
    from llm_planner.gui.background import Latest

TIME_TITLE = "Time to train against GPUs"
COST_TITLE = "Cost against GPUs"


def suggestion_figures(suggestion: FitSuggestion) -> str:
    """A fit suggestion's own figures in words: peak, time, cost, MFU (as the report has
    them; "—" where the changed plan has none)."""
    parts = [f"{units.format_gb(suggestion.peak_bytes)} per GPU"]
    wall, cost, mfu = suggestion.wall_seconds, suggestion.cost_usd, suggestion.mfu
    parts.append(units.format_duration(wall) if wall is not None else "time —")
    parts.append(units.format_usd(cost) if cost is not None else "cost —")
    parts.append(f"MFU {100 * mfu:.1f}%" if mfu is not None else "MFU —")
    return ", ".join(parts)


class NotPricedPanel(QWidget):
    """A plan that does not fit: why time, cost and MFU read "—", and the nearest plan that
    fits (the first of ``core.composition.fit``'s suggestions) with its own figures, one
    click away (one undo step)."""

    def __init__(self, tab: Tab) -> None:
        super().__init__()
        self.setObjectName("compute_not_priced")
        self.state = tab.state
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 4)
        words = QVBoxLayout()
        words.setSpacing(2)
        self.reason = QLabel()
        self.reason.setObjectName("compute_not_priced_reason")
        self.reason.setWordWrap(True)
        self.reason.setTextFormat(Qt.TextFormat.RichText)
        self.nearest = QLabel()
        self.nearest.setObjectName("compute_nearest_fit")
        self.nearest.setWordWrap(True)
        self.apply = QPushButton("Apply it")
        self.apply.setObjectName("compute_apply_nearest")
        self.apply.clicked.connect(self._apply)
        words.addWidget(self.reason)
        words.addWidget(self.nearest)
        layout.addLayout(words, 1)
        layout.addWidget(self.apply, 0, Qt.AlignmentFlag.AlignVCenter)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.suggestion: FitSuggestion | None = None
        self.hide()

    def show_report(self, report: Report, searched: bool = False) -> None:
        """``searched``: the report's fit suggestions have been looked for (they arrive
        after the redraw, off the keystroke's path)."""
        if report.training.fits or report.compute.wall_seconds is not None:
            self.suggestion = None
            self.hide()
            return
        label = report.compute.throughput_label
        why = label.rsplit(": ", 1)[-1] if ": needs " in label else label
        self.reason.setText(
            f"<b style='color:{colors.BAD}'>Does not fit</b> ({why.removesuffix('; not priced')}"
            "): no time, cost or MFU."
        )
        found = report.training_fit_suggestions
        self.suggestion = found[0] if found else None
        if self.suggestion is None:
            self.nearest.setText(
                "No small change found fits: try a GPU with more memory or a smaller model."
                if searched
                else "Looking for the nearest plan that fits…"
            )
            self.apply.hide()
        else:
            self.nearest.setText(
                f"Nearest plan that fits: <b>{self.suggestion.label}</b>: "
                f"{suggestion_figures(self.suggestion)}."
            )
            self.apply.setToolTip(
                f"Apply: {self.suggestion.label} (one undo step): the fastest of the small "
                "changes that fit; the training tab lists the others."
            )
            self.apply.show()
        self.show()
        self._fit_height()

    def _fit_height(self) -> None:
        """Tall enough for the wrapped text at the current width (a splitter pane does not
        ask its labels' height for their width)."""
        layout = self.layout()
        if layout is not None and self.width() > 0:
            height = layout.heightForWidth(self.width())
            if height > 0 and height != self.minimumHeight():
                self.setMinimumHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit_height()

    def _apply(self) -> None:
        chosen = self.suggestion
        if chosen is not None:
            self.state.set_fields(dict(chosen.changes), f"Make it fit: {chosen.label}")


class ComputeTab(Tab):
    title = "Compute budget"
    section = "compute"
    scaling: Latest | None = None
    """The scaling curve's worker, made on the first slow redraw."""

    def build_inputs(self) -> None:
        data = self.group("Training data")
        self.tokens = self.input(data, "compute.tokens")
        rate = self.group("Throughput")
        self.mode = QComboBox()
        self.mode.setObjectName("compute.throughput_mode")
        for text, value in (
            ("modeled: the parallel layout", "modeled"),
            ("assumed: MFU × peak", "mfu"),
            ("measured: TFLOP/s per GPU", "tflops"),
            ("measured: tokens/s per GPU", "tokens_per_s"),
        ):
            self.mode.addItem(text, value)
        self.mode.setToolTip(
            "Where the one throughput behind time, cost and every tab comes from: the step "
            "time modeled for the parallelism tab's layout (default), an assumed model FLOPs "
            "utilisation of the catalog peak, or your own benchmark"
        )
        self.mode.currentIndexChanged.connect(self._mode_chosen)
        rate.addRow("From", self.mode)
        self.mfu = self.input(rate, "compute.mfu")
        self.tflops = self.input(rate, "compute.achieved_flops_per_gpu")
        self.tokens_per_s = self.input(rate, "compute.tokens_per_s_per_gpu")
        self.compute_dtype = self.combo(
            rate,
            "Math dtype",
            "compute.compute_dtype",
            [(d, d) for d in ("bf16", "fp16", "fp8", "tf32", "fp32")],
            "Whose catalog peak FLOP/s sets the throughput",
        )
        cost = self.group("Cost and schedule")
        # the price, and beside it whether it follows the GPU from the price list (typing a
        # price turns that off: the input's ``also``)
        self.price = QLineEdit()
        self.price.setObjectName("compute.price_usd_per_gpu_hour")
        self.binder.described(self.price, "compute.price_usd_per_gpu_hour")
        self.price_follows = QCheckBox("list")
        self.price_follows.setObjectName("compute.price_follows_gpu")
        visible_indicator(self.price_follows)
        self.binder.check(
            self.price_follows,
            "compute.price_follows_gpu",
            "Price from the list",
            "The GPU's cheapest on-demand price in the price list (resources/prices.json), "
            "following the GPU when it changes; off once you type a price",
        )
        price_row = QHBoxLayout()
        price_row.setContentsMargins(0, 0, 0, 0)
        price_row.addWidget(self.price, 1)
        price_row.addWidget(self.price_follows)
        cost.addRow(input_at("compute.price_usd_per_gpu_hour").label, price_row)
        self.deadline = self.input(cost, "compute.deadline_seconds")
        self.budget = self.input(cost, "compute.budget_usd")
        failures = self.group("Failures and checkpoints")
        self.failure_rate = self.input(failures, "compute.failures.gpu_failures_per_hour")
        self.checkpoint = self.input(failures, "compute.failures.checkpoint_write_seconds")
        self.restart = self.input(failures, "compute.failures.restart_seconds")
        self.attention_flops = self.check(
            data,
            "Count attention FLOPs",
            "compute.include_attention_flops",
            "Model FLOPs include the attention scores (PaLM's definition) instead of 6·P·D",
        )
        self.budget_flops = self.input(cost, "compute.budget_flops")
        self.gpt3_button = QPushButton("GPT-3 sanity check…")
        self.gpt3_button.setToolTip(
            "6 × 175e9 × 300e9 = 3.15e23 FLOP against 3.14e23 reported (Brown et al. 2020)"
        )
        self.gpt3_button.clicked.connect(self.gpt3_check)
        self.inputs_layout.addWidget(self.gpt3_button)
        self.measured = self.input(rate, "parallelism.measured_points")
        self.measured.setPlaceholderText("GPUs: tokens/s, …")
        self._enable_rate_fields()

    def _mode_chosen(self, index: int) -> None:
        """Switching to a measured mode starts from today's estimate, so it is never empty."""
        mode = self.mode.itemData(index)
        scenario, compute = self.state.scenario, self.state.report.compute
        changes: dict[str, Any] = {"compute.throughput_mode": mode}
        if mode == "tflops" and scenario.compute.achieved_flops_per_gpu is None:
            changes["compute.achieved_flops_per_gpu"] = compute.flops_per_gpu_per_s
        if mode == "tokens_per_s" and scenario.compute.tokens_per_s_per_gpu is None:
            changes["compute.tokens_per_s_per_gpu"] = compute.tokens_per_s_per_gpu
        try:
            self.state.set_fields(changes, "Change throughput source")
        except ValueError as error:
            self.binder.mark_error(self.mode, f"Throughput: {validation_message(error)}")
            return
        self.binder.clear_error(self.mode)

    def _enable_rate_fields(self) -> None:
        mode = self.state.scenario.compute.throughput_mode
        blocked = self.mode.blockSignals(True)
        self.mode.setCurrentIndex(max(self.mode.findData(mode), 0))
        self.mode.blockSignals(blocked)
        self.mfu.setEnabled(mode == "mfu")
        self.tflops.setEnabled(mode == "tflops")
        self.tokens_per_s.setEnabled(mode == "tokens_per_s")

    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import SeriesChart

        self.not_priced = NotPricedPanel(self)
        self.right.addWidget(self.not_priced)  # above the charts, the width of them
        self.right.setCollapsible(0, False)
        self.state.suggestions_ready.connect(
            lambda report: self.not_priced.show_report(report, searched=True)
        )
        row = StillSplitter(Qt.Orientation.Horizontal)
        self.charts_priced = True
        self.time_chart = SeriesChart(TIME_TITLE, "GPUs", "days", log_x=True, log_y=True)
        self.time_chart.add_line("time", "perfect scaling", colors.SERIES[0], symbol="o")
        self.time_chart.add_line("family", "this layout family", colors.SERIES[4], dashed=True)
        self.time_chart.add_markers("measured", "your measurements", colors.SERIES[1], symbol="s")
        self.time_chart.add_markers("current", "this scenario", colors.BAD, symbol="star", size=16)
        self.time_chart.add_hline("deadline", colors.BAD, "deadline")
        self.cost_chart = SeriesChart(
            COST_TITLE, "GPUs", "US$", log_x=True, y_format=units.format_usd
        )
        self.cost_chart.add_line("cost", "perfect scaling", colors.SERIES[2], symbol="o")
        self.cost_chart.add_markers("current", "this scenario", colors.BAD, symbol="star", size=16)
        self.cost_chart.add_hline("budget", colors.BAD, "budget")
        self.chinchilla_chart = SeriesChart(
            "Model size and data (Chinchilla)", "parameters", "tokens", log_x=True, log_y=True
        )
        self.chinchilla_chart.add_line("optimal", "compute-optimal D ≈ 20·P", colors.SERIES[3])
        self.chinchilla_chart.add_markers(
            "optimum", "optimal for this compute", colors.OK, symbol="d", size=14
        )
        self.chinchilla_chart.add_markers(
            "current", "this scenario", colors.BAD, symbol="star", size=16
        )
        row.addWidget(self.time_chart)
        row.addWidget(self.cost_chart)
        bottom = StillSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.chinchilla_chart)
        bottom.addWidget(self.figures)
        bottom.setSizes([500, 420])
        self.right.addWidget(row)
        self.right.addWidget(bottom)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        super().redraw(scenario, report)
        self._enable_rate_fields()
        self.not_priced.show_report(report)
        priced = report.compute.wall_seconds is not None
        if priced != self.charts_priced:  # an empty chart's title says why
            self.charts_priced = priced
            self.time_chart.plot.setTitle(TIME_TITLE if priced else "Time: not priced")
            self.cost_chart.plot.setTitle(COST_TITLE if priced else "Cost: not priced")
        section = report.compute
        seconds = section.wall_seconds
        cost = section.cost_usd
        self.time_chart.set_markers(
            "current",
            [scenario.num_gpus] if seconds else [],
            [seconds / units.SECONDS_PER_DAY] if seconds else [],
        )
        self.cost_chart.set_markers(
            "current", [scenario.num_gpus] if cost else [], [cost] if cost else []
        )
        deadline = scenario.compute.deadline_seconds
        self.time_chart.set_hline(
            "deadline", deadline / units.SECONDS_PER_DAY if deadline else None
        )
        self.cost_chart.set_hline("budget", scenario.compute.budget_usd)
        self.draw_chinchilla(scenario, report)

    def draw_chinchilla(self, scenario: Scenario, report: Report) -> None:
        """The D ≈ 20·P line (core.compute.chinchilla_tokens), this run and the optimum."""
        tokens_for = chinchilla_tokens
        section = report.compute
        params = section.params
        optimum_p = section.chinchilla_params
        # whole decades, two either side of the model and wider if the optimum lies beyond:
        # the line (and the axes) stay put while the tokens move the optimum, so an edit
        # repaints the two markers alone
        anchors = [p for p in (params, optimum_p) if p]
        low = min(math.floor(math.log10(params)) - 2, math.floor(math.log10(min(anchors))))
        high = max(math.ceil(math.log10(params)) + 2, math.ceil(math.log10(max(anchors))))
        grid = [10.0 ** (low + (high - low) * i / 24) for i in range(25)]
        self.chinchilla_chart.set_line("optimal", grid, [tokens_for(p) for p in grid])
        self.chinchilla_chart.set_markers("current", [params], [scenario.compute.tokens])
        if optimum_p:
            self.chinchilla_chart.set_markers("optimum", [optimum_p], [tokens_for(optimum_p)])

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        """Time and cost against GPUs from ``core.composition.scaling.time_vs_gpus`` (the
        estimate's one throughput, perfect scaling of the best per-GPU rate, the modeled
        layout family, the measured points), computed in a worker thread; a newer scenario
        supersedes an older run."""
        from llm_planner.core.composition.scaling import time_vs_gpus
        from llm_planner.gui.background import Latest

        if self.scaling is None:
            self.scaling = Latest(self)
            self.scaling.done.connect(self._draw_scaling)
            self.scaling.failed.connect(lambda _message: self._draw_scaling(None))
        self.scaling.submit(lambda: time_vs_gpus(scenario, report))

    def flush(self) -> None:
        if self.scaling is not None:
            self.scaling.wait()

    def _draw_scaling(self, series: TimeVsGpus | None) -> None:
        if series is None:
            for chart, name in ((self.time_chart, "time"), (self.cost_chart, "cost")):
                chart.set_line(name, [], [])
            self.time_chart.set_line("family", [], [])
            self.time_chart.set_markers("measured", [], [])
            return
        day = units.SECONDS_PER_DAY
        perfect = series.perfect
        self.time_chart.set_line(
            "time", [p.gpus for p in perfect], [p.wall_seconds / day for p in perfect]
        )
        self.cost_chart.set_line("cost", [p.gpus for p in perfect], [p.cost_usd for p in perfect])
        self.time_chart.set_line(
            "family",
            [p.gpus for p in series.family],
            [p.wall_seconds / day for p in series.family],
        )
        self.time_chart.set_markers(
            "measured",
            [p.gpus for p in series.measured],
            [p.wall_seconds / day for p in series.measured],
        )

    def gpt3_check(self) -> None:
        """GPT-3 (175e9 parameters, 300e9 tokens) through the same estimator as the scenario."""
        scenario = with_changes(
            self.state.scenario, {"model.params_override": 175e9, "compute.tokens": 300e9}
        )
        flops = estimate(scenario).compute.flops_total
        text = (
            f"C = 6 · P · D with P = 175e9, D = 300e9\n= {units.format_flop(flops)}\n"
            "Reported for GPT-3 (Brown et al. 2020, Table D.1): 3.14e23 FLOP"
        )
        QMessageBox.information(self, "GPT-3 sanity check", text)
