"""The one-layout fast paths give the general (array) path's values exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.kept import kept
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.sections import serving, training_memory
from llm_planner.core.sections.inference import InferenceInputs, serving_deployment
from llm_planner.core.sections.parallelism import parallelism_report, step_time_compute


def test_gemm_efficiency_of_one_gemm_equals_the_array_path() -> None:
    sizes = (1.0, 7.0, 64.0, 127.0, 128.0, 129.0, 4096.0, 14336.0 / 3, 1e6)
    for m, n, k in itertools.product(sizes, repeat=3):
        for sms, peak, bandwidth, batch in (
            (132, 989e12, math.inf, 1.0),
            (108, 312e12, 1.6e12, 1.0),
            (132, 1979e12, 3.35e12, 32.0),
        ):
            kw = {
                "sms": sms,
                "large_efficiency": 0.8,
                "peak_flops": peak,
                "memory_bytes_per_s": bandwidth,
            }
            one = comm.gemm_efficiency(np.array([m]), n, k, batch=batch, **kw)
            many = comm.gemm_efficiency(np.array([m, m]), n, k, batch=batch, **kw)
            assert one.shape == (1,)
            assert one[0] == many[0], (m, n, k, sms, peak, bandwidth, batch)
            scalar = comm.gemm_efficiency(m, n, k, batch=batch, **kw)
            assert scalar.shape == ()
            assert float(scalar) == many[0]


def test_gemm_efficiency_edge_cases_keep_numpy_rules() -> None:
    kw = {"sms": 132, "large_efficiency": 0.8, "peak_flops": 989e12}
    with np.errstate(all="ignore"):
        for m in (0.0, math.inf, math.nan):
            one = comm.gemm_efficiency(np.array([m]), 4096.0, 4096.0, **kw)
            many = comm.gemm_efficiency(np.array([m, m]), 4096.0, 4096.0, **kw)
            np.testing.assert_array_equal(one, many[:1])


def _deployment(engine: str, num_gpus: int) -> serving.Deployment:
    arch = get_preset("llama-3.1-8b").architecture
    counts = count_parameters(arch)
    inputs = InferenceInputs(engine=engine, num_gpus=num_gpus)
    return serving_deployment(arch, counts.total, counts.active, get_gpu("h100-sxm"), inputs)


def test_serving_section_shares_its_curve_and_prefill_with_the_general_path() -> None:
    """estimate_serving reuses the curve's last operation and one single-prompt prefill:
    the same values as operate and serving_curve called afresh."""
    for engine in ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "lmdeploy"):
        for num_gpus, (prompt, output), asked in itertools.product(
            (1, 2), ((128, 128), (2048, 256)), (None, 1, 7, 100_000)
        ):
            d = _deployment(engine, num_gpus)
            report = serving.estimate_serving(d, prompt, output, asked, 2.0)
            largest, _ = serving.max_concurrency(d, prompt, output)
            ask = largest if asked is None else asked
            op = serving.operate(d, max(1, ask), prompt, output, max(1, largest))
            assert report.curve == serving.serving_curve(d, prompt, output, largest)
            assert (report.concurrency, report.ttft_seconds, report.tpot_seconds) == (
                op.concurrency,
                op.ttft,
                op.tpot,
            )
            assert report.output_tokens_per_s == op.output_tokens_per_s
            assert report.prefill_seconds == serving.prefill_time(d, 1, prompt).seconds


def test_one_layout_gemm_efficiency_equals_the_array_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parallelism report priced with the one-layout GEMM efficiencies equals the same
    report with the array path forced, on a grid of models, GPUs and layouts."""
    cases = [
        ("llama-3.1-8b", "h100-sxm", 8, {}, {}),
        ("llama-3.1-8b", "a100-sxm-80gb", 16, {"tp": 2, "sequence_parallel": True}, {}),
        ("llama-3.1-70b", "h100-sxm", 64, {"tp": 8, "pp": 4, "cp": 2}, {"micro_batch": 2}),
        ("mixtral-8x7b", "h100-sxm", 32, {"tp": 2, "expert_parallel": 4}, {}),
        ("deepseek-v3", "h200", 256, {"tp": 4, "pp": 8, "expert_parallel": 8}, {}),
        ("llama-2-7b", "a100-sxm-80gb", 8, {}, {"precision": "fp8_delayed"}),
    ]

    def reports() -> list[dict[str, object]]:
        out = []
        for preset, gpu_id, num_gpus, par_update, train_update in cases:
            s = default_scenario()
            arch = get_preset(preset).architecture
            training = s.training.model_copy(update=train_update)
            inputs = s.parallelism.model_copy(update=par_update)
            out.append(
                parallelism_report(arch, get_gpu(gpu_id), num_gpus, inputs, training).model_dump()
            )
        return out

    taken = []
    one_layout = step_time_compute._one_gemm_inverse_efficiency

    def counted(*args: object, **kwargs: object) -> tuple[float, float] | None:
        value = one_layout(*args, **kwargs)  # type: ignore[arg-type]
        taken.append(value is not None)
        return value

    monkeypatch.setattr(step_time_compute, "_one_gemm_inverse_efficiency", counted)
    fast = reports()
    assert taken == [True] * len(cases)

    def declined(*_: object, **__: object) -> None:
        return None

    monkeypatch.setattr(step_time_compute, "_one_gemm_inverse_efficiency", declined)
    assert fast == reports()


def test_layout_count_of_the_memory_inputs_is_numpy_size() -> None:
    for x in (1, 2.5, True, np.int64(3), np.float64(2.0), np.bool_(False), [1, 2, 3], (4, 5)):
        assert training_memory._size(x) == np.size(x)
    for a in (np.arange(5), np.array(7), np.zeros((0,)), np.array([True, False])):
        assert training_memory._size(a) == np.size(a)


def test_kept_values_hash_once_and_still_compute_unhashable_arguments_afresh() -> None:
    calls: list[object] = []

    @kept()
    def double(x: object) -> object:
        calls.append(x)
        if isinstance(x, str):
            raise TypeError("no strings")
        return [x, x] if isinstance(x, list) else (x, x)

    assert double(1) == (1, 1)
    assert double(1) == (1, 1)
    assert calls == [1]
    assert double([2]) == [[2], [2]]
    assert double([2]) == [[2], [2]]  # unhashable: computed each time
    assert calls == [1, [2], [2]]
    with pytest.raises(TypeError, match="no strings"):
        double("a")


def test_collective_latency_of_one_group_equals_the_array_path() -> None:
    """One group (length-1 arrays, the scenario's layout: Python floats) and the same group
    among others (numpy) give the same latency, for both kinds, inside and across nodes."""
    rng = np.random.default_rng(5)
    checked = 0
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        for ranks in (1.0, 2.0, 3.0, 8.0, 16.0, 64.0, 96.0, 1024.0):
            for nodes in (0.0, 1.0, 2.0, 3.0, 8.0, 12.0, 128.0):
                intra, inter, base = rng.uniform(1e-6, 2e-5, 3)
                kw = {"intra_step": intra, "inter_step": inter, "base": base}
                one = comm.collective_latency_seconds(
                    kind, np.array([ranks]), np.array([nodes]), **kw
                )
                many = comm.collective_latency_seconds(
                    kind, np.array([ranks, 5.0]), np.array([nodes, 1.0]), **kw
                )
                assert one.shape == (1,)
                assert one[0] == many[0], (kind, ranks, nodes)
                checked += ranks > 1 and nodes > 1
    assert checked > 50  # across nodes (the tree's log2 taken)


def test_one_layout_step_time_equals_the_layout_among_others() -> None:
    """Every figure of the step-time pricing of one layout (length-1 arrays: the one-layout
    paths in Python floats, GEMM efficiencies, collective latencies, data parallelism) is
    that layout's among 40 others (the array paths), over enumerated layouts of random
    scenarios: models (dense, MoE, MLA), GPUs, stacks, ZeRO stages, fine-tuning, offload."""
    import random

    from llm_planner.core.composition.search_engine import _Problem
    from llm_planner.core.composition.search_layouts import SearchOptions, enumerate_layouts
    from llm_planner.core.sections import parallelism as par

    rng = random.Random(41)
    base = default_scenario()
    models = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-27b", "gpt-3-175b"]
    checked = 0
    while checked < 300:
        arch = get_preset(rng.choice(models)).architecture
        updates: dict[str, object] = {
            "stack": rng.choice(["megatron", "deepspeed", "torchtitan", "nanotron", "hf"]),
            "precision": rng.choice(["mixed_bf16", "fp8_delayed", "mixed_fp16"]),
            "seq_len": rng.choice([2048, 4096]),
        }
        if rng.random() < 0.2:
            updates["lora_rank"] = 16
        for name in ("low_precision_params", "grad_reduce_16bit"):
            updates[name] = rng.random() < 0.3
        updates["activation_offload_layers"] = rng.choice([0, 0, 2])
        try:
            training = base.training.model_copy(update=updates)
            training = type(training).model_validate(training.model_dump())
        except ValueError:
            continue
        gpu = get_gpu(rng.choice(["h100-sxm", "a100-sxm-80gb", "h200"]))
        inputs = base.parallelism.model_copy(
            update={"global_batch": rng.choice([64, 512]), "dp_overlap": rng.random()}
        )
        problem = _Problem(arch, gpu, inputs, training, params_override=None)
        n = rng.choice([8, 16, 64, 256])
        options = SearchOptions(
            micro_batches=(1, 2), interleave=(1, 2), max_tp=8, context_parallel=(1, 2)
        )
        lay = enumerate_layouts(arch, n, max(n, inputs.global_batch), options, seq_len=4096)
        if len(lay) < 2:
            continue
        pick = np.array(rng.sample(range(len(lay)), min(len(lay), 40)))
        many = lay.take(pick)
        together = par.evaluate_layouts(
            problem.work, problem.cluster, many, None, problem.step_inputs
        )
        for i in range(min(len(many), 8)):
            alone = par.evaluate_layouts(
                problem.work, problem.cluster, many.take(np.array([i])), None, problem.step_inputs
            )
            for key, value in alone.items():
                assert value.shape == (1,), key
                assert value[0] == together[key][i], (key, i, value[0], together[key][i])
            checked += 1


def test_few_layouts_enumerated_in_python_are_the_array_enumeration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The enumeration of a few candidates in Python lists gives the very arrays (values,
    dtypes, order) of the array enumeration, over models, GPU counts and options."""
    import random

    from llm_planner.core.composition import search_layouts
    from llm_planner.core.composition.search_layouts import SearchOptions, enumerate_layouts
    from llm_planner.core.sections.parallelism.layout import LAYOUT_FIELDS

    rng = random.Random(3)
    cases = []
    for _ in range(150):
        arch = get_preset(rng.choice(["llama-3.1-8b", "mixtral-8x7b", "gpt-3-175b"])).architecture
        n = rng.choice([1, 2, 4, 8, 16, 32])
        options = SearchOptions(
            micro_batches=rng.choice([(1,), (1, 2)]),
            recompute=rng.choice([("full",), ("none", "selective", "full")]),
            interleave=rng.choice([(1,), (1, 2)]),
            zero_with_pipeline=rng.random() < 0.5,
            max_tp=8,
        )
        cases.append((arch, n, max(n, rng.choice([16, 64])), options))
    few = [enumerate_layouts(*case) for case in cases]
    monkeypatch.setattr(search_layouts, "ENUMERATED_IN_PYTHON_BELOW", 0)
    arrays = [enumerate_layouts(*case) for case in cases]
    small = 0
    for a, b in zip(few, arrays, strict=True):
        small += 0 < len(b) <= 512
        for name in LAYOUT_FIELDS:
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype, name
            assert x.tolist() == y.tolist(), name
    assert small > 50


def test_parameter_count_of_alike_layers_equals_the_layer_by_layer_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where every layer is alike (no hybrid, KV-sharing or global-layer shapes) the count
    takes L × one layer; counted layer by layer instead it is the same, for every preset
    and for MoE variants with dense leading layers and MoE periods."""
    from llm_planner.core.primitives import architecture
    from llm_planner.core.primitives.kept import forget_all
    from llm_planner.core.primitives.presets import model_presets

    archs = [p.architecture for p in model_presets().values()]
    for arch in list(archs):
        if arch.moe is not None:
            moe = arch.moe.model_copy(update={"first_dense_layers": 3, "layer_period": 2})
            archs.append(arch.model_copy(update={"moe": moe}))
    assert sum(not architecture.layers_differ(a) for a in archs) > 10  # the fast path taken
    alike = [architecture._count_parameters(a) for a in archs]
    forget_all()
    monkeypatch.setattr(architecture, "layers_differ", lambda _arch: True)
    by_layer = [architecture._count_parameters(a) for a in archs]
    assert alike == by_layer


def test_workload_of_one_recompute_policy_prices_its_layouts_as_the_full_workload() -> None:
    """A workload whose hardware-FLOPs factors hold only one recompute policy's (the others
    NaN: the parallelism report's one layout) prices every layout of that policy exactly as
    the workload with all three, partial full recomputation (block, every N) included."""
    import random

    from llm_planner.core.composition.search_engine import _Problem
    from llm_planner.core.composition.search_layouts import SearchOptions, enumerate_layouts
    from llm_planner.core.sections import parallelism as par

    rng = random.Random(7)
    base = default_scenario()
    models = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt-3-175b"]
    checked = 0
    while checked < 120:
        arch = get_preset(rng.choice(models)).architecture
        policy = rng.choice(par.RECOMPUTE_CODES)
        updates: dict[str, object] = {
            "stack": rng.choice(["megatron", "deepspeed", "torchtitan", "nanotron"]),
            "recompute": policy,
            "recompute_method": rng.choice(["uniform", "block", "every"]),
            "recompute_layers": rng.choice([None, 1, 3]),
        }
        try:
            training = base.training.model_copy(update=updates)
            training = type(training).model_validate(training.model_dump())
        except ValueError:
            continue
        gpu = get_gpu(rng.choice(["h100-sxm", "a100-sxm-80gb"]))
        problem = _Problem(arch, gpu, base.parallelism, training, params_override=None)
        n = rng.choice([8, 64])
        options = SearchOptions(micro_batches=(1, 2), max_tp=8, recompute=(policy,))
        lay = enumerate_layouts(arch, n, max(n, 512), options, seq_len=4096)
        if len(lay) == 0:
            continue
        assert set(lay.recompute.tolist()) == {par.RECOMPUTE_CODES.index(policy)}
        full = problem.work
        one = par.workload_of(
            arch,
            int(training.seq_len),
            base.parallelism.global_batch,
            problem.params,
            training_inputs=training,
            only_recompute=policy,
        )
        nan = [math.isnan(f) for f in one.hw_flops_factor]
        assert nan == [code != policy for code in par.RECOMPUTE_CODES]
        pick = lay.take(np.array(rng.sample(range(len(lay)), min(len(lay), 20))))
        expected = par.evaluate_layouts(full, problem.cluster, pick, None, problem.step_inputs)
        got = par.evaluate_layouts(one, problem.cluster, pick, None, problem.step_inputs)
        for key, value in expected.items():
            assert np.array_equal(value, got[key], equal_nan=True), (key, policy, updates)
        checked += 1


def test_stages_params_equal_stage_params_stage_by_stage() -> None:
    """:func:`.training_params.stages_params` (the layers' sums once per layer count) gives
    each stage's :func:`.training_params.stage_params` exactly, over models (dense, MoE,
    MLA, hybrid, tied), LoRA and parameter-count overrides."""
    import random

    from llm_planner.core.inputs.training import TrainingInputs
    from llm_planner.core.primitives.presets import model_presets
    from llm_planner.core.sections.training_params import stage_params, stages_params

    rng = random.Random(5)
    names = sorted(model_presets())
    for _ in range(60):
        arch = get_preset(rng.choice(names)).architecture
        ti = TrainingInputs(lora_rank=rng.choice([None, 16]))
        scale = rng.choice([1.0, 0.5, 1.7])
        stages = [
            (
                rng.choice([0, 1, arch.layers // 2, arch.layers]),
                *rng.choice([(False, False), (True, False), (False, True), (True, True)]),
                rng.choice([1, 2, 4]),
            )
            for _ in range(6)
        ]
        got = stages_params(arch, ti, stages, scale=scale)
        for (layers, first, last, pp), one in zip(stages, got, strict=True):
            want = stage_params(
                arch, ti, layers_on_stage=layers, first=first, last=last, pp=pp, scale=scale
            )
            assert one == want, (arch.name, layers, first, last, pp)


def test_kept_hash_of_inputs_is_their_fields_hash_and_never_stale() -> None:
    """``Architecture`` and ``TrainingInputs`` keep their hash once computed: it is the hash
    of the tuple of their fields' values (pydantic's own), equal models hash equal, and a
    copy with an updated field (model_copy, as the estimate makes dozens of), a deep copy
    or a pickled copy hashes its own fields, not the original's kept value."""
    import copy
    import pickle

    from llm_planner.core.inputs.training import TrainingInputs

    arch = get_preset("llama-3.1-8b").architecture
    ti = TrainingInputs(seq_len=4096)
    for model, field, value in ((arch, "layers", 33), (ti, "seq_len", 8192)):
        fields = tuple(getattr(model, name) for name in type(model).model_fields)
        assert hash(model) == hash(fields)
        assert hash(model) == hash(fields)  # the kept value
        twin = type(model).model_validate(model.model_dump())
        assert twin == model
        assert hash(twin) == hash(model)
        changed = model.model_copy(update={field: value})
        assert changed != model
        assert hash(changed) == hash(tuple(getattr(changed, n) for n in type(model).model_fields))
        assert hash(changed) != hash(model)
        for other in (copy.copy(model), copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert other == model
            assert hash(other) == hash(model)
        back = changed.model_copy(update={field: getattr(model, field)})
        assert back == model
        assert hash(back) == hash(model)
