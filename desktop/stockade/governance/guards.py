"""Secret guards: find secret-shaped strings before anything is sent, and in the final answer.

The input guard runs on the prompt and on every request about to leave the machine (system
prompt with document text, tool results carrying document content) before any credit is spent;
per settings it redacts each finding to `[redacted-secret]` (default) or blocks the turn. The
output guard redacts the final text. Findings are reported as kinds and counts only — the
matched text never leaves this module.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from stockade.protocol.messages import ContentBlock, Message, TextBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest

REDACTED = "[redacted-secret]"


class GuardPolicy(StrEnum):
    REDACT = "redact"
    BLOCK = "block"


class SecretKind(StrEnum):
    API_KEY = "api_key"
    AWS_ACCESS_KEY = "aws_access_key"
    GITHUB_TOKEN = "github_token"
    PRIVATE_KEY = "private_key"
    URL_PASSWORD = "url_password"
    BEARER_TOKEN = "bearer_token"
    HIGH_ENTROPY = "high_entropy"


# Each pattern's group "s" (or the whole match) is the secret to replace; order matters: a PEM
# block is removed before the entropy scan could see its base64 lines.
_PATTERNS: tuple[tuple[SecretKind, re.Pattern[str]], ...] = (
    (SecretKind.PRIVATE_KEY, re.compile(
        r"(?P<s>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # Unterminated: take only the key body (base64, line breaks, JSON-escaped breaks),
        # never the rest of the text, so fences and JSON around it survive.
        r"|(?:[A-Za-z0-9+/=\s]|\\[nr])*))")),
    (SecretKind.URL_PASSWORD, re.compile(
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@]{1,128}:(?P<s>[^\s@/]{1,256})@")),
    (SecretKind.BEARER_TOKEN, re.compile(
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9\-._~+/]{12,}=*)")),
    (SecretKind.API_KEY, re.compile(r"(?P<s>\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,})")),
    (SecretKind.AWS_ACCESS_KEY, re.compile(r"(?P<s>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)")),
    (SecretKind.GITHUB_TOKEN, re.compile(
        r"(?P<s>\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}))")),
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
# Random base64 of 32+ characters scores above ~4.5 bits per character; hex digests (at most 4)
# and ordinary identifiers stay below, so sha256 digests and uuids are never flagged.
_ENTROPY_BITS = 4.3


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    if _HEX.fullmatch(token):
        return False
    has_digit = any(ch.isdigit() for ch in token)
    has_upper = any(ch.isupper() for ch in token)
    has_lower = any(ch.islower() for ch in token)
    return has_digit and has_upper and has_lower and _entropy(token) >= _ENTROPY_BITS


@dataclass(frozen=True, slots=True)
class ScanResult:
    """A text with its secrets replaced, and what was found (kinds and counts only)."""

    text: str
    kinds: Counter[str]

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


def scan(text: str) -> ScanResult:
    """Find and replace every secret-shaped string in `text`."""
    kinds: Counter[str] = Counter()
    out = text
    for kind, pattern in _PATTERNS:
        def _sub(match: re.Match[str], kind: SecretKind = kind) -> str:
            kinds[kind.value] += 1
            start, end = match.span("s")
            base = match.start()
            whole = match.group(0)
            return whole[: start - base] + REDACTED + whole[end - base:]
        out = pattern.sub(_sub, out)

    def _entropy_sub(match: re.Match[str]) -> str:
        token = match.group(0)
        if REDACTED in token or not _looks_random(token):
            return token
        kinds[SecretKind.HIGH_ENTROPY.value] += 1
        return REDACTED

    out = _TOKEN.sub(_entropy_sub, out)
    return ScanResult(out, kinds)


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


def _scan_request(request: ChatRequest) -> tuple[ChatRequest, Counter[str]]:
    found: Counter[str] = Counter()

    def fix(text: str) -> str:
        result = scan(text)
        found.update(result.kinds)
        return result.text

    system = fix(request.system)
    messages = tuple(_map_message(m, fix) for m in request.messages)
    return replace(request, system=system, messages=messages), found


class SecretGuard:
    """The input and output guards under one policy."""

    def __init__(self, policy: GuardPolicy = GuardPolicy.REDACT) -> None:
        self.policy = policy

    def check_prompt(self, prompt: str) -> tuple[str, GuardReport]:
        """The prompt as it may be sent, and the decision (`blocked` means send nothing)."""
        result = scan(prompt)
        return result.text if self.policy is GuardPolicy.REDACT else prompt, \
            self._report(GuardStage.INPUT, result.kinds)

    def check_request(self, request: ChatRequest) -> tuple[ChatRequest, GuardReport]:
        """The request as it may be sent (redacted), and the decision."""
        redacted, kinds = _scan_request(request)
        return redacted if self.policy is GuardPolicy.REDACT else request, \
            self._report(GuardStage.REQUEST, kinds)

    def check_output(self, text: str) -> tuple[str, GuardReport]:
        """The final text with secrets redacted (the output guard always redacts)."""
        result = scan(text)
        action = GuardAction.REDACTED if result.count else GuardAction.CLEAN
        return result.text, GuardReport(GuardStage.OUTPUT, action, dict(result.kinds))

    def _report(self, stage: GuardStage, kinds: Counter[str]) -> GuardReport:
        if not kinds:
            return GuardReport(stage, GuardAction.CLEAN, {})
        action = GuardAction.BLOCKED if self.policy is GuardPolicy.BLOCK else GuardAction.REDACTED
        return GuardReport(stage, action, dict(kinds))


def blocked_message(report: GuardReport) -> str:
    kinds = ", ".join(k.replace("_", " ") for k in sorted(report.kinds))
    return (f"The turn was not sent: {report.count} secret-shaped string(s) ({kinds}) were found "
            f"in what would go to the model. Remove them, or switch the guard to redact in "
            f"Settings.")
