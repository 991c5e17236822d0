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
import sys
from typing import Any

from stockade.assistant.config import ConfigError, TurnConfig, TurnOverrides
from stockade.assistant.errors import (
    REFUSALS,
    ParkUnavailable,
    PriceBookError,
    SealError,
    failure_text,
)
from stockade.assistant.policy import HEADLESS_POLICIES, ApprovePolicy
from stockade.assistant.service import AssistantService
from stockade.assistant.summary import RunOutcome, TurnSummary
from stockade.assistant.turn import Turn
from stockade.cli.common import (
    ExitCode,
    LoadFailure,
    UsageError,
    display_path,
    existing_files,
    load_document,
    print_error,
    print_json,
    say,
    with_passphrase,
)
from stockade.loop.history import DocumentSession
from stockade.loop.reasons import SettleReason
from stockade.protocol.provider_ids import USER_PROVIDERS
from stockade.settings import Settings, read_settings


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


def add_base_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url", default=None, metavar="URL",
        help="the provider's endpoint for this run (anthropic, openai, local): https://, or "
             "http:// only to this machine; default: settings, ANTHROPIC_BASE_URL / "
             "OPENAI_BASE_URL, else the official endpoint")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "assist",
        help="run one governed assistant turn on a .thf file, headless",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("file", metavar="FILE", help="the .thf threat model to work on")
    parser.add_argument("--prompt", required=True, help="what to ask the assistant")
    parser.add_argument("--provider", choices=[p.value for p in USER_PROVIDERS], default=None,
                        help="the provider (default: from settings)")
    parser.add_argument("--model", default=None, help="the model (default: from settings)")
    add_base_url_argument(parser)
    parser.add_argument("--approve", choices=[p.value for p in HEADLESS_POLICIES],
                        default=ApprovePolicy.READ.value,
                        help="what runs without asking: read (default), mutate (non-destructive) "
                             "or deny")
    parser.add_argument("--budget", type=_positive, default=None, metavar="CREDITS",
                        help="credit budget for this turn (1 credit = 1/10,000 USD)")
    parser.add_argument("--max-iterations", type=_positive, default=None, metavar="N",
                        help="most provider requests in this turn")
    parser.add_argument("--write", action="store_true",
                        help="save the changed document back to FILE (atomically)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def load_settings_for_command() -> Settings:
    """Settings for a headless command; a problem with the file is said, defaults are used."""
    loaded = read_settings()
    if loaded.problem:
        print_error(loaded.problem)
    return loaded.settings


def run(args: argparse.Namespace) -> int:
    path = existing_files([args.file], "assist")[0]
    settings = load_settings_for_command()
    document = load_document(path)
    if isinstance(document, LoadFailure):
        print_error(f"{path}: {document.message}")
        return ExitCode.FAILED
    try:
        config = TurnConfig.from_settings(settings, TurnOverrides(
            provider=args.provider, model=args.model, base_url=args.base_url,
            budget=args.budget, max_iterations=args.max_iterations,
            approve=ApprovePolicy(args.approve)))
    except ConfigError as exc:
        raise UsageError(f"assist: {exc}") from None
    return asyncio.run(_assist(args, config, document, str(path.resolve()), display_path(path)))


async def _assist(args: argparse.Namespace, config: TurnConfig, document: Any, path: str,
                  shown: str) -> int:
    service = AssistantService()
    try:
        await service.recover_interrupted(load_settings_for_command())
        try:
            turn = await service.start_turn(config, DocumentSession(document), document_path=path,
                                            prompt=args.prompt, write_back=args.write)
        except PriceBookError as exc:
            raise UsageError(str(exc)) from None
        summary, code = await conclude(service, turn, display=shown)
        print_summary(summary, args.json)
        if turn.audit_error is not None or turn.runner.audit_error is not None:
            print_error("the audit trail could not record the end of this run")
            return ExitCode.FAILED
        return code
    except REFUSALS as exc:
        print_error(failure_text(exc))
        return ExitCode.FAILED
    finally:
        service.close()
        sys.stdout.flush()


async def conclude(service: AssistantService, turn: Turn, *,
                   display: str | None = None) -> tuple[TurnSummary, ExitCode]:
    """A headless turn at rest: write back what it changed (with `--write`), park it if it
    waits for decisions; return its summary and the exit code."""
    written = save_failed = False
    if turn.write_back and turn.changed:
        # Committed work is saved before parking, so the parked run's base is the file as
        # written. A save that fails leaves the file untouched and the run parks against it,
        # so the pending decisions are not lost either.
        result = await service.write_back(turn)
        written, save_failed = result.written, not result.written
        if result.conflict_path is not None:
            print_error(f"{result.path} changed while the turn ran, so it was not overwritten; "
                        f"the turn's document was saved as {result.conflict_path}")
        elif result.error is not None:
            print_error(f"the changes could not be written, the file was left as it was: "
                        f"{result.error}")
    if turn.waiting:
        try:
            await with_passphrase(lambda passphrase: service.park(turn, passphrase=passphrase),
                                  confirm=True)
        except (ParkUnavailable, SealError) as exc:
            await service.finish_unparked(turn, SettleReason.PARK_UNAVAILABLE)
            print_error(f"the run could not be parked: {exc}")
            return await turn.summary(document_written=written, display_path=display), \
                ExitCode.FAILED
        return await turn.summary(document_written=written, display_path=display), \
            ExitCode.PARKED
    await turn.finish()
    summary = await turn.summary(document_written=written, display_path=display)
    ok = summary.outcome.succeeded and not save_failed
    return summary, ExitCode.OK if ok else ExitCode.FAILED


def print_summary(summary: TurnSummary, as_json: bool) -> None:
    if as_json:
        print_json(summary.to_json())
        return
    line = f"run {summary.run_id}: {summary.outcome.value}"
    if summary.reason and summary.outcome is not RunOutcome.PARKED:
        line += f" ({summary.reason})"
    say(line)
    if summary.text:
        say(summary.text)
    if summary.notice and summary.outcome is not RunOutcome.COMPLETED:
        say(summary.notice)
    if summary.error:
        say(summary.error)
    for call in summary.calls:
        denial = f", {call.denial}" if call.denial else ""
        say(f"  call {call.id}: {call.tool} {call.status.value}{denial}")
    say(f"credits spent: {summary.credits_spent} (tokens in {summary.input_tokens}, "
        f"out {summary.output_tokens})")
    if summary.credits_over_reservation:
        say(f"warning: {summary.credits_over_reservation} of those credits are above what was "
            "reserved; the provider reported more usage than a request could cost (see "
            f"'stockade audit export {summary.run_id}')")
    if summary.document_written:
        say(f"saved {summary.document_path}")
    if summary.outcome is RunOutcome.PARKED:
        say(f"waiting for a decision on {len(summary.pending)} call(s):")
        for waiting in summary.pending:
            mark = " [destructive]" if waiting.destructive else ""
            say(f"  {waiting.id}: {waiting.summary}{mark}")
        say(f"decide with 'stockade runs approve|deny {summary.run_id} CALL --actor NAME', "
            f"then 'stockade runs resume {summary.run_id}'"
            + ("" if summary.document_written else " (add --write to save the changes)"))
