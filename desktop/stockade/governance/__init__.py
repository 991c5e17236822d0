"""Governance: price book, meter and ledger, audit trajectory, run state, guards, and the session.

The app and the CLI use `open_governance()` once, then one `AssistantSession` per turn.
"""

from stockade.governance.guards import GuardPolicy
from stockade.governance.ledger import CreditBudgets
from stockade.governance.session import (
    ApprovePolicy,
    AssistantSession,
    Governance,
    GovernedHooks,
    TurnSummary,
    decide_parked,
    open_governance,
    parked_runs,
)

__all__ = [
    "ApprovePolicy",
    "AssistantSession",
    "CreditBudgets",
    "Governance",
    "GovernedHooks",
    "GuardPolicy",
    "TurnSummary",
    "decide_parked",
    "open_governance",
    "parked_runs",
]
