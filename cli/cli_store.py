"""Command-line face of scenario files and the library (issue 6).

- ``report ... --save FILE`` writes the resulting scenario (file or default, options
  applied) so a script can create one; ``--name``/``--notes`` set its name and notes;
  ``--markdown`` / ``--csv`` print the report in those formats (``--json`` exists).
- ``list [--search TEXT] [--json]``: the local library.
- ``import FILE...``: copy scenario files into the library (validated, nothing overwritten).
- ``export NAME... --to DIR``: write library scenarios to a folder.
- ``trash [--empty] [--json]``: deleted scenarios; ``restore NAME``: put one back.

Invalid or foreign files exit with status 2 and one line per file naming file and field.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llm_planner.cli_common import EXIT_USAGE, UsageError

# ------------------------------------------------------------------ report options


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--save``, ``--name``, ``--notes``, ``--markdown``, ``--csv`` on ``report``."""
    group = parser.add_argument_group("scenario file and report formats")
    group.add_argument(
        "--save",
        metavar="FILE",
        help="write the resulting scenario to FILE (.llmplan.json), replacing it atomically",
    )
    group.add_argument("--name", metavar="TEXT", help="scenario name (with --save)")
    group.add_argument("--notes", metavar="TEXT", help="scenario notes (with --save)")
    fmt = group.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    fmt.add_argument("--csv", action="store_true", help="print the report as CSV (SI units)")


def named(scenario: Any, args: argparse.Namespace) -> Any:
    """``scenario`` with ``--name`` / ``--notes`` applied (validated like a file's)."""
    changes = {
        key: getattr(args, key) for key in ("name", "notes") if getattr(args, key, None) is not None
    }
    if not changes:
        return scenario
    from pydantic import ValidationError

    try:
        return type(scenario).model_validate({**scenario.model_dump(), **changes})
    except ValidationError as error:
        first = error.errors()[0]
        raise UsageError(f"argument --{first['loc'][0]}: {first['msg']}") from None


def shown(text: str, limit: int = 200) -> str:
    """Untrusted text (a name from a received file, a path) safe to print on a terminal:
    no control or bidi characters, at most ``limit`` characters."""
    from llm_planner.core.primitives.units import clean_text

    flat = clean_text(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def os_reason(error: OSError) -> str:
    """An OSError in a few words (``No space left on device``), never a traceback."""
    return str(error.strerror or type(error).__name__)


def save_to(scenario: Any, path_text: str) -> None:
    """``--save FILE`` for every command: one line and exit 2 for an empty name or a write
    that fails (full disk, read-only folder, not a regular file), a note on stderr when done."""
    from llm_planner.core.files.store import save_scenario_file

    if not path_text.strip():
        raise UsageError("argument --save: the file name is empty")
    path = Path(path_text)
    try:
        save_scenario_file(scenario, path)
    except OSError as error:
        raise UsageError(f"{shown(str(path))}: cannot write ({os_reason(error)})") from None
    sys.stderr.write(f"llm-planner: saved {shown(str(path))}\n")


def report_output(args: argparse.Namespace, scenario: Any, report: Any) -> bool:
    """Do ``--save``; print ``--markdown``/``--csv``. True when the report was printed."""
    from llm_planner.core.files.report_export import report_csv, report_markdown

    if getattr(args, "json", False) and (
        getattr(args, "markdown", False) or getattr(args, "csv", False)
    ):
        raise UsageError("argument --json: not allowed with --markdown or --csv")
    if getattr(args, "save", None) is not None:
        save_to(scenario, args.save)
    if getattr(args, "markdown", False):
        sys.stdout.write(report_markdown(report, scenario))
        return True
    if getattr(args, "csv", False):
        sys.stdout.write(report_csv(report))
        return True
    return False


# ------------------------------------------------------------------ commands


def cmd_list(args: argparse.Namespace) -> int:
    from llm_planner.core.files.library import Library

    library = Library()
    try:
        listing = library.listing()
    except OSError as error:  # an unreadable library folder (its own name in the reason)
        raise UsageError(
            f"{shown(str(library.folder))}: cannot list ({os_reason(error)})"
        ) from None
    entries = listing.entries
    if args.search:
        words = args.search.casefold().split()
        entries = [e for e in entries if all(w in f"{e.name}\n{e.notes}".casefold() for w in words)]
    for problem in listing.problems:
        sys.stderr.write(f"llm-planner: warning: {problem.message}\n")
    if args.json:
        rows = [
            {
                "key": e.key,
                "name": e.name,
                "path": str(e.path),
                "model": e.model,
                "gpu": e.gpu,
                "num_gpus": e.num_gpus,
                "created": e.created.isoformat(),
                "modified": e.modified.isoformat(),
            }
            for e in entries
        ]
        json.dump(rows, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not entries:
        print(f"(no scenarios in {library.folder})")
        return 0
    width = max(len(e.key) for e in entries)
    for e in entries:
        when = e.modified.strftime("%Y-%m-%d %H:%M")
        model, name = shown(e.model, 40), shown(e.name)
        print(f"{e.key:<{width}}  {when}  {e.num_gpus:>6} × {e.gpu:<12} {model:<16} {name}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from llm_planner.core.files.library import Library, LibraryError

    try:
        result = Library().import_files(Path(f) for f in args.files if f.strip())
    except (LibraryError, OSError) as error:
        reason = os_reason(error) if isinstance(error, OSError) else str(error)
        raise UsageError(f"cannot import into the library ({shown(reason)})") from None
    for source, saved in result.imported:
        print(f"imported {shown(str(source))} as {saved.key} ({shown(saved.scenario.name)})")
    for _, message in result.failed:
        sys.stderr.write(f"llm-planner: error: {shown(message, 400)}\n")
    if any(not f.strip() for f in args.files):
        sys.stderr.write("llm-planner: error: an empty file name was given\n")
        return EXIT_USAGE
    return EXIT_USAGE if result.failed else 0


def cmd_export(args: argparse.Namespace) -> int:
    from llm_planner.core.files.library import Library, LibraryError
    from llm_planner.core.files.store import ScenarioFileError

    library = Library()
    try:
        keys = [library.find(name) for name in args.names]
        folder = Path(args.to)
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"argument --to: {folder} is not a folder")
        written = library.export(keys, folder)
    except (LibraryError, ScenarioFileError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"{shown(args.to)}: cannot write ({os_reason(error)})") from None
    for path in written:
        print(path)
    return 0


def cmd_trash(args: argparse.Namespace) -> int:
    """List the library's trash (newest first), or empty it with ``--empty``."""
    from llm_planner.core.files.library import Library, LibraryError

    library = Library()
    try:
        if args.empty:
            from llm_planner.core.primitives.units import count_of

            print(f"deleted {count_of(library.purge_trash(), 'scenario')} for good")
            return 0
        items = library.trash()
    except LibraryError as error:
        raise UsageError(shown(str(error), 400)) from None
    except OSError as error:
        folder = shown(str(library.trash_folder))
        raise UsageError(f"{folder}: cannot read the trash ({os_reason(error)})") from None
    if args.json:
        rows = [
            {"id": i.id, "key": i.key, "name": i.name, "deleted": i.deleted.isoformat()}
            for i in items
        ]
        json.dump(rows, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not items:
        print("(the trash is empty)")
        return 0
    for i in items:
        print(f"{i.deleted.astimezone():%Y-%m-%d %H:%M}  {i.name}  [{i.id}]")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """Move a library scenario to the trash (``restore NAME`` puts it back)."""
    from llm_planner.core.files.library import Library, LibraryError

    library = Library()
    try:
        item = library.delete(library.find(args.name))
    except LibraryError as error:
        raise UsageError(shown(str(error), 400)) from None
    print(f"moved {item.name} to the trash (llm-planner restore {item.name!r} puts it back)")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Put a deleted scenario back: by trash id, or by name (the newest deletion of it)."""
    from llm_planner.core.files.library import Library, LibraryError

    library = Library()
    items = library.trash()
    chosen = [i for i in items if args.name == i.id] or [
        i for i in items if args.name.casefold() in (i.name.casefold(), i.key.casefold())
    ]
    if not chosen:
        raise UsageError(f"argument NAME: nothing called {args.name!r} in the trash")
    try:
        saved = library.restore(chosen[0].id)
    except LibraryError as error:
        raise UsageError(shown(str(error), 400)) from None
    print(f"restored {saved.scenario.name} as {saved.key}")
    return 0


def add_commands(commands: Any) -> None:
    """Add ``list``, ``import`` and ``export`` to the subcommand parser."""
    listing = commands.add_parser(
        "list",
        help="list the scenarios of the local library",
        description="List the scenarios saved in the local library. Unreadable files are "
        "reported and moved to the library's quarantine folder.",
    )
    listing.add_argument("--search", metavar="TEXT", help="only names/notes containing TEXT")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=cmd_list)

    importing = commands.add_parser(
        "import",
        help="copy scenario files into the library",
        description="Copy scenario files into the local library. Each file is validated "
        "(1 MB limit, strict schema); a name already in use gets a ' (2)' suffix; nothing "
        "is overwritten. Exit status 2 if any file was refused.",
    )
    importing.add_argument("files", nargs="+", metavar="FILE")
    importing.set_defaults(handler=cmd_import)

    exporting = commands.add_parser(
        "export",
        help="write library scenarios to a folder",
        description="Write library scenarios (by name or key) to a folder as "
        ".llmplan.json files; existing files are never overwritten.",
    )
    exporting.add_argument("names", nargs="+", metavar="NAME")
    exporting.add_argument("--to", required=True, metavar="DIR", help="destination folder")
    exporting.set_defaults(handler=cmd_export)

    trash = commands.add_parser(
        "trash",
        help="list deleted library scenarios (or empty the trash)",
        description="List the scenarios deleted from the library, newest first; "
        "`restore NAME` puts one back. --empty deletes them for good.",
    )
    trash.add_argument("--empty", action="store_true", help="delete everything in the trash")
    trash.add_argument("--json", action="store_true")
    trash.set_defaults(handler=cmd_trash)

    delete = commands.add_parser(
        "delete",
        help="move a library scenario to the trash",
        description="Move a library scenario (by name or key) to the trash; "
        "`restore NAME` puts it back.",
    )
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(handler=cmd_delete)

    restore = commands.add_parser(
        "restore",
        help="put a deleted scenario back into the library",
        description="Restore a deleted scenario by name (its newest deletion) or trash id; "
        "a name already in use gets a ' (2)' suffix.",
    )
    restore.add_argument("name", metavar="NAME")
    restore.set_defaults(handler=cmd_restore)
