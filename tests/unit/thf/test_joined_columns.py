"""A kept column's joined text answers lookups exactly as scanning the column would (`thf.columns`)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from stockade.thf.columns import SEPARATOR, KeptColumns, kept_columns, remember
from stockade.tools.document_index import SectionIndex

# Ids as awkward as a file can make them: the separator itself, empty, repeated, non-ASCII
# (İ lengthens when lower-cased, Σ has a final form), prefixes of each other.
_TEXTS = st.one_of(
    st.sampled_from(["a", "ab", "b", "", SEPARATOR, f"a{SEPARATOR}b", "İ", "Σς", "é", "a ", "None"]),
    st.text(alphabet="ab\x00İé ", max_size=4),
)
_STR_OR_NONE = st.one_of(_TEXTS, st.none())
_ANYTHING = st.one_of(_STR_OR_NONE, st.integers(0, 2), st.lists(_TEXTS, max_size=2))


def _scanned(column: list[Any], value: Any) -> list[int]:
    """The plain definition: every position whose value equals `value`, ascending."""
    return [i for i, held in enumerate(column) if held == value]


def _answerable(column: list[Any], value: Any) -> bool:
    """When the joined text must answer rather than hand the lookup back to a scan."""
    return (
        bool(column)
        and all(v is None or (type(v) is str and SEPARATOR not in v) for v in column)
        and type(value) is str and value != "" and SEPARATOR not in value
    )


@settings(max_examples=400, deadline=None)
@given(
    column=st.one_of(st.lists(_STR_OR_NONE, max_size=12), st.lists(_ANYTHING, max_size=12)),
    data=st.data(),
)
@example(column=["a", "b", "a", None, "a"], data=None)
@example(column=["", None, ""], data=None)
@example(column=[f"a{SEPARATOR}b", "b"], data=None)
def test_positions_are_exactly_the_scans(column: list[Any], data: Any) -> None:
    kept = KeptColumns({"field": column}, join=True)
    values = [*column, "a", "b", "", SEPARATOR, f"{SEPARATOR}a", "İ", "zz", None, 1]
    if data is not None:
        values.append(data.draw(_ANYTHING))
    for value in values:
        expected = _scanned(column, value)
        for _ in range(2):  # the separator check is made once, on the first lookup
            found = kept.positions("field", value)
            first = kept.positions("field", value, first=True)
            if _answerable(column, value):
                assert found == expected, (column, value)
                assert first == expected[:1], (column, value)
            else:
                assert found in (None, expected), (column, value)
                assert first in (None, expected[:1]), (column, value)
    assert kept.positions("other", "a") is None


def test_long_columns_count_positions_across_many_hits() -> None:
    column: list[Any] = [("x" if i % 7 else "hit") if i % 11 else None for i in range(5000)]
    kept = KeptColumns({"to": column}, join=True)
    assert kept.positions("to", "hit") == _scanned(column, "hit")
    assert kept.positions("to", "x", first=True) == [1]
    assert kept.positions("to", "missing") == []


class _Document:
    """Just enough of a document for `remember`: one section list, weakly referable."""

    def __init__(self, data_flows: list[Any]) -> None:
        self.data_flows = data_flows


class _Flow:
    def __init__(self, id: str, to: Any) -> None:
        self.id = id
        self.to = to


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(_TEXTS, min_size=1, max_size=10), targets=st.lists(_STR_OR_NONE, min_size=1, max_size=10),
       needle=_TEXTS, join=st.booleans())
def test_a_section_index_answers_first_lookups_from_the_joined_text_as_a_scan_would(
    ids: list[str], targets: list[Any], needle: str, join: bool
) -> None:
    """Joined (a read) or not (a commit's new section): the same answers as a scan."""
    flows = [_Flow(i, t) for i, t in zip(ids, targets, strict=False)]
    document = _Document(flows)
    remember(document, "data_flows", {"id": [f.id for f in flows], "to": [f.to for f in flows]}, join=join)
    assert kept_columns(flows) is not None
    for value in {needle, *ids, *(t for t in targets if t is not None)}:
        # A fresh index per lookup: each is a section's first, answered without a table.
        expected_to = _scanned([f.to for f in flows], value)
        assert SectionIndex("data_flows", flows).holding("to", value) == expected_to, value
        matches = _scanned([f.id for f in flows], value)
        assert SectionIndex("data_flows", flows).position(value) == (matches[0] if matches else -1), value
