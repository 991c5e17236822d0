"""Closing with calls waiting: save the turn for later, deny them all, or keep the window open.

Window-modal, opened with `open()` and awaited (`ask()`). Asked every time the window closes
while the assistant waits for decisions, so waiting calls are never dropped silently. When the
turn cannot be saved for later (`park_unavailable`), the dialog says why and what to do, and
offers only the other two choices.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from stockade.ui.assistant.tool_call_card import plain_label


class CloseChoice(StrEnum):
    PARK = "park"  # save the turn; decide later in the app or with `stockade runs`
    DENY_ALL = "deny_all"  # deny every waiting call and stop the turn, then close
    CANCEL = "cancel"  # keep the window open


class WaitingCallsDialog(QDialog):
    """What to do with `count` waiting calls before the window closes."""

    def __init__(self, count: int, parent: QWidget, *,
                 park_unavailable: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("waitingCallsDialog")
        self.setWindowTitle("The assistant is waiting for you")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self._future: asyncio.Future[CloseChoice] | None = None
        self._choice = CloseChoice.CANCEL
        calls = f"{count} proposed change{'' if count == 1 else 's'}"
        layout = QVBoxLayout(self)
        self.question_label = plain_label(
            f"The assistant is waiting for your decision on {calls}. What should happen to "
            f"{'it' if count == 1 else 'them'} before Stockade closes?", self)
        self.question_label.setObjectName("waitingCallsQuestion")
        self.question_label.setWordWrap(True)
        layout.addWidget(self.question_label)
        self.unavailable_label = plain_label("", self)
        self.unavailable_label.setObjectName("waitingCallsUnavailable")
        self.unavailable_label.setWordWrap(True)
        self.unavailable_label.setStyleSheet("color: #92400e; background: #fef3c7; padding: 4px;")
        if park_unavailable:
            self.unavailable_label.setText(
                f"Decide later is not available: {park_unavailable} Deny the waiting calls "
                "(the assistant is told they were not wanted), or cancel and decide them now "
                "with Review….")
        self.unavailable_label.setVisible(bool(park_unavailable))
        layout.addWidget(self.unavailable_label)
        buttons = QHBoxLayout()
        self.park_button = QPushButton("Decide later", self)
        self.park_button.setObjectName("waitingCallsParkButton")
        self.park_button.setToolTip("Save the turn; decide after reopening the document, or "
                                    "from a terminal with `stockade runs`.")
        self.park_button.setVisible(not park_unavailable)
        self.deny_button = QPushButton("Deny all and close", self)
        self.deny_button.setObjectName("waitingCallsDenyButton")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("waitingCallsCancelButton")
        buttons.addWidget(self.park_button)
        buttons.addWidget(self.deny_button)
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        layout.addLayout(buttons)
        (self.park_button if not park_unavailable else self.cancel_button).setDefault(True)
        self.park_button.clicked.connect(lambda _c=False: self._choose(CloseChoice.PARK))
        self.deny_button.clicked.connect(lambda _c=False: self._choose(CloseChoice.DENY_ALL))
        self.cancel_button.clicked.connect(lambda _c=False: self._choose(CloseChoice.CANCEL))
        self.finished.connect(self._on_finished)

    async def ask(self) -> CloseChoice:
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        return await self._future

    def _choose(self, choice: CloseChoice) -> None:
        self._choice = choice
        self.accept()

    def _on_finished(self, _result: int) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(self._choice)
