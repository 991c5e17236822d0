"""The closed set of protocol error codes, the error record, and provider-text redaction."""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """An error a user may read: an authored `message`, plus redacted provider text if any."""

    code: ErrorCode
    message: str
    provider_detail: str | None = None
    retry_after_ms: int | None = None
    status: int | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code.value, "message": self.message}
        if self.provider_detail is not None:
            out["provider_detail"] = self.provider_detail
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        if self.status is not None:
            out["status"] = self.status
        return out

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ProtocolError:
        detail = data.get("provider_detail")
        retry = data.get("retry_after_ms")
        status = data.get("status")
        return cls(
            code=ErrorCode(str(data["code"])),
            message=str(data["message"]),
            provider_detail=str(detail) if detail is not None else None,
            retry_after_ms=int(retry) if isinstance(retry, int) else None,
            status=int(status) if isinstance(status, int) else None,
        )


class ProtocolException(Exception):
    """Carries a `ProtocolError` across a raise; its text is only the authored message."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(error.message)
        self.error = error
