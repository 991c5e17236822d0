"""Property: any JSON shaped roughly like a foreign model either imports to a valid model or
fails with one `ImportFailure` sentence; never another exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.importers.convert import import_bytes
from stockade.importers.result import ImportFailure, SourceFormat
from stockade.thf import read_text, to_yaml

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["a", "b", "c", "tm.Process", "tm.Flow", "Spoofing", "High", "Open", "z"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "name",
                    "type",
                    "shape",
                    "data",
                    "source",
                    "target",
                    "cell",
                    "position",
                    "x",
                    "y",
                    "size",
                    "width",
                    "height",
                    "threats",
                    "parent",
                    "trustZone",
                    "destination",
                    "bidirectional",
                    "isBidirectional",
                    "inBoundary",
                    "sink",
                    "findings",
                    "target",
                    "severity",
                    "status",
                    "categories",
                    "state",
                    "threat",
                    "representations",
                    "representation",
                    "component",
                    "title",
                    "mitigations",
                ]
            ),
            inner,
            max_size=6,
        ),
    ),
    max_leaves=25,
)


def _outcome(document: dict[str, Any]) -> None:
    try:
        result = import_bytes(json.dumps(document).encode("utf-8"))
    except ImportFailure as err:
        assert err.message and "\n" not in err.message
        return
    assert read_text(to_yaml(result.model)) == result.model


@settings(max_examples=80, deadline=None)
@given(cells=st.lists(values, max_size=8), summary=values, version=scalars)
def test_threat_dragon_like_input_never_crashes(
    cells: list[Any], summary: Any, version: Any
) -> None:
    _outcome(
        {
            "version": version,
            "summary": summary,
            "detail": {
                "diagrams": [{"title": "d", "cells": cells}, {"diagramJson": {"cells": cells}}]
            },
        }
    )


@settings(max_examples=80, deadline=None)
@given(
    components=st.lists(values, max_size=6),
    flows=st.lists(values, max_size=6),
    zones=st.lists(values, max_size=4),
    threats=st.lists(values, max_size=4),
)
def test_otm_like_input_never_crashes(
    components: list[Any], flows: list[Any], zones: list[Any], threats: list[Any]
) -> None:
    _outcome(
        {
            "otmVersion": "0.2.0",
            "project": {"name": "p", "id": "p"},
            "representations": [{"id": "d", "type": "diagram"}],
            "components": components,
            "dataflows": flows,
            "trustZones": zones,
            "threats": threats,
        }
    )


@settings(max_examples=80, deadline=None)
@given(
    elements=st.lists(values, max_size=6),
    flows=st.lists(values, max_size=6),
    boundaries=st.lists(values, max_size=4),
    findings=st.lists(values, max_size=4),
)
def test_pytm_like_input_never_crashes(
    elements: list[Any], flows: list[Any], boundaries: list[Any], findings: list[Any]
) -> None:
    _outcome(
        {
            "name": "tm",
            "elements": elements,
            "flows": flows,
            "boundaries": boundaries,
            "findings": findings,
        }
    )


def test_the_formats_the_properties_drive_are_the_json_ones() -> None:
    assert {SourceFormat.THREAT_DRAGON, SourceFormat.OTM, SourceFormat.PYTM} < set(SourceFormat)
