"""What Help → About and Copy diagnostics tell: versions, folders, settings, the masked log tail."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stockade import __version__
from stockade.build_info import build_stamp
from stockade.paths import data_dir
from stockade.protocol.errors import mask_keys

LOG_FILE_NAME = "stockade.log"
LOG_TAIL_LINES = 200
MAX_LOG_LINE_CHARS = 2000
"""A single huge record (a logged document, say) must not swamp the report."""
NATIVE_CRASH_PREFIX = "native-crash."
"""Dots, not dashes, between the parts: a name that reads as one long token would be masked."""
NATIVE_CRASH_TRACE_LINES = 80
_TAIL_BLOCK_BYTES = 64 * 1024

# Shown with their value: they describe the display and locale, never an account.
_ENV_SHOWN = (
    "QT_QPA_PLATFORM", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP", "DESKTOP_SESSION",
    "WAYLAND_DISPLAY", "DISPLAY", "LANG", "LC_ALL", "QT_SCALE_FACTOR",
)
# Only whether they are set: keys, endpoints and database addresses may be secret or internal.
_ENV_PRESENCE_PREFIXES = ("STOCKADE_", "ANTHROPIC_", "OPENAI_", "PYTHON_KEYRING_")


def log_folder() -> Path:
    """`logs/` in the data folder: the app log, the command line's log, native crash traces."""
    return data_dir() / "logs"


def log_file_path() -> Path:
    return log_folder() / LOG_FILE_NAME


def native_crash_path(pid: int, started: _dt.datetime) -> Path:
    """Where this process's native crash trace goes (one file per run, so runs never mix)."""
    stamp = started.astimezone(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return log_folder() / f"{NATIVE_CRASH_PREFIX}{stamp}.{pid}.log"


def native_crash_traces() -> list[Path]:
    """Native crash traces left by earlier runs (non-empty files), newest first."""
    folder = log_folder()
    try:
        found = [p for p in folder.glob(f"{NATIVE_CRASH_PREFIX}*.log")
                 if p.is_file() and p.stat().st_size > 0]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name, reverse=True)


@dataclass(frozen=True, slots=True)
class AboutFacts:
    """The facts Help → About shows (the toolkit versions are added by the window)."""

    version: str
    build: str
    """`built …, commit …` for a packaged build; a run-from-source note otherwise."""
    python: str
    platform: str
    data_folder: Path
    store: Path
    """The SQLite database holding the ledger, the audit trail and parked runs."""
    log_folder: Path
    store_description: str = ""
    """The store in use: the SQLite file, or the team's PostgreSQL database (team mode)."""
    team_store: bool = False


def about_facts() -> AboutFacts:
    from stockade.settings import load_settings
    from stockade.store.database import database_path
    from stockade.store.selection import configured_database_url, describe_configured

    database_url = load_settings().database_url
    stamp = build_stamp()
    if stamp is None:
        build = "run from source (not a packaged build)"
    else:
        build = (f"built {stamp.get('built', '?')}, commit {stamp.get('commit', '?')}, "
                 f"{stamp.get('platform', '?')}")
    return AboutFacts(
        version=stamp.get("version", __version__) if stamp else __version__,
        build=build,
        python=f"{platform.python_version()} ({platform.python_implementation()})",
        platform=_platform_name(),
        data_folder=data_dir(),
        store=database_path(),
        log_folder=log_folder(),
        store_description=describe_configured(database_url),
        team_store=configured_database_url(database_url) is not None,
    )


def _reader_line() -> str:
    from stockade.thf.reader import block_reader_available

    if block_reader_available():
        return "compiled block reader, yaml-rs for other YAML"
    return "yaml-rs only (this build has no compiled block reader)"


def _verify_check_line() -> str:
    from stockade.governance.chainscan import compiled_scanner_available

    if compiled_scanner_available():
        return "compiled (libcrypto's SHA-256)"
    return "Python only (this build has no compiled verify check)"


def _platform_name() -> str:
    name = platform.platform()
    if sys.platform.startswith("linux"):
        try:
            pretty = platform.freedesktop_os_release().get("PRETTY_NAME")
        except OSError:
            pretty = None
        if pretty:
            name = f"{pretty}; {name}"
    return name


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last `lines` lines of a log file, key-shaped tokens masked; [] when there is none.

    Reads backwards in blocks, so a full 2 MB log costs a few small reads, not the whole file.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            data = b""
            while end > 0 and data.count(b"\n") <= lines:
                start = max(0, end - _TAIL_BLOCK_BYTES)
                handle.seek(start)
                data = handle.read(end - start) + data
                end = start
    except OSError:
        return []
    text = mask_keys(data.decode("utf-8", errors="replace"))
    tail = text.splitlines()[-lines:] if lines > 0 else []
    return [line if len(line) <= MAX_LOG_LINE_CHARS else line[:MAX_LOG_LINE_CHARS] + "…"
            for line in tail]


def settings_without_secrets() -> dict[str, Any]:
    """The settings file as the app reads it, with personal entries reduced to a count or a flag.

    Settings never hold keys (they live in the keyring); key-shaped text pasted into a field is
    masked anyway when the report is assembled.
    """
    from stockade.settings import read_settings

    loaded = read_settings()
    dumped: dict[str, Any] = loaded.settings.model_dump(mode="json")
    recent = dumped.pop("recent_files", [])
    dumped["recent_files"] = f"{len(recent)} file(s), not listed"
    if "author_name" in dumped:
        dumped["author_name"] = "(set, not shown)" if dumped["author_name"] else "(empty)"
    if loaded.problem:
        dumped["_problem"] = loaded.problem
    return dumped


def _environment() -> list[str]:
    out = [f"{name}={os.environ[name]}" for name in _ENV_SHOWN if name in os.environ]
    present = sorted(name for name in os.environ if name.startswith(_ENV_PRESENCE_PREFIXES))
    out += [f"{name} is set (value not shown)" for name in present]
    return out or ["(none of the variables Stockade reads is set)"]


def _keyring_lines() -> list[str]:
    from stockade.secrets.keystore import KeyStore

    try:
        status = KeyStore().status()
    except Exception as exc:  # a broken keyring is a finding of the report, not a failure of it
        return [f"could not be checked ({type(exc).__name__})"]
    return [f"backend: {status.backend}", f"secure: {'yes' if status.is_secure else 'no'}"]


def _file_line(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return f"{path} (not created yet)"
    return f"{path} ({size:,} bytes)"


def diagnostics_report(toolkit: Mapping[str, str] | None = None,
                       *, now: _dt.datetime | None = None) -> str:
    """The plain-text report Help → Copy diagnostics puts on the clipboard.

    `toolkit` adds versions only the UI knows (Qt, PySide6). Blocking (reads the log, asks the
    keyring backend): run it off the UI thread.
    """
    facts = about_facts()
    when = (now or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    sections: list[tuple[str, list[str]]] = []
    versions = [f"stockade: {facts.version}", f"build: {facts.build}",
                f"python: {facts.python}", f"platform: {facts.platform}",
                f"executable: {sys.executable}{' (packaged)' if getattr(sys, 'frozen', False) else ''}",
                f"document reader: {_reader_line()}",
                f"audit verify check: {_verify_check_line()}"]
    versions += [f"{name}: {value}" for name, value in (toolkit or {}).items()]
    sections.append(("versions", versions))
    sections.append(("folders", [f"data folder: {facts.data_folder}",
                                 f"store: {facts.store_description if facts.team_store else _file_line(facts.store)}",
                                 f"log: {_file_line(log_file_path())}"]))
    sections.append(("keyring", _keyring_lines()))
    try:
        settings_text = json.dumps(settings_without_secrets(), indent=2, sort_keys=True)
    except Exception as exc:  # the report must still be copyable when settings are broken
        settings_text = f"could not be read ({type(exc).__name__})"
    sections.append(("settings (no keys; recent files and author name not shown)",
                     settings_text.splitlines()))
    sections.append(("environment", _environment()))
    traces = native_crash_traces()
    crash_lines = [_file_line(p) for p in traces] or ["none"]
    if traces:
        crash_lines += ["", f"newest trace ({traces[0].name}), last lines:",
                        *log_tail(traces[0], NATIVE_CRASH_TRACE_LINES)]
    sections.append(("native crash traces", crash_lines))
    tail = log_tail(log_file_path())
    sections.append((f"log: last {len(tail)} line(s), keys masked", tail or ["(empty)"]))

    out = [f"Stockade diagnostics, {when}"]
    for title, lines in sections:
        out += ["", f"== {title}", *lines]
    # Settings, environment names and crash traces pass through the same mask as the log.
    return mask_keys("\n".join(out)) + "\n"
