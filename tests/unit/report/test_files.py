"""Writing reports: suffix picks the format; writes are atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.report.files import (
    ReportFormat,
    atomic_write_text,
    format_for_path,
    render_report,
    write_report,
)
from stockade.thf.model import ThreatModel
from stockade.thf.reader import read_file
from tests.conftest import THF_FIXTURES

VALID_FIXTURES = sorted(
    p for p in THF_FIXTURES.rglob("*.thf") if "invalid" not in p.relative_to(THF_FIXTURES).parts
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("r.html", ReportFormat.HTML),
        ("R.HTML", ReportFormat.HTML),
        ("r.csv", ReportFormat.CSV),
        ("r.json", ReportFormat.JSON),
        ("r.md", ReportFormat.MARKDOWN),
        ("r.PDF", ReportFormat.PDF),
        ("r.htm", None),
        ("report", None),
    ],
)
def test_format_follows_the_suffix(name: str, expected: ReportFormat | None) -> None:
    assert format_for_path(Path(name)) is expected


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty folder of its own (tmp_path also holds the test's data folder)."""
    path = tmp_path / "out"
    path.mkdir()
    return path


def test_write_report_creates_the_file_and_leaves_no_temporary(
    model: ThreatModel, folder: Path
) -> None:
    out = folder / "report.csv"
    assert write_report(model, out) is ReportFormat.CSV
    assert out.read_bytes().startswith(b"id,title,category")
    assert list(folder.iterdir()) == [out]


def test_unknown_suffix_is_refused_before_anything_is_written(
    model: ThreatModel, folder: Path
) -> None:
    with pytest.raises(ValueError, match=r"\.txt"):
        write_report(model, folder / "report.txt")
    assert list(folder.iterdir()) == []


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = folder / "report.html"
    out.write_text("previous report", encoding="utf-8")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        atomic_write_text(out, "new report")
    assert out.read_text(encoding="utf-8") == "previous report"
    assert list(folder.iterdir()) == [out]


@pytest.mark.parametrize(
    "path", VALID_FIXTURES, ids=[p.relative_to(THF_FIXTURES).as_posix() for p in VALID_FIXTURES]
)
def test_every_valid_fixture_renders_in_every_format(path: Path) -> None:
    model = read_file(path)
    for fmt in ReportFormat:
        if fmt is ReportFormat.PDF:
            continue  # drawn by Qt (tests/e2e/test_cli_reports.py), not rendered as text
        text = render_report(model, fmt)
        assert text
        if model.metadata.title and fmt is not ReportFormat.CSV:
            assert model.metadata.title in text


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_new_report_follows_the_umask_and_a_rewrite_keeps_the_file_mode(
    model: ThreatModel, folder: Path
) -> None:
    out = folder / "report.html"
    previous = os.umask(0o077)
    try:
        write_report(model, out)
    finally:
        os.umask(previous)
    assert out.stat().st_mode & 0o777 == 0o600
    out.chmod(0o640)
    write_report(model, out)
    assert out.stat().st_mode & 0o777 == 0o640
