"""A read-only Markdown view for untrusted model text: no HTML, no links followed, no resources.

Model output is untrusted. `setMarkdown` with the no-HTML feature flags shows raw HTML as
literal text; links are drawn but never opened (not even on click); images and any other
resource the text names are never loaded, local or remote.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextBrowser, QWidget

MARKDOWN_FEATURES = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)
"""GitHub-flavoured Markdown with every HTML span and block shown as text."""


def stable_prefix_length(text: str) -> int:
    """Where the finished Markdown blocks end: the last blank line outside a code fence.

    Text before it will not change meaning as more arrives, so a stream renders it once.
    """
    cut = text.rfind("\n\n")
    while cut > 0:
        if text.count("```", 0, cut) % 2 == 0:
            return cut + 2
        cut = text.rfind("\n\n", 0, cut)
    return 0


class MarkdownView(QTextBrowser):
    """Shows Markdown safely; `set_markdown` only re-renders what changed.

    While text only grows (a stream), finished blocks are rendered once and only the open
    tail is re-rendered, so the cost per update stays flat however long the answer gets.
    `exact=True` renders the whole text in one pass (the final form of an answer).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self._markdown = ""
        self._stable = 0  # characters of `_markdown` rendered as finished blocks
        self._tail_at = 0  # document position where the open tail's rendering starts

    @property
    def markdown(self) -> str:
        return self._markdown

    def set_markdown(self, text: str, *, exact: bool = False) -> None:
        if text == self._markdown and not exact:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        if exact or not text.startswith(self._markdown[: self._stable]) or not self._markdown:
            self._render_all(text, exact=exact)
        else:
            self._render_growth(text)
        self._markdown = text
        if at_end:
            bar.setValue(bar.maximum())

    def _render_all(self, text: str, *, exact: bool) -> None:
        self.document().setMarkdown(text, MARKDOWN_FEATURES)
        if exact:
            self._stable = len(text)
            self._tail_at = self._end_position()
        else:
            self._stable = 0
            self._tail_at = 0
            self._render_growth(text, reset=True)

    def _render_growth(self, text: str, *, reset: bool = False) -> None:
        doc = self.document()
        if reset:
            doc.clear()
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()
        cursor.setPosition(self._tail_at)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        stable = max(stable_prefix_length(text), self._stable)
        if stable > self._stable:
            self._insert(cursor, text[self._stable:stable])
            self._stable = stable
            self._tail_at = self._end_position()
            cursor.setPosition(self._tail_at)
        self._insert(cursor, text[self._stable:])
        cursor.endEditBlock()

    def _insert(self, cursor: QTextCursor, markdown: str) -> None:
        if not markdown.strip():
            return
        if cursor.position() > 0:
            cursor.insertBlock()
        cursor.insertMarkdown(markdown, MARKDOWN_FEATURES)

    def _end_position(self) -> int:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor.position()

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        """Qt override: loadResource (nothing named by model text is ever fetched)."""
        return None

    def setSource(
        self,
        name: QUrl | str,
        type: QTextDocument.ResourceType = QTextDocument.ResourceType.UnknownResource,
    ) -> None:
        """Qt override: setSource (never navigates away from the model's text)."""
        return
