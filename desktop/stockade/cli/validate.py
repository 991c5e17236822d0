"""`stockade validate FILE... [--strict] [--json]`: check that `.thf` files open, one verdict each.

Besides errors it reports compatibility warnings: what the file holds that ThreatForge's desktop
app would refuse although Stockade reads it (docs/formats.md lists them). Warnings leave the exit
code 0 unless `--strict` is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stockade.cli.common import (
    FOREIGN_FORMAT_CODE,
    ExitCode,
    LoadFailure,
    _foreign_hint,
    display_path,
    existing_files,
    plural,
    print_json,
)

if TYPE_CHECKING:
    from stockade.thf.reader import FileCheck


def add_parser(subparsers: Any) -> None:
    """Register the `validate` subcommand."""
    parser = subparsers.add_parser(
        "validate",
        help="check that .thf files are valid threat models",
        description=(
            "Read and validate each FILE. Exit 0 when all are valid, 1 when any is invalid "
            "(or, with --strict, has a compatibility warning)."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a .thf file")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail on compatibility warnings too (what ThreatForge's desktop app would refuse)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate every file; print one line (or one JSON entry) per file."""
    paths = existing_files(args.files, "validate")
    results: list[dict[str, Any]] = []
    all_ok = True
    for path in paths:
        shown = display_path(path)
        outcome = _check(path)
        lines: list[str] = []
        if isinstance(outcome, LoadFailure):
            all_ok = False
            results.append({"path": shown, "ok": False, "error": outcome.to_json(), "warnings": []})
            lines.append(f"{shown}: {outcome.code}: {outcome.message}")
            if outcome.hint:
                lines.append(f"{shown}: hint: {outcome.hint}")
        else:
            sizes, warnings = outcome.counts, outcome.warnings
            failed = args.strict and bool(warnings)
            all_ok = all_ok and not failed
            results.append(
                {
                    "path": shown,
                    "ok": not failed,
                    "error": None,
                    "warnings": [w.to_json() for w in warnings],
                }
            )
            counts = ", ".join(
                plural(sizes[section], noun)
                for section, noun in (
                    ("elements", "element"),
                    ("data_flows", "flow"),
                    ("threats", "threat"),
                )
            )
            verdict = "fails --strict" if failed else "ok"
            extra = f"; {plural(len(warnings), 'compatibility warning')}" if warnings else ""
            lines.append(f"{shown}: {verdict} ({counts}{extra})")
            lines.extend(f"{shown}: warning: {w.code.value}: {w.message}" for w in warnings)
        if not args.json:
            for line in lines:
                print(line, flush=True)
    if args.json:
        print_json(results)
    return ExitCode.OK if all_ok else ExitCode.FAILED


def _check(path: Path) -> FileCheck | LoadFailure:
    """Whether one file opens, as `load_document_with_warnings` decides, without building the
    document when its data is plainly valid (`stockade.thf.check`): most of this command's
    start-up is otherwise importing pydantic and building the document models' validators."""
    from stockade.thf.errors import ThfError
    from stockade.thf.reader import check_file_with_warnings

    try:
        return check_file_with_warnings(path)
    except ThfError as err:
        foreign = _foreign_hint(path)
        if foreign is not None:
            return LoadFailure(code=FOREIGN_FORMAT_CODE, message=foreign)
        return LoadFailure(**err.to_json())
