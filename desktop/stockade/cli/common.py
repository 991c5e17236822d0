"""Helpers every `stockade` subcommand shares: exit codes, output, document loading, usage errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

if TYPE_CHECKING:
    from stockade.thf.model import ThreatModel


class ExitCode(IntEnum):
    """The process exit codes of the command line contract (DESIGN.md, Command line)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    PARKED = 3


class UsageError(Exception):
    """Raised by a subcommand for bad arguments argparse cannot see (wrong suffix, missing file).

    `main` prints it as one line and exits with `ExitCode.USAGE`.
    """


class CliArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one plain line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def print_json(value: Any, stream: TextIO | None = None) -> None:
    """Print one JSON document (the `--json` output of a subcommand) followed by a newline."""
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    out.flush()


def print_error(message: str) -> None:
    """Print one plain error line on stderr, prefixed with the program name."""
    print(f"stockade: {message}", file=sys.stderr)


def plural(n: int, noun: str) -> str:
    """`1 element`, `2 elements`: counts in human output read as English."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def display_path(path: Path) -> str:
    """The path as the user typed it (relative stays relative) for messages and JSON."""
    return os.fspath(path)


def existing_files(paths: list[str], command: str) -> list[Path]:
    """Check every named file exists before anything runs; a missing one is a usage error."""
    checked: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{command}: no such file: {raw}")
        if not path.is_file():
            raise UsageError(f"{command}: not a file: {raw}")
        checked.append(path)
    return checked


@dataclass(frozen=True)
class LoadFailure:
    """Why a document could not be loaded, shaped like `ThfError.to_json()`."""

    code: str
    message: str
    section: str | None = None
    id: str | None = None
    field: str | None = None
    reference: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "section": self.section,
            "id": self.id,
            "field": self.field,
            "reference": self.reference,
        }


READ_ERROR_CODE = "file_read"
"""Code reported when a file exists but cannot be read (permissions, I/O); not a ThfErrorCode."""


def load_document(path: Path) -> ThreatModel | LoadFailure:
    """Read and validate one `.thf` file; expected failures come back as values, never raised.

    The reader turns every read failure (permissions, I/O) into a `ThfError` already.
    """
    from stockade.thf.errors import ThfError
    from stockade.thf.reader import read_file

    try:
        return read_file(path)
    except ThfError as err:
        return LoadFailure(**err.to_json())
