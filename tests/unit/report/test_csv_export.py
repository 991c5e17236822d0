"""CSV export: one row per threat, resolved targets, spreadsheet formula guard."""

from __future__ import annotations

import csv
import io

import pytest

from stockade.report.csv_export import CSV_COLUMNS, render_csv, safe_cell
from stockade.thf.model import ThreatModel
from tests.unit.report.conftest import HOSTILE, build_model, hostile_model


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_cells_a_spreadsheet_would_evaluate_get_a_quote_prefix(start: str) -> None:
    assert safe_cell(start + 'HYPERLINK("http://x")') == "'" + start + 'HYPERLINK("http://x")'


@pytest.mark.parametrize("text", ["", "plain", "a=b", "1+1", "'quoted", " =lead-space"])
def test_ordinary_cells_are_left_alone(text: str) -> None:
    assert safe_cell(text) == text


def test_one_row_per_threat_with_header_and_resolved_targets(model: ThreatModel) -> None:
    text = render_csv(model)
    assert text.splitlines()[0] == ",".join(CSV_COLUMNS)
    rows = _rows(text)
    assert [r["id"] for r in rows] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    t3 = rows[2]
    assert (t3["target_type"], t3["target_id"], t3["target_name"]) == (
        "element+flow",
        "db; f1",
        "DB; Queries",
    )
    assert rows[0]["mitigation_status"] == "none"
    assert rows[3]["mitigation_status"] == "mitigated"
    assert rows[3]["mitigation_description"] == "Quotas"
    assert rows[4]["target_type"] == ""


def test_formula_injection_in_document_text_is_neutralised() -> None:
    model = build_model(
        threats=[
            {
                "id": "t",
                "title": "=cmd|' /C calc'!A0",
                "category": "Tampering",
                "severity": "low",
                "description": "+SUM(1)",
                "mitigation": {"status": "accepted", "description": "@risk"},
            },
        ]
    )
    (row,) = _rows(render_csv(model))
    assert row["title"] == "'=cmd|' /C calc'!A0"
    assert row["description"] == "'+SUM(1)"
    assert row["mitigation_description"] == "'@risk"


def test_quotes_commas_and_newlines_survive_a_round_trip() -> None:
    (row,) = _rows(render_csv(hostile_model()))
    assert row["title"] == HOSTILE
    assert row["target_name"] == HOSTILE + "; " + HOSTILE
