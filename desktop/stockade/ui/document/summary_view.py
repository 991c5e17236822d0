"""The Summary tab: threats by STRIDE category and severity, status counts, open critical/high."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from stockade.thf.model import MitigationStatus, Severity, StrideCategory, Threat, ThreatModel

NO_MITIGATION_LABEL = "no mitigation"
MAX_URGENT_ROWS = 500
"""Rows in the open critical/high table; past this a table is no longer a useful view."""
_OPEN = (None, MitigationStatus.NOT_STARTED, MitigationStatus.IN_PROGRESS)
_URGENT = (Severity.CRITICAL, Severity.HIGH)


def is_unmitigated(threat: Threat) -> bool:
    """Open work: no mitigation block, or one that is not started or still in progress."""
    status = threat.mitigation.status if threat.mitigation is not None else None
    return status in _OPEN


@dataclass(frozen=True)
class ThreatSummary:
    """The numbers the Summary tab shows, computed without Qt (also handy in tests)."""

    by_category_severity: dict[tuple[StrideCategory, Severity], int]
    by_status: dict[str, int]
    unmitigated_urgent: tuple[Threat, ...]
    total: int

    @classmethod
    def of(cls, document: ThreatModel) -> ThreatSummary:
        grid: dict[tuple[StrideCategory, Severity], int] = {}
        statuses: dict[str, int] = {s.value: 0 for s in MitigationStatus}
        statuses[NO_MITIGATION_LABEL] = 0
        urgent: list[Threat] = []
        for threat in document.threats:
            key = (threat.category, threat.severity)
            grid[key] = grid.get(key, 0) + 1
            status = threat.mitigation.status.value if threat.mitigation else NO_MITIGATION_LABEL
            statuses[status] += 1
            if threat.severity in _URGENT and is_unmitigated(threat):
                urgent.append(threat)
        severity_rank = {s: i for i, s in enumerate(Severity)}
        urgent.sort(key=lambda t: severity_rank[t.severity])  # stable: document order within
        return cls(grid, statuses, tuple(urgent), len(document.threats))


def _cell(text: str, *, align_right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _read_only_table(name: str, parent: QWidget) -> QTableWidget:
    table = QTableWidget(parent)
    table.setObjectName(name)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    return table


class SummaryView(QWidget):
    """Counts over the threats of the open document; rebuilt on every change."""

    entitySelected = Signal(str, str)
    """(section, id) when the user picks a threat in the open critical/high list."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summaryView")
        self.total_label = QLabel(self)
        self.total_label.setObjectName("summaryTotal")

        self.matrix = _read_only_table("summaryMatrix", self)
        severities = list(Severity)
        self.matrix.setColumnCount(len(severities) + 1)
        self.matrix.setHorizontalHeaderLabels([s.value for s in severities] + ["total"])
        self.matrix.setRowCount(len(StrideCategory))
        self.matrix.setVerticalHeaderLabels([c.value for c in StrideCategory])
        self.matrix.verticalHeader().setVisible(True)
        self.matrix.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)

        self.statuses = _read_only_table("summaryStatuses", self)
        self.statuses.setColumnCount(2)
        self.statuses.setHorizontalHeaderLabels(["Status", "Threats"])
        self.statuses.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)

        self.urgent = _read_only_table("summaryUnmitigated", self)
        self.urgent.setColumnCount(5)
        self.urgent.setHorizontalHeaderLabels(["Severity", "Id", "Title", "Category", "Status"])
        self.urgent.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.urgent.cellClicked.connect(self._on_urgent_cellClicked)

        matrix_box = self._box("summaryMatrixBox", "Threats by STRIDE category and severity", self.matrix)
        status_box = self._box("summaryStatusBox", "Mitigation status", self.statuses)
        urgent_box = self._box("summaryUnmitigatedBox", "Unmitigated critical and high threats", self.urgent)

        top = QHBoxLayout()
        top.addWidget(matrix_box, 3)
        top.addWidget(status_box, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.total_label)
        layout.addLayout(top)
        layout.addWidget(urgent_box)
        self.summary: ThreatSummary | None = None
        self._stale = False

    def _box(self, name: str, title: str, content: QWidget) -> QGroupBox:
        box = QGroupBox(title, self)
        box.setObjectName(name)
        QVBoxLayout(box).addWidget(content)
        return box

    def set_document(self, document: ThreatModel | None) -> None:
        """Recount now; the tables are refilled when the tab is (or next becomes) visible."""
        self.summary = ThreatSummary.of(document) if document is not None else None
        self._stale = True
        if self.isVisible():
            self._fill()

    def ensure_filled(self) -> None:
        if self._stale:
            self._fill()

    def showEvent(self, event: QShowEvent) -> None:
        """Qt override: showEvent (fills tables deferred while the tab was hidden)."""
        super().showEvent(event)
        self.ensure_filled()

    def _fill(self) -> None:
        self._stale = False
        summary = self.summary
        severities = list(Severity)
        if summary is None:
            self.total_label.setText("No document open.")
        else:
            self.total_label.setText(
                f"{summary.total} threat{'s' if summary.total != 1 else ''}; "
                f"{len(summary.unmitigated_urgent)} critical or high still open."
            )
        for row, category in enumerate(StrideCategory):
            row_total = 0
            for column, severity in enumerate(severities):
                count = summary.by_category_severity.get((category, severity), 0) if summary else 0
                row_total += count
                self.matrix.setItem(row, column, _cell(str(count), align_right=True))
            self.matrix.setItem(row, len(severities), _cell(str(row_total), align_right=True))
        status_rows = list(summary.by_status.items()) if summary else []
        self.statuses.setRowCount(len(status_rows))
        for row, (status, count) in enumerate(status_rows):
            self.statuses.setItem(row, 0, _cell(status.replace("_", " ")))
            self.statuses.setItem(row, 1, _cell(str(count), align_right=True))
        urgent = summary.unmitigated_urgent if summary else ()
        if len(urgent) > MAX_URGENT_ROWS:
            self.total_label.setText(
                self.total_label.text() + f" The list shows the first {MAX_URGENT_ROWS}."
            )
            urgent = urgent[:MAX_URGENT_ROWS]
        self.urgent.setRowCount(len(urgent))
        for row, threat in enumerate(urgent):
            status = threat.mitigation.status.value if threat.mitigation else NO_MITIGATION_LABEL
            for column, text in enumerate(
                (threat.severity.value, threat.id, threat.title, threat.category.value, status)
            ):
                self.urgent.setItem(row, column, _cell(text.replace("_", " ") if column == 4 else text))

    def _on_urgent_cellClicked(self, row: int, _column: int) -> None:
        item = self.urgent.item(row, 1)
        if item is not None:
            self.entitySelected.emit("threats", item.text())
