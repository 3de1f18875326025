"""``llm-planner whatif [FILE] [options] [--json]``: the seed's open problems on a scenario —
a mixed cluster (``--cluster``), RL in the loop (``--rl``), multimodal placement
(``--encoder-params``) and compressed communication (``--compress``). Options write the
scenario's ``whatif`` inputs (``--save`` keeps them); parts the file already plans run too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llm_planner.cli_common import BYTES, COUNT, INT, LENGTH, UsageError, print_json
from llm_planner.cli_scenario import add_scenario_options, build_scenario
from llm_planner.cli_store import save_to

COMM_KINDS = ("data_parallel", "tensor_parallel", "pipeline_p2p", "expert_all_to_all")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The what-if options (each part is planned only when one of its options is given)."""
    mixed = parser.add_argument_group("mixed cluster")
    mixed.add_argument(
        "--cluster", metavar="ID", help="a cluster preset (summit, frontier, h100-400g, ...)"
    )
    rl = parser.add_argument_group("RL in the loop")
    rl.add_argument("--rl", action="store_true", help="plan rollouts + training")
    rl.add_argument("--rl-gpus", type=LENGTH, metavar="N", help="GPUs for the whole loop")
    rl.add_argument("--prompts", type=INT, metavar="N", help="prompts per RL step")
    rl.add_argument("--samples", type=INT, metavar="N", help="responses per prompt")
    rl.add_argument("--prompt-tokens", type=LENGTH, metavar="N")
    rl.add_argument("--response-tokens", type=LENGTH, metavar="N")
    rl.add_argument("--engine-gpus", type=INT, metavar="N", help="GPUs of one inference engine")
    rl.add_argument("--colocated", action="store_true", help="rollout and training share GPUs")
    rl.add_argument("--overlap", action="store_true", help="next rollout during training")
    mm = parser.add_argument_group("multimodal placement")
    mm.add_argument("--encoder-params", type=COUNT, metavar="N", help="encoder parameters")
    mm.add_argument("--tokens-per-image", type=INT, metavar="N")
    mm.add_argument("--images-per-sequence", type=float, metavar="X")
    mm.add_argument("--frozen-encoder", action="store_true")
    comp = parser.add_argument_group("compressed communication")
    comp.add_argument("--compress", choices=COMM_KINDS, help="the collective to compress")
    comp.add_argument("--ratio", type=float, metavar="R", help="compression ratio (≥ 1)")
    comp.add_argument(
        "--kernel-rate", type=BYTES, metavar="BYTES_PER_S", help="compress+decompress per GPU"
    )
    parser.add_argument("--save", metavar="FILE", help="write the scenario with its what-ifs")


def _part(current: Any, updates: dict[str, Any], model: Any, path: str) -> Any:
    """The what-if part at ``path`` (``rl``, ``multimodal``…) with the options given; a
    refusal names the field by its scenario path, so the range quoted is the part's own
    (RL's num_gpus is not the scenario's)."""
    from pydantic import ValidationError

    from llm_planner.core.primitives.limits import describe_error

    given = {k: v for k, v in updates.items() if v is not None}
    base = current.model_dump() if current is not None else {}
    try:
        return model.model_validate({**base, **given})
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field, detail = describe_error({**first, "loc": ("whatif", path, *first["loc"])})
        raise UsageError(f"{field}: {detail}") from None


def apply_options(scenario: Any, args: argparse.Namespace) -> Any:
    """``scenario`` with the what-if options written into ``scenario.whatif``."""

    from llm_planner.core.composition.whatif.mixed import preset_cluster
    from llm_planner.core.inputs.whatif import (
        CompressionInputs,
        MultimodalInputs,
        RLInputs,
    )

    w = scenario.whatif
    changes: dict[str, Any] = {}
    if args.cluster:
        try:
            changes["mixed_cluster"] = preset_cluster(args.cluster)
        except KeyError as error:
            raise UsageError(f"argument --cluster: {error.args[0]}") from None
    rl_values = {
        "num_gpus": args.rl_gpus,
        "prompts_per_step": args.prompts,
        "samples_per_prompt": args.samples,
        "prompt_tokens": args.prompt_tokens,
        "response_tokens": args.response_tokens,
        "engine_gpus": args.engine_gpus,
        "placement": "colocated" if args.colocated else None,
        "overlap": True if args.overlap else None,
    }
    if args.rl or any(v is not None for v in rl_values.values()):
        changes["rl"] = _part(w.rl, rl_values, RLInputs, "rl")
    mm_values = {
        "encoder_params": args.encoder_params,
        "tokens_per_image": args.tokens_per_image,
        "images_per_sequence": args.images_per_sequence,
        "encoder_trained": False if args.frozen_encoder else None,
    }
    if any(v is not None for v in mm_values.values()):
        changes["multimodal"] = _part(w.multimodal, mm_values, MultimodalInputs, "multimodal")
    comp_values = {
        "kind": args.compress,
        "ratio": args.ratio,
        "kernel_bytes_per_s": args.kernel_rate,
    }
    if any(v is not None for v in comp_values.values()):
        changes["compression"] = _part(w.compression, comp_values, CompressionInputs, "compression")
    if not changes:
        return scenario
    return scenario.model_copy(update={"whatif": w.model_copy(update=changes)})


def format_whatif_text(whatif: Any) -> str:
    """The planned parts' figures, one aligned line each (as ``report`` prints sections)."""
    figures = whatif.figures()
    width = max((len(f.label) for f in figures), default=0)
    return "".join(f"  {f.label:<{width}}  {f.text()}\n" for f in figures)


def cmd_whatif(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.whatif.report import whatif_json

    scenario = apply_options(build_scenario(args), args)
    if not scenario.whatif.any:
        raise UsageError(
            "nothing to plan: give --cluster, --rl, --encoder-params or --compress "
            "(or a scenario file that plans one)"
        )
    if args.save is not None:
        save_to(scenario, args.save)
    whatif = estimate(scenario).whatif  # priced by estimate() since the scenario plans one
    if whatif is None:
        raise UsageError("nothing to plan")
    if args.json:
        print_json(whatif_json(whatif))
    else:
        sys.stdout.write(format_whatif_text(whatif))
    return 0


def add_commands(commands: Any) -> None:
    """Add ``whatif``."""
    parser = commands.add_parser(
        "whatif",
        help="mixed clusters, RL in the loop, multimodal placement, compressed communication",
        description="Plan the seed's open problems on a scenario: a cluster of mixed node "
        "groups, the split of GPUs between RL rollouts and training, where a vision encoder "
        "runs, and compressing one kind of collective.",
    )
    parser.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    parser.add_argument("--json", action="store_true", help="one JSON object, SI units")
    add_options(parser)
    add_scenario_options(parser)
    parser.set_defaults(handler=cmd_whatif)
