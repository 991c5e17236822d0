"""`TurnConfig`: everything a turn is started with, read from settings in one place.

Both front ends build their turns here (the app from the chat pane's choice, the command line
from its flags), so provider, model, endpoint, limits, budgets, wallet and guard policy mean
the same in both.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass

from stockade.assistant.policy import ApprovePolicy
from stockade.governance.guards import GuardPolicy
from stockade.governance.ledger import CreditBudgets
from stockade.loop.limits import TurnLimits
from stockade.protocol.endpoints import Endpoint, EndpointError, parse_endpoint
from stockade.protocol.provider_ids import (
    BASE_URL_ENVIRONMENT,
    PRODUCTION_BASE_URLS,
    USER_PROVIDERS,
    ProviderId,
)
from stockade.settings import Settings


class ConfigError(ValueError):
    """The settings or flags cannot make a turn; the message says which and why."""


@dataclass(frozen=True, slots=True)
class TurnOverrides:
    """What a front end asks for beyond settings (command-line flags, the chat pane's picker)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    budget: int | None = None
    max_iterations: int | None = None
    approve: ApprovePolicy = ApprovePolicy.MANUAL


@dataclass(frozen=True, slots=True)
class TurnConfig:
    """One turn's provider, model, endpoint, bounds, budgets and policies."""

    provider: ProviderId
    model: str
    endpoint: Endpoint | None
    limits: TurnLimits
    budgets: CreditBudgets
    guard_policy: GuardPolicy
    approve: ApprovePolicy
    actor: str

    @classmethod
    def from_settings(cls, settings: Settings, overrides: TurnOverrides | None = None, *,
                      environ: Mapping[str, str] | None = None) -> TurnConfig:
        """The turn the user asked for; `ConfigError` when it cannot be made."""
        want = overrides or TurnOverrides()
        provider = parse_provider(want.provider or settings.provider)
        model = (want.model or settings.model_for(provider)).strip()
        if not model:
            raise ConfigError(f"no model is chosen for {provider.value}")
        budgets = settings.credits.budgets(per_turn=want.budget)
        limits = settings.turn_limits(budgets.per_turn)
        if want.max_iterations is not None:
            limits = dataclasses.replace(limits, max_iterations=want.max_iterations)
        return cls(
            provider=provider,
            model=model,
            endpoint=resolve_endpoint(provider, want.base_url, settings,
                                      os.environ if environ is None else environ),
            limits=limits,
            budgets=budgets,
            guard_policy=settings.guard_policy,
            approve=want.approve,
            actor=actor_for(settings),
        )

    def endpoint_record(self) -> str | None:
        """The endpoint as the audit trail records it (a checked URL never holds credentials)."""
        return self.endpoint.url if self.endpoint is not None else None


def parse_provider(value: str) -> ProviderId:
    try:
        provider = ProviderId(value)
    except ValueError:
        provider = None
    if provider is None or provider not in USER_PROVIDERS:
        valid = ", ".join(p.value for p in USER_PROVIDERS)
        raise ConfigError(f"unknown provider {value!r}; expected one of: {valid}")
    return provider


def resolve_endpoint(provider: ProviderId, base_url: str | None, settings: Settings,
                     environ: Mapping[str, str]) -> Endpoint | None:
    """Where requests go: `--base-url`, then settings, then the SDK's own environment variable,
    then the official endpoint. Every one is checked the same way."""
    if not provider.is_http:
        if base_url:
            raise ConfigError(f"--base-url applies to the anthropic, openai and local providers, "
                              f"not {provider.value}")
        return None
    env_name = BASE_URL_ENVIRONMENT.get(provider)
    candidates = [
        (base_url, "--base-url"),
        (settings.endpoints.for_provider(provider), f"the {provider.value} address in settings"),
        (environ.get(env_name) if env_name else None, env_name or ""),
    ]
    for value, source in candidates:
        if value and value.strip():
            try:
                return parse_endpoint(value, what=source)
            except EndpointError as exc:
                raise ConfigError(str(exc)) from None
    return Endpoint(PRODUCTION_BASE_URLS[provider])


def actor_for(settings: Settings) -> str:
    """Who decides in this front end: the author name from settings, else the OS user."""
    name = settings.author_name.strip()
    if not name:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):  # no user database entry (containers)
            name = ""
    return f"user:{name}" if name else "user:unknown"
