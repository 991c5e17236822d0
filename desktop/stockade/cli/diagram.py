"""`stockade diagram FILE -o OUT.svg|.png [--json]`: write the data-flow diagram as an image."""

from __future__ import annotations

import argparse
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

DIAGRAM_SUFFIXES = (".svg", ".png")


def add_parser(subparsers: Any) -> None:
    """Register the `diagram` subcommand."""
    parser = subparsers.add_parser(
        "diagram",
        help="write the data-flow diagram of a .thf file as SVG or PNG",
        description=(
            "Write the data-flow diagram of FILE to OUT, with a legend and threat badges. "
            "The format follows the suffix of OUT: .svg or .png. Elements without a stored "
            "position are placed automatically."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .thf file")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="OUT.svg or OUT.png")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render the diagram and write it atomically in the format the suffix names."""
    from stockade.report.diagram_svg import render_diagram_svg
    from stockade.report.files import atomic_write_bytes, atomic_write_text

    output = Path(args.output)
    suffix = output.suffix.lower()
    if suffix not in DIAGRAM_SUFFIXES:
        raise UsageError(
            f"diagram: unsupported output format {output.suffix or '(none)'}: name the output "
            ".svg or .png"
        )
    checked_output(args.output, "diagram")
    (path,) = existing_files([args.file], "diagram")
    result = output_result(path, output, suffix.lstrip("."))
    model = load_document(path)
    if isinstance(model, LoadFailure):
        result["error"] = model.to_json()
        print_result(args.json, result, f"{display_path(path)}: {model.code}: {model.message}")
        return ExitCode.FAILED
    svg = render_diagram_svg(model)
    if svg is None:
        result["error"] = {"code": "empty", "message": "The model has no elements or boundaries to draw."}
        print_result(args.json, result, f"{display_path(path)}: nothing to draw (no elements or boundaries)")
        return ExitCode.FAILED
    try:
        if suffix == ".svg":
            atomic_write_text(output, svg)
        else:
            # Qt is imported only for PNG, as `stockade FILE` imports it only for the app.
            from stockade.ui.export.diagram_image import DiagramImageError, svg_to_png

            try:
                atomic_write_bytes(output, svg_to_png(svg))
            except DiagramImageError as err:
                result["error"] = {"code": "render_failed", "message": f"The diagram could not be rendered: {err}."}
                print_result(args.json, result, f"{display_path(output)}: not written: {err}")
                return ExitCode.FAILED
    except OSError as err:
        reason = err.strerror or type(err).__name__
        result["error"] = {"code": "write_failed", "message": f"The diagram could not be written: {reason}."}
        print_result(args.json, result, f"{display_path(output)}: not written: {reason}")
        return ExitCode.FAILED
    result["ok"] = True
    result["counts"] = {"elements": len(model.elements), "data_flows": len(model.data_flows)}
    print_result(
        args.json, result,
        f"wrote {display_path(output)} ({plural(len(model.elements), 'element')}, "
        f"{plural(len(model.data_flows), 'flow')})",
    )
    return ExitCode.OK
