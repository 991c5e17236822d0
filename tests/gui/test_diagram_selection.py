"""The diagram draws the document and shares its selection with the tree."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from stockade.ui.document.diagram_view import (
    BoundaryItem,
    ElementItem,
    FlowItem,
    RelationshipItem,
    ShapeRole,
    element_look,
    layout_document,
)
from stockade.ui.main_window import AppTab
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def test_diagram_draws_every_element_flow_and_boundary(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    view = driver.window.diagram_view
    view.ensure_built()
    document = driver.document
    for element in document.elements:
        assert isinstance(view.item_for("elements", element.id), ElementItem)
    for flow in document.data_flows:
        assert isinstance(view.item_for("data_flows", flow.id), FlowItem)
    for boundary in document.trust_boundaries:
        assert isinstance(view.item_for("trust_boundaries", boundary.id), BoundaryItem)
    web_app = view.item_for("elements", "web-app")
    assert isinstance(web_app, ElementItem) and web_app.badge is not None
    assert web_app.badge.count == sum(1 for t in document.threats if t.element == "web-app")


def test_elements_without_positions_get_grid_slots(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-minimal.thf")
    layout = layout_document(driver.document)
    assert layout.unpositioned == len(driver.document.elements)
    assert set(layout.elements) == {e.id for e in driver.document.elements}


def test_clicking_an_element_in_the_diagram_selects_it_in_the_tree(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    item = view.item_for("elements", "payment-db")
    assert item is not None
    center = view.mapFromScene(item.sceneBoundingRect().center())
    driver.qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(center))

    assert driver.window.tree_pane.selected_key == ("elements", "payment-db")
    tree = driver.window.tree_pane
    assert tree.model.key_for_index(tree.view.currentIndex()) == ("elements", "payment-db")
    assert driver.window.detail_pane.shown == ("elements", "payment-db")


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
    from stockade.tools import actions

    result = actions.delete_threat(driver.document, "threat-3")
    assert isinstance(result, actions.ActionResult)
    driver.window.open_document.apply_edit(result.document, result.result)
    item = driver.window.diagram_view.item_for("elements", "web-app")
    assert isinstance(item, ElementItem)
    after_delete = item.badge.count if item.badge else 0
    driver.window.open_document.undo()
    item = driver.window.diagram_view.item_for("elements", "web-app")
    assert isinstance(item, ElementItem) and item.badge is not None
    assert item.badge.count == after_delete + 1


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
    tree = driver.window.tree_pane
    tree.view.setCurrentIndex(tree.model.index_for_entity("elements", "stripe-api"))
    assert not view.is_drawn
    driver.window.show_tab(AppTab.DIAGRAM)
    driver.qtbot.waitUntil(lambda: view.is_drawn, timeout=10_000)
    assert view.selected_key() == ("elements", "stripe-api")
    item = view.item_for("elements", "stripe-api")
    assert item is not None and item.isSelected()


def test_an_edit_redraws_only_the_items_it_touched(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    untouched = view.item_for("elements", "stripe-api")
    view.items_created = 0
    from stockade.tools import actions

    result = actions.update_element(
        driver.document, "payment-db", actions.ElementUpdates(name="Card Vault")
    )
    assert isinstance(result, actions.ActionResult)
    driver.window.open_document.apply_edit(result.document, result.result)

    assert view.items_created == 1
    assert view.item_for("elements", "stripe-api") is untouched
    renamed = view.item_for("elements", "payment-db")
    assert isinstance(renamed, ElementItem) and renamed.name == "Card Vault"
    assert len(view.scene().items()) == view.item_count


def test_an_undone_add_removes_its_item(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.DIAGRAM)
    view = driver.window.diagram_view
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    from stockade.tools import actions

    result = actions.add_element(
        driver.document, actions.NewElement(type="cache", name="Token Cache")
    )
    assert isinstance(result, actions.ActionResult) and result.new_id is not None
    driver.window.open_document.apply_edit(result.document, result.result)
    assert view.item_for("elements", result.new_id) is not None
    driver.window.open_document.undo()
    assert view.item_for("elements", result.new_id) is None
    assert len(view.scene().items()) == view.item_count


def test_relationships_are_drawn_as_dashed_edges_and_select_in_the_tree(
    driver: WindowDriver,
) -> None:
    assert driver.open(THF_FIXTURES / "architecture-canonical-full.thf")
    document = driver.document
    assert document.relationships
    view = driver.window.diagram_view
    relationship = document.relationships[0]
    item = view.item_for("relationships", relationship.id)
    assert isinstance(item, RelationshipItem) and item.dashed
    driver.window.show_tab(AppTab.DIAGRAM)
    driver.qtbot.waitUntil(lambda: view.is_drawn)
    item.setSelected(True)  # what a click on the edge does
    assert driver.window.tree_pane.selected_key == ("relationships", relationship.id)
