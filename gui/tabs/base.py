"""What every tab shares: the input form, the figures table, the feature checks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.fit import FitSuggestion
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.inputs.registry import input_at
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure
from llm_planner.gui.binding import Binder, ScenarioState
from llm_planner.gui.widgets.elided import ElidedCombo
from llm_planner.gui.widgets.figure_table import FigureTable
from llm_planner.gui.widgets.still_splitter import StillSplitter

log = logging.getLogger(__name__)


def visible_indicator(box: QCheckBox) -> None:
    """In a dark palette Fusion outlines an unchecked box in the window colour darkened: near
    black on dark grey. A lighter window colour for the box alone gives it a visible edge."""
    palette = box.palette()
    window = palette.color(QPalette.ColorRole.Window)
    if window.lightness() < 110:
        palette.setColor(QPalette.ColorRole.Window, QColor("#a8a8a8"))
        palette.setColor(QPalette.ColorRole.Base, QColor("#242424"))
        box.setPalette(palette)


class HasFigures(Protocol):
    """A report section: what the figures table reads of it."""

    def figures(self) -> list[Figure]: ...


# ---------------------------------------------------------------- catalogs and calls


def named_items(catalog: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(human name, id) pairs for a picker from a core catalog (``PRECISIONS``, ``OPTIMIZERS``,
    ``PROFILES``, ``weight_formats()``): the entry's ``name`` or ``label``; the id is the data."""
    items: list[tuple[str, Any]] = []
    for key, entry in catalog.items():
        label = getattr(entry, "name", None) or getattr(entry, "label", None) or key
        items.append((str(label), key))
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


# ---------------------------------------------------------------- what would fit


def suggestion_text(suggestion: FitSuggestion, metrics: QFontMetrics, width: int) -> str:
    """A fit suggestion's button text, wrapped at spaces to ``width`` pixels (a push button
    does not wrap, and a clipped label hides what the change is): what to change, one line
    per combined step, then the peak per GPU and the wall-clock time after it."""
    figures = [units.format_gb(suggestion.peak_bytes)]
    if suggestion.wall_seconds is not None:
        figures.append(units.format_duration(suggestion.wall_seconds))
    after = " · ".join(f.replace(" ", "\u00a0") for f in figures)  # "7.0 days" stays whole
    steps = suggestion.label.split(" + ")
    lines: list[str] = []
    for step in [*(f"{s} +" for s in steps[:-1]), steps[-1], f"→ {after}"]:
        line = ""
        for word in step.split(" "):
            trial = f"{line} {word}" if line else word
            if line and metrics.horizontalAdvance(trial) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return "\n".join(lines)


class FitPanel(QWidget):
    """Over capacity: the changes ``core.composition.fit`` found, one button each (a click
    applies that change as one undo step); while the run fits, a line saying so.

    Where there is room (:class:`FitHolder`) it is a column of fixed width right of the bars,
    always shown: the bars never resize (and repaint whole) when a run starts or stops
    fitting or the suggestions arrive. In a narrow window it sits under the bars in two
    columns and shows only while the run does not fit."""

    WIDTH = 230
    FITS_TEXT = (
        "<b style='color:#2CA02C'>Fits in memory.</b> When it does not, the smallest changes "
        "that would make it fit appear here."
    )

    def __init__(
        self,
        state: ScenarioState,
        verdict: Callable[[Report], tuple[Sequence[Any], bool]],
        parent: QWidget | None = None,
    ):
        """``verdict(report)``: this tab's (fit suggestions, fits) in a report."""
        super().__init__(parent)
        self.state = state
        self.verdict = verdict
        self.final: Report | None = None
        """The last report whose suggestions were worked out (``suggestions_ready``)."""
        state.suggestions_ready.connect(self._ready)
        state.fit_worker.failed.connect(self._failed)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(4, 0, 2, 2)
        self._grid.setSpacing(4)
        self.title = QLabel(self.FITS_TEXT)
        self.title.setObjectName("fit_title")
        self.title.setWordWrap(True)
        self.title.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.buttons: list[QPushButton] = []
        self.suggestions: list[FitSuggestion] = []
        self.over = False
        self.pending = False
        self.beside = True
        self.setFixedWidth(self.WIDTH)
        self._place()

    def _columns(self) -> int:
        return 1 if self.beside else 2

    def _place(self) -> None:
        """Lay the title and buttons out for the current mode (beside or under the bars)."""
        columns = self._columns()
        for widget in (self.title, *self.buttons):
            self._grid.removeWidget(widget)
        self._grid.addWidget(self.title, 0, 0, 1, columns)
        for index, button in enumerate(self.buttons):
            self._grid.addWidget(button, 1 + index // columns, index % columns)
        for row in range(self._grid.rowCount()):
            self._grid.setRowStretch(row, 0)
        if self.beside:  # buttons at the top of the column, the rest empty
            self._grid.setRowStretch(self._grid.rowCount(), 1)

    def set_beside(self, beside: bool) -> None:
        """Beside the bars (a fixed-width column, always shown) or under them."""
        if beside == self.beside:
            return
        self.beside = beside
        if beside:
            self.setFixedWidth(self.WIDTH)
        else:
            self.setMinimumWidth(0)
            self.setMaximumWidth(16777215)  # QWIDGETSIZE_MAX
        self._place()
        self.setVisible(beside or self.over)
        self._rewrap()

    def _room(self) -> int:
        """Text width of one button: its column less the bevel and spacing."""
        width = self.WIDTH if self.beside else max(self.width(), self.WIDTH)
        return (width - 24) // self._columns() - 8 * (self._columns() - 1)

    def _rewrap(self) -> None:
        for button, s in zip(self.buttons, self.suggestions, strict=False):
            button.setText(suggestion_text(s, button.fontMetrics(), self._room()))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if not self.beside and event.size().width() != event.oldSize().width():
            self._rewrap()

    def show_report(self, report: Report) -> None:
        """The verdict of the report on screen, at once: a run that does not fit never sits
        beside "Fits in memory." while its suggestions are still being worked out."""
        suggestions, fits = self.verdict(report)
        pending = not fits and not suggestions and report is not self.final
        self.set_suggestions(suggestions, not fits, pending=pending)

    def _ready(self, report: Report) -> None:
        self.final = report
        suggestions, fits = self.verdict(report)
        self.set_suggestions(suggestions, not fits)

    def _failed(self, _message: str) -> None:
        if self.pending:
            self.set_suggestions([], self.over)

    def set_suggestions(
        self, suggestions: Sequence[FitSuggestion], over: bool, pending: bool = False
    ) -> None:
        key = [(s.label, s.peak_bytes) for s in suggestions]
        if (
            key == [(s.label, s.peak_bytes) for s in self.suggestions]
            and over == self.over
            and pending == self.pending
        ):
            return  # nothing new: no relayout on every keystroke
        self.suggestions, self.over = (list(suggestions) if over else []), over
        self.pending = pending
        columns = self._columns()
        while len(self.buttons) < len(self.suggestions):
            index = len(self.buttons)
            button = QPushButton()
            button.setObjectName(f"fit_{index}")
            button.setMinimumWidth(80)  # long labels clip; the tooltip has the whole text
            button.clicked.connect(lambda _checked=False, i=index: self.apply(i))
            self._grid.addWidget(button, 1 + index // columns, index % columns)
            self.buttons.append(button)
        if self.beside:
            self._place()  # keep the stretch below the last button
        for index, button in enumerate(self.buttons):
            if index < len(self.suggestions):
                s = self.suggestions[index]
                button.setText(suggestion_text(s, button.fontMetrics(), self._room()))
                wall, cost = s.wall_seconds, s.cost_usd
                priced = (
                    f" Time after it: {units.format_duration(wall)}"
                    + (f", cost {units.format_usd(cost)}" if cost is not None else "")
                    + "."
                    if wall is not None
                    else ""
                )
                button.setToolTip(
                    f"Apply: {s.label}. Peak per GPU after it: {units.format_bytes(s.peak_bytes)}"
                    f" of {units.format_bytes(s.capacity_bytes)} (the same estimator).{priced} "
                    "Undo takes it back."
                )
                button.show()
            else:
                button.hide()
        if not over:
            self.title.setText(self.FITS_TEXT)
        elif pending:
            self.title.setText(
                "<b style='color:#D62728'>Does not fit.</b> Looking for the smallest changes "
                "that would make it fit…"
            )
        elif self.suggestions:
            self.title.setText(
                "<b style='color:#D62728'>Does not fit.</b> Any one of these would "
                "(peak per GPU after it):"
            )
        else:
            self.title.setText(
                "<b style='color:#D62728'>Does not fit</b>, and no small change found fits "
                "(try a GPU with more memory or a smaller model)."
            )
        if not self.beside:
            self.setVisible(over)

    def offered(self) -> list[QPushButton]:
        """The buttons on offer now."""
        return [b for b in self.buttons if not b.isHidden()]

    def apply(self, index: int) -> None:
        if 0 <= index < len(self.suggestions):
            chosen = self.suggestions[index]
            self.state.set_fields(dict(chosen.changes), f"Make it fit: {chosen.label}")


class FitHolder(QWidget):
    """The bars and their :class:`FitPanel`: the panel right of the bars while the bars keep
    at least ``BARS_MIN`` pixels beside it, else under them (decided on resize only)."""

    BARS_MIN = 390

    def __init__(self, bars: QWidget, panel: FitPanel):
        super().__init__()
        self.panel = panel
        self._layout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self._layout.addWidget(bars, 1)
        self._layout.addWidget(panel)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        beside = event.size().width() >= self.BARS_MIN + FitPanel.WIDTH
        direction = QBoxLayout.Direction.LeftToRight if beside else QBoxLayout.Direction.TopToBottom
        if self._layout.direction() != direction:
            self._layout.setDirection(direction)
        self.panel.set_beside(beside)


def with_fit_panel(bars: QWidget, panel: FitPanel) -> QWidget:
    """The bars with the fit suggestions beside or under them (one splitter pane)."""
    return FitHolder(bars, panel)


def context_warning(limit: int, length: int, what: str) -> str:
    """The warning (not a block: RoPE scaling exists) when ``length`` exceeds the model's
    ``max_context``; "" otherwise."""
    if limit and length > limit:
        return (
            f"⚠ {what} {length:,} exceeds the model's max_context of {limit:,} tokens: it needs "
            "RoPE scaling or a long-context variant; memory is computed as asked."
        )
    return ""


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
        splitter = StillSplitter(Qt.Orientation.Horizontal)
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

        self.right = StillSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)

        self.figures = FigureTable()
        self.figures.setObjectName(f"{self.section}_figures")
        self.build_inputs()
        self.inputs_layout.addStretch(1)
        # never narrower than the form's own minimum plus the scroll bar: with the horizontal
        # bar off, a narrower column cuts the right edge of every field
        scroll.ensurePolished()
        needed = (
            self.inputs.minimumSizeHint().width()
            + scroll.verticalScrollBar().sizeHint().width()
            + 2 * scroll.frameWidth()
        )
        scroll.setMinimumWidth(max(290, needed))
        scroll.setMaximumWidth(max(380, needed))
        splitter.setSizes([max(330, needed), 1000])
        self._splitter, self._scroll, self._narrow = splitter, scroll, False
        self.charts_ready = False
        self.placeholder: QLabel | None = None
        if defer_charts:  # first paint without importing pyqtgraph; charts right after
            self.placeholder = QLabel("Drawing charts…")
            self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.right.addWidget(self.placeholder)
        else:
            self.ensure_charts()

    NARROW = 900
    """Below this width the inputs keep only their minimum: the charts need the room more."""

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        narrow = event.size().width() < self.NARROW
        if narrow != self._narrow:  # only on crossing: a column the user dragged stays
            self._narrow = narrow
            inputs = self._scroll.minimumWidth()
            if not narrow:
                inputs = max(330, inputs)
            self._splitter.setSizes([inputs, max(event.size().width() - inputs, 100)])

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

    def input(self, form: QFormLayout, path: str) -> QLineEdit:
        """A form row for the input described at ``path``
        (:data:`llm_planner.core.inputs.registry.INPUTS`): the label, parser, formatter and
        help the command line's option has too."""
        edit = QLineEdit()
        edit.setObjectName(path)
        self.binder.described(edit, path)
        edit.setClearButtonEnabled(input_at(path).optional)
        form.addRow(input_at(path).label, edit)
        return edit

    def combo(
        self,
        form: QFormLayout,
        label: str,
        path: str,
        items: Sequence[tuple[str, Any]],
        tooltip: str,
        *,
        also: Callable[[Any], dict[str, Any]] | None = None,
    ) -> QComboBox:
        combo = ElidedCombo()
        combo.setObjectName(path)
        combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(10)
        for text, value in items:
            combo.addItem(text, value)
        self.binder.combo(combo, path, label, tooltip, also=also)
        combo.set_base_tooltip(tooltip)
        form.addRow(label, combo)
        return combo

    def check(self, form: QFormLayout, label: str, path: str, tooltip: str) -> QCheckBox:
        box = QCheckBox(label)
        box.setObjectName(path)
        visible_indicator(box)
        self.binder.check(box, path, label, tooltip)
        form.addRow("", box)
        return box

    def warning(self) -> QLabel:
        """A warning line at the top of the inputs (hidden while empty)."""
        label = QLabel()
        label.setObjectName(f"{self.section}_warning")
        label.setWordWrap(True)
        label.setStyleSheet("color: #B8860B;")
        label.hide()
        self.inputs_layout.insertWidget(0, label)
        return label

    @staticmethod
    def set_warning(label: QLabel, text: str) -> None:
        if label.text() != text:
            label.setText(text)
        label.setVisible(bool(text))

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

    def section_of(self, report: Report) -> HasFigures | None:
        """The report's section this tab shows (``Tab.section`` names it), if it has one."""
        section: HasFigures | None = getattr(report, self.section, None)
        return section

    def redraw(self, scenario: Scenario, report: Report) -> None:
        """Redraw charts and figures from the report (no formulas here)."""
        del scenario  # subclasses use it
        section = self.section_of(report)
        self.figures.set_figures(section.figures() if section is not None else [])

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        """Curves that cost more than the bars (series sweeps); run after the fast redraw."""

    def flush(self) -> None:
        """Run this tab's own pending deferred work now."""
