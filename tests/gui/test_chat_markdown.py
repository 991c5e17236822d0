"""Model text in the chat is Markdown without HTML, links that never open, and no resources."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextDocument
from pytestqt.qtbot import QtBot

from stockade.ui.common.markdown_view import MarkdownView, stable_prefix_length

HOSTILE = (
    "# Findings\n\n<b>bold?</b> <script>alert(1)</script> **real bold**\n\n"
    "[a link](https://evil.example/steal) ![pixel](https://evil.example/p.png)\n\n"
    "<img src='file:///etc/passwd'>\n"
)


def test_html_in_model_text_shows_literally_and_markdown_still_renders(qtbot: QtBot) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(HOSTILE)
    text = view.toPlainText()
    assert "<b>bold?</b>" in text
    assert "<script>alert(1)</script>" in text
    assert "<img src='file:///etc/passwd'>" in text
    assert "**" not in text  # real Markdown emphasis was rendered
    assert "Findings" in text and "#" not in text


def test_links_are_never_followed_and_resources_never_loaded(qtbot: QtBot) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(HOSTILE)
    assert not view.openLinks() and not view.openExternalLinks()
    assert view.loadResource(int(QTextDocument.ResourceType.ImageResource),
                             QUrl("https://evil.example/p.png")) is None
    before = view.toPlainText()
    view.setSource(QUrl("https://evil.example/steal"))
    assert view.toPlainText() == before
    assert view.source().isEmpty()


def test_a_growing_stream_renders_like_the_whole_text_at_once(qtbot: QtBot) -> None:
    pieces = ["Intro para", "graph.\n\n", "- one\n- two\n\n", "```\ncode line\n\n", "still code\n",
              "```\n\n", "Closing *words*."]
    streamed = MarkdownView()
    qtbot.addWidget(streamed)
    text = ""
    for piece in pieces:
        text += piece
        streamed.set_markdown(text)
    whole = MarkdownView()
    qtbot.addWidget(whole)
    whole.set_markdown(text, exact=True)
    assert [line for line in streamed.toPlainText().splitlines() if line] == \
        [line for line in whole.toPlainText().splitlines() if line]
    assert "still code" in streamed.toPlainText()
    streamed.set_markdown(text, exact=True)
    assert streamed.toPlainText() == whole.toPlainText()


def test_the_stable_prefix_never_ends_inside_a_code_fence() -> None:
    assert stable_prefix_length("a\n\nb") == 3
    assert stable_prefix_length("a\n\n```\nx\n\ny") == 3
    assert stable_prefix_length("no break yet") == 0
