"""Training stacks: the frameworks a run is launched with.

A scenario names the stack it will run on (``training.stack``); the stack sets what differs
between frameworks (buffers and their dtypes, the activation profile, bucket and prefetch
sizes, overlap, allocator behaviour) and which launch config the plan exports to.
"""

from __future__ import annotations

from typing import Literal

Stack = Literal["megatron", "deepspeed", "torchtitan", "hf", "nanotron"]
"""Megatron-LM / Megatron-Core, DeepSpeed, PyTorch FSDP2 (torchtitan), Hugging Face
Trainer / accelerate, nanotron."""

STACK_NAMES: dict[str, str] = {
    "megatron": "Megatron-LM / Megatron-Core",
    "deepspeed": "DeepSpeed",
    "torchtitan": "PyTorch FSDP2 (torchtitan)",
    "hf": "Hugging Face Trainer / accelerate",
    "nanotron": "nanotron",
}
"""The human name of each stack id."""
