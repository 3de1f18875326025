"""The estimate's memo: a change recomputes what it invalidates, and every figure equals
the one a memo-less estimate gives (compared with the memo cleared before each estimate)."""

from __future__ import annotations

from typing import Any

from llm_planner.core.composition import estimate as est
from llm_planner.core.composition.scenario import Scenario, default_scenario


def _fresh(scenario: Scenario) -> dict[str, Any]:
    est.clear_memo()
    return est.report_json(est.estimate(scenario))


def test_each_tab_change_gives_the_figures_of_a_fresh_estimate() -> None:
    base = default_scenario()
    changes = [
        base.model_copy(update={"num_gpus": 1024}),
        base.model_copy(update={"inference": base.inference.model_copy(update={"context": 4096})}),
        base.model_copy(update={"training": base.training.model_copy(update={"micro_batch": 2})}),
        base.model_copy(update={"training": base.training.model_copy(update={"seq_len": 4096})}),
        base.model_copy(update={"parallelism": base.parallelism.model_copy(update={"tp": 2})}),
        base.model_copy(
            update={"parallelism": base.parallelism.model_copy(update={"global_batch": 512})}
        ),
        base.model_copy(update={"compute": base.compute.model_copy(update={"tokens": 1e12})}),
    ]
    expected = [_fresh(s) for s in [base, *changes]]
    est.clear_memo()
    # every change after the base and back again: each estimate may reuse the memo
    order = [base, *changes, base, *reversed(changes)]
    got = [est.report_json(est.estimate(s)) for s in order]
    assert got[0] == expected[0]
    assert got[1 : len(changes) + 1] == expected[1:]
    assert got[len(changes) + 1] == expected[0]
    assert got[len(changes) + 2 :] == list(reversed(expected[1:]))
    # and the changes really changed what they should (so the comparison above can fail)
    assert expected[2]["inference"] != expected[0]["inference"]
    assert expected[3]["training"] != expected[0]["training"]
    assert expected[5]["parallelism"] != expected[0]["parallelism"]


def test_an_inference_change_reuses_the_training_and_parallelism_sections() -> None:
    base = default_scenario()
    est.clear_memo()
    first = est.estimate(base)
    other = base.model_copy(
        update={"inference": base.inference.model_copy(update={"context": 2048})}
    )
    second = est.estimate(other)
    assert second.parallelism is first.parallelism
    assert second.training is first.training
    assert second.inference is not first.inference


def test_memo_keys_tell_types_and_list_fields_apart() -> None:
    assert est._frozen(1) != est._frozen(1.0)
    assert est._frozen(True) != est._frozen(1)
    base = default_scenario().parallelism
    a = base.model_copy(update={"measured_points": [(8, 1.0)]})
    b = base.model_copy(update={"measured_points": [(8, 2.0)]})
    assert est._frozen(a) != est._frozen(b)
    assert est._frozen(a) == est._frozen(base.model_copy(update={"measured_points": [(8, 1.0)]}))
    # a model that cannot be hashed is keyed field by field once per object
    assert est._frozen(a) is est._frozen(a)
    assert hash(est._frozen(a)) == hash(est._frozen(a.model_copy()))


def test_the_zero_stage_rows_are_the_comparison_s_own_and_kept() -> None:
    from llm_planner.core.sections.parallelism import zero_stage_comparison

    base = default_scenario()
    est.clear_memo()
    rows = est.zero_stages(base)
    assert rows == zero_stage_comparison(
        base.model.architecture,
        base.training,
        base.gpu,
        base.parallelism,
        base.num_gpus,
        params_override=base.model.params_override,
    )
    assert est.zero_stages(base) is rows  # the same inputs: kept, not recomputed
    other = base.model_copy(update={"parallelism": base.parallelism.model_copy(update={"tp": 2})})
    assert est.zero_stages(other) != rows  # a new layout: computed anew


def test_an_inference_change_reuses_the_compute_section() -> None:
    base = default_scenario()
    est.clear_memo()
    first = est.estimate(base)
    other = base.model_copy(
        update={"inference": base.inference.model_copy(update={"context": 2048})}
    )
    assert est.estimate(other).compute is first.compute
    cheaper = base.model_copy(
        update={"compute": base.compute.model_copy(update={"price_usd_per_gpu_hour": 1.0})}
    )
    assert est.estimate(cheaper).compute != first.compute
