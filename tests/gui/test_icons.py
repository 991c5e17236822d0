"""The application icon: the PNG, ICO and ICNS files are what packaging/render_icons.py draws
from resources/icons/stockade.svg today, and the app's window icon carries every size."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from PySide6.QtCore import QSize

from stockade.ui.app import ICON_SIZES, app_icon

ROOT = Path(__file__).resolve().parents[2]


def _render_icons() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_icons", ROOT / "packaging" / "render_icons.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_icon_file_matches_a_fresh_render_of_the_svg() -> None:
    render_icons = _render_icons()
    assert render_icons.check() == []


def test_an_svg_edited_without_rendering_again_is_caught(tmp_path: Path) -> None:
    render_icons = _render_icons()
    edited = tmp_path / "stockade.svg"
    # The rails drawn in another colour: the committed PNGs no longer match.
    edited.write_text(render_icons.SVG.read_text(encoding="utf-8").replace("#7a4d14", "#14507a"),
                      encoding="utf-8")
    render_icons.SVG = edited
    problems = render_icons.check()
    assert any(p.startswith("stockade-16.png: differs") for p in problems)
    assert any(p.startswith("stockade.ico 256 px: differs") for p in problems)
    assert any(p.startswith("stockade.icns 1024 px: differs") for p in problems)


def test_the_window_icon_has_every_size() -> None:
    icon = app_icon()
    assert not icon.isNull()
    available = {(size.width(), size.height()) for size in icon.availableSizes()}
    assert available == {(s, s) for s in ICON_SIZES}
    assert icon.pixmap(QSize(48, 48)).width() == 48
