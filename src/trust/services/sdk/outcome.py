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
  score is 1 when its segment passed and 0 otherwise; an edge audited as a segment of its own (the
  telephone test, `trust.core.graphs.units`) scores 0 on both Layer-2 checks when its segment failed
  and 1 otherwise (an edge that was not audited, or nobody decided, is read as sound, as an
  undetermined turn is); a reviewer turn "rejects its input" when its output says so
  (`trust.core.graphs.audit.rejects`), which the provider reads from its own log.
- Contradictions and edges (units beside the nodes) come back as `UnitResult`s of their own, never
  as nodes: a confirmed contradiction (its segment failed) fails the trace on chain, with the
  statuses of its two claims left to their own segments.
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
from trust.core.graphs.cig import CONTEXT_ROLES, Cig
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.localize import localize
from trust.core.graphs.stationarity import Similarity, detect_stationarity
from trust.core.graphs.status import NodeStatus
from trust.core.graphs.units import AuditUnit, UnitKind, audit_units
from trust.services.sdk.result import (
    Critique,
    NodeResult,
    Outcome,
    RootCauseResult,
    StationaryResult,
    UnitResult,
    Verdict,
)

__all__ = ["Judgement", "SegmentOutcome", "judge", "stationary_agents", "undetermined_reason"]

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
    contradictions: tuple[UnitResult, ...] = ()
    edges: tuple[UnitResult, ...] = ()


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


_REASONS = {
    "node_failure": "failed its audit",
    "approved_invalid": "approved invalid input",
    "edge_failure": "protocol breach at its boundary",
}


def _statuses(
    graph: Hdag | Cig, failed: set[str], undetermined: set[str], failed_edges: frozenset[tuple[str, str]] = frozenset()
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
    edges = {
        (source, target): EdgeScore(0.0, 0.0) if (source, target) in failed_edges else EdgeScore()
        for target in node_scores
        for source in graph.parents(target)
    }
    rejecting = frozenset(turn.id for turn in graph.turns() if rejects(turn.output))
    # Thresholds in (0, 1]: with scores of exactly 0 or 1 any of them gives the same answer.
    found = localize(graph, node_scores, edges, tau_node=1.0, tau_edge=1.0, rejecting=rejecting)
    causes = [
        RootCauseResult(c.node_id, c.status, _REASONS[str(c.reason)], (), c.parents)
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
    units = {unit.id: unit for unit in audit_units(graph) if unit.kind is not UnitKind.NODE}
    counted = {s.node_id: _counted_outcome(s, consensus_threshold) for s in segments}
    failed = {node_id for node_id, outcome in counted.items() if outcome is Outcome.FAILED and node_id not in units}
    undetermined = {
        node_id for node_id, outcome in counted.items() if outcome is Outcome.UNDETERMINED and node_id not in units
    }
    failed_edges = frozenset(
        (units[node_id].source, units[node_id].target)
        for node_id, outcome in counted.items()
        if outcome is Outcome.FAILED and node_id in units and units[node_id].kind is UnitKind.EDGE
    )
    statuses, causes = _statuses(graph, failed, undetermined, failed_edges)
    by_node: Mapping[str, SegmentOutcome] = {s.node_id: s for s in segments}
    results = [_unit_result(units[s.node_id], s) for s in segments if s.node_id in units]
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
        if s.node_id not in units
    }
    root_causes = tuple(
        RootCauseResult(
            cause.node_id,
            cause.status,
            cause.reason,
            _cause_critiques(cause, by_node, units),
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
            counts = (
                "the contract counts a critical node nobody decided as not passed, which makes the trace INVALID"
                if s.critical
                else "the contract counts an unresolved contradiction as confirmed, which makes the trace INVALID"
                if s.contradiction
                else "it counts as not passed in the trace's weight"
            )
            reasons.append(f"{_what(s, units)} {undetermined_reason(s)}; {counts}")
        elif outcome is not Outcome.PASSED:
            unit = units.get(s.node_id)
            ended = "confirmed" if unit is not None and unit.kind is UnitKind.CONTRADICTION else str(outcome)
            reasons.append(f"{_what(s, units)} {ended} (tier {s.tier}, {_rounds(s.rounds)}){_first_critique(s)}")
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
    return Judgement(
        Verdict.VALID if valid else Verdict.INVALID,
        nodes,
        root_causes,
        tuple(reasons),
        tuple(r for r in results if r.kind == UnitKind.CONTRADICTION),
        tuple(r for r in results if r.kind == UnitKind.EDGE),
    )


def _what(segment: SegmentOutcome, units: Mapping[str, AuditUnit]) -> str:
    """How a failure reason names a segment: its node, or the unit's two nodes."""
    unit = units.get(segment.node_id)
    if unit is None:
        return f"{'critical-path node' if segment.critical else 'node'} {segment.node_id!r}"
    if unit.kind is UnitKind.CONTRADICTION:
        return f"contradiction between {unit.source!r} and {unit.target!r}"
    return f"message from {unit.source!r} into {unit.target!r}"


def _unit_result(unit: AuditUnit, s: SegmentOutcome) -> UnitResult:
    return UnitResult(
        unit.id,
        str(unit.kind),
        unit.source,
        unit.target,
        s.index,
        s.tier,
        s.outcome,
        s.rounds,
        s.pass_share,
        s.critiques,
        undetermined_reason(s) if s.outcome is Outcome.UNDETERMINED else None,
    )


def _cause_critiques(
    cause: RootCauseResult, by_node: Mapping[str, SegmentOutcome], units: Mapping[str, AuditUnit]
) -> tuple[Critique, ...]:
    """What the provider reads about a root cause: its own seats' failing critiques, and for an edge
    failure those of the failed edge segments into it."""
    own = by_node[cause.node_id].critiques
    found = [c for c in own if c.vote == "fail"]
    if cause.reason == _REASONS["edge_failure"]:
        for unit in units.values():
            if unit.kind is UnitKind.EDGE and unit.target == cause.node_id and unit.id in by_node:
                found += [c for c in by_node[unit.id].critiques if c.vote == "fail"]
    return tuple(found) or own


def stationary_agents(cig: Cig, similarity: Similarity, *, tau_stat: float) -> tuple[StationaryResult, ...]:
    """The agents of a multi-agent log stuck in a loop (paper 2.2.6): consecutive turns of one agent
    more similar than `tau_stat` (`trust.core.graphs.stationarity.detect_stationarity`, the detector
    `trust graph localize` runs offline). Read from the log the provider submitted, so it needs no
    seat: the seats each see one turn and its parents, never an agent's history. User and tool turns
    are not compared: a terminal that prints the same thing twice is not an agent repeating itself."""
    pairs = detect_stationarity(cig, similarity, tau_stat=tau_stat, skip_roles=CONTEXT_ROLES)
    return tuple(StationaryResult(p.agent, p.earlier, p.later, p.similarity) for p in pairs)
