"""The arithmetic check: every calculation a node states, recomputed exactly (paper 3.1.1, tier 1).

`ArithmeticCheck` finds the calculations in the node's text (and, for an HDAG node, in its
`expression`), recomputes each with `fractions.Fraction` (`trust.core.maths.expressions`) and
compares it with the value stated. It passes when every calculation it found holds, fails on the
wrong ones with the exact value as `expected`, and is not applicable when it found none.

The calculations are those the one calculation finder finds
(`trust.core.maths.calculations.find_calculations`, which the rule-based decomposer uses too, so
an operation it cut out of a step is the calculation checked here): calculator annotations
"<<48/2=24>>", relations between numeric sides in prose ("17 × 23 = 391", chains, "25% of 80 = 20",
"5 hours × 12 dollars/hour = 60 dollars", "\\frac{10}{3} = 3.33") and numeric comparisons
("58 < 75", checked for truth). What the finder leaves out (code, variables, labels, ratios,
versions, operands in words, sides that run into words: see its docstring) is never failed here.

A stated value may be rounded to its own number of decimals: 10/3 = 3.33 and 10/3 = 3.3 hold,
10/3 = 3.4 does not, and neither does the truncation 2/3 = 0.66 (rounding, as the float
checker it replaced did; truncation is not accepted), except a whole quotient that the rest of
its line says is one: "43/5 = 8 full pens (with a remainder of 3)". A percentage holds when it is the value
(50/200 = 25%) or the value times 100 (0.25 * 100 = 25%). "≈" allows one unit of the last
significant digit (100/7 ≈ 14.3, 1000/3 ≈ 300), and digits cut short one unit of the last digit
written (180/110 = 1.636... holds, 1.637... does not): `trust.core.maths.rounding`.

What is found but never failed (undecidable, not wrong):

- a side without an exact value (sqrt(2), a division by zero, a power beyond the engine's limits);
- "=" used as "then", a running total ("3/2 = 1.50 + 3.00 = 4.50");
- percentages of an unstated base ("48 = 100% + 20%");
- a wrong result whose side holds an unspaced hyphen between digits ("65-74 = 10"): a range or a
  date, not a subtraction;
- the output of a tool turn (an observation of the environment, not a claim).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.auditors.base import AuditRequest, CheckResult, Outcome
from trust.auditors.checks.verdicts import MAX_LISTED, failed, listed
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import HdagNode
from trust.core.maths.calculations import Calculation, find_calculations
from trust.core.maths.expressions import (
    EvaluationError,
    Expr,
    Factorial,
    Negate,
    Number,
    Percent,
    Power,
    Product,
    Sum,
    evaluate_exact,
    format_exact,
    render,
    subexpressions,
)
from trust.core.maths.rounding import decimals, literal, rounds_to, significant_unit, unit

__all__ = [
    "MAX_LISTED",
    "ArithmeticCheck",
    "Judgement",
    "judge",
]

_RANGE = re.compile(r"\d-\d")
_WHOLE_QUOTIENT = re.compile(r"\b(?:remainders?|left over|round(?:ed|ing)? down|floor|whole|complete|full)\b", re.I)


@dataclass(frozen=True, slots=True)
class Judgement:
    """Whether a calculation holds; for a wrong one, its fault and the exact value (`expected`)."""

    calculation: Calculation
    holds: bool
    detail: str
    fault: str | None = None
    expected: str | None = None


def _is_literal(expr: Expr) -> bool:
    """A number as stated, maybe signed or a percentage: "391", "-3", "25%"."""
    return literal(expr) is not None


# ---------------------------------------------------------------------------------------------- judging


def _fault(expr: Expr) -> str:
    while isinstance(expr, Negate):
        expr = expr.operand
    if isinstance(expr, Sum):
        ops = {op for op, _ in expr.rest}
        return "wrong sum" if ops == {"+"} else "wrong difference" if ops == {"-"} else "wrong calculation"
    if isinstance(expr, Product):
        ops = {"*" if op == "" else op for op, _ in expr.rest}
        return "wrong product" if ops == {"*"} else "wrong quotient" if ops == {"/"} else "wrong calculation"
    if isinstance(expr, Power):
        return "wrong power"
    if isinstance(expr, Factorial):
        return "wrong factorial"
    if isinstance(expr, Percent):
        return "wrong percentage"
    return "wrong calculation"


_TRUE_RELATION: Final = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "≤": lambda a, b: a <= b,
                         "≥": lambda a, b: a >= b, "≠": lambda a, b: a != b}  # fmt: skip


def judge(calculation: Calculation) -> Judgement | None:
    """Whether `calculation` holds, exactly; None when it cannot be decided (a side without an
    exact value, or a wrong result that is ambiguous in prose: see the module docstring)."""
    try:
        left = evaluate_exact(calculation.left)
        right = evaluate_exact(calculation.right)
    except EvaluationError:
        return None
    op = calculation.relation
    text = calculation.text
    if op in _TRUE_RELATION:
        if _TRUE_RELATION[op](left, right):
            return Judgement(calculation, True, text)
        truth = "<" if left < right else ">" if left > right else "="
        expected = f"{format_exact(left)} {truth} {format_exact(right)}"
        return _wrong(calculation, "false comparison", expected, f"{text} is false: {expected}")
    stated_expr, computed_expr = calculation.right, calculation.left
    stated, computed = right, left
    if not _is_literal(stated_expr) and _is_literal(calculation.left):
        stated_expr, computed_expr, stated, computed = calculation.left, calculation.right, left, right
    computed_text = calculation.left_text if computed_expr is calculation.left else calculation.right_text
    if op == "≈":
        stated_number = literal(stated_expr)
        if stated_number is None:
            return None
        if abs(computed - stated) <= significant_unit(stated_number):
            return Judgement(calculation, True, text)
        expected = format_exact(computed)
        return _wrong(calculation, "wrong approximation", expected, f"{text}, but {computed_text} = {expected}")
    if computed == stated:
        return Judgement(calculation, True, text)
    running = calculation.source == "text" and not _is_literal(stated_expr)
    if running and (_runs_on(computed_expr, stated) or _runs_on(stated_expr, computed)):
        return None  # "3/2 = 1.50 + 3.00 = 4.50": "=" used as "then", a running total
    percent = isinstance(stated_expr, Percent) or (
        isinstance(stated_expr, Negate) and isinstance(stated_expr.operand, Percent)
    )
    stated_number = literal(stated_expr)
    if stated_number is not None:
        places = decimals(stated_number)
        quotient = isinstance(computed_expr, Product) and computed_expr.rest[-1][0] == "/"
        if quotient and places == 0 and stated == int(computed) and _WHOLE_QUOTIENT.search(calculation.after):
            return Judgement(calculation, True, f"{text} (a whole quotient, as the text says)")
        if calculation.truncated and stated_expr is calculation.right and abs(computed - stated) <= unit(places):
            return Judgement(calculation, True, f"{text}... (cut short)")
        if rounds_to(computed, stated, places + (2 if percent else 0)):
            return Judgement(calculation, True, f"{text} (rounded)")
        if percent and rounds_to(computed, stated * 100, places):
            return Judgement(calculation, True, f"{text} (as a percentage)")
    if _only_percentages(computed_expr) and not percent:
        return None  # "48 = 100% + 20%" (of something else): percentages of an unstated base
    if calculation.source != "annotation" and _RANGE.search(calculation.left_text + " " + calculation.right_text):
        return None  # "65-74 = 10": a range or a date, not a subtraction
    expected = f"{format_exact(computed * 100)}%" if percent else format_exact(computed)
    fault = "wrong percentage" if percent else _fault(computed_expr)
    return _wrong(calculation, fault, expected, f"{text}, but {computed_text} = {expected}")


def _runs_on(expr: Expr, previous: Fraction) -> bool:
    """Whether `expr` continues a running computation from `previous`: "1.50 + 3.00" after 3/2."""
    if not isinstance(expr, Sum | Product) or not _is_literal(expr.first):
        return False
    try:
        return evaluate_exact(expr.first) == previous
    except EvaluationError:
        return False


def _only_percentages(expr: Expr) -> bool:
    leaves = [node for node in subexpressions(expr) if isinstance(node, Number)]
    percents = [node for node in subexpressions(expr) if isinstance(node, Percent)]
    return bool(leaves) and len(percents) == len(leaves)


def _wrong(calculation: Calculation, fault: str, expected: str, detail: str) -> Judgement:
    return Judgement(calculation, False, detail, fault, expected)


# ---------------------------------------------------------------------------------------------- the check


@dataclass(frozen=True, slots=True)
class ArithmeticCheck:
    """Recomputes every calculation of a node exactly; see the module docstring."""

    @property
    def name(self) -> str:
        return "arithmetic"

    def calculations(self, request: AuditRequest) -> list[Calculation]:
        """The calculations of the node's text and, for an HDAG node, its `expression`, without
        repeats (a prose restatement of an annotation is the same calculation)."""
        found = find_calculations(request.text)
        node = request.node
        if isinstance(node, HdagNode) and node.expression:
            found += find_calculations(node.expression, source="expression")
        unique: dict[tuple[str, str, str], Calculation] = {}
        for calculation in found:
            key = (render(calculation.left), calculation.relation, render(calculation.right))
            unique.setdefault(key, calculation)
        return list(unique.values())

    async def check(self, request: AuditRequest) -> CheckResult:
        node = request.node
        if isinstance(node, AgentTurn) and node.role is Role.TOOL:
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, "a tool's output is an observation of its environment, not a claim"
            )
        calculations = self.calculations(request)
        judgements = [j for j in (judge(c) for c in calculations) if j is not None]
        if not judgements:
            skipped = f" ({len(calculations)} found without an exact value)" if calculations else ""
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, f"no calculation with numbers only was found{skipped}"
            )
        wrong = [j for j in judgements if not j.holds]
        if wrong:
            return failed(self.name, wrong, len(judgements), "calculation(s)")
        return CheckResult(
            self.name,
            Outcome.PASS,
            f"{len(judgements)} calculation(s) checked exactly, all hold: {listed(judgements)}",
        )
