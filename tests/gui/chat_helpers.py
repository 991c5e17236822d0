"""Helpers for the chat tests: a window whose assistant talks to the fake provider server."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stockade.loop.state import TurnPhase
from stockade.secrets import KeyStore
from stockade.ui.assistant.controller import AssistantController
from stockade.ui.assistant.review_queue import ReviewQueue
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver
from tests.helpers.fake_provider import FakeProviderServer

MODEL = "claude-sonnet-5"
API_KEY = "sk-ant-api03-ChatPaneTestKey0123456789abcdef"


def use_fake_server(monkeypatch: pytest.MonkeyPatch, server: FakeProviderServer) -> None:
    """Point the real Anthropic SDK at the fake server (the SDK's own `ANTHROPIC_BASE_URL`,
    which Stockade honours and checks like any endpoint) and store a key in the keyring."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    KeyStore().set_key("anthropic", API_KEY)


def copy_fixture(tmp_path: Path, name: str = "v1.0-canonical-full.thf") -> Path:
    target = tmp_path / "model.thf"
    shutil.copy(THF_FIXTURES / name, target)
    return target


def assistant(driver: WindowDriver) -> AssistantController:
    controller: AssistantController = driver.window.assistant
    driver.qtbot.waitUntil(lambda: controller.ready, timeout=10_000)
    return controller


def choose(controller: AssistantController, provider: str = "anthropic",
           model: str = MODEL) -> None:
    from stockade.ui.assistant.controller import model_choices

    controller.pane.set_choices(model_choices(), provider, model)
    assert controller.pane.selection() == (provider, model)


def send(driver: WindowDriver, controller: AssistantController, prompt: str) -> None:
    controller.pane.prompt_edit.setPlainText(prompt)
    before = controller.turn
    controller.pane.send_button.click()
    # Generous: the first turn of a process imports the provider SDKs (seconds on a busy box).
    driver.qtbot.waitUntil(lambda: controller.turn is not before, timeout=30_000)


def wait_dialog(driver: WindowDriver, controller: AssistantController) -> ReviewQueue:
    driver.qtbot.waitUntil(
        lambda: controller.dialog is not None and controller.dialog.isVisible(), timeout=30_000)
    dialog = controller.dialog
    assert dialog is not None
    return dialog


def wait_settled(driver: WindowDriver, controller: AssistantController) -> None:
    def settled() -> bool:
        turn = controller.turn
        return (turn is not None and turn.state.phase is TurnPhase.SETTLED
                and not controller._looping and not controller.pane.busy)

    driver.qtbot.waitUntil(settled, timeout=30_000)


def card_statuses(controller: AssistantController) -> dict[str, str]:
    view = controller.pane.current_turn
    assert view is not None
    return {cid: card.status for cid, card in view.cards.items()}


def threat_update(call_id: str, threat_id: str, **updates: Any) -> tuple[str, str, Any]:
    return (call_id, "update_threat",
            {"action": "update_threat", "id": threat_id, "updates": updates})


def threat_delete(call_id: str, threat_id: str) -> tuple[str, str, Any]:
    return (call_id, "delete_threat", {"action": "delete_threat", "id": threat_id})


def approve(queue: ReviewQueue, *call_ids: str) -> list[str]:
    """Select these rows and approve them (the A key's action)."""
    queue.select_calls(call_ids)
    return queue.approve_selected()


def deny(queue: ReviewQueue, *call_ids: str, reason: str | None = None) -> list[str]:
    """Select these rows and deny them (the D key's action, with `reason` typed)."""
    queue.select_calls(call_ids)
    queue.reason_edit.setText(reason or "")
    return queue.deny_selected()


def finish(queue: ReviewQueue) -> None:
    """Continue once every call is decided (the Enter key's action)."""
    assert queue.continue_button.isEnabled(), queue.undecided_ids()
    queue.continue_button.click()


def preview_of(queue: ReviewQueue, call_id: str) -> str:
    """The preview the queue shows beside the list when this row is selected."""
    queue.select_calls([call_id])
    return queue.preview_edit.toPlainText()
