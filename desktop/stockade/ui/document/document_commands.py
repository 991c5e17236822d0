"""The File menu's work: open, import, new from template, save, save as, export, unsaved changes."""

from __future__ import annotations

import asyncio
import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from stockade.thf.errors import ThfError
from stockade.thf.model import ThreatModel
from stockade.tools import actions
from stockade.tools.schema import parse_input
from stockade.ui.common.prompts import UnsavedChoice, await_dialog
from stockade.ui.document.document_files import (
    FileProblem,
    export_diagram,
    export_report,
    import_document,
    read_document,
    write_document,
)

if TYPE_CHECKING:
    from stockade.ui.main_window import MainWindow

REPORT_FORMATS: tuple[tuple[str, str], ...] = (
    ("html", "HTML report (*.html)"),
    ("pdf", "PDF report (*.pdf)"),
    ("md", "Markdown report (*.md)"),
    ("csv", "CSV threat list (*.csv)"),
    ("json", "JSON export (*.json)"),
)


def _stamped(document: ThreatModel) -> ThreatModel:
    """The document with today as `metadata.modified` (itself when already so)."""
    today = _dt.date.today().isoformat()
    if document.metadata.modified == today:
        return document
    return document.model_copy(
        update={"metadata": document.metadata.model_copy(update={"modified": today})}
    )


class DocumentCommands(QObject):
    """File operations for one window; every failure is shown in plain words and loses nothing.

    Reads the window's `prompts` at each use, so a test can swap them after construction.
    """

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("documentCommands")
        self._window = window

    async def open_file(self, path: Path | str) -> bool:
        """Open a file; on any failure the current document stays open and the reason is shown."""
        path = Path(path)
        if not await self.settle_unsaved_changes():
            return False
        self._window.statusBar().showMessage(f"Opening {path.name}…")
        result = await read_document(path)
        if isinstance(result, FileProblem):
            self._window.statusBar().showMessage(result.title, 8000)
            self._window.prompts.show_error(result.title, result.message)
            return False
        self._window.open_document.replace(result, path, saved=True)
        await self._window.recent_files.add(path)
        self._window.statusBar().showMessage(f"Opened {path.name}", 4000)
        return True

    async def open_with_dialog(self) -> bool:
        current = self._window.open_document.path
        chosen = await self._window.prompts.choose_open_path(str(current.parent) if current else "")
        return await self.open_file(chosen) if chosen else False

    async def import_with_dialog(self) -> bool:
        """File → Import…: another tool's model opens as a new, unsaved document."""
        current = self._window.open_document.path
        chosen = await self._window.prompts.choose_import_path(
            str(current.parent) if current else ""
        )
        return await self.import_file(Path(chosen)) if chosen else False

    async def import_file(self, path: Path) -> bool:
        if not await self.settle_unsaved_changes():
            return False
        self._window.statusBar().showMessage(f"Importing {path.name}…")
        result = await import_document(path)
        if isinstance(result, FileProblem):
            self._window.statusBar().showMessage(result.title, 8000)
            self._window.prompts.show_error(result.title, result.message)
            return False
        self._window.open_document.replace(result.model, None, saved=False)
        counts = result.counts()
        summary = (
            f"Imported {path.name}: {counts['elements']} elements, {counts['data_flows']} flows, "
            f"{counts['trust_boundaries']} trust boundaries, {counts['threats']} threats."
        )
        self._window.statusBar().showMessage(summary, 8000)
        if result.warnings:
            shown = [f"• {w.message}" for w in result.warnings[:12]]
            if len(result.warnings) > len(shown):
                shown.append(f"…and {len(result.warnings) - len(shown)} more.")
            self._window.prompts.show_info(
                f"Imported with {len(result.warnings)} warnings",
                summary + " It is not saved yet.\n\n" + "\n".join(shown),
            )
        return True

    async def new_from_template(self, template_id: str) -> bool:
        if not await self.settle_unsaved_changes():
            return False
        from stockade.thf.templates import new_from_template

        loop = asyncio.get_running_loop()
        try:
            document = await loop.run_in_executor(
                None, new_from_template, template_id, _dt.date.today()
            )
        except (KeyError, ThfError, OSError) as err:
            # A missing or broken bundled template is a packaging fault, but still not a crash.
            self._window.prompts.show_error(
                "Template not available",
                f"The starter model could not be loaded ({type(err).__name__}).",
            )
            return False
        self._window.open_document.replace(document, None, saved=False)
        return True

    async def save(self) -> bool:
        path = self._window.open_document.path
        if path is None:
            return await self.save_as()
        return await self.save_to(path)

    async def save_as(self) -> bool:
        suggested = self.suggested_path(".thf")
        chosen = await self._window.prompts.choose_save_path(str(suggested))
        if not chosen:
            return False
        path = Path(chosen)
        if not path.suffix:
            path = path.with_suffix(".thf")
        return await self.save_to(path)

    async def save_to(self, path: Path) -> bool:
        """Write the live document; on failure it stays dirty and the reason is shown."""
        document = self._window.open_document.document
        if document is None:
            return False
        live = document
        document = _stamped(document)
        problem = await write_document(document, path)
        if problem is None and document is not live:
            self._record_stamp(live, document)
        if problem is not None:
            self._window.statusBar().showMessage(problem.title, 8000)
            self._window.prompts.show_error(problem.title, problem.message)
            return False
        self._window.open_document.mark_saved(document, path)
        await self._window.recent_files.add(path)
        self._window.statusBar().showMessage(f"Saved {path.name}", 4000)
        return True

    async def export_with_dialog(self, fmt: str) -> bool:
        document = self._window.open_document.document
        if document is None:
            return False
        name_filter = dict(REPORT_FORMATS)[fmt]
        chosen = await self._window.prompts.choose_save_path(
            str(self.suggested_path(f"-report.{fmt}" if fmt == "html" else f".{fmt}")),
            name_filter,
            "Export report",
        )
        if not chosen:
            return False
        path = Path(chosen)
        if path.suffix.lower() != f".{fmt}":
            path = path.with_name(path.name + f".{fmt}")
        problem = await export_report(document, path)
        if problem is not None:
            self._window.prompts.show_error(problem.title, problem.message)
            return False
        self._window.statusBar().showMessage(f"Exported {path.name}", 4000)
        return True

    def _record_stamp(self, live: ThreatModel, stamped: ThreatModel) -> None:
        """The saved file carries today's date: so does the live document (not an undo step)."""
        history = self._window.open_document.history
        if history is not None and history.document is live:
            history.replace(stamped)

    async def export_diagram_with_dialog(self) -> bool:
        """File → Export diagram: an SVG or a PNG of the whole diagram."""
        document = self._window.open_document.document
        if document is None:
            return False
        chosen = await self._window.prompts.choose_save_path(
            str(self.suggested_path("-diagram.svg")),
            "SVG image (*.svg);;PNG image (*.png)",
            "Export diagram",
        )
        if not chosen:
            return False
        path = Path(chosen)
        if path.suffix.lower() not in (".svg", ".png"):
            path = path.with_name(path.name + ".svg")
        problem = await export_diagram(document, path)
        if problem is not None:
            self._window.prompts.show_error(problem.title, problem.message)
            return False
        self._window.statusBar().showMessage(f"Exported {path.name}", 4000)
        return True

    async def edit_properties(self) -> bool:
        """Document → Properties: title, author and description as one undo step."""
        from stockade.ui.document.properties_dialog import PropertiesDialog

        document = self._window.open_document.document
        if document is None:
            return False
        committed: list[bool] = []

        def attempt(changes: dict[str, object]) -> actions.ActionOutcome:
            live = self._window.open_document.document
            if live is None:
                return actions.ActionError("The document was closed.")
            parsed = parse_input(actions.MetadataUpdates, changes)
            if isinstance(parsed, list):
                return actions.ActionError("Not applied: " + "; ".join(parsed) + ".")
            outcome = actions.update_metadata(live, parsed)
            if isinstance(outcome, actions.ActionResult):
                self._window.open_document.apply_edit(outcome.document, outcome.result)
                committed.append(True)
            return outcome

        dialog = PropertiesDialog(document.metadata, attempt, self._window)
        await await_dialog(dialog)
        dialog.deleteLater()
        return bool(committed)

    def suggested_path(self, suffix: str) -> Path:
        path = self._window.open_document.path
        if path is not None:
            return path.with_name(path.stem + suffix)
        document = self._window.open_document.document
        title = document.metadata.title if document is not None else "threat-model"
        stem = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-") or "threat-model"
        return Path.home() / f"{stem}{suffix}"

    async def settle_unsaved_changes(self) -> bool:
        """True when it is fine to drop the live document (saved, discarded or never dirty).

        Edits typed into the detail pane but not applied are settled first, so Apply there
        still reaches the file (and Cancel keeps everything open)."""
        if not await self._window.detail_pane.settle_unapplied(self._window.prompts):
            return False
        if not self._window.open_document.is_dirty:
            return True
        choice = await self._window.prompts.ask_unsaved_changes(self._window.open_document.display_name)
        if choice is UnsavedChoice.SAVE:
            return await self.save()
        return choice is UnsavedChoice.DISCARD
