"""Component catalog and STRIDE roles (data in resources/catalog.json)."""

from stockade.catalog.registry import (
    CATEGORY_LABELS,
    PROVIDER_LABELS,
    CatalogError,
    ComponentCatalog,
    ComponentEntry,
    ComponentVariant,
    EntryStatus,
    StrideRole,
    default_catalog,
    get_component,
    load_catalog,
    resolve_component,
    search_components,
    stride_role,
)

__all__ = [
    "CATEGORY_LABELS",
    "PROVIDER_LABELS",
    "CatalogError",
    "ComponentCatalog",
    "ComponentEntry",
    "ComponentVariant",
    "EntryStatus",
    "StrideRole",
    "default_catalog",
    "get_component",
    "load_catalog",
    "resolve_component",
    "search_components",
    "stride_role",
]
