"""The detail pane: every field of the selected entity, and hand edits through the shared actions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from stockade.thf.model import ENTITY_TYPES, MitigationStatus, Severity, ThreatModel
from stockade.tools import actions
from stockade.tools.schema import StrictInput, parse_input
from stockade.ui.document.document_tree import SECTION_LABELS
from stockade.ui.document.open_document import OpenDocument

NO_MITIGATION = "none"


@dataclass(frozen=True)
class _EditableSection:
    """The pure action that edits one section and the input model it takes."""

    updates: type[StrictInput]
    action: Callable[[ThreatModel, str, Any], actions.ActionOutcome]
    name_field: str
    has_description: bool


_EDITABLE: dict[str, _EditableSection] = {
    "elements": _EditableSection(actions.ElementUpdates, actions.update_element, "name", True),
    "data_flows": _EditableSection(actions.DataFlowUpdates, actions.update_data_flow, "name", False),
    "trust_boundaries": _EditableSection(
        actions.TrustBoundaryUpdates, actions.update_trust_boundary, "name", False
    ),
    "threats": _EditableSection(actions.ThreatUpdates, actions.update_threat, "title", True),
}


def entity_of(document: ThreatModel, section: str, entity_id: str) -> Any | None:
    for entity in getattr(document, section, ()):
        if entity.id == entity_id:
            return entity
    return None


def apply_entity_edit(
    document: ThreatModel, section: str, entity_id: str, changes: dict[str, Any]
) -> actions.ActionOutcome:
    """Run the same pure update action the assistant uses; input problems become an ActionError."""
    editable = _EDITABLE.get(section)
    if editable is None:
        return actions.ActionError(f"{SECTION_LABELS.get(section, section)} cannot be edited here.")
    parsed = parse_input(editable.updates, changes)
    if isinstance(parsed, list):
        return actions.ActionError("The change was not applied: " + "; ".join(parsed) + ".")
    return editable.action(document, entity_id, parsed)


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append((prefix, "{}"))
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list):
        if not value:
            out.append((prefix, "[]"))
        elif all(not isinstance(v, dict | list) for v in value):
            out.append((prefix, ", ".join(str(v) for v in value)))
        else:
            for i, inner in enumerate(value):
                _flatten(f"{prefix}[{i}]", inner, out)
    elif value is None:
        out.append((prefix, "—"))
    else:
        out.append((prefix, str(value)))


def entity_fields(entity: Any) -> list[tuple[str, str, bool]]:
    """(field, value, is_unknown) for every field the entity holds, known fields first."""
    dumped = entity.model_dump(by_alias=True, exclude_none=True, mode="json")
    unknown = set(entity.extras)
    rows: list[tuple[str, str, bool]] = []
    for key, value in dumped.items():
        flat: list[tuple[str, str]] = []
        _flatten(key, value, flat)
        rows.extend((name, text, key in unknown) for name, text in flat)
    return rows


class DetailPane(QWidget):
    """Shows one entity; the name, description and threat fields can be edited and applied."""

    editRejected = Signal(str)
    """An edit was refused; the argument is the action's message."""
    editApplied = Signal(str)
    """An edit was committed; the argument is the action's result text."""

    def __init__(self, document: OpenDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("detailPane")
        self._document = document
        self._section: str | None = None
        self._entity_id: str | None = None

        self.title = QLabel("Select an entity in the tree or the diagram.", self)
        self.title.setObjectName("detailTitle")
        self.title.setWordWrap(True)
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.title.setFont(font)

        self.name_edit = QLineEdit(self)
        self.name_edit.setObjectName("detailName")
        self.description_edit = QPlainTextEdit(self)
        self.description_edit.setObjectName("detailDescription")
        self.description_edit.setMaximumHeight(110)
        self.severity_combo = QComboBox(self)
        self.severity_combo.setObjectName("detailSeverity")
        for severity in Severity:
            self.severity_combo.addItem(severity.value, severity.value)
        self.status_combo = QComboBox(self)
        self.status_combo.setObjectName("detailStatus")
        self.mitigation_edit = QPlainTextEdit(self)
        self.mitigation_edit.setObjectName("detailMitigation")
        self.mitigation_edit.setMaximumHeight(90)

        self.form = QFormLayout()
        self.form.addRow("Name", self.name_edit)
        self.form.addRow("Description", self.description_edit)
        self.form.addRow("Severity", self.severity_combo)
        self.form.addRow("Mitigation status", self.status_combo)
        self.form.addRow("Mitigation", self.mitigation_edit)

        self.apply_button = QPushButton("Apply", self)
        self.apply_button.setObjectName("detailApply")
        self.revert_button = QPushButton("Revert", self)
        self.revert_button.setObjectName("detailRevert")
        self.error_label = QLabel(self)
        self.error_label.setObjectName("detailError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b91c1c;")
        self.error_label.hide()

        self.fields = QTreeWidget(self)
        self.fields.setObjectName("detailFields")
        self.fields.setColumnCount(2)
        self.fields.setHeaderLabels(["Field", "Value"])
        self.fields.setRootIsDecorated(False)
        self.fields.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.apply_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(self.form)
        layout.addLayout(buttons)
        layout.addWidget(self.error_label)
        fields_label = QLabel("All fields (read-only)", self)
        fields_label.setObjectName("detailFieldsLabel")
        layout.addWidget(fields_label)
        layout.addWidget(self.fields, 1)

        self.apply_button.clicked.connect(self.apply_changes)
        self.revert_button.clicked.connect(self.refresh)
        self.name_edit.textEdited.connect(self._on_form_edited)
        self.description_edit.textChanged.connect(self._on_form_edited)
        self.mitigation_edit.textChanged.connect(self._on_form_edited)
        self.severity_combo.currentIndexChanged.connect(self._on_form_edited)
        self.status_combo.currentIndexChanged.connect(self._on_form_edited)
        document.documentChanged.connect(self.refresh)
        document.documentReplaced.connect(self.clear)
        self._loading = False
        self._show_entity(None)

    # -- public API -------------------------------------------------------------------------

    @property
    def shown(self) -> tuple[str, str] | None:
        if self._section is None or self._entity_id is None:
            return None
        return (self._section, self._entity_id)

    def show_entity(self, section: str, entity_id: str) -> None:
        self._section, self._entity_id = section, entity_id
        self.error_label.hide()
        self.refresh()

    def clear(self) -> None:
        self._section = self._entity_id = None
        self.error_label.hide()
        self.refresh()

    def refresh(self) -> None:
        """Reload the form and the field list from the live document."""
        document = self._document.document
        entity = None
        if document is not None and self._section is not None and self._entity_id is not None:
            entity = entity_of(document, self._section, self._entity_id)
        self._show_entity(entity)

    def pending_changes(self) -> dict[str, Any]:
        """What the form would change, as update-action input (only fields that differ)."""
        document = self._document.document
        if document is None or self._section not in _EDITABLE or self._entity_id is None:
            return {}
        entity = entity_of(document, self._section, self._entity_id)
        if entity is None:
            return {}
        editable = _EDITABLE[self._section]
        changes: dict[str, Any] = {}
        name = self.name_edit.text()
        if name != getattr(entity, editable.name_field):
            changes[editable.name_field] = name
        if editable.has_description:
            description = self.description_edit.toPlainText()
            if description != entity.description:
                changes["description"] = description
        if self._section == "threats":
            severity = self.severity_combo.currentData()
            if severity != entity.severity.value:
                changes["severity"] = severity
            status = self.status_combo.currentData()
            mitigation_text = self.mitigation_edit.toPlainText()
            current = entity.mitigation
            if status == NO_MITIGATION:
                if mitigation_text:
                    # A mitigation text with no status cannot be stored; the action says so.
                    changes["mitigation"] = {"description": mitigation_text}
            elif (
                current is None
                or status != current.status.value
                or mitigation_text != current.description
            ):
                changes["mitigation"] = {"status": status, "description": mitigation_text}
        return changes

    def apply_changes(self) -> bool:
        """Commit the form through the pure action as one undo step; False if refused."""
        document = self._document.document
        changes = self.pending_changes()
        if document is None or self._section is None or self._entity_id is None or not changes:
            return False
        outcome = apply_entity_edit(document, self._section, self._entity_id, changes)
        if isinstance(outcome, actions.ActionError):
            self.error_label.setText(outcome.message)
            self.error_label.show()
            self.editRejected.emit(outcome.message)
            return False
        self.error_label.hide()
        self._document.apply_edit(outcome.document, outcome.result)
        self.editApplied.emit(outcome.result)
        return True

    # -- internals --------------------------------------------------------------------------

    def _on_form_edited(self, *_args: Any) -> None:
        if not self._loading:
            dirty = bool(self.pending_changes())
            self.apply_button.setEnabled(dirty)
            self.revert_button.setEnabled(dirty)

    def _show_entity(self, entity: Any | None) -> None:
        self._loading = True
        try:
            self._fill(entity)
        finally:
            self._loading = False
        self.apply_button.setEnabled(False)
        self.revert_button.setEnabled(False)

    def _set_row_visible(self, widget: QWidget, visible: bool) -> None:
        self.form.setRowVisible(widget, visible)

    def _fill(self, entity: Any | None) -> None:
        section = self._section
        editable = _EDITABLE.get(section or "")
        is_threat = section == "threats" and entity is not None
        self.fields.clear()
        if entity is None or section is None:
            if self._entity_id is not None:
                self.title.setText(f"“{self._entity_id}” is no longer in the document.")
            else:
                self.title.setText("Select an entity in the tree or the diagram.")
            for widget in (
                self.name_edit, self.description_edit, self.severity_combo, self.status_combo,
                self.mitigation_edit,
            ):
                self._set_row_visible(widget, False)
            self.apply_button.setVisible(False)
            self.revert_button.setVisible(False)
            return
        kind = ENTITY_TYPES[section].__name__
        self.title.setText(f"{kind} {entity.id}")
        self._set_row_visible(self.name_edit, editable is not None)
        self._set_row_visible(self.description_edit, editable is not None and editable.has_description)
        for widget in (self.severity_combo, self.status_combo, self.mitigation_edit):
            self._set_row_visible(widget, is_threat)
        self.apply_button.setVisible(editable is not None)
        self.revert_button.setVisible(editable is not None)
        if editable is not None:
            label = self.form.labelForField(self.name_edit)
            if isinstance(label, QLabel):
                label.setText("Title" if is_threat else "Name")
            self.name_edit.setText(getattr(entity, editable.name_field))
            if editable.has_description:
                self.description_edit.setPlainText(entity.description)
        if is_threat:
            self.severity_combo.setCurrentIndex(self.severity_combo.findData(entity.severity.value))
            self.status_combo.clear()
            if entity.mitigation is None:
                # Only a threat without a mitigation offers "none": the action cannot remove one.
                self.status_combo.addItem("no mitigation", NO_MITIGATION)
            for status in MitigationStatus:
                self.status_combo.addItem(status.value.replace("_", " "), status.value)
            current = entity.mitigation.status.value if entity.mitigation else NO_MITIGATION
            self.status_combo.setCurrentIndex(self.status_combo.findData(current))
            self.mitigation_edit.setPlainText(entity.mitigation.description if entity.mitigation else "")
        for name, value, unknown in entity_fields(entity):
            # One line per field keeps the list scannable; the tooltip has the full text.
            shown = value.strip("\n").replace("\n", " ⏎ ")
            item = QTreeWidgetItem([name + ("  (unknown field)" if unknown else ""), shown])
            item.setToolTip(1, value)
            self.fields.addTopLevelItem(item)
