"""The search text the compiled reader collects while reading is the one the entities give.

`thf/_blockyaml.c` builds the `text` filter's haystacks of the large sections from each
record's mapping as it reads (`thf.capture`), and the read tools start from it. These
tests compare it, haystack by haystack, with `section_texts` over the document's entities
(the plain definition, itself checked against `raw_haystack`), on generated documents whose
records leave out defaults, write severities in any case, hold non-ASCII text, null lists
and mitigations with and without a description; and check that the first search uses it and
that a section an edit replaced does not.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf import read_text, to_yaml, validate_document
from stockade.thf import reader as reader_module
from stockade.thf.capture import CAPTURE
from stockade.thf.columns import kept_columns
from stockade.tools import document_index
from stockade.tools.document_index import SectionIndex, section_texts
from tests.conftest import examples
from tests.unit.thf.test_properties import documents

pytestmark = pytest.mark.skipif(
    reader_module._load_block_subset is None, reason="this build has no compiled block reader"
)

TEXT_SECTIONS = [section for section, (parts, _) in CAPTURE.items() if parts]

WORDS = st.sampled_from(["", "Web", "İstanbul", "ΣΑΣ", "straße", "a\nb", "x y", "Ǆ", "ﬁ", "db"])


@st.composite
def sparse_documents(draw: st.DrawFn) -> str:
    """A file whose records leave out what may be left out, written by hand (the writer
    always writes the defaults it keeps)."""
    lines = ["version: '1.0'", "metadata:", "  title: T", "  author: A",
             "  created: 2026-01-01", "  modified: 2026-01-02", "elements:"]
    count = draw(st.integers(1, 5))
    for i in range(count):
        lines.append(f"- id: e{i}")
        lines.append(f"  type: {draw(st.sampled_from(['process', 'Data store']))}")
        lines.append(f"  name: {draw(st.sampled_from(['Web', 'İx', 'Straße', 'n']))}")
        for key in ("subtype", "trust_zone", "description"):
            choice = draw(st.sampled_from(["absent", "text", "null"] if key == "subtype"
                                          else ["absent", "text"]))
            if choice == "text":
                lines.append(f"  {key}: {draw(st.sampled_from(['Dmz', 'ÀB', 'x']))}")
            elif choice == "null":
                lines.append(f"  {key}: null")
        for key in ("technologies", "tags", "stores"):
            choice = draw(st.sampled_from(["absent", "empty", "items", "null"] if key == "stores"
                                          else ["absent", "empty", "items"]))
            if choice == "empty":
                lines.append(f"  {key}: []")
            elif choice == "items":
                lines.append(f"  {key}:")
                lines.extend(f"  - {w}" for w in draw(st.lists(
                    st.sampled_from(["Go", "ÉCOLE", "k8s"]), min_size=1, max_size=2)))
            elif choice == "null":
                lines.append(f"  {key}: null")
    lines.append("data_flows:")
    for i in range(draw(st.integers(0, 3))):
        lines += [f"- id: f{i}", f"  from: e{i % count}", "  to: e0"]
        if draw(st.booleans()):
            lines.append("  protocol: HTTPS")
        if draw(st.booleans()):
            lines += ["  data:", "  - Tokens"]
    lines.append("threats:")
    for i in range(draw(st.integers(0, 3))):
        lines += [f"- id: t{i}", "  title: Spoofed", "  category: Spoofing",
                  f"  severity: {draw(st.sampled_from(['high', 'High', 'HIGH', 'low', 'Info']))}"]
        mitigation = draw(st.sampled_from(["absent", "null", "bare", "described"]))
        if mitigation == "null":
            lines.append("  mitigation: null")
        elif mitigation == "bare":
            lines += ["  mitigation:", "    status: mitigated"]
        elif mitigation == "described":
            lines += ["  mitigation:", "    status: accepted", "    description: Ticket İ-1"]
        if draw(st.booleans()):
            lines.append("  description: Ǆ case")
    return "\n".join(lines) + "\n"


def check_kept_texts(text: str) -> int:
    """Assert every kept search text is the entities' own; how many sections kept one."""
    model = read_text(text)
    kept_sections = 0
    for section in TEXT_SECTIONS:
        entities = getattr(model, section)
        kept = kept_columns(entities)
        assert kept is not None, section
        if kept.search_text is None:
            continue
        kept_sections += 1
        joined, lengths = kept.search_text
        expected = section_texts(section, entities)
        assert joined == "\x00".join(expected), section
        assert lengths == list(map(len, expected)), section
        # And the index's view of it: each haystack lower-cased, where the plain way puts it.
        document_index.clear_cache()
        search, starts = SectionIndex(section, entities).search_text()
        assert [search[a:b - 1] for a, b in pairwise(starts)] == [h.lower() for h in expected]
    return kept_sections


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(sparse_documents())
def test_kept_search_text_is_the_entities_own_for_sparse_files(text: str) -> None:
    assert check_kept_texts(text) == len(TEXT_SECTIONS)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_kept_search_text_is_the_entities_own_for_written_models(document: dict[str, Any]) -> None:
    check_kept_texts(to_yaml(validate_document(document)))


def test_the_first_text_search_starts_from_the_kept_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
            "  modified: 2026-01-02\nelements:\n- id: web\n  type: process\n  name: Web app\n"
            "- id: db\n  type: data_store\n  name: Orders\n  description: |-\n    PII\n    cards\n")
    model = read_text(text)
    document_index.clear_cache()

    def not_called(*_: Any) -> list[str]:
        raise AssertionError("the kept search text was not used")

    monkeypatch.setattr(document_index, "section_texts", not_called)
    index = SectionIndex("elements", model.elements)
    assert index.text_matches("cards") == [1]
    assert index.text_matches("web app") == [0]


def test_a_section_an_edit_replaced_builds_its_own_text() -> None:
    text = ("version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
            "  modified: 2026-01-02\nelements:\n- id: web\n  type: process\n  name: Web app\n")
    model = read_text(text)
    renamed = model.elements[0].model_copy(update={"name": "Gateway"})
    edited = model.model_copy(update={"elements": [renamed]})
    document_index.clear_cache()
    assert SectionIndex("elements", edited.elements).text_matches("gateway") == [0]
    assert SectionIndex("elements", edited.elements).text_matches("web app") == []
