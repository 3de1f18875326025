"""Parallelism: ZeRO memory, communication volumes, pipeline bubble, step time, report.

Expected values are published figures or hand computations written out next to the
assertion, each with its source.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layout_helpers import one_layout

from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.activations import activation_bytes_per_layer
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import step_time
from llm_planner.core.sections.training import TrainingInputs

H100 = get_gpu("h100-sxm")
GPT3 = get_preset("gpt-3-175b").architecture


_layout = one_layout


# --------------------------------------------------------------------- ZeRO memory


@pytest.mark.parametrize(
    ("stage", "published_gb"),
    # Rajbhandari et al. 2019, arXiv:1910.02054, Figure 1: Ψ = 7.5B, K = 12, N_d = 64
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_paper_figure_1(stage: int, published_gb: float) -> None:
    w, g, o = par.model_state_bytes_per_gpu(7.5e9, stage, 64)
    total_gb = float(w + g + o) / 1e9
    assert total_gb == pytest.approx(published_gb, rel=0.02)


@pytest.mark.parametrize(("stage", "published_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1_through_training_estimator(stage: int, published_gb: float) -> None:
    """The same figure from the training estimator's persistent state (mixed-precision Adam)."""
    from llm_planner.core.sections.training import estimate_training

    arch = get_preset("llama-2-7b").architecture
    rep = estimate_training(
        arch,
        TrainingInputs(stack="deepspeed"),
        H100,
        params_override=7.5e9,
        dp=64,
        zero_stage=stage,
    )
    assert rep.persistent_bytes / 1e9 == pytest.approx(published_gb, rel=0.02)


@settings(max_examples=60, deadline=None)
@given(
    params=st.floats(1e6, 1e12),
    dp=st.integers(1, 4096),
    weight=st.sampled_from([2.0, 4.0]),
    optim=st.sampled_from([0.0, 4.0, 8.0, 12.0]),
)
def test_more_zero_sharding_never_raises_state(
    params: float, dp: int, weight: float, optim: float
) -> None:
    totals = [
        sum(
            float(x)
            for x in par.model_state_bytes_per_gpu(
                params,
                z,
                dp,
                weight_bytes_per_param=weight,
                grad_bytes_per_param=weight,
                optimizer_bytes_per_param=optim,
            )
        )
        for z in range(4)
    ]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(totals))


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gpt-3-175b"]),
    tp=st.sampled_from([1, 2, 8]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.sampled_from([1, 2, 64]),
)
def test_more_zero_sharding_never_raises_state_in_training_estimator(
    model: str, tp: int, pp: int, dp: int
) -> None:
    from llm_planner.core.sections.training import estimate_training

    arch = get_preset(model).architecture
    persistent = [
        estimate_training(
            arch, TrainingInputs(), H100, tp=tp, pp=pp, dp=dp, zero_stage=z
        ).persistent_bytes
        for z in range(4)
    ]
    assert all(b <= a for a, b in itertools.pairwise(persistent))


def test_korthikanti_activation_formula() -> None:
    """Korthikanti et al. 2022 Table 2 written out for s=2048, b=1, h=12288, a=96, t=8,
    from the activation ledger the memory screen uses (GPT-3 175B: 16-bit, dropout, no
    flash, Megatron's profile)."""
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    assert (GPT3.hidden_size, GPT3.heads) == (h, a)
    none = activation_bytes_per_layer(GPT3, s, b, tp=t, sequence_parallel=False, recompute="none")
    assert float(none) == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
    with_sp = activation_bytes_per_layer(GPT3, s, b, tp=t, sequence_parallel=True, recompute="none")
    assert float(with_sp) == pytest.approx(s * b * h / t * (34 + 5 * a * s / h))
    full = activation_bytes_per_layer(GPT3, s, b, tp=t, sequence_parallel=True, recompute="full")
    assert float(full) == pytest.approx(2 * s * b * h / t)


def test_microbatches_in_flight() -> None:
    # 1F1B: the first stage holds p micro-batches (Narayanan 2021 section 2.2.1)
    assert float(par.microbatches_in_flight(8, 32, False, 1)) == 8
    # GPipe holds all m
    assert float(par.microbatches_in_flight(8, 32, True, 1)) == 32
    # interleaved: p·(1 + (p−1)/(p·v)) (Korthikanti 2022 section 4.2.3): 8·(1 + 7/16) = 11.5
    assert float(par.microbatches_in_flight(8, 32, False, 2)) == pytest.approx(11.5)
    # never more than m
    assert float(par.microbatches_in_flight(8, 4, False, 1)) == 4


def test_last_stage_microbatches_in_flight() -> None:
    # 1F1B: the last stage runs each backward right after its forward: 1
    assert float(par.microbatches_in_flight_last(8, 32, False, 1)) == 1
    # GPipe: all m on every stage
    assert float(par.microbatches_in_flight_last(8, 32, True, 1)) == 32
    # interleaved (Megatron warm-up (p−r−1)·2 + (v−1)·p chunks on rank r = p−1, plus the
    # one in progress): ((v−1)·p + 1)/v = (1·8 + 1)/2 = 4.5 stage-loads, not rounded (the
    # estimator holds 9 chunks of L/16 layers, not 5 micro-batches of L/8)
    assert float(par.microbatches_in_flight_last(8, 32, False, 2)) == pytest.approx(4.5)
    assert float(par.training_in_flight_last(8, 32, False, 2)) == pytest.approx(4.5)
    # the first rank: 2·(p − 1) + (v − 1)·p + 1 = 14 + 8 + 1 = 23 chunks of L/16 = 11.5
    assert float(par.training_in_flight(8, 32, False, 2)) == pytest.approx(11.5)
    # the loss-side tensors (last chunk of the last rank): one micro-batch interleaved, the
    # stage's own count in 1F1B (1) and GPipe (m)
    assert float(par.training_loss_in_flight(8, 32, False, 2)) == 1
    assert float(par.training_loss_in_flight(8, 32, False, 1)) == 1
    assert float(par.training_loss_in_flight(8, 32, True, 1)) == 32
    # the same rule on the first rank (r = 0) is Korthikanti's count: ((p−1)·2 + (v−1)·p + 1)/v
    # = (14 + 8 + 1)/2 = 11.5
    first = float(par.microbatches_in_flight(8, 32, False, 2))
    assert first == pytest.approx((2 * 7 + 8 + 1) / 2)


def test_interleaved_last_stage_holds_fewer_microbatches_than_the_first() -> None:
    """The report's training section prices the last stage with its own in-flight count."""
    from llm_planner.core.primitives.gpus import get_gpu
    from llm_planner.core.primitives.presets import get_preset
    from llm_planner.core.sections.training import TrainingInputs, estimate_training

    arch = get_preset("llama-2-70b").architecture
    inputs = TrainingInputs(micro_batch=1, recompute="none")
    gpu = get_gpu("h100-sxm")
    common = {"tp": 8, "pp": 8, "dp": 1, "zero_stage": 0, "microbatches_in_flight": 12}
    one = estimate_training(arch, inputs, gpu, last_stage_microbatches_in_flight=1, **common)
    five = estimate_training(arch, inputs, gpu, last_stage_microbatches_in_flight=5, **common)
    forty = estimate_training(arch, inputs, gpu, last_stage_microbatches_in_flight=40, **common)
    # the first stage (12 in flight, plus the embedding) is the peak while the last holds
    # fewer; holding 40 makes the last stage the peak (the count is really used there)
    assert one.stage == five.stage == "first"
    assert one.peak_bytes == five.peak_bytes
    assert forty.stage == "last"
    assert forty.peak_bytes > five.peak_bytes


# --------------------------------------------------------------------- communication


def test_ring_all_reduce_volume() -> None:
    # Patarasuk & Yuan 2009 / ZeRO section 7.1: 2·(n−1)/n × message
    assert float(comm.ring_all_reduce_bytes(8, 1e9)) == pytest.approx(2 * 7 / 8 * 1e9)
    assert float(comm.ring_all_reduce_bytes(1, 1e9)) == 0.0


def test_zero_communication_volumes() -> None:
    """ZeRO section 7.2: stage 1/2 move the same 2Ψ as DDP, stage 3 1.5× (one micro-batch)."""
    n, psi = 64, 2 * 7.5e9  # 16-bit gradients of 7.5B parameters
    ddp = 2 * (n - 1) / n * psi
    volumes = [float(comm.data_parallel_bytes(z, n, psi, psi, 1)) for z in range(4)]
    assert volumes[0] == pytest.approx(ddp)
    assert volumes[1] == pytest.approx(ddp)
    assert volumes[2] == pytest.approx(ddp)
    assert volumes[3] == pytest.approx(1.5 * ddp)
    # with 4 micro-batches ZeRO-2 reduce-scatters each one: 4·(n−1)/n·Ψ + (n−1)/n·Ψ
    assert float(comm.data_parallel_bytes(2, n, psi, psi, 4)) == pytest.approx(
        5 * (n - 1) / n * psi
    )


def test_tensor_parallel_volume_per_layer() -> None:
    """Megatron: 4 all-reduces of s·b·h (2 forward, 2 backward) per layer (Shoeybi 2019 §3)."""
    t, s, b, h = 8, 2048, 1, 12288
    expected = 4 * 2 * (t - 1) / t * s * b * h * 2  # bf16 bytes
    assert float(comm.tensor_parallel_bytes_per_layer(t, s * b, h)) == pytest.approx(expected)
    # full recomputation replays the forward: 6 all-reduces
    replay = float(comm.tensor_parallel_bytes_per_layer(t, s * b, h, True))
    assert replay == pytest.approx(1.5 * expected)
    assert float(comm.tensor_parallel_bytes_per_layer(1, s * b, h)) == 0.0


def test_pipeline_p2p_volume() -> None:
    """Forward activation + backward gradient of s·b·h per boundary, ÷ t with the
    scatter/gather optimisation (Narayanan 2021 section 4.1), × v when interleaved."""
    s, b, h, t = 2048, 1, 12288, 8
    assert float(comm.pipeline_p2p_bytes_per_microbatch(4, t, s * b, h, 1)) == pytest.approx(
        2 * s * b * h * 2 / t
    )
    assert float(comm.pipeline_p2p_bytes_per_microbatch(4, t, s * b, h, 2)) == pytest.approx(
        2 * 2 * s * b * h * 2 / t
    )
    assert float(comm.pipeline_p2p_bytes_per_microbatch(1, t, s * b, h, 1)) == 0.0


def test_moe_all_to_all_volume() -> None:
    """Dispatch + combine, forward and backward: 4 all-to-alls of k·s·b·h, (e−1)/e leaves."""
    e, s, b, h, k = 8, 4096, 1, 4096, 2
    expected = 4 * (e - 1) / e * k * s * b * h * 2
    assert float(comm.moe_all_to_all_bytes_per_layer(e, 1, s * b, h, k)) == pytest.approx(expected)


def test_link_placement() -> None:
    links = comm.Links(gpus_per_node=8, intra_bytes_per_s=400e9, inter_bytes_per_s_per_node=320e9)
    # tp = 8 fits a node: NVLink
    assert float(links.group_bandwidth(1, 8)) == 400e9
    assert not comm.crosses_nodes(1, 8, 8)
    # tp = 16 spans two nodes: 8 ranks per node share the node's network, 8 × 320/8
    assert comm.crosses_nodes(1, 16, 8)
    assert float(links.group_bandwidth(1, 16)) == pytest.approx(320e9)
    # a data-parallel group of stride 8 has one rank per node: one GPU's share, 320/8
    assert float(links.group_bandwidth(8, 4)) == pytest.approx(40e9)
    # point-to-point across nodes: one GPU's share
    assert float(links.group_bandwidth(8, 2, False)) == pytest.approx(40e9)


# --------------------------------------------------------------------- bubble and timeline


def test_bubble_fraction_narayanan() -> None:
    # Narayanan et al. 2021 section 2.2: the bubble is (p−1)/m of the ideal time, (p−1)/(v·m)
    # interleaved; as a share of ideal + bubble that is r/(1 + r)
    assert float(comm.pipeline_bubble_fraction(8, 32)) == pytest.approx((7 / 32) / (1 + 7 / 32))
    assert float(comm.pipeline_bubble_fraction(8, 32, 2)) == pytest.approx(7 / 71)
    assert float(comm.pipeline_bubble_fraction(1, 32)) == 0.0
    # one micro-batch through 8 stages: 7 of the 8 slots idle, not 700%
    assert float(comm.pipeline_bubble_fraction(8, 1)) == pytest.approx(7 / 8)
    assert float(comm.pipeline_bubble_fraction(1024, 1, 4)) < 1.0


@pytest.mark.parametrize(
    ("schedule", "p", "m", "v"),
    [
        ("1f1b", 4, 8, 1),
        ("1f1b", 8, 32, 1),
        ("1f1b", 4, 2, 1),
        ("gpipe", 4, 8, 1),
        ("interleaved", 4, 8, 2),
        ("interleaved", 4, 16, 4),
        ("interleaved", 8, 32, 2),
    ],
)
def test_timeline_makespan_matches_bubble_formula(schedule: str, p: int, m: int, v: int) -> None:
    """Total time = (m + (p−1)/v)·(t_f + t_b) (Narayanan 2021 section 2.2, t_b = 2·t_f)."""
    events = par.pipeline_timeline(p, m, schedule, v)
    makespan = max(e[3] for e in events)
    assert makespan == pytest.approx((m + (p - 1) / v) * 3.0)
    per_device = v * m * 2 if schedule == "interleaved" else m * 2
    assert len(events) == p * per_device
    for stage in range(p):  # no device runs two things at once
        spans = sorted((e[2], e[3]) for e in events if e[0] == stage)
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))


def test_timeline_gpipe_runs_all_forwards_first() -> None:
    events = par.pipeline_timeline(4, 8, "gpipe")
    stage0 = [e for e in events if e[0] == 0]
    kinds = [e[4] for e in stage0]
    assert kinds == ["forward"] * 8 + ["backward"] * 8


# --------------------------------------------------------------------- step time


def _work(arch_id: str = "llama-3.1-8b", batch: int = 8) -> par.Workload:
    arch = get_preset(arch_id).architecture
    return par.workload_of(arch, 4096, batch, hw_factors=(1.0, 1.0, 4 / 3))


def _gemm_only(inputs: par.ParallelInputs | None = None) -> par.Cluster:
    """H100 cluster with infinite HBM bandwidth, no GEMM shape model (sms = 0: every kernel
    at the kernel efficiency), no latency and no host overhead: these tests check the
    GEMM/bandwidth arithmetic alone (the other terms have tests of their own)."""
    return replace(
        par.cluster_of(H100, inputs or par.ParallelInputs()),
        memory_bytes_per_s=math.inf,
        sms=0,
        host_seconds_per_layer=0.0,
        base_latency=0.0,
        intra_step_latency=0.0,
        inter_step_latency=0.0,
        inter_p2p_latency=0.0,
    )


def test_single_gpu_step_is_pure_compute() -> None:
    """One GPU: step = m · hardware FLOPs per micro-batch ÷ (peak · efficiency), MFU = eff."""
    work = _work(batch=8)
    cluster = _gemm_only()
    out = par.evaluate_layouts(work, cluster, _layout(micro_batch=2))
    peak = 989.4e12
    expected = 8 * 4096 * work.model_flops_per_token / (peak * 0.70)
    assert float(out["step_seconds"][0]) == pytest.approx(expected)
    # the GEMMs run at 70% of peak; MFU counts 6·P per token (the budget's count), not the
    # executed 6·N + attention, so it is 70% × (6·P ÷ executed FLOPs per token)
    params = count_parameters(get_preset("llama-3.1-8b").architecture).active
    assert work.mfu_flops_per_token == pytest.approx(6 * params)
    share = work.mfu_flops_per_token / work.model_flops_per_token
    assert float(out["mfu"][0]) == pytest.approx(0.70 * share)
    assert float(out["comm_bytes_per_step"][0]) == 0.0
    # full recomputation: same model FLOPs, 4/3 the hardware FLOPs → MFU 0.70·3/4·share,
    # HFU 0.70 (HFU counts what runs)
    full = par.evaluate_layouts(work, cluster, _layout(micro_batch=2, recompute=2))
    assert float(full["mfu"][0]) == pytest.approx(0.70 * 3 / 4 * share)
    assert float(full["hfu"][0]) == pytest.approx(0.70)


def test_memory_bound_term_by_hand() -> None:
    """One H100, Llama-3.1-8B, s = 4096, b = 2, m = 4, no recompute, flash, no dropout,
    Megatron profile, bf16 mixed-precision Adam, ZeRO 0.

    Non-GEMM outputs per token per layer (Korthikanti 2022 ledger, 2 bytes each): attention
    norm input (residual add) h, its output h, Q after rotary a·d = h, MLP norm input h, its
    output h, SwiGLU output f: (5·4096 + 14336)·2 = 69,632 B; × (2 forward + 3 backward)
    passes (Ivanov et al. 2021) = 348,160 B. Optimizer step: Megatron's fp32 main grads 4
    (--bf16 accumulates in fp32, Megatron-LM@d98e8a64 arguments.py) + master/m/v read and
    written 2·12 + bf16 weights 2 = 30 B per parameter. HBM 3.35e12 B/s × 0.80. The loss:
    Megatron's fused cross-entropy moves 14 B per logit (StackProfile.loss_bytes_per_logit)
    over s·b·V = 4096·2·128,256 logits; its gradient accumulation fusion adds no pass.
    """
    work = _work(batch=8)
    per_token_layer = (5 * 4096 + 14336) * 2 * (2 + 3)
    assert per_token_layer == 348_160
    bw = 3.35e12 * 0.80
    t_mem = per_token_layer * 32 * 4096 * 2 / bw  # one micro-batch of 2 sequences
    t_mem += 14 * 4096 * 2 * 128_256 / bw
    t_opt = work.params_total * 30 / bw
    t_gemm = 4096 * 2 * work.model_flops_per_token / (989.4e12 * 0.70)
    cluster = replace(_gemm_only(), memory_bytes_per_s=bw)
    out = par.evaluate_layouts(work, cluster, _layout(micro_batch=2))
    assert float(out["step_seconds"][0]) == pytest.approx(4 * (t_gemm + t_mem) + t_opt)
    assert float(out["time_memory_bound"][0]) == pytest.approx(4 * t_mem + t_opt)
    assert float(out["time_compute"][0]) == pytest.approx(4 * (t_gemm + t_mem) + t_opt)
    # the limit: infinite bandwidth leaves the GEMM time alone
    limit = par.evaluate_layouts(work, _gemm_only(), _layout(micro_batch=2))
    assert float(limit["step_seconds"][0]) == pytest.approx(4 * t_gemm)
    assert float(limit["time_memory_bound"][0]) == 0.0


def test_memory_bound_term_selective_and_full_recompute() -> None:
    """Selective recompute replays no non-GEMM tensor here (flash: no softmax/dropout saved),
    full recompute replays the forward of all: 2 + 3 + 2 = 7 passes instead of 5."""
    work = _work(batch=8)
    none, selective, full = work.elementwise_bytes
    assert selective == none
    assert sum(full) == pytest.approx(sum(none) * 7 / 5)
    # tp-sharded (Q after rotary, SwiGLU output) vs sp-region (norms, residual) split
    assert none[0] == pytest.approx((4096 + 14336) * 2 * 5)
    assert none[1] == pytest.approx(4 * 4096 * 2 * 5)


@settings(max_examples=40, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 8]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.sampled_from([1, 4, 16]),
    zero=st.integers(0, 3),
    b=st.sampled_from([1, 2]),
    rc=st.integers(0, 2),
    sp=st.booleans(),
    overlap=st.sampled_from([0.0, 0.9, 1.0]),
)
def test_memory_bound_term_never_makes_a_step_faster(
    *, tp: int, pp: int, dp: int, zero: int, b: int, rc: int, sp: bool, overlap: float
) -> None:
    """A longer compute hides more DP traffic, but never more than it adds: step time with
    the term ≥ without it, for any layout."""
    work = _work(batch=64)
    inputs = par.ParallelInputs(dp_overlap=overlap)
    lay = _layout(tp=tp, pp=pp, dp=dp, shard=dp, zero=zero, micro_batch=b, recompute=rc, sp=sp)
    with_term = par.evaluate_layouts(work, par.cluster_of(H100, inputs), lay)
    without = par.evaluate_layouts(work, _gemm_only(inputs), lay)
    assert float(with_term["step_seconds"][0]) >= float(without["step_seconds"][0])
    assert float(with_term["time_memory_bound"][0]) > 0.0


def test_model_flops_per_token_palm() -> None:
    """6·N + 12·L·H·Q·T (Chowdhery et al. 2022 Appendix B), Llama-3.1-8B at T = 4096."""
    arch = get_preset("llama-3.1-8b").architecture
    n = 1e9
    expected = 6 * n + 12 * 32 * 32 * 128 * 4096
    assert par.model_flops_per_token(arch, 4096, n) == pytest.approx(expected)


def test_pipeline_bubble_in_step_time() -> None:
    """pp = 4, m = 8 on one node, no TP: step = (m + p − 1)·(t_c + p2p) exactly, t_c the
    last stage's: a quarter of the layers plus the whole output head (6·V·h per token),
    Megatron's equal split."""
    work = _work(batch=8)
    inputs = par.ParallelInputs(gpus_per_node=8)
    cluster = _gemm_only(inputs)
    out = par.evaluate_layouts(work, cluster, _layout(pp=4))
    head = 6 * 128_256 * 4096
    assert work.head_flops_per_token == head
    per_token = (work.model_flops_per_token - head) / 4 + head
    t_c = 4096 * per_token / (989.4e12 * 0.70)
    p2p = 2 * 4096 * 4096 * 2 / (450e9 * 0.80)  # s·h bf16, forward + backward, NVLink
    assert float(out["step_seconds"][0]) == pytest.approx((8 + 3) * (t_c + p2p))
    # the bubble's share of the 8 + 3 slots of the step above
    assert float(out["bubble_fraction"][0]) == pytest.approx(3 / 11)


def test_dp_overlap_model() -> None:
    """Exposed DP time = max(last bucket, t_dp − overlap · backward of the last micro-batch).

    Megatron's bucket: max(40e6, 1e6 · dp) = 64e6 parameters × 4 B = 256 MB (--bf16 reduces
    the fp32 main grads in fp32: grad_reduce_in_fp32, Megatron-LM@d98e8a64); the last one's
    ring all-reduce, 2·63/64 of it at the 64-GPU ring's 8 × (400e9 · 0.8) / 8 B/s per rank,
    is exposed even when the rest hides behind the backward."""
    work = _work(batch=256)
    inputs = par.ParallelInputs(gpus_per_node=8)
    cluster = _gemm_only(inputs)
    out = par.evaluate_layouts(work, cluster, _layout(dp=64, shard=64, micro_batch=4))
    t_dp = float(out["time_data_parallel_total"][0])
    t_c = 4 * 4096 * work.model_flops_per_token / (989.4e12 * 0.70)
    last = 256e6 * 2 * 63 / 64 / (400e9 * 0.8)
    expected = max(last, t_dp - 0.9 * 2 / 3 * t_c)
    assert expected == pytest.approx(last)
    assert float(out["time_data_parallel"][0]) == pytest.approx(expected)
    # no overlap at all: everything exposed
    blocking = _gemm_only(par.ParallelInputs(dp_overlap=0.0))
    out0 = par.evaluate_layouts(work, blocking, _layout(dp=64, shard=64, micro_batch=4))
    assert float(out0["time_data_parallel"][0]) == pytest.approx(t_dp)


def test_more_gpus_need_not_halve_time() -> None:
    """Fixed global batch: doubling dp halves m, so the bubble share (p−1)/m grows."""
    work = _work(batch=64)
    cluster = par.cluster_of(H100, par.ParallelInputs())
    a = par.evaluate_layouts(work, cluster, _layout(pp=4, dp=4, shard=4))
    b = par.evaluate_layouts(work, cluster, _layout(pp=4, dp=8, shard=8))
    assert float(b["step_seconds"][0]) > 0.5 * float(a["step_seconds"][0])


# --------------------------------------------------------------------- layout and report


def test_resolve_layout_problems_and_fsdp() -> None:
    lay = par.resolve_layout(par.ParallelInputs(tp=8, pp=3), 64, 1, "selective", 32)
    assert any("multiple of tp·pp" in p for p in lay.problems)
    hybrid = par.ParallelInputs(tp=2, fsdp_strategy="HYBRID_SHARD")
    lay = par.resolve_layout(hybrid, 64, 1, "selective", 32)
    # HYBRID_SHARD = ZeRO-3 inside a node (8/2 = 4 data-parallel ranks), replicated across
    assert (lay.zero_stage, lay.dp, lay.shard) == (3, 32, 4)
    assert par.FSDP_TO_ZERO["SHARD_GRAD_OP"] == 2
    assert par.FSDP_TO_ZERO["NO_SHARD"] == 0


def test_report_section_json_is_finite() -> None:
    arch = get_preset("llama-3.1-70b").architecture
    inputs = par.ParallelInputs(tp=8, pp=4, zero_stage=1, sequence_parallel=True, global_batch=512)
    rep = par.parallelism_report(arch, H100, 512, inputs, TrainingInputs())
    data = rep.model_dump(mode="json")
    for key in ("dp", "tp", "pp", "zero_stage", "bubble_fraction", "step_seconds"):
        assert key in data
    assert data["dp"] == 16
    assert data["links"]["tensor_parallel"] == "intra-node"
    assert data["links"]["data_parallel"] == "inter-node"
    assert rep.gradient_accumulation_steps == 512 // 16
    numbers = [v for v in data.values() if isinstance(v, float)]
    assert all(math.isfinite(v) for v in numbers)
    assert rep.figures()


def test_hfu_minus_mfu_is_the_recomputed_share_of_peak() -> None:
    """HFU − MFU = recomputed FLOPs/token × tokens/s ÷ (GPUs × peak) (Chowdhery et al.
    2022 Appendix B): full recomputation of Llama-3.1-8B replays every layer's forward,
    2·(matrices a token meets) + 4·L·H·Q·T per token (the head is not replayed)."""
    arch = get_preset("llama-3.1-8b").architecture
    work = par.workload_of(arch, 4096, 8, training_inputs=TrainingInputs(seq_len=4096))
    out = par.evaluate_layouts(
        work, par.cluster_of(H100, par.ParallelInputs()), _layout(recompute=2)
    )
    h, q, kv, f, layers, s = 4096, 4096, 1024, 14336, 32, 4096
    per_layer = 2 * (h * q + 2 * h * kv + q * h + 3 * h * f) + 4 * q * s
    recomputed = layers * per_layer
    tokens_per_s = float(out["tokens_per_s"][0])
    expected = recomputed * tokens_per_s / 989.4e12
    executed_without_recompute = work.model_flops_per_token * tokens_per_s / 989.4e12
    assert float(out["hfu"][0]) - executed_without_recompute == pytest.approx(expected, rel=1e-9)


def test_zero_stage_comparison_series() -> None:
    arch = get_preset("llama-3.1-8b").architecture
    rows = par.zero_stage_comparison(arch, TrainingInputs(), H100, par.ParallelInputs(), 64)
    assert [r["zero_stage"] for r in rows] == [0, 1, 2, 3]
    states = [r["weights_bytes"] + r["gradients_bytes"] + r["optimizer_bytes"] for r in rows]
    assert all(b <= a for a, b in itertools.pairwise(states))


def test_mixed_ep_layouts_in_one_screen() -> None:
    """One array with ep = 1, 2, 4, 8 side by side prices each row as alone (the ep table)."""
    arch = get_preset("mixtral-8x7b").architecture
    params = float(count_parameters(arch).total)
    work = par.workload_of(arch, 2048, 256, params)
    cluster = par.cluster_of(H100, par.ParallelInputs())
    recipe = par.memory_terms(arch, TrainingInputs(seq_len=2048), params)
    rows = [_layout(dp=8, ep=e, zero=3) for e in (1, 2, 4, 8)]
    together = par.Layouts(
        **{k: np.concatenate([getattr(r, k) for r in rows]) for k in rows[0].__dict__}
    )
    peaks = par.evaluate_layouts(work, cluster, together, recipe)["peak_bytes"]
    for i, row in enumerate(rows):
        alone = par.evaluate_layouts(work, cluster, row, recipe)["peak_bytes"][0]
        assert float(peaks[i]) == float(alone)
    assert list(peaks) == sorted(peaks, reverse=True)  # more ep, less memory


def test_every_non_gemm_name_fragment_matches_a_ledger_tensor() -> None:
    """The memory-bound term finds its tensors by name: a renamed ledger entry must fail
    here rather than silently drop out of the step time."""
    from llm_planner.core.primitives.presets import get_preset
    from llm_planner.core.sections.training import TrainingInputs, layer_activations_for

    names: set[str] = set()
    cases = (
        ("gpt-3-175b", False),
        ("llama-3.1-8b", True),
        ("llama-3.1-8b", False),
        ("mixtral-8x7b", True),
    )
    for preset, flash in cases:
        arch = get_preset(preset).architecture
        inputs = TrainingInputs(flash_attention=flash, dropout=not flash, recompute="none")
        for moe_layer in (False, True) if arch.moe else (False,):
            acts = layer_activations_for(
                arch, inputs, 1, tp=1, sequence_parallel=False, moe_layer=moe_layer
            )
            names |= {e.name for e in acts.ledger}
    for fragment in par.NON_GEMM_TENSORS:
        assert any(fragment in name for name in names), fragment


# --------------------------------------------------------------------- issue 14: latency,
# kernel shapes, host overhead, stacks


def test_nccl_latency_ring_and_tree_by_hand() -> None:
    """NCCL's tuning model (src/graph/tuning.cc, Simple protocol): base 8.4 µs, NVLink step
    3.4 µs (ring) / 4.0 (tree, not used here), network step 14 µs.

    8 ranks, 1 node, all-reduce: ring 2·7 steps → 8.4 + 14·3.4 = 56.0 µs.
    16 ranks on 2 nodes: ring 30 steps of which 2 cross → 8.4 + 28·3.4 + 2·14 = 131.6 µs;
    tree 2·((8 − 1)·3.4 + log2(2)·14) = 75.6 → 84.0 µs: NCCL takes the tree.
    All-gather over 16 ranks on 2 nodes: ring 15 steps, 1 crosses: 8.4 + 14·3.4 + 14 = 70.0."""
    lat = comm.collective_latency_seconds
    assert float(lat("all_reduce", 8, 1)) == pytest.approx(56.0e-6)
    assert float(lat("all_reduce", 16, 2)) == pytest.approx(84.0e-6)
    assert float(lat("all_gather", 16, 2)) == pytest.approx(70.0e-6)
    assert float(lat("all_reduce", 1, 1)) == 0.0


def test_gemm_wave_quantisation_by_hand() -> None:
    """133 output tiles of 128×256 on 132 SMs take two waves: 133 / 264 of the SMs busy.
    The size term with no ramp is 1, so the efficiency is 0.7 × 133/264."""
    eff = comm.gemm_efficiency(
        128, 256 * 133, 8192, sms=132, large_efficiency=0.7, peak_flops=1e15, ramp_seconds=0.0
    )
    assert float(eff) == pytest.approx(0.7 * 133 / 264)
    full = comm.gemm_efficiency(
        128, 256 * 132, 8192, sms=132, large_efficiency=0.7, peak_flops=1e15, ramp_seconds=0.0
    )
    assert float(full) == pytest.approx(0.7)
    # size: F = 2·1024³ ≈ 2.15 GFLOP against peak·eff·ramp = 1e15·0.7·4e-6 = 2.8 GFLOP
    small = comm.gemm_efficiency(
        1024, 1024, 1024, sms=32, large_efficiency=0.7, peak_flops=1e15, ramp_seconds=4e-6
    )
    f = 2 * 1024**3
    assert float(small) == pytest.approx(0.7 * f / (f + 2.8e9))


def test_small_gemms_run_below_large_ones() -> None:
    """The same model at tp 8 and micro-batch 1 runs its GEMMs less efficiently than at
    tp 1: per-GPU step compute is more than 1/8 of tp 1's."""
    work = _work(batch=8)
    cluster = replace(_gemm_only(), sms=132)
    one = par.evaluate_layouts(work, cluster, _layout())
    eight = par.evaluate_layouts(work, cluster, _layout(tp=8, sp=True))
    ratio = float(eight["time_gemm_attention"][0]) / float(one["time_gemm_attention"][0])
    assert 1 / 8 < ratio < 1 / 8 * 1.5


def test_host_floor_sets_tiny_micro_batches() -> None:
    """With a host time per layer far above the GPU work, t_mb = layers × host seconds and
    the difference is reported as overhead."""
    work = _work(batch=8)
    cluster = replace(_gemm_only(), host_seconds_per_layer=1.0)
    out = par.evaluate_layouts(work, cluster, _layout(tp=8, sp=True))
    assert float(out["step_seconds"][0]) == pytest.approx(8 * 32 * 1.0, rel=1e-3)
    assert float(out["time_overhead"][0]) > 0.99 * float(out["step_seconds"][0])


def test_nanotron_splits_the_pipeline_by_cost() -> None:
    """nanotron (src/nanotron/models/base.py) cuts blocks where the cumulative cost passes
    k/p of the total. 16 layers of cost 1 and a head of cost 4 over 8 stages: thresholds
    2.5, 5, …, 20; the stages take 3, 3, 2, 3, 2, 3 layers, then the head alone (cost 4, the
    fullest) and an empty last rank. Over 2 stages (thresholds 10, 20) the first takes
    layers 1-11 (a block joins the rank before the cumulative cost passes its threshold):
    11 > the other stage's 5 + 4."""
    work = replace(
        _work(batch=8),
        layers=16,
        model_flops_per_token=20.0,
        head_flops_per_token=4.0,
        stack=get_stack("nanotron"),
    )
    layers, head = step_time._fullest_stage(
        work, np.array([8.0, 1.0, 2.0]), np.ones(3), balanced=True
    )
    assert layers.tolist() == [0.0, 16.0, 11.0]
    assert head.tolist() == [1.0, 1.0, 0.0]
    # Megatron's equal split: 2 layers and the head on the last of 8 stages
    layers, head = step_time._fullest_stage(work, np.array([8.0]), np.ones(1), balanced=False)
    assert (layers.tolist(), head.tolist()) == ([2.0], [1.0])


TUNABLE = [
    ("kernel_efficiency", 0.5, 0.9, -1),
    ("intra_node_efficiency", 0.5, 0.9, -1),
    ("inter_node_efficiency", 0.3, 0.9, -1),
    ("dp_overlap", 0.2, 0.9, -1),
    ("tp_overlap", 0.0, 0.8, -1),
    ("intra_node_step_latency_seconds", 1e-6, 50e-6, 1),
    ("inter_node_step_latency_seconds", 5e-6, 500e-6, 1),
    ("inter_node_p2p_latency_seconds", 5e-6, 5e-3, 1),
    ("gemm_ramp_seconds", 0.0, 20e-6, 1),
    ("attention_efficiency", 0.3, 0.7, -1),
    ("host_seconds_per_layer", 0.0, 5e-3, 1),
    ("dp_bucket_bytes", 1e6, 1e9, 0),
]
"""(ParallelInputs field, low, high, direction): the model's calibratable constants and the
way each moves the step time (−1: a higher value never slows a step; 1: never speeds it up;
0: either, bucket size trades latency against the exposed last bucket)."""


@pytest.mark.parametrize(("field", "low", "high", "direction"), TUNABLE)
def test_each_tunable_moves_the_step_monotonically(
    field: str, low: float, high: float, direction: int
) -> None:
    """Every calibratable field changes the prediction one way only, over layouts that
    exercise each term (TP across nodes, pipelines across nodes, ZeRO 0-3, micro-batch 1)."""
    work = _work(batch=256)
    layouts = [
        {"dp": 64},
        {"dp": 8, "tp": 16, "sp": True},
        {"dp": 16, "tp": 4, "pp": 4, "zero": 1, "sp": True},
        {"dp": 32, "tp": 2, "zero": 3, "sp": True, "micro_batch": 2},
        {"dp": 8, "tp": 8, "pp": 2, "zero": 2, "sp": True},
    ]
    steps = []
    for value in np.linspace(low, high, 5):
        cluster = par.cluster_of(H100, par.ParallelInputs(**{field: float(value)}))
        steps.append(
            [
                float(par.evaluate_layouts(work, cluster, _layout(**k))["step_seconds"][0])
                for k in layouts
            ]
        )
    arr = np.array(steps)
    diffs = np.diff(arr, axis=0)
    if direction < 0:
        assert np.all(diffs <= 1e-12), (field, arr)
    elif direction > 0:
        assert np.all(diffs >= -1e-12), (field, arr)
    assert np.any(np.abs(diffs) > 0), f"{field} changes nothing"


def test_nanotron_stack_holds_an_fp32_gradient_buffer() -> None:
    """nanotron's FP32GradientAccumulator (gradient_accumulator.py) keeps an fp32 gradient
    for every parameter on top of the bf16 one, not sharded by ZeRO-1 (2 + 4 bytes); Megatron
    with --bf16 keeps one fp32 main_grad (4 bytes, Megatron-LM@d98e8a64 arguments.py): 2 more
    bytes per parameter of the GPU's share under nanotron."""
    arch = get_preset("llama-3.1-8b").architecture
    from llm_planner.core.sections.training import estimate_training

    mega = estimate_training(arch, TrainingInputs(stack="megatron"), H100, tp=2, dp=8, zero_stage=1)
    nano = estimate_training(
        arch,
        TrainingInputs(stack="nanotron", implementation="megatron"),
        H100,
        tp=2,
        dp=8,
        zero_stage=1,
    )
    params = count_parameters(arch).total
    assert nano.gradients_bytes - mega.gradients_bytes == pytest.approx(2 * params / 2, rel=1e-6)
    assert nano.stack == "nanotron"
    assert TrainingInputs(stack="hf").implementation == "pytorch"  # the stack's profile
    assert TrainingInputs(stack="hf", implementation="megatron").implementation == "megatron"


def test_time_breakdown_adds_up_to_the_step() -> None:
    """report --json's parallelism.time_breakdown: compute + memory-bound + exposed
    communication + bubble + overhead = step seconds."""
    from llm_planner.core.composition.estimate import estimate, report_json
    from llm_planner.core.composition.scenario import default_scenario

    scenario = default_scenario()
    scenario = scenario.model_copy(
        update={"parallelism": scenario.parallelism.model_copy(update={"tp": 8, "pp": 4})}
    )
    data = report_json(estimate(scenario))
    tb = data["parallelism"]["time_breakdown"]
    parts = tb["compute"] + tb["memory_bound"] + tb["bubble"] + tb["overhead"]
    parts += sum(tb["exposed_communication"].values())
    assert parts == pytest.approx(data["parallelism"]["step_seconds"])
    assert tb["total"] == pytest.approx(data["parallelism"]["step_seconds"])
    assert tb["bubble"] > 0
    assert data["training"]["stack"] == "megatron"
    assert set(data["parallelism"]["time_breakdown_seconds"]) >= {"compute", "data_parallel"}


def test_gemm_shapes_are_the_layer_matrices_mla_exact() -> None:
    """The step time's GEMMs are the layer's matrices (Architecture.layer_matrices): for
    DeepSeek-V3's MLA (config_671B.json: dim 7168, 128 heads, q_lora_rank 1536,
    kv_lora_rank 512, qk dims 128 + 64, v 128) each projection at its own size, the
    down-projections replicated (neither N nor K ÷ tp), not one folded QKV GEMM; for
    Llama-3.1-8B the fused QKV (N = 4096 + 2·1024) and the fused gate‖up (N = 2·14336)."""
    from llm_planner.core.sections.parallelism.workload import gemm_shapes_of

    shapes = gemm_shapes_of(get_preset("deepseek-v3").architecture)
    attention = {(n, k, by_n, by_k) for n, k, _, by_n, by_k, _ in shapes}
    assert {
        (1536.0, 7168.0, False, False),
        (128.0 * 192, 1536.0, True, False),
        (576.0, 7168.0, False, False),
        (128.0 * 256, 512.0, True, False),
        (7168.0, 128.0 * 128, False, True),
    } <= attention
    llama = gemm_shapes_of(get_preset("llama-3.1-8b").architecture)
    assert [(n, k) for n, k, *_ in llama] == [
        (4096.0 + 2 * 1024, 4096.0),
        (4096.0, 4096.0),
        (2 * 14336.0, 4096.0),
        (4096.0, 14336.0),
    ]
    assert sum(share for _, _, share, *_ in llama) == pytest.approx(1.0)
