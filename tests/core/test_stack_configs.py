"""Stack configs: export → import gives the same layout for every format; configs written
by hand (as each stack's documentation shows them) read to the layout worked out by hand;
what a stack cannot express is listed; bad files get one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner import __version__
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.files.stack_configs import textfmt

# Layouts each stack can state in full (scenario fields). 512 GPUs, 32 layers (Llama-3.1-8B).
DEEPSPEED_LAYOUTS: list[dict[str, Any]] = [
    {"parallelism.zero_stage": 0},
    {"parallelism.zero_stage": 2, "training.micro_batch": 2, "training.recompute": "full"},
    {"parallelism.zero_stage": 3, "parallelism.tp": 2, "training.precision": "mixed_fp16"},
    {
        "parallelism.tp": 2,
        "parallelism.pp": 4,
        "parallelism.sequence_parallel": True,
        "parallelism.schedule": "interleaved",
        "parallelism.interleave_chunks": 2,
        "training.precision": "mixed_bf16_fp32_grads",
        "training.recompute": "none",
    },
]
MEGATRON_LAYOUTS: list[dict[str, Any]] = [
    {"parallelism.zero_stage": 0, "training.recompute": "none"},
    {"parallelism.zero_stage": 1, "parallelism.tp": 8, "parallelism.sequence_parallel": True},
    {"parallelism.zero_stage": 2, "training.recompute": "full", "training.micro_batch": 2},
    {"parallelism.zero_stage": 3, "training.precision": "mixed_fp16"},
    {
        "parallelism.tp": 2,
        "parallelism.pp": 4,
        "parallelism.schedule": "interleaved",
        "parallelism.interleave_chunks": 4,
        "training.precision": "mixed_bf16_fp32_grads",
    },
    # issue 27: context parallelism and Transformer Engine's recipes (Megatron-LM's
    # --context-parallel-size, --fp8-format/--fp8-recipe, --fp4-format)
    {"parallelism.cp": 2, "parallelism.tp": 2, "training.precision": "mxfp8"},
    {"parallelism.zero_stage": 1, "training.precision": "fp8_current"},
    {"parallelism.zero_stage": 1, "training.precision": "fp8_delayed"},
    {"parallelism.zero_stage": 1, "training.precision": "fp8_blockwise"},
    {"parallelism.cp": 4, "training.precision": "nvfp4"},
]
TORCHTITAN_LAYOUTS: list[dict[str, Any]] = [
    {"parallelism.zero_stage": 0, "training.recompute": "none"},
    {"parallelism.zero_stage": 2, "training.recompute": "full"},
    {"parallelism.zero_stage": 3, "parallelism.tp": 2, "parallelism.sequence_parallel": True},
    {"parallelism.fsdp_strategy": "HYBRID_SHARD"},
    {"parallelism.zero_stage": 3, "parallelism.pp": 4, "training.micro_batch": 2},
    {"parallelism.zero_stage": 3, "parallelism.pp": 2, "parallelism.schedule": "gpipe"},
    {
        "parallelism.zero_stage": 3,
        "parallelism.pp": 4,
        "parallelism.schedule": "interleaved",
        "parallelism.interleave_chunks": 2,
        "training.precision": "fp32",
    },
]
ACCELERATE_LAYOUTS: list[dict[str, Any]] = [
    {"parallelism.zero_stage": 0, "training.recompute": "none"},
    {"parallelism.zero_stage": 1},
    {"parallelism.zero_stage": 2, "training.recompute": "full", "training.micro_batch": 2},
    {"parallelism.zero_stage": 3, "parallelism.tp": 2, "training.precision": "mixed_fp16"},
    {"parallelism.fsdp_strategy": "HYBRID_SHARD", "training.recompute": "none"},
]
# nanotron recomputes whole layers or nothing (main's recompute_layer, huggingface/nanotron@
# 2411b022 config/parallelism_config.py; the release's Llama not at all): a selective plan
# exports with a note, so these layouts state none or full
NANOTRON_LAYOUTS: list[dict[str, Any]] = [
    {"parallelism.zero_stage": 0, "training.recompute": "none"},
    {
        "parallelism.zero_stage": 1,
        "parallelism.tp": 4,
        "parallelism.sequence_parallel": True,
        "training.recompute": "full",
    },
    {
        "parallelism.pp": 4,
        "parallelism.schedule": "gpipe",
        "training.micro_batch": 2,
        "training.recompute": "none",
    },
    {
        "parallelism.pp": 2,
        "parallelism.tp": 2,
        "training.precision": "mixed_bf16_fp32_grads",
        "training.recompute": "none",
    },
]
ROUND_TRIPS = [
    *(("deepspeed", f) for f in DEEPSPEED_LAYOUTS),
    *(("megatron", f) for f in MEGATRON_LAYOUTS),
    *(("torchtitan", f) for f in TORCHTITAN_LAYOUTS),
    *(("accelerate", f) for f in ACCELERATE_LAYOUTS),
    *(("nanotron", f) for f in NANOTRON_LAYOUTS),
]


def scenario_with(fields: dict[str, Any]) -> Scenario:
    return sc.with_fields(default_scenario(), fields)


def write(exported: sc.ExportedConfig, folder: Path, stem: str = "plan") -> Path:
    path = folder / (stem + exported.suffix)
    path.write_text(exported.text, encoding="utf-8")
    for suffix, text in exported.companions.items():
        (folder / (stem + suffix)).write_text(text, encoding="utf-8")
    return path


def precision_and_optimizer(scenario: Scenario) -> tuple[str, str]:
    return scenario.training.precision, scenario.training.optimizer


@pytest.mark.parametrize(("fmt", "fields"), ROUND_TRIPS)
def test_export_import_gives_the_same_layout(
    fmt: str, fields: dict[str, Any], tmp_path: Path
) -> None:
    planned = scenario_with(fields)
    assert not sc.launch_plan(planned).problems
    exported = sc.export_config(planned, fmt)
    imported = sc.read_config(write(exported, tmp_path))
    assert imported.stack == fmt
    # imported over a different scenario: nothing of the layout may come from the base
    base = sc.with_fields(
        default_scenario(),
        {
            "num_gpus": 64,
            "training.seq_len": 1024,
            "parallelism.global_batch": 64,
            "training.micro_batch": 4,
            "training.precision": "fp32",
            "training.recompute": "none",
        },
    )
    if fmt in {"megatron", "accelerate"}:  # their num_gpus comes from the launch line / YAML
        assert imported.fields["num_gpus"] == 512
    back = sc.apply_import(base, imported)
    assert sc.layout_of(back) == sc.layout_of(planned)
    assert back.training.precision == planned.training.precision
    assert back.training.stack == sc.STACK_OF_FORMAT[fmt]


@pytest.mark.parametrize("fmt", list(sc.FORMATS))
def test_every_file_names_the_app_version_and_the_scenario(fmt: str) -> None:
    scenario = scenario_with({"name": "Run 42 on the big cluster"})
    exported = sc.export_config(scenario, fmt)
    assert f"LLM Planner {__version__}" in exported.text
    assert "Run 42 on the big cluster" in exported.text


@pytest.mark.parametrize(
    ("fmt", "fields", "words"),
    [
        ("nanotron", {"parallelism.zero_stage": 3}, "ZeRO-3"),
        (
            "nanotron",
            {
                "parallelism.pp": 4,
                "parallelism.schedule": "interleaved",
                "parallelism.interleave_chunks": 2,
            },
            "interleaved",
        ),
        ("megatron", {"parallelism.pp": 2, "parallelism.schedule": "gpipe"}, "GPipe"),
        ("torchtitan", {"parallelism.zero_stage": 1}, "ZeRO-1"),
        ("torchtitan", {"training.precision": "mixed_fp16"}, "mixed_fp16"),
        ("accelerate", {"parallelism.pp": 4}, "pp=4"),
        ("deepspeed", {"parallelism.pp": 4}, "pp=4"),
        ("deepspeed", {"training.optimizer": "adafactor"}, "adafactor"),
        (
            "megatron",
            {"training.recompute": "threshold", "training.recompute_threshold_bytes": 1e6},
            "threshold",
        ),
    ],
)
def test_what_a_stack_cannot_express_is_listed_in_the_file(
    fmt: str, fields: dict[str, Any], words: str
) -> None:
    exported = sc.export_config(scenario_with(fields), fmt)
    listed = [note for note in exported.unexpressed if words in note]
    assert listed, exported.unexpressed
    assert listed[0] in exported.text


def test_a_search_row_exports_with_its_layout() -> None:
    from llm_planner.core.composition.search import search_scenario

    scenario = default_scenario()
    row = search_scenario(scenario, top=1).rows[0]
    plan = sc.launch_plan(sc.apply_row(scenario, row))
    assert (plan.dp, plan.tp, plan.pp, plan.zero_stage, plan.micro_batch, plan.recompute) == (
        row.dp,
        row.tp,
        row.pp,
        row.zero_stage,
        row.micro_batch,
        row.recompute,
    )
    assert plan.accumulation == row.gradient_accumulation_steps
    text = sc.export_config(sc.apply_row(scenario, row), "megatron").text
    assert f"--tensor-model-parallel-size {row.tp}\n" in text


# ------------------------------------------------------------------ configs written by hand


def test_a_hand_written_deepspeed_config(tmp_path: Path) -> None:
    # DeepSpeed's own batch rule: train_batch_size = micro × accumulation × dp
    # → dp = 512 / (2 × 4) = 64 GPUs (no tensor or pipeline parallelism).
    path = tmp_path / "ds_config.json"
    path.write_text(
        json.dumps(
            {
                "train_batch_size": 512,
                "train_micro_batch_size_per_gpu": 2,
                "gradient_accumulation_steps": 4,
                "zero_optimization": {"stage": 2, "contiguous_gradients": True},
                "bf16": {"enabled": True},
                "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
                "wall_clock_breakdown": False,
            }
        )
    )
    imported = sc.read_config(path)
    assert imported.fields["num_gpus"] == 64
    assert imported.fields["parallelism.dp"] == 64
    assert imported.fields["parallelism.zero_stage"] == 2
    assert imported.fields["training.precision"] == "mixed_bf16"
    assert imported.model is None
    assert "wall_clock_breakdown" in imported.ignored
    assert "zero_optimization.contiguous_gradients" in imported.ignored
    assert "zero_optimization.stage" in imported.read


def test_a_hand_written_megatron_command_line(tmp_path: Path) -> None:
    path = tmp_path / "train.sh"
    path.write_text(
        "torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py \\\n"
        "  --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 \\\n"
        "  --sequence-parallel --use-distributed-optimizer \\\n"
        "  --num-layers 80 --hidden-size 8192 --num-attention-heads 64 \\\n"
        "  --group-query-attention --num-query-groups 8 --ffn-hidden-size 28672 \\\n"
        "  --max-position-embeddings 131072 \\\n"
        "  --micro-batch-size 1 --global-batch-size 256 --seq-length 8192 --bf16 \\\n"
        "  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \\\n"
        "  --lr 1.5e-4 --data-path /data/x\n"
    )
    imported = sc.read_config(path)
    f = imported.fields
    assert f["num_gpus"] == 32  # 4 nodes × 8
    assert (f["parallelism.tp"], f["parallelism.pp"], f["parallelism.zero_stage"]) == (4, 2, 1)
    assert f["parallelism.sequence_parallel"] is True
    assert f["training.recompute"] == "full"
    assert (f["training.micro_batch"], f["parallelism.global_batch"]) == (1, 256)
    assert imported.model == "llama-3.1-70b"  # 80 × 8192, 64 heads, 8 KV groups, 128k
    assert "--lr" in imported.ignored
    assert "--data-path" in imported.ignored
    scenario = sc.apply_import(default_scenario(), imported)
    assert sc.layout_of(scenario)["dp"] == 4  # 32 / (4 · 2)


def test_a_hand_written_accelerate_fsdp_config(tmp_path: Path) -> None:
    # the shape `accelerate config` writes for FSDP (accelerate docs, "FSDP" usage guide)
    path = tmp_path / "fsdp.yaml"
    path.write_text(
        "compute_environment: LOCAL_MACHINE\n"
        "debug: false\n"
        "distributed_type: FSDP\n"
        "downcast_bf16: 'no'\n"
        "fsdp_config:\n"
        "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
        "  fsdp_backward_prefetch: BACKWARD_PRE\n"
        "  fsdp_offload_params: false\n"
        "  fsdp_sharding_strategy: SHARD_GRAD_OP\n"
        "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
        "machine_rank: 0\n"
        "main_training_function: main\n"
        "mixed_precision: bf16\n"
        "num_machines: 2\n"
        "num_processes: 16\n"
        "rdzv_backend: static\n"
        "same_network: true\n"
        "use_cpu: false\n"
    )
    imported = sc.read_config(path)
    assert imported.fields["num_gpus"] == 16
    assert imported.fields["parallelism.gpus_per_node"] == 8
    assert imported.fields["parallelism.zero_stage"] == 2
    assert imported.fields["training.precision"] == "mixed_bf16"
    assert "fsdp_config.fsdp_backward_prefetch" in imported.ignored


def test_a_hand_written_torchtitan_toml(tmp_path: Path) -> None:
    path = tmp_path / "llama3_8b.toml"
    path.write_text(
        '[job]\ndump_folder = "./outputs"\n\n[model]\nname = "llama3"\nflavor = "8B"\n\n'
        "[training]\nlocal_batch_size = 1\nseq_len = 8192\nsteps = 1000\n\n"
        "[parallelism]\ndata_parallel_replicate_degree = 1\ndata_parallel_shard_degree = -1\n"
        'tensor_parallel_degree = 1\n\n[activation_checkpoint]\nmode = "selective"\n'
    )
    imported = sc.read_config(path)
    assert imported.model == "llama-3.1-8b"
    assert "num_gpus" not in imported.fields  # shard degree -1: all the GPUs there are
    assert imported.fields["parallelism.zero_stage"] == 3
    assert imported.fields["training.micro_batch"] == 1
    assert imported.fields["training.seq_len"] == 8192
    assert "training.steps" in imported.ignored


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("a.json", "{not json", "a.json"),
        ("a.json", '{"train_batch_size": "big", "zero_optimization": {}}', "train_batch_size"),
        (
            "a.json",
            '{"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3,'
            ' "gradient_accumulation_steps": 1}',
            "not micro-batch 3",
        ),
        ("a.toml", "[parallelism\n", "not TOML"),
        ("a.toml", '[parallelism]\ntensor_parallel_degree = "two"\n', "tensor_parallel_degree"),
        ("a.yaml", "parallelism:\n  dp: 2\ntokens:\n  micro_batch_size: [1\n", "line 4"),
        ("a.yaml", "distributed_type: FSDP\nnum_processes: many\n", "num_processes"),
        ("a.sh", "--tensor-model-parallel-size two\n", "tensor-model-parallel-size"),
        ("a.txt", "hello\n", "not a DeepSpeed JSON"),
    ],
)
def test_an_unreadable_config_gets_one_line_naming_the_file_and_field(
    name: str, text: str, words: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(sc.StackConfigError) as caught:
        sc.read_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert name in message
    assert words in message


def test_a_missing_or_binary_config(tmp_path: Path) -> None:
    with pytest.raises(sc.StackConfigError, match="no such file"):
        sc.read_config(tmp_path / "nope.json")
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(sc.StackConfigError, match="not UTF-8"):
        sc.read_config(binary)


# ------------------------------------------------------------------ the YAML and TOML writers


def test_yaml_subset_reads_what_it_writes_and_what_pyyaml_reads() -> None:
    data = {
        "a": 1,
        "b": -2.5,
        "c": 1e-8,
        "d": True,
        "e": None,
        "f": "text with: colon",
        "g": "1f1b",
        "h": {"i": [1, "two", {"j": 3, "k": [4, 5]}], "l": {}},
        "m": [],
        "n": "yes",
        "o": "#hash",
    }
    text = textfmt.dump_yaml(data, ["a comment"])
    assert textfmt.load_yaml(text) == data
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(text) == data


def test_toml_writer_is_read_by_tomllib() -> None:
    import tomllib

    sections = {"s": {"a": 1, "b": 'x "q"', "c": [1, 2], "d": None, "e": 0.5, "f": False}}
    assert tomllib.loads(textfmt.dump_toml(sections, ["c"])) == {
        "s": {"a": 1, "b": 'x "q"', "c": [1, 2], "e": 0.5, "f": False}
    }
