"""Saving (round trip, failures keep the document dirty), templates, and closing with changes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.thf.reader import read_file
from stockade.tools import actions
from stockade.ui.common.prompts import UnsavedChoice
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def _edit_something(driver: WindowDriver) -> None:
    result = actions.update_threat(
        driver.document, "threat-1", actions.ThreatUpdates(severity="low")
    )
    assert isinstance(result, actions.ActionResult)
    driver.window.open_document.apply_edit(result.document, result.result)
    assert driver.window.open_document.is_dirty


def test_save_as_writes_a_file_that_reads_back_equal(driver: WindowDriver, tmp_path: Path) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _edit_something(driver)
    target = tmp_path / "saved"  # no suffix: Save As adds .thf
    driver.prompts.save_paths.append(str(target))

    assert driver.run(driver.window.save_as())

    saved = tmp_path / "saved.thf"
    assert read_file(saved) == driver.document
    assert not driver.window.open_document.is_dirty
    assert driver.window.open_document.path == saved
    assert driver.window.windowTitle().startswith("saved.thf — ")
    assert driver.prompts.errors == []


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = False
    probe = folder / ".probe"
    try:
        probe.touch()
    except OSError:
        pass
    else:
        # Permission bits do not stop root; the immutable attribute does.
        probe.unlink()
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("cannot make a read-only folder here")
        immutable = True
    try:
        yield folder
    finally:
        if immutable:
            subprocess.run([shutil.which("chattr") or "chattr", "-i", str(folder)], check=False)
        folder.chmod(0o755)


def test_save_into_a_read_only_folder_shows_an_error_and_stays_dirty(
    driver: WindowDriver, read_only_folder: Path
) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _edit_something(driver)
    edited = driver.document
    target = read_only_folder / "model.thf"

    assert not driver.run(driver.window.save_to(target))

    assert not target.exists()
    assert driver.document is edited
    assert driver.window.open_document.is_dirty
    assert driver.window.open_document.path == THF_FIXTURES / "v1.0-canonical-full.thf"
    title, message = driver.prompts.errors[-1]
    assert title == "model.thf was not saved"
    assert "still open" in message and "Traceback" not in message


def test_new_from_template_opens_an_unsaved_dated_document(driver: WindowDriver) -> None:
    from stockade.thf.templates import list_templates

    template = list_templates()[0]
    assert driver.run(driver.window.new_from_template(template.id))
    assert driver.window.open_document.path is None
    assert driver.window.open_document.is_dirty
    assert driver.document.elements
    assert driver.window.tree_pane.model.section_count("elements")[1] == len(driver.document.elements)
    assert driver.window.windowTitle().startswith(driver.document.metadata.title + "*")


def test_template_menu_lists_the_six_starter_models(driver: WindowDriver) -> None:
    driver.window._fill_template_menu()
    labels = [a.text() for a in driver.window.template_menu.actions()]
    assert len(labels) == 6


def test_export_report_writes_html(driver: WindowDriver, tmp_path: Path) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.prompts.save_paths.append(str(tmp_path / "report"))
    assert driver.run(driver.window.export_with_dialog("html"))
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<html" in text.lower()


def test_close_with_unsaved_changes_asks_and_cancel_keeps_the_window(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _edit_something(driver)
    driver.prompts.unsaved_answers.append(UnsavedChoice.CANCEL)
    driver.window.close()
    driver.qtbot.waitUntil(lambda: driver.prompts.unsaved_questions != [], timeout=10_000)
    driver.qtbot.wait(20)
    assert driver.window.isVisible()
    assert driver.window.open_document.is_dirty


def test_close_with_unsaved_changes_and_discard_closes(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _edit_something(driver)
    driver.prompts.unsaved_answers.append(UnsavedChoice.DISCARD)
    driver.window.close()
    driver.qtbot.waitUntil(lambda: not driver.window.isVisible(), timeout=10_000)


def test_opening_another_file_over_unsaved_changes_can_be_cancelled(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _edit_something(driver)
    edited = driver.document
    driver.prompts.unsaved_answers.append(UnsavedChoice.CANCEL)
    assert not driver.open(THF_FIXTURES / "v1.0-minimal.thf")
    assert driver.document is edited


def test_opened_files_appear_in_open_recent(driver: WindowDriver) -> None:
    path = THF_FIXTURES / "v1.0-minimal.thf"
    assert driver.open(path)
    driver.window._fill_recent_menu()
    texts = [a.text() for a in driver.window.recent_menu.actions()]
    assert texts[0] == str(path.resolve())


def test_keyring_state_is_shown_in_the_status_bar(driver: WindowDriver) -> None:
    driver.run(driver.window.refresh_keyring_status())
    text = driver.window.keyring_label.text()
    assert text in ("Keyring: secure", "Keyring: NOT secure")
    assert driver.window.keyring_label.toolTip()


def test_geometry_is_remembered_in_the_data_folder(driver: WindowDriver, stockade_home: Path) -> None:
    driver.window.resize(900, 640)
    driver.window._close_approved = True
    driver.window.close()
    assert (stockade_home / "window.ini").is_file()
    assert os.path.getsize(stockade_home / "window.ini") > 0
