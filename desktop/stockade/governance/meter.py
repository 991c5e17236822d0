"""The meter: price a provider request's worst case before it is sent, and its usage after.

The reservation must be a true upper bound, so input tokens are bounded by the request's UTF-8
byte size (a byte-level tokenizer never produces more content tokens than bytes) plus a fixed
allowance for the framing a provider adds around roles, tool definitions and tool calls; output
is bounded by the `max_output_tokens` the request sends. The familiar chars/4 figure is
computed too, but only to show the user a likely cost beside the reservation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from stockade.governance.pricebook import ModelPrice, cost_of
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest

# Framing allowances, generous on purpose: providers render tool definitions and role markers
# into the prompt with their own wording (Anthropic's tool preamble alone is a few hundred tokens).
REQUEST_OVERHEAD_TOKENS = 1024
PER_MESSAGE_TOKENS = 16
PER_BLOCK_TOKENS = 16
PER_TOOL_TOKENS = 64
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class RequestSize:
    """How big a request is: UTF-8 bytes and characters of its content, and its framing counts."""

    content_bytes: int
    content_chars: int
    messages: int
    blocks: int
    tools: int
    max_output_tokens: int

    @property
    def input_token_bound(self) -> int:
        return (self.content_bytes + REQUEST_OVERHEAD_TOKENS + PER_MESSAGE_TOKENS * self.messages
                + PER_BLOCK_TOKENS * self.blocks + PER_TOOL_TOKENS * self.tools)

    @property
    def input_token_estimate(self) -> int:
        return math.ceil(self.content_chars / CHARS_PER_TOKEN)


def _block_texts(message: Message) -> list[str]:
    out: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            out.append(block.text)
        elif isinstance(block, ToolCallBlock):
            out.append(block.name)
            out.append(json.dumps(block.input, ensure_ascii=False, separators=(",", ":")))
            out.append(block.id)
        elif isinstance(block, ToolResultBlock):
            out.append(block.tool_call_id)
            out.append(block.content)
    return out


def request_size(request: ChatRequest) -> RequestSize:
    texts = [request.system]
    blocks = 0
    for message in request.messages:
        texts.extend(_block_texts(message))
        blocks += len(message.content)
    for spec in request.tools:
        texts.append(spec.name)
        texts.append(spec.description)
        texts.append(json.dumps(spec.input_schema, ensure_ascii=False, separators=(",", ":")))
    return RequestSize(
        content_bytes=sum(len(t.encode("utf-8")) for t in texts),
        content_chars=sum(len(t) for t in texts),
        messages=len(request.messages),
        blocks=blocks,
        tools=len(request.tools),
        max_output_tokens=max(int(request.max_output_tokens), 0),
    )


@dataclass(frozen=True, slots=True)
class Quote:
    """What a request may cost (`reserve`, an upper bound) and likely costs (`estimate`)."""

    reserve: int
    estimate: int
    input_token_bound: int
    output_token_bound: int


def quote(request: ChatRequest, price: ModelPrice) -> Quote:
    size = request_size(request)
    # No cached-input discount in the bound: the bound must hold if nothing is cached.
    reserve = cost_of(price, size.input_token_bound, size.max_output_tokens).credits
    estimate = cost_of(price, size.input_token_estimate, size.max_output_tokens).credits
    return Quote(reserve, min(estimate, reserve), size.input_token_bound, size.max_output_tokens)


def usage_cost(price: ModelPrice, input_tokens: int, output_tokens: int,
               cached_input_tokens: int = 0) -> int:
    return cost_of(price, input_tokens, output_tokens, cached_input_tokens).credits
