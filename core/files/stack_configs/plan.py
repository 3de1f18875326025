"""What every stack config shares: the launch plan read off a scenario, what a config read
back says, the notes on what a stack cannot express, and the scenario edits an import makes.

A :class:`LaunchPlan` is the scenario's layout decided once (dp from the GPU count, the
accumulation steps, the FSDP name as a ZeRO stage) by the same
:func:`~llm_planner.core.sections.parallelism.scenario_layout` the estimate uses, so an
exported file launches the layout the report priced. Each stack module turns a plan into
its own text (``export``) and its own text back into scenario fields (``parse``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.core.primitives.version import __version__
from llm_planner.core.sections.parallelism import scenario_layout


class StackConfigError(ValueError):
    """A stack config that cannot be read: its one-line message names the file and the field."""


@dataclass(frozen=True)
class LaunchPlan:
    """The scenario's layout with every degree decided: what a launch config must say."""

    scenario_name: str
    model_id: str
    """Preset id, or the architecture's name for a custom model."""
    arch: Architecture
    stack: str
    num_gpus: int
    gpus_per_node: int
    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    fsdp_strategy: str | None
    shard: int
    """ZeRO shard group: dp, or its in-node part under HYBRID_SHARD."""
    sequence_parallel: bool
    schedule: str
    v: int
    micro_batch: int
    global_batch: int
    accumulation: int
    seq_len: int
    precision: str
    optimizer: str
    recompute: str
    flash_attention: bool
    lora_rank: int | None
    qlora: bool
    problems: tuple[str, ...]
    cp: int = 1
    """Context-parallel degree (GPUs = tp·cp·pp·dp)."""
    low_precision_params: bool = False
    """FP8/FP4 recipe's layer matrices kept only in FP8/FP4 (Megatron --fp8-param-gather)."""
    grad_reduce_16bit: bool = False
    """Main gradients kept and reduced in 16 bits (Megatron --grad-reduce-in-bf16)."""
    activation_offload_layers: int = 0
    """Layers per stage whose activations go to host memory (Megatron
    --cpu-offloading-num-layers)."""
    first_stage_layers: int | None = None
    """Layers of the first pipeline stage, stated (Megatron
    --decoder-first-pipeline-num-layers); None: the equal split."""
    last_stage_layers: int | None = None
    """Layers of the last pipeline stage, stated (Megatron
    --decoder-last-pipeline-num-layers); None: the equal split."""
    offload_optimizer: str = "none"
    offload_params: str = "none"
    """ZeRO-Offload / ZeRO-Infinity devices (``training.offload_*``)."""
    recompute_method: str = "uniform"
    """How full recomputation covers a stage (``TrainingInputs.recompute_method``)."""
    recompute_layers: int | None = None
    """Its N (Megatron --recompute-num-layers, torchtitan selective_ac_option N)."""
    recompute_modules: tuple[str, ...] = ("core_attn",)
    """Megatron's --recompute-modules under selective recomputation."""
    recompute_checkpoint: str = "gpu"
    """Where full recompute's layer inputs live: gpu, partitioned (over tp) or cpu."""

    @property
    def nodes(self) -> int:
        return max(1, -(-self.num_gpus // self.gpus_per_node))

    @property
    def layers_per_virtual_stage(self) -> int:
        return max(1, self.arch.layers // (self.pp * self.v))


def launch_plan(scenario: Scenario) -> LaunchPlan:
    """The scenario's launch plan (its layout resolved as the estimate resolves it)."""
    lay = scenario_layout(scenario)
    tr, par = scenario.training, scenario.parallelism
    return LaunchPlan(
        scenario_name=scenario.name,
        model_id=scenario.model.preset or scenario.model.architecture.name,
        arch=scenario.model.architecture,
        stack=tr.stack,
        num_gpus=scenario.num_gpus,
        gpus_per_node=par.gpus_per_node,
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        ep=lay.ep,
        zero_stage=lay.zero_stage,
        fsdp_strategy=par.fsdp_strategy,
        shard=lay.shard,
        sequence_parallel=lay.sequence_parallel,
        schedule=lay.schedule,
        v=lay.v,
        micro_batch=lay.micro_batch,
        global_batch=par.global_batch,
        accumulation=lay.gradient_accumulation_steps,
        seq_len=tr.seq_len,
        precision=tr.precision,
        optimizer=tr.optimizer,
        recompute=lay.recompute,
        flash_attention=tr.flash_attention,
        lora_rank=tr.lora_rank,
        qlora=tr.qlora,
        problems=lay.problems,
        cp=lay.cp,
        low_precision_params=tr.low_precision_params,
        grad_reduce_16bit=tr.grad_reduce_16bit,
        activation_offload_layers=tr.activation_offload_layers,
        first_stage_layers=tr.first_stage_layers if lay.pp > 1 else None,
        last_stage_layers=tr.last_stage_layers if lay.pp > 1 else None,
        offload_optimizer=tr.offload_optimizer,
        offload_params=tr.offload_params,
        recompute_method=tr.recompute_method,
        recompute_layers=tr.recompute_layers,
        recompute_modules=tr.recompute_modules,
        recompute_checkpoint=tr.recompute_checkpoint,
    )


@dataclass(frozen=True)
class ExportedConfig:
    """A stack's launch config for one plan: its files and what it could not say."""

    stack: str
    """Format id: deepspeed, megatron, torchtitan, accelerate, nanotron."""
    text: str
    suffix: str
    """File name suffix of ``text`` (".json", ".sh", ".toml", ".yaml")."""
    unexpressed: tuple[str, ...]
    """What the plan assumes that this stack's config cannot express (also in the file)."""
    companions: dict[str, str] = field(default_factory=dict)
    """Further files, by suffix (accelerate: ".training_args.json" for TrainingArguments)."""


@dataclass(frozen=True)
class ImportedConfig:
    """What a stack config says, as scenario fields, and which of its keys were read."""

    stack: str
    fields: dict[str, Any]
    """Dotted scenario paths ("parallelism.tp", "training.micro_batch", "num_gpus") → values."""
    model: str | None
    """The model the config names (a preset id when one matches), None when it names none."""
    read: tuple[str, ...]
    ignored: tuple[str, ...]
    arch_hint: dict[str, int] = field(default_factory=dict)
    """Architecture numbers the config states (layers, hidden_size, heads...), if any."""
    auto: tuple[str, ...] = ()
    """Keys the config leaves to the launcher (``"auto"``, the Hugging Face integration's
    form): the scenario's own value stands for each, and the faces say so."""


def provenance_lines(plan: LaunchPlan, stack: str) -> list[str]:
    """The lines every exported file starts with: app version, scenario, model, layout."""
    return [
        f"Written by LLM Planner {__version__} for {stack}",
        f"Scenario: {plan.scenario_name}",
        f"Model: {plan.model_id}; {plan.num_gpus} GPUs ({plan.gpus_per_node} per node)",
        f"Layout: dp={plan.dp} tp={plan.tp} pp={plan.pp} ep={plan.ep} ZeRO-{plan.zero_stage}"
        f" micro-batch {plan.micro_batch} x {plan.accumulation} accumulation steps"
        f" = global batch {plan.global_batch}; seq len {plan.seq_len}",
    ]


def offload_unexpressed(plan: LaunchPlan) -> list[str]:
    """For a stack without DeepSpeed's ZeRO offload: the plan's offload, which it cannot
    state."""
    if plan.offload_optimizer == "none" and plan.offload_params == "none":
        return []
    return [
        f"ZeRO offload (optimizer: {plan.offload_optimizer}, parameters: "
        f"{plan.offload_params}) is priced as DeepSpeed runs it; not stated in this stack's "
        "config"
    ]


def common_unexpressed(plan: LaunchPlan) -> list[str]:
    """Assumptions of the plan that no stack's config states (listed in every export)."""
    notes: list[str] = []
    if plan.recompute == "threshold":
        notes.append(
            "recompute 'threshold' (drop tensors above a size) is no stack's option: "
            "exported as selective recomputation"
        )
    notes.extend(f"the plan's layout has a problem: {p}" for p in plan.problems)
    if plan.stack != "megatron":
        if plan.cp > 1:
            notes.append(
                f"context parallelism cp = {plan.cp} is priced as Megatron-Core runs it "
                "(--context-parallel-size); not stated in this stack's config"
            )
        if plan.precision in MEGATRON_LOW_PRECISION_ARGS:
            notes.append(
                f"precision {plan.precision} is Transformer Engine's recipe as Megatron-Core "
                "launches it; not stated in this stack's config"
            )
        if plan.low_precision_params:
            notes.append(
                "low-precision parameters are Megatron's --fp8-param-gather / "
                "--fp4-param-gather; not stated in this stack's config"
            )
        if plan.activation_offload_layers:
            notes.append(
                f"activations of {plan.activation_offload_layers} layers per stage offloaded "
                "to host memory are Megatron's --cpu-offloading-num-layers; not stated in this "
                "stack's config"
            )
        if plan.first_stage_layers is not None or plan.last_stage_layers is not None:
            notes.append(
                "the stated first/last pipeline stage layers are Megatron's "
                "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers; "
                "not stated in this stack's config"
            )
        if plan.grad_reduce_16bit:
            notes.append(
                "16-bit gradient reduce is Megatron's --grad-reduce-in-bf16; not stated in "
                "this stack's config"
            )
    return notes


MEGATRON_LOW_PRECISION_ARGS: dict[str, tuple[str, ...]] = {
    "fp8_delayed": ("--fp8-format hybrid", "--fp8-recipe delayed"),
    "fp8_current": ("--fp8-format hybrid", "--fp8-recipe tensorwise"),
    "mxfp8": ("--fp8-format e4m3", "--fp8-recipe mxfp8"),
    "fp8_blockwise": ("--fp8-format e4m3", "--fp8-recipe blockwise"),
    "nvfp4": ("--fp4-format e2m1", "--fp4-recipe nvfp4"),
}
"""The low-precision recipes (core/quantities/optimizers.py) as Megatron-LM's arguments
(NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/transformer_config.py lines 587-600
and 673-679: ``--fp8-format`` e4m3 | hybrid, ``fp8_recipe`` tensorwise (current scaling) |
delayed | mxfp8 | blockwise; ``--fp4-format e2m1``, ``fp4_recipe`` nvfp4), with ``--bf16``
for everything else."""


def export_recompute(plan: LaunchPlan) -> str:
    """The recomputation policy a stack can state: threshold falls back to selective."""
    return "selective" if plan.recompute == "threshold" else plan.recompute


# ------------------------------------------------------------------ the model a config names

_FLAVOR_PRESETS: dict[tuple[str, str], str] = {
    ("llama3", "8B"): "llama-3.1-8b",
    ("llama3", "70B"): "llama-3.1-70b",
    ("llama3", "405B"): "llama-3.1-405b",
    ("deepseek_v3", "671B"): "deepseek-v3",
}
"""torchtitan's (model.name, model.flavor) of the presets it ships (torchtitan v0.2.2,
torchtitan/models/llama3/__init__.py and deepseek_v3/__init__.py: llama3_configs, the
flavors "8B", "70B", "405B"; deepseek_v3 "671B")."""


def flavor_of(model_id: str) -> tuple[str, str] | None:
    """torchtitan's (name, flavor) for a preset id, if torchtitan ships it."""
    for key, preset in _FLAVOR_PRESETS.items():
        if preset == model_id:
            return key
    return None


def preset_of_flavor(name: str, flavor: str) -> str | None:
    return _FLAVOR_PRESETS.get((name, flavor))


def match_preset(hint: dict[str, int]) -> str | None:
    """The preset whose architecture has every number in ``hint`` (None if none or several)."""
    if not hint:
        return None
    found = [
        pid
        for pid in model_presets()
        if all(getattr(get_preset(pid).architecture, k) == v for k, v in hint.items())
    ]
    return found[0] if len(found) == 1 else None


def known_model(text: str | None) -> str | None:
    """``text`` as a preset id when it is one (case-insensitive), else None."""
    if text and text.lower() in model_presets():
        return text.lower()
    return None


# ------------------------------------------------------------------ applying to a scenario


def with_fields(scenario: Scenario, fields: dict[str, Any]) -> Scenario:
    """The scenario with dotted fields set (:func:`.inputs.scenario.with_changes`), validated
    as a whole; a ValueError names the first bad field."""
    from pydantic import ValidationError

    try:
        return with_changes(scenario, fields)
    except ValidationError as error:
        from llm_planner.core.primitives.limits import describe_error

        where, reason = describe_error(error.errors()[0])
        raise ValueError(f"{where}: {reason}" if where else reason) from None


def apply_row(scenario: Scenario, row: Any) -> Scenario:
    """The scenario with a search row's layout (a :class:`SearchRow` or its ``model_dump``
    dict), so the row exports like the scenario's own layout: the search's own
    :func:`~llm_planner.core.composition.search.apply_row`."""
    from llm_planner.core.composition import search

    if isinstance(row, dict):
        row = search.SearchRow.model_validate(row)
    applied: Scenario = search.apply_row(scenario, row)
    return applied


def layout_of(scenario: Scenario) -> dict[str, Any]:
    """The fields an import sets and a round trip must keep, read off a resolved scenario."""
    plan = launch_plan(scenario)
    return {
        "tp": plan.tp,
        "pp": plan.pp,
        "cp": plan.cp,
        "dp": plan.dp,
        "ep": plan.ep,
        "zero_stage": plan.zero_stage,
        "sequence_parallel": plan.sequence_parallel,
        "schedule": plan.schedule,
        "v": plan.v,
        "micro_batch": plan.micro_batch,
        "global_batch": plan.global_batch,
        "accumulation": plan.accumulation,
        "seq_len": plan.seq_len,
        "recompute": plan.recompute,
        "num_gpus": plan.num_gpus,
    }


class Reader:
    """Typed reads from a nested dict that remember which dotted keys were read."""

    def __init__(self, data: dict[str, Any], source: str) -> None:
        self.data = data
        self.source = source
        self.read: list[str] = []
        self.auto: list[str] = []

    def get(self, path: str, kind: type, default: Any = None) -> Any:
        """The value at dotted ``path`` (``default`` when absent or null); a value of another
        type raises StackConfigError naming the file and the key. ``"auto"`` where a number
        or a switch is expected is what the Hugging Face Trainer's DeepSpeed integration
        fills in from its own arguments at launch (transformers integrations/deepspeed.py
        ``HfTrainerDeepSpeedConfig.fill_match``): it reads as absent, so the scenario's own
        value stands, and the key is listed in ``auto``."""
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return default
            node = node[part]
        if kind is not str and isinstance(node, str) and node.strip().lower() == "auto":
            self.read.append(path)
            self.auto.append(path)
            return default
        if isinstance(node, bool) != (kind is bool) or not isinstance(node, kind):
            raise StackConfigError(f"{self.source}: {path} has the wrong type ({node!r})")
        self.read.append(path)
        return node

    def fail(self, message: str) -> StackConfigError:
        return StackConfigError(f"{self.source}: {message}")


def leaf_paths(
    data: dict[str, Any], prefix: str = "", stop: frozenset[str] = frozenset()
) -> set[str]:
    """Every dotted key path to a non-mapping value (mappings named in ``stop`` count whole)."""
    out: set[str] = set()
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in stop:
            out |= leaf_paths(value, path + ".", stop)
        else:
            out.add(path)
    return out
