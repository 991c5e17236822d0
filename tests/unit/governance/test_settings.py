"""Settings: defaults, atomic save, corrupt files moved aside, keys never stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from stockade.governance.guards import GuardPolicy
from stockade.protocol.provider_ids import ProviderId
from stockade.settings import (
    MAX_RECENT_FILES,
    Settings,
    load_settings,
    read_settings,
    save_settings,
    settings_path,
)


def test_a_missing_file_gives_defaults(stockade_home: Path) -> None:
    result = read_settings()
    assert result.problem is None and result.settings == Settings()
    assert result.settings.guard_policy is GuardPolicy.REDACT


def test_settings_round_trip_through_the_data_folder(stockade_home: Path) -> None:
    settings = Settings(provider="anthropic", author_name="Ana", guard_policy=GuardPolicy.BLOCK)
    path = save_settings(settings)
    assert path == stockade_home / "settings.json" == settings_path()
    assert load_settings() == settings
    assert not list(stockade_home.glob(".settings-*"))


def test_a_corrupt_file_falls_back_to_defaults_and_is_kept_aside(stockade_home: Path) -> None:
    (stockade_home / "settings.json").write_text("{not json")
    result = read_settings()
    assert result.settings == Settings()
    assert result.problem and "not valid JSON" in result.problem
    assert result.moved_to is not None and result.moved_to.read_text() == "{not json"


@pytest.mark.parametrize(
    "text", ['{"version": ' + "1" * 5000 + "}", "[" * 100_000 + "]" * 100_000]
)
def test_json_past_the_parser_limits_falls_back_to_defaults(
    stockade_home: Path, text: str
) -> None:
    (stockade_home / "settings.json").write_text(text)
    result = read_settings()
    assert result.settings == Settings()
    assert result.problem and "not valid JSON" in result.problem
    assert result.moved_to is not None and result.moved_to.read_text() == text


def test_an_invalid_field_is_named_in_the_problem(stockade_home: Path) -> None:
    (stockade_home / "settings.json").write_text(json.dumps({"limits": {"max_iterations": 0}}))
    result = read_settings()
    assert result.problem and "limits.max_iterations" in result.problem


def test_recent_files_keep_ten_newest_first_without_repeats() -> None:
    settings = Settings()
    for i in range(15):
        settings = settings.with_recent_file(f"/m/{i}.thf")
    settings = settings.with_recent_file("/m/12.thf")
    assert len(settings.recent_files) == MAX_RECENT_FILES
    assert settings.recent_files[:2] == ["/m/12.thf", "/m/14.thf"]


def test_turn_limits_and_budgets_come_from_settings() -> None:
    settings = Settings.model_validate({"limits": {"max_iterations": 3},
                                        "credits": {"per_turn": 500, "per_day": None}})
    limits = settings.turn_limits()
    assert limits.max_iterations == 3 and limits.credit_budget == 500
    assert settings.turn_limits(credit_budget=42).credit_budget == 42
    budgets = settings.credits.budgets()
    assert (budgets.per_turn, budgets.per_day) == (500, None)


def test_a_local_url_with_credentials_is_refused() -> None:
    with pytest.raises(ValidationError, match="keyring"):
        Settings(local_base_url="http://user:pw@127.0.0.1:8080/v1")


def test_unknown_fields_such_as_a_pasted_key_are_dropped_on_save(stockade_home: Path) -> None:
    (stockade_home / "settings.json").write_text(json.dumps({"api_key": "sk-ant-xyz-123456789"}))
    save_settings(load_settings())
    assert "sk-ant" not in (stockade_home / "settings.json").read_text()


def test_setting_a_provider_key_never_writes_it_to_settings(stockade_home: Path) -> None:
    from stockade.secrets import KeyStore

    key = "sk-ant-api03-SettingsMustNeverHoldThis0123"
    KeyStore(use_env=False).set_key("anthropic", key)
    save_settings(load_settings().model_copy(update={"provider": ProviderId.ANTHROPIC}))
    for path in stockade_home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes()
