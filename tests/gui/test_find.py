"""Ctrl+F finds every entity kind by id, name, description, technology and threat text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from stockade.ui.document.find_bar import find_matches
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver

FULL = THF_FIXTURES / "v1.0-canonical-full.thf"


def test_ctrl_f_searches_all_kinds_and_steps_through_matches(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    window = driver.window
    window.activateWindow()
    window.tree_pane.view.setFocus()
    QTest.keyClick(window.tree_pane.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    bar = window.find_bar
    driver.qtbot.waitUntil(bar.isVisible)
    assert bar.edit.hasFocus()

    QTest.keyClicks(bar.edit, "stripe")
    bar.search()
    # The element's id and name say "stripe", and so does threat-2's title; the flow into it
    # only points at it, which is not its own text.
    assert bar.matches == [("elements", "stripe-api"), ("threats", "threat-2")]
    assert bar.count_label.text() == "2 matches"

    QTest.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count_label.text() == "1 of 2"
    driver.qtbot.waitUntil(lambda: window.detail_pane.shown == ("elements", "stripe-api"))
    QTest.keyClick(bar.edit, Qt.Key.Key_Return)
    driver.qtbot.waitUntil(lambda: window.detail_pane.shown == ("threats", "threat-2"))
    assert window.tree_pane.selected_key == ("threats", "threat-2")
    bar.previous_button.click()
    driver.qtbot.waitUntil(lambda: window.detail_pane.shown == ("elements", "stripe-api"))
    assert bar.count_label.text() == "1 of 2"
    # The tree's own filter is untouched by find.
    assert window.tree_pane.filter_text.text() == ""
    QTest.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert not bar.isVisible()


def test_find_reaches_technologies_descriptions_and_mitigations(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    document = driver.document
    assert find_matches(document, "postgresql") == [("elements", "payment-db"), ("data_flows", "flow-2")]
    assert ("threats", "threat-1") in find_matches(document, "parameterized")  # mitigation text
    assert find_matches(document, "second factor") == [("threats", "threat-3")]  # description
    assert find_matches(document, "BOUNDARY-1") == [("trust_boundaries", "boundary-1")]
    assert find_matches(document, "   ") == []


def test_find_reports_no_matches(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    bar = driver.window.find_bar
    bar.start()
    bar.edit.setText("zzz-nothing")
    bar.next()
    assert bar.count_label.text() == "No matches"
    assert driver.window.detail_pane.shown is None
