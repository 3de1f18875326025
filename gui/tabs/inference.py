"""Inference memory: weights, KV cache, overhead; memory against context length."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.inputs.registry import input_at
from llm_planner.core.primitives import units
from llm_planner.core.primitives.dtypes import DTYPES
from llm_planner.core.quantities.engines import ENGINE_IDS, get_engine
from llm_planner.core.quantities.quantization import weight_formats
from llm_planner.core.sections.inference import InferenceReport, memory_vs_context
from llm_planner.gui import colors
from llm_planner.gui.binding import tooltip_of
from llm_planner.gui.tabs.base import (
    FitPanel,
    Tab,
    context_warning,
    named_items,
    safe_call,
    with_fit_panel,
)
from llm_planner.gui.widgets.still_splitter import StillSplitter

if TYPE_CHECKING:
    from llm_planner.gui.widgets.charts import BarRow

CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
"""Context lengths of the fallback sweep (only while core offers no series function)."""


def inference_rows(scenario: Scenario, section: InferenceReport) -> tuple[list[BarRow], float]:
    """One bar: memory of one GPU of the replica, from the report's per-GPU fields."""
    from llm_planner.gui.widgets.charts import BarRow

    formulas = {figure.key: figure.formula for figure in section.figures()}
    explain = {
        "weights": formulas.get("per_gpu_weights_bytes") or formulas.get("weights_bytes", ""),
        "kv_cache": formulas.get("per_gpu_kv_cache_bytes") or formulas.get("kv_cache_bytes", ""),
        "overhead": formulas.get("per_gpu_overhead_bytes") or formulas.get("overhead_bytes", ""),
    }
    parts = {
        "weights": section.per_gpu_weights_bytes,
        "kv_cache": section.per_gpu_kv_cache_bytes,
        "overhead": section.per_gpu_overhead_bytes,
    }
    gpus = scenario.inference.num_gpus
    label = f"each of {gpus} GPUs" if gpus > 1 else "one GPU"
    capacity = section.gpu_memory_bytes or scenario.gpu.memory_bytes
    return [BarRow(label, parts, section.per_gpu_total_bytes, explain)], float(capacity)


class InferenceTab(Tab):
    title = "Inference memory"
    section = "inference"

    def build_inputs(self) -> None:
        self.context_warning = self.warning()
        form = self.group("Serving")
        formats = named_items(weight_formats())
        self.weights = self.combo(
            form,
            "Weights",
            "inference.weights_format",
            formats,
            "Weight dtype or quantized format (bits per weight with its overhead)",
        )
        self.kv = self.combo(
            form,
            "KV cache dtype",
            "inference.kv_dtype",
            [(d, d) for d in DTYPES if d != "tf32"],
            "Element type of the KV cache",
        )
        self.batch = self.input(form, "inference.batch")
        # the serving workload (core.sections.serving): one description per input, as
        # the command line's --batch max, --engine, --prompt-tokens, --output-tokens
        self.batch_max = self.check(
            form,
            input_at("inference.batch_max").label,
            "inference.batch_max",
            tooltip_of(input_at("inference.batch_max").help),
        )
        self.engine = self.combo(
            form,
            input_at("inference.engine").label,
            "inference.engine",
            [(get_engine(engine).name, engine) for engine in ENGINE_IDS],
            tooltip_of(input_at("inference.engine").help),
        )
        self.prompt_tokens = self.input(form, "inference.prompt_tokens")
        self.output_tokens = self.input(form, "inference.output_tokens")
        self.context = self.input(form, "inference.context")
        self.gpus = self.input(form, "inference.num_gpus")
        overhead = self.group("Runtime overhead (per GPU)")
        self.cuda_context = self.input(overhead, "inference.cuda_context_bytes")
        self.prefill_chunk = self.input(overhead, "inference.prefill_chunk_tokens")
        dtypes = [(d, d) for d in DTYPES if d != "tf32"]
        self.activation_dtype = self.combo(
            overhead, "Activations", "inference.activation_dtype", dtypes, "Activation dtype"
        )
        self.logits_dtype = self.combo(
            overhead, "Logits", "inference.logits_dtype", dtypes, "dtype the logits are kept in"
        )

    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import MemoryBars, SeriesChart

        row = StillSplitter(Qt.Orientation.Vertical)
        self.bars = MemoryBars("Memory per GPU (one replica)", ["weights", "kv_cache", "overhead"])
        self.bars.setObjectName("inference_bars")
        self.context_chart = SeriesChart(
            "Memory per GPU against context", "context (tokens)", "GB", log_x=True
        )
        self.context_chart.add_line("total", "total", colors.SERIES[0], symbol="o")
        self.context_chart.add_line(
            "kv", "KV cache", colors.COMPONENT_COLOR["kv_cache"], dashed=True
        )
        self.context_chart.add_markers(
            "current", "this scenario", colors.BAD, symbol="star", size=16
        )
        self.context_chart.add_hline("capacity", colors.CAPACITY, "capacity")
        self.context_chart.add_vline("max_context", colors.OK, "largest context that fits")
        self.fit_panel = FitPanel(
            self.state, lambda r: (r.inference_fit_suggestions, r.inference.fits)
        )
        self.fit_panel.setObjectName("inference_fit")
        row.addWidget(with_fit_panel(self.bars, self.fit_panel))
        row.addWidget(self.context_chart)
        row.addWidget(self._build_serving_chart())
        row.setSizes([220, 380, 380])
        self.right.addWidget(row)

    def _build_serving_chart(self) -> Any:
        """Tokens/s per GPU against tokens/s per user as concurrency grows (core's
        ``inference.serving.curve``), with this scenario's operating point."""
        from llm_planner.gui.widgets.charts import SeriesChart

        self.serving_chart = SeriesChart(
            "Serving: throughput against speed per user",
            "output tokens/s per user",
            "output tokens/s per GPU",
            log_x=True,
            log_y=True,
        )
        self.serving_chart.setObjectName("serving_chart")
        self.serving_chart.add_line(
            "curve", "more concurrent requests →", colors.SERIES[0], symbol="o"
        )
        self.serving_chart.add_markers(
            "current", "this scenario", colors.BAD, symbol="star", size=16
        )
        return self.serving_chart

    def _redraw_serving(self, report: Report) -> None:
        serving = report.inference.serving if report.inference is not None else None
        if serving is None:
            return
        curve = serving.curve
        self.serving_chart.set_line(
            "curve",
            [p.output_tokens_per_s_per_user for p in curve],
            [p.output_tokens_per_s_per_gpu for p in curve],
        )
        self.serving_chart.set_markers(
            "current", [serving.output_tokens_per_s_per_user], [serving.output_tokens_per_s_per_gpu]
        )
        self.serving_chart.info.setText(
            f"{serving.engine_name}: {serving.concurrency:,} requests of "
            f"{serving.prompt_tokens:,} + {serving.output_tokens:,} tokens; TTFT "
            f"{1e3 * serving.ttft_seconds:,.0f} ms, TPOT {1e3 * serving.tpot_seconds:,.1f} ms; "
            f"largest concurrency {serving.max_concurrency:,}"
        )
        self.serving_chart.info.show()

    def redraw(self, scenario: Scenario, report: Report) -> None:
        super().redraw(scenario, report)
        section = report.inference
        rows, capacity = inference_rows(scenario, section)
        self.bars.set_rows(rows, capacity)
        self._redraw_serving(report)
        self.fit_panel.show_report(report)
        limit = scenario.model.architecture.max_context
        self.set_warning(
            self.context_warning,
            context_warning(limit, scenario.inference.context, "Context"),
        )
        self.context_chart.set_hline(
            "capacity", capacity / units.GB, f"capacity {units.format_gb(capacity)}"
        )
        self.context_chart.set_markers(
            "current", [scenario.inference.context], [section.per_gpu_total_bytes / units.GB]
        )
        max_batch = section.max_batch
        self.context_chart.info.setText(
            f"Largest batch that fits at {scenario.inference.context:,} tokens: {max_batch:,}"
        )
        self.context_chart.info.show()
        max_context = section.max_context
        by = "the model's max_context" if max_context and max_context >= limit else "memory"
        self.context_chart.set_vline(
            "max_context",
            max_context,
            f"largest context {max_context:,} (limited by {by})" if max_context else None,
        )

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        """Per-GPU memory against context from ``core.inference.memory_vs_context``."""
        function = memory_vs_context
        contexts = sorted({*CONTEXTS, scenario.inference.context})
        result = safe_call(
            function,
            scenario.model.architecture,
            report.model.params_total,
            scenario.inference,
            contexts,
        )
        if not result:
            return
        self.context_chart.set_line(
            "total", [p.context for p in result], [p.total / units.GB for p in result]
        )
        self.context_chart.set_line(
            "kv", [p.context for p in result], [p.kv_cache / units.GB for p in result]
        )
