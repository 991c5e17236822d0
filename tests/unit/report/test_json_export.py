"""JSON export: a stable document with metadata, counts and resolved targets."""

from __future__ import annotations

import json

from stockade.report.json_export import REPORT_KIND, render_json, report_document
from stockade.thf.model import ThreatModel
from tests.unit.report.conftest import HOSTILE, hostile_model


def test_rendering_twice_gives_identical_text(model: ThreatModel) -> None:
    assert render_json(model) == render_json(model)
    assert render_json(model).endswith("}\n")


def test_document_has_metadata_counts_and_threats(model: ThreatModel) -> None:
    data = json.loads(render_json(model))
    assert data["report"] == REPORT_KIND
    assert data["metadata"]["title"] == "Report Test Model"
    assert data["counts"]["threats"] == 6
    assert data["counts"]["threats_by_severity"]["high"] == 3
    assert data["counts"]["threats_by_mitigation_status"]["none"] == 1
    assert data["counts"]["coverage_percent"] == 33
    assert data["unmitigated_critical_high"] == ["t1", "t2", "t5"]
    t3 = data["threats"][2]
    assert t3["target"] == {
        "type": "element+flow",
        "element": {"id": "db", "name": "DB"},
        "flow": {"id": "f1", "name": "Queries"},
    }
    assert data["threats"][0]["mitigation"] is None
    assert data["threats"][0]["mitigation_status"] == "none"
    assert data["elements"][0]["trust_boundaries"] == ["b1"]
    assert data["data_flows"][1]["from"] == {"id": "user", "name": "User"}


def test_keys_come_in_a_fixed_order(model: ThreatModel) -> None:
    assert list(report_document(model)) == [
        "report",
        "report_version",
        "document_version",
        "metadata",
        "counts",
        "unmitigated_critical_high",
        "threats",
        "elements",
        "data_flows",
        "trust_boundaries",
    ]


def test_hostile_text_is_kept_verbatim_as_json_strings() -> None:
    data = json.loads(render_json(hostile_model()))
    assert data["metadata"]["title"] == HOSTILE
    assert data["threats"][0]["target"]["element"]["name"] == HOSTILE
