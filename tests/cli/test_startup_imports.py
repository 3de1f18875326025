"""What the report command loads before it answers: modules it does not use stay unloaded
(their import time is most of the command's)."""

from __future__ import annotations

import os
import subprocess
import sys


def _loaded_after(code: str, **env: str) -> set[str]:
    """The modules loaded after ``code`` runs in a fresh interpreter."""
    script = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **env},
    )
    return set(result.stdout.split())


def test_report_loads_no_what_if_module_and_no_qt() -> None:
    """``report --json`` of a scenario without a what-if: the what-if modules (five, with
    their models) and Qt stay unloaded; the JSON has no ``whatif`` key."""
    code = (
        "import contextlib, io, json\n"
        "from llm_planner import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    cli.main(['report', '--model', 'llama-2-7b', '--json'])\n"
        "assert 'whatif' not in json.loads(out.getvalue())\n"
    )
    loaded = _loaded_after(code)
    assert not {m for m in loaded if m.startswith("llm_planner.core.composition.whatif")}
    assert not {m for m in loaded if m.split(".")[0] in ("PySide6", "pyqtgraph")}
    assert "llm_planner.core.composition.estimate" in loaded  # the probe saw the command run


def test_a_planned_what_if_loads_it_and_is_priced() -> None:
    code = (
        "from llm_planner.core.composition.estimate import estimate, report_json\n"
        "from llm_planner.core.composition.scenario import default_scenario\n"
        "from llm_planner.core.inputs.whatif import CompressionInputs, WhatIfInputs\n"
        "plan = WhatIfInputs(compression=CompressionInputs(kind='data_parallel', ratio=2.0))\n"
        "report = estimate(default_scenario().model_copy(update={'whatif': plan}))\n"
        "assert set(report_json(report)['whatif']) == {'compression'}\n"
    )
    assert "llm_planner.core.composition.whatif.report" in _loaded_after(code)
