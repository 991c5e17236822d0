"""What the read tools answer from the threats' columns against its plain per-threat definition:
`search_entities`' severity and category filters (the threat's value is the filter's) and
`get_document_summary`'s counts by severity, category and mitigation status."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf.model import MitigationStatus, Severity, StrideCategory, ThreatModel
from stockade.tools.document_index import clear_cache, section_index
from stockade.tools.read_tools import MAX_PAGE_LIMIT
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolOk
from tests.unit.tools.conftest import call, el, flow, make_doc, threat

REGISTRY = default_registry()
_SEVERITIES = [s.value for s in Severity]
_CATEGORIES = [c.value for c in StrideCategory]


@st.composite
def documents(draw: Any) -> ThreatModel:
    threats = []
    for i in range(draw(st.integers(0, 12))):
        extra: dict[str, Any] = draw(st.sampled_from([{"element": "a"}, {"element": "b"}, {"flow": "f"}, {}]))
        status = draw(st.none() | st.sampled_from([m.value for m in MitigationStatus]))
        if status is not None:
            extra = {**extra, "mitigation": {"status": status, "description": "d"}}
        threats.append(threat(f"t{i}", severity=draw(st.sampled_from(_SEVERITIES)),
                              category=draw(st.sampled_from(_CATEGORIES)), **extra))
    return make_doc(elements=[el("a"), el("b")], data_flows=[flow("f", "a", "b")], threats=threats)


def _expected(document: ThreatModel, raw: dict[str, Any]) -> list[str]:
    found = []
    for t in document.threats:
        if "severity" in raw and t.severity.value != raw["severity"].lower():
            continue
        if "category" in raw and t.category.value != raw["category"]:
            continue
        if "references" in raw and raw["references"] not in (t.element, t.flow):
            continue
        found.append(t.id)
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=documents(),
    severity=st.none() | st.sampled_from([*_SEVERITIES, "High", "CRITICAL"]),
    category=st.none() | st.sampled_from(_CATEGORIES),
    references=st.none() | st.sampled_from(["a", "b", "f", "zz"]),
    fresh=st.booleans(),
)
def test_severity_and_category_match_the_per_entity_definition(
    document: ThreatModel, severity: str | None, category: str | None, references: str | None, fresh: bool
) -> None:
    raw: dict[str, Any] = {"kind": "threats", "limit": MAX_PAGE_LIMIT}
    for name, value in (("severity", severity), ("category", category), ("references", references)):
        if value is not None:
            raw[name] = value
    if fresh:
        clear_cache()  # a first filter of the section, the column not built yet
    for _ in range(2):
        outcome = call(REGISTRY, "search_entities", raw, document)
        assert isinstance(outcome, ToolOk), outcome
        body = json.loads(outcome.result.split("\n")[1])
        assert [r["id"] for r in body["results"]] == _expected(document, raw), raw
        assert body["page"]["total"] == len(_expected(document, raw))


@given(document=documents(), among=st.lists(st.integers(0, 11), unique=True).map(sorted),
       built=st.booleans())
@settings(max_examples=100, deadline=None)
def test_being_over_candidates_reads_the_same_as_over_the_column(
    document: ThreatModel, among: list[int], built: bool
) -> None:
    clear_cache()
    index = section_index(document, "threats")
    among = [i for i in among if i < len(document.threats)]
    if built:
        index.column("severity")
    for member in Severity:
        everywhere = [i for i, t in enumerate(document.threats) if t.severity.value == member.value]
        assert index.being("severity", member) == everywhere
        assert index.being("severity", member, among) == [i for i in among if i in everywhere]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents(), fresh=st.booleans())
def test_summary_counts_match_the_per_threat_definition(document: ThreatModel, fresh: bool) -> None:
    if fresh:
        clear_cache()
    outcome = call(REGISTRY, "get_document_summary", {}, document)
    assert isinstance(outcome, ToolOk), outcome
    body = json.loads(outcome.result.split("\n")[1])
    threats = document.threats
    assert body["threats_by_severity"] == [
        {"severity": s, "count": sum(t.severity.value == s for t in threats)} for s in _SEVERITIES
    ]
    assert body["threats_by_category"] == [
        {"category": c, "count": sum(t.category.value == c for t in threats)} for c in _CATEGORIES
    ]
    statuses = [t.mitigation.status.value if t.mitigation is not None else "none" for t in threats]
    assert body["threats_by_mitigation_status"] == [
        {"status": m, "count": statuses.count(m)} for m in [*(m.value for m in MitigationStatus), "none"]
    ]
