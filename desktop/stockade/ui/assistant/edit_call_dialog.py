"""Edit a proposal before deciding on it: a form for threats, the exact JSON input for any call.

Window-modal over the review queue, opened with `open()` and awaited (`ask()`). OK sends the
new input to the turn (`submit`), which validates it with the tool's own `prepare`; the tool's
problems are shown here and the dialog stays open until the input is accepted or the user
cancels. Nothing is approved by editing: the edited call goes back to the queue undecided.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from stockade.assistant.review import CallPreview
from stockade.thf.model import MitigationStatus, Severity, StrideCategory
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import text_style

Submit = Callable[[Any], Awaitable[tuple[str, ...]]]
NO_MITIGATION = "(no mitigation)"


class EditCallDialog(QDialog):
    """Change one pending call's input; `ask()` is True once an edit was accepted."""

    def __init__(self, view: CallPreview, parent: QWidget, *, submit: Submit) -> None:
        super().__init__(parent)
        self.setObjectName("editCallDialog")
        self.setWindowTitle(f"Edit {view.tool_name} (call {view.call_id})")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(720, 560)
        self.view = view
        self._submit = submit
        self._original: Any = copy.deepcopy(view.raw)
        self._future: asyncio.Future[bool] | None = None
        self._applied = False
        self._busy = False

        layout = QVBoxLayout(self)
        heading = plain_label(f"Edit {view.tool_name}  ·  call {view.call_id}"
                              + (f"  ·  {view.target}" if view.target else ""), self)
        heading.setObjectName("editCallHeading")
        font = heading.font()
        font.setBold(True)
        heading.setFont(font)
        layout.addWidget(heading)
        intro = plain_label("Change what this call would do. The tool checks the new input; "
                            "the call then waits for your decision again, and only the input "
                            "you approve can run. The assistant is told what you changed.", self)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("editCallTabs")
        self.form: QWidget | None = None
        threat = self._threat()
        if threat is not None:
            self.form = self._threat_form(threat)
            self.tabs.addTab(self.form, "Threat")
        self.json_edit = QPlainTextEdit(self)
        self.json_edit.setObjectName("editCallJson")
        self.json_edit.setPlainText(json.dumps(view.raw, ensure_ascii=False, indent=2,
                                               sort_keys=True))
        self.tabs.addTab(self.json_edit, "Input (JSON)")
        self.tabs.currentChanged.connect(self._on_tabs_currentChanged)
        layout.addWidget(self.tabs, 1)
        self.error_label = plain_label("", self)
        self.error_label.setObjectName("editCallErrors")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(text_style("#b91c1c"))
        self.error_label.hide()
        layout.addWidget(self.error_label)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("editCallCancelButton")
        self.ok_button = QPushButton("Save changes", self)
        self.ok_button.setObjectName("editCallOkButton")
        self.ok_button.setDefault(True)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.ok_button)
        layout.addLayout(buttons)
        self.cancel_button.clicked.connect(self.reject)
        self.ok_button.clicked.connect(self._on_ok_clicked)
        self.finished.connect(self._on_finished)

    # -- the threat form -------------------------------------------------------------------

    def _threat(self) -> dict[str, Any] | None:
        raw = self.view.raw
        if self.view.tool_name == "add_threat" and isinstance(raw, dict) and \
                isinstance(raw.get("threat"), dict):
            return dict(raw["threat"])
        return None

    def _threat_form(self, threat: dict[str, Any]) -> QWidget:
        form = QWidget(self)
        form.setObjectName("editCallThreatForm")
        rows = QFormLayout(form)
        target = threat.get("element") or threat.get("flow") or ""
        where = "element" if threat.get("element") else "data flow"
        rows.addRow("Target:", plain_label(f"{where} {target}", form))
        self.title_edit = QLineEdit(str(threat.get("title", "")), form)
        self.title_edit.setObjectName("editCallTitle")
        self.title_edit.setMaxLength(200)
        rows.addRow("Title:", self.title_edit)
        self.category_combo = self._combo(form, "editCallCategory",
                                          [c.value for c in StrideCategory],
                                          str(threat.get("category", "")))
        rows.addRow("Category:", self.category_combo)
        self.severity_combo = self._combo(form, "editCallSeverity",
                                          [s.value for s in Severity],
                                          str(threat.get("severity", "")).lower())
        rows.addRow("Severity:", self.severity_combo)
        self.description_edit = QPlainTextEdit(str(threat.get("description", "")), form)
        self.description_edit.setObjectName("editCallDescription")
        rows.addRow("Description:", self.description_edit)
        given = threat.get("mitigation")
        mitigation: dict[str, Any] = given if isinstance(given, dict) else {}
        self.mitigation_status_combo = self._combo(
            form, "editCallMitigationStatus", [NO_MITIGATION, *(m.value for m in MitigationStatus)],
            str(mitigation.get("status", NO_MITIGATION)))
        rows.addRow("Mitigation status:", self.mitigation_status_combo)
        self.mitigation_edit = QPlainTextEdit(str(mitigation.get("description", "")), form)
        self.mitigation_edit.setObjectName("editCallMitigation")
        rows.addRow("Mitigation:", self.mitigation_edit)
        return form

    @staticmethod
    def _combo(parent: QWidget, name: str, values: list[str], current: str) -> QComboBox:
        combo = QComboBox(parent)
        combo.setObjectName(name)
        for value in values:
            combo.addItem(value, value)
        if current and combo.findData(current) < 0:
            combo.addItem(current, current)  # keep what the model sent, even if odd
        combo.setCurrentIndex(max(combo.findData(current), 0))
        return combo

    def _from_form(self) -> Any:
        raw = copy.deepcopy(self.view.raw)
        threat = raw["threat"]
        threat["title"] = self.title_edit.text()
        threat["category"] = self.category_combo.currentData()
        threat["severity"] = self.severity_combo.currentData()
        threat["description"] = self.description_edit.toPlainText()
        status = self.mitigation_status_combo.currentData()
        if status == NO_MITIGATION:
            threat.pop("mitigation", None)
        else:
            threat["mitigation"] = {"status": status,
                                    "description": self.mitigation_edit.toPlainText()}
        return raw

    def _on_tabs_currentChanged(self, index: int) -> None:
        # Moving to the JSON tab shows the form's values, so both say the same.
        if self.form is not None and self.tabs.widget(index) is self.json_edit:
            self.json_edit.setPlainText(json.dumps(self._from_form(), ensure_ascii=False,
                                                   indent=2, sort_keys=True))

    # -- the awaited result ----------------------------------------------------------------

    async def ask(self) -> bool:
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        return await self._future

    def new_input(self) -> tuple[Any, str | None]:
        """The input as the dialog holds it now, or the reason it is not valid JSON."""
        if self.form is not None and self.tabs.currentWidget() is self.form:
            return self._from_form(), None
        try:
            return json.loads(self.json_edit.toPlainText()), None
        except json.JSONDecodeError as exc:
            return None, f"The input is not valid JSON (line {exc.lineno}, column {exc.colno})."

    def _on_ok_clicked(self) -> None:
        if self._busy:
            return
        raw, problem = self.new_input()
        if problem is not None:
            self._show_issues((problem,), "The input cannot be read:")
            return
        if raw == self._original:
            self.reject()  # nothing changed
            return
        self._busy = True
        self.ok_button.setEnabled(False)
        self._task = asyncio.ensure_future(self._send(raw))

    async def _send(self, raw: Any) -> None:
        try:
            issues = await self._submit(raw)
        finally:
            self._busy = False
        if not isValid(self):
            return  # closed with the queue (the turn was stopped) while the tool checked it
        self.ok_button.setEnabled(True)
        if issues:
            self._show_issues(issues)
            return
        self._applied = True
        self.accept()

    def _show_issues(self, issues: tuple[str, ...],
                     heading: str = "The tool did not accept this input:") -> None:
        self.error_label.setText(heading + "\n" + "\n".join(f"• {i}" for i in issues))
        self.error_label.show()

    def _on_finished(self, _result: int) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(self._applied)
