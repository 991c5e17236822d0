"""Edit before approve: what a person changed in a proposed call, in words the model reads.

An edit replaces a pending call's input with the person's. The tool's own `prepare` validates
it and gives it its own digest; the call's record keeps the model's original input and digest
(`CallEdit`) so the audit, a parked snapshot and the tool result can all say what changed. A
grant is only ever made for the input the call holds when it is approved, so a grant for the
original never runs the edited input, nor the reverse (`authorization.authorize_start`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stockade.tools.runtime import PreparedCall, PrepareFailed

CHANGE_VALUE_MAX = 80
"""Longest before/after value quoted in the note the model reads."""
CHANGES_LISTED_MAX = 12

EDITED_RESULT_TEXT = ("The user changed this call before approving it ({changes}); it ran with "
                      "the user's input, not the one you sent. Result: {result}")


@dataclass(frozen=True, slots=True)
class CallEdit:
    """A person's edit of a pending call: who, and what the model had sent."""

    actor: str
    original_digest: str
    original_input: Any
    changes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"actor": self.actor, "original_digest": self.original_digest,
                "original_input": self.original_input, "changes": list(self.changes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CallEdit:
        return cls(actor=str(data["actor"]), original_digest=str(data["original_digest"]),
                   original_input=data.get("original_input"),
                   changes=tuple(str(c) for c in data.get("changes", ())))


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            _flatten(value[key], f"{path}.{key}" if path else str(key), out)
    else:
        out[path or "input"] = value


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    text = " ".join(text.split())
    if len(text) > CHANGE_VALUE_MAX:
        text = text[: CHANGE_VALUE_MAX - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def describe_changes(before: Any, after: Any) -> tuple[str, ...]:
    """Field-by-field differences, e.g. `threat.severity: "high" → "medium"` (sorted paths)."""
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    _flatten(before, "", old)
    _flatten(after, "", new)
    lines = []
    for path in sorted(set(old) | set(new)):
        if path in old and path in new and old[path] == new[path]:
            continue
        if path not in new:
            lines.append(f"{path}: removed (was {_show(old[path])})")
        elif path not in old:
            lines.append(f"{path}: added {_show(new[path])}")
        else:
            lines.append(f"{path}: {_show(old[path])} → {_show(new[path])}")
    if len(lines) > CHANGES_LISTED_MAX:
        lines = [*lines[:CHANGES_LISTED_MAX], f"and {len(lines) - CHANGES_LISTED_MAX} more"]
    return tuple(lines)


def edited_result(edit: CallEdit, result: str) -> str:
    """The tool result the model reads for a call that ran with a person's input."""
    changes = "; ".join(edit.changes) if edit.changes else "no field changed"
    return EDITED_RESULT_TEXT.format(changes=changes, result=result)


def prepare_edit(tool: Any, new_input: Any) -> PreparedCall | PrepareFailed:
    """Validate `new_input` with the tool's own `prepare` (a crashing tool is a refusal)."""
    try:
        prepared = tool.prepare(new_input)
    except Exception:
        return PrepareFailed(("the tool could not check this input",))
    if isinstance(prepared, (PreparedCall, PrepareFailed)):
        return prepared
    return PrepareFailed(("the tool could not check this input",))
