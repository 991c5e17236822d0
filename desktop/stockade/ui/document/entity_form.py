"""A form over one entity kind's fields (add dialog and detail pane), with an error under each field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from stockade.catalog.registry import default_catalog
from stockade.thf.model import MitigationStatus, Severity, StrideCategory, ThreatModel
from stockade.ui.common.colors import text_style

NO_MITIGATION = "none"
MITIGATION_STATUS = "mitigation_status"
MITIGATION_TEXT = "mitigation_text"


class FieldKind(StrEnum):
    TEXT = "text"
    LONG_TEXT = "long_text"
    CHOICE = "choice"
    EDITABLE_CHOICE = "editable_choice"
    REFERENCE = "reference"
    """One id of an entity in `section`; empty means none."""
    REFERENCES = "references"
    """Comma-separated ids of entities in `section`."""
    TEXT_LIST = "text_list"
    FLAG = "flag"


@dataclass(frozen=True)
class FormField:
    key: str
    """The action input key (`from`, `trust_zone`, …) or a mitigation pseudo-key."""
    label: str
    kind: FieldKind
    section: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    """(label, value) pairs for choices."""
    optional: bool = True
    """For references: an empty value is allowed (and clears the reference on edit)."""


def _catalog_types() -> tuple[tuple[str, str], ...]:
    basics = ("process", "data_store", "external_entity", "text")
    ids = [*basics, *(e.id for e in default_catalog().entries if e.id not in basics)]
    return tuple((i, i) for i in ids)


_SEVERITIES = tuple((s.value, s.value) for s in Severity)
_CATEGORIES = tuple((c.value, c.value) for c in StrideCategory)
_STATUSES = (
    ("no mitigation", NO_MITIGATION),
    *((s.value.replace("_", " "), s.value) for s in MitigationStatus),
)

_NAME = FormField("name", "Name", FieldKind.TEXT)
_DESCRIPTION = FormField("description", "Description", FieldKind.LONG_TEXT)

ADD_FIELDS: dict[str, tuple[FormField, ...]] = {
    "elements": (
        _NAME,
        FormField("type", "Type", FieldKind.EDITABLE_CHOICE),
        FormField("trust_zone", "Trust zone", FieldKind.TEXT),
        FormField("technologies", "Technologies", FieldKind.TEXT_LIST),
        _DESCRIPTION,
    ),
    "data_flows": (
        FormField("from", "Source element", FieldKind.REFERENCE, "elements", optional=False),
        FormField("to", "Target element", FieldKind.REFERENCE, "elements", optional=False),
        _NAME,
        FormField("protocol", "Protocol", FieldKind.TEXT),
        FormField("data", "Data carried", FieldKind.TEXT_LIST),
        FormField("authenticated", "Authenticated", FieldKind.FLAG),
        FormField("encrypted", "Encrypted", FieldKind.FLAG),
    ),
    "trust_boundaries": (
        _NAME,
        FormField("contains", "Member elements", FieldKind.REFERENCES, "elements"),
    ),
    "threats": (
        FormField("title", "Title", FieldKind.TEXT),
        FormField("category", "Category", FieldKind.CHOICE, choices=_CATEGORIES),
        FormField("severity", "Severity", FieldKind.CHOICE, choices=_SEVERITIES),
        FormField("element", "Element", FieldKind.REFERENCE, "elements"),
        FormField("flow", "Data flow", FieldKind.REFERENCE, "data_flows"),
        _DESCRIPTION,
    ),
    "layers": (_NAME, _DESCRIPTION),
    "groups": (
        _NAME,
        FormField("type", "Kind", FieldKind.TEXT),
        FormField("parent", "Parent group", FieldKind.REFERENCE, "groups"),
        _DESCRIPTION,
    ),
}
"""What the Add dialog asks for each kind (the rest can be edited in the detail pane)."""

EDIT_FIELDS: dict[str, tuple[FormField, ...]] = {
    "elements": (
        _NAME,
        FormField("type", "Type", FieldKind.EDITABLE_CHOICE),
        FormField("subtype", "Subtype", FieldKind.TEXT),
        FormField("technologies", "Technologies", FieldKind.TEXT_LIST),
        FormField("trust_zone", "Trust zone", FieldKind.TEXT),
        FormField("layer", "Layer", FieldKind.REFERENCE, "layers"),
        FormField("group", "Group", FieldKind.REFERENCE, "groups"),
        _DESCRIPTION,
    ),
    "data_flows": (
        _NAME,
        FormField("from", "Source element", FieldKind.REFERENCE, "elements", optional=False),
        FormField("to", "Target element", FieldKind.REFERENCE, "elements", optional=False),
        FormField("protocol", "Protocol", FieldKind.TEXT),
        FormField("data", "Data carried", FieldKind.TEXT_LIST),
        FormField("authenticated", "Authenticated", FieldKind.FLAG),
        FormField("encrypted", "Encrypted", FieldKind.FLAG),
    ),
    "trust_boundaries": ADD_FIELDS["trust_boundaries"],
    "threats": (
        FormField("title", "Title", FieldKind.TEXT),
        FormField("category", "Category", FieldKind.CHOICE, choices=_CATEGORIES),
        FormField("element", "Element", FieldKind.REFERENCE, "elements"),
        FormField("flow", "Data flow", FieldKind.REFERENCE, "data_flows"),
        FormField("severity", "Severity", FieldKind.CHOICE, choices=_SEVERITIES),
        _DESCRIPTION,
        FormField(MITIGATION_STATUS, "Mitigation status", FieldKind.CHOICE, choices=_STATUSES),
        FormField(MITIGATION_TEXT, "Mitigation", FieldKind.LONG_TEXT),
    ),
    "layers": ADD_FIELDS["layers"],
    "groups": ADD_FIELDS["groups"],
}
"""What the detail pane edits for each kind."""


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def entity_values(entity: Any, fields: Sequence[FormField]) -> dict[str, Any]:
    """The form values an existing entity shows (same shapes `EntityForm.values` returns)."""
    values: dict[str, Any] = {}
    for f in fields:
        if f.key == MITIGATION_STATUS:
            values[f.key] = entity.mitigation.status.value if entity.mitigation else NO_MITIGATION
        elif f.key == MITIGATION_TEXT:
            values[f.key] = entity.mitigation.description if entity.mitigation else ""
        elif f.key == "encrypted":
            values[f.key] = bool(entity.extras.get("encrypted", False))
        else:
            value = getattr(entity, "from_" if f.key == "from" else f.key, None)
            if isinstance(value, StrEnum):
                value = value.value
            if f.kind is FieldKind.FLAG:
                value = bool(value)
            elif f.kind in (FieldKind.TEXT_LIST, FieldKind.REFERENCES):
                value = list(value or [])
            else:
                value = "" if value is None else str(value)
            values[f.key] = value
    return values


class EntityForm(QWidget):
    """Rows of labelled inputs for one kind; each row has its own error line below it."""

    edited = Signal()
    """The user changed a value."""

    def __init__(self, fields: Sequence[FormField], name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.fields = tuple(fields)
        self._inputs: dict[str, QWidget] = {}
        self._errors: dict[str, QLabel] = {}
        self._loading = False
        self._choices_document: ThreatModel | None = None
        layout = QFormLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for f in self.fields:
            widget = self._make_input(f)
            widget.setObjectName(f"{name}_{f.key}")
            widget.setAccessibleName(f.label)
            error = QLabel(self)
            error.setObjectName(f"{name}_{f.key}_error")
            error.setWordWrap(True)
            error.setAccessibleName(f"{f.label} problem")
            error.setStyleSheet(text_style("#dc2626"))
            error.hide()
            cell = QWidget(self)
            column = QVBoxLayout(cell)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(2)
            column.addWidget(widget)
            column.addWidget(error)
            label = QLabel(f.label, self)
            label.setBuddy(widget)
            layout.addRow(label, cell)
            self._inputs[f.key] = widget
            self._errors[f.key] = error

    # -- building ---------------------------------------------------------------------------

    def _make_input(self, f: FormField) -> QWidget:
        if f.kind is FieldKind.LONG_TEXT:
            edit = QPlainTextEdit(self)
            edit.setTabChangesFocus(True)
            edit.setMaximumHeight(96)
            edit.textChanged.connect(self._on_input_changed)
            return edit
        if f.kind in (FieldKind.CHOICE, FieldKind.EDITABLE_CHOICE):
            combo = QComboBox(self)
            choices = f.choices or _catalog_types()
            for label, value in choices:
                combo.addItem(label, value)
            if f.kind is FieldKind.EDITABLE_CHOICE:
                combo.setEditable(True)
                combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
                combo.editTextChanged.connect(self._on_input_changed)
            combo.currentIndexChanged.connect(self._on_input_changed)
            return combo
        if f.kind is FieldKind.FLAG:
            box = QCheckBox(self)
            box.toggled.connect(self._on_input_changed)
            return box
        line = QLineEdit(self)
        if f.kind is FieldKind.REFERENCE:
            line.setPlaceholderText("an id" if not f.optional else "an id, or empty for none")
        elif f.kind in (FieldKind.REFERENCES, FieldKind.TEXT_LIST):
            line.setPlaceholderText("comma-separated")
        line.textEdited.connect(self._on_input_changed)
        return line

    def set_id_choices(self, document: ThreatModel | None) -> None:
        """Offer completion of existing ids in reference fields."""
        if document is self._choices_document:
            return
        self._choices_document = document
        for f in self.fields:
            if f.kind is FieldKind.REFERENCE:
                widget = self._inputs[f.key]
                assert isinstance(widget, QLineEdit)
                ids = [str(e.id) for e in getattr(document, f.section, ())] if document else []
                completer = QCompleter(ids, widget)
                completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
                completer.setFilterMode(Qt.MatchFlag.MatchContains)
                # Qt deletes the previous completer, which this widget parents.
                widget.setCompleter(completer)

    # -- values -----------------------------------------------------------------------------

    def input_for(self, key: str) -> QWidget:
        return self._inputs[key]

    def error_for(self, key: str) -> QLabel:
        return self._errors[key]

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in self.fields:
            widget = self._inputs[f.key]
            if isinstance(widget, QPlainTextEdit):
                out[f.key] = widget.toPlainText()
            elif isinstance(widget, QComboBox):
                if f.kind is FieldKind.EDITABLE_CHOICE:
                    out[f.key] = widget.currentText().strip()
                else:
                    out[f.key] = widget.currentData()
            elif isinstance(widget, QCheckBox):
                out[f.key] = widget.isChecked()
            elif isinstance(widget, QLineEdit):
                text = widget.text()
                if f.kind in (FieldKind.TEXT_LIST, FieldKind.REFERENCES):
                    out[f.key] = _split_list(text)
                elif f.kind is FieldKind.REFERENCE:
                    out[f.key] = text.strip()
                else:
                    out[f.key] = text
        return out

    def set_values(self, values: dict[str, Any]) -> None:
        self._loading = True
        try:
            for key, value in values.items():
                widget = self._inputs.get(key)
                if isinstance(widget, QPlainTextEdit):
                    widget.setPlainText(str(value))
                elif isinstance(widget, QComboBox):
                    index = widget.findData(value)
                    if index >= 0:
                        widget.setCurrentIndex(index)
                    elif widget.isEditable():
                        widget.setEditText(str(value))
                elif isinstance(widget, QCheckBox):
                    widget.setChecked(bool(value))
                elif isinstance(widget, QLineEdit):
                    widget.setText(", ".join(value) if isinstance(value, list) else str(value))
        finally:
            self._loading = False
        self.clear_errors()

    # -- errors -----------------------------------------------------------------------------

    def show_error(self, key: str, message: str) -> None:
        label = self._errors[key]
        label.setText(message)
        label.show()

    def clear_errors(self) -> None:
        for label in self._errors.values():
            label.hide()
            label.clear()

    def shown_errors(self) -> dict[str, str]:
        return {k: v.text() for k, v in self._errors.items() if not v.isHidden()}

    def _on_input_changed(self, *_args: Any) -> None:
        if not self._loading:
            self.edited.emit()


_REQUIRED_ON_ADD = frozenset({"name", "title", "from", "to", "category", "severity", "type"})


def add_input(section: str, values: dict[str, Any]) -> dict[str, Any]:
    """The add action's input from the Add dialog's values (empty optional fields left out)."""
    fields = {f.key: f for f in ADD_FIELDS[section]}
    required = _REQUIRED_ON_ADD | ({"description"} if section == "threats" else set())
    out: dict[str, Any] = {}
    for key, value in values.items():
        if fields[key].kind is FieldKind.FLAG:
            if value or key == "authenticated":
                out[key] = value
        elif value not in ("", []) or key in required:
            out[key] = value  # an empty required field is refused by the action's own check
    return out


def edit_changes(entity: Any, fields: Sequence[FormField], values: dict[str, Any]) -> dict[str, Any]:
    """The update action's input: only the fields whose value differs from the entity's."""
    before = entity_values(entity, fields)
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key in (MITIGATION_STATUS, MITIGATION_TEXT) or value == before.get(key):
            continue
        changes[key] = value
    if MITIGATION_STATUS in values:
        status, text = values[MITIGATION_STATUS], values.get(MITIGATION_TEXT, "")
        if status != before[MITIGATION_STATUS] or text != before.get(MITIGATION_TEXT, ""):
            # A mitigation without a status cannot be stored: the action's input check says so.
            changes["mitigation"] = (
                {"description": text} if status == NO_MITIGATION
                else {"status": status, "description": text}
            )
    return changes


def form_key(change_key: str) -> str:
    """The form row an update input key is shown in."""
    return MITIGATION_STATUS if change_key == "mitigation" else change_key
