"""The id and reference columns the compiled reader collects are the entities' own.

`validate_references` checks, and `thf.columns` keeps for the read tools, each section's id
and reference columns. For a file the compiled reader reads, they come from each record's
mapping as it was read (`thf.capture`); these tests compare what a read keeps (values and
joined texts) with the same columns read back from the validated entities, on written models
and on hand-written files that leave optional references out or write them as null, and check
that a broken reference is reported exactly as before.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf import ThfError, read_text, to_yaml, validate_document
from stockade.thf import reader as reader_module
from stockade.thf.columns import KeptColumns, kept_columns
from stockade.thf.format import SECTION_NAMES
from stockade.thf.validate import reference_columns
from tests.conftest import examples
from tests.unit.thf.test_properties import documents

pytestmark = pytest.mark.skipif(
    reader_module._load_block_subset is None, reason="this build has no compiled block reader"
)


def check_kept_columns(text: str) -> None:
    model = read_text(text)
    expected = reference_columns({s: getattr(model, s) for s in SECTION_NAMES}, attrgetter)
    assert expected is not None
    for section in SECTION_NAMES:
        kept = kept_columns(getattr(model, section))
        assert kept is not None, section
        assert kept.columns == expected[section], section
        plain = KeptColumns(expected[section], join=True)
        for field in expected[section]:
            assert kept._joined.get(field) == plain._joined.get(field), (section, field)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_kept_columns_are_the_entities_own_for_written_models(document: dict[str, Any]) -> None:
    check_kept_columns(to_yaml(validate_document(document)))


@st.composite
def hand_written(draw: st.DrawFn) -> str:
    lines = ["version: '1.0'", "metadata:", "  title: T", "  author: A",
             "  created: 2026-01-01", "  modified: 2026-01-02", "layers:", "- id: L", "  name: L",
             "groups:", "- id: g0", "  name: G"]
    if draw(st.booleans()):
        lines += ["- id: g1", "  name: G1", f"  parent: {draw(st.sampled_from(['g0', 'null']))}"]
    lines.append("elements:")
    count = draw(st.integers(1, 4))
    for i in range(count):
        lines += [f"- id: e{i}", "  type: process", f"  name: 'É {i}'"]
        for key, target in (("layer", "L"), ("group", "g0")):
            choice = draw(st.sampled_from(["absent", "null", "set"]))
            if choice != "absent":
                lines.append(f"  {key}: {target if choice == 'set' else 'null'}")
    lines.append("data_flows:" if draw(st.booleans()) else "data_flows: []")
    if lines[-1] == "data_flows:":
        lines += ["- id: f0", "  from: e0", f"  to: e{count - 1}"]
    lines.append("relationships:")
    lines += ["- id: r0", "  type: uses", "  from: e0", "  to: e0"] if draw(st.booleans()) else []
    lines += ["threats:", "- id: t0", "  title: T", "  category: Spoofing", "  severity: High"]
    for key, target in (("element", "e0"), ("flow", "f0")):
        choice = draw(st.sampled_from(["absent", "null", "set"]))
        if choice == "set" and not (key == "flow" and "- id: f0" not in lines):
            lines.append(f"  {key}: {target}")
        elif choice == "null":
            lines.append(f"  {key}: null")
    if lines[-1] == "relationships:":
        lines[-1] = "relationships: []"
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(150), deadline=None)
@given(hand_written())
def test_kept_columns_are_the_entities_own_for_sparse_files(text: str) -> None:
    assert reader_module._load_block_subset is not None
    assert reader_module._load_block_subset(text) is not None  # the compiled path reads it
    check_kept_columns(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("  to: e0\n", "  to: nowhere\n"), "data_flows[f0].to"),
        (("  element: e0\n", "  element: e9\n"), "threats[t0].element"),
        (("- id: e1\n", "- id: e0\n"), "Duplicate ID 'e0'"),
    ],
)
def test_broken_references_read_with_the_same_error(change: tuple[str, str], message: str) -> None:
    text = ("version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
            "  modified: 2026-01-02\nelements:\n- id: e0\n  type: p\n  name: A\n- id: e1\n"
            "  type: p\n  name: B\ndata_flows:\n- id: f0\n  from: e1\n  to: e0\nthreats:\n"
            "- id: t0\n  title: T\n  category: Spoofing\n  severity: low\n  element: e0\n")
    broken = text.replace(*change)
    errors = []
    saved = reader_module._load_block_subset
    for compiled in (saved, None):
        reader_module._load_block_subset = compiled
        try:
            with pytest.raises(ThfError) as raised:
                read_text(broken)
        finally:
            reader_module._load_block_subset = saved
        errors.append((raised.value.code, str(raised.value)))
    assert errors[0] == errors[1]
    assert message in errors[0][1]


def test_a_record_written_as_an_empty_mapping_holds_no_value_of_the_one_before() -> None:
    assert reader_module._load_block_subset is not None
    from stockade.thf.capture import CAPTURE

    text = ("groups:\n- id: a\n  parent: b\n- {}\n- id: c\nelements:\n- id: e\n  type: t\n"
            "  name: n\n- {}\n")
    captured = reader_module._load_block_subset(text, CAPTURE)
    assert captured is not None
    _, texts, columns = captured
    assert columns["groups"]["id"] == (["a", None, "c"], "\x00a\x00\x00c\x00")
    assert columns["groups"]["parent"] == (["b", None, None], "\x00b\x00\x00\x00")
    assert "elements" not in texts and "elements" not in columns  # no id: not as expected
