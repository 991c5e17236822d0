"""The offline provider: ranked, scoped, once-per-turn add_threat proposals through the stream."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from stockade.catalog.stride import analyze
from stockade.protocol.declined import DeclinedProposal
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
from stockade.tools.prompt import build_system_prompt
from tests.conftest import THF_FIXTURES
from tests.unit.catalog.samples import SAMPLES

CANONICAL = THF_FIXTURES / "v1.0-canonical-full.thf"
SHOP = SAMPLES / "ecommerce-platform.thf"

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


def prompt(text: str) -> tuple[Message, ...]:
    return (Message(role="user", content=(TextBlock(text=text),)),)


FIRST = prompt("Find missing threats.")


def ask(provider: OfflineProvider, messages: tuple[Message, ...],
        system: str = "") -> list[StreamEvent]:
    request = ChatRequest(provider="offline", model="stride-rules", system=system,
                          messages=messages)

    async def run() -> list[StreamEvent]:
        return [e async for e in provider.stream(request)]

    return asyncio.run(run())


def calls(events: list[StreamEvent]) -> list[ToolCallComplete]:
    return [e for e in events if isinstance(e, ToolCallComplete)]


def text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def targets(events: list[StreamEvent]) -> list[tuple[str, str]]:
    out = []
    for call in calls(events):
        threat = call.input["threat"]
        out.append((threat.get("element") or threat.get("flow"), threat["category"]))
    return out


def assert_valid_add_threat(value: object, document: ThreatModel) -> None:
    assert isinstance(value, dict) and set(value) == {"action", "threat"}
    assert value["action"] == "add_threat"
    threat = value["threat"]
    assert isinstance(threat, dict)
    target_keys = {"element", "flow"} & set(threat)
    assert len(target_keys) == 1
    assert set(threat) == {"title", "category", "severity", "description",
                           "mitigation"} | target_keys
    assert threat["category"] in CATEGORIES
    assert threat["severity"] in SEVERITIES
    assert isinstance(threat["title"], str) and 0 < len(threat["title"]) <= 200
    assert isinstance(threat["description"], str) and threat["description"]
    assert threat["mitigation"]["status"] == "not_started"
    assert threat["mitigation"]["description"]
    if "element" in threat:
        assert threat["element"] in {e.id for e in document.elements}
    else:
        assert threat["flow"] in {f.id for f in document.data_flows}


def _follow_up(previous: list[StreamEvent], history: tuple[Message, ...],
               denied: bool) -> tuple[Message, ...]:
    proposed = calls(previous)
    assistant = Message(
        role="assistant",
        content=tuple(ToolCallBlock(id=c.id, name=c.name, input=c.input) for c in proposed),
    )
    results = Message(
        role="user",
        content=tuple(
            ToolResultBlock(tool_call_id=c.id, content="denied" if denied else "ok",
                            is_error=denied)
            for c in proposed
        ),
    )
    return (*history, assistant, results)


def test_the_ecommerce_sample_gets_at_most_12_ranked_specific_proposals() -> None:
    document = load(SHOP)
    events = ask(OfflineProvider(lambda: document), prompt(
        "Review this model and propose the threats it is still missing."))
    proposed = calls(events)
    assert len(proposed) == MAX_PROPOSALS == 12
    for call in proposed:
        assert_valid_add_threat(call.input, document)
    ranked = analyze(document)
    assert targets(events) == [(p.target, p.category.value) for p in ranked[:12]]
    order = [list(Severity).index(Severity(c.input["threat"]["severity"])) for c in proposed]
    assert order == sorted(order)
    assert {c.input["threat"]["severity"] for c in proposed} != {"high"}  # not flat
    said = text(events)
    assert f"{len(ranked)} candidate threats the model does not cover yet" in said
    assert f"{len(ranked) - 12} more would follow" in said


def test_a_prompt_naming_one_element_proposes_for_that_element_only() -> None:
    document = load(SHOP)
    events = ask(OfflineProvider(lambda: document),
                 prompt("What threats affect the Session Cache?"))
    assert calls(events)
    assert {t for t, _ in targets(events)} == {"session-cache"}
    assert "element Session Cache (session-cache)" in text(events)


@pytest.mark.parametrize("words", ["do not change anything",
                                   "Only read the model and tell me the gaps"])
def test_asking_for_no_changes_proposes_nothing(words: str) -> None:
    document = load(SHOP)
    events = ask(OfflineProvider(lambda: document), prompt(words))
    assert not calls(events)
    assert events[-1] == MessageStop(stop_reason=StopReason.END_TURN)
    said = text(events)
    assert "proposing nothing" in said
    top = analyze(document)[0]
    assert top.title in said  # the gaps are listed as text instead


def test_proposals_are_made_once_per_turn() -> None:
    document = load(SHOP)
    provider = OfflineProvider(lambda: document)
    first = ask(provider, FIRST)
    assert len(calls(first)) == 12
    after = ask(provider, _follow_up(first, FIRST, denied=True))
    assert not calls(after)
    assert after[-1] == MessageStop(stop_reason=StopReason.END_TURN)
    said = text(after)
    assert "0 applied, 12 not applied" in said
    assert f"{len(analyze(document)) - 12} more candidate threats in scope remain" in said


def test_a_second_turn_after_denying_all_proposes_none_of_the_denied_ones() -> None:
    document = load(SHOP)
    provider = OfflineProvider(lambda: document)
    first = ask(provider, FIRST)
    denied = [DeclinedProposal(tool="add_threat", input_digest=f"sha256:{n}", summary="x",
                               target_kind="element" if "element" in c.input["threat"]
                               else "flow",
                               target=c.input["threat"].get("element")
                               or c.input["threat"].get("flow"),
                               category=c.input["threat"]["category"],
                               title=c.input["threat"]["title"], reason="not applicable")
              for n, c in enumerate(calls(first))]
    system = build_system_prompt(document, (), denied)
    history = _follow_up(first, FIRST, denied=True)
    second = ask(provider, (*history, *prompt("Propose more threats.")), system=system)
    assert len(calls(second)) == 12
    assert not set(targets(second)) & set(targets(first))
    assert "12 proposals you declined earlier are left out" in text(second)
    ids = [c.id for c in calls(first)] + [c.id for c in calls(second)]
    assert len(ids) == len(set(ids))  # ids stay unique across the conversation


def test_proposals_for_the_canonical_fixture_are_deterministic_and_valid() -> None:
    document = load(CANONICAL)
    first = ask(OfflineProvider(lambda: document), FIRST)
    second = ask(OfflineProvider(lambda: load(CANONICAL)), FIRST)
    assert first == second
    proposed = calls(first)
    assert 0 < len(proposed) <= MAX_PROPOSALS
    for call in proposed:
        assert call.name == "add_threat"
        assert_valid_add_threat(call.input, document)
    assert [c.id for c in proposed] == [f"offline-{n}" for n in range(1, len(proposed) + 1)]


def test_proposals_pass_the_real_add_threat_input_model() -> None:
    graph_tools = pytest.importorskip("stockade.tools.graph_tools")
    document = load(SHOP)
    for call in calls(ask(OfflineProvider(lambda: document), FIRST)):
        graph_tools.AddThreatInput.model_validate(call.input)


def test_events_form_a_realistic_stream() -> None:
    document = load(SHOP)
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


def test_a_document_with_every_rule_covered_gets_plain_text() -> None:
    document = ThreatModel.model_validate({
        "version": "1.0",
        "metadata": {"title": "t", "author": "a", "created": "2026-01-01",
                     "modified": "2026-01-01"},
        "elements": [{"id": "u", "type": "external_entity", "name": "User"}],
        "threats": [
            {"id": "t1", "title": "s", "category": "Spoofing", "element": "u",
             "severity": "high"},
            {"id": "t2", "title": "r", "category": "Repudiation", "element": "u",
             "severity": "low"},
        ],
    })
    events = ask(OfflineProvider(lambda: document), FIRST)
    assert not calls(events)
    assert events[-1] == MessageStop(stop_reason=StopReason.END_TURN)
    assert "nothing more to propose" in text(events)


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
