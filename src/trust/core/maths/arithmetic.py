"""Exact evaluation of the checkable `expression` of an HDAG operation node (a tier-1 check).

`trust.core.decompose.rules` writes every extracted calculation as a comparison in Python syntax
(`trust.core.maths.expressions.to_python`): "12 * 3 == 36", or, when the trace rounded its
result, "abs(10 / 3 - 3.33) <= 0.005". This module reads such a comparison with the project's one
parser (`parse_statement`) and evaluates both sides exactly with `evaluate_exact` (fractions, so
0.1 + 0.2 == 0.3 holds). Nothing is executed: the text only selects the parser's constructors.

What is read is the engine's language, so an expression means here what it means to the tier-1
checks: `%` is a percentage ("50% == 0.5"), not Python's remainder; `^` and `**` are powers;
`abs` is the only function with an exact value besides `sqrt`. Python's `//`, `min` and `max`
are not maths the parser reads, and such an expression is uncheckable (`holds` None), as is one
with a variable, an irrational value, a division by zero, or a value beyond the engine's limits
(`MAX_EXPRESSION_CHARS` characters; powers refused beyond `MAX_EXACT_EXPONENT` or
`MAX_EXACT_BITS` bits, so 9 ** 9 ** 9 is refused at once instead of computed).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.core.maths.expressions import (
    MAX_EXPRESSION_CHARS,
    EvaluationError,
    ParseError,
    evaluate_exact,
    parse_statement,
)

__all__ = ["MAX_CHARS", "ExpressionCheck", "check_expression"]

MAX_CHARS: Final = MAX_EXPRESSION_CHARS
"""The longest expression read, in characters (the engine's own limit)."""

_COMPARE: Final = {
    "=": lambda a, b: a == b,
    "≠": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "≤": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "≥": lambda a, b: a >= b,
}


@dataclass(frozen=True, slots=True)
class ExpressionCheck:
    """`holds` is True or False when the expression could be evaluated, None when it could not
    (`reason` says why). `left` and `right` are the two sides of a single comparison, exactly."""

    holds: bool | None
    reason: str = ""
    left: Fraction | None = None
    right: Fraction | None = None


def check_expression(expression: str) -> ExpressionCheck:
    """Whether a comparison such as "12 * 3 == 36" (or a chain "1 < 2 < 3") holds, exactly; see the
    module docstring for what is read."""
    if not isinstance(expression, str) or not expression.strip():
        return ExpressionCheck(None, "empty expression")
    if len(expression) > MAX_CHARS:  # counted as given: padding does not slip a long text past the limit
        return ExpressionCheck(None, f"longer than {MAX_CHARS} characters")
    try:
        statement = parse_statement(expression.strip())
    except ParseError as exc:
        return ExpressionCheck(None, str(exc))
    if not statement.ops:
        return ExpressionCheck(None, "not a comparison")
    if "≈" in statement.ops:
        return ExpressionCheck(None, "an approximation (≈) states no exact relation; write the tolerance with abs()")
    try:
        values = [evaluate_exact(side) for side in statement.sides]
    except EvaluationError as exc:
        return ExpressionCheck(None, str(exc))
    holds = all(_COMPARE[op](left, right) for op, left, right in zip(statement.ops, values, values[1:], strict=False))
    single = len(values) == 2
    return ExpressionCheck(holds, "", values[0] if single else None, values[1] if single else None)
