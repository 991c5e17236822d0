"""Helpers every `stockade` subcommand shares: exit codes, output, document loading, usage errors."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Awaitable, Callable
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO, TypeVar

if TYPE_CHECKING:
    from stockade.thf.errors import CompatibilityWarning
    from stockade.thf.model import ThreatModel


T = TypeVar("T")


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


# What a terminal would act on instead of showing: C0 controls except line feed and tab (ESC
# starts CSI/OSC sequences that retitle the window, plant hyperlinks or hide text; CR rewrites
# the line), DEL, C1 controls (8-bit CSI/OSC), bidi controls (reorder what is shown), the
# Unicode line and paragraph separators, and lone surrogates (unprintable).
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029\ud800-\udfff]")
# In JSON text every string is quoted and C0 controls are already escaped by `json.dumps`; the
# rest of the set above may appear raw, so it is written as `\uXXXX` (the same JSON value).
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """`text` safe to print: every control a terminal would act on is shown escaped
    (`\\x1b`, `\\u202e`); line feeds and tabs stay as they are."""
    return _TERMINAL_UNSAFE.sub(_escape, text)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """`value` as exact JSON that is also safe in a terminal (see `_JSON_UNSAFE`)."""
    import json  # on first use: `stockade validate` without `--json` never needs it

    if indent is None:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    else:
        text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def json_line(text: str) -> str:
    """A line of JSON text made terminal-safe without changing the value it encodes."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def say(text: str = "", stream: TextIO | None = None) -> None:
    """Print one line of human output, with model- and document-derived controls escaped."""
    out = stream if stream is not None else sys.stdout
    out.write(terminal_text(text) + "\n")


def print_json(value: Any, stream: TextIO | None = None) -> None:
    """Print one JSON document (the `--json` output of a subcommand) followed by a newline."""
    out = stream if stream is not None else sys.stdout
    out.write(json_text(value) + "\n")
    out.flush()


def print_error(message: str) -> None:
    """Print one plain error line on stderr, prefixed with the program name."""
    print(f"stockade: {terminal_text(message)}", file=sys.stderr)


def plural(n: int, noun: str) -> str:
    """`1 element`, `2 elements`: counts in human output read as English."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def display_path(path: Path) -> str:
    """The path as the user typed it (relative stays relative) for messages and JSON."""
    return os.fspath(path)


def checked_output(raw: str, command: str) -> Path:
    """The output path of a command that writes one file, refused before any work is done when
    its folder is missing or it names a folder."""
    output = Path(raw)
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{command}: no such folder for the output: {folder}")
    if output.is_dir():
        raise UsageError(f"{command}: the output is a folder: {raw}")
    return output


def output_result(path: Path, output: Path, fmt: str) -> dict[str, Any]:
    """The `--json` result of a command that writes one file, before it has written it."""
    return {"path": display_path(path), "output": display_path(output), "format": fmt,
            "ok": False, "error": None}


def print_result(as_json: bool, result: dict[str, Any], line: str) -> None:
    """Print the `--json` result, or the one line a person reads."""
    if as_json:
        print_json(result)
    else:
        print(line)


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


class LoadFailure(NamedTuple):
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


PASSPHRASE_PROMPT = "Passphrase for parked runs (there is no secure keyring here): "


def ask_passphrase(*, confirm: bool) -> str | None:
    """Ask at a hidden prompt when stdin is a terminal (else None: nobody to ask)."""
    if not sys.stdin.isatty():
        return None
    import getpass

    first = getpass.getpass(PASSPHRASE_PROMPT, stream=sys.stderr)
    if confirm and getpass.getpass("Repeat the passphrase: ", stream=sys.stderr) != first:
        raise UsageError("the two passphrases differ; nothing was sealed")
    return first


async def with_passphrase(work: Callable[[str | None], Awaitable[T]], *,
                          confirm: bool = False) -> T:
    """`work(None)`; if it needs a passphrase (no secure keyring, and no
    `STOCKADE_SNAPSHOT_PASSPHRASE`), ask for one at a hidden prompt and run `work` with it."""
    from stockade.assistant.errors import PassphraseRequired

    try:
        return await work(None)
    except PassphraseRequired as exc:
        passphrase = ask_passphrase(confirm=confirm)
        if passphrase is None:
            raise PassphraseRequired(f"{exc} — set STOCKADE_SNAPSHOT_PASSPHRASE, or run the "
                                     "command in a terminal to be asked for it") from None
    return await work(passphrase)
