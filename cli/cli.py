"""The command line: the headless face of ``core``.

``llm-planner`` opens the window (or, with no display, says so and prints the default
scenario's report); ``llm-planner FILE`` opens the window on a scenario file; the
subcommands print what the window shows. Options and JSON keys are a contract: scripts
depend on them. Bad arguments exit with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence

from llm_planner import (
    __version__,
    cli_calibrate,
    cli_catalog,
    cli_compare,
    cli_launch,
    cli_search,
    cli_serve_plan,
    cli_store,
    cli_whatif,
)
from llm_planner.cli_common import EXIT_USAGE, Parser, UsageError, format_report_text, print_json
from llm_planner.cli_scenario import add_scenario_options, build_scenario
from llm_planner.cli_window import QT_PROBE_FLAG, cmd_window, qt_probe

COMMAND_GROUPS = (
    cli_catalog,
    cli_search,
    cli_serve_plan,
    cli_store,
    cli_compare,
    cli_whatif,
    cli_calibrate,
    cli_launch,
)
"""Modules that add subcommands (each exposes ``add_commands(commands)``)."""

COMMANDS_OF_GROUP: dict[str, tuple[str, ...]] = {
    "llm_planner.cli_catalog": ("presets", "model"),
    "llm_planner.cli_search": ("search",),
    "llm_planner.cli_serve_plan": ("serve-plan",),
    "llm_planner.cli_store": ("list", "import", "export", "trash", "delete", "restore"),
    "llm_planner.cli_compare": ("compare", "hardware", "sensitivity", "prices"),
    "llm_planner.cli_whatif": ("whatif",),
    "llm_planner.cli_calibrate": ("calibrate",),
    "llm_planner.cli_launch": ("export-config", "import-config", "check"),
}
"""The subcommands each group adds (tests/cli/test_cli_foundation.py checks it against the
groups' own ``add_commands``): a command line naming one command builds that command's
group alone, since every group's scenario options (~100 each) were most of the parser's
time."""

COMMAND_NAMES = ("report", *(name for names in COMMANDS_OF_GROUP.values() for name in names))


def cmd_report(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.estimate import estimate, report_json

    scenario = cli_store.named(build_scenario(args), args)
    report = estimate(scenario)
    if cli_store.report_output(args, scenario, report):  # --save, --markdown, --csv
        return 0
    if args.json:
        print_json(report_json(report))  # with ``whatif`` when the scenario plans one
    else:
        sys.stdout.write(format_report_text(report))
        if report.whatif is not None:
            sys.stdout.write("\nWhat if\n-------\n" + cli_whatif.format_whatif_text(report.whatif))
    return 0


# ------------------------------------------------------------------ parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``command`` (one of :data:`COMMAND_NAMES`),
    only the subcommands of the group that holds it besides ``report`` (the same options
    for that command, built in a fraction of the time)."""
    parser = Parser(
        prog="llm-planner",
        description=(
            "Plan a large-model training or inference run offline: compute, time, cost, "
            "memory and parallel layout. With no command, opens the window."
        ),
        epilog="Run `llm-planner COMMAND --help` for a command's options. "
        "`llm-planner FILE` opens the window on a scenario file.",
    )
    parser.add_argument("--version", action="version", version=f"llm-planner {__version__}")
    parser.add_argument(
        "--smoke-test",
        action="store_true",
        help="open the window, visit every tab, change an input, exit 0",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    report = commands.add_parser(
        "report",
        help="print every figure of all tabs",
        description="Print every figure the window shows for a "
        "scenario (a file or the built-in default) with options applied.",
    )
    report.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    report.add_argument(
        "--json", action="store_true", help="one JSON object, values in SI base units"
    )
    add_scenario_options(report)
    cli_store.add_output_options(report)
    report.set_defaults(handler=cmd_report)

    for group in COMMAND_GROUPS:
        names = COMMANDS_OF_GROUP.get(group.__name__)  # a group not listed: always built
        if command is None or names is None or command in names:
            group.add_commands(commands)
    parser.set_defaults(command_names=tuple(commands.choices))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``llm-planner``. Returns the exit status.

    Without ``argv`` (the program itself: the console script, ``python -m llm_planner``, the
    frozen bundle), the process exits next, so every object is frozen on the way out:
    the interpreter's exit then skips the full garbage collection over everything the
    imports made (pydantic's model classes, numpy), about 0.03 s of a ``report``'s 0.26 s.
    """
    if argv is not None:
        return _main(list(argv))
    # the command's modules (estimate's ~100, their pydantic models and dataclasses) load
    # next: ~70,000 allocations that the default threshold (700) would stop ~100 times for
    # a collection that finds nothing; a long command still collects (the window restores
    # the default: cli_window.cmd_window)
    gc.set_threshold(STARTUP_GC_THRESHOLD, *gc.get_threshold()[1:])
    try:
        return _main(sys.argv[1:])
    finally:
        gc.freeze()


STARTUP_GC_THRESHOLD = 50_000
"""Allocations between two young-generation collections while a command runs."""


def _main(argv: list[str]) -> int:
    if argv == [QT_PROBE_FLAG]:
        return qt_probe()
    first = argv[0] if argv else None
    alone = first in COMMAND_NAMES
    parser = build_parser(first if alone else None)
    known = set(COMMAND_NAMES) if alone else set(parser.get_default("command_names"))
    try:
        # `llm-planner FILE` (a path, not a command): open the window on that file
        positional = [a for a in argv if not a.startswith("-")]
        if positional and positional[0] not in known and argv and argv[0] == positional[0]:
            return cmd_window(positional[0], smoke_test="--smoke-test" in argv)
        args = parser.parse_args(argv)
        if args.command is None:
            return cmd_window(None, smoke_test=args.smoke_test)
        return int(args.handler(args))
    except UsageError as error:
        # a message may quote what the user typed or a file holds (a path with ESC or a
        # bidi override): printed without control or format characters, on one line
        from llm_planner.core.primitives.units import clean_text

        sys.stderr.write(f"llm-planner: error: {clean_text(str(error))}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # `llm-planner report | head`
        return 0


def gui_main() -> int:
    """Entry point for launchers (no console): always tries the window."""
    return cmd_window(sys.argv[1] if len(sys.argv) > 1 else None)
