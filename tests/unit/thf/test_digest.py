"""Document digests assembled from kept per-entity canonical JSON are the whole dump's digest."""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf import read_text, validate_document
from stockade.thf.canonical import digest
from stockade.thf.digest import cached_entity_count, document_digest
from stockade.thf.model import SECTION_NAMES, ThreatModel
from tests.conftest import examples
from tests.unit.thf.support import fixture_bytes
from tests.unit.thf.test_properties import documents


def whole_dump_digest(model: ThreatModel) -> str:
    """The definition: the digest of the whole document's JSON dump."""
    return digest(model.model_dump(mode="json", by_alias=True, exclude_none=True))


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_the_digest_is_the_whole_dumps_digest_before_and_after_edits(
    document: dict[str, Any], data: st.DataObject
) -> None:
    model = validate_document(document)
    assert document_digest(model) == whole_dump_digest(model)
    assert document_digest(model) == whole_dump_digest(model)  # from kept texts
    for _ in range(data.draw(st.integers(1, 3))):
        section = data.draw(st.sampled_from([s for s in SECTION_NAMES if getattr(model, s)] or ["x"]))
        if section == "x":
            break
        entities = list(getattr(model, section))
        index = data.draw(st.integers(0, len(entities) - 1))
        field = data.draw(st.sampled_from(["name", "description", "unknown_key"]))
        value = data.draw(st.one_of(st.text(max_size=4), st.integers(), st.floats(allow_nan=False,
                                                                                   allow_infinity=False)))
        if field != "unknown_key" and field in type(entities[index]).model_fields:
            value = str(value)
        entities[index] = entities[index].model_copy(update={field: value})
        if data.draw(st.booleans()):
            del entities[data.draw(st.integers(0, len(entities) - 1))]
        model = model.model_copy(update={section: entities})
        assert document_digest(model) == whole_dump_digest(model)


def test_a_freed_entitys_text_is_never_used_for_another_at_the_same_address() -> None:
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    for round_ in range(50):
        # New entities each round; freed ones' addresses get reused by the allocator.
        edited = model.model_copy(update={"elements": [
            e.model_copy(update={"name": f"{e.name} {round_}"}) for e in model.elements
        ]})
        assert document_digest(edited) == whole_dump_digest(edited)
        del edited
        # The youngest generation is where this round's garbage is; a full collection of the
        # whole test process each round cost 16 s and freed nothing more.
        gc.collect(0)


def test_dead_entries_are_pruned() -> None:
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    live = sum(len(getattr(model, s)) for s in SECTION_NAMES)
    bound = 2 * live + 1024
    rounds = bound // len(model.threats) + 10  # enough dead texts to pass the bound
    for round_ in range(rounds):
        edited = model.model_copy(update={"threats": [
            t.model_copy(update={"title": f"{t.title} {round_}"}) for t in model.threats
        ]})
        document_digest(edited)
        del edited
    assert cached_entity_count() <= bound + len(model.threats)
