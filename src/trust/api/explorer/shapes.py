"""The shape of a session's graph (nodes, levels, edges), where the explorer may know it.

The chain holds a session's segments (tier, weight, flags, content digest, verdicts) and the trace's
Merkle root, and nothing of the graph: node ids and the edges between them stay with the provider
and the seats that need them (docs/privacy.md). So the explorer draws a session's HDAG or CIG only
when a *shape source* gives it the skeleton, and otherwise draws the segments alone.

A `GraphShape` is the graph without its content: node ids, each node's leaf in the trace's tree, its
HDAG level or CIG role (and agent), the typed edges, and the segments as the provider registered
them. `shape_of(graph, stored)` builds it in the process that holds the graph. Sources:

- `JournalShapes(directory)`: the provider's own session journal (`<home>/provider`, written by the
  SDK before each session opens; `trust.services.sdk.journal`). For an explorer that the provider runs for
  itself (`trust demo`, a local explorer next to `trust submit`): the record is read, its content
  dropped, and the shape kept.
- `StaticShapes`: shapes handed over in process (a program that audits and serves its own results).

A shape is shown only when it matches the chain: the journal's record is found by the session's
trace root and its tree must rebuild that root, and `mismatch` checks each registered segment's
digest, tier, weight and critical flag against the chain. The edges are the provider's word: the
root commits to the leaves, not to the edges between them.

Statuses (Table 1) from the chain's verdicts and the shape, by the rules the SDK applies to the
provider's result (`trust.services.sdk.outcome`): an HDAG node whose segment failed is a root cause
(`Invalid_Root`), a node below one through depends_on or decomposes_to edges is `Invalid_Cascade`
(`trust.core.graphs.analysis.cascade`); a CIG goes through Algorithm 1 (`trust.core.graphs.localize.localize`)
with a turn's score 0 when its segment failed and 1 otherwise, and reviewers flagged "rejects its
input" when the provider's log says so. A node whose segment ended undetermined was never judged:
it has no Table 1 status, is no root cause and starts no cascade (it still counts as not passed in
the trace's verdict, which the chain decides).
"""

from __future__ import annotations

import enum
import json
import os
import threading
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from trust.adapters.chain.types import SegmentSpec
from trust.core.graphs.analysis import cascade
from trust.core.graphs.audit import EdgeScore, rejects
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role
from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level
from trust.core.graphs.localize import localize
from trust.core.graphs.status import NodeStatus
from trust.errors import ConfigError, GraphError, TrustError
from trust.services.delivery import StoredTrace
from trust.services.sdk.journal import SessionRecord

__all__ = [
    "GraphShape",
    "JournalShapes",
    "RegisteredSegment",
    "ShapeEdge",
    "ShapeKind",
    "ShapeNode",
    "ShapeSource",
    "StaticShapes",
    "mismatch",
    "node_statuses",
    "shape_of",
]


class ShapeKind(enum.StrEnum):
    HDAG = "hdag"
    CIG = "cig"


@dataclass(frozen=True, slots=True)
class ShapeNode:
    """One node without its content. `leaf` is its index in the trace's Merkle tree: the segment id
    when `registered`, else a context-only node (delivered to seats as a parent, never voted on).
    `kind` is the HDAG level ("goal", "step", ...) or the CIG role ("coder", "user", ...); `agent`
    the CIG turn's agent ("" in an HDAG); `step` the order nodes were added in (a CIG turn's step);
    `rejects_input` whether a CIG reviewer's output flags its input as wrong (Algorithm 1)."""

    node_id: str
    leaf: int
    registered: bool
    kind: str
    agent: str = ""
    step: int = 0
    rejects_input: bool = False


@dataclass(frozen=True, slots=True)
class ShapeEdge:
    """A typed edge: an HDAG `EdgeType` value or a CIG `EdgeOrigin` value."""

    source: str
    target: str
    type: str


@dataclass(frozen=True, slots=True)
class GraphShape:
    """A graph's skeleton, bound to its trace root and to the segments registered for it."""

    kind: ShapeKind
    trace_root: bytes
    nodes: tuple[ShapeNode, ...]
    edges: tuple[ShapeEdge, ...]
    specs: tuple[SegmentSpec, ...]

    def by_segment(self) -> dict[int, ShapeNode]:
        """Registered nodes by segment id."""
        return {node.leaf: node for node in self.nodes if node.registered}

    def parents(self, node_id: str) -> list[ShapeEdge]:
        return [edge for edge in self.edges if edge.target == node_id]

    def children(self, node_id: str) -> list[ShapeEdge]:
        return [edge for edge in self.edges if edge.source == node_id]


def shape_of(graph: Hdag | Cig, stored: StoredTrace) -> GraphShape:
    """The skeleton of `graph` as `stored` (its sealed segments) placed it in the trace's tree.
    Raises `GraphError` when a node of the graph has no segment in `stored`."""
    leaves = {key.node_id: (key.segment_index, key.proof is None) for key in stored.all_segments}

    def leaf(node_id: str) -> tuple[int, bool]:
        try:
            return leaves[node_id]
        except KeyError:
            raise GraphError(f"node {node_id!r} of the graph has no segment in the stored trace") from None

    nodes: list[ShapeNode] = []
    edges: list[ShapeEdge]
    if isinstance(graph, Hdag):
        for order, node in enumerate(graph.nodes()):
            index, registered = leaf(node.id)
            nodes.append(ShapeNode(node.id, index, registered, node.level.label, step=order))
        edges = [ShapeEdge(e.source, e.target, e.type.value) for e in graph.edges()]
        kind = ShapeKind.HDAG
    else:
        for turn in graph.turns():
            index, registered = leaf(turn.id)
            flagged = turn.role is Role.REVIEWER and rejects(turn.output)
            nodes.append(ShapeNode(turn.id, index, registered, turn.role.value, turn.agent, turn.step, flagged))
        edges = [ShapeEdge(e.source, e.target, e.origin.value) for e in graph.edges()]
        kind = ShapeKind.CIG
    return GraphShape(kind, stored.root, tuple(nodes), tuple(edges), tuple(stored.specs()))


class RegisteredSegment(Protocol):
    """A segment as the chain registered it (`SegmentSpec`, the index's `SegmentSummary`)."""

    @property
    def content_digest(self) -> bytes: ...
    @property
    def tier(self) -> int: ...
    @property
    def weight(self) -> int: ...
    @property
    def critical(self) -> bool: ...


def mismatch(shape: GraphShape, registered: Sequence[RegisteredSegment]) -> str | None:
    """Why `shape` is not the graph of a session whose segments are `registered` (as on chain, in
    segment order), or None when every segment agrees (digest, tier, weight, critical flag)."""
    if len(shape.specs) != len(registered):
        return f"the provider's record has {len(shape.specs)} segments, the chain {len(registered)}"
    for index, (mine, theirs) in enumerate(zip(shape.specs, registered, strict=True)):
        for field in ("content_digest", "tier", "weight", "critical"):
            if getattr(mine, field) != getattr(theirs, field):
                return (
                    f"segment {index}'s {field.replace('_', ' ')} differs between the provider's record and the chain"
                )
    return None


def node_statuses(shape: GraphShape, failed: Set[str], undetermined: Set[str] = frozenset()) -> dict[str, NodeStatus]:
    """Each judged node's status (Table 1) given the nodes whose segments failed and those that
    ended undetermined (see the module docstring); undetermined nodes are left out. Raises
    `GraphError` for a shape that is not a well-formed HDAG or CIG."""
    nodes = sorted(shape.nodes, key=lambda n: n.step)
    unknown = (failed | undetermined) - {n.node_id for n in nodes}
    if unknown:
        raise GraphError(f"nodes {sorted(unknown)!r} are not in the graph")
    statuses = _statuses(shape, nodes, set(failed))
    return {node_id: status for node_id, status in statuses.items() if node_id not in undetermined}


def _statuses(shape: GraphShape, nodes: Sequence[ShapeNode], failed: set[str]) -> dict[str, NodeStatus]:
    if shape.kind is ShapeKind.HDAG:
        hdag = Hdag()
        for node in nodes:
            hdag.add_node(HdagNode(node.node_id, Level.parse(node.kind), ""))
        for edge in shape.edges:
            hdag.add_edge(edge.source, edge.target, EdgeType.parse(edge.type))
        statuses = {node.node_id: NodeStatus.VALID for node in nodes}
        statuses.update(cascade(hdag, failed))
        statuses.update(dict.fromkeys(failed, NodeStatus.INVALID_ROOT))
        return statuses
    cig = Cig()
    for node in nodes:
        cig.add_turn(AgentTurn(node.node_id, node.step, node.agent, Role.parse(node.kind), ""))
    for edge in shape.edges:
        cig.add_edge(edge.source, edge.target, EdgeOrigin(edge.type))
    scores = {node.node_id: 0.0 if node.node_id in failed else 1.0 for node in nodes}
    edge_scores = {(edge.source, edge.target): EdgeScore() for edge in shape.edges}
    rejecting = frozenset(node.node_id for node in nodes if node.rejects_input)
    # Scores are exactly 0 or 1, so any threshold in (0, 1] decides the same (as trust.services.sdk.outcome).
    found = localize(cig, scores, edge_scores, tau_node=1.0, tau_edge=1.0, rejecting=rejecting)
    return dict(found.statuses)


# ---------------------------------------------------------------------------------------- sources


class ShapeSource(Protocol):
    """Where the explorer asks for a session's shape, by chain and trace root. Returns None when it
    knows none; raises a `TrustError` whose message the page shows when it holds a broken one.
    Called from a worker thread (it may read files)."""

    def shape(self, chain_id: int, trace_root: bytes) -> GraphShape | None: ...


class StaticShapes:
    """Shapes given in process, by (chain id, trace root)."""

    def __init__(self, shapes: Mapping[tuple[int, bytes], GraphShape]) -> None:
        self._shapes = dict(shapes)

    def shape(self, chain_id: int, trace_root: bytes) -> GraphShape | None:
        return self._shapes.get((chain_id, bytes(trace_root)))


class JournalShapes:
    """Shapes read from a provider's session journal (`<directory>/chain-<id>/<root hex>.json`).

    A record holds the segment keys and the whole trace; only its skeleton is kept. Shapes are cached
    per file and re-read when the file changes (its mtime); a missing file is looked up again at the
    next request (the session may be the provider's next one).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._cache: dict[Path, tuple[int, GraphShape]] = {}
        self._lock = threading.Lock()

    def shape(self, chain_id: int, trace_root: bytes) -> GraphShape | None:
        path = self.directory / f"chain-{chain_id}" / f"{bytes(trace_root).hex()}.json"
        try:
            stamp = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read the provider's session record {path}: {exc.strerror or exc}") from exc
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        shape = self._read(path, bytes(trace_root))
        with self._lock:
            self._cache[path] = (stamp, shape)
        return shape

    @staticmethod
    def _read(path: Path, trace_root: bytes) -> GraphShape:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            record = SessionRecord.from_json(data)
        except OSError as exc:
            raise ConfigError(f"cannot read the provider's session record {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"the provider's session record {path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from exc
        except TrustError as exc:
            raise ConfigError(f"the provider's session record {path} is unreadable: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the provider's session record {path} lacks or mangles a field: {exc!r}") from exc
        if record.stored.root != trace_root:
            raise ConfigError(
                f"the provider's session record {path} rebuilds the trace root 0x{record.stored.root.hex()}, "
                f"not the session's 0x{trace_root.hex()}: the record was altered"
            )
        return shape_of(record.graph, record.stored)
