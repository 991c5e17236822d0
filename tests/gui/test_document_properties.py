"""Document → Properties, `metadata.modified` on save, and File → Export diagram."""

from __future__ import annotations

import datetime as _dt
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialogButtonBox

from stockade.thf.reader import read_file
from stockade.ui.document.properties_dialog import PropertiesDialog
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver

FULL = THF_FIXTURES / "v1.0-canonical-full.thf"


def _properties_dialog(driver: WindowDriver) -> PropertiesDialog:
    action = driver.window.findChild(QAction, "actionProperties")
    assert action is not None
    action.trigger()
    found: list[PropertiesDialog] = []

    def shown() -> bool:
        found[:] = [d for d in driver.window.findChildren(PropertiesDialog) if d.isVisible()]
        return bool(found)

    driver.qtbot.waitUntil(shown)
    return found[0]


def test_title_and_author_are_edited_as_one_undo_step(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    dialog = _properties_dialog(driver)
    dialog.title_edit.setText("Payments, reviewed")
    dialog.author_edit.setText("Sam Okafor")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    assert (driver.document.metadata.title, driver.document.metadata.author) == (
        "Payments, reviewed", "Sam Okafor")
    assert driver.window.open_document.is_dirty
    driver.window.undo_action.trigger()
    assert driver.document is original


def test_an_empty_title_is_refused_in_the_dialog(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    dialog = _properties_dialog(driver)
    dialog.title_edit.setText("")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.isVisible() and "title" in dialog.error_label.text()
    assert driver.document is original
    dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())


def test_saving_records_today_as_modified(driver: WindowDriver, tmp_path: Path) -> None:
    copy = tmp_path / "model.thf"
    shutil.copy(FULL, copy)
    assert driver.open(copy)
    assert driver.document.metadata.modified == "2026-03-20"
    dialog = _properties_dialog(driver)
    dialog.author_edit.setText("Sam Okafor")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    assert driver.run(driver.window.save())
    today = _dt.date.today().isoformat()
    assert read_file(copy).metadata.modified == today
    assert driver.document.metadata.modified == today
    assert not driver.window.open_document.is_dirty


def test_file_menu_exports_the_diagram_as_svg_and_png(driver: WindowDriver, tmp_path: Path) -> None:
    assert driver.open(FULL)
    svg, png = tmp_path / "d.svg", tmp_path / "d.png"
    driver.prompts.save_paths += [str(svg), str(png)]
    assert driver.run(driver.window.commands.export_diagram_with_dialog())
    assert driver.run(driver.window.commands.export_diagram_with_dialog())
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert sum(1 for g in root.iter("{http://www.w3.org/2000/svg}g")
               if g.attrib.get("class") == "element") == 4  # the text note has no box
    assert png.read_bytes().startswith(b"\x89PNG")
    assert driver.prompts.errors == []
