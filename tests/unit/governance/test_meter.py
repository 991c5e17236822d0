"""The meter's bound is a true upper bound; the chars/4 figure is only a display estimate."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.governance.meter import quote, request_size
from stockade.governance.pricebook import ModelPrice
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest, ToolSpec
from tests.conftest import examples

PRICE = ModelPrice("anthropic/claude-sonnet-5", Fraction(3), Fraction(15), Fraction(3, 10))


def _request(text: str, max_tokens: int = 1000) -> ChatRequest:
    return ChatRequest(provider="anthropic", model="claude-sonnet-5", system="sys",
                       messages=(Message("user", (TextBlock(text),)),),
                       max_output_tokens=max_tokens)


def test_input_bound_counts_utf8_bytes_not_characters() -> None:
    ascii_size = request_size(_request("a" * 100))
    wide_size = request_size(_request("界" * 100))  # 3 bytes each
    assert wide_size.content_bytes - ascii_size.content_bytes == 200
    assert wide_size.input_token_bound > wide_size.input_token_estimate


def test_bound_covers_tool_calls_results_and_tool_specs() -> None:
    request = ChatRequest(
        provider="anthropic", model="m", system="",
        messages=(Message("assistant", (ToolCallBlock("c1", "add_threat", {"title": "x" * 50}),)),
                  Message("user", (ToolResultBlock("c1", "y" * 70),))),
        tools=(ToolSpec("add_threat", "d" * 30, {"type": "object"}),),
    )
    size = request_size(request)
    assert size.content_bytes >= 50 + 70 + 30
    assert (size.messages, size.blocks, size.tools) == (2, 2, 1)


def test_output_is_bounded_by_the_max_tokens_sent() -> None:
    small, large = quote(_request("hi", 100), PRICE), quote(_request("hi", 10_000), PRICE)
    assert large.reserve - small.reserve == 9_900 * 15 * 10_000 // 1_000_000
    assert small.output_token_bound == 100


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=400), st.integers(min_value=1, max_value=8192))
def test_estimate_never_exceeds_the_reservation(text: str, max_tokens: int) -> None:
    q = quote(_request(text, max_tokens), PRICE)
    assert 0 <= q.estimate <= q.reserve
    # a byte-level tokenizer cannot emit more content tokens than there are bytes
    assert q.input_token_bound >= len(text.encode("utf-8"))


def test_free_models_cost_nothing_to_reserve() -> None:
    free = ModelPrice("local/*", Fraction(0), Fraction(0), Fraction(0))
    assert quote(_request("x" * 10_000), free).reserve == 0
