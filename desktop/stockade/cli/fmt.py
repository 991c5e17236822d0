"""`stockade fmt FILE... [--check] [--json]`: rewrite `.thf` files in canonical form.

Canonical means the body Stockade's writer produces under either known header: Stockade's own,
or the two lines ThreatForge's desktop app writes (kept as they are).
"""

from __future__ import annotations

import argparse
from enum import StrEnum
from pathlib import Path
from typing import Any

from stockade.cli.common import (
    READ_ERROR_CODE,
    ExitCode,
    LoadFailure,
    display_path,
    existing_files,
    load_document,
    print_json,
)


class FmtStatus(StrEnum):
    """What `fmt` did (or would do) with one file."""

    UNCHANGED = "unchanged"
    REFORMATTED = "reformatted"
    NOT_CANONICAL = "not_canonical"
    INVALID = "invalid"
    SAVE_FAILED = "save_failed"


_HUMAN = {
    FmtStatus.UNCHANGED: "already canonical",
    FmtStatus.REFORMATTED: "reformatted",
    FmtStatus.NOT_CANONICAL: "not canonical (run 'stockade fmt' to fix)",
}


def add_parser(subparsers: Any) -> None:
    """Register the `fmt` subcommand."""
    parser = subparsers.add_parser(
        "fmt",
        help="rewrite .thf files in canonical form",
        description=(
            "Rewrite each valid FILE in canonical form (atomically; unknown fields kept). "
            "Invalid files are reported and left untouched. With --check nothing is written "
            "and the exit code is 1 when any file is not canonical."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a .thf file")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; fail if any file is not canonical"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Format (or check) every file; one line (or one JSON entry) per file."""
    paths = existing_files(args.files, "fmt")
    results: list[dict[str, Any]] = []
    all_ok = True
    for path in paths:
        shown = display_path(path)
        status, error, detail = _format_one(path, check=args.check)
        if status not in (FmtStatus.UNCHANGED, FmtStatus.REFORMATTED):
            all_ok = False
        results.append({"path": shown, "status": status.value, "error": error})
        if not args.json:
            print(f"{shown}: {detail}", flush=True)
    if args.json:
        print_json(results)
    return ExitCode.OK if all_ok else ExitCode.FAILED


def _format_one(path: Path, *, check: bool) -> tuple[FmtStatus, dict[str, Any] | None, str]:
    """Bring one file to canonical form; returns (status, JSON error or None, human detail)."""
    from stockade.thf.errors import SaveError
    from stockade.thf.writer import HEADER, known_header, save, to_yaml

    outcome = load_document(path)
    if isinstance(outcome, LoadFailure):
        return (
            FmtStatus.INVALID,
            outcome.to_json(),
            f"{outcome.code}: {outcome.message} (left untouched)",
        )
    try:
        current = path.read_bytes()
    except OSError as err:
        message = f"The file could not be read: {err.strerror or type(err).__name__}."
        return FmtStatus.INVALID, {"code": READ_ERROR_CODE, "message": message}, message
    # Either known header is canonical (ThreatForge's desktop writes its own), so a file either
    # tool saved passes --check; `save` keeps the header the file has.
    header = known_header(current.decode("utf-8", errors="replace")) or HEADER
    canonical = to_yaml(outcome, header=header).encode("utf-8")
    if current == canonical:
        return FmtStatus.UNCHANGED, None, _HUMAN[FmtStatus.UNCHANGED]
    if check:
        return FmtStatus.NOT_CANONICAL, None, _HUMAN[FmtStatus.NOT_CANONICAL]
    try:
        save(outcome, path)
    except SaveError as err:
        return (
            FmtStatus.SAVE_FAILED,
            {"code": "save_failed", "message": err.message},
            f"not saved: {err.message} (left untouched)",
        )
    return FmtStatus.REFORMATTED, None, _HUMAN[FmtStatus.REFORMATTED]
