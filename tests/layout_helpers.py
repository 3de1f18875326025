"""One candidate layout as the vectorised step-time and memory code take it (shared by the
parallelism tests)."""

from __future__ import annotations

import numpy as np

from llm_planner.core.sections import parallelism as par


def one_layout(**kw: object) -> par.Layouts:
    """A one-row :class:`Layouts`: tp = pp = dp = ep = 1, ZeRO-0, micro-batch 1, one model
    chunk, 1F1B, no sequence parallelism, no recomputation, unless ``kw`` says otherwise;
    ZeRO shards over all of dp unless ``shard`` is given."""
    base: dict[str, object] = {
        "tp": 1,
        "pp": 1,
        "dp": 1,
        "ep": 1,
        "zero": 0,
        "micro_batch": 1,
        "v": 1,
        "gpipe": False,
        "sp": False,
        "recompute": 0,
    }
    base.update(kw)
    base.setdefault("shard", base["dp"])
    arrays = {
        k: np.array([v], dtype=bool if k in ("gpipe", "sp") else np.int64) for k, v in base.items()
    }
    return par.Layouts(**arrays)
