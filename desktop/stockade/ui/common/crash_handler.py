"""Unexpected problems: Python exceptions, unhandled asyncio errors, Qt's own warnings and native
crashes all end up in the log folder; the user is told in one plain line."""

from __future__ import annotations

import asyncio
import atexit
import datetime as _dt
import faulthandler
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from stockade import diagnostics

log = logging.getLogger("stockade.ui")
qt_log = logging.getLogger("stockade.qt")

UNEXPECTED_MESSAGE = (
    "Something went wrong inside Stockade. Your document is still open and nothing was lost; "
    "the details were written to the log file."
)
EMPTY_TRACE_MAX_AGE_S = 7 * 24 * 3600
"""Empty trace files of runs that ended without cleaning up (killed) go after a week; a younger
one may still belong to a running process, whose trace would otherwise vanish with it."""
MAX_NATIVE_CRASH_TRACES = 10

Notifier = Callable[[str], None]
_notifier: Notifier | None = None
_installed_handler: logging.Handler | None = None
_native_trace: IO[str] | None = None


def log_file_path() -> Path:
    return diagnostics.log_file_path()


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


def install_native_crash_log() -> Path:
    """Have `faulthandler` write a native crash (segfault, abort, …) trace into the log folder.

    Each run gets its own file, opened now because nothing can be opened inside a crashing
    process; a run that ends normally removes its file again, so what stays is crashes only.
    """
    global _native_trace
    if _native_trace is not None:
        return Path(_native_trace.name)
    path = diagnostics.native_crash_path(os.getpid(), _dt.datetime.now(_dt.UTC))
    path.parent.mkdir(parents=True, exist_ok=True)
    _prune_native_traces()
    _native_trace = path.open("w", encoding="utf-8")
    faulthandler.enable(file=_native_trace, all_threads=True)
    atexit.register(_close_native_crash_log)
    return path


def _close_native_crash_log() -> None:
    global _native_trace
    handle, _native_trace = _native_trace, None
    if handle is None:
        return
    faulthandler.disable()
    handle.close()
    trace = Path(handle.name)
    try:
        if trace.stat().st_size == 0:
            trace.unlink()
    except OSError:
        pass


def _prune_native_traces() -> None:
    """Keep the newest traces of earlier crashes; drop week-old empty files of killed runs."""
    for old in diagnostics.native_crash_traces()[MAX_NATIVE_CRASH_TRACES:]:
        old.unlink(missing_ok=True)
    cutoff = time.time() - EMPTY_TRACE_MAX_AGE_S
    for candidate in diagnostics.log_folder().glob(f"{diagnostics.NATIVE_CRASH_PREFIX}*.log"):
        try:
            info = candidate.stat()
            if info.st_size == 0 and info.st_mtime < cutoff:
                candidate.unlink()
        except OSError:
            continue


def install_qt_message_handler() -> object:
    """Route Qt's own debug/info/warning/critical messages into the log instead of stderr.

    Returns the handler it replaced (None for Qt's default), so a test can put it back.
    """
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    levels = {
        QtMsgType.QtDebugMsg: logging.DEBUG,
        QtMsgType.QtInfoMsg: logging.INFO,
        QtMsgType.QtWarningMsg: logging.WARNING,
        QtMsgType.QtCriticalMsg: logging.ERROR,
        QtMsgType.QtFatalMsg: logging.CRITICAL,
    }

    def on_qt_message(kind: QtMsgType, context: Any, message: str) -> None:
        # Called from C++ on any thread; an exception escaping here would abort the app.
        try:
            category = getattr(context, "category", None)
            prefix = f"[{category}] " if category and category != "default" else ""
            qt_log.log(levels.get(kind, logging.WARNING), "%s%s", prefix, message)
            if kind == QtMsgType.QtFatalMsg:
                # Qt aborts right after this returns: get the line to disk first.
                for handler in logging.getLogger().handlers:
                    handler.flush()
        except Exception:
            pass

    previous: object = qInstallMessageHandler(on_qt_message)
    return previous


def install_asyncio_handler(loop: asyncio.AbstractEventLoop) -> None:
    """Unhandled errors of tasks and callbacks on `loop` (the qasync loop) go to the log, and an
    exception among them reaches the user like any other unexpected exception."""

    def on_asyncio_error(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "unhandled error in an asyncio callback")
        exc = context.get("exception")
        if isinstance(exc, BaseException):
            report_unexpected(type(exc), exc, exc.__traceback__, where=message)
            return
        source = context.get("task") or context.get("future") or context.get("handle")
        log.error("asyncio: %s%s", message, f" ({source!r})" if source is not None else "")

    loop.set_exception_handler(on_asyncio_error)


def set_notifier(notifier: Notifier | None) -> None:
    """Where the one-line message goes (the main window's crash dialog)."""
    global _notifier
    _notifier = notifier


def report_unexpected(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None,
    where: str | None = None,
) -> None:
    """Log an unexpected exception with its traceback and tell the user in plain words."""
    log.error("unexpected %s%s", exc_type.__name__, f" ({where})" if where else "",
              exc_info=(exc_type, exc, tb))
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
