"""Tier-1 check of a contradiction unit (paper 3.2.3): two claims that give one named quantity two
different values contradict each other, whatever else they say.

The seat of a `contradicts` edge is asked whether its two claims really contradict each other
(`trust.auditors.base.AuditLayer.CONTRADICTION`). The one deterministic answer is a quantity the
two claims name with different values (`trust.core.maths.assignments.conflicting_values`, the one
maths engine's reading): FAIL, the contradiction is confirmed. Anything else (no shared quantity,
or agreement on every shared one) is a contradiction in words or none at all, which this check
cannot tell apart: NOT_APPLICABLE, never a guessed pass. The router sends a contradiction unit to
tier 1 only when this check decides it (`trust.core.graphs.units.contradiction_tier`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from trust.auditors.base import AuditLayer, AuditRequest, CheckResult, Outcome, node_text
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.assignments import conflicting_values

__all__ = ["ContradictionCheck"]


def _number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


@dataclass(frozen=True, slots=True)
class ContradictionCheck:
    """Confirms a contradiction where the two claims give one quantity two values."""

    @property
    def name(self) -> str:
        return "contradiction"

    async def check(self, request: AuditRequest) -> CheckResult:
        if request.layer is not AuditLayer.CONTRADICTION:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "not a contradiction unit")
        earlier, later = request.parents[0], request.node
        conflicts = conflicting_values(node_text(earlier), node_text(later))
        if not conflicts:
            return CheckResult(
                self.name,
                Outcome.NOT_APPLICABLE,
                "the two claims give no named quantity two different values; whether they contradict is a "
                "matter of meaning",
            )
        found = "; ".join(
            f"{c.name!r} is {_number(c.first)} in {earlier.id} ({c.first_text!r}) and {_number(c.second)} in "
            f"{later.id} ({c.second_text!r})"
            for c in conflicts
        )
        return CheckResult(
            self.name, Outcome.FAIL, found, fault="contradiction confirmed", error_type=ErrorType.LOGICAL
        )
