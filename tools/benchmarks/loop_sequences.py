"""The two turn input sequences the loop benchmarks reduce, built from the real commands, stream
events and production tools, plus their JSON form for a peer's reducer.

- `streaming_inputs()`: submit, message_start, 10,000 text deltas, message_stop (10,003 inputs).
- `tool_heavy_inputs()`: submit, then 8 iterations of 12 calls each (4 read calls the policy
  approves, 6 mutations approved as one batch, 2 destructive deletes approved one by one), each
  iteration streamed as text deltas, tool-call starts, argument deltas and completions, then
  usage, stop, credits, the approvals and the waits before them, 12 start/settle pairs and an
  advance; a closing text reply ends the turn (927 inputs, 96 calls).

`tool_heavy_replies()` is the same turn as the provider streams it (one event list per
request) with the user's decisions per iteration, for driving a `TurnRunner`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stockade.loop.commands import (
    Advance,
    ApprovalWaited,
    ApproveBatch,
    ApproveCall,
    CallSettled,
    ChargeCredits,
    StartCall,
    Submit,
)
from stockade.loop.limits import TurnLimits
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
    event_to_json,
)
from stockade.tools.runtime import ToolOk

STREAM_DELTAS = 10_000
ITERATIONS = 8
CALLS_PER_ITERATION = 12
TEXT_DELTAS_PER_ITERATION = 17
CLOSING_TEXT_DELTAS = 26
ARGUMENT_DELTAS_PER_CALL = 3
RUNNER_MODEL_ELEMENTS = 220
"""Elements of the generated model the runner benchmark edits (110 threats, 330 flows): every id
the sequence names exists in it."""
TOOL_HEAVY_LIMITS = TurnLimits(
    max_iterations=ITERATIONS + 1,
    max_tool_calls_per_turn=ITERATIONS * CALLS_PER_ITERATION + CALLS_PER_ITERATION,
    max_tool_calls_per_iteration=CALLS_PER_ITERATION,
)
READ_RESULT = json.dumps(
    {"kind": "elements", "total": 3, "items": [
        {"id": f"comp-{i}", "name": f"Component {i}", "type": "process", "trust_zone": "dmz"}
        for i in range(3)
    ]}
)


def streaming_inputs(deltas: int = STREAM_DELTAS) -> list[Any]:
    """One streamed reply from a fresh turn: submit, start, `deltas` text deltas, stop."""
    return [
        Submit("bench", ()),
        MessageStart("m"),
        *(TextDelta(f"token {i} ") for i in range(deltas)),
        MessageStop(StopReason.END_TURN),
    ]


@dataclass(frozen=True)
class PlannedCall:
    id: str
    name: str
    input: dict[str, Any]
    kind: str  # "read" (policy-approved), "batch" (approved in the batch) or "single"


def _threat(i: int) -> str:
    return f"threat-{i:08x}"  # the generator's threat ids


def _iteration_calls(iteration: int) -> list[PlannedCall]:
    # Distinct ids and inputs per iteration (no digest repeats), all within `RUNNER_MODEL_ELEMENTS`.
    n = iteration * CALLS_PER_ITERATION
    calls = [
        PlannedCall("", "get_entity", {"kind": "elements", "id": f"comp-{n + 1}"}, "read"),
        PlannedCall("", "search_entities", {"kind": "threats", "severity": "high", "offset": iteration},
                    "read"),
        PlannedCall("", "get_entity", {"kind": "threats", "id": _threat(n + 2)}, "read"),
        PlannedCall("", "search_entities", {"kind": "data_flows", "references": f"comp-{n + 3}"},
                    "read"),
        PlannedCall("", "add_element", {"action": "add_element", "element": {
            "type": "process", "name": f"Worker {n}", "trust_zone": "internal",
            "description": "Consumes jobs from the queue.", "technologies": ["Python", "Redis"],
        }}, "batch"),
        PlannedCall("", "update_element", {"action": "update_element", "id": f"comp-{n + 4}",
                                           "updates": {"name": f"Gateway {n}"}}, "batch"),
        PlannedCall("", "add_data_flow", {"action": "add_data_flow", "data_flow": {
            "from": f"comp-{n + 5}", "to": f"comp-{n + 6}", "protocol": "HTTPS",
            "data": ["session tokens"], "authenticated": True,
        }}, "batch"),
        PlannedCall("", "update_threat", {"action": "update_threat", "id": _threat(n + 7),
                                          "updates": {"severity": "low"}}, "batch"),
        PlannedCall("", "add_threat", {"action": "add_threat", "threat": {
            "title": f"Token replay {n}", "category": "Spoofing", "element": f"comp-{n + 8}",
            "severity": "high", "description": "A captured token is replayed to the gateway.",
        }}, "batch"),
        PlannedCall("", "update_data_flow", {"action": "update_data_flow", "id": f"flow-{n + 9}",
                                             "updates": {"protocol": "gRPC/TLS"}}, "batch"),
        PlannedCall("", "delete_threat", {"action": "delete_threat", "id": _threat(n + 10)},
                    "single"),
        PlannedCall("", "delete_data_flow", {"action": "delete_data_flow", "id": f"flow-{n + 11}",
                                             "cascade": True},
                    "single"),
    ]
    return [
        PlannedCall(f"call-{iteration}-{i}", c.name, c.input, c.kind) for i, c in enumerate(calls)
    ]


def _streamed_reply(iteration: int, calls: list[PlannedCall]) -> list[Any]:
    events: list[Any] = [MessageStart("m")]
    events += [TextDelta(f"step {iteration} part {i} ") for i in range(TEXT_DELTAS_PER_ITERATION)]
    for call in calls:
        events.append(ToolCallStart(call.id, call.name))
        text = json.dumps(call.input)
        third = max(1, len(text) // ARGUMENT_DELTAS_PER_CALL)
        pieces = [text[:third], text[third:2 * third], text[2 * third:]]
        events += [ToolCallInputDelta(call.id, piece) for piece in pieces]
        events.append(ToolCallComplete(call.id, call.name, call.input))
    events += [Usage(1200 + iteration, 300), MessageStop(StopReason.TOOL_USE)]
    return events


def _closing_reply() -> list[Any]:
    return [
        MessageStart("m"),
        *(TextDelta(f"summary part {i} ") for i in range(CLOSING_TEXT_DELTAS)),
        Usage(2400, 200),
        MessageStop(StopReason.END_TURN),
    ]


def _result(call: PlannedCall) -> ToolOk:
    if call.kind == "read":
        return ToolOk(READ_RESULT)
    return ToolOk(f"Done: {call.name} ({call.id}).")


@dataclass(frozen=True)
class PlannedIteration:
    reply: list[Any]
    calls: list[PlannedCall]

    def batch_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.calls if c.kind == "batch")

    def single_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.calls if c.kind == "single")


def tool_heavy_replies() -> tuple[list[PlannedIteration], list[Any]]:
    """The iterations (reply events and the calls in them) and the closing reply."""
    iterations = []
    for iteration in range(1, ITERATIONS + 1):
        calls = _iteration_calls(iteration)
        iterations.append(PlannedIteration(_streamed_reply(iteration, calls), calls))
    return iterations, _closing_reply()


def tool_heavy_inputs(tool_set: Any) -> list[Any]:
    """The whole tool-heavy turn as reducer inputs, in the order the runner dispatches them."""
    iterations, closing = tool_heavy_replies()
    inputs: list[Any] = [Submit("Review the payment flows.", (), tool_set, TOOL_HEAVY_LIMITS, 0)]
    now = 0
    for planned in iterations:
        inputs += planned.reply
        inputs.append(ChargeCredits(3))
        inputs += [ApprovalWaited(1500), ApproveBatch(planned.batch_ids())]
        for call_id in planned.single_ids():
            inputs += [ApprovalWaited(800), ApproveCall(call_id)]
        for call in planned.calls:
            inputs += [StartCall(call.id), CallSettled(call.id, _result(call))]
        now += 40
        inputs.append(Advance(now))
    inputs += closing
    inputs.append(ChargeCredits(2))
    return inputs


# ---------------------------------------------------------------- peer form


def peer_input_json(item: Any) -> dict[str, Any]:
    """One input in the peer reducer's vocabulary (its `type` tags and camelCase fields).

    `submit` carries no tool set or limits here: the peer driver builds them with the peer's own
    constructors (see `peer/driver.mjs`)."""
    kind = item.type
    if kind == "submit":
        return {"type": "submit", "text": item.text, "nowMs": item.now_ms,
                "limits": _peer_limits(item.limits)}
    if kind == "approve_call":
        return {"type": "approveCall", "callId": item.call_id}
    if kind == "approve_batch":
        return {"type": "approveBatch", "callIds": list(item.call_ids)}
    if kind == "start_call":
        return {"type": "startCall", "callId": item.call_id}
    if kind == "call_settled":
        return {"type": "callSettled", "callId": item.call_id,
                "outcome": {"ok": True, "result": item.outcome.result}}
    if kind == "advance":
        return {"type": "advance", "nowMs": item.now_ms}
    if kind in ("charge_credits", "approval_waited"):
        # Stockade-only bookkeeping the peer has no input for; it is skipped there.
        return {"type": "skip"}
    data = event_to_json(item)
    if kind == "usage":
        return {"type": "usage", "usage": {"inputTokens": item.input_tokens,
                                           "outputTokens": item.output_tokens}}
    if kind == "message_stop":
        return {"type": "message_stop", "stopReason": item.stop_reason.value}
    if kind == "tool_call_input_delta":
        return {"type": kind, "id": item.id, "partialJson": item.partial_json}
    return data


def _peer_limits(limits: TurnLimits) -> dict[str, int]:
    return {
        "maxIterations": limits.max_iterations,
        "maxToolCallsPerTurn": limits.max_tool_calls_per_turn,
        "maxToolCallsPerIteration": limits.max_tool_calls_per_iteration,
        "maxRetries": limits.max_retries,
        "deadlineMs": limits.deadline_ms,
    }
