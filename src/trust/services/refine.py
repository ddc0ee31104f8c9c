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

The loop is the orchestration; its parts live in their layers. What a re-execution asks and answers
and how an answer replaces a node (`RepairRequest`, `Regenerated`, `with_output`) is pure
(`trust.core.graphs.repair`, re-exported here for the SDK); the audits that judge a regenerated
graph are auditors (`trust.auditors.refinement`: the network's auditors over a CIG, the exact
operation check over an HDAG); the language model regenerator is an adapter
(`trust.adapters.llm.regenerate.LlmRegenerator`).

Cost accounting. Every round records the nodes and tokens the surgical repair re-executed against a
global retry that would re-execute every node of the graph in that round. A node's token cost is what
the regeneration reported, or, for a node never regenerated (or a callback that reports none),
`approximate_tokens` of its input plus its output. The re-audit is counted in nodes as well.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import networkx as nx

from trust.core.graphs.refinement import (
    AuditFinding,
    FeedbackKind,
    RepairPlan,
    feedback_for,
    node_context,
    node_output,
    plan_repair,
)
from trust.core.graphs.repair import (
    Regenerate,
    Regenerated,
    RepairRequest,
    approximate_tokens,
    replace_value,
    with_output,
)
from trust.core.graphs.stationarity import LexicalSimilarity, Similarity, is_stationary
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError
from trust.settings import RefinementSettings

__all__ = [
    "Audit",
    "Regenerate",
    "Regenerated",
    "RefinementResult",
    "RepairRequest",
    "RoundRecord",
    "StopReason",
    "approximate_tokens",
    "refine",
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
                replace_value(work, node, result.value)
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
