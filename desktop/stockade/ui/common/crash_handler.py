"""Unexpected exceptions: written in full to the log file, shown to the user as one plain line."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType

from stockade.paths import data_dir

log = logging.getLogger("stockade.ui")

UNEXPECTED_MESSAGE = (
    "Something went wrong inside Stockade. Your document is still open and nothing was lost; "
    "the details were written to the log file."
)

Notifier = Callable[[str], None]
_notifier: Notifier | None = None
_installed_handler: logging.Handler | None = None


def log_file_path() -> Path:
    return data_dir() / "logs" / "stockade.log"


def install_log_file() -> Path:
    """Send Stockade's log records to `logs/stockade.log` in the data folder (once)."""
    global _installed_handler
    path = log_file_path()
    if _installed_handler is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(logging.INFO)
        root = logging.getLogger()
        root.addHandler(handler)
        if root.level > logging.INFO or root.level == logging.NOTSET:
            root.setLevel(logging.INFO)
        _installed_handler = handler
    return path


def remove_log_file() -> None:
    """Stop writing the log file (tests; the app keeps it for its whole life)."""
    global _installed_handler
    if _installed_handler is not None:
        logging.getLogger().removeHandler(_installed_handler)
        _installed_handler.close()
        _installed_handler = None


def set_notifier(notifier: Notifier | None) -> None:
    """Where the one-line message goes (the main window's error box)."""
    global _notifier
    _notifier = notifier


def report_unexpected(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    """Log an unexpected exception with its traceback and tell the user in plain words."""
    log.error("unexpected %s", exc_type.__name__, exc_info=(exc_type, exc, tb))
    if _notifier is not None:
        try:
            _notifier(UNEXPECTED_MESSAGE)
        except Exception:  # the notice itself failing must not recurse into this hook
            log.error("could not show the unexpected-error notice", exc_info=True)


def report_exception(exc: BaseException) -> None:
    report_unexpected(type(exc), exc, exc.__traceback__)


def install_exception_hook() -> None:
    """Route uncaught exceptions (Qt slots, threads) to `report_unexpected` instead of stderr."""
    sys.excepthook = report_unexpected

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            report_unexpected(args.exc_type, args.exc_value, args.exc_traceback)

    threading.excepthook = thread_hook
