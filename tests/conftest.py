"""Test-wide fixtures: an in-memory keyring, an isolated data folder, a log guard, and the
hypothesis profiles (`HYPOTHESIS_PROFILE=ci`, the default and what CI runs, or `dev`: a tenth
of the examples, for a quick local loop)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from hypothesis import settings

from tests.helpers.memory_keyring import MemoryKeyring
from tests.helpers.postgres import PostgresServer

HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
# No deadlines: a loaded machine must not turn slowness into failure. `ci` prints the blob
# that reproduces a failure, so a red CI run can be replayed locally.
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=10)
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """The examples a property test that runs `count` under CI runs in this profile."""
    return count if HYPOTHESIS_PROFILE == "ci" else max(5, count // 10)


FIXTURES = Path(__file__).parent / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", default=False,
                     help="also run the long soak tests (marker `soak`; .ci/run turns it on)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "soak: a long concurrency soak (runs with --soak)")
    config.addinivalue_line("markers", "postgres: needs the test PostgreSQL server")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session, with the Stockade schema set up by its admin.

    Started on first use (only the team-store tests pay for it), stopped at the end.
    """
    import psycopg

    from stockade.store.postgres.team import set_up_schema
    from tests.helpers.postgres import server_binaries, start_server

    if server_binaries() is None:
        message = ("PostgreSQL server binaries are not installed; tools/_setup.sh installs "
                   "Debian's postgresql package")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = start_server()
    try:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            set_up_schema(conn)
        yield server
    finally:
        server.stop()
THF_FIXTURES = FIXTURES / "thf"


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    """Every test gets a fresh in-memory keyring; the real OS keyring is never touched."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def stockade_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the data folder at a temporary directory; drop keys that leak in from the shell."""
    home = tmp_path / "stockade-home"
    home.mkdir()
    monkeypatch.setenv("STOCKADE_HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return home


class LogGuard(logging.Handler):
    """Collects warnings and errors; a test fails on any it did not declare with `expect`."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.expected: list[re.Pattern[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def expect(self, pattern: str) -> None:
        self.expected.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        out = []
        for record in self.records:
            text = record.getMessage()
            if not any(p.search(text) for p in self.expected):
                out.append(f"{record.levelname} {record.name}: {text}")
        return out


@pytest.fixture(autouse=True)
def log_guard() -> Iterator[LogGuard]:
    guard = LogGuard()
    root = logging.getLogger()
    root.addHandler(guard)
    try:
        yield guard
    finally:
        root.removeHandler(guard)
    problems = guard.unexpected()
    if problems:
        pytest.fail("unexpected log records:\n" + "\n".join(problems), pytrace=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the Qt tests last.

    The GUI suite installs one session-wide qasync loop marked as already running; tests that
    call `asyncio.run` must therefore run before it is created.
    """
    gui_dir = Path(__file__).parent / "gui"

    def is_gui(item: pytest.Item) -> bool:
        return gui_dir in Path(str(item.fspath)).parents

    items.sort(key=is_gui)  # stable: keeps the original order inside each group
    if not config.getoption("--soak"):
        skip = pytest.mark.skip(reason="a long soak: runs with --soak (.ci/run)")
        for item in items:
            if "soak" in item.keywords:
                item.add_marker(skip)
