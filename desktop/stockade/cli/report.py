"""`stockade report FILE -o OUT [--json]`: an HTML, PDF or Markdown report, or a CSV/JSON export."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from stockade.cli.common import (
    ExitCode,
    LoadFailure,
    UsageError,
    checked_output,
    display_path,
    existing_files,
    load_document,
    output_result,
    plural,
    print_result,
)


def add_parser(subparsers: Any) -> None:
    """Register the `report` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="write an HTML, PDF or Markdown report or a CSV/JSON export of a .thf file",
        description=(
            "Write a report of FILE to OUT. The format follows the suffix of OUT: "
            ".html (standalone report), .pdf (printable report), .md (Markdown for pull "
            "requests and wikis), .csv (one row per threat) or .json."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .thf file")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="OUT.html, OUT.pdf, OUT.md, OUT.csv or OUT.json",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render the report the output suffix names and write it atomically."""
    from stockade.report.files import ReportFormat, format_for_path, write_report
    from stockade.report.summary import summarize

    output = Path(args.output)
    fmt = format_for_path(output)
    if fmt is None:
        shown_suffix = output.suffix or "(none)"
        raise UsageError(
            f"report: unsupported output format {shown_suffix}: name the output .html, .pdf, "
            ".md, .csv or .json"
        )
    checked_output(args.output, "report")
    (path,) = existing_files([args.file], "report")
    result = output_result(path, output, fmt.value)
    outcome = load_document(path)
    if isinstance(outcome, LoadFailure):
        result["error"] = outcome.to_json()
        print_result(args.json, result, f"{display_path(path)}: {outcome.code}: {outcome.message}")
        return ExitCode.FAILED
    try:
        if fmt is ReportFormat.PDF:
            _write_pdf(outcome, output)
        else:
            write_report(outcome, output)
    except _PdfUnavailable as err:
        result["error"] = {"code": "pdf_unavailable", "message": str(err)}
        print_result(args.json, result, f"{display_path(output)}: not written: {err}")
        return ExitCode.FAILED
    except OSError as err:
        reason = err.strerror or type(err).__name__
        result["error"] = {
            "code": "write_failed",
            "message": f"The report could not be written: {reason}.",
        }
        print_result(args.json, result, f"{display_path(output)}: not written: {reason}")
        return ExitCode.FAILED
    summary = summarize(outcome)
    result["ok"] = True
    result["counts"] = {
        "elements": summary.elements,
        "data_flows": summary.data_flows,
        "trust_boundaries": summary.trust_boundaries,
        "threats": summary.threats,
        "unmitigated_critical_high": len(summary.open_critical_high),
    }
    print_result(
        args.json,
        result,
        f"wrote {display_path(output)} ({fmt.value}: {plural(summary.elements, 'element')}, "
        f"{plural(summary.data_flows, 'flow')}, {plural(summary.threats, 'threat')})",
    )
    return ExitCode.OK


class _PdfUnavailable(Exception):
    """This build has no Qt, which draws PDF reports."""


def _write_pdf(model: Any, output: Path) -> None:
    # Imported only for PDF, the way the app is: every other report works without Qt.
    try:
        pdf_report = importlib.import_module("stockade.ui.export.pdf_report")
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith(("PySide6", "stockade.ui")):
            raise
        raise _PdfUnavailable(
            f"PDF reports need Qt, which this build lacks (missing module {err.name})"
        ) from None
    pdf_report.write_pdf(model, output)
