"""Every real foreign model gives the result its README states, counted from the source itself.

The expected counts are computed here straight from each source file (stdlib JSON/XML and
PyYAML, nothing from `stockade.importers`), so an importer that loses or invents an item fails.
"""

from __future__ import annotations

import datetime as _dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from stockade.importers.convert import import_bytes, import_file
from stockade.importers.otm import export_otm
from stockade.importers.result import ImportFailure, SourceFormat
from stockade.importers.threat_dragon import export_threat_dragon
from stockade.thf import read_text, to_yaml
from tests.conftest import FIXTURES

FOREIGN = FIXTURES / "foreign"
TODAY = _dt.date(2026, 3, 1)

Counts = dict[str, int]


def _tm7_counts(path: Path) -> Counts:
    root = ET.parse(path).getroot()
    stencils: set[str] = set()
    counts = {"elements": 0, "data_flows": 0, "trust_boundaries": 0, "threats": 0}
    for surface in root.findall(".//{*}DrawingSurfaceModel"):
        for pair in surface.find("{*}Borders") or []:
            value = pair.find("{*}Value")
            generic = value.find("{*}GenericTypeId").text
            if generic in ("GE.P", "GE.DS", "GE.EI", "GE.A"):
                counts["elements"] += 1
                stencils.add(pair.find("{*}Key").text)
            elif generic == "GE.TB.B":
                counts["trust_boundaries"] += 1
        for pair in surface.find("{*}Lines") or []:
            value = pair.find("{*}Value")
            generic = value.find("{*}GenericTypeId").text
            if generic == "GE.TB.L":
                counts["trust_boundaries"] += 1
            elif (
                generic == "GE.DF"
                and {
                    value.find("{*}SourceGuid").text,
                    value.find("{*}TargetGuid").text,
                }
                <= stencils
            ):
                counts["data_flows"] += 1
    counts["threats"] = len(list(root.find("{*}ThreatInstances")))
    return counts


def _td_counts(data: dict[str, Any]) -> Counts:
    counts = {"elements": 0, "data_flows": 0, "trust_boundaries": 0, "threats": 0}
    for diagram in data["detail"]["diagrams"]:
        cells = diagram.get("cells") or diagram["diagramJson"]["cells"]

        def kind(cell: dict[str, Any]) -> str:
            return cell.get("data", {}).get("type") or cell.get("type")

        ids = {
            c["id"] for c in cells if kind(c) in ("tm.Actor", "tm.Process", "tm.Store", "tm.Text")
        }
        for cell in cells:
            k = kind(cell)
            counts["threats"] += len(cell.get("data", cell).get("threats") or [])
            if k in ("tm.Actor", "tm.Process", "tm.Store", "tm.Text"):
                counts["elements"] += 1
            elif k in ("tm.Boundary", "tm.BoundaryBox"):
                counts["trust_boundaries"] += 1
            elif k == "tm.Flow":
                ends = {
                    cell["source"].get("cell") or cell["source"].get("id"),
                    cell["target"].get("cell") or cell["target"].get("id"),
                }
                if ends <= ids:
                    counts["data_flows"] += 2 if cell.get("data", {}).get("isBidirectional") else 1
    return counts


def _otm_counts(data: dict[str, Any]) -> Counts:
    components = data.get("components") or []
    ids = {c["id"] for c in components}
    flows = [f for f in data.get("dataflows") or [] if {f["source"], f["destination"]} <= ids]
    references = [
        t["threat"]
        for holder in [*components, *(data.get("dataflows") or [])]
        for t in holder.get("threats") or []
    ]
    unreferenced = [t for t in data.get("threats") or [] if t["id"] not in references]
    return {
        "elements": len(components),
        "data_flows": sum(2 if f.get("bidirectional") else 1 for f in flows),
        "trust_boundaries": len(data.get("trustZones") or []),
        "threats": len(references) + len(unreferenced),
    }


def _pytm_counts(data: dict[str, Any]) -> Counts:
    names = {e["name"] for e in data["elements"]}
    return {
        "elements": len(data["elements"]),
        "data_flows": sum(1 for f in data["flows"] if {f["source"], f["sink"]} <= names),
        "trust_boundaries": len(data["boundaries"]),
        "threats": len(data["findings"]),
    }


IMPORTABLE: dict[str, tuple[SourceFormat, Any]] = {
    "tm7/iriusrisk-startleft/examples/mtmt/MTMT_example.tm7": (SourceFormat.TM7, _tm7_counts),
    "tm7/iriusrisk-startleft/slp_mtmt/tests/resources/mtmt/MTMT_nested_tz.tm7": (
        SourceFormat.TM7,
        _tm7_counts,
    ),
    "tm7/iriusrisk-startleft/slp_mtmt/tests/resources/mtmt/SDL_all_components.tm7": (
        SourceFormat.TM7,
        _tm7_counts,
    ),
    "threat-dragon/ThreatDragonModels/demo-threat-model.json": (SourceFormat.THREAT_DRAGON, None),
    "threat-dragon/ThreatDragonModels/v2-threat-model.json": (SourceFormat.THREAT_DRAGON, None),
    "threat-dragon/td.vue/src/service/demo/three-tier-web-app.json": (
        SourceFormat.THREAT_DRAGON,
        None,
    ),
    "otm/iriusrisk-OpenThreatModel/EXAMPLE.json": (SourceFormat.OTM, None),
    "otm/iriusrisk-startleft/examples/otm/manual_threat_model.yaml": (SourceFormat.OTM, None),
    "otm/iriusrisk-startleft/examples/otm/mtmt_example.yaml": (SourceFormat.OTM, None),
    "pytm/OWASP-pytm/tests/output.json": (SourceFormat.PYTM, None),
}
REFUSED: dict[str, tuple[SourceFormat, str]] = {
    "tm7/iriusrisk-startleft/startleft/tests/resources/mtmt/mtmt-invalid-format-zip.tm7": (
        SourceFormat.TM7,
        "zip archive",
    ),
    "threat-dragon/ThreatDragonModels/test/malformed-new-model.json": (
        SourceFormat.THREAT_DRAGON,
        "malformed",
    ),
}


def expected_counts(name: str) -> Counts:
    path = FOREIGN / name
    fmt, counter = IMPORTABLE[name]
    if counter is not None:
        return counter(path)
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)
    return {
        SourceFormat.THREAT_DRAGON: _td_counts,
        SourceFormat.OTM: _otm_counts,
        SourceFormat.PYTM: _pytm_counts,
    }[fmt](data)


def test_the_tables_cover_every_model_file() -> None:
    on_disk = {
        p.relative_to(FOREIGN).as_posix()
        for p in FOREIGN.rglob("*")
        if p.is_file() and p.name not in ("README.md", "NOTICE")
    }
    assert on_disk == set(IMPORTABLE) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(IMPORTABLE))
def test_each_real_model_imports_with_the_counts_of_its_source(name: str) -> None:
    fmt, _ = IMPORTABLE[name]
    result = import_file(FOREIGN / name, today=TODAY)
    assert result.format is fmt
    assert result.counts() == expected_counts(name)
    # The result is a valid, canonical document with everything placed.
    again = read_text(to_yaml(result.model))
    assert again == result.model
    assert all(e.position is not None for e in result.model.elements)
    assert all(b.position is not None for b in result.model.trust_boundaries)
    assert result.model.metadata.created == "2026-03-01"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_deliberately_broken_files_are_refused_naming_format_and_problem(name: str) -> None:
    fmt, words = REFUSED[name]
    with pytest.raises(ImportFailure) as caught:
        import_file(FOREIGN / name)
    assert caught.value.format is fmt
    assert words in caught.value.message
    assert str(FOREIGN) not in caught.value.message


@pytest.mark.parametrize("name", sorted(IMPORTABLE))
@pytest.mark.parametrize("target", [SourceFormat.OTM, SourceFormat.THREAT_DRAGON])
def test_import_export_import_keeps_the_counts(name: str, target: SourceFormat) -> None:
    first = import_file(FOREIGN / name, today=TODAY)
    exported = (export_otm if target is SourceFormat.OTM else export_threat_dragon)(first.model)
    second = import_bytes(exported.encode("utf-8"), today=TODAY)
    assert second.format is target
    assert second.counts() == first.counts()
    third = import_bytes(
        (export_otm if target is SourceFormat.OTM else export_threat_dragon)(second.model).encode(),
        today=TODAY,
    )
    assert third.counts() == first.counts()


def test_tm7_boundaries_hold_the_stencils_whose_centre_is_inside() -> None:
    result = import_file(FOREIGN / "tm7/iriusrisk-startleft/examples/mtmt/MTMT_example.tm7")
    by_name = {b.name: set(b.contains) for b in result.model.trust_boundaries}
    assert by_name == {
        "Internet": {"mobile-client"},
        "Public Cloud": {"accounting-postgresql", "public-api-v2", "azure-file-storage"},
    }
    threat = result.model.threats[0]
    assert threat.category.value == "Elevation of Privilege"
    assert threat.severity.value == "high"
    assert threat.flow is not None and threat.element is not None


def test_threat_dragon_keeps_threat_details_and_marks_out_of_scope() -> None:
    result = import_file(FOREIGN / "threat-dragon/ThreatDragonModels/v2-threat-model.json")
    model = result.model
    store = next(e for e in model.elements if e.name == "Worker Config")
    (threat,) = [t for t in model.threats if t.element == store.id]
    assert threat.category.value == "Information Disclosure"
    assert threat.severity.value == "high"
    assert (
        threat.mitigation is not None
        and "Encrypt the DB credentials" in threat.mitigation.description
    )
    assert any("out-of-scope" in e.tags for e in model.elements)
    assert {w.code for w in result.warnings} >= {"line_boundary", "out_of_scope_marked"}
