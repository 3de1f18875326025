"""One parser per input: the same text typed into the window's form (the real QLineEdit,
key by key) and given to the command line's option means the same value, or is refused
by both, for every described input (``core.inputs.registry.INPUTS``)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QComboBox, QLineEdit

from llm_planner.cli import build_parser
from llm_planner.cli_common import UsageError
from llm_planner.cli_scenario import build_scenario
from llm_planner.core.inputs import registry
from llm_planner.core.inputs.registry import INPUTS, Input
from llm_planner.core.inputs.scenario import default_scenario, with_changes
from llm_planner.core.primitives.presets import get_preset
from llm_planner.gui.binding import get_path
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

SAMPLES: dict[str, tuple[str, ...]] = {
    "length": ("8", "8k", "16k", "1.5k", "512", "1e3", "0", "3.5", "-1", "eight"),
    "whole": ("1", "16", "2k", "0", "1.5", "-2", "many"),
    "chunks": ("2", "4", "1", "0", "2.5", "two"),
    "names": ("core_attn", "core_attn, mlp", "MLP,moe_act", "attention", "core_attn,foo"),
    "count": ("1.4T", "300B", "7e9", "2k", "2e-5", "-3", "12 GB", "lots"),
    "fraction": ("0.4", "40%", "1", "0.05", "0", "150%", "half"),
    "bytes": ("80 GB", "80 GiB", "64MiB", "1e9", "-1 GB", "80 GHz"),
    "bandwidth": ("400 GB/s", "400 GB/sec", "400GBps", "400 Gbps", "3.2e12", "400 GHz"),
    "price": ("2.5", "$2.50/h", "$60/day", "-1", "cheap"),
    "usd": ("2M", "$2M", "250,000", "-5", "a lot"),
    "duration": ("30 days", "720h", "90 min", "-1 h", "soon"),
    "tflops": ("400", "989.5", "4e14 FLOP/s", "0.4 PFLOP/s", "4e14", "0", "fast"),
    "points": ("16k:1M", "64: 1.1M, 256: 4.2M", "64", "many:1M"),
}
"""Texts each unit is fed: plain values, abbreviations (``k`` = 1024 or 1000), spelled
units, and refusals (negative, out of range, unreadable)."""

TYPED = [spec for spec in INPUTS if spec.kind == "text"]

SET_BY_THE_OPTION = {
    "training.recompute_threshold_bytes": {
        "training.recompute": "threshold",
        "training.recompute_threshold_bytes": 1e9,
    },
    "parallelism.interleave_chunks": {"parallelism.schedule": "interleaved", "parallelism.pp": 2},
    "training.recompute_layers": {"training.recompute": "full"},
}
"""Fields the command line's form sets along with the input (``--recompute threshold:X``,
``--schedule interleaved:V``): the window's row is enabled once they are set."""

NEEDS_EXPERTS = {
    "training.moe_capacity_factor",
    "training.moe_load_imbalance",
    "training.moe_paged_stash",
}
"""Rows enabled only for a model with experts: typed with Mixtral chosen."""

DIFFERENT_MEANING = {
    "model.params_override": "--params also proposes the shapes of a model of P parameters "
    "(core.primitives.shapes covers 10M to 100T); the window's field overrides P alone",
}
"""Inputs whose command-line form means more than the field; their text is read by the
same parser (checked below), but a value can be refused by the larger change."""


def _cli(spec: Input, text: str) -> tuple[str, Any]:
    """("value", v) or ("refused", reason) from ``llm-planner report`` with the option."""
    if spec.flag is not None:
        argv = [f"{spec.flag}={text}"]
    else:
        flag, _, template = spec.cli.partition(" ")
        argv = [f"{flag}={template.format(text)}"]
    try:
        args = build_parser().parse_args(["report", *argv])
        return "value", get_path(build_scenario(args), spec.path)
    except UsageError as error:
        return "refused", str(error)


def _window(qtbot: Any, window: MainWindow, spec: Input, text: str) -> tuple[str, Any]:
    """The same text typed into the window's row for the input, on the default scenario."""
    base = default_scenario()
    if spec.path in SET_BY_THE_OPTION:
        base = with_changes(base, SET_BY_THE_OPTION[spec.path])
    if spec.path in NEEDS_EXPERTS:
        mixtral = get_preset("mixtral-8x7b")
        model = base.model.model_copy(
            update={"preset_id": mixtral.id, "architecture": mixtral.architecture}
        )
        base = base.model_copy(update={"model": model})
    window.state.load(base, None)
    window.flush()
    mode = spec.also.get("compute.throughput_mode")
    if mode is not None:  # the row is enabled only while its source is chosen
        combo = window.findChild(QComboBox, "compute.throughput_mode")
        assert combo is not None
        choose(window, combo, mode)
    edit = window.findChild(QLineEdit, spec.path)
    assert edit is not None, f"no form row for {spec.path}"
    for index in range(window.tabs.count()):  # show its tab, as a user would
        if window.tabs.widget(index).isAncestorOf(edit) and window.tabs.currentIndex() != index:
            window.tabs.setCurrentIndex(index)
            window.flush()
    assert edit.isEnabled(), spec.path
    type_into(qtbot, window, edit, text)
    if edit in window.binder.errors:
        return "refused", window.binder.errors[edit]
    return "value", get_path(window.state.scenario, spec.path)


def test_every_typed_input_reaches_the_command_line() -> None:
    """A typed input has its own option or a stated way in (``--recompute threshold:…``)."""
    missing = [spec.path for spec in TYPED if spec.flag is None and not spec.cli]
    assert missing == []
    assert {spec.unit.name for spec in TYPED if spec.unit is not None} <= set(SAMPLES)


def test_abbreviations_follow_the_design_rule() -> None:
    """k = 1024 for GPU counts, lengths and degrees; decimal for tokens, counts, money."""
    assert registry.input_at("num_gpus").parse("16k") == 16 * 1024
    assert registry.input_at("parallelism.tp").parse("1k") == 1024
    assert registry.input_at("parallelism.measured_points").parse("16k:1M") == [
        (16_384, 1_000_000.0)
    ]
    assert registry.input_at("compute.tokens").parse("2k") == 2_000
    assert registry.input_at("parallelism.global_batch").parse("2k") == 2_000
    # 400 Gb/s is 400e9 bits = 50e9 bytes per second; GB/sec and GBps are bytes
    bandwidth = registry.input_at("parallelism.inter_node_bandwidth_bytes_per_s")
    assert bandwidth.parse("400 Gbps") == 50e9
    assert bandwidth.parse("400 GB/sec") == bandwidth.parse("400GBps") == 400e9
    # a bare TFLOP/s number is TFLOP/s whatever its size; a stated unit is read as stated
    tflops = registry.input_at("compute.achieved_flops_per_gpu")
    assert tflops.parse("400") == 400e12
    assert tflops.parse("4e14 FLOP/s") == 4e14
    assert tflops.parse("4e14") == 4e26


def test_params_reads_text_with_the_fields_parser() -> None:
    """``--params 2k`` is read as the window's Parameters field reads it (2,000), then
    refused for the shapes it would need: the reason names the proposal, not the text."""
    args = build_parser().parse_args(["report", "--params=13B"])
    assert args.params == registry.input_at("model.params_override").parse("13B") == 13e9
    with pytest.raises(UsageError, match="cannot read"):
        build_parser().parse_args(["report", "--params=lots"])
    with pytest.raises(UsageError, match="2000 parameters"):
        build_scenario(build_parser().parse_args(["report", "--params=2k"]))


SAME = [spec for spec in TYPED if spec.path not in DIFFERENT_MEANING]


@pytest.mark.parametrize("spec", SAME, ids=[spec.path for spec in SAME])
def test_both_faces_read_the_same_text_the_same_way(
    qtbot: Any, window: MainWindow, spec: Input
) -> None:
    assert spec.unit is not None
    outcomes = []
    for text in SAMPLES[spec.unit.name]:
        cli, window_side = _cli(spec, text), _window(qtbot, window, spec, text)
        outcomes.append(cli[0])
        assert cli[0] == window_side[0], (text, cli, window_side)
        if cli[0] == "value":
            assert cli[1] == window_side[1], (text, cli, window_side)
    # each input is fed texts it takes and texts it refuses
    assert "value" in outcomes
    assert "refused" in outcomes
