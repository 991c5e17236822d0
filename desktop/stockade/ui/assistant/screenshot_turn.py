"""The `--screenshot … --tab chat` turn: an offline review run to its review queue, synchronously."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QMainWindow

from stockade.assistant.config import TurnConfig, TurnOverrides
from stockade.assistant.review import CallPreview
from stockade.assistant.service import AssistantService
from stockade.loop.history import DocumentSession
from stockade.loop.state import TurnState
from stockade.settings import Settings

SCREENSHOT_PROMPT = "Review this model and propose the threats it is still missing."
SCREENSHOT_TIMEOUT_S = 60
"""A turn that has not reached its first rest point by then is left out of the picture."""


@dataclass(frozen=True, slots=True)
class ScreenshotTurn:
    """Where the turn rested (its state) and the calls it waits on, ready for the dialog."""

    state: TurnState
    views: list[CallPreview]


def run_screenshot_turn(history: DocumentSession, settings: Settings,
                        document_path: str) -> ScreenshotTurn | BaseException | None:
    """Run an offline review turn to its first rest point; the failure, or None on timeout.

    The screenshot is taken right after this returns while the window's loop is busy, so the
    turn runs on a helper thread with its own event loop and its own service. It is a real
    governed turn (audited, metered at zero cost).
    """
    outcome: list[ScreenshotTurn | BaseException] = []

    async def turn() -> None:
        service = AssistantService()
        try:
            config = TurnConfig.from_settings(settings, TurnOverrides(provider="offline",
                                                                      model="stride-rules"))
            turn = await service.start_turn(config, history, document_path=document_path,
                                            prompt=SCREENSHOT_PROMPT)
            views: list[CallPreview] = []
            outcome.append(ScreenshotTurn(turn.state, views))  # shown even without its views
            views.extend(await turn.previews())
            # The picture is taken from the state above; the run itself is closed as
            # cancelled so it is not left "running" (and later marked interrupted).
            turn.cancel()
            await turn.wait_cancelled()
        finally:
            service.close()

    def work() -> None:
        try:
            asyncio.run(turn())
        except Exception as exc:  # the screenshot then shows the pane without a dialog
            if not outcome:
                outcome.append(exc)

    helper = threading.Thread(target=work, name="stockade-screenshot-turn")
    helper.start()
    helper.join(SCREENSHOT_TIMEOUT_S)
    return outcome[0] if outcome else None


def embed_for_screenshot(dialog: QDialog, window: QMainWindow) -> None:
    """Place the dialog inside the window as a child: the grab sees the window only."""
    dialog.setParent(window, Qt.WindowType.Widget)
    dialog.setStyleSheet(f"#{dialog.objectName()} {{ background-color: palette(window); "
                         "border: 2px solid #6b7280; }")
    dialog.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
    # Over the whole window, as a window-modal sheet would sit: the queue needs the width.
    area = window.rect()
    width, height = min(dialog.width(), area.width() - 40), min(dialog.height(), area.height() - 90)
    dialog.setGeometry(area.x() + (area.width() - width) // 2,
                       area.y() + (area.height() - height) // 2, width, height)
    dialog.raise_()
