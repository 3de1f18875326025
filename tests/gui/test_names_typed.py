"""The window reads the names and rates the command line reads (issue 28): the same parser,
so "400 Gbps" typed into the network field is bits, as ``--inter-node-bandwidth 400Gbps``."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.cli_common import input_type
from llm_planner.core.inputs.registry import INPUTS
from llm_planner.gui.main_window import MainWindow

from .helpers import type_into

cli_bandwidth = input_type(
    next(i for i in INPUTS if i.path == "parallelism.inter_node_bandwidth_bytes_per_s")
)
"""What ``--inter-node-bandwidth`` reads its text with (argparse's ``type=``)."""

pytestmark = pytest.mark.gui


@pytest.mark.parametrize(
    ("typed", "bytes_per_s"),
    [("400 Gbps", 50e9), ("3.2 Tb/s", 400e9), ("400 GB/s", 400e9)],  # 400e9 bits / 8
)
def test_network_rate_typed_in_bits_or_bytes(
    qtbot: Any, window: MainWindow, typed: str, bytes_per_s: float
) -> None:
    tab = window.page(3)
    type_into(qtbot, window, tab.inter_bw, typed)
    stored = window.state.scenario.parallelism.inter_node_bandwidth_bytes_per_s
    assert stored == pytest.approx(bytes_per_s)
    assert stored == pytest.approx(cli_bandwidth(typed.replace(" ", "")))
