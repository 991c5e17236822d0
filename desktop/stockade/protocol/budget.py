"""Context budgeting: fit history into a model's window by dropping whole old exchanges."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

from stockade.protocol.errors import ProtocolException, context_overflow, utf16_len
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock

CHARS_PER_TOKEN = 4
PER_MESSAGE_OVERHEAD_TOKENS = 4

TurnGroup = tuple[Message, ...]


def _dumped(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# `json.dumps` with options builds a new encoder, and then a new C encoder, on every call (more
# than half the cost of a small tool input): this is that C encoder made once, with the same
# options. It has no cycle check (a check would need a fresh `markers` dict per call), so a
# cycle ends in RecursionError, as nesting past the interpreter's limit does; both are judged
# again by `json.dumps`, which tells them apart (a cycle counts 0, the nesting raises).
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_DUMP = None if _make_c_encoder is None else _make_c_encoder(
    None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ":", ",",
    False, False, True,
)


def _input_chars(value: object) -> int:
    try:
        if _C_DUMP is None:
            return utf16_len(_dumped(value))
        try:
            return utf16_len("".join(_C_DUMP(value, 0)))
        except RecursionError:
            return utf16_len(_dumped(value))
    except (TypeError, ValueError):
        return 0  # an input that cannot be serialized is never sent either


def estimate_tokens(
    message: Message, input_json: Callable[[object], str | None] | None = None
) -> int:
    """A cheap, deterministic token estimate: UTF-16 units / 4, rounded up, plus overhead.

    `input_json` may give a tool input's compact JSON already encoded (in any key order: the
    characters are the same), or None to have it dumped here.
    """
    chars = 0
    for block in message.content:
        if isinstance(block, TextBlock):
            chars += utf16_len(block.text)
        elif isinstance(block, ToolCallBlock):
            known = None if input_json is None else input_json(block.input)
            chars += utf16_len(block.name) + (
                _input_chars(block.input) if known is None else utf16_len(known))
        elif isinstance(block, ToolResultBlock):
            chars += utf16_len(block.content)
    return math.ceil(chars / CHARS_PER_TOKEN) + PER_MESSAGE_OVERHEAD_TOKENS


def turn_groups(messages: Sequence[Message]) -> tuple[TurnGroup, ...]:
    """`messages` cut into groups that close only when no tool call is left unanswered.

    Dropping whole groups is what keeps every tool result next to its call; a trailing group
    with unanswered calls stays one group.
    """
    groups: list[TurnGroup] = []
    current: list[Message] = []
    open_calls: set[str] = set()
    for message in messages:
        current.append(message)
        for block in message.content:
            if isinstance(block, ToolCallBlock):
                open_calls.add(block.id)
            elif isinstance(block, ToolResultBlock):
                open_calls.discard(block.tool_call_id)
        if not open_calls:
            groups.append(tuple(current))
            current = []
    if current:
        groups.append(tuple(current))
    return tuple(groups)


def budget_messages(
    messages: Sequence[Message],
    *,
    max_input_tokens: int,
    reserve_output_tokens: int,
    overhead_tokens: int = 0,
    estimate: Callable[[Message], int] = estimate_tokens,
) -> tuple[Message, ...]:
    """The newest whole groups that fit `max_input_tokens - reserve_output_tokens - overhead`.

    Groups are taken newest first and the walk stops at the first that does not fit, so the
    kept history is always a contiguous tail. `overhead_tokens` lets a caller account for the
    system prompt and tool schemas. `estimate` is `estimate_tokens` or a caller's memo of it
    (a turn budgets the same messages on every request). Raises
    `ProtocolException(context_overflow)` when even the newest group does not fit.
    """
    if not messages:
        return ()
    available = max_input_tokens - reserve_output_tokens - overhead_tokens
    kept: list[TurnGroup] = []
    total = 0
    for group in reversed(turn_groups(messages)):
        cost = sum(map(estimate, group))
        if total + cost > available:
            break
        kept.append(group)
        total += cost
    if not kept:
        raise ProtocolException(context_overflow())
    return tuple(m for group in reversed(kept) for m in group)


def cap_message_history(messages: Sequence[Message], max_messages: int) -> tuple[Message, ...]:
    """At most `max_messages` messages in whole groups; the newest group is kept even if larger."""
    if len(messages) <= max_messages:
        return tuple(messages)
    groups = turn_groups(messages)
    kept: list[TurnGroup] = []
    count = 0
    for group in reversed(groups):
        if count + len(group) > max_messages:
            break
        kept.append(group)
        count += len(group)
    if not kept:
        kept.append(groups[-1])  # never empty and never split: a partial group breaks pairing
    return tuple(m for group in reversed(kept) for m in group)
