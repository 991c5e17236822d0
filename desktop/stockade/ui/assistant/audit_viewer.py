"""The audit viewer: runs and their trajectory events, a check of the whole keyed chain, and an
export of one run.

Events hold ids, names, counts and digests only; they are shown as plain text, with a readable
summary beside each: what a committed change did (opened from its sealed summary where this
machine holds the key), who decided a call (the actor and the OS account), an overrun. A chain
that does not check names its first broken event, which is selected and marked. All database
reads run on the assistant's governance worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
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
from stockade.ui.common.prompts import Prompts

if TYPE_CHECKING:
    from stockade.assistant.records import RunInfo
    from stockade.assistant.service import AssistantService
    from stockade.governance.trajectory import TrajectoryEvent, VerifyResult

RUN_COLUMNS = ("Run", "Status", "Outcome", "Provider", "Model", "Started", "Document")
EVENT_COLUMNS = ("#", "Kind", "Time", "Summary", "Payload")
EXPORT_FILTER = "Audit exports (*.jsonl);;All files (*)"
BROKEN_COLOR = QColor("#fecaca")


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _item(text: str) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item


def verify_message(result: VerifyResult) -> str:
    if result.ok:
        kind = "keyed" if result.keyed else "legacy, unkeyed"
        text = f"The audit chain is intact ({kind}): {result.checked} events checked."
        if result.warnings:
            text += " Warning: " + " ".join(result.warnings)
        return text
    where = f" (run {result.run_id})" if result.run_id else ""
    at = f" at event {result.first_broken}" if result.first_broken else ""
    return (f"The audit chain is BROKEN{at}{where}: {result.reason}. "
            f"{result.checked} events before it check out.")


def event_summary(event: TrajectoryEvent, changes: list[str] | None) -> str:
    """One readable line for an event (its payload holds ids, counts and digests only)."""
    payload = event.payload
    if event.kind == "document.committed":
        if changes:
            return "; ".join(changes)
        count = payload.get("changes")
        if isinstance(count, int) and count:
            return f"{count} change(s); their summary is sealed and this machine lacks the key"
        return ""
    if event.kind in ("tool.approved", "tool.denied"):
        verb = "approved" if event.kind == "tool.approved" else "denied"
        who = str(payload.get("actor", "?"))
        os_user = payload.get("os_user")
        by = f"{who} (OS user {os_user})" if os_user and f":{os_user}" not in who else who
        return f"{payload.get('tool', '?')} {verb} by {by}"
    if event.kind == "meter.overrun":
        return (f"charged {payload.get('overrun')} credits above the {payload.get('reserved')} "
                "reserved")
    if event.kind == "run.finished":
        return f"{payload.get('outcome')}" + (f" ({payload.get('reason')})"
                                              if payload.get("reason") else "")
    return ""


class AuditViewer(QDialog):
    """Runs on the left, the selected run's events on the right, and a Verify chain button."""

    def __init__(self, service: AssistantService, parent: QWidget,
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any],
                 prompts: Prompts | None = None) -> None:
        super().__init__(parent)
        self._prompts = prompts if prompts is not None else Prompts(self)
        self.setObjectName("auditViewer")
        self.setWindowTitle("Audit trail")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(1000, 600)
        self._service = service
        self._spawn = spawn
        self._future: asyncio.Future[None] | None = None
        self._runs: list[RunInfo] = []
        self.events: list[TrajectoryEvent] = []
        self.changes: dict[int, list[str]] = {}
        self.run_id: str | None = None
        self.broken: VerifyResult | None = None
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
        self.export_button = QPushButton("Export…", self)
        self.export_button.setObjectName("auditExportButton")
        self.export_button.setToolTip("Save the selected run's events, sealed with the chain "
                                      "head, as JSON lines ('stockade audit verify --export' "
                                      "checks the file)")
        self.export_button.setEnabled(False)
        self.close_button = QPushButton("Close", self)
        self.close_button.setObjectName("auditCloseButton")
        footer.addWidget(self.result_label, 1)
        footer.addWidget(self.verify_button)
        footer.addWidget(self.export_button)
        footer.addWidget(self.close_button)
        layout.addLayout(footer)
        self.runs_table.itemSelectionChanged.connect(self._on_runs_table_selectionChanged)
        self.events_table.itemSelectionChanged.connect(self._on_events_table_selectionChanged)
        self.verify_button.clicked.connect(lambda _c=False: self._spawn(self.verify()))
        self.export_button.clicked.connect(lambda _c=False: self._spawn(self.export()))
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
            changes = await self._service.change_summaries(run_id)
        except REFUSALS as exc:
            if not self._closed:
                self.result_label.setText(failure_text(exc))
            return
        if self._closed:
            return
        self.run_id = run_id
        self.events = events
        self.changes = changes
        self.export_button.setEnabled(bool(events))
        self.events_table.setRowCount(len(events))
        for i, event in enumerate(events):
            payload = json.dumps(event.payload, ensure_ascii=False, sort_keys=True)
            summary = event_summary(event, changes.get(event.seq))
            for j, value in enumerate((str(event.seq), event.kind, _time(event.at_ms), summary,
                                       payload)):
                self.events_table.setItem(i, j, _item(value))
        self.events_table.resizeColumnsToContents()
        self.payload_view.clear()
        self._mark_broken()

    def _mark_broken(self) -> None:
        """Select and colour the event the last verification named as the first broken one."""
        broken = self.broken
        if broken is None or broken.first_broken is None or broken.run_id != self.run_id:
            return
        for i, event in enumerate(self.events):
            if event.seq == broken.first_broken:
                for j in range(self.events_table.columnCount()):
                    cell = self.events_table.item(i, j)
                    if cell is not None:
                        cell.setBackground(QBrush(BROKEN_COLOR))
                self.events_table.selectRow(i)
                return

    def _on_events_table_selectionChanged(self) -> None:
        rows = self.events_table.selectionModel().selectedRows()
        if not rows:
            return
        event = self.events[rows[0].row()]
        shown = event.to_json()
        if event.seq in self.changes:
            shown["changes"] = self.changes[event.seq]
        self.payload_view.setPlainText(json.dumps(shown, ensure_ascii=False, indent=2,
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
        self.broken = None if result.ok else result
        if not result.ok and result.run_id:
            row = next((i for i, run in enumerate(self._runs) if run.run_id == result.run_id),
                       None)
            if row is not None and result.run_id != self.run_id:
                self.runs_table.selectRow(row)  # loads its events, then marks the broken one
            else:
                self._mark_broken()
        return result

    async def export(self) -> str | None:
        """Save the selected run's export (events, changes, sealing line) where the user says."""
        run_id = self.run_id
        if run_id is None:
            return None
        path = await self._prompts.choose_save_path(f"{run_id}.jsonl", EXPORT_FILTER,
                                                    "Export the audit trail of this run")
        if path is None or self._closed:
            return None
        try:
            lines = await self._service.export_audit(run_id)
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: _write_export(path, lines))
        except REFUSALS as exc:
            if not self._closed:
                self.result_label.setText(failure_text(exc))
            return None
        except OSError as exc:
            if not self._closed:
                self.result_label.setText(f"The export could not be written to {path}: "
                                          f"{exc.strerror or type(exc).__name__}.")
            return None
        if not self._closed:
            self.result_label.setStyleSheet("")
            self.result_label.setText(f"Exported {len(lines) - 1} events of {run_id} to {path}.")
        return path


def _write_export(path: str, lines: list[str]) -> None:
    """Write the export atomically (a half-written trail would not verify)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write("\n".join(lines) + "\n")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
