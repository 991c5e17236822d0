"""Previews in call order on the successive documents: the ids shown are the ids calls get."""

from __future__ import annotations

from pathlib import Path

from stockade.assistant.review import preview_calls
from stockade.assistant.service import AssistantService
from tests.unit.assistant.conftest import Scripts, run
from tests.unit.assistant.test_service import start
from tests.unit.governance.scripted import ScriptedProvider, add_threat, text_reply, tool_reply


def test_each_add_previews_the_id_it_will_really_get(service: AssistantService,
                                                     scripts: Scripts, model_file: Path) -> None:
    calls = [(f"c{i}", "add_threat", add_threat(f"Threat {i}")) for i in range(3)]
    scripts.add(ScriptedProvider(tool_reply(*calls), text_reply("done")))
    turn = start(service, model_file)
    previews = run(turn.previews())
    assert [p.changes[0] for p in previews] == [
        f"Added threat '{i}' (Threat {n})" for i, n in (("threat-1", 0), ("threat-2", 1),
                                                      ("threat-3", 2))]
    ids = [line for p in previews for line in p.changes if line.strip().startswith("id:")]
    assert [i.split(":", 1)[1].strip() for i in ids] == ["threat-1", "threat-2", "threat-3"]
    run(turn.approve_batch([c[0] for c in calls]))
    assert [t.id for t in turn.document_session.document.threats] == [
        "threat-1", "threat-2", "threat-3"]


def test_a_call_that_would_be_refused_says_so(service: AssistantService, scripts: Scripts,
                                             model_file: Path) -> None:
    bad = {"action": "delete_element", "id": "no-such-element"}
    scripts.add(ScriptedProvider(tool_reply(("c1", "delete_element", bad))))
    turn = start(service, model_file)
    [preview] = run(preview_calls(turn.pending(), turn.document_session.document))
    assert preview.refused and preview.changes[0] == "This call would be refused:"
    assert preview.destructive and '"no-such-element"' in preview.raw_input
