"""Opening, importing, saving and exporting documents off the UI thread, in plain words."""

from __future__ import annotations

import asyncio
import errno
import logging
from dataclasses import dataclass
from pathlib import Path

from stockade.importers.result import ImportFailure, ImportResult
from stockade.thf.errors import SaveError, ThfError, ThfErrorCode
from stockade.thf.model import ThreatModel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileProblem:
    """Why a file operation did not happen, ready to show: a title and one or two sentences."""

    title: str
    message: str


_CODE_HINTS: dict[ThfErrorCode, str] = {
    ThfErrorCode.PARSE: "It is not readable as a threat model",
    ThfErrorCode.MISSING_SECTION: "A required part of the document is missing",
    ThfErrorCode.INVALID_FIELD: "A field holds a value the format does not allow",
    ThfErrorCode.UNSUPPORTED_VERSION: "It was written in a format version Stockade does not read",
    ThfErrorCode.DUPLICATE_ID: "Two entries share one id",
    ThfErrorCode.INVALID_REFERENCE: "An entry refers to something that does not exist",
    ThfErrorCode.CIRCULAR_GROUP_NESTING: "Groups are nested inside each other in a circle",
}


def _os_reason(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "the file or its folder does not exist"
    if isinstance(err, IsADirectoryError):
        return "that is a folder, not a file"
    if isinstance(err, PermissionError) or err.errno in (errno.EACCES, errno.EPERM):
        return "Stockade is not allowed to use that location"
    if err.errno == errno.EROFS:
        return "the location is read-only"
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return err.strerror.lower() if err.strerror else "the operating system refused"


class ForeignFileError(Exception):
    """The file is another tool's model: it can be imported, not opened. `str` says so."""


def describe_read_failure(path: Path, err: BaseException) -> FileProblem:
    title = f"Could not open {path.name}"
    if isinstance(err, ForeignFileError):
        return FileProblem(title, str(err))
    if isinstance(err, ThfError):
        hint = _CODE_HINTS.get(err.code, "The document is not valid")
        extra = f" {err.hint}" if err.hint else ""
        return FileProblem(title, f"{hint}. {err.message}{extra}")
    if isinstance(err, UnicodeDecodeError):
        return FileProblem(title, "The file is not UTF-8 text, so it cannot be a threat model.")
    if isinstance(err, OSError):
        return FileProblem(title, f"The file could not be read: {_os_reason(err)}.")
    return FileProblem(
        title, "An unexpected problem stopped the file from opening. Details are in the log file."
    )


def describe_write_failure(path: Path, err: BaseException, what: str = "saved") -> FileProblem:
    title = f"{path.name} was not {what}"
    if isinstance(err, SaveError):
        message = err.message.rstrip(".")
        return FileProblem(title, f"{message}. Your changes are still open in Stockade.")
    if isinstance(err, OSError):
        return FileProblem(
            title,
            f"The file could not be written: {_os_reason(err)}. "
            "Your changes are still open in Stockade.",
        )
    return FileProblem(
        title,
        "An unexpected problem stopped the file from being written. Your changes are still "
        "open in Stockade; details are in the log file.",
    )


def _read_sync(path: Path) -> ThreatModel:
    from stockade.thf.reader import read_file

    try:
        return read_file(path)
    except ThfError:
        hint = _foreign_hint(path)
        if hint is not None:
            raise ForeignFileError(hint) from None
        raise


def _foreign_hint(path: Path) -> str | None:
    from stockade.importers.detect import foreign_file_hint
    from stockade.importers.source import read_source

    try:
        raw = read_source(path)
    except ImportFailure:
        return None
    found = foreign_file_hint(raw, path.name)
    return found[1] if found is not None else None


def _import_sync(path: Path) -> ImportResult:
    from stockade.importers.convert import import_file

    return import_file(path)


def _save_sync(document: ThreatModel, path: Path) -> None:
    from stockade.thf.writer import save

    save(document, path)


def _export_sync(document: ThreatModel, path: Path) -> None:
    from stockade.report.files import ReportFormat, format_for_path, write_report

    if format_for_path(path) is ReportFormat.PDF:
        from stockade.ui.export.pdf_report import write_pdf

        write_pdf(document, path)
    else:
        write_report(document, path)


async def read_document(path: Path) -> ThreatModel | FileProblem:
    """Read and validate a file in a worker thread."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, _read_sync, path)
    except (ThfError, ForeignFileError, OSError, UnicodeDecodeError) as err:
        return describe_read_failure(path, err)
    except Exception as err:
        log.exception("unexpected failure while opening a document")
        return describe_read_failure(path, err)


async def import_document(path: Path) -> ImportResult | FileProblem:
    """Import another tool's model in a worker thread; a failure says what the file is."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, _import_sync, path)
    except ImportFailure as err:
        return FileProblem(f"Could not import {path.name}", err.message)
    except Exception:
        log.exception("unexpected failure while importing a model")
        return FileProblem(
            f"Could not import {path.name}",
            "An unexpected problem stopped the import. Details are in the log file.",
        )


async def write_document(document: ThreatModel, path: Path) -> FileProblem | None:
    """Save atomically in a worker thread; None when the file is on disk."""
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(None, _save_sync, document, path)
    except (SaveError, OSError) as err:
        return describe_write_failure(path, err)
    except Exception as err:
        log.exception("unexpected failure while saving a document")
        return describe_write_failure(path, err)
    return None


async def export_report(document: ThreatModel, path: Path) -> FileProblem | None:
    """Write the HTML, PDF, Markdown, CSV or JSON report that the file suffix names."""
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(None, _export_sync, document, path)
    except OSError as err:
        return describe_write_failure(path, err, "exported")
    except Exception as err:
        log.exception("unexpected failure while exporting a report")
        return describe_write_failure(path, err, "exported")
    return None


def _diagram_svg_sync(document: ThreatModel) -> str | None:
    from stockade.report.diagram_svg import render_diagram_svg

    return render_diagram_svg(document)


def _write_diagram_sync(path: Path, svg: str, png: bytes | None) -> None:
    from stockade.report.files import atomic_write_bytes, atomic_write_text

    if png is None:
        atomic_write_text(path, svg)
    else:
        atomic_write_bytes(path, png)


async def export_diagram(document: ThreatModel, path: Path) -> FileProblem | None:
    """Write the diagram as SVG or (by suffix) PNG; the SVG is built and written off the UI thread."""
    from stockade.ui.export.diagram_image import DiagramImageError, svg_to_png

    loop = asyncio.get_running_loop()
    try:
        svg = await loop.run_in_executor(None, _diagram_svg_sync, document)
        if svg is None:
            return FileProblem("Nothing to export", "The model has no elements or boundaries to draw.")
        # Qt paints text reliably only on the thread that owns the application.
        png = svg_to_png(svg) if path.suffix.lower() == ".png" else None
        await loop.run_in_executor(None, _write_diagram_sync, path, svg, png)
    except OSError as err:
        return describe_write_failure(path, err, "exported")
    except DiagramImageError as err:
        return FileProblem("Diagram not exported", f"The diagram could not be rendered: {err}.")
    return None
