"""The id and reference columns validation keeps for the read tools (`thf.columns`)."""

from __future__ import annotations

import gc
import weakref

import pytest

from stockade.thf import ThfError, read_text, validate_references
from stockade.thf.columns import KEPT_SECTIONS, forget_all, kept_columns
from stockade.thf.model import SECTION_NAMES
from stockade.thf.validate import REFERENCE_FIELDS
from tests.unit.thf.support import fixture_bytes


def test_a_read_keeps_each_sections_id_and_reference_columns() -> None:
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    for section in SECTION_NAMES:
        entities = getattr(model, section)
        kept = kept_columns(entities)
        assert kept is not None, section
        assert kept.joined, section  # a read joins them for the first lookups
        assert set(kept.columns) == {"id", *REFERENCE_FIELDS.get(section, ())}
        for field, column in kept.columns.items():
            assert column == [getattr(e, field) for e in entities], (section, field)


def test_only_the_very_list_that_was_validated_has_columns() -> None:
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    assert kept_columns(list(model.elements)) is None
    edited = model.model_copy(update={"threats": list(model.threats[1:])})
    assert kept_columns(edited.threats) is None
    validate_references(edited)  # what every AI commit runs
    kept = kept_columns(edited.threats)
    assert kept is not None and kept.columns["id"] == [t.id for t in edited.threats]
    assert not kept.joined  # a commit does not pay for joining the sections it changed
    # The sections the edit left alone carry their columns (and joined texts) over as they were.
    assert kept_columns(edited.elements) is kept_columns(model.elements)
    carried = kept_columns(edited.elements)
    assert carried is not None and carried.joined


def test_a_document_that_fails_validation_keeps_nothing() -> None:
    forget_all()
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    forget_all()
    broken = model.model_copy(update={"data_flows": [
        model.data_flows[0].model_copy(update={"to": "nowhere"}), *model.data_flows[1:]
    ]})
    with pytest.raises(ThfError):
        validate_references(broken)
    assert all(kept_columns(getattr(broken, s)) is None for s in SECTION_NAMES)


def test_at_most_the_bound_of_sections_is_kept() -> None:
    from stockade.thf import columns

    first = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    later = [read_text(fixture_bytes("v1.0-canonical-full.thf")) for _ in range(3)]
    assert len(columns._kept) <= KEPT_SECTIONS
    assert kept_columns(first.elements) is None
    assert kept_columns(later[-1].elements) is not None


def test_kept_columns_never_keep_a_document_alive() -> None:
    from stockade.thf import columns

    forget_all()
    model = read_text(fixture_bytes("v1.0-canonical-full.thf"))
    alive = weakref.ref(model)
    elements = weakref.ref(model.elements[0])
    del model
    gc.collect()
    assert alive() is None and elements() is None
    read_text(fixture_bytes("v1.0-minimal.thf"))  # the next remember drops the dead entries
    assert len(columns._kept) == len(SECTION_NAMES)
