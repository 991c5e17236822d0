"""Id generation: slugs, unique slugs, numbered ids, threat ids, flow numbers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.thf import new_threat_id, next_flow_number, next_numbered_id, slug, unique_slug
from tests.unit.thf.support import flow, model_of


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("  Stripe  API  ", "stripe-api"),
        ("API Gateway", "api-gateway"),
        ("Payment--DB!!", "payment-db"),
        ("already-kebab", "already-kebab"),
        ("Ünïcode Name", "ünïcode-name"),
        ("!!!", ""),
        ("", ""),
    ],
)
def test_slug_follows_the_reference_rule(name: str, expected: str) -> None:
    assert slug(name) == expected


def test_unique_slug_adds_the_first_free_suffix() -> None:
    assert unique_slug("Web App", set()) == "web-app"
    assert unique_slug("Web App", {"web-app"}) == "web-app-2"
    assert unique_slug("Web App", {"web-app", "web-app-2", "web-app-3"}) == "web-app-4"


def test_unique_slug_falls_back_to_item_for_empty_slugs() -> None:
    assert unique_slug("***", set()) == "item"
    assert unique_slug("", {"item"}) == "item-2"


@given(st.text(max_size=30), st.sets(st.text(max_size=12), max_size=10))
def test_unique_slug_is_never_taken(name: str, taken: set[str]) -> None:
    assert unique_slug(name, taken) not in taken


def test_next_numbered_id_is_one_above_the_highest_trailing_number() -> None:
    assert next_numbered_id("comp", []) == "comp-1"
    assert next_numbered_id("comp", ["comp-1", "comp-7", "web-app", "flow-99"]) == "comp-8"
    assert next_numbered_id("comp", ["comp-x-3", "comp-2"]) == "comp-4"
    assert next_numbered_id("flow-", ["flow-2"]) == "flow-3"


def test_new_threat_id_has_the_reference_shape_and_is_unused() -> None:
    taken = {new_threat_id(set()) for _ in range(50)}
    fresh = new_threat_id(taken)
    assert re.fullmatch(r"threat-[0-9a-f]{8}", fresh)
    assert fresh not in taken


def test_next_flow_number_treats_missing_numbers_as_zero() -> None:
    model = model_of(
        elements=[{"id": "a", "type": "p", "name": "A"}],
        data_flows=[flow("f1", "a", "a", flow_number=4), flow("f2", "a", "a")],
    )
    assert next_flow_number(model.data_flows) == 5
    assert next_flow_number([]) == 1
