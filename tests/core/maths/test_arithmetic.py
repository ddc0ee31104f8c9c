"""Exact evaluation of decomposed operations (tier-1 check), read by the one maths engine."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.maths.arithmetic import MAX_CHARS, check_expression


@pytest.mark.parametrize(
    ("expression", "holds"),
    [
        ("12 * 3 == 36", True),
        ("12 * 3 == 37", False),
        ("0.1 + 0.2 == 0.3", True),  # exact, not floating point
        ("1 / 3 * 18 == 6", True),
        ("(50 / 100) * 30 == 15", True),
        ("abs(10 / 3 - 3.33) <= 0.005", True),
        ("abs(10 / 3 - 3.34) <= 0.005", False),
        ("2 ** 3 == 8", True),
        ("4 * 2 ** 3 == 4 * 8", True),
        ("-5 + 2 == -3", True),
        ("1 < 2 < 3", True),
        ("1 < 3 < 2", False),
        ("1 != 2", True),
        ("2 >= 3", False),
    ],
)
def test_expressions(expression: str, holds: bool) -> None:
    assert check_expression(expression).holds is holds


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "12 * 3",  # not a comparison
        "x + 1 == 2",  # a name
        "__import__('os').system('true') == 0",  # never executed
        "(1).real == 1",
        "2 ** 100000 == 1",  # exponent bound
        "2 ** 0.5 == 1",  # irrational
        "1 / 0 == 1",
        "abs(1, 2) == 1",
        "'a' == 'a'",
        "1 == 1 == ",
        "10 / 3 ≈ 3.3",  # an approximation states no exact relation
        "1 + 1 == 2" + " " * MAX_CHARS,
    ],
)
def test_uncheckable_expressions_judge_nothing(expression: str) -> None:
    check = check_expression(expression)
    assert check.holds is None and check.reason


def test_sides_are_exact_fractions() -> None:
    check = check_expression("10 / 4 == 2.5")
    assert check.left == Fraction(5, 2) == check.right


# Inputs on which the former Python-`ast` evaluator and the maths engine answered differently. The
# engine is the only reader now, so each has one answer, the same as the tier-1 arithmetic check's.


def test_percent_is_a_percentage_not_a_remainder() -> None:
    # ast read "%" as Python's modulo (7 % 4 == 3 held); in maths and in every trace it is a percentage
    assert check_expression("50% == 0.5").holds is True
    assert check_expression("25% * 80 == 20").holds is True
    assert check_expression("7 % 4 == 3").holds is None


@pytest.mark.parametrize("expression", ["7 // 2 == 3", "max(2, 5) - min(2, 5) == 3"])
def test_python_only_operators_are_not_maths(expression: str) -> None:
    # floor division and min/max were whitelisted by the ast evaluator; no decomposed operation uses them
    check = check_expression(expression)
    assert check.holds is None and "cannot parse" in check.reason


def test_a_large_exact_value_is_computed_not_refused() -> None:
    # 9^420 (1,332 bits) was refused by a 400-digit cap; the engine computes up to 65,536 bits exactly
    expression = " * ".join(["9 ** 60"] * 7)
    assert check_expression(f"{expression} == 1").holds is False
    assert check_expression(f"{expression} == 9 ** 420").holds is True


def test_exponent_towers_are_refused_at_once() -> None:
    check = check_expression("9 ** 9 ** 9 == 1")  # 9^387420489: refused before any multiplication
    assert check.holds is None and "387420489" in check.reason


def test_rational_exponents_with_exact_roots_are_computed() -> None:
    # ast refused any non-integer exponent; the engine computes a rational power whose root is exact
    assert check_expression("4 ** 0.5 == 2").holds is True
    assert check_expression("8 ** (1 / 3) == 2").holds is True


def test_notation_that_traces_write_is_read() -> None:
    # ast could not read LaTeX, thousands separators or typographic signs: all were "not an expression"
    assert check_expression("\\frac{1}{3} * 3 == 1").holds is True
    assert check_expression("1,234 + 1 == 1235").holds is True
    assert check_expression("6 × 7 == 42").holds is True
    assert check_expression("2^10 = 1024").holds is True


def test_one_third_rounded_holds_only_within_half_a_unit() -> None:
    assert check_expression("abs(1 / 3 - 0.33) <= 0.005").holds is True
    assert check_expression("abs(1 / 3 - 0.34) <= 0.005").holds is False
    assert check_expression("1 / 3 == 0.33").holds is False  # exactly, a third is not 0.33


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6), st.sampled_from(["+", "-", "*"]))
def test_integer_arithmetic_agrees_with_python(a: int, b: int, op: str) -> None:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    assert check_expression(f"{a} {op} {b} == {value}").holds is True
    assert check_expression(f"{a} {op} {b} == {value + 1}").holds is False
