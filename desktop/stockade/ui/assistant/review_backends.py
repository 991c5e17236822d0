"""What the review queue works on: a live turn (editable) or a parked run (decide only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stockade.assistant.review import CallPreview, preview_calls
from stockade.assistant.turn import Turn
from stockade.loop.state import CallRecord
from stockade.protocol.declined import DeclinedProposal
from stockade.thf.model import ThreatModel

PARKED_EDIT_UNAVAILABLE = ("A saved turn's calls can be approved or denied here but not "
                           "edited. Deny a call with a reason to tell the assistant what to "
                           "change.")


class TurnReview:
    """A waiting turn in this window: edits go to `Turn.edit` and are audited at once."""

    def __init__(self, turn: Turn, actor: str) -> None:
        self.turn = turn
        self.actor = actor

    @property
    def edit_unavailable(self) -> str | None:
        return None if self.turn.waiting else "The turn is no longer waiting for a decision."

    async def edit(self, call_id: str, new_input: Any) -> tuple[str, ...]:
        result = await self.turn.edit(call_id, new_input, self.actor)
        return result.issues

    async def previews(self, skip: frozenset[str]) -> list[CallPreview]:
        return await self.turn.previews(skip)


class ParkedReview:
    """The undecided calls of a parked run, previewed on the document it carries."""

    def __init__(self, calls: Sequence[CallRecord], document: ThreatModel,
                 declined: Sequence[DeclinedProposal]) -> None:
        self.calls = list(calls)
        self.document = document
        self.declined = tuple(declined)

    @property
    def edit_unavailable(self) -> str | None:
        return PARKED_EDIT_UNAVAILABLE

    async def edit(self, call_id: str, new_input: Any) -> tuple[str, ...]:
        return (PARKED_EDIT_UNAVAILABLE,)

    async def previews(self, skip: frozenset[str]) -> list[CallPreview]:
        return await preview_calls(self.calls, self.document, declined=self.declined,
                                   skip=skip)
