"""The Open Recent list, kept in Stockade's settings file (shared with the command line)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from stockade.settings import MAX_RECENT_FILES, Settings, save_settings, settings_path

log = logging.getLogger(__name__)


def _settings_as_they_are() -> Settings | None:
    """The settings file as it is (defaults when missing), or None when it cannot be used.

    Never repairs: moving a damaged file aside and telling the user is the job of the
    assistant's settings load (`read_settings`). Doing it here, first and silently, would
    hide that notice.
    """
    try:
        return Settings.model_validate(json.loads(settings_path().read_text(encoding="utf-8")))
    except FileNotFoundError:
        return Settings()
    except (OSError, ValueError, RecursionError):  # ValueError covers JSON and validation
        return None


class RecentFiles:
    """Most-recent-first paths; reads and writes go through the settings file."""

    def __init__(self) -> None:
        self._paths: list[str] = []
        self.reload()

    @property
    def paths(self) -> list[str]:
        return list(self._paths)

    def reload(self) -> None:
        settings = _settings_as_they_are()
        if settings is not None:
            self._paths = settings.recent_files[:MAX_RECENT_FILES]

    async def add(self, path: Path) -> None:
        """Put `path` first; the settings file is rewritten (with an fsync) off the UI thread."""
        text = str(path.resolve())
        self._paths = [text, *(p for p in self._paths if p != text)][:MAX_RECENT_FILES]
        await asyncio.get_running_loop().run_in_executor(None, self._store, self.paths)

    @staticmethod
    def _store(paths: list[str]) -> None:
        settings = _settings_as_they_are()
        if settings is None:
            return  # a damaged file is not overwritten before it has been moved aside
        try:
            save_settings(settings.model_copy(update={"recent_files": paths}))
        except OSError as err:
            log.warning("could not remember recent files (%s)", type(err).__name__)
