"""SEC-TX-10: the read-tool modules cannot reach stores, providers, secrets, the UI or the OS."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

READ_TOOL_MODULES = (
    "stockade.tools.read_tools",
    "stockade.tools.untrusted",
    "stockade.thf.canonical",
    "stockade.tools.schema",
    "stockade.tools.registry",
    "stockade.tools.runtime",
)
FORBIDDEN_PACKAGES = (
    "stockade.store", "stockade.providers", "stockade.secrets", "stockade.ui",
    "stockade.governance", "stockade.cli", "stockade.loop",
)
FORBIDDEN_IN_TOOLS = {
    "os", "sys", "subprocess", "socket", "sqlite3", "shutil", "keyring", "platformdirs",
    "http", "urllib", "httpx", "requests", "anthropic", "openai", "PySide6", "qasync",
}


def _imports(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _closure(roots: tuple[str, ...]) -> dict[str, set[str]]:
    """Every stockade module reachable from `roots`, with its direct imports (lazy ones too)."""
    graph: dict[str, set[str]] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in graph:
            continue
        imports = _imports(module)
        graph[module] = imports
        todo += [name for name in imports if name.startswith("stockade.") and _is_module(name)]
    return graph


def _is_module(name: str) -> bool:
    # `from stockade.x import Name` lists `stockade.x.Name`, which is usually not a module.
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return False
    return spec is not None and bool(spec.origin) and str(spec.origin).endswith(".py")


def test_read_tools_reach_no_store_provider_secret_ui_or_governance_module() -> None:
    graph = _closure(("stockade.tools.read_tools",))
    for module, imports in graph.items():
        for name in (module, *imports):
            assert not name.startswith(FORBIDDEN_PACKAGES), f"{module} reaches {name}"


def test_read_tool_modules_import_no_os_network_or_storage_library() -> None:
    for module in READ_TOOL_MODULES:
        tops = {name.split(".")[0] for name in _imports(module)}
        assert not tops & FORBIDDEN_IN_TOOLS, (module, tops & FORBIDDEN_IN_TOOLS)


def test_read_tool_modules_never_touch_the_environment() -> None:
    for module in READ_TOOL_MODULES:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        source = Path(spec.origin).read_text(encoding="utf-8")
        assert "environ" not in source and "getenv" not in source, module


def test_the_only_catalog_reach_is_the_read_only_loader() -> None:
    graph = _closure(("stockade.tools.read_tools",))
    assert {"stockade.catalog.registry", "stockade.thf.model", "stockade.tools.untrusted"} <= set(graph)
    catalog_modules = {m for m in graph if m.startswith("stockade.catalog")}
    assert catalog_modules <= {"stockade.catalog", "stockade.catalog.registry"}
