"""The first piece of the command line: presets, model, --help, bad arguments, no display."""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import build_parser, main
from llm_planner.core.primitives.presets import model_presets

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hf"
SCRIPTS = Path(sys.executable).parent


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out)


# ------------------------------------------------------------------ presets


def test_presets_models_lists_all_18(capsys):
    rows = run_json(capsys, "presets", "models", "--json")
    assert sorted(row["id"] for row in rows) == sorted(
        model_presets()
    )  # the 18 required ids: tests/core/test_presets.py
    assert len(rows) == len(model_presets()) >= 18  # issue 16 added SSM and current families
    for row in rows:
        assert isinstance(row["params_total"], int)
        assert isinstance(row["params_active"], int)


def test_presets_gpus_lists_ids(capsys):
    rows = run_json(capsys, "presets", "gpus", "--json")
    ids = [row["id"] for row in rows]
    assert "h100-sxm" in ids
    assert len(ids) == len(set(ids))


def test_presets_text_output(capsys):
    assert main(["presets", "models"]) == 0
    out = capsys.readouterr().out
    assert "llama-2-7b" in out
    assert "deepseek-v3" in out


# ------------------------------------------------------------------ model


def test_model_llama_2_7b_json(capsys):
    row = run_json(capsys, "model", "llama-2-7b", "--json")
    # Llama-2-7B (meta-llama/Llama-2-7b-hf config.json), hand count:
    # 32·(4·4096² + 3·4096·11008 + 2·4096) + 2·32000·4096 + 4096 = 6,738,415,616 ("6.74B")
    expected_total = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert expected_total == 6_738_415_616
    expected = {
        "id": "llama-2-7b",
        "params_total": expected_total,
        "params_active": expected_total,
        "layers": 32,
        "hidden_size": 4096,
        "heads": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "ffn_size": 11008,
        "vocab_size": 32000,
    }
    for key, value in expected.items():
        assert row[key] == value, key
        assert type(row[key]) is type(value), key  # plain numbers, not strings or floats


def test_model_mixtral_active_is_smaller(capsys):
    row = run_json(capsys, "model", "mixtral-8x7b", "--json")
    # Mixtral-8x7B (Jiang et al. 2024): 46.7B total, 12.9B active per token
    assert abs(row["params_total"] / 46.7e9 - 1) < 0.01
    assert abs(row["params_active"] / 12.9e9 - 1) < 0.01


def test_model_from_config_json(capsys):
    row = run_json(capsys, "model", str(FIXTURES / "gpt2" / "config.json"), "--json")
    # GPT-2 small: 124,439,808 parameters (openai-community/gpt2, "124M")
    assert row["params_total"] == 124_439_808
    assert (row["layers"], row["hidden_size"], row["heads"]) == (12, 768, 12)
    assert row["model_type"] == "gpt2"
    assert row["params_safetensors"] is None


def test_model_from_folder_text(capsys):
    assert main(["model", str(FIXTURES / "deepseek-v3")]) == 0
    out = capsys.readouterr().out
    assert "671,026,419,200 total" in out
    assert "MoE: 256 experts" in out


def _write_safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    """Hand-built safetensors (bf16, zero data): 8-byte LE header length, JSON header."""
    header: dict[str, Any] = {}
    offset = 0
    for name, shape in tensors.items():
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def test_model_folder_with_safetensors(tmp_path, capsys):
    config = {
        "model_type": "gpt2",
        "n_embd": 8,
        "n_layer": 1,
        "n_head": 2,
        "n_positions": 4,
        "vocab_size": 10,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    # GPT-2 layout, 1 layer: wte 10×8, wpe 4×8, ln_1/ln_2/ln_f weight+bias 8 each,
    # c_attn 8×24 + 24, attn c_proj 8×8 + 8, c_fc 8×32 + 32, mlp c_proj 32×8 + 8
    tensors = {
        "wte.weight": [10, 8],
        "wpe.weight": [4, 8],
        "h.0.ln_1.weight": [8],
        "h.0.ln_1.bias": [8],
        "h.0.attn.c_attn.weight": [8, 24],
        "h.0.attn.c_attn.bias": [24],
        "h.0.attn.c_proj.weight": [8, 8],
        "h.0.attn.c_proj.bias": [8],
        "h.0.ln_2.weight": [8],
        "h.0.ln_2.bias": [8],
        "h.0.mlp.c_fc.weight": [8, 32],
        "h.0.mlp.c_fc.bias": [32],
        "h.0.mlp.c_proj.weight": [32, 8],
        "h.0.mlp.c_proj.bias": [8],
        "ln_f.weight": [8],
        "ln_f.bias": [8],
    }
    _write_safetensors(tmp_path / "model.safetensors", tensors)
    row = run_json(capsys, "model", str(tmp_path), "--json")
    expected = 80 + 32 + 16 + (192 + 24) + (64 + 8) + 16 + (256 + 32) + (256 + 8) + 16
    assert row["params_safetensors"] == expected == 1000
    assert row["params_total"] == expected  # the config's architecture agrees with the file
    assert row["safetensors_dtype"] == "bf16"


# ------------------------------------------------------------------ help and errors


def _command_names() -> list[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no subcommands")


def test_help_mentions_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    names = _command_names()
    assert {"report", "presets", "model"} <= set(names)
    for name in names:
        assert name in out, name


@pytest.mark.parametrize("command", ["report", "presets", "model"])
def test_command_help_exits_0(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: llm-planner" in capsys.readouterr().out


BAD_ARGUMENTS = [
    (["model", "nonexistent"], "nonexistent"),
    (["model"], "ID_OR_PATH"),
    (["report", "--num-gpus", "0"], "--num-gpus"),
    (["report", "--tokens", "seven"], "--tokens"),
    (["report", "--params", "5M"], "--params"),
    (["report", "--gpu", "no-such-gpu"], "--gpu"),
    (["presets", "foo"], "foo"),
    (["presets"], "kind"),
    (["report", "--no-such-option"], "--no-such-option"),
]


@pytest.mark.parametrize(("argv", "needle"), BAD_ARGUMENTS)
def test_bad_arguments_exit_2_with_one_line(capsys, argv, needle):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("llm-planner: error: ")
    assert needle in lines[0]


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("broken", '{"model_type": "llama",', "not valid JSON"),
        ("unknown", '{"model_type": "bert"}', "unsupported model_type 'bert'"),
        ("missing", '{"model_type": "llama", "hidden_size": 8}', "missing field"),
    ],
)
def test_bad_config_files_exit_2_naming_file_and_field(tmp_path, capsys, name, content, needle):
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(content)
    assert main(["model", str(path.parent)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert needle in err
    assert str(path) in err
    assert err.count(str(path)) == 1


def test_bad_argument_through_the_console_script_has_no_traceback():
    script = SCRIPTS / "llm-planner"
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    result = subprocess.run(
        [str(script), "report", "--tokens", "seven"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


# ------------------------------------------------------------------ report with --params


def test_report_params_13b_uses_a_proposed_shape(capsys):
    data = run_json(capsys, "report", "--params", "13B", "--json")
    model = data["model"]
    # the proposal for 13B is Llama-2-13B's shape: 40 layers × 5120 (core/shapes.py)
    assert (model["layers"], model["hidden_size"]) == (40, 5120)
    assert model["params_total"] == 13e9  # P is exactly the requested 13B everywhere


# ------------------------------------------------------------------ console script, no display


def test_console_script_is_installed():
    names = {"llm-planner", "llm-planner.exe"}
    assert any((SCRIPTS / name).exists() for name in names)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland check is Linux")
def test_no_display_prints_report_and_says_so(tmp_path):
    script = SCRIPTS / "llm-planner"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}
    }
    result = subprocess.run(
        [str(script)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "no display" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Model" in result.stdout
    assert "Compute budget" in result.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 display check is Linux")
def test_unreachable_display_prints_report_instead_of_a_qt_abort(tmp_path):
    """DISPLAY set but nothing listening (a stale ssh -X, say): Qt would abort the process,
    so a child process tries Qt first and the report is printed instead."""
    script = SCRIPTS / "llm-planner"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}
    }
    env["DISPLAY"] = ":93"  # no X server has this display number here
    env["XAUTHORITY"] = str(tmp_path / "none")
    result = subprocess.run(
        [str(script)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Qt could not start on this display" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Compute budget" in result.stdout


def test_command_table_is_the_groups_own():
    """``COMMANDS_OF_GROUP`` (which group to build for one command) lists exactly the
    subcommands each group adds, and a parser built for one command parses it as the whole
    parser does."""
    from llm_planner import cli

    for group in cli.COMMAND_GROUPS:
        parser = argparse.ArgumentParser()
        commands = parser.add_subparsers()
        group.add_commands(commands)
        assert tuple(commands.choices) == cli.COMMANDS_OF_GROUP[group.__name__]
    assert sorted(cli.COMMAND_NAMES) == sorted(_command_names())
    for argv in (["report", "--model", "llama-2-7b", "--json"], ["hardware", "--json"]):
        whole = vars(build_parser().parse_args(argv))
        alone = vars(build_parser(argv[0]).parse_args(argv))
        whole.pop("command_names"), alone.pop("command_names")
        assert alone == whole


def test_model_text_lists_gemma4_per_layer_inputs(capsys):
    assert main(["model", str(FIXTURES / "gemma-4-e2b-it")]) == 0
    out = capsys.readouterr().out
    # google/gemma-4-E2B-it: the per-layer embedding table 262,144 × 35·256, its projection
    # 1,536 → 35·256 and norm (256), and each layer's gate and projection 2 × 1,536 × 256
    per_layer = 262_144 * 35 * 256 + 1_536 * 35 * 256 + 256 + 35 * 2 * 1_536 * 256
    assert per_layer == 2_390_098_176
    assert "per_layer_inputs" in out
    assert "2,390,098,176" in out
