"""The questions and messages the window puts to the user, behind one replaceable class.

Native dialogs are opened with `open()` and awaited through a future, never `exec()`, so the
event loop (and the assistant's stream) keeps running while a dialog is up. Tests replace
`Prompts` with a scripted subclass so nothing ever waits for a click.
"""

from __future__ import annotations

import asyncio
import sys
from enum import StrEnum
from typing import TypeVar

from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox, QWidget

T = TypeVar("T")

THF_FILE_FILTER = "Threat models (*.thf *.yaml *.yml);;All files (*)"
IMPORT_FILE_FILTER = (
    "Models from other tools (*.tm7 *.json *.yaml *.yml);;Microsoft Threat Modeling Tool "
    "(*.tm7);;Threat Dragon, OTM or pytm JSON (*.json);;OTM YAML (*.yaml *.yml);;All files (*)"
)


class UnsavedChoice(StrEnum):
    SAVE = "save"
    DISCARD = "discard"
    CANCEL = "cancel"


class UnappliedChoice(StrEnum):
    APPLY = "apply"
    DISCARD = "discard"
    CANCEL = "cancel"


async def await_dialog(dialog: QDialog) -> int:
    """Open `dialog` window-modal and wait for it to finish; returns its result code."""
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        if not future.done():
            future.set_result(result)

    dialog.finished.connect(finished)
    dialog.open()
    return await future


class Prompts:
    """Real dialogs, window-modal over `parent`."""

    def __init__(self, parent: QWidget | None) -> None:
        self._parent = parent

    async def choose_open_path(self, directory: str = "") -> str | None:
        dialog = QFileDialog(self._parent, "Open threat model", directory, THF_FILE_FILTER)
        dialog.setObjectName("openFileDialog")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
        return await self._file_dialog(dialog)

    async def choose_import_path(self, directory: str = "") -> str | None:
        dialog = QFileDialog(self._parent, "Import a model", directory, IMPORT_FILE_FILTER)
        dialog.setObjectName("importFileDialog")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
        return await self._file_dialog(dialog)

    async def choose_save_path(
        self, suggested: str, name_filter: str = THF_FILE_FILTER, title: str = "Save threat model"
    ) -> str | None:
        dialog = QFileDialog(self._parent, title, suggested, name_filter)
        dialog.setObjectName("saveFileDialog")
        dialog.setFileMode(QFileDialog.FileMode.AnyFile)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.selectFile(suggested)
        return await self._file_dialog(dialog)

    async def ask_unsaved_changes(self, name: str) -> UnsavedChoice:
        box = QMessageBox(self._parent)
        box.setObjectName("unsavedChangesBox")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Unsaved changes")
        box.setText(f"{name} has changes that are not saved.")
        box.setInformativeText("Save them before closing?")
        save = box.addButton(QMessageBox.StandardButton.Save)
        discard = box.addButton(QMessageBox.StandardButton.Discard)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(save)
        future: asyncio.Future[UnsavedChoice] = asyncio.get_running_loop().create_future()

        def finished(_result: int) -> None:
            clicked = box.clickedButton()
            choice = (
                UnsavedChoice.SAVE
                if clicked is save
                else UnsavedChoice.DISCARD
                if clicked is discard
                else UnsavedChoice.CANCEL
            )
            if not future.done():
                future.set_result(choice)
            box.deleteLater()

        box.finished.connect(finished)
        box.open()
        return await future

    async def confirm_cascade(self, question: str, removals: list[str]) -> bool:
        """Ask whether a delete may also remove (or change) everything in `removals`."""
        box = QMessageBox(self._parent)
        box.setObjectName("cascadeDeleteBox")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Delete with its references?")
        box.setText(question)
        shown = removals[:12] + ([f"… and {len(removals) - 12} more"] if len(removals) > 12 else [])
        box.setInformativeText("Deleting it also removes or changes:\n" + "\n".join(shown))
        box.setDetailedText("\n".join(removals))
        delete = box.addButton("Delete all", QMessageBox.ButtonRole.DestructiveRole)
        delete.setObjectName("cascadeDeleteButton")
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        await await_dialog(box)
        confirmed = box.clickedButton() is delete
        box.deleteLater()
        return confirmed

    async def ask_unapplied_edits(self, name: str) -> UnappliedChoice:
        """The detail pane has edits not applied yet: apply, discard or stay."""
        box = QMessageBox(self._parent)
        box.setObjectName("unappliedEditsBox")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Unapplied changes")
        box.setText(f"The changes to {name} have not been applied.")
        box.setInformativeText("Apply them before moving on?")
        apply = box.addButton(QMessageBox.StandardButton.Apply)
        discard = box.addButton(QMessageBox.StandardButton.Discard)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(apply)
        await await_dialog(box)
        clicked = box.clickedButton()
        box.deleteLater()
        if clicked is apply:
            return UnappliedChoice.APPLY
        return UnappliedChoice.DISCARD if clicked is discard else UnappliedChoice.CANCEL

    def show_error(self, title: str, text: str) -> None:
        """A non-blocking error message (no traceback, ever)."""
        box = QMessageBox(QMessageBox.Icon.Critical, title, text, QMessageBox.StandardButton.Ok, self._parent)
        box.setObjectName("errorMessageBox")
        box.finished.connect(box.deleteLater)
        box.open()

    def show_info(self, title: str, text: str) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Information, title, text, QMessageBox.StandardButton.Ok, self._parent
        )
        box.setObjectName("infoMessageBox")
        box.finished.connect(box.deleteLater)
        box.open()

    def show_unexpected_error(self, message: str) -> None:
        """The crash notice: one plain line and a button that opens the log folder."""
        from stockade.ui.common.crash_dialog import show_crash_dialog

        show_crash_dialog(self._parent, message)

    async def _file_dialog(self, dialog: QFileDialog) -> str | None:
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

        def finished(result: int) -> None:
            files = dialog.selectedFiles() if result else []
            if not future.done():
                future.set_result(files[0] if files else None)
            dialog.deleteLater()

        dialog.finished.connect(finished)
        dialog.open()
        return await future


class StderrPrompts(Prompts):
    """Screenshot mode: nobody can read a dialog offscreen, so messages go to stderr."""

    def __init__(self) -> None:
        super().__init__(None)

    def show_error(self, title: str, text: str) -> None:
        print(f"stockade: {title}: {text}", file=sys.stderr)

    def show_info(self, title: str, text: str) -> None:
        print(f"stockade: {title}: {text}", file=sys.stderr)

    def show_unexpected_error(self, message: str) -> None:
        from stockade.diagnostics import log_folder

        print(f"stockade: Unexpected problem: {message} (log folder: {log_folder()})",
              file=sys.stderr)
