"""`stockade validate FILE... [--json]`: check that `.thf` files open, one verdict per file."""

from __future__ import annotations

import argparse
from typing import Any

from stockade.cli.common import (
    ExitCode,
    LoadFailure,
    display_path,
    existing_files,
    load_document,
    plural,
    print_json,
)


def add_parser(subparsers: Any) -> None:
    """Register the `validate` subcommand."""
    parser = subparsers.add_parser(
        "validate",
        help="check that .thf files are valid threat models",
        description=(
            "Read and validate each FILE. Exit 0 when all are valid, 1 when any is invalid."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a .thf file")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate every file; print one line (or one JSON entry) per file."""
    paths = existing_files(args.files, "validate")
    results: list[dict[str, Any]] = []
    all_ok = True
    for path in paths:
        shown = display_path(path)
        outcome = load_document(path)
        if isinstance(outcome, LoadFailure):
            all_ok = False
            results.append({"path": shown, "ok": False, "error": outcome.to_json()})
            line = f"{shown}: {outcome.code}: {outcome.message}"
        else:
            results.append({"path": shown, "ok": True, "error": None})
            counts = ", ".join(
                plural(len(items), noun)
                for items, noun in (
                    (outcome.elements, "element"),
                    (outcome.data_flows, "flow"),
                    (outcome.threats, "threat"),
                )
            )
            line = f"{shown}: ok ({counts})"
        if not args.json:
            print(line, flush=True)
    if args.json:
        print_json(results)
    return ExitCode.OK if all_ok else ExitCode.FAILED
