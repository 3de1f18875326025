"""The one binding recipe between the scenario and every input widget.

- :class:`ScenarioState` holds the current :class:`Scenario` and its :class:`Report`; every
  change goes through :meth:`ScenarioState.set_field`, which builds a new validated scenario
  (``model_dump`` → modify → ``Scenario.model_validate``), pushes an undoable command only
  when a value really changed, re-estimates once, and emits ``changed`` once.
- :class:`Binder` connects widgets: model → widget with signals blocked; widget → model
  through :meth:`ScenarioState.set_field`. A value that does not parse or validate marks
  the field (red border, tooltip, message) and keeps the last valid figures on screen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from llm_planner.core.composition.estimate import Report, estimate, with_fit_suggestions
from llm_planner.core.inputs.registry import FRACTION, input_at
from llm_planner.core.inputs.scenario import Scenario, get_path, with_changes
from llm_planner.core.primitives import limits, units
from llm_planner.gui.background import Latest

log = logging.getLogger(__name__)

FIT_DELAY_MS = 120
"""The fit suggestions (a few dozen more estimates) start once edits pause this long: while
keys come, the bars get the processor."""


def validation_message(error: Exception) -> str:
    """One readable line for a parse or validation error."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        # a bound error names the field's whole range, as the command line and files do
        ranged = limits.range_message(tuple(first.get("loc", ())), str(first.get("type", "")))
        if ranged is not None:
            return ranged
        msg = str(first["msg"])
        return msg.removeprefix("Value error, ")
    return str(error).split(": ", 1)[-1] if isinstance(error, units.UnitError) else str(error)


class _Change(QUndoCommand):
    """One input change; consecutive keystrokes in the same field merge into one step."""

    def __init__(  # noqa: PLR0917 (the state, both scenarios, the label, how it merges)
        self,
        state: ScenarioState,
        old: Scenario,
        new: Scenario,
        text: str,
        merge_id: int,
        detach: bool = False,
    ):
        super().__init__(text)
        self._state, self._old, self._new, self._merge_id = state, old, new, merge_id
        # a new scenario made from this one (a variant) has no file of its own: redo forgets
        # the file, undo gives it back, so Save never writes a variant over its original
        self._detach = detach
        self._path_before: str | None = state.path

    def id(self) -> int:
        return self._merge_id

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt API)
        if (
            not isinstance(other, _Change)
            or other._merge_id != self._merge_id
            or self._merge_id < 0
        ):
            return False
        self._new = other._new
        self.setObsolete(self._new == self._old)  # typed back to where it was: no step
        return True

    def redo(self) -> None:
        if self._detach:
            self._path_before = self._state.path
            self._state.path = None
        self._state._apply(self._new)

    def undo(self) -> None:
        if self._detach:
            self._state.path = self._path_before
        self._state._apply(self._old)


class ScenarioState(QObject):
    """The current scenario and report; the window redraws on ``changed``."""

    changed = Signal(object, object)
    """(scenario, report) after every change, once."""
    estimate_failed = Signal(str)
    """An estimator raised: the message; the last report stays on screen."""
    suggestions_ready = Signal(object)
    """(report) the current report with its fit suggestions, computed after the redraw."""

    def __init__(self, scenario: Scenario, parent: QObject | None = None):
        super().__init__(parent)
        self.scenario = scenario
        self.report: Report = estimate(scenario)
        self.undo_stack = QUndoStack(self)
        # what would make it fit costs a few more estimates: worked out after the bars are
        # redrawn, in a worker thread, superseded by the next change
        self.fit_worker = Latest(self, delay_ms=FIT_DELAY_MS)
        self.fit_worker.done.connect(self._suggested)
        self._merge_ids: dict[str, int] = {}
        self._merge_counter = 0
        self.path: str | None = None

    # -- changes
    def set_field(self, path: str, value: Any, text: str | None = None, merge: bool = True) -> bool:
        """Set one input; raises ValidationError/ValueError for an invalid value.

        Returns whether anything changed (an equal value makes no undo step and no redraw).
        """
        return self.set_fields(
            {path: value}, text or f"Change {path}", merge_key=path if merge else None
        )

    def set_fields(self, changes: dict[str, Any], text: str, merge_key: str | None = None) -> bool:
        new = with_changes(self.scenario, changes)
        if new == self.scenario:
            return False
        merge_id = -1
        if merge_key is not None:
            merge_id = self._merge_ids.setdefault(merge_key, self._next_merge_id())
        self.undo_stack.push(_Change(self, self.scenario, new, text, merge_id))
        return True

    def _next_merge_id(self) -> int:
        self._merge_counter += 1
        return self._merge_counter

    def end_merge(self, path: str) -> None:
        """The user left the field: the next edit there is a new undo step."""
        if path in self._merge_ids:
            self._merge_ids[path] = self._next_merge_id()

    def replace(self, scenario: Scenario, text: str, detach: bool = False) -> None:
        """Replace the whole scenario as one undoable step (e.g. applying a search row).

        ``detach``: the result is a new scenario made from this one (a variant), not an
        edit of the open file: it has no file until saved (Save asks where); undo restores
        the file it came from.
        """
        if scenario != self.scenario or (detach and self.path is not None):
            self.undo_stack.push(_Change(self, self.scenario, scenario, text, -1, detach=detach))

    def load(self, scenario: Scenario, path: str | None) -> None:
        """A freshly opened scenario: no undo history, clean."""
        self.undo_stack.clear()
        self.path = path
        self._apply(scenario)
        self.undo_stack.setClean()

    def refresh(self) -> None:
        self._apply(self.scenario, force=True)

    def _apply(self, scenario: Scenario, force: bool = False) -> None:
        if scenario == self.scenario and not force:
            return
        self.scenario = scenario
        try:
            self.report = estimate(scenario, suggest=False)
        except Exception as error:  # an estimator bug must not take the window down
            log.exception("estimate failed")
            self.estimate_failed.emit(f"{type(error).__name__}: {error}")
        self.changed.emit(self.scenario, self.report)
        done, report = self.scenario, self.report
        if not (report.training.fits and report.inference.fits):
            self.fit_worker.submit(lambda: (done, with_fit_suggestions(done, report)))
        else:
            self.fit_worker.cancel()
            self.suggestions_ready.emit(report)

    def _suggested(self, payload: tuple[Scenario, Report]) -> None:
        scenario, report = payload
        if scenario == self.scenario and report.training == self.report.training:
            self.report = report
            self.suggestions_ready.emit(report)


# ---------------------------------------------------------------- widget bindings

ERROR_STYLE = "border: 2px solid #D62728; border-radius: 3px;"


class FractionField:
    """Show one fraction field the way the user writes it: typed ``0.4`` shows ``0.4``,
    typed ``40%`` shows ``40%`` (the value is 0.4 either way; ``parse`` reads both)."""

    def __init__(self, parse: Callable[[str], float], fmt: Callable[[float], str]) -> None:
        self.percent = False
        self._parse, self._format = parse, fmt

    def parse(self, text: str) -> float:
        self.percent = text.strip().endswith("%")
        return self._parse(text)

    def format(self, value: float) -> str:
        return f"{100 * value:.4g}%" if self.percent else self._format(value)


def tooltip_of(help_text: str) -> str:
    """A described input's help as a tooltip (a sentence)."""
    return help_text[:1].upper() + help_text[1:]


@dataclass
class Binding:
    widget: QWidget
    path: str
    show: Callable[[Any], None]
    tooltip: str


class Binder(QObject):
    """Connects input widgets to a :class:`ScenarioState` with one recipe."""

    error_changed = Signal(str)
    """The latest inline error message ("" when the last edit was valid)."""
    echoed = Signal(str)
    """What a typed abbreviation was read as ("GPUs: 2k = 2048")."""

    def __init__(self, state: ScenarioState, parent: QObject | None = None):
        super().__init__(parent)
        self.state = state
        self.bindings: list[Binding] = []
        self.errors: dict[QWidget, str] = {}
        self._shown: dict[int, tuple[type, Any]] = {}
        """Per binding, the value its widget was last given by :meth:`refresh`."""
        self._pending: dict[QWidget, Callable[[], None]] = {}
        """Per field in error, its commit again (tried after another field's change)."""
        self._retrying = False
        state.changed.connect(self.refresh)

    # -- model → widgets
    def refresh(self, scenario: Scenario | None = None, _report: Any = None) -> None:
        scenario = scenario or self.state.scenario
        shown = self._shown
        for binding in self.bindings:
            value = get_path(scenario, binding.path)
            key = id(binding)
            # a widget already showing this value (and not marked in error) is left alone:
            # an edit re-shows the one or two fields it changed, not all sixty
            if key in shown and shown[key] == (type(value), value) and not self.errors:
                continue
            shown[key] = (type(value), value)
            blocked = binding.widget.blockSignals(True)
            try:
                binding.show(value)
            finally:
                binding.widget.blockSignals(blocked)

    # -- widget → model
    def commit(
        self,
        widget: QWidget,
        path: str,
        make_value: Callable[[], Any],
        label: str,
        *,
        merge: bool = True,
        also: dict[str, Any] | None = None,
    ) -> None:
        """Parse the widget's value and set it; an error marks the field and changes nothing.

        ``merge``: consecutive edits of this field (keystrokes) make one undo step.
        ``also``: other fields set in the same step (e.g. a GPU edited becomes custom).
        """
        try:
            value = make_value()
            self.state.set_fields(
                {path: value, **(also or {})},
                f"Change {label}",
                merge_key=path if merge else None,
            )
        except (ValidationError, ValueError) as error:
            self.mark_error(widget, f"{label}: {validation_message(error)}")
            self._pending[widget] = lambda: self.commit(
                widget, path, make_value, label, merge=merge, also=also
            )
            return
        self._pending.pop(widget, None)
        self.clear_error(widget)
        self._retry_pending()

    def _retry_pending(self) -> None:
        """Fields refused only because of another field's value (2048 GPUs against an explicit
        dp·tp·pp of 1024) are tried again once that field changed: clearing DP then takes
        the 2048 GPUs that were typed, and the error goes."""
        if self._retrying or not self._pending:
            return
        self._retrying = True
        try:
            for retry in list(self._pending.values()):
                retry()
        finally:
            self._retrying = False

    def mark_error(self, widget: QWidget, message: str) -> None:
        self.errors[widget] = message
        widget.setStyleSheet(ERROR_STYLE)
        widget.setToolTip(message)
        widget.setProperty("inputError", message)
        self.error_changed.emit(message)

    def clear_error(self, widget: QWidget) -> None:
        self._pending.pop(widget, None)
        if self.errors.pop(widget, None) is None:
            return
        widget.setStyleSheet("")
        widget.setProperty("inputError", "")
        for binding in self.bindings:
            if binding.widget is widget:
                widget.setToolTip(binding.tooltip)
        self.error_changed.emit(next(iter(self.errors.values()), ""))

    def _add(
        self,
        widget: QWidget,
        path: str,
        show: Callable[[Any], None],
        tooltip: str,
        unset: Callable[[], Any] | None = None,
    ) -> None:
        """Bind ``widget`` to ``path``; ``unset``: what it shows while the path reads None
        because its part is not there (a what-if not planned shows its defaults, disabled)."""
        if unset is not None:
            shown_value = show

            def show(current: Any) -> None:
                shown_value(unset() if current is None else current)

        widget.setToolTip(tooltip)
        self.bindings.append(Binding(widget, path, show, tooltip))
        blocked = widget.blockSignals(True)
        show(get_path(self.state.scenario, path))
        widget.blockSignals(blocked)

    # -- recipes per widget kind
    def line(  # noqa: PLR0917 (each field names its path, parser, formatter, label)
        self,
        edit: QLineEdit,
        path: str,
        parse: Callable[[str], Any],
        fmt: Callable[[Any], str],
        label: str,
        tooltip: str = "",
        optional: bool = False,
        also: dict[str, Any] | None = None,
        unset: Callable[[], Any] | None = None,
    ) -> None:
        """A text field holding a human quantity; ``optional``: empty text means None."""

        def value() -> Any:
            text = edit.text().strip()
            if optional and not text:
                return None
            return parse(text)

        def show(current: Any) -> None:
            if edit in self.errors:
                return  # keep what the user typed (and its error) until it is fixed
            if edit.hasFocus():
                try:  # do not reformat the text under the cursor if it means the same
                    if value() == current:
                        return
                except (ValueError, ValidationError):
                    pass
            edit.setText("" if current is None else fmt(current))

        def edited(_text: str) -> None:
            self.commit(edit, path, value, label, also=also)
            typed = edit.text().strip()
            if edit in self.errors or not any(c.isalpha() for c in typed):
                return
            current = get_path(self.state.scenario, path)
            exact = "" if current is None else fmt(current)
            if exact and exact != typed:  # "8k" → "8192": say exactly what was read
                self.echoed.emit(f"{label}: {typed} = {exact}")

        edit.textEdited.connect(edited)
        edit.editingFinished.connect(lambda: self._tidy(edit, path, fmt))
        if optional:
            edit.setPlaceholderText("(none)")
        self._add(edit, path, show, tooltip, unset)

    def described(self, edit: QLineEdit, path: str) -> None:
        """A text field for the input described at ``path``
        (:data:`llm_planner.core.inputs.registry.INPUTS`): its label, parser, formatter,
        help and empty-means-None, the same description the command line's option has."""
        spec = input_at(path)
        parse: Callable[[str], Any] = spec.parse
        fmt: Callable[[Any], str] = spec.format
        if spec.unit is FRACTION:  # shown as the user types it (0.4 or 40%)
            fraction = FractionField(spec.parse, spec.format)
            parse, fmt = fraction.parse, fraction.format
        # ``also``: a measured-rate field sets its source too (the field is enabled only while
        # that source is chosen, so in the window it changes nothing more)
        also = dict(spec.also) or None
        self.line(edit, path, parse, fmt, spec.label, tooltip_of(spec.help), spec.optional, also)

    def _tidy(self, edit: QLineEdit, path: str, fmt: Callable[[Any], str]) -> None:
        self.state.end_merge(path)
        if edit in self.errors:
            return
        current = get_path(self.state.scenario, path)
        blocked = edit.blockSignals(True)
        edit.setText("" if current is None else fmt(current))
        edit.blockSignals(blocked)

    def combo(
        self,
        combo: QComboBox,
        path: str,
        label: str,
        tooltip: str = "",
        *,
        unset: Callable[[], Any] | None = None,
        also: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        """A picker whose items carry their values as item data; ``also(value)``: other
        fields set in the same step when ``value`` is chosen (a policy and its parameter)."""

        def show(current: Any) -> None:
            index = combo.findData(current)
            if index < 0:
                combo.addItem(str(current), current)
                index = combo.count() - 1
            combo.setCurrentIndex(index)

        def changed(index: int) -> None:
            if index >= 0:
                value = combo.itemData(index)
                extra = also(value) if also is not None else None
                self.commit(combo, path, lambda: value, label, merge=False, also=extra)

        combo.currentIndexChanged.connect(changed)
        self._add(combo, path, show, tooltip, unset)

    def spin(
        self,
        spin: QSpinBox | QDoubleSpinBox,
        path: str,
        label: str,
        tooltip: str = "",
        unset: Callable[[], Any] | None = None,
    ) -> None:
        """A number picked with arrows or typed (a QDoubleSpinBox holds a float)."""
        kind: Callable[[Any], Any] = float if isinstance(spin, QDoubleSpinBox) else int
        spin.valueChanged.connect(lambda v: self.commit(spin, path, lambda: kind(v), label))
        self._add(spin, path, lambda current: spin.setValue(kind(current or 0)), tooltip, unset)

    def check(
        self,
        box: QCheckBox,
        path: str,
        label: str,
        tooltip: str = "",
        unset: Callable[[], Any] | None = None,
    ) -> None:
        box.toggled.connect(lambda on: self.commit(box, path, lambda: bool(on), label, merge=False))
        self._add(box, path, lambda current: box.setChecked(bool(current)), tooltip, unset)


# ---------------------------------------------------------------- the mouse wheel


class _WheelGuard(QObject):
    """Passes a wheel over an unfocused picker or spin box to the form's scroll bar."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget):
            return False
        if watched.hasFocus():
            return False
        area = watched.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:  # the form scrolls, as if the pointer were over a label
            QCoreApplication.sendEvent(area.verticalScrollBar(), event)
        return True


_WHEEL_GUARD: list[_WheelGuard] = []
"""The one filter object (kept alive here) shared by every guarded widget."""


def guard_wheel(root: QWidget) -> None:
    """Pickers and spin boxes under ``root`` that the user has not clicked (or tabbed) into
    ignore the mouse wheel, which scrolls the form instead: scrolling a long form otherwise
    turns whatever passes under the pointer ("interleaved 1F1B" became "GPipe": 74 → 139 GB
    per GPU). Once focused, the wheel changes them as usual. Applied once per form (a
    filter on these widgets only, not on every event of the application)."""
    if not _WHEEL_GUARD:
        _WHEEL_GUARD.append(_WheelGuard())
    guard = _WHEEL_GUARD[0]
    for widget in (*root.findChildren(QComboBox), *root.findChildren(QAbstractSpinBox)):
        if widget.property("wheelGuarded"):
            continue
        widget.setProperty("wheelGuarded", True)
        # a wheel must not give focus either (Qt.WheelFocus is their default)
        if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.installEventFilter(guard)
