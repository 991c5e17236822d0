"""Strict tool-input validation: the `__proto__` walk, typed inputs, plain issues, JSON schemas."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

SCALAR_MAX_CODE_POINTS = 200
"""Longest id, name, type or other short string a tool accepts."""
TEXT_MAX_CODE_POINTS = 4000
"""Longest free text (descriptions) a tool accepts."""
LIST_MAX_INPUT_ITEMS = 100
"""Most items a list field in a tool input may carry."""

FORBIDDEN_KEY = "__proto__"

IdText = Annotated[str, Field(min_length=1, max_length=SCALAR_MAX_CODE_POINTS)]
ShortText = Annotated[str, Field(max_length=SCALAR_MAX_CODE_POINTS)]
NameText = Annotated[str, Field(min_length=1, max_length=SCALAR_MAX_CODE_POINTS)]
LongText = Annotated[str, Field(max_length=TEXT_MAX_CODE_POINTS)]
RequiredLongText = Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CODE_POINTS)]
TextList = Annotated[list[ShortText], Field(max_length=LIST_MAX_INPUT_ITEMS)]
IdList = Annotated[list[IdText], Field(max_length=LIST_MAX_INPUT_ITEMS)]


class StrictInput(BaseModel):
    """Base of every tool input: unknown keys rejected, no type coercion, no nulls, frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    @field_validator("*", mode="before")
    @classmethod
    def _reject_null(cls, value: Any) -> Any:
        # Optional fields default to "not given"; an explicit null would be a third state the
        # advertised schema never offers, so it is refused rather than guessed at.
        if value is None:
            raise ValueError("must not be null (leave an optional field out instead)")
        return value

    def given(self) -> dict[str, Any]:
        """The fields the caller actually supplied, as JSON-ready values keyed by wire name."""
        # `model_dump` with these options, without its keyword plumbing (as in `canonical`).
        return self.__pydantic_serializer__.to_python(
            self, mode="json", by_alias=True, exclude_unset=True
        )

    def given_names(self) -> list[str]:
        """The keys of `given()` (wire names of the supplied fields, in declaration order),
        read from the fields set instead of a serializer pass (one per update summary)."""
        wire = _wire_names(type(self))
        return [wire[name][1] for name in sorted(self.__pydantic_fields_set__, key=wire.__getitem__)]

    def canonical(self) -> dict[str, Any]:
        """The validated input as digested: given fields plus non-null defaults.

        Defaults are written out so that inputs with the same effect (`"cascade": false` and
        no `cascade`) share one digest, and a declined call cannot come back in new clothes.
        """
        # `model_dump(mode="json", by_alias=True, exclude_none=True)` calls the same serializer
        # through a dozen keyword defaults: a quarter of dumping a small input.
        return self.__pydantic_serializer__.to_python(
            self, mode="json", by_alias=True, exclude_none=True
        )


def _wire_names(model: type[StrictInput]) -> dict[str, tuple[int, str]]:
    """Each of `model`'s fields: its declaration position and wire name (built once)."""
    names = _WIRE_NAMES.get(model)
    if names is None:
        names = _WIRE_NAMES[model] = {
            name: (position, info.serialization_alias or info.alias or name)
            for position, (name, info) in enumerate(model.model_fields.items())
        }
    return names


_WIRE_NAMES: dict[type[StrictInput], dict[str, tuple[int, str]]] = {}


InputT = TypeVar("InputT", bound=StrictInput)


def format_path(parts: tuple[int | str, ...] | list[int | str]) -> str:
    """`a.b[0].c` notation; numeric segments are list indexes."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _issue(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def forbidden_key_issues(raw: Any) -> list[str]:
    """Every `__proto__` key and unpaired surrogate anywhere in `raw`, found without recursion.

    An explicit stack keeps arbitrarily deep input (20,000 nested lists) from exhausting the
    interpreter's recursion limit; paths are kept as parent links and spelled out only for an
    issue, so deep input costs linear time. Clean input (nearly all of it) is recognised first
    by a walk that keeps no paths at all.
    """
    if _plainly_clean(raw):
        return []
    return _path_issues(raw)


def _plainly_clean(raw: Any) -> bool:
    """True when `raw` (plain dicts, lists and scalars) has no `__proto__` key and no unpaired
    surrogate; False when it has one, or holds a subclass the exact walk should judge."""
    stack = [raw]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        value = pop()
        kind = type(value)
        if kind is str:
            if _has_lone_surrogate(value):
                return False
        elif kind is dict:
            for key, child in value.items():
                if key == FORBIDDEN_KEY or (isinstance(key, str) and _has_lone_surrogate(key)):
                    return False
                push(child)
        elif kind is list:
            extend(value)
        elif isinstance(value, (str, dict, list)):
            return False
    return True


def _path_issues(raw: Any) -> list[str]:
    issues: list[str] = []
    root: _PathLink = None
    stack: list[tuple[Any, _PathLink]] = [(raw, root)]
    while stack:
        value, link = stack.pop()
        if isinstance(value, dict):
            children: list[tuple[Any, _PathLink]] = []
            for key, child in value.items():
                child_link = (link, str(key))
                if key == FORBIDDEN_KEY:
                    issues.append(_issue(_spell(child_link), f'"{FORBIDDEN_KEY}" is not an accepted key'))
                elif isinstance(key, str) and _has_lone_surrogate(key):
                    issues.append(_issue(_spell(link), "a key contains an unpaired surrogate, which is not valid text"))
                else:
                    children.append((child, child_link))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend((value[i], (link, i)) for i in range(len(value) - 1, -1, -1))
        elif isinstance(value, str) and _has_lone_surrogate(value):
            issues.append(_issue(_spell(link), "contains an unpaired surrogate, which is not valid text"))
    return issues


_PathLink = tuple[Any, int | str] | None


def _spell(link: _PathLink) -> str:
    parts: list[int | str] = []
    while link is not None:
        link, part = link
        parts.append(part)
    parts.reverse()
    return format_path(parts)


def _has_lone_surrogate(text: str) -> bool:
    # Surrogates cannot be encoded as UTF-8, so they would break the canonical digest.
    return any("\ud800" <= ch <= "\udfff" for ch in text) if not text.isascii() else False


_TYPE_WORDS: dict[str, str] = {
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def _describe(error: ErrorDetails) -> tuple[str, str]:
    """Turn one pydantic error into (path, plain message) that names the field."""
    loc = tuple(error.get("loc", ()))
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        parent = format_path(loc[:-1])
        return parent, f'"{key}" is not an accepted field'
    path = format_path(loc)
    if kind == "missing":
        return path, "is required"
    if kind in _TYPE_WORDS:
        return path, _TYPE_WORDS[kind]
    if kind == "string_too_short":
        return path, "must not be empty"
    if kind == "string_too_long":
        return path, f"must be at most {ctx.get('max_length')} characters"
    if kind == "too_long":
        return path, f"must have at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return path, f"must have at least {ctx.get('min_length')} items"
    if kind in ("greater_than_equal", "greater_than"):
        return path, f"must be at least {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return path, f"must be at most {ctx.get('le', ctx.get('lt'))}"
    if kind in ("literal_error", "enum"):
        return path, f"must be one of {ctx.get('expected')}"
    if kind == "finite_number":
        return path, "must be a finite number"
    if kind == "value_error":
        reason = ctx.get("error")
        return path, str(reason) if reason is not None else "is not valid"
    return path, "is not valid"


def parse_input(model: type[InputT], raw: Any) -> InputT | list[str]:
    """Validate raw model JSON into `model`, or return `path: message` issues.

    The key walk runs first and alone: input carrying `__proto__` is refused before the
    schema ever sees it.
    """
    issues = forbidden_key_issues(raw)
    if issues:
        return issues
    return validate_input(model, raw)


def validate_input(model: type[InputT], raw: Any) -> InputT | list[str]:
    """`parse_input` after its key walk: for input already known to hold no `__proto__` key and
    no unpaired surrogate (`tools.runtime.plainly_bounded(raw, screen_keys=True)`)."""
    if not isinstance(raw, dict):
        return [f"the input must be a JSON object, not {_json_type_name(raw)}"]
    try:
        # `model.model_validate(raw)` without its keyword plumbing (a fifth of validating a
        # small input); the same validator with the same (default) options.
        return model.__pydantic_validator__.validate_python(raw)
    except ValidationError as exc:
        return validation_issues(exc)


def validation_issues(exc: ValidationError) -> list[str]:
    """A tool input's validation errors as plain `path: message` issues, each once."""
    out: list[str] = []
    for error in exc.errors(include_url=False):
        path, message = _describe(error)
        text = _issue(path, message)
        if text not in out:
            out.append(text)
    return out or ["the input is not valid"]


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def json_schema(model: type[StrictInput]) -> dict[str, Any]:
    """The advertised schema: inline nested objects, no `$schema`/`$defs`/titles/null branches."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema = _clean(raw, defs)
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        raise ValueError(f"{model.__name__} does not produce a closed object schema")
    return schema


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    # Schemas here are a few levels deep (tool inputs), so plain recursion is fine.
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        node = {**target, **node}
    if "allOf" in node and len(node["allOf"]) == 1:
        inner = node.pop("allOf")[0]
        node = {**_clean(inner, defs), **node}
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b != {"type": "null"}]
        if len(branches) == 1:
            del node["anyOf"]
            node = {**_clean(branches[0], defs), **node}
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for drop in ("title", "default", "$schema"):
        node.pop(drop, None)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs)
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
        if not out.get("required"):
            out.pop("required", None)
    return out
