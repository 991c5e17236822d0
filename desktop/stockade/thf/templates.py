"""Starter templates: the six sample models a user can start a new document from."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from stockade.thf.model import ThreatModel

_TEMPLATE_TEXT: tuple[tuple[str, str, str], ...] = (
    (
        "ecommerce-platform",
        "E-Commerce Platform",
        "Online shop: CDN and WAF at the edge, storefront and API, order processing, "
        "caching, search and a payment gateway.",
    ),
    (
        "cloud-microservices",
        "Cloud Microservices",
        "Services on Kubernetes behind an API gateway and service mesh, an event bus and "
        "one managed database per service.",
    ),
    (
        "mobile-banking",
        "Mobile Banking",
        "High-assurance banking app with fraud scoring, card-network and PCI concerns, "
        "and an HSM for card keys.",
    ),
    (
        "saas-platform",
        "SaaS Platform",
        "Multi-tenant application with single sign-on, background jobs, exports, "
        "monitoring and a CI/CD pipeline.",
    ),
    (
        "iot-smart-building",
        "IoT Smart Building",
        "Building devices behind an edge gateway, MQTT telemetry, stream processing, "
        "storage and a facilities dashboard.",
    ),
    (
        "healthcare-system",
        "Healthcare System",
        "Health records behind a FHIR gateway with a patient portal, e-prescribing and "
        "access audit logging (HIPAA).",
    ),
)


@dataclass(frozen=True)
class Template:
    """One starter model: its id, picker name and description, and the bundled file."""

    id: str
    name: str
    description: str
    path: Path


def _samples_dir() -> Path:
    # stockade.paths is a dependency-free leaf that knows where bundled resources live
    # (source tree or frozen build); duplicating that logic here would drift.
    from stockade.paths import resources_dir

    return resources_dir() / "samples"


def list_templates() -> tuple[Template, ...]:
    """Every starter template, in the order a picker shows them."""
    folder = _samples_dir()
    return tuple(
        Template(id=tid, name=name, description=text, path=folder / f"{tid}.thf")
        for tid, name, text in _TEMPLATE_TEXT
    )


def get_template(template_id: str) -> Template:
    """The template with this id; KeyError naming the known ids when there is none."""
    templates = list_templates()
    for template in templates:
        if template.id == template_id:
            return template
    known = ", ".join(t.id for t in templates)
    raise KeyError(f"unknown template {template_id!r}; the templates are: {known}")


def new_from_template(template_id: str, today: _dt.date) -> ThreatModel:
    """A new document from a starter template, dated `today` (created and modified).

    Raises KeyError for an unknown id; a bundled file that fails to load raises its
    ThfError (that is a packaging bug, not user input).
    """
    from stockade.thf.reader import read_file

    template = get_template(template_id)
    model = read_file(template.path)
    metadata = model.metadata.model_copy(
        update={"created": today.isoformat(), "modified": today.isoformat()}
    )
    return model.model_copy(update={"metadata": metadata})
