"""The retry policy of a turn: which failures are retried, and how long to wait before each.

The turn runner is the only place that retries (DESIGN.md, Providers): a request is repeated
only when it failed before its first event, only for transient failures, within the turn's
`max_retries`, and each attempt is priced, reserved and audited like the first. This module
holds the pure parts: the classification, `retry-after` parsing and the backoff.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from stockade.protocol.errors import ErrorCode, ProtocolError, TransportReason

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth another attempt: timeouts, conflicts, rate limits, server trouble and
Anthropic's 529 (overloaded). 400, 401, 403, 404, 413 and 422 never change by waiting."""

MAX_RETRY_AFTER_MS = 600_000
"""A provider's `retry-after` beyond ten minutes is read as ten minutes (the turn's deadline
clamps it further)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits uniformly in [0, base·2^(n-1)],
    capped at `max_delay_ms`; a provider's `retry-after` is waited out in full instead."""

    base_delay_ms: int = 500
    max_delay_ms: int = 8_000

    def __post_init__(self) -> None:
        if self.base_delay_ms < 0 or self.max_delay_ms < 0:
            raise ValueError("retry delays must not be negative")


def is_retryable(error: ProtocolError) -> bool:
    """Whether a failure that arrived before any output may be sent again."""
    if error.code is ErrorCode.RATE_LIMITED:
        return True
    if error.code is ErrorCode.HTTP_STATUS:
        return error.status in RETRYABLE_STATUSES
    if error.code is ErrorCode.TRANSPORT:
        # Only connection failures: a refused redirect or an oversized answer repeats itself.
        return error.transport_reason in (None, TransportReason.NETWORK)
    return False


def retry_delay_ms(attempt: int, policy: RetryPolicy, retry_after_ms: int | None = None,
                   rng: random.Random | None = None) -> int:
    """Milliseconds to wait after failed attempt number `attempt` (1-based)."""
    if attempt < 1:
        raise ValueError("attempt numbers start at 1")
    if retry_after_ms is not None and retry_after_ms >= 0:
        return min(retry_after_ms, MAX_RETRY_AFTER_MS)
    exponent = min(attempt - 1, 30)  # past 2**30 every sane cap is reached anyway
    ceiling = min(policy.base_delay_ms * (2**exponent), policy.max_delay_ms)
    return round((rng or random).uniform(0, ceiling))


def parse_retry_after(value: str | None, now_s: float | None = None) -> int | None:
    """A `retry-after` header in milliseconds: delta-seconds or an HTTP date; None if unusable."""
    if value is None:
        return None
    text = value.strip()
    if not text or not text.isascii():
        return None
    if text.isdigit():
        if len(text) > 9:  # past the clamp already; keeps int() away from huge digit strings
            return MAX_RETRY_AFTER_MS
        return min(int(text) * 1000, MAX_RETRY_AFTER_MS)
    if len(text) > 64:
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are always GMT; a date without a zone is not one
    now = time.time() if now_s is None else now_s
    delay_ms = int((when.timestamp() - now) * 1000)
    return min(max(delay_ms, 0), MAX_RETRY_AFTER_MS)
