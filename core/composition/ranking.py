"""How far a layout's modeled throughput can be trusted, from measured runs of layouts that
use the same mechanisms (issue 31, item 4).

The step-time model prices what it can see. Some mechanisms it prices are contradicted by
measurement on the cluster it was calibrated on: on the nanotron sweep
(``resources/ranking_uncertainty.json``, from ``tests/validation/nanotron-sweep-1b-3b.json``,
the Ultra-Scale Playbook benchmark on 1-64 nodes of 8×H100) at 64 nodes ZeRO-1 pipelines
spanning nodes measure a tenth to a third of their prediction (median per class) and ZeRO-0
without a pipeline about a seventh, while on 2-32 nodes most classes' medians sit within
20% of the prediction (docs/ACCURACY.md lists every class). The search should not rank such
a layout first because its modeled figure is high.

A layout's *mechanism class* is what the model is least sure of, read off the layout alone:
ZeRO stage, whether it pipelines, whether its pipeline spans nodes, whether its tensor-
parallel group spans nodes, and the node count. For each class the table holds, per model of
the sweep, the ratio measured ÷ modeled tokens/s of every run that ran. A row's uncertainty is
the spread of that ratio over its class (its 25th and 75th percentile, with the number of
runs), and the search ranks by the modeled throughput × the 25th percentile: the throughput
three runs in four of that class reached or beat, relative to the model. Nothing is fitted:
the percentiles are read off the measured runs, and no row has a constant of its own.

The table applies to the stack it was measured on (``stack``). A class with fewer than
:data:`MIN_RUNS` runs at its node count takes its runs at any node count, and a class never
measured (a mechanism the stack's runs never used) takes every run at the nearest node count:
what is not measured is not trusted more than what is. A search on another stack has no
measured spread: its rows rank by the modeled figure and say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_planner.core.primitives.resources import read_json

RESOURCE = "ranking_uncertainty.json"
LOW_QUANTILE = 0.25
HIGH_QUANTILE = 0.75
MIN_RUNS = 3
"""A class needs this many measured runs for its spread to be used (below: the same class at
any node count; below again: no spread)."""


@dataclass(frozen=True)
class MechanismClass:
    """What the model is least sure of about a layout (see the module docstring)."""

    zero: int
    pipelined: bool
    pipeline_across_nodes: bool
    tp_across_nodes: bool

    def describe(self) -> str:
        pp = (
            "pipeline across nodes"
            if self.pipeline_across_nodes
            else ("pipeline in a node" if self.pipelined else "no pipeline")
        )
        tp = "TP across nodes" if self.tp_across_nodes else "TP in a node"
        return f"ZeRO-{self.zero}, {pp}, {tp}"


def mechanism_class(tp: int, pp: int, zero: int, gpus_per_node: int) -> MechanismClass:
    """The class of one layout: the pipeline spans nodes when a pipeline's tp·pp GPUs do not
    fit in one node; the TP group spans nodes when tp > GPUs per node."""
    return MechanismClass(
        zero=int(zero),
        pipelined=pp > 1,
        pipeline_across_nodes=pp > 1 and tp * pp > gpus_per_node,
        tp_across_nodes=tp > gpus_per_node,
    )


@dataclass(frozen=True)
class Uncertainty:
    """Measured ÷ modeled throughput of a layout's class: its low and high percentile."""

    low: float
    high: float
    runs: int
    basis: str  # which class and node count the runs come from


@cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = read_json(RESOURCE)
    return data


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


@cache
def _ratios(stack: str, exclude_model: str | None) -> dict[tuple[Any, Any], list[float]]:
    """Ratios by (class, nodes), by (class, None): every node count pooled, and by
    (None, nodes): every class at that node count pooled."""
    table = _table()
    out: dict[tuple[Any, Any], list[float]] = {}
    if table["stack"] != stack:
        return out
    for entry in table["classes"]:
        if entry["model"] == exclude_model:
            continue
        cls = MechanismClass(
            zero=entry["zero"],
            pipelined=entry["pipelined"],
            pipeline_across_nodes=entry["pipeline_across_nodes"],
            tp_across_nodes=entry["tp_across_nodes"],
        )
        for key in ((cls, int(entry["nodes"])), (cls, None), (None, int(entry["nodes"]))):
            out.setdefault(key, []).extend(float(r) for r in entry["ratios"])
    return out


def _nearest_nodes(
    ratios: dict[tuple[Any, Any], list[float]], cls: MechanismClass | None, nodes: int
) -> int | None:
    """The table's node count nearest ``nodes`` (in ratio) for which ``cls`` has runs
    (None: any class)."""
    known: list[int] = [int(n) for (c, n) in ratios if c == cls and n is not None]
    if not known:
        return None
    return min(known, key=lambda n: (abs(math.log(n / nodes)), n))


@cache
def uncertainty(
    stack: str,
    cls: MechanismClass,
    nodes: int,
    *,
    exclude_model: str | None = None,
) -> Uncertainty | None:
    """The spread of measured ÷ modeled throughput for ``cls`` at ``nodes`` nodes (the nearest
    node count measured), or None where nothing was measured. ``exclude_model``: leave one
    model's runs out (the page checks each model against the other's runs)."""
    ratios = _ratios(stack, exclude_model)
    near = _nearest_nodes(ratios, cls, nodes)
    anywhere = _nearest_nodes(ratios, None, nodes)
    candidates: list[tuple[tuple[Any, Any], str]] = []
    if near is not None:
        candidates.append(((cls, near), f"{cls.describe()}, {near} nodes"))
    candidates.append(((cls, None), f"{cls.describe()}, any node count"))
    if anywhere is not None:
        # mechanisms never measured on this stack: what every run at that scale reached
        candidates.append(
            ((None, anywhere), f"no run of {cls.describe()}: all runs, {anywhere} nodes")
        )
    for key, where in candidates:
        values = ratios.get(key, [])
        if len(values) >= MIN_RUNS:
            return Uncertainty(
                low=_quantile(values, LOW_QUANTILE),
                high=_quantile(values, HIGH_QUANTILE),
                runs=len(values),
                basis=where,
            )
    return None


def layout_uncertainties(
    stack: str,
    tp: npt.NDArray[Any],
    pp: npt.NDArray[Any],
    dp: npt.NDArray[Any],
    zero: npt.NDArray[Any],
    *,
    gpus_per_node: int,
    exclude_model: str | None = None,
) -> list[Uncertainty | None]:
    """:func:`uncertainty` of every layout (nodes = ⌈dp·tp·pp ÷ GPUs per node⌉)."""
    out = []
    for t, p, d, z in zip(tp.tolist(), pp.tolist(), dp.tolist(), zero.tolist(), strict=True):
        nodes = max(1, math.ceil(t * p * d / gpus_per_node))
        cls = mechanism_class(t, p, z, gpus_per_node)
        out.append(uncertainty(stack, cls, nodes, exclude_model=exclude_model))
    return out


def ranking_factor(u: Uncertainty | None) -> float:
    """What the search multiplies the modeled throughput by to rank: the low percentile of
    the class's measured ÷ modeled ratio (1 where nothing was measured)."""
    return 1.0 if u is None else u.low
