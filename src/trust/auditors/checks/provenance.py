"""The provenance check: a number a step computes with must come from somewhere (paper 3.1.1, tier 1).

A step of a worked solution computes with what it was given: the problem (the node's input, or
the audit question), the earlier steps (its parents), what it computed itself a moment before, and
the constants any reader knows (`trust.core.maths.quantities.COMMON_CONSTANTS`: 60 minutes in an
hour, 100 for a percentage). An operand in neither is a number from nowhere: a misread value
("each ticket costs $20.25" where $20.25 was the price of three), a wrong intermediate result
carried into the next operation ("7 * 70 - 40 = 470 - 40": 470 was never computed), a value
invented to close the problem. The check fails the step on the first such operand.

What counts as given (`trust.core.maths.quantities.given_values`): every numeral of the problem and
of the parents, a percentage also as its fraction and as the factor of an increase or a decrease,
number words ("twice", "a third", "seventy"), and the value of every part of every operation the
parents wrote; inside the node, the value of every part of each operation it wrote before (so
"20 + 8 = 28, 28 * 2" is grounded). A wrong result carried on ("3 × 4 = 13, 13 + 2") is the
arithmetic check's to fail first; here it is a number from nowhere as well.

The numbers of an equation in an unknown ("14x = 84", "0.07x = 1.89", in the node or before it)
are given too: combining like terms or moving a term writes new coefficients, and whether that
equation follows from the one before is the equation check's to decide, so "x = 84/14" computes
with what the step's own algebra says. An equation that only assigns a value ("x = 84/14") gives
nothing: it is the operation being judged.

A fraction whose value the text already gave or computed ("2/40 = 1/20": 1/20 was just computed;
"3/4 = 9/12") writes a known value anew: its operands are not traced (a constant's value does not
count: "6/2" is not given because 3 is a constant).

What is never failed: numbers outside an operation (a number stated in prose may be a label, a
date, a restatement; the arithmetic check decides stated results), algebra (the coefficients of an
equation), and the output of a tool turn (an observation, not a claim).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.auditors.base import AuditRequest, CheckResult, ErrorType, Outcome, node_text
from trust.auditors.checks.symbolic import statements
from trust.auditors.checks.verdicts import failed, listed
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.maths.expressions import (
    EvaluationError,
    Number,
    Product,
    Symbol,
    evaluate_exact,
    free_symbols,
    subexpressions,
)
from trust.core.maths.quantities import COMMON_CONSTANTS, Operation, given_values, numerals, operations

__all__ = ["AssumptionCheck", "NumberSource", "ProvenanceCheck", "equation_numbers", "known_values"]


@dataclass(frozen=True, slots=True)
class NumberSource:
    """One operand of the node and whether it was given (`holds`); `detail` says where it stands."""

    operand: str
    operation: str
    holds: bool
    detail: str
    fault: str | None = None
    expected: str | None = None


def known_values(texts: Iterable[str], *, constants: bool = True) -> set[Fraction]:
    """What `texts` (the problem, the earlier steps) make available: their given values and the
    value of every part of every operation they wrote, with the common constants (`constants`)."""
    known: set[Fraction] = set(COMMON_CONSTANTS) if constants else set()
    for text in texts:
        known |= given_values(text) | equation_numbers(text)
        for operation in operations(text):
            known |= operation.values
    return known


def equation_numbers(text: str) -> set[Fraction]:
    """The numbers of the equations in an unknown that `text` writes ("14x = 84": 14 and 84), not
    those of an equation that only assigns a value to its unknown ("x = 84/14")."""
    found: set[Fraction] = set()
    for sides, _, ops in statements(text):
        parsed = [side for side in sides if side is not None]
        if "=" not in ops or not any(free_symbols(side) for side in parsed):
            continue
        if any(isinstance(side, Symbol) for side in parsed) and sum(bool(free_symbols(s)) for s in parsed) == 1:
            continue  # "x = 84/14 = 6": a value assigned, the operation the check judges
        for side in parsed:
            found.update(node.value for node in subexpressions(side) if isinstance(node, Number))
    return found


def _given(value: Fraction, known: set[Fraction]) -> bool:
    # "0.2" for a given 20%, and "20" for a given 0.2: the same quantity in the other scale; a
    # constant is not rescaled (5 is no "0.05", the nickel, read as a percentage)
    if value in known:
        return True
    return any(other in known and other not in COMMON_CONSTANTS for other in (value * 100, value / 100))


def _restates(operation: Operation, known: set[Fraction]) -> bool:
    """Whether `operation` is a fraction of two literals whose value the text already gave or
    computed ("1/20" after "2/40"): a value written anew (a constant's value does not count)."""
    expr = operation.expr
    if not (isinstance(expr, Product) and len(expr.rest) == 1 and expr.rest[0][0] == "/"):
        return False
    try:
        return evaluate_exact(expr) in known
    except EvaluationError:
        return False


def _sources(request: AuditRequest) -> list[str]:
    texts = [request.question]
    if isinstance(request.node, AgentTurn):
        texts.append(request.node.input)
    return texts + [node_text(parent) for parent in request.parents]


@dataclass(frozen=True, slots=True)
class ProvenanceCheck:
    """Fails a node that computes with a number it was never given; see the module docstring."""

    @property
    def name(self) -> str:
        return "provenance"

    def sources(self, request: AuditRequest) -> list[NumberSource]:
        """Every operand of the node's operations, in order, with whether it was given."""
        known = known_values(_sources(request)) | equation_numbers(node_text(request.node))
        found: list[NumberSource] = []
        for operation in operations(node_text(request.node)):
            restated = _restates(operation, known - COMMON_CONSTANTS)
            for operand in operation.operands:
                if restated:  # "2/40 = 1/20", "3/4 = 9/12": a known value written anew, not computed from inputs
                    detail = f"{operand.text} in {operation.text!r} writes a known value anew"
                    found.append(NumberSource(operand.text, operation.text, True, detail))
                else:
                    found.append(self._judge(operand, operation.text, known))
            known |= operation.values
        return found

    @staticmethod
    def _judge(operand: Number, operation: str, known: set[Fraction]) -> NumberSource:
        if _given(operand.value, known):
            return NumberSource(operand.text, operation, True, f"{operand.text} in {operation!r} is given")
        detail = (
            f"{operand.text} in {operation!r} is in neither the problem nor an earlier step, "
            "and was not computed before"
        )
        return NumberSource(operand.text, operation, False, detail, "number from nowhere")

    async def check(self, request: AuditRequest) -> CheckResult:
        node = request.node
        if isinstance(node, AgentTurn) and node.role is Role.TOOL:
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, "a tool's output is an observation of its environment, not a claim"
            )
        sources = self.sources(request)
        if not sources:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "no operation with numbers was found")
        wrong = [source for source in sources if not source.holds]
        if wrong:
            return failed(self.name, wrong, len(sources), "operand(s)")
        return CheckResult(self.name, Outcome.PASS, f"{len(sources)} operand(s), all given: {listed(sources)}")


_ASSUMES: Final = re.compile(r"\bassum(?:e|es|ed|ing|ption)\b", re.I)


@dataclass(frozen=True, slots=True)
class AssumptionCheck:
    """Fails a step that says it assumes something and writes a number nobody gave it.

    A worked solution's problem gives every number the solution needs. A step that announces an
    assumption ("assuming a standard workweek of 5 days", "we assume 4 weeks in a month") and
    writes a number that is in neither the problem, an earlier step nor its own calculations has
    supplied data of its own: the answer then solves another problem. Here a common constant does
    not count as given (`COMMON_CONSTANTS`), since an assumption is exactly how a solution brings
    in a "usual" value the problem did not state; a constant the problem or an earlier step wrote
    is given. A step with no such word is the provenance check's to judge."""

    @property
    def name(self) -> str:
        return "assumptions"

    def assumed(self, request: AuditRequest) -> list[str]:
        """The numbers (as written) that an assuming node brings in from nowhere; [] when it does
        not say it assumes anything."""
        text = node_text(request.node)
        if not _ASSUMES.search(text):
            return []
        known = known_values(_sources(request), constants=False) | equation_numbers(text)
        for operation in operations(text):
            # what the step computed, not the literals it computed with ("5 × $30": 150, not 5)
            known |= operation.values - {operand.value for operand in operation.operands}
            try:
                known.add(evaluate_exact(operation.expr))
            except EvaluationError:
                pass
        # zero is no data: "0 left", "a remainder of 0"
        return [
            f"{value}{'%' if percent else ''}"
            for value, percent in numerals(text)
            if value and not _given(value, known)
        ]

    async def check(self, request: AuditRequest) -> CheckResult:
        node = request.node
        if isinstance(node, AgentTurn) and node.role is Role.TOOL:
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, "a tool's output is an observation of its environment, not a claim"
            )
        if not _ASSUMES.search(node_text(node)):
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "the step assumes nothing")
        assumed = self.assumed(request)
        if not assumed:
            return CheckResult(
                self.name, Outcome.PASS, "the step assumes something, but every number it writes is given"
            )
        detail = (
            f"the step assumes something and writes {', '.join(assumed)}, which neither the problem nor an "
            "earlier step gives: it supplies data the problem did not state"
        )
        return CheckResult(self.name, Outcome.FAIL, detail, fault="assumed data", error_type=ErrorType.FACTUAL)
