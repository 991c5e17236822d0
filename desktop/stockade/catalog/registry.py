"""The component catalog: entries loaded from `resources/catalog.json`, lookup and search."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from stockade.paths import resources_dir

GENERIC_ID = "generic"

_E = TypeVar("_E", bound=StrEnum)


class EntryStatus(StrEnum):
    ACTIVE = "active"
    DEPRECATED = "deprecated"


class StrideRole(StrEnum):
    SERVICE = "service"
    STORE = "store"
    ACTOR = "actor"
    NONE = "none"


CATEGORY_LABELS: dict[str, str] = {
    "generic": "Generic",
    "annotations": "Annotations",
    "services": "Services",
    "databases": "Databases",
    "messaging": "Messaging",
    "infrastructure": "Infrastructure",
    "security": "Security",
    "clients": "Clients",
    "networking": "Networking",
    "platform": "Cloud / Platform",
}
"""Category slug → label, in catalog order (the slugs are a closed set)."""

PROVIDER_LABELS: dict[str, str] = {
    "generic": "Generic",
    "aws": "Amazon Web Services",
    "azure": "Microsoft Azure",
    "gcp": "Google Cloud",
    "cloudflare": "Cloudflare",
    "kubernetes": "Kubernetes",
    "oss": "Open Source",
}
"""Provider slug → label, in catalog order (the slugs are a closed set)."""


@dataclass(frozen=True, slots=True)
class ComponentVariant:
    """A provider-specific flavour of an entry; its id is a `.thf` `element.subtype`."""

    id: str
    label: str
    provider: str
    icon_id: str
    status: EntryStatus
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ComponentEntry:
    """One catalog entry; its id is a `.thf` `element.type` value and never changes."""

    id: str
    label: str
    category: str
    provider: str
    icon_id: str
    shape: str
    stride_role: StrideRole
    status: EntryStatus
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    variants: tuple[ComponentVariant, ...] = ()

    @property
    def deprecated(self) -> bool:
        return self.status is EntryStatus.DEPRECATED


class CatalogError(ValueError):
    """The catalog file is missing or does not have the expected shape."""


class ComponentCatalog:
    """An immutable, indexed set of entries in declaration order."""

    def __init__(self, entries: Iterable[ComponentEntry]) -> None:
        self._entries: tuple[ComponentEntry, ...] = tuple(entries)
        by_id: dict[str, ComponentEntry] = {}
        by_alias: dict[str, ComponentEntry] = {}
        by_provider: dict[str, list[ComponentEntry]] = {}
        by_category: dict[str, list[ComponentEntry]] = {}
        for entry in self._entries:
            if entry.id in by_id:
                raise CatalogError(f'the catalog lists the id "{entry.id}" twice')
            by_id[entry.id] = entry
            for alias in entry.aliases:
                by_alias.setdefault(alias, entry)
            by_category.setdefault(entry.category, []).append(entry)
            # An entry is found under its own provider and every provider its variants use.
            for provider in dict.fromkeys([entry.provider, *(v.provider for v in entry.variants)]):
                by_provider.setdefault(provider, []).append(entry)
        self._by_id = by_id
        self._by_alias = by_alias
        self._by_provider = {k: tuple(v) for k, v in by_provider.items()}
        self._by_category = {k: tuple(v) for k, v in by_category.items()}
        if GENERIC_ID not in by_id:
            raise CatalogError('the catalog has no "generic" entry to fall back to')

    @property
    def entries(self) -> tuple[ComponentEntry, ...]:
        return self._entries

    def get(self, component_id: str) -> ComponentEntry | None:
        """The entry with this id, else the entry listing it as an alias, else None."""
        return self._by_id.get(component_id) or self._by_alias.get(component_id)

    def resolve(self, element_type: str) -> ComponentEntry:
        """Total lookup: unknown types resolve to the generic entry."""
        return self.get(element_type) or self._by_id[GENERIC_ID]

    def search(
        self,
        query: str = "",
        category: str | None = None,
        provider: str | None = None,
        include_deprecated: bool = False,
    ) -> list[ComponentEntry]:
        """Entries matching all given filters, in declaration order."""
        if provider is not None:
            candidates: Iterable[ComponentEntry] = self._by_provider.get(provider, ())
        elif category is not None:
            candidates = self._by_category.get(category, ())
        else:
            candidates = self._entries
        needle = query.strip().lower()
        out = []
        for entry in candidates:
            if entry.deprecated and not include_deprecated:
                continue
            if category is not None and entry.category != category:
                continue
            if needle and needle not in _haystack(entry):
                continue
            out.append(entry)
        return out

    def categories(self) -> list[str]:
        """Category slugs in first-appearance order, without `generic`."""
        return [c for c in self._by_category if c != GENERIC_ID]


@cache
def _haystack(entry: ComponentEntry) -> str:
    parts = [entry.label, entry.id, *entry.aliases, *entry.keywords]
    parts.append(CATEGORY_LABELS.get(entry.category, entry.category))
    parts.append(PROVIDER_LABELS.get(entry.provider, entry.provider))
    for variant in entry.variants:
        parts += [variant.label, variant.id, *variant.aliases]
        parts.append(PROVIDER_LABELS.get(variant.provider, variant.provider))
    return " ".join(parts).lower()


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{where} must be a list of strings")
    return tuple(value)


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise CatalogError(f"{where}.{key} must be a non-empty string")
    return value


def _choice(raw: dict[str, Any], key: str, where: str, kind: type[_E]) -> _E:
    value = _text(raw, key, where)
    try:
        return kind(value)
    except ValueError:
        raise CatalogError(f'{where}.{key} "{value}" is not a known {key}') from None


def _variant(raw: Any, where: str) -> ComponentVariant:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where} must be an object")
    provider = _text(raw, "provider", where)
    if provider not in PROVIDER_LABELS:
        raise CatalogError(f'{where}.provider "{provider}" is not a known provider')
    return ComponentVariant(
        id=_text(raw, "id", where),
        label=_text(raw, "label", where),
        provider=provider,
        icon_id=_text(raw, "icon_id", where),
        status=_choice(raw, "status", where, EntryStatus),
        aliases=_strings(raw.get("aliases", []), f"{where}.aliases"),
    )


def _entry(raw: Any, where: str) -> ComponentEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where} must be an object")
    category = _text(raw, "category", where)
    provider = _text(raw, "provider", where)
    if category not in CATEGORY_LABELS:
        raise CatalogError(f'{where}.category "{category}" is not a known category')
    if provider not in PROVIDER_LABELS:
        raise CatalogError(f'{where}.provider "{provider}" is not a known provider')
    variants = raw.get("variants", [])
    if not isinstance(variants, list):
        raise CatalogError(f"{where}.variants must be a list")
    return ComponentEntry(
        id=_text(raw, "id", where),
        label=_text(raw, "label", where),
        category=category,
        provider=provider,
        icon_id=_text(raw, "icon_id", where),
        shape=_text(raw, "shape", where),
        stride_role=_choice(raw, "stride_role", where, StrideRole),
        status=_choice(raw, "status", where, EntryStatus),
        aliases=_strings(raw.get("aliases", []), f"{where}.aliases"),
        keywords=_strings(raw.get("keywords", []), f"{where}.keywords"),
        variants=tuple(_variant(v, f"{where}.variants[{i}]") for i, v in enumerate(variants)),
    )


def load_catalog(path: Path) -> ComponentCatalog:
    """Read and check a catalog file; raises `CatalogError` with a plain message."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogError(f"the component catalog could not be read ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise CatalogError("the component catalog has no entries list")
    return ComponentCatalog(_entry(e, f"entries[{i}]") for i, e in enumerate(data["entries"]))


@cache
def default_catalog() -> ComponentCatalog:
    """The bundled catalog, loaded once."""
    return load_catalog(resources_dir() / "catalog.json")


def get_component(component_id: str) -> ComponentEntry | None:
    """By id, else by alias; None when unknown."""
    return default_catalog().get(component_id)


def resolve_component(element_type: str) -> ComponentEntry:
    """By id or alias; unknown types resolve to the generic entry."""
    return default_catalog().resolve(element_type)


def search_components(
    query: str = "",
    category: str | None = None,
    provider: str | None = None,
    include_deprecated: bool = False,
) -> list[ComponentEntry]:
    """Search the bundled catalog (see `ComponentCatalog.search`)."""
    return default_catalog().search(query, category, provider, include_deprecated)


def stride_role(element_type: str) -> StrideRole:
    """The STRIDE role of an element type; unknown types are services."""
    return default_catalog().resolve(element_type).stride_role
