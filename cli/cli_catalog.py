"""``presets`` (the model and GPU catalogs) and ``model`` (one architecture and its exact
parameter breakdown, from a preset or a local Hugging Face folder)."""

from __future__ import annotations

import argparse
from typing import Any

from llm_planner.cli_common import print_json
from llm_planner.cli_scenario import import_model_arg, resolve_model
from llm_planner.core.primitives import units


def cmd_presets(args: argparse.Namespace) -> int:
    from llm_planner.core.primitives.architecture import count_parameters
    from llm_planner.core.primitives.gpus import gpu_catalog
    from llm_planner.core.primitives.presets import model_presets

    if args.kind == "models":
        rows: list[dict[str, Any]] = []
        for preset in model_presets().values():
            counts = count_parameters(preset.architecture)
            rows.append(
                {
                    "id": preset.id,
                    "name": preset.architecture.name,
                    "params_total": counts.total,
                    "params_active": counts.active,
                    "source": preset.source,
                }
            )
        if args.json:
            print_json(rows)
        else:
            for row in rows:
                print(
                    f"{row['id']:<16} {row['name']:<20} "
                    f"{units.format_count(row['params_total']):>7}"
                    f"  (active {units.format_count(row['params_active'])})"
                )
        return 0
    gpus = list(gpu_catalog().values())
    if args.json:
        print_json([gpu.model_dump(mode="json") for gpu in gpus])
    else:
        width = max(len(gpu.name) for gpu in gpus)
        for gpu in gpus:
            bf16 = gpu.peak_flops.for_dtype("bf16")
            peak = units.format_flops_rate(bf16) if bf16 else "—"
            sustained = (
                f"  (sustains {gpu.tensor_rate_fraction:.1%} of it in measured runs)"
                if gpu.sustained_tensor_fraction is not None
                else ""
            )
            print(
                f"{gpu.id:<16} {gpu.name:<{width}} {units.format_gb(gpu.memory_bytes):>8}"
                f"  {gpu.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s  bf16 {peak:>14}"
                f"{sustained}"
            )
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    from llm_planner.core.primitives.architecture import count_parameters

    preset, arch = resolve_model(args.model, "argument ID_OR_PATH")
    counts = count_parameters(arch)
    row: dict[str, Any] = {
        "id": preset or arch.name,
        "name": arch.name,
        "params_total": counts.total,
        "params_active": counts.active,
        "params_active_compute": counts.active_compute,
        "layers": arch.layers,
        "hidden_size": arch.hidden_size,
        "heads": arch.heads,
        "kv_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "ffn_size": arch.ffn_size,
        "ffn_kind": arch.ffn_kind,
        "vocab_size": arch.vocab_size,
        "max_context": arch.max_context,
        "breakdown": counts.model_dump(mode="json"),
        "architecture": arch.model_dump(mode="json"),
    }
    if preset is None:  # a local config.json / folder: what its safetensors headers say
        imported = import_model_arg(args.model, "argument ID_OR_PATH")
        row["model_type"] = imported.model_type
        row["params_safetensors"] = imported.safetensors_params
        row["safetensors_dtype"] = imported.safetensors_dtype
        row["params_file"] = imported.file_params
        row["weights_format"] = imported.weights_format
        row["weights_bytes"] = imported.weights_bytes
        row["import_notes"] = list(imported.notes)
        row["import_warnings"] = list(imported.warnings)
    if args.json:
        print_json(row)
        return 0
    print(f"{arch.name}  ({row['id']})")
    shape = (
        f"  layers {arch.layers}, hidden {arch.hidden_size}, heads {arch.heads} "
        f"(kv {arch.kv_heads}, head dim {arch.head_dim}), FFN {arch.ffn_size} {arch.ffn_kind}, "
        f"vocab {arch.vocab_size}, context {arch.max_context}"
    )
    print(shape)
    if arch.moe is not None:
        moe = arch.moe
        print(
            f"  MoE: {moe.num_experts} experts of {moe.expert_ffn_size}, "
            f"top-{moe.experts_per_token}"
            f", {moe.num_shared_experts} shared, {moe.first_dense_layers} dense layers first"
        )
    print(f"  parameters: {counts.total:,} total, {counts.active:,} active per token")
    if row.get("params_safetensors") is not None:
        print(
            f"  safetensors: {row['params_safetensors']:,} parameters stored "
            f"as {row['safetensors_dtype']}"
        )
    if row.get("params_file") is not None:
        print(f"  file: {row['params_file']:,} parameters stored")
    if row.get("weights_bytes") is not None:
        print(f"  weights: {row['weights_format']}, {units.format_gb(row['weights_bytes'])}")
    for note in row.get("import_notes", []) + row.get("import_warnings", []):
        print(f"  note: {note}")
    for name in (
        "embedding",
        "positions",
        "attention",
        "recurrent",
        "mlp",
        "experts",
        "shared_experts",
        "router",
        "per_layer_inputs",
        "norms",
        "head",
    ):
        value = getattr(counts, name)
        if value:
            print(f"    {name:<15} {value:>18,}  {100 * value / counts.total:5.1f}%")
    return 0


def add_commands(commands: Any) -> None:
    """Add ``presets`` and ``model`` to the subcommand parser."""
    presets = commands.add_parser(
        "presets",
        help="list the model or GPU catalog",
        description="List the model presets or the GPU catalog.",
    )
    presets.add_argument("kind", choices=["models", "gpus"])
    presets.add_argument("--json", action="store_true")
    presets.set_defaults(handler=cmd_presets)

    model = commands.add_parser(
        "model",
        help="print an architecture and its parameters",
        description="Print a model's architecture and its exact parameter breakdown.",
    )
    model.add_argument(
        "model", metavar="ID_OR_PATH", help="preset id, or a local config.json / model folder"
    )
    model.add_argument("--json", action="store_true")
    model.set_defaults(handler=cmd_model)
