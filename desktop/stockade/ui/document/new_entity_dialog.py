"""The Add dialog: a new element, flow, boundary, threat, layer or group through its add action."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from stockade.thf.model import ThreatModel
from stockade.tools import actions
from stockade.ui.common.colors import text_style
from stockade.ui.document.entity_form import ADD_FIELDS, EntityForm, add_input
from stockade.ui.document.entity_kinds import KINDS

AddAttempt = Callable[[dict[str, Any]], actions.ActionOutcome]


class NewEntityDialog(QDialog):
    """Asks for the fields a new entity needs; OK runs the add action and stays open if refused.

    `outcome` holds the accepted result; the caller commits it (one undo step).
    """

    def __init__(self, section: str, document: ThreatModel, attempt: AddAttempt,
                 preset: dict[str, Any] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("newEntityDialog")
        kind = KINDS[section]
        self.section = section
        self.setWindowTitle(f"Add {kind.word}")
        self.setAccessibleName(f"Add {kind.word}")
        self._attempt = attempt
        self.outcome: actions.ActionResult | None = None

        self.form = EntityForm(ADD_FIELDS[section], "newEntityForm", self)
        self.form.set_id_choices(document)
        if preset:
            self.form.set_values(preset)
        self.error_label = QLabel(self)
        self.error_label.setObjectName("newEntityError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(text_style("#dc2626"))
        self.error_label.setAccessibleName("Problem")
        self.error_label.hide()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.buttons.setObjectName("newEntityButtons")
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(f"Add {kind.word}")
        ok.setObjectName("newEntityOk")
        ok.setAccessibleName(f"Add {kind.word}")
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        cancel.setObjectName("newEntityCancel")
        cancel.setAccessibleName("Cancel")
        self.buttons.accepted.connect(self._on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.resize(460, self.sizeHint().height())

    def _on_buttons_accepted(self) -> None:
        outcome = self._attempt(add_input(self.section, self.form.values()))
        if isinstance(outcome, actions.ActionError):
            self.error_label.setText(outcome.message)
            self.error_label.show()
            return
        self.outcome = outcome
        self.accept()
