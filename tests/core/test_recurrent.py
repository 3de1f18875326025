"""State-space and recurrent models: a constant state instead of a KV cache, decode reads,
and the activation ledger of recurrent layers (core/quantities/recurrent.py).

Every expected number is written out from the papers' state definitions and the configs."""

from __future__ import annotations

import math

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.activations import layer_activations
from llm_planner.core.quantities.recurrent import recurrent_saved_tensors
from llm_planner.core.sections.inference import (
    InferenceInputs,
    estimate_inference,
    kv_cache_bytes,
    memory_vs_context,
    recurrent_state_bytes,
)


def _arch(preset: str):
    return get_preset(preset).architecture


def test_mamba_130m_state_by_hand():
    # 24 layers, d_inner 1536, N 16, d_conv 4: 1536·(16 + 4) elements per layer, bf16
    arch = _arch("mamba-130m")
    assert recurrent_state_bytes(arch, 1, "bf16") == 24 * 1536 * (16 + 4) * 2 == 1_474_560
    assert recurrent_state_bytes(arch, 8, "bf16") == 8 * 1_474_560
    assert kv_cache_bytes(arch, 100_000, 8, "bf16") == 0


def test_mamba2_codestral_state_by_hand():
    # 64 layers, H 128 heads of P 64, N 128, G 8, d_conv 4:
    # H·P·N + (d_inner + 2·G·N)·d_conv = 128·64·128 + (8192 + 2048)·4 elements
    arch = _arch("mamba-codestral-7b")
    per_layer = 128 * 64 * 128 + (8192 + 2 * 8 * 128) * 4
    assert recurrent_state_bytes(arch, 1, "bf16") == 64 * per_layer * 2
    assert per_layer * 64 * 2 / 2**20 == pytest.approx(133.0, abs=0.1)  # MiB per sequence


def test_rwkv_state_by_hand():
    # RWKV-4 169M: 12 layers, h = a = 768: two shifted tokens (bf16) + num, den, max (fp32)
    arch = _arch("rwkv-4-169m")
    assert recurrent_state_bytes(arch, 1, "bf16") == 12 * (2 * 768 * 2 + 3 * 768 * 4)


def test_jamba_caches_keys_only_on_its_attention_layers():
    arch = _arch("jamba-v0.1")
    # 4 attention layers · 2 · 8 kv heads · 128 · 2 bytes per token
    assert kv_cache_bytes(arch, 1000, 1, "bf16") == 4 * 2 * 8 * 128 * 2 * 1000
    # 28 Mamba layers of d_inner 8192, N 16, d_conv 4
    assert recurrent_state_bytes(arch, 1, "bf16") == 28 * 8192 * 20 * 2


@pytest.mark.parametrize("preset", ["mamba-130m", "mamba-codestral-7b", "rwkv-4-169m"])
def test_memory_against_context_is_flat(preset):
    arch = _arch(preset)
    params = count_parameters(arch).total
    inputs = InferenceInputs(batch=4, prefill_chunk_tokens=1)
    points = memory_vs_context(arch, params, inputs, [1024, 8192, 65536, 524288])
    assert {p.total for p in points} == {points[0].total}
    assert all(p.kv_cache == 0 for p in points)
    assert points[0].state == recurrent_state_bytes(arch, 4, "bf16")


def test_decode_reads_weights_plus_state():
    arch = _arch("mamba-130m")
    params = count_parameters(arch).total
    gpu = get_gpu("h100-sxm")
    inputs = InferenceInputs(batch=16, context=4096)
    report = estimate_inference(arch, params, params, gpu, inputs)
    assert report.has_recurrent_state
    assert report.state_bytes == 16 * 1_474_560
    assert report.kv_cache_bytes == 0
    # tied embedding: the head reads the whole table, so every weight is read once
    expected = params * 2 + 16 * 1_474_560
    assert report.decode_bytes_per_step == pytest.approx(expected)
    assert report.decode_step_seconds_bound == pytest.approx(
        expected / gpu.memory_bandwidth_bytes_per_s
    )
    figures = {f.key: f for f in report.figures()}
    assert "Mamba" in figures["state_bytes"].source
    assert figures["state_bytes"].label.startswith("Recurrent state")
    assert report.max_context == arch.max_context  # memory never grows with the context


def test_transformer_reports_no_state_figure():
    arch = _arch("llama-3.1-8b")
    params = count_parameters(arch).total
    report = estimate_inference(arch, params, params, get_gpu("h100-sxm"), InferenceInputs())
    assert not report.has_recurrent_state
    assert "state_bytes" not in {f.key for f in report.figures()}


def test_stored_weights_apply_only_to_their_format():
    arch = _arch("mamba-130m")
    params = count_parameters(arch).total
    stored = {"format": "q8_0", "bytes": 123e6, "source": "x.gguf"}
    gpu = get_gpu("h100-sxm")
    on = estimate_inference(
        arch, params, params, gpu, InferenceInputs(weights_format="q8_0", stored_weights=stored)
    )
    assert on.weights_bytes == 123e6
    assert on.weights_from_file
    off = estimate_inference(
        arch, params, params, gpu, InferenceInputs(weights_format="bf16", stored_weights=stored)
    )
    assert off.weights_bytes == params * 2


# ------------------------------------------------------------------ training activations


def test_mamba_layer_ledger_by_hand():
    # mamba_ssm MambaInnerFn (checkpoint_lvl 1): in_proj input T·h, xz 2·T·d, x_dbl
    # T·(r + 2N), B and C 2·T·N, scan output T·d (bf16), chunk states b·d·⌈s/2048⌉·2N fp32
    arch = _arch("mamba-130m")
    s, b = 4096, 2
    t, h, d, n, r = s * b, 768, 1536, 16, 48
    saved = {x.name: x.elements for x in recurrent_saved_tensors(arch, s, b)}
    assert sum(saved.values()) == t * h + 2 * t * d + t * (r + 2 * n) + 2 * t * n + t * d + (
        b * d * 2 * 2 * n
    )
    layer = layer_activations(arch, s, b, profile="megatron", dropout=False)
    mixer = sum(e.bytes for e in layer.ledger if e.block == "recurrent")
    bf16 = 2 * (t * h + 2 * t * d + t * (r + 2 * n) + 2 * t * n + t * d)
    fp32 = 4 * b * d * math.ceil(s / 2048) * 2 * n
    assert mixer == bf16 + fp32
    assert not any(e.block == "attention" for e in layer.ledger)
    assert not any(e.block == "mlp" for e in layer.ledger)  # a Mamba block has no FFN


def test_jamba_layer_ledger_mixes_attention_and_mamba():
    arch = _arch("jamba-v0.1")
    dense = layer_activations(arch, 2048, 1, moe_layer=False, dropout=False)
    # non-MoE layers are the even ones; 4 of those 16 are attention: share 1/4
    attention = [e for e in dense.ledger if e.block == "attention"]
    recurrent = [e for e in dense.ledger if e.block == "recurrent"]
    assert attention
    assert recurrent
    assert all("0.75 of layers" in e.name for e in recurrent)
    moe = layer_activations(arch, 2048, 1, moe_layer=True, dropout=False)
    assert not any(e.block == "attention" for e in moe.ledger)  # odd layers: all Mamba
    assert any(e.block == "moe" for e in moe.ledger)


@pytest.mark.parametrize("preset", ["mamba-130m", "rwkv-4-169m", "jamba-v0.1"])
def test_estimate_runs_end_to_end_with_sources(preset):
    scenario = default_scenario()
    data = scenario.model_dump(mode="json")
    data["model"] = {
        "preset": preset,
        "architecture": _arch(preset).model_dump(mode="json"),
        "params_override": None,
    }
    report = estimate(type(scenario).model_validate(data))
    assert report.inference.state_bytes > 0
    assert any(e.block == "recurrent" for e in report.training.ledger)
    state = next(f for f in report.inference.figures() if f.key == "state_bytes")
    assert state.source


@pytest.mark.parametrize(
    "preset", ["mamba-130m", "rwkv-4-169m", "jamba-v0.1", "gpt-oss-20b", "qwen3-8b", "olmoe-1b-7b"]
)
def test_training_stage_parameters_add_up_to_the_exact_count(preset):
    # one stage holding every layer holds every parameter: per-layer differences (QK-norms,
    # sinks, recurrent mixers, hybrids) are the mean of each layer kind, summing exactly
    from llm_planner.core.sections.training import TrainingInputs, stage_params

    arch = _arch(preset)
    held = stage_params(
        arch, TrainingInputs(), layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    assert held.layer_params + held.outside_params == count_parameters(arch).total
