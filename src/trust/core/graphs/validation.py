"""Structural quality checks of a finished HDAG (paper section 2.1.4, step 5).

`violations` lists every broken rule, each message naming the node or edge; `validate` raises
`GraphValidationError` carrying that whole list, so a caller fixes everything in one pass instead
of one error at a time. The rules:

- the graph is not empty, and holds exactly one goal node;
- every node value is an `HdagNode` stored under its own id, with a known level, difficulty and
  tier, and every edge has a known `EdgeType` (a graph built through `Hdag.add_node` and
  `Hdag.add_edge` always passes these; a graph assembled by hand on `Hdag.graph` or read from
  outside may not);
- the hierarchy constraint of Definition 2.1 holds on every edge: level(source) <= level(target)
  (the builder enforces it, but it is re-checked here so that any graph, however it was made, is
  judged by the same rules);
- the graph is acyclic; each strongly connected component that holds a cycle is reported once,
  with one cycle through it spelled out;
- every node other than the goal has an incoming edge (no orphans), and every node is reachable from
  the goal by following edges forward (a node that has incoming edges but still cannot be reached,
  for example one hanging under an orphan, is reported as unreachable; an orphan is reported only as
  an orphan);
- every leaf (a node with no outgoing edge) sits at step or operation level: a goal, strategy or
  tactic that is never carried out is an unfinished decomposition.

Reachability and leaves count edges of every type. Contradiction edges are not a structural fault:
the paper fails a trace with *unresolved* contradictions at audit time, which is not decided here.
Messages list nodes in insertion order, so the same graph always yields the same list.
"""

from __future__ import annotations

import networkx as nx

from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier
from trust.errors import GraphValidationError

__all__ = ["validate", "violations"]

_LEAF_LEVELS = (Level.STEP, Level.OPERATION)


def _label(level: object) -> str:
    return level.label if isinstance(level, Level) else repr(level)


def _node_values(hdag: Hdag, found: list[str]) -> dict[str, HdagNode]:
    """The well-formed node values by id; a problem with a value itself goes to `found`."""
    values: dict[str, HdagNode] = {}
    for key, data in hdag.graph.nodes(data=True):
        node = data.get("node")
        if not isinstance(node, HdagNode):
            found.append(f"node {key!r}: holds no HdagNode value (got {type(node).__name__})")
            continue
        if node.id != key:
            found.append(f"node {key!r}: its value carries the id {node.id!r}; the two must match")
        if not isinstance(node.level, Level):
            known = ", ".join(level.label for level in Level)
            found.append(f"node {key!r}: unknown level {node.level!r}; expected one of {known}")
        if not isinstance(node.difficulty, Difficulty):
            known = ", ".join(d.value for d in Difficulty)
            found.append(f"node {key!r}: unknown difficulty {node.difficulty!r}; expected one of {known}")
        if not isinstance(node.tier, Tier):
            known = ", ".join(str(int(t)) for t in Tier)
            found.append(f"node {key!r}: unknown tier {node.tier!r}; expected one of {known}")
        values[key] = node
    return values


def _cycles(graph: nx.DiGraph, order: dict[str, int]) -> list[str]:
    found = []
    components = [
        c for c in nx.strongly_connected_components(graph) if len(c) > 1 or any(graph.has_edge(n, n) for n in c)
    ]
    for component in sorted(components, key=lambda c: min(order[n] for n in c)):
        start = min(component, key=order.__getitem__)
        cycle = nx.find_cycle(graph.subgraph(component), source=start)
        path = " -> ".join(repr(source) for source, _ in cycle) + f" -> {cycle[0][0]!r}"
        found.append(f"cycle {path}: an HDAG must be acyclic; remove one of these edges")
    return found


def violations(hdag: Hdag) -> list[str]:
    """Every structural rule `hdag` breaks (see the module docstring); empty when it is valid."""
    graph = hdag.graph
    if graph.number_of_nodes() == 0:
        return ["the HDAG is empty: it needs one goal node and the reasoning below it"]
    found: list[str] = []
    order = {node_id: index for index, node_id in enumerate(graph.nodes)}
    values = _node_values(hdag, found)

    goals = [key for key, node in values.items() if node.level is Level.GOAL]
    if not goals:
        found.append("no goal node: exactly one node must be at goal level (the problem statement)")
    elif len(goals) > 1:
        listed = ", ".join(repr(goal) for goal in goals)
        found.append(f"{len(goals)} goal nodes ({listed}): exactly one is allowed; merge them or demote the others")

    for source, target, data in graph.edges(data=True):
        kind = data.get("type")
        if not isinstance(kind, EdgeType):
            known = ", ".join(edge.value for edge in EdgeType)
            found.append(f"edge {source!r} -> {target!r}: unknown edge type {kind!r}; expected one of {known}")
        upper = values[source].level if source in values else None
        lower = values[target].level if target in values else None
        if isinstance(upper, Level) and isinstance(lower, Level) and upper > lower:
            what = kind.value if isinstance(kind, EdgeType) else repr(kind)
            found.append(
                f"edge {source!r} -> {target!r} ({what}) goes up from {upper.label} to {lower.label}: "
                "the hierarchy constraint needs level(source) <= level(target)"
            )

    found.extend(_cycles(graph, order))

    reachable: set[str] = set()
    for goal in goals:
        reachable |= nx.descendants(graph, goal) | {goal}
    for key in graph.nodes:
        node = values.get(key)
        is_goal = node is not None and node.level is Level.GOAL
        if not is_goal and graph.in_degree(key) == 0:
            found.append(f"node {key!r} ({_label(node.level if node else None)}) is an orphan: no edge leads to it")
        elif goals and key not in reachable:
            found.append(f"node {key!r} ({_label(node.level if node else None)}) is not reachable from the goal")
        if node is not None and graph.out_degree(key) == 0 and node.level not in _LEAF_LEVELS:
            found.append(
                f"node {key!r} ({_label(node.level)}) is a leaf: only step and operation nodes may end the "
                "reasoning; decompose it or remove it"
            )
    return found


def validate(hdag: Hdag) -> None:
    """Raises `GraphValidationError` listing every violation when `hdag` breaks any rule."""
    found = violations(hdag)
    if found:
        raise GraphValidationError(found)
