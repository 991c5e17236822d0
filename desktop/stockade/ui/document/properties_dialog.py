"""Document → Properties: the model's title, author and description."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from stockade.thf.model import Metadata
from stockade.tools import actions
from stockade.ui.common.colors import text_style


class PropertiesDialog(QDialog):
    """Edits the metadata a reviewer sees first; OK runs `attempt` and stays open if refused."""

    def __init__(self, metadata: Metadata,
                 attempt: Callable[[dict[str, Any]], actions.ActionOutcome | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("propertiesDialog")
        self.setWindowTitle("Document properties")
        self._metadata = metadata
        self._attempt = attempt
        self.title_edit = QLineEdit(metadata.title, self)
        self.title_edit.setObjectName("propertiesTitle")
        self.title_edit.setAccessibleName("Title")
        self.author_edit = QLineEdit(metadata.author, self)
        self.author_edit.setObjectName("propertiesAuthor")
        self.author_edit.setAccessibleName("Author")
        self.description_edit = QPlainTextEdit(metadata.description, self)
        self.description_edit.setObjectName("propertiesDescription")
        self.description_edit.setAccessibleName("Description")
        self.description_edit.setTabChangesFocus(True)
        dates = QLabel(f"Created {metadata.created} · modified {metadata.modified}", self)
        dates.setObjectName("propertiesDates")
        self.error_label = QLabel(self)
        self.error_label.setObjectName("propertiesError")
        self.error_label.setStyleSheet(text_style("#dc2626"))
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        form = QFormLayout()
        form.addRow("&Title", self.title_edit)
        form.addRow("&Author", self.author_edit)
        form.addRow("&Description", self.description_edit)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.buttons.setObjectName("propertiesButtons")
        self.buttons.accepted.connect(self._on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(dates)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.resize(480, self.sizeHint().height())

    def changes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in (
            ("title", self.title_edit.text()),
            ("author", self.author_edit.text()),
            ("description", self.description_edit.toPlainText()),
        ):
            if value != getattr(self._metadata, key):
                out[key] = value
        return out

    def _on_buttons_accepted(self) -> None:
        changes = self.changes()
        outcome = self._attempt(changes) if changes else None
        if isinstance(outcome, actions.ActionError):
            self.error_label.setText(outcome.message)
            self.error_label.show()
            return
        self.accept()
