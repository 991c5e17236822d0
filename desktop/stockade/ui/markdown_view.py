"""A read-only Markdown view for untrusted model text: no HTML, no links followed, no resources.

Model output is untrusted. `setMarkdown` with the no-HTML feature flags shows raw HTML as
literal text; links are drawn but never opened (not even on click); images and any other
resource the text names are never loaded, local or remote.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QTextBrowser, QWidget

MARKDOWN_FEATURES = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)
"""GitHub-flavoured Markdown with every HTML span and block shown as text."""


class MarkdownView(QTextBrowser):
    """Shows Markdown safely; `set_markdown` only re-renders when the text changed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self._markdown = ""

    @property
    def markdown(self) -> str:
        return self._markdown

    def set_markdown(self, text: str) -> None:
        if text == self._markdown:
            return
        self._markdown = text
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        self.document().setMarkdown(text, MARKDOWN_FEATURES)
        if at_end:
            bar.setValue(bar.maximum())

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
