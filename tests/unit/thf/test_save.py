"""Atomic save: the file is replaced whole or not at all, with clear errors."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from stockade.thf import SaveError, read_file, save, to_yaml
from stockade.thf import writer as writer_module
from tests.unit.thf.support import element, fixture_path, model_of


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty folder of our own (tmp_path also holds the isolated data folder)."""
    path = tmp_path / "models"
    path.mkdir()
    return path


def test_save_writes_the_canonical_text(folder: Path) -> None:
    model = read_file(fixture_path("v1.0-canonical-full.thf"))
    target = folder / "out.thf"
    save(model, target)
    assert target.read_text() == to_yaml(model)
    assert read_file(target) == model
    assert [p.name for p in folder.iterdir()] == ["out.thf"]


def test_save_keeps_the_original_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "m.thf"
    target.write_text("old")
    target.chmod(0o640)
    save(model_of(), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_new_file_gets_ordinary_permissions_not_temp_file_ones(tmp_path: Path) -> None:
    target = tmp_path / "new.thf"
    save(model_of(), target)
    assert stat.S_IMODE(target.stat().st_mode) & 0o044  # readable by others per umask


def test_failure_mid_write_leaves_the_original_intact_and_no_temp_file(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = folder / "m.thf"
    target.write_text("original content")
    calls = {"n": 0}
    real_write = os.write

    def failing_write(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:10])  # a partial write first
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module.os, "write", failing_write)
    with pytest.raises(SaveError) as caught:
        save(model_of(elements=[element("a")]), target)
    assert target.read_text() == "original content"
    assert [p.name for p in folder.iterdir()] == ["m.thf"]
    assert "disk is full" in str(caught.value)
    assert caught.value.reason == "disk_full"
    assert str(folder) not in str(caught.value)


def test_failure_at_rename_leaves_the_original_intact(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = folder / "m.thf"
    target.write_text("original content")

    def failing_replace(src: str, dst: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writer_module.os, "replace", failing_replace)
    with pytest.raises(SaveError) as caught:
        save(model_of(), target)
    assert target.read_text() == "original content"
    assert [p.name for p in folder.iterdir()] == ["m.thf"]
    assert "unchanged" in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_read_only_folder_is_a_save_error(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "m.thf"
    target.write_text("original")
    folder.chmod(0o500)
    try:
        with pytest.raises(SaveError) as caught:
            save(model_of(), target)
        assert "read-only" in str(caught.value)
        assert target.read_text() == "original"
    finally:
        folder.chmod(0o700)


def test_read_only_folder_error_reported_by_the_system_is_a_save_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs everywhere (also as root): the system's refusal to create the temp file.
    def refusing_mkstemp(**_: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(writer_module.tempfile, "mkstemp", refusing_mkstemp)
    with pytest.raises(SaveError) as caught:
        save(model_of(), tmp_path / "m.thf")
    assert "read-only" in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_missing_folder_is_a_save_error(tmp_path: Path) -> None:
    with pytest.raises(SaveError) as caught:
        save(model_of(), tmp_path / "absent" / "m.thf")
    assert "folder does not exist" in str(caught.value)


def test_text_that_is_not_valid_unicode_is_a_save_error(folder: Path) -> None:
    model = model_of(elements=[element("a", name="bad \ud800 text")])
    with pytest.raises(SaveError) as caught:
        save(model, folder / "m.thf")
    assert "not valid Unicode" in str(caught.value)
    assert list(folder.iterdir()) == []


def test_a_save_removes_temp_files_an_interrupted_earlier_save_left(tmp_path: Path) -> None:
    import os
    import time

    from stockade.thf.writer import STALE_TEMP_SECONDS

    target = tmp_path / "model.thf"
    model = read_file(fixture_path("v1.0-minimal.thf"))
    save(model, target)
    stale = tmp_path / ".model.thf.abc123.tmp"
    fresh = tmp_path / ".model.thf.def456.tmp"  # could be another save still in progress
    other = tmp_path / ".other.thf.abc123.tmp"
    for leftover in (stale, fresh, other):
        leftover.write_text("partial")
    old = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    save(model, target)
    assert not stale.exists()
    assert fresh.exists() and other.exists()
    assert read_file(target) == model
