"""The offline provider: the STRIDE rules engine answering through the ordinary tool loop.

It needs no network and no key. Each answer proposes up to ten `add_threat` calls for
threats the current document lacks, skipping anything already proposed earlier in the same
conversation (so a denied proposal is not offered again), and ends with plain text once
nothing is left. Answers are deterministic: the same document and conversation always give
the same events.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from stockade.catalog.stride import ProposedThreat, analyze, by_severity
from stockade.protocol import errors
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
)
from stockade.protocol.messages import Message, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest
from stockade.thf.model import StrideCategory, ThreatModel

log = logging.getLogger(__name__)

MAX_PROPOSALS = 10
"""Proposals per answer; keeps each approval batch small enough to review properly."""

MODEL_NAME = "stride-rules"
"""The model id of the offline entry in the model list; echoed when a request names none."""
TOOL_NAME = "add_threat"
_ID_PATTERN = re.compile(r"^offline-(\d+)$")


def threat_input(proposal: ProposedThreat) -> dict[str, Any]:
    """The exact `add_threat` tool input for one proposal."""
    threat: dict[str, Any] = {
        "title": proposal.title,
        "category": proposal.category.value,
        "severity": proposal.severity.value,
        "description": proposal.description,
    }
    if proposal.element is not None:
        threat["element"] = proposal.element
    else:
        threat["flow"] = proposal.flow
    return {"action": TOOL_NAME, "threat": threat}


def _proposed_before(messages: tuple[Message, ...]) -> tuple[set[tuple[str, str]], int]:
    """(target, category) pairs proposed earlier in the conversation, and the highest id used."""
    seen: set[tuple[str, str]] = set()
    highest = 0
    for message in messages:
        for block in message.content:
            if not isinstance(block, ToolCallBlock):
                continue
            match = _ID_PATTERN.match(block.id)
            if match:
                highest = max(highest, int(match.group(1)))
            if block.name != TOOL_NAME or not isinstance(block.input, dict):
                continue
            threat = block.input.get("threat")
            if not isinstance(threat, dict):
                continue
            target = threat.get("element") or threat.get("flow")
            category = threat.get("category")
            if isinstance(target, str) and isinstance(category, str):
                seen.add((target, category))
    return seen, highest


def _last_results(messages: tuple[Message, ...]) -> list[ToolResultBlock]:
    if not messages or messages[-1].role != "user":
        return []
    return [b for b in messages[-1].content if isinstance(b, ToolResultBlock)]


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _category_counts(proposals: list[ProposedThreat]) -> str:
    counts = {c: 0 for c in StrideCategory}
    for p in proposals:
        counts[p.category] += 1
    return ", ".join(f"{c.value} {n}" for c, n in counts.items() if n)


class OfflineProvider:
    """Answers from the STRIDE rules over the document `document_source` returns."""

    name = "offline"

    def __init__(self, document_source: Callable[[], ThreatModel]) -> None:
        self._document_source = document_source

    def __repr__(self) -> str:
        return "OfflineProvider()"

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        try:
            document = self._document_source()
        except Exception as exc:  # the caller's document hook failed; report, never raise
            log.debug("offline provider could not read the document: %s", type(exc).__name__)
            yield StreamError(
                error=errors.transport(
                    "The offline rules engine",
                    errors.TransportReason.REFUSED,
                    message="The offline rules engine could not read the open document.",
                )
            )
            return
        for event in self.answer(request.messages, document, model=request.model):
            await asyncio.sleep(0)  # a cancelling consumer gets a chance between events
            yield event

    def answer(
        self, messages: tuple[Message, ...], document: ThreatModel, *, model: str = MODEL_NAME
    ) -> list[StreamEvent]:
        """The whole answer for this conversation and document, as events."""
        earlier, highest_id = _proposed_before(messages)
        remaining = [
            p for p in by_severity(analyze(document)) if (p.target, p.category.value) not in earlier
        ]
        batch = remaining[:MAX_PROPOSALS]
        events: list[StreamEvent] = [MessageStart(model=model or MODEL_NAME)]
        events.extend(
            TextDelta(text=part)
            for part in self._summary(batch, len(remaining), _last_results(messages))
        )
        for offset, proposal in enumerate(batch, start=1):
            call_id = f"offline-{highest_id + offset}"
            text = json.dumps(threat_input(proposal), ensure_ascii=False, separators=(",", ":"))
            middle = len(text) // 2
            events.append(ToolCallStart(id=call_id, name=TOOL_NAME))
            events.extend(
                ToolCallInputDelta(id=call_id, partial_json=fragment)
                for fragment in (text[:middle], text[middle:])
            )
            events.append(ToolCallComplete(id=call_id, name=TOOL_NAME, input=json.loads(text)))
        # The rules engine costs nothing to run, so it reports no tokens.
        events.append(Usage(input_tokens=0, output_tokens=0))
        events.append(
            MessageStop(stop_reason=StopReason.TOOL_USE if batch else StopReason.END_TURN)
        )
        return events

    @staticmethod
    def _summary(
        batch: list[ProposedThreat], remaining: int, results: list[ToolResultBlock]
    ) -> list[str]:
        parts: list[str] = []
        if results:
            failed = sum(1 for r in results if r.is_error)
            parts.append(
                f"Reviewed the outcome of {_count(len(results), 'proposal', 'proposals')}: "
                f"{len(results) - failed} applied, {failed} not applied. "
            )
        if not batch:
            parts.append(
                "The offline STRIDE rules have nothing more to propose: every rule is either "
                "covered by a threat in the model or was already proposed in this conversation."
            )
            return parts
        parts.append(
            f"The offline STRIDE rules found {_count(remaining, 'threat', 'threats')} the model "
            "does not cover yet. "
        )
        shown = "this one" if len(batch) == 1 else f"these {len(batch)}"
        parts.append(
            f"Proposing {shown}, most severe first ({_category_counts(batch)}); approve the "
            "ones that apply to your system."
        )
        return parts
