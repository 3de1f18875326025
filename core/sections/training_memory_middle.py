"""The middle pipeline stages of a stated first/last split (Megatron-Core's uneven
pipeline, :mod:`llm_planner.core.quantities.pipeline_split`) as a candidate for the memory
peak of :func:`.training_memory.training_memory_arrays`: a middle stage holding more layers
than the first can hold more activations though one micro-batch fewer is in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def fuller_middles(
    middle_layers: Callable[[int], int] | None,
    stage: Callable[..., dict[str, FloatArray]],
    peak: Callable[[FloatArray], tuple[FloatArray, FloatArray]],
    chosen: tuple[dict[str, FloatArray], dict[str, FloatArray], npt.NDArray[np.bool_], Any],
    *,
    pp: tuple[IntArray, IntArray, IntArray, FloatArray],
    first_flight: FloatArray,
    held_of: Callable[[FloatArray], list[Any]],
) -> tuple[dict[str, FloatArray], npt.NDArray[np.bool_]]:
    """The fuller stage's components (``selected`` keys) of the first and the last
    (``chosen``: first, last, the mask where the last is fuller, the keys) and, as
    :func:`.training_memory_one._fuller_middle` over layouts, where a stated split's middle
    stage (no embedding or head, p − 1 of the first stage's p micro-batches in flight) holds
    more layers than the first and peaks higher, its components instead (``held_of``: a
    stage's state of those layers, as the layouts shard and offload it)."""
    first, last, use_last, selected = chosen
    out = {k: np.asarray(np.where(use_last, last[k], first[k])) for k in selected}
    pp_i, pp_index, pp_values, counts = pp
    middle_of_pp = _middle_counts(middle_layers, pp_values, counts[:, 0])
    if middle_of_pp is None:
        return out, use_last
    pp_f = pp_i.astype(np.float64)
    flight = first_flight * (pp_f - 1.0) / pp_f
    middle = stage(
        held_of(middle_of_pp),
        middle_of_pp,
        flight,
        np.zeros(len(pp_f)),
        last=False,
        outside_flight=flight,
    )
    use_middle = (middle_of_pp[pp_index] > counts[pp_index, 0]) & (
        peak(middle["allocated_bytes"])[0] > peak(out["allocated_bytes"])[0]
    )
    out = {k: np.asarray(np.where(use_middle, middle[k], out[k])) for k in selected}
    return out, use_last & ~use_middle


def _middle_counts(
    middle_layers: Callable[[int], int] | None, pp_values: IntArray, first_counts: FloatArray
) -> FloatArray | None:
    """Each distinct pp's middle-stage layers under a stated split (0 where none), or None
    when no pp has a middle stage fuller than its first (the first stage, with the
    embedding and more micro-batches in flight, then outweighs every middle one)."""
    if middle_layers is None:
        return None
    middle = np.array([middle_layers(int(p)) for p in pp_values.tolist()], dtype=np.float64)
    return middle if bool(np.any(middle > first_counts)) else None
