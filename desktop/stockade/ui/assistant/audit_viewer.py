"""The audit viewer: runs and their trajectory events, and a check of the whole hash chain.

Events hold ids, names, counts and digests only; they are shown as plain text. All database
reads run on the assistant's governance worker thread.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from stockade.assistant.errors import REFUSALS, failure_text
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import text_style

if TYPE_CHECKING:
    from stockade.assistant.records import RunInfo
    from stockade.assistant.service import AssistantService
    from stockade.governance.trajectory import TrajectoryEvent, VerifyResult

RUN_COLUMNS = ("Run", "Status", "Outcome", "Provider", "Model", "Started", "Document")
EVENT_COLUMNS = ("#", "Kind", "Time", "Payload")


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _item(text: str) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item


def verify_message(result: VerifyResult) -> str:
    if result.ok:
        return f"The audit chain is intact: {result.checked} events checked."
    where = f" (run {result.run_id})" if result.run_id else ""
    return (f"The audit chain is BROKEN at event {result.first_broken}{where}: {result.reason}. "
            f"{result.checked} events before it check out.")


class AuditViewer(QDialog):
    """Runs on the left, the selected run's events on the right, and a Verify chain button."""

    def __init__(self, service: AssistantService, parent: QWidget,
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        super().__init__(parent)
        self.setObjectName("auditViewer")
        self.setWindowTitle("Audit trail")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(1000, 600)
        self._service = service
        self._spawn = spawn
        self._future: asyncio.Future[None] | None = None
        self._runs: list[RunInfo] = []
        self.events: list[TrajectoryEvent] = []
        self._closed = False  # finished: widgets may be gone, late results are dropped
        layout = QVBoxLayout(self)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.runs_table = QTableWidget(0, len(RUN_COLUMNS), splitter)
        self.runs_table.setObjectName("auditRunsTable")
        self.runs_table.setHorizontalHeaderLabels(list(RUN_COLUMNS))
        self.runs_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.runs_table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.events_table = QTableWidget(0, len(EVENT_COLUMNS), splitter)
        self.events_table.setObjectName("auditEventsTable")
        self.events_table.setHorizontalHeaderLabels(list(EVENT_COLUMNS))
        self.events_table.horizontalHeader().setStretchLastSection(True)
        self.events_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.payload_view = QPlainTextEdit(splitter)
        self.payload_view.setObjectName("auditPayloadView")
        self.payload_view.setReadOnly(True)
        layout.addWidget(splitter, 1)
        footer = QHBoxLayout()
        self.result_label = plain_label("", self)
        self.result_label.setObjectName("auditVerifyResult")
        self.result_label.setWordWrap(True)
        self.verify_button = QPushButton("Verify chain", self)
        self.verify_button.setObjectName("auditVerifyButton")
        self.close_button = QPushButton("Close", self)
        self.close_button.setObjectName("auditCloseButton")
        footer.addWidget(self.result_label, 1)
        footer.addWidget(self.verify_button)
        footer.addWidget(self.close_button)
        layout.addLayout(footer)
        self.runs_table.itemSelectionChanged.connect(self._on_runs_table_selectionChanged)
        self.events_table.itemSelectionChanged.connect(self._on_events_table_selectionChanged)
        self.verify_button.clicked.connect(lambda _c=False: self._spawn(self.verify()))
        self.close_button.clicked.connect(self.accept)
        self.finished.connect(self._on_finished)

    async def ask(self) -> None:
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        await self.load_runs()
        await self._future

    def _on_finished(self, _result: int) -> None:
        self._closed = True
        if self._future is not None and not self._future.done():
            self._future.set_result(None)
        self.deleteLater()

    async def load_runs(self) -> None:
        try:
            rows = await self._service.list_runs()
        except REFUSALS as exc:
            if not self._closed:
                self.result_label.setText(failure_text(exc))
            return
        if self._closed:
            return
        self._runs = rows
        self.runs_table.setRowCount(len(rows))
        for i, run in enumerate(rows):
            values = (run.run_id, run.status.value, run.outcome or "", run.provider, run.model,
                      _time(run.created_ms), run.document_path)
            for j, value in enumerate(values):
                self.runs_table.setItem(i, j, _item(value))
        self.runs_table.resizeColumnsToContents()
        if not rows:
            self.result_label.setText("No assistant runs yet.")
        else:
            self.runs_table.selectRow(0)

    def _on_runs_table_selectionChanged(self) -> None:
        rows = self.runs_table.selectionModel().selectedRows()
        if rows:
            self._spawn(self.load_events(self._runs[rows[0].row()].run_id))

    async def load_events(self, run_id: str) -> None:
        try:
            events = await self._service.audit_events(run_id)
        except REFUSALS as exc:
            if not self._closed:
                self.result_label.setText(failure_text(exc))
            return
        if self._closed:
            return
        self.events = events
        self.events_table.setRowCount(len(events))
        for i, event in enumerate(events):
            payload = json.dumps(event.payload, ensure_ascii=False, sort_keys=True)
            for j, value in enumerate((str(event.seq), event.kind, _time(event.at_ms), payload)):
                self.events_table.setItem(i, j, _item(value))
        self.events_table.resizeColumnsToContents()
        self.payload_view.clear()

    def _on_events_table_selectionChanged(self) -> None:
        rows = self.events_table.selectionModel().selectedRows()
        if not rows:
            return
        event = self.events[rows[0].row()]
        self.payload_view.setPlainText(json.dumps(event.to_json(), ensure_ascii=False, indent=2,
                                                  sort_keys=True))

    async def verify(self) -> VerifyResult | None:
        self.verify_button.setEnabled(False)
        self.result_label.setText("Checking every event…")
        try:
            result = await self._service.verify_audit()
        except REFUSALS as exc:
            if not self._closed:
                self.result_label.setText(failure_text(exc))
            return None
        finally:
            if not self._closed:
                self.verify_button.setEnabled(True)
        if self._closed:
            return result
        if result.checked == 0:
            self.result_label.setText("There is no audit trail yet.")
            return result
        self.result_label.setText(verify_message(result))
        self.result_label.setStyleSheet(
            "" if result.ok else text_style("#b91c1c", "font-weight: bold;"))
        return result
