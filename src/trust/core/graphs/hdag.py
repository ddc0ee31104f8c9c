"""The Hierarchical Directed Acyclic Graph of one model's reasoning trace (paper section 2.1).

An HDAG is G = (V, E, L): reasoning units at one of five abstraction levels, joined by typed edges.
The hierarchy constraint of Definition 2.1 holds for every edge (u, v): level(u) <= level(v), so
information flows downward through the levels; `Hdag.add_edge` refuses an edge that breaks it.

Nodes are frozen values (`HdagNode`); the graph itself is a networkx `DiGraph` keyed by node id, with
each node's value under the attribute `node` and each edge's type under `type`. Structural checks
(acyclic, reachable from the goal, leaves at step or operation level, no orphans) live in
`trust.core.graphs.validation`; tier routing in `trust.core.graphs.routing`; the JSON form in
`trust.core.graphs.serialization`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import networkx as nx

from trust.errors import GraphError

__all__ = [
    "Difficulty",
    "EdgeType",
    "Hdag",
    "HdagEdge",
    "HdagNode",
    "Level",
    "Tier",
    "content_hash",
]


class Level(IntEnum):
    """The five abstraction levels, ordered from the goal down (section 2.1.2)."""

    GOAL = 0
    STRATEGY = 1
    TACTIC = 2
    STEP = 3
    OPERATION = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | int) -> Level:
        """A level from its name ("step") or number (3); `GraphError` naming the value otherwise."""
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                pass
        elif isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        known = ", ".join(level.label for level in cls)
        raise GraphError(f"unknown level {value!r}: expected one of {known}")


class EdgeType(StrEnum):
    """The five edge semantics of section 2.1.3."""

    DECOMPOSES_TO = "decomposes_to"
    DEPENDS_ON = "depends_on"
    ENABLES = "enables"
    VALIDATES = "validates"
    CONTRADICTS = "contradicts"

    @classmethod
    def parse(cls, value: str) -> EdgeType:
        try:
            return cls(value.strip().lower()) if isinstance(value, str) else cls(value)
        except ValueError:
            known = ", ".join(edge.value for edge in cls)
            raise GraphError(f"unknown edge type {value!r}: expected one of {known}") from None


class Difficulty(StrEnum):
    """Difficulty annotation of section 2.1.4 step 2."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"

    @classmethod
    def parse(cls, value: str) -> Difficulty:
        try:
            return cls(value.strip().lower())
        except (ValueError, AttributeError):
            known = ", ".join(d.value for d in cls)
            raise GraphError(f"unknown difficulty {value!r}: expected one of {known}") from None


class Tier(IntEnum):
    """Auditor tiers (section 3.1.1); the numbers are the on-chain tier ids."""

    COMPUTATIONAL = 1
    LLM = 2
    HUMAN = 3


def content_hash(content: str) -> str:
    """SHA-256 of the node's content (UTF-8), hex: identifies the content independently of its id."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class HdagNode:
    """One reasoning unit.

    `expression` is set on operation nodes whose content holds a machine-checkable calculation
    (for example "3 * 4 = 12"), for tier-1 checkers. `stakes` is the consequence severity if the
    node's verification fails ("low", "medium", "high"); `domain` the subject area ("math", "code",
    "medical", "legal", "financial", "general").
    """

    id: str
    level: Level
    content: str
    difficulty: Difficulty = Difficulty.MEDIUM
    domain: str = "general"
    stakes: str = "low"
    tier: Tier = Tier.LLM
    expression: str | None = None

    def __post_init__(self) -> None:
        for name in ("id", "content"):
            try:
                getattr(self, name).encode("utf-8")
            except UnicodeEncodeError as exc:
                raise GraphError(f"node {self.id!r}: {name} is not valid Unicode text ({exc.reason})") from None

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)


@dataclass(frozen=True, slots=True)
class HdagEdge:
    source: str
    target: str
    type: EdgeType


class Hdag:
    """A mutable HDAG under construction; see the module docstring for the invariants it keeps."""

    def __init__(self) -> None:
        self._graph: nx.DiGraph = nx.DiGraph()

    # ------------------------------------------------------------------ building

    def add_node(self, node: HdagNode) -> HdagNode:
        if not node.id:
            raise GraphError("node id is empty")
        if node.id in self._graph:
            raise GraphError(f"duplicate node id {node.id!r}")
        self._graph.add_node(node.id, node=node)
        return node

    def replace_node(self, node: HdagNode) -> None:
        """Replaces the value of an existing node (same id), keeping its edges."""
        if node.id not in self._graph:
            raise GraphError(f"unknown node {node.id!r}")
        self._graph.nodes[node.id]["node"] = node

    def add_edge(self, source: str, target: str, type: EdgeType) -> HdagEdge:
        """Adds a typed edge; refuses unknown ends, self-loops, duplicates and upward edges."""
        for end in (source, target):
            if end not in self._graph:
                raise GraphError(f"edge {source!r} -> {target!r}: unknown node {end!r}")
        if source == target:
            raise GraphError(f"edge {source!r} -> {target!r}: a node cannot point to itself")
        if self._graph.has_edge(source, target):
            raise GraphError(f"edge {source!r} -> {target!r}: already present")
        upper, lower = self.node(source).level, self.node(target).level
        if upper > lower:
            raise GraphError(
                f"edge {source!r} -> {target!r} ({type.value}) goes up from {upper.label} to {lower.label}: "
                "the hierarchy constraint needs level(source) <= level(target)"
            )
        self._graph.add_edge(source, target, type=type)
        return HdagEdge(source, target, type)

    # ------------------------------------------------------------------ reading

    def node(self, node_id: str) -> HdagNode:
        try:
            node: HdagNode = self._graph.nodes[node_id]["node"]
        except KeyError:
            raise GraphError(f"unknown node {node_id!r}") from None
        return node

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._graph

    def __len__(self) -> int:
        return self._graph.number_of_nodes()

    def nodes(self) -> Iterator[HdagNode]:
        """Nodes in insertion order."""
        for node_id in self._graph.nodes:
            yield self._graph.nodes[node_id]["node"]

    def edges(self) -> Iterator[HdagEdge]:
        """Edges in insertion order."""
        for source, target, data in self._graph.edges(data=True):
            yield HdagEdge(source, target, data["type"])

    def edge_type(self, source: str, target: str) -> EdgeType | None:
        data = self._graph.get_edge_data(source, target)
        return None if data is None else data["type"]

    def parents(self, node_id: str) -> list[str]:
        self.node(node_id)
        return list(self._graph.predecessors(node_id))

    def children(self, node_id: str) -> list[str]:
        self.node(node_id)
        return list(self._graph.successors(node_id))

    def goals(self) -> list[str]:
        return [node.id for node in self.nodes() if node.level is Level.GOAL]

    @property
    def graph(self) -> nx.DiGraph:
        """The underlying networkx graph (read it; change the HDAG through its methods)."""
        return self._graph
