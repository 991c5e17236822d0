"""Builds the provider a turn should use from the provider id, settings and the key store.

Endpoints are fixed for Anthropic and OpenAI; the local server's URL comes from settings.
Only tests can redirect the two cloud providers: `api_base_override`, or the environment
variable `STOCKADE_TEST_API_BASE` honoured only while `STOCKADE_TESTING=1` is also set (the
e2e tests of the command line point both providers at a fake server on 127.0.0.1 this way).
A missing key is not an exception: the returned provider answers with one `no_api_key`
error event.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from stockade.protocol.errors import ErrorCode, ProtocolError, no_api_key
from stockade.protocol.events import StreamError, StreamEvent
from stockade.protocol.request import ChatRequest
from stockade.providers.base import Provider
from stockade.thf.model import ThreatModel

log = logging.getLogger(__name__)

TEST_API_BASE_ENV = "STOCKADE_TEST_API_BASE"
TESTING_ENV = "STOCKADE_TESTING"


class ProviderId(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    LOCAL = "local"
    OFFLINE = "offline"
    REPLAY = "replay"


class KeyLookup(Protocol):
    """What the factory needs from `stockade.secrets.KeyStore`."""

    def get_key(self, provider: str) -> str | None: ...


class UnavailableProvider:
    """Stands in for a provider that cannot run; every stream is one terminal error event."""

    def __init__(self, name: str, error: ProtocolError) -> None:
        self.name = name
        self._error = error

    def __repr__(self) -> str:
        return f"UnavailableProvider({self.name!r}, {self._error.code.value})"

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield StreamError(error=self._error)


def override_from_environment() -> str | None:
    """The test-only endpoint override, when both environment variables say so."""
    if os.environ.get(TESTING_ENV) != "1":
        return None
    value = os.environ.get(TEST_API_BASE_ENV, "").strip()
    return value.rstrip("/") or None


def _default_key_store() -> KeyLookup:
    # Imported lazily so building an offline or replay provider never touches the keyring.
    secrets = importlib.import_module("stockade.secrets")
    store: KeyLookup = secrets.KeyStore()
    return store


def _read_key(
    provider: str, key_store: KeyLookup | None
) -> tuple[str | None, ProtocolError | None]:
    store = key_store if key_store is not None else _default_key_store()
    try:
        key = store.get_key(provider)
    except Exception as exc:  # keyring faults: report without the library's text
        log.debug("reading the %s key failed: %s", provider, type(exc).__name__)
        return None, ProtocolError(
            code=ErrorCode.NO_API_KEY,
            message=(
                f"The API key for {provider} could not be read from the system keyring. "
                "Check the keyring, or set the key again in Settings."
            ),
        )
    return (key or None), None


def create_provider(
    provider: str,
    *,
    model: str,
    base_url: str | None = None,
    key_store: KeyLookup | None = None,
    document_source: Callable[[], ThreatModel] | None = None,
    replay_path: str | Path | None = None,
    api_base_override: str | None = None,
) -> Provider:
    """The provider for `provider` (anthropic, openai, local, offline, replay).

    `model` is the model the caller will request (kept for symmetry with settings; each
    request carries its own). `base_url` is the local server's URL from settings.
    Raises `ValueError` only for caller mistakes: an unknown provider id, or a missing
    `document_source` / `replay_path` / local `base_url`.
    """
    del model  # each ChatRequest names its model
    try:
        which = ProviderId(provider)
    except ValueError:
        valid = ", ".join(p.value for p in ProviderId)
        raise ValueError(f"Unknown provider {provider!r}; expected one of: {valid}.") from None

    # Each provider module is imported only when chosen: the SDKs take seconds to import, and
    # an offline or replay turn (or `stockade runs resume` of one) should not pay for them.
    if which is ProviderId.OFFLINE:
        from stockade.providers.offline import OfflineProvider

        if document_source is None:
            raise ValueError("The offline provider needs a document source.")
        return OfflineProvider(document_source)
    if which is ProviderId.REPLAY:
        from stockade.providers.replay import ReplayProvider

        if replay_path is None:
            raise ValueError("The replay provider needs the path of a recorded event file.")
        return ReplayProvider(replay_path)
    if which is ProviderId.LOCAL:
        from stockade.providers.local import LocalProvider

        if not base_url:
            raise ValueError("The local provider needs the server URL from settings.")
        key, _ = _read_key(which.value, key_store)  # optional: a keyring fault means no key
        return LocalProvider(base_url, api_key=key)

    key, problem = _read_key(which.value, key_store)
    if problem is not None:
        return UnavailableProvider(which.value, problem)
    if key is None:
        return UnavailableProvider(which.value, no_api_key(which.value))
    root = api_base_override or override_from_environment()
    if which is ProviderId.ANTHROPIC:
        from stockade.providers.anthropic import AnthropicProvider

        return AnthropicProvider(key, model_base_url=root)
    from stockade.providers.openai import OpenAIProvider

    return OpenAIProvider(key, model_base_url=f"{root.rstrip('/')}/v1" if root else None)
