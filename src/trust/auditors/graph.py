"""The dual-layer audit of a whole CIG (paper 2.2.4) by the network's own auditors.

`audit_cig` asks every auditor about every turn (node layer, Layer 1) and about every edge (edge
layer, Layer 2), exactly as a seat of the network would be asked about one segment, with what only
a whole log offers added to the request: the tool turns that answer a turn (its `observations`),
and, on the edge layer, which parent's message is audited (`sender`, the other parents being
context) and how it reached the turn (`origin`). `trust graph localize` and the evaluations run it
with the auditors `trust.auditors.tiers.offline_auditors` builds, as a worker builds its own.

How verdicts combine into what Algorithm 1 reads (`trust.core.graphs.audit.CigAudit`):

- a turn's score is the lowest score of the auditors that decided (1.0 when none did: nothing
  found no fault); its critiques are the failing verdicts', "<auditor>: <critique>"; its
  `expected` the value the failing verdicts computed, when exactly one distinct value was stated;
- a reviewer turn whose output flags its input as wrong is marked `rejects_input`
  (`trust.core.graphs.audit.rejects`): it did not approve an invalid parent, whatever its score;
- an edge's protocol and fidelity scores are the lowest of the deciding auditors'. A tier-1 verdict
  says which its failed checks lowered: a fault named by one of the fidelity failure modes
  (`FIDELITY_FAILURES`, value corruption) lowers fidelity, any other protocol. A verdict without
  checks (tier 2's one score judges the transmission as a whole) lowers both.

Turns are audited before edges, at most `concurrency` audits in flight: an endpoint behind a tier-2
auditor never sees more than that times its own concurrency, and a failing phase stops before the
next spends requests. An auditor that cannot work (its endpoint is down) fails the whole audit
with its error: a turn it could not judge must not pass silently.
"""

from __future__ import annotations

from collections.abc import Sequence

from trust.auditors.base import AuditLayer, Auditor, AuditRequest, Outcome, Verdict, all_or_nothing
from trust.auditors.checks.messages import FIDELITY_FAILURES
from trust.core.graphs.audit import CigAudit, EdgeAudit, EdgeScore, NodeAudit, observations, rejects
from trust.core.graphs.cig import Cig, CigEdge, Role
from trust.errors import ConfigError

__all__ = ["DEFAULT_CONCURRENCY", "audit_cig", "edge_audit", "node_audit"]

DEFAULT_CONCURRENCY = 4
"""Audits (of a turn or an edge) in flight at once."""


async def _verdicts(auditors: Sequence[Auditor], request: AuditRequest) -> list[tuple[str, Verdict]]:
    return [(auditor.name, await auditor.audit(request)) for auditor in auditors]


def node_audit(cig: Cig, node_id: str, verdicts: Sequence[tuple[str, Verdict]]) -> NodeAudit:
    """One turn's verdicts (auditor name, verdict) combined; see the module docstring."""
    turn = cig.turn(node_id)
    decided = [(name, v) for name, v in verdicts if v.decided]
    score = min([1.0, *(v.score for _, v in decided if v.score is not None)])
    failing = [(name, v) for name, v in decided if v.vote is Outcome.FAIL]
    expected = {v.expected for _, v in failing if v.expected is not None}
    return NodeAudit(
        node_id,
        score,
        tuple(f"{name}: {v.critique}" for name, v in failing if v.critique),
        turn.role is Role.REVIEWER and rejects(turn.output),
        tuple(name for name, _ in decided),
        next(iter(expected)) if len(expected) == 1 else None,
    )


def edge_audit(edge: CigEdge, verdicts: Sequence[tuple[str, Verdict]]) -> EdgeAudit:
    """One edge's verdicts (auditor name, verdict) combined; see the module docstring."""
    protocol, fidelity = 1.0, 1.0
    findings: list[str] = []
    names: list[str] = []
    for name, verdict in verdicts:
        if not verdict.decided or verdict.score is None:
            continue
        names.append(name)
        failed = [c for c in verdict.checks if c.outcome is Outcome.FAIL]
        if failed:
            for check in failed:
                if check.fault in FIDELITY_FAILURES:
                    fidelity = min(fidelity, verdict.score)
                else:
                    protocol = min(protocol, verdict.score)
                findings.append(f"{check.check}: {check.detail}")
        else:
            protocol, fidelity = min(protocol, verdict.score), min(fidelity, verdict.score)
            if verdict.vote is Outcome.FAIL:
                findings.append(f"{name}: {verdict.critique}")
    return EdgeAudit(edge.source, edge.target, EdgeScore(protocol, fidelity), tuple(findings), tuple(names))


async def audit_cig(
    cig: Cig,
    auditors: Sequence[Auditor],
    *,
    nodes: frozenset[str] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> CigAudit:
    """The audit of `cig` by `auditors`; see the module docstring. With `nodes`, only those turns
    and the edges into them are audited (the rest keep a score of 1.0 and no verdict: a re-audit
    of the subgraph the refinement loop regenerated)."""
    if concurrency < 1:
        raise ConfigError(f"audit_cig: concurrency must be at least 1, got {concurrency}")
    audited = [t for t in cig.turns() if nodes is None or t.id in nodes]
    node_requests = [
        AuditRequest(
            turn,
            tuple(cig.turn(p) for p in cig.parents(turn.id)),
            observations=tuple(observations(cig, turn.id)),
        )
        for turn in audited
    ]
    node_verdicts = await all_or_nothing([_verdicts(auditors, r) for r in node_requests], concurrency=concurrency)
    edges = [e for e in cig.edges() if nodes is None or e.target in nodes]
    edge_requests = [
        AuditRequest(
            cig.turn(edge.target),
            tuple(cig.turn(p) for p in cig.parents(edge.target)),
            layer=AuditLayer.EDGE,
            sender=edge.source,
            origin=edge.origin,
        )
        for edge in edges
    ]
    edge_verdicts = await all_or_nothing([_verdicts(auditors, r) for r in edge_requests], concurrency=concurrency)
    by_edge = {(e.source, e.target): edge_audit(e, v) for e, v in zip(edges, edge_verdicts, strict=True)}
    by_node = {turn.id: node_audit(cig, turn.id, v) for turn, v in zip(audited, node_verdicts, strict=True)}
    return CigAudit(
        {turn.id: by_node.get(turn.id) or NodeAudit(turn.id, 1.0) for turn in cig.turns()},
        {
            (edge.source, edge.target): by_edge.get((edge.source, edge.target))
            or EdgeAudit(edge.source, edge.target, EdgeScore())
            for edge in cig.edges()
        },
    )
