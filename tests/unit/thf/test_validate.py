"""Validation: Stockade's stricter rules, field paths in messages, and the check order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.thf import (
    Severity,
    ThfError,
    ThfErrorCode,
    validate_document,
    validate_references,
)
from tests.unit.thf.support import element, flow, minimal_data, model_of


def error_of(data: Any) -> ThfError:
    with pytest.raises(ThfError) as caught:
        validate_document(data)
    return caught.value


@pytest.mark.parametrize(
    ("section", "entries"),
    [
        ("trust_boundaries", [{"id": "b", "name": "B"}, {"id": "b", "name": "B2"}]),
        (
            "threats",
            [
                {"id": "t", "title": "T", "category": "Spoofing", "severity": "low"},
                {"id": "t", "title": "T2", "category": "Spoofing", "severity": "low"},
            ],
        ),
        ("diagrams", [{"id": "d", "name": "D"}, {"id": "d", "name": "D2"}]),
        ("data_flows", [flow("f", "a", "a"), flow("f", "a", "a")]),
    ],
)
def test_duplicate_ids_are_rejected_in_every_section(section: str, entries: list[Any]) -> None:
    err = error_of(minimal_data(elements=[element("a")], **{section: entries}))
    assert err.code is ThfErrorCode.DUPLICATE_ID
    assert (err.section, err.id) == (section, entries[0]["id"])
    assert err.message == f"Duplicate ID '{entries[0]['id']}' in section '{section}'"


def test_reference_duplicate_checks_come_before_stockade_extra_ones() -> None:
    data = minimal_data(
        elements=[element("a")],
        trust_boundaries=[{"id": "b", "name": "B"}, {"id": "b", "name": "B"}],
        relationships=[
            {"id": "r", "type": "x", "from": "a", "to": "a"},
            {"id": "r", "type": "x", "from": "a", "to": "a"},
        ],
    )
    assert error_of(data).section == "relationships"


def test_stockade_duplicate_checks_come_before_reference_checks() -> None:
    data = minimal_data(
        elements=[element("a")],
        data_flows=[flow("f", "a", "ghost")],
        diagrams=[{"id": "d", "name": "D"}, {"id": "d", "name": "D"}],
    )
    assert error_of(data).code is ThfErrorCode.DUPLICATE_ID


def test_group_colliding_with_a_trust_boundary_is_a_duplicate() -> None:
    data = minimal_data(
        groups=[{"id": "zone", "name": "G"}], trust_boundaries=[{"id": "zone", "name": "B"}]
    )
    err = error_of(data)
    assert (err.code, err.section, err.id) == (ThfErrorCode.DUPLICATE_ID, "groups", "zone")


def test_boundary_member_must_be_an_element() -> None:
    err = error_of(
        minimal_data(
            elements=[element("app")],
            trust_boundaries=[{"id": "b1", "name": "B", "contains": ["ghost"]}],
        )
    )
    assert err.message == (
        "Invalid reference in 'trust_boundaries[b1].contains': 'ghost' not found. "
        'Valid IDs: ["app"]'
    )


def test_threat_flow_reference_lists_flow_ids() -> None:
    err = error_of(
        minimal_data(
            elements=[element("a")],
            data_flows=[flow("f1", "a", "a")],
            threats=[
                {"id": "t", "title": "T", "category": "Spoofing", "severity": "low", "flow": "nope"}
            ],
        )
    )
    assert err.field == "threats[t].flow" and err.valid_ids == ("f1",)


def test_self_parented_group_is_a_cycle() -> None:
    err = error_of(minimal_data(groups=[{"id": "solo", "name": "S", "parent": "solo"}]))
    assert err.message == "Circular group nesting detected at group 'solo'"


def test_group_chain_without_cycle_is_accepted() -> None:
    model = model_of(
        groups=[
            {"id": "a", "name": "A", "parent": "b"},
            {"id": "b", "name": "B", "parent": "c"},
            {"id": "c", "name": "C"},
        ]
    )
    assert [(g.id, g.parent) for g in model.groups] == [("a", "b"), ("b", "c"), ("c", None)]


def test_cycle_is_reported_before_dangling_boundary_members() -> None:
    err = error_of(
        minimal_data(
            groups=[{"id": "a", "name": "A", "parent": "a"}],
            trust_boundaries=[{"id": "b", "name": "B", "contains": ["ghost"]}],
        )
    )
    assert err.code is ThfErrorCode.CIRCULAR_GROUP_NESTING


def reference_cycle_check(parents: dict[str, str | None], order: list[str]) -> str | None:
    """The reference's per-group walk, quadratic but obviously right."""
    for start in order:
        visited = {start}
        current = parents[start]
        while current is not None:
            if current in visited:
                return current
            visited.add(current)
            current = parents[current]
    return None


@given(st.lists(st.integers(min_value=-1, max_value=7), min_size=1, max_size=8))
def test_linear_cycle_check_agrees_with_the_reference_walk(links: list[int]) -> None:
    ids = [f"g{i}" for i in range(len(links))]
    parents = {ids[i]: (ids[p] if 0 <= p < len(ids) else None) for i, p in enumerate(links)}
    groups = [{"id": g, "name": g, **({"parent": parents[g]} if parents[g] else {})} for g in ids]
    expected = reference_cycle_check(parents, ids)
    if expected is None:
        model_of(groups=groups)
    else:
        err = error_of(minimal_data(groups=groups))
        assert err.code is ThfErrorCode.CIRCULAR_GROUP_NESTING
        assert err.id == expected


def test_long_valid_id_list_is_shortened_in_the_message_but_kept_in_full() -> None:
    elements = [element(f"e{i}") for i in range(120)]
    err = error_of(minimal_data(elements=elements, data_flows=[flow("f", "e0", "ghost")]))
    assert err.message.endswith("(and 70 more)")
    assert len(err.valid_ids) == 120


@pytest.mark.parametrize(
    ("raw", "stored"), [("High", "high"), ("CRITICAL", "critical"), ("info", "info")]
)
def test_severity_is_accepted_in_any_case_and_stored_lowercase(raw: str, stored: str) -> None:
    model = model_of(threats=[{"id": "t", "title": "T", "category": "Spoofing", "severity": raw}])
    assert model.threats[0].severity is Severity(stored)


def test_unknown_severity_is_an_invalid_field_naming_the_threat() -> None:
    err = error_of(
        minimal_data(
            threats=[{"id": "t-1", "title": "T", "category": "Spoofing", "severity": "urgent"}]
        )
    )
    assert err.code is ThfErrorCode.INVALID_FIELD
    assert err.field == "threats[t-1].severity"
    assert (err.section, err.id) == ("threats", "t-1")


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (
            minimal_data(elements=[element("web-app", name=42)]),
            "elements[web-app].name",
            "must be text",
        ),
        (minimal_data(elements=[element("web-app", name=None)]), "elements[web-app].name", "null"),
        (minimal_data(elements=[{"type": "p", "name": "N"}]), "elements[0].id", "required"),
        (
            minimal_data(elements=[{"id": 7, "type": "p", "name": "N"}]),
            "elements[0].id",
            "must be text",
        ),
        (
            minimal_data(elements=[element("a"), element("b", position={"x": "1", "y": 2})]),
            "elements[b].position.x",
            "must be a number",
        ),
        (
            minimal_data(elements=[element("a", position=None, technologies=[1])]),
            "elements[a].technologies[0]",
            "text",
        ),
        (minimal_data(data_flows=[flow("f", "a", None)]), "data_flows[f].to", "null"),
        (
            minimal_data(data_flows=[{"id": "f", "from": "a", "to": 42}]),
            "data_flows[f].to",
            "must be text",
        ),
        (
            minimal_data(data_flows=[flow("f", "a", "a", authenticated="yes")]),
            "data_flows[f].authenticated",
            "true or false",
        ),
        (
            minimal_data(data_flows=[flow("f", "a", "a", flow_number=-1)]),
            "data_flows[f].flow_number",
            "at least 0",
        ),
        (minimal_data(elements="web-app"), "elements", "must be a list"),
        (minimal_data(elements={"id": "a"}), "elements", "must be a list"),
        (minimal_data(elements=["web-app"]), "elements[0]", "mapping"),
        (minimal_data(metadata="text"), "metadata", "mapping"),
        (
            {**minimal_data(), "metadata": {"title": "T", "author": "A", "created": "2026-01-01"}},
            "metadata.modified",
            "required",
        ),
        (
            {
                **minimal_data(),
                "metadata": {
                    "title": "T",
                    "author": None,
                    "created": "2026-01-01",
                    "modified": "2026-01-01",
                },
            },
            "metadata.author",
            "null",
        ),
        (
            {
                **minimal_data(),
                "metadata": {
                    "title": "T",
                    "author": "A",
                    "created": "2026-02-30",
                    "modified": "2026-01-01",
                },
            },
            "metadata.created",
            "real calendar date",
        ),
        (
            {
                **minimal_data(),
                "metadata": {
                    "title": "T",
                    "author": "A",
                    "created": 20260101,
                    "modified": "2026-01-01",
                },
            },
            "metadata.created",
            "text",
        ),
        (
            minimal_data(elements=[element("a", position={"x": True, "y": 1})]),
            "elements[a].position.x",
            "number",
        ),
        (
            minimal_data(
                threats=[{"id": "t", "title": "T", "category": "spoofing", "severity": "low"}]
            ),
            "threats[t].category",
            "must be one of",
        ),
        (
            minimal_data(threats=[{"id": "t", "title": "T", "category": 3, "severity": "low"}]),
            "threats[t].category",
            "must be text",
        ),
        (
            minimal_data(
                threats=[{"id": "t", "title": "T", "category": "Spoofing", "severity": b"low"}]
            ),
            "threats[t].severity",
            "must be text",
        ),
        (
            minimal_data(
                threats=[
                    {
                        "id": "t",
                        "title": "T",
                        "category": "Spoofing",
                        "severity": "low",
                        "mitigation": {"status": "Accepted"},
                    }
                ]
            ),
            "threats[t].mitigation.status",
            "must be one of",
        ),
    ],
)
def test_wrong_types_and_nulls_are_invalid_fields_naming_the_field(
    data: dict[str, Any], field: str, words: str
) -> None:
    err = error_of(data)
    assert err.code is ThfErrorCode.INVALID_FIELD
    assert err.field == field
    assert field in err.message and words in err.message
    assert (
        "pydantic" not in err.message and "http" not in err.message and "type=" not in err.message
    )


def test_non_mapping_root_is_a_missing_section() -> None:
    for data in (None, [], "text", 3):
        assert error_of(data).code is ThfErrorCode.MISSING_SECTION


def test_missing_version_is_a_missing_section() -> None:
    data = minimal_data()
    del data["version"]
    assert error_of(data).code is ThfErrorCode.MISSING_SECTION


def test_numeric_version_is_an_invalid_field() -> None:
    err = error_of({**minimal_data(), "version": 1.0})
    assert (err.code, err.field) == (ThfErrorCode.INVALID_FIELD, "version")


@pytest.mark.parametrize("version", ["1.1", "1", "2.0", "1.0 "])
def test_other_version_strings_are_unsupported(version: str) -> None:
    err = error_of({**minimal_data(), "version": version})
    assert err.code is ThfErrorCode.UNSUPPORTED_VERSION
    assert err.message == f"Unsupported schema version '{version}'. Supported versions: [\"1.0\"]"


def test_version_is_gated_before_fields_are_typed() -> None:
    # A newer format may carry fields this build cannot type; the version is the true reason.
    data = minimal_data(elements=[{"id": 1}])
    data["version"] = "2.0"
    assert error_of(data).code is ThfErrorCode.UNSUPPORTED_VERSION


def test_non_string_keys_are_invalid_fields() -> None:
    data = minimal_data()
    data["metadata"] = {**data["metadata"], 5: "x"}
    err = error_of(data)
    assert err.code is ThfErrorCode.INVALID_FIELD
    assert err.field == "metadata"


def test_unknown_field_with_complex_key_is_refused() -> None:
    err = error_of(minimal_data(elements=[element("a", odd={("x", "y"): 1})]))
    assert (err.code, err.field, err.id) == (ThfErrorCode.INVALID_FIELD, "elements[a].odd", "a")


def test_unknown_field_nested_too_deeply_is_refused() -> None:
    value: Any = "leaf"
    for _ in range(100):
        value = {"k": value}
    err = error_of(minimal_data(deep=value))
    assert err.code is ThfErrorCode.INVALID_FIELD and err.field == "deep"


def test_validate_references_accepts_a_large_valid_model_and_finds_one_late_error() -> None:
    elements = [element(f"e{i}") for i in range(2000)]
    flows = [flow(f"f{i}", f"e{i % 2000}", f"e{(i + 1) % 2000}") for i in range(3000)]
    model = model_of(elements=elements, data_flows=flows)
    validate_references(model)
    broken = model.data_flows[-1].model_copy(update={"to": "ghost"})
    with pytest.raises(ThfError) as caught:
        validate_references(
            model.model_copy(update={"data_flows": [*model.data_flows[:-1], broken]})
        )
    assert caught.value.field == "data_flows[f2999].to"


def test_unknown_field_with_a_huge_integer_is_refused_rather_than_unsavable() -> None:
    err = error_of(minimal_data(big=int("9" * 2000)))
    assert (err.code, err.field) == (ThfErrorCode.INVALID_FIELD, "big")
    assert "too large" in err.message
