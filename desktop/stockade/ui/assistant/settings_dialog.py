"""The settings dialog: provider, model, local server, keys, turn limits, credit budgets, guard.

Settings are saved through `stockade.settings` (the same file the command line reads). Keys go
to the keyring through `stockade.secrets` and are never shown back, never written to settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from stockade.assistant.errors import REFUSALS, StoreError
from stockade.governance.guards import GuardPolicy
from stockade.secrets import KeyProvider, SecretsError
from stockade.settings import CreditSettings, LimitSettings, Settings
from stockade.ui.assistant.chat_pane import PROVIDER_LABELS
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import text_style

if TYPE_CHECKING:
    from stockade.secrets.keystore import KeyAdmin
    from stockade.ui.assistant.controller import AssistantController

NO_LIMIT = -1
LIMIT_LABELS: dict[str, str] = {
    "max_iterations": "Steps per request",
    "max_tool_calls_per_turn": "Tool calls per request",
    "max_tool_calls_per_iteration": "Tool calls per step",
    "max_retries": "Provider retries",
    "deadline_ms": "Time limit (ms)",
    "reserve_output_tokens": "Answer length (tokens)",
}
GUARD_LABELS: dict[GuardPolicy, str] = {
    GuardPolicy.REDACT: "Hide secrets found in text before sending",
    GuardPolicy.BLOCK: "Refuse to send text that contains secrets",
}


def _key_status_text(status: Any) -> str:
    if status.problem:
        return str(status.problem)
    if status.source.value == "env":
        return f"Using {status.env_var} from the environment"
    if status.source.value == "keyring":
        return "Key stored in the keyring"
    if status.source.value == "session":
        return "Key kept for this session only"
    return "No key stored"


class SettingsDialog(QDialog):
    """Edits a copy of the settings; Save writes them, Cancel drops every change but keys."""

    def __init__(self, controller: AssistantController, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle("Assistant settings")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self._controller = controller
        self._future: asyncio.Future[bool] | None = None
        self._saved = False
        self._closed = False  # finished: widgets may be gone, late results are dropped
        settings = controller.settings
        layout = QVBoxLayout(self)

        general = QGroupBox("Provider", self)
        form = QFormLayout(general)
        self.provider_combo = QComboBox(general)
        self.provider_combo.setObjectName("settingsProviderCombo")
        for name, label in PROVIDER_LABELS.items():
            self.provider_combo.addItem(label, name)
        self.provider_combo.setCurrentIndex(max(self.provider_combo.findData(settings.provider), 0))
        self.model_combo = QComboBox(general)
        self.model_combo.setObjectName("settingsModelCombo")
        self._models = dict(settings.models)
        self._shown_provider: str = settings.provider
        self._fill_models(settings.provider)
        self.provider_combo.currentIndexChanged.connect(self._on_provider_combo_changed)
        self.base_url_edit = QLineEdit(settings.endpoints.local, general)
        self.base_url_edit.setObjectName("settingsBaseUrlEdit")
        self.base_url_edit.setAccessibleName("Local server URL")
        self.endpoint_edits: dict[str, QLineEdit] = {}
        form.addRow("Provider", self.provider_combo)
        form.addRow("Model", self.model_combo)
        form.addRow("Local server URL", self.base_url_edit)
        for name, label in (("anthropic", "Anthropic address"), ("openai", "OpenAI address")):
            edit = QLineEdit(getattr(settings.endpoints, name) or "", general)
            edit.setObjectName(f"settingsEndpoint_{name}")
            edit.setAccessibleName(label)
            edit.setPlaceholderText("the official endpoint (or your gateway's https:// URL)")
            self.endpoint_edits[name] = edit
            form.addRow(label, edit)
        layout.addWidget(general)

        keys = QGroupBox("API keys", self)
        keys_layout = QVBoxLayout(keys)
        self.keyring_label = plain_label("Checking the keyring…", keys)
        self.keyring_label.setObjectName("settingsKeyringStatus")
        self.keyring_label.setWordWrap(True)
        keys_layout.addWidget(self.keyring_label)
        key_form = QFormLayout()
        self.key_edits: dict[str, QLineEdit] = {}
        self.key_status: dict[str, QLabel] = {}
        self.key_set_buttons: dict[str, QPushButton] = {}
        self.key_delete_buttons: dict[str, QPushButton] = {}
        for provider in KeyProvider:
            name = provider.value
            row = QHBoxLayout()
            edit = QLineEdit(keys)
            edit.setObjectName(f"keyEdit_{name}")
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.setPlaceholderText("Paste a new key")
            set_button = QPushButton("Save key", keys)
            set_button.setObjectName(f"keySetButton_{name}")
            delete_button = QPushButton("Delete", keys)
            delete_button.setObjectName(f"keyDeleteButton_{name}")
            status = plain_label("", keys)
            status.setObjectName(f"keyStatus_{name}")
            row.addWidget(edit, 1)
            row.addWidget(set_button)
            row.addWidget(delete_button)
            key_form.addRow(PROVIDER_LABELS.get(name, name), row)
            key_form.addRow("", status)
            set_button.clicked.connect(lambda _c=False, p=name: self._spawn(self.set_key(p)))
            delete_button.clicked.connect(lambda _c=False, p=name: self._spawn(self.delete_key(p)))
            self.key_edits[name] = edit
            self.key_status[name] = status
            self.key_set_buttons[name] = set_button
            self.key_delete_buttons[name] = delete_button
        keys_layout.addLayout(key_form)
        layout.addWidget(keys)

        limits = QGroupBox("Limits for one request", self)
        limits_form = QFormLayout(limits)
        self.limit_spins: dict[str, QSpinBox] = {}
        for name, field in LimitSettings.model_fields.items():
            spin = QSpinBox(limits)
            spin.setObjectName(f"limit_{name}")
            high = next((m.le for m in field.metadata if hasattr(m, "le")), 1_000_000)
            spin.setRange(1, int(high))
            spin.setValue(int(getattr(settings.limits, name)))
            limits_form.addRow(LIMIT_LABELS.get(name, name), spin)
            self.limit_spins[name] = spin
        layout.addWidget(limits)

        credits = QGroupBox("Credits (1 credit = 1/10,000 USD)", self)
        credits_form = QFormLayout(credits)
        self.turn_budget = self._credit_spin("creditsPerTurn", settings.credits.per_turn, False)
        self.day_budget = self._credit_spin("creditsPerDay", settings.credits.per_day, True)
        self.month_budget = self._credit_spin("creditsPerMonth", settings.credits.per_month, True)
        credits_form.addRow("Per request", self.turn_budget)
        credits_form.addRow("Per day", self.day_budget)
        credits_form.addRow("Per month", self.month_budget)
        self.spend_label = plain_label("Spent so far: …", credits)
        self.spend_label.setObjectName("settingsSpendLabel")
        credits_form.addRow("", self.spend_label)
        layout.addWidget(credits)

        guard = QGroupBox("Secrets in text sent to the provider", self)
        guard_form = QFormLayout(guard)
        self.guard_combo = QComboBox(guard)
        self.guard_combo.setObjectName("settingsGuardCombo")
        for policy in GuardPolicy:
            self.guard_combo.addItem(GUARD_LABELS.get(policy, policy.value), policy.value)
        self.guard_combo.setCurrentIndex(
            max(self.guard_combo.findData(GuardPolicy(settings.guard_policy).value), 0))
        guard_form.addRow("Policy", self.guard_combo)
        layout.addWidget(guard)

        self.error_label = plain_label("", self)
        self.error_label.setObjectName("settingsErrorLabel")
        self.error_label.setStyleSheet(text_style("#b91c1c"))
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        layout.addWidget(self.error_label)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("settingsCancelButton")
        self.save_button = QPushButton("Save", self)
        self.save_button.setObjectName("settingsSaveButton")
        self.save_button.setDefault(True)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_button)
        layout.addLayout(buttons)
        self.cancel_button.clicked.connect(self.reject)
        self.save_button.clicked.connect(lambda _c=False: self._spawn(self.save()))
        self.finished.connect(self._on_finished)

    def _credit_spin(self, name: str, value: int | None, optional: bool) -> QSpinBox:
        spin = QSpinBox(self)
        spin.setObjectName(name)
        spin.setRange(NO_LIMIT if optional else 0, 100_000_000)
        spin.setSingleStep(100)
        if optional:
            spin.setSpecialValueText("No limit")
        spin.setValue(NO_LIMIT if value is None else value)
        return spin

    def _spawn(self, coro: Any) -> None:
        self._controller.window.spawn(coro)

    # -- life cycle ------------------------------------------------------------------------

    async def ask(self) -> bool:
        """Show the dialog; True when the settings were saved."""
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        self._spawn(self.refresh_status())
        return await self._future

    def _on_finished(self, _result: int) -> None:
        self._closed = True
        if self._future is not None and not self._future.done():
            self._future.set_result(self._saved)
        self.deleteLater()

    def _on_provider_combo_changed(self, _index: int) -> None:
        self._models[self._shown_provider] = self.chosen_model()
        provider = str(self.provider_combo.currentData())
        self._shown_provider = provider
        self._fill_models(provider)

    def _fill_models(self, provider: str) -> None:
        """The listed models of `provider`; a local server's model name is typed in."""
        from stockade.protocol.models import models_for

        listed = models_for(provider)
        current = self._models.get(provider) or self._controller.settings.model_for(provider)
        self.model_combo.clear()
        configurable = any(m.configurable for m in listed)
        self.model_combo.setEditable(configurable)
        if configurable:
            self.model_combo.addItem(current, current)
        else:
            for model in listed:
                self.model_combo.addItem(model.label, model.id)
            self.model_combo.setCurrentIndex(max(self.model_combo.findData(current), 0))

    def chosen_model(self) -> str:
        if self.model_combo.isEditable():
            return self.model_combo.currentText().strip()
        return str(self.model_combo.currentData() or "")

    # -- keys and spend --------------------------------------------------------------------

    async def refresh_status(self) -> None:
        worker = self._controller.service.worker

        def read_keys() -> tuple[Any, dict[str, Any]]:
            from stockade.secrets import KeyStore

            admin = KeyStore().admin()
            return admin.status(), {p.value: admin.provider_status(p.value) for p in KeyProvider}

        try:
            keyring_status, statuses = await worker.run(read_keys)
        except (StoreError, SecretsError, RuntimeError):
            return
        if self._closed:
            return
        self.keyring_label.setText(keyring_status.message)
        self.keyring_label.setStyleSheet(
            "" if keyring_status.is_secure else text_style("#92400e"))
        for name, status in statuses.items():
            label = self.key_status.get(name)
            if label is not None:
                label.setText(_key_status_text(status))
            button = self.key_delete_buttons.get(name)
            if button is not None:
                button.setEnabled(bool(status.stored))
        await self._refresh_spend()

    async def _refresh_spend(self) -> None:
        try:
            day, month = await self._controller.service.wallet_spend()
        except REFUSALS:
            if not self._closed:
                self.spend_label.setText("Spent so far: not available")
            return
        if self._closed:
            return
        self.spend_label.setText(f"Spent so far: {day} credits today, {month} this month")

    async def set_key(self, provider: str) -> None:
        edit = self.key_edits[provider]
        key = edit.text()
        edit.clear()  # the key leaves the widget at once, whatever happens next
        await self._change_key(lambda admin: admin.set_key(provider, key))

    async def delete_key(self, provider: str) -> None:
        await self._change_key(lambda admin: admin.delete_key(provider))

    async def _change_key(self, change: Callable[[KeyAdmin], object]) -> None:
        """Apply `change` to the keyring on the worker, then show the new key status."""

        def run() -> None:
            from stockade.secrets import KeyStore

            change(KeyStore().admin())

        try:
            await self._controller.service.worker.run(run)
        except (SecretsError, StoreError) as exc:
            if not self._closed:
                self._show_error(str(exc))
            return
        if self._closed:
            return
        self._show_error(None)
        await self.refresh_status()

    def _show_error(self, text: str | None) -> None:
        self.error_label.setText(text or "")
        self.error_label.setVisible(bool(text))

    # -- saving ----------------------------------------------------------------------------

    def edited_settings(self) -> Settings:
        """The settings as edited; raises `ValidationError` with the first bad field."""
        current = self._controller.settings
        provider = str(self.provider_combo.currentData())
        models = dict(self._models)
        model = self.chosen_model()
        if model:
            models[provider] = model

        def optional(spin: QSpinBox) -> int | None:
            return None if spin.value() == NO_LIMIT else spin.value()

        data = current.model_dump(mode="json")
        data.update({
            "provider": provider,
            "models": models,
            "endpoints": {"local": self.base_url_edit.text().strip(),
                          **{name: edit.text().strip() or None
                             for name, edit in self.endpoint_edits.items()}},
            "limits": LimitSettings(**{n: s.value() for n, s in self.limit_spins.items()})
            .model_dump(),
            "credits": CreditSettings(per_turn=self.turn_budget.value(),
                                      per_day=optional(self.day_budget),
                                      per_month=optional(self.month_budget)).model_dump(),
            "guard_policy": str(self.guard_combo.currentData()),
        })
        return Settings.model_validate(data)

    async def save(self) -> bool:
        try:
            settings = self.edited_settings()
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            self._show_error(f"{where}: {message}" if where else message)
            return False
        try:
            await self._controller.save_settings(settings)
        except (OSError, StoreError) as exc:
            if not self._closed:
                self._show_error(f"The settings could not be saved ({type(exc).__name__}).")
            return False
        self._controller.apply_settings(settings)
        if self._closed:
            return True
        self._saved = True
        self.accept()
        return True
