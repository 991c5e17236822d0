"""Defining tools (`define_tool`) and the frozen registry that resolves them by exact name."""

from __future__ import annotations

import builtins
import copy
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any, Generic, NoReturn

from pydantic import ValidationError

from stockade.protocol.request import ToolSpec
from stockade.thf.canonical import canonical_bytes_digest, json_ready_digest
from stockade.tools.runtime import (
    MAX_INPUT_BYTES,
    PrepareFailed,
    PrepareResult,
    Tool,
    ToolContext,
    ToolEffect,
    ToolOutcome,
    input_problem,
    new_prepared_call,
    plainly_bounded,
    refusal_of,
)
from stockade.tools.schema import (
    InputT,
    json_schema,
    parse_input,
    sorted_json_plan,
    validation_issues,
)

_CHECKED_TEXT_MAX = MAX_INPUT_BYTES // 2
"""Longest canonical text of an input `prepare` takes without the bound walk (see there)."""


def _read_and_destructive(name: str) -> ValueError:
    return ValueError(f'Tool "{name}" cannot be both read-only and destructive.')


class DefinedTool(Generic[InputT]):
    """A tool built by `define_tool`: static effect, a typed input model, summary and body.

    `prepare` is the only way to a `PreparedCall`; the call's `run` closes over the validated
    input, so raw model JSON never reaches `execute`.
    """

    __slots__ = ("_coroutine_execute", "_description", "_destructive", "_dump", "_effect",
                 "_execute", "_input_model", "_name", "_plan", "_schema", "_summarize",
                 "_validate")

    def __init__(
        self,
        name: str,
        description: str,
        input_model: type[InputT],
        effect: ToolEffect,
        destructive: bool,
        summarize: Callable[[InputT], str],
        execute: Callable[[InputT, ToolContext], Awaitable[ToolOutcome]],
    ) -> None:
        effect = ToolEffect(effect)
        if effect is ToolEffect.READ and destructive:
            raise _read_and_destructive(name)
        self._name = name
        self._description = description
        self._input_model = input_model
        self._effect = effect
        self._destructive = bool(destructive)
        self._summarize = summarize
        self._execute = execute
        self._coroutine_execute = inspect.iscoroutinefunction(execute)
        # The model's own validator and serializer, bound once: `prepare` calls them directly.
        self._validate = input_model.__pydantic_validator__.validate_python
        self._dump = input_model.__pydantic_serializer__.to_python
        # The validator that makes values whose JSON is canonical already (None: the model's
        # schema holds something the plan does not cover; its inputs all go the plain way).
        self._plan = sorted_json_plan(input_model)
        self._schema = json_schema(input_model)  # fails at definition time, not at request time

    def __setattr__(self, key: str, value: Any) -> None:
        if hasattr(self, "_schema"):
            raise AttributeError(f'tool "{self._name}" is immutable')
        object.__setattr__(self, key, value)

    def __repr__(self) -> str:
        return f"<tool {self._name} {self._effect.value}{' destructive' if self._destructive else ''}>"

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def effect(self) -> ToolEffect:
        return self._effect

    @property
    def destructive(self) -> bool:
        return self._destructive

    @property
    def input_model(self) -> type[InputT]:
        return self._input_model

    def input_schema(self) -> dict[str, Any]:
        """A fresh copy of the advertised JSON schema (callers may not alter the tool's)."""
        return copy.deepcopy(self._schema)

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self._name, description=self._description, input_schema=self.input_schema())

    def parse(self, raw: Any) -> InputT | list[str]:
        """Typed input, or `path: message` issues."""
        return parse_input(self._input_model, raw)

    def prepare(self, raw: Any) -> PrepareResult:
        refusal = refusal_of(raw)
        if refusal is not None:
            return PrepareFailed(issues=(refusal,))
        plan = self._plan
        checked = plan.canonical_text(raw) if plan is not None and type(raw) is dict else None
        if checked is not None and len(checked[1]) <= _CHECKED_TEXT_MAX:
            # Canonical JSON straight from the model's serializer (`SortedJsonPlan`). The input
            # keeps every bound `input_problem` and the key walk check, without walking it: it
            # validated (so its keys are the model's field names, none `__proto__`, its text
            # holds no unpaired surrogate, its values are plain JSON without floats, its models
            # plain dicts, its nesting the model's), and the walk's size of such an input is at
            # most twice its canonical text's length (a key's quotes and colon, a string's
            # quotes, a digit per int below 10, `true`, against the walk's 4, 0, 1 and 5).
            value: InputT = checked[0]
            input_digest = canonical_bytes_digest(checked[1])
        else:
            if type(raw) is dict and plainly_bounded(raw, screen_keys=True):
                # One walk cleared the bound check and the key walk; what is left of `parse` is
                # the model's validator (called directly: `validate_input` without its type
                # check).
                try:
                    value = self._validate(raw)
                except ValidationError as exc:
                    return PrepareFailed(issues=tuple(validation_issues(exc)))
            else:
                problem = input_problem(raw)
                if problem is not None:
                    return PrepareFailed(issues=(problem,))
                parsed = self.parse(raw)
                if isinstance(parsed, list):
                    return PrepareFailed(issues=tuple(parsed))
                value = parsed
            # `value.canonical()` through the bound serializer, with the same options.
            input_digest = json_ready_digest(
                self._dump(value, mode="json", by_alias=True, exclude_none=True)
            )
        execute = self._execute
        if self._coroutine_execute:
            # `run(ctx)` is then `execute(value, ctx)`'s coroutine itself: the same awaitable
            # as the wrapper below, without a closure and its cells per prepared call.
            run: Callable[[ToolContext], Awaitable[ToolOutcome]] = partial(execute, value)
        else:
            async def run(ctx: ToolContext) -> ToolOutcome:
                return await execute(value, ctx)

        # The canonical input itself is dumped when first read (the loop reads the digest).
        return new_prepared_call(
            self._name, self._summarize(value), input_digest, value, self._dump, run
        )


def define_tool(
    name: str,
    description: str,
    input_model: type[InputT],
    effect: ToolEffect,
    destructive: bool,
    summarize: Callable[[InputT], str],
    execute: Callable[[InputT, ToolContext], Awaitable[ToolOutcome]],
) -> DefinedTool[InputT]:
    """Define a tool. A read tool that is also destructive is a programming error (raises)."""
    return DefinedTool(name, description, input_model, effect, destructive, summarize, execute)


class ToolRegistry:
    """An immutable set of tools in registration order, looked up by exact name only.

    No stripping, case folding or Unicode normalization: `"delete_element "` and
    `"delete_element\\u200b"` are different, unknown names.
    """

    __slots__ = ("_by_name", "_tools")
    _tools: tuple[Tool, ...]
    _by_name: Mapping[str, Tool]

    def __init__(self, tools: Iterable[Tool]) -> None:
        ordered = tuple(tools)
        by_name: dict[str, Tool] = {}
        for tool in ordered:
            if tool.name in by_name:
                raise ValueError(f'Duplicate tool name "{tool.name}" in registry.')
            if ToolEffect(tool.effect) is ToolEffect.READ and tool.destructive:
                raise _read_and_destructive(tool.name)
            by_name[tool.name] = tool
        object.__setattr__(self, "_tools", ordered)
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    def __setattr__(self, key: str, value: Any) -> NoReturn:
        raise AttributeError("a tool registry is immutable")

    def __delattr__(self, key: str) -> NoReturn:
        raise AttributeError("a tool registry is immutable")

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._by_name

    def get(self, name: str) -> Tool | None:
        """The tool registered under exactly `name`, else None."""
        if not isinstance(name, str):
            return None
        return self._by_name.get(name)

    def list(self) -> tuple[Tool, ...]:
        """Every tool, in registration order."""
        return self._tools

    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What a `ChatRequest` advertises: exactly these tools, nothing else."""
        return tuple(
            ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema())
            for t in self._tools
        )


def default_registry() -> ToolRegistry:
    """The production tools: the four read tools, then the twelve graph tools in spec order."""
    from stockade.tools.graph_tools import graph_tools
    from stockade.tools.read_tools import read_tools

    tools: builtins.list[Tool] = [*read_tools(), *graph_tools()]
    return ToolRegistry(tools)
