#!/usr/bin/env python3
"""Write tests/snapshots/report_snapshot.json: the "no number moves" guard (issue 26).

The snapshot holds, rounded to 12 significant digits with sorted keys:

- ``presets``: ``report --json`` (``report_json(estimate(scenario))``, the dict the command
  line prints) of the default scenario with each model preset;
- ``validation_runs``: the same for every published run of ``tests/validation/runs.json``,
  as the fidelity suite states it (``fidelity.scenario_for``);
- ``nanotron_sweep``: the same for one run of the Ultra-Scale Playbook sweep
  (``tests/validation/nanotron-sweep-1b-3b.json``) per model, tp, pp and ZeRO stage, stated
  as a scenario (nanotron stack, seq 4096, no recomputation, the sweep's fitted network);
- ``search``: the ten best layouts of the search (``search_scenario``) for each preset's
  default scenario and each validation run, without the wall time it took.

``tests/core/test_report_snapshot.py`` recomputes it and compares exactly. Regenerate it only in
a commit that moves numbers on purpose, and say so (and by how much) in that commit.

Usage: .venv/bin/python scripts/gen_report_snapshot.py [--check]
With --check, exit 1 (and write nothing) when the committed file differs.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "snapshots" / "report_snapshot.json"
VALIDATION = ROOT / "tests" / "validation"
SIGNIFICANT_DIGITS = 12
SEARCH_TOP = 10


def _load(name: str, path: Path) -> ModuleType:
    """A validation helper module by path (tests/ is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to :data:`SIGNIFICANT_DIGITS` significant digits
    (the last digits of a float move with the order of operations, not with the model)."""
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0.0:
            return value
        return float(f"{value:.{SIGNIFICANT_DIGITS - 1}e}")
    if isinstance(value, dict):
        return {str(k): rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return value


def _report(scenario: Any) -> dict[str, Any]:
    from llm_planner.core.composition.estimate import estimate, report_json

    data: dict[str, Any] = report_json(estimate(scenario))
    return data


def _search(scenario: Any) -> dict[str, Any]:
    from llm_planner.core.composition.search import search_scenario

    data: dict[str, Any] = search_scenario(scenario, top=SEARCH_TOP).model_dump(mode="json")
    data.pop("seconds", None)  # wall time, not a figure of the model
    return data


def _guarded(make: Callable[[], Any], compute: Callable[[Any], dict[str, Any]]) -> Any:
    """``compute(make())``, or the refusal's text: a scenario that stops being valid, or an
    estimate that starts failing, is a change the snapshot must show."""
    try:
        return compute(make())
    except (ValueError, KeyError, ZeroDivisionError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def preset_scenarios() -> dict[str, Callable[[], Any]]:
    """The default scenario with each model preset, as ``report --model ID`` builds it."""
    from llm_planner.core.composition.scenario import Scenario, default_scenario
    from llm_planner.core.primitives.presets import get_preset, model_presets

    base = default_scenario().model_dump(mode="json")

    def make(preset_id: str) -> Callable[[], Any]:
        def build() -> Any:
            preset = get_preset(preset_id)
            data = dict(base)
            data["model"] = {
                "preset": preset.id,
                "architecture": preset.architecture.model_dump(mode="json"),
                "params_override": None,
            }
            return Scenario.model_validate(data)

        return build

    return {preset_id: make(preset_id) for preset_id in sorted(model_presets())}


def validation_scenarios() -> dict[str, Callable[[], Any]]:
    """Every run of runs.json as the fidelity suite states it."""
    fidelity = _load("llm_planner_fidelity", VALIDATION / "fidelity.py")
    runs = fidelity.load_runs()["runs"]
    return {run["id"]: (lambda run=run: fidelity.scenario_for(run)) for run in runs}


def sweep_scenarios() -> dict[str, Callable[[], Any]]:
    """One sweep run per (model, tp, pp, ZeRO stage), the first in (dp, micro-batch,
    accumulation) order, that a scenario can state (no more stages than layers), as a
    scenario: nanotron on 8×H100 nodes, seq 4096, no recomputation, sequence-parallel TP, the
    sweep's fitted network constants."""
    from llm_planner.core.composition.scenario import ModelChoice, Scenario
    from llm_planner.core.primitives.gpus import get_gpu
    from llm_planner.core.sections.training import TrainingInputs

    sweep = _load("llm_planner_nanotron_sweep", VALIDATION / "nanotron_sweep.py")
    data = sweep.load_sweep()
    cols = {name: i for i, name in enumerate(data["columns"])}
    chosen: dict[tuple[str, int, int, int], list[Any]] = {}
    order = ("dp", "micro_batch", "grad_accum", "nodes")
    for row in sorted(data["rows"], key=lambda r: tuple(r[cols[k]] for k in order)):
        if row[cols["pp"]] > sweep.architecture(row[cols["model"]]).layers:
            continue  # more stages than layers: a scenario refuses it (layout_refusal)
        key = (row[cols["model"]], row[cols["tp"]], row[cols["pp"]], row[cols["zero_stage"]])
        chosen.setdefault(key, row)

    def make(row: list[Any]) -> Callable[[], Any]:
        def build() -> Any:
            model = row[cols["model"]]
            dp, tp, pp = row[cols["dp"]], row[cols["tp"]], row[cols["pp"]]
            mbs, ga = row[cols["micro_batch"]], row[cols["grad_accum"]]
            parallel = sweep.parallel_inputs(
                **sweep.SWEEP_NETWORK,
                tp=tp,
                pp=pp,
                dp=dp,
                zero_stage=row[cols["zero_stage"]],
                global_batch=dp * mbs * ga,
            )
            return Scenario(
                name=f"nanotron {model} {tp=} {pp=} {dp=}",
                model=ModelChoice(architecture=sweep.architecture(model)),
                gpu=get_gpu("h100-sxm"),
                num_gpus=dp * tp * pp,
                training=TrainingInputs(**sweep.STACK_INPUTS, micro_batch=mbs),
                parallelism=parallel,
            )

        return build

    return {
        f"{model}-tp{tp}-pp{pp}-zero{zero}": make(row)
        for (model, tp, pp, zero), row in sorted(chosen.items())
    }


def snapshot() -> dict[str, Any]:
    """The snapshot's content (see the module docstring), rounded, keys sorted on writing."""
    presets = preset_scenarios()
    runs = validation_scenarios()
    out: dict[str, Any] = {
        "presets": {k: _guarded(make, _report) for k, make in presets.items()},
        "validation_runs": {k: _guarded(make, _report) for k, make in runs.items()},
        "nanotron_sweep": {k: _guarded(make, _report) for k, make in sweep_scenarios().items()},
        "search": {
            **{f"preset:{k}": _guarded(make, _search) for k, make in presets.items()},
            **{f"run:{k}": _guarded(make, _search) for k, make in runs.items()},
        },
    }
    result: dict[str, Any] = rounded(out)
    return result


def snapshot_text(data: dict[str, Any]) -> str:
    """The file's exact text: one line per entry of each group, sorted keys, UTF-8."""
    lines = ["{"]
    groups = sorted(data)
    for g, group in enumerate(groups):
        lines.append(f"{json.dumps(group)}: {{")
        entries = sorted(data[group])
        for e, key in enumerate(entries):
            value = json.dumps(data[group][key], sort_keys=True, separators=(",", ":"))
            comma = "," if e < len(entries) - 1 else ""
            lines.append(f"{json.dumps(key)}: {value}{comma}")
        lines.append("}," if g < len(groups) - 1 else "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = snapshot_text(snapshot())
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if "--check" in argv:
        if current != text:
            print(f"{TARGET} differs: numbers moved", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text.encode('utf-8')):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
