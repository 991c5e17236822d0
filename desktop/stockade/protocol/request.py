"""What a provider is asked: model, system prompt, history, advertised tools, output bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stockade.protocol.messages import Message


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as advertised to a model: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    provider: str
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = field(default_factory=tuple)
    max_output_tokens: int = 4096
