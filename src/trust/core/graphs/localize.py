"""Deterministic fault localization: Algorithm 1 of the paper (section 2.2.6), exactly.

For each turn v in topological order (parents are classified before their children):

    propagated <- some parent p of v has S(p) != Valid
    if some incoming edge fails its protocol or fidelity check (score < tau_edge):
        S(v) <- Invalid_Root                         (protocol breach at the boundary)
    elif node validity score(v) >= tau_node:
        if v is a Reviewer and approved an invalid parent:
            S(v) <- Negligent
        else:
            S(v) <- Valid
    elif propagated:
        S(v) <- Invalid_Cascade
    else:
        S(v) <- Invalid_Root

Decisions where the paper is not explicit:

- "approved an invalid parent": v has role `Role.REVIEWER`, its own score is >= tau_node (it
  passed, which is the branch we are in), some parent is not Valid (`propagated`), and v's audit did
  not flag that it rejects its input (`rejecting`, from `NodeAudit.rejects_input`). A reviewer that
  passes on invalid work approves it unless it says it is wrong; one that points out the error did
  its job and is Valid.
- An edge failure wins over everything else (line 5 comes first): v is Invalid_Root even when a
  parent is already invalid, because the breach happened at v's boundary.
- A Negligent parent counts as "not Valid" for its children (line 4 compares with Valid only).
- Every node needs a score and every edge its two scores; a missing one is a `GraphError`, not a
  silent pass.

Root causes are the Invalid_Root and Negligent turns, with their agent, step, and the reason.
The pass is O(V + E): one visit per node, one look at each incoming edge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass
from enum import StrEnum

from trust.core.graphs.audit import CigAudit, EdgeScore
from trust.core.graphs.cig import Cig, Role
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

__all__ = ["Localization", "RootCause", "RootReason", "localize", "localize_audit"]


class RootReason(StrEnum):
    """Why a turn is a root cause: which branch of Algorithm 1 put it there."""

    EDGE_FAILURE = "edge_failure"  # line 6: an incoming edge failed protocol or fidelity
    NODE_FAILURE = "node_failure"  # line 17: scored below tau_node with every parent Valid
    APPROVED_INVALID = "approved_invalid"  # line 9: a reviewer passed on invalid work


@dataclass(frozen=True, slots=True)
class RootCause:
    """A turn to repair (Invalid_Root) or penalise (Negligent). `parents` are the failed edges'
    sources for an edge failure and the invalid parents for a negligent reviewer; empty otherwise."""

    node_id: str
    agent: str
    step: int
    status: NodeStatus
    reason: RootReason
    parents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Localization:
    """S(v) for every turn, in topological order, and the root causes in time order."""

    statuses: Mapping[str, NodeStatus]
    root_causes: tuple[RootCause, ...]

    def status(self, node_id: str) -> NodeStatus:
        try:
            return self.statuses[node_id]
        except KeyError:
            raise GraphError(f"unknown turn {node_id!r}") from None

    def with_status(self, status: NodeStatus) -> list[str]:
        return [node_id for node_id, found in self.statuses.items() if found is status]


def _check_threshold(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or not 0 < value <= 1:
        raise GraphError(f"{name} {value!r}: expected a threshold in (0, 1] (AuditSettings.{name})")


def localize(
    cig: Cig,
    node_scores: Mapping[str, float],
    edge_scores: Mapping[tuple[str, str], EdgeScore],
    *,
    tau_node: float,
    tau_edge: float,
    rejecting: Set[str] = frozenset(),
) -> Localization:
    """Algorithm 1 on `cig`; see the module docstring for every branch and decision.

    `node_scores` maps each turn id to its Layer-1 validity score, `edge_scores` each edge
    (source, target) to its Layer-2 scores, `rejecting` holds the reviewer turns that flag their
    input as wrong. The thresholds come from `trust.settings.AuditSettings`.
    """
    _check_threshold(tau_node, "tau_node")
    _check_threshold(tau_edge, "tau_edge")
    turns, parent_lists = cig.adjacency()
    valid = NodeStatus.VALID
    reviewer = Role.REVIEWER
    statuses: list[NodeStatus] = []
    roots: list[RootCause] = []
    edges_seen = 0
    for position, turn in enumerate(turns):
        v = turn.id
        try:
            score = node_scores[v]
        except KeyError:
            raise GraphError(f"turn {v!r} has no validity score: audit every node before localizing") from None
        if not 0 <= score <= 1:  # also refuses NaN
            raise GraphError(f"turn {v!r}: validity score {score!r} is outside [0, 1]")
        invalid_parents: list[int] = []
        failed_edges: list[int] = []
        for p in parent_lists[position]:
            edges_seen += 1
            if statuses[p] is not valid:
                invalid_parents.append(p)
            try:
                edge = edge_scores[(turns[p].id, v)]
            except KeyError:
                raise GraphError(
                    f"edge {turns[p].id!r} -> {v!r} has no scores: audit every edge before localizing"
                ) from None
            if edge.protocol < tau_edge or edge.fidelity < tau_edge:
                failed_edges.append(p)
        propagated = bool(invalid_parents)
        reason: RootReason | None
        if failed_edges:
            status, reason, involved = NodeStatus.INVALID_ROOT, RootReason.EDGE_FAILURE, failed_edges
        elif score >= tau_node:
            if propagated and turn.role is reviewer and v not in rejecting:
                status, reason, involved = NodeStatus.NEGLIGENT, RootReason.APPROVED_INVALID, invalid_parents
            else:
                status, reason, involved = valid, None, failed_edges
        elif propagated:
            status, reason, involved = NodeStatus.INVALID_CASCADE, None, failed_edges
        else:
            status, reason, involved = NodeStatus.INVALID_ROOT, RootReason.NODE_FAILURE, failed_edges
        statuses.append(status)
        if reason is not None:
            involved.sort()
            roots.append(RootCause(v, turn.agent, turn.step, status, reason, tuple(turns[p].id for p in involved)))
    if len(node_scores) != len(turns):
        known = {turn.id for turn in turns}
        extra_node = next(node_id for node_id in node_scores if node_id not in known)
        raise GraphError(f"node scores name a turn the CIG does not have: {extra_node!r}")
    if len(edge_scores) != edges_seen:
        extra = next((key for key in edge_scores if not cig.has_edge(*key)), None)
        raise GraphError(f"edge scores name an edge the CIG does not have: {extra!r}")
    by_id = {turn.id: status for turn, status in zip(turns, statuses, strict=True)}
    return Localization(by_id, tuple(roots))


def localize_audit(cig: Cig, audit: CigAudit, *, tau_node: float, tau_edge: float) -> Localization:
    """`localize` with the scores and rejections of an `audit_cig` result."""
    return localize(
        cig,
        audit.node_scores(),
        audit.edge_scores(),
        tau_node=tau_node,
        tau_edge=tau_edge,
        rejecting=audit.rejecting(),
    )
