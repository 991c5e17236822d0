"""The document session: the live document object and one undo/redo stack shared by manual
edits and assistant turns.

Every entry carries a serial number that names the edit for its whole life (through undo and
redo), so a turn can tell whether its entry is still the newest, was undone, or was buried.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stockade.thf.model import ThreatModel

DEFAULT_MAX_DEPTH = 100


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One undoable edit: the document as it was before the edit (in `past`) or after it
    (in `future`), the edit's label and its serial."""

    document: ThreatModel
    label: str
    serial: int


class EntryFate(StrEnum):
    NEWEST = "newest"  # top of the undo stack: undo would revert exactly this edit
    BURIED = "buried"  # still undoable, but newer edits sit on top of it
    UNDONE = "undone"  # undone (maybe redoable, maybe discarded by a later edit)
    TRIMMED = "trimmed"  # dropped off the bottom of a full stack
    UNKNOWN = "unknown"  # never pushed in this session


class EditHistory:
    """Undo and redo stacks with a fixed maximum depth."""

    def __init__(self, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        if max_depth <= 0:
            raise ValueError("History depth must be a positive number of edits.")
        self.max_depth = max_depth
        self.past: list[HistoryEntry] = []
        self.future: list[HistoryEntry] = []
        self._next_serial = 1
        self._trimmed: set[int] = set()
        self._undone: set[int] = set()

    def push(self, before: ThreatModel, label: str) -> HistoryEntry:
        """Record an edit whose pre-edit document is `before`; clears the redo stack."""
        entry = HistoryEntry(before, label, self._next_serial)
        self._next_serial += 1
        self.past.append(entry)
        for dropped in self.future:
            self._undone.add(dropped.serial)
        self.future.clear()
        while len(self.past) > self.max_depth:
            self._trimmed.add(self.past.pop(0).serial)
        return entry

    def undo(self, current: ThreatModel) -> ThreatModel | None:
        if not self.past:
            return None
        entry = self.past.pop()
        self.future.append(HistoryEntry(current, entry.label, entry.serial))
        self._undone.add(entry.serial)
        return entry.document

    def redo(self, current: ThreatModel) -> ThreatModel | None:
        if not self.future:
            return None
        entry = self.future.pop()
        self.past.append(HistoryEntry(current, entry.label, entry.serial))
        self._undone.discard(entry.serial)
        return entry.document

    def fate(self, serial: int) -> EntryFate:
        if self.past and self.past[-1].serial == serial:
            return EntryFate.NEWEST
        if any(e.serial == serial for e in self.past):
            return EntryFate.BURIED
        if serial in self._undone:
            return EntryFate.UNDONE
        if serial in self._trimmed:
            return EntryFate.TRIMMED
        return EntryFate.UNKNOWN

    @property
    def can_undo(self) -> bool:
        return bool(self.past)

    @property
    def can_redo(self) -> bool:
        return bool(self.future)

    def undo_label(self) -> str | None:
        return self.past[-1].label if self.past else None

    def redo_label(self) -> str | None:
        return self.future[-1].label if self.future else None


class DocumentSession:
    """Holds the one live document object. Every change replaces it (identity matters: a tool
    result is committed only if the document it read is still the live object)."""

    def __init__(self, document: ThreatModel, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._document = document
        self.history = EditHistory(max_depth)

    @property
    def document(self) -> ThreatModel:
        return self._document

    def apply_edit(self, new_document: ThreatModel, label: str) -> HistoryEntry:
        """A manual (or first-of-turn) edit: push the current document, then replace it."""
        entry = self.history.push(self._document, label)
        self._document = new_document
        return entry

    def replace(self, new_document: ThreatModel) -> None:
        """Replace the live document without a history entry (later commits of one turn)."""
        self._document = new_document

    def undo(self) -> bool:
        previous = self.history.undo(self._document)
        if previous is None:
            return False
        self._document = previous
        return True

    def redo(self) -> bool:
        following = self.history.redo(self._document)
        if following is None:
            return False
        self._document = following
        return True
