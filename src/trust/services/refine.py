"""Active refinement: the audit-prune-regenerate loop of paper section 2.3.

One round: plan the repair on the audited graph (`trust.core.graphs.refinement.plan_repair`: prune the
failed nodes and their descendants, freeze the rest), build the feedback prompt of every failed
node, re-execute the pruned nodes in topological order through the `regenerate` callback (a failed
node with its feedback, a descendant with only its fresh input), then re-audit only the regenerated
subgraph. Frozen nodes keep their Valid status and are neither re-run nor re-audited.

The loop stops when every node is Valid, after `RefinementSettings.max_rounds` rounds, or on
stationarity. The sampling temperature of round r is `initial_temperature + (r - 1) *
temperature_step` (0.7, 0.8, ... by default).

Stationarity (decision where the paper is vague). Section 2.3.1 stops the loop on "no improvement
between rounds", while sections 2.2.6 and 2.3.3 answer a stuck loop with a divergence directive. Both
are kept: a round *stalls* when the number of non-Valid nodes did not go down. After a first stall
every still-failed node gets divergence feedback in the next round; a second stall in a row (the
divergence did not help either) stops the loop as stationary. Independently, a failed node whose new
output is similar to its previous one at or above tau_stat (the `Similarity` of
`trust.core.graphs.stationarity`) gets divergence feedback in the next round.

Cost accounting. Every round records the nodes and tokens the surgical repair re-executed against a
global retry that would re-execute every node of the graph in that round. A node's token cost is what
the regeneration reported, or, for a node never regenerated (or a callback that reports none),
`approximate_tokens` of its input plus its output. The re-audit is counted in nodes as well.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Protocol

import networkx as nx

from trust.core.decompose.rules import extract_operations
from trust.core.graphs.analysis import CASCADE_EDGES
from trust.core.graphs.cig import AgentTurn, Cig, CigEdge, EdgeOrigin
from trust.core.graphs.hdag import EdgeType, HdagNode
from trust.core.graphs.localize import RootReason, localize
from trust.core.graphs.oracles import (
    EdgeOracle,
    EdgeVerdict,
    NodeOracle,
    NodeVerdict,
    audit_cig,
    deterministic_edge_oracles,
    deterministic_node_oracles,
)
from trust.core.graphs.refinement import (
    VALUE_ATTRIBUTES,
    AuditFinding,
    ErrorType,
    Feedback,
    FeedbackKind,
    RepairPlan,
    feedback_for,
    node_context,
    node_output,
    plan_repair,
)
from trust.core.graphs.stationarity import LexicalSimilarity, Similarity, is_stationary
from trust.core.graphs.status import NodeStatus
from trust.core.maths.arithmetic import ExpressionCheck, check_expression
from trust.errors import GraphError, LlmError
from trust.settings import AuditSettings, LlmSettings, RefinementSettings

__all__ = [
    "REGENERATION_SYSTEM_PROMPT",
    "Audit",
    "BlockingChat",
    "CigOracleAudit",
    "HdagExpressionAudit",
    "LlmRegenerator",
    "Regenerate",
    "Regenerated",
    "RefinementResult",
    "RepairRequest",
    "RoundRecord",
    "StopReason",
    "approximate_tokens",
    "refine",
    "rerun_prompt",
    "with_output",
]


_FAILED = frozenset({NodeStatus.INVALID_ROOT, NodeStatus.NEGLIGENT})


class Audit(Protocol):
    """Audits `nodes` of `graph` and returns one finding for each of them.

    `known` holds the statuses of the nodes not audited this time (frozen, hence Valid), so that an
    implementation of Algorithm 1 can read the parents' statuses of the regenerated subgraph.
    """

    def __call__(
        self, graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]
    ) -> Mapping[str, AuditFinding]: ...


@dataclass(frozen=True, slots=True)
class RepairRequest:
    """One re-execution: `feedback` is set for a failed node and None for a descendant that is only
    re-run on its regenerated input. `graph` is the current graph: every parent of `node` that this
    round prunes has already been regenerated."""

    node: str
    graph: nx.DiGraph
    feedback: Feedback | None
    temperature: float
    round: int

    @property
    def context(self) -> str:
        return node_context(self.graph, self.node)

    @property
    def output(self) -> str:
        return node_output(self.graph, self.node)


@dataclass(frozen=True, slots=True)
class Regenerated:
    """A regenerated output. `value` replaces the node's whole value (for example an `HdagNode`
    with a new `expression`) when given; otherwise only its output text is replaced. `tokens` is
    what the generation cost (prompt plus completion), when the generator knows it."""

    output: str
    tokens: int | None = None
    value: object | None = None


Regenerate = Callable[[RepairRequest], Regenerated]


class StopReason(StrEnum):
    ALL_VALID = "all_valid"
    MAX_ROUNDS = "max_rounds"
    STATIONARY = "stationary"


def _savings(reexecuted: int, global_retry: int) -> float:
    """The share of a global retry's work that surgical repair did not redo (0 when nothing ran)."""
    return 0.0 if global_retry == 0 else 1.0 - reexecuted / global_retry


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """What one round re-executed, and what a global retry would have re-executed instead."""

    round: int
    temperature: float
    failed: tuple[str, ...]
    kinds: Mapping[str, FeedbackKind]
    nodes_reexecuted: int
    tokens_reexecuted: int
    global_nodes: int
    global_tokens: int
    invalid_before: int
    invalid_after: int
    stationary: tuple[str, ...] = ()

    @property
    def node_savings(self) -> float:
        return _savings(self.nodes_reexecuted, self.global_nodes)

    @property
    def token_savings(self) -> float:
        return _savings(self.tokens_reexecuted, self.global_tokens)

    def as_dict(self) -> dict[str, object]:
        return {
            "round": self.round,
            "temperature": round(self.temperature, 6),
            "failed": list(self.failed),
            "kinds": {node: kind.value for node, kind in self.kinds.items()},
            "nodes_reexecuted": self.nodes_reexecuted,
            "tokens_reexecuted": self.tokens_reexecuted,
            "global_nodes": self.global_nodes,
            "global_tokens": self.global_tokens,
            "invalid_before": self.invalid_before,
            "invalid_after": self.invalid_after,
            "stationary": list(self.stationary),
        }


@dataclass(frozen=True, slots=True)
class RefinementResult:
    graph: nx.DiGraph
    statuses: Mapping[str, NodeStatus]
    findings: Mapping[str, AuditFinding]
    rounds: tuple[RoundRecord, ...]
    stop: StopReason
    initial_invalid: int = 0
    history: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def all_valid(self) -> bool:
        return all(status is NodeStatus.VALID for status in self.statuses.values())

    @property
    def nodes_reexecuted(self) -> int:
        return sum(r.nodes_reexecuted for r in self.rounds)

    @property
    def tokens_reexecuted(self) -> int:
        return sum(r.tokens_reexecuted for r in self.rounds)

    @property
    def global_nodes(self) -> int:
        return sum(r.global_nodes for r in self.rounds)

    @property
    def global_tokens(self) -> int:
        return sum(r.global_tokens for r in self.rounds)

    @property
    def node_savings(self) -> float:
        return _savings(self.nodes_reexecuted, self.global_nodes)

    @property
    def token_savings(self) -> float:
        return _savings(self.tokens_reexecuted, self.global_tokens)

    def summary(self) -> dict[str, object]:
        return {
            "stop": self.stop.value,
            "rounds": len(self.rounds),
            "all_valid": self.all_valid,
            "initial_invalid": self.initial_invalid,
            "nodes_reexecuted": self.nodes_reexecuted,
            "global_nodes": self.global_nodes,
            "node_savings": round(self.node_savings, 6),
            "tokens_reexecuted": self.tokens_reexecuted,
            "global_tokens": self.global_tokens,
            "token_savings": round(self.token_savings, 6),
            "per_round": [r.as_dict() for r in self.rounds],
        }


def approximate_tokens(text: str) -> int:
    """About four characters per token (the usual rule of thumb for English with BPE tokenizers);
    at least one token for a node that exists."""
    return max(1, math.ceil(len(text) / 4))


def with_output(graph: nx.DiGraph, node_id: str, output: str) -> None:
    """Replaces the node's output text in place: the `output` (CIG turn) or `content` (HDAG node,
    whose operation `expression` is re-extracted, see `_with_content`) field of its frozen value, or
    the plain attribute when the node carries no value object."""
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        value = data.get(attribute)
        if value is None or not dataclasses.is_dataclass(value) or isinstance(value, type):
            continue
        if isinstance(value, HdagNode):
            data[attribute] = _with_content(value, output)
            return
        names = {f.name for f in dataclasses.fields(value)}
        for name in ("output", "content"):
            if name in names:
                data[attribute] = dataclasses.replace(value, **{name: output})
                return
        raise GraphError(
            f"node {node_id!r}: its value {type(value).__name__} has no output or content field to replace; "
            "return the whole new value in Regenerated.value"
        )
    data["output" if "output" in data or "content" not in data else "content"] = output


def _with_content(node: HdagNode, content: str) -> HdagNode:
    """An HDAG node with new content. An operation's checkable `expression` follows its content: the
    one calculation `extract_operations` finds in the new text, or None when it finds none or
    several (the tier-1 check then has nothing to hold the node to; decision: better no check than
    checking the wrong calculation)."""
    if node.expression is None:
        return dataclasses.replace(node, content=content)
    operations = extract_operations(content)
    expression = operations[0].expression if len(operations) == 1 else None
    return dataclasses.replace(node, content=content, expression=expression)


def _replace_value(graph: nx.DiGraph, node_id: str, value: object) -> None:
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        if attribute in data:
            old = data[attribute]
            if type(old) is not type(value):
                raise GraphError(
                    f"node {node_id!r}: the regenerated value is a {type(value).__name__}, "
                    f"the node holds a {type(old).__name__}; return the same type"
                )
            if getattr(old, "id", None) != getattr(value, "id", None):
                raise GraphError(f"node {node_id!r}: the regenerated value has id {getattr(value, 'id', None)!r}")
            data[attribute] = value
            return
    raise GraphError(f"node {node_id!r} holds no value object to replace; return only Regenerated.output")


def _invalid(statuses: Mapping[str, NodeStatus]) -> int:
    return sum(status is not NodeStatus.VALID for status in statuses.values())


def _check_findings(findings: Mapping[str, AuditFinding], nodes: Collection[str]) -> None:
    missing = [node for node in nodes if node not in findings]
    if missing:
        shown = ", ".join(repr(node) for node in missing[:5])
        raise GraphError(f"the audit returned no finding for {len(missing)} audited node(s) ({shown})")


def refine(
    graph: nx.DiGraph,
    audit: Audit,
    regenerate: Regenerate,
    settings: RefinementSettings,
    *,
    tau_stat: float,
    similarity: Similarity | None = None,
    findings: Mapping[str, AuditFinding] | None = None,
    token_count: Callable[[str], int] = approximate_tokens,
    progress: Callable[[str], None] | None = None,
) -> RefinementResult:
    """Runs the refinement loop on a copy of `graph` (the argument is left untouched).

    `findings` is the audit of the whole graph when the caller already has it; otherwise the loop
    starts with one. `similarity` scores two outputs of the same node (default: the lexical
    fallback); above `tau_stat` (`AuditSettings.tau_stat`) the node is stationary, read as in
    `trust.core.graphs.stationarity.is_stationary`.
    """
    work: nx.DiGraph = graph.copy()
    similar = similarity or LexicalSimilarity()
    say = progress or (lambda _message: None)
    everything = frozenset(work.nodes)
    if findings is None:
        say(f"auditing {len(everything)} nodes")
        findings = audit(work, everything, {})
    current: dict[str, AuditFinding] = dict(findings)
    _check_findings(current, everything)
    statuses = {node: current[node].status for node in work.nodes}
    costs: dict[str, int] = {}
    history: dict[str, list[str]] = {}
    stuck: set[str] = set()
    stalled = False
    rounds: list[RoundRecord] = []
    initial_invalid = _invalid(statuses)
    stop = StopReason.ALL_VALID

    def cost_of(node: str) -> int:
        if node not in costs:
            costs[node] = token_count(node_context(work, node)) + token_count(node_output(work, node))
        return costs[node]

    for number in range(1, settings.max_rounds + 1):
        invalid_before = _invalid(statuses)
        if invalid_before == 0:
            stop = StopReason.ALL_VALID
            break
        plan: RepairPlan = plan_repair(work, statuses, findings=current, stationary=stuck)
        temperature = settings.initial_temperature + (number - 1) * settings.temperature_step
        say(
            f"round {number}: {len(plan.failed)} failed, re-executing {plan.cost} of {plan.total} nodes "
            f"at temperature {temperature:.2f}"
        )
        feedback = {
            node: feedback_for(
                work,
                plan,
                node,
                statuses[node],
                current.get(node),
                previous_outputs=tuple(history.get(node, ())),
                round=number,
            )
            for node in plan.failed
        }
        previous = {node: node_output(work, node) for node in plan.failed}
        global_tokens = sum(cost_of(node) for node in plan.frozen)
        spent = 0
        for node in plan.order:
            note = feedback.get(node)
            request = RepairRequest(node, work, note, temperature, number)
            result = regenerate(request)
            if result.value is not None:
                _replace_value(work, node, result.value)
            else:
                with_output(work, node, result.output)
            tokens = result.tokens
            if tokens is None:
                prompt = note.prompt() if note is not None else node_context(work, node)
                tokens = token_count(prompt) + token_count(result.output)
            costs[node] = tokens
            spent += tokens
        global_tokens += spent
        for node, text in previous.items():
            history.setdefault(node, []).append(text)

        pruned = plan.pruned
        known = {node: statuses[node] for node in plan.frozen}
        say(f"round {number}: re-auditing {len(pruned)} regenerated nodes")
        audited = audit(work, pruned, known)
        _check_findings(audited, pruned)
        for node in pruned:
            current[node] = audited[node]
            statuses[node] = audited[node].status
        invalid_after = _invalid(statuses)

        still_failed = [node for node in plan.failed if statuses[node] in _FAILED]
        repeated = {
            node
            for node in still_failed
            if is_stationary(previous[node], node_output(work, node), similar, tau_stat=tau_stat)
        }
        stall = invalid_after >= invalid_before
        rounds.append(
            RoundRecord(
                round=number,
                temperature=temperature,
                failed=plan.failed,
                kinds=dict(plan.kinds),
                nodes_reexecuted=plan.cost,
                tokens_reexecuted=spent,
                global_nodes=plan.total,
                global_tokens=global_tokens,
                invalid_before=invalid_before,
                invalid_after=invalid_after,
                stationary=tuple(sorted(repeated | (set(still_failed) if stall else set()))),
            )
        )
        if invalid_after == 0:
            stop = StopReason.ALL_VALID
            break
        if stall and stalled:
            stop = StopReason.STATIONARY
            say(f"round {number}: no improvement after a divergence round; stopping")
            break
        stalled = stall
        failed_now = {node for node, status in statuses.items() if status in _FAILED}
        stuck = repeated | (failed_now if stall else set())
        stop = StopReason.MAX_ROUNDS
    return RefinementResult(
        graph=work,
        statuses=statuses,
        findings=current,
        rounds=tuple(rounds),
        stop=stop,
        initial_invalid=initial_invalid,
        history={node: tuple(texts) for node, texts in history.items()},
    )


# ---------------------------------------------------------------------------------------------- audits


class _OnlyNodes:
    """A node oracle restricted to `nodes`; elsewhere it has nothing to say (None)."""

    __slots__ = ("inner", "name", "nodes")

    def __init__(self, inner: NodeOracle, nodes: frozenset[str]) -> None:
        self.inner, self.nodes, self.name = inner, nodes, inner.name

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        return self.inner.audit_node(node, parents, observations) if node.id in self.nodes else None


class _OnlyEdgesInto:
    """An edge oracle restricted to the edges into `nodes`."""

    __slots__ = ("inner", "name", "nodes")

    def __init__(self, inner: EdgeOracle, nodes: frozenset[str]) -> None:
        self.inner, self.nodes, self.name = inner, nodes, inner.name

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None:
        return self.inner.audit_edge(edge, source, target) if target.id in self.nodes else None


def _turn(graph: nx.DiGraph, node_id: str) -> AgentTurn:
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        value = data.get(attribute)
        if isinstance(value, AgentTurn):
            return value
    raise GraphError(f"node {node_id!r} holds no agent turn: CigOracleAudit audits CIGs only")


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
class CigOracleAudit:
    """The dual-layer audit and Algorithm 1 (`trust.core.graphs.oracles`, `trust.core.graphs.localize`) as
    an `Audit` of the refinement loop, for CIG graphs (`Cig.graph`: each node holds an `AgentTurn`).

    Re-auditing a subgraph runs the oracles on its nodes and the edges into them only. Its parents
    outside the subgraph (the boundary) keep the status the loop knows: a Valid boundary parent
    counts as Valid, any other as failed, which is all Algorithm 1 reads of a parent.

    A finding's `expected` is the structured value the node oracles computed
    (`NodeVerdict.expected`, combined in `NodeAudit.expected`), never read back out of critique text.
    """

    node_oracles: tuple[NodeOracle, ...]
    edge_oracles: tuple[EdgeOracle, ...]
    tau_node: float
    tau_edge: float

    @classmethod
    def deterministic(cls, settings: AuditSettings) -> CigOracleAudit:
        return cls(
            tuple(deterministic_node_oracles()),
            tuple(deterministic_edge_oracles()),
            tau_node=settings.tau_node,
            tau_edge=settings.tau_edge,
        )

    def __call__(
        self, graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]
    ) -> Mapping[str, AuditFinding]:
        cig, boundary = _sub_cig(graph, nodes)
        audit = audit_cig(
            cig,
            [_OnlyNodes(oracle, nodes) for oracle in self.node_oracles],
            [_OnlyEdgesInto(oracle, nodes) for oracle in self.edge_oracles],
        )
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


# ---------------------------------------------------------------------------------------------- regenerators

REGENERATION_SYSTEM_PROMPT = (
    "You redo one step of a larger piece of work that an independent audit checked. "
    "Reply with the new output of that step only: no preamble, no explanation of the change."
)


def rerun_prompt(request: RepairRequest) -> str:
    """The prompt of a descendant re-run without feedback: its (regenerated) input and its old output."""
    return "\n\n".join(
        [
            "Work you depend on was corrected. Redo your step on the updated input.",
            f"Input:\n{request.context or '(none)'}",
            f"Your previous output, based on the old input:\n{request.output or '(empty)'}",
        ]
    )


class BlockingChat:
    """A synchronous face of `trust.adapters.llm.client.LlmClient` for synchronous callers (the refinement loop, node
    oracles): it owns one event loop and drives the async client on it, so connections are reused
    across calls. Do not call it from inside a running event loop (run the caller in a worker thread
    there, `asyncio.to_thread`). A context manager: leaving closes the client and the loop."""

    def __init__(self, settings: LlmSettings) -> None:
        from trust.adapters.llm.client import LlmClient

        self._client = LlmClient(settings)
        self._loop = asyncio.new_event_loop()

    def __enter__(self) -> BlockingChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._loop.is_closed()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._client.aclose())
            self._loop.close()

    def complete(self, system: str, user: str, *, temperature: float, json_mode: bool = False) -> str:
        from trust.core.chat import ChatMessage

        if self._loop.is_closed():
            raise LlmError("the chat client is closed: create a new one")
        messages = [ChatMessage("system", system), ChatMessage("user", user)]
        return self._loop.run_until_complete(
            self._client.complete(messages, temperature=temperature, json_mode=json_mode)
        )


class LlmRegenerator:
    """A `Regenerate` over an OpenAI-compatible endpoint (`trust.adapters.llm.client.LlmClient` via `BlockingChat`).

    A failed node is re-prompted with its feedback (`Feedback.prompt()`), a descendant with
    `rerun_prompt`, at the round's temperature. The endpoint reports no token usage through the
    client, so tokens are `approximate_tokens` of the system prompt, the prompt and the reply. Use
    it as a context manager: leaving closes the client.
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        system_prompt: str = REGENERATION_SYSTEM_PROMPT,
        token_count: Callable[[str], int] = approximate_tokens,
    ) -> None:
        self._chat = BlockingChat(settings)
        self._system = system_prompt
        self._tokens = token_count

    def __enter__(self) -> LlmRegenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._chat.close()

    def __call__(self, request: RepairRequest) -> Regenerated:
        if self._chat.closed:
            raise LlmError("LlmRegenerator is closed: create a new one")
        prompt = request.feedback.prompt() if request.feedback is not None else rerun_prompt(request)
        text = self._chat.complete(self._system, prompt, temperature=request.temperature).strip()
        if not text:
            raise LlmError(f"the model answered an empty output when regenerating node {request.node!r}")
        return Regenerated(text, tokens=self._tokens(self._system) + self._tokens(prompt) + self._tokens(text))
