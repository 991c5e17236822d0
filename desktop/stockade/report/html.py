"""Standalone HTML report: one file, inline CSS and SVG, no scripts, all document text escaped."""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Iterable

from stockade.report.diagram_svg import render_diagram_svg, type_label
from stockade.report.summary import (
    STATUS_LABELS,
    NameIndex,
    ReportSummary,
    mitigation_status,
    summarize,
)
from stockade.thf.model import (
    Severity,
    StrideCategory,
    Threat,
    ThreatModel,
)

SEVERITY_COLORS: dict[Severity, str] = {
    Severity.CRITICAL: "#b91c1c",
    Severity.HIGH: "#c2410c",
    Severity.MEDIUM: "#a16207",
    Severity.LOW: "#1d4ed8",
    Severity.INFO: "#4b5563",
}
CATEGORY_COLORS: dict[StrideCategory, str] = {
    StrideCategory.SPOOFING: "#6d28d9",
    StrideCategory.TAMPERING: "#b91c1c",
    StrideCategory.REPUDIATION: "#a16207",
    StrideCategory.INFORMATION_DISCLOSURE: "#1d4ed8",
    StrideCategory.DENIAL_OF_SERVICE: "#c2410c",
    StrideCategory.ELEVATION_OF_PRIVILEGE: "#047857",
}
STATUS_COLORS: dict[str, str] = {
    "none": "#6b7280",
    "not_started": "#b91c1c",
    "in_progress": "#a16207",
    "mitigated": "#047857",
    "accepted": "#4338ca",
    "transferred": "#0e7490",
}


_CSS = """
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --soft:#f8fafc; --accent:#0f766e; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--ink); background:#fff; }
header.cover { padding:32px 40px 24px; background:var(--soft); border-bottom:1px solid var(--line); }
header.cover .kicker { text-transform:uppercase; letter-spacing:.08em; font-size:12px;
  color:var(--accent); font-weight:600; }
header.cover h1 { margin:4px 0 8px; font-size:28px; }
dl.meta { display:flex; flex-wrap:wrap; gap:4px 24px; margin:0; color:var(--muted); }
dl.meta div { display:flex; gap:6px; } dl.meta dt { font-weight:600; } dl.meta dd { margin:0; }
.prose { white-space:pre-wrap; overflow-wrap:anywhere; }
nav { position:sticky; top:0; background:#fff; border-bottom:1px solid var(--line);
  padding:8px 40px; display:flex; gap:16px; flex-wrap:wrap; z-index:1; }
nav a { color:var(--accent); text-decoration:none; font-weight:500; }
main { padding:8px 40px 40px; max-width:1280px; }
section { margin-top:32px; }
h2 { font-size:20px; border-bottom:2px solid var(--line); padding-bottom:4px; }
h3 { font-size:16px; margin:24px 0 8px; } h4 { font-size:14px; margin:12px 0 6px; }
.cards { display:flex; flex-wrap:wrap; gap:12px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 16px; min-width:120px; }
.card .n { font-size:24px; font-weight:700; } .card .l { color:var(--muted); font-size:12px; }
table { border-collapse:collapse; width:100%; margin:8px 0; }
th, td { text-align:left; vertical-align:top; padding:6px 8px; border-bottom:1px solid var(--line);
  overflow-wrap:anywhere; }
th { background:var(--soft); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
code { font:12px/1.4 ui-monospace,Menlo,Consolas,monospace; background:var(--soft);
  padding:1px 4px; border-radius:4px; }
.badge { display:inline-block; padding:1px 8px; border-radius:999px; color:#fff; font-size:12px;
  font-weight:600; white-space:nowrap; }
.muted { color:var(--muted); }
article.threat { border:1px solid var(--line); border-left-width:4px; border-radius:6px;
  padding:8px 12px; margin:8px 0; }
article.threat .head { display:flex; flex-wrap:wrap; gap:8px; align-items:baseline; }
article.threat .title { font-weight:600; }
article.threat .mit { margin-top:4px; }
.diagram { border:1px solid var(--line); border-radius:8px; background:#fcfcfd; overflow:auto; }
.diagram svg { display:block; max-width:100%; height:auto; }
footer { padding:16px 40px; color:var(--muted); border-top:1px solid var(--line); font-size:12px; }
@media print { nav { display:none; } main { max-width:none; } }
"""


def _e(text: object) -> str:
    """Escape any text for HTML element content and attribute values."""
    return html.escape(str(text), quote=True)


def _or_dash(text: str) -> str:
    return _e(text) if text else '<span class="muted">—</span>'


def _badge(label: str, color: str) -> str:
    return f'<span class="badge" style="background:{color}">{_e(label)}</span>'


def _severity_badge(severity: Severity) -> str:
    return _badge(severity.value, SEVERITY_COLORS[severity])


def _category_badge(category: StrideCategory) -> str:
    return _badge(category.value, CATEGORY_COLORS[category])


def _status_badge(threat: Threat) -> str:
    status = mitigation_status(threat)
    return _badge(STATUS_LABELS[status], STATUS_COLORS[status])


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], numeric: set[int]) -> str:
    """A table; header texts are ours, every cell must already be escaped HTML."""
    head = "".join(
        f'<th class="num">{h}</th>' if i in numeric else f"<th>{h}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cover(model: ThreatModel) -> str:
    meta = model.metadata
    pairs = [
        ("Author", meta.author),
        ("Created", meta.created),
        ("Modified", meta.modified),
    ]
    if meta.created_by:
        pairs.append(("Created by", meta.created_by))
    if meta.modified_by:
        pairs.append(("Modified by", meta.modified_by))
    pairs.append(("Format", model.version))
    items = "".join(f"<div><dt>{k}</dt><dd>{_or_dash(v)}</dd></div>" for k, v in pairs)
    description = f'<p class="prose">{_e(meta.description)}</p>' if meta.description else ""
    return (
        '<header class="cover"><div class="kicker">Threat model report</div>'
        f"<h1>{_e(meta.title) or 'Untitled threat model'}</h1>"
        f'<dl class="meta">{items}</dl>{description}</header>'
    )


def _summary(summary: ReportSummary) -> str:
    cards = [
        ("Elements", summary.elements),
        ("Data flows", summary.data_flows),
        ("Trust boundaries", summary.trust_boundaries),
        ("Threats", summary.threats),
        ("Mitigated", summary.mitigated),
        ("Unmitigated", summary.open),
    ]
    card_html = "".join(
        f'<div class="card"><div class="n">{n}</div><div class="l">{label}</div></div>'
        for label, n in cards
    )
    card_html += (
        f'<div class="card"><div class="n">{summary.coverage_percent}%</div>'
        '<div class="l">Mitigation coverage</div></div>'
    )
    matrix_rows = [
        [
            _category_badge(category),
            *(str(summary.matrix[category][s]) for s in Severity),
            str(summary.category_counts[category]),
        ]
        for category in StrideCategory
    ]
    matrix_rows.append(
        [
            "<strong>Total</strong>",
            *(f"<strong>{summary.severity_counts[s]}</strong>" for s in Severity),
            f"<strong>{summary.threats}</strong>",
        ]
    )
    matrix = _table(
        ["STRIDE category", *(_severity_badge(s) for s in Severity), "Total"],
        matrix_rows,
        numeric=set(range(1, len(Severity) + 2)),
    )
    statuses = _table(
        ["Mitigation status", "Threats"],
        [
            [_badge(STATUS_LABELS[status], STATUS_COLORS[status]), str(count)]
            for status, count in summary.status_counts.items()
        ],
        numeric={1},
    )
    return (
        '<section id="summary"><h2>Summary</h2>'
        f'<div class="cards">{card_html}</div>'
        f"<h3>Threats by STRIDE category and severity</h3>{matrix}"
        f"<h3>Mitigation status</h3>{statuses}</section>"
    )


def _attention(summary: ReportSummary, names: NameIndex) -> str:
    heading = (
        '<section id="attention"><h2>Unmitigated critical and high threats '
        f"({len(summary.open_critical_high)})</h2>"
    )
    if not summary.open_critical_high:
        return heading + (
            '<p class="muted">Every critical and high threat is mitigated, accepted or '
            "transferred.</p></section>"
        )
    rows = [
        [
            f"<code>{_e(t.id)}</code>",
            _e(t.title),
            _severity_badge(t.severity),
            _category_badge(t.category),
            _or_dash(names.target(t).label),
            _status_badge(t),
        ]
        for t in summary.open_critical_high
    ]
    return (
        heading
        + '<p class="muted">Threats with no mitigation, or one not started or in progress.</p>'
        + _table(["ID", "Title", "Severity", "Category", "Target", "Status"], rows, set())
        + "</section>"
    )


def _diagram(model: ThreatModel) -> str:
    svg = render_diagram_svg(model)
    if svg is None:
        body = '<p class="muted">The model has no elements, so there is no diagram.</p>'
    else:
        body = f'<div class="diagram">{svg}</div>'
    return f'<section id="diagram"><h2>Data-flow diagram</h2>{body}</section>'


def _threat_article(threat: Threat, names: NameIndex) -> str:
    target = names.target(threat)
    target_html = (
        f'<span class="muted">on</span> {_e(target.label)}'
        if target.names
        else '<span class="muted">no target</span>'
    )
    mitigation = ""
    if threat.mitigation is not None and threat.mitigation.description:
        mitigation = (
            '<div class="mit"><strong>Mitigation:</strong> '
            f'<span class="prose">{_e(threat.mitigation.description)}</span></div>'
        )
    description = f'<div class="prose">{_e(threat.description)}</div>' if threat.description else ""
    return (
        f'<article class="threat" style="border-left-color:{SEVERITY_COLORS[threat.severity]}">'
        f'<div class="head"><code>{_e(threat.id)}</code>'
        f'<span class="title">{_e(threat.title)}</span>{target_html}'
        f"{_severity_badge(threat.severity)}{_status_badge(threat)}</div>"
        f"{description}{mitigation}</article>"
    )


def _threats(model: ThreatModel, summary: ReportSummary, names: NameIndex) -> str:
    parts = [f'<section id="threats"><h2>Threats ({summary.threats})</h2>']
    if not model.threats:
        parts.append('<p class="muted">No threats recorded.</p></section>')
        return "".join(parts)
    grouped: dict[StrideCategory, dict[Severity, list[Threat]]] = {
        c: {s: [] for s in Severity} for c in StrideCategory
    }
    for threat in model.threats:
        grouped[threat.category][threat.severity].append(threat)
    for category in StrideCategory:
        count = summary.category_counts[category]
        parts.append(f"<h3>{_category_badge(category)} {count}</h3>")
        if count == 0:
            parts.append('<p class="muted">None recorded in this category.</p>')
            continue
        for severity in Severity:
            threats = grouped[category][severity]
            if not threats:
                continue
            parts.append(f"<h4>{_severity_badge(severity)} {len(threats)}</h4>")
            parts.extend(_threat_article(t, names) for t in threats)
    parts.append("</section>")
    return "".join(parts)


def _elements(model: ThreatModel) -> str:
    heading = f'<section id="elements"><h2>Elements ({len(model.elements)})</h2>'
    if not model.elements:
        return heading + '<p class="muted">No elements.</p></section>'
    boundary_names: dict[str, list[str]] = {}
    for boundary in model.trust_boundaries:
        for member in boundary.contains:
            boundary_names.setdefault(member, []).append(boundary.name)
    threat_count: dict[str, int] = {}
    for threat in model.threats:
        if threat.element is not None:
            threat_count[threat.element] = threat_count.get(threat.element, 0) + 1
    rows = [
        [
            f"<code>{_e(e.id)}</code>",
            _or_dash(e.name),
            _e(type_label(e.type) + (f" · {type_label(e.subtype)}" if e.subtype else "")),
            _or_dash(e.trust_zone),
            _or_dash(", ".join(boundary_names.get(e.id, []))),
            _or_dash(", ".join(e.technologies)),
            str(threat_count.get(e.id, 0)),
            f'<span class="prose">{_or_dash(e.description)}</span>',
        ]
        for e in model.elements
    ]
    headers = ["ID", "Name", "Type", "Trust zone", "Boundaries", "Technologies", "Threats"]
    return heading + _table([*headers, "Description"], rows, numeric={6}) + "</section>"


def _flows(model: ThreatModel, names: NameIndex) -> str:
    heading = f'<section id="flows"><h2>Data flows ({len(model.data_flows)})</h2>'
    if not model.data_flows:
        return heading + '<p class="muted">No data flows.</p></section>'
    rows = [
        [
            str(f.flow_number) if f.flow_number is not None else '<span class="muted">—</span>',
            f"<code>{_e(f.id)}</code>",
            _or_dash(f.name),
            _e(names.element(f.from_)),
            _e(names.element(f.to)),
            _or_dash(f.protocol),
            _or_dash(", ".join(f.data)),
            "Yes" if f.authenticated else "No",
        ]
        for f in model.data_flows
    ]
    headers = ["#", "ID", "Name", "From", "To", "Protocol", "Data", "Authenticated"]
    return heading + _table(headers, rows, numeric={0}) + "</section>"


def _boundaries(model: ThreatModel, names: NameIndex) -> str:
    heading = f'<section id="boundaries"><h2>Trust boundaries ({len(model.trust_boundaries)})</h2>'
    if not model.trust_boundaries:
        return heading + '<p class="muted">No trust boundaries.</p></section>'
    rows = [
        [
            f"<code>{_e(b.id)}</code>",
            _or_dash(b.name),
            _or_dash(", ".join(names.element(m) for m in b.contains)),
        ]
        for b in model.trust_boundaries
    ]
    return heading + _table(["ID", "Name", "Contains"], rows, set()) + "</section>"


def render_html(model: ThreatModel, *, generated: _dt.date | None = None) -> str:
    """The complete report as one HTML5 document. `generated` dates the footer (default today)."""
    summary = summarize(model)
    names = NameIndex.of(model)
    day = (generated or _dt.date.today()).isoformat()
    title = model.metadata.title or "Untitled threat model"
    nav = "".join(
        f'<a href="#{anchor}">{label}</a>'
        for anchor, label in (
            ("summary", "Summary"),
            ("attention", "Needs attention"),
            ("diagram", "Diagram"),
            ("threats", "Threats"),
            ("elements", "Elements"),
            ("flows", "Data flows"),
            ("boundaries", "Trust boundaries"),
        )
    )
    # The policy forbids scripts and remote loads even if a future change forgot to escape.
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            '<meta name="generator" content="Stockade">\n',
            f"<title>{_e(title)} · Threat model report</title>\n",
            f"<style>{_CSS}</style>\n</head>\n<body>\n",
            _cover(model),
            f"\n<nav>{nav}</nav>\n<main>\n",
            _summary(summary),
            "\n",
            _attention(summary, names),
            "\n",
            _diagram(model),
            "\n",
            _threats(model, summary, names),
            "\n",
            _elements(model),
            "\n",
            _flows(model, names),
            "\n",
            _boundaries(model, names),
            f"\n</main>\n<footer>Generated by Stockade on {day}.</footer>\n</body>\n</html>\n",
        ]
    )
