"""The prune-freeze-repair loop (paper 2.3) over the network: `TrustClient.refine`.

The loop itself is `trust.services.refine.refine`, the same one the offline tools run: it plans the repair on
the audited graph, re-executes the failed nodes and their descendants through the caller's
`regenerate` callback, and asks for an audit of exactly those nodes. Here that audit is a new
session on chain (`ReauditRound`): the regenerated nodes are its only segments, and every other
node of the graph travels with it as context only (sealed, uploaded and committed to by the trace
root, handed to the seats whose nodes depend on it, but neither voted on nor paid for). Frozen nodes
therefore keep their Valid status without a second audit, and the number of segments of each
re-audit session is the number of nodes re-audited.

The loop is synchronous and may call a blocking model; it runs in a worker thread while the event
loop that owns the chain and IPFS connections drives each re-audit session
(`asyncio.run_coroutine_threadsafe`).

Findings. A node's finding comes from its last audit: a failed segment is `Invalid_Root` with the
failing seats' critiques, error type and expected value; a node that passed but depends on a failed
one is `Invalid_Cascade` (`trust.services.sdk.outcome`); a context-only node (a CIG user or tool turn) is
Valid, since nobody judges it. An undetermined node (nobody could decide it) is reported as
`Undetermined`, but the loop has no state for "not judged": it goes in as `Invalid_Root`, with
feedback saying that no committee decided it, so that it is re-run and audited again rather than
left unjudged in a trace the loop would call repaired.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin
from trust.core.graphs.hdag import Hdag, HdagNode
from trust.core.graphs.refinement import AuditFinding, ErrorType
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError
from trust.services.refine import RefinementResult
from trust.services.sdk.result import AuditResult, Verdict

__all__ = ["NetworkRefinement", "ReauditRound", "findings_of", "rebuild_graph"]

_ERROR_TYPES = {error.value for error in ErrorType}


def findings_of(result: AuditResult, nodes: frozenset[str] | None = None) -> dict[str, AuditFinding]:
    """The loop's findings for `nodes` (default: every node of the result's graph) from one audit.

    A node the audit did not cover (context only) is Valid.
    """
    wanted = frozenset(result.graph.graph.nodes) if nodes is None else nodes
    findings: dict[str, AuditFinding] = {}
    for node_id in wanted:
        node = result.nodes.get(node_id)
        if node is None:
            findings[node_id] = AuditFinding(NodeStatus.VALID, "context only: not audited")
            continue
        failing = [c for c in node.critiques if c.vote == "fail"] or list(node.critiques)
        first = failing[0] if failing else None
        error = first.error_type if first is not None and first.error_type in _ERROR_TYPES else None
        if node.status is NodeStatus.UNDETERMINED:
            findings[node_id] = AuditFinding(
                NodeStatus.INVALID_ROOT,
                critique=f"no committee could decide this step ({node.reason or 'undetermined'})",
                error_type=ErrorType(error) if error is not None else None,
                expected=first.expected if first is not None else None,
            )
            continue
        findings[node_id] = AuditFinding(
            node.status,
            critique=first.critique if first is not None else f"segment {node.outcome}",
            error_type=ErrorType(error) if error is not None else None,
            expected=first.expected if first is not None else None,
        )
    return findings


def rebuild_graph(original: Hdag | Cig, work: nx.DiGraph) -> Hdag | Cig:
    """`original`'s structure with the node values of the loop's working graph `work` (the
    regenerated nodes carry their new outputs; the structure never changes)."""
    if isinstance(original, Hdag):
        rebuilt = Hdag()
        for node in original.nodes():
            value = work.nodes[node.id].get("node")
            if not isinstance(value, HdagNode):
                raise GraphError(f"node {node.id!r} of the refined graph holds no HdagNode")
            rebuilt.add_node(value)
        for edge in original.edges():
            rebuilt.add_edge(edge.source, edge.target, edge.type)
        return rebuilt
    cig = Cig()
    for turn in original.turns():
        value = work.nodes[turn.id].get("node")
        if not isinstance(value, AgentTurn):
            raise GraphError(f"turn {turn.id!r} of the refined graph holds no AgentTurn")
        cig.add_turn(value)
    for source, target, data in original.graph.edges(data=True):
        cig.add_edge(source, target, data.get("origin", EdgeOrigin.REFERENCE))
    return cig


Reaudit = Callable[[Hdag | Cig, frozenset[str]], Coroutine[Any, Any, AuditResult]]


@dataclass
class ReauditRound:
    """The loop's `Audit`: each call audits `nodes` in a new session (the rest as context) on
    `loop`, from the loop's worker thread, and keeps the session's result."""

    original: Hdag | Cig
    reaudit: Reaudit
    loop: asyncio.AbstractEventLoop
    audits: list[AuditResult] = field(default_factory=list)

    def __call__(
        self, graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]
    ) -> Mapping[str, AuditFinding]:
        del known  # frozen nodes are Valid, and the new session reads their content as context
        if not nodes:
            return {}
        candidate = rebuild_graph(self.original, graph)
        future = asyncio.run_coroutine_threadsafe(self.reaudit(candidate, nodes), self.loop)
        result = future.result()
        self.audits.append(result)
        return findings_of(result, nodes)


@dataclass(frozen=True, slots=True)
class NetworkRefinement:
    """What `TrustClient.refine` returns: the loop's record, the refined graph and every re-audit."""

    loop: RefinementResult
    graph: Hdag | Cig
    audits: tuple[AuditResult, ...]
    """One `AuditResult` per re-audit session, in order; each covers only the regenerated nodes."""

    @property
    def valid(self) -> bool:
        return self.loop.all_valid

    @property
    def verdict(self) -> Verdict:
        return Verdict.VALID if self.valid else Verdict.INVALID

    @property
    def statuses(self) -> Mapping[str, NodeStatus]:
        return self.loop.statuses

    @property
    def reaudited(self) -> tuple[int, ...]:
        """Segments (nodes) audited in each re-audit session."""
        return tuple(len(audit.nodes) for audit in self.audits)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": str(self.verdict),
            "statuses": {node: str(status) for node, status in self.statuses.items()},
            "reaudited": list(self.reaudited),
            "sessions": [audit.session_id for audit in self.audits],
            "loop": self.loop.summary(),
        }
