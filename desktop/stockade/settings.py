"""User settings (Qt-free, shared by the app and the command line), saved as `settings.json`.

Provider API keys are never part of settings: they live in the OS keyring (`stockade.secrets`).
Unknown fields in the file are ignored, so a key pasted into it by hand is dropped on the next
save rather than kept.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stockade.governance.guards import GuardPolicy
from stockade.governance.ledger import CreditBudgets
from stockade.loop.limits import TurnLimits
from stockade.paths import data_dir
from stockade.protocol.endpoints import EndpointError, parse_endpoint
from stockade.protocol.provider_ids import USER_PROVIDERS, ProviderId

SETTINGS_FILE = "settings.json"
MAX_RECENT_FILES = 10

DEFAULT_MODELS: dict[str, str] = {
    ProviderId.ANTHROPIC: "claude-sonnet-5",
    ProviderId.OPENAI: "gpt-5.6-sol",
    ProviderId.LOCAL: "local",
    ProviderId.OFFLINE: "stride-rules",
}
DEFAULT_LOCAL_BASE_URL = "http://127.0.0.1:11434/v1"


def _checked_url(value: str | None, what: str) -> str | None:
    if value is None or not value.strip():
        return None
    try:
        return parse_endpoint(value, what=what).url
    except EndpointError as exc:
        raise ValueError(str(exc)) from None


class EndpointSettings(BaseModel):
    """Per-provider base URLs (corporate gateways, proxies, LiteLLM, a local server).

    Empty means the official endpoint (or `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` when set).
    Each URL is `https://`, or `http://` only to this machine; it never holds a credential.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    anthropic: str | None = None
    openai: str | None = None
    local: str = DEFAULT_LOCAL_BASE_URL

    @field_validator("anthropic", "openai")
    @classmethod
    def _cloud(cls, value: str | None) -> str | None:
        return _checked_url(value, "the provider address")

    @field_validator("local")
    @classmethod
    def _local(cls, value: str) -> str:
        checked = _checked_url(value, "the local server address")
        if checked is None:
            raise ValueError("the local server address is empty")
        return checked

    def for_provider(self, provider: ProviderId) -> str | None:
        if provider is ProviderId.ANTHROPIC:
            return self.anthropic
        if provider is ProviderId.OPENAI:
            return self.openai
        if provider is ProviderId.LOCAL:
            return self.local
        return None


class LimitSettings(BaseModel):
    """The `TurnLimits` a new turn gets (the credit budget comes from `CreditSettings`)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    max_iterations: int = Field(8, gt=0, le=100)
    max_tool_calls_per_turn: int = Field(32, gt=0, le=1000)
    max_tool_calls_per_iteration: int = Field(12, gt=0, le=100)
    max_retries: int = Field(3, gt=0, le=20)
    deadline_ms: int = Field(300_000, gt=0, le=3_600_000)
    reserve_output_tokens: int = Field(4096, gt=0, le=200_000)

    def to_turn_limits(self, credit_budget: int | None) -> TurnLimits:
        return TurnLimits(
            max_iterations=self.max_iterations,
            max_tool_calls_per_turn=self.max_tool_calls_per_turn,
            max_tool_calls_per_iteration=self.max_tool_calls_per_iteration,
            max_retries=self.max_retries,
            deadline_ms=self.deadline_ms,
            reserve_output_tokens=self.reserve_output_tokens,
            credit_budget=credit_budget,
        )


class CreditSettings(BaseModel):
    """Credit budgets (1 credit = 1/10,000 USD): per turn, and wallet limits per day and month."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    per_turn: int = Field(2_000, gt=0)
    per_day: int | None = Field(20_000, ge=0)
    per_month: int | None = Field(200_000, ge=0)

    def budgets(self, per_turn: int | None = None) -> CreditBudgets:
        return CreditBudgets(self.per_turn if per_turn is None else per_turn, self.per_day,
                             self.per_month)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = 1
    provider: ProviderId = ProviderId.OFFLINE
    models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MODELS))
    endpoints: EndpointSettings = Field(default_factory=EndpointSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    credits: CreditSettings = Field(default_factory=CreditSettings)
    guard_policy: GuardPolicy = GuardPolicy.REDACT
    recent_files: list[str] = Field(default_factory=list)
    author_name: str = Field("", max_length=200)
    parked_run_days: int = Field(30, gt=0, le=3650)
    """Parked runs older than this are listed as expired and never resumed."""

    database_url: str | None = Field(None, max_length=2000)
    """Team mode: the team's PostgreSQL database (`postgresql://ROLE@HOST:PORT/DATABASE`, never
    with a password); empty means the SQLite file in the data folder. `STOCKADE_DATABASE_URL`
    wins over it."""

    @property
    def parked_run_ttl_ms(self) -> int:
        return self.parked_run_days * 24 * 3600 * 1000

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from stockade.store.postgres.target import parse_database_url

        try:
            parse_database_url(value)
        except Exception as exc:  # DatabaseUrlError: its text says what to do
            raise ValueError(str(exc)) from None
        return value.strip()

    @model_validator(mode="before")
    @classmethod
    def _earlier_local_url(cls, data: Any) -> Any:
        # Settings written before per-provider endpoints kept the local server's URL on its own.
        if isinstance(data, dict) and "local_base_url" in data and "endpoints" not in data:
            data = dict(data)
            data["endpoints"] = {"local": data.pop("local_base_url")}
        return data

    @field_validator("provider")
    @classmethod
    def _user_provider(cls, value: ProviderId) -> ProviderId:
        if value not in USER_PROVIDERS:
            raise ValueError(f"{value.value} cannot be chosen as the assistant's provider")
        return value

    @field_validator("recent_files")
    @classmethod
    def _recent(cls, value: list[str]) -> list[str]:
        seen: list[str] = []
        for item in value:
            if item and item not in seen:
                seen.append(item)
        return seen[:MAX_RECENT_FILES]

    def model_for(self, provider: str | None = None) -> str:
        """The model this user chose for `provider` (default: the current provider)."""
        name = str(provider or self.provider)
        return self.models.get(name) or DEFAULT_MODELS.get(name, "")

    def with_recent_file(self, path: str | os.PathLike[str]) -> Settings:
        """These settings with `path` first in the recent files (at most 10, no repeats)."""
        text = os.fspath(path)
        return self.model_copy(update={"recent_files": self._recent(
            [text, *[p for p in self.recent_files if p != text]])})

    def turn_limits(self, credit_budget: int | None = None) -> TurnLimits:
        return self.limits.to_turn_limits(
            self.credits.per_turn if credit_budget is None else credit_budget)


def settings_path() -> Path:
    return data_dir() / SETTINGS_FILE


@dataclass(frozen=True, slots=True)
class SettingsRead:
    """Loaded settings, and the problem that made us fall back to defaults (if any)."""

    settings: Settings
    problem: str | None = None
    moved_to: Path | None = None


def read_settings(path: Path | None = None) -> SettingsRead:
    """Load settings; a missing file gives defaults, a corrupt one is moved aside and reported."""
    target = path or settings_path()
    try:
        raw = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return SettingsRead(Settings())
    except (OSError, UnicodeDecodeError) as exc:
        return SettingsRead(Settings(), f"The settings file {target} could not be read "
                                        f"({type(exc).__name__}); defaults are used.")
    try:
        return SettingsRead(Settings.model_validate(json.loads(raw)))
    except ValidationError as exc:
        detail = f"{exc.error_count()} field(s) are invalid ({_first_issue(exc)})"
    except (ValueError, RecursionError):
        # Besides JSONDecodeError, json.loads raises a plain ValueError for an integer over
        # the digit limit and RecursionError for deep nesting; neither may stop the app.
        detail = "it is not valid JSON"
    aside = target.with_name(f"{target.name}.broken-{int(time.time())}")
    moved_to: Path | None = aside
    try:
        target.replace(aside)
    except OSError:
        moved_to = None
    kept = f"; the old file was kept as {moved_to}" if moved_to else ""
    return SettingsRead(Settings(), f"The settings file could not be used because {detail}. "
                                    f"Defaults are used{kept}.", moved_to)


def _first_issue(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "settings"
    return f"{where}: {err.get('msg', 'invalid')}"


def load_settings(path: Path | None = None) -> Settings:
    """The settings to use (defaults when the file is missing or unusable)."""
    return read_settings(path).settings


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write atomically: a temp file in the same folder, fsync, then rename over the old one."""
    target = path or settings_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
