"""Deterministic synthetic threat models of any size, for benchmarks and load tests."""

from __future__ import annotations

import random

from stockade.thf.model import (
    DataFlow,
    Diagram,
    Element,
    Group,
    Layer,
    Metadata,
    Mitigation,
    MitigationStatus,
    Position,
    Severity,
    Size,
    StrideCategory,
    Threat,
    ThreatModel,
    TrustBoundary,
    Viewport,
)

_TYPES = ("process", "data_store", "external_entity", "api_gateway", "sql_database", "queue")
_ZONES = ("internet", "dmz", "internal", "restricted")
_PROTOCOLS = ("HTTPS", "gRPC/TLS", "PostgreSQL/TLS", "AMQP", "SSH")
_TECH = ("Python", "Go", "PostgreSQL", "Redis", "nginx", "Kafka", "React")


def generate_model(n_elements: int, seed: int = 0) -> ThreatModel:
    """A valid model with `n_elements` elements, 1.5x flows, 0.5x threats, boundaries,
    layers, groups, positions and multi-line descriptions. Same seed, same model."""
    rng = random.Random(seed)
    n_layers = max(1, min(8, n_elements // 100 + 1))
    n_groups = max(1, n_elements // 50)
    n_boundaries = max(1, n_elements // 100)
    n_flows = n_elements * 3 // 2
    n_threats = n_elements // 2

    layers = [
        Layer(id=f"layer-{i}", name=f"Layer {i}", description=f"Tier {i} of the system")
        for i in range(n_layers)
    ]
    groups = [
        Group(
            id=f"group-{i}",
            name=f"Cluster {i}",
            type="cluster",
            # Each group may nest under an earlier one, so there is never a cycle.
            parent=f"group-{rng.randrange(i)}" if i > 0 and rng.random() < 0.5 else None,
            position=Position(x=float(i * 500), y=0.0),
            size=Size(width=480.0, height=320.0),
        )
        for i in range(n_groups)
    ]
    elements = []
    for i in range(n_elements):
        elements.append(
            Element(
                id=f"comp-{i}",
                type=_TYPES[i % len(_TYPES)],
                name=f"Component {i}",
                trust_zone=_ZONES[i % len(_ZONES)],
                layer=f"layer-{i % n_layers}",
                group=f"group-{rng.randrange(n_groups)}",
                description=(
                    f"Component {i} handles part of the order pipeline.\n"
                    f"It talks to {rng.randrange(1, 9)} neighbours and keeps an audit log.\n"
                ),
                technologies=rng.sample(_TECH, 2),
                tags=["synthetic"] if i % 3 == 0 else [],
                stores=["orders", "customers"] if i % len(_TYPES) == 1 else None,
                position=Position(x=float(100 + (i % 40) * 220), y=float(100 + (i // 40) * 160)),
                fill_color="#3b82f6" if i % 5 == 0 else None,
                fill_opacity=0.85 if i % 5 == 0 else None,
            )
        )
    flows = []
    for i in range(n_flows):
        a = rng.randrange(n_elements)
        b = rng.randrange(n_elements)
        flows.append(
            DataFlow(
                id=f"flow-{i}",
                flow_number=i + 1,
                name=f"Flow {i}",
                **{"from": f"comp-{a}"},
                to=f"comp-{b}",
                protocol=_PROTOCOLS[i % len(_PROTOCOLS)],
                data=["order data", "session token"] if i % 2 == 0 else [],
                authenticated=i % 3 != 0,
                label_offset=Position(x=4.0, y=-12.5) if i % 7 == 0 else None,
                source_handle="right-source" if i % 2 else None,
                target_handle="left-target" if i % 2 else None,
            )
        )
    boundaries = []
    per_boundary = max(1, n_elements // n_boundaries)
    for i in range(n_boundaries):
        members = [
            f"comp-{j}" for j in range(i * per_boundary, min(n_elements, (i + 1) * per_boundary), 3)
        ]
        boundaries.append(
            TrustBoundary(
                id=f"boundary-{i}",
                name=f"Zone {i}",
                contains=members,
                position=Position(x=float(i * 900), y=50.0),
                size=Size(width=860.0, height=600.0),
                stroke_color="#ef4444",
            )
        )
    categories = list(StrideCategory)
    severities = list(Severity)
    statuses = list(MitigationStatus)
    threats = []
    for i in range(n_threats):
        on_flow = i % 4 == 0
        threats.append(
            Threat(
                id=f"threat-{i:08x}",
                title=f"Threat {i}: attacker abuses component {i}",
                category=categories[i % len(categories)],
                element=None if on_flow else f"comp-{rng.randrange(n_elements)}",
                flow=f"flow-{rng.randrange(n_flows)}" if on_flow else None,
                severity=severities[i % len(severities)],
                description=f"An attacker could abuse component {i}.\nImpact: data exposure.",
                mitigation=(
                    Mitigation(status=statuses[i % len(statuses)], description="Use mTLS")
                    if i % 2 == 0
                    else None
                ),
            )
        )
    return ThreatModel(
        version="1.0",
        metadata=Metadata(
            title=f"Synthetic model ({n_elements} elements)",
            author="Benchmark",
            created="2026-01-01",
            modified="2026-01-02",
            description="Generated for benchmarks.\nDeterministic for a given seed.",
            threat_analysis_enabled=True,
        ),
        layers=layers,
        groups=groups,
        elements=elements,
        data_flows=flows,
        trust_boundaries=boundaries,
        threats=threats,
        diagrams=[
            Diagram(
                id="main-dfd",
                name="Level 0 DFD",
                kind="dfd",
                viewport=Viewport(x=0.0, y=0.0, zoom=1.0),
            )
        ],
    )
