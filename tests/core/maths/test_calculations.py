"""The one calculation finder (`trust.core.maths.calculations`), shared by the decomposer and the
tier-1 arithmetic check: what it finds, what it leaves out, and that both readers agree."""

from __future__ import annotations

import pytest

from trust.auditors.base import AuditRequest, Outcome
from trust.auditors.checks import ArithmeticCheck
from trust.core.decompose.rules import extract_operations
from trust.core.graphs.hdag import HdagNode, Level
from trust.core.maths.arithmetic import check_expression
from trust.core.maths.calculations import find_calculations
from trust.core.maths.expressions import render


def found(text: str) -> list[tuple[str, str, str]]:
    return [(render(c.left), c.relation, render(c.right)) for c in find_calculations(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("17 × 23 = 391", [("17 * 23", "=", "391")]),
        ("2 * 3 + 4 = 6 + 4 = 10", [("2 * 3 + 4", "=", "6 + 4"), ("6 + 4", "=", "10")]),
        ("58 < 75; 85 ≥ 75", [("58", "<", "75"), ("85", "≥", "75")]),
        ("100/7 ≈ 14.3", [("100 / 7", "≈", "14.3")]),
        ("5 hours × 12 dollars/hour = 60 dollars", [("5 * 12", "=", "60")]),
        ("25% of 80 = 20", [("25% * 80", "=", "20")]),
        ("<<48/2=24>>", [("48 / 2", "=", "24")]),
        ("5! = 120", [("5!", "=", "120")]),
        ("Total = 20 + 4*25. Later: Total = 120", [("20 + 4 * 25", "=", "120")]),
        # a value followed by a word is the value ("38 times."), by an operator word and an operand not
        ("the alarm rang 4 + 16 = 20 times.", [("4 + 16", "=", "20")]),
        ("so 2 + 1 = 3 times 4 of them", []),
        # a parenthesis after a value opens a remark, it is not glued to it
        ("8 ÷ 3 = 2.67 (round up to 3)", [("8 / 3", "=", "2.67")]),
        ("3 * 8 = 24kg", [("3 * 8", "=", "24")]),
        # a slash glued to a number before a unit word writes a rate, not a division by a word
        ("Total = 40 students * $12/student = $480", [("40 * 12", "=", "480")]),
        (r"\(3 \text{ boxes} \times \$7/\text{box} = \$21\)", [("3 * 7", "=", "21")]),
        ("so 6 * 2/x = 4", []),
    ],
)
def test_what_is_found(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "`2+2=5` inline",  # code
        "```\n2 + 2 = 5\n```",
        "~~~\n2 + 2 = 5\n~~~",
        "Step 1 = 2 + 2",  # a label
        "15 pages x 1/3 = 5 pages",  # an operand in words
        "half of 10 + 2 = 7",
        "v1.2 + 3 = 4",  # glued to a word
        "25 classmates + his 1 teacher + 1 himself = 27 people",  # the sum began before the words
        "So, 5 quarters = 5 * 25 cents",  # a conversion
        "12 = 12",  # two bare numbers
        "2x + 3 = 7",  # a variable
    ],
)
def test_what_is_not_a_calculation(text: str) -> None:
    assert found(text) == []


def test_a_list_marker_is_not_a_minus_sign() -> None:
    # the decomposer read "- 2 + 3 = 6" as -2 + 3 and wrote "-2 + 3 == 6"
    assert found("- 2 + 3 = 6") == [("2 + 3", "=", "6")]
    assert [op.expression for op in extract_operations("- 2 + 3 = 6")] == ["2 + 3 == 6"]


def test_a_side_keeps_what_was_written_and_the_rest_of_its_line() -> None:
    (calculation,) = find_calculations("\\( \\frac{43}{5} = 8 \\) full pens (with a remainder of 3)")
    assert calculation.after.split() == ["full", "pens", "(with", "a", "remainder", "of", "3)"]
    (units,) = find_calculations("2 books × 2 pounds/book = 4 pounds")
    assert (units.left_text, units.written, units.units) == (
        "2 books × 2 pounds/book",
        "2 books × 2 pounds/book = 4",
        True,
    )
    (cut,) = find_calculations("180 cups / 110 cups per bag = 1.636... bags")
    assert cut.truncated


# ---------------------------------------------------------------------------- one reading


def operation(text: str) -> AuditRequest:
    return AuditRequest(HdagNode("v1", Level.OPERATION, text, domain="math"))


@pytest.mark.parametrize(
    "text",
    [
        "2 books × 2 pounds/book = 5 pounds",
        "2 books × 2 pounds/book = 4 pounds",
        "25% of 80 = 21",
        "Jake pays $8 / 2 = $4, then $4 * 2 = $9.",
        "\\(\\frac{480 \\text{ miles}}{60 \\text{ miles/hour}} = 7\\)",
        "Total = 20 + 4*25. So Total = 130.",
        "6 peaches × $0.75 per peach = $4.50",
        "180 cups / 110 cups per bag = 1.636... bags",
        "Step 1 = 2 + 2",
        "`2+2=5` inline",
    ],
)
async def test_the_decomposer_and_the_check_read_the_same_calculations(text: str) -> None:
    # every operation the decomposer writes is a calculation the tier-1 check judges, with the same verdict
    operations = extract_operations(text)
    verdicts = [check_expression(op.expression).holds for op in operations]
    result = await ArithmeticCheck().check(operation(text))
    if not operations:
        assert result.outcome is Outcome.NOT_APPLICABLE
    else:
        assert result.outcome is (Outcome.PASS if all(verdicts) else Outcome.FAIL), (verdicts, result.detail)
