"""The vTrain single-node set: 1,440 measured Megatron-DeepSpeed runs on 2, 4 and 8 A100
against the app's step-time model (issue 31).

Data: ``vtrain-single-node-a100.json`` next to this file, a copy of the team's
``/work/shared/data/vtrain-single-node-a100.json`` (its ``description`` and each row's
``source`` say where every number comes from: VIA-Research/vTrain@f8dda847
data/ground_truth_single.csv), or ``VTRAIN_PATH``. GPT models of hidden 1024 or 2048,
12-24 layers, sequence 1024, every tp × pp × dp and micro-batch on one node: small steps,
where kernel launches and collective latency weigh as much as the FLOPs.

Every row is priced by the app's own step-time model (:func:`llm_planner.core.sections.
parallelism.evaluate_layouts`, the arithmetic the report and the search share) with the
inputs a user would state for it: ``training.stack = "megatron"`` (Megatron-DeepSpeed is a
fork of Megatron-LM's GPT training loop), mixed fp16, full activation checkpointing (the
rows' ``recompute``: vTrain's validation configs), no sequence parallelism, no
FlashAttention (Megatron-DeepSpeed's default fused softmax), ZeRO stage 0 (the stage is not
stated; Megatron's own DDP), 1F1B, A100 SXM4 80GB (memory not stated; both A100s have the
same 312 TFLOP/s fp16 peak and the step time does not depend on the memory), 8 GPUs per
node, the app's default constants for everything else.

Used by ``test_vtrain.py`` (the bound) and ``scripts/gen_accuracy.py`` (the page).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.sections.parallelism import (
    Layouts,
    ParallelInputs,
    cluster_of,
    evaluate_layouts,
    step_inputs_of,
    workload_of,
)

DEFAULT_PATH = Path(__file__).with_name("vtrain-single-node-a100.json")
"""A compacted copy of /work/shared/data/vtrain-single-node-a100.json (the fields every row
shares once, then one line per row), kept here so CI has it; ``VTRAIN_PATH`` may name the
shared file itself."""

GPU_ID = "a100-sxm4-80gb"

TRAINING: dict[str, Any] = {
    "stack": "megatron",
    "precision": "mixed_fp16",
    "recompute": "full",
    "flash_attention": False,
}
"""The rows' fixed training inputs (seq_len is each row's own)."""


def data_path() -> Path:
    return Path(os.environ.get("VTRAIN_PATH", str(DEFAULT_PATH)))


@cache
def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(data_path().read_text(encoding="utf-8"))
    return data


def _compact_row(values: list[Any], columns: list[str], common: dict[str, Any]) -> dict[str, Any]:
    """A row of the compacted copy in the shared file's shape (the fields this module reads)."""
    v = dict(zip(columns, values, strict=True))
    hidden = int(v["hidden"])
    return {
        "id": v["id"],
        "csv_row": v["csv_row"],
        "model": {
            "name": f"GPT h{hidden} L{v['layers']}",
            "layers": v["layers"],
            "hidden": hidden,
            "heads": v["heads"],
            "kv_heads": v["kv_heads"],
            "ffn": 4 * hidden,
            "vocab": common["model"]["vocab"],
        },
        "seq_len": common["seq_len"],
        "layout": {"tp": v["tp"], "pp": v["pp"], "dp": v["dp"]},
        "micro_batch": v["micro_batch"],
        "global_batch": v["global_batch"],
        "measured": {"step_time_s": float(v["step_time_ms_published"]) / 1e3},
    }


def measured_rows() -> list[dict[str, Any]]:
    """The rows in the shared file's shape, from it or from the compacted copy."""
    data = load()
    if "columns" not in data:
        rows = [dict(r) for r in data["rows"]]
        for r in rows:
            r["csv_row"] = int(str(r["source"]).split("(row ")[1].split(")")[0])
        return rows
    return [_compact_row(r, data["columns"], data["common"]) for r in data["rows"]]


def architecture(model: dict[str, Any], seq_len: int) -> Architecture:
    """GPT as Megatron builds it: learned positions, LayerNorm, GeLU MLP of ``ffn``, biases,
    the output head tied to the embedding; heads, layers, hidden, ffn and vocab from the row
    (ffn 4h and vocab 50,257 are the file's stated inferences)."""
    hidden, heads = int(model["hidden"]), int(model["heads"])
    return Architecture(
        name=str(model["name"]),
        layers=int(model["layers"]),
        hidden_size=hidden,
        heads=heads,
        kv_heads=int(model["kv_heads"]),
        head_dim=hidden // heads,
        ffn_size=int(model["ffn"]),
        ffn_kind="gelu_mlp",
        vocab_size=int(model["vocab"]),
        max_context=seq_len,
        tied_embeddings=True,
        positions="learned",
        norm="layernorm",
        attention_bias="all",
        mlp_bias=True,
    )


@dataclass(frozen=True)
class VtrainRow:
    """One measured run with the app's prediction."""

    id: str
    csv_row: int
    hidden: int
    layers: int
    tp: int
    pp: int
    dp: int
    micro_batch: int
    global_batch: int
    measured_seconds: float
    predicted_seconds: float

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def error(self) -> float:
        """Predicted ÷ measured throughput − 1 (= measured ÷ predicted step time − 1):
        positive when the app is optimistic, as on the rest of the page."""
        return self.measured_seconds / self.predicted_seconds - 1.0

    @property
    def label(self) -> str:
        return (
            f"h{self.hidden} L{self.layers} tp{self.tp} pp{self.pp} dp{self.dp} "
            f"b{self.micro_batch}/B{self.global_batch}"
        )


def parallel_inputs(**overrides: Any) -> ParallelInputs:
    return ParallelInputs(gpus_per_node=8, sequence_parallel=False, **overrides)


def vtrain_rows(**overrides: Any) -> tuple[VtrainRow, ...]:
    """Every row with the app's step time; ``overrides``: ParallelInputs fields."""
    return _rows(tuple(sorted(overrides.items())))


@cache
def _rows(overrides: tuple[tuple[str, Any], ...]) -> tuple[VtrainRow, ...]:
    rows = measured_rows()
    gpu = get_gpu(GPU_ID)
    cluster = cluster_of(gpu, parallel_inputs(**dict(overrides)), "fp16")
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        m = r["model"]
        key = (m["hidden"], m["layers"], m["heads"], m["ffn"], r["seq_len"], r["global_batch"])
        groups.setdefault(key, []).append(i)
    predicted = np.zeros(len(rows))
    for idx in groups.values():
        first = rows[idx[0]]
        seq = int(first["seq_len"])
        arch = architecture(first["model"], seq)
        ti = TrainingInputs(seq_len=seq, **TRAINING)
        work = workload_of(arch, seq, int(first["global_batch"]), None, training_inputs=ti)

        def col(get: Any, idx_: list[int] = idx) -> np.ndarray:
            return np.array([get(rows[i]) for i in idx_], dtype=np.int64)

        tp = col(lambda r: r["layout"]["tp"])
        pp = col(lambda r: r["layout"]["pp"])
        dp = col(lambda r: r["layout"]["dp"])
        n = len(idx)
        ones = np.ones(n, dtype=np.int64)
        lay = Layouts(
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ones,
            zero=np.zeros(n, dtype=np.int64),
            shard=dp,
            micro_batch=col(lambda r: r["micro_batch"]),
            v=ones,
            gpipe=np.zeros(n, dtype=bool),
            sp=np.zeros(n, dtype=bool),
            recompute=np.full(n, 2, dtype=np.int64),
        )
        step = evaluate_layouts(work, cluster, lay, None, step_inputs_of(arch, ti))
        predicted[idx] = step["step_seconds"]
    out = []
    for i, r in enumerate(rows):
        lay = r["layout"]
        out.append(
            VtrainRow(
                id=str(r["id"]),
                csv_row=int(r["csv_row"]),
                hidden=int(r["model"]["hidden"]),
                layers=int(r["model"]["layers"]),
                tp=int(lay["tp"]),
                pp=int(lay["pp"]),
                dp=int(lay["dp"]),
                micro_batch=int(r["micro_batch"]),
                global_batch=int(r["global_batch"]),
                measured_seconds=float(r["measured"]["step_time_s"]),
                predicted_seconds=float(predicted[i]),
            )
        )
    return tuple(out)


# ------------------------------------------------------------------ statistics


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass(frozen=True)
class Stats:
    rows: int
    median_abs_error: float
    p90_abs_error: float
    median_signed_error: float
    optimistic: int


def stats(rows: tuple[VtrainRow, ...] | list[VtrainRow]) -> Stats:
    errs = [r.error for r in rows]
    return Stats(
        rows=len(errs),
        median_abs_error=statistics.median(abs(e) for e in errs),
        p90_abs_error=quantile([abs(e) for e in errs], 0.9),
        median_signed_error=statistics.median(errs),
        optimistic=sum(e > 0 for e in errs),
    )


def fit_rows(rows: tuple[VtrainRow, ...]) -> list[VtrainRow]:
    """The rows any constant fitted on this set is fitted on: hidden 1024."""
    return [r for r in rows if r.hidden == 1024]


def held_out_rows(rows: tuple[VtrainRow, ...]) -> list[VtrainRow]:
    """The rows kept aside to check the fit: hidden 2048."""
    return [r for r in rows if r.hidden == 2048]


LAUNCH_GRID = tuple(round(2.0e-5 + 0.25e-5 * i, 8) for i in range(17))
"""The grid :data:`llm_planner.core.quantities.comm.HOST_SECONDS_PER_KERNEL_LAUNCH` was
chosen on (:func:`fit_launch`)."""


def even_rows(rows: tuple[VtrainRow, ...]) -> list[VtrainRow]:
    """The other split: rows with an even CSV row number (half of every shape and layout)."""
    return [r for r in rows if r.csv_row % 2 == 0]


def odd_rows(rows: tuple[VtrainRow, ...]) -> list[VtrainRow]:
    return [r for r in rows if r.csv_row % 2 == 1]


def fit_launch(
    grid: tuple[float, ...] = LAUNCH_GRID, on: Any = None
) -> tuple[float, dict[float, float]]:
    """The per-kernel host time of least median |error| on the fit rows (``on``: a function
    of all rows, :func:`fit_rows` by default), and that median at every grid point. Sets
    the module constant for each point and puts the app's value back."""
    from llm_planner.core.quantities import comm

    select = on or fit_rows
    saved = comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    scores: dict[float, float] = {}
    try:
        for value in grid:
            comm.HOST_SECONDS_PER_KERNEL_LAUNCH = value
            _rows.cache_clear()
            scores[value] = stats(select(vtrain_rows())).median_abs_error
    finally:
        comm.HOST_SECONDS_PER_KERNEL_LAUNCH = saved
        _rows.cache_clear()
    return min(scores, key=lambda k: scores[k]), scores


if __name__ == "__main__":
    import sys
    import time

    t0 = time.perf_counter()
    all_rows = vtrain_rows()
    print(f"{time.perf_counter() - t0:.1f}s")
    for name, part in (
        ("all", list(all_rows)),
        ("h1024 (fit)", fit_rows(all_rows)),
        ("h2048 (held out)", held_out_rows(all_rows)),
    ):
        s = stats(part)
        print(
            f"{name:18s} n={s.rows} median {100 * s.median_abs_error:.1f}% "
            f"p90 {100 * s.p90_abs_error:.1f}% signed {100 * s.median_signed_error:+.1f}% "
            f"optimistic {s.optimistic}"
        )
    if "-v" in sys.argv:
        for r in sorted(all_rows, key=lambda r: (r.hidden, r.layers, r.tp, r.pp, r.dp)):
            print(
                f"{r.label:36s} meas {1e3 * r.measured_seconds:8.1f} ms "
                f"pred {1e3 * r.predicted_seconds:8.1f} ms {100 * r.error:+6.1f}%"
            )
