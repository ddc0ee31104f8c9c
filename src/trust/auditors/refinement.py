"""The audits of the refinement loop (`trust.services.refine.Audit`): which nodes of a regenerated
graph failed, and how. Both judge nodes, so they live with the auditors.

- `CigAuditorAudit`: the network's auditors over a CIG (the dual-layer audit) and Algorithm 1;
- `HdagExpressionAudit`: a tier-1 audit of HDAGs, the exact check of each operation's `expression`,
  with the dependency-aware cascade of section 2.1.3.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx

from trust.auditors.base import Auditor
from trust.auditors.graph import audit_cig
from trust.auditors.tiers import computational_auditor
from trust.core.decompose.rules import extract_operations
from trust.core.graphs.analysis import CASCADE_EDGES
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin
from trust.core.graphs.hdag import EdgeType, HdagNode
from trust.core.graphs.localize import RootReason, localize
from trust.core.graphs.refinement import VALUE_ATTRIBUTES, AuditFinding, ErrorType
from trust.core.graphs.status import NodeStatus
from trust.core.maths.arithmetic import ExpressionCheck, check_expression
from trust.errors import GraphError
from trust.settings import Settings

__all__ = ["CigAuditorAudit", "HdagExpressionAudit"]


def _turn(graph: nx.DiGraph, node_id: str) -> AgentTurn:
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        value = data.get(attribute)
        if isinstance(value, AgentTurn):
            return value
    raise GraphError(f"node {node_id!r} holds no agent turn: CigAuditorAudit audits CIGs only")


def _sub_cig(graph: nx.DiGraph, nodes: frozenset[str]) -> tuple[Cig, frozenset[str]]:
    """The CIG of `nodes` and their parents (the boundary), with every edge into `nodes`."""
    boundary = frozenset(p for node in nodes for p in graph.predecessors(node) if p not in nodes)
    turns = {node: _turn(graph, node) for node in nodes | boundary}
    members = sorted(turns, key=lambda node: turns[node].step)
    cig = Cig()
    for node in members:
        cig.add_turn(turns[node])
    for node in members:
        if node in nodes:
            for parent in sorted(graph.predecessors(node), key=lambda p: turns[p].step):
                cig.add_edge(parent, node, graph.edges[parent, node].get("origin", EdgeOrigin.REFERENCE))
    return cig, boundary


@dataclass(frozen=True, slots=True)
class CigAuditorAudit:
    """The dual-layer audit by the network's auditors and Algorithm 1 (`trust.auditors.graph.audit_cig`,
    `trust.core.graphs.localize`) as an `Audit` of the refinement loop (`trust.services.refine`), for
    CIG graphs (`Cig.graph`: each node holds an `AgentTurn`).

    Re-auditing a subgraph asks the auditors about its turns and the edges into them only. Its
    parents outside the subgraph (the boundary) keep the status the loop knows: a Valid boundary
    parent counts as Valid, any other as failed, which is all Algorithm 1 reads of a parent.

    A finding's `expected` is the structured value the auditors computed (`Verdict.expected`,
    combined in `NodeAudit.expected`), never read back out of critique text.

    The loop is synchronous, so each call runs the audit on its own event loop (`asyncio.run`): give
    it auditors that hold no connection bound to another loop (tier 1, `tiers.computational_auditor`;
    a tier-2 auditor's client belongs to the loop that opened it). Call it from a thread with no
    running loop, as the SDK does (`asyncio.to_thread`).
    """

    auditors: tuple[Auditor, ...]
    tau_node: float
    tau_edge: float

    @classmethod
    def tier1(cls, settings: Settings) -> CigAuditorAudit:
        """The tier-1 auditor of `settings`, as a worker builds it, with the thresholds of `settings.audit`."""
        return cls(
            (computational_auditor(settings.worker.sandbox),),
            tau_node=settings.audit.tau_node,
            tau_edge=settings.audit.tau_edge,
        )

    def __call__(
        self, graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]
    ) -> Mapping[str, AuditFinding]:
        cig, boundary = _sub_cig(graph, nodes)
        audit = asyncio.run(audit_cig(cig, self.auditors, nodes=nodes))
        scores = audit.node_scores()
        for node in boundary:
            status = known.get(node)
            if status is None:
                raise GraphError(f"node {node!r} is a parent of the audited subgraph but has no known status")
            scores[node] = 1.0 if status is NodeStatus.VALID else 0.0
        located = localize(
            cig,
            scores,
            audit.edge_scores(),
            tau_node=self.tau_node,
            tau_edge=self.tau_edge,
            rejecting=audit.rejecting() - boundary,
        )
        causes = {cause.node_id: cause for cause in located.root_causes}
        findings: dict[str, AuditFinding] = {}
        for node in nodes:
            status = located.statuses[node]
            notes = list(audit.nodes[node].critique)
            notes.extend(f for (_, target), edge in audit.edges.items() if target == node for f in edge.findings)
            critique = "; ".join(notes)
            cause = causes.get(node)
            error_type: ErrorType | None = None
            if cause is not None and cause.reason is RootReason.EDGE_FAILURE:
                error_type = ErrorType.PROTOCOL
            elif cause is not None and cause.reason is RootReason.APPROVED_INVALID:
                error_type = ErrorType.NEGLIGENCE
                invalid = ", ".join(cause.parents)
                critique = f"approved invalid work from {invalid}" + (f"; {critique}" if critique else "")
            findings[node] = AuditFinding(status, critique, error_type, audit.nodes[node].expected)
        return findings


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


def _correct_value(expression: str, check: ExpressionCheck) -> Fraction | None:
    """The exact value a failed calculation should have stated: the left side of "a op b == c", or
    the a of "abs(a - c) <= t" (a result the trace rounded, as `trust.core.decompose.rules` writes it);
    None for any other shape."""
    if "abs(" not in expression:
        return check.left if "==" in expression else None
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.LtE)):
        return None
    call = tree.left
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "abs"):
        return None
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.BinOp):
        return None
    difference = call.args[0]
    if not isinstance(difference.op, ast.Sub):
        return None
    return check_expression(f"{ast.unparse(difference.left)} == {ast.unparse(difference.right)}").left


def _states(value: object, expression: str) -> bool:
    """Whether an HDAG node's own content states the calculation `expression` (the decomposer
    extracted it from that text, or would)."""
    if not isinstance(value, HdagNode):
        return False
    return any(operation.expression == expression for operation in extract_operations(value.content))


@dataclass(frozen=True, slots=True)
class HdagExpressionAudit:
    """A tier-1 `Audit` of HDAG graphs (`Hdag.graph`): every node with a checkable `expression`
    (operations from `trust.core.decompose.rules`) is evaluated exactly
    (`trust.core.maths.arithmetic.check_expression`); one that does not hold failed its own audit.
    Statuses then follow the dependency-aware cascade of section 2.1.3 as `trust.core.graphs.analysis`
    defines it: a node downstream of a failed node through `through` edges (depends_on and
    decomposes_to by default) is Invalid_Cascade, a failed node with no failed node upstream is
    Invalid_Root, the rest are Valid. Nodes without an expression (or whose expression cannot be
    evaluated) are not judged: this audit checks calculations only, the tier-2 and tier-3 levels
    need other auditors. Outside the audited nodes, `known` statuses other than Valid count as
    failed. A finding's `expected` is the exact value the calculation should have stated (the left
    side of "a op b == c", the a of a rounded "abs(a - c) <= t"); the critique quotes it too.

    The repair unit (decision where the paper is vague). The decomposer extracts an operation from
    the text of the step it hangs under (decomposes_to), and the steps after it depend on that step,
    not on the operation. Pruning only the failed operation would leave the step stating the wrong
    number and its dependents built on it. So a failed operation whose calculation its
    decomposes_to parent states in its own content (`extract_operations(parent.content)` yields the
    same expression) makes that parent the failed node, climbing while the next parent states it
    too: the step is Invalid_Root, with the operation's critique and `expected` (the first failed
    calculation of the step, in graph order), and the operation is Invalid_Cascade. `plan_repair`
    then prunes the step, its operations and every depends_on descendant; they are regenerated and
    re-audited. A parent that does not state the calculation (a hand-built HDAG whose step only
    describes its operations) leaves the operation as its own repair unit, as does a stating parent
    outside the audited nodes. This lives in the audit, not in the decomposer: an operation -> later
    steps data-flow edge would cascade to the dependents but still leave the step that states the
    wrong number frozen, and the graph keeps the paper's shape (operations are leaves).
    """

    through: frozenset[EdgeType] = CASCADE_EDGES

    def _repair_unit(self, graph: nx.DiGraph, node_id: str, expression: str, nodes: frozenset[str]) -> str:
        unit = node_id
        seen = {unit}
        while True:
            above = next(
                (
                    parent
                    for parent, data in graph.pred[unit].items()
                    if data.get("type") is EdgeType.DECOMPOSES_TO
                    and parent in nodes
                    and parent not in seen
                    and _states(graph.nodes[parent].get("node"), expression)
                ),
                None,
            )
            if above is None:
                return unit
            unit = above
            seen.add(unit)

    def __call__(
        self, graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]
    ) -> Mapping[str, AuditFinding]:
        failures: dict[str, list[tuple[str, str, str | None]]] = {}  # repair unit -> (node, critique, expected)
        for node_id in graph.nodes:  # graph order, so that "the first failed calculation" is stable
            if node_id not in nodes:
                continue
            value = graph.nodes[node_id].get("node")
            if not isinstance(value, HdagNode):
                raise GraphError(f"node {node_id!r} holds no HDAG node: HdagExpressionAudit audits HDAGs only")
            if value.expression is None:
                continue
            check = check_expression(value.expression)
            if check.holds is not False:
                continue
            correct = _correct_value(value.expression, check)
            expected = None if correct is None else _show(correct)
            critique = f"{value.content.strip()!r}: the calculation {value.expression} does not hold"
            if expected is not None:
                critique += f" (the left side is {expected})"
            unit = self._repair_unit(graph, node_id, value.expression, nodes)
            failures.setdefault(unit, []).append((node_id, critique, expected))
        own: dict[str, AuditFinding] = {}
        stated: dict[str, str] = {}  # a failed operation -> the node that states it and is repaired instead
        for unit, found in failures.items():
            for node_id, _, _ in found:
                if node_id != unit:
                    stated[node_id] = unit
            critique = "; ".join(
                text if node_id == unit else f"operation {node_id} {text}" for node_id, text, _ in found
            )
            own[unit] = AuditFinding(NodeStatus.INVALID_ROOT, critique, ErrorType.FACTUAL, found[0][2])
        failed = set(own) | {node for node, status in known.items() if status is not NodeStatus.VALID}
        downstream: set[str] = set()
        stack = list(failed)
        while stack:
            source = stack.pop()
            for child, data in graph.succ[source].items():
                if child not in downstream and data.get("type") in self.through:
                    downstream.add(child)
                    stack.append(child)
        findings: dict[str, AuditFinding] = {}
        for node_id in nodes:
            if node_id in stated:
                findings[node_id] = AuditFinding(
                    NodeStatus.INVALID_CASCADE,
                    f"its calculation does not hold; {stated[node_id]} states it and is repaired as a whole",
                )
            elif node_id in downstream:
                findings[node_id] = AuditFinding(NodeStatus.INVALID_CASCADE, "depends on a failed node")
            else:
                findings[node_id] = own.get(node_id, AuditFinding(NodeStatus.VALID))
        return findings
