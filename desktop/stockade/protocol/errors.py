"""The closed set of protocol error codes, the error record, and provider-text redaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class ErrorCode(StrEnum):
    UNSUPPORTED_CAPABILITY = "unsupported_capability"
    NO_API_KEY = "no_api_key"
    HTTP_STATUS = "http_status"
    RATE_LIMITED = "rate_limited"
    TRANSPORT = "transport"
    MALFORMED_STREAM = "malformed_stream"
    CONTEXT_OVERFLOW = "context_overflow"
    CANCELLED = "cancelled"


class TransportReason(StrEnum):
    """Why a transport failed; only `network` failures (connect, read, timeout) are retried."""

    NETWORK = "network"
    RESPONSE_TOO_LARGE = "response_too_large"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """An error a user may read: an authored `message`, plus redacted provider text if any."""

    code: ErrorCode
    message: str
    provider_detail: str | None = None
    retry_after_ms: int | None = None
    status: int | None = None
    transport_reason: TransportReason | None = None
    """Set on `transport` errors; `None` is read as a network failure (see `protocol.retry.is_retryable`)."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code.value, "message": self.message}
        if self.provider_detail is not None:
            out["provider_detail"] = self.provider_detail
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        if self.status is not None:
            out["status"] = self.status
        if self.transport_reason is not None:
            out["transport_reason"] = self.transport_reason.value
        return out

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ProtocolError:
        detail = data.get("provider_detail")
        retry = data.get("retry_after_ms")
        status = data.get("status")
        reason = data.get("transport_reason")
        return cls(
            code=ErrorCode(str(data["code"])),
            message=str(data["message"]),
            provider_detail=str(detail) if detail is not None else None,
            retry_after_ms=int(retry) if isinstance(retry, int) else None,
            status=int(status) if isinstance(status, int) else None,
            transport_reason=TransportReason(str(reason)) if reason is not None else None,
        )


class ProtocolException(Exception):
    """Carries a `ProtocolError` across a raise; its text is only the authored message."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(error.message)
        self.error = error


# --- redaction -------------------------------------------------------------------------------

REDACTED = "[redacted-key]"
DETAIL_LIMIT_UTF16 = 200
"""Provider detail is capped in UTF-16 code units so every front end measures it the same way."""

_TOKEN_CHARS = r"A-Za-z0-9_\-"

# Order matters: labelled values first (so their labels survive), bare key shapes after.
_BEARER = re.compile(
    r"\b(bearer)(\s+)(?!\[redacted-key\])[A-Za-z0-9._~+/=\-]+", re.IGNORECASE | re.ASCII
)
_LABELLED = re.compile(
    r"""(?P<label>\b(?:x-api-key|x-goog-api-key|api[_-]?key|apikey|access[_-]?token|auth[_-]?token
        |secret[_-]?key|client[_-]?secret|authorization|password|token|secret)
        ["']?\s*[:=]\s*["']?)
        (?!bearer\b)(?!\[redacted-key\])[^\s"',;&}\]]+""",
    re.IGNORECASE | re.ASCII | re.VERBOSE,
)
_SK_KEY = re.compile(rf"\bsk-[{_TOKEN_CHARS}]+", re.IGNORECASE | re.ASCII)
# Opaque tokens: 32+ token characters mixing letters and digits, as API keys, session tokens and
# hex digests do. Plain words and long runs of one letter do not qualify; over-masking a request
# id is an acceptable cost for never showing a key.
_OPAQUE = re.compile(rf"(?<![{_TOKEN_CHARS}])[{_TOKEN_CHARS}]{{32,}}(?![{_TOKEN_CHARS}])", re.ASCII)


def _mask_opaque(match: re.Match[str]) -> str:
    token = match.group(0)
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    return REDACTED if has_digit and has_letter else token


def mask_keys(text: str) -> str:
    """Replace every key-shaped token in `text` with `[redacted-key]`; no length cap."""
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _LABELLED.sub(lambda m: f"{m.group('label')}{REDACTED}", text)
    text = _SK_KEY.sub(REDACTED, text)
    return _OPAQUE.sub(_mask_opaque, text)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (what the reference front ends count)."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate in provider text still counts as one unit, never raises
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def cap_utf16(text: str, limit: int, ellipsis: str = "…") -> str:
    """`text` cut to at most `limit` UTF-16 units plus `ellipsis`; never splits a character."""
    if utf16_len(text) <= limit:
        return text
    units = 0
    for index, char in enumerate(text):
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > limit:
            return text[:index] + ellipsis
        units += width
    return text  # unreachable: the length check above guarantees an early return


def redact(detail: str) -> str:
    """Provider text made safe to show: key-shaped tokens masked first, then length-capped.

    Masking before capping matters: a cap that cut a key in half would leave a prefix the
    pattern no longer recognizes.
    """
    return cap_utf16(mask_keys(detail), DETAIL_LIMIT_UTF16)


def _optional_detail(detail: str | None) -> str | None:
    if detail is None or not detail.strip():
        return None
    return redact(detail)


# --- authored messages -------------------------------------------------------------------------

_PROVIDER_LABELS = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "local": "The local model server",
    "offline": "The offline rules engine",
    "replay": "The replay provider",
}


def provider_label(provider: str) -> str:
    """The name users see for a provider id."""
    return _PROVIDER_LABELS.get(provider, provider)


def _status_reason(status: int) -> str:
    if 300 <= status <= 399:
        return "the provider answered with a redirect, which Stockade does not follow"
    if status == 400:
        return "the provider rejected the request as invalid"
    if status == 401:
        return "the API key was not accepted; check the key saved for this provider"
    if status == 403:
        return "the provider refused the request (key permissions or region)"
    if status == 404:
        return "the model or endpoint does not exist"
    if status == 408:
        return "the provider gave up waiting for the request"
    if status == 413:
        return "the request is larger than this model accepts"
    if status == 429:
        return "too many requests or the quota is used up; wait a moment and try again"
    if 500 <= status <= 599:
        return "the provider is having trouble right now; try again shortly"
    return "the request did not succeed"


def provider_error_message(label: str, status: int) -> str:
    """One authored line for a non-success HTTP status; never contains provider text."""
    return f"{label} returned HTTP {status}: {_status_reason(status)}."


# --- builders for the common cases ---------------------------------------------------------------


def rate_limited(
    label: str,
    *,
    detail: str | None = None,
    retry_after_ms: int | None = None,
    status: int | None = 429,
) -> ProtocolError:
    """The provider throttled us (HTTP 429 or an in-stream rate-limit/quota error)."""
    return ProtocolError(
        code=ErrorCode.RATE_LIMITED,
        message=f"{label} is rate limiting requests or the quota is used up; wait a moment and try again.",
        provider_detail=_optional_detail(detail),
        retry_after_ms=retry_after_ms,
        status=status,
    )


def http_status(
    label: str,
    status: int,
    *,
    detail: str | None = None,
    retry_after_ms: int | None = None,
) -> ProtocolError:
    """A non-success HTTP response; 429 becomes `rate_limited`, everything else `http_status`."""
    code = ErrorCode.RATE_LIMITED if status == 429 else ErrorCode.HTTP_STATUS
    return ProtocolError(
        code=code,
        message=provider_error_message(label, status),
        provider_detail=_optional_detail(detail),
        retry_after_ms=retry_after_ms,
        status=status,
    )


def stream_reported_error(label: str, *, detail: str | None = None) -> ProtocolError:
    """The provider sent an error event in the middle of a stream (not a rate limit)."""
    return ProtocolError(
        code=ErrorCode.HTTP_STATUS,
        message=f"{label} reported an error while sending its answer.",
        provider_detail=_optional_detail(detail),
    )


_TRANSPORT_MESSAGES = {
    TransportReason.NETWORK: "{label} could not be reached, or the connection dropped.",
    TransportReason.RESPONSE_TOO_LARGE: "{label} sent a response larger than Stockade accepts.",
    TransportReason.REFUSED: "Stockade refused to send the request to {label}.",
}


def transport(
    label: str,
    reason: TransportReason = TransportReason.NETWORK,
    *,
    message: str | None = None,
    detail: str | None = None,
) -> ProtocolError:
    """A connection-level failure; pass `message` only with authored text (never exception text)."""
    return ProtocolError(
        code=ErrorCode.TRANSPORT,
        message=message or _TRANSPORT_MESSAGES[reason].format(label=label),
        provider_detail=_optional_detail(detail),
        transport_reason=reason,
    )


def malformed(message: str | None = None, *, detail: str | None = None) -> ProtocolError:
    """A frame or tool call that could not be decoded; `detail` is redacted provider text."""
    return ProtocolError(
        code=ErrorCode.MALFORMED_STREAM,
        message=message
        or "The provider sent part of its answer in a form Stockade could not read.",
        provider_detail=_optional_detail(detail),
    )


def truncated(label: str) -> ProtocolError:
    """The body ended before a terminal event: a failure, never a short success."""
    return ProtocolError(
        code=ErrorCode.MALFORMED_STREAM,
        message=f"The answer from {label} stopped before it was complete. Please try again.",
    )


def no_api_key(provider: str) -> ProtocolError:
    """No key is stored (or readable) for `provider`; names the provider id, never a key."""
    return ProtocolError(
        code=ErrorCode.NO_API_KEY,
        message=(
            f"There is no API key for {provider}. Add one in Settings or run "
            f"`stockade keys set {provider}`."
        ),
    )


def context_overflow() -> ProtocolError:
    """The newest exchange alone does not fit the model's context window."""
    return ProtocolError(
        code=ErrorCode.CONTEXT_OVERFLOW,
        message=(
            "The conversation no longer fits in the selected model's context window. "
            "Start a new chat or shorten the latest message."
        ),
    )


def unsupported_capability(message: str) -> ProtocolError:
    """The request needs something the chosen model cannot do; `message` is authored."""
    return ProtocolError(code=ErrorCode.UNSUPPORTED_CAPABILITY, message=message)
