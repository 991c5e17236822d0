"""Writing a report: the format chosen by the output suffix, written atomically (PDF aside)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import tempfile
from enum import StrEnum
from pathlib import Path

from stockade.thf.model import ThreatModel
from stockade.thf.writer import replacement_mode


class ReportFormat(StrEnum):
    """The report formats, named by the output file suffix."""

    HTML = "html"
    CSV = "csv"
    JSON = "json"
    MARKDOWN = "md"
    PDF = "pdf"
    """Rendered by Qt's PDF writer (`stockade.ui.export.pdf_report`), not by this module."""


def format_for_path(path: Path) -> ReportFormat | None:
    """The report format an output path asks for (by suffix, any case); None if unknown."""
    suffix = path.suffix.lower().lstrip(".")
    try:
        return ReportFormat(suffix)
    except ValueError:
        return None


def render_report(
    model: ThreatModel, fmt: ReportFormat, *, generated: _dt.date | None = None
) -> str:
    """The report text in one format. `generated` dates the HTML footer (default: today)."""
    if fmt is ReportFormat.HTML:
        from stockade.report.html import render_html

        return render_html(model, generated=generated)
    if fmt is ReportFormat.CSV:
        from stockade.report.csv_export import render_csv

        return render_csv(model)
    if fmt is ReportFormat.MARKDOWN:
        from stockade.report.markdown import render_markdown

        return render_markdown(model, generated=generated)
    if fmt is ReportFormat.PDF:
        raise ValueError("a PDF report is drawn by stockade.ui.export.pdf_report, not as text")
    from stockade.report.json_export import render_json

    return render_json(model)


def atomic_write_text(path: Path, text: str) -> None:
    """Write text as UTF-8 so that `path` is either the old file or the complete new one.

    The temporary file sits in the same folder so the final rename never crosses devices.
    """
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        # newline="" keeps the exact line endings we produced (the CSV writer emits CRLF).
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; a report gets the permissions any file this user writes
        # gets, so a restrictive umask keeps a sensitive model's report private.
        os.chmod(tmp_name, replacement_mode(path))
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def write_report(
    model: ThreatModel, path: Path, *, generated: _dt.date | None = None
) -> ReportFormat:
    """Render the report the suffix of `path` names and write it atomically.

    Raises ValueError for an unknown suffix (or .pdf, which needs the Qt renderer) and
    OSError when the file cannot be written.
    """
    fmt = format_for_path(path)
    if fmt is None or fmt is ReportFormat.PDF:
        raise ValueError(f"unknown report format {path.suffix!r}; use .html, .csv, .json or .md")
    atomic_write_text(path, render_report(model, fmt, generated=generated))
    return fmt


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes so that `path` is either the old file or the complete new one."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, replacement_mode(path))
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
