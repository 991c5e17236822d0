"""Why a turn (or its run) ended: the one closed set of settle reasons.

A bound's name (`BoundKind`) and a governance refusal (`RefusalKind`) are settle reasons too;
a test keeps those sets inside this one.
"""

from __future__ import annotations

from enum import StrEnum


class SettleReason(StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    PROVIDER_ERROR = "provider_error"
    EMPTY_STREAM = "empty_stream"
    TRUNCATED_STREAM = "truncated_stream"
    # bounds (BoundKind)
    ITERATIONS = "iterations"
    TOOL_CALLS = "tool_calls"
    RETRIES = "retries"
    DEADLINE = "deadline"
    CREDITS = "credits"
    # governance refusals (RefusalKind); `credits` above is one too
    GUARD = "guard"
    # the runner stopped the turn
    STALLED = "stalled"
    HOOK_FAILED = "hook_failed"
    REQUEST_FAILED = "request_failed"
    STOPPED = "stopped"
    # the run could not be kept for later (it ends failed instead of parked)
    PARK_UNAVAILABLE = "park_unavailable"
