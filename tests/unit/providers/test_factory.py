"""Provider construction: the configured endpoint, keys from the key store, no environment switch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stockade.protocol.errors import ErrorCode
from stockade.protocol.events import StreamError, StreamEvent
from stockade.protocol.request import ChatRequest
from stockade.providers.anthropic import AnthropicProvider
from stockade.providers.base import Provider
from stockade.providers.factory import create_provider
from stockade.providers.local import LocalProvider
from stockade.providers.offline import OfflineProvider
from stockade.providers.openai import OpenAIProvider
from stockade.providers.replay import ReplayProvider
from stockade.thf.model import ThreatModel

REQUEST = ChatRequest(provider="x", model="m", system="", messages=())


class Keys:
    def __init__(self, keys: dict[str, str] | None = None, fail: bool = False) -> None:
        self.keys = keys or {}
        self.fail = fail
        self.asked: list[str] = []

    def get_key(self, provider: str) -> str | None:
        self.asked.append(provider)
        if self.fail:
            raise RuntimeError("keyring exploded with sk-ant-secret-in-error")
        return self.keys.get(provider)


def events(provider: Provider) -> list[StreamEvent]:
    async def run() -> list[StreamEvent]:
        return [e async for e in provider.stream(REQUEST)]

    return asyncio.run(run())


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_missing_key_gives_one_no_api_key_event(name: str) -> None:
    provider = create_provider(name, key_store=Keys())
    [event] = events(provider)
    assert isinstance(event, StreamError) and event.is_terminal
    assert event.error.code is ErrorCode.NO_API_KEY
    assert name in event.error.message


def test_a_keyring_failure_is_reported_without_its_text() -> None:
    [event] = events(create_provider("anthropic", key_store=Keys(fail=True)))
    assert isinstance(event, StreamError) and event.error.code is ErrorCode.NO_API_KEY
    assert "sk-ant" not in event.error.message and "exploded" not in event.error.message


@pytest.mark.parametrize("variable", ["STOCKADE_TEST_API_BASE", "ANTHROPIC_BASE_URL",
                                      "OPENAI_BASE_URL"])
def test_no_environment_variable_redirects_the_factory(
    monkeypatch: pytest.MonkeyPatch, variable: str,
) -> None:
    # Endpoints are resolved (and checked) by TurnConfig; the factory reads no environment.
    monkeypatch.setenv(variable, "http://127.0.0.1:9")
    monkeypatch.setenv("STOCKADE_TESTING", "1")
    keys = Keys({"anthropic": "sk-ant-x", "openai": "sk-openai-x"})
    anthropic = create_provider("anthropic", key_store=keys)
    openai = create_provider("openai", key_store=keys)
    assert isinstance(anthropic, AnthropicProvider) and isinstance(openai, OpenAIProvider)
    assert "https://api.anthropic.com'" in repr(anthropic)
    assert "https://api.openai.com/v1'" in repr(openai)
    assert "sk-" not in repr(anthropic) + repr(openai)


def test_a_configured_endpoint_is_used_as_given() -> None:
    keys = Keys({"anthropic": "k", "openai": "k"})
    assert "https://gw.example/anthropic'" in repr(
        create_provider("anthropic", key_store=keys, base_url="https://gw.example/anthropic"))
    assert "https://gw.example/openai/v1'" in repr(
        create_provider("openai", key_store=keys, base_url="https://gw.example/openai/v1"))


def test_local_uses_the_settings_url_and_an_optional_key() -> None:
    keys = Keys()
    provider = create_provider(
        "local", base_url="http://127.0.0.1:11434/v1", key_store=keys
    )
    assert isinstance(provider, LocalProvider)
    assert keys.asked == ["local"]
    with pytest.raises(ValueError, match="address"):
        create_provider("local", key_store=keys)


def test_offline_and_replay_never_touch_the_key_store(tmp_path: Path) -> None:
    keys = Keys(fail=True)
    doc = ThreatModel.model_validate(
        {
            "version": "1.0",
            "metadata": {
                "title": "t",
                "author": "a",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
        }
    )
    offline = create_provider("offline", key_store=keys, document_source=lambda: doc)
    replay = create_provider("replay", key_store=keys, replay_path=tmp_path / "r.jsonl")
    assert isinstance(offline, OfflineProvider) and isinstance(replay, ReplayProvider)
    assert keys.asked == []
    with pytest.raises(ValueError, match="document"):
        create_provider("offline")
    with pytest.raises(ValueError, match="path"):
        create_provider("replay")


def test_an_unknown_provider_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="anthropic, openai, local, offline, replay"):
        create_provider("gemini")


def test_the_real_key_store_is_used_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-123")
    provider = create_provider("anthropic")
    assert isinstance(provider, AnthropicProvider)
    assert "sk-ant" not in repr(provider)
