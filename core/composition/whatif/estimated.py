"""What the what-ifs read of an estimate: the model's sizes and the compute, training and
parallelism sections. :func:`llm_planner.core.composition.estimate.estimate` runs the plans
on the sections it has just computed and stores their report in ``Report.whatif``, so the
plans cannot import the ``Report`` class itself; any object with these sections will do."""

from __future__ import annotations

from typing import Protocol

from llm_planner.core.sections.compute import ComputeReport
from llm_planner.core.sections.parallelism import ParallelismReport
from llm_planner.core.sections.training import TrainingReport


class ModelSizes(Protocol):
    """Parameter counts of the model section (P used by every P-based formula)."""

    @property
    def params_total(self) -> float: ...

    @property
    def params_active(self) -> float: ...


class Estimated(Protocol):
    """The sections of an estimate the what-ifs read (a ``Report`` is one)."""

    @property
    def model(self) -> ModelSizes: ...

    @property
    def compute(self) -> ComputeReport: ...

    @property
    def training(self) -> TrainingReport: ...

    @property
    def parallelism(self) -> ParallelismReport: ...
