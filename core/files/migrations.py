"""Migrations of scenario files: explicit, ordered steps on the raw JSON dict.

A scenario file carries ``schema_version``. Before validation, :func:`migrate` runs every
step from the file's version up to :data:`~llm_planner.core.composition.scenario.SCHEMA_VERSION`, in
order, each on the output of the one before. Each step is a pure function of a dict (it
gets its own deep copy), so a failing step leaves nothing half-migrated: the caller gets a
:class:`MigrationError` naming the step, and the file on disk is never rewritten by
loading.

When to add a step: a change that makes an older file fail validation or mean something
else (a field renamed, removed, re-typed, or its unit or meaning changed). A new field
with a default needs no step: older files simply get the default. Each step comes with a
committed fixture of the old version under ``tests/fixtures/scenarios/``.

Version history:

- **v0** (pre-release drafts): ``title`` and ``description`` instead of ``name`` and
  ``notes``; ``model`` and ``gpu`` were catalog ids (strings), not inline objects; ``gpus``
  instead of ``num_gpus``; ``saved_at`` (Unix seconds) instead of ``created``/``modified``.
- **v1**: model architecture and GPU inline, so a file is self-contained.
- **v2** (this round): new inputs, each with a default that keeps a v1 file's numbers:
  ``compute.throughput_mode`` may be ``"modeled"`` (the default for new scenarios: the
  parallel layout's step time; a v1 file keeps the source it names), ``training.stack``
  (the framework, default ``"megatron"``), ``whatif`` (the what-if parts, none planned),
  ``price_overrides`` (none). No v1 value changes meaning; the version
  moves so that an older app refuses a v2 file as "newer" instead of naming a field.
- **v3**: the pure-bf16 precision recipe is called ``pure_bf16``; ``bf16`` (and the names the
  stacks use: ``bf16-mixed``, ``16-mixed``, ``fp16``...) now read as the mixed recipe they
  mean in Lightning, Hugging Face and accelerate. A v2 file's ``training.precision: "bf16"``
  meant pure bf16, so it becomes ``pure_bf16``; every other value keeps its meaning.
- **v4**: a measured run records the model, GPU and stack it ran (``measurements[].model``,
  ``.gpu``; calibration sets aside runs of another model or GPU). A v3 run was measured
  on the scenario it was saved with, so the step fills ``model`` (the architecture's name),
  ``gpu`` (its id), a missing ``stack`` and the missing layout fields from that scenario;
  afterwards the run stays that model's when the scenario's model changes.
- **v5**: the RL what-if's rollout engines are priced by the serving model (its engine
  profiles' fitted bandwidth fractions), so ``whatif.rl.decode_bandwidth_efficiency`` no
  longer exists; the v4 value changed no figure since the serving model took over (issue
  30), and the step drops it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from llm_planner.core.composition.scenario import SCHEMA_VERSION

JsonDict = dict[str, Any]


class MigrationError(ValueError):
    """A document could not be brought to the current schema.

    ``field`` is the dotted path of the offending value (``"schema_version"``,
    ``"model"``...), ``step`` the migration that failed (None when no step ran).
    """

    def __init__(self, message: str, *, field: str, step: Migration | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.step = step


class NewerVersionError(MigrationError):
    """The file was written by a newer app whose format this one does not know."""


class StepError(ValueError):
    """Raised inside a step: ``field`` names the value that could not be migrated."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Migration:
    """One step: a document of ``from_version`` in, a document of ``from_version + 1`` out."""

    from_version: int
    description: str
    apply: Callable[[JsonDict], JsonDict]

    @property
    def to_version(self) -> int:
        return self.from_version + 1

    @property
    def label(self) -> str:
        return f"v{self.from_version}→v{self.to_version} ({self.description})"


# ------------------------------------------------------------------ steps


def _v0_to_v1(data: JsonDict) -> JsonDict:
    """v0 → v1: inline the model and GPU; rename title/description/gpus/saved_at.

    The v0 catalog ids are resolved against the catalog shipped with this app (the
    v0 drafts always referred to presets that still exist under the same id).
    """
    from llm_planner.core.primitives.gpus import gpu_catalog
    from llm_planner.core.primitives.presets import get_preset

    out: JsonDict = {}
    renames = {"title": "name", "description": "notes", "gpus": "num_gpus"}
    for key, value in data.items():
        if key in ("schema_version", "saved_at", "model", "gpu"):
            continue
        out[renames.get(key, key)] = value
    out["schema_version"] = 1

    if "saved_at" in data:
        stamp = data["saved_at"]
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            raise StepError("saved_at", "must be a number of seconds since 1970")
        try:
            moment = datetime.fromtimestamp(stamp, UTC).replace(microsecond=0).isoformat()
        except (OverflowError, OSError, ValueError):
            raise StepError("saved_at", f"{stamp!r} is not a representable time") from None
        out["created"] = moment
        out["modified"] = moment

    model = data.get("model")
    if isinstance(model, str):
        try:
            preset = get_preset(model)
        except KeyError:
            raise StepError("model", f"unknown v0 model id {model[:60]!r}") from None
        out["model"] = {
            "preset": preset.id,
            "architecture": preset.architecture.model_dump(mode="json"),
            "params_override": None,
        }
    elif model is not None:
        raise StepError("model", "a v0 model must be a catalog id (a string)")

    gpu = data.get("gpu")
    if isinstance(gpu, str):
        # the catalog only: get_gpu would also open a path, and a file names no paths
        found = gpu_catalog().get(gpu.strip().lower())
        if found is None:
            raise StepError("gpu", f"unknown v0 GPU id {gpu[:60]!r}")
        out["gpu"] = found.model_dump(mode="json")
    elif gpu is not None:
        raise StepError("gpu", "a v0 GPU must be a catalog id (a string)")
    return out


def _v1_to_v2(data: JsonDict) -> JsonDict:
    """v1 → v2: only the version; every field v2 added has a default (see the history)."""
    return {**data, "schema_version": 2}


def _v2_to_v3(data: JsonDict) -> JsonDict:
    """v2 → v3: ``training.precision`` ``"bf16"`` (v2's pure bf16 recipe) → ``"pure_bf16"``,
    since v3 reads a plain ``bf16`` as mixed bf16 (see the history)."""
    out = {**data, "schema_version": 3}
    training = data.get("training")
    if isinstance(training, dict) and training.get("precision") == "bf16":
        out["training"] = {**training, "precision": "pure_bf16"}
    return out


_RUN_LAYOUT: tuple[tuple[str, str, str], ...] = (
    # measurement field, scenario section, scenario field
    ("gpus_per_node", "parallelism", "gpus_per_node"),
    ("tp", "parallelism", "tp"),
    ("pp", "parallelism", "pp"),
    ("ep", "parallelism", "expert_parallel"),
    ("zero_stage", "parallelism", "zero_stage"),
    ("fsdp_strategy", "parallelism", "fsdp_strategy"),
    ("sequence_parallel", "parallelism", "sequence_parallel"),
    ("global_batch", "parallelism", "global_batch"),
    ("schedule", "parallelism", "schedule"),
    ("interleave_chunks", "parallelism", "interleave_chunks"),
    ("micro_batch", "training", "micro_batch"),
    ("seq_len", "training", "seq_len"),
)
"""A run's layout fields and where the scenario keeps each (as ``files.logs.layout_of``)."""


def _v3_to_v4(data: JsonDict) -> JsonDict:
    """v3 → v4: each measured run records its model, GPU, stack and layout, taken from the
    scenario the v3 file saved it with (the only run it can have been measured on)."""
    out = {**data, "schema_version": 4}
    runs = data.get("measurements")
    if runs is None:
        return out
    if not isinstance(runs, list):
        raise StepError("measurements", "must be a list of measured runs")
    model, gpu = data.get("model"), data.get("gpu")
    arch = model.get("architecture") if isinstance(model, dict) else None
    name = arch.get("name") if isinstance(arch, dict) else None
    gpu_id = gpu.get("id") if isinstance(gpu, dict) else None
    sections = {key: data.get(key) for key in ("parallelism", "training")}
    recorded = []
    for index, saved in enumerate(runs):
        if not isinstance(saved, dict):
            raise StepError(f"measurements.{index}", "must be an object")
        run = dict(saved)
        if run.get("model") is None and isinstance(name, str):
            run["model"] = name
        if run.get("gpu") is None and isinstance(gpu_id, str):
            run["gpu"] = gpu_id
        training = sections["training"]
        if run.get("stack") is None and isinstance(training, dict) and training.get("stack"):
            run["stack"] = training["stack"]
        recompute = training.get("recompute") if isinstance(training, dict) else None
        if run.get("recompute") is None and recompute in ("none", "selective", "full"):
            run["recompute"] = recompute  # a byte threshold is no run's recorded policy
        for field, section_name, key in _RUN_LAYOUT:
            section = sections[section_name]
            known = section.get(key) if isinstance(section, dict) else None
            if run.get(field) is None and known is not None:
                run[field] = known
        recorded.append(run)
    out["measurements"] = recorded
    return out


def _v4_to_v5(data: JsonDict) -> JsonDict:
    """v4 → v5: ``whatif.rl.decode_bandwidth_efficiency`` removed (rollouts are priced by the
    serving model, whose engine profiles carry the achieved bandwidth; see the history)."""
    out = {**data, "schema_version": 5}
    whatif = data.get("whatif")
    if not isinstance(whatif, dict):
        return out
    rl = whatif.get("rl")
    if isinstance(rl, dict) and "decode_bandwidth_efficiency" in rl:
        kept = {key: value for key, value in rl.items() if key != "decode_bandwidth_efficiency"}
        out["whatif"] = {**whatif, "rl": kept}
    return out


MIGRATIONS: tuple[Migration, ...] = (
    Migration(0, "inline model and GPU, rename title/description/gpus", _v0_to_v1),
    Migration(1, "new inputs with defaults: throughput source, training stack", _v1_to_v2),
    Migration(2, "pure bf16 precision renamed pure_bf16; bf16 means mixed bf16", _v2_to_v3),
    Migration(3, "measured runs record their model, GPU, stack and layout", _v3_to_v4),
    Migration(
        4, "RL rollouts' decode bandwidth share removed (the serving model prices them)", _v4_to_v5
    ),
)
"""Every step, in order: ``MIGRATIONS[i]`` takes version ``i`` to ``i + 1``."""


# ------------------------------------------------------------------ runner


def check_chain(migrations: Sequence[Migration], current: int) -> None:
    """Raise AssertionError unless the steps go 0→1→…→``current`` with no gap or repeat."""
    versions = [step.from_version for step in migrations]
    if versions != list(range(current)):
        raise AssertionError(f"migration steps {versions} do not cover 0..{current - 1} in order")


def document_version(data: JsonDict) -> int:
    """The ``schema_version`` of a raw document; MigrationError when absent or not an int."""
    if "schema_version" not in data:
        raise MigrationError(
            "missing: this is not an LLM Planner scenario file", field="schema_version"
        )
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise MigrationError(
            f"must be a whole number, not {type(version).__name__}", field="schema_version"
        )
    return version


def migrate(
    data: JsonDict,
    *,
    current: int = SCHEMA_VERSION,
    migrations: Sequence[Migration] = MIGRATIONS,
    app_version: str | None = None,
) -> JsonDict:
    """``data`` brought to schema ``current`` through each step in turn (input untouched).

    Raises :class:`NewerVersionError` for a version above ``current`` (the message says
    which app version wrote it when known) and :class:`MigrationError` naming the step
    and field when a step fails. Either way no partial result escapes.
    """
    version = document_version(data)
    if version > current:
        writer = data.get("app_version")
        by = (
            f" (written by llm-planner {writer[:40]})" if isinstance(writer, str) and writer else ""
        )
        mine = f" (llm-planner {app_version})" if app_version else ""
        raise NewerVersionError(
            f"version {version}{by} is newer than this app{mine} understands "
            f"(up to {current}); update LLM Planner to open it",
            field="schema_version",
        )
    if version < 0:
        raise MigrationError(f"{version} is not a valid version", field="schema_version")
    document = copy.deepcopy(data)
    for step in migrations[version:current]:
        try:
            result = step.apply(copy.deepcopy(document))
        except StepError as error:
            raise MigrationError(
                f"migration step {step.label} failed: {error.message}",
                field=error.field,
                step=step,
            ) from None
        except Exception as error:  # a bug in a step must still name the step
            raise MigrationError(
                f"migration step {step.label} failed: {type(error).__name__}: {error}",
                field="(document)",
                step=step,
            ) from None
        if not isinstance(result, dict) or result.get("schema_version") != step.to_version:
            raise MigrationError(
                f"migration step {step.label} did not produce a v{step.to_version} document",
                field="schema_version",
                step=step,
            )
        document = result
    return document
