"""docs/NAMES.md lists every name the planner accepts (issue 28's "docs list the supported
model types, GPU names and precision names"); it is generated from the tables, and this
test fails when the committed page and the tables differ."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_names_page_is_up_to_date() -> None:
    script = runpy.run_path(str(ROOT / "scripts" / "gen_names.py"))
    committed = (ROOT / "docs" / "NAMES.md").read_text(encoding="utf-8")
    assert committed == script["page_text"](), "run scripts/gen_names.py"


def test_names_page_names_what_the_issue_asks_for() -> None:
    page = (ROOT / "docs" / "NAMES.md").read_text(encoding="utf-8")
    for name in ("`h100-sxm`", "`4090`", "`gb300`", "`bf16-mixed`", "`pure_bf16`", "`nvfp4`"):
        assert name in page
    assert "| `kimi_k2` | `deepseek_v3` |" in page
    assert "`DeepseekV3ForCausalLM`" in page
