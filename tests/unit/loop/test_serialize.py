"""Turn state to JSON and back: lossless for waiting, streaming and settled turns; refuses
anything it cannot trust."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stockade.loop.commands import ApproveCall, DenyCall
from stockade.loop.serialize import SnapshotError, turn_from_json, turn_to_json
from stockade.loop.state import ToolSet, TurnPhase, TurnState
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    MessageStart,
    StreamError,
    TextDelta,
    ToolCallComplete,
    ToolCallStart,
)
from tests.unit.loop.fakes import Driver


def through_text(state: TurnState, tools: ToolSet) -> TurnState:
    return turn_from_json(json.loads(json.dumps(turn_to_json(state))), tools)


def test_waiting_turn_round_trips_exactly_and_calls_are_runnable_again(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"}), ("r1", "read_thing", {"q": "x"})])
    d.apply(DenyCall("c2"))
    waiting = d.state
    assert waiting.phase is TurnPhase.AWAITING_APPROVAL
    loaded = through_text(waiting, generic)
    assert loaded == waiting
    assert all((c.prepared is None) == (w.prepared is None) for c, w in zip(loaded.calls, waiting.calls, strict=True))
    from stockade.loop.reducer import reduce_turn

    assert reduce_turn(loaded, ApproveCall("c1")) == reduce_turn(waiting, ApproveCall("c1"))


def test_streaming_turn_with_text_and_open_calls_round_trips(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(
        MessageStart("m"), TextDelta("Hello "), TextDelta("there"), ToolCallStart("c9", "add_thing"),
        ToolCallComplete("c1", "add_thing", {"name": "A"}), TextDelta("more"),
        StreamError(ProtocolError(ErrorCode.MALFORMED_STREAM, "bad frame")),
    )
    assert through_text(d.state, generic) == d.state


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda data: data.update(format="other/1"), "not a saved Stockade turn"),
        (lambda data: data["calls"][0].update(input_digest="sha256:forged"), "no longer matches"),
        (lambda data: data["calls"][0].update(raw_input={"name": ""}), "no longer accepted"),
        (lambda data: data["calls"][0].update(status="exploded"), "damaged"),
        (lambda data: data.pop("grants"), "damaged"),
    ],
)
def test_untrustworthy_snapshots_are_refused_with_a_plain_message(generic: ToolSet, mutate: Any, message: str) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    data = json.loads(json.dumps(turn_to_json(d.state)))
    mutate(data)
    with pytest.raises(SnapshotError, match=message):
        turn_from_json(data, generic)


def test_tools_are_re_resolved_by_name_from_the_given_registry(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    data = turn_to_json(d.state)
    assert data["tools"] == ["add_thing", "read_thing", "delete_thing"]
    with pytest.raises(SnapshotError, match='"delete_thing"'):
        turn_from_json(data, ToolSet([generic.get("add_thing"), generic.get("read_thing")]))  # type: ignore[list-item]
