"""`stockade FILE --screenshot PNG --tab authoring` draws the Add dialog over the window."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tests.conftest import THF_FIXTURES

STOCKADE = Path(sys.executable).parent / "stockade"


@pytest.mark.skipif(not STOCKADE.exists(), reason="the stockade console script is not installed")
def test_authoring_screenshot_shows_the_dialog_over_the_details_tab(tmp_path: Path) -> None:
    shots = {}
    for tab in ("tree", "authoring"):
        out = tmp_path / f"{tab}.png"
        result = subprocess.run(
            [str(STOCKADE), str(THF_FIXTURES / "v1.0-canonical-full.thf"), "--screenshot", str(out),
             "--tab", tab],
            capture_output=True, text=True, timeout=120, env=dict(os.environ), check=False,
        )
        assert result.returncode == 0, result.stderr
        shots[tab] = QImage(str(out))
        assert not shots[tab].isNull()
    tree, authoring = shots["tree"], shots["authoring"]
    assert tree.size() == authoring.size()
    # The dialog sits over the middle of the window; the status bar corner is the same.
    w, h = tree.width(), tree.height()
    assert tree.copy(w // 3, h // 4, w // 3, h // 3) != authoring.copy(w // 3, h // 4, w // 3, h // 3)
    assert tree.pixelColor(5, h - 5) == authoring.pixelColor(5, h - 5)
