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
    from stockade.thf.errors import CompatibilityWarning
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
    suggestion: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "section": self.section,
            "id": self.id,
            "field": self.field,
            "reference": self.reference,
            "suggestion": self.suggestion,
        }

    @property
    def hint(self) -> str | None:
        """The extra sentence people get after the message (a broken reference's likely id)."""
        return f"Did you mean '{self.suggestion}'?" if self.suggestion else None


READ_ERROR_CODE = "file_read"
"""Code reported when a file exists but cannot be read (permissions, I/O); not a ThfErrorCode."""

FOREIGN_FORMAT_CODE = "foreign_format"
"""Code reported when the file is another tool's model (it can be imported, not opened)."""


def load_document(path: Path) -> ThreatModel | LoadFailure:
    """Read and validate one `.thf` file; expected failures come back as values, never raised.

    The reader turns every read failure (permissions, I/O) into a `ThfError` already.
    """
    outcome = load_document_with_warnings(path)
    return outcome if isinstance(outcome, LoadFailure) else outcome[0]


def load_document_with_warnings(
    path: Path,
) -> tuple[ThreatModel, tuple[CompatibilityWarning, ...]] | LoadFailure:
    """`load_document`, plus what ThreatForge's desktop reader would refuse in the file.

    A file that is another tool's model (Threat Dragon, OTM, TM7, pytm) fails with
    `FOREIGN_FORMAT_CODE` and a message saying how to import it.
    """
    from stockade.thf.errors import ThfError
    from stockade.thf.reader import read_file_with_warnings

    try:
        return read_file_with_warnings(path)
    except ThfError as err:
        foreign = _foreign_hint(path)
        if foreign is not None:
            return LoadFailure(code=FOREIGN_FORMAT_CODE, message=foreign)
        return LoadFailure(**err.to_json())


def _foreign_hint(path: Path) -> str | None:
    from stockade.importers.detect import foreign_file_hint
    from stockade.importers.source import MAX_SOURCE_BYTES

    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_SOURCE_BYTES:
        return None
    found = foreign_file_hint(raw, path.name)
    return found[1] if found is not None else None
