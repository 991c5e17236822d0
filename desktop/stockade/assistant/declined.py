"""Memory across turns: the proposals a user declined on a document.

Remembered when a person denies a call (not when a headless policy does: `--approve deny` is
not a judgement of the proposal), per document path, by tool and input digest and, for
`add_threat`, by target, category and normalized title. Every later turn on the document is
told about them (`tools.prompt`), the review queue marks a matching proposal "declined
earlier", and the offline engine does not propose them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stockade.governance.services import Governance
from stockade.loop.state import CallRecord
from stockade.protocol.declined import ADD_THREAT, DeclinedProposal, threat_key_of, title_key
from stockade.store import declined as sql

UNSAVED_PREFIX = "unsaved:"
"""Documents without a file have no stable identity, so nothing is remembered for them."""


@dataclass(frozen=True, slots=True)
class Declined:
    """One call a person declined, with their reason."""

    call: CallRecord
    reason: str | None


def proposal_of(call: CallRecord, reason: str | None) -> DeclinedProposal:
    """The memory record for a declined call."""
    target_kind = target = category = title = None
    if call.tool_name == ADD_THREAT and isinstance(call.raw_input, dict):
        threat = call.raw_input.get("threat")
        if isinstance(threat, dict):
            if isinstance(threat.get("element"), str) and threat["element"]:
                target_kind, target = "element", threat["element"]
            elif isinstance(threat.get("flow"), str) and threat["flow"]:
                target_kind, target = "flow", threat["flow"]
            category = threat.get("category") if isinstance(threat.get("category"), str) else None
            title = threat.get("title") if isinstance(threat.get("title"), str) else None
    return DeclinedProposal(tool=call.tool_name, input_digest=call.input_digest,
                            summary=call.summary, target_kind=target_kind, target=target,
                            category=category, title=title, reason=reason or None)


def remembered(document_path: str) -> bool:
    return bool(document_path) and not document_path.startswith(UNSAVED_PREFIX)


def remember(gov: Governance, document_path: str, declined: Iterable[Declined], *,
             actor: str, run_id: str) -> None:
    """Store the declined calls for the document (one transaction)."""
    items = [d for d in declined if d.call.input_digest]
    if not items or not remembered(document_path):
        return
    now = gov.clock_ms()
    with gov.db.write() as conn:
        for item in items:
            p = proposal_of(item.call, item.reason)
            sql.remember(conn, sql.DeclinedRow(
                document_path=document_path, tool=p.tool, input_digest=p.input_digest,
                summary=p.summary, target_kind=p.target_kind, target=p.target,
                category=p.category, title=p.title,
                title_key=title_key(p.title) if p.title else None, reason=p.reason,
                actor=actor, run_id=run_id, call_id=item.call.id, declined_ms=now))


def recall(gov: Governance, document_path: str) -> tuple[DeclinedProposal, ...]:
    """What the user declined on the document before, oldest first."""
    if not remembered(document_path):
        return ()
    rows = sql.declined_for(gov.db.read(), document_path)
    return tuple(DeclinedProposal(tool=r.tool, input_digest=r.input_digest, summary=r.summary,
                                  target_kind=r.target_kind, target=r.target,
                                  category=r.category, title=r.title, reason=r.reason)
                 for r in rows)


def declined_earlier(call: CallRecord,
                     memory: Sequence[DeclinedProposal]) -> DeclinedProposal | None:
    """The earlier decline this proposal repeats, if any (same input, or the same threat)."""
    key = threat_key_of(call.tool_name, call.raw_input)
    for item in reversed(memory):  # the newest reason first
        if item.tool == call.tool_name and item.input_digest == call.input_digest:
            return item
        if key is not None and item.threat_key == key:
            return item
    return None
