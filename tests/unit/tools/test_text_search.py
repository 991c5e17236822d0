"""The `text` filter of `search_entities` against its plain per-entity definition.

The section index answers text searches from one joined string and skips redacting haystacks
that nothing could redact; these properties check both against the definition written out
here: an entity matches when the lower-cased query is in the lower-cased haystack (its text
fields, one per line) both as written and as the model is shown it (secrets redacted).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stockade.protocol import secret_scan
from stockade.protocol.secret_scan import SecretKind, may_be_redacted, redacted
from stockade.thf.model import ThreatModel
from stockade.tools import document_index
from stockade.tools.document_index import clear_cache, section_index
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolOk
from tests.unit.tools.conftest import call, make_doc

REGISTRY = default_registry()

# Characters that stress the joined search text: its separator, line breaks, letters whose
# lower case is longer (İ) or depends on what follows (Σ), case-folding specials that lower()
# leaves alone (ß, ẞ, ﬁ), the Kelvin sign (lower-cases to ASCII k), and the pieces secrets
# are made of.
_ALPHABET = "aAbBkKzZ09 -_/+=:.\n\x00\t\u0130\u0131\u03a3\u03c3\u03c2\u00df\u1e9e\ufb01\u212a\u00e9\u00c9"
_PIECES = (
    "sk-", "AKIA", "ASIA", "ghp_", "github_pat_", "://", "Bearer ", "PRIVATE KEY", "-----BEGIN ",
    "sk-proj-abcdefghijklmnopqrstuvwx", "AKIAABCDEFGHIJKLMNOP", "https://user:hunter2@host",
    "Bearer abcdefghijklmnop", "ghp_" + "a1B2" * 9, "Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0LmNb",
    "component", "COMPONENT 1", "\u0130stanbul", "\u039f\u0394\u039f\u03a3", "stra\u00dfe",
)
texts = st.lists(st.sampled_from(_PIECES) | st.text(_ALPHABET, max_size=6), max_size=5).map("".join)
optional_texts = st.none() | texts
text_lists = st.lists(texts, max_size=3)


@st.composite
def documents(draw: Any) -> ThreatModel:
    layers = [{"id": f"L{i}", "name": draw(texts) or "n", "description": draw(optional_texts)}
              for i in range(draw(st.integers(1, 3)))]
    elements = []
    for i in range(draw(st.integers(0, 8))):
        element: dict[str, Any] = {
            "id": f"e{i}", "type": draw(texts) or "process", "name": draw(texts) or "n",
            "trust_zone": draw(texts), "description": draw(texts), "technologies": draw(text_lists),
            "tags": draw(text_lists), "layer": draw(st.sampled_from([None, "L0", "L1"])),
        }
        if draw(st.booleans()):
            element["subtype"] = draw(texts)
        if draw(st.booleans()):
            element["stores"] = draw(text_lists)
        if element["layer"] is None or element["layer"] not in {layer["id"] for layer in layers}:
            del element["layer"]
        elements.append(element)
    ids = [element["id"] for element in elements]
    flows = []
    if ids:
        for i in range(draw(st.integers(0, 6))):
            flows.append({"id": f"f{i}", "from": draw(st.sampled_from(ids)), "to": draw(st.sampled_from(ids)),
                          "name": draw(texts), "protocol": draw(texts), "data": draw(text_lists)})
    threats = []
    for i in range(draw(st.integers(0, 6))):
        threat: dict[str, Any] = {"id": f"t{i}", "title": draw(texts) or "t", "category": "Tampering",
                                  "severity": draw(st.sampled_from(["high", "low"])), "description": draw(texts)}
        if draw(st.booleans()):
            threat["mitigation"] = {"status": "mitigated", "description": draw(texts)}
        threats.append(threat)
    return make_doc(layers=layers, elements=elements, data_flows=flows, threats=threats)


def _parts(kind: str, entity: Any) -> list[str]:
    """The fields the `text` filter reads, as the tool's description promises."""
    if kind == "elements":
        scalars = [entity.id, entity.name, entity.type, entity.subtype, entity.trust_zone, entity.description]
        lists = [*entity.technologies, *entity.tags, *(entity.stores or [])]
    elif kind == "data_flows":
        scalars = [entity.id, entity.name, entity.protocol, entity.from_, entity.to]
        lists = list(entity.data)
    elif kind == "threats":
        scalars = [entity.id, entity.title, entity.category.value, entity.severity.value, entity.description]
        lists = [] if entity.mitigation is None else [entity.mitigation.description]
    else:
        scalars, lists = [entity.id, entity.name, entity.description], []
    return [part for part in scalars if part is not None] + lists


def _expected(document: ThreatModel, kind: str, query: str, among: set[int] | None = None) -> list[str]:
    needle = query.lower()
    found = []
    for i, entity in enumerate(getattr(document, kind)):
        text = "\n".join(_parts(kind, entity))
        if (among is None or i in among) and needle in text.lower() and needle in redacted(text).lower():
            found.append(entity.id)
    return found


def _searched(document: ThreatModel, raw: dict[str, Any]) -> tuple[int, list[str]]:
    outcome = call(REGISTRY, "search_entities", {**raw, "limit": 50}, document)
    assert isinstance(outcome, ToolOk), outcome
    payload = json.loads(outcome.result.split("\n")[1])
    return payload["page"]["total"], [result["id"] for result in payload["results"]]


def _queries(document: ThreatModel, draw: Any) -> list[str]:
    # Substrings of the document's own text (so that most queries find something), plus free
    # text from the same alphabet; tool inputs are 1 to 200 characters.
    pool = [part for kind in ("elements", "data_flows", "threats", "layers")
            for entity in getattr(document, kind) for part in _parts(kind, entity) if part]
    queries = [draw(st.text(_ALPHABET, min_size=1, max_size=4)), draw(st.sampled_from(_PIECES))]
    for _ in range(3):
        if pool:
            source = draw(st.sampled_from(pool))
            start = draw(st.integers(0, len(source) - 1))
            end = draw(st.integers(start + 1, len(source)))
            queries.append(source[start:end][:200])
    return queries


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents(), data=st.data())
@example(
    document=make_doc(elements=[{"id": "e0", "type": "p", "name": "\u03a3\u03a3", "trust_zone": "\u0130\u0130x",
                                 "description": "a\x00b", "stores": ["ΑΣ"]},
                                {"id": "e1", "type": "p", "name": "n"}]),
    data=None,
)
def test_text_search_matches_the_per_entity_definition(document: ThreatModel, data: Any) -> None:
    clear_cache()
    queries = ["\u03c2", "\u03c3\u03c3", "i\u0307x", "a\x00b", "\x00e1", "\u03b1\u03c2\x00", "\n", "x\ny"] if data is None else _queries(document, data.draw)
    for kind in ("elements", "data_flows", "threats", "layers"):
        for query in queries:
            expected = _expected(document, kind, query)
            # The first search of a section scans its haystacks, later ones the joined text.
            for _ in range(2):
                assert _searched(document, {"kind": kind, "text": query}) == (
                    len(expected), expected[:50]), (kind, query)
    for query in queries:
        for layer in ("L0", "L1"):
            among = set(section_index(document, "elements").referrers(layer))
            expected = _expected(document, "elements", query, among)
            assert _searched(document, {"kind": "elements", "text": query, "references": layer}) == (
                len(expected), expected[:50]), (layer, query)


secretish = st.lists(st.sampled_from(_PIECES) | st.text(_ALPHABET + "PRIVATEKY", max_size=8), max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=secretish)
@example(text="-----BEGIN RSA PRIVATE KEY-----\nabc")
@example(text="see https://admin:s3cret@example.com")
@example(text="BEARER abcdefghijklmnopqr")
@example(text="key sk-ant-api03-abcdefghijklmnopqrstuv")
@example(text="AKIAIOSFODNN7EXAMPLE")
@example(text="ghs_" + "A1b2C3d4" * 5)
@example(text="github_pat_" + "A1b2C3d4_" * 5)
@example(text="Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0LmNb")
def test_text_nothing_could_redact_is_shown_as_it_is(text: str) -> None:
    assert may_be_redacted(text.lower()) or redacted(text) == text
    if redacted(text) != text:
        assert may_be_redacted(text.lower())


def test_every_secret_kind_is_known_to_the_redaction_hints() -> None:
    # `may_be_redacted` lists what each kind's pattern needs; a new kind needs a new hint.
    assert {kind.value for kind in SecretKind} == {
        "api_key", "aws_access_key", "github_token", "private_key", "url_password", "bearer_token",
        "high_entropy", "held_key",
    }


def test_a_guessed_secret_is_not_confirmed_on_the_first_or_a_later_search() -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwx"
    document = make_doc(elements=[
        {"id": "e0", "type": "process", "name": "Vault", "description": f"key {secret}"},
        {"id": "e1", "type": "process", "name": "Other", "description": "no key here"},
    ])
    clear_cache()
    for _ in range(3):
        assert _searched(document, {"kind": "elements", "text": secret}) == (0, [])
        assert _searched(document, {"kind": "elements", "text": "key"}) == (2, ["e0", "e1"])
        assert _searched(document, {"kind": "elements", "text": "redacted-secret"}) == (0, [])


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled scans", "python scans"])
def test_searches_matching_most_entities_of_a_large_section_match_the_definition(
        compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Over 64 matches the search tests the rest entity by entity, and many matches decide the
    # redaction question for the whole section at once: both paths, with and without a secret
    # somewhere in the section; with the compiled scans (protocol/_hints.c) and with what a
    # build without them uses.
    if not compiled:
        monkeypatch.setattr(document_index, "_haystacks_containing", None)
        monkeypatch.setattr(secret_scan, "_compiled_hint_starts", None)
    def element(i: int, description: str) -> dict[str, Any]:
        return {"id": f"e{i}", "type": "process", "name": f"Component {i}", "description": description,
                "technologies": ["Go"] if i % 3 else ["Go", "PostgreSQL"]}

    plain = make_doc(elements=[element(i, f"Handles part {i} of the pipeline.\nΣ") for i in range(400)])
    secret = make_doc(elements=[
        element(i, "uses https://admin:hunter2@db.internal" if i % 50 == 7 else
                "token ghp_" + "a1B2c3D4" * 5 if i % 50 == 9 else f"part {i}") for i in range(400)
    ])
    queries = ["component", "component 1", "o", "go", "\u03c2", "part 1", "hunter2", "admin", "ghp_",
               "a1b2c3d4", "\ngo", "\x00", "postgresql"]
    for document in (plain, secret):
        clear_cache()
        for query in queries:
            expected = _expected(document, "elements", query)
            for _ in range(2):
                assert _searched(document, {"kind": "elements", "text": query}) == (
                    len(expected), expected[:50]), query
