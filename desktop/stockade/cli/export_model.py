"""`stockade export FILE.thf -o OUT --format otm|threat-dragon [--json]`: write another tool's file.

Importing the export gives the same counts of elements, flows, boundaries and threats.
"""

from __future__ import annotations

import argparse
from typing import Any

from stockade.cli.common import (
    ExitCode,
    LoadFailure,
    checked_output,
    display_path,
    existing_files,
    load_document,
    plural,
    print_error,
    print_json,
)


def add_parser(subparsers: Any) -> None:
    """Register the `export` subcommand."""
    parser = subparsers.add_parser(
        "export",
        help="export a .thf file as OTM or Threat Dragon JSON",
        description=(
            "Write FILE as an Open Threat Model (OTM 0.2) JSON file or an OWASP Threat Dragon "
            "(version 2) JSON model."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .thf file")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="the file to write")
    parser.add_argument(
        "--format", required=True, choices=("otm", "threat-dragon"), help="the format to write"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render the export and write it atomically."""
    from stockade.importers.result import model_counts
    from stockade.report.files import atomic_write_text

    (path,) = existing_files([args.file], "export")
    output = checked_output(args.output, "export")
    result: dict[str, Any] = {
        "path": display_path(path),
        "output": display_path(output),
        "format": args.format,
        "ok": False,
    }
    outcome = load_document(path)
    if isinstance(outcome, LoadFailure):
        result["error"] = outcome.to_json()
        return _fail(args, result, f"{display_path(path)}: {outcome.code}: {outcome.message}")
    if args.format == "otm":
        from stockade.importers.otm import export_otm

        text = export_otm(outcome)
    else:
        from stockade.importers.threat_dragon import export_threat_dragon

        text = export_threat_dragon(outcome)
    try:
        atomic_write_text(output, text)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        result["error"] = {
            "code": "write_failed",
            "message": f"The file could not be written: {reason}.",
        }
        return _fail(args, result, f"{display_path(output)}: not written: {reason}")
    counts = model_counts(outcome)
    result.update({"ok": True, "counts": counts})
    if args.json:
        print_json(result)
    else:
        print(
            f"wrote {display_path(output)} ({args.format}: {plural(counts['elements'], 'element')}, "
            f"{plural(counts['data_flows'], 'flow')}, {plural(counts['threats'], 'threat')})"
        )
    return ExitCode.OK


def _fail(args: argparse.Namespace, result: dict[str, Any], line: str) -> int:
    if args.json:
        print_json(result)
    else:
        print_error(line)
    return ExitCode.FAILED
