"""A session's graph as the explorer draws it: the chain's segments, placed by the graph's shape.

`session_graph(segments, shape, ...)` turns what the index read (each segment's tier, weight, flags
and state) and, when a shape source knew it, the graph's skeleton (`trust.api.explorer.shapes`) into nodes
and edges for `trust.api.explorer.graph_svg`, and renders them:

- with a shape: every node of the HDAG or CIG, levels top to bottom (longest path), edges styled by
  type (HDAG: decomposes_to, depends_on, enables, validates, contradicts; CIG: reference, sequence,
  overlap), each node filled by its segment's state (passed, failed, undetermined, voting, awaiting
  draw; "not audited" for a context-only node), root causes and cascades marked (Table 1 statuses
  from `shapes.node_statuses`, computed from the segments decided so far; an undetermined node was
  never judged and carries no mark);
- without one: the segments alone, in segment order on a grid, filled the same way, no edges (the
  chain holds none) and no marks (they need the edges).

Every segment node links to its segment page. A graph of more than `MAX_DRAWN_NODES` nodes is not
drawn (the page shows counts and the segments table): past a few hundred boxes a drawing is no
longer read, only scrolled.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trust.api.explorer.graph_svg import (
    EdgeStyle,
    Fill,
    GraphEdge,
    GraphNode,
    Mark,
    grid_layout,
    layout,
    legend_svg,
    render_svg,
)
from trust.api.explorer.shapes import GraphShape, ShapeKind, ShapeNode, node_statuses
from trust.api.index import SegmentState, SegmentSummary
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

__all__ = [
    "CIG_EDGE_STYLES",
    "HDAG_EDGE_STYLES",
    "MAX_DRAWN_NODES",
    "GraphLink",
    "NodePlace",
    "SessionGraph",
    "node_place",
    "session_graph",
]

MAX_DRAWN_NODES = 400
GRID_COLUMNS = 8
"""Segments per row when the edges are unknown (fits the page's 1,200 px)."""

HDAG_EDGE_STYLES: dict[str, EdgeStyle] = {
    "decomposes_to": EdgeStyle("decomposes to", "#5b6577"),
    "depends_on": EdgeStyle("depends on", "#2446a6", "7 4"),
    "enables": EdgeStyle("enables", "#0f766e", "2 4", 2.0),
    "validates": EdgeStyle("validates", "#17663a", "10 3 2 3"),
    "contradicts": EdgeStyle("contradicts", "#a3261b", "4 3", 2.4),
}
"""The five edge semantics of the paper's section 2.1.3, told apart by dash pattern and colour."""

CIG_EDGE_STYLES: dict[str, EdgeStyle] = {
    "reference": EdgeStyle("replies to (named in the log)", "#2446a6"),
    "sequence": EdgeStyle("follows (no reference)", "#5b6577", "7 4"),
    "overlap": EdgeStyle("reuses content of", "#0f766e", "2 4", 2.0),
}
"""How a CIG edge was established (`trust.core.graphs.cig.EdgeOrigin`)."""

_FILLS = {
    SegmentState.PASSED: Fill.PASSED,
    SegmentState.FAILED: Fill.FAILED,
    SegmentState.UNDETERMINED: Fill.UNDETERMINED,
    SegmentState.VOTING: Fill.VOTING,
    SegmentState.AWAITING_DRAW: Fill.AWAITING,
}
_MARKS = {
    NodeStatus.INVALID_ROOT: Mark.ROOT_CAUSE,
    NodeStatus.NEGLIGENT: Mark.NEGLIGENT,
    NodeStatus.INVALID_CASCADE: Mark.CASCADE,
}
_MARK_WORDS = {
    Mark.ROOT_CAUSE: "root cause: its own audit did not pass",
    Mark.NEGLIGENT: "negligent: approved invalid input it had the means to catch",
    Mark.CASCADE: "cascade: depends on a node that did not pass",
}


@dataclass(frozen=True, slots=True)
class GraphLink:
    """A neighbour of a node on its segment page: its label, link (None for a context-only node)
    and the edge's type as words."""

    label: str
    href: str | None
    relation: str


@dataclass(frozen=True, slots=True)
class NodePlace:
    """Where a segment sits in its session's graph (known only with a shape)."""

    node_id: str
    kind: str
    agent: str
    mark: Mark | None
    parents: tuple[GraphLink, ...]
    children: tuple[GraphLink, ...]


@dataclass(frozen=True, slots=True)
class SessionGraph:
    """What the session page shows of the graph. `svg` is None when the graph is too large to draw;
    `drawn_from` is "shape" or "chain"; `note` says where the shape came from or why there is none;
    `fills` and `marks` count nodes per fill and per mark; `root_causes` link the nodes marked root
    cause or negligent."""

    svg: str | None
    legend: str
    drawn_from: str
    note: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    fills: dict[str, int]
    marks: dict[str, int]
    root_causes: tuple[GraphLink, ...]


def _in_state(shape: GraphShape, segments: Sequence[SegmentSummary], state: SegmentState) -> set[str]:
    by_segment = shape.by_segment()
    return {by_segment[s.segment_id].node_id for s in segments if s.state is state and s.segment_id in by_segment}


def _marks(shape: GraphShape, segments: Sequence[SegmentSummary]) -> dict[str, Mark]:
    """Marks from the segments decided so far: failed ones are judged; undetermined ones are not
    (their fill says so) and neither start a cascade nor make a reviewer negligent."""
    failed = _in_state(shape, segments, SegmentState.FAILED)
    undetermined = _in_state(shape, segments, SegmentState.UNDETERMINED)
    statuses = node_statuses(shape, failed, undetermined)
    return {node_id: _MARKS[status] for node_id, status in statuses.items() if status in _MARKS}


def _tier_text(segment: SegmentSummary) -> str:
    if segment.current_tier != segment.tier:
        return f"T{segment.tier}→{segment.current_tier}"
    return f"T{segment.tier}"


def _tooltip(segment: SegmentSummary, node: ShapeNode | None, mark: Mark | None) -> str:
    what = f"segment {segment.segment_id}"
    if node is not None:
        what += f" ({node.node_id}, {node.kind}{', ' + node.agent if node.agent else ''})"
    rounds = f"{segment.rounds} round{'' if segment.rounds == 1 else 's'}"
    parts = [f"{what}: {segment.state.value} after {rounds}", f"tier {segment.tier}"]
    if segment.current_tier != segment.tier:
        parts[-1] += f", escalated to tier {segment.current_tier}"
    parts.append(f"weight {segment.weight}")
    if segment.critical:
        parts.append("on the critical path")
    if segment.contradiction:
        parts.append("contradiction segment")
    if mark is not None:
        parts.append(_MARK_WORDS[mark])
    return " · ".join(parts)


def _flags(segment: SegmentSummary) -> str:
    return ("★" if segment.critical else "") + ("⚡" if segment.contradiction else "")


def session_graph(
    segments: Sequence[SegmentSummary],
    shape: GraphShape | None,
    *,
    note: str,
    href: Callable[[int], str],
    title: str,
) -> SessionGraph:
    """The drawing of a session (see the module docstring). `shape` must already match the chain
    (`shapes.mismatch`); `href(segment_id)` is a segment's page. A shape that cannot be judged (not
    a well-formed HDAG or CIG) is drawn without marks, and `note` says why."""
    by_id = {s.segment_id: s for s in segments}
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    root_causes: list[GraphLink] = []
    if shape is None:
        for s in segments:
            sub = f"{_tier_text(s)} · w{s.weight} {_flags(s)}".rstrip()
            nodes.append(
                GraphNode(f"s{s.segment_id}", f"segment {s.segment_id}", sub, _FILLS[s.state], None,
                          href(s.segment_id), _tooltip(s, None, None))
            )  # fmt: skip
        styles: dict[str, EdgeStyle] = {}
        drawn_from = "chain"
    else:
        styles = HDAG_EDGE_STYLES if shape.kind is ShapeKind.HDAG else CIG_EDGE_STYLES
        try:
            marks = _marks(shape, segments)
        except GraphError as exc:
            marks = {}
            note += f" Root causes are not marked: {exc}"
        # Element ids come from segment numbers, never from the provider's node ids (any text).
        keys = {n.node_id: (f"s{n.leaf}" if n.registered else f"c{n.leaf}") for n in shape.nodes}
        for node in sorted(shape.nodes, key=lambda n: n.step):
            mark = marks.get(node.node_id)
            segment = by_id.get(node.leaf) if node.registered else None
            if segment is None:
                tooltip = f"{node.node_id} ({node.kind}): not audited, context for the nodes below it"
                nodes.append(GraphNode(keys[node.node_id], node.node_id, f"context · {node.kind}", Fill.NOT_AUDITED,
                                       mark, None, tooltip))  # fmt: skip
                continue
            sub = f"#{segment.segment_id} · {node.kind} · {_tier_text(segment)} {_flags(segment)}".rstrip()
            nodes.append(
                GraphNode(keys[node.node_id], node.node_id, sub, _FILLS[segment.state], mark, href(segment.segment_id),
                          _tooltip(segment, node, mark))
            )  # fmt: skip
            if mark in (Mark.ROOT_CAUSE, Mark.NEGLIGENT):
                root_causes.append(GraphLink(node.node_id, href(segment.segment_id), mark.value))
        edges = [GraphEdge(keys[e.source], keys[e.target], e.type) for e in shape.edges if e.type in styles]
        drawn_from = "shape"
    fills = Counter(n.fill.value for n in nodes)
    mark_counts = Counter(n.mark.value for n in nodes if n.mark is not None)
    legend = legend_svg(
        styles,
        list(Fill) if shape is not None else [f for f in Fill if f is not Fill.NOT_AUDITED],
        list(Mark) if shape is not None else [],
    )
    svg = None
    if len(nodes) <= MAX_DRAWN_NODES:
        placed = layout(nodes, edges) if shape is not None else grid_layout(nodes, GRID_COLUMNS)
        svg = render_svg(nodes, edges, styles, placed, title=title)
    return SessionGraph(
        svg, legend, drawn_from, note, tuple(nodes), tuple(edges), dict(fills), dict(mark_counts), tuple(root_causes)
    )


def node_place(
    segments: Sequence[SegmentSummary], shape: GraphShape, segment_id: int, href: Callable[[int], str]
) -> NodePlace | None:
    """The node of `segment_id` in `shape`, with its parents and children as links; None when the
    shape has no node on that segment."""
    node = shape.by_segment().get(segment_id)
    if node is None:
        return None
    styles = HDAG_EDGE_STYLES if shape.kind is ShapeKind.HDAG else CIG_EDGE_STYLES
    by_id = {n.node_id: n for n in shape.nodes}
    try:
        mark = _marks(shape, segments).get(node.node_id)
    except GraphError:
        mark = None

    def link(other: str, edge_type: str) -> GraphLink:
        peer = by_id[other]
        label = f"{peer.node_id} (segment {peer.leaf})" if peer.registered else f"{peer.node_id} (context)"
        words = styles[edge_type].label if edge_type in styles else edge_type
        return GraphLink(label, href(peer.leaf) if peer.registered else None, words)

    return NodePlace(
        node.node_id,
        node.kind,
        node.agent,
        mark,
        tuple(link(e.source, e.type) for e in shape.parents(node.node_id)),
        tuple(link(e.target, e.type) for e in shape.children(node.node_id)),
    )
