"""The Qt-free part of Help → About and Copy diagnostics: facts, settings, the masked log tail."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pytest

from stockade import __version__, diagnostics
from stockade.protocol.errors import REDACTED
from stockade.settings import Settings, save_settings

ANTHROPIC_KEY = "sk-ant-api03-" + "Abc123XyZ" * 6
OPENAI_KEY = "sk-proj-" + "q1W2e3R4t5" * 5


def _write_log(lines: list[str]) -> Path:
    path = diagnostics.log_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_log_tail_is_the_last_200_lines_with_keys_masked() -> None:
    lines = [f"2026-12-01 10:00:{i % 60:02d} INFO stockade.ui: line {i}" for i in range(5000)]
    lines[4990] = f"2026-12-01 10:00:00 ERROR stockade.providers: rejected key {ANTHROPIC_KEY}"
    lines[4995] = f"Authorization: Bearer {OPENAI_KEY}"
    path = _write_log(lines)

    tail = diagnostics.log_tail(path)

    assert len(tail) == 200
    assert tail[0].endswith("line 4800") and tail[-1].endswith("line 4999")
    joined = "\n".join(tail)
    assert ANTHROPIC_KEY not in joined and OPENAI_KEY not in joined
    assert "sk-ant" not in joined
    assert joined.count(REDACTED) == 2


def test_log_tail_of_a_missing_log_is_empty_and_a_huge_line_is_cut(tmp_path: Path) -> None:
    assert diagnostics.log_tail(tmp_path / "nope.log") == []
    path = _write_log(["short", "x" * 100_000])
    tail = diagnostics.log_tail(path)
    assert tail[0] == "short"
    assert len(tail[1]) == diagnostics.MAX_LOG_LINE_CHARS + 1 and tail[1].endswith("…")


def test_settings_in_the_report_name_no_recent_file_and_no_author(stockade_home: Path) -> None:
    settings = Settings(provider="anthropic", author_name="Dana Analyst")
    for path in ("/home/dana/secret-project/a.thf", "/home/dana/b.thf"):
        settings = settings.with_recent_file(path)
    save_settings(settings)

    dumped = diagnostics.settings_without_secrets()

    assert dumped["provider"] == "anthropic"
    assert dumped["recent_files"] == "2 file(s), not listed"
    assert dumped["author_name"] == "(set, not shown)"
    report = diagnostics.diagnostics_report({"Qt": "6.x"})
    assert "secret-project" not in report and "Dana Analyst" not in report
    assert '"provider": "anthropic"' in report


def test_report_masks_keys_wherever_they_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "postgresql://team:hunter2@db.internal/stockade")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    _write_log([f"INFO stockade.cli: pasted api_key={OPENAI_KEY} into a prompt"])
    # A key pasted into a settings field by hand is masked too.
    save_settings(Settings(author_name=OPENAI_KEY))

    report = diagnostics.diagnostics_report({"Qt": "6.11.3", "PySide6": "6.11.3"})

    assert ANTHROPIC_KEY not in report and OPENAI_KEY not in report
    assert "hunter2" not in report and "db.internal" not in report
    assert "ANTHROPIC_API_KEY is set (value not shown)" in report
    assert "STOCKADE_DATABASE_URL is set (value not shown)" in report
    assert "QT_QPA_PLATFORM=offscreen" in report
    assert f"api_key={REDACTED}" in report


def test_report_names_versions_folders_store_and_log(stockade_home: Path) -> None:
    _write_log(["INFO stockade.ui: started"])
    now = _dt.datetime(2026, 12, 1, 9, 30, tzinfo=_dt.UTC)

    report = diagnostics.diagnostics_report({"Qt": "6.11.3", "PySide6": "6.11.3"}, now=now)

    assert report.startswith("Stockade diagnostics, 2026-12-01T09:30:00Z")
    assert f"stockade: {__version__}" in report
    assert "build: run from source (not a packaged build)" in report
    assert "Qt: 6.11.3" in report and "PySide6: 6.11.3" in report
    assert "document reader: compiled block reader, yaml-rs for other YAML" in report
    assert "audit verify check: compiled (libcrypto's SHA-256)" in report
    assert f"data folder: {stockade_home}" in report
    assert f"store: {stockade_home / 'stockade.db'} (not created yet)" in report
    assert "== log: last 1 line(s), keys masked\nINFO stockade.ui: started" in report
    assert "== native crash traces\nnone" in report


def test_native_crash_traces_are_listed_newest_first_with_the_newest_trace(
        stockade_home: Path) -> None:
    older = diagnostics.native_crash_path(11, _dt.datetime(2026, 11, 1, tzinfo=_dt.UTC))
    newer = diagnostics.native_crash_path(22, _dt.datetime(2026, 11, 2, tzinfo=_dt.UTC))
    empty = diagnostics.native_crash_path(33, _dt.datetime(2026, 11, 3, tzinfo=_dt.UTC))
    older.parent.mkdir(parents=True, exist_ok=True)
    older.write_text("Fatal Python error: Aborted\n", encoding="utf-8")
    newer.write_text("Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most "
                     "recent call first):\n  File \"x.py\", line 3 in boom\n", encoding="utf-8")
    empty.write_text("", encoding="utf-8")  # a run still going, or one that was killed

    assert diagnostics.native_crash_traces() == [newer, older]
    report = diagnostics.diagnostics_report()
    section = report.split("== native crash traces\n", 1)[1]
    assert section.index(newer.name) < section.index(older.name)
    assert empty.name not in section
    assert "Fatal Python error: Segmentation fault" in section


def test_about_facts_of_a_packaged_build_come_from_its_stamp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stockade_home: Path) -> None:
    resources = tmp_path / "resources"
    resources.mkdir()
    (resources / "BUILD_INFO").write_text(
        "version=0.1.0\nbuilt=2026-12-01T08:00:00Z\ncommit=abc123def456\n"
        "platform=Linux-x86_64\npython=3.11.7\n", encoding="utf-8")
    monkeypatch.setenv("STOCKADE_RESOURCES", str(resources))

    facts = diagnostics.about_facts()

    assert facts.version == "0.1.0"
    assert facts.build == "built 2026-12-01T08:00:00Z, commit abc123def456, Linux-x86_64"
    assert facts.data_folder == stockade_home
    assert facts.store == stockade_home / "stockade.db"
    assert facts.log_folder == stockade_home / "logs"


def test_report_says_when_the_build_has_no_compiled_parts(
    stockade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stockade.governance import chainscan
    from stockade.thf import reader

    monkeypatch.setattr(reader, "_load_block_subset", None)
    monkeypatch.setattr(chainscan, "_Compiled", None)
    report = diagnostics.diagnostics_report()
    assert "document reader: yaml-rs only (this build has no compiled block reader)" in report
    assert "audit verify check: Python only (this build has no compiled verify check)" in report
