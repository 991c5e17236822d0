"""Strict tool-input validation: the `__proto__` walk, typed inputs, plain issues, JSON schemas."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails, PydanticSerializationError, SchemaValidator

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


# ---------------------------------------------------------------- sorted validation

JSON_EXACT_INT = 2**53
"""Ints below this in magnitude print the same in pydantic's JSON and in canonical JSON (far
below Python's digit limit for printing an int, which canonical JSON keeps)."""


class SortedJsonPlan:
    """How one input model's canonical JSON comes out of a single `to_json` call.

    `validate` is the model's validator with every model's fields in sorted wire-name order,
    so a validated value's instance dicts are in that order and the model's own serializer,
    which writes fields in instance-dict order, writes canonical JSON (keys sorted by code
    point, no whitespace, non-ASCII raw: pydantic escapes exactly what `json` does). It makes
    instances of the same classes with the same fields; only the dicts' order differs.

    What pydantic would print otherwise than canonical JSON is floats (integral ones end in
    `.0`, exponents differ) and ints past `JSON_EXACT_INT` (canonical JSON refuses to print
    past Python's digit limit): `guarded` reads the fields that may hold them (a whole nested
    model when it holds a float), and a value where one of them is set is left to the plain
    way. So are nested models that were not given as plain dicts (`models`: their wire paths,
    outer first; a model instance passes the validator as it is).
    """

    __slots__ = ("guarded", "models", "to_json", "validate")

    def __init__(self, validate: Callable[[Any], Any], guarded: Callable[[Any], Any] | None,
                 models: tuple[tuple[str, ...], ...], to_json: Callable[..., bytes]) -> None:
        self.validate = validate
        self.guarded = guarded
        self.models = models
        self.to_json = to_json

    def canonical_text(self, raw: dict[str, Any]) -> tuple[Any, bytes] | None:
        """The validated value and its canonical JSON bytes, or None when `raw` does not
        validate or is not plainly printed so (see the class)."""
        try:
            value = self.validate(raw)
        except ValidationError:
            return None
        for path in self.models:
            node: Any = raw
            for key in path:  # each outer path was found a dict (or absent) already
                node = node.get(key)
                if node is None:
                    break
            else:
                if type(node) is not dict:
                    return None
        guarded = self.guarded
        if guarded is not None:
            for item in guarded(value):
                if item is not None and (type(item) is not int
                                         or not -JSON_EXACT_INT < item < JSON_EXACT_INT):
                    return None
        try:
            return value, self.to_json(value, by_alias=True, exclude_none=True)
        except PydanticSerializationError:
            return None  # text that cannot be UTF-8: the plain way names it


def sorted_json_plan(model: type[StrictInput]) -> SortedJsonPlan | None:
    """The model's `SortedJsonPlan`, or None when its schema holds anything this does not
    know to print canonically (unions, dicts, custom serializers, a `__proto__` field, ...):
    such a model's values go the plain way."""
    schema = model.__pydantic_core_schema__
    classes: list[type[BaseModel]] = []
    guarded: list[str] = []
    models: list[tuple[str, ...]] = []
    sorted_schema = _sorted_model(schema, classes, guarded, models, "", ())
    if sorted_schema is None:
        return None
    # pydantic-core reuses a complete model class's own validator for a "model" schema naming
    # it, whatever fields the schema lists: the classes are marked incomplete while this one is
    # built, so it is built from the sorted fields.
    for cls in classes:
        type.__setattr__(cls, "__pydantic_complete__", False)
    try:
        validator = SchemaValidator(sorted_schema, schema.get("config"))
    finally:
        for cls in classes:
            type.__setattr__(cls, "__pydantic_complete__", True)
    getter: Callable[[Any], Any] | None = None
    if len(guarded) == 1:
        one = attrgetter(guarded[0])
        getter = lambda value: (one(value),)  # noqa: E731  (attrgetter of one name gives no tuple)
    elif guarded:
        getter = attrgetter(*guarded)
    models.sort(key=len)
    return SortedJsonPlan(validator.validate_python, getter, tuple(models),
                          model.__pydantic_serializer__.to_json)


_MAX_PLANNED_DEPTH = 8
"""Nesting of models a plan covers (tool inputs nest two or three deep)."""


def _sorted_model(node: Any, classes: list[type[BaseModel]], guarded: list[str],
                  models: list[tuple[str, ...]], path: str,
                  wires: tuple[str, ...]) -> dict[str, Any] | None:
    if (not isinstance(node, dict) or node.get("type") != "model" or "serialization" in node
            or len(wires) > _MAX_PLANNED_DEPTH):
        return None
    wrapped = node.get("schema")
    if not isinstance(wrapped, dict):
        return None
    inner: Any = wrapped
    while isinstance(inner, dict) and inner.get("type") == "function-before":
        inner = inner.get("schema")  # a model validator (`_Updates`), which keeps the fields
    if (not isinstance(inner, dict) or inner.get("type") != "model-fields"
            or inner.get("computed_fields") or "extras_schema" in inner):
        return None
    fields: list[tuple[str, str, dict[str, Any]]] = []
    for name, field in inner["fields"].items():
        if (field.get("type") != "model-field" or field.get("serialization_exclude")
                or "serialization" in field):
            return None
        wire = field.get("serialization_alias") or name
        if wire != (field.get("validation_alias") or name) or wire == FORBIDDEN_KEY:
            return None
        at = f"{path}.{name}" if path else name
        kind, leaf = _leaf(field["schema"])
        if kind == "model":
            # A nested model is sorted too; one that may hold a float or a long int is
            # guarded whole when it is optional (its fields are then read only when set).
            inner_guarded: list[str] = []
            models.append((*wires, wire))
            sorted_leaf = _sorted_model(leaf, classes, inner_guarded, models, at, (*wires, wire))
            if sorted_leaf is None:
                return None
            if inner_guarded and _optional(field["schema"]):
                guarded.append(at)
            else:
                guarded.extend(inner_guarded)
            schema = _replace_leaf(field["schema"], sorted_leaf)
        elif kind == "plain":
            schema = field["schema"]
        elif kind == "guarded":
            guarded.append(at)
            schema = field["schema"]
        else:
            return None
        fields.append((wire, name, {**field, "schema": schema}))
    fields.sort(key=lambda item: item[0])
    classes.append(node["cls"])
    sorted_fields = {**inner, "fields": {name: f for _, name, f in fields}}
    return {**node, "schema": _replace_leaf(wrapped, sorted_fields)}


_WRAPPERS = frozenset({"default", "nullable", "function-before"})


def _leaf(schema: dict[str, Any]) -> tuple[str, Any]:
    """(kind, innermost schema) of a field: "plain" (printed as canonical JSON prints it),
    "guarded" (a float or an int that may be long), "model", or "unknown"."""
    while schema.get("type") in _WRAPPERS and "serialization" not in schema:
        schema = schema["schema"]
    if "serialization" in schema:
        return "unknown", schema
    kind = schema.get("type")
    if kind == "model":
        return "model", schema
    if kind in ("str", "bool"):
        return "plain", schema
    if kind == "literal":
        plain = all(type(v) is str for v in schema.get("expected", ()))
        return ("plain" if plain else "unknown"), schema
    if kind == "enum":
        plain = schema.get("sub_type") == "str"
        return ("plain" if plain else "unknown"), schema
    if kind == "int":
        low = schema.get("ge", schema.get("gt"))
        high = schema.get("le", schema.get("lt"))
        bounded = (low is not None and high is not None
                   and low > -JSON_EXACT_INT and high < JSON_EXACT_INT)
        return ("plain" if bounded else "guarded"), schema
    if kind == "float":
        return "guarded", schema
    if kind == "list":
        items_kind, _ = _leaf(schema.get("items_schema", {"type": "any"}))
        if items_kind == "plain":
            return "plain", schema
        return ("guarded" if items_kind == "guarded" else "unknown"), schema
    return "unknown", schema


def _optional(schema: dict[str, Any]) -> bool:
    while schema.get("type") in _WRAPPERS:
        if schema.get("type") in ("default", "nullable"):
            return True
        schema = schema["schema"]
    return False


def _replace_leaf(schema: dict[str, Any], leaf: dict[str, Any]) -> dict[str, Any]:
    if schema.get("type") in _WRAPPERS:
        return {**schema, "schema": _replace_leaf(schema["schema"], leaf)}
    return leaf


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
