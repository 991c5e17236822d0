"""The Open Recent list, kept in Stockade's settings file (shared with the command line)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_RECENT = 10


def _settings_module() -> Any | None:
    try:
        import stockade.settings as settings_module
    except ModuleNotFoundError:
        return None
    return settings_module


class RecentFiles:
    """Most-recent-first paths; reads and writes go through `stockade.settings`."""

    def __init__(self) -> None:
        self._paths: list[str] = []
        self.reload()

    @property
    def paths(self) -> list[str]:
        return list(self._paths)

    def reload(self) -> None:
        module = _settings_module()
        if module is None:
            return
        try:
            settings = module.load_settings()
        except Exception as err:  # a damaged settings file must not stop the app opening
            log.warning("recent files unavailable: %s", err)
            return
        self._paths = [str(p) for p in getattr(settings, "recent_files", [])][:MAX_RECENT]

    def add(self, path: Path) -> None:
        text = str(path.resolve())
        self._paths = [text, *(p for p in self._paths if p != text)][:MAX_RECENT]
        self._store()

    def remove(self, path: str) -> None:
        self._paths = [p for p in self._paths if p != path]
        self._store()

    def _store(self) -> None:
        module = _settings_module()
        if module is None:
            return
        try:
            settings = module.load_settings()
            if not hasattr(settings, "recent_files"):
                return
            module.save_settings(settings.model_copy(update={"recent_files": list(self._paths)}))
        except Exception as err:
            log.warning("could not remember recent files: %s", err)
