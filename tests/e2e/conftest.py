"""End-to-end helpers: the `stockade` command line in this process (`run_cli`, the default) or
as a real child process (`run_cli_process`, where the process boundary is what is tested)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.conftest import THF_FIXTURES
from tests.helpers.cli import CliResult, invoke
from tests.helpers.fake_provider import FakeProviderServer

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_SECONDS = 120


def stockade_command() -> list[str]:
    """The installed `stockade` script beside this interpreter, else `python -m` the entry point."""
    script = Path(sys.executable).parent / ("stockade.exe" if os.name == "nt" else "stockade")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "stockade.cli.main"]


def cli_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The child's environment: ours (STOCKADE_HOME already isolated by tests/conftest.py),
    the repo root on PYTHONPATH so `tests.helpers` imports, Qt offscreen, then `env` on top
    (a None value removes that variable)."""
    child = dict(os.environ)
    existing = child.get("PYTHONPATH")
    child["PYTHONPATH"] = (
        str(REPO_ROOT) if not existing else os.pathsep.join([str(REPO_ROOT), existing])
    )
    child.setdefault("QT_QPA_PLATFORM", "offscreen")
    child["PYTHONIOENCODING"] = "utf-8"
    for key, value in (env or {}).items():
        if value is None:
            child.pop(key, None)
        else:
            child[key] = value
    return child


def run_cli(
    *args: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> CliResult:
    """`stockade ARGS...` through `main(argv)` in this process (see `tests.helpers.cli`)."""
    return invoke(*args, env=env, input=input, cwd=cwd)


def run_cli_process(
    *args: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `stockade ARGS...` as a real process; returns it with returncode, stdout, stderr."""
    return subprocess.run(
        [*stockade_command(), *(os.fspath(a) for a in args)],
        env=cli_env(env),
        input=input,
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    """A fake provider server on 127.0.0.1 for one test."""
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """A copy of the full canonical fixture the test may change."""
    target = tmp_path / "model.thf"
    shutil.copy(THF_FIXTURES / "v1.0-canonical-full.thf", target)
    return target
