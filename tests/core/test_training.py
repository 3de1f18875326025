"""Training memory per GPU: recipes, optimizers, LoRA/QLoRA, ZeRO, peak, fit, CLI.

Expected values are published figures (ZeRO paper, QLoRA paper, PEFT's printed count) or
hand computations written out next to the assertion.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.cli import main
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import layer_activations, outside_layer_ledger
from llm_planner.core.quantities.optimizers import (
    BNB_BLOCK,
    factored_state_values,
    get_optimizer,
    get_precision,
    state_bytes_per_param,
)
from llm_planner.core.sections.training import (
    NF4_DOUBLE_QUANT_BITS,
    TrainingInputs,
    estimate_training,
    hardware_flops_factor,
    training_flops,
)

H100 = get_gpu("h100-sxm")
LLAMA8B = get_preset("llama-3.1-8b").architecture
LLAMA2_7B = get_preset("llama-2-7b").architecture

NO_EXTRAS = {"cuda_context_bytes": 0.0, "fragmentation_fraction": 0.0}


# ------------------------------------------------------------------ bytes per parameter


def test_mixed_precision_adam_is_16_bytes_per_param() -> None:
    """The seed's figure; ZeRO (Rajbhandari et al. 2019) section 3.1: 2Ψ + 2Ψ + 12Ψ, on
    DeepSpeed (the ZeRO paper's stack, which runs the recipe as named)."""
    per = state_bytes_per_param(get_precision("mixed_bf16"), get_optimizer("adamw"))
    assert (per.weights, per.gradients, per.optimizer) == (2, 2, 12)
    assert per.total == 16
    p = 7e9
    report = estimate_training(
        LLAMA8B,
        TrainingInputs(stack="deepspeed", **NO_EXTRAS),
        H100,
        params_override=p,
        zero_stage=0,
    )
    assert report.persistent_bytes == pytest.approx(16 * p, rel=1e-12)


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        ("fp32", (4, 4, 8)),  # fp32 weights, grads, two fp32 moments
        ("mixed_fp16", (2, 2, 12)),  # + fp32 master
        ("mixed_bf16_fp32_grads", (2, 4, 12)),  # Megatron main grads: 18
        ("pure_bf16", (2, 2, 4)),  # pure bf16, bf16 moments
    ],
)
def test_precision_recipes_with_adam(recipe: str, expected: tuple[int, int, int]) -> None:
    per = state_bytes_per_param(get_precision(recipe), get_optimizer("adam"))
    assert (per.weights, per.gradients, per.optimizer) == expected


@pytest.mark.parametrize(
    ("optimizer", "moments"),
    [
        ("sgd", 0.0),
        ("sgd_momentum", 4.0),
        ("lion", 4.0),  # Chen et al. 2023: one momentum
        ("adam8bit", 2 * (1 + 4 / 2048)),  # 1 byte + one fp32 absmax per 2048-value block
    ],
)
def test_optimizer_moments_under_mixed_precision(optimizer: str, moments: float) -> None:
    per = state_bytes_per_param(get_precision("mixed_bf16"), get_optimizer(optimizer))
    assert per.optimizer == pytest.approx(4 + moments, rel=1e-12)  # fp32 master + moments
    assert BNB_BLOCK == 2048


def test_int8_weights_save_one_byte_8bit_adam_saves_more_on_7b() -> None:
    """The seed's argument on a 7B model: quantising the weights to INT8 saves 1 byte per
    parameter (2 → 1); 8-bit Adam states save 2·(4 − 1 − 4/2048) ≈ 6 bytes per parameter."""
    p = 7e9
    mixed, adam = get_precision("mixed_bf16"), get_optimizer("adamw")
    base = state_bytes_per_param(mixed, adam).total * p
    int8_weights = state_bytes_per_param(mixed, adam, weights_dtype="int8").total * p
    eight_bit = state_bytes_per_param(mixed, get_optimizer("adam8bit")).total * p
    assert base - int8_weights == pytest.approx(1 * p)
    assert base - eight_bit == pytest.approx(2 * (4 - 1 - 4 / 2048) * p)
    assert base - eight_bit > 5 * (base - int8_weights)


def test_adafactor_factored_second_moment() -> None:
    """Shazeer & Stern 2018: an n×m matrix keeps n + m values; vectors in full."""
    assert factored_state_values([(4096, 11008), (4096, 4096)], 4096) == 4096 + 11008 + 8192 + 4096
    inputs = TrainingInputs(optimizer="adafactor", **NO_EXTRAS)
    ada = estimate_training(LLAMA8B, inputs, H100)
    adam = estimate_training(LLAMA8B, TrainingInputs(**NO_EXTRAS), H100)
    p = count_parameters(LLAMA8B).total
    # fp32 master 4·P plus a factored state of well under 0.1% of P
    assert 4 * p < ada.optimizer_bytes < 4 * p * 1.001
    assert adam.optimizer_bytes == pytest.approx(12 * p, rel=1e-12)


# ------------------------------------------------------------------ ZeRO


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1_example(stage: int, gb: float) -> None:
    """Rajbhandari et al. 2019, Figure 1: Ψ = 7.5B, Nd = 64, K = 12 →
    120 GB, 31.4 GB, 16.6 GB, 1.9 GB per device."""
    report = estimate_training(
        LLAMA8B,
        TrainingInputs(stack="deepspeed", **NO_EXTRAS),
        H100,
        params_override=7.5e9,
        dp=64,
        zero_stage=stage,
    )
    assert report.persistent_bytes / 1e9 == pytest.approx(gb, rel=0.02)


def test_tensor_and_pipeline_sharding() -> None:
    """tp·pp divide the layers; the first stage adds the embedding, the last the head and
    final norm. Llama-3.1-8B, tp 2, pp 4: first stage = (8 layers + embedding)/2."""
    arch = LLAMA8B
    h, kv, f, v = 4096, 1024, 14336, 128256
    per_layer = (2 * h * h + 2 * h * kv) + 3 * h * f + 2 * h  # attention + SwiGLU + 2 RMSNorms
    assert per_layer == 218_112_000
    first = (8 * per_layer + v * h) / 2  # embedding on the first stage
    last = (8 * per_layer + v * h + h) / 2  # untied head + final norm on the last
    inputs = TrainingInputs(**NO_EXTRAS)
    # 1F1B default: the first stage holds 4 micro-batches and is the most loaded
    report = estimate_training(arch, inputs, H100, tp=2, pp=4, dp=1, zero_stage=0)
    assert report.stage == "first"
    assert report.weights_bytes == pytest.approx(2 * first, rel=1e-9)
    assert report.microbatches_in_flight == 4
    # one micro-batch everywhere: the last stage (head, logits) is the most loaded
    one = estimate_training(
        arch, inputs, H100, tp=2, pp=4, dp=1, zero_stage=0, microbatches_in_flight=1
    )
    assert one.stage == "last"
    assert one.weights_bytes == pytest.approx(2 * last, rel=1e-9)
    # Megatron's loss works in place in the saved fp32 softmax: the bf16 logits only
    assert one.logits_bytes == 2 * 4096 * v / 2


def test_first_stage_holds_pp_microbatches() -> None:
    """1F1B: the first stage keeps pp micro-batches of its L/pp layers (Korthikanti 2022
    section 4.2.3), i.e. L layers' worth of activations, plus the embedding's tensors."""
    arch = LLAMA8B
    inputs = TrainingInputs(recompute="none", flash_attention=True, **NO_EXTRAS)
    la = layer_activations(arch, inputs.seq_len, 1, tp=1, flash=True, dropout=False)
    emb = outside_layer_ledger(arch, inputs.seq_len, 1, dropout=False, last_stage=False)
    report = estimate_training(arch, inputs, H100, pp=4)  # in flight: default pp
    assert report.stage == "first"
    assert report.microbatches_in_flight == 4
    assert report.activations_bytes == pytest.approx(
        4 * (8 * la.kept_bytes + sum(e.bytes for e in emb)), rel=1e-12
    )


# ------------------------------------------------------------------ LoRA / QLoRA


def test_lora_rank8_q_v_on_llama2_7b_matches_peft_count() -> None:
    """PEFT prints "trainable params: 4,194,304" for Llama-2-7B, r = 8 on q_proj and v_proj:
    32 layers · 2 matrices · 8·(4096 + 4096)."""
    inputs = TrainingInputs(stack="hf", lora_rank=8, lora_targets=("q", "v"), **NO_EXTRAS)
    report = estimate_training(LLAMA2_7B, inputs, H100)
    assert report.trainable_params == 32 * 2 * 8 * (4096 + 4096) == 4_194_304
    assert report.frozen_params == count_parameters(LLAMA2_7B).total
    # frozen base in bf16; adapters 2 + 2 + 12
    p, lora = count_parameters(LLAMA2_7B).total, 4_194_304
    assert report.weights_bytes == 2 * (p + lora)
    assert report.gradients_bytes == 2 * lora
    assert report.optimizer_bytes == 12 * lora


def test_qlora_base_is_4_127_bits() -> None:
    """Dettmers et al. 2023, section 3: NF4 blocks of 64, fp8 block constants, one fp32
    constant per 256 blocks: 4 + 8/64 + 32/(64·256) ≈ 4.127 bits per parameter."""
    assert pytest.approx(4.127, abs=5e-4) == NF4_DOUBLE_QUANT_BITS
    arch = LLAMA2_7B
    counts = count_parameters(arch)
    inputs = TrainingInputs(lora_rank=64, qlora=True, **NO_EXTRAS)
    report = estimate_training(arch, inputs, H100)
    h, f, layers = 4096, 11008, 32
    matrices = layers * (4 * h * h + 3 * h * f)
    lora = layers * 64 * (4 * (h + h) + 2 * (h + f) + (f + h))
    assert report.trainable_params == lora
    expected = matrices * NF4_DOUBLE_QUANT_BITS / 8 + (counts.total - matrices) * 2 + lora * 2
    assert report.weights_bytes == pytest.approx(expected, rel=1e-12)
    assert report.dequant_bytes == h * f * 2  # one matrix dequantised to bf16 at a time


# ------------------------------------------------------------------ peak and fit


def test_peak_is_the_labelled_sum_and_overhead_is_stated() -> None:
    inputs = TrainingInputs(cuda_context_bytes=1e9, fragmentation_fraction=0.05)
    r = estimate_training(LLAMA8B, inputs, H100, dp=8, zero_stage=1)
    allocated = r.persistent_bytes + r.activations_bytes + r.temporary_bytes
    assert r.overhead_bytes == pytest.approx(1e9 + 0.05 * allocated)
    assert r.peak_bytes == pytest.approx(allocated + r.overhead_bytes)
    assert r.persistent_bytes == r.weights_bytes + r.gradients_bytes + r.optimizer_bytes
    assert r.after_load_bytes == r.persistent_bytes + 1e9
    assert r.after_load_bytes < r.peak_bytes
    assert r.fits == (r.peak_bytes <= H100.memory_bytes)


def test_max_micro_batch_is_the_largest_that_fits() -> None:
    base = TrainingInputs(recompute="full", seq_len=4096)
    r = estimate_training(LLAMA8B, base, H100, dp=8, zero_stage=1)
    assert r.max_micro_batch >= 1
    at = estimate_training(
        LLAMA8B,
        base.model_copy(update={"micro_batch": r.max_micro_batch}),
        H100,
        dp=8,
        zero_stage=1,
    )
    above = estimate_training(
        LLAMA8B,
        base.model_copy(update={"micro_batch": r.max_micro_batch + 1}),
        H100,
        dp=8,
        zero_stage=1,
    )
    assert at.fits
    assert not above.fits


def test_nothing_fits_gives_zero() -> None:
    arch = get_preset("llama-3.1-405b").architecture
    r = estimate_training(arch, TrainingInputs(), H100)
    assert not r.fits
    assert r.max_micro_batch == 0


def test_logits_can_set_the_peak() -> None:
    """The logits working set is (2 + 4)·s·b·V/t bytes (bf16 logits + fp32 copy/gradient)
    where the loss works in a buffer of its own (Hugging Face modules: the fp32 upcast, then
    log_softmax's output); Megatron-Core's loss exponentiates and normalises its fp32 copy in
    place and saves it (cross_entropy.py), already among the saved tensors: 2·s·b·V on top."""
    hf = TrainingInputs(recompute="full", seq_len=8192, stack="hf", implementation="pytorch")
    r = estimate_training(LLAMA8B, hf, H100)
    assert r.logits_bytes == 6 * 8192 * LLAMA8B.vocab_size
    assert r.logits_bytes > r.recompute_working_bytes
    mega = estimate_training(LLAMA8B, TrainingInputs(recompute="full", seq_len=8192), H100)
    assert mega.logits_bytes == 2 * 8192 * LLAMA8B.vocab_size
    fp32_softmax = next(
        e for e in mega.outside_ledger if e.name == "cross-entropy: fp32 softmax of logits"
    )
    assert fp32_softmax.bytes == 4 * 8192 * LLAMA8B.vocab_size


def test_hardware_flops_factor_full_is_about_8_over_6() -> None:
    """Full recomputation repeats every layer's forward: (3F + F_layers)/(3F), just under
    8/6 because the output head is not recomputed; none gives 1."""
    gpt3 = get_preset("gpt-3-175b").architecture
    full = estimate_training(gpt3, TrainingInputs(recompute="full", seq_len=2048), H100)
    s, h, layers, v = 2048, 12288, 96, gpt3.vocab_size
    f_layer = 24 * s * h * h + 4 * s * s * h  # Korthikanti 2022 section 5, per sequence
    f_head = 2 * s * h * v
    expected = (3 * (layers * f_layer + f_head) + layers * f_layer) / (
        3 * (layers * f_layer + f_head)
    )
    assert full.hardware_flops_factor == pytest.approx(expected, rel=1e-9)
    assert 1.3 < full.hardware_flops_factor < 8 / 6
    none = estimate_training(gpt3, TrainingInputs(recompute="none"), H100)
    assert none.hardware_flops_factor == 1.0


GPT3 = get_preset("gpt-3-175b").architecture


def test_hardware_flops_factor_full_layer_stack_is_4_over_3() -> None:
    """A GPT layer stack (Korthikanti 2022 section 5: 24·s·h² + 4·s²·h forward FLOPs per
    layer and sequence): model FLOPs are 3 forward passes, full recomputation adds a
    fourth, so hardware/model = 4/3 exactly and 6·P·D becomes 8·P·D."""
    s, h, layers = 2048, 12288, 96
    layer_stack_per_token = 3 * layers * (24 * h * h + 4 * s * h)
    full = TrainingInputs(recompute="full", seq_len=s)
    assert hardware_flops_factor(GPT3, full, layer_stack_per_token) == pytest.approx(
        4 / 3, rel=1e-12
    )
    assert hardware_flops_factor(GPT3, full.model_copy(update={"recompute": "none"})) == 1.0


def test_hardware_flops_factor_selective_worked_example() -> None:
    """Selective recomputation replays the attention core only (Korthikanti 2022 section 5):
    1 + attention-score FLOPs / model FLOPs. GPT-3 175B at s = 2048 (L = 96, h = a·d =
    12288, V = 50257), per token:
    attention scores 4·L·s·h = 4·96·2048·12288 = 9,663,676,416;
    weights 2·(12·L·h² + h·V) = 347,892,350,976 + 1,235,116,032 = 349,127,467,008;
    model = 3·weights + 3·attention = 1,076,373,430,272 (PaLM's 6N + 12·L·H·Q·T);
    factor = 1 + 9,663,676,416 / 1,076,373,430,272 ≈ 1.008978."""
    ti = TrainingInputs(recompute="selective", seq_len=2048, flash_attention=False)
    flops = training_flops(GPT3, ti)
    assert flops.attention_forward == 9_663_676_416
    assert flops.weights_forward == 349_127_467_008
    assert flops.model == 1_076_373_430_272
    expected = 1 + 9_663_676_416 / 1_076_373_430_272
    assert hardware_flops_factor(GPT3, ti) == pytest.approx(expected, rel=1e-12)
    assert hardware_flops_factor(GPT3, ti) == pytest.approx(1.008978, abs=1e-6)
    # a fused (flash) kernel saves no s² tensor: selective drops, and replays, nothing
    flash = ti.model_copy(update={"flash_attention": True})
    assert hardware_flops_factor(GPT3, flash) == 1.0


def test_hardware_flops_factor_sliding_window_and_lora() -> None:
    """Mistral-7B attends within 4096 tokens on every layer: at s = 8192 the replayed
    attention is 32 layers × 2·(a·d + a·d)·4096 per token. LoRA: frozen weights get no
    weight gradient (2 passes), attention keeps its 3 (Hu et al. 2021)."""
    mistral = get_preset("mistral-7b").architecture
    ti = TrainingInputs(recompute="selective", seq_len=8192, flash_attention=False)
    assert training_flops(mistral, ti).recomputed == 32 * 4 * 4096 * 4096
    s, h, layers, v = 2048, 12288, 96, GPT3.vocab_size
    lora = TrainingInputs(recompute="full", seq_len=s, lora_rank=16)
    weights, attention = layers * 24 * h * h + 2 * h * v, layers * 4 * s * h
    recomputed = layers * (24 * h * h + 4 * s * h)
    expected = 1 + recomputed / (2 * weights + 3 * attention)
    assert hardware_flops_factor(GPT3, lora) == pytest.approx(expected, rel=1e-12)


def test_report_figures_have_the_contract_keys() -> None:
    r = estimate_training(LLAMA8B, TrainingInputs(), H100)
    keys = {f.key for f in r.figures()}
    contract = {
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "temporary_bytes",
        "overhead_bytes",
        "persistent_bytes",
        "peak_bytes",
        "fits",
        "max_micro_batch",
    }
    assert contract <= keys
    dumped = r.model_dump(mode="json")
    assert contract <= set(dumped)
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in dumped.values())


def test_inputs_validate() -> None:
    with pytest.raises(ValueError, match="precision"):
        TrainingInputs(precision="fp7")
    with pytest.raises(ValueError, match="threshold"):
        TrainingInputs(recompute="threshold")
    with pytest.raises(ValueError, match="implementation"):
        TrainingInputs(implementation="jax")


# ------------------------------------------------------------------ command line


def test_cli_report_json_training_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "report",
            "--json",
            "--precision",
            "fp32",
            "--optimizer",
            "sgd_momentum",
            "--seq-len",
            "2048",
            "--micro-batch",
            "2",
            "--recompute",
            "threshold:64MiB",
            "--no-flash-attention",
            "--implementation",
            "pytorch",
        ]
    )
    assert code == 0
    training = json.loads(capsys.readouterr().out)["training"]
    for key in ("weights_bytes", "peak_bytes", "fits", "max_micro_batch", "temporary_bytes"):
        assert key in training
    assert training["precision"] == "fp32"
    assert training["recompute"] == "threshold"


def test_cli_lora_and_qlora(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "report",
                "--json",
                "--model",
                "llama-2-7b",
                "--qlora",
                "--lora-rank",
                "8",
                "--lora-targets",
                "q,v",
            ]
        )
        == 0
    )
    training = json.loads(capsys.readouterr().out)["training"]
    assert training["trainable_params"] == 4_194_304


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--optimizer", "adamax"], "--optimizer"),
        (["--recompute", "sometimes"], "--recompute"),
        (["--implementation", "jax"], "--implementation"),
        (["--seq-len", "0"], "--seq-len"),
    ],
)
def test_cli_bad_training_options_exit_2(
    args: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", *args]) == 2
    err = capsys.readouterr().err
    assert option in err


def test_cli_allowances(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["report", "--json", "--cuda-context", "0", "--fragmentation", "0"]
    assert main(args) == 0
    training = json.loads(capsys.readouterr().out)["training"]
    assert training["overhead_bytes"] == 0
    assert training["peak_bytes"] == pytest.approx(
        training["persistent_bytes"] + training["activations_bytes"] + training["temporary_bytes"]
    )
    assert main(["report", "--fragmentation", "150%"]) == 2
    assert "--fragmentation" in capsys.readouterr().err


def test_zero3_temporaries_are_one_layer_scale() -> None:
    """ZeRO-3 gathers each layer's full weights before use (current + prefetched: 2 layers
    in bf16) and reduce-scatters one layer's gradients (bf16). Llama-3.1-8B: one layer is
    218,112,000 parameters (counted in test_tensor_and_pipeline_sharding)."""
    r = estimate_training(
        LLAMA8B, TrainingInputs(stack="deepspeed", **NO_EXTRAS), H100, dp=8, zero_stage=3
    )
    assert r.zero3_gather_bytes == 2 * 218_112_000 * 2
    assert r.gradient_bucket_bytes == 218_112_000 * 2
    lora = estimate_training(
        LLAMA8B,
        TrainingInputs(stack="deepspeed", lora_rank=16, **NO_EXTRAS),
        H100,
        dp=8,
        zero_stage=3,
    )
    # LoRA r = 16 on q, k, v, o, gate, up, down of one layer: only the adapters reduce
    h, kv, f = 4096, 1024, 14336
    per_layer_lora = 16 * ((h + h) + 2 * (h + kv) + (h + h) + 2 * (h + f) + (f + h))
    assert lora.gradient_bucket_bytes == per_layer_lora * 2


@pytest.mark.parametrize("d", [1, 8, 64])
def test_megatron_distributed_optimizer_table(d: int) -> None:
    """Megatron-LM README, distributed optimizer: bf16 params with fp32 grads take 18 bytes
    per parameter without it and 6 + 12/d with it (our ZeRO-1)."""
    p = 1e9
    inputs = TrainingInputs(precision="mixed_bf16_fp32_grads", **NO_EXTRAS)
    r = estimate_training(LLAMA8B, inputs, H100, params_override=p, dp=d, zero_stage=1)
    assert r.persistent_bytes == pytest.approx((6 + 12 / d) * p, rel=1e-12)
    r0 = estimate_training(LLAMA8B, inputs, H100, params_override=p, dp=d, zero_stage=0)
    assert r0.persistent_bytes == pytest.approx(18 * p, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "gpt-3-175b", "mixtral-8x7b", "qwen2.5-7b"]),
    precision=st.sampled_from(["fp32", "mixed_bf16", "mixed_bf16_fp32_grads", "pure_bf16"]),
    optimizer=st.sampled_from(["adamw", "adam8bit", "sgd", "lion", "adafactor"]),
    recompute=st.sampled_from(["none", "selective", "full"]),
    b=st.integers(1, 8),
    tp=st.sampled_from([1, 2, 8]),
    pp=st.sampled_from([1, 4]),
    dp=st.sampled_from([1, 16]),
)
def test_memory_properties(  # noqa: PLR0917 (hypothesis arguments)
    model: str,
    precision: str,
    optimizer: str,
    recompute: str,
    b: int,
    tp: int,
    pp: int,
    dp: int,
) -> None:
    """Each higher ZeRO stage holds no more; a larger micro-batch peaks no lower; the
    labelled parts add up to the peak; fits ⇔ peak ≤ memory."""
    arch = get_preset(model).architecture
    inputs = TrainingInputs(
        precision=precision,
        optimizer=optimizer,
        recompute=recompute,  # type: ignore[arg-type]
        micro_batch=b,
        seq_len=2048,
    )
    kw = {"tp": tp, "pp": pp, "dp": dp}
    reports = [estimate_training(arch, inputs, H100, zero_stage=z, **kw) for z in range(4)]
    persistent = [r.persistent_bytes for r in reports]
    assert all(a >= c * (1 - 1e-12) for a, c in itertools.pairwise(persistent))
    bigger = estimate_training(
        arch, inputs.model_copy(update={"micro_batch": b + 1}), H100, zero_stage=1, **kw
    )
    assert bigger.peak_bytes >= reports[1].peak_bytes
    for r in reports:
        parts = r.persistent_bytes + r.activations_bytes + r.temporary_bytes + r.overhead_bytes
        assert r.peak_bytes == pytest.approx(parts, rel=1e-12)
        assert r.fits == (r.peak_bytes <= H100.memory_bytes)
        assert (r.max_micro_batch >= b) == r.fits


# ------------------------------------------------------------------ expert parallelism

MIXTRAL = get_preset("mixtral-8x7b").architecture
# Mixtral-8x7B (Jiang et al. 2024, arXiv:2401.04088, Table 1; HF config.json): 32 layers,
# h = 4096, 8 experts of a gated MLP with f = 14336, no MLP biases, 46,702,792,704 params.
MIXTRAL_EXPERTS = 32 * 8 * 3 * 4096 * 14336  # routed-expert parameters of all layers
MIXTRAL_NON_EXPERT = 46_702_792_704 - MIXTRAL_EXPERTS


def test_mixtral_counts_behind_the_ep_tests() -> None:
    assert MIXTRAL_EXPERTS == 45_097_156_608
    assert MIXTRAL_NON_EXPERT == 1_605_636_096
    assert count_parameters(MIXTRAL).total == 46_702_792_704
    assert count_parameters(MIXTRAL).experts == MIXTRAL_EXPERTS


def test_expert_parallel_divides_routed_experts_only() -> None:
    """tp = pp = 1, ep = 4, ZeRO 0, mixed bf16 AdamW on DeepSpeed (2 + 2 + 4 + 4 + 4 = 16
    bytes per parameter, ZeRO paper's K = 12): each GPU holds 8/4 = 2 experts of every layer and all
    the non-expert parameters (DeepSpeed-MoE, arXiv:2201.05596, section 5)."""
    rep = estimate_training(
        MIXTRAL, TrainingInputs(stack="deepspeed", recompute="full"), H100, ep=4, dp=4
    )
    per_gpu = 45_097_156_608 / 4 + 1_605_636_096  # 11,274,289,152 + 1,605,636,096
    assert per_gpu == 12_879_925_248
    assert rep.weights_bytes == pytest.approx(per_gpu * 2, rel=1e-12)
    assert rep.gradients_bytes == pytest.approx(per_gpu * 2, rel=1e-12)
    assert rep.optimizer_bytes == pytest.approx(per_gpu * 12, rel=1e-12)
    assert rep.persistent_bytes == pytest.approx(12_879_925_248 * 16, rel=1e-12)
    # without ep every GPU holds all 46,702,792,704 parameters
    whole = estimate_training(
        MIXTRAL, TrainingInputs(stack="deepspeed", recompute="full"), H100, dp=4
    )
    assert whole.persistent_bytes == pytest.approx(46_702_792_704 * 16, rel=1e-12)


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_expert_state_is_zero_sharded_over_expert_data_parallel(zero: int) -> None:
    """tp = 2, dp = 8, ep = 4: non-expert state ZeRO-sharded over dp = 8, the GPU's 2
    experts per layer over the expert-data-parallel group dp/ep = 2 (DeepSpeed-TED, Singh
    et al. 2023, arXiv:2303.06318, section 3; Megatron-Core's expert data parallel group)."""
    rep = estimate_training(
        MIXTRAL,
        TrainingInputs(stack="deepspeed", recompute="full"),
        H100,
        tp=2,
        dp=8,
        ep=4,
        zero_stage=zero,
    )
    non_expert = 1_605_636_096 / 2  # ÷ tp
    expert = 45_097_156_608 / (2 * 4)  # ÷ tp·ep

    def part(bytes_per_param: int, stage: int) -> float:
        if zero >= stage:
            return bytes_per_param * (non_expert / 8 + expert / 2)
        return bytes_per_param * (non_expert + expert)

    assert rep.optimizer_bytes == pytest.approx(part(12, 1), rel=1e-12)
    assert rep.gradients_bytes == pytest.approx(part(2, 2), rel=1e-12)
    assert rep.weights_bytes == pytest.approx(part(2, 3), rel=1e-12)
    if zero == 3:  # two layers as this GPU stores them (2 of 8 experts), bf16, ÷ tp
        # one layer's non-expert part: q, o 4096², k, v 4096·1024, 2 RMSNorms, router 4096·8
        attention = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 4096 + 4096 * 8
        assert attention == 41_984_000
        # = (non-expert − embedding and head 2·32000·4096 − final norm 4096) / 32 layers
        assert attention == (1_605_636_096 - 2 * 32_000 * 4096 - 4096) / 32
        layer = attention + 2 * 3 * 4096 * 14336  # 394,305,536
        assert rep.zero3_gather_bytes == pytest.approx(2 * layer * 2 / 2, rel=1e-12)


def test_expert_parallel_keeps_activations_and_ignores_dense_models() -> None:
    ti = TrainingInputs(recompute="selective", seq_len=2048)
    one = estimate_training(MIXTRAL, ti, H100, dp=8)
    four = estimate_training(MIXTRAL, ti, H100, dp=8, ep=4)
    # tokens are dispatched to the experts' GPUs: on average top-k × own tokens each
    assert four.activations_bytes == one.activations_bytes
    assert four.weights_bytes < one.weights_bytes
    dense = estimate_training(LLAMA8B, ti, H100, dp=8, zero_stage=3)
    assert estimate_training(LLAMA8B, ti, H100, dp=8, zero_stage=3, ep=4) == dense
    with pytest.raises(ValueError, match="ep"):
        estimate_training(MIXTRAL, ti, H100, ep=0)


def test_interleaved_last_stage_holds_one_micro_batch_of_its_loss() -> None:
    """Megatron's interleaved 1F1B (p = 2, v = 8): the last rank's warm-up runs
    (v − 1)·p = 14 chunk-forwards of chunks 0 … 6, then chunk 7's forward and at once its
    backward: its layers hold ((v − 1)·p + 1)/v = 15/8 stage-loads, but the tensors after
    the last layer (final norm input 2·s·h, output layer input 2·s·h, the loss's fp32
    softmax 4·s·V) one micro-batch's worth."""
    s, h, v = 4096, 4096, 128256
    inputs = TrainingInputs(seq_len=s, **NO_EXTRAS)
    report = estimate_training(
        LLAMA8B,
        inputs,
        H100,
        pp=2,
        microbatches_in_flight=1,
        last_stage_microbatches_in_flight=15 / 8,
        last_stage_loss_in_flight=1,
    )
    assert report.stage == "last"
    assert report.outside_activations_bytes == 2 * s * h + 2 * s * h + 4 * s * v
    layers = report.layers_on_stage * report.activations_per_layer_bytes
    assert report.activations_bytes == pytest.approx(
        layers * 15 / 8 + report.outside_activations_bytes, rel=1e-12
    )
