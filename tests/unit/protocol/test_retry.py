"""The turn's retry policy: which failures are retried, `retry-after` parsing, full-jitter backoff.

The retrying itself happens in the turn runner (tests/unit/loop/test_runner_retries.py) and is
proven through the real CLI and SDKs in tests/e2e/test_cli_retries.py.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.protocol.errors import (
    ErrorCode,
    ProtocolError,
    TransportReason,
    http_status,
    malformed,
    no_api_key,
    rate_limited,
    transport,
)
from stockade.protocol.retry import (
    MAX_RETRY_AFTER_MS,
    RetryPolicy,
    is_retryable,
    parse_retry_after,
    retry_delay_ms,
)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (rate_limited("Anthropic"), True),
        *[(http_status("Anthropic", s), True) for s in (408, 409, 429, 500, 502, 503, 504, 529)],
        *[(http_status("Anthropic", s), False)
          for s in (400, 401, 403, 404, 413, 422, 501, 505, 599)],
        (transport("Anthropic"), True),
        (transport("Anthropic", TransportReason.RESPONSE_TOO_LARGE), False),
        (transport("Anthropic", TransportReason.REFUSED), False),
        (ProtocolError(code=ErrorCode.TRANSPORT, message="m"), True),
        (ProtocolError(code=ErrorCode.HTTP_STATUS, message="m"), False),
        (malformed(), False),
        (no_api_key("anthropic"), False),
        (ProtocolError(code=ErrorCode.CONTEXT_OVERFLOW, message="m"), False),
    ],
)
def test_only_transient_failures_are_retryable(error: ProtocolError, retryable: bool) -> None:
    assert is_retryable(error) is retryable


def test_backoff_is_full_jitter_under_a_doubling_capped_ceiling() -> None:
    policy = RetryPolicy(base_delay_ms=500, max_delay_ms=3000)
    rng = random.Random(7)
    for attempt, ceiling in ((1, 500), (2, 1000), (3, 2000), (4, 3000), (40, 3000)):
        delays = [retry_delay_ms(attempt, policy, rng=rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        # Full jitter spreads over the whole range, not around the ceiling.
        assert min(delays) < ceiling * 0.2 and max(delays) > ceiling * 0.8


def test_a_retry_after_hint_is_waited_out_in_full_and_clamped() -> None:
    policy = RetryPolicy()
    assert retry_delay_ms(1, policy, retry_after_ms=2000) == 2000
    assert retry_delay_ms(3, policy, retry_after_ms=0) == 0
    assert retry_delay_ms(1, policy, retry_after_ms=10**12) == MAX_RETRY_AFTER_MS


def test_bad_policy_values_and_attempt_numbers_are_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_ms=-1)
    with pytest.raises(ValueError):
        retry_delay_ms(0, RetryPolicy())


def test_retry_after_takes_delta_seconds() -> None:
    assert parse_retry_after("2") == 2000
    assert parse_retry_after(" 7 ") == 7000
    assert parse_retry_after("18446744073709551615") == MAX_RETRY_AFTER_MS
    assert parse_retry_after("9" * 10_000) == MAX_RETRY_AFTER_MS


def test_retry_after_takes_an_http_date() -> None:
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now_s=now.timestamp()) == 30_000
    earlier = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(earlier, now_s=now.timestamp()) == 0
    far = format_datetime(now + timedelta(days=3), usegmt=True)
    assert parse_retry_after(far, now_s=now.timestamp()) == MAX_RETRY_AFTER_MS


@pytest.mark.parametrize("value", [None, "", "1.5", "-1", "٣", "soon", "Wed, 99 Foo 2026",
                                   "Wed, 21 Oct 2026 07:28:00", "x" * 10_000])
def test_unusable_retry_after_values_are_ignored(value: str | None) -> None:
    assert parse_retry_after(value) is None


@given(st.text(max_size=80))
def test_retry_after_parsing_never_raises(value: str) -> None:
    result = parse_retry_after(value)
    assert result is None or 0 <= result <= MAX_RETRY_AFTER_MS
