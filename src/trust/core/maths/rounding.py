"""The one rule for a number written rounded, shared by every checker of calculations.

People and models state results at some precision: "10/3 = 3.33", "6 × $0.75 = $4.50", "1.636...",
"π ≈ 3.14", "1000/3 ≈ 300". The digits written say how far the stated value may lie from the exact
one, and every place that compares a computed value with a stated literal uses these functions:
the arithmetic check (`trust.auditors.checks.arithmetic`), the symbolic check
(`trust.auditors.checks.symbolic`) and the rule-based decomposer, which writes the tolerance into
an operation's `expression` (`trust.core.decompose.rules`).

- "=" with a decimal literal: the stated value is the exact one rounded to its own decimals, so it
  may differ by at most half a unit of its last decimal (`rounds_to`, `half_unit`): 10/3 = 3.33 and
  10/3 = 3.3 hold, 10/3 = 3.34 and the truncation 2/3 = 0.66 do not. At an exact half either
  direction holds (2.5 may be written 2 or 3).
- digits cut short ("1.636..."): the value goes on beyond them, so a whole unit of the last digit
  written (`unit`).
- "≈": one unit of the last significant digit (`significant_unit`): 0.1 for 14.3, 100 for 300.

Values are `fractions.Fraction`, so no comparison here is subject to binary floating point.
"""

from __future__ import annotations

from fractions import Fraction

from trust.core.maths.expressions import Expr, Negate, Number, Percent

__all__ = ["decimals", "half_unit", "literal", "rounds_to", "significant_unit", "unit"]


def literal(expr: Expr, *, percent: bool = True) -> Number | None:
    """The number a stated literal is written with ("391", "-3", "25%" when `percent`), else None."""
    while isinstance(expr, Negate) or (percent and isinstance(expr, Percent)):
        expr = expr.operand
    return expr if isinstance(expr, Number) else None


def decimals(number: Number) -> int:
    """The digits written after the decimal point: 2 for "4.50", 0 for "1,200"."""
    digits = number.text.replace(",", "")
    return len(digits.split(".", 1)[1]) if "." in digits else 0


def unit(places: int) -> Fraction:
    """One unit of the last of `places` decimals (places >= 0): 1/100 for 2, 1 for 0."""
    return Fraction(1, 10**places)


def half_unit(places: int) -> Fraction:
    """How far a value rounded to `places` decimals may lie from the exact one: 0.005 for 2."""
    return Fraction(1, 2 * 10**places)


def rounds_to(value: Fraction, stated: Fraction, places: int) -> bool:
    """Whether `stated` is `value` rounded to `places` decimals (either way at an exact half)."""
    return abs(value - stated) <= half_unit(places)


def significant_unit(number: Number) -> Fraction:
    """One unit of the last significant digit written: 0.1 for "14.3", 100 for "300", 1 for "14"
    (and for "0": a zero has no significant digit to scale by)."""
    places = decimals(number)
    if places:
        return unit(places)
    digits = number.text.replace(",", "")
    zeros = len(digits) - len(digits.rstrip("0")) if digits.strip("0") else 0
    return Fraction(10**zeros)
