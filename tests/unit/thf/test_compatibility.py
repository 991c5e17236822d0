"""Living beside ThreatForge: null sections, non-finite numbers, did-you-mean, compat warnings."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from stockade.thf import SECTION_NAMES, ThfError, ThfErrorCode, read_text, validate_document
from stockade.thf.errors import CompatibilityCode, closest_id
from stockade.thf.reader import read_text_with_warnings
from stockade.thf.writer import HEADER, known_header, save, to_yaml_body
from tests.conftest import THF_FIXTURES
from tests.unit.thf.support import element, flow, minimal_data

HEAD = "version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n  modified: 2026-01-01\n"


@pytest.mark.parametrize("section", SECTION_NAMES)
def test_a_null_section_reads_as_an_empty_list_and_is_written_as_one(section: str) -> None:
    model, warnings = read_text_with_warnings(HEAD + f"{section}:\n")
    assert getattr(model, section) == []
    assert [(w.code, w.section) for w in warnings] == [(CompatibilityCode.NULL_SECTION, section)]
    body = to_yaml_body(model)
    if section in ("layers", "groups", "relationships"):
        assert f"{section}:" not in body  # skipped when empty, like ThreatForge's writer
    else:
        assert f"\n{section}: []\n" in body


def test_a_section_that_is_not_a_list_is_still_refused() -> None:
    with pytest.raises(ThfError) as caught:
        read_text(HEAD + "threats: nothing\n")
    assert caught.value.code is ThfErrorCode.INVALID_FIELD
    assert caught.value.field == "threats"


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN", "+.Inf"])
@pytest.mark.parametrize(
    ("where", "field"),
    [
        (
            "elements:\n- id: a\n  type: process\n  name: A\n  position:\n    x: {v}\n    y: 1\n",
            "elements[a].position.x",
        ),
        (
            "elements:\n- id: a\n  type: process\n  name: A\n  fill_opacity: {v}\n",
            "elements[a].fill_opacity",
        ),
        (
            "trust_boundaries:\n- id: b\n  name: B\n  position: {{x: 0, y: 0}}\n"
            "  size:\n    width: 10\n    height: {v}\n",
            "trust_boundaries[b].size.height",
        ),
        (
            "diagrams:\n- id: d\n  name: D\n  viewport: {{x: 0, y: 0, zoom: {v}}}\n",
            "diagrams[d].viewport.zoom",
        ),
        (
            "elements:\n- id: a\n  type: process\n  name: A\n  extra_score: {v}\n",
            "elements[a].extra_score",
        ),
        (
            "elements:\n- id: a\n  type: process\n  name: A\n  extra:\n    deep: [1, {v}]\n",
            "elements[a].extra",
        ),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_field(
    where: str, field: str, value: str
) -> None:
    with pytest.raises(ThfError) as caught:
        read_text(HEAD + where.format(v=value))
    err = caught.value
    assert err.code is ThfErrorCode.INVALID_FIELD
    assert err.field == field
    assert field in err.message and "finite" in err.message


def test_a_broken_reference_suggests_the_closest_valid_id_outside_the_message() -> None:
    data = minimal_data(
        elements=[element("payment-db"), element("web-app")],
        data_flows=[flow("f1", "web-app", "payment-bd")],
    )
    with pytest.raises(ThfError) as caught:
        validate_document(data)
    err = caught.value
    assert err.message == (
        "Invalid reference in 'data_flows[f1].to': 'payment-bd' not found. "
        'Valid IDs: ["payment-db", "web-app"]'
    )
    assert err.suggestion == "payment-db"
    assert err.hint == "Did you mean 'payment-db'?"
    assert err.to_json()["suggestion"] == "payment-db"
    assert pickle.loads(pickle.dumps(err)).suggestion == "payment-db"


@pytest.mark.parametrize(
    ("reference", "valid", "expected"),
    [
        ("web-ap", ["api", "web-app"], "web-app"),
        ("WEB-APP", ["web-app"], "web-app"),
        ("missing-db", ["app"], None),
        ("a", ["b"], None),  # one character: any id is one edit away, so none is a typo of it
        ("databse", ["database", "datastore"], "database"),
        ("x" * 40, [f"id-{i}" for i in range(50_000)], None),
    ],
)
def test_closest_id_only_suggests_plausible_typos(
    reference: str, valid: list[str], expected: str | None
) -> None:
    assert closest_id(reference, valid) == expected


def test_a_lowercase_severity_gives_no_warning_and_other_cases_do() -> None:
    threats = (
        "threats:\n"
        "- id: t1\n  title: A\n  category: Spoofing\n  severity: High\n"
        "- id: t2\n  title: B\n  category: Spoofing\n  severity: low\n"
        "- id: t3\n  title: C\n  category: Spoofing\n  severity: CRITICAL\n"
    )
    model, warnings = read_text_with_warnings(HEAD + threats)
    assert [t.severity.value for t in model.threats] == ["high", "low", "critical"]
    assert [(w.code, w.id, w.field) for w in warnings] == [
        (CompatibilityCode.SEVERITY_CASE, "t1", "threats[t1].severity"),
        (CompatibilityCode.SEVERITY_CASE, "t3", "threats[t3].severity"),
    ]
    assert '"High"' in warnings[0].message and "ThreatForge" in warnings[0].message
    assert warnings[0].to_json() == {
        "code": "severity_case",
        "message": warnings[0].message,
        "section": "threats",
        "id": "t1",
        "field": "threats[t1].severity",
    }


def test_saving_over_a_threatforge_file_keeps_its_header_and_a_new_file_gets_ours(
    tmp_path: Path,
) -> None:
    source = (THF_FIXTURES / "v1.0-canonical-full.thf").read_bytes()
    theirs = tmp_path / "theirs.thf"
    theirs.write_bytes(source)
    model = read_text(source)
    save(model, theirs)
    assert theirs.read_bytes() == source
    ours = tmp_path / "ours.thf"
    save(model, ours)
    assert ours.read_text(encoding="utf-8").startswith(HEADER)
    assert known_header(source.decode()) == (
        "# ThreatForge Threat Model\n"
        "# Canonical fixture generated by serde_yaml. Do not hand-edit; see README.md.\n"
    )
    assert known_header("# ThreatForge Threat Model\n# Generated by ThreatForge v0.3.0\nversion")
    assert known_header("# Someone else\nversion: '1.0'\n") is None
