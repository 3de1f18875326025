"""Stack settings an export writes where the scenario has no field for them: each stack's
own default, with the file it comes from. Where :mod:`llm_planner.core.quantities.stacks`
holds a profile value of the same name, that value wins (:func:`profile_value`), so the
exported file and the estimate assume the same buckets."""

from __future__ import annotations

from typing import Any

from llm_planner.core.quantities import stacks

DEEPSPEED_ZERO: dict[str, int] = {
    "reduce_bucket_size": 500_000_000,
    "allgather_bucket_size": 500_000_000,
    "stage3_prefetch_bucket_size": 50_000_000,
    "stage3_param_persistence_threshold": 100_000,
    "stage3_max_live_parameters": 1_000_000_000,
}
"""DeepSpeed's ZeRO defaults, in elements (DeepSpeed v0.19.8,
deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig: reduce_bucket_size 5e8,
allgather_bucket_size 5e8, prefetch_bucket_size 5e7 (alias stage3_prefetch_bucket_size),
param_persistence_threshold 1e5, max_live_parameters 1e9)."""

DEEPSPEED_OPTIMIZERS: dict[str, str] = {"adamw": "AdamW", "adam": "Adam", "lion": "Lion"}
"""The plan's optimizers DeepSpeed builds itself (DeepSpeed v0.19.8,
deepspeed/runtime/config.py DEEPSPEED_OPTIMIZERS: adam, adamw, lamb, onebitadam, lion...);
others come from the training script (a "client optimizer")."""

MEGATRON_DDP_BUCKET_ELEMENTS = 40_000_000
"""Megatron-Core's gradient bucket when overlapping the reduction: max(40M, 1M·dp) elements
(megatron-core 0.16.1, megatron/core/distributed/distributed_data_parallel.py line 65 and
distributed_data_parallel_config.py ``bucket_size``)."""


def megatron_bucket_elements(dp: int) -> int:
    """Megatron-Core's default gradient bucket for a data-parallel group of ``dp``."""
    return max(MEGATRON_DDP_BUCKET_ELEMENTS, 1_000_000 * dp)


NANOTRON_DDP_BUCKET_CAP_MB = 25
"""nanotron's DDP bucket, ``model.ddp_bucket_cap_mb`` = 25 (nanotron v0.2,
src/nanotron/config/config.py ModelArgs), PyTorch DDP's own default."""


def profile_value(stack: str, name: str, default: Any) -> Any:
    """``name`` of the stack's profile in :mod:`~llm_planner.core.quantities.stacks` when it
    has one (a ``STACK_PROFILES`` mapping of objects or dicts), else ``default``."""
    profiles = getattr(stacks, "STACK_PROFILES", None)
    profile = profiles.get(stack) if isinstance(profiles, dict) else None
    if profile is None:
        return default
    if isinstance(profile, dict):
        return profile.get(name, default)
    return getattr(profile, name, default)
