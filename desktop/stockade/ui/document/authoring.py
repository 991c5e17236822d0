"""Hand authoring: add and delete entities through the shared actions, one undo step each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QToolBar

from stockade.tools import actions
from stockade.ui.common.prompts import await_dialog
from stockade.ui.document.entity_kinds import KINDS, add_entity, delete_entity, update_entity
from stockade.ui.document.new_entity_dialog import NewEntityDialog

if TYPE_CHECKING:
    from stockade.ui.main_window import MainWindow

_TOOLBAR_KINDS = ("elements", "data_flows", "trust_boundaries", "threats")


class Authoring(QObject):
    """The Add and Delete commands of one window (menus, toolbar, tree context menu, Delete key)."""

    entityAdded = Signal(str, str)
    """(section, new id) after an add was committed."""
    entityDeleted = Signal(str, str)
    """(section, id) after a delete was committed."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("authoring")
        self._window = window
        self.add_actions: dict[str, QAction] = {}
        self.delete_action = QAction("&Delete", window)
        self.delete_action.setObjectName("actionDelete")
        self.delete_action.setShortcut(QKeySequence.StandardKey.Delete)
        self.delete_action.setToolTip("Delete the selected entity")
        self.delete_action.triggered.connect(self._on_delete_action_triggered)
        for section, kind in KINDS.items():
            action = QAction(f"Add {kind.word}…", window)
            action.setObjectName(f"actionAdd_{section}")
            action.setToolTip(f"Add a {kind.word}")
            action.triggered.connect(
                lambda _checked=False, s=section: self._window.spawn(self.add(s))
            )
            self.add_actions[section] = action

    def install(self, edit_menu: QMenu, toolbar: QToolBar) -> None:
        edit_menu.addSeparator()
        add_menu = edit_menu.addMenu("&Add")
        add_menu.setObjectName("addMenu")
        for action in self.add_actions.values():
            add_menu.addAction(action)
        edit_menu.addAction(self.delete_action)
        for section in _TOOLBAR_KINDS:
            toolbar.addAction(self.add_actions[section])
        toolbar.addAction(self.delete_action)

    def update_enabled(self, has_document: bool, selected: tuple[str, str] | None) -> None:
        for action in self.add_actions.values():
            action.setEnabled(has_document)
        self.delete_action.setEnabled(
            has_document and selected is not None and selected[0] in KINDS
        )

    # -- commands ---------------------------------------------------------------------------

    async def add(self, section: str, preset: dict[str, Any] | None = None) -> str | None:
        """Ask for a new entity's fields; returns its id once committed, None if cancelled."""
        document = self._window.open_document.document
        if document is None or section not in KINDS:
            return None
        committed: list[str] = []

        def attempt(fields: dict[str, Any]) -> actions.ActionOutcome:
            live = self._window.open_document.document
            if live is None:
                return actions.ActionError("The document was closed.")
            outcome = add_entity(live, section, {**(preset or {}), **fields}
                                 if section == "elements" else fields)
            if isinstance(outcome, actions.ActionResult):
                self._window.open_document.apply_edit(outcome.document, outcome.result)
                committed.append(outcome.new_id or "")
            return outcome

        form_preset = {k: v for k, v in (preset or {}).items() if k != "position"}
        dialog = NewEntityDialog(section, document, attempt, form_preset, self._window)
        await await_dialog(dialog)
        dialog.deleteLater()
        if not committed:
            return None
        self.entityAdded.emit(section, committed[0])
        return committed[0]

    async def delete(self, section: str, entity_id: str) -> bool:
        """Delete one entity; when others refer to it, list what goes with it and ask first."""
        document = self._window.open_document.document
        kind = KINDS.get(section)
        if document is None or kind is None:
            return False
        outcome = delete_entity(document, section, entity_id)
        if isinstance(outcome, actions.ActionError) and kind.cascades:
            cascade = delete_entity(document, section, entity_id, cascade=True)
            if isinstance(cascade, actions.ActionResult):
                confirmed = await self._window.prompts.confirm_cascade(
                    f'Other entities refer to {kind.word} "{entity_id}".', list(cascade.removed[1:])
                )
                if not confirmed:
                    return False
                live = self._window.open_document.document
                # The assistant may have committed while the question was open: redo it on that.
                outcome = cascade if live is document else (
                    delete_entity(live, section, entity_id, cascade=True) if live is not None
                    else actions.ActionError("The document was closed.")
                )
        if isinstance(outcome, actions.ActionError):
            self._window.prompts.show_error(f"The {kind.word} was not deleted", outcome.message)
            return False
        self._window.open_document.apply_edit(outcome.document, outcome.result)
        self.entityDeleted.emit(section, entity_id)
        return True

    def move(self, section: str, entity_id: str, changes: dict[str, Any]) -> bool:
        """Commit a drag on the diagram (a new position, and size for a boundary) as one step."""
        document = self._window.open_document.document
        if document is None:
            return False
        outcome = update_entity(document, section, entity_id, changes)
        if isinstance(outcome, actions.ActionError):
            self._window.statusBar().showMessage(outcome.message, 8000)
            # The diagram shows the dragged box where it was dropped: put it back.
            self._window.diagram_view.set_document(document, keep_view=True)
            return False
        self._window.open_document.apply_edit(outcome.document, outcome.result)
        return True

    def _on_delete_action_triggered(self) -> None:
        selected = self._window.selected_entity()
        if selected is not None:
            self._window.spawn(self.delete(*selected))
