"""The model list and request preflight (spec 5.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.paths import resources_dir
from stockade.protocol.errors import ErrorCode, ProtocolException
from stockade.protocol.messages import Message, TextBlock
from stockade.protocol.models import (
    ModelListError,
    default_model,
    find_model,
    load_models,
    models_for,
    parse_models,
    preflight,
    providers,
    resolve_model,
)
from stockade.protocol.request import ChatRequest, ToolSpec

TOOL = ToolSpec(name="get_entity", description="d", input_schema={"type": "object"})


def request(provider: str, model: str, *, tools: bool) -> ChatRequest:
    return ChatRequest(
        provider=provider,
        model=model,
        system="s",
        messages=(Message(role="user", content=(TextBlock(text="hi"),)),),
        tools=(TOOL,) if tools else (),
    )


def test_the_shipped_list_has_the_curated_models_with_their_context_windows() -> None:
    windows = {(m.provider, m.id): m.context_window for m in load_models()}
    assert windows[("anthropic", "claude-opus-4-8")] == 1_000_000
    assert windows[("anthropic", "claude-sonnet-5")] == 1_000_000
    assert windows[("anthropic", "claude-haiku-4-5-20251001")] == 200_000
    for model_id in ("gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"):
        assert windows[("openai", model_id)] == 1_050_000
    assert windows[("local", "local")] == 32_768
    assert ("offline", "stride-rules") in windows


def test_every_curated_model_streams_and_calls_tools() -> None:
    for model in load_models():
        assert model.streaming and model.tool_calling
        assert model.max_output_tokens < model.context_window


def test_defaults_per_provider() -> None:
    assert default_model("anthropic").id == "claude-sonnet-5"
    assert default_model("openai").id == "gpt-5.6-sol"
    assert default_model("local").id == "local"
    assert default_model("offline").id == "stride-rules"


def test_default_model_for_an_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="anthropic"):
        default_model("gemini")


def test_find_model_needs_provider_and_id_to_match() -> None:
    found = find_model("anthropic", "claude-sonnet-5")
    assert found is not None and found.label == "Claude Sonnet 5"
    assert find_model("openai", "claude-sonnet-5") is None
    assert find_model("anthropic", "claude-sonnet") is None


def test_any_local_model_name_resolves_to_the_configurable_local_entry() -> None:
    resolved = resolve_model("local", "llama3.1:8b")
    assert resolved is not None and resolved.id == "local" and resolved.configurable
    assert resolve_model("anthropic", "claude-unknown") is None


def test_listing_helpers_follow_file_order() -> None:
    assert providers()[:2] == ("anthropic", "openai")
    assert [m.id for m in models_for("openai")] == ["gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"]


def test_known_model_with_tools_passes_preflight() -> None:
    preflight(request("anthropic", "claude-opus-4-8", tools=True))
    preflight(request("local", "qwen2.5-coder", tools=True))


def test_unknown_model_without_tools_may_still_chat() -> None:
    preflight(request("openai", "gpt-9-experimental", tools=False))


def test_unknown_model_with_tools_is_refused() -> None:
    with pytest.raises(ProtocolException) as caught:
        preflight(request("openai", "gpt-9-experimental", tools=True))
    assert caught.value.error.code is ErrorCode.UNSUPPORTED_CAPABILITY
    assert '"gpt-9-experimental"' in str(caught.value)


def test_model_listed_under_another_provider_is_unknown() -> None:
    with pytest.raises(ProtocolException):
        preflight(request("openai", "claude-sonnet-5", tools=True))


def test_known_model_without_tool_calling_is_refused_when_tools_are_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.loads((resources_dir() / "models.json").read_text(encoding="utf-8"))
    for entry in data["models"]:
        if entry["id"] == "gpt-5.6-luna":
            entry["capabilities"]["tool_calling"] = False
    (tmp_path / "models.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("STOCKADE_RESOURCES", str(tmp_path))
    with pytest.raises(ProtocolException) as caught:
        preflight(request("openai", "gpt-5.6-luna", tools=True))
    assert caught.value.error.code is ErrorCode.UNSUPPORTED_CAPABILITY
    assert "cannot call tools" in caught.value.error.message
    preflight(request("openai", "gpt-5.6-luna", tools=False))


def _entry(**overrides: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "provider": "p",
        "id": "m",
        "label": "M",
        "default": True,
        "context_window": 100,
        "max_output_tokens": 10,
        "capabilities": {"tool_calling": True, "parallel_tool_calls": True, "streaming": True},
    }
    entry.update(overrides)
    return entry


@pytest.mark.parametrize(
    ("models", "problem"),
    [
        ([_entry(), _entry()], "twice"),
        ([_entry(default=False)], "exactly one default"),
        ([_entry(), _entry(id="n")], "exactly one default"),
        ([_entry(context_window=0)], "context_window"),
        ([_entry(surprise=1)], "surprise"),
    ],
)
def test_a_malformed_model_list_is_refused_with_a_specific_reason(
    models: list[dict[str, object]], problem: str
) -> None:
    with pytest.raises(ModelListError, match=problem):
        parse_models(json.dumps({"version": 1, "models": models}))


def test_non_json_and_unknown_versions_are_refused() -> None:
    with pytest.raises(ModelListError, match="not valid JSON"):
        parse_models("{")
    with pytest.raises(ModelListError, match="version 2"):
        parse_models(json.dumps({"version": 2, "models": [_entry()]}))


def test_a_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelListError, match="could not be read"):
        load_models(tmp_path / "absent.json")
