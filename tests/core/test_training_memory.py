"""The one training-memory function (core/sections/training_memory.py), checked against hand
computations: ZeRO's bytes per parameter and sharding (Rajbhandari et al. 2019,
arXiv:1910.02054, Figure 1), tensor-parallel division, 1F1B micro-batches in flight
(Narayanan et al. 2021, section 2.2.1), expert parallelism, the temporaries and the
overhead allowance. The report evaluates it at one layout and the search at many, so these
tests cover both."""

from __future__ import annotations

import numpy as np
import pytest

from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.training import (
    DDP_BUCKET_BYTES,
    TrainingInputs,
    estimate_training,
    layer_activations_for,
)
from llm_planner.core.sections.training_memory import (
    RECOMPUTE_POLICIES,
    memory_terms,
    training_memory_arrays,
)

H100 = get_gpu("h100-sxm")
FULL = RECOMPUTE_POLICIES.index("full")
P = 7.0e9
"""A parameter count stated as an override: every count is scaled so the model has P."""

# a stack without buffers of its own and a DDP bucket: the precision recipe's bytes alone
PLAIN = TrainingInputs(stack="deepspeed", precision="mixed_bf16", seq_len=2048, recompute="full")


def _memory(ti: TrainingInputs, params: float = P, model: str = "llama-2-7b", **layout: object):
    defaults: dict[str, object] = {
        "tp": 1,
        "pp": 1,
        "shard": 1,
        "ep": 1,
        "zero": 0,
        "micro_batch": 1,
        "sp": False,
        "recompute": FULL,
        "first_in_flight": 1,
        "last_in_flight": 1,
    }
    terms = memory_terms(get_preset(model).architecture, ti, params)
    return training_memory_arrays(terms, **{**defaults, **layout})  # type: ignore[arg-type]


def test_adam_mixed_precision_is_16_bytes_per_parameter() -> None:
    """One GPU, no sharding: bf16 weights 2·P, bf16 gradients 2·P, fp32 master + two fp32
    Adam moments 12·P: 16 bytes per parameter (Rajbhandari et al. 2019, section 3.1)."""
    out = _memory(PLAIN)
    assert out["weights_bytes"][0] == pytest.approx(2 * P, rel=1e-12)
    assert out["gradients_bytes"][0] == pytest.approx(2 * P, rel=1e-12)
    assert out["optimizer_bytes"][0] == pytest.approx(12 * P, rel=1e-12)
    state = out["weights_bytes"] + out["gradients_bytes"] + out["optimizer_bytes"]
    assert state[0] == pytest.approx(16 * P, rel=1e-12)


def test_zero_stages_shard_by_dp_in_one_call() -> None:
    """ZeRO 0-3 over dp = 8, four layouts in one call (Figure 1 of the ZeRO paper): stage 1
    shards the 12·P optimizer bytes, 2 also the 2·P gradients, 3 also the 2·P weights."""
    out = _memory(PLAIN, zero=np.array([0, 1, 2, 3]), shard=8)
    assert out["optimizer_bytes"] == pytest.approx([12 * P, 12 * P / 8, 12 * P / 8, 12 * P / 8])
    assert out["gradients_bytes"] == pytest.approx([2 * P, 2 * P, 2 * P / 8, 2 * P / 8])
    assert out["weights_bytes"] == pytest.approx([2 * P, 2 * P, 2 * P, 2 * P / 8])
    # ZeRO-3 of 7.5B on 64 GPUs: (2 + 2 + 12)·7.5e9 / 64 = 1.875 GB (paper: 1.9 GB)
    z3 = _memory(PLAIN, params=7.5e9, zero=3, shard=64)
    total = z3["weights_bytes"] + z3["gradients_bytes"] + z3["optimizer_bytes"]
    assert total[0] == pytest.approx(16 * 7.5e9 / 64, rel=1e-12)


def test_tensor_parallelism_divides_the_state() -> None:
    """tp = 2 and 4 hold half and a quarter of the state, 16·P/tp (the model divides every
    parameter by tp; Megatron replicates the norms, under 0.01% of Llama-2-7B)."""
    out = _memory(PLAIN, tp=np.array([1, 2, 4]))
    state = out["weights_bytes"] + out["gradients_bytes"] + out["optimizer_bytes"]
    assert state == pytest.approx([16 * P, 8 * P, 4 * P], rel=1e-12)


def test_pipeline_first_stage_holds_pp_microbatches() -> None:
    """pp = 4 under 1F1B: the first stage holds 32/4 = 8 layers and 4 micro-batches in flight
    (Narayanan et al. 2021, section 2.2.1): activations = 8 layers × 4 × one layer's kept
    bytes + 4 × the tensors saved outside the layers (the embedding's output)."""
    ti = PLAIN.model_copy(update={"micro_batch": 2})
    arch = get_preset("llama-2-7b").architecture
    out = _memory(ti, pp=4, micro_batch=2, first_in_flight=4, last_in_flight=1)
    per_layer = layer_activations_for(arch, ti, 2, tp=1, sequence_parallel=False, moe_layer=False)
    assert out["last_stage"][0] == 0.0
    assert out["layers_on_stage"][0] == 8
    assert out["microbatches_in_flight"][0] == 4
    kept = 8 * 4 * per_layer.kept_bytes
    assert out["activations_bytes"][0] == pytest.approx(kept + out["outside_activations_bytes"][0])
    # full recomputation keeps each layer's input: s·b·h·2 bytes (Korthikanti et al. 2022,
    # section 4.2: 2·s·b·h per layer)
    assert per_layer.kept_bytes == pytest.approx(2048 * 2 * 4096 * 2)


def test_peak_is_allocated_plus_context_plus_fragmentation() -> None:
    """peak = allocated × (1 + fragmentation fraction) + CUDA context; reserved (what torch
    reports) leaves the context out."""
    ti = PLAIN.model_copy(update={"fragmentation_fraction": 0.1, "cuda_context_bytes": 1e9})
    out = _memory(ti, shard=8, zero=1)
    allocated = (
        out["weights_bytes"]
        + out["gradients_bytes"]
        + out["optimizer_bytes"]
        + out["activations_bytes"]
        + out["temporary_bytes"]
    )
    assert out["allocated_bytes"] == pytest.approx(allocated)
    assert out["peak_bytes"][0] == pytest.approx(allocated[0] * 1.1 + 1e9)
    assert out["reserved_bytes"][0] == pytest.approx(allocated[0] * 1.1)


def test_temporaries_bucket_and_zero3_gather() -> None:
    """DDP's 25 MiB bucket with dp > 1 under ZeRO 0/1 (PyTorch bucket_cap_mb = 25), none on
    one GPU; ZeRO-3 gathers two layers' bf16 weights ÷ tp (the current and the prefetched
    layer): Llama-2-7B's layer has 4·4096² + 3·4096·11008 + 2·4096 parameters."""
    out = _memory(
        PLAIN, params=6_738_415_616, zero=np.array([0, 1, 3, 0]), shard=[8, 8, 8, 1], tp=2
    )
    assert out["gradient_bucket_bytes"][0] == DDP_BUCKET_BYTES == 25 * 2**20
    assert out["gradient_bucket_bytes"][3] == 0.0
    layer = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    assert out["zero3_gathered_bytes"][2] == pytest.approx(2 * layer * 2 / 2, rel=1e-12)
    assert out["zero3_gathered_bytes"][[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]


def test_expert_parallelism_divides_the_routed_experts() -> None:
    """Mixtral-8x7B (32 layers, 8 experts of 3 matrices 4096 × 14336): with ep = 2 each GPU
    holds 4 of the 8 experts of every layer, so its bf16 weights drop by half the routed
    experts' 32·8·3·4096·14336·2 bytes; nothing else moves (tp = 1, no ZeRO)."""
    ti = PLAIN
    arch = get_preset("mixtral-8x7b").architecture
    from llm_planner.core.primitives.architecture import count_parameters

    total = float(count_parameters(arch).total)
    out = _memory(ti, params=total, model="mixtral-8x7b", ep=np.array([1, 2]), shard=2)
    routed = 32 * 8 * 3 * 4096 * 14336
    drop = out["weights_bytes"][0] - out["weights_bytes"][1]
    assert drop == pytest.approx(routed * 2 / 2, rel=1e-12)


def test_largest_micro_batch_is_the_last_that_fits() -> None:
    """The report's largest micro-batch: its peak fits the GPU and the next one's does not."""
    arch = get_preset("llama-3.1-8b").architecture
    for recompute in ("none", "full", "threshold"):
        ti = TrainingInputs(
            recompute=recompute, recompute_threshold_bytes=2e8 if recompute == "threshold" else None
        )
        rep = estimate_training(arch, ti, H100, tp=2, dp=8, zero_stage=1)
        b = rep.max_micro_batch
        assert b >= 1
        at = estimate_training(
            arch, ti.model_copy(update={"micro_batch": b}), H100, tp=2, dp=8, zero_stage=1
        )
        above = estimate_training(
            arch, ti.model_copy(update={"micro_batch": b + 1}), H100, tp=2, dp=8, zero_stage=1
        )
        assert at.peak_bytes <= H100.memory_bytes < above.peak_bytes


def test_megatron_bf16_keeps_fp32_main_gradients() -> None:
    """Megatron-LM launched with --bf16 (as the export writes mixed bf16) accumulates and
    reduces gradients in fp32 (NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py:
    the default --main-grads-dtype fp32 turns on accumulate_allreduce_grads_in_fp32;
    param_and_grad_buffer.py: grad_dtype torch.float): 2 + 4 + 12 = 18 bytes per parameter,
    for mixed_bf16 and for pure bf16 (fp32 main params and moments are Megatron's defaults).
    A stack that runs the recipe as named (Hugging Face / PyTorch DDP) keeps 2 + 2 + 12."""
    for precision in ("mixed_bf16", "pure_bf16"):
        megatron = PLAIN.model_copy(update={"stack": "megatron", "precision": precision})
        out = _memory(megatron)
        assert out["weights_bytes"][0] == pytest.approx(2 * P, rel=1e-12)
        assert out["gradients_bytes"][0] == pytest.approx(4 * P, rel=1e-12)
        assert out["optimizer_bytes"][0] == pytest.approx(12 * P, rel=1e-12)
    hf = _memory(PLAIN.model_copy(update={"stack": "hf"}))
    assert hf["gradients_bytes"][0] == pytest.approx(2 * P, rel=1e-12)


def test_ddp_bucket_follows_the_stack_not_the_activation_profile() -> None:
    """Megatron reduces in place in its contiguous gradient buffer (no DDP bucket) whatever
    activation profile is chosen under it; PyTorch DDP (the hf stack) holds its 25 MiB bucket
    (bucket_cap_mb = 25) even with Megatron's activation profile."""
    megatron = PLAIN.model_copy(update={"stack": "megatron", "implementation": "pytorch"})
    hf = PLAIN.model_copy(update={"stack": "hf", "implementation": "megatron"})
    assert _memory(megatron, shard=8)["gradient_bucket_bytes"][0] == 0.0
    assert _memory(hf, shard=8)["gradient_bucket_bytes"][0] == 25 * 2**20
