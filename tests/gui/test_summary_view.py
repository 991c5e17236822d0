"""The Summary tab counts threats by category and severity and lists the urgent open ones."""

from __future__ import annotations

from stockade.thf.model import Severity, StrideCategory
from stockade.ui.main_window import AppTab
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def test_summary_counts_match_the_document(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    view = driver.window.summary_view
    view.ensure_filled()
    summary = view.summary
    assert summary is not None and summary.total == 3
    assert summary.by_category_severity[(StrideCategory.TAMPERING, Severity.HIGH)] == 1
    assert summary.by_status["mitigated"] == 1
    assert summary.by_status["in_progress"] == 1
    assert summary.by_status["no mitigation"] == 1
    # threat-1 is high but mitigated; threat-3 is critical with no mitigation.
    assert [t.id for t in summary.unmitigated_urgent] == ["threat-3"]
    row = list(StrideCategory).index(StrideCategory.TAMPERING)
    column = list(Severity).index(Severity.HIGH)
    assert view.matrix.item(row, column).text() == "1"
    assert view.urgent.rowCount() == 1


def test_picking_an_urgent_threat_selects_it(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    driver.window.show_tab(AppTab.SUMMARY)
    driver.window.summary_view.urgent.cellClicked.emit(0, 0)
    assert driver.window.tree_pane.selected_key == ("threats", "threat-3")
    assert driver.window.detail_pane.shown == ("threats", "threat-3")
    assert driver.window.tabs.currentWidget() is driver.window.detail_pane
