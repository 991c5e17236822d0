"""One tool call in the chat: tool name, plain-text summary and its live status."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from stockade.ui.common.colors import text_style

STATUS_TEXT: dict[str, str] = {
    "pending": "Waiting for approval",
    "approved": "Approved",
    "running": "Running…",
    "succeeded": "Done",
    "failed": "Failed",
    "denied": "Denied",
    "undone": "Undone",
    "not_run": "Not run",
}

STATUS_COLOR: dict[str, str] = {
    "pending": "#b45309",
    "approved": "#1d4ed8",
    "running": "#1d4ed8",
    "succeeded": "#15803d",
    "failed": "#b91c1c",
    "denied": "#6b7280",
    "undone": "#6b7280",
    "not_run": "#6b7280",
}


def plain_label(text: str, parent: QWidget) -> QLabel:
    """A label that shows `text` literally: model text is never interpreted as rich text."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setOpenExternalLinks(False)
    label.setText(text)
    return label


class ToolCallCard(QFrame):
    """A card whose status follows the call record (`set_status`)."""

    def __init__(self, call_id: str, tool_name: str, summary: str, *, destructive: bool,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"toolCallCard_{call_id}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.call_id = call_id
        self.tool_name = tool_name
        self._status = ""
        self._note: str | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        header = QHBoxLayout()
        self.tool_label = plain_label(tool_name + ("  (destructive)" if destructive else ""), self)
        self.tool_label.setObjectName("toolCallName")
        font = self.tool_label.font()
        font.setBold(True)
        self.tool_label.setFont(font)
        self.status_label = plain_label("", self)
        self.status_label.setObjectName("toolCallStatus")
        header.addWidget(self.tool_label, 1)
        header.addWidget(self.status_label, 0, Qt.AlignmentFlag.AlignRight)
        layout.addLayout(header)
        self.summary_label = plain_label(summary or "(no summary)", self)
        self.summary_label.setObjectName("toolCallSummary")
        self.summary_label.setWordWrap(True)
        layout.addWidget(self.summary_label)

    @property
    def status(self) -> str:
        return self._status

    def set_summary(self, summary: str) -> None:
        self.summary_label.setText(summary or "(no summary)")

    def set_status(self, status: str, note: str | None = None) -> None:
        """Show `status`; `note` qualifies it ("by policy", "edited by you")."""
        if status == self._status and note == self._note:
            return
        self._status = status
        self._note = note
        text = STATUS_TEXT.get(status, status)
        self.status_label.setText(f"{text} ({note})" if note else text)
        self.status_label.setStyleSheet(text_style(STATUS_COLOR.get(status, '#374151')))
