"""`stockade audit verify|export RUN`: check the hash chain; print one run's events."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from stockade.assistant.errors import REFUSALS, failure_text
from stockade.assistant.service import AssistantService
from stockade.cli.common import ExitCode, print_error, print_json


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("audit", help="verify or export the audit trajectory")
    sub = parser.add_subparsers(dest="audit_command", metavar="ACTION")
    sub.required = True
    verify = sub.add_parser("verify", help="recompute the whole hash chain; exit 1 if broken")
    verify.add_argument("--json", action="store_true")
    verify.add_argument("--team", action="store_true",
                        help="verify the team's trail in the team database (team mode); "
                             "fails when this machine uses its own SQLite file")
    export = sub.add_parser("export", help="print a run's events as JSON lines")
    export.add_argument("run", metavar="RUN")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    # Read-only commands: no crash recovery here, it would append to what we check.
    service = AssistantService()
    try:
        if args.audit_command == "verify":
            trail = "audit trail"
            team: str | None = None
            if args.team:
                identity = await service.store_identity()
                if not identity.is_team:
                    print_error("audit verify --team: this machine keeps its own SQLite file "
                                f"({identity.location}); set database_url (or "
                                "STOCKADE_DATABASE_URL) to the team database")
                    return ExitCode.USAGE
                team = identity.team
                trail = f"team {team} audit trail (verified as {identity.role})"
            result = await service.verify_audit()
            if args.json:
                out = {"ok": result.ok, "checked": result.checked,
                       "first_broken": result.first_broken, "run_id": result.run_id,
                       "reason": result.reason}
                if args.team:
                    out["team"] = team
                print_json(out)
            elif result.ok:
                print(f"{trail} intact: {result.checked} events checked")
            else:
                print(f"{trail} BROKEN at event {result.first_broken} (run "
                      f"{result.run_id}): {result.reason}; {result.checked} events before it "
                      "check out")
            return ExitCode.OK if result.ok else ExitCode.FAILED
        lines = await service.export_audit(args.run)
        if not lines:
            print_error(f"there are no audit events for run {args.run}")
            return ExitCode.FAILED
        sys.stdout.write("\n".join(lines) + "\n")
        return ExitCode.OK
    except REFUSALS as exc:
        print_error(failure_text(exc))
        return ExitCode.FAILED
    finally:
        service.close()
