"""The price book: USD per million tokens per model, turned into integer credits, rounded up per leg.

1 credit = 1/10,000 USD. Rows come from `resources/prices.json`, optionally overridden row by
row by a `prices.json` in the data folder. A model with no row is refused (fail closed); local
and offline models have explicit zero rows so they are metered but never blocked by price.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from stockade.paths import data_dir, resources_dir

CREDITS_PER_USD = 10_000
_TOKENS_PER_PRICE_UNIT = 1_000_000
PRICE_FILE = "prices.json"


class PriceBookError(Exception):
    """The price book is unreadable, or has no row for the requested model."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens, held exactly as fractions."""

    key: str
    input: Fraction
    output: Fraction
    cached_input: Fraction

    @property
    def is_free(self) -> bool:
        return self.input == 0 and self.output == 0 and self.cached_input == 0


@dataclass(frozen=True, slots=True)
class Cost:
    """A priced usage: credits per leg (each rounded up) and their sum."""

    input_credits: int
    cached_input_credits: int
    output_credits: int

    @property
    def credits(self) -> int:
        return self.input_credits + self.cached_input_credits + self.output_credits


def _leg(tokens: int, usd_per_mtok: Fraction) -> int:
    return math.ceil(Fraction(tokens) * usd_per_mtok * CREDITS_PER_USD / _TOKENS_PER_PRICE_UNIT)


def cost_of(price: ModelPrice, input_tokens: int, output_tokens: int,
            cached_input_tokens: int = 0) -> Cost:
    """Credits for a usage; cached tokens are part of `input_tokens`, priced at the cached rate."""
    if min(input_tokens, output_tokens, cached_input_tokens) < 0:
        raise ValueError("token counts cannot be negative")
    cached = min(cached_input_tokens, input_tokens)
    return Cost(
        input_credits=_leg(input_tokens - cached, price.input),
        cached_input_credits=_leg(cached, price.cached_input),
        output_credits=_leg(output_tokens, price.output),
    )


def _price(value: Any, key: str, field: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise PriceBookError(f"price row {key!r}: {field} must be a decimal string such as \"3.00\"")
    try:
        amount = Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise PriceBookError(f"price row {key!r}: {field} {value!r} is not a number") from None
    if amount < 0:
        raise PriceBookError(f"price row {key!r}: {field} cannot be negative")
    return amount


def _rows(data: Any, source: str) -> dict[str, ModelPrice]:
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise PriceBookError(f"{source}: expected an object with a \"models\" object")
    out: dict[str, ModelPrice] = {}
    for key, row in data["models"].items():
        if not isinstance(row, dict) or "/" not in key:
            raise PriceBookError(f"{source}: row {key!r} must be \"provider/model\": {{...}}")
        missing = {"input", "output", "cached_input"} - row.keys()
        if missing:
            raise PriceBookError(f"{source}: row {key!r} lacks {', '.join(sorted(missing))}")
        out[key] = ModelPrice(key, _price(row["input"], key, "input"),
                              _price(row["output"], key, "output"),
                              _price(row["cached_input"], key, "cached_input"))
    return out


class PriceBook:
    """Rows keyed `provider/model`; `provider/*` rows match any model of that provider."""

    def __init__(self, rows: dict[str, ModelPrice], version: str = "") -> None:
        self._rows = dict(rows)
        self.version = version

    @classmethod
    def from_json(cls, data: Any, source: str = "price book") -> PriceBook:
        version = str(data.get("version", "")) if isinstance(data, dict) else ""
        return cls(_rows(data, source), version)

    def rows(self) -> dict[str, ModelPrice]:
        return dict(self._rows)

    def price_for(self, provider: str, model: str) -> ModelPrice:
        """The row for this model; raises `PriceBookError` when there is none (fail closed)."""
        row = self._rows.get(f"{provider}/{model}") or self._rows.get(f"{provider}/*")
        if row is None:
            raise PriceBookError(
                f"No price is known for {provider}/{model}, so requests to it cannot be "
                f"metered and are refused. Add a row to {PRICE_FILE} in the data folder."
            )
        return row


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PriceBookError(f"cannot read the price book {path}: {exc}") from None


def load_price_book() -> PriceBook:
    """The bundled price book, with rows from the data folder's `prices.json` laid over it."""
    bundled = _read(resources_dir() / PRICE_FILE)
    book = PriceBook.from_json(bundled, "bundled prices.json")
    override = data_dir() / PRICE_FILE
    if override.is_file():
        user = PriceBook.from_json(_read(override), str(override))
        merged = {**book.rows(), **user.rows()}
        book = PriceBook(merged, f"{book.version}+{override.name}")
    return book
