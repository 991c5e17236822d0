"""What each pending call would change: the preview the review queue and `runs show` print.

Calls are previewed in call order, each on the document the previous ones would leave (as if
every earlier call were approved, except those about to be denied), so an add shows the id it
will really get. Nothing is committed: the pure actions run on copies. Each preview also says
what the call targets, its severity where it has one, whether the user declined the same
proposal in an earlier turn, and what the user changed if they edited it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stockade.assistant.declined import declined_earlier
from stockade.loop.state import CallRecord
from stockade.protocol.declined import DeclinedProposal
from stockade.thf.diff import describe, diff
from stockade.thf.model import ThreatModel
from stockade.tools.runtime import ToolContext, ToolFailed, ToolOk

PREVIEW_VALUE_MAX = 160
"""Longest before/after value shown per field; the raw input always has the whole call."""
PREVIEW_FIELDS_MAX = 40


@dataclass(frozen=True, slots=True)
class CallPreview:
    """One pending call as a reviewer sees it (every string is plain text from the model or
    the document: show it as text, never as markup)."""

    call_id: str
    tool_name: str
    summary: str
    destructive: bool
    input_digest: str
    raw_input: str
    changes: tuple[str, ...]
    refused: bool = False
    """The call would be refused as it stands (its result would be an error)."""
    target: str = ""
    """What the call acts on (an id, or the name of something it adds)."""
    severity: str | None = None
    declined_earlier: DeclinedProposal | None = None
    """The earlier decline this proposal repeats (same input, or the same threat)."""
    edited: tuple[str, ...] = ()
    """What the user changed before deciding (empty: the input is the model's)."""
    raw: Any = None
    """The input itself (what an edit starts from)."""
    headline: str = ""
    """One line for a compact row: a threat's title and category, else the summary."""


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        # A nested record (a threat's mitigation) reads better as "status: …; description: …".
        value = "; ".join(f"{k}: {v if isinstance(v, str) else json.dumps(v)}"
                          for k, v in sorted(value.items()))
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= PREVIEW_VALUE_MAX else text[: PREVIEW_VALUE_MAX - 1] + "…"


def raw_input_text(raw: Any) -> str:
    """The call's input exactly as the model sent it, pretty-printed JSON."""
    try:
        return json.dumps(raw, ensure_ascii=False, indent=2, sort_keys=True)
    except (TypeError, ValueError):
        return repr(raw)


def describe_changes(before: ThreatModel, after: ThreatModel) -> tuple[str, ...]:
    """The entity diff from `before` to `after` as indented lines."""
    changes = diff(before, after)
    if not changes:
        return ("No change to the document.",)
    lines: list[str] = []
    for change in changes:
        lines.append(describe(change))
        for field in change.fields[:PREVIEW_FIELDS_MAX]:
            if change.change == "added":
                lines.append(f"    {field.name}: {_short(field.after)}")
            elif change.change == "removed":
                lines.append(f"    {field.name}: {_short(field.before)}")
            else:
                lines.append(f"    {field.name}: {_short(field.before)} → {_short(field.after)}")
        if len(change.fields) > PREVIEW_FIELDS_MAX:
            lines.append(f"    … and {len(change.fields) - PREVIEW_FIELDS_MAX} more fields")
    return tuple(lines)


async def _preview_one(call: CallRecord,
                       document: ThreatModel) -> tuple[tuple[str, ...], ThreatModel, bool]:
    prepared = call.prepared
    if prepared is None:
        return ("This call has no valid input, so it cannot run.",), document, True
    try:
        outcome = await prepared.run(ToolContext(document=document, cancelled=asyncio.Event()))
    except Exception:  # a crashing tool shows as a failure here too; the runner logs its own
        return ("The tool failed while previewing this call.",), document, True
    if isinstance(outcome, ToolFailed):
        return ("This call would be refused:", outcome.result), document, True
    if not isinstance(outcome, ToolOk) or outcome.document is None:
        return ("No change to the document (this call only reads).",), document, False
    return describe_changes(document, outcome.document), outcome.document, False


def call_headline(tool: str, raw: Any) -> tuple[str, str | None]:
    """(target, severity) of a call's input, for a one-line row."""
    if not isinstance(raw, dict):
        return "", None
    for key in ("threat", "element", "data_flow", "flow", "trust_boundary", "updates"):
        inner = raw.get(key)
        if isinstance(inner, dict):
            break
    else:
        inner = {}
    target = raw.get("id") if isinstance(raw.get("id"), str) else None
    if target is None:
        for key in ("element", "flow", "name", "title"):
            value = inner.get(key)
            if isinstance(value, str) and value:
                target = value
                break
    severity = inner.get("severity")
    return target or "", severity.lower() if isinstance(severity, str) else None


async def preview_calls(calls: Sequence[CallRecord], document: ThreatModel, *,
                        declined: Sequence[DeclinedProposal] = (),
                        skip: frozenset[str] = frozenset()) -> list[CallPreview]:
    """Previews of `calls` in order, each on the document the earlier ones would produce.

    Calls in `skip` (about to be denied) are previewed on the current document without
    advancing it, so the calls after them show the ids they will really get."""
    previews: list[CallPreview] = []
    current = document
    for call in calls:
        lines, after, refused = await _preview_one(call, current)
        if call.id not in skip:
            current = after
        target, severity = call_headline(call.tool_name, call.raw_input)
        headline = call.summary
        threat = call.raw_input.get("threat") if isinstance(call.raw_input, dict) else None
        if call.tool_name == "add_threat" and isinstance(threat, dict) and \
                isinstance(threat.get("title"), str):
            headline = f"{threat['title']} ({threat.get('category', '?')})"
        previews.append(CallPreview(
            call_id=call.id, tool_name=call.tool_name, summary=call.summary,
            destructive=call.destructive, input_digest=call.input_digest,
            raw_input=raw_input_text(call.raw_input), changes=lines, refused=refused,
            target=target, severity=severity, declined_earlier=declined_earlier(call, declined),
            edited=call.edit.changes if call.edit is not None else (), raw=call.raw_input,
            headline=headline))
    return previews
