"""The Qt application object a command-line export needs (fonts, paint devices), made once."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QApplication

_KEEP: list[QApplication] = []


def ensure_application() -> None:
    """Make a `QApplication` if the process has none (offscreen unless a platform is set).

    A full `QApplication`, not a `QGuiApplication`: the same process may open windows later
    (the app after a command, or a test run), and widgets need the full one. It is kept for
    the life of the process because it must outlive every paint device.
    """
    if QApplication.instance() is None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        application = QApplication([])
        application.setObjectName("stockadeExportApplication")
        _KEEP.append(application)
