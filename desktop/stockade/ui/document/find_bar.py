"""Find (Ctrl+F): every entity kind by id, name, description, technology and threat text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from stockade.thf.model import SECTION_NAMES, ThreatModel


def _texts(section: str, entity: Any) -> Iterator[str]:
    yield str(entity.id)
    for attr in ("name", "title", "description", "type", "protocol", "trust_zone", "subtype"):
        value = getattr(entity, attr, None)
        if isinstance(value, str):
            yield value
    for attr in ("technologies", "data", "tags", "stores"):
        value = getattr(entity, attr, None)
        if isinstance(value, list):
            yield from (str(v) for v in value)
    if section == "threats":
        yield entity.category.value
        if entity.mitigation is not None:
            yield entity.mitigation.description


def find_matches(document: ThreatModel, text: str) -> list[tuple[str, str]]:
    """(section, id) of every entity with `text` in one of its searchable fields, in tree order."""
    needle = text.strip().casefold()
    if not needle:
        return []
    return [
        (section, str(entity.id))
        for section in SECTION_NAMES
        for entity in getattr(document, section)
        if any(needle in value.casefold() for value in _texts(section, entity))
    ]


class FindBar(QWidget):
    """A hidden bar above the tree: type, then Enter / Shift+Enter (or the arrows) to step."""

    matchChosen = Signal(str, str)
    """(section, id) of the match to show."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("findBar")
        self._document: ThreatModel | None = None
        self._matches: list[tuple[str, str]] = []
        self._current = -1
        self.edit = QLineEdit(self)
        self.edit.setObjectName("findText")
        self.edit.setPlaceholderText("Find id, name, description, technology, threat text")
        self.edit.setAccessibleName("Find")
        self.edit.setClearButtonEnabled(True)
        self.count_label = QLabel("", self)
        self.count_label.setObjectName("findCount")
        self.count_label.setAccessibleName("Matches")
        self.previous_button = self._button("findPrevious", "▲", "Previous match (Shift+Enter)")
        self.next_button = self._button("findNext", "▼", "Next match (Enter)")
        self.close_button = self._button("findClose", "✕", "Close find (Esc)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.count_label)
        layout.addWidget(self.previous_button)
        layout.addWidget(self.next_button)
        layout.addWidget(self.close_button)
        # Re-search after a short pause so typing in a 10k-entity model stays fluid.
        self._timer = QTimer(self)
        self._timer.setObjectName("findTimer")
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.search)
        self.edit.textChanged.connect(self._on_edit_textChanged)
        self.edit.returnPressed.connect(self._on_edit_returnPressed)
        self.next_button.clicked.connect(self.next)
        self.previous_button.clicked.connect(self.previous)
        self.close_button.clicked.connect(self.hide)
        escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        escape.setObjectName("findEscape")
        escape.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        escape.activated.connect(self.hide)
        self.hide()

    def _button(self, name: str, text: str, tip: str) -> QToolButton:
        button = QToolButton(self)
        button.setObjectName(name)
        button.setText(text)
        button.setToolTip(tip)
        button.setAccessibleName(tip.split(" (")[0])
        return button

    @property
    def matches(self) -> list[tuple[str, str]]:
        return list(self._matches)

    @property
    def current(self) -> int:
        return self._current

    def start(self) -> None:
        """Ctrl+F: show the bar with its text selected."""
        self.show()
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()

    def set_document(self, document: ThreatModel | None) -> None:
        self._document = document
        if self.isVisible() and self.edit.text().strip():
            self.search(keep_position=True)
        else:
            self._matches, self._current = [], -1
            self._update_label()

    def search(self, keep_position: bool = False) -> None:
        self._timer.stop()
        previous = self._matches[self._current] if 0 <= self._current < len(self._matches) else None
        document = self._document
        self._matches = find_matches(document, self.edit.text()) if document is not None else []
        self._current = -1
        if keep_position and previous in self._matches:
            self._current = self._matches.index(previous)
        self._update_label()

    def next(self) -> None:
        self._step(1)

    def previous(self) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        if self._timer.isActive():
            self.search()
        if not self._matches:
            self._update_label()
            return
        if self._current < 0:
            self._current = 0 if delta > 0 else len(self._matches) - 1
        else:
            self._current = (self._current + delta) % len(self._matches)
        self._update_label()
        self.matchChosen.emit(*self._matches[self._current])

    def _update_label(self) -> None:
        if not self.edit.text().strip():
            self.count_label.setText("")
        elif not self._matches:
            self.count_label.setText("No matches")
        elif self._current < 0:
            count = len(self._matches)
            self.count_label.setText(f"{count} match{'es' if count != 1 else ''}")
        else:
            self.count_label.setText(f"{self._current + 1} of {len(self._matches)}")

    def _on_edit_returnPressed(self) -> None:
        if QApplication.keyboardModifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.previous()
        else:
            self.next()

    def _on_edit_textChanged(self, _text: str) -> None:
        self._timer.start()
