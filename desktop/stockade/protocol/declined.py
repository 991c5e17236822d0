"""Proposals the user declined in earlier turns, and the lines that tell the assistant about them.

The application layer remembers each declined proposal per document (by tool and input
digest, and for `add_threat` by target, category and normalized title). Every turn's system
prompt lists them inside the untrusted-data block, one line each, so a model can avoid them;
the offline engine reads the same lines. Values are escaped by the writer (the prompt
builder), so a title can never start a line of its own and `add_threat` lines can be read
back exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

DECLINED_HEADING = ("Declined earlier (the user declined these proposals in earlier turns; do "
                    "not propose them again, in any wording):")
ADD_THREAT = "add_threat"
_ADD_THREAT_LINE = re.compile(r"^- add_threat on (element|data flow) ((?:\\.|[^\s\\])+) "
                              r"\(([A-Za-z ]+)\): ")
_UNESCAPE = re.compile(r"\\(.)")


def title_key(title: str) -> str:
    """A title compared loosely: case, accents-as-typed, punctuation and spacing ignored."""
    folded = unicodedata.normalize("NFKC", title).casefold()
    return " ".join(w for w in re.split(r"[^\w]+", folded) if w)


@dataclass(frozen=True, slots=True)
class DeclinedProposal:
    """One proposal a user declined on a document."""

    tool: str
    input_digest: str
    summary: str
    target_kind: str | None = None
    """"element" or "flow" for `add_threat`; None otherwise."""
    target: str | None = None
    category: str | None = None
    title: str | None = None
    reason: str | None = None

    @property
    def threat_key(self) -> tuple[str, str, str] | None:
        """(target, category, normalized title) for a declined `add_threat`."""
        if self.tool != ADD_THREAT or not self.target or not self.category or not self.title:
            return None
        return self.target, self.category, title_key(self.title)


def threat_key_of(tool: str, raw_input: object) -> tuple[str, str, str] | None:
    """The (target, category, normalized title) of an `add_threat` input, if it has one."""
    if tool != ADD_THREAT or not isinstance(raw_input, dict):
        return None
    threat = raw_input.get("threat")
    if not isinstance(threat, dict):
        return None
    target = threat.get("element") or threat.get("flow")
    category, title = threat.get("category"), threat.get("title")
    if not all(isinstance(v, str) and v for v in (target, category, title)):
        return None
    return str(target), str(category), title_key(str(title))


def declined_line(item: DeclinedProposal, value: Callable[[str], str]) -> str:
    """One line of the declined-earlier list; `value` escapes a value for the fence."""
    if item.tool == ADD_THREAT and item.target and item.category:
        where = "element" if item.target_kind != "flow" else "data flow"
        line = (f"- add_threat on {where} {value(item.target)} ({value(item.category)}): "
                f"{value(item.title or item.summary)}")
    else:
        line = f"- {value(item.tool)}: {value(item.summary)}"
    if item.reason:
        line += f"; the user's reason: {value(item.reason)}"
    return line


def declined_threat_targets(system_prompt: str) -> set[tuple[str, str]]:
    """(target id, category) of every declined `add_threat` the system prompt lists."""
    found: set[tuple[str, str]] = set()
    listing = False
    for line in system_prompt.splitlines():
        if line == DECLINED_HEADING:
            listing = True
            continue
        if not listing:
            continue
        if not line.startswith("- "):
            listing = False
            continue
        match = _ADD_THREAT_LINE.match(line)
        if match:
            found.add((_UNESCAPE.sub(r"\1", match.group(2)), match.group(3)))
    return found
