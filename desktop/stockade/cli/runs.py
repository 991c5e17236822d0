"""`stockade runs list|show|approve|deny|resume`: decide and continue parked assistant runs."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from stockade.cli.assist import make_provider, open_gov, print_summary, settle_headless
from stockade.cli.common import ExitCode, UsageError, print_error, print_json
from stockade.governance.runstate import DocumentChanged
from stockade.governance.sealing import SealError
from stockade.governance.session import AssistantSession, decide_parked
from stockade.loop.history import DocumentSession
from stockade.loop.serialize import SnapshotError
from stockade.store import ConflictError, NotFoundError, StoreError
from stockade.store.database import as_store_error
from stockade.store.runs import RunRow, RunStatus
from stockade.thf.errors import ThfError
from stockade.thf.model import ThreatModel


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("runs", help="list, decide and resume parked assistant runs",
                                   description="Parked runs wait for a decision on each "
                                   "pending call; approve or deny each, then resume.")
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION")
    sub.required = True

    listing = sub.add_parser("list", help="list runs (newest first)")
    listing.add_argument("--status", choices=[s.value for s in RunStatus], default=None)
    listing.add_argument("--file", default=None, help="only runs on this .thf file")
    listing.add_argument("--json", action="store_true")

    show = sub.add_parser("show", help="show a run; decrypts a parked run's pending calls")
    show.add_argument("run", metavar="RUN")
    show.add_argument("--json", action="store_true")

    for name, verb in (("approve", "approve"), ("deny", "deny")):
        decide = sub.add_parser(name, help=f"{verb} one pending call of a parked run")
        decide.add_argument("run", metavar="RUN")
        decide.add_argument("call", metavar="CALL")
        decide.add_argument("--actor", required=True, help="who decides (recorded in the audit)")
        if name == "deny":
            decide.add_argument("--reason", default=None, help="why (told to the model)")
        decide.add_argument("--json", action="store_true")

    resume = sub.add_parser("resume", help="continue a parked run once every call is decided")
    resume.add_argument("run", metavar="RUN")
    resume.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _run_json(row: RunRow) -> dict[str, Any]:
    return {"run_id": row.run_id, "status": row.status.value, "outcome": row.outcome,
            "reason": row.reason, "document_path": row.document_path,
            "provider": row.provider, "model": row.model, "created": _when(row.created_ms),
            "updated": _when(row.updated_ms)}


def run(args: argparse.Namespace) -> int:
    gov = open_gov()
    if gov is None:
        return ExitCode.FAILED
    try:
        handler = {"list": _list, "show": _show, "approve": _decide, "deny": _decide,
                   "resume": _resume}[args.runs_command]
        return handler(gov, args)
    except (NotFoundError, ConflictError, SealError, SnapshotError, StoreError) as exc:
        print_error(str(exc))
        return ExitCode.FAILED
    except sqlite3.DatabaseError as exc:
        print_error(str(as_store_error(exc, gov.db.path)))
        return ExitCode.FAILED
    finally:
        gov.close()


def _list(gov: Any, args: argparse.Namespace) -> int:
    from pathlib import Path

    status = RunStatus(args.status) if args.status else None
    path = str(Path(args.file).resolve()) if args.file else None
    rows = gov.runs.list_runs(status=status, document_path=path)
    items = []
    for row in rows:
        item = _run_json(row)
        item["pending"] = [p.call_id for p in gov.runs.pending_calls(row.run_id)] \
            if row.status is RunStatus.PARKED else []
        items.append(item)
    if args.json:
        print_json(items)
        return ExitCode.OK
    if not items:
        print("no runs")
    for item in items:
        extra = f", waiting on {', '.join(item['pending'])}" if item["pending"] else ""
        outcome = f" {item['outcome']}" if item["outcome"] else ""
        print(f"{item['run_id']}  {item['status']}{outcome}  {item['document_path']}{extra}")
    return ExitCode.OK


def _show(gov: Any, args: argparse.Namespace) -> int:
    row = gov.runs.get(args.run)
    info = _run_json(row)
    decisions = {d.call_id: d for d in gov.runs.decisions(row.run_id)}
    info["decisions"] = [{"call_id": d.call_id, "decision": d.decision.value, "actor": d.actor,
                          "reason": d.reason} for d in decisions.values()]
    info["pending"] = []
    if row.status is RunStatus.PARKED:
        snapshot = gov.runs.open_snapshot(row.run_id)
        calls = snapshot["runner"]["turn"]["calls"]
        for call in calls:
            if call.get("status") != "pending":
                continue
            decided = decisions.get(call["id"])
            info["pending"].append({
                "call_id": call["id"], "tool": call["tool_name"], "summary": call["summary"],
                "destructive": call["destructive"], "input": call.get("raw_input"),
                "input_digest": call["input_digest"],
                "decision": decided.decision.value if decided else None})
    if args.json:
        print_json(info)
        return ExitCode.OK
    print(f"run {info['run_id']}: {info['status']} on {info['document_path']}")
    print(f"  {info['provider']}/{info['model']}, started {info['created']}")
    for call in info["pending"]:
        mark = " [destructive]" if call["destructive"] else ""
        state = call["decision"] or "undecided"
        print(f"  call {call['call_id']} ({state}): {call['tool']}{mark}")
        print(f"    {call['summary']}")
        print(f"    input: {json.dumps(call['input'], ensure_ascii=False, sort_keys=True)}")
    for d in info["decisions"]:
        print(f"  {d['call_id']} {d['decision']} by {d['actor']}")
    return ExitCode.OK


def _decide(gov: Any, args: argparse.Namespace) -> int:
    if not args.actor.strip():
        raise UsageError("--actor needs a name")
    approve = args.runs_command == "approve"
    fresh = decide_parked(gov, args.run, args.call, approve=approve, actor=args.actor,
                          reason=getattr(args, "reason", None))
    decision = "approved" if approve else "denied"
    result = {"run_id": args.run, "call_id": args.call, "decision": decision,
              "actor": args.actor.strip(), "already_recorded": not fresh}
    if args.json:
        print_json(result)
    else:
        again = " (already recorded)" if not fresh else ""
        print(f"{args.call} {decision}{again}; resume with 'stockade runs resume {args.run}'")
    return ExitCode.OK


def _current_digest(path: str) -> str:
    from stockade.governance.session import digest_of_file

    try:
        return digest_of_file(path)
    except (OSError, ThfError):
        raise DocumentChanged(f"the document {path} can no longer be read as a valid model; "
                              "the run cannot be resumed against it") from None


def _resume(gov: Any, args: argparse.Namespace) -> int:
    ticket = AssistantSession.prepare_resume(gov, args.run, _current_digest)
    snap = ticket.snapshot
    document = ThreatModel.model_validate(snap["document"])
    document_session = DocumentSession(document)
    provider = make_provider(snap["provider_name"], snap["model"], snap.get("base_url"),
                             document_session)
    from stockade.settings import read_settings

    loaded = read_settings()
    if loaded.problem:
        print_error(loaded.problem)
    # Day and month limits are today's settings, not those in force when the run parked.
    wallet = loaded.settings.credits.budgets()
    session = asyncio.run(AssistantSession.resume(gov, ticket, provider=provider,
                                                  document_session=document_session,
                                                  wallet=wallet))
    write = bool(snap.get("write_back"))
    from stockade.thf.reader import read_file

    try:
        on_disk = read_file(ticket.run.document_path)
    except ThfError as exc:
        # The file changed under the turn (deleted, or replaced by something invalid): nothing
        # is written over it; the run's own record of what it did is still printed.
        print_error(f"the document can no longer be read ({exc.message}); the turn's changes "
                    "were not written")
        print_summary(session.summary(document_written=False), args.json)
        return ExitCode.FAILED
    summary, code = settle_headless(session, original=on_disk, write=write,
                                    state_phase=session.state.phase)
    print_summary(summary, args.json)
    return code
