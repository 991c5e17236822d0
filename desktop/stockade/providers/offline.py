"""The offline provider: the STRIDE rules engine answering through the ordinary tool loop.

It needs no network and no key. It reads the turn's prompt for a scope (element names and ids,
boundaries, types, kinds such as "data stores", STRIDE categories) and for a request not to
change anything, ranks what the rules find by the risk the model shows, and proposes at most
`MAX_PROPOSALS` `add_threat` calls, best first, saying how many more it would propose. It never
proposes what the model already covers (same target and category) or what the user declined
earlier (the system prompt lists those), and it proposes once per turn: when the decisions come
back it answers with a summary instead of another batch. Answers are deterministic: the same
document, prompt and conversation always give the same events.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from stockade.catalog.scope import PromptScope, scope_of
from stockade.catalog.stride import ProposedThreat, analyze
from stockade.protocol import errors
from stockade.protocol.declined import declined_threat_targets
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
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest
from stockade.thf.model import Severity, ThreatModel

log = logging.getLogger(__name__)

MAX_PROPOSALS = 12
"""Proposals per turn: enough to be worth a review, few enough to review properly."""
READ_ONLY_LISTED = 12
"""Gaps listed as text when the prompt asks for no changes."""

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
        "mitigation": {"status": "not_started", "description": proposal.mitigation},
    }
    if proposal.element is not None:
        threat["element"] = proposal.element
    else:
        threat["flow"] = proposal.flow
    return {"action": TOOL_NAME, "threat": threat}


def _highest_offline_id(messages: tuple[Message, ...]) -> int:
    highest = 0
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolCallBlock):
                match = _ID_PATTERN.match(block.id)
                if match:
                    highest = max(highest, int(match.group(1)))
    return highest


def _this_turn(messages: tuple[Message, ...]) -> tuple[str, tuple[Message, ...]]:
    """The turn's prompt (the last user text) and the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "user":
            continue
        text = " ".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
        if text:
            return text, messages[index + 1:]
    return "", messages


def _proposed(messages: tuple[Message, ...]) -> set[tuple[str, str]]:
    """(target, category) of every add_threat call among `messages`."""
    seen: set[tuple[str, str]] = set()
    for message in messages:
        for block in message.content:
            if not isinstance(block, ToolCallBlock) or block.name != TOOL_NAME or \
                    not isinstance(block.input, dict):
                continue
            threat = block.input.get("threat")
            if not isinstance(threat, dict):
                continue
            target = threat.get("element") or threat.get("flow")
            category = threat.get("category")
            if isinstance(target, str) and isinstance(category, str):
                seen.add((target, category))
    return seen


def _results(messages: tuple[Message, ...]) -> list[ToolResultBlock]:
    return [b for m in messages if m.role == "user" for b in m.content
            if isinstance(b, ToolResultBlock)]


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _severity_counts(proposals: list[ProposedThreat]) -> str:
    counts = {s: 0 for s in Severity}
    for p in proposals:
        counts[p.severity] += 1
    return ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)


def _line(p: ProposedThreat) -> str:
    where = "element" if p.element is not None else "flow"
    return f"- **{p.severity.value}** {p.category.value}: {p.title} ({where} `{p.target}`)"


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
        for event in self.answer(request.messages, document, model=request.model,
                                 system=request.system):
            await asyncio.sleep(0)  # a cancelling consumer gets a chance between events
            yield event

    def candidates(self, messages: tuple[Message, ...], document: ThreatModel, *,
                   system: str = "") -> tuple[PromptScope, list[ProposedThreat], int]:
        """The turn's scope, what it would propose (best first), and how many declined
        proposals were left out."""
        prompt, _after = _this_turn(messages)
        scope = scope_of(prompt, document)
        found = analyze(document, elements=scope.elements, flows=scope.flows,
                        categories=scope.categories)
        declined = declined_threat_targets(system)
        fresh = [p for p in found if (p.target, p.category.value) not in declined]
        return scope, fresh, len(found) - len(fresh)

    def answer(self, messages: tuple[Message, ...], document: ThreatModel, *,
               model: str = MODEL_NAME, system: str = "") -> list[StreamEvent]:
        """The whole answer for this conversation and document, as events."""
        scope, fresh, declined = self.candidates(messages, document, system=system)
        _prompt, after = _this_turn(messages)
        this_turn = _proposed(after)
        events: list[StreamEvent] = [MessageStart(model=model or MODEL_NAME)]
        batch: list[ProposedThreat] = []
        if this_turn:
            remaining = [p for p in fresh if (p.target, p.category.value) not in this_turn]
            parts = self._after_decisions(_results(after), len(remaining))
        elif scope.read_only:
            parts = self._read_only(scope, fresh)
        else:
            batch = fresh[:MAX_PROPOSALS]
            parts = self._proposal_text(scope, batch, len(fresh), declined)
        events.extend(TextDelta(text=part) for part in parts)
        highest_id = _highest_offline_id(messages)
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
    def _proposal_text(scope: PromptScope, batch: list[ProposedThreat], total: int,
                       declined: int) -> list[str]:
        left_out = (f" ({_count(declined, 'proposal')} you declined earlier "
                    f"{'is' if declined == 1 else 'are'} left out)") if declined else ""
        if not batch:
            return [f"Offline STRIDE review of {scope.describe()}: nothing more to propose. "
                    "Every rule in scope is covered by a threat in the model or was declined "
                    f"earlier{left_out}."]
        parts = [f"Offline STRIDE review of {scope.describe()}: "
                 f"{_count(total, 'candidate threat')} the model does not cover yet{left_out}. "]
        if len(batch) == total:
            parts.append(f"Proposing {'it' if total == 1 else f'all {total}'}, highest risk "
                         f"first ({_severity_counts(batch)}). ")
        else:
            parts.append(f"Proposing the {len(batch)} highest-risk first "
                         f"({_severity_counts(batch)}); {total - len(batch)} more would follow "
                         "— ask again after deciding these. ")
        parts.append("Severity follows from the model: boundary crossings, external parties, "
                     "unauthenticated or unencrypted flows and sensitive data raise it. Approve "
                     "the ones that apply to your system.")
        return parts

    @staticmethod
    def _read_only(scope: PromptScope, fresh: list[ProposedThreat]) -> list[str]:
        if not fresh:
            return [f"You asked me not to change the model, so I am proposing nothing. The "
                    f"offline rules find no gap in {scope.describe()}."]
        shown = fresh[:READ_ONLY_LISTED]
        parts = [f"You asked me not to change the model, so I am proposing nothing. The "
                 f"offline rules see {_count(len(fresh), 'gap')} in {scope.describe()}; the "
                 f"highest-risk {'one is' if len(shown) == 1 else f'{len(shown)} are'}:\n\n"]
        parts.extend(_line(p) + "\n" for p in shown)
        if len(fresh) > len(shown):
            parts.append(f"\n…and {len(fresh) - len(shown)} more.")
        return parts

    @staticmethod
    def _after_decisions(results: list[ToolResultBlock], remaining: int) -> list[str]:
        failed = sum(1 for r in results if r.is_error)
        parts = [f"Reviewed the outcome of {_count(len(results), 'proposal')}: "
                 f"{len(results) - failed} applied, {failed} not applied. "]
        if remaining:
            parts.append(f"{_count(remaining, 'more candidate threat')} in scope "
                         f"{'remains' if remaining == 1 else 'remain'}; send another prompt to "
                         "see the next ones.")
        else:
            parts.append("The offline STRIDE rules have nothing more to propose in scope.")
        return parts
