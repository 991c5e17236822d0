"""Markdown report for pull requests and wikis: the HTML report's content, all document text escaped.

Document text can hold Markdown or HTML that would render as links, images or markup; every
piece of it is escaped (HTML metacharacters as entities, Markdown punctuation with a backslash,
line starts that would open a heading, list or quote), and control and direction-changing
characters are dropped. Table cells keep to one line.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata

from stockade.report.summary import (
    STATUS_LABELS,
    NameIndex,
    mitigation_status,
    summarize,
)
from stockade.thf.model import Severity, StrideCategory, Threat, ThreatModel

_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+!|~<>&])")
_LINE_START = re.compile(r"^(\s*)([-+=>]|\d+)([.)]?)", re.MULTILINE)
_INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
)


def _clean(text: str) -> str:
    return "".join(
        ch
        for ch in text.replace("\r\n", "\n").replace("\r", "\n")
        if ch not in _INVISIBLE and (ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf"))
    )


def _guard_line_start(match: re.Match[str]) -> str:
    # `- x`, `> x` and `1. x` at a line start would open a list or a quote: escape the marker
    # (for numbers, the `.` or `)` after them; a backslash before a digit is no escape).
    space, marker, after = match.group(1), match.group(2), match.group(3)
    if marker.isdigit():
        return f"{space}{marker}\\{after}" if after else match.group(0)
    return f"{space}\\{marker}{after}"


def md(text: object) -> str:
    """Escape document text for inline Markdown (one line: newlines become spaces)."""
    cleaned = " ".join(_clean(str(text)).split())
    escaped = _PUNCTUATION.sub(r"\\\1", cleaned)
    return _LINE_START.sub(_guard_line_start, escaped)


def md_block(text: str) -> str:
    """Escape multi-line document text as a paragraph; each line keeps its break."""
    lines = [
        _PUNCTUATION.sub(r"\\\1", line.rstrip()) for line in _clean(text).strip("\n").split("\n")
    ]
    escaped = "  \n".join(_LINE_START.sub(_guard_line_start, line) for line in lines)
    return escaped


def _cell(text: object) -> str:
    value = md(text)
    return value if value else "—"


def _table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = right or set()
    out = ["| " + " | ".join(headers) + " |"]
    out.append("|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|")
    out.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(out)


def _target(threat: Threat, names: NameIndex) -> str:
    return _cell(names.target(threat).label)


def render_markdown(model: ThreatModel, *, generated: _dt.date | None = None) -> str:
    """The whole report as GitHub-flavoured Markdown."""
    summary = summarize(model)
    names = NameIndex.of(model)
    meta = model.metadata
    day = (generated or _dt.date.today()).isoformat()
    parts: list[str] = [f"# {md(meta.title) or 'Untitled threat model'}", ""]
    facts = [("Author", meta.author), ("Created", meta.created), ("Modified", meta.modified)]
    if meta.created_by:
        facts.append(("Created by", meta.created_by))
    if meta.modified_by:
        facts.append(("Modified by", meta.modified_by))
    parts.append(" · ".join(f"**{label}:** {_cell(value)}" for label, value in facts))
    if meta.description:
        parts += ["", md_block(meta.description)]

    parts += ["", "## Summary", ""]
    parts.append(
        _table(
            [
                "Elements",
                "Data flows",
                "Trust boundaries",
                "Threats",
                "Mitigated",
                "Unmitigated",
                "Coverage",
            ],
            [
                [
                    str(summary.elements),
                    str(summary.data_flows),
                    str(summary.trust_boundaries),
                    str(summary.threats),
                    str(summary.mitigated),
                    str(summary.open),
                    f"{summary.coverage_percent}%",
                ]
            ],
            right=set(range(7)),
        )
    )
    parts += ["", "### Threats by STRIDE category and severity", ""]
    rows = [
        [
            category.value,
            *(str(summary.matrix[category][s]) for s in Severity),
            str(summary.category_counts[category]),
        ]
        for category in StrideCategory
    ]
    rows.append(
        [
            "**Total**",
            *(f"**{summary.severity_counts[s]}**" for s in Severity),
            f"**{summary.threats}**",
        ]
    )
    parts.append(
        _table(["Category", *(s.value for s in Severity), "Total"], rows, right=set(range(1, 7)))
    )
    parts += ["", "### Mitigation status", ""]
    parts.append(
        _table(
            ["Status", "Threats"],
            [[STATUS_LABELS[s], str(n)] for s, n in summary.status_counts.items()],
            right={1},
        )
    )

    parts += [
        "",
        f"## Unmitigated critical and high threats ({len(summary.open_critical_high)})",
        "",
    ]
    if summary.open_critical_high:
        parts.append(
            _table(
                ["ID", "Title", "Severity", "Category", "Target", "Status"],
                [
                    [
                        md(t.id),
                        _cell(t.title),
                        t.severity.value,
                        t.category.value,
                        _target(t, names),
                        STATUS_LABELS[mitigation_status(t)],
                    ]
                    for t in summary.open_critical_high
                ],
            )
        )
    else:
        parts.append("Every critical and high threat is mitigated, accepted or transferred.")

    parts += ["", f"## Threats ({summary.threats})"]
    if not model.threats:
        parts += ["", "No threats recorded."]
    for category in StrideCategory:
        in_category = [t for t in model.threats if t.category is category]
        if not in_category:
            continue
        parts += ["", f"### {category.value} ({len(in_category)})"]
        for severity in Severity:
            threats = [t for t in in_category if t.severity is severity]
            if not threats:
                continue
            parts += ["", f"#### {severity.value.capitalize()} ({len(threats)})"]
            for threat in threats:
                target = names.target(threat).label
                line = f"- **{md(threat.title)}** ({md(threat.id)})"
                line += f" on {md(target)}" if target else ", no target"
                line += f" — {STATUS_LABELS[mitigation_status(threat)]}"
                parts += ["", line]
                if threat.description:
                    parts.append("  " + md_block(threat.description).replace("\n", "\n  "))
                if threat.mitigation is not None and threat.mitigation.description:
                    parts.append(
                        "  *Mitigation:* "
                        + md_block(threat.mitigation.description).replace("\n", "\n  ")
                    )

    parts += ["", f"## Elements ({len(model.elements)})", ""]
    if model.elements:
        parts.append(
            _table(
                ["ID", "Name", "Type", "Trust zone", "Technologies"],
                [
                    [
                        md(e.id),
                        _cell(e.name),
                        _cell(e.type),
                        _cell(e.trust_zone),
                        _cell(", ".join(e.technologies)),
                    ]
                    for e in model.elements
                ],
            )
        )
    else:
        parts.append("No elements.")
    parts += ["", f"## Data flows ({len(model.data_flows)})", ""]
    if model.data_flows:
        parts.append(
            _table(
                ["#", "Name", "From", "To", "Protocol", "Data", "Authenticated"],
                [
                    [
                        str(f.flow_number) if f.flow_number is not None else "—",
                        _cell(f.name),
                        _cell(names.element(f.from_)),
                        _cell(names.element(f.to)),
                        _cell(f.protocol),
                        _cell(", ".join(f.data)),
                        "Yes" if f.authenticated else "No",
                    ]
                    for f in model.data_flows
                ],
            )
        )
    else:
        parts.append("No data flows.")
    parts += ["", f"## Trust boundaries ({len(model.trust_boundaries)})", ""]
    if model.trust_boundaries:
        parts.append(
            _table(
                ["ID", "Name", "Contains"],
                [
                    [
                        md(b.id),
                        _cell(b.name),
                        _cell(", ".join(names.element(m) for m in b.contains)),
                    ]
                    for b in model.trust_boundaries
                ],
            )
        )
    else:
        parts.append("No trust boundaries.")
    parts += ["", f"*Generated by Stockade on {day}.*", ""]
    return "\n".join(parts)
