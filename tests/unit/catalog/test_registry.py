"""The component catalog: loading, lookup, resolution, search and STRIDE roles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from stockade.catalog import (
    CATEGORY_LABELS,
    PROVIDER_LABELS,
    CatalogError,
    StrideRole,
    default_catalog,
    get_component,
    load_catalog,
    resolve_component,
    search_components,
    stride_role,
)
from stockade.tools.read_tools import CatalogCategory, CatalogProvider


def test_bundled_catalog_has_48_entries_of_which_45_are_active() -> None:
    assert len(default_catalog().entries) == 48
    assert len(search_components()) == 45
    assert len(search_components(include_deprecated=True)) == 48
    deprecated = {e.id for e in default_catalog().entries if e.deprecated}
    assert deprecated == {"process", "data_store", "external_entity"}


def test_per_category_counts_include_deprecated() -> None:
    counts = {c: len(search_components(category=c, include_deprecated=True)) for c in CATEGORY_LABELS}
    assert counts == {"generic": 1, "annotations": 1, "services": 6, "databases": 9, "messaging": 3,
                      "infrastructure": 5, "security": 8, "clients": 7, "networking": 4, "platform": 4}


def test_variants_total_sixteen() -> None:
    assert sum(len(e.variants) for e in default_catalog().entries) == 16


def test_get_component_by_id_and_unknown_is_none() -> None:
    entry = get_component("sql_database")
    assert entry is not None and entry.label == "SQL Database" and entry.stride_role is StrideRole.STORE
    assert get_component("no_such_type") is None
    assert get_component("SQL_DATABASE") is None  # ids are exact


def test_unknown_type_resolves_to_generic() -> None:
    assert resolve_component("quantum_flux_capacitor").id == "generic"
    assert resolve_component("process").id == "process"  # deprecated still resolves


def test_stride_roles_follow_the_catalog() -> None:
    assert stride_role("sql_database") == "store"
    assert stride_role("web_browser") == "actor"
    assert stride_role("external_entity") == "actor"
    assert stride_role("text") == "none"
    assert stride_role("process") == "service"
    assert stride_role("something_new") == "service"


def test_provider_search_includes_entries_with_that_providers_variants() -> None:
    aws = [e.id for e in search_components(provider="aws")]
    assert aws == ["sql_database", "nosql_database", "object_storage", "message_queue", "event_bus", "cdn"]
    assert search_components(provider="kubernetes") == []


def test_query_matches_labels_keywords_and_variants_case_insensitively() -> None:
    assert [e.id for e in search_components("  POSTGRES ")] == ["sql_database"]
    assert "sql_database" in [e.id for e in search_components("Azure SQL")]
    assert [e.id for e in search_components("cloud / platform")] == [e.id for e in search_components(category="platform")]


def test_category_and_provider_filters_combine() -> None:
    assert [e.id for e in search_components(category="databases", provider="gcp")] == [
        e.id for e in search_components(provider="gcp") if e.category == "databases"]


def test_categories_in_first_appearance_order_without_generic() -> None:
    assert default_catalog().categories() == [c for c in CATEGORY_LABELS if c != "generic"]


def test_read_tool_enums_match_the_catalog_slugs() -> None:
    assert list(get_args(CatalogCategory)) == list(CATEGORY_LABELS)
    assert list(get_args(CatalogProvider)) == list(PROVIDER_LABELS)


def test_aliases_resolve_to_their_entry(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    data = json.loads(json.dumps({"entries": [
        {"id": "generic", "label": "Generic", "category": "generic", "provider": "generic", "icon_id": "box",
         "shape": "rounded", "stride_role": "service", "status": "active"},
        {"id": "postgres_db", "label": "Postgres", "category": "databases", "provider": "generic",
         "icon_id": "database", "shape": "database", "stride_role": "store", "status": "active",
         "aliases": ["pg"]},
    ]}))
    path.write_text(json.dumps(data), encoding="utf-8")
    catalog = load_catalog(path)
    assert catalog.get("pg") is catalog.get("postgres_db")
    assert [e.id for e in catalog.search("pg")] == ["postgres_db"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "could not be read"),
        ('{"entries": 3}', "no entries list"),
        ('{"entries": [{"id": "x"}]}', r"entries\[0\]\.category must be a non-empty string"),
        ('{"entries": []}', 'no "generic" entry'),
        (
            '{"entries": [{"id": "x", "label": "X", "category": "services", "provider": "aws", '
            '"icon_id": "i", "shape": "s", "stride_role": "boss", "status": "active"}]}',
            r'entries\[0\]\.stride_role "boss" is not a known stride_role',
        ),
        (
            '{"entries": [{"id": "x", "label": "X", "category": "services", "provider": "aws", '
            '"icon_id": "i", "shape": "s", "stride_role": "service", "status": "active", '
            '"variants": [{"id": "v", "label": "V", "provider": "aws", "icon_id": "i", '
            '"status": "retired"}]}]}',
            r'entries\[0\]\.variants\[0\]\.status "retired" is not a known status',
        ),
    ],
)
def test_broken_catalog_files_fail_with_plain_messages(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CatalogError, match=message):
        load_catalog(path)
    with pytest.raises(CatalogError, match="could not be read"):
        load_catalog(tmp_path / "missing.json")
