"""Reading a prompt's scope: names, ids, boundaries, types, kinds, categories, "do not change"."""

from __future__ import annotations

import pytest

from stockade.catalog.scope import scope_of
from stockade.thf.model import StrideCategory, ThreatModel
from stockade.thf.reader import read_file
from tests.unit.catalog.samples import SAMPLES

C = StrideCategory


@pytest.fixture(scope="module")
def shop() -> ThreatModel:
    return read_file(SAMPLES / "ecommerce-platform.thf")


def test_no_scope_words_means_the_whole_model(shop: ThreatModel) -> None:
    scope = scope_of("Review this model and propose the threats it is still missing.", shop)
    assert scope.whole_model and scope.categories is None and not scope.read_only
    assert scope.describe() == "the whole model"


@pytest.mark.parametrize("prompt", [
    "What threats affect the Session Cache?",
    "threats on session-cache please",
    "Look at the session caches",
])
def test_an_element_named_by_name_or_id_selects_that_element_only(
        shop: ThreatModel, prompt: str) -> None:
    scope = scope_of(prompt, shop)
    assert scope.elements == frozenset({"session-cache"})
    assert scope.flows == frozenset()


def test_a_name_is_not_read_again_as_a_kind(shop: ThreatModel) -> None:
    # "Order Worker" names one element; "Product and Order Database" is not selected by "order"
    # and "worker" is not a kind: only the worker is in scope.
    assert scope_of("review the Order Worker", shop).elements == frozenset({"order-worker"})


def test_kinds_select_by_stride_role(shop: ThreatModel) -> None:
    stores = scope_of("check the data stores", shop)
    assert stores.elements == frozenset({"session-cache", "product-db", "search-index"})
    assert stores.flows == frozenset()
    external = scope_of("what about the external entities?", shop)
    assert external.elements == frozenset({"customer-browser", "mobile-shopper",
                                           "identity-provider", "payment-gateway"})


def test_flows_alone_select_every_flow_and_with_an_element_its_flows(shop: ThreatModel) -> None:
    every = scope_of("analyse the data flows", shop)
    assert every.elements == frozenset() and every.flows is None
    around = scope_of("flows of the Order Worker", shop)
    assert around.elements == frozenset({"order-worker"})
    assert around.flows == frozenset({"flow-api-server-order-worker",
                                      "flow-order-worker-product-db",
                                      "flow-order-worker-payment-gateway"})


def test_a_boundary_selects_its_members(shop: ThreatModel) -> None:
    scope = scope_of("anything missing in the Data Tier?", shop)
    assert scope.elements == frozenset({"session-cache", "product-db", "search-index"})
    assert "boundary Data Tier (3 elements)" in scope.described


def test_a_catalog_type_selects_its_elements(shop: ThreatModel) -> None:
    assert scope_of("threats for the caches", shop).elements == frozenset({"session-cache"})
    assert scope_of("our SQL databases", shop).elements == frozenset({"product-db"})


def test_categories_narrow_independently(shop: ThreatModel) -> None:
    scope = scope_of("spoofing and data leaks on the WAF", shop)
    assert scope.categories == frozenset({C.SPOOFING, C.INFORMATION_DISCLOSURE})
    assert scope.elements == frozenset({"waf"})
    dos = scope_of("denial of service", shop)
    assert dos.categories == frozenset({C.DENIAL_OF_SERVICE}) and dos.whole_model


@pytest.mark.parametrize("prompt", [
    "do not change anything",
    "Don't change the model, just tell me what is missing",
    "Only read the model and summarise the risks",
    "review it read-only",
    "Please make no changes.",
    "leave the document unchanged",
])
def test_asking_for_no_changes_is_read_only(shop: ThreatModel, prompt: str) -> None:
    assert scope_of(prompt, shop).read_only


@pytest.mark.parametrize("prompt", [
    "propose threats but do not add duplicates",
    "propose what changes are needed",
    "add threats for the cache",
])
def test_ordinary_requests_are_not_read_only(shop: ThreatModel, prompt: str) -> None:
    assert not scope_of(prompt, shop).read_only
