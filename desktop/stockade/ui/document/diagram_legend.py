"""The diagram's legend: element shapes, flows, boundaries and the threat-badge colours."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QWidget

from stockade.report.diagram_svg import BADGE_COLORS
from stockade.thf.model import Severity

_SHAPES = ("External entity", "Process / service", "Data store", "Data flow", "Trust boundary")
_BADGES: tuple[tuple[Severity | None, str], ...] = (
    *((s, s.value) for s in Severity), (None, "all handled"),
)
_FILLS = ("#e0e7ff", "#cffafe", "#fef3c7")


class DiagramLegend(QWidget):
    """A small panel in the diagram's bottom-left corner (View → Diagram legend toggles it)."""

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.setObjectName("diagramLegend")
        self.setAccessibleName("Diagram legend")
        self.setAccessibleDescription(
            "Shapes: " + ", ".join(_SHAPES) + ". Threat badges by worst open severity: "
            + ", ".join(label for _s, label in _BADGES) + "."
        )
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.resize(318, 132)

    def place(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.move(10, max(0, parent.height() - self.height() - 28))

    def paintEvent(self, _event: Any) -> None:
        """Qt override: paintEvent."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        palette = self.palette()
        panel = QColor(palette.color(QPalette.ColorRole.Window))
        panel.setAlpha(235)
        painter.setPen(QPen(palette.color(QPalette.ColorRole.Mid)))
        painter.setBrush(QBrush(panel))
        painter.drawRoundedRect(QRectF(0.5, 0.5, self.width() - 1.0, self.height() - 1.0), 6, 6)
        text = palette.color(QPalette.ColorRole.WindowText)
        outline = QPen(QColor("#334155"), 1.3)
        for n, label in enumerate(_SHAPES):
            x, y = 10.0 + (n % 2) * 154.0, 8.0 + (n // 2) * 20.0
            box = QRectF(x, y, 26.0, 14.0)
            painter.setPen(outline)
            if n < 3:
                painter.setBrush(QBrush(QColor(_FILLS[n])))
            if n == 0:
                painter.drawRect(box)
            elif n == 1:
                painter.drawRoundedRect(box, 6, 6)
            elif n == 2:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawRect(box)
                painter.setPen(QPen(QColor("#334155"), 2.0))
                painter.drawLine(box.topLeft(), box.topRight())
                painter.drawLine(box.bottomLeft(), box.bottomRight())
            elif n == 3:
                painter.setPen(QPen(QColor("#64748b"), 1.5))
                painter.drawLine(QPointF(x, y + 7.0), QPointF(x + 24.0, y + 7.0))
                painter.setBrush(QBrush(QColor("#64748b")))
                painter.drawPolygon([QPointF(x + 26.0, y + 7.0), QPointF(x + 19.0, y + 3.0),
                                     QPointF(x + 19.0, y + 11.0)])
            else:
                pen = QPen(QColor("#ef4444"), 1.5)
                pen.setStyle(Qt.PenStyle.DashLine)
                painter.setPen(pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRoundedRect(box, 4, 4)
            painter.setPen(QPen(text))
            painter.drawText(QRectF(x + 34.0, y - 2.0, 120.0, 18.0),
                             int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), label)
        y = 8.0 + 3 * 20.0
        painter.drawText(QRectF(10.0, y, 300.0, 16.0),
                         int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                         "Threat badges (worst open):")
        y += 20.0
        for n, (severity, label) in enumerate(_BADGES):
            x = 10.0 + (n % 3) * 100.0
            row_y = y + (n // 3) * 20.0
            painter.setPen(QPen(QColor("white"), 1.2))
            painter.setBrush(QBrush(QColor(BADGE_COLORS[severity])))
            painter.drawEllipse(QPointF(x + 7.0, row_y + 8.0), 7.0, 7.0)
            painter.setPen(QPen(text))
            painter.drawText(QRectF(x + 18.0, row_y, 82.0, 16.0),
                             int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), label)
        painter.end()
