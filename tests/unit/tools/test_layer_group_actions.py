"""Layer, group and flow-encryption edits: new ids, refusals naming the users, cascades."""

from __future__ import annotations

from typing import Any

from stockade.thf.model import Element, ThreatModel
from stockade.thf.reader import read_text
from stockade.thf.validate import validate_references
from stockade.thf.writer import to_yaml
from stockade.tools import actions
from stockade.tools.actions import ActionError, ActionResult
from tests.unit.tools.conftest import el, make_doc


def ok(outcome: Any) -> ActionResult:
    assert isinstance(outcome, ActionResult), outcome
    validate_references(outcome.document)
    return outcome


def refused(outcome: Any) -> str:
    assert isinstance(outcome, ActionError), outcome
    return outcome.message


def _doc() -> ThreatModel:
    return make_doc(
        layers=[{"id": "edge", "name": "Edge"}],
        groups=[{"id": "core", "name": "Core"}, {"id": "inner", "name": "Inner", "parent": "core"}],
        elements=[el("web", layer="edge", group="core"), el("db")],
    )


def test_add_layer_and_group_get_slug_ids_unique_across_containers() -> None:
    doc = _doc()
    layer = ok(actions.add_layer(doc, actions.NewLayer(name="Edge")))
    assert layer.new_id == "edge-2"
    group = ok(actions.add_group(layer.document, actions.NewGroup(name="Web", parent="core")))
    assert group.new_id == "web-2"  # "web" is an element id
    assert group.document.groups[-1].parent == "core"


def test_group_parent_must_exist_and_never_form_a_cycle() -> None:
    doc = _doc()
    assert "no group" in refused(actions.add_group(doc, actions.NewGroup(name="X", parent="ghost")))
    message = refused(actions.update_group(doc, "core", actions.GroupUpdates(parent="inner")))
    assert "circle" in message
    cleared = ok(actions.update_group(doc, "inner", actions.GroupUpdates(parent="")))
    assert cleared.document.groups[1].parent is None


def test_deleting_a_used_layer_is_refused_naming_the_elements_then_cascades() -> None:
    doc = _doc()
    assert '"web"' in refused(actions.delete_layer(doc, "edge"))
    done = ok(actions.delete_layer(doc, "edge", cascade=True))
    assert done.removed == ("layer edge", "layer of element web")
    assert done.document.layers == []
    assert done.document.elements[0].layer is None
    assert len(done.document.elements) == 2


def test_deleting_a_used_group_keeps_members_and_children() -> None:
    doc = _doc()
    message = refused(actions.delete_group(doc, "core"))
    assert '"web"' in message and '"inner"' in message
    done = ok(actions.delete_group(doc, "core", cascade=True))
    assert [g.id for g in done.document.groups] == ["inner"]
    assert done.document.groups[0].parent is None
    assert done.document.elements[0].group is None
    assert ok(actions.delete_group(done.document, "inner")).removed == ("group inner",)


def test_layer_update_renames_and_unknown_ids_are_refused() -> None:
    doc = _doc()
    renamed = ok(actions.update_layer(doc, "edge", actions.LayerUpdates(name="Perimeter")))
    assert renamed.document.layers[0].name == "Perimeter"
    assert "No layer" in refused(actions.update_layer(doc, "ghost", actions.LayerUpdates(name="x")))


def test_flow_encryption_round_trips_as_a_kept_field() -> None:
    doc = _doc()
    flow = ok(actions.add_data_flow(doc, actions.NewDataFlow.model_validate(
        {"from": "web", "to": "db", "encrypted": True})))
    assert flow.document.data_flows[0].extras == {"encrypted": True}
    off = ok(actions.update_data_flow(flow.document, "flow-1", actions.DataFlowUpdates(encrypted=False)))
    reread = read_text(to_yaml(off.document))
    assert reread.data_flows[0].extras == {"encrypted": False}
    assert isinstance(reread.elements[0], Element)
