"""The twelve graph action tools: typed inputs, approval summaries, and the pure actions run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field

from stockade.thf.model import ThreatModel
from stockade.tools import actions
from stockade.tools.actions import (
    ActionError,
    ActionOutcome,
    DataFlowUpdates,
    ElementUpdates,
    NewDataFlow,
    NewElement,
    NewThreat,
    NewTrustBoundary,
    ThreatUpdates,
    TrustBoundaryUpdates,
)
from stockade.tools.registry import DefinedTool, define_tool
from stockade.tools.runtime import ToolContext, ToolEffect, ToolFailed, ToolOk, ToolOutcome
from stockade.tools.schema import IdText, StrictInput, parse_input
from stockade.tools.untrusted import sanitize

SUMMARY_FIELD_MAX = 80
"""Longest model-supplied value shown in an approval summary."""

GRAPH_TOOL_NAMES: tuple[str, ...] = (
    "add_element",
    "update_element",
    "delete_element",
    "add_data_flow",
    "update_data_flow",
    "delete_data_flow",
    "add_trust_boundary",
    "update_trust_boundary",
    "delete_trust_boundary",
    "add_threat",
    "update_threat",
    "delete_threat",
)
DESTRUCTIVE_TOOL_NAMES = frozenset(
    {"delete_element", "delete_data_flow", "delete_trust_boundary", "delete_threat"}
)

_ID = Field(description="Id of an existing entity (ids cannot be changed).")
_CASCADE = Field(
    default=False,
    description="Set true to also delete every entity that still refers to this one. Without "
    "it the delete is refused while references remain.",
)


class AddElementInput(StrictInput):
    action: Literal["add_element"]
    element: NewElement


class UpdateElementInput(StrictInput):
    action: Literal["update_element"]
    id: IdText = _ID
    updates: ElementUpdates = Field(description="Only the fields to change.")


class DeleteElementInput(StrictInput):
    action: Literal["delete_element"]
    id: IdText = _ID
    cascade: bool = _CASCADE


class AddDataFlowInput(StrictInput):
    action: Literal["add_data_flow"]
    data_flow: NewDataFlow


class UpdateDataFlowInput(StrictInput):
    action: Literal["update_data_flow"]
    id: IdText = _ID
    updates: DataFlowUpdates = Field(description="Only the fields to change.")


class DeleteDataFlowInput(StrictInput):
    action: Literal["delete_data_flow"]
    id: IdText = _ID
    cascade: bool = _CASCADE


class AddTrustBoundaryInput(StrictInput):
    action: Literal["add_trust_boundary"]
    trust_boundary: NewTrustBoundary


class UpdateTrustBoundaryInput(StrictInput):
    action: Literal["update_trust_boundary"]
    id: IdText = _ID
    updates: TrustBoundaryUpdates = Field(description="Only the fields to change.")


class DeleteTrustBoundaryInput(StrictInput):
    action: Literal["delete_trust_boundary"]
    id: IdText = _ID


class AddThreatInput(StrictInput):
    action: Literal["add_threat"]
    threat: NewThreat


class UpdateThreatInput(StrictInput):
    action: Literal["update_threat"]
    id: IdText = _ID
    updates: ThreatUpdates = Field(description="Only the fields to change.")


class DeleteThreatInput(StrictInput):
    action: Literal["delete_threat"]
    id: IdText = _ID


def _t(value: str) -> str:
    """A model-supplied value in a summary: one line, no controls, capped."""
    if (type(value) is str and 0 < len(value) <= SUMMARY_FIELD_MAX and value.isascii()
            and value.isprintable()):
        return value  # `sanitize`'s own first case, without its frame and tuple
    return sanitize(value, SUMMARY_FIELD_MAX)[0]


def _fields(updates: StrictInput) -> str:
    return ", ".join(updates.given_names())


def _cascade_suffix(cascade: bool) -> str:
    return " and everything that references it (cascade)" if cascade else ""


_Spec = tuple[
    str,
    str,
    type[StrictInput],
    Callable[[Any], str],
    Callable[[ThreatModel, Any], ActionOutcome],
]

_SPECS: tuple[_Spec, ...] = (
    (
        "add_element",
        "Add a component to the diagram. The app assigns the id and returns it in the result.",
        AddElementInput,
        lambda i: f'Add element "{_t(i.element.name)}" ({_t(i.element.type)})',
        lambda doc, i: actions.add_element(doc, i.element),
    ),
    (
        "update_element",
        "Change fields of an existing element. Send only the fields that change.",
        UpdateElementInput,
        lambda i: f"Update element {_t(i.id)}: {_fields(i.updates)}",
        lambda doc, i: actions.update_element(doc, i.id, i.updates),
    ),
    (
        "delete_element",
        "Delete an element and its trust-boundary memberships. Refused while data flows, "
        "relationships or threats still refer to it, unless cascade is true.",
        DeleteElementInput,
        lambda i: f"Delete element {_t(i.id)}{_cascade_suffix(i.cascade)}",
        lambda doc, i: actions.delete_element(doc, i.id, cascade=i.cascade),
    ),
    (
        "add_data_flow",
        "Connect two existing elements with a data flow. The result gives the new flow's id.",
        AddDataFlowInput,
        lambda i: f"Add data flow {_t(i.data_flow.from_)} → {_t(i.data_flow.to)}",
        lambda doc, i: actions.add_data_flow(doc, i.data_flow),
    ),
    (
        "update_data_flow",
        "Change fields of an existing data flow; its endpoints must remain existing elements.",
        UpdateDataFlowInput,
        lambda i: f"Update data flow {_t(i.id)}: {_fields(i.updates)}",
        lambda doc, i: actions.update_data_flow(doc, i.id, i.updates),
    ),
    (
        "delete_data_flow",
        "Delete a data flow. Refused while threats still target it, unless cascade is true.",
        DeleteDataFlowInput,
        lambda i: f"Delete data flow {_t(i.id)}{_cascade_suffix(i.cascade)}",
        lambda doc, i: actions.delete_data_flow(doc, i.id, cascade=i.cascade),
    ),
    (
        "add_trust_boundary",
        "Draw a trust boundary around existing elements. Every member must be an element id.",
        AddTrustBoundaryInput,
        lambda i: f'Add trust boundary "{_t(i.trust_boundary.name)}"'
        + (f" around {len(i.trust_boundary.contains)} element(s)" if i.trust_boundary.contains else ""),
        lambda doc, i: actions.add_trust_boundary(doc, i.trust_boundary),
    ),
    (
        "update_trust_boundary",
        "Change fields of an existing trust boundary; contains replaces the member list.",
        UpdateTrustBoundaryInput,
        lambda i: f"Update trust boundary {_t(i.id)}: {_fields(i.updates)}",
        lambda doc, i: actions.update_trust_boundary(doc, i.id, i.updates),
    ),
    (
        "delete_trust_boundary",
        "Delete a trust boundary. Its elements stay in the diagram.",
        DeleteTrustBoundaryInput,
        lambda i: f"Delete trust boundary {_t(i.id)}",
        lambda doc, i: actions.delete_trust_boundary(doc, i.id),
    ),
    (
        "add_threat",
        "Record a STRIDE threat against an existing element and/or data flow.",
        AddThreatInput,
        lambda i: f'Add threat "{_t(i.threat.title)}" ({i.threat.category.value}, '
        f"{i.threat.severity.value})"
        + (f" on element {_t(i.threat.element)}" if i.threat.element else "")
        + (f" on data flow {_t(i.threat.flow)}" if i.threat.flow else ""),
        lambda doc, i: actions.add_threat(doc, i.threat),
    ),
    (
        "update_threat",
        "Change fields of an existing threat, including its mitigation status.",
        UpdateThreatInput,
        lambda i: f"Update threat {_t(i.id)}: {_fields(i.updates)}",
        lambda doc, i: actions.update_threat(doc, i.id, i.updates),
    ),
    (
        "delete_threat",
        "Delete a threat.",
        DeleteThreatInput,
        lambda i: f"Delete threat {_t(i.id)}",
        lambda doc, i: actions.delete_threat(doc, i.id),
    ),
)

_BY_NAME: Mapping[str, _Spec] = {spec[0]: spec for spec in _SPECS}


def _tool(spec: _Spec) -> DefinedTool[Any]:
    name, description, model, summarize, apply = spec

    async def execute(value: Any, ctx: ToolContext) -> ToolOutcome:
        if ctx.cancelled.is_set():
            return ToolFailed("The turn was cancelled before this call ran.")
        outcome = apply(ctx.document, value)
        if isinstance(outcome, ActionError):
            return ToolFailed(outcome.message)
        return ToolOk(result=outcome.result, document=outcome.document)

    return define_tool(
        name=name,
        description=description,
        input_model=model,
        effect=ToolEffect.MUTATE,
        destructive=name in DESTRUCTIVE_TOOL_NAMES,
        summarize=summarize,
        execute=execute,
    )


def graph_tools() -> tuple[DefinedTool[Any], ...]:
    """The twelve graph tools in spec order (add/update/delete × element, flow, boundary, threat)."""
    return tuple(_tool(spec) for spec in _SPECS)


def apply_call(document: ThreatModel, tool_name: str, call_input: Mapping[str, Any]) -> ActionOutcome:
    """Run the pure action behind a graph tool call on `document` (no commit, no side effect).

    `call_input` is a `PreparedCall.input`; it is validated again, so any dict is safe here.
    """
    spec = _BY_NAME.get(tool_name)
    if spec is None:
        return ActionError(f'"{_t(tool_name)}" is not a graph action tool.')
    _, _, model, _, apply = spec
    parsed = parse_input(model, dict(call_input))
    if isinstance(parsed, list):
        return ActionError("; ".join(parsed))
    return apply(document, parsed)


def preview(document: ThreatModel, tool_name: str, call_input: Mapping[str, Any]) -> list[str]:
    """What approving the call would do to `document`, one plain line per fact.

    The first line is the result (or the refusal); for deletes, one line per removed entity
    follows, so a cascade shows everything it takes with it.
    """
    outcome = apply_call(document, tool_name, call_input)
    if isinstance(outcome, ActionError):
        return [f"Would be refused: {outcome.message}"]
    lines = [outcome.result]
    lines += [f"Removes {_t(entity)}" for entity in outcome.removed]
    return lines
