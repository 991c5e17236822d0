"""Checks that every tool call in a history is answered exactly once, after it was made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from stockade.protocol.messages import Message, ToolCallBlock, ToolResultBlock


class PairingViolationKind(StrEnum):
    DUPLICATE_TOOL_CALL_ID = "duplicate_tool_call_id"
    ORPHAN_TOOL_RESULT = "orphan_tool_result"
    UNANSWERED_TOOL_CALL = "unanswered_tool_call"


@dataclass(frozen=True, slots=True)
class PairingViolation:
    """One broken call/result pairing; `message_index` is where it was found."""

    kind: PairingViolationKind
    tool_call_id: str
    message_index: int


def check_tool_pairing(messages: Sequence[Message]) -> list[PairingViolation]:
    """Every pairing problem in `messages`; never raises.

    Duplicates and orphans come in scan order, then unanswered calls in the order first seen.
    A result in the same message as its call is an orphan: providers require the answer in a
    later message.
    """
    violations: list[PairingViolation] = []
    call_message: dict[str, int] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages):
        for block in message.content:
            if isinstance(block, ToolCallBlock):
                if block.id in call_message:
                    violations.append(
                        PairingViolation(
                            PairingViolationKind.DUPLICATE_TOOL_CALL_ID, block.id, index
                        )
                    )
                else:
                    call_message[block.id] = index
            elif isinstance(block, ToolResultBlock):
                made_at = call_message.get(block.tool_call_id)
                if made_at is None or made_at >= index:
                    violations.append(
                        PairingViolation(
                            PairingViolationKind.ORPHAN_TOOL_RESULT, block.tool_call_id, index
                        )
                    )
                else:
                    answered.add(block.tool_call_id)
    for call_id, index in call_message.items():
        if call_id not in answered:
            violations.append(
                PairingViolation(PairingViolationKind.UNANSWERED_TOOL_CALL, call_id, index)
            )
    return violations
