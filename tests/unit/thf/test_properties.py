"""Property tests: write → read is the identity; damaged files only ever raise ThfError."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf import (
    MitigationStatus,
    Severity,
    StrideCategory,
    ThfError,
    ThreatModel,
    read_text,
    to_yaml,
    validate_document,
)
from tests.conftest import examples
from tests.unit.thf.support import fixture_bytes

# Any text a user could type or paste (no lone surrogates: they are not encodable as UTF-8),
# biased toward strings that are hard for YAML: look-alikes of other types, indicators,
# line breaks, leading/trailing spaces and control characters.
TRICKY = [
    "",
    " ",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "true",
    "False",
    "null",
    "~",
    "1.0",
    "0123",
    "1e3",
    "1_000",
    "_0",
    ".inf",
    "-.nan",
    "0x1F",
    "#x",
    "a #b",
    ": ",
    "key: value",
    "- item",
    "---",
    "...",
    "'",
    '"',
    "\\",
    "&a",
    "*a",
    "!t",
    "|",
    ">",
    "%",
    "@",
    "`",
    "[a, b]",
    "{a: b}",
    "  leading",
    "trailing  ",
    "\n",
    "\n\n",
    "a\n",
    "a\n\n",
    "\nb",
    " a\nb",
    "a \nb",
    "a\n b",
    "tab\there",
    "cr\rlf",
    "crlf\r\n",
    "nul\x00",
    "bom\ufeff",
    "nel\x85",
    "ls\u2028",
    "é🙂中",
    "2026-03-15",
    "<<",
]
text = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.lists(st.sampled_from(TRICKY), min_size=1, max_size=4).map("".join),
)
numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.integers(min_value=-(10**6), max_value=10**6).map(float),
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), numbers, text)
unknown_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=6,
)
unknown_fields = st.dictionaries(
    text.filter(lambda k: k not in RESERVED_KEYS), unknown_values, max_size=2
)
RESERVED_KEYS = frozenset(
    {
        "id",
        "type",
        "name",
        "trust_zone",
        "layer",
        "group",
        "subtype",
        "icon",
        "description",
        "technologies",
        "tags",
        "stores",
        "encryption",
        "position",
        "fill_color",
        "stroke_color",
        "fill_opacity",
        "stroke_opacity",
        "font_size",
        "font_weight",
        "version",
        "metadata",
        "layers",
        "groups",
        "elements",
        "data_flows",
        "relationships",
        "trust_boundaries",
        "threats",
        "diagrams",
        "title",
        "author",
        "created",
        "modified",
        "created_by",
        "modified_by",
        "last_edit_timestamp",
        "threat_analysis_enabled",
        "settings",
        "x",
        "y",
    }
)
dates = st.dates().map(lambda d: d.isoformat()).filter(lambda s: len(s) == 10)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    element_ids = draw(st.lists(text, min_size=1, max_size=4, unique=True))
    layer_ids = draw(st.lists(text, max_size=2, unique=True))
    group_ids = draw(st.lists(text.filter(lambda g: g not in element_ids), max_size=2, unique=True))
    elements = []
    for element_id in element_ids:
        entry: dict[str, Any] = {
            "id": element_id,
            "type": draw(text),
            "name": draw(text),
            "trust_zone": draw(text),
            "description": draw(text),
            "technologies": draw(st.lists(text, max_size=2)),
            "tags": draw(st.lists(text, max_size=2)),
        }
        if layer_ids and draw(st.booleans()):
            entry["layer"] = draw(st.sampled_from(layer_ids))
        if group_ids and draw(st.booleans()):
            entry["group"] = draw(st.sampled_from(group_ids))
        if draw(st.booleans()):
            entry["stores"] = draw(st.lists(text, max_size=2))
        if draw(st.booleans()):
            entry["position"] = {"x": draw(numbers), "y": draw(numbers)}
        if draw(st.booleans()):
            entry["font_size"] = draw(numbers)
        entry.update(draw(unknown_fields))
        elements.append(entry)
    flow_ids = draw(st.lists(text, max_size=3, unique=True))
    flows = [
        {
            "id": flow_id,
            "flow_number": draw(optional(st.integers(0, 2**32 - 1))),
            "name": draw(text),
            "from": draw(st.sampled_from(element_ids)),
            "to": draw(st.sampled_from(element_ids)),
            "protocol": draw(text),
            "data": draw(st.lists(text, max_size=2)),
            "authenticated": draw(st.booleans()),
        }
        for flow_id in flow_ids
    ]
    for entry in flows:
        if entry["flow_number"] is None:
            del entry["flow_number"]
    threats = [
        {
            "id": threat_id,
            "title": draw(text),
            "category": draw(st.sampled_from(list(StrideCategory))).value,
            "severity": draw(st.sampled_from(list(Severity))).value,
            "description": draw(text),
            **({"element": draw(st.sampled_from(element_ids))} if draw(st.booleans()) else {}),
            **(
                {
                    "mitigation": {
                        "status": draw(st.sampled_from(list(MitigationStatus))).value,
                        "description": draw(text),
                    }
                }
                if draw(st.booleans())
                else {}
            ),
        }
        for threat_id in draw(st.lists(text, max_size=2, unique=True))
    ]
    metadata: dict[str, Any] = {
        "title": draw(text),
        "author": draw(text),
        "created": draw(dates),
        "modified": draw(dates),
        "description": draw(text),
    }
    if draw(st.booleans()):
        metadata["last_edit_timestamp"] = draw(st.integers(-(2**63), 2**63 - 1))
    if draw(st.booleans()):
        metadata["threat_analysis_enabled"] = draw(st.booleans())
    metadata.update(draw(unknown_fields))
    document: dict[str, Any] = {
        "version": "1.0",
        "metadata": metadata,
        "layers": [{"id": i, "name": draw(text)} for i in layer_ids],
        "groups": [{"id": g, "name": draw(text)} for g in group_ids],
        "elements": elements,
        "data_flows": flows,
        "trust_boundaries": [
            {
                "id": b,
                "name": draw(text),
                "contains": draw(st.lists(st.sampled_from(element_ids), max_size=2)),
            }
            for b in draw(
                st.lists(text.filter(lambda b: b not in group_ids), max_size=2, unique=True)
            )
        ],
        "threats": threats,
        "diagrams": [
            {
                "id": d,
                "name": draw(text),
                "viewport": {"x": draw(numbers), "y": draw(numbers), "zoom": draw(numbers)},
            }
            for d in draw(st.lists(text, max_size=1, unique=True))
        ],
    }
    document.update(draw(unknown_fields))
    return document


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_any_valid_model_survives_write_then_read_unchanged(document: dict[str, Any]) -> None:
    model = validate_document(document)
    written = to_yaml(model)
    again = read_text(written)
    assert again == model
    assert to_yaml(again) == written


@settings(max_examples=examples(150), deadline=None)
@given(text)
def test_any_text_field_round_trips(value: str) -> None:
    model = ThreatModel.model_validate(
        {
            "version": "1.0",
            "metadata": {
                "title": value,
                "author": "",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
            "elements": [{"id": value, "type": value, "name": value, "description": value}],
        }
    )
    assert read_text(to_yaml(model)) == model


SEED = fixture_bytes("architecture-canonical-full.thf")


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(SEED) - 1),
            st.integers(0, 255),
            st.sampled_from(["set", "insert", "delete"]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_random_byte_mutations_only_ever_raise_thf_error(
    edits: list[tuple[int, int, str]],
) -> None:
    data = bytearray(SEED)
    for position, byte, kind in edits:
        position %= max(1, len(data))
        if kind == "set" and data:
            data[position] = byte
        elif kind == "insert":
            data.insert(position, byte)
        elif data:
            del data[position]
    with contextlib.suppress(ThfError):
        read_text(bytes(data))


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, len(SEED)))
def test_truncated_files_only_ever_raise_thf_error(length: int) -> None:
    with contextlib.suppress(ThfError):
        read_text(SEED[:length])
