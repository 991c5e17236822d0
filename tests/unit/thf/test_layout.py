"""The automatic layered layout: every item placed, nothing moved, no overlaps, flow direction."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.thf import ThreatModel, validate_document
from stockade.thf.layout import (
    DEFAULT_BOUNDARY_SIZE,
    NODE_HEIGHT,
    NODE_WIDTH,
    layout_missing_positions,
)

Box = tuple[float, float, float, float]


def _model(
    elements: list[dict[str, Any]],
    flows: list[tuple[str, str]] = (),  # type: ignore[assignment]
    boundaries: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> ThreatModel:
    return validate_document(
        {
            "version": "1.0",
            "metadata": {
                "title": "Layout",
                "author": "",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
            "elements": [{"type": "process", "name": e["id"], **e} for e in elements],
            "data_flows": [{"id": f"f{i}", "from": a, "to": b} for i, (a, b) in enumerate(flows)],
            "trust_boundaries": [{"name": b["id"], **b} for b in boundaries],
        }
    )


def _element_box(model: ThreatModel, element_id: str) -> Box:
    element = next(e for e in model.elements if e.id == element_id)
    assert element.position is not None
    return (element.position.x, element.position.y, NODE_WIDTH, NODE_HEIGHT)


def _boundary_box(model: ThreatModel, boundary_id: str) -> Box:
    boundary = next(b for b in model.trust_boundaries if b.id == boundary_id)
    assert boundary.position is not None
    w, h = (boundary.size.width, boundary.size.height) if boundary.size else DEFAULT_BOUNDARY_SIZE
    return (boundary.position.x, boundary.position.y, w, h)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _inside(inner: Box, outer: Box) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def test_chain_is_laid_out_left_to_right_in_flow_order() -> None:
    model = _model([{"id": "a"}, {"id": "b"}, {"id": "c"}], [("a", "b"), ("b", "c")])
    placed = layout_missing_positions(model)
    xs = [_element_box(placed, i)[0] for i in ("a", "b", "c")]
    assert xs[0] < xs[1] < xs[2]


def test_cycle_is_broken_and_every_element_placed() -> None:
    model = _model([{"id": "a"}, {"id": "b"}, {"id": "c"}], [("a", "b"), ("b", "c"), ("c", "a")])
    placed = layout_missing_positions(model)
    boxes = [_element_box(placed, i) for i in ("a", "b", "c")]
    assert len({(b[0], b[1]) for b in boxes}) == 3
    assert boxes[0][0] < boxes[1][0] < boxes[2][0]


def test_positioned_elements_and_boundaries_are_untouched_and_not_overlapped() -> None:
    model = _model(
        [{"id": "fixed", "position": {"x": 500.0, "y": 300.0}}, {"id": "new1"}, {"id": "new2"}],
        [("fixed", "new1"), ("new1", "new2")],
        [
            {
                "id": "zone",
                "contains": ["fixed"],
                "position": {"x": 450.0, "y": 250.0},
                "size": {"width": 300.0, "height": 200.0},
            }
        ],
    )
    placed = layout_missing_positions(model)
    assert placed.elements[0] == model.elements[0]
    assert placed.trust_boundaries[0] == model.trust_boundaries[0]
    zone = _boundary_box(placed, "zone")
    fixed = _element_box(placed, "fixed")
    for new in ("new1", "new2"):
        box = _element_box(placed, new)
        assert not _overlap(box, zone)
        assert not _overlap(box, fixed)


def test_barycentre_ordering_removes_a_crossing() -> None:
    # Document order puts x above y and p above q; x→q and y→p cross unless reordered.
    model = _model(
        [{"id": "x"}, {"id": "y"}, {"id": "p"}, {"id": "q"}],
        [("x", "q"), ("y", "p")],
    )
    placed = layout_missing_positions(model)
    x, y, p, q = (_element_box(placed, i) for i in ("x", "y", "p", "q"))
    assert (x[1] < y[1]) == (q[1] < p[1])


def test_boundaries_enclose_their_members_and_keep_others_out() -> None:
    model = _model(
        [{"id": f"e{i}"} for i in range(9)],
        [("e0", "e3"), ("e1", "e4"), ("e3", "e6"), ("e2", "e8"), ("e5", "e7")],
        [
            {"id": "outer", "contains": ["e0", "e1", "e3", "e4"]},
            {"id": "inner", "contains": ["e3", "e4"]},
            {"id": "other", "contains": ["e6", "e7"]},
            {"id": "empty"},
        ],
    )
    placed = layout_missing_positions(model)
    for boundary in placed.trust_boundaries:
        box = _boundary_box(placed, boundary.id)
        for element in placed.elements:
            element_box = _element_box(placed, element.id)
            if element.id in boundary.contains:
                assert _inside(element_box, box), (boundary.id, element.id)
            else:
                assert not _overlap(element_box, box), (boundary.id, element.id)
    assert _inside(_boundary_box(placed, "inner"), _boundary_box(placed, "outer"))
    assert not _overlap(_boundary_box(placed, "outer"), _boundary_box(placed, "other"))
    assert not _overlap(_boundary_box(placed, "empty"), _boundary_box(placed, "outer"))


def test_boundary_with_a_position_but_unplaced_members_keeps_its_box() -> None:
    model = _model(
        [{"id": "a"}],
        boundaries=[{"id": "b", "contains": ["a"], "position": {"x": 0.0, "y": 0.0}}],
    )
    placed = layout_missing_positions(model)
    assert placed.trust_boundaries[0] == model.trust_boundaries[0]
    assert placed.elements[0].position is not None


def test_a_model_with_everything_placed_is_returned_as_is() -> None:
    model = _model([{"id": "a", "position": {"x": 1.0, "y": 2.0}}])
    assert layout_missing_positions(model) is model


def test_many_elements_without_flows_wrap_into_columns() -> None:
    model = _model([{"id": f"e{i}"} for i in range(400)])
    placed = layout_missing_positions(model)
    xs = {_element_box(placed, e.id)[0] for e in placed.elements}
    ys = {_element_box(placed, e.id)[1] for e in placed.elements}
    assert len(xs) >= 10 and len(ys) <= 40


_ids = [f"n{i}" for i in range(12)]


@settings(max_examples=60, deadline=None)
@given(
    placed_mask=st.lists(st.booleans(), min_size=12, max_size=12),
    flows=st.lists(st.tuples(st.sampled_from(_ids), st.sampled_from(_ids)), max_size=30),
    memberships=st.lists(st.lists(st.sampled_from(_ids), unique=True, max_size=6), max_size=4),
)
def test_layout_properties_hold_for_any_graph(
    placed_mask: list[bool], flows: list[tuple[str, str]], memberships: list[list[str]]
) -> None:
    elements = [
        {"id": i, **({"position": {"x": 2000.0 + n * 200.0, "y": 100.0}} if keep else {})}
        for n, (i, keep) in enumerate(zip(_ids, placed_mask, strict=True))
    ]
    boundaries = [{"id": f"b{k}", "contains": m} for k, m in enumerate(memberships)]
    model = _model(elements, flows, boundaries)
    placed = layout_missing_positions(model)
    assert layout_missing_positions(model) == placed  # deterministic
    validate_document(placed.model_dump(by_alias=True))
    fixed = [e for e in model.elements if e.position is not None]
    for original in fixed:
        assert next(e for e in placed.elements if e.id == original.id) == original
    new = [e for e in placed.elements if e.id not in {f.id for f in fixed}]
    new_boxes = [_element_box(placed, e.id) for e in new]
    fixed_boxes = [_element_box(placed, e.id) for e in fixed]
    for n, box in enumerate(new_boxes):
        assert all(not _overlap(box, other) for other in new_boxes[n + 1 :])
        assert all(not _overlap(box, other) for other in fixed_boxes)
    for boundary in placed.trust_boundaries:
        box = _boundary_box(placed, boundary.id)
        for member in boundary.contains:
            assert _inside(_element_box(placed, member), box)
