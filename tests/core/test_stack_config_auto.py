"""DeepSpeed configs written for the Hugging Face Trainer leave the batch, precision and
bucket sizes to the launcher (``"auto"``, filled by transformers' integrations/deepspeed.py
``HfTrainerDeepSpeedConfig.fill_match`` from the Trainer's arguments). Issue 28 item 5: they
are read with the scenario's values standing for each ``"auto"``, and the import says which,
instead of being refused ("has the wrong type ('auto')")."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_planner.core.files import stack_configs as sc
from llm_planner.core.files.stack_configs.plan import Reader, StackConfigError
from llm_planner.core.inputs.scenario import default_scenario

FIXTURE = Path(__file__).parent.parent / "fixtures" / "stack_configs" / "hf_trainer_zero3_auto.json"


def _imported() -> sc.ImportedConfig:
    return sc.read_config(FIXTURE)


def test_auto_reads_as_absent_and_is_listed() -> None:
    r = Reader({"a": "auto", "b": {"c": "AUTO"}, "d": 4}, "x.json")
    assert r.get("a", int, 7) == 7
    assert r.get("b.c", bool, False) is False
    assert r.get("d", int) == 4
    assert r.auto == ["a", "b.c"]
    # "auto" where text is expected is that text, and other strings are still refused
    assert Reader({"a": "auto"}, "x").get("a", str) == "auto"
    with pytest.raises(StackConfigError, match="wrong type"):
        Reader({"a": "eight"}, "x.json").get("a", int)


def test_the_trainer_s_zero3_offload_config_imports_with_the_scenario_s_batch() -> None:
    imported = _imported()
    assert imported.stack == "deepspeed"
    # the four values the fields depend on are the launcher's: none of them is invented
    assert set(imported.auto) == {
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "fp16.enabled",
    }
    fields = imported.fields
    for path in (
        "training.micro_batch",
        "parallelism.global_batch",
        "parallelism.dp",
        "num_gpus",
        "training.precision",
    ):
        assert path not in fields, path
    # what the file does state is read: ZeRO-3 with optimizer and parameters on the CPU
    assert fields["parallelism.zero_stage"] == 3
    assert fields["training.offload_optimizer"] == "cpu"
    assert fields["training.offload_params"] == "cpu"
    base = default_scenario()
    scenario = sc.apply_import(base, imported)
    assert scenario.training.micro_batch == base.training.micro_batch
    assert scenario.parallelism.global_batch == base.parallelism.global_batch
    assert scenario.training.precision == base.training.precision
    assert scenario.num_gpus == base.num_gpus


ACCELERATE = """compute_environment: LOCAL_MACHINE
deepspeed_config:
  deepspeed_config_file: {name}
  zero3_init_flag: true
distributed_type: DEEPSPEED
machine_rank: 0
num_machines: 1
num_processes: 8
use_cpu: false
"""


def test_accelerate_follows_its_referenced_deepspeed_file(tmp_path: Path) -> None:
    """`accelerate config` writes ``deepspeed_config_file`` when the DeepSpeed settings live
    in a JSON of their own (accelerate's DeepSpeedPlugin then refuses its own ZeRO keys):
    the JSON's ZeRO-3 and offload are read with the YAML's 8 processes, relative to the
    YAML's folder, and its "auto" keys are named with the file's name."""
    (tmp_path / "ds.json").write_text(FIXTURE.read_text())
    config = tmp_path / "accelerate.yaml"
    config.write_text(ACCELERATE.format(name="ds.json"))
    imported = sc.read_config(config)
    assert imported.stack == "accelerate"
    assert imported.fields["num_gpus"] == 8
    assert imported.fields["parallelism.zero_stage"] == 3
    assert imported.fields["training.offload_optimizer"] == "cpu"
    assert "deepspeed_config.deepspeed_config_file" in imported.read
    assert "deepspeed_config.deepspeed_config_file" not in imported.ignored
    assert "ds.json:train_batch_size" in imported.auto
    missing = tmp_path / "other.yaml"
    missing.write_text(ACCELERATE.format(name="nowhere.json"))
    with pytest.raises(StackConfigError, match=r"'nowhere\.json' not found"):
        sc.read_config(missing)
