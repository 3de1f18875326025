"""Layouts priced once per group of equal degrees (``primitives.groups``,
``Layouts.groups``, ``priced_per_group``): the same values as pricing every layout."""

from __future__ import annotations

import numpy as np
import pytest

from llm_planner.core.primitives import groups as grp
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import layout as layout_module
from llm_planner.core.sections.parallelism.step_time_inputs import step_inputs_of
from llm_planner.core.sections.training import TrainingInputs


def test_distinct_indexes_values_in_ascending_order() -> None:
    # distinct values 1, 4, 16 → indexes 0, 1, 2
    index, count = grp.distinct(np.array([4, 1, 16, 4, 1], dtype=np.int64))
    assert count == 3
    assert index.tolist() == [1, 0, 2, 1, 0]
    # 0..k-1 already dense (ZeRO stages): its own index
    index, count = grp.distinct(np.array([3, 0, 2, 1, 3], dtype=np.int64))
    assert (count, index.tolist()) == (4, [3, 0, 2, 1, 3])
    index, count = grp.distinct(np.array([True, False, True]))
    assert (count, index.tolist()) == (2, [1, 0, 1])
    index, count = grp.distinct(np.array([8, 8, 8], dtype=np.int64))
    assert (count, index.tolist()) == (1, [0, 0, 0])


def test_group_by_puts_equal_keys_together_and_declines_without_repeats() -> None:
    a = np.array([1, 2, 1, 2, 1, 2, 1, 2], dtype=np.int64)
    b = np.array([0, 0, 0, 0, 3, 3, 3, 3], dtype=np.int64)
    groups = grp.group_by([grp.distinct(a), grp.distinct(b)], 8, most=8)
    assert groups is not None
    assert len(groups) == 4  # (1,0) (2,0) (1,3) (2,3)
    keys = {(int(a[i]), int(b[i])) for i in groups.first.tolist()}
    assert keys == {(1, 0), (2, 0), (1, 3), (2, 3)}
    for i in range(8):  # each entry's group holds its own key
        rep = int(groups.first[groups.inverse[i]])
        assert (a[rep], b[rep]) == (a[i], b[i])
    # 8 distinct keys among 8 entries: no repeat, nothing to gain (default most = n / 4)
    assert grp.group_by([grp.distinct(np.arange(8, dtype=np.int64))], 8) is None
    # a value that differs within a group is refused, not spread
    assert groups.members_agree(np.arange(8, dtype=np.float64)) is None
    same = (a * 10 + b).astype(np.float64)
    agreed = groups.members_agree(same)
    assert agreed is not None
    assert np.array_equal(groups.spread(agreed), same)


def _random_layouts(n: int, seed: int, *, moe: bool) -> par.Layouts:
    rng = np.random.default_rng(seed)

    def pick(values: list[int]) -> np.ndarray:
        return rng.choice(np.array(values, dtype=np.int64), n)

    tp, dp = pick([1, 2, 4, 8]), pick([1, 2, 4, 8, 16, 64, 256])
    return par.Layouts(
        tp=tp,
        pp=pick([1, 2, 4, 8]),
        dp=dp,
        ep=pick([1, 2, 4]) if moe else np.ones(n, dtype=np.int64),
        zero=pick([0, 1, 2, 3]),
        shard=np.where(rng.random(n) < 0.5, dp, np.maximum(dp // 2, 1)),
        micro_batch=pick([1, 2, 4]),
        v=pick([1, 2]),
        gpipe=rng.random(n) < 0.3,
        sp=(tp > 1) & (rng.random(n) < 0.5),
        recompute=pick([0, 1, 2]),
        cp=pick([1, 2]),
    )


@pytest.mark.parametrize(
    ("model", "training"),
    [
        ("llama-3.1-70b", {}),
        ("mixtral-8x7b", {"moe_dispatcher": "allgather"}),
        ("qwen3-30b-a3b", {"stack": "torchtitan"}),
        ("llama-3.1-8b", {"stack": "nanotron"}),
        ("llama-2-13b", {"lora_rank": 16, "qlora": True, "flash_attention": False}),
        ("llama-2-70b", {"offload_optimizer": "cpu", "stack": "deepspeed"}),
    ],
)
def test_grouped_pricing_equals_pricing_every_layout(
    model: str, training: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every figure of ``evaluate_layouts``, bit for bit, with the layouts grouped and with
    every layout priced (grouping off): random layouts that repeat their degrees, each
    field drawn on its own, so a term that read a field outside its group's key would
    differ."""
    arch = get_preset(model).architecture
    ti = TrainingInputs(seq_len=4096, **training)  # type: ignore[arg-type]
    params = float(count_parameters(arch).total)
    work = par.workload_of(arch, 4096, 1024, params, training_inputs=ti)
    cluster = par.cluster_of(get_gpu("h100-sxm"), par.ParallelInputs())
    terms = par.memory_terms(arch, ti, params)
    si = step_inputs_of(arch, ti)
    moe = arch.moe is not None
    fields = _random_layouts(20_000, 7, moe=moe)

    def priced() -> dict[str, np.ndarray]:
        lay = par.Layouts(**{k: getattr(fields, k) for k in par.LAYOUT_FIELDS})
        return par.evaluate_layouts(work, cluster, lay, terms, si)

    monkeypatch.setattr(layout_module, "GROUP_FROM", 2048)  # 20,000 layouts: grouped
    monkeypatch.setattr(grp, "GROUP_FROM", 2048)
    grouped = priced()
    assert par.Layouts(**{k: getattr(fields, k) for k in par.LAYOUT_FIELDS}).groups(("tp",))
    monkeypatch.setattr(layout_module, "GROUP_FROM", 10**12)
    monkeypatch.setattr(grp, "GROUP_FROM", 10**12)
    every = priced()
    assert grouped.keys() == every.keys()
    for key, value in every.items():
        assert np.array_equal(np.asarray(grouped[key]), np.asarray(value), equal_nan=True), key


def test_per_group_prices_each_group_once_and_refuses_what_it_cannot_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grp, "GROUP_FROM", 4)
    tp = np.tile(np.array([1, 2], dtype=np.int64), 8)
    shard = np.repeat(np.array([4.0, 8.0]), 8)  # 16 entries, 4 groups of 4
    seen: list[int] = []

    def price(index: np.ndarray) -> list[np.ndarray | float]:
        seen.append(len(index))
        return [shard[index] / tp[index], 3.0]

    out = grp.per_group([tp, shard], price, 16)
    assert out is not None
    assert seen == [4]  # (1, 4) (2, 4) (1, 8) (2, 8), each priced once
    assert np.array_equal(out[0], shard / tp)
    assert out[1] == 3.0  # a scalar stays one
    # a float column that is not whole within a group (4.5 keys as 4): every entry priced
    half = shard + np.where(np.arange(16) == 0, 0.5, 0.0)
    assert grp.per_group([tp, half], price, 16) is None
    assert grp.per_group([tp - 2, shard], price, 16) is None  # negative: not a key
    # the caller's grouping, finer than (tp, shard) (by the entry's half, 8 groups): taken
    # as given, each of its groups priced once
    monkeypatch.setattr(grp, "GROUP_FROM", 10**12)  # too few entries to group here
    finer = grp.group_by(
        [
            grp.distinct(tp),
            grp.distinct(shard.astype(np.int64)),
            grp.distinct((np.arange(16) // 4) % 2),
        ],
        16,
        most=16,
    )
    assert finer is not None
    out = grp.per_group([tp, shard], price, 16, finer)
    assert out is not None
    assert seen[-1] == 8
    assert np.array_equal(out[0], shard / tp)
