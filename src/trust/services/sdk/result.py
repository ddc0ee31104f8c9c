"""What an audit returns (`AuditResult`), and its JSON.

`AuditResult.to_json()` is what `trust submit --json` prints and the gateway serves: the verdict, each
node's status and outcome, the root causes with the auditors' critiques, the failure reasons, the
transaction hashes, the on-chain proof and the latency of each phase in the layout of the paper's
Table 3 (section 3.6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.status import NodeStatus

__all__ = [
    "PHASES",
    "AuditResult",
    "Critique",
    "NodeResult",
    "Outcome",
    "PhaseTimings",
    "Proof",
    "RootCauseResult",
    "StationaryResult",
    "UnitResult",
    "Verdict",
]


class Verdict(StrEnum):
    VALID = "VALID"
    INVALID = "INVALID"


class Outcome(StrEnum):
    """How a segment ended on chain."""

    PASSED = "passed"
    FAILED = "failed"
    UNDETERMINED = "undetermined"
    """Undecided after the last escalation round, or no committee could be seated: nobody judged the
    node. Not a failure of its step; the contract counts it as not passed for the trace's verdict."""


@dataclass(frozen=True, slots=True)
class Critique:
    """One seat's report: what its auditor found and why (read from the report it sealed to the
    provider; the vote itself is on chain)."""

    auditor: str
    tier: int
    round: int
    vote: str
    score: float
    critique: str
    error_type: str | None = None
    expected: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "auditor": self.auditor,
            "tier": self.tier,
            "round": self.round,
            "vote": self.vote,
            "score": self.score,
            "critique": self.critique,
            "error_type": self.error_type,
            "expected": self.expected,
        }


@dataclass(frozen=True, slots=True)
class NodeResult:
    """One node: its segment on chain, how the segment ended and the node's status (Table 1)."""

    node_id: str
    segment: int
    tier: int
    """The tier of the last round (an escalated segment ends at a higher tier than it started)."""
    outcome: Outcome
    status: NodeStatus
    rounds: int
    pass_share: float
    """Share of the last round's committee stake that revealed pass (silent seats count against)."""
    critiques: tuple[Critique, ...] = ()
    reason: str | None = None
    """For an undetermined node: its rounds, its last tier and why nobody decided it, in words."""

    def to_json(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "tier": self.tier,
            "outcome": str(self.outcome),
            "status": str(self.status),
            "rounds": self.rounds,
            "pass_share": round(self.pass_share, 6),
            "reason": self.reason,
            "critiques": [c.to_json() for c in self.critiques],
        }


@dataclass(frozen=True, slots=True)
class UnitResult:
    """A unit audited beside the nodes (`trust.core.graphs.units`): a contradiction between two claims
    of an HDAG (`kind` "contradiction": `source` the earlier claim, `target` the later) or a message
    between two turns of a CIG (`kind` "edge": from `source` into `target`, the telephone test).

    `outcome` is how its segment ended: for a contradiction, FAILED means the contradiction was
    confirmed (the trace is invalid on chain) and PASSED that the claims were found consistent; for an
    edge, FAILED means the message broke its interface or lost fidelity (Algorithm 1, line 5)."""

    unit_id: str
    kind: str
    source: str
    target: str
    segment: int
    tier: int
    outcome: Outcome
    rounds: int
    pass_share: float
    critiques: tuple[Critique, ...] = ()
    reason: str | None = None
    """For an undetermined unit: its rounds, its last tier and why nobody decided it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.unit_id,
            "source": self.source,
            "target": self.target,
            "segment": self.segment,
            "tier": self.tier,
            "outcome": str(self.outcome),
            "rounds": self.rounds,
            "pass_share": round(self.pass_share, 6),
            "reason": self.reason,
            "critiques": [c.to_json() for c in self.critiques],
        }


@dataclass(frozen=True, slots=True)
class StationaryResult:
    """An agent stuck in a loop (paper 2.2.6): two consecutive turns of `agent` whose outputs are more
    similar than tau_stat (`AuditSettings.tau_stat`)."""

    agent: str
    earlier: str
    later: str
    similarity: float

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "earlier": self.earlier,
            "later": self.later,
            "similarity": round(self.similarity, 6),
        }


@dataclass(frozen=True, slots=True)
class RootCauseResult:
    """A node where a fault originates (Invalid_Root) or a reviewer that let one through (Negligent)."""

    node_id: str
    status: NodeStatus
    reason: str
    critiques: tuple[Critique, ...] = ()
    involved: tuple[str, ...] = ()
    """Parents involved (Algorithm 1: the invalid inputs a negligent reviewer approved)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node_id,
            "status": str(self.status),
            "reason": self.reason,
            "involved": list(self.involved),
            "critiques": [c.to_json() for c in self.critiques],
        }


@dataclass(frozen=True, slots=True)
class Proof:
    """Where the verdict lives on chain: enough for anyone to read it back and check it."""

    chain_id: int
    audit_contract: str
    session_id: int
    trace_root: str
    finalized_block: int | None
    finalize_tx: str | None
    valid_on_chain: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "chain_id": self.chain_id,
            "audit_contract": self.audit_contract,
            "session_id": self.session_id,
            "trace_root": self.trace_root,
            "finalized_block": self.finalized_block,
            "finalize_tx": self.finalize_tx,
            "valid_on_chain": self.valid_on_chain,
        }


PHASES: tuple[tuple[str, str, str], ...] = (
    ("decomposition", "HDAG/CIG Construction", "No"),
    ("assignment", "Auditor Assignment (randomness + draw)", "No"),
    ("distribution", "Content Distribution (IPFS + key envelopes)", "Partial"),
    ("tier1_verification", "Tier-1 Verification", "Yes"),
    ("tier2_verification", "Tier-2 Verification", "Yes"),
    ("tier3_verification", "Tier-3 Verification", "Yes"),
    ("vote_aggregation", "Vote Aggregation (commit-reveal)", "No"),
    ("finalization", "Consensus Finalization", "No"),
)
"""(key, Table-3 row, parallelizable) in the order of the paper's Table 3."""


@dataclass(frozen=True, slots=True)
class PhaseTimings:
    """Seconds per phase (Table 3), the total, and the overhead: the total minus the time auditors
    spent evaluating (model inference, checks, human review), i.e. what the protocol itself costs.

    How each figure is measured (the SDK observes the chain; auditors report their own evaluation
    times in their sealed reports): decomposition, sealing and uploads are timed locally; assignment
    runs from sending `createSession` to the last committee drawn; distribution adds the IPFS uploads
    and every round's key delivery; tier-t verification is the wall time covered by the evaluation
    intervals the tier's seats reported (overlapping intervals count once); vote aggregation is the
    time from the keys' delivery to the last reveal that no evaluation covered; finalization runs
    from the last reveal to the trace's verdict. A phase with no reported evaluation is None.
    """

    seconds: dict[str, float | None]
    total_s: float
    overhead_s: float

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {**{key: rounded(self.seconds.get(key)) for key, _, _ in PHASES}, "total": round(self.total_s, 4)}


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The outcome of one audit (`TrustClient.audit_trace`, `audit_agents`, `resume`)."""

    verdict: Verdict
    kind: str
    """"trace" (an HDAG of one model's reasoning) or "agents" (a CIG of a multi-agent log)."""
    nodes: dict[str, NodeResult]
    root_causes: tuple[RootCauseResult, ...]
    failure_reasons: tuple[str, ...]
    transactions: dict[str, tuple[str, ...]]
    proof: Proof
    phases: PhaseTimings
    seats: int
    """Seats drawn for the session, over every round: the distinct members of each committee (a
    member that won several of its draws holds one seat), so at most the draws (k per segment,
    2k+1 per escalation)."""
    graph: Hdag | Cig = field(repr=False, compare=False)
    contradictions: tuple[UnitResult, ...] = ()
    """Every `contradicts` edge of an HDAG, audited as a contradiction segment."""
    edges: tuple[UnitResult, ...] = ()
    """Every message into an audited turn of a CIG, audited as an edge segment (the telephone test)."""
    stationary: tuple[StationaryResult, ...] = ()
    """The agents of a CIG found stuck in a loop (empty for an HDAG)."""

    @property
    def valid(self) -> bool:
        return self.verdict is Verdict.VALID

    @property
    def session_id(self) -> int:
        return self.proof.session_id

    @property
    def overhead_s(self) -> float:
        return self.phases.overhead_s

    def statuses(self) -> dict[str, NodeStatus]:
        return {node_id: node.status for node_id, node in self.nodes.items()}

    @property
    def undetermined(self) -> tuple[str, ...]:
        """The nodes nobody could decide (each `NodeResult.reason` says why); not root causes."""
        return tuple(node_id for node_id, node in self.nodes.items() if node.outcome is Outcome.UNDETERMINED)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": str(self.verdict),
            "kind": self.kind,
            "session_id": self.proof.session_id,
            "nodes": {node_id: node.to_json() for node_id, node in self.nodes.items()},
            "contradictions": [unit.to_json() for unit in self.contradictions],
            "edges": [unit.to_json() for unit in self.edges],
            "stationary": [pair.to_json() for pair in self.stationary],
            "root_causes": [cause.to_json() for cause in self.root_causes],
            "undetermined": list(self.undetermined),
            "failure_reasons": list(self.failure_reasons),
            "transactions": {name: list(hashes) for name, hashes in self.transactions.items()},
            "proof": self.proof.to_json(),
            "seats": self.seats,
            "phases": self.phases.to_json(),
            "overhead_s": round(self.phases.overhead_s, 4),
        }
