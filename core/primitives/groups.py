"""Entries that share what a term depends on, priced once: dense codes of a few columns of
small non-negative integers (parallel degrees, ZeRO stages, policy codes), in O(n) with a
scatter into a table as long as the values' range, rather than a sort.

The layout search prices millions of candidate layouts as numpy arrays; a term that
depends on a few of their degrees (the data-parallel time on tp, pp, dp, ZeRO…; a
collective's latency on its group size) takes a few hundred values among them. Priced on
one member of each group and spread back with one gather, it is the same arithmetic on
the same numbers, element by element (IEEE double either way), without the millions of
repeats. Nothing here is a formula: it only chooses which entries the formulas see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

GROUP_FROM = 1 << 15
"""Entries from which grouping pays: below it the arrays fit in cache and numpy's per-call
cost (the codes and gathers are ~100 calls) outweighs the passes saved; the cheapest-hardware
ranking's searches (2,000-25,000 layouts each) ran ~5 % slower grouped."""


def distinct(values: npt.NDArray[np.integer] | npt.NDArray[np.bool_]) -> tuple[IntArray, int]:
    """(each entry's index among the distinct values, ascending; how many there are) of
    small non-negative integers (or booleans), as small integers to combine into codes.
    Values that are already 0, 1, … k−1 (ZeRO stages, policy codes, flags) are their own
    index, uncopied."""
    if values.dtype == np.bool_:
        values = values.view(np.uint8)
    top = int(values.max(initial=0))
    seen = np.zeros(top + 1, dtype=bool)
    seen[values] = True  # a scatter of one constant: no chain of increments as bincount's
    present = np.flatnonzero(seen)
    if len(present) == 1:  # one value: every index 0, nothing to gather
        return np.broadcast_to(np.zeros(1, dtype=np.uint8), values.shape), 1
    if len(present) == top + 1:
        return values, top + 1  # type: ignore[return-value]
    lookup = np.zeros(top + 1, dtype=np.uint8 if len(present) < 256 else np.int32)
    lookup[present] = np.arange(len(present))
    return lookup[values], len(present)  # type: ignore[return-value]


def distinct_values(values: IntArray) -> tuple[IntArray, IntArray]:
    """(index of each value among the distinct ones, the distinct values), O(n) for small
    non-negative integers: what depends on one degree alone is priced once per value."""
    if values.size <= _FEW:  # a few layouts: Python's set is cheaper than the arrays
        listed = values.tolist()
        distinct = sorted(set(listed))
        position = {v: i for i, v in enumerate(distinct)}
        index = np.array([position[v] for v in listed], dtype=np.int64)
        return index, np.array(distinct, dtype=np.int64)
    seen = np.zeros(int(values.max(initial=0)) + 1, dtype=bool)
    seen[values] = True
    return (np.cumsum(seen) - 1)[values], np.flatnonzero(seen)


_FEW = 64
"""Entries up to which :func:`distinct_values` uses Python's set."""


@dataclass(frozen=True)
class Groups:
    """The entries grouped by equal key columns."""

    first: IntArray
    """One member of each group (its representative; any member, all share the key)."""
    inverse: IntArray
    """Each entry's group."""
    _agreed: dict[int, tuple[FloatArray, FloatArray | None]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """:meth:`members_agree`'s answers by array (the array kept: its id stays its own)."""

    def __len__(self) -> int:
        return int(self.first.shape[0])

    def spread(self, per_group: FloatArray) -> FloatArray:
        """One value per group → one per entry."""
        return np.asarray(per_group[self.inverse])

    def members_agree(self, values: FloatArray) -> FloatArray | None:
        """``values`` (one per entry) at the representatives, when every entry holds its
        representative's value (a quantity the key columns determine); None otherwise
        (NaN included), and the caller prices every entry."""
        known = self._agreed.get(id(values))
        if known is not None and known[0] is values:  # asked by an earlier term
            return known[1]
        picked = values[self.first]
        agreed = picked if bool(np.array_equal(picked[self.inverse], values)) else None
        self._agreed[id(values)] = (values, agreed)
        return agreed


def group_by(
    codes: Sequence[tuple[IntArray, int]], n: int, *, most: int | None = None
) -> Groups | None:
    """Groups of equal key over ``codes`` (each column as :func:`distinct` gives it);
    None when there are more than ``most`` groups (default n ÷ 4: too few repeats to pay
    for the gathers) or their mixed-radix code would be too large to count densely."""
    limit = n // 4 if most is None else most
    code: IntArray | None = None
    size = 1
    for index, count in codes:
        if count <= 1:
            continue
        size *= count
        if size > max(4 * n, 1 << 16):
            return None
        if code is None:
            code = index.astype(np.int32)  # a copy: combined in place below
        else:
            code *= count
            code += index
    if code is None:  # one group
        return Groups(first=np.zeros(1, dtype=np.intp), inverse=np.zeros(n, dtype=np.intp))
    # one scatter finds both which codes occur and a member of each (the last)
    member = np.full(int(code.max()) + 1, -1, dtype=np.intp)
    member[code] = np.arange(n, dtype=np.intp)
    present = np.flatnonzero(member >= 0)
    if len(present) > limit:
        return None
    lookup = np.zeros(len(member), dtype=np.intp)  # np.intp: numpy gathers with it uncopied
    lookup[present] = np.arange(len(present), dtype=np.intp)
    return Groups(first=member[present], inverse=lookup[code])


def per_group(
    columns: Sequence[npt.NDArray[Any]],
    price: Callable[[IntArray], Sequence[FloatArray | float]],
    n: int,
    groups: Groups | None = None,
) -> list[FloatArray | float] | None:
    """``price(index)`` of the entries at ``index``, evaluated once per group of equal
    ``columns`` (every column ``price`` reads) and spread back to every entry (a scalar it
    returns stays one). Integer and boolean columns key as they are; a float column (a
    degree held as float64) keys by its integer part and must be equal over each group
    (checked). None when there are fewer than :data:`GROUP_FROM` entries, too few repeats,
    a column is not of small non-negative whole numbers, or a float column differs within
    a group: the caller prices every entry. ``groups``: the caller's grouping, by equal
    ``columns`` or finer (taken as given, unchecked)."""
    if groups is not None:
        return _spread_priced(groups, price)
    if n < GROUP_FROM:
        return None
    ints = [c.astype(np.int64) if c.dtype.kind == "f" else c for c in columns]
    if any(c.min() < 0 or c.max() > 1 << 24 for c in ints):
        return None
    groups = group_by([distinct(c) for c in ints], n)
    floats = [c for c in columns if c.dtype.kind == "f"]
    if groups is None or any(groups.members_agree(c) is None for c in floats):
        return None
    return _spread_priced(groups, price)


def _spread_priced(
    groups: Groups, price: Callable[[IntArray], Sequence[FloatArray | float]]
) -> list[FloatArray | float]:
    """``price`` of each group's representative, spread back (a scalar stays one)."""
    return [
        groups.spread(x) if isinstance(x, np.ndarray) and x.ndim == 1 else x
        for x in price(groups.first)
    ]
