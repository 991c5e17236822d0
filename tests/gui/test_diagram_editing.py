"""Dragging on the diagram saves positions in the document, one undo step per drag."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from stockade.ui.main_window import AppTab
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver

FULL = THF_FIXTURES / "v1.0-canonical-full.thf"


def _drag(driver: WindowDriver, start: QPointF, by: QPoint) -> None:
    view = driver.window.diagram_view
    viewport = view.viewport()
    begin = view.mapFromScene(start)
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, begin)
    for step in range(1, 6):  # a real drag arrives as a series of moves
        QTest.mouseMove(viewport, begin + by * step / 5)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, begin + by)


def _shown(driver: WindowDriver) -> None:
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    view.resetTransform()  # one scene unit per pixel: the drag distance is exact
    view.centerOn(400.0, 250.0)


def test_dragging_an_element_saves_its_position_and_one_undo_restores_it(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    _shown(driver)
    view = driver.window.diagram_view
    rect = view.entity_rect("elements", "web-app")
    assert rect is not None
    _drag(driver, rect.center(), QPoint(60, 40))

    element = next(e for e in driver.document.elements if e.id == "web-app")
    assert element.position is not None
    assert (element.position.x, element.position.y) == (160.0, 240.0)
    assert driver.window.undo_action.text().startswith("&Undo: Updated element web-app: position")
    moved = view.entity_rect("elements", "web-app")
    assert moved is not None and (moved.x(), moved.y()) == (160.0, 240.0)
    assert driver.window.detail_pane.shown == ("elements", "web-app")

    driver.window.undo_action.trigger()
    assert driver.document is original
    back = view.entity_rect("elements", "web-app")
    assert back is not None and (back.x(), back.y()) == (100.0, 200.0)


def test_dragging_a_boundary_by_its_title_moves_it_alone(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    _shown(driver)
    view = driver.window.diagram_view
    rect = view.entity_rect("trust_boundaries", "boundary-2")
    assert rect is not None
    _drag(driver, QPointF(rect.left() + 30.0, rect.top() + 8.0), QPoint(-50, 20))
    boundary = next(b for b in driver.document.trust_boundaries if b.id == "boundary-2")
    assert boundary.position is not None and boundary.size is not None
    assert (boundary.position.x, boundary.position.y) == (600.0, 400.0)
    assert (boundary.size.width, boundary.size.height) == (240.0, 160.0)
    assert [e.position for e in driver.document.elements] == [e.position for e in original.elements]
    driver.window.undo_action.trigger()
    assert driver.document is original


def test_a_click_without_moving_selects_and_changes_nothing(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    _shown(driver)
    view = driver.window.diagram_view
    rect = view.entity_rect("elements", "stripe-api")
    assert rect is not None
    _drag(driver, rect.center(), QPoint(1, 1))  # under the drag threshold
    assert driver.document is original
    assert driver.window.detail_pane.shown == ("elements", "stripe-api")
