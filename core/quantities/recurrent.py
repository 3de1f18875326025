"""What a recurrent (state-space) layer saves for its backward pass, tensor by tensor.

The activation ledger of :mod:`.activations` lists a transformer layer's saved tensors;
this module lists those of the mixers that replace attention: Mamba, Mamba-2, Gated
DeltaNet and RWKV-4.
Each line is a shape formula in tokens T = s·b, a dtype ("act": the activation dtype, or
fp32) and an element count; the ledger turns them into bytes. Sources, per mixer:

* Mamba: state-spaces/mamba ``mamba_ssm/ops/selective_scan_interface.py`` at 01887ed7,
  ``MambaInnerFn.forward`` (the fused path; default ``checkpoint_lvl=1``: the conv output
  and Δ are recomputed in backward, not saved): ``save_for_backward`` keeps xz (in_proj
  output), x_dbl (x_proj output), contiguous copies of B and C, ``scan_intermediates``
  and the scan output ``out`` (``out_z`` is recomputed). The scan intermediates are fp32
  chunk states, 2·N per channel per 2048-token chunk (Gu & Dao 2023 section 3.3.2: the
  expanded state is never materialised in HBM). The in_proj matmul outside the function
  saves its input.
* Mamba-2: from the fused ``mamba_split_conv1d_scan_combined`` function's inputs and
  outputs (``ops/triton/ssd_combined.py``): zxbcdt (in_proj output), the scan output before
  the gated norm, the norm's fp32 rstd per group and out_proj's input. An assumption:
  not yet read line by line.
* Gated DeltaNet: as Mamba-2's, from the inputs and outputs of transformers 5.24.0
  ``Qwen3_5GatedDeltaNet.forward`` with the chunked kernel (the projections' outputs, the
  conv output, the delta-rule output before the gated norm, the norm's fp32 rstd per head,
  out_proj's input). An assumption: the kernel's own saved chunk states are not read.
* RWKV-4: derived from the operations of Hugging Face ``modeling_rwkv.py`` with the CUDA
  WKV kernel: the token-shift output, the three mixed inputs of key / value / receptance,
  r and σ(r), k, v and the WKV output in fp32 (the kernel runs in float), the output
  projection's input; the channel-mix's shift, two mixed inputs, key output, relu²,
  σ(receptance). An assumption: not measured.

Assumptions: the fused kernels (not transformers' slow PyTorch path, which saves the
discretised state of every step); tensor parallelism splits d_inner (and RWKV's width)
by t; not yet measured with torch (the kernels need CUDA and ``mamba_ssm``).
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

from llm_planner.core.primitives.architecture import Architecture

Num = Any
"""A number or a numpy array (s and b may be arrays in the vectorised search)."""

SCAN_CHUNK_TOKENS = 2048
"""``selective_scan`` keeps one fp32 state per channel every 2048 tokens (the forward
kernel's chunk, ``csrc/selective_scan/selective_scan_fwd_kernel.cuh`` ``kChunkSize`` =
threads × items = 128 × 16)."""


class SavedTensor(NamedTuple):
    """One tensor a recurrent mixer saves: name, shape formula, dtype, elements, shard."""

    name: str
    shape: str
    dtype: Literal["act", "fp32"]
    elements: Num
    shard: Literal["tp", "sp", "none"]


def recurrent_saved_tensors(
    arch: Architecture, seq_len: Num, micro_batch: Num
) -> list[SavedTensor]:
    """The tensors one recurrent layer's mixer saves (norms are the ledger's), per the
    module docstring. Empty for a model without recurrent layers."""
    r = arch.recurrent
    if r is None:
        return []
    s, b, h = seq_len, micro_batch, arch.hidden_size
    t = s * b
    d, n = r.inner_size, r.state_size
    if r.kind == "mamba":
        chunks = _ceil_div(s, SCAN_CHUNK_TOKENS)
        return [
            SavedTensor("in_proj input (norm output)", "T·h", "act", t * h, "sp"),
            SavedTensor("xz (in_proj output: x and z)", "2·T·d_inner", "act", 2 * t * d, "tp"),
            SavedTensor(
                "x_dbl (x_proj output: dt, B, C)",
                "T·(dt_rank + 2N)",
                "act",
                t * (r.time_step_rank + 2 * n),
                "tp",
            ),
            SavedTensor("B and C (contiguous copies)", "2·T·N", "act", 2 * t * n, "tp"),
            SavedTensor("scan output y", "T·d_inner", "act", t * d, "tp"),
            SavedTensor(
                "scan chunk states (fp32, one per 2048 tokens)",
                "b·d_inner·⌈s/2048⌉·2N",
                "fp32",
                b * d * chunks * 2 * n,
                "tp",
            ),
        ]
    if r.kind == "mamba2":
        projection = 2 * d + 2 * r.groups * n + r.heads
        return [
            SavedTensor("in_proj input (norm output)", "T·h", "act", t * h, "sp"),
            SavedTensor(
                "zxbcdt (in_proj output)", "T·(2·d_inner + 2GN + H)", "act", t * projection, "tp"
            ),
            SavedTensor("scan output (before gated norm)", "T·d_inner", "act", t * d, "tp"),
            SavedTensor("gated norm rstd (fp32)", "T·G", "fp32", t * r.groups, "tp"),
            SavedTensor("out_proj input", "T·d_inner", "act", t * d, "tp"),
        ]
    if r.kind == "gated_deltanet":
        conv_dim = d + 2 * r.groups * n
        projection = conv_dim + d + 2 * r.heads
        return [
            SavedTensor("in_proj input (norm output)", "T·h", "act", t * h, "sp"),
            SavedTensor(
                "qkv, z, b, a (in_proj outputs)", "T·(2GN + 2·d + 2H)", "act", t * projection, "tp"
            ),
            SavedTensor("q, k, v after the conv", "T·(2GN + d)", "act", t * conv_dim, "tp"),
            SavedTensor("delta-rule output (before gated norm)", "T·d", "act", t * d, "tp"),
            SavedTensor("gated norm rstd (fp32)", "T·H", "fp32", t * r.heads, "tp"),
            SavedTensor("out_proj input", "T·d", "act", t * d, "tp"),
        ]
    a, f = d, r.ffn_size
    return [
        SavedTensor("time-mix: token shift", "T·h", "act", t * h, "sp"),
        SavedTensor("time-mix: key, value, receptance inputs", "3·T·h", "act", 3 * t * h, "sp"),
        SavedTensor("time-mix: r and σ(r)", "2·T·a", "act", 2 * t * a, "tp"),
        SavedTensor("time-mix: k, v, WKV output (fp32 kernel)", "3·T·a", "fp32", 3 * t * a, "tp"),
        SavedTensor("time-mix: output input (σ(r)·wkv)", "T·a", "act", t * a, "tp"),
        SavedTensor("channel-mix: token shift", "T·h", "act", t * h, "sp"),
        SavedTensor("channel-mix: key and receptance inputs", "2·T·h", "act", 2 * t * h, "sp"),
        SavedTensor("channel-mix: key output, relu², value input", "3·T·f", "act", 3 * t * f, "tp"),
        SavedTensor("channel-mix: receptance and σ", "2·T·h", "act", 2 * t * h, "sp"),
    ]


def recurrent_forward_flops(arch: Architecture, seq_len: Num, micro_batch: Num) -> Num:
    """Forward FLOPs of one recurrent mixer: 2·T·(its matrix parameters) plus the scan.

    Matrices (:meth:`.Architecture.recurrent_matrices`): Mamba in_proj 2d·h, x_proj
    d·(r + 2N), dt_proj r·d, out_proj d·h; Mamba-2 in_proj (2d + 2GN + H)·h and out_proj
    d·h; Gated DeltaNet in_proj (2GN + 2d + 2H)·h and out_proj d·h; RWKV 4·h·a + 2·h·f +
    h². Scan: ~9·d·N per token for Mamba's selective scan (discretise, multiply-add state,
    contract with C; Gu & Dao 2023 section 3.3), 2·H·P·N·2 for Mamba-2's recurrent form;
    ~6·H·P·N for Gated DeltaNet's (Yang et al. 2024, arXiv:2412.06464, section 2: per
    value head the retrieval S·k, the rank-one update and the read-out S·q, 2·N·P each);
    RWKV's WKV ~10·a.
    """
    r = arch.recurrent
    if r is None:
        return 0.0
    d, n, t = r.inner_size, r.state_size, seq_len * micro_batch
    mats = sum(m.elements for m in arch.recurrent_matrices())
    if r.kind == "mamba":
        scan = 9 * d * n
    elif r.kind == "mamba2":
        scan = 4 * d * n
    elif r.kind == "gated_deltanet":
        scan = 6 * d * n
    else:
        scan = 10 * d
    return t * (2.0 * mats + scan)


def _ceil_div(x: Num, y: int) -> Num:
    if isinstance(x, int):
        return -(-x // y)
    try:
        return math.ceil(x / y)
    except TypeError:  # numpy arrays
        return -(-x // y)
