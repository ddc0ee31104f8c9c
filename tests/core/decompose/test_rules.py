"""The deterministic decomposer on real ProcessBench traces, hand-picked arithmetic and raw chains of thought."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trust.core.decompose.rules import (
    GOAL_ID,
    UNSTATED_GOAL,
    DecompositionLimits,
    detect_domain,
    estimate_difficulty,
    extract_operations,
    from_steps,
    from_text,
    segment,
)
from trust.core.decompose.scoring import final_score
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, Level, Tier
from trust.core.graphs.serialization import dumps
from trust.core.graphs.validation import violations
from trust.core.maths.arithmetic import check_expression
from trust.errors import GraphError

PROCESSBENCH = Path("/work/shared/data/processbench/gsm8k.json")


@pytest.fixture(scope="module")
def processbench() -> list[dict[str, Any]]:
    if not PROCESSBENCH.exists():
        pytest.skip(f"ProcessBench data not found at {PROCESSBENCH}")
    items: list[dict[str, Any]] = json.loads(PROCESSBENCH.read_text())
    return items


def _evaluate(expression: str) -> bool:
    """Whether an extracted expression holds, read back by the one maths engine (tier 1's reader)."""
    holds = check_expression(expression).holds
    assert holds is not None, expression
    return holds


def _edges(hdag: Hdag) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.type.value) for e in hdag.edges()}


# ---------------------------------------------------------------------------- ProcessBench


def test_every_processbench_item_decomposes_and_validates(processbench: list[dict[str, Any]]) -> None:
    assert len(processbench) == 400
    for item in processbench:
        hdag = from_steps(item["problem"], item["steps"])
        assert violations(hdag) == [], item["id"]
        assert hdag.node(GOAL_ID).content == item["problem"].strip()
        for index, step in enumerate(item["steps"]):
            node = hdag.node(f"s{index + 1}")
            assert node.level is Level.STEP and node.content == step.strip()
            if index:
                assert hdag.edge_type(f"s{index}", f"s{index + 1}") is not None, (item["id"], index)
        for node in hdag.nodes():
            if node.level is Level.OPERATION:
                assert node.tier is Tier.COMPUTATIONAL and node.difficulty is Difficulty.EASY
                assert node.expression is not None


def test_operations_of_correct_processbench_solutions_all_check(processbench: list[dict[str, Any]]) -> None:
    # On items labelled correct (-1), every extracted calculation must hold exactly: an extractor that
    # misreads notation (units, percentages, LaTeX) produces false operations and fails here.
    checked = 0
    for item in processbench:
        if item["label"] != -1:
            continue
        hdag = from_steps(item["problem"], item["steps"])
        for node in hdag.nodes():
            if node.expression is not None:
                assert _evaluate(node.expression), (item["id"], node.id, node.expression, node.content)
                checked += 1
    assert checked > 500


def test_false_operations_point_at_the_labelled_step(processbench: list[dict[str, Any]]) -> None:
    # Where a tier-1 check fails on an erroneous item, it never fails before the labelled earliest error.
    flagged = 0
    for item in processbench:
        if item["label"] == -1:
            continue
        hdag = from_steps(item["problem"], item["steps"])
        failed = [
            int(node.id.split(".")[0][1:]) - 1
            for node in hdag.nodes()
            if node.expression is not None and not _evaluate(node.expression)
        ]
        if failed:
            assert min(failed) >= item["label"], item["id"]
            flagged += min(failed) == item["label"]
    assert flagged >= 15


def test_hand_picked_processbench_step(processbench: list[dict[str, Any]]) -> None:
    item = next(i for i in processbench if i["id"] == "gsm8k-0")
    hdag = from_steps(item["problem"], item["steps"])
    assert [hdag.node(f"s2.op{k}").expression for k in (1, 2, 3)] == [
        "1 / 3 * 18 == 6",
        "18 - 6 == 12",
        "12 + 6 == 18",
    ]
    assert hdag.node("s2.op1").content == "1/3 × 18 = 6"
    assert hdag.node("s4.op1").expression == "36 - 6 == 30"
    assert ("s2", "s2.op1", "decomposes_to") in _edges(hdag)
    assert ("g0", "s1", "decomposes_to") in _edges(hdag)
    assert ("s1", "s2", "depends_on") in _edges(hdag)
    assert hdag.node(GOAL_ID).domain == "math" and hdag.node(GOAL_ID).stakes == "low"


# ---------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12 * 3 = 36", ["12 * 3 == 36"]),
        ("She pays $1,200 + $300 = $1,500.", ["1200 + 300 == 1500"]),
        ("24 x 12 = 288", ["24 * 12 == 288"]),
        ("24 × 12 = 288 and 288 ÷ 4 = 72", ["24 * 12 == 288", "288 / 4 == 72"]),
        ("\\(4 \\times 5 = 20\\) cats", ["4 * 5 == 20"]),
        ("\\[ \\frac{3}{5} \\times 30 = 18 \\]", ["(3 / 5) * 30 == 18"]),
        ("\\(\\frac{480 \\text{ miles}}{60 \\text{ miles/hour}} = 8\\)", ["480 / 60 == 8"]),
        ("25% of 80 = 20", ["(25 / 100) * 80 == 20"]),
        ("we calculate 3/5 of 30 = 18", ["3 / 5 * 30 == 18"]),
        ("0.2 × 100 = 20%", ["0.2 * 100 == 20"]),
        ("2^10 = 1024", ["2 ** 10 == 1024"]),
        ("-5 + 3 = -2", ["-5 + 3 == -2"]),
        ("Daily class hours = 2 days * 2 hours/day = 4 hours", ["2 * 2 == 4"]),
        ("$100 (Carmen) + $125 (Samantha) = $225", ["100 + 125 == 225"]),
        ("6 peaches × $0.75 per peach = $4.50", ["abs(6 * 0.75 - 4.50) <= 0.005"]),
        ("180 cups / 110 cups per bag = 1.636... bags", ["abs(180 / 110 - 1.636) <= 0.001"]),
        ("Total = 20 + 4*25 = 20 + 100 = 120", ["20 + 4 * 25 == 20 + 100", "20 + 100 == 120"]),
        (
            "\\[Total\\ Cost = 5*20\\] \\[Total\\ Cost = 100\\]",
            ["5 * 20 == 100"],
        ),
        ("x = 70 - 30. This simplifies to x = 40.", ["70 - 30 == 40"]),
        (
            "Value of Juan's house = Value of Herb's house - $22,800 = $76,000 - $22,800 = $53,200",
            ["76000 - 22800 == 53200"],
        ),
        # left alone: unknowns, conversions, approximations, arguments of words, bare restatements
        ("2x + 3 = 7", []),
        ("\\[ 10 - 4 = 1.5x \\]\n\\[ 6 = 1.5x \\]", []),
        ("So, 5 quarters = 5 * 25 cents", []),
        ("One-third of 27 = 27 ÷ 3", []),
        ("3.14 × 2 ≈ 6.28", []),
        ("x = 40", []),
        ("12 = 12", []),
        ("The answer is 42.", []),
    ],
)
def test_extract_operations(text: str, expected: list[str]) -> None:
    assert [op.expression for op in extract_operations(text)] == expected


def test_extracted_operations_record_their_result() -> None:
    (op,) = extract_operations("So the change is 50 - 36 = 14 dollars.")
    assert op.result == "14" and op.text == "50 - 36 = 14"


def test_operations_per_step_are_capped() -> None:
    text = " ".join(f"{i} + 1 = {i + 1}." for i in range(10))
    hdag = from_steps("count", [text], limits=DecompositionLimits(max_operations_per_unit=3))
    assert [n.id for n in hdag.nodes() if n.level is Level.OPERATION] == ["s1.op1", "s1.op2", "s1.op3"]


# ---------------------------------------------------------------------------- raw chains of thought

COT = """Problem: A shop sells pens at $3 each. Sam buys 12 pens and pays with a $50 bill. How much change?

We'll use a two-part approach: first find the total cost, then subtract it from what Sam paid.

First, we need to find the total cost of the pens.

The pens cost 12 * 3 = 36 dollars.

So the change is 50 - 36 = 14 dollars.

Let me verify: 36 + 14 = 50, which matches what Sam paid.

Therefore, Sam gets $14 in change.
"""


def test_raw_trace_levels_ids_and_edges() -> None:
    hdag = from_text(COT)
    levels = {node.id: node.level for node in hdag.nodes()}
    assert levels == {
        "g0": Level.GOAL,
        "st1": Level.STRATEGY,
        "ta1": Level.TACTIC,
        "s1": Level.STEP,
        "s1.op1": Level.OPERATION,
        "s2": Level.STEP,
        "s2.op1": Level.OPERATION,
        "s3": Level.STEP,
        "s3.op1": Level.OPERATION,
        "s4": Level.STEP,
    }
    assert hdag.node("g0").content.startswith("Problem: A shop sells pens")
    edges = _edges(hdag)
    assert {("g0", "st1", "decomposes_to"), ("st1", "ta1", "decomposes_to"), ("ta1", "s1", "decomposes_to")} <= edges
    assert ("s1", "s2", "depends_on") in edges  # "So ..." and the 36 that s1 computed
    assert ("s2", "s3", "validates") in edges  # "Let me verify" checks the latest step sharing its numbers
    assert ("s3", "s4", "depends_on") in edges  # "Therefore"
    assert ("s2", "s4", "depends_on") in edges  # data flow: 14 was computed in s2
    assert hdag.node("s1.op1").expression == "12 * 3 == 36"
    assert violations(hdag) == []


def test_decomposition_is_deterministic() -> None:
    assert dumps(from_text(COT)) == dumps(from_text(COT))


def test_problem_argument_becomes_the_goal() -> None:
    hdag = from_text("The sum is 2 + 2 = 4.", problem="What is 2 + 2?")
    assert hdag.node("g0").content == "What is 2 + 2?"
    assert hdag.node("s1.op1").expression == "2 + 2 == 4"


def test_unstated_goal_is_a_placeholder() -> None:
    hdag = from_text("The sum is 2 + 2 = 4.")
    assert hdag.node("g0").content == UNSTATED_GOAL
    hdag = from_steps(None, ["2 + 2 = 4"])
    assert hdag.node("g0").content == UNSTATED_GOAL


def test_step_reference_and_contradiction_markers() -> None:
    text = "\n\n".join(
        [
            "Step 1: The area is 4 * 5 = 20.",
            "Step 2: The perimeter is 2 * (4 + 5) = 18.",
            "Step 3: Using the area from step 1, half of it is 20 / 2 = 10.",
            "But wait, step 2 is wrong: the perimeter should use both sides twice, which it does, so 18 holds.",
        ]
    )
    hdag = from_text(text)
    edges = _edges(hdag)
    assert ("s1", "s3", "depends_on") in edges
    assert ("s2", "s4", "contradicts") in edges


def test_but_wait_alone_is_not_a_contradiction() -> None:
    hdag = from_text("The total is 3 + 4 = 7.\n\nBut wait, let me double-check that: 7 - 4 = 3.")
    assert _edges(hdag) >= {("s1", "s2", "validates")}
    assert all(e.type is not EdgeType.CONTRADICTS for e in hdag.edges())


def test_verification_references_the_step_it_names() -> None:
    hdag = from_steps(
        "Compute.",
        ["First, 6 * 7 = 42.", "Then 42 + 8 = 50.", "Let me check step 1 again: 42 / 7 = 6, correct."],
    )
    assert ("s1", "s3", "validates") in _edges(hdag)
    assert ("s2", "s3", "depends_on") in _edges(hdag)


def test_childless_strategy_and_tactic_are_demoted() -> None:
    hdag = from_text("Let's think about this.\n\nWe need to find the total.")
    assert [n.level for n in hdag.nodes()] == [Level.GOAL, Level.STRATEGY, Level.STEP]
    hdag = from_text("We'll use the plan of attack.")
    assert [n.level for n in hdag.nodes()] == [Level.GOAL, Level.STEP]


def test_consecutive_tactics_enable_each_other() -> None:
    text = (
        "We'll use integration by parts twice.\n\nIdentify u = x^2 and dv = e^x dx.\n\n"
        "Then du = 2x dx and v = e^x.\n\nNext, we apply the formula again with u = 2x.\n\nThis gives 2xe^x - 2e^x."
    )
    hdag = from_text(text, problem="Compute the integral of x^2 e^x dx.")
    assert ("ta1", "ta2", "enables") in _edges(hdag)
    assert hdag.node("g0").domain == "math"


def test_code_fences_become_operations_and_stay_whole() -> None:
    text = "We'll use Python to compute it.\n\n```python\ndef f(x):\n\n    return x + 1\n```\n\nThe function returns 3."
    units = segment(text)
    assert len(units) == 3 and units[1].startswith("```python") and "return x + 1" in units[1]
    hdag = from_text(text)
    assert hdag.node("st1").level is Level.STRATEGY
    code = hdag.node("s1.code1")
    assert code.level is Level.OPERATION and code.tier is Tier.COMPUTATIONAL and code.expression is None
    assert hdag.node("g0").domain == "code"


def test_segmentation_falls_back_to_lines_then_sentences() -> None:
    assert segment("a = 1\nb = 2\n") == ["a = 1", "b = 2"]
    assert segment("First we add. Then we multiply, e.g. twice. Done.") == [
        "First we add.",
        "Then we multiply, e.g. twice.",
        "Done.",
    ]
    assert segment("Step 1:\n\nAdd 2 and 3.\n\nStep 2:\n\nDouble it.") == ["Step 1: Add 2 and 3.", "Step 2: Double it."]


def test_medical_trace_routes_strategy_to_humans() -> None:
    text = (
        "We'll use the CHA2DS2-VASc score to decide on anticoagulation for this patient.\n\n"
        "The patient is 76 years old with hypertension and a prior stroke, so the score is 2 + 1 + 2 = 5.\n\n"
        "With a score of 5, guideline-directed treatment is oral anticoagulation unless contraindicated."
    )
    hdag = from_text(text, problem="Should this patient with atrial fibrillation receive anticoagulation?")
    assert {n.domain for n in hdag.nodes()} == {"medical"}
    assert {n.stakes for n in hdag.nodes()} == {"high"}
    assert hdag.node("st1").tier is Tier.HUMAN and hdag.node("g0").tier is Tier.HUMAN
    assert hdag.node("s1.op1").tier is Tier.COMPUTATIONAL


def test_domain_override_and_unknown_domain() -> None:
    hdag = from_steps("Add.", ["1 + 1 = 2"], domain="legal")
    assert hdag.node("s1").domain == "legal" and hdag.node("s1").stakes == "high"
    with pytest.raises(GraphError, match="unknown domain 'astro'"):
        from_steps("Add.", ["1 + 1 = 2"], domain="astro")


@pytest.mark.parametrize(
    ("text", "domain"),
    [
        ("John buys 3 apples for $2 each, so the total is 3 * 2 = 6 dollars.", "math"),
        ("He takes out a loan and pays the total back; calculate 100 + 5 = 105.", "math"),
        ("The plaintiff claims breach of contract; the court must decide liability.", "legal"),
        ("Rebalance the portfolio: move 10% of the stocks into bonds before retirement.", "financial"),
        ("def f(x): return x; the function has a bug in the loop.", "code"),
        ("The weather was nice and we went for a walk.", "general"),
    ],
)
def test_detect_domain(text: str, domain: str) -> None:
    assert detect_domain(text) == domain


def test_difficulty_cues() -> None:
    assert estimate_difficulty("So 12 * 3 = 36.", domain="math", operations=1) is Difficulty.EASY
    formal = (
        "By the fundamental theorem, the integral of the derivative converges; if f is a polynomial then, since "
        "the limit exists, suppose the matrix is invertible; hence by induction the eigenvalues are real, "
        "because otherwise we reach a contradiction."
    )
    assert estimate_difficulty(formal, domain="math") is Difficulty.HARD
    assert estimate_difficulty("Consider whether the argument holds.", domain="legal") is Difficulty.MEDIUM


# ---------------------------------------------------------------------------- refusals


def test_empty_traces_are_refused() -> None:
    for call in (lambda: from_text("  \n\t"), lambda: from_steps("p", []), lambda: from_steps("p", ["  ", ""])):
        with pytest.raises(GraphError, match="trace is empty"):
            call()


def test_problem_only_trace_is_refused() -> None:
    with pytest.raises(GraphError, match="only its problem statement"):
        from_text("Problem: what is 2 + 2?")


def test_oversized_traces_are_refused() -> None:
    with pytest.raises(GraphError, match="over the limit of 100"):
        from_text("x" * 101, limits=DecompositionLimits(max_chars=100))
    with pytest.raises(GraphError, match="3 reasoning units, over the limit of 2"):
        from_steps("p", ["a", "b", "c"], limits=DecompositionLimits(max_units=2))
    with pytest.raises(GraphError, match="3 reasoning units, over the limit of 2"):
        from_text("a\n\nb\n\nc", limits=DecompositionLimits(max_units=2))
    with pytest.raises(GraphError, match="max_units must be a positive integer"):
        DecompositionLimits(max_units=0)


def test_malformed_steps_are_named() -> None:
    with pytest.raises(GraphError, match=r"steps\[1\] is blank"):
        from_steps("p", ["a", " "])
    with pytest.raises(GraphError, match=r"steps\[0\] must be a string, got int"):
        from_steps("p", [3])  # type: ignore[list-item]
    with pytest.raises(GraphError, match="steps must be a list of strings, got str"):
        from_steps("p", "one step")


# ---------------------------------------------------------------------------- properties

_PIECES = st.sampled_from(
    [*"0123456789+-*/x×÷=()[]{}%$.,:;!? \n\t\\abcXYZ_'\"…−^"]
    + ["\\frac{", "\\times", "let me verify", "step 2", "But wait, wrong", "We'll use", "```", "\\text{", " of "]
    + ["Problem:", "Step 1:", "\n\n", "Therefore", "Let x be", "approach"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=60).map("".join) | st.text(max_size=200))
def test_arbitrary_text_decomposes_or_raises_graph_error(text: str) -> None:
    try:
        hdag = from_text(text)
    except GraphError:
        return
    assert violations(hdag) == []
    assert len(hdag.goals()) == 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_PIECES, min_size=1, max_size=30).map("".join), min_size=1, max_size=6))
def test_arbitrary_steps_decompose_or_raise_graph_error(steps: list[str]) -> None:
    try:
        hdag = from_steps("a problem", steps)
    except GraphError:
        return
    assert violations(hdag) == []
    assert [n.id for n in hdag.nodes() if n.level is Level.STEP] == [f"s{i + 1}" for i in range(len(steps))]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(["+", "-", "*"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=5,
    )
)
def test_written_arithmetic_is_extracted_and_checks(calculations: list[tuple[int, str, int]]) -> None:
    results = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    sentences = [f"Next, {a:,} {op} {b:,} = {results[op](a, b):,} units." for a, op, b in calculations]
    operations = extract_operations(" ".join(sentences))
    distinct = list(dict.fromkeys(calculations))
    assert len(operations) == len(distinct)
    for operation, (a, op, b) in zip(operations, distinct, strict=True):
        assert operation.expression == f"{a} {op} {b} == {results[op](a, b)}"
        assert _evaluate(operation.expression)


# ---------------------------------------------------------------------------- one maths engine
# The decomposer reads each side with the engine (trust.core.maths.expressions); where its former
# parser answered otherwise, the engine's answer is the one below.


def test_a_fraction_of_quantities_with_units_is_a_plain_quotient() -> None:
    (op,) = extract_operations("\\(\\frac{480 \\text{ miles}}{60 \\text{ miles/hour}} = 8\\)")
    assert op.expression == "480 / 60 == 8"  # was "((480) / (60)) == 8": brackets around lone numbers
    assert check_expression(op.expression).holds is True


def test_a_malformed_thousands_separator_is_not_cut_into_a_calculation() -> None:
    # the engine reads "1,2345" as no number (a comma takes exactly three digits): its tail "2345 + 1"
    # is not the side the trace wrote
    assert extract_operations("1,2345 + 1 = 12346") == []
    assert [op.expression for op in extract_operations("1,234 + 1 = 1,235")] == ["1234 + 1 == 1235"]


def test_data_flow_compares_numbers_by_value() -> None:
    # ".5" produced by step 1 is the 0.5 that step 3 uses (the string keys "0.5" and ".5" differed)
    hdag = from_text(
        "First we halve it: 1 / 2 = 0.5 cups.\n\nThe jar holds 3 + 4 = 7 cups.\n\nWe pour .5 * 4 = 2 cups."
    )
    assert hdag.edge_type("s1", "s3") is EdgeType.DEPENDS_ON
    assert hdag.edge_type("s2", "s3") is None


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("10 / 3 = 3.33", "abs(10 / 3 - 3.33) <= 0.005"),  # rounded: half a unit of the last decimal
        ("1 / 3 = 0.333", "abs(1 / 3 - 0.333) <= 0.0005"),
        ("180 / 110 = 1.636...", "abs(180 / 110 - 1.636) <= 0.001"),  # cut short: a whole unit
        ("2 / 3 = 0.66", "abs(2 / 3 - 0.66) <= 0.005"),  # truncated, not rounded: fails
    ],
)
def test_rounded_results_get_the_one_rounding_rule(text: str, expression: str) -> None:
    (op,) = extract_operations(text)
    assert op.expression == expression
    assert check_expression(op.expression).holds is (text != "2 / 3 = 0.66")


def test_exponent_towers_are_extracted_but_refused_by_the_checker() -> None:
    (op,) = extract_operations("2^10^10 = 5")
    assert op.expression == "2 ** 10 ** 10 == 5"
    check = check_expression(op.expression)
    assert check.holds is None and "10000000000" in check.reason


def test_a_tilde_fence_is_a_code_block_as_the_checks_read_it() -> None:
    # one fence pattern (trust.core.maths.text.FENCE) for the decomposer and the checks: a ~~~ block
    # was prose here (no code operation) while the arithmetic check skipped it as code
    hdag = from_text("We run the snippet below.\n\n~~~\nassert 2 + 2 == 5\n~~~")
    operations = {node.id: node.expression for node in hdag.nodes() if node.level is Level.OPERATION}
    assert operations == {"s2.code1": None}


def test_a_first_paragraph_stating_a_task_is_the_goal_and_its_lines_are_steps() -> None:
    text = (
        "Notes: the order has 3 items.\nTask: price it with these rules:\nBase: 2 points\nExpress: 1 point\n\n"
        "Base rule: the order is an order → Add +2 points. Score: 2\n"
        "Express rule: not requested → Add 0 points. Score: 2\n"
        "Final Score: 2"
    )
    graph = from_text(text)
    assert graph.node(GOAL_ID).content.startswith("Notes: the order has 3 items.")
    assert [n.id for n in graph.nodes()] == [GOAL_ID, "s1", "s2", "s3"]
    assert {n.id for n in graph.nodes() if n.tier is Tier.COMPUTATIONAL} == {"s1", "s2", "s3"}
    assert graph.edge_type("s1", "s2") is EdgeType.DEPENDS_ON
    assert set(graph.parents("s3")) == {GOAL_ID, "s1", "s2"}


def test_a_first_paragraph_with_no_task_stays_reasoning() -> None:
    graph = from_text("We have 3 apples.\nThen 2 more.\n\nSo 3 + 2 = 5 apples.")
    assert graph.node(GOAL_ID).content == UNSTATED_GOAL


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Final Score: CURB-65 = 2", 2),
        ("Total score: 3.", 3),  # a sentence's full stop ends the number
        ("The total score is therefore = 4. Treat as high risk.", 4),
        ("Total score: 3.5", None),  # no score is fractional: not a score line
        ("Score: 3", None),  # a running score, not the final one
    ],
)
def test_the_final_score_line_is_read_with_or_without_a_full_stop(text: str, score: int | None) -> None:
    assert final_score(text) == score
