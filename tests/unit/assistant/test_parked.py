"""`ParkedRun`: the typed, versioned record a sealed snapshot holds, and the first release's one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stockade.assistant.parked import PARKED_SCHEMA, ParkedRun, ParkedRunError
from stockade.assistant.policy import ApprovePolicy
from stockade.assistant.service import AssistantService
from stockade.loop.serialize import turn_to_json
from stockade.loop.state import TurnPhase
from stockade.protocol.provider_ids import ProviderId
from stockade.thf.digest import document_digest
from stockade.tools.registry import default_registry
from tests.unit.assistant.conftest import Scripts, run
from tests.unit.assistant.test_service import DESTRUCTIVE, park_with
from tests.unit.governance.scripted import add_threat


@pytest.fixture
def parked(service: AssistantService, scripts: Scripts, model_file: Path) -> ParkedRun:
    turn = park_with(service, scripts, model_file, ("c1", "add_threat", add_threat()),
                     DESTRUCTIVE)
    return run(service.open_parked(turn.run_id))


def test_a_parked_run_round_trips_through_json(parked: ParkedRun) -> None:
    data = json.loads(json.dumps(parked.to_json()))
    assert data["schema"] == PARKED_SCHEMA
    again = ParkedRun.from_json(data, default_registry(), run_id=parked.run_id)
    assert again.state == parked.state and again.to_json() == parked.to_json()
    assert [c.id for c in again.pending()] == ["c9"]
    assert again.provider is ProviderId.ANTHROPIC and again.approve is ApprovePolicy.MUTATE
    assert again.endpoint == "https://api.anthropic.com"
    assert again.state.phase is TurnPhase.AWAITING_APPROVAL


def legacy_layout(parked: ParkedRun) -> dict[str, Any]:
    """A snapshot body exactly as the first release's session wrote it (schema 1)."""
    return {
        "runner": {"format": "stockade.runner/1", "model": parked.model,
                   "provider_name": parked.provider.value,
                   "waiting_since_ms": parked.waiting_since_ms,
                   "turn": turn_to_json(parked.state)},
        "document": parked.document.model_dump(mode="json", by_alias=True, exclude_none=True),
        "document_path": parked.document_path, "provider_name": parked.provider.value,
        "model": parked.model, "base_url": None,
        "budgets": {"per_turn": 2000, "per_day": 20000, "per_month": None},
        "guard_policy": "redact", "approve": "read", "write_back": True, "base_count": 0,
        "extra": {}, "parked_at_ms": parked.parked_at_ms, "version": 1,
        "run_id": parked.run_id, "document_digest": parked.base_digest,
    }


def test_a_snapshot_written_by_the_first_release_still_reads(parked: ParkedRun) -> None:
    old = ParkedRun.from_json(legacy_layout(parked), default_registry(), run_id=parked.run_id)
    assert old.state == parked.state and old.write_back and old.approve is ApprovePolicy.READ
    assert old.endpoint == "https://api.anthropic.com"  # the SDK default it really used
    assert old.base_digest == parked.base_digest and old.document_before_turn is None
    assert document_digest(old.document) == document_digest(parked.document)


def test_a_snapshot_from_a_newer_build_is_refused_naming_its_schema(parked: ParkedRun) -> None:
    data = {**parked.to_json(), "schema": 9}
    with pytest.raises(ParkedRunError, match=r"newer Stockade.*schema 9"):
        ParkedRun.from_json(data, default_registry(), run_id=parked.run_id)


@pytest.mark.parametrize("change", [
    {"schema": "two"}, {"turn": {"format": "nope"}}, {"provider": "gemini"},
    {"budgets": {"per_turn": -1}}, {"document": {"version": "1.0"}},
])
def test_a_damaged_snapshot_is_refused_with_a_plain_message(parked: ParkedRun,
                                                            change: dict[str, Any]) -> None:
    with pytest.raises(ParkedRunError) as caught:
        ParkedRun.from_json({**parked.to_json(), **change}, default_registry(),
                            run_id=parked.run_id)
    assert "Traceback" not in str(caught.value) and str(caught.value)


def test_a_snapshot_sealed_for_another_run_is_refused(parked: ParkedRun) -> None:
    with pytest.raises(ParkedRunError, match="does not belong"):
        ParkedRun.from_json(parked.to_json(), default_registry(), run_id="run-other")
