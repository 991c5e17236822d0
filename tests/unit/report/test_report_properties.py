"""Property tests: no document text can add markup to the HTML report or a formula to the CSV."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.report.csv_export import render_csv
from stockade.report.html import render_html
from stockade.thf.model import ThreatModel
from stockade.thf.validate import validate_document
from tests.conftest import examples

# Every tag and attribute the report itself writes; document text must never add others.
OUR_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "div", "h1", "h2", "h3", "h4",
    "dl", "dt", "dd", "p", "nav", "a", "main", "section", "span", "table", "thead", "tbody",
    "tr", "th", "td", "code", "strong", "article", "footer", "svg", "defs", "marker", "path",
    "g", "rect", "text", "line", "circle",
}  # fmt: skip
EVENT_ATTRIBUTE_PREFIX = "on"

# Text a hostile document might carry: markup characters, quotes, formula starts, controls.
_TOKENS = [*"<>\"'&=+-@/\\ \t\r\nabcXYZ;:()!", "script", "onload", "<img src=x ", "-->"]
hostile_text = st.lists(st.sampled_from(_TOKENS), max_size=24).map("".join)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)

    handle_startendtag = handle_starttag


def _document(text: str) -> ThreatModel:
    return validate_document(
        {
            "version": "1.0",
            "metadata": {"title": text, "author": text, "created": "2026-01-01",
                         "modified": "2026-01-01", "description": text},
            "elements": [
                {"id": "a", "type": text, "name": text, "description": text,
                 "trust_zone": text, "position": {"x": 0, "y": 0}, "fill_color": text},
                {"id": "b", "type": "process", "name": "B", "position": {"x": 300, "y": 0}},
            ],
            "data_flows": [{"id": "f", "name": text, "from": "a", "to": "b", "protocol": text}],
            "trust_boundaries": [{"id": "tb", "name": text, "contains": ["a"],
                                  "position": {"x": 0, "y": 0}, "stroke_color": text}],
            "threats": [
                {"id": "t", "title": text, "category": "Spoofing", "element": "a", "flow": "f",
                 "severity": "high", "description": text,
                 "mitigation": {"status": "in_progress", "description": text}},
            ],
        }
    )  # fmt: skip


@settings(max_examples=examples(60), deadline=None)
@given(hostile_text)
def test_document_text_never_adds_tags_or_event_attributes_to_the_html(text: str) -> None:
    collector = _Collector()
    collector.feed(render_html(_document(text)))
    collector.close()
    assert collector.tags <= OUR_TAGS
    assert not any(a.startswith(EVENT_ATTRIBUTE_PREFIX) for a in collector.attributes)


@settings(max_examples=examples(60), deadline=None)
@given(hostile_text)
def test_csv_cells_round_trip_and_never_start_a_formula(text: str) -> None:
    rows = list(csv.reader(io.StringIO(render_csv(_document(text)), newline="")))
    assert len(rows) == 2
    for cell in rows[1]:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    title = rows[1][1]
    assert title == text or title == "'" + text
