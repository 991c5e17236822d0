"""The real window: File → Import…, foreign files on Open, PDF and Markdown export, null sections."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES, THF_FIXTURES
from tests.gui.conftest import WindowDriver

FOREIGN = FIXTURES / "foreign"
TD_SAMPLE = FOREIGN / "threat-dragon/ThreatDragonModels/v2-threat-model.json"


def test_file_import_opens_the_result_as_a_new_unsaved_document(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-minimal.thf")
    driver.prompts.import_paths.append(str(TD_SAMPLE))
    driver.window.findChild(type(driver.window.save_action), "actionImport").trigger()
    driver.qtbot.waitUntil(lambda: driver.document.metadata.title == "Demo Threat Model")
    document = driver.document
    assert (len(document.elements), len(document.data_flows), len(document.threats)) == (7, 10, 14)
    assert driver.window.open_document.path is None
    assert driver.window.open_document.is_dirty
    assert driver.window.tree_pane.model.section_count("threats") == (14, 14)
    ((title, text),) = driver.prompts.infos
    assert "warnings" in title and "not saved yet" in text and "Line boundary" in text
    assert driver.prompts.errors == []


def test_a_broken_import_shows_one_plain_error_and_keeps_the_open_document(
    driver: WindowDriver,
) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    before = driver.document
    broken = FOREIGN / "threat-dragon/ThreatDragonModels/test/malformed-new-model.json"
    driver.prompts.import_paths.append(str(broken))
    assert driver.run(driver.window.commands.import_with_dialog()) is False
    ((title, text),) = driver.prompts.errors
    assert title == "Could not import malformed-new-model.json"
    assert "Threat Dragon" in text and "malformed" in text and "Traceback" not in text
    assert driver.document is before


def test_opening_a_foreign_model_says_what_it_is_and_how_to_import_it(
    driver: WindowDriver,
) -> None:
    assert driver.open(TD_SAMPLE) is False
    ((_title, text),) = driver.prompts.errors
    assert "OWASP Threat Dragon (version 2.0) model" in text
    assert "File → Import" in text


def test_a_broken_reference_error_suggests_the_intended_id(
    driver: WindowDriver, tmp_path: Path
) -> None:
    doc = tmp_path / "typo.thf"
    text = (THF_FIXTURES / "v1.0-canonical-full.thf").read_text()
    doc.write_text(text.replace("  to: payment-db\n", "  to: payment-bd\n", 1))
    assert driver.open(doc) is False
    ((_title, message),) = driver.prompts.errors
    assert "'payment-bd' not found" in message and message.endswith("Did you mean 'payment-db'?")


def test_null_sections_open_as_empty_sections(driver: WindowDriver, tmp_path: Path) -> None:
    doc = tmp_path / "nulls.thf"
    doc.write_text(
        "version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
        "  modified: 2026-01-01\nelements:\n- {id: a, type: process, name: A}\nthreats:\n"
        "data_flows:\n"
    )
    assert driver.open(doc)
    assert driver.document.threats == [] and driver.document.data_flows == []
    assert driver.prompts.errors == []


def test_export_report_writes_pdf_and_markdown(driver: WindowDriver, tmp_path: Path) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    pdf, markdown = tmp_path / "report.pdf", tmp_path / "report.md"
    driver.prompts.save_paths.extend([str(pdf), str(markdown)])
    assert driver.run(driver.window.export_with_dialog("pdf"), timeout_ms=30_000)
    assert driver.run(driver.window.export_with_dialog("md"))
    assert pdf.read_bytes().startswith(b"%PDF-")
    assert "# Payment Processing Service" in markdown.read_text(encoding="utf-8")
    assert driver.window.findChild(type(driver.window.save_action), "actionExportPDF") is not None
    assert driver.prompts.errors == []
