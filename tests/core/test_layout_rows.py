"""The fewest-GPUs screen's array-free path gives what the arrays give: the enumeration's
layouts as Python tuples (search_layouts.layout_rows) are enumerate_layouts' arrays, in
order; their one-layout arguments (parallelism.row_arguments: micro-batches per step and in
flight in Python floats) are those of the arrays (memory._one_by_one with
step_time.microbatches_per_step); the scalar schedule (schedule.training_in_flight_one) is
the array schedule at random pipelines, micro-batch counts and interleavings, GPipe too."""

from __future__ import annotations

import random

import numpy as np

from llm_planner.core.composition.search_layouts import (
    SearchOptions,
    enumerate_layouts,
    layout_rows,
    layouts_of_rows,
)
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism.memory import _one_by_one, microbatches_per_step_one
from llm_planner.core.sections.parallelism.schedule import (
    training_in_flight_one,
    training_loss_in_flight,
)

MODELS = ["llama-3.1-8b", "llama-2-70b", "mixtral-8x7b", "deepseek-v3", "gpt-3-175b", "qwen3-8b"]


def test_scalar_schedule_is_the_array_schedule() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        pp = float(rng.choice([1, 2, 3, 4, 8, 16]))
        m = rng.choice([1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 16.0, 64.0, 2.5, 1.5, 12.75])
        gpipe = rng.random() < 0.2
        v = float(rng.choice([1, 1, 2, 3, 4]))
        first, last, loss = training_in_flight_one(pp, m, gpipe, v)
        a = np.array
        assert first == float(par.training_in_flight(a([pp]), a([m]), a([gpipe]), a([v]))[0])
        assert last == float(par.training_in_flight_last(a([pp]), a([m]), a([gpipe]), a([v]))[0])
        assert loss == float(training_loss_in_flight(a([pp]), a([m]), a([gpipe]), a([v]))[0])
        assert {type(first), type(last), type(loss)} == {float}


def test_scalar_microbatches_per_step_are_the_arrays() -> None:
    rng = random.Random(6)
    for _ in range(2000):
        batch = rng.choice([1, 3, 8, 64, 100, 1024, 1536])
        dp, b = rng.choice([1, 2, 4, 8, 64, 512, 4096]), rng.choice([1, 2, 3, 4, 16])
        lay = layouts_of_rows([(1, 1, dp, b, 1, 1, 1, 0, 2, 0)])
        expected = float(par.microbatches_per_step(batch, lay)[0])
        assert microbatches_per_step_one(batch, float(dp), float(b)) == expected


def test_rows_are_the_enumerated_layouts_and_their_arguments() -> None:
    rng = random.Random(7)
    checked = 0
    while checked < 150:
        arch = get_preset(rng.choice(MODELS)).architecture
        n = rng.choice([1, 2, 4, 8, 16, 32, 64])
        batch = n * rng.choice([1, 2, 3, 8])
        options = SearchOptions(
            micro_batches=tuple(rng.sample([1, 2, 4], rng.randint(1, 2))),
            recompute=tuple(rng.sample(["none", "selective", "full"], rng.randint(1, 3))),
            interleave=tuple(rng.sample([1, 2], rng.randint(1, 2))),
            zero_stages=tuple(rng.sample([0, 1, 2, 3], rng.randint(1, 4))),
            max_tp=rng.choice([None, 2, 8]),
            zero_with_pipeline=rng.random() < 0.3,
        )
        rows = layout_rows(arch, n, batch, options)
        lay = enumerate_layouts(arch, n, batch, options)
        if rows is None:  # many: the arrays only
            continue
        assert len(rows) == len(lay)
        if not rows:
            continue
        again = layouts_of_rows(rows)
        for name in par.LAYOUT_FIELDS:
            assert getattr(again, name).tolist() == getattr(lay, name).tolist(), name
        m = par.microbatches_per_step(batch, lay)
        assert par.row_arguments(rows, batch) == _one_by_one(lay, m)
        types = [tuple(type(x) for x in args) for args in _one_by_one(lay, m)]
        assert [tuple(type(x) for x in args) for args in par.row_arguments(rows, batch)] == types
        checked += 1
