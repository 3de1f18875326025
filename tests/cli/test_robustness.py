"""Issue 20's reproducers, one test each: every one gives a one-line message and exit 2
(or a correct figure) within 1 s, whatever a user types or a received file holds."""

from __future__ import annotations

import errno
import json
import math
import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files import store
from llm_planner.core.files.library import Library
from llm_planner.core.primitives import limits, units
from llm_planner.core.sections.parallelism.schedule import pipeline_timeline


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, float]:
    start = time.process_time()
    code = main(argv)
    elapsed = time.process_time() - start
    out, err = capsys.readouterr()
    return code, out, err, elapsed


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], words: str) -> str:
    code, _, err, elapsed = _run(argv, capsys)
    assert code == 2, err
    assert err.count("\n") == 1, err  # one line
    assert "Traceback" not in err
    assert words in err, err
    assert elapsed < 3.0  # CPU seconds: bounded work, not a speed test (load moves wall time)
    return err


# ------------------------------------------------------------------ the command line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--tokens", "1e300", "--json"], "argument --tokens: must be between 1 and"),
        (["--mfu", "1e-300"], "argument --mfu: must be between 0.0001 and 1"),
        (["--tflops", "1e300"], "argument --tflops: must be between"),
        (["--price", "1e308"], "argument --price: must be between 0 and 10,000"),
        (["--deadline", "1e300"], "argument --deadline: must be between 1 and"),
        (["--deadline", "1e-300"], "argument --deadline: must be between 1 and"),
        (["--budget-usd", "1e300"], "argument --budget-usd: must be between"),
        (["--num-gpus", "1e300"], "argument --num-gpus: must be between 1 and 1,048,576"),
        (["--tp", "1e300"], "argument --tp: must be between 1 and 16,384"),
        (["--seq-len", "1e308"], "argument --seq-len: must be between 1 and 33,554,432"),
        (["--micro-batch", "1e308"], "argument --micro-batch: must be between"),
        (["--batch", "1e308"], "argument --batch: must be between"),
        (["--context", "1e308"], "argument --context: must be between"),
        (["--global-batch", "1e308"], "argument --global-batch: must be between"),
        (["--lora-rank", "1e308"], "argument --lora-rank: must be between"),
        (["--failure-rate", "1e308"], "argument --failure-rate: must be 0, or between 1e-09 and 1"),
        (["--tp", "7B"], "argument --tp: must be between"),
        (["--pp", "7B"], "argument --pp: must be between"),
        (["--tp", "1e8"], "argument --tp: must be between"),
        (["--tp", "5e8"], "argument --tp: must be between"),
        (["--num-gpus", "8", "--tp", "1024"], "does not divide the model's 32 attention heads"),
        (["--num-gpus", "8", "--tp", "16"], "tp·pp = 16·1 = 16 GPUs is more than the 8 GPUs"),
        (["--pp", "1000"], "pp·v = 1000·1 stages is more than the model's 32 layers"),
        (["--num-gpus", "500", "--tp", "8"], "500 GPUs are not a multiple of tp·pp"),
        (["--model", "m" * 5000], "argument --model"),
        (["--gpu", "g" * 5000], "argument --gpu"),
        (["--save", ""], "argument --save: the file name is empty"),
    ],
)
def test_report_refuses_absurd_values_in_one_line(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(["report", *args], capsys, words)
    assert len(err) < 450  # a 5,000-character value is not echoed whole


def test_search_with_absurd_gpu_counts_is_refused_or_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _refused(["search", "--num-gpus", "1e16"], capsys, "argument --num-gpus: must be between")
    code, out, err, elapsed = _run(
        ["search", "--num-gpus", "1048576", "--global-batch", "16777216"], capsys
    )
    assert code == 0, err
    assert "layouts tried" in out
    assert elapsed < 5.0  # the largest count allowed: its divisors only


def test_fewer_sequences_than_replicas_is_named_as_a_problem(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _, elapsed = _run(["report", "--global-batch", "1", "--num-gpus", "512"], capsys)
    assert code == 0
    assert "global batch 1 is not a multiple of dp·micro-batch = 512" in out
    assert elapsed < 3.0  # CPU seconds: bounded work, not a speed test (load moves wall time)


def test_text_report_shows_no_nan_or_negative_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _, _ = _run(["report", "--num-gpus", "1", "--global-batch", "1"], capsys)
    assert code == 0
    assert "nan" not in out.lower()
    assert "-0 B" not in out
    assert units.format_bytes(-0.0) == "0 B"
    assert units.format_bytes(-1e-9) == "0 B"


def test_deep_pipeline_with_one_micro_batch_has_a_bubble_below_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """32 stages and one micro-batch: 31 of the 32 slots of each stage are idle, so the
    bubble is 31/32 of the step; Narayanan's (p−1)/m of the ideal time would read 3,100%."""
    argv = ["report", "--json", "--model", "llama-3.1-8b", "--num-gpus", "32", "--pp", "32"]
    code, out, _, elapsed = _run([*argv, "--global-batch", "1", "--micro-batch", "1"], capsys)
    assert code == 0
    par = json.loads(out)["parallelism"]
    assert par["bubble_fraction"] == pytest.approx(31 / 32)
    assert elapsed < 3.0  # CPU seconds: bounded work, not a speed test (load moves wall time)


def test_bottleneck_label_never_reads_nan() -> None:
    from llm_planner.core.sections.parallelism.step_time import bottleneck_of

    row = {"time_compute": 1.0, "time_bubble": math.nan, "time_data_parallel": 0.5}
    assert "nan" not in bottleneck_of(row).lower()
    assert bottleneck_of({"time_compute": 1.0, "time_bubble": math.inf}).startswith("—")
    # a finite row still names its largest part with its share of the step
    finite = {"time_compute": 1.0, "time_bubble": 1.0}
    assert bottleneck_of(finite) == "pipeline bubble (50% of step)"


def test_every_accepted_extreme_in_range_gives_finite_json() -> None:
    """The largest and smallest values each range allows still estimate to finite JSON."""
    base = default_scenario().model_dump(mode="json")
    for path, extreme in [
        ("compute.tokens", limits.MAX_TRAINING_TOKENS),
        ("compute.mfu", 1e-4),
        ("compute.price_usd_per_gpu_hour", limits.MAX_USD_PER_GPU_HOUR),
        ("compute.deadline_seconds", 1.0),
        ("compute.deadline_seconds", limits.MAX_SECONDS),
        ("compute.budget_usd", limits.MAX_USD),
        ("compute.failures.gpu_failures_per_hour", 1.0),
        ("model.params_override", 1e3),
        ("model.params_override", limits.MAX_PARAMS),
    ]:
        data = json.loads(json.dumps(base))
        node = data
        *parents, leaf = path.split(".")
        for key in parents:
            node = node[key]
        node[leaf] = extreme
        if path == "compute.mfu":
            data["compute"]["throughput_mode"] = "mfu"
        report = estimate(Scenario.model_validate(data))
        json.dumps(report_json(report), allow_nan=False)  # raises on NaN or infinity


# ------------------------------------------------------------------ saving


def test_save_refuses_symlinks_fifos_and_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real.llmplan.json"
    real.write_text("keep me")
    link = tmp_path / "link.llmplan.json"
    link.symlink_to(real)
    _refused(["report", "--save", str(link)], capsys, "a symbolic link is there")
    assert link.is_symlink()
    assert real.read_text() == "keep me"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused(["report", "--save", str(fifo)], capsys, "a FIFO is there")
    folder = tmp_path / "folder"
    folder.mkdir()
    _refused(["report", "--save", str(folder)], capsys, "a folder is there")
    # /dev/null itself: checked without ever attempting the write
    with pytest.raises(store.NotRegularFileError, match="character device"):
        store.check_save_target(Path("/dev/null"))
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (errno.ENOSPC, "No space left on device"),
        (errno.EROFS, "Read-only file system"),
        (errno.EFBIG, "File too large"),
        (errno.EACCES, "Permission denied"),
    ],
)
def test_disk_faults_give_one_line_and_exit_2(
    code: int,
    text: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "in.llmplan.json"
    store.save_scenario_file(default_scenario(), source)

    def fail(*_: Any) -> None:
        raise OSError(code, text)

    real = os.fsync
    monkeypatch.setattr(os, "fsync", fail)
    err = _refused(["import", str(source)], capsys, text)
    assert "cannot" in err
    _refused(["report", "--save", str(tmp_path / "out.llmplan.json")], capsys, text)
    monkeypatch.setattr(os, "fsync", real)
    assert not (tmp_path / "out.llmplan.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert Library().listing().entries == []  # nothing half-written was left behind
    folder = Library().folder
    assert not folder.exists() or [p.name for p in folder.iterdir()] == []


def test_new_folders_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real = store.fsync_dir

    def spy(folder: Path) -> None:
        synced.append(str(folder))
        real(folder)

    monkeypatch.setattr(store, "fsync_dir", spy)
    target = tmp_path / "a" / "b" / "c.llmplan.json"
    store.save_scenario_file(default_scenario(), target)
    assert str(tmp_path) in synced  # the parent of the new folder "a"
    assert str(tmp_path / "a") in synced  # the parent of "b"
    assert str(tmp_path / "a" / "b") in synced  # the rename itself


# ------------------------------------------------------------------ hostile files


def _doc() -> dict[str, Any]:
    return json.loads(store.dumps_scenario(default_scenario()))


def _file_error(text: str) -> store.ScenarioFileError:
    start = time.process_time()
    with pytest.raises(store.ScenarioFileError) as caught:
        store.parse_scenario(text.encode("utf-8"), "f.llmplan.json")
    assert time.process_time() - start < 2.0  # about 0.3 s; the shared CI machine waits
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize(
    "field",
    [
        ("compute", "tokens"),
        ("compute", "price_usd_per_gpu_hour"),
        ("gpu", "memory_bytes"),
        ("gpu", "peak_flops", "bf16"),
        ("parallelism", "inter_node_bandwidth_bytes_per_s"),
        ("num_gpus",),
        ("model", "architecture", "layers"),
    ],
)
def test_a_400_digit_integer_is_refused_not_infinity(field: tuple[str, ...]) -> None:
    doc = _doc()
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = "__BIG__"
    error = _file_error(json.dumps(doc).replace('"__BIG__"', "1" + "0" * 400))
    assert "400" in str(error) or "digits" in str(error)


def test_absurd_degrees_in_a_file_are_refused_fast() -> None:
    for key, value, words in [
        ("pp", 1_000_000_000, "must be between 1 and 16,384"),
        ("tp", 100_000_000, "must be between 1 and 16,384"),
        ("tp", 3, "does not divide"),
    ]:
        doc = _doc()
        doc["parallelism"][key] = value
        error = _file_error(json.dumps(doc))
        assert words in str(error)
        assert error.field.startswith("parallelism.")


def test_measured_points_are_bounded_and_nothing_written_is_over_the_read_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc()
    doc["parallelism"]["measured_points"] = [[8, 1000.0]] * 60_000
    error = _file_error(json.dumps(doc))
    assert "60,000 items (at most 10,000)" in str(error)
    doc["parallelism"]["measured_points"] = [[8, 1000.0]] * 1001
    error = _file_error(json.dumps(doc))
    assert "measured_points" in str(error)
    assert "at most 1000" in str(error)
    # a file just under the limit that would grow on rewrite (indent 2): refused on write
    doc = _doc()
    room = store.MAX_FILE_BYTES - len(json.dumps(doc, separators=(",", ":"))) - 10
    doc["model"]["architecture"]["name"] = "n" * room
    compact = json.dumps(doc, separators=(",", ":"))
    assert len(compact) < store.MAX_FILE_BYTES
    source = tmp_path / "big.llmplan.json"
    source.write_text(compact)
    scenario = store.load_scenario_file(source)
    with pytest.raises(OSError, match="over the 1,000,000-byte limit") as caught:
        store.save_scenario_file(scenario, tmp_path / "out.llmplan.json")
    assert caught.value.errno == errno.EFBIG
    assert not (tmp_path / "out.llmplan.json").exists()
    code, _, err, _ = _run(["import", str(source)], capsys)
    assert code == 2
    assert "over the 1,000,000-byte limit" in err
    assert Library().listing().problems == []  # nothing unreadable entered the library


def test_params_override_subnormal_is_refused() -> None:
    doc = _doc()
    doc["model"]["params_override"] = 5e-324
    assert "must be between 1,000 and" in str(_file_error(json.dumps(doc)))


@pytest.mark.parametrize("name", ["a\u0000b", "x\u001b[2Jy", "\u202eevil", "two\nlines", "t\tab"])
def test_names_are_cleaned_of_control_and_bidi_characters(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc()
    doc["name"] = name
    source = tmp_path / "n.llmplan.json"
    source.write_text(json.dumps(doc))
    scenario = store.load_scenario_file(source)
    assert all(ch.isprintable() for ch in scenario.name)
    assert "\u202e" not in scenario.name
    code, out, _, _ = _run(["import", str(source)], capsys)
    assert code == 0
    code, listed, _, _ = _run(["list"], capsys)
    assert code == 0
    for text in (out, listed):
        assert "\x1b" not in text
        assert "\x00" not in text
        assert "\u202e" not in text
    assert units.clean_text("a\u202eb\u0007c") == "ab c"
    assert units.clean_text("l1\nl2", keep_newlines=True) == "l1\nl2"


def test_safetensors_header_with_huge_shapes_is_refused_in_linear_time(tmp_path: Path) -> None:
    from llm_planner.core.files.hf_import import HFImportError, read_safetensors_header

    header = {
        f"t{i}": {"dtype": "BF16", "shape": [2**62] * 2000, "data_offsets": [0, 0]}
        for i in range(200)
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    start = time.process_time()
    with pytest.raises(HFImportError, match="bad shape"):
        read_safetensors_header(path)
    assert time.process_time() - start < 3.0  # CPU seconds (the report took 76 s)
    assert len(raw) > 1_000_000  # the 1.7 MB header of the report took 76 s


# ------------------------------------------------------------------ bounded work


def test_pipeline_timeline_draws_at_most_what_is_readable() -> None:
    for pp, m, schedule, v in [
        (65536, 10**6, "1f1b", 1),
        (16384, 10**7, "gpipe", 1),
        (4096, 10**5, "interleaved", 16384),
        (1024, 1024, "1f1b", 1),
    ]:
        start = time.process_time()
        events = pipeline_timeline(pp, m, schedule, v)
        assert time.process_time() - start < 2.0  # CPU seconds: bounded, not timed
        assert len(events) <= 4096
        assert max(e[0] for e in events) < 32
    # small pipelines are drawn whole: 1F1B makespan (m + p − 1)·(t_f + t_b)
    events = pipeline_timeline(4, 8, "1f1b")
    assert len(events) == 2 * 4 * 8
    assert math.isclose(max(e[3] for e in events), (8 + 4 - 1) * 3.0)


# ------------------------------------------------------------------ headless


@pytest.mark.slow
def test_smoke_test_on_a_bad_file_returns_instead_of_waiting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.llmplan.json"
    bad.write_text('{"x": 1}')
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-m", "llm_planner", str(bad), "--smoke-test"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "schema_version" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_rate_above_the_peak_is_not_priced(capsys: pytest.CaptureFixture[str]) -> None:
    """5,000 TFLOP/s measured on an H100 (989.4 TFLOP/s dense bf16): MFU would be 505%."""
    code, out, _, _ = _run(["report", "--json", "--tflops", "5000"], capsys)
    assert code == 0
    c = json.loads(out)["compute"]
    assert c["mfu"] is None
    assert c["hfu"] is None
    assert c["wall_seconds"] is None
    assert "above the GPU's 989.4 TFLOP/s peak" in c["throughput_label"]
    # 900 TFLOP/s is possible: priced, MFU 900/989.4
    code, out, _, _ = _run(["report", "--json", "--tflops", "900"], capsys)
    assert json.loads(out)["compute"]["mfu"] == pytest.approx(900 / 989.4)


def test_an_assumed_mfu_that_needs_hardware_flops_above_peak_is_not_priced() -> None:
    """1,000 parameters on Mistral-7B's shape without FlashAttention: selective
    recomputation re-runs the attention scores of 32 layers of 4,096 widths at 8,192 tokens,
    hundreds of thousands of times the 6·P = 6,000 FLOPs per token MFU counts; an assumed MFU
    of 40% would put the hardware FLOPs far above the peak (found by the property run)."""
    data = default_scenario().model_dump(mode="json")
    data["model"]["params_override"] = 1000.0
    data["training"]["flash_attention"] = False
    data["compute"]["throughput_mode"] = "mfu"
    report = report_json(estimate(Scenario.model_validate(data)))
    c = report["compute"]
    assert c["hardware_flops_factor"] > 1000
    assert c["hfu"] is None
    assert c["mfu"] is None
    assert "(HFU); not priced" in c["throughput_label"]
    json.dumps(report, allow_nan=False)


def test_an_mfu_above_one_from_the_6p_count_is_explained() -> None:
    """Qwen2.5-7B (untied 152,064 × 3,584 input embedding) at 128 tokens, kernel efficiency
    1: MFU's 6·P = 6 × 7,615,616,512 = 45.69 GFLOP per token credits the embedding lookup,
    which multiplies nothing, so MFU passes 100% while HFU (what runs) stays below it."""
    from llm_planner.core.primitives.presets import get_preset

    data = default_scenario().model_dump(mode="json")
    preset = get_preset("qwen2.5-7b")
    arch = preset.architecture.model_dump(mode="json")
    data["model"] = {"preset": preset.id, "architecture": arch, "params_override": None}
    data["num_gpus"] = 8
    data["parallelism"].update(kernel_efficiency=1.0, dp=None, tp=1, pp=1, global_batch=512)
    data["training"].update(seq_len=128, micro_batch=64)
    data["compute"]["compute_dtype"] = "fp32"
    par = report_json(estimate(Scenario.model_validate(data)))["parallelism"]
    assert par["mfu"] > 1.0
    assert par["hfu"] <= 1.0
    (problem,) = [p for p in par["problems"] if p.startswith("MFU above 100%")]
    assert "credits 45.69 GFLOP per token" in problem
