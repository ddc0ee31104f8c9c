"""The pure part of active refinement (paper section 2.3): prune, freeze, and the repair feedback.

Given a graph (an HDAG's or a CIG's networkx `DiGraph`) and the status of every node after an audit,
`plan_repair` computes the prune-freeze split of section 2.3.1:

- pruned: every `Invalid_Root` and `Negligent` node (the *failed* nodes, each needing targeted
  feedback) together with all of their descendants. Descendants are re-run because their input is
  tainted, whatever their own status (a Valid node downstream of a failure is pruned too).
- frozen: every Valid node that depends on no failed node; its work is kept as it is.

The two sets partition the nodes. Statuses must be consistent with Algorithm 1: an
`Invalid_Cascade` node that descends from no failed node has nothing upstream to blame and nothing
to repair it, so `plan_repair` refuses it (`GraphError`) instead of guessing.

Feedback (section 2.3.3) is chosen per failed node from its error type:

- corrective for factual and logical errors, protocol breaches and negligent reviews: the specific
  mistake and, when the auditor knows it, the correct value;
- directive for strategy or approach errors: guidance without the solution;
- divergence for a node found stationary (its consecutive outputs were similar above tau_stat):
  an order to try a fundamentally different approach.

Decision where the paper is vague: when the audit names no error type, the node's place in the graph
decides. HDAG nodes at goal, strategy or tactic level fail on their approach (directive); step and
operation nodes on facts or logic (corrective). A CIG agent whose role plans (a role name containing
"plan" or "strateg") fails on its approach too; other roles on facts. A `Negligent` reviewer gets
corrective feedback naming the invalid work it approved, and a node failed by a broken incoming edge
(Algorithm 1 line 5) gets corrective feedback of type protocol.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import networkx as nx

from trust.core.graphs.hdag import Level
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

__all__ = [
    "VALUE_ATTRIBUTES",
    "AuditFinding",
    "ErrorType",
    "Feedback",
    "FeedbackKind",
    "RepairPlan",
    "default_error_type",
    "feedback_for",
    "feedback_kind",
    "node_context",
    "node_output",
    "plan_repair",
]

_FAILED = frozenset({NodeStatus.INVALID_ROOT, NodeStatus.NEGLIGENT})
_APPROACH_LEVELS = frozenset({Level.GOAL, Level.STRATEGY, Level.TACTIC})
_PLANNING_ROLE_MARKS = ("plan", "strateg")


class FeedbackKind(StrEnum):
    """The three feedback injection strategies of section 2.3.3."""

    CORRECTIVE = "corrective"
    DIRECTIVE = "directive"
    DIVERGENCE = "divergence"


class ErrorType(StrEnum):
    """What kind of mistake a failed node made; decides the feedback kind."""

    FACTUAL = "factual"  # a wrong value or claim: a miscalculation, a false fact
    LOGICAL = "logical"  # an invalid inference from correct inputs
    STRATEGY = "strategy"  # an inappropriate approach or plan
    PROTOCOL = "protocol"  # an incoming message broke its interface or lost fidelity (Algorithm 1, line 5)
    NEGLIGENCE = "negligence"  # a reviewer approved invalid work

    @property
    def feedback(self) -> FeedbackKind:
        return FeedbackKind.DIRECTIVE if self is ErrorType.STRATEGY else FeedbackKind.CORRECTIVE


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One node's audit verdict: its status and, for a failure, what the auditor said.

    `expected` is the correct value when the auditor knows it (a tier-1 checker recomputing an
    operation does); corrective feedback quotes it. `hint` is an alternative approach for directive
    and divergence feedback. `error_type` left unset is filled in by `default_error_type`.
    """

    status: NodeStatus
    critique: str = ""
    error_type: ErrorType | None = None
    expected: str | None = None
    hint: str | None = None


VALUE_ATTRIBUTES = ("node", "turn")
"""Where a node of a networkx view keeps its frozen value: `node` (an `HdagNode` of `Hdag.graph`, an
`AgentTurn` of `Cig.graph`), else `turn`."""


def _value(graph: nx.DiGraph, node_id: str) -> object:
    data = graph.nodes[node_id]
    for name in VALUE_ATTRIBUTES:
        if name in data:
            return data[name]
    return None


def node_output(graph: nx.DiGraph, node_id: str) -> str:
    """The node's produced text: a CIG turn's `output`, an HDAG node's `content`, or the `output`
    or `content` attribute of a plain networkx node."""
    value = _value(graph, node_id)
    for name in ("output", "content"):
        text = getattr(value, name, None)
        if isinstance(text, str):
            return text
    data = graph.nodes[node_id]
    for name in ("output", "content"):
        if isinstance(data.get(name), str):
            return str(data[name])
    return ""


def node_context(graph: nx.DiGraph, node_id: str) -> str:
    """The original input of a node: its own `input` (a CIG turn's context from outside the graph:
    the task, a user prompt) followed by what it received from its parents, one `[parent] output`
    line per parent in graph order (an HDAG node's context is only the latter)."""
    value = _value(graph, node_id)
    own = getattr(value, "input", None)
    if own is None:
        own = graph.nodes[node_id].get("input")
    lines = [own] if isinstance(own, str) and own else []
    lines.extend(f"[{parent}] {node_output(graph, parent)}" for parent in graph.predecessors(node_id))
    return "\n".join(lines)


def default_error_type(graph: nx.DiGraph, node_id: str, status: NodeStatus) -> ErrorType:
    """The error type of a failed node the audit did not classify (see the module docstring)."""
    if status is NodeStatus.NEGLIGENT:
        return ErrorType.NEGLIGENCE
    value = _value(graph, node_id)
    level = getattr(value, "level", None)
    if level is None:
        level = graph.nodes[node_id].get("level")
    if isinstance(level, Level):
        return ErrorType.STRATEGY if level in _APPROACH_LEVELS else ErrorType.FACTUAL
    role = getattr(value, "role", None)
    if role is None:
        role = graph.nodes[node_id].get("role")
    if isinstance(role, str) and any(mark in role.lower() for mark in _PLANNING_ROLE_MARKS):
        return ErrorType.STRATEGY
    return ErrorType.FACTUAL


def feedback_kind(error_type: ErrorType, *, stationary: bool = False) -> FeedbackKind:
    """Divergence overrides the error type: a stuck node needs a new direction, not the same hint."""
    return FeedbackKind.DIVERGENCE if stationary else error_type.feedback


@dataclass(frozen=True, slots=True)
class Feedback:
    """The feedback prompt of phase 3 (Repair) for one failed node, and what it was built from."""

    node: str
    kind: FeedbackKind
    status: NodeStatus
    error_type: ErrorType
    context: str
    output: str
    critique: str
    expected: str | None = None
    hint: str | None = None
    previous_outputs: tuple[str, ...] = ()
    round: int = 1

    def instructions(self) -> str:
        """The targeted correction instructions, in the wording of section 2.3.3."""
        if self.kind is FeedbackKind.DIVERGENCE:
            attempts = len(self.previous_outputs) or 2
            consider = self.hint or "a different method, decomposition or source than in your previous attempts"
            return (
                f"Your previous {attempts} attempts produced identical outputs. "
                f"You must try a fundamentally different approach. Consider: {consider}."
            )
        if self.kind is FeedbackKind.DIRECTIVE:
            guidance = f"Consider {self.hint}." if self.hint else "Consider a different approach to this step."
            return (
                f"Your approach is flawed: {self.critique or 'the audit rejected it'}. {guidance} "
                "Produce the step again with a better approach."
            )
        if self.error_type is ErrorType.NEGLIGENCE:
            return (
                "You approved work that the audit found invalid. Review the input again, check every claim "
                "and calculation against the critique, and approve only what you have verified."
            )
        if self.expected is not None:
            return (
                f"Your calculation yielded {self.output.strip()!r}. The correct result is {self.expected}. "
                "Please recalculate and give the corrected output."
            )
        return "Correct exactly the errors listed in the critique and keep everything the audit did not question."

    def prompt(self) -> str:
        """The full prompt: original input, the failed output, the critique, the error type and the
        correction instructions (section 2.3.1, phase 3)."""
        parts = [
            "An audit rejected one step of your previous work. Redo only this step.",
            f"Original input:\n{self.context or '(none)'}",
            f"Your previous output:\n{self.output or '(empty)'}",
            f"Audit critique: {self.critique or '(no details given)'}",
            f"Error type: {self.error_type.value} ({self.status.value})",
        ]
        if self.previous_outputs:
            earlier = "\n".join(f"- {text}" for text in self.previous_outputs)
            parts.append(f"Your earlier attempts:\n{earlier}")
        parts.append(f"Instructions ({self.kind.value} feedback): {self.instructions()}")
        return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """The prune-freeze split of one refinement round.

    `failed` holds the Invalid_Root and Negligent nodes in topological order; each gets feedback of
    the kind in `kinds` (and the error type in `error_types`). `order` holds every pruned node in
    topological order: the schedule in which the repair re-executes them, so that every node runs
    after the parents it reads.
    """

    pruned: frozenset[str]
    frozen: frozenset[str]
    failed: tuple[str, ...]
    order: tuple[str, ...]
    kinds: Mapping[str, FeedbackKind] = field(default_factory=dict)
    error_types: Mapping[str, ErrorType] = field(default_factory=dict)
    total: int = 0

    @property
    def cost(self) -> int:
        """Nodes the surgical repair re-executes."""
        return len(self.pruned)

    @property
    def savings(self) -> float:
        """Fraction of a global retry (every node re-executed) that the surgical repair avoids."""
        return 0.0 if self.total == 0 else 1.0 - self.cost / self.total


def _topological(graph: nx.DiGraph) -> list[str]:
    try:
        return list(nx.topological_sort(graph))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(graph)
        path = " -> ".join(str(u) for u, _ in cycle)
        raise GraphError(
            f"the graph has a cycle ({path} -> {cycle[0][0]}): refinement re-executes nodes in topological "
            "order; break the cycle (for example one node per message of a Coder-Reviewer loop)"
        ) from None


def _reachable(graph: nx.DiGraph, sources: Iterable[str]) -> set[str]:
    """The sources and all of their descendants, in one traversal whatever the number of sources."""
    seen = set(sources)
    stack = list(seen)
    while stack:
        for child in graph.successors(stack.pop()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def plan_repair(
    graph: nx.DiGraph,
    statuses: Mapping[str, NodeStatus],
    *,
    findings: Mapping[str, AuditFinding] | None = None,
    stationary: Collection[str] = (),
) -> RepairPlan:
    """Phases 1 and 2 (prune, freeze) and the feedback kind of every failed node.

    `findings` may classify failures (`AuditFinding.error_type`); `stationary` names nodes whose
    consecutive outputs were found similar above tau_stat, which get divergence feedback.
    Raises `GraphError` when a node has no status, a status names an unknown node, or an
    Invalid_Cascade node descends from no failed node.
    """
    missing = [node for node in graph.nodes if node not in statuses]
    if missing:
        shown = ", ".join(repr(node) for node in missing[:5])
        raise GraphError(
            f"no audit status for {len(missing)} node(s) ({shown}): audit every node before planning a repair"
        )
    unknown = [node for node in statuses if node not in graph]
    if unknown:
        shown = ", ".join(repr(node) for node in unknown[:5])
        raise GraphError(f"statuses name {len(unknown)} node(s) not in the graph ({shown})")
    order = _topological(graph)
    failed = [node for node in order if statuses[node] in _FAILED]
    pruned = _reachable(graph, failed)
    orphans = [node for node in order if statuses[node] is NodeStatus.INVALID_CASCADE and node not in pruned]
    if orphans:
        shown = ", ".join(repr(node) for node in orphans[:5])
        raise GraphError(
            f"node(s) {shown} are Invalid_Cascade but depend on no Invalid_Root or Negligent node: "
            "the statuses do not follow Algorithm 1; re-run fault localization on the whole graph"
        )
    findings = findings or {}
    stuck = set(stationary)
    error_types: dict[str, ErrorType] = {}
    kinds: dict[str, FeedbackKind] = {}
    for node in failed:
        finding = findings.get(node)
        declared = finding.error_type if finding is not None else None
        error_type = declared or default_error_type(graph, node, statuses[node])
        error_types[node] = error_type
        kinds[node] = feedback_kind(error_type, stationary=node in stuck)
    frozen = frozenset(node for node in order if node not in pruned)
    return RepairPlan(
        pruned=frozenset(pruned),
        frozen=frozen,
        failed=tuple(failed),
        order=tuple(node for node in order if node in pruned),
        kinds=kinds,
        error_types=error_types,
        total=graph.number_of_nodes(),
    )


def feedback_for(
    graph: nx.DiGraph,
    plan: RepairPlan,
    node_id: str,
    status: NodeStatus,
    finding: AuditFinding | None = None,
    *,
    previous_outputs: tuple[str, ...] = (),
    round: int = 1,
) -> Feedback:
    """The feedback for one failed node of `plan`, read from the graph as it was audited."""
    if node_id not in plan.kinds:
        raise GraphError(f"node {node_id!r} is not a failed node of this repair plan; only failed nodes get feedback")
    return Feedback(
        node=node_id,
        kind=plan.kinds[node_id],
        status=status,
        error_type=plan.error_types[node_id],
        context=node_context(graph, node_id),
        output=node_output(graph, node_id),
        critique=finding.critique if finding is not None else "",
        expected=finding.expected if finding is not None else None,
        hint=finding.hint if finding is not None else None,
        previous_outputs=previous_outputs,
        round=round,
    )
