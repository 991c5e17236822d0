"""`stockade import SOURCE -o OUT.thf [--format auto|tm7|threat-dragon|otm|pytm] [--json]`.

Exit 0 when OUT was written, 1 when the source cannot be imported (one line naming the detected
format and what is wrong; OUT is left untouched), 2 for usage errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from stockade.cli.common import (
    ExitCode,
    UsageError,
    checked_output,
    display_path,
    existing_files,
    plural,
    print_error,
    print_json,
)

FORMAT_CHOICES = ("auto", "tm7", "threat-dragon", "otm", "pytm")


def add_parser(subparsers: Any) -> None:
    """Register the `import` subcommand."""
    parser = subparsers.add_parser(
        "import",
        help="import a TM7, Threat Dragon, OTM or pytm model as a .thf file",
        description=(
            "Read SOURCE (a Microsoft Threat Modeling Tool .tm7 file, an OWASP Threat Dragon "
            "JSON model, an Open Threat Model JSON or YAML file, or pytm --json output) and "
            "write it as the .thf threat model OUT. Every lossy choice is reported as a warning."
        ),
    )
    parser.add_argument("source", metavar="SOURCE", help="the model to import")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.thf", help="the .thf to write"
    )
    parser.add_argument(
        "--format",
        choices=FORMAT_CHOICES,
        default="auto",
        help="the source format (default: detect it from the content)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Import SOURCE and write OUT atomically; report counts and warnings."""
    from stockade.importers.convert import import_file
    from stockade.importers.result import ImportFailure, SourceFormat
    from stockade.thf.errors import SaveError
    from stockade.thf.writer import save

    (source,) = existing_files([args.source], "import")
    if Path(args.output).suffix.lower() != ".thf":
        raise UsageError(f"import: name the output .thf: {args.output}")
    output = checked_output(args.output, "import")
    if output.resolve() == source.resolve():
        raise UsageError("import: the output would overwrite the source")
    fmt = None if args.format == "auto" else SourceFormat(args.format)
    result: dict[str, Any] = {
        "source": display_path(source),
        "format": fmt.value if fmt else None,
        "output": display_path(output),
        "ok": False,
    }
    try:
        imported = import_file(source, fmt)
    except ImportFailure as err:
        result["format"] = err.format.value if err.format else result["format"]
        result["error"] = {"code": "import_failed", "message": err.message}
        return _fail(args, result, f"import: {display_path(source)}: {err.message}")
    try:
        save(imported.model, output)
    except SaveError as err:
        result["format"] = imported.format.value
        result["error"] = {"code": "save_failed", "message": err.message}
        return _fail(args, result, f"import: {err.message}")
    counts = imported.counts()
    result.update(
        {
            "format": imported.format.value,
            "version": imported.version,
            "ok": True,
            "counts": counts,
            "warnings": [w.to_json() for w in imported.warnings],
        }
    )
    if args.json:
        print_json(result)
        return ExitCode.OK
    from stockade.importers.result import FORMAT_NAMES

    version = f" {imported.version}" if imported.version else ""
    print(
        f"imported {display_path(source)} ({FORMAT_NAMES[imported.format]}{version}) into "
        f"{display_path(output)}: {plural(counts['elements'], 'element')}, "
        f"{plural(counts['data_flows'], 'flow')}, "
        f"{plural(counts['trust_boundaries'], 'trust boundary').replace('boundarys', 'boundaries')}, "
        f"{plural(counts['threats'], 'threat')}; {plural(len(imported.warnings), 'warning')}"
    )
    for warning in imported.warnings:
        print(f"  warning: {warning.code}: {warning.message}")
    return ExitCode.OK


def _fail(args: argparse.Namespace, result: dict[str, Any], line: str) -> int:
    if args.json:
        print_json(result)
    else:
        print_error(line)
    return ExitCode.FAILED
