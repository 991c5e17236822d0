"""End-to-end: `stockade report` writes a PDF through Qt's PDF writer and a Markdown report."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.conftest import REPO_ROOT, run_cli

SAMPLE = REPO_ROOT / "resources/samples/ecommerce-platform.thf"


def test_report_pdf_has_summary_diagram_and_threat_pages(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "ecommerce.pdf"
    # No QT_QPA_PLATFORM: the command picks the offscreen platform itself.
    result = run_cli("report", SAMPLE, "-o", out, env={"QT_QPA_PLATFORM": None})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out} (pdf: 13 elements, 13 flows, 5 threats)")
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    pages = re.findall(rb"/Type\s*/Page\b(?!s)", data)
    boxes = re.findall(rb"/MediaBox\s*\[0 0 ([\d.]+) ([\d.]+)\]", data)
    assert len(pages) >= 3 and len(boxes) == len(pages)
    shapes = [("landscape" if float(w) > float(h) else "portrait") for w, h in boxes]
    # The summary page, then the diagram on a landscape page of its own, then threats.
    assert shapes[0] == "portrait" and shapes[1] == "landscape"
    assert "E-Commerce Platform".encode("utf-16-be") in data  # the document title (Info)
    assert b"/Creator" in data and b"DejaVu" in data
    assert list(folder.iterdir()) == [out]  # no temporary left behind


def test_report_markdown_is_written_by_suffix(tmp_path: Path) -> None:
    out = tmp_path / "ecommerce.md"
    result = run_cli("report", SAMPLE, "-o", out, "--json")
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# E-Commerce Platform\n")
    assert "| Tampering | 1 | 1 | 0 | 0 | 0 | 2 |" in text
