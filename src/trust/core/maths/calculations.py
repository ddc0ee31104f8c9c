"""The one calculation finder: where a calculation starts and ends in prose, and its two sides.

Both readers of numbers in a trace use it: the rule-based decomposer (`trust.core.decompose.rules`),
which writes each "=" calculation as an operation's `expression`, and the tier-1 arithmetic check
(`trust.auditors.checks.arithmetic`), which recomputes every calculation exactly. So a calculation
the decomposer cut out of a step is the calculation the check audits, read the same way.

What is found, in this order:

- GSM8K calculator annotations "<<48/2=24>>": always calculations, read as they are (outside code);
- in prose (after `trust.core.maths.text.plain_maths`: code, LaTeX and typography out of the way),
  relations between numeric sides, within one clause (a calculation never spans a sentence end,
  ";", ":", "?", "!" or ", "): "17 × 23 = 391", chains "2 * 3 + 4 = 6 + 4 = 10" (each neighbouring
  pair), comparisons "58 < 75", "85 ≥ 75", approximations "100/7 ≈ 14.3";
- unit words after a number, up to three lower-case words before an operator, a closing parenthesis
  or the end of the side, are dropped ("5 hours × 12 dollars/hour = 60 dollars" is 5 × 12 = 60), a
  label in parentheses after a number ("$100 (Carmen)") too; "p% of q" and "a/b of q" are products;
- a name restated with a new value: "Total = 20 + 4*25", later in the text "Total = 120", is the
  calculation 20 + 4*25 = 120 (only when the earlier value is a calculation).

`Calculation.units` says unit words were dropped from the left side and `truncated` that the
right side's digits stop short ("1.636..."), for the rounding rule (`trust.core.maths.rounding`).

What is not a calculation (a side is cut, and the pair dropped, when it is not the whole of what
the text computes):

- a side that runs into words or other numbers: glued to a word or a number ("step2 + 3", "v1.2 + 3",
  "= 4x", "3.5.1"), the tail of a longer expression ("n + 2 * 3 = 11", "Herb's house - 22,800"), a
  side after an operator word ("one-third of 27", "3 times 4", "15 pages x 1/3") or before one
  ("= 3 times 4", "= 12 + the rest"); a literal glued to a unit of two or more letters ("24kg")
  keeps its value;
- a label, not a value: a lone number right after a word on the left ("Step 1 = 2 + 2");
- two bare numbers around "=" or "≈" ("12 = 12", "1:2 = 3:6" leaves "2 = 3"): an equation needs an
  operator (a comparison of two numbers, "58 < 75", is checked for truth);
- a conversion: a lone number with unit words on the left ("5 quarters = 5 * 25 cents");
- anything with a variable ("x = 5", "2x + 3 = 7") or that the engine cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from trust.core.maths.expressions import (
    NUMBER_PATTERN,
    Expr,
    ParseError,
    Power,
    Product,
    Sum,
    parse_expression,
    parse_statement,
    render,
    subexpressions,
)
from trust.core.maths.rounding import literal
from trust.core.maths.text import ANNOTATION, FENCE, INLINE_CODE, plain_maths

__all__ = ["Calculation", "binary_operations", "find_calculations"]

_CONTEXT_CHARS: Final = 160
"""How much of the rest of a calculation's line `Calculation.after` keeps, in characters."""

_OPERATOR_WORDS_BEFORE: Final = frozenset(
    {"of", "times", "plus", "minus", "by", "over", "divided", "multiplied", "than", "from", "x"}
)
"""A number right after these words is an operand of a calculation written in words ("25% of 80"
is read, but "half of 10", "3 times 4", "15 pages x 1/3" are not whole). Not "into": "convert
these pens into 25/5 = 5" starts a calculation after it."""
_OPERATOR_WORDS_AFTER: Final = frozenset(
    {"of", "times", "plus", "minus", "divided", "multiplied", "squared", "cubed", "percent", "to", "x", "more", "less"}
)
"""A value right before these words and an operand is the start of a longer expression ("= 3
times 4", "= 80% of 60"); before a word it is the value ("= 38 times.", "= 200 more guests")."""
_STOP_WORDS: Final = frozenset(
    "a an and or is are was were be to then so which that we it the gives give get gets got has have had "
    "for from by with in at on as than if but not equals equal makes make total".split()
)
"""Lower-case words that are never a unit after a number: the sentence goes on after them."""
_RELATION_NAMES: Final = {"==": "=", "<=": "≤", ">=": "≥", "!=": "≠"}

_WORD_RE = r"[A-Za-z_][A-Za-z0-9_']*(?:/[A-Za-z][A-Za-z']*)*"
_TOKEN_RE = re.compile(
    rf"(?P<num>{NUMBER_PATTERN})|(?P<word>{_WORD_RE})|(?P<op>\*\*|[-+*/^×÷])|(?P<lp>\()|(?P<rp>\))"
    r"|(?P<pct>%)|(?P<rel>==|<=|>=|!=|[=<>≤≥≠≈])|(?P<post>!|²|³)|(?P<ws>\s+)|(?P<other>.)",
    re.DOTALL,
)
_ARITHMETIC: Final = frozenset({"num", "op", "lp", "rp", "pct", "post"})
_CLAUSE_BREAK = re.compile(
    r"\n|;|:|\?|!(?![ \t]*(?:[-+*/×÷^=<>≤≥≠≈)]|\d))|(?<!\d)\.(?!\d)|\.(?=\s)|,(?=\s)|\s-\s+(?=[A-Z])"
)
"""Where a clause ends: a calculation never spans one. A "!" followed by an operator or a relation
is a factorial ("5! = 120"), any other an exclamation ("2 + 3 = 5! Great")."""
_UNIT_WORD = re.compile(r"/?[a-z][a-z'/]+")
_RATE_UNIT = re.compile(r"[a-z][a-z']+")
_GLUED_UNIT = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True, slots=True)
class Calculation:
    """One relation between two numeric sides, as found: "17 × 23 = 391" is `left` 17 × 23,
    `relation` "=", `right` 391 (relations "=", "<", ">", "≤", "≥", "≠", "≈").

    `left_text` and `right_text` are the sides as written (unit words included), `written` the whole
    calculation as written ("2 books × 2 pounds/book = 4"); `source` says where it was found:
    "annotation" (<<...>>), "text" or "expression" (the caller's name for the text); `after` is
    the rest of its line (up to 160 characters), which may say how it rounds ("8 full pens").
    `units`: unit words were dropped from the left side; `truncated`: the right side's digits stop
    short of its value ("1.636...")."""

    left: Expr
    relation: str
    right: Expr
    left_text: str
    right_text: str
    source: str
    after: str = ""
    written: str = ""
    units: bool = False
    truncated: bool = False

    @property
    def text(self) -> str:
        return f"{self.left_text} {self.relation} {self.right_text}"


def binary_operations(expr: Expr) -> int:
    """How many binary operations `expr` writes (+ - * / ^, "of", implicit products)."""
    return sum(
        len(node.rest) if isinstance(node, Sum | Product) else int(isinstance(node, Power))
        for node in subexpressions(expr)
    )


# ---------------------------------------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num, word, of, op, lp, rp, pct, post, rel, other
    text: str
    start: int
    end: int
    space_before: bool


@dataclass(frozen=True, slots=True)
class _Side:
    expr: Expr
    start: int
    end: int
    units: bool  # unit words were dropped ("5 quarters")
    truncated: bool = False  # "1.636...": the digits written stop short of the value


def _clauses(text: str) -> list[tuple[int, str]]:
    """Clause-sized pieces of `text` with their offsets."""
    pieces: list[tuple[int, str]] = []
    start = 0
    for match in _CLAUSE_BREAK.finditer(text):
        if text[start : match.start()].strip():
            pieces.append((start, text[start : match.start()]))
        start = match.end()
    if text[start:].strip():
        pieces.append((start, text[start:]))
    return pieces


def _tokenize(piece: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    space = False
    for match in _TOKEN_RE.finditer(piece):
        kind = match.lastgroup or "other"
        text = match.group()
        if kind == "ws":
            space = True
            continue
        if kind == "word" and text.lower() == "of":
            kind = "of"
        tokens.append(_Tok(kind, text, match.start(), match.end(), space))
        space = False
    return _rates(tokens)


def _rates(tokens: list[_Tok]) -> list[_Tok]:
    """ "$15/student", "2/ book": a slash glued to a number and followed by a unit word writes a
    rate's unit ("per student"), not a division by a word; it becomes one unit word "/student", which
    is dropped as "15 dollars/student" drops its unit."""
    merged: list[_Tok] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if (
            tok.text == "/"
            and not tok.space_before
            and merged
            and merged[-1].kind == "num"
            and following is not None
            and following.kind == "word"
            and _RATE_UNIT.fullmatch(following.text) is not None
            and following.text not in _STOP_WORDS
        ):
            merged.append(_Tok("word", "/" + following.text, tok.start, following.end, True))
            i += 2
            continue
        merged.append(tok)
        i += 1
    return merged


def _arith_mask(tokens: Sequence[_Tok]) -> list[str]:
    """Per token: "a" arithmetic, "u" a unit word after a number (dropped), "" not arithmetic."""
    mask = [""] * len(tokens)
    for i, tok in enumerate(tokens):
        if tok.kind in _ARITHMETIC:
            mask[i] = "a"
        elif tok.kind == "of":
            before = tokens[i - 1] if i else None
            after = tokens[i + 1] if i + 1 < len(tokens) else None
            fraction = before is not None and before.kind == "num" and i >= 2 and tokens[i - 2].text == "/"
            operand_after = after is not None and after.kind in ("num", "lp")
            if before is not None and (before.kind in ("pct", "rp") or fraction) and operand_after:
                mask[i] = "a"  # "25% of 80", "3/5 of 30": a product
    # unit words: up to three lower-case words after a number (with a space), then an operator,
    # a closing parenthesis or the end of the side
    i = 0
    while i < len(tokens):
        if tokens[i].kind in ("num", "pct") and mask[i] == "a":
            j = i + 1
            while (
                j < len(tokens)
                and j - i <= 3
                and tokens[j].kind == "word"
                and tokens[j].space_before
                and _UNIT_WORD.fullmatch(tokens[j].text) is not None
                and tokens[j].text not in _STOP_WORDS
            ):
                j += 1
            if j > i + 1 and (j == len(tokens) or tokens[j].kind in ("op", "rp")):
                for k in range(i + 1, j):
                    mask[k] = "u"
            i = max(j, i + 1)
        else:
            i += 1
    return mask


def _parse_side(tokens: Sequence[_Tok]) -> _Side | None:
    """The side as the maths engine reads it, once unit words are dropped and "of" is a product."""
    arithmetic = [t for t in tokens if t.kind != "word"]
    if not arithmetic:
        return None
    try:
        expr = parse_expression(" ".join("*" if t.kind == "of" else t.text for t in arithmetic))
    except ParseError:
        return None
    return _Side(expr, tokens[0].start, tokens[-1].end, len(arithmetic) < len(tokens))


def _is_word(token: _Tok) -> bool:
    return token.kind in ("word", "of")


def _suffix(tokens: Sequence[_Tok]) -> _Side | None:
    """The arithmetic expression that ends `tokens` (the left side of a relation), if it is whole."""
    mask = _arith_mask(tokens)
    k = len(tokens)
    while k > 0 and mask[k - 1]:
        k -= 1
    run = list(range(k, len(tokens)))
    if not run:
        return None
    first = tokens[k]
    before = tokens[k - 1] if k else None
    if before is not None and not first.space_before and (before.kind in ("word", "num") or before.text in "_\\^.,/"):
        return None  # "step2 + 3", "v1.2 + 3", "1,2345 + 1": the side starts inside a word or a number
    if before is not None and _is_word(before) and before.text.lower() in _OPERATOR_WORDS_BEFORE:
        return None  # "one-third of 27 =", "3 times 4 =": the number is the argument of words
    words = k
    while words > 0 and _is_word(tokens[words - 1]):
        words -= 1
    if 0 < words < k and tokens[words - 1].kind == "op" and tokens[words].space_before:
        # "25 classmates + his 1 teacher + 1 himself =": the sum began before the words (a hyphen
        # inside a word, "T-shirt", is no operator)
        return None
    if first.kind in ("op", "post") or mask[k] == "u":
        # "Herb's house - 22,800 =": the expression goes on into words; checking its tail would be wrong
        if not (first.text == "-" and (before is None or before.kind == "other")):
            return None
    while run and tokens[run[0]].kind == "rp":  # a parenthesis closed from outside the expression
        run.pop(0)
    if not run:
        return None
    side = _parse_side([tokens[i] for i in run])
    if side is not None and before is not None and _is_word(before) and literal(side.expr) is not None:
        return None  # "Step 1 = 2 + 2", "Day 3 = ...": a label, not a value
    return side


def _prefix(tokens: Sequence[_Tok]) -> _Side | None:
    """The arithmetic expression that starts `tokens` (the right side of a relation), if it is whole."""
    mask = _arith_mask(tokens)
    k = 0
    while k < len(tokens) and mask[k]:
        k += 1
    run = list(range(k))
    if not run:
        return None
    if tokens[k - 1].kind in ("op", "of"):
        return None  # "= 12 + the rest": the expression continues into words
    while run and (tokens[run[-1]].kind == "lp" or mask[run[-1]] == "u"):
        run.pop()
    if not run:
        return None
    side = _parse_side([tokens[i] for i in run])
    if side is None:
        return None
    after = tokens[run[-1] + 1] if run[-1] + 1 < len(tokens) else None
    if after is not None and not after.space_before:
        if after.kind == "word" and not (literal(side.expr) is not None and _GLUED_UNIT.match(after.text)):
            return None  # "= 4x", "3O_c": a coefficient of an unknown; "= 24kg" keeps its value
        if after.text in ".,:/" and run[-1] + 2 < len(tokens) and tokens[run[-1] + 2].kind == "num":
            return None  # "= 3.5.1", "= 4,5": the number goes on
    if after is not None and _is_word(after) and after.text.lower() in _OPERATOR_WORDS_AFTER:
        following = tokens[run[-1] + 2] if run[-1] + 2 < len(tokens) else None
        if following is not None and following.kind in ("num", "lp"):
            return None  # "= 3 times 4", "= 80% of 60": the start of a longer expression
    if after is not None and after.text == "…" and not after.space_before:
        side = replace(side, truncated=True)
    return side


def _whole(tokens: Sequence[_Tok]) -> _Side | None:
    """The piece as one arithmetic expression (a middle link of a chain), or None."""
    mask = _arith_mask(tokens)
    if not tokens or not all(mask):
        return None
    return _parse_side(tokens)


def _name(tokens: Sequence[_Tok]) -> tuple[str, ...] | None:
    """A quantity's name on the left of an `=` ("Total Cost", "x"), when the side is only a name."""
    if not tokens or len(tokens) > 6 or any(t.kind not in ("word", "of", "other") for t in tokens):
        return None
    if any(t.kind == "other" and t.text not in "'§-" for t in tokens):
        return None
    name = tuple(t.text.lower() for t in tokens if t.kind != "other")
    return name or None


def _same_name(earlier: tuple[str, ...], later: tuple[str, ...]) -> bool:
    """ "x" then "This simplifies to x": the later name ends with the earlier one."""
    return len(later) >= len(earlier) and later[len(later) - len(earlier) :] == earlier


# ---------------------------------------------------------------------------------------------- finding


def _annotation(content: str) -> list[Calculation]:
    try:
        statement = parse_statement(content)
    except ParseError:
        return []
    sides = content.split("=") if statement.ops == ("=",) * len(statement.ops) else []
    found = []
    for index, (left, op, right) in enumerate(statement.pairs()):
        as_written = len(sides) == len(statement.sides)
        texts = (sides[index], sides[index + 1]) if as_written else (render(left), render(right))
        left_text, right_text = texts[0].strip(), texts[1].strip()
        found.append(
            Calculation(left, op, right, left_text, right_text, "annotation", written=f"{left_text}={right_text}")
        )
    return found


def _is_calculation(relation: str, left: _Side, right: _Side) -> bool:
    if relation in ("=", "≈") and literal(left.expr) is not None and literal(right.expr) is not None:
        return False  # "12 = 12", "1:2 = 3:6" leaves "2 = 3": an equation needs an operator
    # "5 quarters = 5 * 25": a conversion into other units, not an equality of numbers
    return not (relation == "=" and left.units and binary_operations(left.expr) == 0)


def find_calculations(text: str, *, source: str = "text", limit: int | None = None) -> list[Calculation]:
    """Every calculation `text` states: its calculator annotations first, then those of its prose,
    in order (see the module docstring for what counts). `limit` stops after that many."""
    found: list[Calculation] = []
    for match in ANNOTATION.finditer(INLINE_CODE.sub(" ", FENCE.sub("\n", text))):
        found += _annotation(match.group(1))
    prose = plain_maths(text)

    def add(offset: int, clause: str, relation: str, left: _Side, right: _Side, left_text: str = "") -> None:
        """`left_text` is given when the left side was written in an earlier clause."""
        if not _is_calculation(relation, left, right):
            return
        end = offset + right.end
        after = prose[end : end + _CONTEXT_CHARS].split("\n", 1)[0]
        right_text = " ".join(clause[right.start : right.end].split())
        written = f"{left_text} = {right_text}" if left_text else " ".join(clause[left.start : right.end].split())
        left_text = left_text or " ".join(clause[left.start : left.end].split())
        found.append(
            Calculation(
                left.expr, relation, right.expr, left_text, right_text, source, after, written, left.units,
                right.truncated,
            )
        )  # fmt: skip

    last_named: tuple[tuple[str, ...], _Side, str] | None = None
    for offset, clause in _clauses(prose):
        if limit is not None and len(found) >= limit:
            return found[:limit]
        tokens = _tokenize(clause)
        cuts = [i for i, t in enumerate(tokens) if t.kind == "rel"]
        if not cuts:
            continue
        relations = [_RELATION_NAMES.get(tokens[i].text, tokens[i].text) for i in cuts]
        pieces: list[list[_Tok]] = []
        start = 0
        for cut in cuts:
            pieces.append(list(tokens[start:cut]))
            start = cut + 1
        pieces.append(list(tokens[start:]))
        named_here = False
        for i, relation in enumerate(relations):
            left = _suffix(pieces[i])
            right = _prefix(pieces[i + 1])
            if left is not None and right is not None:
                add(offset, clause, relation, left, right)
            if i == 0 and left is None and right is not None and set(relations) == {"="}:
                name = _name(pieces[0])
                if name is not None:
                    # the value this name now holds: the last whole side of the chain
                    value = right
                    for j in range(1, len(pieces)):
                        side = _prefix(pieces[j]) if j == len(pieces) - 1 else _whole(pieces[j])
                        if side is None:
                            break
                        value = side
                    if last_named is not None and _same_name(last_named[0], name):
                        earlier_value, earlier_text = last_named[1], last_named[2]
                        if binary_operations(earlier_value.expr) > 0:
                            add(offset, clause, "=", earlier_value, right, earlier_text)
                    last_named = (
                        name if last_named is None or not _same_name(last_named[0], name) else last_named[0],
                        value,
                        " ".join(clause[value.start : value.end].split()),
                    )
                    named_here = True
        if not named_here:
            last_named = None
    return found if limit is None else found[:limit]
