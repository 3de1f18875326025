#!/usr/bin/env python3
"""Fit the serving model's achieved-efficiency constants on serving-calibration.json.

Usage: ``.venv/bin/python scripts/fit_serving.py`` prints the best value of each constant
on its grid and every table's median |error| at that point; it changes no file (the
constants live, with their justification, in ``core/sections/serving.py`` and
``core/quantities/engines.py``; docs/ACCURACY.md, "Serving", lists what each was fitted on
and its residual).

Method: coordinate descent over small grids, two passes, minimising the largest table's
median |error| plus a tenth of their sum (so no table is traded away for the others).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _validation() -> ModuleType:
    name = "llm_planner_serving_validation"
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "tests" / "validation" / "serving_validation.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    from llm_planner.core.quantities import engines
    from llm_planner.core.sections import serving

    sv = _validation()

    def medians() -> dict[str, float]:
        engines.engine_profiles.cache_clear()
        sv.all_checks.cache_clear()
        return {t: sv.median_abs_error(rows) for t, rows in sv.by_table().items()}

    def score() -> float:
        m = medians()
        return max(m.values()) + 0.1 * sum(m.values())

    scalars: list[tuple[Any, str, list[float]]] = [
        (serving, "DECODE_BANDWIDTH_FRACTION", [0.65, 0.7, 0.75, 0.8, 0.85]),
        (serving, "KV_BANDWIDTH_FRACTION", [0.5, 0.6, 0.7, 0.8]),
        (serving, "PREFILL_COMPUTE_FRACTION", [0.6, 0.65, 0.7, 0.75]),
        (engines, "STEP_OVERHEAD_TENSORRT_SECONDS", [0.4e-3, 0.8e-3, 1.5e-3]),
        (engines, "STEP_OVERHEAD_TURBOMIND_SECONDS", [0.5e-3, 1e-3, 2e-3]),
        (engines, "STEP_OVERHEAD_LLAMA_CPP_SECONDS", [0.3e-3, 0.6e-3, 1e-3]),
        (engines, "LLAMA_CPP_QUANTIZED_PREFILL_FACTOR", [0.7, 0.8, 0.9, 1.0]),
        (engines, "LLAMA_CPP_QUANTIZED_BANDWIDTH_FACTOR", [0.7, 0.8, 0.9]),
    ]
    tables: list[tuple[dict[str, float], str, list[float]]] = [
        (engines.LLAMA_CPP_DECODE_BANDWIDTH_FRACTION, "datacenter", [0.4, 0.45, 0.5, 0.55]),
        (engines.LLAMA_CPP_PREFILL_FRACTION, "consumer", [0.8, 1.0, 1.2]),
        (engines.LLAMA_CPP_PREFILL_FRACTION, "professional", [0.5, 0.6, 0.7]),
        (engines.LLAMA_CPP_PREFILL_FRACTION, "datacenter", [0.3, 0.4, 0.5]),
        (engines.LLAMA_CPP_PREFILL_FRACTION, "apple", [0.7, 0.8, 0.9]),
    ]
    for gen, value in engines.LLAMA_CPP_PREFILL_FLOPS_PER_JOULE.items():
        tables.append(
            (engines.LLAMA_CPP_PREFILL_FLOPS_PER_JOULE, gen, [value * f for f in (0.9, 1, 1.1)])
        )
    best = score()
    for _ in range(2):
        for module, attr, grid in scalars:
            keep = getattr(module, attr)
            for value in grid:
                setattr(module, attr, value)
                if (s := score()) < best - 1e-12:
                    best, keep = s, value
            setattr(module, attr, keep)
        for mapping, key, grid in tables:
            keep = mapping[key]
            for value in grid:
                mapping[key] = value
                if (s := score()) < best - 1e-12:
                    best, keep = s, value
            mapping[key] = keep
    for module, attr, _grid in scalars:
        print(f"{module.__name__.rsplit('.', 1)[-1]}.{attr} = {getattr(module, attr):g}")
    print(f"LLAMA_CPP_DECODE_BANDWIDTH_FRACTION = {engines.LLAMA_CPP_DECODE_BANDWIDTH_FRACTION}")
    print(f"LLAMA_CPP_PREFILL_FRACTION = {engines.LLAMA_CPP_PREFILL_FRACTION}")
    print(f"LLAMA_CPP_PREFILL_FLOPS_PER_JOULE = {engines.LLAMA_CPP_PREFILL_FLOPS_PER_JOULE}")
    for table, median in medians().items():
        print(f"{table:32s} {100 * median:5.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
