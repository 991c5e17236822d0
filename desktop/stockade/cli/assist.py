"""`stockade assist FILE --prompt TEXT`: one governed assistant turn, headless.

`--approve read` (default) lets read tools run and parks every mutation for a decision;
`mutate` also approves non-destructive mutations; destructive calls are never approved in bulk;
`deny` denies every mutation. Exit 0 when the turn completed or stopped at a bound, 1 when it
failed, 2 on usage errors, 3 when it parked (decide with `stockade runs approve|deny`, then
`stockade runs resume`).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
from typing import Any

from stockade.cli.common import (
    ExitCode,
    LoadFailure,
    UsageError,
    display_path,
    existing_files,
    load_document,
    print_error,
    print_json,
)
from stockade.governance.guards import GuardPolicy
from stockade.governance.pricebook import PriceBookError
from stockade.governance.sealing import SealError
from stockade.governance.session import ApprovePolicy, AssistantSession, Governance, TurnSummary
from stockade.loop.history import DocumentSession
from stockade.loop.runner import document_digest
from stockade.loop.state import TurnPhase
from stockade.settings import read_settings
from stockade.store import StoreError, database_path
from stockade.store.database import as_store_error
from stockade.thf.model import ThreatModel

PROVIDERS = ("anthropic", "openai", "local", "offline")
HEADLESS_ACTOR = "policy"


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be zero or more")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "assist",
        help="run one governed assistant turn on a .thf file, headless",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("file", metavar="FILE", help="the .thf threat model to work on")
    parser.add_argument("--prompt", required=True, help="what to ask the assistant")
    parser.add_argument("--provider", choices=PROVIDERS, default=None,
                        help="the provider (default: from settings)")
    parser.add_argument("--model", default=None, help="the model (default: from settings)")
    parser.add_argument("--base-url", default=None,
                        help="the local OpenAI-compatible server URL (provider local)")
    parser.add_argument("--approve", choices=[p.value for p in (
        ApprovePolicy.READ, ApprovePolicy.MUTATE, ApprovePolicy.DENY)], default="read",
        help="what runs without asking: read (default), mutate (non-destructive) or deny")
    parser.add_argument("--budget", type=_non_negative, default=None, metavar="CREDITS",
                        help="credit budget for this turn (1 credit = 1/10,000 USD)")
    parser.add_argument("--max-iterations", type=_positive, default=None, metavar="N",
                        help="most provider requests in this turn")
    parser.add_argument("--write", action="store_true",
                        help="save the changed document back to FILE (atomically)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def open_gov(*, recover: bool = True) -> Governance | None:
    """Open governance for a command, or print why the database cannot be used (→ None).

    `recover` marks runs a crashed process left mid-step as interrupted; read-only commands
    pass False so they do not append to what they inspect.
    """
    from stockade.governance.session import open_governance

    try:
        return open_governance(recover=recover)
    except StoreError as exc:
        print_error(str(exc))
    except sqlite3.DatabaseError as exc:
        print_error(str(as_store_error(exc, database_path())))
    return None


def make_provider(provider_name: str, model: str, base_url: str | None,
                  document_session: DocumentSession) -> Any:
    from stockade.providers.factory import create_provider

    try:
        return create_provider(provider_name, model=model, base_url=base_url,
                               document_source=lambda: document_session.document)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def save_document(document: ThreatModel, path: str) -> None:
    from stockade.thf.writer import save

    save(document, path)


def settle_headless(session: AssistantSession, *, original: ThreatModel, write: bool,
                    state_phase: TurnPhase,
                    display: str | None = None) -> tuple[TurnSummary, ExitCode]:
    """Park a waiting turn, or write back a settled one; return the summary and exit code."""
    live = session.document_session.document
    changed = document_digest(live) != document_digest(original)
    written = False
    if state_phase is TurnPhase.AWAITING_APPROVAL:
        base = original
        if write and changed:
            # Committed work is saved now, so the parked run's base is the file as written.
            # If the save fails the file is untouched and the run parks against it, so the
            # pending decisions are not lost either.
            written = _save_or_report(live, session.document_path)
            if written:
                base = live
        try:
            session.park(base_document=base, write_back=write)
        except SealError as exc:
            session.gov.runs.finish(session.run_id, outcome="failed", reason="park_unavailable")
            print_error(f"the run could not be parked: {exc}")
            return session.summary(document_written=written, display_path=display), ExitCode.FAILED
        return session.summary(document_written=written, display_path=display), ExitCode.PARKED
    save_failed = False
    if write and changed:
        written = _save_or_report(live, session.document_path)
        save_failed = not written
    summary = session.summary(document_written=written, display_path=display)
    ok = summary.outcome in ("completed", "bounded") and not save_failed
    return summary, ExitCode.OK if ok else ExitCode.FAILED


def _save_or_report(document: ThreatModel, path: str) -> bool:
    """Save atomically; on failure say why in one line (the file on disk is untouched)."""
    from stockade.thf.errors import SaveError

    try:
        save_document(document, path)
    except SaveError as exc:
        print_error(f"the changes could not be written, the file was left as it was: {exc}")
        return False
    return True


def print_summary(summary: TurnSummary, as_json: bool) -> None:
    if as_json:
        print_json(summary.to_json())
        return
    line = f"run {summary.run_id}: {summary.outcome}"
    if summary.reason and summary.outcome != "parked":
        line += f" ({summary.reason})"
    print(line)
    if summary.text:
        print(summary.text)
    if summary.notice and summary.outcome != "completed":
        print(summary.notice)
    if summary.error:
        print(summary.error)
    for call in summary.calls:
        denial = f", {call['denial']}" if call["denial"] else ""
        print(f"  call {call['id']}: {call['tool']} {call['status']}{denial}")
    print(f"credits spent: {summary.credits_spent} (tokens in {summary.usage['input_tokens']}, "
          f"out {summary.usage['output_tokens']})")
    if summary.document["written"]:
        print(f"saved {summary.document['path']}")
    if summary.outcome == "parked":
        print(f"waiting for a decision on {len(summary.pending)} call(s):")
        for call in summary.pending:
            mark = " [destructive]" if call["destructive"] else ""
            print(f"  {call['id']}: {call['summary']}{mark}")
        print(f"decide with 'stockade runs approve|deny {summary.run_id} CALL --actor NAME', "
              f"then 'stockade runs resume {summary.run_id}'")


def run(args: argparse.Namespace) -> int:
    path = existing_files([args.file], "assist")[0]
    loaded = read_settings()
    if loaded.problem:
        print_error(loaded.problem)
    settings = loaded.settings
    document = load_document(path)
    if isinstance(document, LoadFailure):
        print_error(f"{path}: {document.message}")
        return ExitCode.FAILED
    provider_name = args.provider or settings.provider
    model = args.model or settings.model_for(provider_name)
    base_url = args.base_url or (settings.local_base_url if provider_name == "local" else None)
    limits = settings.turn_limits()
    if args.max_iterations is not None:
        from dataclasses import replace

        limits = replace(limits, max_iterations=args.max_iterations)
    budgets = settings.credits.budgets(per_turn=args.budget)
    gov = open_gov()
    if gov is None:
        return ExitCode.FAILED
    try:
        document_session = DocumentSession(document)
        provider = make_provider(provider_name, model, base_url, document_session)
        try:
            session = AssistantSession.create(
                gov, document_session=document_session, document_path=str(path.resolve()),
                provider=provider, provider_name=provider_name, model=model, limits=limits,
                budgets=budgets, guard_policy=GuardPolicy(settings.guard_policy),
                approve=ApprovePolicy(args.approve), base_url=base_url)
        except PriceBookError as exc:
            raise UsageError(str(exc)) from None
        state = asyncio.run(session.start(args.prompt))
        summary, code = settle_headless(session, original=document, write=args.write,
                                        state_phase=state.phase, display=display_path(path))
        print_summary(summary, args.json)
        if session.audit_error is not None or session.runner.audit_error is not None:
            print_error("the audit trail could not record the end of this run")
            return ExitCode.FAILED
        return code
    except StoreError as exc:
        print_error(str(exc))
        return ExitCode.FAILED
    except sqlite3.DatabaseError as exc:
        print_error(str(as_store_error(exc, gov.db.path)))
        return ExitCode.FAILED
    finally:
        gov.close()
        sys.stdout.flush()
