"""`stockade runs list|show|approve|deny|resume`: decide and continue parked assistant runs.

`approve RUN CALL` / `deny RUN CALL` decide one call; `approve RUN --all-non-destructive` and
`deny RUN --all` decide every call still undecided at once (destructive calls are never
approved in bulk). Each decision is recorded per call with `--actor`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stockade.assistant.errors import REFUSALS, failure_text
from stockade.assistant.records import RunInfo, RunStatus
from stockade.assistant.service import AssistantService
from stockade.cli.assist import (
    add_base_url_argument,
    conclude,
    load_settings_for_command,
    print_summary,
)
from stockade.cli.common import (
    ExitCode,
    UsageError,
    print_error,
    print_json,
    say,
    with_passphrase,
)
from stockade.protocol.endpoints import EndpointError, parse_endpoint


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

    show = sub.add_parser("show", help="show a run; a parked run's pending calls with what "
                                       "each would change (decrypted)")
    show.add_argument("run", metavar="RUN")
    show.add_argument("--json", action="store_true")

    for name, verb in (("approve", "approve"), ("deny", "deny")):
        decide = sub.add_parser(name, help=f"{verb} pending calls of a parked run (one CALL, or "
                                           f"{'--all-non-destructive' if name == 'approve' else '--all'})")
        decide.add_argument("run", metavar="RUN")
        decide.add_argument("call", metavar="CALL", nargs="?", default=None,
                            help="the call to decide (see 'stockade runs show RUN')")
        if name == "approve":
            decide.add_argument("--all-non-destructive", dest="all", action="store_true",
                                help="approve every undecided call that is not destructive "
                                     "(a destructive call is only ever approved on its own)")
        else:
            decide.add_argument("--all", action="store_true", help="deny every undecided call")
        decide.add_argument("--actor", required=True, help="who decides (recorded in the audit)")
        if name == "deny":
            decide.add_argument("--reason", default=None, help="why (told to the model)")
        decide.add_argument("--json", action="store_true")

    resume = sub.add_parser("resume", help="continue a parked run once every call is decided")
    resume.add_argument("run", metavar="RUN")
    add_base_url_argument(resume)
    resume.add_argument("--write", action="store_true",
                        help="save the changed document back to its file even if the run was "
                             "started without --write")
    resume.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _run_json(info: RunInfo) -> dict[str, Any]:
    return {"run_id": info.run_id, "status": info.status.value, "outcome": info.outcome,
            "reason": info.reason, "document_path": info.document_path,
            "provider": info.provider, "model": info.model, "created": _when(info.created_ms),
            "updated": _when(info.updated_ms)}


Handler = Callable[[AssistantService, argparse.Namespace], Awaitable[int]]


def run(args: argparse.Namespace) -> int:
    if args.runs_command in ("approve", "deny"):
        if not args.actor.strip():
            raise UsageError("--actor needs a name")
        bulk = "--all-non-destructive" if args.runs_command == "approve" else "--all"
        if args.call is None and not args.all:
            raise UsageError(f"runs {args.runs_command}: name a CALL, or give {bulk}")
        if args.call is not None and args.all:
            raise UsageError(f"runs {args.runs_command}: give either a CALL or {bulk}, not both")
    if getattr(args, "base_url", None):
        try:
            parse_endpoint(args.base_url, what="--base-url")
        except EndpointError as exc:
            raise UsageError(f"runs resume: {exc}") from None
    handler: Handler = {"list": _list, "show": _show, "approve": _decide, "deny": _decide,
                        "resume": _resume}[args.runs_command]
    return asyncio.run(_run(handler, args))


async def _run(handler: Handler, args: argparse.Namespace) -> int:
    service = AssistantService()
    try:
        # Runs a crashed process left mid-step are marked interrupted, and parked runs past
        # their expiry finished, before anyone looks.
        await service.recover_interrupted(load_settings_for_command())
        return await handler(service, args)
    except REFUSALS as exc:
        print_error(failure_text(exc))
        return ExitCode.FAILED
    finally:
        service.close()


async def _list(service: AssistantService, args: argparse.Namespace) -> int:
    status = RunStatus(args.status) if args.status else None
    path = str(Path(args.file).resolve()) if args.file else None
    runs = await service.list_runs(status=status, document_path=path,
                                   settings=load_settings_for_command())
    items = []
    for info in runs:
        item = _run_json(info)
        item["pending"] = [p.call_id for p in info.pending]
        items.append(item)
    if args.json:
        print_json(items)
        return ExitCode.OK
    if not items:
        say("no runs")
        return ExitCode.OK
    rows = [("RUN", "STATUS", "OUTCOME", "UPDATED", "DOCUMENT", "WAITING ON")]
    rows += [(i["run_id"], i["status"], i["outcome"] or "-", i["updated"], i["document_path"],
              ", ".join(i["pending"]) or "-") for i in items]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    for row in rows:
        say("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
            + "  " + row[-1])
    return ExitCode.OK


async def _show(service: AssistantService, args: argparse.Namespace) -> int:
    details = await with_passphrase(
        lambda passphrase: service.show_run(args.run, passphrase=passphrase))
    info = _run_json(details.info)
    decided = {d.call_id: d for d in details.decisions}
    info["decisions"] = [{"call_id": d.call_id, "decision": d.decision.value, "actor": d.actor,
                          "reason": d.reason} for d in details.decisions]
    info["pending"] = [{
        "call_id": p.call_id, "tool": p.tool_name, "summary": p.summary,
        "destructive": p.destructive, "input": json.loads(p.raw_input)
        if p.raw_input.startswith(("{", "[")) else p.raw_input,
        "input_digest": p.input_digest, "preview": list(p.changes),
        "target": p.target or None, "severity": p.severity,
        "declined_earlier": None if p.declined_earlier is None
        else {"reason": p.declined_earlier.reason},
        "decision": decided[p.call_id].decision.value if p.call_id in decided else None,
    } for p in details.previews]
    if args.json:
        print_json(info)
        return ExitCode.OK
    say(f"run {info['run_id']}: {info['status']} on {info['document_path']}")
    say(f"  {info['provider']}/{info['model']}, started {info['created']}")
    for call in info["pending"]:
        mark = " [destructive]" if call["destructive"] else ""
        state = call["decision"] or "undecided"
        where = f" on {call['target']}" if call["target"] else ""
        severity = f", severity {call['severity']}" if call["severity"] else ""
        say(f"  call {call['call_id']} ({state}): {call['tool']}{where}{severity}{mark}")
        if call["declined_earlier"] is not None:
            why = call["declined_earlier"]["reason"]
            say(f"    declined earlier{f' ({why})' if why else ''}")
        say(f"    {call['summary']}")
        for line in call["preview"]:
            say(f"      {line}")
        say(f"    input: {json.dumps(call['input'], ensure_ascii=False, sort_keys=True)}")
    for d in info["decisions"]:
        why = f": {d['reason']}" if d["reason"] else ""
        say(f"  {d['call_id']} {d['decision']} by {d['actor']}{why}")
    if details.info.status is RunStatus.PARKED and details.info.undecided:
        say(f"  decide with 'stockade runs approve|deny {info['run_id']} CALL --actor NAME', "
              f"'stockade runs approve {info['run_id']} --all-non-destructive --actor NAME' or "
              f"'stockade runs deny {info['run_id']} --all --actor NAME [--reason R]'")
    return ExitCode.OK


async def _decide(service: AssistantService, args: argparse.Namespace) -> int:
    if args.all:
        return await _decide_all(service, args)
    approve = args.runs_command == "approve"
    fresh = await with_passphrase(lambda passphrase: service.decide(
        args.run, args.call, approve=approve, actor=args.actor,
        reason=getattr(args, "reason", None), passphrase=passphrase))
    decision = "approved" if approve else "denied"
    result = {"run_id": args.run, "call_id": args.call, "decision": decision,
              "actor": args.actor.strip(), "already_recorded": not fresh}
    if args.json:
        print_json(result)
    else:
        again = " (already recorded)" if not fresh else ""
        say(f"{args.call} {decision}{again}; resume with 'stockade runs resume {args.run}'")
    return ExitCode.OK


async def _decide_all(service: AssistantService, args: argparse.Namespace) -> int:
    """Approve every undecided non-destructive call, or deny every undecided call."""
    approve = args.runs_command == "approve"
    info, _decisions = await service.run_info(args.run)
    if info.status is not RunStatus.PARKED:
        print_error(f"run {args.run} is {info.status.value}; only a parked run waits for "
                    "decisions")
        return ExitCode.FAILED
    undecided = [p for p in info.pending if p.decision is None]
    chosen = [p for p in undecided if not (approve and p.destructive)]
    actor, reason = args.actor.strip(), getattr(args, "reason", None)

    async def decide_each(passphrase: str | None) -> list[dict[str, Any]]:
        out = []
        for call in chosen:  # a retry with a passphrase repeats nothing: decisions are no-ops
            fresh = await service.decide(args.run, call.call_id, approve=approve, actor=actor,
                                         reason=reason, passphrase=passphrase)
            out.append({"call_id": call.call_id, "tool": call.tool,
                        "destructive": call.destructive, "already_recorded": not fresh})
        return out

    decided = await with_passphrase(decide_each)
    left = [p for p in undecided if p not in chosen]
    decision = "approved" if approve else "denied"
    if args.json:
        print_json({"run_id": args.run, "decision": decision, "actor": actor, "reason": reason,
                    "calls": decided, "undecided": [p.call_id for p in left]})
    else:
        for item in decided:
            say(f"{item['call_id']} {decision} ({item['tool']})")
        if not undecided:
            say(f"nothing to decide: every call of run {args.run} already has a decision")
        for call in left:
            say(f"{call.call_id} not approved: {call.tool} is destructive; approve it on its "
                  f"own with 'stockade runs approve {args.run} {call.call_id} --actor NAME'")
        if not left:
            say(f"resume with 'stockade runs resume {args.run}'")
    return ExitCode.OK if decided or not undecided else ExitCode.FAILED


async def _resume(service: AssistantService, args: argparse.Namespace) -> int:
    settings = load_settings_for_command()
    turn = await with_passphrase(lambda passphrase: service.resume(
        args.run, settings=settings, base_url=args.base_url,
        write_back=True if args.write else None, passphrase=passphrase))
    summary, code = await conclude(service, turn)
    if turn.changed and not turn.write_back:
        print_error(f"the document {turn.document_path} was not written: run {args.run} was "
                    "started without --write, so this resume kept the turn's changes out of "
                    "the file and they are now discarded. To save what a resumed run changes, "
                    f"resume it with --write (stockade runs resume RUN --write), or run the "
                    "prompt again with 'stockade assist FILE --prompt ... --write'.")
    print_summary(summary, args.json)
    return code
