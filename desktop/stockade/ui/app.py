"""Desktop app bootstrap: QApplication, diagnostics hooks, the qasync loop, the main window,
hand-off to an already running window, file-open events, and `--screenshot`."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFileOpenEvent, QIcon, QPainter
from PySide6.QtWidgets import QApplication, QDialog

if TYPE_CHECKING:
    from stockade.ui.common.prompts import Prompts
    from stockade.ui.common.single_instance import InstanceServer
    from stockade.ui.document.open_document import HistoryFactory
    from stockade.ui.main_window import MainWindow

log = logging.getLogger("stockade.ui")

SCREENSHOT_SIZE = (1280, 800)
DESKTOP_FILE_NAME = "stockade"
"""The desktop entry's name without `.desktop` (packaging/linux/stockade.desktop)."""
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def create_main_window(*, prompts: Prompts | None = None,
                       history_factory: HistoryFactory | None = None,
                       probe_keyring: bool = True) -> MainWindow:
    """The main window with the assistant attached: the one place the app is composed."""
    from stockade.ui.assistant.controller import AssistantController
    from stockade.ui.main_window import MainWindow

    window = MainWindow(prompts=prompts, history_factory=history_factory,
                        probe_keyring=probe_keyring)
    AssistantController(window)
    return window


def app_icon() -> QIcon:
    """Stockade's icon at every size `packaging/render_icons.py` drew (empty when none is found)."""
    from stockade.paths import resources_dir

    icon = QIcon()
    folder = resources_dir() / "icons"
    for size in ICON_SIZES:
        png = folder / f"stockade-{size}.png"
        if png.is_file():
            icon.addFile(str(png))
    return icon


class FileOpenEvents(QObject):
    """The desktop asking the running app to open a file (`QFileOpenEvent`: macOS Finder and
    Dock, and any platform that sends one)."""

    fileRequested = Signal(str)

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.setObjectName("fileOpenEvents")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Qt override: eventFilter (a FileOpen event is consumed; anything else passes)."""
        if event.type() == QEvent.Type.FileOpen and isinstance(event, QFileOpenEvent):
            path = event.file() or event.url().toLocalFile()
            if path:
                self.fileRequested.emit(path)
                return True
        return False


class DocumentRequests(QObject):
    """Opens files that arrive from outside the window (the first launch's FILE, later
    launches, file-open events) one after another, bringing the window forward each time."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("documentRequests")
        self._window = window
        self._lock = asyncio.Lock()

    async def open(self, path: str) -> bool:
        # Two requests in quick succession would otherwise ask about unsaved changes twice.
        async with self._lock:
            self.bring_forward()
            return await self._window.open_file(Path(path))

    def request(self, path: str) -> None:
        log.info("opening %s as asked by the desktop or another launch", path)
        self._window.spawn(self.open(path))

    def bring_forward(self) -> None:
        window = self._window
        if window.isMinimized():
            window.setWindowState(window.windowState() & ~Qt.WindowState.WindowMinimized)
        window.show()
        window.raise_()
        window.activateWindow()


def run_app(file: str | None, *, screenshot: str | None = None, tab: str | None = "tree") -> int:
    """Open the main window (on `file` if given) and run until it closes; returns the exit code.

    When a Stockade window already runs for this user and data folder, `file` is handed to it
    and this launch ends (0). With `screenshot`, the window is rendered offscreen once loading
    is done, saved as PNG and the app exits: 0 when the image was written, 1 when the file or
    image failed; a screenshot never hands off.
    """
    if screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        # Must be set before the QApplication exists; a screenshot never needs a display.
        os.environ["QT_QPA_PLATFORM"] = "offscreen"

    import qasync
    from PySide6.QtCore import qVersion

    from stockade.build_info import version_line
    from stockade.ui.common import crash_handler
    from stockade.ui.common.prompts import StderrPrompts

    crash_handler.install_log_file()
    crash_handler.install_native_crash_log()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("Stockade")
    app.setOrganizationName("Stockade")
    app.setDesktopFileName(DESKTOP_FILE_NAME)
    app.setWindowIcon(app_icon())
    crash_handler.install_exception_hook()
    crash_handler.install_qt_message_handler()
    log.info("started (pid %d): %s; Qt %s, platform %s", os.getpid(), version_line(),
             qVersion(), QApplication.platformName())
    if not screenshot and _hand_off(file):
        return 0

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    crash_handler.install_asyncio_handler(loop)
    window = create_main_window(prompts=StderrPrompts() if screenshot else None)
    if screenshot:
        window.resize(*SCREENSHOT_SIZE)
    requests = DocumentRequests(window)
    server = None if screenshot else _listen_for_launches(app, requests)
    closed: asyncio.Future[None] = loop.create_future()

    def on_last_window_closed() -> None:
        if not closed.done():
            closed.set_result(None)

    app.lastWindowClosed.connect(on_last_window_closed)
    try:
        with loop:
            return loop.run_until_complete(
                _run(window, requests, closed, file, screenshot, tab or "tree"))
    finally:
        if server is not None:
            server.close()  # removes the socket file, so the next launch need not take it over


def _instance_name() -> str:
    from stockade.paths import data_dir
    from stockade.ui.common import single_instance

    return single_instance.server_name(single_instance.instance_key(data_dir()))


def _hand_off(file: str | None) -> bool:
    """True when a window already running took `file` (or just came forward)."""
    # QtNetwork is imported here: a screenshot never hands off and does not pay for it.
    from stockade.ui.common import single_instance

    target = os.path.abspath(file) if file else None
    if not single_instance.hand_off(_instance_name(), target):
        return False
    where = f"{file} was opened" if file else "brought forward"
    print(f"stockade: {where} in the Stockade window already running", file=sys.stderr)
    log.info("handed %s to the running window", target or "an activation")
    return True


def _listen_for_launches(app: QApplication, requests: DocumentRequests) -> InstanceServer:
    """Later launches and the desktop's file-open events open their files in this window."""
    from stockade.ui.common import single_instance

    file_events = FileOpenEvents(app)
    file_events.fileRequested.connect(requests.request)
    app.installEventFilter(file_events)
    name = _instance_name()
    server = single_instance.InstanceServer(name, app)
    server.fileRequested.connect(requests.request)
    server.activationRequested.connect(requests.bring_forward)
    if server.listen():
        log.info("ready: later launches hand their files to this window (%s)", name)
    return server


async def _run(
    window: MainWindow,
    requests: DocumentRequests,
    closed: asyncio.Future[None],
    file: str | None,
    screenshot: str | None,
    tab: str,
) -> int:
    from stockade.ui.main_window import AppTab

    window.show()
    opened = True
    if file:
        opened = await requests.open(file)
    known = {t.value for t in AppTab}
    window.show_tab(AppTab(tab) if tab in known else AppTab.TREE)
    if screenshot:
        if not opened:
            return 1
        return await _save_screenshot(window, Path(screenshot))
    await closed
    return 0


async def _save_screenshot(window: MainWindow, path: Path) -> int:
    window.prepare_screenshot()
    # So the status bar shows answers, not "checking".
    await window.refresh_keyring_status()
    await window.validation_settled()
    # A few turns of the event loop (qasync runs Qt's events while we sleep) let layouts
    # settle and the lazily drawn diagram build and fit.
    for _ in range(5):
        await asyncio.sleep(0.02)
    if window.tabs.currentWidget() is window.diagram_view:
        window.diagram_view.fit()  # the view only has its final size now
        await asyncio.sleep(0.02)
    image = window.grab()
    dialogs = [d for d in window.findChildren(QDialog) if d.isVisible() and d.isWindow()]
    if dialogs:
        # Offscreen, a dialog is its own window: draw it over the window, centred, as it shows.
        painter = QPainter(image)
        for dialog in dialogs:
            _draw_dialog(painter, dialog, image.width(), image.height())
        painter.end()
        for dialog in dialogs:
            dialog.reject()
        await asyncio.sleep(0.02)  # the awaited dialogs finish before the loop closes
    path.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(path), "PNG"):
        print(f"stockade: the screenshot could not be written to {path}", file=sys.stderr)
        return 1
    return 0


def _draw_dialog(painter: QPainter, dialog: QDialog, width: int, height: int) -> None:
    """A dialog's picture with a plain title bar and border, as a window manager frames it."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QPalette, QPen

    shot = dialog.grab()
    bar = 28
    x = (width - shot.width()) // 2
    y = max(bar + 4, (height - shot.height()) // 3)
    frame = QRect(x - 1, y - bar - 1, shot.width() + 2, shot.height() + bar + 2)
    painter.fillRect(frame.translated(4, 4), QColor(0, 0, 0, 60))  # a soft drop shadow
    palette = dialog.palette()
    painter.fillRect(frame, palette.color(QPalette.ColorRole.Mid))
    painter.fillRect(QRect(x, y - bar, shot.width(), bar), palette.color(QPalette.ColorRole.Button))
    painter.setPen(QPen(palette.color(QPalette.ColorRole.ButtonText)))
    painter.drawText(QRect(x + 10, y - bar, shot.width() - 20, bar),
                     int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                     dialog.windowTitle())
    painter.drawPixmap(x, y, shot)
