"""The exact arithmetic check (`trust.auditors.checks.arithmetic`).

A wrong product fails with the exact value expected (17*23 = 409: 391); rounding to the stated
decimals and percentages hold; the false positives of prose (code, dates, ranges, ratios, list
numbers, versions, definitions, operands in words) are skipped. On real data, every one of the
4,282 calculator annotations of the GSM8K test split (1,301 solutions) holds, and a copy with one result changed
fails with the right value; the prose of the same solutions holds too, except two statements the
reference solutions really get wrong.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.auditors.base import AuditRequest, Check, Outcome
from trust.auditors.checks import ArithmeticCheck
from trust.auditors.checks.arithmetic import judge
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import HdagNode, Level
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.calculations import find_calculations

CHECK = ArithmeticCheck()
GSM8K = Path("/work/shared/data/gsm8k/test.jsonl")
PROCESSBENCH = Path("/work/shared/data/processbench/gsm8k.json")
ANNOTATION = re.compile(r"<<([^<>]*)>>")


def operation(content: str, expression: str | None = None) -> AuditRequest:
    return AuditRequest(HdagNode("v1", Level.OPERATION, content, domain="math", expression=expression))


def outcomes(text: str) -> list[tuple[bool, str | None] | None]:
    """(holds, expected) for each calculation found in `text`, None where it cannot be decided."""
    return [None if j is None else (j.holds, j.expected) for j in map(judge, find_calculations(text))]


def test_it_is_a_check() -> None:
    assert isinstance(CHECK, Check) and CHECK.name == "arithmetic"


# ------------------------------------------------------------------------------ the check


async def test_catches_a_wrong_product() -> None:
    result = await CHECK.check(operation("17*23=409"))
    assert result.outcome is Outcome.FAIL
    assert (result.fault, result.error_type, result.expected) == ("wrong product", ErrorType.FACTUAL, "391")
    assert "17*23 = 409, but 17*23 = 391" in result.detail


async def test_passes_and_counts_what_it_checked() -> None:
    result = await CHECK.check(operation("17 × 23 = 391, and 391 + 9 = 400. Then 400 / 3 = 133.33."))
    assert result.outcome is Outcome.PASS
    assert result.detail.startswith("3 calculation(s) checked exactly, all hold")
    assert (result.fault, result.expected) == (None, None)


async def test_every_wrong_calculation_is_listed_and_the_first_is_expected() -> None:
    result = await CHECK.check(operation("2 + 2 = 5; 3 * 3 = 9; 10 / 4 = 2.6; 7 - 10 = 3"))
    assert result.outcome is Outcome.FAIL
    assert result.detail.startswith("3 of 4 calculation(s) wrong")
    assert (result.fault, result.expected) == ("wrong sum", "4")
    assert "10 / 4 = 2.6, but 10 / 4 = 2.5" in result.detail and "7 - 10 = 3, but 7 - 10 = -3" in result.detail


async def test_reads_the_expression_of_an_hdag_node() -> None:
    passed = await CHECK.check(operation("Multiply the two counts.", expression="12 * 3 == 36"))
    assert passed.outcome is Outcome.PASS
    failed = await CHECK.check(operation("Multiply the two counts.", expression="12 * 3 == 37"))
    assert (failed.outcome, failed.expected) == (Outcome.FAIL, "36")
    # a power in Python syntax is a power, not markdown bold (it was skipped as "2   10")
    power = await CHECK.check(operation("Raise it.", expression="2 ** 10 == 1025"))
    assert (power.outcome, power.expected) == (Outcome.FAIL, "1024")


async def test_a_cig_turn_is_checked_but_a_tool_turn_is_an_observation() -> None:
    expert = AgentTurn("t2", 2, "Solver", Role.EXPERT, "Total: 500 + 70 = 560")
    result = await CHECK.check(AuditRequest(expert))
    assert (result.outcome, result.fault, result.expected) == (Outcome.FAIL, "wrong sum", "570")
    tool = AgentTurn("t3", 3, "Terminal", Role.TOOL, "2 + 2 = 5")
    assert (await CHECK.check(AuditRequest(tool))).outcome is Outcome.NOT_APPLICABLE


@pytest.mark.parametrize(
    "text",
    [
        "Apply integration by parts twice.",
        "Let x = 5 and y = 2x + 3.",
        "```python\nassert 2 + 2 == 5\n```",
        "Ages 65-74 = 10 years, on 2023-10-05.",
        "1 / 0 = 5",
        "sqrt(2) = 1.41",
    ],
)
async def test_not_applicable_without_an_exact_calculation(text: str) -> None:
    result = await CHECK.check(operation(text))
    assert result.outcome is Outcome.NOT_APPLICABLE
    assert result.detail.startswith("no calculation with numbers only was found")


# ------------------------------------------------------------------------------ what holds, what fails


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # rounding to the stated decimals, percentages, approximations
        ("10 / 3 = 3.33", [(True, None)]),
        ("10/3 = 3.3", [(True, None)]),
        ("10/3 = 3.4", [(False, "3.333333333")]),
        ("2/3 = 0.66", [(False, "0.6666666667")]),
        ("50 / 200 = 25%", [(True, None)]),
        ("0.25 * 100 = 25%", [(True, None)]),
        ("50/200 = 30%", [(False, "25%")]),
        ("100/7 ≈ 14.3", [(True, None)]),
        ("1000/3 ≈ 300", [(True, None)]),
        ("10/3 ≈ 5", [(False, "3.333333333")]),
        # notations
        ("\\(737,015 - 4,965 = 732,050\\)", [(True, None)]),
        ("737,015 - 4,965 = 732,000, so", [(False, "732050")]),
        ("is 4 x 5 = 21 right", [(False, "20")]),
        ("2 \\times 3 = 7", [(False, "6")]),
        ("\\frac{10}{3} = 3.33", [(True, None)]),
        ("2^3 + 1 = 10", [(False, "9")]),
        ("5! = 120", [(True, None)]),
        ("3(4+1) = 15", [(True, None)]),
        ("$5 * 3 = $15", [(True, None)]),
        ("**12 * 3 = 37**", [(False, "36")]),
        ("12 ÷ 4 = 3 and 3 × 3 = 9", [(True, None), (True, None)]),
        ("1,234 + 1 = 1,235", [(True, None)]),
        ("10 - 3 – 2 = 5", [(True, None)]),
        ("Score: 1 + 1 = 2", [(True, None)]),
        ("so x = 2 * 3 = 7.", [(False, "6")]),
        ("- 2 + 3 = 6", [(False, "5")]),
        ("2. 2 + 3 = 6", [(False, "5")]),
        ("2 * 3 + 4 = 6 + 4 = 11", [(True, None), (False, "10")]),
        ("2 + 3 = 5! Great", [(True, None)]),
        ("3 * 8 = 24kg", [(True, None)]),
        ("2 + 2 = 4 => 4 > 3", [(True, None), (True, None)]),
        ("\\[ 25\\% \\text{ of } \\$2,000.00 = 0.25 \\times 2000 = \\$500.00 \\]", [(True, None), (True, None)]),
        ("\\( \\frac{43}{5} = 8 \\) full pens (with a remainder of 3)", [(True, None)]),
        ("\\( \\frac{43}{5} = 8 \\) pens", [(False, "8.6")]),  # a whole quotient must say so
        ("\\( \\frac{40}{5} = 3 \\) full pens", [(False, "8")]),
        ("<<48/2=24>>", [(True, None)]),
        ("<<48/2=25>>", [(False, "24")]),
        # comparisons
        ("58 < 75", [(True, None)]),
        ("85 ≥ 75", [(True, None)]),
        ("85 < 75", [(False, "85 > 75")]),
        ("3 != 3", [(False, "3 = 3")]),
        # read by the one calculation finder as the decomposer reads them (trust.core.maths.calculations):
        # "p% of q" is a product, unit words after a number are dropped, digits cut short allow a unit
        ("25% of 80 = 20", [(True, None)]),
        ("25% of 80 = 21", [(False, "20")]),
        ("2 books × 2 pounds/book = 5", [(False, "4")]),
        ("180 cups / 110 cups per bag = 1.636... bags", [(True, None)]),
        ("180 cups / 110 cups per bag = 1.638... bags", [(False, "1.636363636")]),
        ("2 ** 10 = 1025", [(False, "1024")]),
    ],
)
def test_judgements(text: str, expected: list[tuple[bool, str | None]]) -> None:
    assert outcomes(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "n + 2 * 3 = 11",  # the tail of a longer expression
        "step2 + 3 = 9",  # glued to a word
        "2x + 3 = 7",  # a variable
        "x = 5",  # a definition
        "the ratio 1:2 = 3:6",
        "Python 3.11.2 = 5",
        "3:30 = 2",
        "v1.2 + 3 = 4",
        "3 times 4 = 12",  # operands in words
        "half of 10 + 2 = 7",
        "15 pages x 1/3 = 5 pages",
        "the sum of 2 and 3 = 5",
        "Step 1 = 2 + 2",  # a label
        "5 * 2 = 10x",
        "`2+2=5` inline",
        "```\n2 + 2 = 5\n```",
        "a -> b 5 -> 6",
        "25 classmates + his 1 teacher + 1 himself = 27 people",  # the sum began before the words
    ],
)
def test_false_positives_are_skipped(text: str) -> None:
    assert [o for o in outcomes(text) if o is not None] == []


@pytest.mark.parametrize(
    "text",
    [
        "2 + 3 = 5 + 1",  # "=" as "then": a running total
        "3/2 = 1.50 + 3.00 = 4.50",
        "48 = 100% + 20% = 120%",  # percentages of an unstated base
        "ages 65-74 = 10 years",  # a range, not a subtraction
        "1 / 0 = 5",
        "2^10^10 = 5",
    ],
)
def test_undecidable_statements_are_not_failed(text: str) -> None:
    assert all(o is None or o[0] for o in outcomes(text))


# ------------------------------------------------------------------------------ properties


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from(["+", "-", "*", "×", "/", "÷"]),
    st.integers(min_value=1, max_value=10**4),
)
async def test_a_correct_result_holds_and_one_more_fails(a: int, op: str, b: int) -> None:
    operand = f"({a})" if a < 0 else str(a)
    if op in "/÷":
        a_value = a * b  # an exact quotient, stated as an integer
        operand = f"({a_value})" if a_value < 0 else str(a_value)
        correct = a
    else:
        correct = {"+": a + b, "-": a - b, "*": a * b, "×": a * b}[op]
    good = await CHECK.check(operation(f"We get {operand} {op} {b} = {correct}."))
    assert good.outcome is Outcome.PASS
    bad = await CHECK.check(operation(f"We get {operand} {op} {b} = {correct + 1}."))
    assert (bad.outcome, bad.expected) == (Outcome.FAIL, str(correct))


# ------------------------------------------------------------------------------ real data (GSM8K)


def gsm8k() -> list[dict[str, str]]:
    if not GSM8K.exists():
        pytest.skip(f"{GSM8K} is not here: the shared data folder holds the GSM8K test split")
    return [json.loads(line) for line in GSM8K.read_text(encoding="utf-8").splitlines()]


async def test_every_gsm8k_calculator_annotation_holds() -> None:
    annotated = [row for row in gsm8k() if ANNOTATION.search(row["answer"])]
    checked = distinct = 0
    for row in annotated:
        found = ANNOTATION.findall(row["answer"])
        result = await CHECK.check(operation(" ".join(f"<<{a}>>" for a in found)))
        assert result.outcome is Outcome.PASS, (row["question"][:60], result.detail)
        checked += int(result.detail.split(" ", 1)[0])
        distinct += len(set(found))  # a solution that repeats an annotation states one calculation
    assert len(annotated) == 1301
    assert checked == distinct == 4276  # 4,282 annotations, 6 of them repeated within their solution


async def test_a_gsm8k_solution_with_one_result_changed_fails_with_the_right_value() -> None:
    failed = 0
    for row in gsm8k():
        annotations = ANNOTATION.findall(row["answer"])
        if not annotations:
            continue
        lhs, rhs = annotations[0].split("=")
        correct = rhs
        mutated = row["answer"].replace(f"<<{lhs}={rhs}>>", f"<<{lhs}={float(rhs) + 1:g}>>", 1)
        result = await CHECK.check(operation(mutated))
        assert result.outcome is Outcome.FAIL, (row["question"][:60], result.detail)
        stated = f"{lhs} = {float(rhs) + 1:g}"
        assert stated in result.detail
        assert float(result.expected or "nan") == pytest.approx(float(correct), abs=1e-9)
        failed += 1
    assert failed == 1301


async def test_gsm8k_prose_holds_except_two_real_errors_of_the_reference_solutions() -> None:
    wrong: dict[int, str] = {}
    decided = 0
    for index, row in enumerate(gsm8k()):
        result = await CHECK.check(operation(row["answer"]))
        if result.outcome is Outcome.FAIL:
            wrong[index] = result.detail
        decided += result.outcome is not Outcome.NOT_APPLICABLE
    # the solutions say "364 / 4 = 273" (they mean 3/4 of 364) and "$32 - $20 = $300" (for 320 - 20)
    assert sorted(wrong) == [501, 1024]
    assert "364 / 4 = 273, but 364 / 4 = 91" in wrong[501]
    assert "32 - 20 = 300, but 32 - 20 = 12" in wrong[1024]
    assert decided >= 1301


def correct_processbench_steps() -> list[str]:
    """The steps of the ProcessBench GSM8K solutions before their labelled first error (all steps of
    a solution labelled -1): steps that people judged correct."""
    if not PROCESSBENCH.exists():
        pytest.skip(f"{PROCESSBENCH} is not here: the shared data folder holds ProcessBench")
    items = json.loads(PROCESSBENCH.read_text(encoding="utf-8"))
    return [step for item in items for i, step in enumerate(item["steps"]) if item["label"] == -1 or i < item["label"]]


async def test_no_processbench_step_judged_correct_fails() -> None:
    steps = correct_processbench_steps()
    results = [await CHECK.check(operation(step)) for step in steps]
    assert [r.detail for r in results if r.outcome is Outcome.FAIL] == []
    assert len(steps) == 1361
    # the rest hold no calculation; 505 before the check read the decomposer's finder (unit words,
    # "p% of q", names restated), which finds calculations in 201 more of these steps, all holding;
    # rates written "$15/student" add 11 more, all holding
    assert sum(r.outcome is Outcome.PASS for r in results) == 717
