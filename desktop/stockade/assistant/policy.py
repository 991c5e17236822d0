"""Who decides a proposed mutation, and the one decision function for headless policies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from stockade.loop.state import CallRecord


class ApprovePolicy(StrEnum):
    """Read tools are always approved by the reducer; this decides mutations."""

    MANUAL = "manual"  # the app: the user decides each call
    READ = "read"  # mutations wait for a decision (headless: the run parks)
    MUTATE = "mutate"  # non-destructive mutations are approved; destructive ones wait
    DENY = "deny"  # every mutation is denied


HEADLESS_POLICIES = (ApprovePolicy.READ, ApprovePolicy.MUTATE, ApprovePolicy.DENY)
"""What `stockade assist --approve` offers."""

POLICY_ACTORS = {ApprovePolicy.MUTATE: "policy:mutate", ApprovePolicy.DENY: "policy:deny"}
POLICY_DENIAL_REASON = "denied by the --approve deny policy"


@dataclass(frozen=True, slots=True)
class PolicyDecisions:
    """What a policy decides for the calls pending now: approve these together, deny those."""

    approve: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.approve and not self.deny


def decide_by_policy(policy: ApprovePolicy, pending: Sequence[CallRecord]) -> PolicyDecisions:
    """The decisions `policy` makes for `pending`; destructive calls are never approved by it."""
    if policy is ApprovePolicy.MUTATE:
        return PolicyDecisions(approve=tuple(c.id for c in pending if not c.destructive))
    if policy is ApprovePolicy.DENY:
        return PolicyDecisions(deny=tuple(c.id for c in pending))
    return PolicyDecisions()
