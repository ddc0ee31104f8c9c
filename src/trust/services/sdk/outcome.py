"""From what the chain decided to what the provider reads: node statuses, root causes, failure reasons
and the verdict. Pure: the session driver reads the chain and the reports, this module only judges.

Node statuses (Table 1). The network audits every segment of a trace at once, in parallel: it cannot
skip a node whose parent failed, as the dependency-aware cascade of section 2.1.3 does when audits run
one after another, because that would make the latency grow with the graph's depth. Each node
therefore comes back with a verdict of its own, and:

- HDAG (one model's reasoning). A node whose segment failed is
  `Invalid_Root`: its auditors judged its own step, given its parents' content as its input, and
  found it wrong, so the fault is in that step even when a parent failed too (the flawed
  CHA2DS2-VASc trace of section 1.3 makes four independent errors along one chain of steps, and all
  four must be reported). A node that passed but depends, through `depends_on`/`decomposes_to`/
  `refines` edges (`trust.core.graphs.analysis.cascade`), on a failed node is `Invalid_Cascade`: its own
  step is right, its input is not. Everything else is `Valid`. This departs from the paper's rule
  for a *failed* node below a failed parent (Invalid_Cascade there); the paper's rule exists to
  avoid spending auditors on such nodes, which a parallel audit has already spent.
- CIG (a multi-agent log). Algorithm 1 exactly (`trust.core.graphs.localize.localize`): a turn's validity
  score is 1 when its segment passed and 0 otherwise; every edge scores 1 on both Layer-2 checks
  because the network audits nodes (a seat sees the turn with its inputs, so a breach at the boundary
  fails the receiving turn's own segment); a reviewer turn "rejects its input" when its output says
  so (`trust.core.graphs.audit.rejects`), which the provider reads from its own log.
- Undetermined (both graphs). A segment that ended `Undetermined` (no committee could be seated, or
  its votes neither passed nor failed it through the last escalation round) was never judged: its
  node is `Undetermined`, with its tier, its rounds and why (`SegmentOutcome.why`), and is neither a
  root cause nor the origin of a cascade (Algorithm 1 reads it as sound for the other turns). It
  still counts as not passed in the verdict, as the contract counts it, and `failure_reasons` says
  that in words: an undetermined critical node makes the trace INVALID on chain.

The verdict is the chain's (`finalizeTrace`: W >= beta * sum(w), every critical segment passed, no
contradiction confirmed), unless `AuditConfig.consensus_threshold` asks for more: then a segment that
passed with a smaller share of stake counts as failed and the same rule is applied again here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trust.core.graphs.analysis import cascade
from trust.core.graphs.audit import EdgeScore, rejects
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.localize import localize
from trust.core.graphs.status import NodeStatus
from trust.services.sdk.result import Critique, NodeResult, Outcome, RootCauseResult, Verdict

__all__ = ["Judgement", "SegmentOutcome", "judge", "undetermined_reason"]

_BPS = 10_000


@dataclass(frozen=True, slots=True)
class SegmentOutcome:
    """One segment as the chain left it."""

    index: int
    node_id: str
    tier: int
    """The tier of its last round."""
    weight: int
    critical: bool
    contradiction: bool
    outcome: Outcome
    rounds: int
    pass_share: float
    critiques: tuple[Critique, ...] = ()
    why: str = ""
    """For an undetermined segment: why no decision came (no committee seated, votes split, seats
    silent), in words; empty otherwise."""


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: Verdict
    nodes: dict[str, NodeResult]
    root_causes: tuple[RootCauseResult, ...]
    failure_reasons: tuple[str, ...]


def _counted_outcome(segment: SegmentOutcome, threshold: float | None) -> Outcome:
    if segment.outcome is Outcome.PASSED and threshold is not None and segment.pass_share < threshold:
        return Outcome.FAILED
    return segment.outcome


def _first_critique(segment: SegmentOutcome) -> str:
    failing = [c for c in segment.critiques if c.vote == "fail" and c.critique]
    chosen = failing or [c for c in segment.critiques if c.critique]
    return f": {chosen[0].critique}" if chosen else ""


def _rounds(count: int) -> str:
    return f"{count} round{'s' if count != 1 else ''}"


def undetermined_reason(segment: SegmentOutcome) -> str:
    """What a provider reads about a node nobody decided: tier, rounds and why."""
    why = f": {segment.why}" if segment.why else ""
    return f"undetermined after {_rounds(segment.rounds)}, the last at tier {segment.tier}{why}"


def _statuses(
    graph: Hdag | Cig, failed: set[str], undetermined: set[str]
) -> tuple[dict[str, NodeStatus], list[RootCauseResult]]:
    if isinstance(graph, Hdag):
        statuses = {node.id: NodeStatus.VALID for node in graph.nodes()}
        statuses.update(cascade(graph, failed))
        statuses.update(dict.fromkeys(failed, NodeStatus.INVALID_ROOT))
        statuses.update(dict.fromkeys(undetermined, NodeStatus.UNDETERMINED))
        return statuses, [RootCauseResult(n, NodeStatus.INVALID_ROOT, "failed its audit") for n in sorted(failed)]
    # An undetermined turn scores 1: nobody found it wrong, so it must not make the turns around it
    # look negligent or cascaded; it is reported as undetermined on its own below.
    node_scores = {turn.id: 0.0 if turn.id in failed else 1.0 for turn in graph.turns()}
    edges = {(source, target): EdgeScore() for target in node_scores for source in graph.parents(target)}
    rejecting = frozenset(turn.id for turn in graph.turns() if rejects(turn.output))
    # Thresholds in (0, 1]: with scores of exactly 0 or 1 any of them gives the same answer.
    found = localize(graph, node_scores, edges, tau_node=1.0, tau_edge=1.0, rejecting=rejecting)
    reasons = {
        "node_failure": "failed its audit",
        "approved_invalid": "approved invalid input",
        "edge_failure": "protocol breach at its boundary",
    }
    causes = [
        RootCauseResult(c.node_id, c.status, reasons[str(c.reason)], (), c.parents)
        for c in found.root_causes
        if c.node_id not in undetermined
    ]
    statuses = dict(found.statuses)
    statuses.update(dict.fromkeys(undetermined & set(statuses), NodeStatus.UNDETERMINED))
    return statuses, causes


def judge(
    graph: Hdag | Cig,
    segments: Sequence[SegmentOutcome],
    *,
    valid_on_chain: bool,
    beta_bps: int,
    consensus_threshold: float | None = None,
) -> Judgement:
    """Statuses, root causes, failure reasons and the verdict of a finished session."""
    counted = {s.node_id: _counted_outcome(s, consensus_threshold) for s in segments}
    failed = {node_id for node_id, outcome in counted.items() if outcome is Outcome.FAILED}
    undetermined = {node_id for node_id, outcome in counted.items() if outcome is Outcome.UNDETERMINED}
    statuses, causes = _statuses(graph, failed, undetermined)
    by_node: Mapping[str, SegmentOutcome] = {s.node_id: s for s in segments}
    nodes = {
        s.node_id: NodeResult(
            s.node_id,
            s.index,
            s.tier,
            s.outcome,
            statuses[s.node_id],
            s.rounds,
            s.pass_share,
            s.critiques,
            undetermined_reason(s) if s.outcome is Outcome.UNDETERMINED else None,
        )
        for s in segments
    }
    root_causes = tuple(
        RootCauseResult(
            cause.node_id,
            cause.status,
            cause.reason,
            tuple(c for c in by_node[cause.node_id].critiques if c.vote == "fail") or by_node[cause.node_id].critiques,
            cause.involved,
        )
        for cause in causes
    )

    reasons: list[str] = []
    for s in segments:
        outcome = counted[s.node_id]
        if s.outcome is Outcome.PASSED and outcome is not Outcome.PASSED:
            reasons.append(
                f"node {s.node_id!r} passed on chain with {s.pass_share:.2f} of its committee's votes, below the "
                f"requested consensus threshold {consensus_threshold}"
            )
        elif outcome is Outcome.UNDETERMINED:
            where = "critical-path node" if s.critical else "contradiction" if s.contradiction else "node"
            counts = (
                "the contract counts a critical node nobody decided as not passed, which makes the trace INVALID"
                if s.critical or s.contradiction
                else "it counts as not passed in the trace's weight"
            )
            reasons.append(f"{where} {s.node_id!r} {undetermined_reason(s)}; {counts}")
        elif outcome is not Outcome.PASSED:
            where = "critical-path node" if s.critical else "contradiction" if s.contradiction else "node"
            reasons.append(f"{where} {s.node_id!r} {outcome} (tier {s.tier}, {_rounds(s.rounds)}){_first_critique(s)}")
    total = sum(s.weight for s in segments)
    passed = sum(s.weight for s in segments if counted[s.node_id] is Outcome.PASSED)
    quorum = passed * _BPS >= beta_bps * total
    if not quorum:
        reasons.append(
            f"passed weight {passed} of {total} is below the trace quorum beta = {beta_bps / _BPS:.2f} (eq. 3.6)"
        )
    critical_ok = all(counted[s.node_id] is Outcome.PASSED for s in segments if s.critical or s.contradiction)
    valid_here = quorum and critical_ok
    if consensus_threshold is None:
        valid = valid_on_chain
        if valid_on_chain != valid_here:
            reasons.append(f"the chain decided {'VALID' if valid_on_chain else 'INVALID'}; its verdict stands")
    else:
        valid = valid_on_chain and valid_here
    return Judgement(Verdict.VALID if valid else Verdict.INVALID, nodes, root_causes, tuple(reasons))
