"""The offline provider: deterministic add_threat proposals through the normal event stream."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from stockade.catalog.stride import analyze
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
    is_terminal,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest
from stockade.providers.offline import MAX_PROPOSALS, OfflineProvider
from stockade.thf.model import Severity, ThreatModel
from stockade.thf.reader import read_file
from tests.conftest import THF_FIXTURES

CANONICAL = THF_FIXTURES / "v1.0-canonical-full.thf"

CATEGORIES = {
    "Spoofing",
    "Tampering",
    "Repudiation",
    "Information Disclosure",
    "Denial of Service",
    "Elevation of Privilege",
}
SEVERITIES = {"critical", "high", "medium", "low", "info"}


def load(path: Path) -> ThreatModel:
    return read_file(path)


def ask(provider: OfflineProvider, messages: tuple[Message, ...]) -> list[StreamEvent]:
    request = ChatRequest(provider="offline", model="stride-rules", system="", messages=messages)

    async def run() -> list[StreamEvent]:
        return [e async for e in provider.stream(request)]

    return asyncio.run(run())


FIRST = (Message(role="user", content=(TextBlock(text="Find missing threats."),)),)


def calls(events: list[StreamEvent]) -> list[ToolCallComplete]:
    return [e for e in events if isinstance(e, ToolCallComplete)]


def assert_valid_add_threat(value: object, document: ThreatModel) -> None:
    assert isinstance(value, dict) and set(value) == {"action", "threat"}
    assert value["action"] == "add_threat"
    threat = value["threat"]
    assert isinstance(threat, dict)
    targets = {"element", "flow"} & set(threat)
    assert len(targets) == 1
    assert set(threat) == {"title", "category", "severity", "description"} | targets
    assert threat["category"] in CATEGORIES
    assert threat["severity"] in SEVERITIES
    assert isinstance(threat["title"], str) and 0 < len(threat["title"]) <= 200
    assert isinstance(threat["description"], str) and threat["description"]
    if "element" in threat:
        assert threat["element"] in {e.id for e in document.elements}
    else:
        assert threat["flow"] in {f.id for f in document.data_flows}


def test_proposals_for_the_canonical_fixture_are_deterministic_and_valid() -> None:
    document = load(CANONICAL)
    provider = OfflineProvider(lambda: document)
    first = ask(provider, FIRST)
    second = ask(OfflineProvider(lambda: load(CANONICAL)), FIRST)
    assert first == second
    proposed = calls(first)
    assert len(proposed) == MAX_PROPOSALS
    for call in proposed:
        assert call.name == "add_threat"
        assert_valid_add_threat(call.input, document)
    assert [c.id for c in proposed] == [f"offline-{n}" for n in range(1, 11)]


def test_proposals_pass_the_real_add_threat_input_model() -> None:
    graph_tools = pytest.importorskip("stockade.tools.graph_tools")
    document = load(CANONICAL)
    for call in calls(ask(OfflineProvider(lambda: document), FIRST)):
        graph_tools.AddThreatInput.model_validate(call.input)


def test_canonical_fixture_proposals_skip_threats_it_already_has() -> None:
    document = load(CANONICAL)
    keys = {(c.input["threat"].get("element") or c.input["threat"].get("flow"), c.input["threat"]["category"]) for c in calls(ask(OfflineProvider(lambda: document), FIRST))}  # fmt: skip
    assert ("web-app", "Elevation of Privilege") not in keys
    assert ("api-gateway", "Tampering") not in keys
    assert ("api-gateway", "Information Disclosure") not in keys


def test_events_form_a_realistic_stream() -> None:
    document = load(CANONICAL)
    events = ask(OfflineProvider(lambda: document), FIRST)
    assert events[0] == MessageStart(model="stride-rules")
    assert isinstance(events[1], TextDelta)
    assert events[-2] == Usage(input_tokens=0, output_tokens=0)
    assert events[-1] == MessageStop(stop_reason=StopReason.TOOL_USE)
    assert [e for e in events if is_terminal(e)] == [events[-1]]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert len(starts) == MAX_PROPOSALS
    for start in starts:
        fragments = "".join(
            e.partial_json for e in events if isinstance(e, ToolCallInputDelta) and e.id == start.id
        )
        complete = next(c for c in calls(events) if c.id == start.id)
        assert json.loads(fragments) == complete.input


def test_most_severe_first_then_document_order() -> None:
    document = load(CANONICAL)
    proposed = calls(ask(OfflineProvider(lambda: document), FIRST))
    ranks = [list(Severity).index(Severity(c.input["threat"]["severity"])) for c in proposed]
    assert ranks == sorted(ranks)
    order = [p.target for p in analyze(document) if p.severity is Severity.HIGH][:3]
    targets = [c.input["threat"].get("element") or c.input["threat"].get("flow") for c in proposed]
    assert targets[:3] == order


def _follow_up(
    previous: list[StreamEvent], history: tuple[Message, ...], denied: bool
) -> tuple[Message, ...]:
    proposed = calls(previous)
    assistant = Message(
        role="assistant",
        content=tuple(ToolCallBlock(id=c.id, name=c.name, input=c.input) for c in proposed),
    )
    results = Message(
        role="user",
        content=tuple(
            ToolResultBlock(
                tool_call_id=c.id, content="denied" if denied else "ok", is_error=denied
            )
            for c in proposed
        ),
    )
    return (*history, assistant, results)


def test_denied_proposals_are_not_offered_again_and_ids_stay_unique() -> None:
    document = load(CANONICAL)
    provider = OfflineProvider(lambda: document)
    total = len(analyze(document))
    history: tuple[Message, ...] = FIRST
    events = ask(provider, history)
    seen_ids: set[str] = set()
    seen_keys: set[tuple[str, str]] = set()
    rounds = 0
    while calls(events):
        for call in calls(events):
            threat = call.input["threat"]
            key = (threat.get("element") or threat.get("flow"), threat["category"])
            assert key not in seen_keys
            assert call.id not in seen_ids
            seen_keys.add(key)
            seen_ids.add(call.id)
        history = _follow_up(events, history, denied=True)
        events = ask(provider, history)
        rounds += 1
        assert rounds < 10
    assert len(seen_keys) == total
    assert events[-1] == MessageStop(stop_reason=StopReason.END_TURN)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "not applied" in text and "nothing more to propose" in text
    assert not calls(events)


def test_a_document_with_every_rule_covered_gets_plain_text() -> None:
    document = ThreatModel.model_validate(
        {
            "version": "1.0",
            "metadata": {
                "title": "t",
                "author": "a",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
            "elements": [{"id": "u", "type": "external_entity", "name": "User"}],
            "threats": [
                {
                    "id": "t1",
                    "title": "s",
                    "category": "Spoofing",
                    "element": "u",
                    "severity": "high",
                },
                {
                    "id": "t2",
                    "title": "r",
                    "category": "Repudiation",
                    "element": "u",
                    "severity": "low",
                },
            ],
        }
    )
    events = ask(OfflineProvider(lambda: document), FIRST)
    assert not calls(events)
    assert events[-1] == MessageStop(stop_reason=StopReason.END_TURN)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "nothing more to propose" in text


def test_a_failing_document_source_is_an_error_event_not_an_exception() -> None:
    def broken() -> ThreatModel:
        raise OSError("disk gone")

    events = ask(OfflineProvider(broken), FIRST)
    assert len(events) == 1
    assert isinstance(events[0], StreamError) and events[0].is_terminal
    assert "disk gone" not in events[0].error.message


def test_cancelling_mid_answer_stops_it_and_lets_the_cancellation_through() -> None:
    document = load(CANONICAL)
    request = ChatRequest(provider="offline", model="stride-rules", system="", messages=FIRST)
    whole = OfflineProvider(lambda: document).answer(FIRST, document, model="stride-rules")
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in OfflineProvider(lambda: document).stream(request):
            seen.append(event)

    async def run() -> bool:
        task = asyncio.create_task(consume())
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return task.cancelled()

    assert asyncio.run(run())
    assert seen and len(seen) < len(whole)
    assert seen == whole[: len(seen)]
    assert not any(is_terminal(e) for e in seen)
