"""Reading a valid HDAG: its critical path and the dependency-aware cascade of failures (section 2.1.3).

Edge direction. An edge (u, v) always points the way information flows, downward (Definition 2.1):
`u decomposes_to v` (v refines u), `u depends_on v` (v uses u's result: the paper's "v4 depends_on
v5", where v5 applies the formula to the du and v that v4 computed), `u enables v` (u gives v context
without a strict logical requirement), `u validates v` (v is a checker that audits u, as in "let me
verify this"), `u contradicts v` (a flagged inconsistency).

Final answer. The paper calls the critical path "the path from the goal to the final answer" without
saying which node is the answer. Unless the caller names it, `final_answer` takes it to be, among
the nodes reachable from the goal through the dependency-carrying edges (`PATH_EDGES`: decomposes_to,
depends_on, enables), those with no outgoing dependency-carrying edge (the ends of the reasoning), the
one at the deepest level, and among those the last in insertion order (a decomposition emits nodes in
trace order, and the answer is written last). Checkers reached only through a validates edge (the
paper's v10) are not candidates: they check the answer, they are not it.

Critical path. Among the paths from the goal to the answer through dependency-carrying edges, the
longest (most nodes): the longest chain of work the answer rests on, as in the critical path of a
schedule. Ties are broken toward the predecessor that comes first in insertion order, so the result
is deterministic.

Cascade. The paper: "if a parent node fails validation, all dependent children are automatically
marked as Invalid_Cascade rather than being evaluated independently". The failure travels along
`CASCADE_EDGES` by default: depends_on (the child uses the parent's result) and decomposes_to (the
child carries out the parent's plan; a wrong strategy makes its tactics wrong work, and the paper
speaks of parents and children, which is this edge's vocabulary). It does not travel along enables
("without imposing a strict logical requirement"), validates (a checker of a failed node must still
be audited: it either caught the fault or is negligent), or contradicts. The cascade is transitive.
A node that failed its own audit but lies downstream of another failed node is Invalid_Cascade, not
Invalid_Root, as in Algorithm 1: its failure is inherited.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable

import networkx as nx

from trust.core.graphs.hdag import EdgeType, Hdag
from trust.core.graphs.status import NodeStatus
from trust.core.graphs.validation import validate
from trust.errors import GraphError

__all__ = [
    "CASCADE_EDGES",
    "PATH_EDGES",
    "cascade",
    "critical_path",
    "final_answer",
    "nodes_to_audit",
    "topological_order",
]

PATH_EDGES: frozenset[EdgeType] = frozenset({EdgeType.DECOMPOSES_TO, EdgeType.DEPENDS_ON, EdgeType.ENABLES})
"""The dependency-carrying edges the critical path follows."""

CASCADE_EDGES: frozenset[EdgeType] = frozenset({EdgeType.DEPENDS_ON, EdgeType.DECOMPOSES_TO})
"""The edges a failure cascades along by default."""


def _order(hdag: Hdag) -> dict[str, int]:
    return {node_id: index for index, node_id in enumerate(hdag.graph.nodes)}


def _along(hdag: Hdag, types: Collection[EdgeType]) -> nx.DiGraph:
    graph = hdag.graph
    return nx.subgraph_view(graph, filter_edge=lambda u, v: graph.edges[u, v]["type"] in types)


def _known(hdag: Hdag, ids: Iterable[str], what: str) -> set[str]:
    chosen = set(ids)
    unknown = sorted(repr(node_id) for node_id in chosen if node_id not in hdag)
    if unknown:
        raise GraphError(f"{what}: unknown node(s) {', '.join(unknown)}; name nodes of this HDAG")
    return chosen


def topological_order(hdag: Hdag) -> list[str]:
    """Node ids with every node after all its parents; ties go by insertion order (deterministic)."""
    order = _order(hdag)
    try:
        return list(nx.lexicographical_topological_sort(hdag.graph, key=order.__getitem__))
    except nx.NetworkXUnfeasible:
        raise GraphError("the HDAG has a cycle, so it has no topological order; run validate() to see it") from None


def final_answer(hdag: Hdag) -> str:
    """The final answer node as defined in the module docstring; the HDAG must be valid."""
    validate(hdag)
    goal = hdag.goals()[0]
    along = _along(hdag, PATH_EDGES)
    order = _order(hdag)
    reached = nx.descendants(along, goal) | {goal}
    ends = [node_id for node_id in reached if along.out_degree(node_id) == 0]
    return max(ends, key=lambda node_id: (hdag.node(node_id).level, order[node_id]))


def critical_path(hdag: Hdag, *, answer: str | None = None) -> list[str]:
    """The longest goal-to-answer path through `PATH_EDGES`, goal first (see the module docstring).

    `answer` names the final answer node when the caller knows it; by default `final_answer(hdag)`.
    Raises `GraphValidationError` for an invalid HDAG, `GraphError` for an unknown or unreachable answer.
    """
    validate(hdag)
    goal = hdag.goals()[0]
    along = _along(hdag, PATH_EDGES)
    order = _order(hdag)
    if answer is None:
        answer = final_answer(hdag)
    else:
        _known(hdag, [answer], "answer")
    reached = nx.descendants(along, goal) | {goal}
    if answer not in reached:
        kinds = ", ".join(sorted(edge.value for edge in PATH_EDGES))
        raise GraphError(f"answer {answer!r} is not reachable from the goal {goal!r} through {kinds} edges")

    on_way = (nx.ancestors(along, answer) | {answer}) & reached
    length: dict[str, int] = {goal: 1}
    before: dict[str, str] = {}
    for node_id in topological_order(hdag):
        if node_id not in on_way or node_id == goal:
            continue
        parents = [p for p in along.predecessors(node_id) if p in length]
        best = max(parents, key=lambda p: (length[p], -order[p]))
        length[node_id], before[node_id] = length[best] + 1, best
    path = [answer]
    while path[-1] != goal:
        path.append(before[path[-1]])
    return path[::-1]


def _cascaded(hdag: Hdag, failed: set[str], through: Collection[EdgeType]) -> set[str]:
    along = _along(hdag, through)
    seen: set[str] = set()
    queue = deque(child for node_id in failed for child in along.successors(node_id))
    while queue:
        node_id = queue.popleft()
        if node_id not in seen:
            seen.add(node_id)
            queue.extend(along.successors(node_id))
    return seen


def cascade(
    hdag: Hdag,
    failed: Iterable[str],
    *,
    through: Collection[EdgeType] = CASCADE_EDGES,
) -> dict[str, NodeStatus]:
    """The statuses the failures in `failed` decide, in topological order.

    `failed` holds the nodes that failed their own audit. Each failed node with no failed node
    upstream (through `through` edges) is `INVALID_ROOT`; every node downstream of a failed node is
    `INVALID_CASCADE`, whether or not it was audited. Nodes absent from the result are not affected:
    their status comes from their own audit. Raises `GraphError` for unknown ids.
    """
    validate(hdag)
    roots = _known(hdag, failed, "failed")
    downstream = _cascaded(hdag, roots, frozenset(through))
    statuses: dict[str, NodeStatus] = {}
    for node_id in topological_order(hdag):
        if node_id in downstream:
            statuses[node_id] = NodeStatus.INVALID_CASCADE
        elif node_id in roots:
            statuses[node_id] = NodeStatus.INVALID_ROOT
    return statuses


def nodes_to_audit(
    hdag: Hdag,
    failed: Iterable[str],
    *,
    through: Collection[EdgeType] = CASCADE_EDGES,
) -> list[str]:
    """The nodes whose status still comes from their own audit, in topological order.

    That is every node that is neither in `failed` nor downstream of it: the cascade settles the
    rest without spending an auditor on them.
    """
    decided = cascade(hdag, failed, through=through)
    return [node_id for node_id in topological_order(hdag) if node_id not in decided]
