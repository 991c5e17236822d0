"""Run the `stockade` command line in this process: `main(argv)` with its environment and stdio.

The command-line contract (arguments, output, exit codes, files) is what a test checks, and a
process start costs about a second; so contract tests call `main` here. Tests that need a real
process boundary (kill -9, two processes racing, a damaged database seen by a fresh process)
use `tests.e2e.conftest.run_cli_process`.

`PYTHON_KEYRING_BACKEND` in `env` is honoured as a child process would honour it (the backend
is installed for the call and the previous one put back), so a test can share the file keyring
between in-process calls and real processes.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import keyring


@dataclass(frozen=True)
class CliResult:
    """What a finished command left: like `subprocess.CompletedProcess`, for the same asserts."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


@contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in changes}
    for key, value in changes.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _keyring_backend(name: str | None) -> Iterator[None]:
    if not name:
        yield
        return
    module_name, _, class_name = name.rpartition(".")
    backend = getattr(importlib.import_module(module_name), class_name)()
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield
    finally:
        keyring.set_keyring(previous)


class _Text(io.StringIO):
    """A captured stream that, like a pipe, is not a terminal."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return False


def invoke(*args: str | os.PathLike[str], env: Mapping[str, str | None] | None = None,
           input: str | None = None, cwd: str | os.PathLike[str] | None = None) -> CliResult:
    """`stockade ARGS...` via `main(argv)`; never raises for what the command reports."""
    from stockade.cli.main import main

    argv = tuple(os.fspath(a) for a in args)
    changes = dict(env or {})
    stdout, stderr, stdin = _Text(), _Text(), _Text(input or "")
    saved = sys.stdin, sys.stdout, sys.stderr
    here = os.getcwd()
    with _environment(changes), _keyring_backend(changes.get("PYTHON_KEYRING_BACKEND")):
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = main(list(argv))
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            os.chdir(here)
    return CliResult(argv, int(code), stdout.getvalue(), stderr.getvalue())
