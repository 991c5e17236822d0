"""Helpers for the chat tests: a window whose assistant talks to the fake provider server."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stockade.loop.state import TurnPhase
from stockade.secrets import KeyStore
from stockade.ui.assistant.approval_dialog import ApprovalDialog
from stockade.ui.assistant.controller import AssistantController
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


def wait_dialog(driver: WindowDriver, controller: AssistantController) -> ApprovalDialog:
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
