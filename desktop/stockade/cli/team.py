"""`stockade team init|status`: set up a team's PostgreSQL database and report on it.

`init` is run by the database's administrator (a role that may create roles): it creates the
`stockade` schema, the group roles `stockade_analyst`, `stockade_approver` and
`stockade_auditor`, applies every schema version, and with `--team` creates the team, its
member roles (login roles without a password: the administrator sets one, or uses the
server's own authentication) and its shared credit limits. Running it again adds only what is
new. `status` shows the database, the connected role and the teams it may see.
"""

from __future__ import annotations

import argparse
from typing import Any

from stockade.cli.common import ExitCode, UsageError, print_error, print_json
from stockade.governance.team import (
    InitReport,
    MemberKind,
    StatusReport,
    StoreError,
    TeamAdminError,
    TeamWallet,
    init_team,
    team_status,
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "team", help="set up or inspect a team's shared PostgreSQL database",
        description="Team mode: a shared wallet, one audit trail per team and approvals "
                    "across machines, on PostgreSQL (see README, Team mode).")
    actions = parser.add_subparsers(dest="team_command", metavar="ACTION")
    actions.required = True
    init = actions.add_parser(
        "init", help="create or upgrade the schema and roles; add a team and its members",
        description="Run as the database administrator. Idempotent: run it again to add "
                    "members or to upgrade the schema with a newer build.")
    init.add_argument("--database-url", metavar="URL",
                      help="postgresql://ADMIN@HOST:PORT/DATABASE (default: "
                           "STOCKADE_DATABASE_URL, then settings); never with a password")
    init.add_argument("--team", metavar="TEAM", help="the team to create or change")
    for kind in MemberKind:
        init.add_argument(f"--{kind.value}", metavar="ROLE", action="append", default=[],
                          dest=kind.value, help=f"a database role to add as {kind.value} "
                                                "(repeatable; created if missing)")
    for flag, dest, what in (("--day", "per_day", "the team's credits per UTC day"),
                             ("--month", "per_month", "the team's credits per UTC month"),
                             ("--analyst-day", "per_analyst_day", "each analyst's credits per day"),
                             ("--analyst-month", "per_analyst_month",
                              "each analyst's credits per month")):
        init.add_argument(flag, dest=dest, metavar="CREDITS", type=int, default=None,
                          help=f"{what} (with --team; omit for no limit)")
    init.add_argument("--json", action="store_true", help="print one JSON document")
    status = actions.add_parser("status", help="show the database, your role and the teams")
    status.add_argument("--database-url", metavar="URL", help="as for init")
    status.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.team_command == "init":
            return _init(args)
        return _status(args)
    except (StoreError, TeamAdminError) as exc:
        print_error(f"team {args.team_command}: {exc}")
        return ExitCode.FAILED


def _wallet(args: argparse.Namespace) -> TeamWallet | None:
    values = [args.per_day, args.per_month, args.per_analyst_day, args.per_analyst_month]
    if all(v is None for v in values):
        return None
    if any(v is not None and v < 0 for v in values):
        raise UsageError("team init: credit limits are whole non-negative numbers")
    if args.team is None:
        raise UsageError("team init: credit limits need --team")
    return TeamWallet(*values)


def _init(args: argparse.Namespace) -> int:
    members: dict[str, MemberKind] = {}
    for kind in MemberKind:
        for role in getattr(args, kind.value):
            if role in members and members[role] is not kind:
                raise UsageError(f"team init: {role} is given as both {members[role].value} "
                                 f"and {kind.value}")
            members[role] = kind
    report = init_team(args.database_url, team=args.team, members=members,
                       wallet=_wallet(args))
    if args.json:
        print_json(_init_json(report))
        return ExitCode.OK
    applied = ", ".join(map(str, report.schema_applied)) or "none (already current)"
    print(f"{report.database}: schema version {report.schema_version} "
          f"(applied now: {applied})")
    if report.team is not None:
        print(f"team {report.team}: {'created' if report.team_created else 'already there'}")
    for role, kind in report.members.items():
        made = " (new login role, no password yet)" if role in report.roles_created else ""
        print(f"  {role}: {kind.value}{made}")
    if report.roles_created:
        print("Set each new role's password (ALTER ROLE name PASSWORD ... in psql) or use the "
              "server's own authentication; members keep it in their keyring with "
              "`stockade keys set-database-password`, a libpq service file or PGPASSFILE.")
    return ExitCode.OK


def _init_json(report: InitReport) -> dict[str, Any]:
    return {"database": report.database, "schema_version": report.schema_version,
            "schema_applied": list(report.schema_applied), "team": report.team,
            "team_created": report.team_created, "roles_created": list(report.roles_created),
            "members": {r: k.value for r, k in report.members.items()}}


def _status(args: argparse.Namespace) -> int:
    report = team_status(args.database_url)
    if args.json:
        print_json(_status_json(report))
        return ExitCode.OK
    print(f"database: {report.database}")
    print(f"schema version: {report.schema_version if report.schema_version is not None else 'none (run team init)'}")
    print(f"connected as: {report.role}" + (f", member of team {report.team}" if report.team
                                            else " (not a team member: administrator view)"))
    for info in report.teams:
        limits = ", ".join(f"{name} {value}" for name, value in (
            ("day", info.wallet.per_day), ("month", info.wallet.per_month),
            ("per analyst per day", info.wallet.per_analyst_day),
            ("per analyst per month", info.wallet.per_analyst_month)) if value is not None)
        print(f"team {info.team}: {info.events} audit events, {info.runs_parked} parked runs, "
              f"{info.credits_today} credits committed today; limits: {limits or 'none'}")
        for member in info.members:
            print(f"  {member.role}: {member.kind.value if member.kind else 'no kind granted'}")
    return ExitCode.OK


def _status_json(report: StatusReport) -> dict[str, Any]:
    return {"database": report.database, "role": report.role, "team": report.team,
            "schema_version": report.schema_version,
            "teams": [{"team": t.team, "events": t.events, "parked_runs": t.runs_parked,
                       "credits_today": t.credits_today,
                       "limits": {"per_day": t.wallet.per_day, "per_month": t.wallet.per_month,
                                  "per_analyst_day": t.wallet.per_analyst_day,
                                  "per_analyst_month": t.wallet.per_analyst_month},
                       "members": [{"role": m.role,
                                    "kind": m.kind.value if m.kind else None}
                                   for m in t.members]}
                      for t in report.teams]}
