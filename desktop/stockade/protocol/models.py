"""The model list users pick from (`resources/models.json`) and request preflight against it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from stockade.paths import resources_dir
from stockade.protocol.errors import ProtocolException, unsupported_capability
from stockade.protocol.request import ChatRequest

MODELS_FILE = "models.json"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model a user can choose, with the limits and capabilities the protocol relies on.

    A `configurable` entry stands for any model id under its provider (a local server's model
    name, a replay file) and supplies the limits used for all of them.
    """

    provider: str
    id: str
    label: str
    context_window: int
    max_output_tokens: int
    tool_calling: bool
    parallel_tool_calls: bool
    streaming: bool
    is_default: bool = False
    configurable: bool = False


class ModelListError(ValueError):
    """`models.json` is missing or malformed; names the problem, not parser internals."""


class _Capabilities(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_calling: bool
    parallel_tool_calls: bool
    streaming: bool


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1)
    id: str = Field(min_length=1)
    label: str = Field(min_length=1)
    default: bool = False
    configurable: bool = False
    context_window: PositiveInt
    max_output_tokens: PositiveInt
    capabilities: _Capabilities


class _ModelFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int
    models: list[_Entry]


def parse_models(text: str) -> tuple[ModelInfo, ...]:
    """Models from the JSON text of a model list; raises `ModelListError` on any problem."""
    try:
        data = _ModelFile.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ModelListError(f"the model list is not valid JSON (line {exc.lineno})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ModelListError(f"the model list has a bad field at {where}: {first['msg']}") from None
    if data.version != 1:
        raise ModelListError(f"the model list version {data.version} is not supported")
    seen: set[tuple[str, str]] = set()
    defaults: dict[str, int] = {}
    models: list[ModelInfo] = []
    for entry in data.models:
        key = (entry.provider, entry.id)
        if key in seen:
            raise ModelListError(f"the model list names {entry.provider}/{entry.id} twice")
        seen.add(key)
        if entry.default:
            defaults[entry.provider] = defaults.get(entry.provider, 0) + 1
        models.append(
            ModelInfo(
                provider=entry.provider,
                id=entry.id,
                label=entry.label,
                context_window=entry.context_window,
                max_output_tokens=entry.max_output_tokens,
                tool_calling=entry.capabilities.tool_calling,
                parallel_tool_calls=entry.capabilities.parallel_tool_calls,
                streaming=entry.capabilities.streaming,
                is_default=entry.default,
                configurable=entry.configurable,
            )
        )
    for provider in {m.provider for m in models}:
        if defaults.get(provider, 0) != 1:
            raise ModelListError(f"provider {provider} needs exactly one default model")
        if sum(1 for m in models if m.provider == provider and m.configurable) > 1:
            raise ModelListError(f"provider {provider} has more than one configurable entry")
    return tuple(models)


@lru_cache(maxsize=4)
def _load(path: Path) -> tuple[ModelInfo, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ModelListError("the model list file could not be read") from None
    return parse_models(text)


def load_models(path: Path | None = None) -> tuple[ModelInfo, ...]:
    """Every listed model, in file order (cached per path)."""
    return _load(path if path is not None else resources_dir() / MODELS_FILE)


def find_model(provider: str, model_id: str) -> ModelInfo | None:
    """The entry whose provider AND id match exactly, or None."""
    for model in load_models():
        if model.provider == provider and model.id == model_id:
            return model
    return None


def resolve_model(provider: str, model_id: str) -> ModelInfo | None:
    """The exact entry, else the provider's configurable entry (any id is allowed there)."""
    exact = find_model(provider, model_id)
    if exact is not None:
        return exact
    for model in load_models():
        if model.provider == provider and model.configurable:
            return model
    return None


def models_for(provider: str) -> tuple[ModelInfo, ...]:
    """The models listed for one provider, in file order."""
    return tuple(m for m in load_models() if m.provider == provider)


def providers() -> tuple[str, ...]:
    """Provider ids that have at least one model, in file order."""
    return tuple(dict.fromkeys(m.provider for m in load_models()))


def default_model(provider: str) -> ModelInfo:
    """The provider's default model; raises `ValueError` for a provider with no models."""
    for model in load_models():
        if model.provider == provider and model.is_default:
            return model
    valid = ", ".join(providers())
    raise ValueError(f"no models are listed for provider {provider!r}; known: {valid}")


def preflight(request: ChatRequest) -> None:
    """Refuse a request whose tools the chosen model cannot be trusted to call.

    An unlisted model may still chat without tools; with tools it is refused, because a model
    that ignores or garbles tool calls would make the governed loop misbehave.
    """
    if not request.tools:
        return
    model = resolve_model(request.provider, request.model)
    if model is None:
        raise ProtocolException(
            unsupported_capability(
                f'The model "{request.model}" is not in Stockade\'s model list, so it cannot be '
                "trusted with tools. Choose a listed model in Settings to let the assistant "
                "use tools."
            )
        )
    if not model.tool_calling:
        raise ProtocolException(
            unsupported_capability(
                f'The model "{request.model}" cannot call tools. Choose a model that can, '
                "or ask without tools."
            )
        )
