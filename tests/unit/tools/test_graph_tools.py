"""The graph action tools: prepare, summaries, run outcomes and the approval preview."""

from __future__ import annotations

import asyncio

from stockade.thf.model import ThreatModel
from stockade.tools.graph_tools import apply_call, preview
from stockade.tools.registry import ToolRegistry
from stockade.tools.runtime import ToolContext, ToolFailed, ToolOk
from tests.unit.tools.conftest import call, prepare_ok


def test_successful_add_returns_the_next_document_and_the_new_id(registry: ToolRegistry, shop: ThreatModel) -> None:
    outcome = call(registry, "add_element", {"action": "add_element", "element": {"type": "process", "name": "Worker"}}, shop)
    assert isinstance(outcome, ToolOk) and outcome.document is not None
    assert "worker" in outcome.result
    assert outcome.document.elements[-1].id == "worker"


def test_refused_action_is_a_failed_outcome_without_document(registry: ToolRegistry, shop: ThreatModel) -> None:
    outcome = call(registry, "delete_element", {"action": "delete_element", "id": "api"}, shop)
    assert isinstance(outcome, ToolFailed) and "threat-1" in outcome.result


def test_cascade_input_flows_through_the_tool(registry: ToolRegistry, shop: ThreatModel) -> None:
    outcome = call(registry, "delete_element", {"action": "delete_element", "id": "api", "cascade": True}, shop)
    assert isinstance(outcome, ToolOk) and outcome.document is not None
    assert [e.id for e in outcome.document.elements] == ["browser", "db"]


def test_summaries_are_plain_one_line_texts(registry: ToolRegistry) -> None:
    cases = {
        "add_element": ({"element": {"type": "process", "name": "A\nB<script>"}}, 'Add element "A\\nB<script>" (process)'),
        "update_element": ({"id": "api", "updates": {"name": "x", "tags": []}}, "Update element api: name, tags"),
        "delete_element": ({"id": "api"}, "Delete element api"),
        "add_data_flow": ({"data_flow": {"from": "a", "to": "b"}}, "Add data flow a → b"),
        "delete_data_flow": ({"id": "flow-1", "cascade": True},
                             "Delete data flow flow-1 and everything that references it (cascade)"),
        "add_trust_boundary": ({"trust_boundary": {"name": "DMZ", "contains": ["a", "b"]}},
                               'Add trust boundary "DMZ" around 2 element(s)'),
        "add_threat": ({"threat": {"title": "T", "category": "Spoofing", "severity": "High", "description": "d", "element": "api"}},
                       'Add threat "T" (Spoofing, high) on element api'),
        "delete_threat": ({"id": "threat-1"}, "Delete threat threat-1"),
    }
    for name, (raw, expected) in cases.items():
        summary = prepare_ok(registry, name, {"action": name, **raw}).summary
        assert summary == expected
        assert "\n" not in summary and "\r" not in summary


def test_cascade_summary_names_the_cascade(registry: ToolRegistry) -> None:
    summary = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api", "cascade": True}).summary
    assert summary == "Delete element api and everything that references it (cascade)"


def test_preview_lists_every_entity_a_cascade_would_remove(registry: ToolRegistry, shop: ThreatModel) -> None:
    prepared = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api", "cascade": True})
    lines = preview(shop, prepared.tool_name, prepared.input)
    assert lines[0].startswith("Deleted element api")
    assert lines[1:] == ["Removes element api", "Removes data flow flow-1", "Removes data flow flow-2",
                         "Removes relationship rel-1", "Removes threat threat-1", "Removes threat threat-2"]


def test_preview_of_a_refused_call_says_so(registry: ToolRegistry, shop: ThreatModel) -> None:
    prepared = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api"})
    [line] = preview(shop, prepared.tool_name, prepared.input)
    assert line.startswith("Would be refused:") and "rel-1" in line


def test_preview_matches_what_run_commits(registry: ToolRegistry, shop: ThreatModel) -> None:
    prepared = prepare_ok(registry, "add_threat", {"action": "add_threat", "threat": {
        "title": "T", "category": "Spoofing", "severity": "low", "description": "d"}})
    outcome = apply_call(shop, prepared.tool_name, prepared.input)
    ran = asyncio.run(prepared.run(ToolContext(document=shop)))
    assert isinstance(ran, ToolOk) and ran.document is not None
    assert not isinstance(outcome, str) and getattr(outcome, "document", None) == ran.document


def test_apply_call_revalidates_its_input(shop: ThreatModel) -> None:
    outcome = apply_call(shop, "delete_element", {"action": "delete_element", "id": 1})
    assert getattr(outcome, "message", "") == "id: must be text"
    assert "not a graph action" in getattr(apply_call(shop, "get_entity", {}), "message", "")


def test_cancelled_context_runs_nothing(registry: ToolRegistry, shop: ThreatModel) -> None:
    prepared = prepare_ok(registry, "delete_threat", {"action": "delete_threat", "id": "threat-1"})

    async def go() -> object:
        ctx = ToolContext(document=shop)
        ctx.cancelled.set()
        return await prepared.run(ctx)

    assert isinstance(asyncio.run(go()), ToolFailed)


def test_every_graph_tool_refuses_an_invented_key(registry: ToolRegistry) -> None:
    for tool in registry.list()[4:]:
        failed = tool.prepare({"action": tool.name, "id": "x", "run_shell": "rm -rf /"})
        issues = getattr(failed, "issues", ())
        assert any('"run_shell"' in issue for issue in issues), tool.name


def test_cascade_false_and_absent_share_one_digest(registry: ToolRegistry) -> None:
    # Sticky denials match on the digest, so a same-effect spelling must not slip past one.
    absent = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api"})
    explicit = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api", "cascade": False})
    cascade = prepare_ok(registry, "delete_element", {"action": "delete_element", "id": "api", "cascade": True})
    assert absent.input_digest == explicit.input_digest != cascade.input_digest
    assert absent.input == {"action": "delete_element", "id": "api", "cascade": False}
