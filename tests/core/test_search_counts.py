"""The hardware ranking's searches, priced together and memory first, are the searches'.

``search_counts`` prices several GPU counts' candidates in one evaluation, and ``_run_counts``
prices step time only for the layouts whose memory fits. These tests hold both to what
pricing every candidate of one count alone gives (``evaluate_layouts`` on all of them):
the same candidates, the same number that fit, the same best row."""

from __future__ import annotations

import numpy as np
import pytest

from llm_planner.core.composition.ranking import layout_uncertainties, ranking_factor
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.composition.search import (
    SearchOptions,
    _Problem,
    enumerate_layouts,
    search,
    search_counts,
)
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par

CASES = [
    ("llama-3.1-8b", "h100-sxm", [1, 2, 8, 64, 512, 2048, 4096]),
    ("llama-2-70b", "a100-40gb", [4, 16, 128, 1024, 1536]),
    ("mixtral-8x7b", "h100-sxm", [2, 8, 32]),
]


def _scenario(model: str, gpu: str):
    base = default_scenario()
    return base.model_copy(
        update={
            "model": base.model.model_copy(
                update={"preset": model, "architecture": get_preset(model).architecture}
            ),
            "gpu": get_gpu(gpu),
        }
    )


@pytest.mark.parametrize(("model", "gpu", "counts"), CASES)
def test_search_counts_is_each_counts_search(model, gpu, counts):
    sc = _scenario(model, gpu)
    together = search_counts(
        sc.model.architecture, sc.gpu, counts, sc.parallelism, sc.training, top=3
    )
    for n, got in zip(counts, together, strict=True):
        batch = sc.parallelism.global_batch if n <= sc.parallelism.global_batch else n
        alone = search(
            sc.model.architecture,
            sc.gpu,
            n,
            sc.parallelism.model_copy(update={"global_batch": batch}),
            sc.training,
            top=3,
        )
        assert (got.num_gpus, got.candidates, got.fitting) == (
            alone.num_gpus,
            alone.candidates,
            alone.fitting,
        )
        assert got.rows == alone.rows


@pytest.mark.parametrize(("model", "gpu", "counts"), CASES)
def test_best_row_is_the_fastest_of_every_fitting_candidate(model, gpu, counts):
    """Against pricing every candidate, memory included, in one evaluate_layouts call, and
    ranking each fitting one by its ranking figure (modeled tokens/s × its spread's factor,
    looked up layout by layout)."""
    sc = _scenario(model, gpu)
    for n in counts:
        result = search(sc.model.architecture, sc.gpu, n, sc.parallelism, sc.training, top=1)
        problem = _Problem(
            sc.model.architecture, sc.gpu, sc.parallelism, sc.training, params_override=None
        )
        options = SearchOptions(max_tp=sc.parallelism.gpus_per_node)
        lay = enumerate_layouts(sc.model.architecture, n, sc.parallelism.global_batch, options)
        assert result.candidates == len(lay)
        if not len(lay):
            continue
        out = par.evaluate_layouts(
            problem.work, problem.cluster, lay, problem.memory, problem.step_inputs
        )
        fit = out["peak_bytes"] <= sc.gpu.memory_bytes
        assert result.fitting == int(np.count_nonzero(fit))
        if result.fitting:
            index = np.flatnonzero(fit)
            spreads = layout_uncertainties(
                sc.training.stack,
                lay.tp[index],
                lay.pp[index],
                lay.dp[index],
                lay.zero[index],
                gpus_per_node=sc.parallelism.gpus_per_node,
            )
            ranked = out["tokens_per_s"][index] * np.array([ranking_factor(u) for u in spreads])
            assert result.rows[0].ranked_tokens_per_s == float(ranked.max())
            assert result.rows[0].peak_bytes <= sc.gpu.memory_bytes
        else:
            assert result.rows == []


@pytest.mark.parametrize(
    "keys",
    [
        ([3.0, 1.0, 2.0], [0.0, 0.0, 0.0], [5.0, 5.0, 5.0]),  # the last key ties everywhere
        ([2.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 9.0], [-7.0, -7.0, -7.0, -6.0]),  # full ties
        ([1.0, 2.0], [0.0, -0.0], [-1.0, -1.0]),  # -0.0 and 0.0 tie
        ([1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [np.nan, -1.0, -1.0]),  # a NaN: the sort decides
        ([4.0], [1.0], [2.0]),
    ],
)
def test_first_of_lexsort_is_lexsorts_first(keys):
    from llm_planner.core.composition.search import _first_of_lexsort

    arrays = tuple(np.array(k) for k in keys)
    index = np.arange(10, 10 + len(keys[0]))
    assert _first_of_lexsort(index, arrays) == int(index[np.lexsort(arrays)[0]])


def test_screened_candidates_are_kept_and_read_only():
    """The hardware ranking's GPU kinds share one count's candidates and memory screen: the
    same frozen inputs give the very same arrays, which no caller can change."""
    from llm_planner.core.composition.search import _screened

    sc = _scenario("llama-3.1-8b", "h100-sxm")
    options = SearchOptions(max_tp=8)
    args = (sc.model.architecture, sc.training, 8.0e9)
    one = _screened(*args, num_gpus=16, global_batch=1024, options=options)
    again = _screened(*args, num_gpus=16, global_batch=1024, options=options)
    assert one is again
    assert len(one[0]) == len(enumerate_layouts(sc.model.architecture, 16, 1024, options))
    with pytest.raises(ValueError, match="read-only"):
        one[1]["peak_bytes"][0] = 0.0
    with pytest.raises(ValueError, match="read-only"):
        one[0].tp[0] = 3


def test_parameter_counts_are_kept_per_architecture():
    from llm_planner.core.primitives.architecture import _count_parameters, count_parameters
    from llm_planner.core.primitives.kept import forget_all

    arch = get_preset("llama-2-7b").architecture
    forget_all()
    first = count_parameters(arch)
    assert count_parameters(arch.model_copy()) is first  # an equal shape: the same count
    assert first == _count_parameters(arch)
    forget_all()
    assert count_parameters(arch) is not first


@pytest.mark.parametrize(
    ("model", "gpu"),
    [
        ("llama-3.1-8b", "h100-sxm"),
        ("llama-3.1-405b", "h100-sxm"),
        ("llama-2-70b", "a100-40gb"),
        ("mixtral-8x7b", "a100-80gb"),
        ("gpt-3-175b", "h100-sxm"),
        ("mamba-130m", "a100-40gb"),
    ],
)
@pytest.mark.parametrize("max_gpus", [1, 8, 4096])
def test_fewest_gpus_is_the_first_count_a_search_fills(model, gpu, max_gpus):
    """Against searching each power of two in turn (the frugal options, the batch raised to
    a multiple of the count), the first with a row."""
    import math

    from llm_planner.core.composition.search import FRUGAL_OPTIONS, min_gpus_per_instance

    sc = _scenario(model, gpu)
    want = None
    n = 1
    while n <= max_gpus:
        batch = math.ceil(max(n, sc.parallelism.global_batch) / n) * n
        inputs = sc.parallelism.model_copy(update={"global_batch": batch})
        if search(
            sc.model.architecture, sc.gpu, n, inputs, sc.training, options=FRUGAL_OPTIONS, top=1
        ).rows:
            want = n
            break
        n *= 2
    got = min_gpus_per_instance(
        sc.model.architecture, sc.gpu, sc.parallelism, sc.training, max_gpus=max_gpus
    )
    assert got == want
