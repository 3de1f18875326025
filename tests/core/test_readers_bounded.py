"""Issue 29: nothing a user, a log or a file can do crashes, hangs or floods the app.

Each test rebuilds one reproducer of the issue from its words (a FIFO, a folder, an endless
device, a hostile log, a deep or huge-number config, a what-if whose figure is infinite)
and asserts the one-line refusal (exit status 2 on the command line) or the correct answer.
Bounds are asserted by behaviour: a read that stops at its cap, an endless input that ends,
a skip loop that never starts. A call that could hang runs in a daemon thread with a
deadline, so a regression fails instead of freezing the suite.
"""

from __future__ import annotations

import json
import math
import os
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.hardware import PriceListError, load_price_list
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.composition.whatif.rl import (
    MAX_CURVE_POINTS,
    plan_rl,
    rollout_seconds,
    training_seconds,
)
from llm_planner.core.files import gguf, logs
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.files.store import ScenarioFileError, load_scenario_file
from llm_planner.core.inputs.whatif import RLInputs
from llm_planner.core.primitives import reading, units

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN = ["--num-gpus", "16", "--tp", "2", "--seq-len", "4096"]
ZERO = Path("/dev/zero")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
needs_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero here")


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or a failure if it has not returned after ``seconds`` (the
    thread is a daemon: a hang fails this test and does not freeze the run)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # re-raised in the test's thread
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s (a hang)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``llm-planner ARGV`` (with the hang deadline)."""
    status = within(20, lambda: main(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(err: str, *words: str) -> None:
    """``err`` is exactly one ``llm-planner: error:`` line holding every word, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("llm-planner: error:"), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])


# ------------------------------------------------------------------ the bounded reader


def test_the_reader_refuses_folders_fifos_and_devices_without_reading(tmp_path: Path) -> None:
    with pytest.raises(reading.FileReadError, match="a folder, not a regular file"):
        reading.read_bounded(tmp_path, 100)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.json"
        os.mkfifo(fifo)  # nobody writes: a blocking open would wait forever
        with pytest.raises(reading.FileReadError, match="FIFO"):
            within(5, lambda: reading.read_bounded(fifo, 100))
    if ZERO.exists():
        with pytest.raises(reading.FileReadError, match="character device"):
            within(5, lambda: reading.read_bounded(ZERO, 100))
        link = tmp_path / "zero.log"  # a link named like a log to an endless device
        link.symlink_to(ZERO)
        with pytest.raises(reading.FileReadError, match="character device"):
            within(5, lambda: reading.read_bounded(link, 100))
    with pytest.raises(reading.FileReadError, match="no such file"):
        reading.read_bounded(tmp_path / "missing", 100)
    with pytest.raises(reading.FileReadError, match="embedded null byte"):
        reading.read_bounded(f"{tmp_path}/a\x00b", 100)  # printed as a space, not a NUL


def test_the_reader_caps_size_exactly(tmp_path: Path) -> None:
    at = tmp_path / "at"
    at.write_bytes(b"x" * 100)
    assert reading.read_bounded(at, 100) == b"x" * 100
    over = tmp_path / "over"
    over.write_bytes(b"x" * 101)
    with pytest.raises(reading.FileReadError, match="101 bytes is over the 100-byte limit"):
        reading.read_bounded(over, 100)
    assert reading.read_head(over, 7) == b"x" * 7


def test_structure_check_bounds_nesting_and_digits_before_parsing() -> None:
    reading.check_structure("[" * 64 + "]" * 64, "ok")
    with pytest.raises(reading.FileReadError, match="line 2: nested over 64 levels"):
        reading.check_structure("{\n" + "[" * 65 + "]" * 65, "deep.json")
    reading.check_structure("x = " + "9" * 64, "ok")
    with pytest.raises(reading.FileReadError, match="a number of 65 digits"):
        reading.check_structure("x = " + "9" * 65, "big.toml")
    assert reading.nesting_depth({"a": [[1]]}) == 3
    deep: Any = 0
    for _ in range(5000):  # deeper than the recursion limit: counted without recursion
        deep = [deep]
    assert reading.nesting_depth(deep, limit=64) == 65


# ------------------------------------------------------------------ item 3: CLI readers


def test_calibrate_on_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = cli(["calibrate", str(tmp_path), *RUN], capsys)
    assert status == 2
    one_line_error(err, str(tmp_path), "a folder")


@needs_fifo
@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "{fifo}", *RUN],
        ["prices", "--prices", "{fifo}"],
        ["hardware", "--prices", "{fifo}", "--max-gpus", "8"],
        ["import-config", "{fifo}"],
    ],
)
def test_a_fifo_is_refused_at_once(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / ("run.log" if argv[0] == "calibrate" else "prices.json")
    os.mkfifo(fifo)
    status, _, err = cli([a.replace("{fifo}", str(fifo)) for a in argv], capsys)
    assert status == 2
    one_line_error(err, "FIFO")


@needs_zero
@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "/dev/zero", *RUN],
        ["prices", "--prices", "/dev/zero"],
        ["hardware", "--prices", "/dev/zero", "--max-gpus", "8"],
        ["import-config", "/dev/zero", "--format", "deepspeed"],
    ],
)
def test_an_endless_device_is_refused_without_reading(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = cli(argv, capsys)
    assert status == 2
    one_line_error(err, "/dev/zero", "character device")


# ------------------------------------------------------------------ item 3: logs


ITERATION = (
    " iteration {n}/ 1000 | consumed samples: 1 | elapsed time per iteration (ms): 2000.0 | "
    "throughput per GPU (TFLOP/s/GPU): 400.0 | global batch size: 64 |\n"
)


def _endless(line: str) -> Iterator[bytes]:
    """The same line forever, in 64 kB pieces: only a reader that stops can finish."""
    piece = (line * (65536 // len(line) + 1)).encode()
    while True:
        yield piece


def test_a_log_read_stops_at_its_line_cap() -> None:
    """An endless log of valid lines: the scan ends, with exactly MAX_FORMAT_LINES readings
    and a problem saying where reading stopped."""
    parsed = within(30, lambda: logs._scan(_endless(ITERATION.format(n=5)), "endless.log"))
    assert len(parsed.readings) == logs.MAX_FORMAT_LINES
    assert parsed.readings[-1].line == logs.MAX_FORMAT_LINES
    assert parsed.problems[-1].startswith(
        f"endless.log: reading stopped at line {logs.MAX_FORMAT_LINES:,}"
    )


def test_near_miss_lines_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endless log of lines whose marker matches and whose fields do not: bounded by the
    line cap too, and only MAX_PROBLEMS of them are kept as text."""
    monkeypatch.setattr(logs, "MAX_FORMAT_LINES", 1000)
    near = " iteration 1/ 10 | elapsed time per iteration (ms): x |\n"
    parsed = within(30, lambda: logs._scan(_endless(near), "near.log"))
    assert parsed.readings == []
    named = [p for p in parsed.problems if "could not be read" in p]
    assert len(named) == logs.MAX_PROBLEMS
    assert f"near.log: {1000 - logs.MAX_PROBLEMS:,} more lines not read" in parsed.problems
    # lines that only share a key word ("iteration") stop at the candidate cap
    monkeypatch.setattr(logs, "MAX_CANDIDATE_LINES", 500)
    chatty = within(30, lambda: logs._scan(_endless("iteration done\n"), "chatty.log"))
    assert chatty.readings == []
    assert "after 500 lines naming a format's key word" in chatty.problems[-1]


def test_line_numbers_hold_across_chunks_blank_lines_and_a_long_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line numbers counted by the chunked reader match the file's own: 10,000 blank lines,
    a marked line over the per-line cap (named, not read), then two iteration lines; with
    100-byte chunks every boundary case is crossed."""
    monkeypatch.setattr(logs, "_CHUNK_BYTES", 100)
    long_line = "elapsed time per iteration (ms): " + "9" * logs.MAX_LINE_CHARS + "\n"
    text = "\n" * 10_000 + long_line + ITERATION.format(n=1) + "\n" + ITERATION.format(n=2)
    path = tmp_path / "run.log"
    path.write_text(text, encoding="utf-8")
    parsed = logs.read_log(path)
    assert [r.line for r in parsed.readings] == [10_002, 10_004]
    assert parsed.readings[1].values["iteration"] == 2
    assert parsed.problems == [
        f"run.log:10001: a line over {logs.MAX_LINE_CHARS:,} characters, not read"
    ]
    assert logs.parse_log_text(text, "run.log").readings[0].line == 10_002  # one chunk


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (ITERATION.format(n=3).replace("size: 64", "size: 1e308"), "global_batch"),
        (ITERATION.format(n=3).replace("(ms): 2000.0", "(ms): 1e999"), "step_seconds"),
        (ITERATION.format(n=3).replace("400.0", "9" * 400), "flops_per_gpu_per_s"),
        ("{'train_runtime': 1e999, 'train_samples_per_second': 1.5}", "train_runtime"),
    ],
)
def test_numbers_out_of_range_name_the_line_and_field(line: str, field: str) -> None:
    parsed = logs.parse_log_text(line.strip() + "\n", "x.log")
    assert parsed.readings == []
    (problem,) = parsed.problems
    assert problem.startswith("x.log:1: a ")
    assert f"{field} " in problem
    assert "is out of range" in problem


def test_a_measurement_out_of_range_names_file_lines_and_field(tmp_path: Path) -> None:
    """A runtime that converts (1e25 samples/s is finite) but no measurement accepts: the
    refusal names the file, the lines and the field instead of pydantic's "1 validation
    error for Measurement"."""
    path = tmp_path / "trainer.log"
    path.write_text("{'train_runtime': 100.0, 'train_samples_per_second': 1e25}\n", "utf-8")
    with pytest.raises(logs.LogError) as caught:
        logs.measurement_from_file(path, default_scenario())
    message = str(caught.value)
    assert message.startswith("trainer.log:1-1: tokens_per_s")
    assert "validation error" not in message


def test_the_trainer_dict_is_read_by_a_grammar_not_evaluated() -> None:
    line = "{'train_runtime': 101.9003, 'train_samples_per_second': 1.963, 'epoch': 0.69}"
    assert logs.trainer_metrics(line) == {
        "train_runtime": "101.9003",
        "train_samples_per_second": "1.963",
        "epoch": "0.69",
    }
    hostile = [
        "{'train_samples_per_second': " + "[" * 5000 + "]" * 5000 + "}",
        "{'train_samples_per_second': 2, 'x': 9**9**9}",
        "{'train_samples_per_second': " + "(" * 3000 + "1" + ")" * 3000 + "}",
        "{'train_samples_per_second': 1, 'x': {'nested': 1}}",
        "{'train_samples_per_second': __import__('os')}",
    ]
    for text in hostile:
        assert logs.trainer_metrics(text) is None
        (problem,) = logs.parse_log_text(text + "\n", "h.log").problems
        assert problem.startswith("h.log:1: a Hugging Face Trainer metrics that could not be")


def test_a_log_dropped_cli_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.log"
    path.write_text("{'train_runtime': 1e999, 'train_samples_per_second': 1.5}\n", "utf-8")
    status, _, err = cli(["calibrate", str(path), *RUN], capsys)
    assert status == 2
    one_line_error(err, "bad.log:1:", "train_runtime")


# ------------------------------------------------------------------ item 3: GGUF


def _gguf_with_string_array(path: Path, count: int, size: int) -> None:
    def text(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    head += text(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, count)
    with path.open("wb") as file:
        file.write(head)
        file.truncate(size)  # sparse: the declared strings' lengths read as zeros


def test_a_giant_gguf_string_array_is_refused_before_the_skip_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(gguf._Reader, "skip_string", lambda _self, what: calls.append(what))
    giant = tmp_path / "giant.gguf"
    _gguf_with_string_array(giant, 50_000_000, 401_000_000)
    with pytest.raises(gguf.GGUFError, match="50,000,000 strings, over the 2,000,000 limit"):
        gguf.read_gguf_header(giant)
    small = tmp_path / "small.gguf"  # 1,000 strings need 8,000 bytes; 4 KB holds 4,096
    _gguf_with_string_array(small, 1000, 4096)
    with pytest.raises(gguf.GGUFError, match=r"truncated: array 'tokenizer\.ggml\.tokens'"):
        gguf.read_gguf_header(small)
    assert calls == []  # refused by arithmetic, not by walking the strings


@needs_fifo
def test_a_gguf_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    with pytest.raises(gguf.GGUFError, match="FIFO"):
        within(5, lambda: gguf.read_gguf_header(fifo))


# ------------------------------------------------------------------ item 4: stack configs


HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("accelerate.yaml", f"distributed_type: FSDP\nnum_processes: {HUGE}\n"),
        ("nanotron.yaml", f"parallelism:\n  dp: {HUGE}\n  tp: 1\n  pp: 1\n"),
        ("job.toml", f"[parallelism]\ntensor_parallel_degree = {HUGE}\n"),
        ("ds.json", f'{{\n"train_batch_size": {HUGE}}}\n'),
    ],
)
def test_a_5000_digit_integer_is_one_line(
    name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(sc.StackConfigError, match="line 2: a number of 5,000 digits"):
        sc.read_config(path)
    status, _, err = cli(["import-config", str(path)], capsys)
    assert status == 2
    one_line_error(err, name, "5,000 digits")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("job.toml", "[parallelism]\nx = " + "[" * 3000 + "]" * 3000 + "\n"),
        ("job2.toml", "[parallelism]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"),
        ("ds.json", '{"train_batch_size": 8, "x": ' + "[" * 3000 + "]" * 3000 + "}\n"),
    ],
)
def test_deep_nesting_is_one_line(name: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(sc.StackConfigError, match="nested over 64 levels"):
        sc.read_config(path)


def test_deep_training_args_and_deep_yaml_are_one_line(tmp_path: Path) -> None:
    config = tmp_path / "acc.yaml"
    config.write_text("distributed_type: FSDP\nnum_processes: 8\n", encoding="utf-8")
    companion = tmp_path / "acc.training_args.json"
    companion.write_text('{"bf16": ' + "[" * 3000 + "]" * 3000 + "}", encoding="utf-8")
    with pytest.raises(sc.StackConfigError, match=r"acc\.training_args\.json: line 1: nested"):
        sc.read_config(config)
    # YAML nests by indentation: 1,300 levels (one space each) pass the bracket check and
    # would exhaust the recursive reader's stack
    deep = tmp_path / "deep.yaml"
    body = "".join(" " * i + f"k{i}:\n" for i in range(1300)) + " " * 1300 + "a: 1\n"
    deep.write_text("distributed_type: FSDP\n" + body, encoding="utf-8")
    with pytest.raises(sc.StackConfigError, match=r"deep\.yaml: nested too deeply"):
        sc.read_config(deep)


# ------------------------------------------------------------------ item 4: price lists


def _prices(tmp_path: Path, offers: Any) -> Path:
    data = {"updated": "2025-01-01", "offers": offers}
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(data) if not isinstance(offers, str) else offers, "utf-8")
    return path


def _offer(price: Any) -> dict[str, Any]:
    return {
        "gpu": "h100-sxm",
        "provider": "x",
        "usd_per_gpu_hour": price,
        "date": "2025-01-01",
        "source": "https://example.com",
    }


def test_price_lists_refuse_nesting_nan_and_subnormal_prices(tmp_path: Path) -> None:
    nested = _prices(tmp_path, '{"offers": ' + "[" * 3000 + "]" * 3000 + "}")
    with pytest.raises(PriceListError, match="nested over 64 levels"):
        load_price_list(nested)
    nan = _prices(tmp_path, '{"updated": "2025-01-01", "offers": [{"usd_per_gpu_hour": NaN}]}')
    with pytest.raises(PriceListError, match="NaN is not a price"):
        load_price_list(nan)
    tiny = _prices(tmp_path, [_offer(1e-300)])
    with pytest.raises(PriceListError, match=r"offers\.0\.usd_per_gpu_hour"):
        load_price_list(tiny)
    free = load_price_list(_prices(tmp_path, [_offer(0.0)]))  # 0 is free, accepted
    assert free.offers[0].usd_per_gpu_hour == 0.0


# ------------------------------------------------------------------ item 1: what-if JSON


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in the JSON")

    return json.loads(text, parse_constant=refuse)


def test_whatif_json_carries_null_and_the_reason_not_inf(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Mixtral 8x7B bf16 (93 GB of weights) does not fit one 80 GB H100 engine: no rollout
    can run, the RL step is infinite; the text prints "—", the JSON null with its reason.
    Training at tp 8 (which fits 80 GB) gives the loop its training rate."""
    status, out, _ = cli(
        ["whatif", "--model", "mixtral-8x7b", "--tp", "8", "--rl", "--json"], capsys
    )
    assert status == 0
    rl = _strict_json(out)["rl"]
    assert rl["engine"]["max_batch"] == 0
    assert rl["step_seconds"] is None
    assert rl["rollout_seconds"] is None
    assert math.isfinite(rl["training_seconds"])
    reason = rl["not_computed"]["step_seconds"]
    assert "cannot hold the weights" in reason
    assert rl["not_computed"]["curve.*.step_seconds"] == reason
    status, out, _ = cli(["whatif", "--model", "mixtral-8x7b", "--tp", "8", "--rl"], capsys)
    assert status == 0
    assert "RL step                  —" in out
    # at tp 1 training does not fit: no training rate, so no RL step, and it says why
    status, out, _ = cli(["whatif", "--model", "mixtral-8x7b", "--rl", "--json"], capsys)
    assert status == 0
    assert "not priced" in _strict_json(out)["rl"]["not_computed"]["step_seconds"]
    status, out, _ = cli(["whatif", "--model", "mixtral-8x7b", "--rl"], capsys)
    (line,) = [x for x in out.splitlines() if "RL step" in x]
    assert "— (" in line
    assert "not priced" in line


def test_report_json_with_an_infinite_whatif_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "rl.llmplan.json"
    status, _, _ = cli(
        ["whatif", "--model", "mixtral-8x7b", "--tp", "8", "--rl", "--save", str(saved)], capsys
    )
    assert status == 0
    status, out, _ = cli(["report", str(saved), "--json"], capsys)
    assert status == 0
    assert _strict_json(out)["whatif"]["rl"]["step_seconds"] is None


def test_the_rl_split_curve_is_bounded_and_its_best_is_exhaustive() -> None:
    """100,000 GPUs: the curve holds at most 257 points (256 samples and the best), and the
    best equals the minimum over every one of the 99,999 splits, computed here point by
    point from the two phase times (t_roll(k) + t_train(N − k))."""
    scenario = default_scenario()
    report = estimate(scenario)
    n = 100_000
    rl = RLInputs(num_gpus=n, prompts_per_step=4096, samples_per_prompt=8, engine_gpus=1)
    plan = plan_rl(scenario, report, rl)
    assert plan is not None
    assert len(plan.curve) <= MAX_CURVE_POINTS + 1
    sequences = 4096 * 8
    tokens = float(sequences * (rl.prompt_tokens + rl.response_tokens))
    rate = plan.training_tokens_per_s_per_gpu
    steps = [
        (rollout_seconds(sequences, k, plan.engine) + training_seconds(tokens, n - k, rate), k)
        for k in range(1, n)
    ]
    best_step, best_k = min(steps)
    assert plan.step_seconds == pytest.approx(best_step, rel=1e-12)
    assert plan.rollout_gpus == best_k


def test_whatif_for_a_million_gpus_prints_under_a_megabyte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = cli(["whatif", "--rl", "--rl-gpus", "1_000_000", "--json"], capsys)
    assert status == 0
    assert len(out.encode()) < 1_000_000
    assert len(_strict_json(out)["rl"]["curve"]) <= MAX_CURVE_POINTS + 1


# ------------------------------------------------------------------ item 2: references


def _scenario_with_group_gpu(tmp_path: Path, gpu: str, capsys: Any) -> Path:
    saved = tmp_path / "mixed.llmplan.json"
    assert cli(["whatif", "--cluster", "summit", "--save", str(saved)], capsys)[0] == 0
    data = json.loads(saved.read_text(encoding="utf-8"))
    data["whatif"]["mixed_cluster"]["groups"][0]["gpu"] = gpu
    saved.write_text(json.dumps(data), encoding="utf-8")
    return saved


@pytest.mark.parametrize("gpu", ["no-such-gpu", "/dev/zero", "../gpu.json"])
def test_a_node_group_gpu_is_resolved_when_the_file_is_read(
    gpu: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _scenario_with_group_gpu(tmp_path, gpu, capsys)
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    assert caught.value.field == "whatif.mixed_cluster.groups.0.gpu"
    assert "not in the GPU catalog" in str(caught.value)
    for argv in (["report", str(path)], ["whatif", str(path)], ["import", str(path)]):
        status, _, err = cli(argv, capsys)
        assert status == 2, argv
        one_line_error(err, "groups.0.gpu")


def test_a_node_group_gpu_in_other_case_resolves_to_the_catalog_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _scenario_with_group_gpu(tmp_path, "V100-SXM2-32GB", capsys)
    scenario = load_scenario_file(path)
    assert scenario.whatif.mixed_cluster is not None
    assert scenario.whatif.mixed_cluster.groups[0].gpu == "v100-sxm2-32gb"


# ------------------------------------------------------------------ item 8: echoed numbers


def test_counts_pick_their_suffix_after_rounding(capsys: pytest.CaptureFixture[str]) -> None:
    assert units.format_count(999.9e6) == "1B"  # 999.9M rounds to 1.00e9
    assert units.format_count(999.4e6) == "999M"
    assert units.format_count(1.5e18) == "1.5e+18"
    status, out, _ = cli(["presets", "models"], capsys)
    assert status == 0
    assert "e+" not in out


def test_whatif_refusals_name_the_part_and_its_own_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1e-300 images per sequence was accepted and echoed; an RL loop of one GPU was refused
    with the scenario's GPU range (1 to 1,048,576), not the loop's own (at least 2)."""
    argv = ["whatif", "--encoder-params", "1e9", "--images-per-sequence", "1e-300"]
    status, _, err = cli(argv, capsys)
    assert status == 2
    one_line_error(err, "whatif.multimodal.images_per_sequence", "0 or at least 0.001")
    status, _, err = cli(["whatif", "--rl", "--rl-gpus", "1"], capsys)
    assert status == 2
    one_line_error(err, "whatif.rl.num_gpus", "greater than or equal to 2")
    assert "1,048,576" not in err
    status, out, _ = cli(
        ["whatif", "--encoder-params", "1e9", "--images-per-sequence", "0"], capsys
    )
    assert status == 0
    assert "Multimodal" in out


# ------------------------------------------------------------------ regular expressions


def test_long_digit_runs_and_space_runs_cost_linear_time(tmp_path: Path) -> None:
    """Three patterns backtracked over every split of a long run before failing: a number
    in a log line (a 16,000-digit "iteration" took 18 s a line), the Trainer's values
    (50 ms a 5,000-digit value) and a YAML key (a 1 MB line of spaces: about an hour). Each
    input here took minutes or more before; the deadline is a hang guard, not a benchmark."""
    digits = "elapsed time per iteration (ms): 5 | iteration " + "9" * 16_000 + "x\n"
    parsed = within(10, lambda: logs.parse_log_text(digits * 20, "d.log"))
    assert len(parsed.problems) == 20
    trainer = "{'train_samples_per_second': " + "9" * 5000 + "x}\n"
    parsed = within(10, lambda: logs.parse_log_text(trainer * 500, "t.log"))
    assert parsed.readings == []
    config = tmp_path / "acc.yaml"
    config.write_text("distributed_type: FSDP\na" + " " * 990_000 + "b\n", encoding="utf-8")
    with pytest.raises(sc.StackConfigError, match="line 2: expected 'key: value'"):
        within(10, lambda: sc.read_config(config))
