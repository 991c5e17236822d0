"""A local OpenAI-compatible server (llama.cpp, Ollama, vLLM) through the OpenAI SDK.

The base URL comes from the user's settings and nothing else: a document can never point
the assistant at a server. The key is optional; without one no credential header is sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
from openai._types import omit

from stockade.protocol.events import StreamEvent
from stockade.protocol.request import ChatRequest
from stockade.providers.openai import stream_chat_completions
from stockade.providers.streaming import client_timeout, http_client
from stockade.secrets.secret_str import SecretStr

LABEL = "Local model server"

_PLACEHOLDER_KEY = "no-key"
"""Satisfies the SDK's constructor check; the Authorization header itself is omitted."""


class LocalProvider:
    """Streams Chat Completions from a local server at a base URL such as `http://127.0.0.1:11434/v1`."""

    name = "local"

    def __init__(
        self, base_url: str, *, api_key: str | SecretStr | None = None, timeout_s: float = 120.0
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("the local model server URL must start with http:// or https://")
        self._base_url = base_url
        if isinstance(api_key, str):
            api_key = SecretStr(api_key) if api_key else None
        self._api_key: SecretStr | None = api_key or None
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"LocalProvider(base_url={self._base_url!r})"

    def _client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key.reveal() if self._api_key else _PLACEHOLDER_KEY,
            base_url=self._base_url,
            max_retries=0,
            timeout=client_timeout(self._timeout_s),
            http_client=http_client(self._timeout_s),
        )

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        # Without a key the credential header is left out entirely (not sent as a placeholder).
        headers: dict[str, Any] | None = None if self._api_key else {"Authorization": omit}
        return stream_chat_completions(self._client, request, LABEL, extra_headers=headers)
