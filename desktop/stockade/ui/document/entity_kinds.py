"""Which pure action adds, edits and deletes each entity kind the app lets a person author."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stockade.thf.model import ThreatModel
from stockade.tools import actions
from stockade.tools.schema import StrictInput, parse_input


@dataclass(frozen=True)
class EntityKind:
    """One authorable section: its words and the actions the assistant uses too."""

    section: str
    word: str
    new_input: type[StrictInput]
    add: Callable[[ThreatModel, Any], actions.ActionOutcome]
    updates: type[StrictInput]
    update: Callable[[ThreatModel, str, Any], actions.ActionOutcome]
    delete: Callable[..., actions.ActionOutcome]
    cascades: bool
    """Whether the delete takes `cascade` (referrers can go with it after confirmation)."""


KINDS: dict[str, EntityKind] = {
    kind.section: kind
    for kind in (
        EntityKind("elements", "element", actions.NewElement, actions.add_element,
                   actions.ElementUpdates, actions.update_element, actions.delete_element, True),
        EntityKind("data_flows", "data flow", actions.NewDataFlow, actions.add_data_flow,
                   actions.DataFlowUpdates, actions.update_data_flow, actions.delete_data_flow, True),
        EntityKind("trust_boundaries", "trust boundary", actions.NewTrustBoundary,
                   actions.add_trust_boundary, actions.TrustBoundaryUpdates,
                   actions.update_trust_boundary, actions.delete_trust_boundary, False),
        EntityKind("threats", "threat", actions.NewThreat, actions.add_threat,
                   actions.ThreatUpdates, actions.update_threat, actions.delete_threat, False),
        EntityKind("layers", "layer", actions.NewLayer, actions.add_layer,
                   actions.LayerUpdates, actions.update_layer, actions.delete_layer, True),
        EntityKind("groups", "group", actions.NewGroup, actions.add_group,
                   actions.GroupUpdates, actions.update_group, actions.delete_group, True),
    )
}
"""Authorable sections, in the order the Add menus list them."""


def _input_error(issues: list[str]) -> actions.ActionError:
    return actions.ActionError("The change was not applied: " + "; ".join(issues) + ".")


def add_entity(document: ThreatModel, section: str, fields: dict[str, Any]) -> actions.ActionOutcome:
    """Validate `fields` as the section's add input and run its add action."""
    kind = KINDS.get(section)
    if kind is None:
        return actions.ActionError(f"Entities of this kind ({section}) cannot be added here.")
    parsed = parse_input(kind.new_input, fields)
    if isinstance(parsed, list):
        return _input_error(parsed)
    return kind.add(document, parsed)


def update_entity(document: ThreatModel, section: str, entity_id: str,
                  changes: dict[str, Any]) -> actions.ActionOutcome:
    """Validate `changes` as the section's update input and run its update action."""
    kind = KINDS.get(section)
    if kind is None:
        return actions.ActionError(f"Entities of this kind ({section}) cannot be edited here.")
    parsed = parse_input(kind.updates, changes)
    if isinstance(parsed, list):
        return _input_error(parsed)
    return kind.update(document, entity_id, parsed)


def delete_entity(document: ThreatModel, section: str, entity_id: str, *,
                  cascade: bool = False) -> actions.ActionOutcome:
    kind = KINDS.get(section)
    if kind is None:
        return actions.ActionError(f"Entities of this kind ({section}) cannot be deleted here.")
    if kind.cascades:
        return kind.delete(document, entity_id, cascade=cascade)
    return kind.delete(document, entity_id)
