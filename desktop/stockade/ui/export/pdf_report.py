"""PDF report drawn offline with Qt's own PDF writer: summary, diagram, threats by category.

Text pages are a `QTextDocument` (Qt's rich-text subset of HTML, every document string escaped
as in the HTML report) laid out on A4 and cut into pages; the diagram is the report's SVG
(`render_diagram_svg`) drawn as vectors with `QSvgRenderer` on a page of its own, landscape
when the diagram is wider than tall, scaled to fit. The file is written to a temporary name in
the same folder and renamed, so a failed export never leaves half a PDF.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import html
import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QByteArray, QMarginsF, QRectF, QSizeF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)
from PySide6.QtSvg import QSvgRenderer

from stockade.report.html import CATEGORY_COLORS, SEVERITY_COLORS, STATUS_COLORS, render_diagram_svg
from stockade.report.summary import (
    STATUS_LABELS,
    NameIndex,
    ReportSummary,
    mitigation_status,
    summarize,
)
from stockade.thf.model import Severity, StrideCategory, Threat, ThreatModel
from stockade.thf.writer import replacement_mode
from stockade.ui.export.application import ensure_application

RESOLUTION_DPI = 300
_MARGIN_MM = 15.0
_FOOTER_PT = 8
_CSS = """
body { font-family: 'DejaVu Sans'; font-size: 9.5pt; color: #1f2937; }
h1 { font-size: 20pt; margin-bottom: 2pt; }
h2 { font-size: 14pt; margin-top: 14pt; color: #0f766e; }
h3 { font-size: 11pt; margin-top: 10pt; }
h4 { font-size: 10pt; margin-top: 6pt; }
.muted { color: #6b7280; }
.kicker { color: #0f766e; font-weight: bold; font-size: 9pt; }
td, th { padding: 3pt; }
th { background-color: #f1f5f9; font-weight: bold; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _prose(text: str) -> str:
    return _e(text).replace("\n", "<br>")


def _badge(label: str, color: str) -> str:
    return f'<span style="background-color:{color}; color:#ffffff; font-weight:bold">&nbsp;{_e(label)}&nbsp;</span>'


def _table(headers: list[str], rows: list[list[str]], right: frozenset[int] = frozenset()) -> str:
    head = "".join(
        f'<th align="{"right" if i in right else "left"}">{h}</th>' for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td align="{"right" if i in right else "left"}">{c}</td>' for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return (
        '<table width="100%" border="1" cellspacing="0" cellpadding="3" '
        f'style="border-color:#e5e7eb; border-collapse:collapse"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _front_html(model: ThreatModel, summary: ReportSummary, names: NameIndex) -> str:
    meta = model.metadata
    facts = [("Author", meta.author), ("Created", meta.created), ("Modified", meta.modified)]
    if meta.created_by:
        facts.append(("Created by", meta.created_by))
    if meta.modified_by:
        facts.append(("Modified by", meta.modified_by))
    parts = [
        '<p class="kicker">THREAT MODEL REPORT</p>',
        f"<h1>{_e(meta.title) or 'Untitled threat model'}</h1>",
        '<p class="muted">'
        + " &nbsp;·&nbsp; ".join(f"<b>{k}:</b> {_e(v) or '—'}" for k, v in facts)
        + "</p>",
    ]
    if meta.description:
        parts.append(f"<p>{_prose(meta.description)}</p>")
    parts.append("<h2>Summary</h2>")
    cards = [
        ("Elements", summary.elements),
        ("Data flows", summary.data_flows),
        ("Trust boundaries", summary.trust_boundaries),
        ("Threats", summary.threats),
        ("Mitigated", summary.mitigated),
        ("Unmitigated", summary.open),
        ("Coverage", f"{summary.coverage_percent}%"),
    ]
    parts.append(
        '<table width="100%" cellspacing="4"><tr>'
        + "".join(
            f'<td align="center" style="background-color:#f8fafc"><span style="font-size:15pt; '
            f'font-weight:bold">{v}</span><br><span class="muted">{k}</span></td>'
            for k, v in cards
        )
        + "</tr></table>"
    )
    parts.append("<h3>Threats by STRIDE category and severity</h3>")
    rows = [
        [
            _badge(c.value, CATEGORY_COLORS[c]),
            *(
                str(summary.matrix[c][s])
                if summary.matrix[c][s]
                else '<span class="muted">0</span>'
                for s in Severity
            ),
            f"<b>{summary.category_counts[c]}</b>",
        ]
        for c in StrideCategory
    ]
    rows.append(
        [
            "<b>Total</b>",
            *(f"<b>{summary.severity_counts[s]}</b>" for s in Severity),
            f"<b>{summary.threats}</b>",
        ]
    )
    parts.append(
        _table(
            ["Category", *(_badge(s.value, SEVERITY_COLORS[s]) for s in Severity), "Total"],
            rows,
            frozenset(range(1, 7)),
        )
    )
    parts.append("<h3>Mitigation status</h3>")
    parts.append(
        _table(
            ["Status", "Threats"],
            [
                [_badge(STATUS_LABELS[s], STATUS_COLORS[s]), str(n)]
                for s, n in summary.status_counts.items()
            ],
            frozenset({1}),
        )
    )
    parts.append(
        f"<h2>Unmitigated critical and high threats ({len(summary.open_critical_high)})</h2>"
    )
    if summary.open_critical_high:
        parts.append(
            _table(
                ["ID", "Title", "Severity", "Category", "Target", "Status"],
                [
                    [
                        _e(t.id),
                        _e(t.title),
                        _badge(t.severity.value, SEVERITY_COLORS[t.severity]),
                        _e(t.category.value),
                        _e(names.target(t).label) or "—",
                        _e(STATUS_LABELS[mitigation_status(t)]),
                    ]
                    for t in summary.open_critical_high
                ],
            )
        )
    else:
        parts.append(
            '<p class="muted">Every critical and high threat is mitigated, accepted or transferred.</p>'
        )
    return "".join(parts)


def _threat_html(threat: Threat, names: NameIndex) -> str:
    target = names.target(threat).label
    status = mitigation_status(threat)
    out = [
        f'<p style="margin-top:6pt"><b>{_e(threat.title)}</b> <span class="muted">({_e(threat.id)})'
        f"{' on ' + _e(target) if target else ', no target'}</span> "
        f"{_badge(STATUS_LABELS[status], STATUS_COLORS[status])}</p>"
    ]
    if threat.description:
        out.append(f"<p>{_prose(threat.description)}</p>")
    if threat.mitigation is not None and threat.mitigation.description:
        out.append(f"<p><i>Mitigation:</i> {_prose(threat.mitigation.description)}</p>")
    return "".join(out)


def _back_html(model: ThreatModel, summary: ReportSummary, names: NameIndex, day: str) -> str:
    parts = [f"<h2>Threats ({summary.threats})</h2>"]
    if not model.threats:
        parts.append('<p class="muted">No threats recorded.</p>')
    for category in StrideCategory:
        in_category = [t for t in model.threats if t.category is category]
        if not in_category:
            continue
        parts.append(
            f"<h3>{_badge(category.value, CATEGORY_COLORS[category])} {len(in_category)}</h3>"
        )
        for severity in Severity:
            threats = [t for t in in_category if t.severity is severity]
            if threats:
                parts.append(
                    f"<h4>{_badge(severity.value, SEVERITY_COLORS[severity])} {len(threats)}</h4>"
                )
                parts.extend(_threat_html(t, names) for t in threats)
    parts.append(f"<h2>Elements ({len(model.elements)})</h2>")
    parts.append(
        _table(
            ["ID", "Name", "Type", "Trust zone", "Technologies"],
            [
                [
                    _e(e.id),
                    _e(e.name),
                    _e(e.type),
                    _e(e.trust_zone) or "—",
                    _e(", ".join(e.technologies)) or "—",
                ]
                for e in model.elements
            ],
        )
        if model.elements
        else '<p class="muted">No elements.</p>'
    )
    parts.append(f"<h2>Data flows ({len(model.data_flows)})</h2>")
    parts.append(
        _table(
            ["#", "Name", "From", "To", "Protocol", "Authenticated"],
            [
                [
                    str(f.flow_number) if f.flow_number is not None else "—",
                    _e(f.name) or "—",
                    _e(names.element(f.from_)),
                    _e(names.element(f.to)),
                    _e(f.protocol) or "—",
                    "Yes" if f.authenticated else "No",
                ]
                for f in model.data_flows
            ],
        )
        if model.data_flows
        else '<p class="muted">No data flows.</p>'
    )
    parts.append(f"<h2>Trust boundaries ({len(model.trust_boundaries)})</h2>")
    parts.append(
        _table(
            ["ID", "Name", "Contains"],
            [
                [_e(b.id), _e(b.name), _e(", ".join(names.element(m) for m in b.contains)) or "—"]
                for b in model.trust_boundaries
            ],
        )
        if model.trust_boundaries
        else '<p class="muted">No trust boundaries.</p>'
    )
    parts.append(f'<p class="muted">Generated by Stockade on {day}.</p>')
    return "".join(parts)


class _Pages:
    """Draws onto a QPdfWriter page by page, with a footer on each."""

    def __init__(self, writer: QPdfWriter, title: str) -> None:
        self.writer = writer
        self.painter = QPainter(writer)
        self.title = title
        self.number = 0

    def _area(self) -> QRectF:
        rect = self.writer.pageLayout().paintRectPixels(RESOLUTION_DPI)
        footer = RESOLUTION_DPI * _FOOTER_PT * 2.2 / 72
        return QRectF(0, 0, rect.width(), rect.height() - footer)

    def next_page(self, orientation: QPageLayout.Orientation) -> QRectF:
        if self.number > 0:
            self.writer.setPageOrientation(orientation)
            self.writer.newPage()
        else:
            self.writer.setPageOrientation(orientation)
        self.number += 1
        return self._area()

    def footer(self) -> None:
        rect = self.writer.pageLayout().paintRectPixels(RESOLUTION_DPI)
        font = QFont("DejaVu Sans")
        font.setPointSizeF(_FOOTER_PT)
        self.painter.setFont(font)
        self.painter.setPen(QColor("#6b7280"))
        band = QRectF(
            0,
            rect.height() - RESOLUTION_DPI * _FOOTER_PT * 1.6 / 72,
            rect.width(),
            RESOLUTION_DPI * _FOOTER_PT * 1.6 / 72,
        )
        self.painter.drawText(
            band, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.title[:90]
        )
        self.painter.drawText(
            band,
            int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
            f"Page {self.number}",
        )

    def text(self, body: str) -> None:
        document = QTextDocument()
        document.documentLayout().setPaintDevice(self.writer)
        document.setDefaultStyleSheet(_CSS)
        document.setDefaultFont(QFont("DejaVu Sans", 9))
        document.setDocumentMargin(0)
        area = self.next_page(QPageLayout.Orientation.Portrait)
        document.setPageSize(QSizeF(area.width(), area.height()))
        document.setHtml(f"<html><body>{body}</body></html>")
        for page in range(document.pageCount()):
            if page:
                self.next_page(QPageLayout.Orientation.Portrait)
            self.painter.save()
            self.painter.translate(0, -page * area.height())
            document.drawContents(
                self.painter, QRectF(0, page * area.height(), area.width(), area.height())
            )
            self.painter.restore()
            self.footer()

    def diagram(self, svg: str | None) -> None:
        renderer = QSvgRenderer(QByteArray(svg.encode("utf-8"))) if svg else None
        box = renderer.viewBoxF() if renderer is not None and renderer.isValid() else QRectF()
        landscape = box.width() > box.height()
        area = self.next_page(
            QPageLayout.Orientation.Landscape if landscape else QPageLayout.Orientation.Portrait
        )
        heading = QFont("DejaVu Sans")
        heading.setPointSizeF(14)
        heading.setBold(True)
        self.painter.setFont(heading)
        self.painter.setPen(QColor("#0f766e"))
        head_height = RESOLUTION_DPI * 28 / 72
        self.painter.drawText(
            QRectF(0, 0, area.width(), head_height),
            int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop),
            "Data-flow diagram",
        )
        target = QRectF(0, head_height, area.width(), area.height() - head_height)
        if renderer is None or box.isEmpty():
            body = QFont("DejaVu Sans")
            body.setPointSizeF(10)
            self.painter.setFont(body)
            self.painter.setPen(QColor("#6b7280"))
            self.painter.drawText(
                target,
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop),
                "No element has a stored position, so there is no diagram.",
            )
        else:
            scale = min(target.width() / box.width(), target.height() / box.height())
            width, height = box.width() * scale, box.height() * scale
            renderer.render(
                self.painter,
                QRectF(target.x() + (target.width() - width) / 2, target.y(), width, height),
            )
        self.footer()

    def close(self) -> None:
        self.painter.end()


def write_pdf(model: ThreatModel, path: Path, *, generated: _dt.date | None = None) -> None:
    """Render the PDF report of `model` to `path` atomically; OSError when it cannot be written."""
    ensure_application()
    summary = summarize(model)
    names = NameIndex.of(model)
    day = (generated or _dt.date.today()).isoformat()
    folder = path.parent if str(path.parent) else Path(".")
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(descriptor)
    try:
        writer = QPdfWriter(temp_name)
        writer.setResolution(RESOLUTION_DPI)
        writer.setTitle(model.metadata.title or "Threat model report")
        writer.setCreator("Stockade")
        writer.setPageLayout(
            QPageLayout(
                QPageSize(QPageSize.PageSizeId.A4),
                QPageLayout.Orientation.Portrait,
                QMarginsF(_MARGIN_MM, _MARGIN_MM, _MARGIN_MM, _MARGIN_MM),
                QPageLayout.Unit.Millimeter,
            )
        )
        pages = _Pages(writer, model.metadata.title or "Threat model report")
        try:
            pages.text(_front_html(model, summary, names))
            pages.diagram(render_diagram_svg(model))
            pages.text(_back_html(model, summary, names, day))
        finally:
            pages.close()
        del writer  # flushes and closes the file
        if os.path.getsize(temp_name) == 0:
            raise OSError("the PDF writer produced no output")
        os.chmod(temp_name, replacement_mode(path))
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
