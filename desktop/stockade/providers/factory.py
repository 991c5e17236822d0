"""Builds the provider a turn should use from the provider id, its endpoint and the key store.

The endpoint is resolved and checked by the caller (`stockade.assistant.config`: `--base-url`,
settings, the SDKs' own environment variables, else the official endpoint); nothing here reads
the environment. A missing key is not an exception: the returned provider answers with one
`no_api_key` error event.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

from stockade.protocol.errors import ErrorCode, ProtocolError, no_api_key
from stockade.protocol.events import StreamError, StreamEvent
from stockade.protocol.provider_ids import ProviderId
from stockade.protocol.request import ChatRequest
from stockade.providers.base import Provider
from stockade.thf.model import ThreatModel

log = logging.getLogger(__name__)

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
    base_url: str | None = None,
    key_store: KeyLookup | None = None,
    document_source: Callable[[], ThreatModel] | None = None,
    replay_path: str | Path | None = None,
) -> Provider:
    """The provider for `provider` (anthropic, openai, local, offline, replay).

    `base_url` is the checked endpoint of an HTTP provider (required for local; the official
    endpoint when None for Anthropic and OpenAI). Each request names its own model.
    Raises `ValueError` only for caller mistakes: an unknown provider id, or a missing
    `document_source` / `replay_path` / local `base_url`.
    """
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
            raise ValueError("The local provider needs the server's address (settings or "
                             "--base-url).")
        key, _ = _read_key(which.value, key_store)  # optional: a keyring fault means no key
        return LocalProvider(base_url, api_key=key)

    key, problem = _read_key(which.value, key_store)
    if problem is not None:
        return UnavailableProvider(which.value, problem)
    if key is None:
        return UnavailableProvider(which.value, no_api_key(which.value))
    if which is ProviderId.ANTHROPIC:
        from stockade.providers.anthropic import AnthropicProvider

        return AnthropicProvider(key, model_base_url=base_url)
    from stockade.providers.openai import OpenAIProvider

    return OpenAIProvider(key, model_base_url=base_url)
