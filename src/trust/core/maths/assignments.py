"""The values a text states for named quantities ("the total = 18", "x is 5"), and where two texts
give the same quantity two different values.

This is what a deterministic checker can decide about a `contradicts` edge of an HDAG (paper
3.2.3): two claims that give one named quantity two different values contradict each other, on any
trace, whatever the quantity is. Claims that share no quantity, or agree on every one they share,
are not decided here (their contradiction, if any, is in words, which a model or a person judges).

Reading, with the one maths engine (`plain_maths`, `NUMBER_PATTERN`, `parse_expression`,
`evaluate_exact`): within a clause, a name of one to four words right before "=", "is" or
"equals", then a numeric side, or a chain of them ("total = 3 + 4 = 7": the last side is the value
the name now holds). A name is compared lower-cased, without a leading article or connective
("the total" is "total"); a bare pronoun ("it is 5") names nothing, since two claims' "it" need not
be the same thing. When a text restates a name, its last value counts (the claim's conclusion).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.core.maths.expressions import NUMBER_PATTERN, EvaluationError, ParseError, evaluate_exact, parse_expression
from trust.core.maths.text import plain_maths

__all__ = ["Conflict", "conflicting_values", "stated_values"]

_LEADING: Final = frozenset("the a an so thus therefore then hence and now which means our my".split())
"""Function words that may open a name and do not change which quantity it names."""
_PRONOUNS: Final = frozenset("it this that there he she they we i you which what".split())
"""A name made of these alone refers to something the clause does not say: never compared."""
_SIDE = rf"(?:{NUMBER_PATTERN})(?:\s*(?:\*\*|[-+*/×÷^])\s*\(?\s*(?:{NUMBER_PATTERN})\s*\)?)*"
_ASSIGNMENT = re.compile(
    rf"(?P<name>[A-Za-z][\w']*(?:[ \t]+[A-Za-z][\w']*){{0,3}})[ \t]*(?:=|\bis\b|\bequals\b)[ \t]*"
    rf"(?P<chain>{_SIDE}(?:[ \t]*=[ \t]*{_SIDE})*)(?!\w|\.\d|\s*[-+*/×÷^(])"
)
_CLAUSES = re.compile(r"\n|;|:|\?|!|(?<!\d)\.(?!\d)|\.(?=\s)|,(?=\s)")


@dataclass(frozen=True, slots=True)
class Conflict:
    """One quantity two texts give different values."""

    name: str
    first: Fraction
    second: Fraction
    first_text: str
    second_text: str


def _name(words: str) -> str | None:
    parts = words.lower().split()
    while parts and parts[0] in _LEADING:
        parts.pop(0)
    if not parts or all(p in _PRONOUNS for p in parts):
        return None
    return " ".join(parts)


def stated_values(text: str) -> dict[str, tuple[Fraction, str]]:
    """Every named quantity `text` gives a value, with the last value and how it was written."""
    found: dict[str, tuple[Fraction, str]] = {}
    for clause in _CLAUSES.split(plain_maths(text)):
        for match in _ASSIGNMENT.finditer(clause):
            name = _name(match.group("name"))
            if name is None:
                continue
            side = match.group("chain").split("=")[-1].strip()
            try:
                value = evaluate_exact(parse_expression(side.replace(",", "")))
            except (ParseError, EvaluationError):
                continue
            found[name] = (value, " ".join(match.group(0).split()))
    return found


def conflicting_values(first: str, second: str) -> list[Conflict]:
    """The quantities both texts name with different values, in the first text's order."""
    later = stated_values(second)
    return [
        Conflict(name, value, later[name][0], written, later[name][1])
        for name, (value, written) in stated_values(first).items()
        if name in later and later[name][0] != value
    ]
