"""The `stockade` entry point: dispatches to subcommands, or opens the desktop app."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from stockade.cli.common import CliArgumentParser, ExitCode, UsageError, print_error

COMMAND_SUMMARIES: dict[str, str] = {
    "validate": "check that .thf files are valid threat models",
    "fmt": "rewrite .thf files in canonical form",
    "report": "write an HTML, PDF or Markdown report or a CSV/JSON export of a .thf file",
    "diagram": "write the data-flow diagram of a .thf file as SVG or PNG",
    "import": "import a TM7, Threat Dragon, OTM or pytm model as a .thf file",
    "export": "export a .thf file as OTM or Threat Dragon JSON",
    "keys": "save, check or remove provider API keys",
    "assist": "run one governed assistant turn on a .thf file, headless",
    "runs": "list, decide and resume parked assistant runs",
    "audit": "verify or export the audit trajectory",
    "team": "set up or inspect a team's shared PostgreSQL database",
}
"""The one-line help of each subcommand, as its module registers it (a test keeps the two the
same). `stockade --help` is built from these, so it imports no subcommand module."""

COMMANDS: tuple[str, ...] = tuple(COMMAND_SUMMARIES)
"""Subcommands, each a module `stockade.cli.<module>` with `add_parser(subparsers)`."""

COMMAND_MODULES: dict[str, str] = {"import": "import_model", "export": "export_model"}
"""Commands whose module name differs from the command (`import` is a Python keyword)."""

APP_TABS: tuple[str, ...] = ("tree", "diagram", "summary", "chat", "chat-edit", "authoring")

_MAX_ERROR_DETAIL = 300
"""UTF-16 units of an unexpected exception's text shown on stderr; the log keeps it all."""


def _import_command(name: str) -> ModuleType | None:
    """Import `stockade.cli.<name>`; None when that module is not in this build.

    A module that exists but fails to import (a missing dependency of its own) is a real
    error and propagates.
    """
    qualified = f"stockade.cli.{COMMAND_MODULES.get(name, name)}"
    try:
        return importlib.import_module(qualified)
    except ModuleNotFoundError as err:
        if err.name != qualified:
            raise
        return None


def _command_available(name: str) -> bool:
    """Whether the command's module is in this build, found without importing it."""
    return importlib.util.find_spec(f"stockade.cli.{COMMAND_MODULES.get(name, name)}") is not None


def build_help_parser() -> argparse.ArgumentParser:
    """The top-level parser for `stockade --help`: each available command with its summary,
    without importing any command module (their imports are most of a cold start)."""
    parser, subparsers = _top_parser()
    for name, summary in COMMAND_SUMMARIES.items():
        if _command_available(name):
            subparsers.add_parser(name, help=summary)
    return parser


def _top_parser() -> tuple[argparse.ArgumentParser, Any]:
    parser = CliArgumentParser(
        prog="stockade",
        usage="stockade [FILE] [--screenshot PNG] [--tab TAB]\n       stockade COMMAND ...",
        description=(
            "Review .thf threat models offline.\n\n"
            "  stockade [FILE]       open the desktop app (optionally on FILE)\n"
            "    --screenshot PNG    render the window offscreen, save it as PNG and exit\n"
            "    --tab TAB           the tab to show: " + ", ".join(APP_TABS) + "\n"
            "  stockade COMMAND ...  run one of the commands below"
        ),
        epilog=(
            "Every command accepts --help. Exit codes: 0 ok, 1 the thing checked failed, "
            "2 usage error, 3 parked (a decision is needed)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", prog="stockade"
    )
    subparsers.required = True
    return parser, subparsers


def build_command_parser(name: str, module: ModuleType) -> argparse.ArgumentParser:
    """The parser of one subcommand, so its errors and help carry `stockade <name>`."""
    subparsers = CliArgumentParser(prog="stockade").add_subparsers(prog="stockade")
    module.add_parser(subparsers)
    parser: argparse.ArgumentParser = subparsers.choices[name]
    return parser


def build_app_parser() -> argparse.ArgumentParser:
    """The parser for app mode: `stockade [FILE] [--screenshot PNG] [--tab TAB]`."""
    parser = CliArgumentParser(
        prog="stockade",
        description="Open the Stockade desktop app, optionally on a .thf file.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="a .thf threat model to open")
    parser.add_argument(
        "--screenshot",
        metavar="PNG",
        help="render the main window offscreen after loading, save it as PNG and exit",
    )
    parser.add_argument(
        "--tab", choices=APP_TABS, default=None, help="the tab to show (default: tree)"
    )
    return parser


def _run_app(argv: list[str]) -> int:
    args = build_app_parser().parse_args(argv)
    try:
        app_module = importlib.import_module("stockade.ui.app")
    except ModuleNotFoundError as err:
        if err.name not in ("stockade.ui.app", "PySide6", "qasync") and not (
            err.name or ""
        ).startswith("PySide6."):
            raise
        print_error(
            "the desktop app is not available in this build "
            f"(missing module {err.name}); the subcommands still work, see 'stockade --help'"
        )
        return ExitCode.FAILED
    result: int = app_module.run_app(args.file, screenshot=args.screenshot, tab=args.tab)
    return int(result)


def _dispatch(argv: list[str]) -> int:
    first = argv[0] if argv else None
    if first in COMMANDS:
        # Only the named command is imported, so `stockade validate` never pays for the
        # provider SDKs that `assist` needs.
        module = _import_command(first)
        if module is None:
            raise UsageError(f"the '{first}' command is not available in this build")
        args = build_command_parser(first, module).parse_args(argv[1:])
        return int(args.func(args))
    if argv in (["--version"], ["-V"]):
        from stockade.build_info import version_line

        print(version_line())
        return ExitCode.OK
    if first in ("-h", "--help"):
        build_help_parser().parse_args(argv)  # prints the help and exits 0
        return ExitCode.OK
    return _run_app(argv)


def _log_internal_error(exc: BaseException) -> Path | None:
    """Write the traceback to a log file in the data folder; return where it went."""
    # Imported here: only a crash needs them, and every start-up would pay for them.
    import datetime as _dt
    import tempfile
    import traceback

    from stockade.protocol.errors import mask_keys

    text = "".join(traceback.format_exception(exc))
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The command line and the exception text may carry a pasted API key; none is logged.
    entry = mask_keys(f"--- {stamp} stockade {' '.join(sys.argv[1:])}\n{text}\n")
    candidates: list[Path] = []
    try:
        from stockade.paths import data_dir

        candidates.append(data_dir() / "logs")
    except Exception:  # a broken data folder must not hide the original error
        pass
    candidates.append(Path(tempfile.gettempdir()) / "stockade-logs")
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            log_file = folder / "cli.log"
            with log_file.open("a", encoding="utf-8") as handle:
                handle.write(entry)
            return log_file
        except OSError:
            continue
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `stockade` command line; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Stockade uses no pydantic plugins; without this, building the first model scans the
    # entry points of every installed distribution for them (about a tenth of a cold start).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        return _dispatch(args)
    except UsageError as err:
        print_error(str(err))
        return ExitCode.USAGE
    except SystemExit as exit_:
        # argparse (help, usage errors) exits this way; keep its code, never a traceback.
        code = exit_.code
        if code is None:
            return ExitCode.OK
        if isinstance(code, int):
            return code
        print_error(str(code))
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`); nothing left to say, and the
        # interpreter's final flush must not complain about the closed pipe either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.OK
    except Exception as exc:
        # Imported only here: every command would otherwise pay for it at start-up.
        from stockade.protocol.errors import cap_utf16, mask_keys

        log_file = _log_internal_error(exc)
        where = f"details in {log_file}" if log_file else "details could not be logged"
        detail = cap_utf16(mask_keys(str(exc)), _MAX_ERROR_DETAIL)
        print_error(f"internal error: {type(exc).__name__}: {detail}; {where}")
        return ExitCode.FAILED


if __name__ == "__main__":
    sys.exit(main())
