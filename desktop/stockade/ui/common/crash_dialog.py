"""The crash notice: one plain line, where the details went, and a button to open that folder."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from stockade import diagnostics

log = logging.getLogger("stockade.ui")


class CrashDialog(QMessageBox):
    """Non-modal towards the event loop (opened with `open()`); never shows a traceback."""

    def __init__(self, message: str, log_folder: Path, parent: QWidget | None) -> None:
        super().__init__(QMessageBox.Icon.Critical, "Unexpected problem", message,
                         QMessageBox.StandardButton.Close, parent)
        self.setObjectName("crashDialog")
        self.log_folder = log_folder
        self.setInformativeText(f"Log folder: {log_folder}")
        self.open_folder_button = self.addButton("Open log folder",
                                                 QMessageBox.ButtonRole.ActionRole)
        self.open_folder_button.setObjectName("crashOpenLogFolder")
        self.setDefaultButton(QMessageBox.StandardButton.Close)
        self.buttonClicked.connect(self._on_self_buttonClicked)
        self.finished.connect(self.deleteLater)

    def open_log_folder(self) -> bool:
        """Show the log folder in the desktop's file manager; False when nothing could open it."""
        self.log_folder.mkdir(parents=True, exist_ok=True)
        opened = QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.log_folder)))
        if not opened:
            log.warning("no file manager opened the log folder %s", self.log_folder)
        return bool(opened)

    def _on_self_buttonClicked(self, button: QAbstractButton) -> None:
        if button is self.open_folder_button:
            self.open_log_folder()


def show_crash_dialog(parent: QWidget | None, message: str) -> CrashDialog:
    """Open the crash notice, or keep the one already up (a failing repaint must not stack
    dialogs by the dozen)."""
    if parent is not None:
        for existing in parent.findChildren(CrashDialog, "crashDialog"):
            if existing.isVisible():
                return existing
    dialog = CrashDialog(message, diagnostics.log_folder(), parent)
    dialog.open()
    return dialog
