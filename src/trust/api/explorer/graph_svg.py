"""A layered drawing of a directed acyclic graph as SVG, computed on the server (no script).

The explorer draws a session's HDAG or CIG with it; this module knows nothing of sessions: it takes
nodes (a key, two lines of text, a fill, an optional mark, a link) and typed edges, and returns
positions and SVG text. Pure functions over frozen values, deterministic: the same graph gives the
same bytes.

The layout is Sugiyama's, in its simplest sound form:

1. Layers by longest path from the sources (`layers_by_longest_path`): every edge points down, and
   a node sits one layer below its deepest parent. An HDAG's goal is on top; a CIG's first turn.
   A layer holds at most `MAX_LAYER_NODES` nodes (`bounded_layers`): the rest of a wide level moves
   to the rows below, so a big graph grows downwards, where a page scrolls, instead of sideways.
2. An edge that spans several layers gets a virtual point in each layer it passes (`routes` keep
   them), so that ordering sees it and it bends around nodes instead of crossing them. Beyond
   `MAX_VIRTUAL_POINTS` (very long edges in a big CIG) long edges are drawn straight instead.
3. Order within layers by the barycentre heuristic (`order_layers`): sweeps down then up, each layer
   sorted by the mean position of its neighbours in the layer before, ties kept in their order; the
   order with the fewest crossings seen is kept (`count_crossings`, exact, by inversions).
4. Coordinates (`layout`): each layer's order packed left to right, then a few passes that pull
   each node towards the mean of its neighbours while keeping the order and the minimum gaps (an
   isotonic fit, pool-adjacent-violators), so parents sit above their children. A bend takes
   `VIRTUAL_WIDTH`, so bundles of long edges stay narrow.

Nodes never overlap: two nodes of one layer are at least `NODE_WIDTH + NODE_GAP` apart (centres),
a node and a bend `NODE_WIDTH / 2 + VIRTUAL_WIDTH / 2 + NODE_GAP`, layers `LAYER_PITCH`. A graph
whose edges are unknown is laid out as a grid instead (`grid_layout`).

The SVG uses presentation attributes only (no `style` attribute and no stylesheet of its own), so a
page's Content-Security-Policy that forbids inline styles does not strip it; every text is escaped.
Each node is an `<a href>` (the explorer links it to its segment page) with a `<title>` tooltip.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from trust.errors import GraphError

__all__ = [
    "FILL_STYLES",
    "LAYER_PITCH",
    "MARK_STYLES",
    "MAX_LAYER_NODES",
    "MAX_VIRTUAL_POINTS",
    "NODE_GAP",
    "NODE_HEIGHT",
    "NODE_WIDTH",
    "EdgeStyle",
    "Fill",
    "GraphEdge",
    "GraphNode",
    "Layout",
    "Mark",
    "bounded_layers",
    "count_crossings",
    "grid_layout",
    "layers_by_longest_path",
    "layout",
    "legend_svg",
    "order_layers",
    "render_svg",
]

NODE_WIDTH = 118
NODE_HEIGHT = 42
NODE_GAP = 26
"""Horizontal space between two nodes of one layer (pixels)."""
LAYER_PITCH = 104
"""Vertical distance between two layers' centres: a node, room for a mark's tag above the next
layer's nodes, and for edges to bend."""
MARGIN = 24
VIRTUAL_WIDTH = 10.0
"""Room a long edge takes where it passes a layer (pixels): its bend, not a node."""
TAG_HEIGHT = 14
"""Room above a node for its mark's tag ("root cause")."""
SWEEPS = 8
"""Barycentre passes (each down then up); the crossings rarely drop after four."""
COORDINATE_PASSES = 6
MAX_LAYER_NODES = 8
"""Nodes in one layer at most (8 x 144 pixels: the page's width); a wider level continues below."""
MAX_VIRTUAL_POINTS = 4_000
"""Virtual points (for edges that span layers) beyond which long edges are drawn straight: a CIG
of a thousand turns where each refers to the first would otherwise need half a million."""
LABEL_CHARS = 16
"""Characters of a node's first line; longer labels end in "…" (the whole text is in its title)."""

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


class Fill(enum.StrEnum):
    """What a node's fill says: how its segment stands on chain."""

    PASSED = "passed"
    FAILED = "failed"
    UNDETERMINED = "undetermined"
    VOTING = "voting"
    AWAITING = "awaiting draw"
    NOT_AUDITED = "not audited"


class Mark(enum.StrEnum):
    """What the outline and the tag above a node say (Algorithm 1's statuses, Table 1)."""

    ROOT_CAUSE = "root cause"
    NEGLIGENT = "negligent"
    CASCADE = "cascade"


@dataclass(frozen=True, slots=True)
class _Paint:
    fill: str
    stroke: str
    dash: str
    text: str


FILL_STYLES: Mapping[Fill, _Paint] = {
    Fill.PASSED: _Paint("#d9f0e0", "#17663a", "", "#0f3d22"),
    Fill.FAILED: _Paint("#f8d7d3", "#a3261b", "", "#5c130d"),
    Fill.UNDETERMINED: _Paint("#e9e0f5", "#6b3fa0", "", "#3b1f5e"),
    Fill.VOTING: _Paint("#fdf0cf", "#8a5a00", "", "#4d3200"),
    Fill.AWAITING: _Paint("#fffaf0", "#b08a3e", "5 3", "#4d3200"),
    Fill.NOT_AUDITED: _Paint("#eceff4", "#8b93a3", "3 3", "#3a4150"),
}
"""Fill, outline, outline dash and text colour per fill (readable on white, told apart without colour
by the legend's words and the outlines' dashes)."""


@dataclass(frozen=True, slots=True)
class _MarkPaint:
    stroke: str
    width: float
    dash: str


MARK_STYLES: Mapping[Mark, _MarkPaint] = {
    Mark.ROOT_CAUSE: _MarkPaint("#7a0d05", 4.0, ""),
    Mark.NEGLIGENT: _MarkPaint("#5b2a86", 4.0, ""),
    Mark.CASCADE: _MarkPaint("#c2570c", 3.0, "7 4"),
}


@dataclass(frozen=True, slots=True)
class EdgeStyle:
    """How one edge type is drawn: colour and dash pattern (SVG `stroke-dasharray`, "" solid)."""

    label: str
    colour: str
    dash: str = ""
    width: float = 1.6


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One node to draw. `key` is unique in the graph (and part of the element id `node-<key>`);
    `label` is the first line, `sublabel` the second; `tooltip` the full description (`<title>`);
    `href` the page the node links to (None: not a link)."""

    key: str
    label: str
    sublabel: str
    fill: Fill
    mark: Mark | None = None
    href: str | None = None
    tooltip: str = ""


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """A directed edge, drawn from `source` (above) to `target` (below) in the style `style`."""

    source: str
    target: str
    style: str


@dataclass(frozen=True, slots=True)
class Layout:
    """Where everything goes. `centres` are node centres in pixels; `layers` the keys of each layer
    in drawing order (a long edge's virtual points included: keys that start with a NUL character,
    which no node key holds); `routes` the bend points of each edge between its two ends (empty for
    an edge between adjacent layers); `slots` the centre of every entry of `layers`, virtual points
    included; `width` and `height` the drawing's size in pixels; `crossings` the edge crossings of
    the chosen order (0 for a grid)."""

    centres: Mapping[str, tuple[float, float]]
    layers: tuple[tuple[str, ...], ...]
    slots: Mapping[str, tuple[float, float]]
    routes: Mapping[tuple[str, str], tuple[tuple[float, float], ...]]
    width: int
    height: int
    crossings: int


# ---------------------------------------------------------------------------------------- layering


def layers_by_longest_path(keys: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each node's layer: 0 for a node without parents, else one more than its deepest parent.

    Kahn's order, so O(V + E). Raises `GraphError` naming the nodes left on a cycle, and for an edge
    whose end is not among `keys` (both are a malformed graph, never drawn half).
    """
    known = set(keys)
    children: dict[str, list[str]] = defaultdict(list)
    indegree = dict.fromkeys(keys, 0)
    for source, target in edges:
        for end in (source, target):
            if end not in known:
                raise GraphError(f"edge {source!r} -> {target!r} names {end!r}, which is not a node of the graph")
        children[source].append(target)
        indegree[target] += 1
    layer = dict.fromkeys(keys, 0)
    ready = [key for key in keys if indegree[key] == 0]
    done = 0
    while ready:
        key = ready.pop()
        done += 1
        for child in children[key]:
            layer[child] = max(layer[child], layer[key] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    if done != len(keys):
        stuck = sorted(key for key, count in indegree.items() if count > 0)
        raise GraphError(f"the graph has a cycle through {', '.join(map(repr, stuck[:8]))}: it cannot be layered")
    return layer


def bounded_layers(
    keys: Sequence[str], edges: Iterable[tuple[str, str]], width: int = MAX_LAYER_NODES
) -> dict[str, int]:
    """Layers of at most `width` nodes with every edge still pointing down: nodes in order of their
    longest-path layer (parents first), each put in the first layer below all its parents that has
    room. A graph whose layers all fit keeps its longest-path layers; a wide level continues on the
    rows below it (readable by scrolling down, where a 10,000-pixel row is not). Raises
    `GraphError` as `layers_by_longest_path`."""
    if width < 1:
        raise ValueError(f"a layer holds at least one node, not {width}")
    pairs = list(edges)
    longest = layers_by_longest_path(keys, pairs)
    parents: dict[str, list[str]] = defaultdict(list)
    for source, target in pairs:
        parents[target].append(source)
    position = {key: i for i, key in enumerate(keys)}
    filled: dict[int, int] = defaultdict(int)
    layer: dict[str, int] = {}
    for key in sorted(keys, key=lambda k: (longest[k], position[k])):
        depth = max((layer[p] + 1 for p in parents[key]), default=0)
        while filled[depth] >= width:
            depth += 1
        layer[key] = depth
        filled[depth] += 1
    return layer


def _virtual(source: str, target: str, layer: int) -> str:
    # NUL cannot appear in a node key the explorer makes, so a virtual point never collides with one.
    return f"\0{source}\0{target}\0{layer}"


def _expand(
    keys: Sequence[str], edges: Sequence[tuple[str, str]], layer: Mapping[str, int], with_virtual: bool
) -> tuple[list[list[str]], list[tuple[str, str]], dict[tuple[str, str], list[str]]]:
    """Layers of keys (in input order), the edges between adjacent layers, and each long edge's chain
    of virtual points."""
    depth = max(layer.values(), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for key in keys:
        layers[layer[key]].append(key)
    short: list[tuple[str, str]] = []
    chains: dict[tuple[str, str], list[str]] = {}
    for source, target in edges:
        top, bottom = layer[source], layer[target]
        if bottom - top <= 1 or not with_virtual:
            short.append((source, target))
            continue
        chain = [_virtual(source, target, level) for level in range(top + 1, bottom)]
        for level, point in zip(range(top + 1, bottom), chain, strict=True):
            layers[level].append(point)
        ends = [source, *chain, target]
        short.extend(zip(ends, ends[1:], strict=False))
        chains[(source, target)] = chain
    return layers, short, chains


# ---------------------------------------------------------------------------------------- ordering


def _inversions(values: list[int]) -> int:
    """Pairs i < j with values[i] > values[j], by merge sort: O(n log n)."""
    if len(values) < 2:
        return 0
    middle = len(values) // 2
    left, right = values[:middle], values[middle:]
    count = _inversions(left) + _inversions(right)
    left.sort()
    right.sort()
    i = 0
    for value in right:
        while i < len(left) and left[i] <= value:
            i += 1
        count += len(left) - i
    return count


def count_crossings(layers: Sequence[Sequence[str]], edges: Iterable[tuple[str, str]]) -> int:
    """Edge crossings between adjacent layers in this order (edges between adjacent layers only):
    two edges cross when their ends are in opposite orders. Exact; O(E log E) per layer pair."""
    position = {key: (depth, index) for depth, layer in enumerate(layers) for index, key in enumerate(layer)}
    between: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for source, target in edges:
        (top, i), (bottom, j) = position[source], position[target]
        if bottom == top + 1:
            between[top].append((i, j))
    total = 0
    for pairs in between.values():
        pairs.sort()
        total += _inversions([j for _, j in pairs])
    return total


def order_layers(
    layers: Sequence[Sequence[str]], edges: Sequence[tuple[str, str]], sweeps: int = SWEEPS
) -> list[list[str]]:
    """Orders each layer by the barycentre heuristic and returns the order with the fewest crossings
    seen (the input order first, so ordering never makes a drawing worse). Deterministic: sorting is
    stable and a node without neighbours on the side looked at keeps its position."""
    current = [list(layer) for layer in layers]
    ups: dict[str, list[str]] = defaultdict(list)
    downs: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        downs[source].append(target)
        ups[target].append(source)
    best = [list(layer) for layer in current]
    fewest = count_crossings(best, edges)
    for _ in range(sweeps):
        if fewest == 0:
            break
        for depth in range(1, len(current)):
            _sort_by_barycentre(current[depth], current[depth - 1], ups)
        for depth in range(len(current) - 2, -1, -1):
            _sort_by_barycentre(current[depth], current[depth + 1], downs)
        crossings = count_crossings(current, edges)
        if crossings < fewest:
            fewest, best = crossings, [list(layer) for layer in current]
    return best


def _sort_by_barycentre(layer: list[str], reference: Sequence[str], neighbours: Mapping[str, list[str]]) -> None:
    index = {key: i for i, key in enumerate(reference)}
    keys = []
    for position, key in enumerate(layer):
        linked = [index[n] for n in neighbours.get(key, ()) if n in index]
        keys.append((sum(linked) / len(linked) if linked else float(position), position))
    order = sorted(range(len(layer)), key=lambda i: keys[i])
    layer[:] = [layer[i] for i in order]


# ---------------------------------------------------------------------------------------- coordinates


def _isotonic(desired: Sequence[float], gaps: Sequence[float]) -> list[float]:
    """Positions x_0 < x_1 < ... with x_{i+1} - x_i >= gaps[i], as close as possible (least
    squares) to `desired`: pool-adjacent-violators on y_i = desired_i - offset_i, where offset_i is
    the sum of the first i gaps, then back."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks: list[list[float]] = []  # [mean, count]
    for value, offset in zip(desired, offsets, strict=False):
        blocks.append([value - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1][0] = (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count)
            blocks[-1][1] += count
    fitted = [mean for mean, count in blocks for _ in range(int(count))]
    return [y + offset for y, offset in zip(fitted, offsets, strict=False)]


def _width(key: str) -> float:
    return VIRTUAL_WIDTH if key.startswith("\0") else float(NODE_WIDTH)


def _gaps(layer: Sequence[str]) -> list[float]:
    """The least distance between neighbouring centres: half of each one's width, and a gap
    (narrow between two edges' bends, so that bundles of long edges stay compact)."""
    gaps = []
    for left, right in itertools.pairwise(layer):
        both_virtual = left.startswith("\0") and right.startswith("\0")
        gaps.append((_width(left) + _width(right)) / 2 + (VIRTUAL_WIDTH if both_virtual else NODE_GAP))
    return gaps


def _coordinates(layers: Sequence[Sequence[str]], edges: Sequence[tuple[str, str]]) -> dict[str, float]:
    spans = [sum(_gaps(layer)) for layer in layers]
    widest = max(spans, default=0.0)
    x: dict[str, float] = {}
    for layer, span in zip(layers, spans, strict=True):
        if not layer:
            continue
        position = (widest - span) / 2  # centre each layer under the widest one
        x[layer[0]] = position
        for key, gap in zip(layer[1:], _gaps(layer), strict=True):
            position += gap
            x[key] = position
    ups: dict[str, list[str]] = defaultdict(list)
    downs: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        downs[source].append(target)
        ups[target].append(source)
    for _ in range(COORDINATE_PASSES):
        for depths, neighbours in ((range(1, len(layers)), ups), (range(len(layers) - 2, -1, -1), downs)):
            for depth in depths:
                layer = layers[depth]
                desired = [
                    sum(x[n] for n in neighbours[key]) / len(neighbours[key]) if neighbours.get(key) else x[key]
                    for key in layer
                ]
                for key, value in zip(layer, _isotonic(desired, _gaps(layer)), strict=True):
                    x[key] = value
    return x


def layout(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> Layout:
    """The layered layout of the module docstring. Raises `GraphError` for a cycle or an edge to an
    unknown node. Duplicate edges are drawn once."""
    keys = [node.key for node in nodes]
    if len(set(keys)) != len(keys):
        raise GraphError("two nodes share a key: each node of a drawing needs its own")
    pairs = list(dict.fromkeys((e.source, e.target) for e in edges))
    layer = bounded_layers(keys, pairs)
    span = sum(max(layer[t] - layer[s] - 1, 0) for s, t in pairs)
    layers, short, chains = _expand(keys, pairs, layer, with_virtual=span <= MAX_VIRTUAL_POINTS)
    ordered = order_layers(layers, short)
    crossings = count_crossings(ordered, short)
    x = _coordinates(ordered, short)
    left = min(x.values(), default=0.0)
    right = max(x.values(), default=0.0)
    offset = MARGIN + NODE_WIDTH / 2 - left
    top = MARGIN + TAG_HEIGHT + NODE_HEIGHT / 2
    centres_all = {
        key: (x[key] + offset, top + depth * LAYER_PITCH) for depth, row in enumerate(ordered) for key in row
    }
    centres = {key: centres_all[key] for key in keys}
    routes = {pair: tuple(centres_all[p] for p in chains.get(pair, ())) for pair in pairs}
    width = int(right - left + NODE_WIDTH + 2 * MARGIN)
    height = int(2 * MARGIN + TAG_HEIGHT + NODE_HEIGHT + (len(ordered) - 1) * LAYER_PITCH)
    return Layout(centres, tuple(tuple(row) for row in ordered), centres_all, routes, width, height, crossings)


def grid_layout(nodes: Sequence[GraphNode], columns: int) -> Layout:
    """Nodes in their given order, `columns` to a row: for a graph whose edges are not known."""
    if columns < 1:
        raise ValueError(f"a grid needs at least one column, not {columns}")
    pitch_x, pitch_y = NODE_WIDTH + NODE_GAP, NODE_HEIGHT + TAG_HEIGHT + NODE_GAP
    centres = {
        node.key: (
            MARGIN + NODE_WIDTH / 2 + (i % columns) * pitch_x,
            MARGIN + TAG_HEIGHT + NODE_HEIGHT / 2 + (i // columns) * pitch_y,
        )
        for i, node in enumerate(nodes)
    }
    rows = -(-len(nodes) // columns)
    used = min(len(nodes), columns)
    layers = tuple(tuple(n.key for n in nodes[r * columns : (r + 1) * columns]) for r in range(rows))
    width = int(2 * MARGIN + max(used, 1) * pitch_x - NODE_GAP)
    height = int(2 * MARGIN + max(rows, 1) * pitch_y - NODE_GAP)
    return Layout(centres, layers, centres, {}, width, height, 0)


# ---------------------------------------------------------------------------------------- SVG


def _n(value: float) -> str:
    """A coordinate with at most one decimal and no trailing ".0" (smaller, stable output)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _attrs(**values: object) -> str:
    parts = []
    for name, value in values.items():
        if value is None or value == "":
            continue
        parts.append(f"{name.rstrip('_').replace('_', '-')}={quoteattr(str(value))}")
    return " ".join(parts)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _marker_id(style: str) -> str:
    return "arrow-" + "".join(c if c.isalnum() else "-" for c in style)


def _edge_path(
    start: tuple[float, float], bends: Sequence[tuple[float, float]], end: tuple[float, float], inset: float
) -> str:
    """From the bottom of the source through the bends to the top of the target; the line stops
    `inset` pixels above the target's box (its mark's outline) so the arrowhead sits on it."""
    points = [(start[0], start[1] + NODE_HEIGHT / 2), *bends, (end[0], end[1] - NODE_HEIGHT / 2 - inset)]
    return "M" + " L".join(f"{_n(px)} {_n(py)}" for px, py in points)


def render_svg(
    nodes: Sequence[GraphNode],
    edges: Sequence[GraphEdge],
    styles: Mapping[str, EdgeStyle],
    placed: Layout,
    *,
    title: str,
    element_id: str = "graph",
) -> str:
    """The drawing as one `<svg>` element (to inline in a page): edges under nodes, each node an
    `<a href>` with id `node-<key>`, its fill, its mark (outline and a tag above it) and a tooltip.
    Raises `GraphError` for an edge whose style is not in `styles`."""
    out = [
        f"<svg {_attrs(xmlns='http://www.w3.org/2000/svg', id=element_id, width=placed.width, height=placed.height)}"
        f" {_attrs(viewBox=f'0 0 {placed.width} {placed.height}', role='img', aria_labelledby=element_id + '-title')}"
        f" {_attrs(font_family=_FONT, font_size=12)}>",
        f"<title id={quoteattr(element_id + '-title')}>{escape(title)}</title>",
        "<defs>",
    ]
    used = sorted({edge.style for edge in edges})
    for name in used:
        if name not in styles:
            raise GraphError(f"edge style {name!r} is not one of {', '.join(sorted(styles))}")
        colour = styles[name].colour
        out.append(
            f"<marker {_attrs(id=_marker_id(name), viewBox='0 0 10 10', refX=9, refY=5, markerWidth=7, markerHeight=7)}"
            f' orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill={quoteattr(colour)}/></marker>'
        )
    out.append("</defs>")
    out.append('<g class="edges" fill="none">')
    names = {node.key: node.label for node in nodes}
    insets = {node.key: 2 + (_mark_pad(node.mark) if node.mark else 0) for node in nodes}
    for edge in edges:
        style = styles[edge.style]
        path = _edge_path(
            placed.centres[edge.source],
            placed.routes.get((edge.source, edge.target), ()),
            placed.centres[edge.target],
            insets[edge.target],
        )
        attrs = _attrs(
            d=path,
            stroke=style.colour,
            stroke_width=style.width,
            stroke_dasharray=style.dash,
            marker_end=f"url(#{_marker_id(edge.style)})",
            data_edge=f"{edge.source}->{edge.target}",
            data_style=edge.style,
        )
        words = f"{names.get(edge.source, edge.source)} → {names.get(edge.target, edge.target)}: {style.label}"
        out.append(f"<path {attrs}><title>{escape(words)}</title></path>")
    out.append("</g>")
    out.append('<g class="nodes">')
    for node in nodes:
        out.append(_node_svg(node, placed.centres[node.key]))
    out.append("</g></svg>")
    return "".join(out)


def _mark_pad(mark: Mark) -> float:
    """How far a mark's outline stands off its node's box (pixels)."""
    return MARK_STYLES[mark].width / 2 + 2


def _node_svg(node: GraphNode, centre: tuple[float, float]) -> str:
    paint = FILL_STYLES[node.fill]
    cx, cy = centre
    left, top = cx - NODE_WIDTH / 2, cy - NODE_HEIGHT / 2
    parts = [f"<title>{escape(node.tooltip or node.label)}</title>"]
    if node.mark is not None:
        mark = MARK_STYLES[node.mark]
        pad = _mark_pad(node.mark)
        parts.append(
            f"<rect {_attrs(x=_n(left - pad), y=_n(top - pad), width=_n(NODE_WIDTH + 2 * pad))}"
            f" {_attrs(height=_n(NODE_HEIGHT + 2 * pad), rx=9, fill='none', stroke=mark.stroke)}"
            f" {_attrs(stroke_width=mark.width, stroke_dasharray=mark.dash, data_mark=node.mark.value)}/>"
        )
        # A white halo (the stroke painted under the fill) keeps the tag legible over an edge.
        parts.append(
            f"<text {_attrs(x=_n(left - pad), y=_n(top - pad - 3), fill=mark.stroke, font_size=10.5)}"
            f' font-weight="700" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
            f"{escape(node.mark.value)}</text>"
        )
    parts.append(
        f"<rect {_attrs(x=_n(left), y=_n(top), width=NODE_WIDTH, height=NODE_HEIGHT, rx=6, fill=paint.fill)}"
        f" {_attrs(stroke=paint.stroke, stroke_width=1.5, stroke_dasharray=paint.dash, data_fill=node.fill.value)}/>"
    )
    parts.append(
        f'<text {_attrs(x=_n(cx), y=_n(cy - 4), text_anchor="middle", fill=paint.text)} font-weight="600">'
        f"{escape(_clip(node.label, LABEL_CHARS))}</text>"
    )
    parts.append(
        f"<text {_attrs(x=_n(cx), y=_n(cy + 12), text_anchor='middle', fill=paint.text, font_size=10.5)}>"
        f"{escape(_clip(node.sublabel, LABEL_CHARS + 4))}</text>"
    )
    group = "".join(parts)
    label = escape(node.tooltip or node.label)
    if node.href is None:
        return f"<g {_attrs(id=f'node-{node.key}', aria_label=label)}>{group}</g>"
    return f"<a {_attrs(id=f'node-{node.key}', href=node.href, aria_label=label)}>{group}</a>"


def legend_svg(
    styles: Mapping[str, EdgeStyle], fills: Sequence[Fill], marks: Sequence[Mark], *, element_id: str = "legend"
) -> str:
    """A legend: one swatch per fill, one outline per mark, one line per edge style, in rows that
    wrap at 760 pixels (the width of a narrow page)."""
    items: list[tuple[float, str]] = []  # (width, svg at origin)
    for fill in fills:
        paint = FILL_STYLES[fill]
        swatch = (
            f"<rect {_attrs(x=0, y=2, width=22, height=14, rx=3, fill=paint.fill, stroke=paint.stroke)}"
            f" {_attrs(stroke_dasharray=paint.dash)}/>"
        )
        items.append(_legend_item(swatch, fill.value))
    for mark in marks:
        outline = MARK_STYLES[mark]
        swatch = (
            f"<rect {_attrs(x=1, y=2, width=20, height=14, rx=3, fill='#ffffff', stroke=outline.stroke)}"
            f" {_attrs(stroke_width=outline.width / 1.5, stroke_dasharray=outline.dash)}/>"
        )
        items.append(_legend_item(swatch, mark.value))
    for name, style in styles.items():
        line = (
            f"<line {_attrs(x1=0, y1=9, x2=30, y2=9, stroke=style.colour, stroke_width=style.width + 0.4)}"
            f" {_attrs(stroke_dasharray=style.dash, data_style=name)}/>"
        )
        items.append(_legend_item(line, style.label, swatch_width=30))
    row_width, row_height, gap = 760.0, 22, 18.0
    out: list[str] = []
    x = y = 0.0
    for width, svg in items:
        if x > 0 and x + width > row_width:
            x, y = 0.0, y + row_height
        out.append(f'<g transform="translate({_n(x)} {_n(y)})">{svg}</g>')
        x += width + gap
    height = int(y + row_height)
    return (
        f"<svg {_attrs(xmlns='http://www.w3.org/2000/svg', id=element_id, width=int(row_width), height=height)}"
        f" {_attrs(viewBox=f'0 0 {int(row_width)} {height}', role='img', aria_label='legend')}"
        f" {_attrs(font_family=_FONT, font_size=12)}>{''.join(out)}</svg>"
    )


def _legend_item(swatch: str, text: str, swatch_width: float = 22) -> tuple[float, str]:
    # About 6.6 px per character at 12 px: enough room that a label never runs into the next item.
    width = swatch_width + 6 + 6.6 * len(text)
    label = f"<text {_attrs(x=_n(swatch_width + 6), y=14, fill='#1d2330')}>{escape(text)}</text>"
    return width, swatch + label
