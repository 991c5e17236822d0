"""The detail pane: the selected entity's fields, edited and applied through the shared actions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from stockade.thf.model import ENTITY_TYPES, ThreatModel
from stockade.tools import actions
from stockade.ui.common.colors import text_style
from stockade.ui.common.prompts import UnappliedChoice
from stockade.ui.document.entity_form import (
    EDIT_FIELDS,
    EntityForm,
    edit_changes,
    entity_values,
    form_key,
)
from stockade.ui.document.entity_kinds import update_entity
from stockade.ui.document.open_document import OpenDocument

if TYPE_CHECKING:
    from stockade.ui.common.prompts import Prompts

INTERNAL_FIELDS = frozenset({
    "position", "size", "label_offset", "source_handle", "target_handle", "fill_color",
    "stroke_color", "fill_opacity", "stroke_opacity", "font_size", "font_weight", "icon",
    "viewport", "layout_file",
})
"""Canvas geometry, handles and styling: kept in the file, hidden from "All fields" by default."""


def entity_of(document: ThreatModel, section: str, entity_id: str) -> Any | None:
    for entity in getattr(document, section, ()):
        if entity.id == entity_id:
            return entity
    return None


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


def entity_fields(entity: Any, *, internal: bool = False) -> list[tuple[str, str, bool]]:
    """(field, value, is_unknown) for the fields the entity holds, known fields first;
    canvas and styling fields only when `internal`."""
    dumped = entity.model_dump(by_alias=True, exclude_none=True, mode="json")
    unknown = set(entity.extras)
    rows: list[tuple[str, str, bool]] = []
    for key, value in dumped.items():
        if key in INTERNAL_FIELDS and not internal:
            continue
        flat: list[tuple[str, str]] = []
        _flatten(key, value, flat)
        rows.extend((name, text, key in unknown) for name, text in flat)
    return rows


class DetailPane(QWidget):
    """Shows one entity in a form for its kind; Apply commits the changed fields as one step."""

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
        self._shown_entity: Any | None = None

        self.title = QLabel("Select an entity in the tree or the diagram.", self)
        self.title.setObjectName("detailTitle")
        self.title.setWordWrap(True)
        self.title.setAccessibleName("Selected entity")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.title.setFont(font)

        self.stack = QStackedWidget(self)
        self.stack.setObjectName("detailForms")
        self.stack.addWidget(QWidget(self.stack))  # page 0: nothing to edit
        self.forms: dict[str, EntityForm] = {}
        for section, fields in EDIT_FIELDS.items():
            form = EntityForm(fields, f"detail_{section}", self.stack)
            form.edited.connect(self._on_form_edited)
            self.stack.addWidget(form)
            self.forms[section] = form

        self.apply_button = QPushButton("Apply", self)
        self.apply_button.setObjectName("detailApply")
        self.apply_button.setAccessibleName("Apply changes")
        self.revert_button = QPushButton("Revert", self)
        self.revert_button.setObjectName("detailRevert")
        self.revert_button.setAccessibleName("Revert changes")
        self.error_label = QLabel(self)
        self.error_label.setObjectName("detailError")
        self.error_label.setWordWrap(True)
        self.error_label.setAccessibleName("Problem")
        self.error_label.setStyleSheet(text_style("#dc2626"))
        self.error_label.hide()

        self.fields = QTreeWidget(self)
        self.fields.setObjectName("detailFields")
        self.fields.setAccessibleName("All fields")
        self.fields.setColumnCount(2)
        self.fields.setHeaderLabels(["Field", "Value"])
        self.fields.setRootIsDecorated(False)
        self.fields.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.internal_check = QCheckBox("Show canvas and style fields", self)
        self.internal_check.setObjectName("detailShowInternal")
        self.internal_check.setAccessibleName("Show canvas and style fields")

        scroll = QScrollArea(self)
        scroll.setObjectName("detailFormScroll")
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.stack)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self._scroll = scroll
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.apply_button)
        fields_header = QHBoxLayout()
        fields_label = QLabel("All fields (read-only)", self)
        fields_label.setObjectName("detailFieldsLabel")
        fields_header.addWidget(fields_label)
        fields_header.addStretch(1)
        fields_header.addWidget(self.internal_check)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(scroll, 3)
        layout.addLayout(buttons)
        layout.addWidget(self.error_label)
        layout.addLayout(fields_header)
        layout.addWidget(self.fields, 2)

        self.apply_button.clicked.connect(self.apply_changes)
        self.revert_button.clicked.connect(self._on_revert_button_clicked)
        self.internal_check.toggled.connect(self._on_internal_check_toggled)
        document.documentChanged.connect(self.refresh)
        document.documentReplaced.connect(self.clear)
        self._show_entity(None)

    # -- public API -------------------------------------------------------------------------

    @property
    def shown(self) -> tuple[str, str] | None:
        if self._section is None or self._entity_id is None:
            return None
        return (self._section, self._entity_id)

    @property
    def form(self) -> EntityForm | None:
        """The form for the shown entity's kind (None for kinds shown read-only)."""
        return self.forms.get(self._section or "") if self._shown_entity is not None else None

    def input(self, key: str) -> QWidget:
        """The input widget of one field of the shown form (tests and accessibility checks)."""
        assert self.form is not None
        return self.form.input_for(key)

    def show_entity(self, section: str, entity_id: str) -> None:
        """Show an entity, dropping any unapplied edits (ask first with `settle_unapplied`)."""
        self._section, self._entity_id = section, entity_id
        self._shown_entity = None
        self.error_label.hide()
        self.refresh()

    def clear(self) -> None:
        self._section = self._entity_id = None
        self._shown_entity = None
        self.error_label.hide()
        self.refresh()

    def refresh(self) -> None:
        """Reload from the live document; edits in progress survive changes to other entities."""
        document = self._document.document
        entity = None
        if document is not None and self._section is not None and self._entity_id is not None:
            entity = entity_of(document, self._section, self._entity_id)
        if entity is not None and entity is self._shown_entity and self.has_unapplied_edits():
            return
        self._show_entity(entity)

    def pending_changes(self) -> dict[str, Any]:
        """What the form would change, as update-action input (only fields that differ)."""
        form = self.form
        if form is None or self._shown_entity is None:
            return {}
        return edit_changes(self._shown_entity, form.fields, form.values())

    def has_unapplied_edits(self) -> bool:
        return bool(self.pending_changes())

    async def settle_unapplied(self, prompts: Prompts) -> bool:
        """Before leaving the entity: True when its edits are applied, discarded or none."""
        if not self.has_unapplied_edits() or self._entity_id is None:
            return True
        choice = await prompts.ask_unapplied_edits(f"“{self._entity_id}”")
        if choice is UnappliedChoice.APPLY:
            return self.apply_changes()
        if choice is UnappliedChoice.DISCARD:
            self._show_entity(self._shown_entity)
            return True
        return False

    def apply_changes(self) -> bool:
        """Commit the form through the pure action as one undo step; False if refused."""
        document = self._document.document
        changes = self.pending_changes()
        form = self.form
        if document is None or form is None or self._section is None or self._entity_id is None:
            return False
        if not changes:
            return False
        form.clear_errors()
        outcome = update_entity(document, self._section, self._entity_id, changes)
        if isinstance(outcome, actions.ActionError):
            self._show_refusal(document, changes, outcome.message)
            self.editRejected.emit(outcome.message)
            return False
        self.error_label.hide()
        self._document.apply_edit(outcome.document, outcome.result)
        self.editApplied.emit(outcome.result)
        return True

    # -- internals --------------------------------------------------------------------------

    def _show_refusal(self, document: ThreatModel, changes: dict[str, Any], message: str) -> None:
        """Put the validator's message under the field that caused it, else below the form."""
        form = self.form
        assert form is not None and self._section is not None and self._entity_id is not None
        placed = False
        if len(changes) == 1:
            form.show_error(form_key(next(iter(changes))), message)
            placed = True
        else:
            # Several fields changed: try each alone to find which ones the action refuses.
            for key, value in changes.items():
                alone = update_entity(document, self._section, self._entity_id, {key: value})
                if isinstance(alone, actions.ActionError):
                    form.show_error(form_key(key), alone.message)
                    placed = True
        if placed:
            self.error_label.setText("Not applied: fix the fields marked below their input.")
        else:
            self.error_label.setText(message)
        self.error_label.show()

    def _on_form_edited(self) -> None:
        dirty = self.has_unapplied_edits()
        self.apply_button.setEnabled(dirty)
        self.revert_button.setEnabled(dirty)

    def _on_revert_button_clicked(self) -> None:
        self.error_label.hide()
        self._show_entity(self._shown_entity)

    def _on_internal_check_toggled(self, _checked: bool) -> None:
        self._fill_fields(self._shown_entity)

    def _show_entity(self, entity: Any | None) -> None:
        self._shown_entity = entity
        section = self._section
        form = self.forms.get(section or "") if entity is not None else None
        if entity is None or section is None:
            if self._entity_id is not None:
                self.title.setText(f"“{self._entity_id}” is no longer in the document.")
            else:
                self.title.setText("Select an entity in the tree or the diagram.")
            self.stack.setCurrentIndex(0)
        else:
            self.title.setText(f"{ENTITY_TYPES[section].__name__} {entity.id}")
            if form is not None:
                form.set_id_choices(self._document.document)
                form.set_values(entity_values(entity, form.fields))
                self.stack.setCurrentWidget(form)
            else:
                self.stack.setCurrentIndex(0)
        self._scroll.setVisible(form is not None)
        self.apply_button.setVisible(form is not None)
        self.revert_button.setVisible(form is not None)
        self.apply_button.setEnabled(False)
        self.revert_button.setEnabled(False)
        self._fill_fields(entity)

    def _fill_fields(self, entity: Any | None) -> None:
        self.fields.clear()
        if entity is None:
            return
        for name, value, unknown in entity_fields(entity, internal=self.internal_check.isChecked()):
            # One line per field keeps the list scannable; the tooltip has the full text.
            shown = value.strip("\n").replace("\n", " ⏎ ")
            item = QTreeWidgetItem([name + ("  (unknown field)" if unknown else ""), shown])
            item.setToolTip(1, value)
            self.fields.addTopLevelItem(item)
