"""Kept values of pure functions of frozen inputs (``Architecture``, the ``*Inputs``).

An estimate asks for the same derived value of the same frozen input many times (the
parameter count of one shape a dozen times, the training FLOPs of one recipe several
times); :func:`kept` keeps the last few by their arguments. Equal frozen inputs give equal
values, so a kept value is the value: the figures do not change. An argument that cannot
be hashed (a model holding a list) is computed afresh. :func:`forget_all` clears every
kept value and every cache registered with :func:`forgotten` (an estimate timed from
scratch calls it, so "from scratch" recomputes every value derived from the inputs; the
catalogs read from files, which take no input, stay loaded).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_KEPT: list[Any] = []


def kept(maxsize: int = 64) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Keep the last ``maxsize`` values of the decorated pure function by its arguments.
    The value is shared between callers: it must be immutable (a frozen model, a tuple)."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        cached: Any = functools.lru_cache(maxsize=maxsize)(function)
        _KEPT.append(cached)

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:  # the cache hashes the arguments once (a frozen model rehashes its fields)
                value: R = cached(*args, **kwargs)
            except TypeError:  # an unhashable argument: compute it afresh
                return function(*args, **kwargs)
            return value

        return call

    return wrap


C = TypeVar("C")


def forgotten(cache: C) -> C:
    """Register a ``functools`` cache of a pure function of the inputs with
    :func:`forget_all` (as a decorator above ``@lru_cache``/``@cache``); returns it as is."""
    _KEPT.append(cache)
    return cache


def kept_hash(model: Any) -> int:
    """The hash of a frozen pydantic model (the tuple of its fields' values, as pydantic's
    own ``__hash__``), computed once and kept in the model's ``_kept_hash`` slot. The
    inputs every kept function takes (``Architecture``, ``TrainingInputs``) are hashed a
    hundred times an estimate; a frozen model's fields never change, and a slot is carried
    by none of ``model_copy``, ``copy``, ``deepcopy``, pickling or ``model_construct`` (each
    makes a new instance through ``__new__``), so a copy with updated fields hashes afresh.
    Equality is pydantic's (the fields' values): equal models hash equal."""
    try:
        value: int = model._kept_hash
    except AttributeError:
        value = hash(tuple(model.__dict__[name] for name in type(model).__pydantic_fields__))
        object.__setattr__(model, "_kept_hash", value)
    return value


def forget_all() -> None:
    """Clear every kept value."""
    for cached in _KEPT:
        cached.cache_clear()
