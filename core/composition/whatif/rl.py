"""Reinforcement learning in the loop: rollout (generation) GPUs versus training GPUs.

One RL step generates N = prompts × samples responses with the current policy, then trains
on the N sequences of prompt + response tokens. Model:

- **Rollout** on engines of ``engine_gpus`` GPUs, priced by the serving model
  (:mod:`llm_planner.core.sections.serving`, checked against published engine benchmarks
  in docs/ACCURACY.md) on the scenario's serving engine (``inference.engine``): each engine
  decodes as many sequences b together as its KV pool and scheduler hold at prompt +
  response tokens (the KV cache inside the larger workflow), folding their prompts into the
  decode steps; a wave of b sequences takes b × response ÷ the engine's output tokens/s.
  t_roll(n) = waves(n) × t_wave. (v4 files' ``decode_bandwidth_efficiency`` is dropped on
  loading, :mod:`llm_planner.core.files.migrations`: the serving model's fitted fractions
  replace it.)
- **Training** at the estimate's one throughput per GPU (modeled, measured or assumed),
  scaled to the pool's GPUs (perfect data-parallel scaling assumed across pool sizes):
  t_train(n) = N · (prompt + response) ÷ (n · tokens/s per GPU).
- **Separate pools**: synchronous (on-policy) step = t_roll(n_r) + t_train(N − n_r), each
  pool idle while the other works; with ``overlap`` (one step off-policy, the next rollout
  during training) step = max of the two. **Colocated**: every GPU generates, then trains:
  step = t_roll(N) + t_train(N) + 2 × resharding (the weights move between the training
  and the inference layout at each phase change; by default 2·W ÷ (GPUs × intra-node link)).

For continuous pool sizes (t_roll = A/n_r, t_train = B/n_t, n_r + n_t = N) the synchronous
optimum is n_r = N·√A/(√A + √B) and the overlapped one n_r = N·A/(A + B); the plan searches
whole engines instead.
"""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.whatif.estimated import Estimated
from llm_planner.core.inputs.whatif import RLInputs
from llm_planner.core.sections.inference import estimate_inference, serving_deployment
from llm_planner.core.sections.serving import max_concurrency, operate


class RolloutEngine(BaseModel):
    """One inference engine of the rollout pool."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    max_batch: int
    """Sequences whose KV cache fits at the full prompt + response length."""
    weights_bytes_per_gpu: float
    kv_cache_bytes_per_gpu: float
    """At ``max_batch`` sequences of the full length."""
    wave_seconds: float
    """Prefill of a wave's prompts plus its response tokens' decode steps."""


class SplitPoint(BaseModel):
    """The step time with ``rollout_gpus`` generating and the rest training."""

    model_config = ConfigDict(frozen=True)

    rollout_gpus: int
    rollout_seconds: float
    training_seconds: float
    step_seconds: float


class RLPlan(BaseModel):
    """The RL step: engines, the best split, idle shares and the split curve."""

    model_config = ConfigDict(frozen=True)

    placement: str
    sequences_per_step: int
    tokens_per_step: float
    engine: RolloutEngine
    training_tokens_per_s_per_gpu: float
    rollout_gpus: int
    training_gpus: int
    rollout_seconds: float
    training_seconds: float
    reshard_seconds: float
    step_seconds: float
    rollout_idle_fraction: float
    training_idle_fraction: float
    training_peak_bytes: float
    curve: list[SplitPoint]
    problems: list[str]


MAX_CURVE_POINTS = 256
"""The split curve is sampled at most this many engine counts (:func:`split_curve`)."""


def _engine(scenario: Scenario, report: Estimated, rl: RLInputs) -> RolloutEngine:
    """One rollout engine, priced by the serving model (:mod:`.sections.serving`) on the
    scenario's serving engine: as many sequences of prompt + response as its KV pool and
    scheduler hold decode together (continuous batching folds the prompts in); a wave is
    the time those b sequences take, b × response ÷ the engine's output tokens/s."""
    length = rl.prompt_tokens + rl.response_tokens
    arch = scenario.model.architecture
    total, active = report.model.params_total, report.model.params_active
    base = scenario.inference.model_copy(
        update={"num_gpus": rl.engine_gpus, "context": length, "batch": 1, "batch_max": False}
    )
    deployment = serving_deployment(arch, total, active, scenario.gpu, base)
    largest, _ = max_concurrency(deployment, rl.prompt_tokens, rl.response_tokens)
    b = max(1, largest)
    op = operate(deployment, b, rl.prompt_tokens, rl.response_tokens, b)
    at_max = estimate_inference(
        arch, total, active, scenario.gpu, base.model_copy(update={"batch": b})
    )
    return RolloutEngine(
        gpus=rl.engine_gpus,
        max_batch=largest,
        weights_bytes_per_gpu=at_max.per_gpu_weights_bytes,
        kv_cache_bytes_per_gpu=at_max.per_gpu_kv_cache_bytes,
        wave_seconds=b * rl.response_tokens / op.output_tokens_per_s,
    )


def rollout_seconds(sequences: int, engines: int, engine: RolloutEngine) -> float:
    """Waves of ``max_batch`` sequences per engine, each ``wave_seconds`` long."""
    if engines < 1 or engine.max_batch < 1:
        return math.inf
    per_engine = math.ceil(sequences / engines)
    return math.ceil(per_engine / engine.max_batch) * engine.wave_seconds


def training_seconds(tokens: float, gpus: int, tokens_per_s_per_gpu: float) -> float:
    """Tokens ÷ (GPUs × the estimate's tokens/s per GPU)."""
    return tokens / (gpus * tokens_per_s_per_gpu) if gpus > 0 else math.inf


def split_curve(
    sequences: int,
    tokens: float,
    engine: RolloutEngine,
    *,
    gpus: int,
    engine_gpus: int,
    rate: float,
    overlap: bool,
) -> tuple[list[SplitPoint], SplitPoint | None]:
    """The separate pools' split curve (at most :data:`MAX_CURVE_POINTS` engine counts,
    plus the best) and its best split (None when no engine fits beside a training GPU).

    With more engine counts than that, the curve samples them evenly and the best is found
    by branch and bound: between two samples k₁ < k₂ no split can beat
    t_roll(k₂) + t_train(k₁) (max of the two when overlapped), since rollout time never
    grows with engines and training time never shrinks with them; only the brackets whose
    bound is under the best step so far are searched one engine count at a time. So the
    best split is the exhaustive one while a million GPUs cost 256 points, not a million
    (one point per GPU count printed 73 MB of JSON)."""
    engines = (gpus - 1) // engine_gpus  # at least one GPU left for training

    def point(k: int) -> SplitPoint:
        t_r = rollout_seconds(sequences, k, engine)
        t_t = training_seconds(tokens, gpus - k * engine_gpus, rate)
        step = max(t_r, t_t) if overlap else t_r + t_t
        return SplitPoint(
            rollout_gpus=k * engine_gpus,
            rollout_seconds=t_r,
            training_seconds=t_t,
            step_seconds=step,
        )

    if engines < 1:
        return [], None
    if engines <= MAX_CURVE_POINTS:
        counts = list(range(1, engines + 1))
    else:
        last = MAX_CURVE_POINTS - 1
        counts = sorted({1 + (i * (engines - 1)) // last for i in range(MAX_CURVE_POINTS)})
    curve = [point(k) for k in counts]
    best = min(curve, key=lambda p: (p.step_seconds, p.rollout_gpus))
    for low, high in itertools.pairwise(counts):
        if high - low < 2:
            continue
        t_r = rollout_seconds(sequences, high, engine)
        t_t = training_seconds(tokens, gpus - low * engine_gpus, rate)
        bound = max(t_r, t_t) if overlap else t_r + t_t
        if not bound < best.step_seconds:
            continue
        for k in range(low + 1, high):
            candidate = point(k)
            if (candidate.step_seconds, candidate.rollout_gpus) < (
                best.step_seconds,
                best.rollout_gpus,
            ):
                best = candidate
    if best not in curve:
        curve = sorted([*curve, best], key=lambda p: p.rollout_gpus)
    return curve, best


def plan_rl(scenario: Scenario, report: Estimated, rl: RLInputs) -> RLPlan | None:
    """The RL step for ``scenario``'s model; None without a training throughput."""
    rate = report.compute.tokens_per_s_per_gpu
    if rate is None or not rate > 0:
        return None
    problems: list[str] = []
    sequences = rl.prompts_per_step * rl.samples_per_prompt
    tokens = float(sequences * (rl.prompt_tokens + rl.response_tokens))
    engine = _engine(scenario, report, rl)
    if engine.max_batch < 1:
        problems.append(
            f"one engine of {rl.engine_gpus} GPU(s) cannot hold the weights and one sequence's "
            "KV cache: use more GPUs per engine or a quantized format"
        )
    n = rl.num_gpus
    e = rl.engine_gpus
    peak = float(report.training.peak_bytes)
    if rl.placement == "colocated":
        reshard = rl.reshard_seconds
        if reshard is None:
            link = scenario.parallelism.intra_node_bandwidth_bytes_per_s or (
                scenario.gpu.link_bandwidth_bytes_per_s
            )
            weights = engine.weights_bytes_per_gpu * e  # one copy of the weights
            reshard = 2.0 * weights / (n * link) if link else 0.0
        t_r = rollout_seconds(sequences, n // e, engine)
        t_t = training_seconds(tokens, n, rate)
        step = t_r + t_t + 2.0 * reshard
        curve = [
            SplitPoint(rollout_gpus=n, rollout_seconds=t_r, training_seconds=t_t, step_seconds=step)
        ]
        return RLPlan(
            placement="colocated",
            sequences_per_step=sequences,
            tokens_per_step=tokens,
            engine=engine,
            training_tokens_per_s_per_gpu=rate,
            rollout_gpus=n,
            training_gpus=n,
            rollout_seconds=t_r,
            training_seconds=t_t,
            reshard_seconds=reshard,
            step_seconds=step,
            rollout_idle_fraction=(t_t + 2 * reshard) / step if step else 0.0,
            training_idle_fraction=(t_r + 2 * reshard) / step if step else 0.0,
            training_peak_bytes=peak,
            curve=curve,
            problems=problems,
        )
    curve, best_point = split_curve(
        sequences, tokens, engine, gpus=n, engine_gpus=e, rate=rate, overlap=rl.overlap
    )
    if best_point is None:
        problems.append(f"{n} GPUs leave none for training beside one engine of {e}")
        return None
    best = best_point
    step = best.step_seconds
    return RLPlan(
        placement="separate",
        sequences_per_step=sequences,
        tokens_per_step=tokens,
        engine=engine,
        training_tokens_per_s_per_gpu=rate,
        rollout_gpus=best.rollout_gpus,
        training_gpus=n - best.rollout_gpus,
        rollout_seconds=best.rollout_seconds,
        training_seconds=best.training_seconds,
        reshard_seconds=0.0,
        step_seconds=step,
        rollout_idle_fraction=1.0 - best.rollout_seconds / step if step else 0.0,
        training_idle_fraction=1.0 - best.training_seconds / step if step else 0.0,
        training_peak_bytes=peak,
        curve=curve,
        problems=problems,
    )
