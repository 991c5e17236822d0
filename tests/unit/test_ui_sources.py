"""Rules about the Qt code that a reading of its sources proves (no Qt needed to run them)."""

from __future__ import annotations

from pathlib import Path


def test_no_ui_module_starts_a_nested_event_loop() -> None:
    import re

    import stockade.ui

    nested = re.compile(
        r"\.exec\(\)|\.exec_\(\)|getOpenFileName|getSaveFileName|getExistingDirectory"
        r"|QMessageBox\.(question|warning|critical|information|about)\("
    )
    folder = Path(stockade.ui.__file__).parent
    offenders = [
        f"{path.relative_to(folder)}:{number}"
        for path in sorted(folder.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if nested.search(line)
    ]
    assert offenders == []
