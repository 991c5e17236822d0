"""Accent colours that stay readable on the system palette, light or dark."""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette


def is_dark() -> bool:
    """Whether the application's window background is dark (the system's dark mode)."""
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def readable(hex_color: str) -> str:
    """`hex_color` for text on the window background: lightened when that background is dark,
    where the deep reds and ambers chosen for white would be too dim to read."""
    return QColor(hex_color).lighter(185).name() if is_dark() else hex_color


def text_style(hex_color: str, extra: str = "") -> str:
    """A style sheet giving a label readable accent-coloured text."""
    return f"color: {readable(hex_color)};{(' ' + extra) if extra else ''}"


MUTED_STYLE = "color: palette(placeholder-text);"
"""Secondary text (usage, outcomes): the palette's own dimmed colour, right in either mode."""
