"""Report facts: counts by severity, category and status; open critical/high threats."""

from __future__ import annotations

from stockade.report.summary import (
    NameIndex,
    TargetKind,
    summarize,
)
from stockade.thf.model import Severity, StrideCategory, ThreatModel
from tests.unit.report.conftest import build_model


def test_counts_cover_every_section(model: ThreatModel) -> None:
    summary = summarize(model)
    assert (summary.elements, summary.data_flows, summary.trust_boundaries) == (3, 2, 1)
    assert (summary.threats, summary.diagrams, summary.layers) == (6, 1, 0)


def test_threats_are_counted_by_severity_category_and_status(model: ThreatModel) -> None:
    summary = summarize(model)
    assert summary.severity_counts == {
        Severity.CRITICAL: 1,
        Severity.HIGH: 3,
        Severity.MEDIUM: 1,
        Severity.LOW: 1,
        Severity.INFO: 0,
    }
    assert summary.category_counts[StrideCategory.SPOOFING] == 2
    assert summary.category_counts[StrideCategory.ELEVATION_OF_PRIVILEGE] == 0
    assert summary.status_counts == {
        "none": 1,
        "not_started": 1,
        "in_progress": 1,
        "mitigated": 2,
        "accepted": 1,
        "transferred": 0,
    }
    assert summary.matrix[StrideCategory.SPOOFING][Severity.HIGH] == 2
    assert sum(sum(row.values()) for row in summary.matrix.values()) == 6


def test_mitigated_open_and_coverage(model: ThreatModel) -> None:
    summary = summarize(model)
    assert summary.mitigated == 2
    assert summary.open == 3
    assert summary.coverage_percent == 33  # 2 of 6


def test_coverage_rounds_half_up_and_is_zero_without_threats() -> None:
    assert summarize(build_model(threats=[])).coverage_percent == 0
    one_of_eight = [
        {
            "id": f"t{i}",
            "title": "x",
            "category": "Spoofing",
            "severity": "low",
            "mitigation": {"status": "mitigated" if i == 0 else "not_started"},
        }
        for i in range(8)
    ]
    assert summarize(build_model(threats=one_of_eight)).coverage_percent == 13  # 12.5 → 13


def test_open_critical_high_lists_only_unaddressed_threats_worst_first(model: ThreatModel) -> None:
    ids = [t.id for t in summarize(model).open_critical_high]
    # t3 is accepted (a decision), t4 and t6 are not critical/high.
    assert ids == ["t1", "t2", "t5"]


def test_targets_resolve_to_names_with_their_kind(model: ThreatModel) -> None:
    names = NameIndex.of(model)
    by_id = {t.id: names.target(t) for t in model.threats}
    assert by_id["t1"].kind is TargetKind.ELEMENT and by_id["t1"].names == ("Web",)
    assert by_id["t2"].kind is TargetKind.FLOW and by_id["t2"].names == ("Queries",)
    assert by_id["t3"].kind is TargetKind.ELEMENT_AND_FLOW
    assert by_id["t3"].ids == ("db", "f1") and by_id["t3"].label == "DB, Queries"
    assert by_id["t5"].kind is TargetKind.NONE and by_id["t5"].label == ""


def test_an_unnamed_flow_is_shown_by_its_id() -> None:
    model = build_model(
        data_flows=[{"id": "f1", "from": "web", "to": "db"}],
        threats=[
            {"id": "t", "title": "x", "category": "Tampering", "flow": "f1", "severity": "low"}
        ],
    )
    assert NameIndex.of(model).target(model.threats[0]).names == ("f1",)
