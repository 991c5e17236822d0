"""End-to-end: `stockade diagram FILE -o OUT.svg|.png` through the real console script."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import THF_FIXTURES
from tests.e2e.conftest import REPO_ROOT, run_cli

SVG = "{http://www.w3.org/2000/svg}"
SAMPLE = REPO_ROOT / "resources" / "samples" / "ecommerce-platform.thf"


def test_svg_parses_and_draws_every_element_flow_legend_and_badge(tmp_path: Path) -> None:
    out = tmp_path / "diagram.svg"
    result = run_cli("diagram", SAMPLE, "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote ")
    root = ET.parse(out).getroot()  # a real XML parser: well-formed or it raises
    assert root.tag == f"{SVG}svg"
    width, height = float(root.attrib["width"]), float(root.attrib["height"])
    assert width > 0 and height > 0 and len(root.attrib["viewBox"].split()) == 4
    groups = [g.attrib.get("class") for g in root.iter(f"{SVG}g")]
    from stockade.thf.reader import read_file

    model = read_file(SAMPLE)
    drawn_elements = sum(1 for e in model.elements if e.type != "text")
    assert groups.count("element") == drawn_elements
    assert groups.count("flow") == len(model.data_flows)
    assert groups.count("legend") == 1
    flow_badges = {t.flow for t in model.threats if t.flow}
    flow_groups = [g for g in root.iter(f"{SVG}g") if g.attrib.get("class") == "flow"]
    badged = [g for g in flow_groups if any(c.attrib.get("class") == "badge" for c in g)]
    assert len(badged) == len(flow_badges) > 0
    titles = {t.text for t in root.iter(f"{SVG}title")}
    assert all(any(e.name in (t or "") for t in titles) for e in model.elements if e.type != "text")


def test_png_is_written_and_unpositioned_models_still_draw(tmp_path: Path) -> None:
    out = tmp_path / "diagram.png"
    result = run_cli("diagram", THF_FIXTURES / "v1.0-minimal.thf", "-o", out, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["format"] == "png"
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert width >= 200 and height >= 100


def test_unknown_suffix_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "diagram.gif"
    result = run_cli("diagram", SAMPLE, "-o", out)
    assert result.returncode == 2
    assert "name the output .svg or .png" in result.stderr
    assert not out.exists()


def test_a_broken_model_fails_cleanly_without_output(tmp_path: Path) -> None:
    out = tmp_path / "diagram.svg"
    result = run_cli("diagram", THF_FIXTURES / "invalid" / "unknown-flow-target.thf", "-o", out)
    assert result.returncode == 1
    assert "invalid_reference" in result.stdout
    assert not out.exists()
