"""Which part of a model a prompt asks about, read from its words (deterministic, no model).

The offline engine narrows its analysis with this: element names and ids, boundary names,
catalog types ("the caches"), kinds ("data stores", "external entities", "flows") and STRIDE
categories ("spoofing", "leaks"). Words that named an element or boundary are not read again
as kinds, so "the User Service" selects that service, not every service. A prompt that asks
only to read or not to change anything (`read_only`) gets no proposals at all.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from stockade.catalog.registry import StrideRole, default_catalog
from stockade.catalog.stride import ModelFacts
from stockade.thf.model import StrideCategory, ThreatModel

_S = StrideCategory

_READ_ONLY = re.compile(
    r"\b(only|just) (read|look|list|describe|explain|summari[sz]e|review)\b"
    r"|\bread[- ]only\b"
    r"|\b(do not|don't|dont|never|please don't) (change|modify|edit|alter|touch|write)\b"
    r"|\bwithout (changing|modifying|editing|altering|touching)\b"
    r"|\b(no|zero) (changes|edits|modifications)\b"
    r"|\b(change|modify|edit) nothing\b"
    r"|\bmake no (changes|edits)\b"
    r"|\bleave [a-z ]{0,30}\b(unchanged|untouched|as it is)\b"
)
"""Asking for no changes. "Do not add duplicates" is deliberately not one: it still wants adds."""

_KIND_PHRASES: dict[str, tuple[tuple[str, ...], ...]] = {
    "stores": (("data", "store"), ("datastore",), ("store",), ("database",), ("db",),
               ("storage",)),
    "flows": (("data", "flow"), ("dataflow",), ("flow",), ("connection",), ("traffic",),
              ("channel",)),
    "actors": (("external", "entity"), ("external", "party"), ("third", "party"), ("actor",),
               ("client",), ("external",), ("partner",)),
    "services": (("process",), ("service",), ("microservice",)),
}
_KIND_WORDS = {"stores": "data stores", "flows": "data flows", "actors": "external parties",
               "services": "processes and services"}
_KIND_ROLES = {"stores": StrideRole.STORE, "actors": StrideRole.ACTOR,
               "services": StrideRole.SERVICE}

_CATEGORY_PHRASES: dict[StrideCategory, tuple[tuple[str, ...], ...]] = {
    _S.SPOOFING: (("spoof*",), ("impersonat*",)),
    _S.TAMPERING: (("tamper*",), ("integrity",)),
    _S.REPUDIATION: (("repudiat*",), ("non", "repudiat*")),
    _S.INFORMATION_DISCLOSURE: (("information", "disclosure"), ("disclos*",), ("leak*",),
                                ("exposure",), ("confidentiality",), ("privacy",),
                                ("eavesdrop*",), ("intercept*",)),
    _S.DENIAL_OF_SERVICE: (("denial", "of", "service"), ("dos",), ("ddos",), ("availability",),
                           ("flood*",), ("exhaustion",)),
    _S.ELEVATION_OF_PRIVILEGE: (("elevation", "of", "privilege"), ("privilege*",),
                                ("escalat*",)),
}

_IGNORED_TYPE_LABELS = frozenset({"generic", "text", "process", "data store", "external entity"})
"""Catalog labels too generic to select by (they are kinds, handled above)."""


@dataclass(frozen=True, slots=True)
class PromptScope:
    """What to analyse. None means "everything" for that part."""

    elements: frozenset[str] | None = None
    flows: frozenset[str] | None = None
    categories: frozenset[StrideCategory] | None = None
    read_only: bool = False
    described: tuple[str, ...] = ()
    """What the prompt matched, in words, for the answer to say what it looked at."""

    @property
    def whole_model(self) -> bool:
        return self.elements is None and self.flows is None

    def describe(self) -> str:
        if not self.described:
            return "the whole model"
        return ", ".join(self.described)


def _stem(token: str) -> str:
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith("sses"):
        return token[:-2]
    if token.endswith("s") and not token.endswith("ss") and len(token) > 3:
        return token[:-1]
    return token


def tokens(text: str) -> list[str]:
    """Lower-case words (letters and digits), compatibility-normalized."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [t for t in re.split(r"[^0-9a-z]+", folded) if t]


def _matches(word: str, token: str) -> bool:
    if word.endswith("*"):
        return token.startswith(word[:-1])
    return _stem(token) == _stem(word)


class _Prompt:
    """The prompt's tokens, with the ones already used by a name masked out."""

    def __init__(self, text: str) -> None:
        self.words = tokens(text)
        self.used = [False] * len(self.words)

    def find(self, phrase: tuple[str, ...], *, consume: bool) -> bool:
        n = len(phrase)
        if n == 0:
            return False
        found = False
        for i in range(len(self.words) - n + 1):
            if any(self.used[i + j] for j in range(n)):
                continue
            if all(_matches(phrase[j], self.words[i + j]) for j in range(n)):
                found = True
                if consume:
                    for j in range(n):
                        self.used[i + j] = True
                else:
                    return True
        return found


def _phrases_of(*texts: str) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for text in texts:
        words = tuple(tokens(text))
        if words and words not in out:
            out.append(words)
    # Longest first, so "Order Worker" is consumed before "Order" could be.
    return sorted(out, key=len, reverse=True)


def scope_of(prompt: str, model: ThreatModel) -> PromptScope:
    """The part of `model` that `prompt` asks about."""
    normalized = " ".join(unicodedata.normalize("NFKC", prompt).casefold().replace("’", "'").split())
    read_only = _READ_ONLY.search(normalized) is not None
    text = _Prompt(prompt)
    facts = ModelFacts(model)
    described: list[str] = []
    selected: list[str] = []

    # Names and ids first (longest phrases first across all of them), then boundaries.
    named: list[tuple[tuple[str, ...], str]] = []
    for element in model.elements:
        for phrase in _phrases_of(element.name, element.id):
            named.append((phrase, element.id))
    named.sort(key=lambda item: len(item[0]), reverse=True)
    for phrase, element_id in named:
        if element_id not in selected and text.find(phrase, consume=True):
            selected.append(element_id)
            described.append(f"element {facts.name_of(element_id)} ({element_id})")
    boundary_flows: set[str] = set()
    for boundary in model.trust_boundaries:
        for phrase in _phrases_of(boundary.name, boundary.id):
            if text.find(phrase, consume=True):
                members = [m for m in boundary.contains if m in facts.elements]
                selected.extend(m for m in members if m not in selected)
                boundary_flows.update(f.id for f in model.data_flows if
                                      (f.from_ in boundary.contains) != (f.to in boundary.contains))
                described.append(f"boundary {boundary.name} ({len(members)} elements)")
                break

    # Catalog types ("the caches", "SQL databases").
    catalog = default_catalog()
    types_present = {e.type for e in model.elements}
    for type_id in sorted(types_present):
        entry = catalog.get(type_id)
        labels = [type_id.replace("_", " ")]
        if entry is not None and entry.label.casefold() not in _IGNORED_TYPE_LABELS:
            labels.append(entry.label)
        for phrase in _phrases_of(*labels):
            if phrase in (("process",), ("data", "store"), ("external", "entity")):
                continue
            if text.find(phrase, consume=True):
                members = [e.id for e in model.elements if e.type == type_id]
                selected.extend(m for m in members if m not in selected)
                described.append(f"{entry.label if entry else type_id} elements")
                break

    # Categories before kinds: "denial of service" is not a request for the services.
    found_categories = [c for c, phrases in _CATEGORY_PHRASES.items()
                        if any([text.find(p, consume=True) for p in phrases])]
    categories = frozenset(found_categories)

    # Kinds.
    flows_wanted = False
    for kind, phrases in _KIND_PHRASES.items():
        if not any(text.find(p, consume=True) for p in phrases):
            continue
        described.append(_KIND_WORDS[kind])
        if kind == "flows":
            flows_wanted = True
            continue
        role = _KIND_ROLES[kind]
        selected.extend(e for e, f in facts.elements.items() if f.role is role and e not in selected)


    described.extend(f"{c.value} threats" for c in _S if c in categories)
    chosen = frozenset(selected)
    elements: frozenset[str] | None
    flows: frozenset[str] | None
    if not chosen and not flows_wanted:
        elements = flows = None
    elif flows_wanted and not chosen:
        elements, flows = frozenset(), None
    elif flows_wanted:
        elements = chosen
        flows = frozenset(f.id for f in model.data_flows
                          if f.from_ in chosen or f.to in chosen) | frozenset(boundary_flows)
    else:
        elements, flows = chosen, frozenset()
    return PromptScope(elements=elements, flows=flows, categories=categories or None,
                       read_only=read_only, described=tuple(described))
