"""Fixtures for the application layer: a service over a real SQLite file and scripted providers."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stockade.assistant.config import TurnConfig, TurnOverrides
from stockade.assistant.policy import ApprovePolicy
from stockade.assistant.service import AssistantService
from stockade.governance.services import Governance, open_governance
from stockade.governance.worker import GovernanceWorker
from stockade.loop.history import DocumentSession
from stockade.settings import CreditSettings, Settings
from tests.conftest import THF_FIXTURES
from tests.unit.governance.conftest import DictSecrets
from tests.unit.governance.scripted import ScriptedProvider

T = TypeVar("T")
MODEL = "claude-sonnet-5"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class Scripts:
    """The providers a service hands out, in order (each turn or resume takes the next)."""

    def __init__(self) -> None:
        self.queue: list[ScriptedProvider] = []
        self.made: list[ScriptedProvider] = []

    def add(self, provider: ScriptedProvider) -> ScriptedProvider:
        self.queue.append(provider)
        return provider

    def factory(self, _config: TurnConfig, _session: DocumentSession) -> ScriptedProvider:
        provider = self.queue.pop(0) if self.queue else ScriptedProvider()
        self.made.append(provider)
        return provider


@pytest.fixture
def secrets() -> DictSecrets:
    return DictSecrets()


@pytest.fixture
def scripts() -> Scripts:
    return Scripts()


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    target = tmp_path / "model.thf"
    shutil.copy(THF_FIXTURES / "v1.0-minimal.thf", target)
    return target


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest, secrets: DictSecrets,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every service test on both stores: the SQLite file, and a fresh team on the test
    PostgreSQL server (an analyst's role, chosen the way users choose it: STOCKADE_DATABASE_URL,
    with the team's key in the keyring)."""
    if request.param == "postgres":
        from stockade.governance.teamkeys import new_team_key, team_key_name
        from tests.helpers.teams import new_team

        team = new_team(request.getfixturevalue("postgres_server"))
        monkeypatch.setenv("STOCKADE_DATABASE_URL", team.url(next(iter(team.members))))
        secrets.set_secret(team_key_name(team.team), new_team_key())
    yield request.param


@pytest.fixture
def service(store_kind: str, secrets: DictSecrets, scripts: Scripts
            ) -> Iterator[AssistantService]:
    worker = GovernanceWorker(lambda: open_governance(secrets=secrets, recover=False))
    svc = AssistantService(worker, provider_factory=scripts.factory)
    yield svc
    svc.close()


@pytest.fixture
def gov(service: AssistantService, secrets: DictSecrets) -> Iterator[Governance]:
    """A second connection to the same database, for checks (as another process would)."""
    governance = open_governance(secrets=secrets, recover=False)
    yield governance
    governance.close()


BIG_CREDITS = CreditSettings(per_turn=100_000, per_day=None, per_month=None)


def settings(**changes: Any) -> Settings:
    return Settings(provider="anthropic", credits=BIG_CREDITS).model_copy(update=changes)


def config(approve: ApprovePolicy = ApprovePolicy.READ, **overrides: Any) -> TurnConfig:
    base = settings()
    if "credits" in overrides:
        base = base.model_copy(update={"credits": overrides.pop("credits")})
    return TurnConfig.from_settings(base, TurnOverrides(approve=approve, **overrides),
                                    environ={})


def kinds(gov: Governance, run_id: str) -> list[str]:
    return [e.kind for e in gov.trajectory.events(run_id)]


def balanced(gov: Governance) -> bool:
    totals = gov.ledger.totals()
    return totals.open_count == 0 and totals.reserved == totals.settled + totals.released

