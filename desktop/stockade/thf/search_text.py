"""What the compiled reader collects, while it reads, for the read tools' text search.

The `text` filter of `search_entities` searches each entity's haystack: its text fields, one
per line, in the order `tools.document_index.raw_haystack` defines. Its first search of a
large section used to build every haystack from the entities, a pass over objects scattered
over the heap that cost tens of milliseconds at 50,000 entities. The compiled reader
(`thf/_blockyaml.c`) builds the same text from each record's mapping just after reading it,
for the sections below, and `thf.columns` keeps it with the section's columns once the
document has validated (a document that validates holds exactly these values: text fields
are strict, and a severity is its letters lower-cased).

`CAPTURE` spells, per section and in haystack order, each part's file key and rule; the
numbers are the C reader's. tests/unit/tools/test_document_index.py checks the captured text
against `section_texts` on generated documents.
"""

from __future__ import annotations

TEXT = 0
"""Required text."""
TEXT_OR_EMPTY = 1
"""Text that defaults to "" (the part is "" when the key is absent)."""
OPTIONAL = 2
"""Text that defaults to None (left out when absent or null)."""
ITEMS = 3
"""A list of texts, each item a part (nothing when absent or null)."""
LOWERCASE = 4
"""Required text read case-insensitively as an enum (a severity): ASCII letters lowered."""
NESTED_TEXT_OR_EMPTY = 5
"""`key.inner` of a nested record (a threat's mitigation): left out when the record is
absent or null, "" when `inner` is."""

CAPTURE: dict[str, tuple[tuple[str, int] | tuple[str, int, str], ...]] = {
    "elements": (
        ("id", TEXT),
        ("name", TEXT),
        ("type", TEXT),
        ("subtype", OPTIONAL),
        ("trust_zone", TEXT_OR_EMPTY),
        ("description", TEXT_OR_EMPTY),
        ("technologies", ITEMS),
        ("tags", ITEMS),
        ("stores", ITEMS),
    ),
    "data_flows": (
        ("id", TEXT),
        ("name", TEXT_OR_EMPTY),
        ("protocol", TEXT_OR_EMPTY),
        ("from", TEXT),
        ("to", TEXT),
        ("data", ITEMS),
    ),
    "threats": (
        ("id", TEXT),
        ("title", TEXT),
        ("category", TEXT),
        ("severity", LOWERCASE),
        ("description", TEXT_OR_EMPTY),
        ("mitigation", NESTED_TEXT_OR_EMPTY, "description"),
    ),
}
"""The sections whose search text the reader collects (the large ones), part by part."""

SearchTexts = dict[str, tuple[str, list[int]]]
"""Per section: the haystacks joined by "\\x00", and each haystack's length."""
