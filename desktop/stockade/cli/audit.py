"""`stockade audit verify [--export FILE] [--team]|export RUN`: check the keyed chain; export
one run. On a team store the chain is the team's, verifiable from any member's machine."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from stockade.assistant.errors import REFUSALS, failure_text
from stockade.assistant.service import AssistantService
from stockade.cli.common import (
    ExitCode,
    UsageError,
    json_line,
    print_error,
    print_json,
    say,
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("audit", help="verify or export the audit trajectory")
    sub = parser.add_subparsers(dest="audit_command", metavar="ACTION")
    sub.required = True
    verify = sub.add_parser(
        "verify", help="check every event's MAC, the chain's links and its anchored head; "
                       "exit 1 if anything does not check")
    verify.add_argument("--export", metavar="FILE", default=None,
                        help="check an exported run (from 'stockade audit export') instead, "
                             "against the head sealed into it")
    verify.add_argument("--json", action="store_true")
    verify.add_argument("--team", action="store_true",
                        help="verify the team's trail in the team database (team mode); "
                             "fails when this machine uses its own SQLite file")
    export = sub.add_parser("export", help="print a run's events as JSON lines, then a line "
                                           "sealing them with the chain head")
    export.add_argument("run", metavar="RUN")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    lines: list[str] | None = None
    if args.audit_command == "verify" and args.export:
        path = Path(args.export)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise UsageError(f"audit verify: no such file: {args.export}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"audit verify: {args.export} cannot be read "
                             f"({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
    return asyncio.run(_run(args, lines))


async def _run(args: argparse.Namespace, export_lines: list[str] | None) -> int:
    # Read-only commands: no crash recovery here, it would append to what we check.
    service = AssistantService()
    try:
        if args.audit_command == "verify":
            team: str | None = None
            what = "audit trail"
            if args.team:
                identity = await service.store_identity()
                if not identity.is_team:
                    print_error("audit verify --team: this machine keeps its own SQLite file "
                                f"({identity.location}); set database_url (or "
                                "STOCKADE_DATABASE_URL) to the team database")
                    return ExitCode.USAGE
                team = identity.team
                what = f"team {team} audit trail (verified as {identity.role})"
            if export_lines is not None:
                result = await service.verify_audit_export(export_lines)
                what = f"exported trail {args.export}"
            else:
                result = await service.verify_audit()
            if args.json:
                out = result.to_json()
                if args.team:
                    out["team"] = team
                print_json(out)
            elif result.ok:
                kind = "keyed" if result.keyed else "legacy, unkeyed"
                say(f"{what} intact ({kind}): {result.checked} events checked")
            else:
                where = f" at event {result.first_broken}" if result.first_broken else ""
                run_part = f" (run {result.run_id})" if result.run_id else ""
                say(f"{what} BROKEN{where}{run_part}: {result.reason}; {result.checked} events "
                    "before it check out")
            for warning in result.warnings if not args.json else ():
                print_error(f"warning: {warning}")
            return ExitCode.OK if result.ok else ExitCode.FAILED
        lines = await service.export_audit(args.run)
        if not lines:
            print_error(f"there are no audit events for run {args.run}")
            return ExitCode.FAILED
        sys.stdout.write("\n".join(json_line(line) for line in lines) + "\n")
        return ExitCode.OK
    except REFUSALS as exc:
        print_error(failure_text(exc))
        return ExitCode.FAILED
    finally:
        service.close()
