"""The governed hooks' closed sets: every runner step is exactly one audit event kind, and
every bound and refusal is a settle reason."""

from __future__ import annotations

from stockade.governance.hooks import EVENT_FOR_STEP
from stockade.governance.trajectory import EventKind
from stockade.loop.hooks import RefusalKind, StepKind
from stockade.loop.limits import BoundKind
from stockade.loop.reasons import SettleReason


def test_every_runner_step_maps_to_its_own_event_kind() -> None:
    assert set(EVENT_FOR_STEP) == set(StepKind)
    assert len(set(EVENT_FOR_STEP.values())) == len(StepKind)
    assert all(EVENT_FOR_STEP[step].value == step.value for step in StepKind)
    assert set(EVENT_FOR_STEP.values()) <= set(EventKind)


def test_bounds_and_refusals_are_settle_reasons() -> None:
    reasons = {r.value for r in SettleReason}
    assert {b.value for b in BoundKind} <= reasons
    assert {r.value for r in RefusalKind} <= reasons
