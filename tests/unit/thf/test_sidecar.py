"""Legacy sidecar layout merge, including the refusal to leave the model's folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stockade.thf import merge_sidecar_layouts, read_file, to_yaml
from tests.unit.thf.support import fixture_path, model_of


def test_sidecar_fixture_merges_the_manifest_numbers() -> None:
    model = read_file(fixture_path("legacy-sidecar/model.thf"))
    positions = {e.id: (e.position.x, e.position.y) for e in model.elements if e.position}
    assert positions == {"web-app": (120.0, 240.0), "db": (480.0, 240.0)}
    boundary = model.trust_boundaries[0]
    assert boundary.position is not None and boundary.size is not None
    assert (boundary.position.x, boundary.position.y) == (60.0, 180.0)
    assert (boundary.size.width, boundary.size.height) == (640.0, 220.0)
    viewport = model.diagrams[0].viewport
    assert viewport is not None and (viewport.x, viewport.y, viewport.zoom) == (12.0, -8.0, 1.25)
    assert model.diagrams[0].layout_file == ".threatforge/layouts/main-dfd.json"


def test_merge_can_be_turned_off() -> None:
    model = read_file(fixture_path("legacy-sidecar/model.thf"), merge_sidecar=False)
    assert all(e.position is None for e in model.elements)
    assert model.diagrams[0].viewport is None


def copy_fixture(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(fixture_path("legacy-sidecar"), target)
    return target / "model.thf"


def with_layout_file(path: Path, layout_file: str) -> Path:
    text = path.read_text().replace(".threatforge/layouts/main-dfd.json", layout_file)
    path.write_text(text)
    return path


def test_existing_positions_are_not_overwritten(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    text = path.read_text().replace(
        "    trust_zone: internal\n  - id: db",
        "    trust_zone: internal\n    position: {x: 1, y: 2}\n  - id: db",
    )
    path.write_text(text)
    merged = read_file(path)
    web = merged.elements[0]
    assert web.position is not None and (web.position.x, web.position.y) == (1.0, 2.0)


def test_diagram_with_a_viewport_is_not_merged(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    text = path.read_text().replace(
        '    layout_file: ".threatforge/layouts/main-dfd.json"\n',
        '    layout_file: ".threatforge/layouts/main-dfd.json"\n    viewport: {x: 0, y: 0, zoom: 1}\n',
    )
    path.write_text(text)
    model = read_file(path)
    assert all(e.position is None for e in model.elements)


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        '{"diagram_id": "main-dfd"}',
        '{"diagram_id": 1, "viewport": {"x": 0, "y": 0, "zoom": 1}}',
        "\udcff",
    ],
)
def test_unreadable_or_malformed_sidecar_is_skipped_silently(tmp_path: Path, content: str) -> None:
    path = copy_fixture(tmp_path)
    sidecar = path.parent / ".threatforge/layouts/main-dfd.json"
    sidecar.write_bytes(content.encode("utf-8", "surrogateescape"))
    model = read_file(path)
    assert model.diagrams[0].viewport is None


def test_missing_sidecar_is_skipped_silently(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    (path.parent / ".threatforge/layouts/main-dfd.json").unlink()
    assert read_file(path).diagrams[0].viewport is None


@pytest.mark.parametrize(
    "layout_file",
    ["../outside.json", "/tmp/outside.json", "sub/../../outside.json", "C:/outside.json"],
)
def test_sidecar_path_outside_the_model_folder_is_never_read(
    tmp_path: Path, layout_file: str
) -> None:
    path = copy_fixture(tmp_path)
    outside = tmp_path / "outside.json"
    shutil.copy(path.parent / ".threatforge/layouts/main-dfd.json", outside)
    with_layout_file(path, layout_file)
    model = read_file(path)
    assert model.diagrams[0].viewport is None
    assert all(e.position is None for e in model.elements)


def test_symlink_leading_outside_the_folder_is_not_followed(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    outside = tmp_path / "outside.json"
    sidecar = path.parent / ".threatforge/layouts/main-dfd.json"
    shutil.copy(sidecar, outside)
    sidecar.unlink()
    sidecar.symlink_to(outside)
    assert read_file(path).diagrams[0].viewport is None


def test_merge_applies_to_a_model_written_elsewhere(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    (folder / "layouts").mkdir(parents=True)
    (folder / "layouts/d.json").write_text(
        json.dumps(
            {
                "diagram_id": "d",
                "viewport": {"x": 1, "y": 2, "zoom": 3},
                "nodes": [{"id": "a", "x": 5, "y": 6}],
            }
        )
    )
    model = model_of(
        elements=[{"id": "a", "type": "p", "name": "A"}],
        diagrams=[{"id": "d", "name": "D", "layout_file": "layouts/d.json"}],
    )
    (folder / "m.thf").write_text(to_yaml(model))
    merged = merge_sidecar_layouts(model, folder / "m.thf")
    assert merged.elements[0].position is not None
    assert (merged.elements[0].position.x, merged.elements[0].position.y) == (5.0, 6.0)
