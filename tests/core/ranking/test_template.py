"""The ranking prompt of swarm document 4.3 and the parser of judge answers, on outputs in the shapes
models write them."""

from __future__ import annotations

import pytest

from trust.core.ranking.template import RANKING_TEMPLATE, RankingAnswer, parse_ranking_answer, render
from trust.errors import RankingError


def test_template_keeps_the_documents_words() -> None:
    assert RANKING_TEMPLATE.startswith("Select the best one of two following solutions.")
    assert "(Only number, nothing else)" in RANKING_TEMPLATE
    assert "\u2019Uncertain?\u2019" in RANKING_TEMPLATE
    assert RANKING_TEMPLATE.rstrip().endswith("######Decision######:")
    assert not any(line.startswith(" ") for line in RANKING_TEMPLATE.splitlines())


def test_render_fills_the_three_places_and_copies_braces() -> None:
    prompt = render("Sum {x} for x in [1, 2]", "def f(): return {1: 2}", "print(3)")
    assert "######Problem######: Sum {x} for x in [1, 2]\n" in prompt
    assert "######1######. def f(): return {1: 2}\n" in prompt
    assert "######2######. print(3)\n" in prompt
    assert "{R}" not in prompt and "{A}" not in prompt and "{B}" not in prompt


GPT_STYLE = """\
Solution 1 lacks the edge case n = 0 and returns None.
Solution 2 uses an O(n^2) loop where a set suffices.
Solution 2 is otherwise correct and complete.

2
"""

BULLETED = """\
- Solution 1 lacks units in the final answer.
* Solution 2 contradicts itself about the boiling point.
1. Solution 2 abruptly cuts off mid-sentence.
**1**
"""


@pytest.mark.parametrize(
    ("text", "choice", "notes"),
    [
        (
            GPT_STYLE,
            2,
            (
                "Solution 1 lacks the edge case n = 0 and returns None.",
                "Solution 2 uses an O(n^2) loop where a set suffices.",
                "Solution 2 is otherwise correct and complete.",
            ),
        ),
        (
            BULLETED,
            1,
            (
                "Solution 1 lacks units in the final answer.",
                "Solution 2 contradicts itself about the boiling point.",
                "Solution 2 abruptly cuts off mid-sentence.",
            ),
        ),
        ("Both solutions are the same derivation.\nUncertain?", None, ("Both solutions are the same derivation.",)),
        ("Solution 1 lacks a proof.\n\n  `2`.  \n\n", 2, ("Solution 1 lacks a proof.",)),
        ("Solution 2 lacks tests.\n1.", 1, ("Solution 2 lacks tests.",)),
        ("\u2019Uncertain?\u2019", None, ()),
        ("Neither is finished.\n**Uncertain?**", None, ("Neither is finished.",)),
        ("uncertain", None, ()),
        ("Solution 1 lacks X.\n######Decision######: 1", 1, ("Solution 1 lacks X.",)),
        ("2", 2, ()),
    ],
)
def test_answers_models_write(text: str, choice: int | None, notes: tuple[str, ...]) -> None:
    answer = parse_ranking_answer(text)
    assert answer == RankingAnswer(choice=choice, notes=notes)  # type: ignore[arg-type]


def test_result_follows_the_match_convention() -> None:
    assert parse_ranking_answer("1").result == 1.0
    assert parse_ranking_answer("2").result == 0.0
    assert parse_ranking_answer("Uncertain?").result == 0.5


@pytest.mark.parametrize(
    "text",
    [
        "Solution 1 lacks tests.\nSolution 2",
        "Solution 1 lacks tests.\nThe answer is 2",
        "1 or 2",
        "3",
        "12",
        "Solution 2 is better because it handles the empty list, while solution 1",  # cut off
        "Decision: 2",
    ],
)
def test_anything_else_is_refused_with_the_line_quoted(text: str) -> None:
    last = text.splitlines()[-1]
    with pytest.raises(RankingError, match="is not a decision") as raised:
        parse_ranking_answer(text)
    assert last in str(raised.value)


def test_an_empty_answer_is_refused() -> None:
    with pytest.raises(RankingError, match="empty"):
        parse_ranking_answer(" \n\n ")
