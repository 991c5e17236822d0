"""`TurnConfig.from_settings`: one place for provider, model, endpoint, limits and budgets."""

from __future__ import annotations

import pytest

from stockade.assistant.config import ConfigError, TurnConfig, TurnOverrides, actor_for
from stockade.protocol.provider_ids import ProviderId
from stockade.settings import Settings


def make(settings: Settings | None = None, env: dict[str, str] | None = None,
         **overrides: object) -> TurnConfig:
    return TurnConfig.from_settings(settings or Settings(), TurnOverrides(**overrides),  # type: ignore[arg-type]
                                    environ=env or {})


def test_defaults_come_from_settings() -> None:
    config = make(Settings(provider="anthropic"))
    assert config.provider is ProviderId.ANTHROPIC and config.model == "claude-sonnet-5"
    assert config.endpoint is not None and config.endpoint.url == "https://api.anthropic.com"
    assert config.budgets.per_turn == 2000 and config.limits.credit_budget == 2000
    offline = make()
    assert offline.provider is ProviderId.OFFLINE and offline.endpoint is None


def test_overrides_win_over_settings() -> None:
    config = make(Settings(provider="anthropic"), provider="openai", model="gpt-5.6-luna",
                  budget=50, max_iterations=3)
    assert (config.provider, config.model) == (ProviderId.OPENAI, "gpt-5.6-luna")
    assert config.budgets.per_turn == 50 and config.limits.credit_budget == 50
    assert config.limits.max_iterations == 3
    assert config.endpoint is not None and config.endpoint.url == "https://api.openai.com/v1"


def test_the_endpoint_order_is_flag_then_settings_then_the_sdk_variable() -> None:
    env = {"ANTHROPIC_BASE_URL": "https://env.example"}
    in_settings = Settings(provider="anthropic",
                           endpoints={"anthropic": "https://settings.example/"})
    assert make(Settings(provider="anthropic"), env).endpoint.url == "https://env.example"  # type: ignore[union-attr]
    assert make(in_settings, env).endpoint.url == "https://settings.example"  # type: ignore[union-attr]
    assert make(in_settings, env, base_url="https://flag.example").endpoint.url == \
        "https://flag.example"  # type: ignore[union-attr]


def test_the_local_server_address_comes_from_settings_or_the_flag() -> None:
    local = Settings(provider="local")
    assert make(local).endpoint.url == "http://127.0.0.1:11434/v1"  # type: ignore[union-attr]
    assert make(local, base_url="http://localhost:8080/v1").endpoint.url == \
        "http://localhost:8080/v1"  # type: ignore[union-attr]


@pytest.mark.parametrize("url", ["http://gateway.corp.example/v1", "http://10.0.0.5:4000",
                                 "ftp://127.0.0.1/", "https://user:pw@gw.example",
                                 "https://gw.example/?key=sk-x", "not a url"])
def test_unsafe_or_malformed_endpoints_are_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        make(Settings(provider="anthropic"), base_url=url)
    with pytest.raises(ConfigError):
        make(Settings(provider="openai"), {"OPENAI_BASE_URL": url})


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/", "http://localhost:1234",
                                 "http://[::1]:8000/v1", "https://gateway.corp.example/v1"])
def test_https_anywhere_and_http_on_this_machine_are_accepted(url: str) -> None:
    assert make(Settings(provider="openai"), base_url=url).endpoint is not None


def test_base_url_for_a_provider_without_a_server_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="--base-url"):
        make(base_url="https://x.example")


def test_an_unknown_or_internal_provider_is_refused() -> None:
    for name in ("gemini", "replay"):
        with pytest.raises(ConfigError, match="unknown provider"):
            make(provider=name)


def test_settings_refuse_an_unsafe_endpoint_and_read_the_old_local_url() -> None:
    with pytest.raises(ValueError, match="unencrypted"):
        Settings(endpoints={"openai": "http://gw.example/v1"})
    old = Settings.model_validate({"local_base_url": "http://127.0.0.1:8080/v1"})
    assert old.endpoints.local == "http://127.0.0.1:8080/v1"


def test_the_actor_is_the_author_name_or_the_os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    assert actor_for(Settings(author_name="  Alice ")) == "user:Alice"
    monkeypatch.setattr("getpass.getuser", lambda: "analyst")
    assert actor_for(Settings()) == "user:analyst"
