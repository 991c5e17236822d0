"""The diagram SVG rasterised with Qt into PNG bytes (`stockade diagram -o OUT.png`, File → Export)."""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from stockade.ui.export.application import ensure_application

MAX_SIDE_PIXELS = 8192
"""Longest side of an exported PNG: a 10k-element diagram stays a file a viewer can open."""
PIXELS_PER_UNIT = 2.0
"""Small diagrams are rendered at twice their SVG size so text stays crisp when zoomed."""


class DiagramImageError(ValueError):
    """The SVG could not be rendered."""


def svg_to_png(svg: str) -> bytes:
    """PNG bytes of `svg` on a white background, at most `MAX_SIDE_PIXELS` on its long side."""
    ensure_application()
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    if not renderer.isValid():
        raise DiagramImageError("the diagram SVG could not be read back for rendering")
    box = renderer.viewBoxF()
    longest = max(box.width(), box.height(), 1.0)
    scale = min(PIXELS_PER_UNIT, MAX_SIDE_PIXELS / longest)
    width = max(1, round(box.width() * scale))
    height = max(1, round(box.height() * scale))
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.white)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    renderer.render(painter, QRectF(0.0, 0.0, width, height))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]  # the stubs say bytes; PySide6 takes str
        raise DiagramImageError("the diagram image could not be encoded as PNG")
    buffer.close()
    return bytes(data.data())
