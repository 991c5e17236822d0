"""The price book: every listed model priced, zero rows explicit, missing rows fail closed."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from stockade.governance.pricebook import (
    ModelPrice,
    PriceBook,
    PriceBookError,
    cost_of,
    load_price_book,
)

LISTED = [
    ("anthropic", "claude-opus-4-8"), ("anthropic", "claude-sonnet-5"),
    ("anthropic", "claude-haiku-4-5-20251001"), ("openai", "gpt-5.6-sol"),
    ("openai", "gpt-5.6-terra"), ("openai", "gpt-5.6-luna"),
]


@pytest.mark.parametrize(("provider", "model"), LISTED)
def test_every_listed_model_has_a_positive_price(provider: str, model: str) -> None:
    price = load_price_book().price_for(provider, model)
    assert price.input > 0 and price.output > 0 and 0 < price.cached_input <= price.input


def test_local_and_offline_models_have_explicit_zero_rows() -> None:
    book = load_price_book()
    assert book.price_for("local", "llama3.1").is_free
    assert book.price_for("offline", "stride-rules").is_free
    assert "local/*" in book.rows() and "offline/stride-rules" in book.rows()


def test_a_model_without_a_row_is_refused() -> None:
    with pytest.raises(PriceBookError, match="cannot be metered"):
        load_price_book().price_for("anthropic", "claude-unknown-9")
    with pytest.raises(PriceBookError):
        load_price_book().price_for("offline", "some-other-engine")


def test_cost_rounds_up_per_leg() -> None:
    # $3/MTok input: 1 token = 0.03 credits -> 1 credit; 0 tokens -> 0 credits.
    price = ModelPrice("x/y", Fraction(3), Fraction(15), Fraction(3, 10))
    cost = cost_of(price, input_tokens=1, output_tokens=1, cached_input_tokens=0)
    assert (cost.input_credits, cost.cached_input_credits, cost.output_credits) == (1, 0, 1)
    # 1,000,000 input tokens at $3 = 30,000 credits exactly.
    assert cost_of(price, 1_000_000, 0).credits == 30_000
    # cached tokens are part of input and priced at the cached rate.
    mixed = cost_of(price, input_tokens=1_000_000, output_tokens=0, cached_input_tokens=500_000)
    assert (mixed.input_credits, mixed.cached_input_credits) == (15_000, 1_500)


def test_negative_token_counts_are_rejected() -> None:
    price = ModelPrice("x/y", Fraction(1), Fraction(1), Fraction(1))
    with pytest.raises(ValueError):
        cost_of(price, -1, 0)


def test_a_prices_file_in_the_data_folder_overrides_rows(stockade_home: Path) -> None:
    (stockade_home / "prices.json").write_text(json.dumps({"models": {
        "anthropic/claude-sonnet-5": {"input": "9", "output": "9", "cached_input": "9"},
        "local/my-model": {"input": "0.5", "output": "1", "cached_input": "0"},
    }}))
    book = load_price_book()
    assert book.price_for("anthropic", "claude-sonnet-5").input == 9
    assert book.price_for("local", "my-model").input == Fraction(1, 2)
    assert book.price_for("openai", "gpt-5.6-sol").input == Fraction(5, 4)


def test_a_malformed_price_row_is_a_clear_error() -> None:
    with pytest.raises(PriceBookError, match="lacks output"):
        PriceBook.from_json({"models": {"a/b": {"input": "1", "cached_input": "1"}}})
    with pytest.raises(PriceBookError, match="not a number"):
        PriceBook.from_json({"models": {"a/b": {"input": "x", "output": "1",
                                                "cached_input": "1"}}})


def test_every_model_in_the_model_list_has_a_price_row() -> None:
    from stockade.protocol.models import load_models

    book = load_price_book()
    for info in load_models():
        book.price_for(info.provider, info.id)  # raises if any listed model is unpriced
