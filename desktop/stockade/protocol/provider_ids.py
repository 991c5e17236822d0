"""The one closed set of provider ids, shared by settings, the command line, the app and the
factory, with the HTTP providers' production endpoints."""

from __future__ import annotations

from enum import StrEnum


class ProviderId(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    LOCAL = "local"
    OFFLINE = "offline"
    REPLAY = "replay"  # recorded event files: tests and demos, never offered in the picker

    @property
    def is_http(self) -> bool:
        """Whether requests go to a server at a base URL (and `--base-url` applies)."""
        return self in HTTP_PROVIDERS

    @property
    def needs_key(self) -> bool:
        return self in (ProviderId.ANTHROPIC, ProviderId.OPENAI)


HTTP_PROVIDERS = frozenset({ProviderId.ANTHROPIC, ProviderId.OPENAI, ProviderId.LOCAL})
USER_PROVIDERS = (ProviderId.ANTHROPIC, ProviderId.OPENAI, ProviderId.LOCAL, ProviderId.OFFLINE)
"""What a user may choose (picker, settings, `--provider`)."""

PRODUCTION_BASE_URLS = {
    ProviderId.ANTHROPIC: "https://api.anthropic.com",
    ProviderId.OPENAI: "https://api.openai.com/v1",
}
"""The official SDKs' own defaults, so a run records the endpoint it really used."""

BASE_URL_ENVIRONMENT = {
    ProviderId.ANTHROPIC: "ANTHROPIC_BASE_URL",
    ProviderId.OPENAI: "OPENAI_BASE_URL",
}
"""The official SDKs' endpoint variables; Stockade reads them itself so they are validated."""
