"""The canonical writer: byte-identical bodies, header, unknown fields, quoting and numbers."""

from __future__ import annotations

import pytest

import stockade
from stockade.thf import (
    Element,
    Position,
    ThfError,
    read_file,
    read_text,
    to_yaml,
    to_yaml_body,
)
from stockade.thf.writer import HEADER, format_float
from tests.unit.thf.support import (
    CANONICAL_FIXTURES,
    body_of,
    element,
    fixture_bytes,
    fixture_path,
    model_of,
)


@pytest.mark.parametrize("name", CANONICAL_FIXTURES)
def test_canonical_fixture_body_is_rewritten_byte_for_byte(name: str) -> None:
    model = read_file(fixture_path(name))
    assert to_yaml_body(model) == body_of(fixture_bytes(name).decode())


def test_output_starts_with_our_two_line_header_then_the_body() -> None:
    model = read_file(fixture_path("v1.0-canonical-full.thf"))
    text = to_yaml(model)
    assert text == HEADER + to_yaml_body(model)
    assert text.startswith("# Stockade threat model")
    # The header never names the build, so upgrades do not change canonical bytes.
    assert stockade.__version__ not in HEADER


def test_browser_output_is_normalised_to_the_canonical_body() -> None:
    model = read_file(fixture_path("v1.0-browser-roundtrip.thf"))
    assert to_yaml_body(model) == body_of(fixture_bytes("v1.0-canonical-full.thf").decode())


def test_minimal_model_materialises_the_always_written_sections() -> None:
    body = to_yaml_body(read_file(fixture_path("v1.0-minimal.thf")))
    assert "\nelements:\n- id: app\n" in body
    for section in ("data_flows", "trust_boundaries", "threats", "diagrams"):
        assert f"\n{section}: []\n" in body
    for section in ("layers", "groups", "relationships"):
        assert f"\n{section}:" not in body


def test_dates_are_written_unquoted() -> None:
    body = to_yaml_body(read_file(fixture_path("v1.0-canonical-full.thf")))
    assert "\n  created: 2026-03-15\n" in body


def test_unknown_fields_are_written_after_known_keys_at_every_level() -> None:
    model = read_file(fixture_path("v1.0-unknown-fields.thf"))
    body = to_yaml_body(model)
    assert body.index("  unknown_future_flag: true\n") > body.index("  description: ''\n")
    assert body.index("  unknown_future_note: written by") > body.index("  description: ''")
    assert body.endswith(
        "diagrams: []\nunknown_future_section:\n- id: future-1\n"
        "  name: Section introduced by a newer build\n"
    )
    again = read_text(body)
    assert again == model
    assert again.extras == {
        "unknown_future_section": [
            {"id": "future-1", "name": "Section introduced by a newer build"}
        ]
    }
    assert again.metadata.extras == {"unknown_future_flag": True}
    assert again.elements[0].extras == {
        "unknown_future_note": "written by a newer ThreatForge build"
    }


def test_unknown_fields_in_nested_records_survive() -> None:
    model = model_of(
        elements=[element("app", position={"x": 1, "y": 2, "z": 3}, note={"k": [1, None, 2.5]})]
    )
    again = read_text(to_yaml(model))
    assert again == model
    assert again.elements[0].position is not None
    assert again.elements[0].position.extras == {"z": 3}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (100.0, "100.0"),
        (-40.0, "-40.0"),
        (0.85, "0.85"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e16, "1e16"),
        (1.5e17, "1.5e17"),
        (1234567890123456.0, "1234567890123456.0"),
        (0.0001, "0.0001"),
        (0.00001, "0.00001"),
        (0.000012, "0.000012"),
        (1e-7, "1e-7"),
        (1.25e-9, "1.25e-9"),
        (float("inf"), ".inf"),
        (float("-inf"), "-.inf"),
        (float("nan"), ".nan"),
    ],
)
def test_floats_are_written_like_the_reference(value: float, expected: str) -> None:
    assert format_float(value) == expected


def test_integer_positions_are_written_as_floats() -> None:
    model = model_of(elements=[element("app", position={"x": 100, "y": -5})])
    assert "  position:\n    x: 100.0\n    y: -5.0\n" in to_yaml_body(model)


def test_integer_set_by_model_copy_is_still_written_as_float() -> None:
    model = model_of(elements=[element("app", position={"x": 1.0, "y": 2.0})])
    moved = model.elements[0].model_copy(update={"position": Position.model_construct(x=7, y=8)})
    body = to_yaml_body(model.model_copy(update={"elements": [moved]}))
    assert "    x: 7.0\n    y: 8.0\n" in body


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("plain words", "plain words"),
        ("", "''"),
        ("1.0", "'1.0'"),
        ("42", "'42'"),
        ("0123", "'0123'"),
        ("0x1F", "'0x1F'"),
        ("true", "'true'"),
        ("False", "'False'"),
        ("null", "'null'"),
        ("~", "'~'"),
        (".inf", "'.inf'"),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("y", "y"),
        ("#3b82f6", "'#3b82f6'"),
        ("a #b", "'a #b'"),
        ("a#b", "a#b"),
        ("key: value", "'key: value'"),
        ("ends with colon:", "'ends with colon:'"),
        ("a:b", "a:b"),
        ("- item", "'- item'"),
        ("-item", "-item"),
        ("---", "'---'"),
        (" leading", "' leading'"),
        ("trailing ", "'trailing '"),
        ("it's", "it's"),
        ("'quoted'", "'''quoted'''"),
        ('"double"', "'\"double\"'"),
        ("tab\there", '"tab\\there"'),
        ("emoji 🙂", '"emoji \\U0001F642"'),
        ("café", "café"),
        ("&anchor", "'&anchor'"),
        ("*alias", "'*alias'"),
        ("!tag", "'!tag'"),
        ("%pct", "'%pct'"),
        ("@at", "'@at'"),
        ("[x]", "'[x]'"),
        ("a, b", "a, b"),
        ("1_000", "'1_000'"),
        # yaml-rs reads these plain as 0, 1 and 0.5: a saved file would not reopen.
        ("_0", "'_0'"),
        ("__1", "'__1'"),
        ("_.5", "'_.5'"),
        ("_a", "_a"),
        ("carriage\rreturn", '"carriage\\rreturn"'),
    ],
)
def test_strings_are_quoted_only_when_needed(text: str, written: str) -> None:
    model = model_of(elements=[element("app", description=text)])
    body = to_yaml_body(model)
    assert f"\n  description: {written}\n" in body
    assert read_text(body).elements[0].description == text


@pytest.mark.parametrize(
    ("text", "block"),
    [
        ("two\nlines", "|-\n    two\n    lines"),
        ("ends with newline\n", "|\n    ends with newline"),
        ("keeps\n\n", "|+\n    keeps\n"),
        (" indented first\nline", "|2-\n     indented first\n    line"),
        ("\nstarts with newline", "|2-\n\n    starts with newline"),
        ("blank\n\nline", "|-\n    blank\n\n    line"),
    ],
)
def test_multiline_text_uses_literal_block_scalars(text: str, block: str) -> None:
    model = model_of(elements=[element("app", description=text)])
    body = to_yaml_body(model)
    assert f"\n  description: {block}\n" in body
    assert read_text(body).elements[0].description == text


def test_multiline_text_with_trailing_spaces_falls_back_to_double_quotes() -> None:
    text = "line with space \nnext"
    model = model_of(elements=[element("app", description=text)])
    body = to_yaml_body(model)
    assert '\n  description: "line with space \\nnext"\n' in body
    assert read_text(body).elements[0].description == text


def test_yaml_special_keys_in_unknown_fields_are_quoted_and_round_trip() -> None:
    extras = {"yes": 1, "1.0": "x", "": "empty", "#k": "v", "a: b": [], "true": {}, "y": "n"}
    model = model_of(elements=[element("app", **extras)])
    again = read_text(to_yaml(model))
    assert again.elements[0].extras == extras


def test_writing_is_deterministic() -> None:
    model = read_file(fixture_path("architecture-canonical-full.thf"))
    assert to_yaml(model) == to_yaml(read_text(to_yaml(model)))


def test_unwritable_unknown_value_is_a_type_error_not_silent_loss() -> None:
    model = model_of(elements=[element("app")])
    odd = model.elements[0].model_copy(update={"weird": object()})
    # model_copy does not validate; the writer refuses rather than writing something wrong.
    assert isinstance(odd, Element)
    with pytest.raises((TypeError, ThfError)):
        to_yaml(model.model_copy(update={"elements": [odd]}))
