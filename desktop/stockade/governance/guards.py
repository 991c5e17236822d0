"""Secret guards: find secret-shaped strings before anything is sent, and in the final answer.

The input guard runs on the prompt and on every request about to leave the machine (system
prompt with document text, tool results carrying document content) before any credit is spent;
per settings it redacts each finding to `[redacted-secret]` (default) or blocks the turn. The
output guard redacts the final text. Every tool input a model sends is screened the same way
before any tool prepares it (redacted, or refused with an error naming the fields), so a secret
never enters the document. The provider keys Stockade holds are matched exactly everywhere.
Findings are reported as kinds and counts only — the matched text never leaves this module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from stockade.protocol.messages import ContentBlock, Message, TextBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest
from stockade.protocol.secret_scan import REDACTED, ScanResult, SecretKind, scan
from stockade.secrets.secret_str import SecretStr
from stockade.tools.runtime import refused_input

__all__ = ["REDACTED", "GuardAction", "GuardPolicy", "GuardReport", "GuardStage", "ScanResult",
           "SecretGuard", "SecretKind", "blocked_message", "held_provider_keys", "scan"]


class GuardPolicy(StrEnum):
    REDACT = "redact"
    BLOCK = "block"


class GuardStage(StrEnum):
    """Where a guard looked: the user's prompt, a whole request, or the final answer."""

    INPUT = "input"
    REQUEST = "request"
    OUTPUT = "output"


class GuardAction(StrEnum):
    CLEAN = "clean"
    REDACTED = "redacted"
    BLOCKED = "blocked"


@dataclass(frozen=True, slots=True)
class GuardReport:
    """A guard decision: where, what was done, and kinds/counts found."""

    stage: GuardStage
    action: GuardAction
    kinds: dict[str, int]

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def to_payload(self) -> dict[str, object]:
        return {"stage": self.stage.value, "action": self.action.value, "count": self.count,
                "kinds": dict(sorted(self.kinds.items()))}


def _map_message(message: Message, fix: Callable[[str], str]) -> Message:
    blocks: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            blocks.append(TextBlock(text=fix(block.text)))
        elif isinstance(block, ToolResultBlock):
            blocks.append(replace(block, content=fix(block.content)))
        else:
            blocks.append(block)  # tool calls are the model's own output, replayed verbatim
    return Message(role=message.role, content=tuple(blocks))


def _scan_request(request: ChatRequest,
                  held: tuple[str, ...] = ()) -> tuple[ChatRequest, Counter[str]]:
    found: Counter[str] = Counter()

    def fix(text: str) -> str:
        result = scan(text, held)
        found.update(result.kinds)
        return result.text

    system = fix(request.system)
    messages = tuple(_map_message(m, fix) for m in request.messages)
    return replace(request, system=system, messages=messages), found


class SecretGuard:
    """The input and output guards under one policy, plus the screen on tool inputs.

    `held_keys` are the provider keys Stockade holds: they are matched exactly, whatever their
    shape, in everything the guards look at.
    """

    def __init__(self, policy: GuardPolicy = GuardPolicy.REDACT,
                 held_keys: Sequence[SecretStr] = ()) -> None:
        self.policy = policy
        self._held = tuple(held_keys)

    def _keys(self) -> tuple[str, ...]:
        return tuple(key.reveal() for key in self._held)

    def check_prompt(self, prompt: str) -> tuple[str, GuardReport]:
        """The prompt as it may be sent, and the decision (`blocked` means send nothing)."""
        result = scan(prompt, self._keys())
        return result.text if self.policy is GuardPolicy.REDACT else prompt, \
            self._report(GuardStage.INPUT, result.kinds)

    def check_request(self, request: ChatRequest) -> tuple[ChatRequest, GuardReport]:
        """The request as it may be sent (redacted), and the decision."""
        redacted, kinds = _scan_request(request, self._keys())
        return redacted if self.policy is GuardPolicy.REDACT else request, \
            self._report(GuardStage.REQUEST, kinds)

    def check_output(self, text: str) -> tuple[str, GuardReport]:
        """The final text with secrets redacted (the output guard always redacts)."""
        result = scan(text, self._keys())
        action = GuardAction.REDACTED if result.count else GuardAction.CLEAN
        return result.text, GuardReport(GuardStage.OUTPUT, action, dict(result.kinds))

    def screen_tool_input(self, _tool: str, raw: Any) -> Any:
        """A model's tool input as a tool may see it: unchanged when it holds no secret;
        otherwise, per policy, with each secret replaced by `[redacted-secret]` (redact) or as
        a refused stand-in whose error names the fields (block). Runs before `prepare`, so a
        secret never reaches the document, an approval dialog or the audit digests."""
        held = self._keys()
        found: list[tuple[str, Counter[str]]] = []

        def fix(text: str, path: str) -> str:
            result = scan(text, held)
            if result.count:
                found.append((path or "input", result.kinds))
            return result.text

        screened = _map_strings(raw, fix)
        if not found:
            return raw
        if self.policy is GuardPolicy.REDACT:
            return screened
        fields = ", ".join(path for path, _ in found[:5])
        kinds = sorted({k.replace("_", " ") for _, counts in found for k in counts})
        return refused_input(f"{fields}: holds a secret-shaped string ({', '.join(kinds)}); "
                             "secrets are never written into the document, so leave the value "
                             "out")

    def _report(self, stage: GuardStage, kinds: Counter[str]) -> GuardReport:
        if not kinds:
            return GuardReport(stage, GuardAction.CLEAN, {})
        action = GuardAction.BLOCKED if self.policy is GuardPolicy.BLOCK else GuardAction.REDACTED
        return GuardReport(stage, action, dict(kinds))


def _map_strings(value: Any, fix: Callable[[str, str], str], path: str = "") -> Any:
    """`value` with every string replaced by `fix(string, path)` (inputs are bounded in depth
    before this runs: `tools.runtime.input_problem`)."""
    if isinstance(value, str):
        return fix(value, path)
    if isinstance(value, dict):
        return {k: _map_strings(v, fix, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fix, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def held_provider_keys() -> tuple[SecretStr, ...]:
    """The provider keys this machine would send (environment, keyring or session)."""
    from stockade.secrets import KeyProvider, KeyStore, SecretsError

    store = KeyStore()
    held: list[SecretStr] = []
    for provider in KeyProvider:
        try:
            key = store.get_key(provider.value)
        except SecretsError:
            continue
        if key:
            held.append(SecretStr(key))
    return tuple(held)


def blocked_message(report: GuardReport) -> str:
    kinds = ", ".join(k.replace("_", " ") for k in sorted(report.kinds))
    return (f"The turn was not sent: {report.count} secret-shaped string(s) ({kinds}) were found "
            f"in what would go to the model. Remove them, or switch the guard to redact in "
            f"Settings.")
