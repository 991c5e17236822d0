"""Opening files in the real window: tree counts, targets, and files that fail validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from stockade.thf.model import SECTION_NAMES
from stockade.thf.reader import read_file
from stockade.ui.document.document_tree import FETCH_BATCH
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver

VALID_FIXTURES = [
    "v1.0-minimal.thf",
    "v1.0-canonical-full.thf",
    "v1.0-unknown-fields.thf",
    "v1.0-browser-roundtrip.thf",
    "legacy-sidecar/model.thf",
    "architecture-canonical-full.thf",
    "architecture-only.thf",
    "e2e/large-model.thf",
]
INVALID_FIXTURES = sorted(p.name for p in (THF_FIXTURES / "invalid").glob("*.thf"))


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_each_valid_fixture_opens_with_a_count_per_section(driver: WindowDriver, name: str) -> None:
    path = THF_FIXTURES / name
    assert driver.open(path)
    expected = read_file(path)
    model = driver.window.tree_pane.model
    for section in SECTION_NAMES:
        total = len(getattr(expected, section))
        assert model.section_count(section) == (total, total), section
    driver.qtbot.waitUntil(lambda: driver.window.validation_label.text() == "Valid", timeout=10_000)
    assert driver.window.windowTitle().startswith(Path(name).name + " — ")
    assert driver.prompts.errors == []


def test_section_labels_carry_counts_from_the_manifest(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    model = driver.window.tree_pane.model
    assert model.section_label("elements") == "Elements (5)"
    assert model.section_label("data_flows") == "Data flows (3)"
    assert model.section_label("trust_boundaries") == "Trust boundaries (2)"
    assert model.section_label("threats") == "Threats (3)"


def test_large_fixture_rows_are_fetched_lazily(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "e2e" / "large-model.thf")
    model = driver.window.tree_pane.model
    # Collapsed sections build no entity rows at all.
    assert model.fetched_row_count("elements") == 0
    index = model.index_for_entity("elements", "element-149")
    assert index.isValid()
    assert model.fetched_row_count("elements") == 150
    assert model.data(index) == driver.document.elements[149].name


def test_threats_are_also_listed_under_the_element_or_flow_they_target(
    driver: WindowDriver,
) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    model = driver.window.tree_pane.model
    for threat in driver.document.threats:
        section, target = ("elements", threat.element) if threat.element else ("data_flows", threat.flow)
        assert target is not None
        parent = model.index_for_entity(section, target)
        while model.canFetchMore(parent):
            model.fetchMore(parent)
        keys = [model.key_for_index(model.index(r, 0, parent)) for r in range(model.rowCount(parent))]
        assert ("threats", threat.id) in keys


@pytest.mark.parametrize("name", INVALID_FIXTURES)
def test_invalid_fixture_shows_its_error_and_leaves_the_previous_document_open(
    driver: WindowDriver, name: str
) -> None:
    previous = THF_FIXTURES / "v1.0-canonical-full.thf"
    assert driver.open(previous)
    before = driver.document

    assert not driver.open(THF_FIXTURES / "invalid" / name)

    assert driver.document is before
    assert driver.window.open_document.path == previous
    assert driver.window.tree_pane.model.section_count("elements") == (5, 5)
    assert len(driver.prompts.errors) == 1
    title, message = driver.prompts.errors[0]
    assert title == f"Could not open {name}"
    assert "Traceback" not in message and str(THF_FIXTURES) not in message
    with pytest.raises(Exception) as raised:
        read_file(THF_FIXTURES / "invalid" / name)
    assert str(raised.value) in message


def test_pinned_message_of_an_invalid_reference_reaches_the_user(driver: WindowDriver) -> None:
    assert not driver.open(THF_FIXTURES / "invalid" / "unknown-flow-target.thf")
    assert driver.window.open_document.document is None
    _title, message = driver.prompts.errors[0]
    assert (
        "Invalid reference in 'data_flows[flow-1].to': 'missing-db' not found. "
        'Valid IDs: ["app"]'
    ) in message


def test_missing_file_is_reported_in_plain_words(driver: WindowDriver, tmp_path: Path) -> None:
    assert not driver.open(tmp_path / "nowhere.thf")
    title, message = driver.prompts.errors[0]
    assert title == "Could not open nowhere.thf"
    assert str(tmp_path) not in message


def test_expanding_a_huge_section_builds_only_a_screenful_of_rows(driver: WindowDriver) -> None:
    from tools.benchmarks.generate import generate_model

    document = generate_model(3000)
    driver.window.open_document.replace(document, None, saved=False)
    pane = driver.window.tree_pane
    pane.expand_sections(["elements"])
    QApplication.processEvents()
    fetched = pane.model.fetched_row_count("elements")
    assert 0 < fetched <= 2 * FETCH_BATCH < len(document.elements)
    # Scrolling to the end is what asks the model for the next batch.
    bar = pane.view.verticalScrollBar()
    driver.qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=10_000)
    bar.setValue(bar.maximum())
    driver.qtbot.waitUntil(
        lambda: pane.model.fetched_row_count("elements") > fetched, timeout=10_000
    )


def test_validation_status_settles_on_the_newest_document_after_quick_edits(
    driver: WindowDriver,
) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    label = driver.window.validation_label
    original = driver.document
    broken_threat = original.threats[0].model_copy(update={"element": "no-such-element"})
    broken = original.model_copy(update={"threats": [broken_threat, *original.threats[1:]]})

    # An edit and its undo before the first check answers: only the undo's check may speak.
    driver.window.open_document.apply_edit(broken, "Break a reference")
    driver.window.open_document.undo()
    assert label.text() == "Checking…"
    driver.run(driver.window.validation_settled())
    assert label.text() == "Valid"

    driver.window.open_document.apply_edit(broken, "Break a reference")
    driver.run(driver.window.validation_settled())
    assert label.text() == "Invalid"
    assert "no-such-element" in label.toolTip()
