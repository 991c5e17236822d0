"""Desktop app bootstrap: QApplication, the qasync event loop, the main window, `--screenshot`."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from PySide6.QtWidgets import QApplication

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
    path.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(path), "PNG"):
        print(f"stockade: the screenshot could not be written to {path}", file=sys.stderr)
        return 1
    return 0
