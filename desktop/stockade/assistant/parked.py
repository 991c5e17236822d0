"""`ParkedRun`: a turn waiting for decisions, as one typed, versioned record.

This is what a sealed snapshot holds. `to_json` writes the current schema; `from_json` reads it
and the layout the first release wrote (schema 1), re-preparing every saved call against
today's tools (a call whose input no longer validates to the digest that was reviewed is
refused). Anything else is refused with a message that names what was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stockade.assistant.policy import ApprovePolicy
from stockade.governance.guards import GuardPolicy
from stockade.governance.ledger import CreditBudgets
from stockade.loop.serialize import SnapshotError, turn_from_json, turn_to_json
from stockade.loop.state import CallRecord, TurnPhase, TurnState
from stockade.protocol.provider_ids import PRODUCTION_BASE_URLS, ProviderId
from stockade.thf.model import ThreatModel

PARKED_SCHEMA = 2
"""The schema `to_json` writes. Schema 1 is the first release's nested layout."""
_LEGACY_SCHEMA = 1
_LEGACY_RUNNER_FORMAT = "stockade.runner/1"


class ParkedRunError(SnapshotError):
    """A saved turn that cannot be used; the message says why in plain words."""


@dataclass(frozen=True, slots=True)
class ParkedRun:
    """Everything a resume needs, and nothing it must look up elsewhere."""

    run_id: str
    document_path: str
    provider: ProviderId
    model: str
    endpoint: str | None
    budgets: CreditBudgets
    guard_policy: GuardPolicy
    approve: ApprovePolicy
    write_back: bool
    base_count: int
    """Messages of the earlier conversation the turn was sent with (not this turn's own)."""
    parked_at_ms: int
    waiting_since_ms: int | None
    state: TurnState
    document: ThreatModel
    """The document as the turn left it: every change committed before the pause."""
    document_before_turn: ThreatModel | None
    """The document before the turn's first change (None in schema-1 snapshots)."""
    base_digest: str
    """The digest of the file at `document_path` when the run parked; a resume requires it."""
    conflict_path: str | None = None
    """Set when the turn's write-back found the file changed and saved its document here
    instead: `base_digest` is then that document's, so the run continues only on it."""

    def pending(self) -> tuple[CallRecord, ...]:
        return self.state.pending_calls()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": PARKED_SCHEMA,
            "run_id": self.run_id,
            "document_path": self.document_path,
            "provider": self.provider.value,
            "model": self.model,
            "endpoint": self.endpoint,
            "budgets": {"per_turn": self.budgets.per_turn, "per_day": self.budgets.per_day,
                        "per_month": self.budgets.per_month},
            "guard_policy": self.guard_policy.value,
            "approve": self.approve.value,
            "write_back": self.write_back,
            "base_count": self.base_count,
            "parked_at_ms": self.parked_at_ms,
            "waiting_since_ms": self.waiting_since_ms,
            "turn": turn_to_json(self.state),
            "document": _document_json(self.document),
            "document_before_turn": None if self.document_before_turn is None
            else _document_json(self.document_before_turn),
            "base_digest": self.base_digest,
            "conflict_path": self.conflict_path,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], registry: Any, *, run_id: str) -> ParkedRun:
        """The parked run sealed under `run_id`; `ParkedRunError` for anything untrustworthy."""
        if not isinstance(data, Mapping):
            raise ParkedRunError("The saved turn is not readable.")
        if data.get("run_id") != run_id:
            raise ParkedRunError(f"The saved turn does not belong to run {run_id}.")
        schema = data.get("schema", data.get("version"))
        try:
            if schema == PARKED_SCHEMA:
                parked = _from_current(data, registry)
            elif schema == _LEGACY_SCHEMA:
                parked = _from_legacy(data, registry)
            elif isinstance(schema, int) and schema > PARKED_SCHEMA:
                raise ParkedRunError(
                    f"Run {run_id} was saved by a newer Stockade (saved-turn schema {schema}; "
                    f"this build reads schemas 1 and {PARKED_SCHEMA}). Resume it with that "
                    "version.")
            else:
                raise ParkedRunError(f"Run {run_id} has a saved-turn layout this build does not "
                                     f"know (schema {schema!r}).")
        except ParkedRunError:
            raise
        except SnapshotError as exc:
            raise ParkedRunError(str(exc)) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ParkedRunError(f"The saved turn of run {run_id} is damaged "
                                 f"({type(exc).__name__}).") from None
        if parked.state.phase is not TurnPhase.AWAITING_APPROVAL:
            raise ParkedRunError(f"The saved turn of run {run_id} is not waiting for a decision.")
        return parked


def _document_json(document: ThreatModel) -> dict[str, Any]:
    return document.model_dump(mode="json", by_alias=True, exclude_none=True)


def _budgets(data: Mapping[str, Any]) -> CreditBudgets:
    return CreditBudgets(per_turn=data["per_turn"], per_day=data.get("per_day"),
                         per_month=data.get("per_month"))


def _from_current(data: Mapping[str, Any], registry: Any) -> ParkedRun:
    before = data.get("document_before_turn")
    waiting = data.get("waiting_since_ms")
    return ParkedRun(
        run_id=str(data["run_id"]),
        document_path=str(data["document_path"]),
        provider=ProviderId(data["provider"]),
        model=str(data["model"]),
        endpoint=str(data["endpoint"]) if data.get("endpoint") else None,
        budgets=_budgets(data["budgets"]),
        guard_policy=GuardPolicy(data["guard_policy"]),
        approve=ApprovePolicy(data["approve"]),
        write_back=bool(data["write_back"]),
        base_count=int(data["base_count"]),
        parked_at_ms=int(data["parked_at_ms"]),
        waiting_since_ms=int(waiting) if isinstance(waiting, int) else None,
        state=turn_from_json(data["turn"], registry),
        document=ThreatModel.model_validate(data["document"]),
        document_before_turn=None if before is None else ThreatModel.model_validate(before),
        base_digest=str(data["base_digest"]),
        conflict_path=str(data["conflict_path"]) if data.get("conflict_path") else None,
    )


def _from_legacy(data: Mapping[str, Any], registry: Any) -> ParkedRun:
    """The first release's layout: runner state nested under `runner`, names by string."""
    runner = data["runner"]
    if not isinstance(runner, Mapping) or runner.get("format") != _LEGACY_RUNNER_FORMAT:
        raise ParkedRunError("The saved turn is not a Stockade turn this build can read.")
    provider = ProviderId(data["provider_name"])
    endpoint = data.get("base_url") or PRODUCTION_BASE_URLS.get(provider)
    waiting = runner.get("waiting_since_ms")
    return ParkedRun(
        run_id=str(data["run_id"]),
        document_path=str(data["document_path"]),
        provider=provider,
        model=str(data["model"]),
        endpoint=str(endpoint) if endpoint else None,
        budgets=_budgets(data["budgets"]),
        guard_policy=GuardPolicy(data["guard_policy"]),
        approve=ApprovePolicy(data["approve"]),
        write_back=bool(data.get("write_back", False)),
        base_count=int(data.get("base_count", 0)),
        parked_at_ms=int(data["parked_at_ms"]),
        waiting_since_ms=int(waiting) if isinstance(waiting, int) else None,
        state=turn_from_json(runner["turn"], registry),
        document=ThreatModel.model_validate(data["document"]),
        document_before_turn=None,
        base_digest=str(data["document_digest"]),
    )
