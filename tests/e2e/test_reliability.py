"""Reliability pass: kill -9 during a save and during a turn, a damaged database, a full disk.

What governance's own end-to-end tests already show is not repeated here: a kill -9 while a
stream stalls (`test_cli_governance.py::test_kill_9_mid_turn_...`) and one damaged-database
message for `runs list`. This file adds kills at random moments of a whole metered turn with
a tool call and a write-back, every store-opening command against three kinds of damage, the
app starting on a damaged database, and save failures (ENOSPC, EROFS) injected into the real
writer in the CLI and in the app. Root ignores permission bits, so a full or read-only disk is
simulated by patching `os.write`/`os.fsync`/`os.replace` for the target file only.

This file is also the child program of the app checks: `python test_reliability.py app-...`.
"""

from __future__ import annotations

import errno
import json
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import THF_FIXTURES
from tests.e2e.conftest import REPO_ROOT, cli_env, run_cli, run_cli_process, stockade_command
from tests.e2e.test_cli_governance import API_KEY, MODEL, add_threat_call, ledger_balanced
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse

FIXTURE = THF_FIXTURES / "v1.0-canonical-full.thf"
SEED = int(os.environ.get("STOCKADE_RELIABILITY_SEED", "20261130"))
SAVE_KILLS = 10
TURN_KILLS = 3
DAMAGED_DB_MESSAGE = "Move it aside"


def _temp_files(folder: Path, name: str) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(f".{name}.") and
            p.name.endswith(".tmp")}


def _read_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        proc.kill()
        raise AssertionError(f"the child printed nothing within {timeout_s} s")
    return proc.stdout.readline().strip()


# --- (a) kill -9 during save ---------------------------------------------------------------

_SAVER = """
import sys, time
from stockade.thf.writer import save_text
target, old, new = sys.argv[1], open(sys.argv[2], encoding="utf-8").read(), \\
    open(sys.argv[3], encoding="utf-8").read()
started = time.perf_counter()
save_text(new, target)
save_text(old, target)
print(f"{(time.perf_counter() - started) / 2:.4f}", flush=True)
while True:
    save_text(new, target)
    save_text(old, target)
"""


@pytest.fixture
def two_large_documents(tmp_path: Path) -> tuple[Path, Path]:
    """The same large model (about 3 MB) in two versions, as canonical text files."""
    from tools.benchmarks.generate import generate_model

    from stockade.thf.writer import save

    old = generate_model(3000, seed=1)
    new = old.model_copy(update={"threats": old.threats[: len(old.threats) // 2]})
    old_path, new_path = tmp_path / "old.src", tmp_path / "new.src"
    save(old, old_path)
    save(new, new_path)
    return old_path, new_path


def test_kill_9_during_save_leaves_the_old_or_the_new_document_never_a_partial_one(
    tmp_path: Path, two_large_documents: tuple[Path, Path]
) -> None:
    from stockade.thf.reader import read_text

    old_path, new_path = two_large_documents
    old_bytes, new_bytes = old_path.read_bytes(), new_path.read_bytes()
    folder = tmp_path / "saves"
    folder.mkdir()
    target = folder / "model.thf"
    target.write_bytes(old_bytes)
    rng = random.Random(SEED)
    outcomes = {"old": 0, "new": 0}
    mid_write = 0
    for kill in range(SAVE_KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(target), str(old_path), str(new_path)],
            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        save_seconds = float(_read_line(proc, 60))
        if kill % 2:
            # Half the kills wait until a temp file exists, so they land inside the write.
            deadline = time.monotonic() + 10
            while not _temp_files(folder, target.name) and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, save_seconds / 2))
        else:
            time.sleep(rng.uniform(0, 2 * save_seconds))
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()

        on_disk = target.read_bytes()
        assert on_disk in (old_bytes, new_bytes), (
            f"kill {kill} (seed {SEED}): the file is neither version ({len(on_disk)} bytes)"
        )
        outcomes["old" if on_disk == old_bytes else "new"] += 1
        read_text(on_disk)  # and it parses
        strays = _temp_files(folder, target.name)
        assert len(strays) <= 1, f"kill {kill}: more than the interrupted temp file: {strays}"
        mid_write += len(strays)
        for name in strays:  # what a user (or a later save) would clear away
            (folder / name).unlink()
    assert mid_write >= 1, f"no kill landed inside a write (seed {SEED}); the test proved nothing"
    assert set(os.listdir(folder)) == {"model.thf"}


# --- (b) kill -9 during a governed turn --------------------------------------------------------


def _slow_turn_replies() -> list[Reply]:
    """A metered turn: streamed text and an add_threat call, then a streamed answer."""
    first = anthropic_sse(
        text=[f"Looking at part {i} of the model. " for i in range(20)],
        tool_calls=[add_threat_call("toolu_r1", "Replayed session cookie")],
        usage=(900, 120), model=MODEL,
    )
    second = anthropic_sse(text=[f"Done, step {i}. " for i in range(20)], usage=(1100, 60),
                           model=MODEL)
    return [
        Reply.sse(body, splits=range(len(body) // 20, len(body), len(body) // 20), delay_s=0.035)
        for body in (first, second)
    ]


def test_kill_9_at_random_moments_of_a_turn_keeps_the_database_ledger_and_file_consistent(
    tmp_path: Path, stockade_home: Path
) -> None:
    from stockade.thf.reader import read_text

    model_file = tmp_path / "model.thf"
    model_file.write_bytes(FIXTURE.read_bytes())
    original = model_file.read_bytes()
    rng = random.Random(SEED)
    killed_live = 0
    with FakeProviderServer() as server:
        env = {
            "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
            "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": API_KEY,
        }
        for kill in range(TURN_KILLS):
            server.script(_slow_turn_replies())
            seen = len(server.requests)
            proc = subprocess.Popen(
                [*stockade_command(), "assist", str(model_file), "--prompt", "review",
                 "--provider", "anthropic", "--model", MODEL, "--approve", "mutate", "--write"],
                env=cli_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60
            while len(server.requests) == seen and time.monotonic() < deadline:
                time.sleep(0.02)
            assert len(server.requests) > seen, "the CLI never reached the provider"
            # The two streams take about 1.5 s: kill anywhere in them, or just after.
            time.sleep(rng.uniform(0.0, 1.8))
            if proc.poll() is None:
                killed_live += 1
                proc.send_signal(signal.SIGKILL)
            proc.wait(30)

            conn = sqlite3.connect(stockade_home / "stockade.db")
            try:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                conn.close()
            on_disk = model_file.read_bytes()
            read_text(on_disk)  # the write-back is atomic: whatever is there parses
            if on_disk != original:
                assert b"Replayed session cookie" in on_disk
                original = on_disk  # the next turn starts from the saved document

            runs = json.loads(run_cli("runs", "list", "--json", env=env).stdout)  # recovers
            assert {r["status"] for r in runs} <= {"finished", "interrupted"}, runs
            assert ledger_balanced(stockade_home), f"kill {kill}: the ledger does not balance"
    # One verify covers every run's hash chain, the interrupted ones included.
    verify = run_cli("audit", "verify", env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    statuses = [r["status"] for r in runs]
    assert len(statuses) == TURN_KILLS
    # A kill can land after the run is recorded finished, just before the process exits.
    assert 1 <= statuses.count("interrupted") <= killed_live, (
        f"no kill landed mid-turn (seed {SEED}): {statuses}")


# --- (c) a damaged database ------------------------------------------------------------------


def _damage(db: Path, how: str, rng: random.Random) -> None:
    data = db.read_bytes()
    if how == "random_bytes":
        db.write_bytes(rng.randbytes(len(data)))
    elif how == "truncated":
        db.write_bytes(data[: len(data) // 3])
    elif how == "pages_overwritten":  # a valid header, garbage behind it
        db.write_bytes(data[:100] + rng.randbytes(len(data) - 100))
    else:
        raise ValueError(how)


@pytest.fixture(scope="module")
def database_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real database with a finished run in it (offline provider, no network), made once."""
    folder = tmp_path_factory.mktemp("db-template")
    model = folder / "model.thf"
    model.write_bytes(FIXTURE.read_bytes())
    home = folder / "home"
    result = run_cli("assist", model, "--provider", "offline", "--prompt", "go", "--approve",
                     "mutate", env={"STOCKADE_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    db = home / "stockade.db"
    assert db.stat().st_size > 8192
    return db


@pytest.fixture
def used_database(database_template: Path, stockade_home: Path, tmp_path: Path) -> Path:
    """This test's copy of the template database, in its own data folder."""
    (tmp_path / "model.thf").write_bytes(FIXTURE.read_bytes())
    db = stockade_home / "stockade.db"
    db.write_bytes(database_template.read_bytes())
    return db


STORE_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("runs", "list"),
    ("runs", "list", "--json"),
    ("runs", "show", "run-0"),
    ("runs", "approve", "run-0", "call-0", "--actor", "ana"),
    ("runs", "deny", "run-0", "call-0", "--actor", "ana"),
    ("runs", "resume", "run-0"),
    ("audit", "verify"),
    ("audit", "export", "run-0"),
    ("assist", "{model}", "--provider", "offline", "--prompt", "go"),
)
"""Every command that opens the store. A file that is no database at all fails on open, the
same way for each; damage behind a valid header fails later, at whichever page a command
reads, so those cases go through the commands that read the most."""
DEEP_READERS = (STORE_COMMANDS[1], STORE_COMMANDS[2], STORE_COMMANDS[6], STORE_COMMANDS[8])


@pytest.mark.parametrize("how", ["random_bytes", "truncated", "pages_overwritten"])
def test_every_command_that_opens_a_damaged_database_explains_the_way_out(
    how: str, used_database: Path, tmp_path: Path
) -> None:
    _damage(used_database, how, random.Random(SEED))
    damaged = used_database.read_bytes()
    model = str(tmp_path / "model.thf")
    for command in STORE_COMMANDS if how == "random_bytes" else DEEP_READERS:
        args = [model if part == "{model}" else part for part in command]
        result = run_cli(*args)
        shown = f"stockade {' '.join(command)} ({how}): {result.stderr!r}"
        assert result.returncode == 1, shown
        assert DAMAGED_DB_MESSAGE in result.stderr and str(used_database) in result.stderr, shown
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, shown
    assert used_database.read_bytes() == damaged  # nothing "repaired" it behind the user's back

    # The way out works: moved aside, the next command starts a new, empty database.
    used_database.rename(used_database.with_name("stockade.db.broken"))
    fresh = run_cli("runs", "list", "--json")
    assert fresh.returncode == 0 and json.loads(fresh.stdout) == [], fresh.stderr


def test_the_app_starts_on_a_damaged_database_and_says_what_to_do(
    used_database: Path, tmp_path: Path
) -> None:
    _damage(used_database, "random_bytes", random.Random(SEED))
    model = tmp_path / "model.thf"
    shot = tmp_path / "shot.png"
    result = run_cli_process(model, "--screenshot", shot)
    assert result.returncode == 0, result.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in result.stderr

    report = _app_child("app-damaged-db", model)
    assert report["opened"] is True
    assert DAMAGED_DB_MESSAGE in report["assistant_error"], report


# --- (d) a full or read-only disk on save --------------------------------------------------------

# Installed in the child before the CLI runs: the named OS call fails for `.thf` targets only,
# so SQLite, logs and settings still work, as on a disk that fills up at the wrong moment.
_FAILING_DISK = """
import errno, os, sys
failing_call, code = sys.argv.pop(1), getattr(errno, sys.argv.pop(1))
real = {"write": os.write, "fsync": os.fsync, "replace": os.replace}
def _is_thf_fd(fd):
    try:
        return ".thf." in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
def write(fd, data):
    if _is_thf_fd(fd):
        raise OSError(code, os.strerror(code))
    return real["write"](fd, data)
def fsync(fd):
    if _is_thf_fd(fd):
        raise OSError(code, os.strerror(code))
    return real["fsync"](fd)
def replace(src, dst, **kw):
    if str(dst).endswith(".thf"):
        raise OSError(code, os.strerror(code))
    return real["replace"](src, dst, **kw)
setattr(os, failing_call, {"write": write, "fsync": fsync, "replace": replace}[failing_call])
from stockade.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""

DISK_FAILURES = [("write", "ENOSPC"), ("fsync", "ENOSPC"), ("replace", "EROFS")]


def _cli_with_failing_disk(call: str, code: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _FAILING_DISK, call, code, *(os.fspath(a) for a in args)],
        env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.parametrize(("call", "code"), DISK_FAILURES)
def test_fmt_on_a_full_or_read_only_disk_reports_it_and_keeps_the_file(
    call: str, code: str, tmp_path: Path
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    model = folder / "model.thf"
    # Same content, different layout: fmt has to rewrite it.
    model.write_text(FIXTURE.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")
    before = model.read_bytes()
    result = _cli_with_failing_disk(call, code, "fmt", model)
    said = result.stdout + result.stderr  # fmt reports per file on stdout
    assert result.returncode == 1, said
    reason = "disk is full" if code == "ENOSPC" else "read-only"
    assert reason in said and "unchanged" in said, said
    assert "Traceback" not in said and "internal error" not in said
    assert model.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["model.thf"]


def test_assist_write_on_a_full_disk_reports_it_plainly_and_keeps_the_file(
    tmp_path: Path,
) -> None:
    model = tmp_path / "model.thf"
    model.write_bytes(FIXTURE.read_bytes())
    result = _cli_with_failing_disk("fsync", "ENOSPC", "assist", model, "--provider",
                                    "offline", "--prompt", "go", "--approve", "mutate", "--write")
    assert model.read_bytes() == FIXTURE.read_bytes()
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
    assert "disk is full" in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize(("call", "code"), DISK_FAILURES)
def test_app_save_on_a_full_or_read_only_disk_keeps_the_edited_document_open(
    call: str, code: str, tmp_path: Path
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    model = folder / "model.thf"
    model.write_bytes(FIXTURE.read_bytes())
    report = _app_child("app-save", model, call, code)
    assert report["saved"] is False
    assert report["dirty_after_failure"] is True
    assert report["document_kept"] is True
    assert report["file_unchanged"] is True
    assert report["stray_files"] == []
    title, message = report["errors"][0]
    assert "was not saved" in title and "Traceback" not in message
    assert ("disk is full" if code == "ENOSPC" else "read-only") in message
    # The way out: once the disk has room again, the same document saves.
    assert report["saved_after_recovery"] is True and report["dirty_after_recovery"] is False
    assert b"severity: low" in model.read_bytes()


# --- the app child ---------------------------------------------------------------------------


def _app_child(mode: str, *args: str | Path) -> dict[str, Any]:
    env = cli_env({"QT_QPA_PLATFORM": "offscreen"})
    result = subprocess.run(
        [sys.executable, __file__, mode, *(os.fspath(a) for a in args)],
        env=env, capture_output=True, text=True, timeout=120, check=False, cwd=REPO_ROOT,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def _child_main(argv: list[str]) -> None:  # pragma: no cover - runs in a subprocess
    import asyncio

    import qasync
    from PySide6.QtWidgets import QApplication

    from stockade.thf import writer
    from stockade.thf.model import Severity
    from stockade.tools import actions
    from stockade.ui.app import create_main_window

    mode, path = argv[0], Path(argv[1])
    app = QApplication([sys.argv[0]])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = create_main_window(probe_keyring=False)
    errors: list[tuple[str, str]] = []
    window.prompts.show_error = lambda title, text: errors.append((title, text))  # type: ignore[method-assign]
    window.show()

    async def damaged_db() -> dict[str, Any]:
        opened = await window.open_file(path)
        await window.assistant.refresh_parked()
        label = window.assistant.pane.error_label
        return {"opened": opened, "assistant_error": label.text(), "errors": errors}

    async def save_failure(call: str, code: int) -> dict[str, Any]:
        assert await window.open_file(path)
        before = path.read_bytes()
        document = window.open_document.document
        assert document is not None
        edit = actions.update_threat(document, "threat-1", actions.ThreatUpdates(severity=Severity.LOW))
        assert isinstance(edit, actions.ActionResult)
        window.open_document.apply_edit(edit.document, edit.result)
        edited = window.open_document.document

        real = getattr(writer.os, call)

        def failing(*a: Any, **kw: Any) -> Any:
            raise OSError(code, os.strerror(code))

        setattr(writer.os, call, failing)
        try:
            saved = await window.save()
        finally:
            setattr(writer.os, call, real)
        report = {
            "saved": saved,
            "dirty_after_failure": window.open_document.is_dirty,
            "document_kept": window.open_document.document is edited,
            "file_unchanged": path.read_bytes() == before,
            "stray_files": sorted(p.name for p in path.parent.iterdir() if p != path),
            "errors": errors[:],
        }
        report["saved_after_recovery"] = await window.save()
        report["dirty_after_recovery"] = window.open_document.is_dirty
        return report

    with loop:
        if mode == "app-damaged-db":
            report = loop.run_until_complete(damaged_db())
        elif mode == "app-save":
            report = loop.run_until_complete(save_failure(argv[2], getattr(errno, argv[3])))
        else:
            raise SystemExit(f"unknown mode {mode}")
        window._close_approved = True
        window.close()
    print(json.dumps(report))


if __name__ == "__main__":
    _child_main(sys.argv[1:])
