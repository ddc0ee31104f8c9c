"""The result of the dual-layer audit of a CIG (paper section 2.2.4), as Algorithm 1 reads it.

Who judges a turn or a message is not decided here: the auditors of `trust.auditors` do (tier-1
checks and the tier-2 judge; `trust.auditors.graph.audit_cig` runs them over a whole CIG, exactly
as the network runs them on one segment). This module holds what the core needs of their answers:
per turn a validity score in [0, 1] with the critiques (`NodeAudit`), per edge a protocol and a
fidelity score (`EdgeScore`, `EdgeAudit`), both together (`CigAudit`, read by
`trust.core.graphs.localize`), and two pure readings of a log that Algorithm 1 and the pages use:
the tool turns that answer a turn (`observations`) and whether a reviewer's text rejects what it
reviewed (`rejects`). Thresholds (tau_node, tau_edge of `trust.settings.AuditSettings`) are applied
by `trust.core.graphs.localize`, never here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role
from trust.errors import GraphError

__all__ = ["CigAudit", "EdgeAudit", "EdgeScore", "NodeAudit", "observations", "rejects"]


def _unit(value: float, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value) or not 0 <= value <= 1:
        raise GraphError(f"{what} {value!r}: expected a number in [0, 1]")
    return float(value)


@dataclass(frozen=True, slots=True)
class EdgeScore:
    """Layer-2 scores of one edge, each in [0, 1]: protocol compliance and information fidelity."""

    protocol: float = 1.0
    fidelity: float = 1.0

    def __post_init__(self) -> None:
        _unit(self.protocol, "protocol score")
        _unit(self.fidelity, "fidelity score")

    def fails(self, tau_edge: float) -> bool:
        """Algorithm 1 line 5: the edge fails when either check scores below tau_edge."""
        return self.protocol < tau_edge or self.fidelity < tau_edge


@dataclass(frozen=True, slots=True)
class NodeAudit:
    """The combined Layer-1 verdicts of one turn: the lowest score of the auditors that decided
    (1.0 when none did), their critiques, and `auditors` that decided. `rejects_input` is set on a
    reviewer turn whose output flags its input as wrong (`rejects`): such a reviewer did not approve
    an invalid parent, whatever its score. `expected` is the correct value the auditors computed
    when exactly one distinct value was stated; None when none was, or when two disagree (feedback
    must not quote a guess)."""

    node_id: str
    score: float
    critique: tuple[str, ...] = ()
    rejects_input: bool = False
    auditors: tuple[str, ...] = ()
    expected: str | None = None

    def __post_init__(self) -> None:
        _unit(self.score, "node score")


@dataclass(frozen=True, slots=True)
class EdgeAudit:
    """The combined Layer-2 verdicts of one edge."""

    source: str
    target: str
    score: EdgeScore
    findings: tuple[str, ...] = ()
    auditors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CigAudit:
    """The audit of every node and every edge of one CIG."""

    nodes: Mapping[str, NodeAudit]
    edges: Mapping[tuple[str, str], EdgeAudit] = field(default_factory=dict)

    def node_scores(self) -> dict[str, float]:
        return {node_id: audit.score for node_id, audit in self.nodes.items()}

    def edge_scores(self) -> dict[tuple[str, str], EdgeScore]:
        return {key: audit.score for key, audit in self.edges.items()}

    def rejecting(self) -> frozenset[str]:
        """Turns whose output rejects their input (see `NodeAudit.rejects_input`)."""
        return frozenset(node_id for node_id, audit in self.nodes.items() if audit.rejects_input)


def observations(cig: Cig, node_id: str) -> list[AgentTurn]:
    """The tool turns that directly answer `node_id` (a sequence or reference edge, not an overlap):
    the terminal that ran its code, the search that answered its query. Section 2.2.4 audits code
    generation by running the code, and the log already holds the run."""
    found: list[AgentTurn] = []
    for child_id in cig.children(node_id):
        child = cig.turn(child_id)
        if child.role is Role.TOOL and cig.edge_origin(node_id, child_id) is not EdgeOrigin.OVERLAP:
            found.append(child)
    return found


_REJECTION = re.compile(
    r"\b(?:incorrect|is wrong|are wrong|was wrong|not correct|mistakes?|errors? in|discrepanc\w*|does not match"
    r"|doesn't match|do not match|inconsistent|inconsistency|failed|fails|reject\w*|needs? to be (?:fixed|corrected)"
    r"|cannot (?:be )?verif\w*|could not (?:be )?verif\w*|not verified|errors?|bugs?"
    r"|(?:correct|fix)(?:ed|ing)? (?:that|this|it|the (?:code|error|issue|mistake|calculation)))\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:no|without|free of|not any|zero|never)\s+(?:\w+\s+){0,2}$", re.I)


def rejects(text: str) -> bool:
    """Whether a reviewer's text flags what it reviewed as wrong (a negated mention does not count:
    "no discrepancies", "without errors")."""
    for match in _REJECTION.finditer(text):
        if not _NEGATION.search(text[max(0, match.start() - 40) : match.start()]):
            return True
    return False
