"""The passphrase dialog: without a secure keyring, parked runs are sealed under a passphrase.

Asked when a waiting turn is saved for later (twice, so a typo cannot lock the run away) and
when a parked run is opened. The passphrase goes straight to the service, which derives the
key with scrypt; it is never stored, and nothing here keeps it after the dialog closes.
Opened with `open()` and awaited, never `exec()`.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from stockade.assistant.errors import SealError
from stockade.governance.sealing import check_passphrase
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import text_style

SEAL_INTRO = ("This computer has no secure keyring, so the waiting turn is encrypted under a "
              "passphrase you choose. Stockade never stores it: without it the turn cannot be "
              "continued.")
OPEN_INTRO = "This waiting turn is encrypted under a passphrase. Enter it to open the turn."


class PassphraseDialog(QDialog):
    """Asks for a passphrase (with a confirmation when a new one seals a run)."""

    def __init__(self, parent: QWidget, *, confirm: bool) -> None:
        super().__init__(parent)
        self.setObjectName("passphraseDialog")
        self.setWindowTitle("Passphrase for waiting turns")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self._confirm = confirm
        self._future: asyncio.Future[str | None] | None = None
        layout = QVBoxLayout(self)
        intro = plain_label(SEAL_INTRO if confirm else OPEN_INTRO, self)
        intro.setObjectName("passphraseIntro")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        self.passphrase_edit = QLineEdit(self)
        self.passphrase_edit.setObjectName("passphraseEdit")
        self.passphrase_edit.setEchoMode(QLineEdit.EchoMode.Password)
        form.addRow("Passphrase", self.passphrase_edit)
        self.confirm_edit = QLineEdit(self)
        self.confirm_edit.setObjectName("passphraseConfirmEdit")
        self.confirm_edit.setEchoMode(QLineEdit.EchoMode.Password)
        if confirm:
            form.addRow("Repeat it", self.confirm_edit)
        else:
            self.confirm_edit.hide()
        layout.addLayout(form)
        self.error_label = plain_label("", self)
        self.error_label.setObjectName("passphraseError")
        self.error_label.setStyleSheet(text_style("#b91c1c"))
        self.error_label.setWordWrap(True)
        layout.addWidget(self.error_label)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.setObjectName("passphraseButtons")
        layout.addWidget(self.buttons)
        self.buttons.accepted.connect(self._on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)
        self.finished.connect(self._on_finished)

    @property
    def ok_button(self) -> QWidget:
        return self.buttons.button(QDialogButtonBox.StandardButton.Ok)

    async def ask(self) -> str | None:
        """Show the dialog and wait: the passphrase, or None when cancelled."""
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        self.passphrase_edit.setFocus()
        return await self._future

    def _on_buttons_accepted(self) -> None:
        text = self.passphrase_edit.text()
        if self._confirm:
            try:
                check_passphrase(text)
            except SealError as exc:
                self.error_label.setText(f"{str(exc)[0].upper()}{str(exc)[1:]}.")
                return
            if self.confirm_edit.text() != text:
                self.error_label.setText("The two passphrases differ.")
                return
        elif not text:
            self.error_label.setText("Enter the passphrase.")
            return
        self._settle(text)
        self.accept()

    def _on_finished(self, _result: int) -> None:
        self._settle(None)
        # Nothing of the passphrase stays in the widgets once the dialog is gone.
        self.passphrase_edit.clear()
        self.confirm_edit.clear()
        self.deleteLater()

    def _settle(self, value: str | None) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(value)
