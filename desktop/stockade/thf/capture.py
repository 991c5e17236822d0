"""What the compiled reader collects while it reads: search texts and id/reference columns.

Both would otherwise be read back from the validated entities, a pass over objects scattered
over the heap (tens to hundreds of milliseconds at 50,000 entities); the compiled reader
(`thf/_blockyaml.c`) takes them from each record's mapping just after reading it, while it is
still in the processor's cache. A document that validates holds exactly these values (text
fields are strict, so the entity keeps the very string read; an optional field left out is
None; a severity is its letters lower-cased), so once it has validated they stand for the
entities' own:

- the search text: the `text` filter of `search_entities` searches each entity's haystack, its
  text fields one per line in the order `tools.document_index.raw_haystack` defines;
  `thf.columns` keeps it for the first search (tests/unit/tools/test_read_search_text.py
  compares it with `section_texts`);
- the id and reference columns `validate_references` checks, and their joined form that
  `thf.columns` keeps for first lookups (tests/unit/thf/test_captured_columns.py compares
  them with the columns read from the entities).

`CAPTURE` spells, per section, the search text's parts in haystack order (file key and rule;
the numbers are the C reader's) and the columns' file keys.
"""

from __future__ import annotations

from typing import Any

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

Part = tuple[str, int] | tuple[str, int, str]

ELEMENT_TEXT: tuple[Part, ...] = (
    ("id", TEXT),
    ("name", TEXT),
    ("type", TEXT),
    ("subtype", OPTIONAL),
    ("trust_zone", TEXT_OR_EMPTY),
    ("description", TEXT_OR_EMPTY),
    ("technologies", ITEMS),
    ("tags", ITEMS),
    ("stores", ITEMS),
)
FLOW_TEXT: tuple[Part, ...] = (
    ("id", TEXT),
    ("name", TEXT_OR_EMPTY),
    ("protocol", TEXT_OR_EMPTY),
    ("from", TEXT),
    ("to", TEXT),
    ("data", ITEMS),
)
THREAT_TEXT: tuple[Part, ...] = (
    ("id", TEXT),
    ("title", TEXT),
    ("category", TEXT),
    ("severity", LOWERCASE),
    ("description", TEXT_OR_EMPTY),
    ("mitigation", NESTED_TEXT_OR_EMPTY, "description"),
)

CAPTURE: dict[str, tuple[tuple[Part, ...], tuple[str, ...]]] = {
    "elements": (ELEMENT_TEXT, ("id", "layer", "group")),
    "data_flows": (FLOW_TEXT, ("id", "from", "to")),
    "threats": (THREAT_TEXT, ("id", "element", "flow")),
    "groups": ((), ("id", "parent")),
    "relationships": ((), ("id", "from", "to")),
}
"""Per section: the search text's parts (the large sections only) and the single-valued
columns `validate_references` reads (by file key; `from` is the attribute `from_`)."""

FIELD_OF_KEY = {"from": "from_"}
"""Attribute names of file keys that differ."""

SearchTexts = dict[str, tuple[str, list[int]]]
"""Per section: the haystacks joined by "\\x00", and each haystack's length."""

CapturedColumns = dict[str, dict[str, tuple[list[Any], str | None]]]
"""Per section, per file key: every record's value (None when left out), and the values
joined as `thf.columns` joins them (None when a value is neither text nor None)."""
