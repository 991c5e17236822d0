"""Where Stockade keeps its data: `$STOCKADE_HOME` when set, else the platform's data folder."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "Stockade"


def data_dir(create: bool = True) -> Path:
    """The folder holding the database, settings and logs (never keys)."""
    override = os.environ.get("STOCKADE_HOME")
    path = Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def resources_dir() -> Path:
    """Bundled resources: the source tree's `resources/`, or the packaged build's copy."""
    override = os.environ.get("STOCKADE_RESOURCES")
    if override:
        return Path(override)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:  # a PyInstaller build unpacks data files beside the frozen modules
        return Path(bundle) / "resources"
    return _source_resources()


@functools.lru_cache(maxsize=1)
def _source_resources() -> Path:
    # Found once: resolving the path and probing the folders costs more than a provider
    # request's other preparation, and every request asks (model list, preflight).
    here = Path(__file__).resolve()
    for candidate in (here.parent / "resources", here.parents[2] / "resources"):
        if (candidate / "catalog.json").is_file():
            return candidate
    return here.parents[2] / "resources"
