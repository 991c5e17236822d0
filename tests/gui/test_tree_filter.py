"""The filter box narrows every section: free text plus category, severity and status combos."""

from __future__ import annotations

from PySide6.QtCore import Qt

from stockade.thf.model import MitigationStatus, Severity, StrideCategory
from stockade.ui.document.document_tree import NO_MITIGATION
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def _open(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")


def test_typing_filters_by_name_and_id_after_a_pause(driver: WindowDriver) -> None:
    _open(driver)
    pane = driver.window.tree_pane
    pane.filter_text.setText("payment")
    driver.qtbot.waitUntil(lambda: pane.model.tree_filter.text == "payment", timeout=10_000)
    shown_elements = pane.model.section_count("elements")
    matching = [e for e in driver.document.elements if "payment" in (e.id + e.name).lower()]
    assert shown_elements[0] >= len(matching) > 0
    assert pane.model.section_label("elements") == f"Elements ({shown_elements[0]} of 5)"
    assert pane.model.section_count("layers") == (0, 0)


def test_text_matches_stride_category_severity_and_status_of_threats(driver: WindowDriver) -> None:
    _open(driver)
    pane = driver.window.tree_pane
    for text, expected in (
        ("tampering", {"threat-1"}),
        ("critical", {"threat-3"}),
        ("in_progress", {"threat-2"}),
        ("threat-", {"threat-1", "threat-2", "threat-3"}),
    ):
        pane.filter_text.setText(text)
        pane.apply_filter()
        assert set(pane.model.shown_ids("threats")) == expected, text


def test_combos_keep_only_matching_threats_and_their_targets(driver: WindowDriver) -> None:
    _open(driver)
    pane = driver.window.tree_pane
    pane.category_combo.setCurrentIndex(
        pane.category_combo.findData(StrideCategory.ELEVATION_OF_PRIVILEGE)
    )
    assert pane.model.section_count("threats") == (1, 3)
    # Only the element the elevation-of-privilege threat targets remains.
    target = next(t.element for t in driver.document.threats if t.id == "threat-3")
    assert pane.model.section_count("elements") == (1, 5)
    assert pane.model.index_for_entity("elements", str(target)).isValid()
    assert pane.model.section_count("trust_boundaries") == (0, 2)

    pane.category_combo.setCurrentIndex(0)
    pane.status_combo.setCurrentIndex(pane.status_combo.findData(MitigationStatus.MITIGATED.value))
    assert pane.model.section_count("threats") == (1, 3)
    pane.status_combo.setCurrentIndex(pane.status_combo.findData(NO_MITIGATION))
    assert pane.model.section_count("threats") == (1, 3)
    pane.severity_combo.setCurrentIndex(pane.severity_combo.findData(Severity.HIGH))
    assert pane.model.section_count("threats") == (0, 3)


def test_clearing_the_filter_shows_everything_again(driver: WindowDriver) -> None:
    _open(driver)
    pane = driver.window.tree_pane
    pane.filter_text.setText("zzz-nothing")
    pane.apply_filter()
    assert all(pane.model.section_count(s)[0] == 0 for s in ("elements", "threats"))
    pane.filter_text.clear()
    pane.apply_filter()
    assert pane.model.section_count("elements") == (5, 5)
    assert pane.model.section_label("threats") == "Threats (3)"


def test_picking_a_filtered_out_entity_in_the_diagram_still_shows_its_details(
    driver: WindowDriver,
) -> None:
    _open(driver)
    pane = driver.window.tree_pane
    pane.view.setCurrentIndex(pane.model.index_for_entity("elements", "stripe-api"))
    pane.filter_text.setText("stripe")
    pane.apply_filter()
    assert pane.view.selectionModel().hasSelection()
    assert not pane.model.index_for_entity("elements", "payment-db").isValid()
    driver.window.show_tab("diagram")
    view = driver.window.diagram_view
    rect = view.entity_rect("elements", "payment-db")
    assert rect is not None
    view.centerOn(rect.center())
    driver.qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                            pos=view.mapFromScene(rect.center()))
    assert driver.window.detail_pane.shown == ("elements", "payment-db")
    assert not pane.view.selectionModel().hasSelection()
    # Clearing the filter brings the picked entity back, selected.
    pane.filter_text.clear()
    pane.apply_filter()
    assert pane.model.key_for_index(pane.view.currentIndex()) == ("elements", "payment-db")
