"""Values stated for named quantities, and two texts that give one quantity two values."""

from __future__ import annotations

from fractions import Fraction

import pytest

from trust.core.maths.assignments import conflicting_values, stated_values


def test_a_name_holds_the_last_side_of_its_chain_and_its_last_value() -> None:
    found = stated_values("So the total is 18. x = 3 + 4 = 7; Revenue = 1,200 dollars. Then x = 9.")
    assert {name: value for name, (value, _) in found.items()} == {
        "total": Fraction(18),
        "x": Fraction(9),
        "revenue": Fraction(1200),
    }


@pytest.mark.parametrize(
    "text",
    [
        "it is 5",  # a pronoun names nothing two claims can share
        "x = 2x + 3",  # algebra, not a value
        "5 apples and 7 pears",  # no name given a value
    ],
)
def test_what_names_no_value_is_not_read(text: str) -> None:
    assert stated_values(text) == {}


def test_one_quantity_with_two_values_conflicts_and_agreement_does_not() -> None:
    (conflict,) = conflicting_values("The total = 5 * 3 = 18.", "Wait, that is wrong: the total is 15.")
    assert (conflict.name, conflict.first, conflict.second) == ("total", Fraction(18), Fraction(15))
    assert conflict.first_text == "The total = 5 * 3 = 18" and conflict.second_text == "the total is 15"
    assert conflicting_values("The total = 5 * 3 = 15.", "So the total is 15.") == []
    assert conflicting_values("The total is 15.", "The cost is 12.") == []
