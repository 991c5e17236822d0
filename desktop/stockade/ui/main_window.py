"""The main window: composes the panes, wires the menus, and owns nothing but that wiring."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMenu,
    QSplitter,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from stockade.paths import data_dir
from stockade.thf.errors import ThfError
from stockade.thf.model import Severity, ThreatModel
from stockade.ui.common import crash_handler
from stockade.ui.common.colors import text_style
from stockade.ui.common.help_menu import HelpMenu
from stockade.ui.common.prompts import Prompts
from stockade.ui.common.recent_files import RecentFiles
from stockade.ui.document.authoring import Authoring
from stockade.ui.document.detail_pane import DetailPane
from stockade.ui.document.diagram_view import DiagramView
from stockade.ui.document.document_commands import REPORT_FORMATS, DocumentCommands
from stockade.ui.document.document_tree import DocumentTreePane
from stockade.ui.document.find_bar import FindBar
from stockade.ui.document.open_document import HistoryFactory, OpenDocument
from stockade.ui.document.summary_view import SummaryView


class AppTab(StrEnum):
    """The tabs `--tab` can show; `tree` is the tree with the detail pane."""

    TREE = "tree"
    DIAGRAM = "diagram"
    SUMMARY = "summary"
    CHAT = "chat"
    CHAT_EDIT = "chat-edit"  # the chat's review queue with a proposal open for editing
    AUTHORING = "authoring"
    """The Details tab with the Add threat dialog open over it (for screenshots)."""


class AssistantHookup(Protocol):
    """What the window asks of the assistant that `ui.app` attaches (never imported here)."""

    def start_screenshot_turn(self) -> None: ...

    def prepare_to_close(self) -> None: ...

    def waiting_calls(self) -> int: ...

    async def settle_before_close(self) -> bool: ...


def window_settings() -> QSettings:
    """Window geometry lives in an ini file in the data folder, never in the OS registry."""
    return QSettings(str(data_dir() / "window.ini"), QSettings.Format.IniFormat)


class MainWindow(QMainWindow):
    """Tree on the left, Details / Diagram / Summary tabs on the right.

    Extension points for the assistant: `assistant_menu` (hidden until it has actions),
    `edit_menu` (Settings…), `view_menu` (audit viewer), `add_side_dock()` for the chat pane and
    `register_tab(AppTab.CHAT, show)` so `--tab chat` can reveal it. The assistant commits
    through `open_document.history` and then calls `open_document.notify_committed()`.
    """

    def __init__(
        self,
        *,
        prompts: Prompts | None = None,
        history_factory: HistoryFactory | None = None,
        probe_keyring: bool = True,
    ) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.prompts = prompts if prompts is not None else Prompts(self)
        self.open_document = OpenDocument(self, history_factory)
        self.recent_files = RecentFiles()
        self.commands = DocumentCommands(self)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._close_approved = False
        self._asking_to_close = False
        self._tab_handlers: dict[AppTab, Callable[[], None]] = {}
        self._validation: asyncio.Task[None] | None = None

        self.authoring = Authoring(self)
        self.tree_pane = DocumentTreePane(self)
        self.find_bar = FindBar(self)
        self.detail_pane = DetailPane(self.open_document, self)
        self.diagram_view = DiagramView(self)
        self.summary_view = SummaryView(self)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("mainTabs")
        self.tabs.addTab(self.detail_pane, "Details")
        self.tabs.addTab(self.diagram_view, "Diagram")
        self.tabs.addTab(self.summary_view, "Summary")
        self._tab_index = {AppTab.TREE: 0, AppTab.DIAGRAM: 1, AppTab.SUMMARY: 2}
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.setObjectName("mainSplitter")
        left = QWidget(self)
        left.setObjectName("leftColumn")
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.find_bar)
        column.addWidget(self.tree_pane)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([480, 800])
        self.setCentralWidget(self.splitter)

        self.validation_label = self._status_label("statusValidation", "No document")
        self.dirty_label = self._status_label("statusDirty", "")
        self.keyring_label = self._status_label("statusKeyring", "Keyring: checking…")

        self._build_menus()
        self._connect()
        self._update_title()
        self._update_edit_actions()
        self.resize(1280, 800)
        self._restore_geometry()
        crash_handler.set_notifier(self._on_unexpected_error)
        if probe_keyring:
            self.spawn(self.refresh_keyring_status())
        self.assistant: AssistantHookup | None = None

    # -- construction -----------------------------------------------------------------------

    def _status_label(self, name: str, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setObjectName(name)
        self.statusBar().addPermanentWidget(label)
        return label

    def _action(
        self,
        menu: QMenu,
        name: str,
        text: str,
        slot: Callable[[], Any],
        shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
    ) -> QAction:
        action = QAction(text, self)
        action.setObjectName(name)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = bar.addMenu("&File")
        self.file_menu.setObjectName("fileMenu")
        self.template_menu = self.file_menu.addMenu("New from template")
        self.template_menu.setObjectName("templateMenu")
        self.template_menu.aboutToShow.connect(self._fill_template_menu)
        self._action(
            self.file_menu, "actionOpen", "&Open…",
            lambda: self.spawn(self.open_with_dialog()), QKeySequence.StandardKey.Open,
        )
        self._action(
            self.file_menu, "actionImport", "&Import…",
            lambda: self.spawn(self.commands.import_with_dialog()),
        )
        self.recent_menu = self.file_menu.addMenu("Open &Recent")
        self.recent_menu.setObjectName("recentMenu")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.file_menu.addSeparator()
        self.save_action = self._action(
            self.file_menu, "actionSave", "&Save",
            lambda: self.spawn(self.save()), QKeySequence.StandardKey.Save,
        )
        self.save_as_action = self._action(
            self.file_menu, "actionSaveAs", "Save &As…",
            lambda: self.spawn(self.save_as()), QKeySequence.StandardKey.SaveAs,
        )
        self.export_diagram_action = self._action(
            self.file_menu, "actionExportDiagram", "Export &diagram…",
            lambda: self.spawn(self.commands.export_diagram_with_dialog()),
        )
        self.export_menu = self.file_menu.addMenu("&Export report")
        self.export_menu.setObjectName("exportMenu")
        for fmt, label in REPORT_FORMATS:
            self._action(
                self.export_menu, f"actionExport{fmt.upper()}", label.split(" (")[0] + "…",
                lambda fmt=fmt: self.spawn(self.export_with_dialog(fmt)),  # type: ignore[misc]
            )
        self.file_menu.addSeparator()
        self._action(self.file_menu, "actionQuit", "&Quit", self.close, QKeySequence.StandardKey.Quit)

        self.edit_menu = bar.addMenu("&Edit")
        self.edit_menu.setObjectName("editMenu")
        self.undo_action = self._action(
            self.edit_menu, "actionUndo", "&Undo", self.open_document.undo, QKeySequence.StandardKey.Undo
        )
        self.redo_action = self._action(
            self.edit_menu, "actionRedo", "&Redo", self.open_document.redo, QKeySequence.StandardKey.Redo
        )
        self.toolbar = QToolBar("Authoring", self)
        self.toolbar.setObjectName("authoringToolbar")
        self.toolbar.setAccessibleName("Authoring toolbar")
        self.addToolBar(self.toolbar)
        self.authoring.install(self.edit_menu, self.toolbar)
        self.find_action = self._action(
            self.edit_menu, "actionFind", "&Find…", self.find_bar.start, QKeySequence.StandardKey.Find
        )
        self.document_menu = bar.addMenu("&Document")
        self.document_menu.setObjectName("documentMenu")
        self.properties_action = self._action(
            self.document_menu, "actionProperties", "&Properties…",
            lambda: self.spawn(self.commands.edit_properties()),
        )

        self.view_menu = bar.addMenu("&View")
        self.view_menu.setObjectName("viewMenu")
        self._action(self.view_menu, "actionShowTree", "&Details", lambda: self.show_tab(AppTab.TREE), "Ctrl+1")
        self._action(
            self.view_menu, "actionShowDiagram", "Dia&gram", lambda: self.show_tab(AppTab.DIAGRAM), "Ctrl+2"
        )
        self._action(
            self.view_menu, "actionShowSummary", "&Summary", lambda: self.show_tab(AppTab.SUMMARY), "Ctrl+3"
        )
        self.view_menu.addSeparator()
        self._action(
            self.view_menu, "actionZoomIn", "Zoom &in", self._zoom_in, QKeySequence.StandardKey.ZoomIn
        )
        self._action(
            self.view_menu, "actionZoomOut", "Zoom &out", self._zoom_out, QKeySequence.StandardKey.ZoomOut
        )
        self._action(self.view_menu, "actionFit", "&Fit diagram", self._fit, "Ctrl+0")
        self.legend_action = self._action(
            self.view_menu, "actionLegend", "Diagram &legend",
            lambda: self.diagram_view.legend.setVisible(self.legend_action.isChecked()),
        )
        self.legend_action.setCheckable(True)
        self.legend_action.setChecked(True)

        self.assistant_menu = bar.addMenu("&Assistant")
        self.assistant_menu.setObjectName("assistantMenu")
        self.assistant_menu.menuAction().setVisible(False)

        self.help_menu = bar.addMenu("&Help")
        self.help_menu.setObjectName("helpMenu")
        self.help_actions = HelpMenu(self)  # About Stockade, Copy diagnostics

    def _connect(self) -> None:
        doc = self.open_document
        doc.documentReplaced.connect(self._on_document_documentReplaced)
        doc.documentChanged.connect(self._on_document_documentChanged)
        doc.dirtyChanged.connect(self._on_document_dirtyChanged)
        doc.pathChanged.connect(self._on_document_pathChanged)
        self.tree_pane.entitySelected.connect(self._on_tree_entitySelected)
        self.tree_pane.addRequested.connect(self._on_tree_addRequested)
        self.tree_pane.deleteRequested.connect(self._on_tree_deleteRequested)
        self.diagram_view.entitySelected.connect(self._on_diagram_entitySelected)
        self.diagram_view.entityMoved.connect(self._on_diagram_entityMoved)
        self.diagram_view.addRequested.connect(self._on_tree_addRequested)
        self.diagram_view.deleteRequested.connect(self._on_tree_deleteRequested)
        self.summary_view.entitySelected.connect(self._on_summary_entitySelected)
        self.authoring.entityAdded.connect(self._on_authoring_entityAdded)
        self.find_bar.matchChosen.connect(self._on_find_bar_matchChosen)

    # -- extension points -------------------------------------------------------------------

    def add_side_dock(self, widget: QWidget, title: str, name: str) -> QDockWidget:
        """Dock a pane (the chat) on the right edge."""
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        return dock

    def register_tab(self, tab: AppTab, show: Callable[[], None]) -> None:
        self._tab_handlers[tab] = show

    def attach_assistant(self, assistant: AssistantHookup) -> None:
        """The assistant's controller registers itself (it builds its own dock and menus)."""
        self.assistant = assistant

    def show_tab(self, tab: AppTab | str) -> None:
        tab = AppTab(tab)
        handler = self._tab_handlers.get(tab)
        if handler is not None:
            handler()
        elif tab is AppTab.AUTHORING:
            self.tabs.setCurrentIndex(self._tab_index[AppTab.TREE])
            document = self.open_document.document
            # A new threat on what the worst existing one targets: a realistic next step.
            worst = min(document.threats, key=lambda t: list(Severity).index(t.severity),
                        default=None) if document is not None else None
            preset = {"element": worst.element} if worst is not None and worst.element else None
            self.spawn(self.authoring.add("threats", preset))
        elif tab in self._tab_index:
            self.tabs.setCurrentIndex(self._tab_index[tab])

    def prepare_screenshot(self) -> None:
        """Show something worth looking at: sections open and the most severe threat selected."""
        if self.assistant is not None:
            self.assistant.start_screenshot_turn()  # --tab chat shows an approval
        document = self.open_document.document
        if document is None:
            return
        self.tree_pane.expand_sections(("elements", "threats"))
        if document.threats:
            worst = min(document.threats, key=lambda t: list(Severity).index(t.severity))
            if self.tree_pane.select_entity("threats", worst.id):
                self._on_tree_entitySelected("threats", worst.id)

    # -- async plumbing ---------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a coroutine on the qasync loop; an exception it raises reaches the crash handler."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)
        return task

    def _on_task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            crash_handler.report_exception(task.exception())  # type: ignore[arg-type]

    # -- file operations (the work is in DocumentCommands) ----------------------------------

    async def open_file(self, path: Path | str) -> bool:
        """Open a file; on any failure the current document stays open and the reason is shown."""
        return await self.commands.open_file(path)

    async def open_with_dialog(self) -> bool:
        return await self.commands.open_with_dialog()

    async def new_from_template(self, template_id: str) -> bool:
        return await self.commands.new_from_template(template_id)

    async def save(self) -> bool:
        return await self.commands.save()

    async def save_as(self) -> bool:
        return await self.commands.save_as()

    async def save_to(self, path: Path) -> bool:
        """Write the live document; on failure it stays dirty and the reason is shown."""
        return await self.commands.save_to(path)

    async def export_with_dialog(self, fmt: str) -> bool:
        return await self.commands.export_with_dialog(fmt)

    async def refresh_keyring_status(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            status = await loop.run_in_executor(None, keyring_status)
        except Exception as err:  # an unusable keyring is a status to show, not a crash
            self.keyring_label.setText("Keyring: unavailable")
            self.keyring_label.setToolTip(f"The keyring could not be checked ({type(err).__name__}).")
            return
        is_secure, message = status
        self.keyring_label.setText("Keyring: secure" if is_secure else "Keyring: NOT secure")
        self.keyring_label.setToolTip(message)
        self.keyring_label.setStyleSheet("" if is_secure else text_style("#b45309"))

    # -- Qt overrides -----------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        """Qt override: closeEvent (unsaved changes are asked about without blocking the loop)."""
        waiting = self.assistant is not None and self.assistant.waiting_calls() > 0
        if self._close_approved or (not self.open_document.is_dirty and not waiting):
            settings = window_settings()
            settings.setValue("geometry", self.saveGeometry())
            settings.setValue("splitter", self.splitter.saveState())
            crash_handler.set_notifier(None)
            if self._validation is not None:
                self._validation.cancel()  # its answer would land on deleted status labels
            if self.assistant is not None:
                self.assistant.prepare_to_close()  # park a turn awaiting approval
            event.accept()
            return
        event.ignore()
        if not self._asking_to_close:  # a second click on the close button asks nothing new
            self._asking_to_close = True
            self.spawn(self._close_after_asking())

    async def _close_after_asking(self) -> None:
        try:
            # Calls the assistant waits on are asked about first (save for later, deny all, or
            # stay), then unsaved changes; either answer may keep the window open.
            approved = self.assistant is None or await self.assistant.settle_before_close()
            if approved and self.open_document.is_dirty:
                approved = await self.commands.settle_unsaved_changes()
        finally:
            self._asking_to_close = False
        if approved:
            self._close_approved = True
            self.close()

    # -- slots ------------------------------------------------------------------------------

    def _on_document_documentReplaced(self) -> None:
        document = self.open_document.document
        self.find_bar.set_document(document)
        self.tree_pane.set_document(document, keep_state=False)
        self.diagram_view.set_document(document, keep_view=False)
        self.summary_view.set_document(document)
        self._update_validation(document)
        self._update_edit_actions()
        self._update_title()

    def _on_document_documentChanged(self) -> None:
        document = self.open_document.document
        self.find_bar.set_document(document)
        self.tree_pane.set_document(document, keep_state=True)
        self.diagram_view.set_document(document, keep_view=True)
        self.summary_view.set_document(document)
        self._update_validation(document)
        self._update_edit_actions()

    def _on_document_dirtyChanged(self, dirty: bool) -> None:
        self.dirty_label.setText("Modified" if dirty else "Saved")
        self._update_title()

    def _on_document_pathChanged(self, _path: str) -> None:
        self._update_title()

    def selected_entity(self) -> tuple[str, str] | None:
        """The entity the detail pane shows (what Delete acts on)."""
        return self.detail_pane.shown

    def select_entity(self, section: str, entity_id: str, source: str = "window") -> None:
        """Select an entity everywhere; unapplied edits in the detail pane are asked about first."""
        if self.detail_pane.shown != (section, entity_id) and self.detail_pane.has_unapplied_edits():
            self.spawn(self._select_after_asking(section, entity_id, source))
        else:
            self._show_selection(section, entity_id, source)

    async def _select_after_asking(self, section: str, entity_id: str, source: str) -> bool:
        previous = self.detail_pane.shown
        if not await self.detail_pane.settle_unapplied(self.prompts):
            if previous is not None:  # Cancel: the selection goes back to the edited entity
                self.tree_pane.select_entity(*previous)
                self._select_in_diagram(*previous)
            return False
        self._show_selection(section, entity_id, source)
        return True

    def _show_selection(self, section: str, entity_id: str, source: str) -> None:
        self.detail_pane.show_entity(section, entity_id)
        if source != "tree":
            self.tree_pane.select_entity(section, entity_id)
        if source != "diagram":
            self._select_in_diagram(section, entity_id)
        self._update_edit_actions()

    def _on_tree_entitySelected(self, section: str, entity_id: str) -> None:
        self.select_entity(section, entity_id, "tree")

    def _select_in_diagram(self, section: str, entity_id: str) -> None:
        diagram_key = (section, entity_id)
        document = self.open_document.document
        if section == "threats" and document is not None:
            # Threats are not drawn; point at what the threat targets instead.
            threat = next((t for t in document.threats if t.id == entity_id), None)
            if threat is not None and threat.element is not None:
                diagram_key = ("elements", threat.element)
            elif threat is not None and threat.flow is not None:
                diagram_key = ("data_flows", threat.flow)
        if not self.diagram_view.select_entity(*diagram_key):
            self.diagram_view.select_entity("", "")  # clears a stale diagram selection

    def _on_diagram_entitySelected(self, section: str, entity_id: str) -> None:
        self.select_entity(section, entity_id, "diagram")

    def _on_diagram_entityMoved(self, section: str, entity_id: str, changes: object) -> None:
        if isinstance(changes, dict):
            self.authoring.move(section, entity_id, changes)

    def _on_summary_entitySelected(self, section: str, entity_id: str) -> None:
        self.select_entity(section, entity_id)
        self.show_tab(AppTab.TREE)

    def _on_tree_addRequested(self, section: str, preset: object) -> None:
        self.spawn(self.authoring.add(section, preset if isinstance(preset, dict) else None))

    def _on_tree_deleteRequested(self, section: str, entity_id: str) -> None:
        self.spawn(self.authoring.delete(section, entity_id))

    def _on_authoring_entityAdded(self, section: str, entity_id: str) -> None:
        self.select_entity(section, entity_id)

    def _on_find_bar_matchChosen(self, section: str, entity_id: str) -> None:
        self.select_entity(section, entity_id)

    def _on_unexpected_error(self, message: str) -> None:
        self.prompts.show_unexpected_error(message)

    # -- helpers ----------------------------------------------------------------------------

    def _update_title(self) -> None:
        doc = self.open_document
        if doc.document is None:
            self.setWindowTitle("Stockade")
            return
        star = "*" if doc.is_dirty else ""
        self.setWindowTitle(f"{doc.display_name}{star} — Stockade")
        self.dirty_label.setText("Modified" if doc.is_dirty else "Saved")

    def _update_edit_actions(self) -> None:
        doc = self.open_document
        self.undo_action.setEnabled(doc.can_undo)
        self.redo_action.setEnabled(doc.can_redo)
        undo_label, redo_label = doc.undo_label, doc.redo_label
        self.undo_action.setText("&Undo" if undo_label is None else f"&Undo: {_short(undo_label)}")
        self.redo_action.setText("&Redo" if redo_label is None else f"&Redo: {_short(redo_label)}")
        has_document = self.open_document.document is not None
        self.save_action.setEnabled(has_document)
        self.save_as_action.setEnabled(has_document)
        self.export_menu.setEnabled(has_document)
        self.export_diagram_action.setEnabled(has_document)
        self.properties_action.setEnabled(has_document)
        self.authoring.update_enabled(has_document, self.detail_pane.shown)

    def _update_validation(self, document: ThreatModel | None) -> None:
        if self._validation is not None:
            # Only the newest document's check may set the label; an older one finishing
            # later would otherwise overwrite it with a stale answer.
            self._validation.cancel()
            self._validation = None
        if document is None:
            self.validation_label.setText("No document")
            self.validation_label.setToolTip("")
            self.validation_label.setStyleSheet("")
            return
        self.validation_label.setText("Checking…")
        self.validation_label.setToolTip("")
        self.validation_label.setStyleSheet("")
        self._validation = self.spawn(self._validate_in_background(document))

    async def validation_settled(self) -> None:
        """Wait until the status bar shows Valid or Invalid for the open document."""
        while self._validation is not None and not self._validation.done():
            # A change during the wait starts a newer check; the loop waits for that one.
            await asyncio.wait({self._validation})

    async def _validate_in_background(self, document: ThreatModel) -> None:
        # Linear, but 10k-entity documents still take tens of milliseconds: off the UI thread.
        problem = await asyncio.get_running_loop().run_in_executor(
            None, _validation_problem, document
        )
        if problem is not None:
            self.validation_label.setText("Invalid")
            self.validation_label.setToolTip(problem)
            self.validation_label.setStyleSheet(text_style("#b91c1c"))
            return
        self.validation_label.setText("Valid")
        self.validation_label.setToolTip("Ids are unique and every reference resolves.")
        self.validation_label.setStyleSheet("")

    def _fill_template_menu(self) -> None:
        from stockade.thf.templates import list_templates

        self.template_menu.clear()
        for template in list_templates():
            action = self.template_menu.addAction(template.name)
            action.setObjectName(f"actionTemplate_{template.id}")
            if template.description:
                action.setToolTip(template.description)
                action.setStatusTip(template.description)
            action.triggered.connect(
                lambda _checked=False, tid=template.id: self.spawn(self.new_from_template(tid))
            )

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        self.recent_files.reload()
        paths = self.recent_files.paths
        if not paths:
            self.recent_menu.addAction("No recent files").setEnabled(False)
            return
        for text in paths:
            action = self.recent_menu.addAction(text)
            action.triggered.connect(lambda _checked=False, p=text: self.spawn(self.open_file(p)))

    def _zoom_in(self) -> None:
        self.show_tab(AppTab.DIAGRAM)
        self.diagram_view.zoom_in()

    def _zoom_out(self) -> None:
        self.show_tab(AppTab.DIAGRAM)
        self.diagram_view.zoom_out()

    def _fit(self) -> None:
        self.show_tab(AppTab.DIAGRAM)
        self.diagram_view.fit()

    def _restore_geometry(self) -> None:
        settings = window_settings()
        geometry = settings.value("geometry")
        if isinstance(geometry, QByteArray | bytes):
            self.restoreGeometry(geometry)
        splitter = settings.value("splitter")
        if isinstance(splitter, QByteArray | bytes):
            self.splitter.restoreState(splitter)


def _validation_problem(document: ThreatModel) -> str | None:
    from stockade.thf.validate import validate_references

    try:
        validate_references(document)
    except ThfError as err:
        return err.message
    return None


def _short(label: str, limit: int = 60) -> str:
    label = label.rstrip(".")
    return label if len(label) <= limit else label[: limit - 1] + "…"


def keyring_status() -> tuple[bool, str]:
    """Whether the keyring keeps keys securely, and the sentence that says so (blocking)."""
    from stockade.secrets.keystore import KeyStore

    status = KeyStore().status()
    return bool(status.is_secure), str(status.message)
