"""Automatic layered layout for elements and trust boundaries that have no stored position.

Sugiyama-style, left to right in the direction data flows:
1. cycles are broken by reversing the back edges of an iterative depth-first search;
2. each unplaced element gets a layer (a column) by longest path from the sources;
3. the order within each column comes from barycentre sweeps (down, then up) that pull each
   element towards the mean row of its neighbours in the other columns, which reduces crossings;
4. elements are banded by the trust boundary they belong to (innermost first, nested boundaries
   next to their parent) so that each boundary's box encloses its members and no other band;
5. the whole new block is placed below everything that already has a position.

Positioned elements and boundaries are never moved. Same input, same output: every tie is broken
by document order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from stockade.thf.model import Element, Position, Size, ThreatModel, TrustBoundary

NODE_WIDTH = 160.0
"""Width assumed for an element when checking overlaps (the widest any view draws)."""
NODE_HEIGHT = 60.0
COLUMN_STEP = 240.0
"""Horizontal distance between columns: a node plus room for a flow label."""
ROW_STEP = 110.0
BOUNDARY_PADDING = 30.0
"""Space between a boundary's edge and the members it encloses (one per nesting level)."""
BLOCK_GAP = 80.0
"""Space between the already positioned items and the newly placed block."""
DEFAULT_BOUNDARY_SIZE = (240.0, 140.0)
"""Size of a boundary that has no members to enclose."""
ORIGIN = (40.0, 40.0)
"""Where the block starts when nothing in the model has a position."""
_BARYCENTRE_SWEEPS = 4


def layout_missing_positions(model: ThreatModel) -> ThreatModel:
    """A model in which every element and trust boundary has a position.

    Elements without a position are laid out in layers (see the module docstring) below the
    items that already have one; a boundary without a position is sized to enclose its members.
    Everything that already has a position is returned unchanged.
    """
    unplaced = [i for i, e in enumerate(model.elements) if e.position is None]
    boundaries_to_place = [i for i, b in enumerate(model.trust_boundaries) if b.position is None]
    if not unplaced and not boundaries_to_place:
        return model

    origin_x, origin_y = _block_origin(model)
    elements = list(model.elements)
    index_of = {e.id: i for i, e in enumerate(elements)}
    cluster_of, cluster_paths, depth_of = _clusters(model, set(unplaced), index_of)

    new_positions: dict[int, tuple[float, float]] = {}
    block_bottom = origin_y
    if unplaced:
        layers = _layers(unplaced, model, index_of)
        ordered = _order_layers(layers, model, index_of)
        new_positions, block_bottom = _place(ordered, cluster_of, cluster_paths, origin_x, origin_y)
        for i, (x, y) in new_positions.items():
            elements[i] = elements[i].model_copy(update={"position": Position(x=x, y=y)})

    boundaries = list(model.trust_boundaries)
    if boundaries_to_place:
        boundaries = _place_boundaries(
            boundaries, boundaries_to_place, elements, index_of, depth_of, origin_x, block_bottom
        )
    return model.model_copy(update={"elements": elements, "trust_boundaries": boundaries})


# ---------------------------------------------------------------------------------------------
# Where the new block goes


def _occupied_box(model: ThreatModel) -> tuple[float, float, float, float] | None:
    """(left, top, right, bottom) of everything that already has a position."""
    boxes: list[tuple[float, float, float, float]] = []
    for element in model.elements:
        if element.position is not None:
            x, y = element.position.x, element.position.y
            boxes.append((x, y, x + NODE_WIDTH, y + NODE_HEIGHT))
    for boundary in model.trust_boundaries:
        if boundary.position is not None:
            width, height = (
                (boundary.size.width, boundary.size.height)
                if boundary.size is not None
                else DEFAULT_BOUNDARY_SIZE
            )
            x, y = boundary.position.x, boundary.position.y
            boxes.append((x, y, x + width, y + height))
    # Validation refuses non-finite coordinates; a model built in code may still hold them.
    boxes = [box for box in boxes if all(math.isfinite(v) for v in box)]
    if not boxes:
        return None
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _block_origin(model: ThreatModel) -> tuple[float, float]:
    box = _occupied_box(model)
    if box is None:
        return ORIGIN
    left, _top, _right, bottom = box
    return left, bottom + BLOCK_GAP


# ---------------------------------------------------------------------------------------------
# Trust-boundary clusters


def _clusters(
    model: ThreatModel, unplaced: set[int], index_of: dict[str, int]
) -> tuple[dict[int, int], dict[int, tuple[int, ...]], dict[int, int]]:
    """For each unplaced element its innermost boundary (or -1); each boundary's nesting path.

    Boundary B nests in A when B's members are a strict subset of A's; A is then B's parent
    (the smallest such A, the earliest on a tie). The path of a boundary runs from the
    outermost ancestor to itself, so sorting by path keeps nested boundaries beside their parent.
    `depth_of` says how many boundaries nest inside each one (0 for innermost), which sets its
    padding.
    """
    members: list[frozenset[int]] = [
        frozenset(index_of[m] for m in b.contains if m in index_of) for b in model.trust_boundaries
    ]
    parent: dict[int, int] = {}
    for b, own in enumerate(members):
        if not own:
            continue
        best: int | None = None
        for a, other in enumerate(members):
            if a != b and own < other and (best is None or len(other) < len(members[best])):
                best = a
        if best is not None:
            parent[b] = best
    paths: dict[int, tuple[int, ...]] = {-1: (-1,)}
    for b in range(len(members)):
        path = [b]
        seen = {b}
        current = parent.get(b)
        while current is not None and current not in seen:
            path.append(current)
            seen.add(current)
            current = parent.get(current)
        paths[b] = tuple(reversed(path))
    depth_of: dict[int, int] = dict.fromkeys(range(len(members)), 0)
    for b in range(len(members)):
        chain = paths[b]
        for level, ancestor in enumerate(chain):
            depth_of[ancestor] = max(depth_of[ancestor], len(chain) - 1 - level)
    innermost: dict[int, int] = {}
    for b, own in enumerate(members):
        for i in own:
            if i in unplaced:
                current = innermost.get(i)
                if current is None or len(own) < len(members[current]):
                    innermost[i] = b
    cluster_of = {i: innermost.get(i, -1) for i in unplaced}
    return cluster_of, paths, depth_of


# ---------------------------------------------------------------------------------------------
# Layers


def _adjacency(
    nodes: Sequence[int], model: ThreatModel, index_of: dict[str, int]
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Successors and predecessors among `nodes`, from data flows then relationships."""
    wanted = set(nodes)
    successors: dict[int, list[int]] = {n: [] for n in nodes}
    predecessors: dict[int, list[int]] = {n: [] for n in nodes}
    seen: set[tuple[int, int]] = set()
    edges = [(f.from_, f.to) for f in model.data_flows]
    edges.extend((r.from_, r.to) for r in model.relationships)
    for source_id, target_id in edges:
        source, target = index_of.get(source_id), index_of.get(target_id)
        if source is None or target is None or source == target:
            continue
        if source not in wanted or target not in wanted or (source, target) in seen:
            continue
        seen.add((source, target))
        successors[source].append(target)
        predecessors[target].append(source)
    return successors, predecessors


def _acyclic(nodes: Sequence[int], successors: dict[int, list[int]]) -> dict[int, list[int]]:
    """The successor lists with every back edge of a depth-first search removed."""
    state: dict[int, int] = {}  # 1 on the stack, 2 done
    kept: dict[int, list[int]] = {n: [] for n in nodes}
    for root in nodes:
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            node, next_child = stack[-1]
            children = successors[node]
            if next_child < len(children):
                stack[-1] = (node, next_child + 1)
                child = children[next_child]
                mark = state.get(child)
                if mark == 1:
                    continue  # a back edge closes a cycle: dropped for layering
                kept[node].append(child)
                if mark is None:
                    state[child] = 1
                    stack.append((child, 0))
            else:
                state[node] = 2
                stack.pop()
    return kept


def _layers(nodes: Sequence[int], model: ThreatModel, index_of: dict[str, int]) -> list[list[int]]:
    """Columns of element indices: longest path from the sources of the acyclic flow graph."""
    successors, _predecessors = _adjacency(nodes, model, index_of)
    forward = _acyclic(nodes, successors)
    indegree = dict.fromkeys(nodes, 0)
    for node in nodes:
        for child in forward[node]:
            indegree[child] += 1
    layer_of = dict.fromkeys(nodes, 0)
    ready = [n for n in nodes if indegree[n] == 0]
    head = 0
    while head < len(ready):
        node = ready[head]
        head += 1
        for child in forward[node]:
            layer_of[child] = max(layer_of[child], layer_of[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    count = max(layer_of.values()) + 1
    layers: list[list[int]] = [[] for _ in range(count)]
    for node in nodes:  # document order inside a layer is the starting order
        layers[layer_of[node]].append(node)
    return layers


def _order_layers(
    layers: list[list[int]], model: ThreatModel, index_of: dict[str, int]
) -> list[list[int]]:
    """Barycentre sweeps: each layer sorted by the mean row of its neighbours elsewhere."""
    nodes = [n for layer in layers for n in layer]
    successors, predecessors = _adjacency(nodes, model, index_of)
    layer_of = {n: li for li, layer in enumerate(layers) for n in layer}
    row_of = {n: float(r) for layer in layers for r, n in enumerate(layer)}
    ordered = [list(layer) for layer in layers]
    for sweep in range(_BARYCENTRE_SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, len(ordered)) if downward else range(len(ordered) - 2, -1, -1)
        for li in indices:
            layer = ordered[li]

            def key(node: int, li: int = li, downward: bool = downward) -> tuple[float, float]:
                links = predecessors[node] if downward else successors[node]
                rows = [row_of[n] for n in links if (layer_of[n] < li) == downward]
                if not rows:
                    return row_of[node], row_of[node]
                return sum(rows) / len(rows), row_of[node]

            layer.sort(key=key)
            for r, node in enumerate(layer):
                row_of[node] = float(r)
    return ordered


# ---------------------------------------------------------------------------------------------
# Coordinates


def _place(
    layers: list[list[int]],
    cluster_of: dict[int, int],
    paths: dict[int, tuple[int, ...]],
    origin_x: float,
    origin_y: float,
) -> tuple[dict[int, tuple[float, float]], float]:
    """Top-left corners for every node, and the bottom of the block."""
    total = sum(len(layer) for layer in layers)
    # A model with few flows would otherwise put thousands of elements in one column.
    max_rows = max(8, math.ceil(math.sqrt(total)))
    clusters = sorted({cluster_of[n] for layer in layers for n in layer}, key=lambda c: paths[c])
    # Split each layer into columns: per cluster, chunks of at most `max_rows`.
    columns: list[dict[int, list[int]]] = []
    for layer in layers:
        by_cluster: dict[int, list[int]] = {}
        for node in layer:
            by_cluster.setdefault(cluster_of[node], []).append(node)
        width = max(math.ceil(len(group) / max_rows) for group in by_cluster.values())
        chunks: list[dict[int, list[int]]] = [{} for _ in range(width)]
        for cluster, group in by_cluster.items():
            per_column = math.ceil(len(group) / width)
            for c in range(width):
                part = group[c * per_column : (c + 1) * per_column]
                if part:
                    chunks[c][cluster] = part
        columns.extend(chunks)
    band_rows = {
        c: max((len(column.get(c, ())) for column in columns), default=0) for c in clusters
    }
    positions: dict[int, tuple[float, float]] = {}
    y = origin_y
    previous_path: tuple[int, ...] | None = None
    for cluster in clusters:
        path = paths[cluster]
        # Leave room for the boxes that close or open between two bands: each boundary that
        # ends or starts here needs its padding on both sides.
        if previous_path is not None:
            shared = 0
            while (
                shared < min(len(path), len(previous_path))
                and path[shared] == previous_path[shared]
            ):
                shared += 1
            closing = [b for b in previous_path[shared:] if b != -1]
            opening = [b for b in path[shared:] if b != -1]
            y += ROW_STEP - NODE_HEIGHT + BOUNDARY_PADDING * (len(closing) + len(opening))
        else:
            y += BOUNDARY_PADDING * len([b for b in path if b != -1])
        for c, column in enumerate(columns):
            for r, node in enumerate(column.get(cluster, ())):
                positions[node] = (origin_x + c * COLUMN_STEP, y + r * ROW_STEP)
        y += (band_rows[cluster] - 1) * ROW_STEP + NODE_HEIGHT
        previous_path = path
    if previous_path is not None:
        y += BOUNDARY_PADDING * len([b for b in previous_path if b != -1])
    return positions, y


def _place_boundaries(
    boundaries: list[TrustBoundary],
    to_place: list[int],
    elements: list[Element],
    index_of: dict[str, int],
    depth_of: dict[int, int],
    origin_x: float,
    block_bottom: float,
) -> list[TrustBoundary]:
    """Each unplaced boundary sized around its members; memberless ones in a row at the end."""
    empty_x = origin_x
    empty_y = block_bottom + BLOCK_GAP
    for b in to_place:
        boundary = boundaries[b]
        boxes = [
            (p.x, p.y)
            for m in boundary.contains
            if m in index_of and (p := elements[index_of[m]].position) is not None
        ]
        boxes = [(x, y) for x, y in boxes if math.isfinite(x) and math.isfinite(y)]
        if boxes:
            pad = BOUNDARY_PADDING * (1 + depth_of.get(b, 0))
            left = min(x for x, _ in boxes) - pad
            top = min(y for _, y in boxes) - pad
            right = max(x for x, _ in boxes) + NODE_WIDTH + pad
            bottom = max(y for _, y in boxes) + NODE_HEIGHT + pad
            position, size = Position(x=left, y=top), Size(width=right - left, height=bottom - top)
        else:
            width, height = DEFAULT_BOUNDARY_SIZE
            position, size = Position(x=empty_x, y=empty_y), Size(width=width, height=height)
            empty_x += width + BLOCK_GAP
        update: dict[str, object] = {"position": position}
        if boundary.size is None:
            update["size"] = size
        boundaries[b] = boundary.model_copy(update=update)
    return boundaries
