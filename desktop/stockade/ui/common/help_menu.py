"""The Help menu's own actions: About Stockade, and Copy diagnostics to the clipboard."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QGuiApplication

from stockade.diagnostics import diagnostics_report
from stockade.ui.common.about_dialog import AboutDialog, toolkit_versions

if TYPE_CHECKING:
    from stockade.ui.main_window import MainWindow

COPIED_MESSAGE = "Diagnostics copied to the clipboard (keys masked, no document content)."


class HelpMenu(QObject):
    """Adds the actions to `window.help_menu`; the report is assembled off the UI thread."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("helpMenuActions")
        self._window = window
        self.about_action = QAction("&About Stockade", window)
        self.about_action.setObjectName("actionAbout")
        self.about_action.triggered.connect(lambda _checked=False: self.show_about())
        self.copy_diagnostics_action = QAction("Copy &diagnostics", window)
        self.copy_diagnostics_action.setObjectName("actionCopyDiagnostics")
        self.copy_diagnostics_action.setStatusTip(
            "Copy versions, settings and the recent log (keys masked) for a support request")
        self.copy_diagnostics_action.triggered.connect(
            lambda _checked=False: window.spawn(self.copy_diagnostics()))
        window.help_menu.addAction(self.about_action)
        window.help_menu.addAction(self.copy_diagnostics_action)

    def show_about(self) -> AboutDialog:
        dialog = AboutDialog(self._window)
        dialog.open()
        return dialog

    async def copy_diagnostics(self) -> str:
        """Put the redacted report on the clipboard and say so; returns what was copied."""
        toolkit = toolkit_versions()
        report = await asyncio.get_running_loop().run_in_executor(
            None, diagnostics_report, toolkit)
        QGuiApplication.clipboard().setText(report)
        self._window.statusBar().showMessage(COPIED_MESSAGE, 8000)
        return report
