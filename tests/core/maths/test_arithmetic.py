"""Exact evaluation of decomposed operations (tier-1 check)."""

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
        ("7 // 2 == 3", True),
        ("7 % 4 == 3", True),
        ("max(2, 5) - min(2, 5) == 3", True),
        ("1 < 2 < 3", True),
        ("1 < 3 < 2", False),
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
        "2 ** 0.5 == 1",
        "1 / 0 == 1",
        "abs(1, 2) == 1",
        "'a' == 'a'",
        "1 == 1 == ",
        "9 ** 60 * 9 ** 60 * 9 ** 60 * 9 ** 60 * 9 ** 60 * 9 ** 60 * 9 ** 60 == 1",  # digit bound
        "1 + 1 == 2" + " " * MAX_CHARS,
    ],
)
def test_uncheckable_expressions_judge_nothing(expression: str) -> None:
    check = check_expression(expression)
    assert check.holds is None and check.reason


def test_sides_are_exact_fractions() -> None:
    check = check_expression("10 / 4 == 2.5")
    assert check.left == Fraction(5, 2) == check.right


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6), st.sampled_from(["+", "-", "*"]))
def test_integer_arithmetic_agrees_with_python(a: int, b: int, op: str) -> None:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    assert check_expression(f"{a} {op} {b} == {value}").holds is True
    assert check_expression(f"{a} {op} {b} == {value + 1}").holds is False
