"""A whole turn to JSON data and back, losslessly, so a waiting turn can be parked and resumed
in another process.

Tools are stored by name and re-resolved from a registry on load; every prepared call is
re-prepared from its stored raw input and must reproduce its stored digest, or loading is
refused (a tool whose validation changed must not run an input the user never saw). A call a
person edited stores their input as its raw input (the model's original rides in `edit`), so
the digest it is re-checked against, and any grant, is the edited one.
"""

from __future__ import annotations

from typing import Any

from stockade.loop.authorization import DenialReason, DenialRecord, Grant, Violation
from stockade.loop.edits import CallEdit
from stockade.loop.limits import TurnBudget, TurnLimits
from stockade.loop.state import (
    AssistantDraft,
    CallRecord,
    CallStatus,
    TextRun,
    ToolSet,
    TurnOutcome,
    TurnPhase,
    TurnState,
    ViolationRecord,
)
from stockade.protocol.errors import ProtocolError
from stockade.protocol.messages import (
    block_from_json,
    block_to_json,
    message_from_json,
    message_to_json,
)
from stockade.tools.runtime import PreparedCall, ToolEffect

TURN_FORMAT = "stockade.turn/1"


class SnapshotError(ValueError):
    """A saved turn cannot be loaded; the message says why in plain words."""


def _call_to_json(c: CallRecord) -> dict[str, Any]:
    return {
        "id": c.id,
        "tool_name": c.tool_name,
        "input_digest": c.input_digest,
        "summary": c.summary,
        "effect": c.effect.value,
        "destructive": c.destructive,
        "iteration": c.iteration,
        "status": c.status.value,
        "raw_input": c.raw_input,
        "result": c.result,
        "is_error": c.is_error,
        "denial_reason": c.denial_reason.value if c.denial_reason else None,
        "prepared": c.prepared is not None,
        "edit": c.edit.to_json() if c.edit is not None else None,
    }


def turn_to_json(state: TurnState) -> dict[str, Any]:
    """Everything in `state` as JSON-ready data (no closures, no tool objects)."""
    draft = state.draft
    return {
        "format": TURN_FORMAT,
        "phase": state.phase.value,
        "iteration": state.iteration,
        "budget": state.budget.to_json(),
        "limits": state.limits.to_json(),
        "tools": list(state.tool_set.names()),
        "history": [message_to_json(m) for m in state.history],
        "draft": None
        if draft is None
        else {
            "blocks": [block_to_json(b) for b in draft.blocks],
            "text": draft.text.text() if draft.text is not None else None,
            "open_call_ids": [[i, n] for i, n in draft.open_call_ids],
        },
        "calls": [_call_to_json(c) for c in state.calls],
        "grants": [g.to_json() for g in state.grants],
        "used_grants": [g.to_json() for g in state.used_grants],
        "denials": [d.to_json() for d in state.denials],
        "violations": [
            {"violation": v.violation.value, "call_id": v.call_id, "detail": v.detail}
            for v in state.violations
        ],
        "stream_notices": [e.to_json() for e in state.stream_notices],
        "outcome": state.outcome.value if state.outcome else None,
        "reason": state.reason,
        "notice": state.notice,
        "error": state.error.to_json() if state.error else None,
        "seen_call_ids": sorted(state.seen_call_ids),
    }


def _tool_set(names: list[str], registry: Any) -> ToolSet:
    tools = []
    for name in names:
        tool = registry.get(name)
        if tool is None:
            raise SnapshotError(f'The saved turn uses the tool "{name}", which is not available.')
        tools.append(tool)
    return ToolSet(tools)


def _call_from_json(data: dict[str, Any], tool_set: ToolSet) -> CallRecord:
    prepared: PreparedCall | None = None
    if data["prepared"]:
        tool = tool_set.get(data["tool_name"])
        if tool is None:
            raise SnapshotError(f'The saved call "{data["id"]}" names a tool that is not available.')
        result = tool.prepare(data["raw_input"])
        if not isinstance(result, PreparedCall):
            raise SnapshotError(
                f'The saved input of call "{data["id"]}" is no longer accepted by '
                f'"{data["tool_name"]}".'
            )
        if result.input_digest != data["input_digest"]:
            raise SnapshotError(
                f'The saved input of call "{data["id"]}" no longer matches what was reviewed.'
            )
        prepared = result
    reason = data.get("denial_reason")
    edit = data.get("edit")
    return CallRecord(
        id=str(data["id"]),
        tool_name=str(data["tool_name"]),
        input_digest=str(data["input_digest"]),
        summary=str(data["summary"]),
        effect=ToolEffect(data["effect"]),
        destructive=bool(data["destructive"]),
        iteration=int(data["iteration"]),
        status=CallStatus(data["status"]),
        raw_input=data.get("raw_input"),
        result=data.get("result"),
        is_error=bool(data["is_error"]),
        denial_reason=DenialReason(reason) if reason else None,
        edit=CallEdit.from_json(edit) if isinstance(edit, dict) else None,
        prepared=prepared,
    )


def turn_from_json(data: dict[str, Any], registry: Any) -> TurnState:
    """The inverse of `turn_to_json`; raises `SnapshotError` on anything it cannot trust."""
    if not isinstance(data, dict) or data.get("format") != TURN_FORMAT:
        raise SnapshotError("This is not a saved Stockade turn, or it is from another version.")
    try:
        tool_set = _tool_set(list(data["tools"]), registry)
        draft_data = data["draft"]
        draft = None
        if draft_data is not None:
            text = draft_data["text"]
            draft = AssistantDraft(
                tuple(block_from_json(b) for b in draft_data["blocks"]),
                TextRun(text) if text is not None else None,
                tuple((str(i), str(n)) for i, n in draft_data["open_call_ids"]),
            )
        return TurnState(
            phase=TurnPhase(data["phase"]),
            iteration=int(data["iteration"]),
            budget=TurnBudget.from_json(data["budget"]),
            limits=TurnLimits.from_json(data["limits"]),
            tool_set=tool_set,
            history=tuple(message_from_json(m) for m in data["history"]),
            draft=draft,
            calls=tuple(_call_from_json(c, tool_set) for c in data["calls"]),
            grants=tuple(Grant.from_json(g) for g in data["grants"]),
            used_grants=tuple(Grant.from_json(g) for g in data["used_grants"]),
            denials=tuple(DenialRecord.from_json(d) for d in data["denials"]),
            violations=tuple(
                ViolationRecord(Violation(v["violation"]), v["call_id"], str(v["detail"]))
                for v in data["violations"]
            ),
            stream_notices=tuple(ProtocolError.from_json(e) for e in data["stream_notices"]),
            outcome=TurnOutcome(data["outcome"]) if data["outcome"] else None,
            reason=data["reason"],
            notice=data["notice"],
            error=ProtocolError.from_json(data["error"]) if data["error"] else None,
            seen_call_ids=frozenset(str(i) for i in data["seen_call_ids"]),
        )
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"The saved turn is damaged ({type(exc).__name__}: {exc}).") from None
