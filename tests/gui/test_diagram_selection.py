"""The diagram draws the document and shares its selection with the tree."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from stockade.tools import actions
from stockade.ui.document.diagram_scene import ShapeRole, element_look
from stockade.ui.main_window import AppTab
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def _click(driver: WindowDriver, section: str, entity_id: str) -> None:
    view = driver.window.diagram_view
    rect = view.entity_rect(section, entity_id)
    assert rect is not None
    center = view.mapFromScene(rect.center())
    driver.qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(center))


def test_diagram_draws_every_element_flow_and_boundary(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    view = driver.window.diagram_view
    scene = view.geometry_scene
    assert scene is not None
    document = driver.document
    for section in ("elements", "data_flows", "trust_boundaries"):
        for entity in getattr(document, section):
            assert view.entity_rect(section, entity.id) is not None, entity.id
    web_app = scene.elements[scene.element_index["web-app"]]
    assert web_app.badge is not None
    assert web_app.badge.count == sum(1 for t in document.threats if t.element == "web-app")
    assert view.item_count == (len(document.elements) + len(document.data_flows)
                               + len(document.trust_boundaries) + len(document.relationships))


def test_flows_with_threats_carry_a_badge(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    targeted = next(t for t in driver.document.threats if t.flow is not None)
    scene = driver.window.diagram_view.geometry_scene
    assert scene is not None
    flow = scene.flows[scene.flow_index[("data_flows", targeted.flow)]]
    assert flow.badge is not None and flow.badge.count >= 1


def test_elements_without_positions_are_placed(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-minimal.thf")
    assert all(e.position is None for e in driver.document.elements)
    view = driver.window.diagram_view
    rects = [view.entity_rect("elements", e.id) for e in driver.document.elements]
    assert all(r is not None for r in rects)
    assert len({(r.x(), r.y()) for r in rects if r is not None}) == len(rects)


def test_clicking_an_element_in_the_diagram_selects_it_in_the_tree(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    _click(driver, "elements", "payment-db")

    assert driver.window.tree_pane.selected_key == ("elements", "payment-db")
    tree = driver.window.tree_pane
    assert tree.model.key_for_index(tree.view.currentIndex()) == ("elements", "payment-db")
    assert driver.window.detail_pane.shown == ("elements", "payment-db")
    assert driver.window.diagram_view.selected_key() == ("elements", "payment-db")


def test_selecting_in_the_tree_selects_in_the_diagram(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    tree = driver.window.tree_pane
    tree.view.setCurrentIndex(tree.model.index_for_entity("data_flows", "flow-1"))
    view = driver.window.diagram_view
    assert view.selected_key() == ("data_flows", "flow-1")
    # A threat is not drawn: the diagram selects what it targets.
    tree.view.setCurrentIndex(tree.model.index_for_entity("threats", "threat-3"))
    target = next(t.element for t in driver.document.threats if t.id == "threat-3")
    assert view.selected_key() == ("elements", target)
    tree.view.setCurrentIndex(tree.model.index_for_entity("diagrams", driver.document.diagrams[0].id))
    assert view.selected_key() is None


def test_hovering_shows_the_full_name_and_threats(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    view = driver.window.diagram_view
    rect = view.entity_rect("elements", "web-app")
    assert rect is not None
    text = view.hover_text_at(rect.center())
    name = next(e.name for e in driver.document.elements if e.id == "web-app")
    assert text.startswith(name) and "threat" in text


def test_zoom_actions_and_fit_change_the_scale(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    before = view.current_scale()
    driver.window.findChild(type(driver.window.undo_action), "actionZoomIn").trigger()
    assert view.current_scale() > before
    driver.window.findChild(type(driver.window.undo_action), "actionFit").trigger()
    assert abs(view.current_scale() - before) < 1e-6


def test_diagram_follows_undo(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view

    def badge_count() -> int:
        scene = view.geometry_scene
        assert scene is not None
        badge = scene.elements[scene.element_index["web-app"]].badge
        return badge.count if badge else 0

    before = badge_count()
    result = actions.delete_threat(driver.document, "threat-3")
    assert isinstance(result, actions.ActionResult)
    driver.window.open_document.apply_edit(result.document, result.result)
    assert badge_count() == before - 1
    driver.window.open_document.undo()
    assert badge_count() == before


def test_element_shapes_follow_the_catalog_stride_role() -> None:
    assert element_look("sql_database").role is ShapeRole.STORE
    assert element_look("web_browser").role is ShapeRole.ACTOR
    assert element_look("text").role is ShapeRole.ANNOTATION
    unknown = element_look("quantum_widget")
    assert unknown.role is ShapeRole.SERVICE and unknown.label == "quantum widget"


def test_tree_selection_while_the_diagram_is_hidden_does_not_draw_it(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    view = driver.window.diagram_view
    assert not view.isVisible() and not view.is_drawn
    builds = view.builds
    tree = driver.window.tree_pane
    tree.view.setCurrentIndex(tree.model.index_for_entity("elements", "stripe-api"))
    assert not view.is_drawn and view.builds == builds
    driver.window.show_tab(AppTab.DIAGRAM)
    driver.qtbot.waitUntil(lambda: view.is_drawn, timeout=10_000)
    assert view.selected_key() == ("elements", "stripe-api")


def test_an_undone_add_removes_it_from_the_diagram(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    result = actions.add_element(driver.document, actions.NewElement(type="cache", name="Token Cache"))
    assert isinstance(result, actions.ActionResult) and result.new_id is not None
    driver.window.open_document.apply_edit(result.document, result.result)
    assert view.entity_rect("elements", result.new_id) is not None
    driver.window.open_document.undo()
    assert view.entity_rect("elements", result.new_id) is None


def test_relationships_are_drawn_dashed_and_select_in_the_tree(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "architecture-canonical-full.thf")
    relationship = driver.document.relationships[0]
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    scene = view.geometry_scene
    assert scene is not None
    drawn = scene.flows[scene.flow_index[("relationships", relationship.id)]]
    assert drawn.section == "relationships"
    # Click the middle of the edge, where nothing else lies.
    middle = view.mapFromScene(scene.line(scene.flow_index[("relationships", relationship.id)]).center())
    view.centerOn(scene.line(scene.flow_index[("relationships", relationship.id)]).center())
    middle = view.mapFromScene(scene.line(scene.flow_index[("relationships", relationship.id)]).center())
    driver.qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(middle))
    assert driver.window.tree_pane.selected_key == ("relationships", relationship.id)
