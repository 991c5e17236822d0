"""Desktop app bootstrap: QApplication, the qasync event loop, the main window, `--screenshot`."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtGui import QPainter
    from PySide6.QtWidgets import QDialog

    from stockade.ui.common.prompts import Prompts
    from stockade.ui.document.open_document import HistoryFactory
    from stockade.ui.main_window import MainWindow

SCREENSHOT_SIZE = (1280, 800)


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


def run_app(file: str | None, *, screenshot: str | None = None, tab: str | None = "tree") -> int:
    """Open the main window (on `file` if given) and run until it closes; returns the exit code.

    With `screenshot`, the window is rendered offscreen once loading is done, saved as PNG
    and the app exits: 0 when the image was written, 1 when the file or image failed.
    """
    if screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        # Must be set before the QApplication exists; a screenshot never needs a display.
        os.environ["QT_QPA_PLATFORM"] = "offscreen"

    # Qt is imported here, not at module level, so `stockade --help` and the subcommands never
    # pay for it.
    import qasync
    from PySide6.QtWidgets import QApplication

    from stockade.ui.common import crash_handler
    from stockade.ui.common.prompts import StderrPrompts

    crash_handler.install_log_file()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("Stockade")
    app.setOrganizationName("Stockade")
    crash_handler.install_exception_hook()

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = create_main_window(prompts=StderrPrompts() if screenshot else None)
    if screenshot:
        window.resize(*SCREENSHOT_SIZE)
    closed: asyncio.Future[None] = loop.create_future()

    def on_last_window_closed() -> None:
        if not closed.done():
            closed.set_result(None)

    app.lastWindowClosed.connect(on_last_window_closed)
    with loop:
        return loop.run_until_complete(_run(window, closed, file, screenshot, tab or "tree"))


async def _run(
    window: MainWindow,
    closed: asyncio.Future[None],
    file: str | None,
    screenshot: str | None,
    tab: str,
) -> int:
    from stockade.ui.main_window import AppTab

    window.show()
    opened = True
    if file:
        opened = await window.open_file(Path(file))
    known = {t.value for t in AppTab}
    window.show_tab(AppTab(tab) if tab in known else AppTab.TREE)
    if screenshot:
        if not opened:
            return 1
        return await _save_screenshot(window, Path(screenshot))
    await closed
    return 0


async def _save_screenshot(window: MainWindow, path: Path) -> int:
    from PySide6.QtGui import QPainter
    from PySide6.QtWidgets import QApplication, QDialog

    window.prepare_screenshot()
    # So the status bar shows answers, not "checking".
    await window.refresh_keyring_status()
    await window.validation_settled()
    # A few turns of the loop let layouts settle and the lazily drawn diagram build and fit.
    for _ in range(5):
        QApplication.processEvents()
        await asyncio.sleep(0.02)
    if window.tabs.currentWidget() is window.diagram_view:
        window.diagram_view.fit()  # the view only has its final size now
        QApplication.processEvents()
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
