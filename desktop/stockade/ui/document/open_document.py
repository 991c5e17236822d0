"""The document open in a window: its file, its shared undo history and its dirty state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from stockade.loop.history import DocumentSession
from stockade.thf.model import ThreatModel

HistoryFactory = Callable[[ThreatModel], DocumentSession]


class OpenDocument(QObject):
    """Owns the live document of one window; every change to it is announced from here."""

    documentReplaced = Signal()
    """A different document was opened or created (selection and expansion no longer apply)."""
    documentChanged = Signal()
    """The live document changed in place: an edit, an undo, a redo or an AI commit."""
    dirtyChanged = Signal(bool)
    pathChanged = Signal(str)

    def __init__(self, parent: QObject, history_factory: HistoryFactory | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("openDocument")
        self._history_factory = history_factory or DocumentSession
        self._history: DocumentSession | None = None
        self._path: Path | None = None
        self._saved: ThreatModel | None = None
        self._dirty = False

    # -- state ------------------------------------------------------------------------------

    @property
    def document(self) -> ThreatModel | None:
        return self._history.document if self._history is not None else None

    @property
    def history(self) -> DocumentSession | None:
        """The shared document session (the assistant commits its turns through this too)."""
        return self._history

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def is_dirty(self) -> bool:
        return self._dirty

    @property
    def display_name(self) -> str:
        if self._path is not None:
            return self._path.name
        document = self.document
        return document.metadata.title if document is not None else "Stockade"

    @property
    def can_undo(self) -> bool:
        return self._history is not None and self._history.history.can_undo

    @property
    def undo_label(self) -> str | None:
        return self._history.history.undo_label() if self._history is not None else None

    @property
    def redo_label(self) -> str | None:
        return self._history.history.redo_label() if self._history is not None else None

    @property
    def can_redo(self) -> bool:
        return self._history is not None and self._history.history.can_redo

    # -- changes ----------------------------------------------------------------------------

    def replace(self, document: ThreatModel, path: Path | None, *, saved: bool) -> None:
        """Start over with `document` (an opened file, or an unsaved new one when `saved` is False)."""
        self._history = self._history_factory(document)
        self._path = path
        self._saved = document if saved else None
        self.pathChanged.emit(str(path) if path is not None else "")
        self.documentReplaced.emit()
        self._update_dirty()

    def apply_edit(self, new_document: ThreatModel, label: str) -> None:
        """Commit a hand edit as one undo step."""
        if self._history is None:
            raise RuntimeError("no document is open")
        self._history.apply_edit(new_document, label)
        self.notify_committed()

    def undo(self) -> None:
        if self.can_undo and self._history is not None:
            self._history.undo()
            self.notify_committed()

    def redo(self) -> None:
        if self.can_redo and self._history is not None:
            self._history.redo()
            self.notify_committed()

    def notify_committed(self) -> None:
        """Tell the panes the history moved (call after committing through `history` directly)."""
        self.documentChanged.emit()
        self._update_dirty()

    def mark_saved(self, document: ThreatModel, path: Path) -> None:
        """`document` is now what `path` holds on disk."""
        path_changed = path != self._path
        self._path = path
        self._saved = document
        if path_changed:
            self.pathChanged.emit(str(path))
        self._update_dirty()

    def _update_dirty(self) -> None:
        current = self.document
        # Identity first: undoing back to the saved state hands back the very same object.
        dirty = current is not None and current is not self._saved and current != self._saved
        if dirty != self._dirty:
            self._dirty = dirty
            self.dirtyChanged.emit(dirty)
