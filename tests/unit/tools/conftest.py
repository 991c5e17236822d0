"""Documents and helpers shared by the tool tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stockade.thf.model import ThreatModel
from stockade.tools.registry import ToolRegistry, default_registry
from stockade.tools.runtime import PreparedCall, PrepareFailed, ToolContext, ToolOutcome

START = "<<<UNTRUSTED_DOCUMENT_DATA>>>"
END = "<<<END_UNTRUSTED_DOCUMENT_DATA>>>"

META = {"title": "T", "author": "A", "created": "2026-01-01", "modified": "2026-01-01", "description": ""}


def make_doc(**sections: Any) -> ThreatModel:
    """A valid document from plain dicts (sections not given are empty)."""
    data: dict[str, Any] = {"version": "1.0", "metadata": dict(META)}
    data.update(sections)
    return ThreatModel.model_validate(data)


def el(entity_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": entity_id, "type": "process", "name": entity_id.title(), "trust_zone": "internal", **extra}


def flow(entity_id: str, src: str, dst: str, **extra: Any) -> dict[str, Any]:
    return {"id": entity_id, "from": src, "to": dst, **extra}


def threat(entity_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": entity_id, "title": f"Threat {entity_id}", "category": "Spoofing", "severity": "high", **extra}


@pytest.fixture
def shop() -> ThreatModel:
    """Three elements, two flows, a relationship, a boundary and threats on both kinds."""
    return make_doc(
        layers=[{"id": "edge", "name": "Edge"}],
        groups=[{"id": "backend", "name": "Backend"}],
        elements=[el("browser", type="web_browser", trust_zone="internet"), el("api"), el("db", type="sql_database")],
        data_flows=[flow("flow-1", "browser", "api", protocol="HTTPS", authenticated=True, flow_number=1),
                    flow("flow-2", "api", "db", protocol="SQL", flow_number=2)],
        relationships=[{"id": "rel-1", "type": "depends_on", "from": "api", "to": "db"}],
        trust_boundaries=[{"id": "boundary-1", "name": "Internal", "contains": ["api", "db"]}],
        threats=[threat("threat-1", element="api"), threat("threat-2", flow="flow-2", severity="medium",
                 mitigation={"status": "in_progress", "description": "TLS"})],
    )


@pytest.fixture(scope="session")
def registry() -> ToolRegistry:
    return default_registry()


def prepare_ok(registry: ToolRegistry, name: str, raw: Any) -> PreparedCall:
    tool = registry.get(name)
    assert tool is not None
    prepared = tool.prepare(raw)
    assert isinstance(prepared, PreparedCall), getattr(prepared, "issues", prepared)
    return prepared


def issues_of(registry: ToolRegistry, name: str, raw: Any) -> tuple[str, ...]:
    tool = registry.get(name)
    assert tool is not None
    prepared = tool.prepare(raw)
    assert isinstance(prepared, PrepareFailed), prepared
    return prepared.issues


def run_call(prepared: PreparedCall, document: ThreatModel) -> ToolOutcome:
    async def go() -> ToolOutcome:
        return await prepared.run(ToolContext(document=document))

    return asyncio.run(go())


def call(registry: ToolRegistry, name: str, raw: Any, document: ThreatModel) -> ToolOutcome:
    return run_call(prepare_ok(registry, name, raw), document)
