"""The quantities a text gives and the operands its arithmetic uses: where a number comes from.

A worked solution may only compute with numbers it was given (the problem, its earlier steps),
numbers it computed itself, or the constants everybody knows (60 minutes in an hour, 100 for a
percentage). A number that enters a calculation from nowhere is a fabricated input: the tier-1
provenance check (`trust.auditors.checks.provenance`) flags it. This module says, with the one
engine's reading of numbers (`trust.core.maths.text.plain_maths`, `NUMBER_PATTERN`,
`parse_expression`), what a text gives and what its arithmetic uses:

- `given_values`: every value a text makes available: its numerals, each percentage also as a
  fraction and as the factors of an increase or a decrease ("40%" gives 40, 2/5, 7/5 and 3/5),
  its number words ("seventy", "twice", "a third": 3 and 1/3, "dozen", "twenties"), numerals glued
  to a unit or an ordinal suffix ("18mph", "19th"), mixed numbers ("1 1/2") and halves ("two and a
  half", "an hour and a half": 3/2);
- `operations`: every run of numbers joined by arithmetic signs ("7 * 70 - 40", "3 hours × 35"),
  with the literals it computes with (`operands`) and the value of every part of it (`values`:
  "20 + 8 + 12" gives 28 as well as 40), which are numbers the text has now computed.

A run that touches algebra (a number glued to a letter, "3x + 2") is not an operation here: its
numbers are coefficients of an equation, which the equation check reads. Unit words after a number
("3 hours × 35 dollars/hour") are dropped, as the calculation finder drops them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.core.maths.expressions import (
    NUMBER_PATTERN,
    EvaluationError,
    Expr,
    Number,
    ParseError,
    Sum,
    evaluate_exact,
    parse_expression,
    subexpressions,
)
from trust.core.maths.text import plain_maths

__all__ = [
    "COMMON_CONSTANTS",
    "Operation",
    "given_values",
    "number_words",
    "numerals",
    "operations",
]

COMMON_CONSTANTS: Final = frozenset(
    Fraction(value)
    for value in (
        "0", "1", "2",  # nothing, one of a thing, halving and doubling (pairs, both, twice)
        "10", "100", "1000",  # the decimal scales: tenths, percentages, thousands, grams, metres
        "7", "12", "24", "52", "60", "365", "3600",  # days a week, months a year, hours, weeks, minutes, days, seconds
        "28", "30", "31",  # days in a month
        "4", "3", "8", "16",  # quarters (weeks a month), feet a yard, pints a gallon (ounces a cup), ounces a pound
        "0.01", "0.05", "0.1", "0.25", "0.5",  # a cent, a nickel, a dime, a quarter, a half
        "5", "25",  # a nickel and a quarter in cents; 5 weekdays
    )
)  # fmt: skip
"""Values any grade-school solution may bring in without being told: unit conversions a reader is
expected to know and the scales of percentages and decimals. Every entry is a convention of
measurement or counting, not a value of any particular problem."""

_UNITS: Final = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen".split()
    )
}
_TENS: Final = {
    word: 10 * (index + 2) for index, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_SCALES: Final = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "dozen": 12, "dozens": 12, "score": 20}
_MULTIPLES: Final = {"once": 1, "twice": 2, "double": 2, "doubled": 2, "doubles": 2, "pair": 2, "pairs": 2,
                     "thrice": 3, "triple": 3, "tripled": 3, "triples": 3, "quadruple": 4, "quadrupled": 4}  # fmt: skip
_PARTS: Final = {"half": 2, "halves": 2, "halved": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4,
                 "fourth": 4, "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "seventh": 7,
                 "sevenths": 7, "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9, "tenth": 10,
                 "tenths": 10}  # fmt: skip
"""A part names its denominator: "a third" is 1/3, and 3 is what one divides by."""
_WORD = re.compile(r"[A-Za-z]+")
_NUMERAL = re.compile(rf"(?<![\w.])(?:{NUMBER_PATTERN})(?![\w]|\.\d)(?:\s*%)?")
_GLUED = re.compile(rf"(?<![\w.])({NUMBER_PATTERN})[a-z]+\b")
"""A numeral glued to a unit or an ordinal suffix: "18mph", "40g", "19th", "2nd"."""
_MIXED = re.compile(r"(?<![\w.])(\d+)\s+(\d+)\s*/\s*(\d+)(?![\w.])")
"""A mixed number: "1 1/2" is one and a half."""
_AND_A_HALF = re.compile(r"\b([A-Za-z]+|\d+)\s+(?:[a-z]+\s+)?and\s+a\s+half\b", re.I)
""""one and a half", "3 and a half", "a minute and a half" ("a" is one): a whole and a half."""
_OPERAND = rf"\(*\s*(?:{NUMBER_PATTERN})(?![A-Za-z_\d])\s*%?\s*\)*(?:\s+[a-z]+(?:/[a-z]+)?){{0,2}}"
_OPERATION = re.compile(rf"(?<![\w.]){_OPERAND}(?:\s*[-+*/×÷]\s*{_OPERAND})+")
_UNIT_WORDS = re.compile(r"(?<=[\d%)])((?:\s+[a-z]+(?:/[a-z]+)?){1,2})(?=\s*(?:[-+*/×÷)]|$))")
_ALGEBRA_BEFORE = re.compile(r"(?:(?<![A-Za-z])[A-Za-z]|\d[A-Za-z]+)\s*[-+*/×÷]?\s*\(*\s*$")
_ALGEBRA_AFTER = re.compile(r"^\s*\)*\s*[-+*/×÷]\s*\(*\s*(?:\d+(?:\.\d+)?)?[A-Za-z](?![A-Za-z])")
_ALGEBRA_WINDOW: Final = 8
"""Characters looked at on each side of a run for a variable it is part of."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One run of numbers joined by arithmetic signs, as written in the (plain) text.

    `operands`: its literals, in order (a percentage's number as written); `values`: the exact
    value of every part of it (every sub-expression and every leading part of a sum), which the
    text has computed once it writes the run. `start` and `end` are offsets in `plain_maths(text)`."""

    expr: Expr
    text: str
    start: int
    end: int
    operands: tuple[Number, ...]
    values: frozenset[Fraction]


def numerals(text: str) -> list[tuple[Fraction, bool]]:
    """The numbers written with digits in `text`, in order, each with whether it is a percentage."""
    found = []
    for match in _NUMERAL.finditer(plain_maths(text)):
        written = match.group()
        percent = written.endswith("%")
        found.append((Fraction(written.rstrip("%").strip().replace(",", "")), percent))
    return found


def number_words(text: str) -> frozenset[Fraction]:
    """The values `text` writes in words: "seventy", "twice", "a third" (3 and 1/3), "dozen"; a
    compound ("twenty-five") gives its parts and its sum."""
    values: set[Fraction] = set()
    words = [word.lower() for word in _WORD.findall(text)]
    for index, word in enumerate(words):
        if word in _UNITS:
            values.add(Fraction(_UNITS[word]))
        elif word.endswith("ies") and word[:-3] + "y" in _TENS:  # "twenties": notes or decades of twenty
            values.add(Fraction(_TENS[word[:-3] + "y"]))
        elif word in _TENS:
            values.add(Fraction(_TENS[word]))
            following = words[index + 1] if index + 1 < len(words) else ""
            if following in _UNITS and 0 < _UNITS[following] < 10:
                values.add(Fraction(_TENS[word] + _UNITS[following]))
        elif word in _SCALES:
            values.add(Fraction(_SCALES[word]))
        elif word in _MULTIPLES:
            values.add(Fraction(_MULTIPLES[word]))
        elif word in _PARTS:
            values.update((Fraction(_PARTS[word]), Fraction(1, _PARTS[word])))
    return frozenset(values)


def _halves(text: str) -> Iterable[Fraction]:
    for match in _AND_A_HALF.finditer(text):
        whole = match.group(1).lower()
        if whole.isdigit():
            yield Fraction(whole) + Fraction(1, 2)
        elif whole in ("a", "an"):
            yield Fraction(3, 2)
        elif whole in _UNITS:
            yield _UNITS[whole] + Fraction(1, 2)


def given_values(text: str) -> frozenset[Fraction]:
    """Every value `text` makes available to a calculation (see the module docstring)."""
    values: set[Fraction] = set(number_words(text)) | set(_halves(text))
    plain = plain_maths(text)
    values.update(Fraction(match.group(1).replace(",", "")) for match in _GLUED.finditer(plain))
    for match in _MIXED.finditer(plain):
        whole, numerator, denominator = (int(group) for group in match.groups())
        if 0 < numerator < denominator:
            values.add(whole + Fraction(numerator, denominator))
    for value, percent in numerals(text):
        values.add(value)
        if percent:
            values.update((value / 100, 1 + value / 100, 1 - value / 100, 100 - value, 100 + value))
    return frozenset(values)


def _parts(expr: Expr) -> Iterable[Fraction]:
    for node in subexpressions(expr):
        pieces: list[Expr] = [node]
        if isinstance(node, Sum):  # the running total of a sum: "20 + 8 + 12" has computed 28
            pieces += [Sum(node.first, node.rest[:length]) for length in range(1, len(node.rest))]
        for piece in pieces:
            try:
                yield evaluate_exact(piece)
            except EvaluationError:
                continue


def operations(text: str) -> list[Operation]:
    """Every operation `text` writes, in order (see the module docstring)."""
    plain = plain_maths(text)
    found = []
    for match in _OPERATION.finditer(plain):
        written = match.group().strip()
        before = plain[max(0, match.start() - _ALGEBRA_WINDOW) : match.start()]
        after = plain[match.end() : match.end() + _ALGEBRA_WINDOW]
        if _ALGEBRA_BEFORE.search(before) or _ALGEBRA_AFTER.search(after):
            continue  # "3x + 2", "x - 14": algebra, not a computation with given numbers
        bare = _UNIT_WORDS.sub("", written)
        try:
            expr = parse_expression(bare)
        except ParseError:
            continue
        operands = tuple(node for node in subexpressions(expr) if isinstance(node, Number))
        if len(operands) < 2:
            continue
        found.append(Operation(expr, written, match.start(), match.end(), operands, frozenset(_parts(expr))))
    return found
