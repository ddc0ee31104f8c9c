"""How a check that decides several statements of one node words its result.

The arithmetic and the symbolic check each find several statements in a node and decide each one;
they report the same way, written once here: a FAIL names how many are wrong out of how many were
decided, lists the first `MAX_LISTED` details, and carries the first wrong one's fault and exact
expected value (that is what the refinement loop regenerates towards).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from trust.auditors.base import CheckResult, Outcome
from trust.core.graphs.refinement import ErrorType

__all__ = ["MAX_LISTED", "Decided", "failed", "listed"]

MAX_LISTED: Final = 5
"""How many statements a result's detail names (the count covers all of them)."""


class Decided(Protocol):
    """One decided statement: what a check's judgement or finding exposes."""

    @property
    def detail(self) -> str: ...

    @property
    def fault(self) -> str | None: ...

    @property
    def expected(self) -> str | None: ...


def listed(decided: Sequence[Decided]) -> str:
    """The details of the first `MAX_LISTED`, then how many more there are."""
    shown = "; ".join(item.detail for item in decided[:MAX_LISTED])
    return shown if len(decided) <= MAX_LISTED else f"{shown}; and {len(decided) - MAX_LISTED} more"


def failed(name: str, wrong: Sequence[Decided], decided: int, noun: str) -> CheckResult:
    """The FAIL of check `name`: `wrong` (non-empty, in the node's order) out of `decided` `noun`s."""
    first = wrong[0]
    assert first.fault is not None, "a wrong statement always names its fault"
    return CheckResult(
        name,
        Outcome.FAIL,
        f"{len(wrong)} of {decided} {noun} wrong: {listed(wrong)}",
        fault=first.fault,
        error_type=ErrorType.FACTUAL,
        expected=first.expected,
    )
