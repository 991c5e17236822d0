"""SEC-TX-10 (import half): the read tools and the modules they are built from import no
store, key, provider, governance, UI, settings, platform or environment module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import stockade

PACKAGE = Path(stockade.__file__).resolve().parent
READ_TOOL_MODULES = ["tools/read_tools.py", "tools/untrusted.py", "thf/canonical.py", "tools/schema.py",
                     "tools/registry.py", "tools/runtime.py"]
FORBIDDEN = (
    "os", "sys", "socket", "subprocess", "sqlite3", "shutil", "pathlib", "keyring", "platformdirs",
    "PySide6", "qasync", "httpx", "anthropic", "openai", "stockade.store", "stockade.secrets",
    "stockade.providers", "stockade.governance", "stockade.ui", "stockade.cli", "stockade.paths",
    "stockade.settings", "stockade.loop",
)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", READ_TOOL_MODULES)
def test_read_tool_modules_import_nothing_that_reaches_storage_keys_or_the_environment(module: str) -> None:
    imports = imported_modules(PACKAGE / module)
    bad = sorted(m for m in imports if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert bad == []


def test_the_import_scan_sees_imports() -> None:
    # Control: the scanner finds the imports this very file makes.
    assert "ast" in imported_modules(Path(__file__)) and "pytest" in imported_modules(Path(__file__))
