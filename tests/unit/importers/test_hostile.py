"""Hostile sources are refused or neutralized: no traceback, nothing read from the filesystem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.importers.convert import import_bytes, import_file
from stockade.importers.result import ImportFailure, SourceFormat
from stockade.importers.source import MAX_SOURCE_BYTES
from stockade.report.html import render_html

TM7_HEAD = '<ThreatModel xmlns="http://schemas.datacontract.org/2004/07/ThreatModeling.Model">'


def test_an_xml_external_entity_is_refused_and_nothing_is_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    source = (
        f'<?xml version="1.0"?><!DOCTYPE ThreatModel [<!ENTITY leak SYSTEM "{secret.as_uri()}">]>'
        f"{TM7_HEAD}<MetaInformation><ThreatModelName>&leak;</ThreatModelName></MetaInformation>"
        "<DrawingSurfaceList/></ThreatModel>"
    )
    with pytest.raises(ImportFailure) as caught:
        import_bytes(source.encode(), "leak.tm7")
    assert caught.value.format is SourceFormat.TM7
    assert "document type" in caught.value.message
    assert "TOP-SECRET" not in caught.value.message


def test_a_billion_laughs_expansion_is_refused() -> None:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    source = (
        f'<?xml version="1.0"?><!DOCTYPE ThreatModel [{entities}]>'
        f"{TM7_HEAD}<MetaInformation><ThreatModelName>&lol9;</ThreatModelName>"
        "</MetaInformation><DrawingSurfaceList/></ThreatModel>"
    )
    with pytest.raises(ImportFailure) as caught:
        import_bytes(source.encode(), "laughs.tm7")
    assert "entit" in caught.value.message


def test_yaml_alias_bombs_are_refused() -> None:
    lines = ["otmVersion: 0.2.0", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(ImportFailure) as caught:
        import_bytes("\n".join(lines).encode(), "bomb.yaml")
    assert caught.value.format is SourceFormat.OTM
    assert "alias" in caught.value.message


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: no 100 MB ever written or read
    assert huge.stat().st_size > MAX_SOURCE_BYTES
    with pytest.raises(ImportFailure) as caught:
        import_file(huge)
    assert "larger than 64 MB" in caught.value.message


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_deeply_nested_json_is_refused_with_a_plain_message(depth: int) -> None:
    source = '{"summary": {"title": "x"}, "detail": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(ImportFailure) as caught:
        import_bytes(source.encode(), "deep.json")
    assert caught.value.format is SourceFormat.THREAT_DRAGON
    assert "nests its JSON too deeply" in caught.value.message


def test_deep_but_parseable_unknown_fields_are_not_kept_past_the_bound() -> None:
    nested: object = "leaf"
    for _ in range(60):
        nested = {"k": nested}
    model = {
        "otmVersion": "0.2.0",
        "project": {"name": "Deep", "id": "deep", "attributes": nested},
        "components": [],
    }
    result = import_bytes(json.dumps(model).encode())
    assert "origin_too_deep" in {w.code for w in result.warnings}


def test_html_script_and_bidi_characters_in_names_are_neutralized() -> None:
    evil = "<script>alert(1)</script>\u202eexe.txt\u200b"
    source = {
        "version": "2.0.0",
        "summary": {"title": evil, "owner": "x"},
        "detail": {
            "diagrams": [
                {
                    "title": "D",
                    "cells": [
                        {
                            "id": "a",
                            "shape": "process",
                            "position": {"x": 0, "y": 0},
                            "size": {"width": 100, "height": 100},
                            "data": {
                                "type": "tm.Process",
                                "name": evil,
                                "threats": [
                                    {
                                        "title": evil,
                                        "type": "Spoofing",
                                        "severity": "High",
                                        "status": "Open",
                                        "description": "<img src=x onerror=1>",
                                    }
                                ],
                            },
                        }
                    ],
                }
            ]
        },
    }
    result = import_bytes(json.dumps(source).encode())
    element = result.model.elements[0]
    assert element.name == "<script>alert(1)</script>exe.txt"
    assert result.model.threats[0].title == element.name
    assert "text_cleaned" in {w.code for w in result.warnings}
    page = render_html(result.model)
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\u202e" not in page


def test_garbage_is_refused_as_an_unknown_format() -> None:
    with pytest.raises(ImportFailure) as caught:
        import_bytes(b"\x00\x01 this is nothing", "x.bin")
    assert caught.value.format is None
    assert "cannot tell what this file is" in caught.value.message


@pytest.mark.parametrize(
    ("source", "fmt", "words"),
    [
        (b"<ThreatModel><unclosed></ThreatModel>", SourceFormat.TM7, "not well-formed XML"),
        (b'{"otmVersion": "0.2.0", ', SourceFormat.OTM, "not valid JSON"),
        (b'{"otmVersion": "0.2.0"}', SourceFormat.OTM, "no project"),
        (b'{"otmVersion": "9.0"}', SourceFormat.OTM, "versions 0.1 and 0.2"),
        (b'{"summary": {}, "detail": {"diagrams": 3}}', SourceFormat.THREAT_DRAGON, "diagrams"),
        (b"\xff\xfe{}", None, "cannot tell"),
    ],
)
def test_broken_sources_fail_with_one_plain_sentence(
    source: bytes, fmt: SourceFormat | None, words: str
) -> None:
    with pytest.raises(ImportFailure) as caught:
        import_bytes(source)
    assert caught.value.format is fmt
    assert words in caught.value.message
    assert "\n" not in caught.value.message and "Traceback" not in caught.value.message
