"""Multi-token prediction (issue 27): DeepSeek-V3's MTP module by hand.

Shapes (DeepSeek-V3 config.json, arXiv:2412.19437 section 4.2): h 7168, V 129280, 128 heads,
MLA q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128; MoE layers
256 routed + 1 shared experts of 2048, 8 routed per token; 61 layers, the last an MoE layer.
"""

from __future__ import annotations

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.inputs.scenario import with_changes
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.flops import mfu_flops_per_token, mtp_flops_per_token
from llm_planner.core.quantities.mtp import (
    mtp_params,
    mtp_params_per_depth,
    mtp_saved_logits_bytes,
)
from llm_planner.core.sections.training_params import mtp_stage_params, pipeline_stage_layers

H, V = 7168, 129280
# MLA: q_a h·1536, q_b 1536·128·192, kv_a h·(512 + 64), kv_b 512·128·(128 + 128), o 128·128·h
ATTENTION = H * 1536 + 1536 * 128 * 192 + H * 576 + 512 * 128 * 256 + 128 * 128 * H
EXPERT = 3 * H * 2048  # gate, up, down
ROUTER = H * 256
NORMS = 2 * H + 1536 + 512  # the layer's two RMSNorms, q_a and kv_a norms


def _arch():  # type: ignore[no-untyped-def]
    return get_preset("deepseek-v3").architecture


def test_deepseek_v3_mtp_parameters_match_the_published_685b() -> None:
    """One MoE layer 187.1M attention + 257 experts × 44.04M + router 1.835M (+ its 256 biases) +
    norms = 11.507B; + eh_proj 2·7168² = 102.8M + three norms 3·7168: 11.610B of its own. With the
    embedding and head it stores (V·h each, shared in training) 13.46B; the main model's
    671.03B + 13.46B = 684.49B, the "685B" Hugging Face shows (deepseek-ai/DeepSeek-V3
    README: 671B of main model weights + 14B of MTP module weights, whole billions)."""
    arch = _arch()
    assert arch.moe is not None
    assert arch.moe.router_bias  # e_score_correction_bias: 256
    layer = ATTENTION + 257 * EXPERT + ROUTER + 256 + NORMS
    own = layer + 2 * H * H + 3 * H
    assert mtp_params_per_depth(arch) == own
    assert abs(own - 11.610e9) < 1e6
    stored = own + 2 * V * H
    main = count_parameters(arch).total
    assert abs(main - 671.03e9) < 0.01e9
    # 684.49B, the published 685B less 0.07% (the checkpoint also stores FP8 block scales,
    # one per 128×128 weights: ~0.04B); 13.46B is the "14B" rounded to whole billions
    assert abs((main + stored) / 685e9 - 1.0) < 0.001
    assert abs(stored - 14e9) <= 0.55e9
    assert mtp_params(arch, 2) == 2 * own
    assert mtp_params(arch, 0) == 0


def test_deepseek_v3_mtp_flops_per_token_by_hand() -> None:
    """Per token, forward + backward (6 per weight): the layer's active matrices (attention
    187.1M + shared and 8 routed experts 9 × 44.04M + router 1.835M = 585.30M) × 6 =
    3.512 GFLOP; its attention at s = 4096, 3 × 2·(128·192 + 128·128)·4096 = 1.007 GFLOP;
    the MTP norms and eh_proj 6·(3h + 2h²) = 0.617 GFLOP; one more head pass 6·h·V =
    5.560 GFLOP: 10.695 GFLOP."""
    arch = _arch()
    active = ATTENTION + 9 * EXPERT + ROUTER
    attention = 3 * 2 * (128 * 192 + 128 * 128) * 4096
    expected = 6 * active + attention + 6 * (3 * H + 2 * H * H) + 6 * H * V
    assert abs(mtp_flops_per_token(arch, 4096, 1) - expected) < 1e-6 * expected
    assert abs(expected - 10.695e9) < 0.001e9
    assert mtp_flops_per_token(arch, 4096, 0) == 0.0
    no_attention = mtp_flops_per_token(arch, 4096, 1, include_attention=False)
    assert abs(no_attention - (expected - attention)) < 1e-6 * expected


def test_mtp_flops_agree_with_nvidias_published_model_tflops() -> None:
    """Megatron-Bridge 25.11's DeepSeek-V3 rows publish model TFLOP/s and tokens/s per GPU:
    w/ MTP 557 TFLOP/s at 2,139 tokens/s (260.40 GFLOP per token), w/o MTP 961 at 3,848
    (249.74): the MTP depth adds 10.66 GFLOP per token (±0.3 from the rounding), the count
    here 10.695 (Megatron-LM@d98e8a64 num_floating_point_operations counts the same terms)."""
    published = 557e12 / 2139 - 961e12 / 3848
    assert abs(published - 10.66e9) < 0.01e9
    assert abs(mtp_flops_per_token(_arch(), 4096, 1) / published - 1.0) < 0.01


def test_mfu_count_includes_the_mtp_depths() -> None:
    arch = _arch()
    active = count_parameters(arch).active
    base = mfu_flops_per_token(arch, 4096, active, include_attention=True)
    with_mtp = mfu_flops_per_token(arch, 4096, active, include_attention=True, mtp_layers=1)
    assert with_mtp - base == mtp_flops_per_token(arch, 4096, 1)


def test_mtp_parameters_sit_on_the_last_stage_with_an_embedding_copy() -> None:
    """Outside its layer (a layer of the last stage, :func:`pipeline_stage_layers`), a depth
    puts eh_proj 2·7168² + three norms 3·7168 = 102.78M on the last stage, and with pp > 1
    the embedding copy V·h = 926.69M; the first stage nothing; one stage (pp 1) holds the
    embedding already."""
    arch = _arch()
    ti = with_changes(_scenario(), {"training.mtp_layers": 1}).training
    own = 2 * H * H + 3 * H
    assert own == 102_781_952  # 2 · 51,380,224 + 21,504
    assert mtp_stage_params(arch, ti, first=False, last=True, pp=16) == own + V * H
    assert mtp_stage_params(arch, ti, first=True, last=False, pp=16) == 0.0
    assert mtp_stage_params(arch, ti, first=True, last=True, pp=1) == own


def test_mtp_layer_takes_a_layer_slot_of_the_split() -> None:
    """61 layers + 1 MTP depth over 16 stages: ⌈62/16⌉ = 4 per stage (Megatron-Bridge's
    "Et*4|(t*4|)*14tmL"); over 2: 31 (61 alone: 31); over 1: 62. Without MTP 4, 31, 61."""
    arch = _arch()
    ti = _scenario().training
    mtp = with_changes(_scenario(), {"training.mtp_layers": 1}).training
    assert pipeline_stage_layers(arch, ti, 16) == (4, 4)
    assert pipeline_stage_layers(arch, mtp, 16) == (4, 4)
    assert pipeline_stage_layers(arch, mtp, 2) == (31, 31)
    assert pipeline_stage_layers(arch, mtp, 1) == (62, 62)
    assert pipeline_stage_layers(arch, ti, 1) == (61, 61)


def test_mtp_losses_keep_their_softmax() -> None:
    """Each depth's fp32 softmax over the vocabulary-parallel logits, 4·s·b·V/t: at s 4096,
    b 1, tp 1, 4 · 4096 · 129280 = 2.118 GB per depth."""
    arch = _arch()
    one = mtp_saved_logits_bytes(arch, 4096, 1, tp=1, depths=1)
    assert one == 4 * 4096 * 129280
    assert mtp_saved_logits_bytes(arch, 4096, 2, tp=2, depths=1) == one
    assert mtp_saved_logits_bytes(arch, 4096, 1, tp=1, depths=0) == 0.0


def test_mtp_raises_the_last_stages_memory() -> None:
    """One stage (pp 1) holds every layer: with the depth, + one MoE layer's state,
    eh_proj and the saved softmax, so the peak rises."""
    base = with_changes(_scenario(), {"parallelism.pp": 1, "num_gpus": 64})
    mtp = with_changes(base, {"training.mtp_layers": 1})
    a, b = estimate(base, suggest=False).training, estimate(mtp, suggest=False).training
    assert b.peak_bytes > a.peak_bytes
    assert b.weights_bytes > a.weights_bytes


def _scenario():  # type: ignore[no-untyped-def]
    """DeepSeek-V3 on 256 GPUs at pp 16, ep 8, s 4096, micro-batch 1, global batch 2048."""
    from llm_planner.core.inputs.scenario import default_scenario

    sc = default_scenario()
    sc = sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={"preset_id": "deepseek-v3", "architecture": _arch()}
            )
        }
    )
    return with_changes(
        sc,
        {
            "num_gpus": 256,
            "parallelism.pp": 16,
            "parallelism.expert_parallel": 8,
            "parallelism.dp": None,
            "training.seq_len": 4096,
            "training.micro_batch": 1,
            "parallelism.global_batch": 2048,
        },
    )


def test_mtp_slows_the_last_stage_and_counts_in_mfu() -> None:
    """At pp 16 the depth takes a layer's slot (⌈62/16⌉ = ⌈61/16⌉ = 4: no more layers on
    the fullest stage) and adds its eh_proj and head pass to the last: tokens/s drop, the
    budget C grows by D · 10.695 GFLOP, and MFU counts the MTP FLOPs."""
    base = _scenario()
    mtp = with_changes(base, {"training.mtp_layers": 1})
    a, b = estimate(base, suggest=False), estimate(mtp, suggest=False)
    assert b.parallelism.tokens_per_s < a.parallelism.tokens_per_s
    d = a.compute.tokens
    grown = b.compute.flops_total - a.compute.flops_total
    per_token = mtp_flops_per_token(_arch(), 4096, 1, include_attention=False)
    include = base.compute.include_attention_flops
    if include:
        per_token = mtp_flops_per_token(_arch(), 4096, 1)
    assert abs(grown - d * per_token) < 1e-9 * b.compute.flops_total
    grown_mfu = b.compute.mfu_flops_per_token - a.compute.mfu_flops_per_token
    assert abs(grown_mfu - per_token) < 1e-9 * per_token
