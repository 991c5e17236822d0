"""The `stockade` entry point: dispatches to subcommands, or opens the desktop app."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from stockade.cli.common import CliArgumentParser, ExitCode, UsageError, print_error

COMMANDS: tuple[str, ...] = (
    "validate",
    "fmt",
    "report",
    "diagram",
    "import",
    "export",
    "keys",
    "assist",
    "runs",
    "audit",
)
"""Subcommands, each a module `stockade.cli.<module>` with `add_parser(subparsers)`."""

COMMAND_MODULES: dict[str, str] = {"import": "import_model", "export": "export_model"}
"""Commands whose module name differs from the command (`import` is a Python keyword)."""

APP_TABS: tuple[str, ...] = ("tree", "diagram", "summary", "chat", "authoring")

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


def _load_command_modules() -> tuple[dict[str, ModuleType], set[str]]:
    """Import every subcommand module in this build; also name the ones that are missing."""
    loaded: dict[str, ModuleType] = {}
    missing: set[str] = set()
    for name in COMMANDS:
        module = _import_command(name)
        if module is None:
            missing.add(name)
        else:
            loaded[name] = module
    return loaded, missing


def build_parser(modules: dict[str, ModuleType]) -> argparse.ArgumentParser:
    """The subcommand parser: one sub-parser per available command module."""
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
    for module in modules.values():
        module.add_parser(subparsers)
    return parser


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
        modules, _missing = _load_command_modules()
        build_parser(modules).parse_args(argv)  # prints the help and exits 0
        return ExitCode.OK
    return _run_app(argv)


def _log_internal_error(exc: BaseException) -> Path | None:
    """Write the traceback to a log file in the data folder; return where it went."""
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
