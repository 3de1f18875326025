#!/usr/bin/env python3
"""Write resources/ranking_uncertainty.json: the measured ÷ modeled throughput of every
nanotron sweep run that ran, by model, node count and mechanism class, which the search's
ranking reads (core/composition/ranking.py).

Usage: ``.venv/bin/python scripts/gen_ranking_uncertainty.py`` (``--check`` exits 1 when the
file is stale). Regenerate it whenever the step-time model moves the sweep's predictions;
``tests/validation/test_ranking.py`` fails until then.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "resources" / "ranking_uncertainty.json"


def table_text() -> str:
    name = "llm_planner_nanotron_sweep"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "tests" / "validation" / "nanotron_sweep.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return json.dumps(module.uncertainty_table(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = table_text()
    if "--check" in argv:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
