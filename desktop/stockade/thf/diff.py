"""Entity-level differences between two threat models, for approval dialogs and the audit viewer.

Order is deterministic: `document` (version and unknown root keys), `metadata`, then the
sections in canonical order. Within a section, entities present in `b` come in `b`'s document
order (added or changed), followed by the removed ones in `a`'s document order. Field changes
list `a`'s keys in order, then keys only `b` has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from stockade.thf.format import SECTION_NAMES

if TYPE_CHECKING:
    from stockade.thf.model import ThfModel, ThreatModel

ChangeKind = Literal["added", "removed", "changed"]

_MISSING: Any = object()

_SINGULAR = {
    "document": "document",
    "metadata": "metadata",
    "layers": "layer",
    "groups": "group",
    "elements": "element",
    "data_flows": "data flow",
    "relationships": "relationship",
    "trust_boundaries": "trust boundary",
    "threats": "threat",
    "diagrams": "diagram",
}


class FieldChange(NamedTuple):
    """One key whose dumped value differs; `None` stands for "absent"."""

    name: str
    before: Any
    after: Any


class EntityChange(NamedTuple):
    """An entity added, removed or changed in one section (`id` is "" for metadata/document)."""

    section: str
    id: str
    change: ChangeKind
    fields: tuple[FieldChange, ...]


def diff(a: ThreatModel, b: ThreatModel) -> list[EntityChange]:
    """Every entity-level difference from `a` to `b`, in the order described above."""
    changes: list[EntityChange] = []
    root_a, root_b = _root_fields(a), _root_fields(b)
    document_fields = _field_changes(root_a, root_b)
    if document_fields:
        changes.append(EntityChange("document", "", "changed", document_fields))
    if a.metadata != b.metadata:
        metadata_fields = _field_changes(_dump(a.metadata), _dump(b.metadata))
        if metadata_fields:
            changes.append(EntityChange("metadata", "", "changed", metadata_fields))
    for section in SECTION_NAMES:
        changes.extend(_section_changes(section, getattr(a, section), getattr(b, section)))
    return changes


def describe(change: EntityChange) -> str:
    """A plain-text one-liner, e.g. `Changed data flow 'flow-1': protocol, authenticated`."""
    label = _SINGULAR.get(change.section, change.section)
    subject = label if not change.id else f"{label} '{change.id}'"
    if change.change == "added":
        name = _display_name(change, after=True)
        return f"Added {subject}" + (f" ({name})" if name else "")
    if change.change == "removed":
        name = _display_name(change, after=False)
        return f"Removed {subject}" + (f" ({name})" if name else "")
    names = ", ".join(f.name for f in change.fields)
    return f"Changed {subject}: {names}"


def _display_name(change: EntityChange, *, after: bool) -> str:
    for field in change.fields:
        if field.name in ("name", "title"):
            value = field.after if after else field.before
            return value if isinstance(value, str) else ""
    return ""


def _dump(record: ThfModel) -> dict[str, Any]:
    return record.model_dump(mode="json", by_alias=True, exclude_none=True)


def _root_fields(model: ThreatModel) -> dict[str, Any]:
    fields: dict[str, Any] = {"version": model.version}
    fields.update(model.extras)
    return fields


def _field_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[FieldChange, ...]:
    out: list[FieldChange] = []
    for name, old in before.items():
        new = after.get(name, _MISSING)
        if new is _MISSING:
            out.append(FieldChange(name, old, None))
        elif new != old or isinstance(new, bool) != isinstance(old, bool):
            out.append(FieldChange(name, old, new))
    for name, new in after.items():
        if name not in before:
            out.append(FieldChange(name, None, new))
    return tuple(out)


def _section_changes(section: str, old: list[Any], new: list[Any]) -> list[EntityChange]:
    if old == new:
        return []
    old_by_id: dict[str, Any] = {}
    for entity in old:
        old_by_id.setdefault(entity.id, entity)
    new_ids: set[str] = set()
    changes: list[EntityChange] = []
    for entity in new:
        if entity.id in new_ids:
            continue
        new_ids.add(entity.id)
        previous = old_by_id.get(entity.id)
        if previous is None:
            dumped = _dump(entity)
            fields = tuple(FieldChange(k, None, v) for k, v in dumped.items())
            changes.append(EntityChange(section, entity.id, "added", fields))
        elif previous is not entity and previous != entity:  # untouched entities are shared
            fields = _field_changes(_dump(previous), _dump(entity))
            if fields:
                changes.append(EntityChange(section, entity.id, "changed", fields))
    for entity_id, entity in old_by_id.items():
        if entity_id not in new_ids:
            dumped = _dump(entity)
            fields = tuple(FieldChange(k, v, None) for k, v in dumped.items())
            changes.append(EntityChange(section, entity_id, "removed", fields))
    return changes
