"""What a text gives and what its arithmetic computes with (`trust.core.maths.quantities`)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from trust.core.maths.quantities import COMMON_CONSTANTS, given_values, number_words, numerals, operations


def test_numerals_percentages_and_their_scales() -> None:
    assert numerals("She pays $1,200 and 15% tax on 3.5 kg.") == [
        (Fraction(1200), False),
        (Fraction(15), True),
        (Fraction(7, 2), False),
    ]
    # a 40% increase gives the rate, its fraction and the factors of the increase and the decrease
    assert {Fraction(40), Fraction(2, 5), Fraction(7, 5), Fraction(3, 5)} <= given_values("40% longer")


def test_number_words_give_values_and_parts_their_reciprocals() -> None:
    words = number_words("Seventy loaves, twice as many, a third of them, twenty-five eggs, a dozen")
    assert {Fraction(70), Fraction(2), Fraction(3), Fraction(1, 3), Fraction(25), Fraction(12)} <= words
    assert number_words("the stone was heavy") == frozenset()


def test_operations_drop_units_and_record_every_part() -> None:
    (run,) = operations("Total = 80 + 220 + 23 miles")
    assert [number.text for number in run.operands] == ["80", "220", "23"]
    assert Fraction(300) in run.values and Fraction(323) in run.values  # the running total too
    (paid,) = operations("3 hours × $35/hour = $105")
    assert [number.text for number in paid.operands] == ["3", "35"] and Fraction(105) in paid.values
    (latex,) = operations("\\(2 \\text{ books} \\times 2 \\text{ pounds/book} = 4\\)")
    assert Fraction(4) in latex.values


def test_a_chain_is_one_operation_per_side() -> None:
    first, second = operations("7 * 70 - 40 = 470 - 40 = 430 loaves")
    assert Fraction(450) in first.values
    assert [number.text for number in second.operands] == ["470", "40"]


@pytest.mark.parametrize("text", ["x - 14 - 7 = x - 21", "2r + 14 + 3r = 44", "(x + 5) * 2", "25% of 80", "42"])
def test_algebra_and_words_are_not_operations(text: str) -> None:
    assert operations(text) == []


def test_an_assignment_computes_with_given_numbers() -> None:
    (run,) = operations("x = 350 - 150.")
    assert [number.text for number in run.operands] == ["350", "150"]


def test_constants_are_conventions_of_measurement() -> None:
    assert {Fraction(60), Fraction(100), Fraction(7), Fraction(12), Fraction(1, 4)} <= COMMON_CONSTANTS
    assert Fraction(37) not in COMMON_CONSTANTS


def test_glued_units_ordinals_mixed_numbers_and_halves_are_given() -> None:
    given = given_values("She cycles at 14mph from May 9th, buys 2 3/4 pounds and waits an hour and a half")
    assert {Fraction(14), Fraction(9), Fraction(11, 4), Fraction(3, 2)} <= given
    assert Fraction(7, 2) in given_values("three and a half cups") and Fraction(9, 2) in given_values("4 and a half")
    assert Fraction(20) in given_values("she paid with five twenties")
    # "2 3/4" is one number, not a slash between two: 3/4 is no mixed number's part on its own
    assert Fraction(11, 4) not in given_values("2 and 3/4")


def test_a_decimal_coefficient_gives_no_whole_part() -> None:
    # "1.5x" is a coefficient of x: neither 1.5 nor its whole part 1 is a numeral of the text
    assert numerals("she spends 1.5x dollars, then 5.") == [(Fraction(5), False)]
