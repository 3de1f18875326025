"""What every tab shares: the input form, the figures table, the feature checks."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.gui.binding import Binder, ScenarioState
from llm_planner.gui.widgets.figure_table import FigureTable

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- parsers (units only)


def parse_fraction(text: str) -> float:
    """``0.4`` or ``40%`` → 0.4."""
    stripped = text.strip()
    if stripped.endswith("%"):
        return units.parse_count(stripped[:-1], "fraction") / 100
    return units.parse_count(stripped, "fraction")


def format_fraction(value: float) -> str:
    return f"{value:.4g}"


def parse_tflops(text: str) -> float:
    """Achieved TFLOP/s per GPU → FLOP/s (``400`` → 4e14; ``4e14`` stays)."""
    value = units.parse_count(text.lower().replace("tflop/s", "").replace("tflops", ""), "TFLOP/s")
    return value if value >= 1e9 else value * 1e12


def format_tflops(value: float) -> str:
    return f"{value / 1e12:.4g}"


def parse_points(text: str) -> list[tuple[int, float]]:
    """``64: 1.1M, 256: 4.2M`` → [(64, 1.1e6), (256, 4.2e6)] (GPUs, tokens/s)."""
    points: list[tuple[int, float]] = []
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        gpus, sep, rate = part.partition(":")
        if not sep:
            raise ValueError(f"{part.strip()!r}: write GPUs: tokens/s, e.g. 64: 1.1M")
        points.append((units.parse_int_count(gpus, "GPUs"), units.parse_count(rate, "tokens/s")))
    return points


def format_points(points: Any) -> str:
    return ", ".join(f"{g}: {units.format_count(r, 4)}" for g, r in points or [])


def parse_bandwidth(text: str) -> float:
    """``450 GB/s`` → 4.5e11 bytes/s (a size per second; ``/s`` optional)."""
    stripped = text.strip()
    for suffix in ("/s", "ps"):
        if stripped.lower().endswith(suffix):
            stripped = stripped[: -len(suffix)]
    return units.parse_bytes(stripped, "bandwidth")


def format_bandwidth(value: float) -> str:
    return f"{units.format_gb(value, digits=4)}/s"


def format_int(value: Any) -> str:
    return str(int(value))


def format_count(value: Any) -> str:
    return units.format_count(float(value), digits=4)


def format_price(value: float) -> str:
    return f"{value:.4g}"


def format_duration(value: float) -> str:
    return units.format_duration(value)


def format_bytes_input(value: float) -> str:
    return units.format_gb(value, digits=4)


# ---------------------------------------------------------------- feature checks


_CORE_MODULES = {
    "compute": "sections.compute",
    "inference": "sections.inference",
    "training": "sections.training",
    "parallelism": "sections.parallelism",
    "search": "composition.search",
    "quantization": "quantities.quantization",
    "optimizers": "quantities.optimizers",
    "activations": "quantities.activations",
}
"""Where each module named by :func:`core_attr` lives in core's layout."""


def core_attr(module: str, *names: str) -> Any:
    """The first attribute among ``names`` of ``llm_planner.core.<module>`` (``"a|b"``: of
    the first of those modules that has one), or None."""
    for candidate in module.split("|"):
        try:
            mod = importlib.import_module(f"llm_planner.core.{_CORE_MODULES[candidate]}")
        except ImportError:
            continue
        for name in names:
            value = getattr(mod, name, None)
            if value is not None:
                return value
    return None


def choices(module: str, names: Sequence[str], fallback: Iterable[str]) -> list[tuple[str, Any]]:
    """(label, value) pairs from a catalog a core module exposes (dict, list, or Literal)."""
    found = core_attr(module, *names)
    items: list[tuple[str, Any]] = []
    if callable(found) and not isinstance(found, type):
        try:
            found = found()
        except Exception:  # a half-finished catalog must not break the window
            log.exception("catalog %s.%s", module, names)
            found = None
    if isinstance(found, dict):
        for key, entry in found.items():
            label = getattr(entry, "label", None) or getattr(entry, "name", None)
            items.append(
                (f"{key} — {label}" if isinstance(label, str) and label != key else str(key), key)
            )
    elif isinstance(found, list | tuple):
        for entry in found:
            key = (
                entry
                if isinstance(entry, str)
                else getattr(entry, "id", None) or getattr(entry, "name", None)
            )
            if isinstance(key, str):
                items.append((key, key))
    if not items:
        items = [(value, value) for value in fallback]
    return items


def safe_call(function: Callable[..., Any] | None, *args: Any, **kwargs: Any) -> Any:
    """Call an optional core function; any error → None (logged), never a broken window."""
    if function is None:
        return None
    try:
        return function(*args, **kwargs)
    except Exception:
        log.exception("core call %s failed", getattr(function, "__name__", function))
        return None


def field(obj: Any, *names: str) -> Any:
    """The first attribute (or dict key) of ``obj`` among ``names`` that is not None."""
    if obj is None:
        return None
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


# ---------------------------------------------------------------- the tab


class Tab(QWidget):
    """Inputs (left), charts and figures (right). Subclasses fill ``build_*`` and ``redraw``."""

    title = ""
    section = ""

    def __init__(
        self,
        state: ScenarioState,
        binder: Binder,
        parent: QWidget | None = None,
        *,
        defer_charts: bool = False,
    ):
        super().__init__(parent)
        self.state = state
        self.binder = binder
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(splitter)

        self.inputs = QWidget()
        self.inputs_layout = QVBoxLayout(self.inputs)
        self.inputs_layout.setContentsMargins(2, 2, 8, 2)
        scroll = QScrollArea()
        scroll.setWidget(self.inputs)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(290)
        scroll.setMaximumWidth(380)
        splitter.addWidget(scroll)

        self.right = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)

        self.figures = FigureTable()
        self.figures.setObjectName(f"{self.section}_figures")
        self.build_inputs()
        self.inputs_layout.addStretch(1)
        splitter.setSizes([330, 1000])
        self.charts_ready = False
        self.placeholder: QLabel | None = None
        if defer_charts:  # first paint without importing pyqtgraph; charts right after
            self.placeholder = QLabel("Drawing charts…")
            self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.right.addWidget(self.placeholder)
        else:
            self.ensure_charts()

    def ensure_charts(self) -> None:
        """Build the charts (once) and draw them."""
        if self.charts_ready:
            return
        if self.placeholder is not None:
            self.placeholder.hide()
            self.placeholder.deleteLater()
            self.placeholder = None
        self.build_charts()
        if self.figures.parent() is None:  # a tab may have placed it itself
            self.right.addWidget(self.figures)
        self.charts_ready = True
        self.redraw(self.state.scenario, self.state.report)

    def update_view(self, scenario: Scenario, report: Report) -> None:
        if self.charts_ready:
            self.redraw(scenario, report)

    def update_slow(self, scenario: Scenario, report: Report) -> None:
        if self.charts_ready:
            self.redraw_slow(scenario, report)

    # -- form helpers
    def group(self, title: str) -> QFormLayout:
        box = QGroupBox(title)
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.inputs_layout.addWidget(box)
        return form

    def line(  # noqa: PLR0917 (each field names its path, parser, formatter, label)
        self,
        form: QFormLayout,
        label: str,
        path: str,
        parse: Callable[[str], Any],
        fmt: Callable[[Any], str],
        tooltip: str,
        optional: bool = False,
    ) -> QLineEdit:
        edit = QLineEdit()
        edit.setObjectName(path)
        edit.setClearButtonEnabled(optional)
        self.binder.line(edit, path, parse, fmt, label, tooltip, optional)
        form.addRow(label, edit)
        return edit

    def combo(
        self,
        form: QFormLayout,
        label: str,
        path: str,
        items: Sequence[tuple[str, Any]],
        tooltip: str,
    ) -> QComboBox:
        combo = QComboBox()
        combo.setObjectName(path)
        combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(10)
        for text, value in items:
            combo.addItem(text, value)
        self.binder.combo(combo, path, label, tooltip)
        form.addRow(label, combo)
        return combo

    def check(self, form: QFormLayout, label: str, path: str, tooltip: str) -> QCheckBox:
        box = QCheckBox(label)
        box.setObjectName(path)
        self.binder.check(box, path, label, tooltip)
        form.addRow("", box)
        return box

    def note(self, text: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setOpenExternalLinks(False)
        self.inputs_layout.addWidget(label)
        return label

    # -- to override
    def build_inputs(self) -> None:
        """Add the input groups."""

    def build_charts(self) -> None:
        """Add the charts to ``self.right`` (figures come after)."""

    def section_of(self, report: Report) -> Any:
        return getattr(report, self.section, None)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        """Redraw charts and figures from the report (no formulas here)."""
        del scenario  # subclasses use it
        section = self.section_of(report)
        self.figures.set_figures(section.figures() if section is not None else [])

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        """Curves that cost more than the bars (series sweeps); run after the fast redraw."""

    def flush(self) -> None:
        """Run this tab's own pending deferred work now."""
