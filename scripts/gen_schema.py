#!/usr/bin/env python3
"""Write resources/scenario.schema.json from the Scenario model (run after changing it).

Usage: .venv/bin/python scripts/gen_schema.py [--check]
With --check, exit 1 (and write nothing) when the committed file is out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from llm_planner.core.files.store import scenario_json_schema

TARGET = Path(__file__).resolve().parent.parent / "resources" / "scenario.schema.json"


def schema_text() -> str:
    """The schema file's exact text (indent 2, UTF-8, newline-terminated)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = schema_text()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if "--check" in argv:
        if current != text:
            print(f"{TARGET} is out of date: run scripts/gen_schema.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
