"""The arithmetic check: every calculation a node states, recomputed exactly (paper 3.1.1, tier 1).

`ArithmeticCheck` finds the calculations in the node's text (and, for an HDAG node, in its
`expression`), recomputes each with `fractions.Fraction` (`trust.core.maths.expressions`) and
compares it with the value stated. It passes when every calculation it found holds, fails on the
wrong ones with the exact value as `expected`, and is not applicable when it found none.

What counts as a calculation:

- GSM8K calculator annotations "<<48/2=24>>": always calculations, read as they are;
- in prose, a run of numbers, operators and relations with at least one operator on one side:
  "17 × 23 = 391", "Score: 1 + 1 = 2", chains "2 * 3 + 4 = 6 + 4 = 10" (each neighbouring pair),
  "\\frac{10}{3} = 3.33", "4 x 5 = 20" (an "x" between spaced numbers is a times sign),
  percentages "50/200 = 25%", and numeric comparisons "58 < 75", "85 ≥ 75" (checked for truth).

A stated value may be rounded to its own number of decimals: 10/3 = 3.33 and 10/3 = 3.3 hold,
10/3 = 3.4 does not, and neither does the truncation 2/3 = 0.66 (rounding, as the float
checker it replaced did; truncation is not accepted), except a whole quotient that the rest of
its line says is one: "43/5 = 8 full pens (with a remainder of 3)". A percentage holds when it is the value
(50/200 = 25%) or the value times 100 (0.25 * 100 = 25%). "≈" allows one unit of the last
significant digit (100/7 ≈ 14.3, 1000/3 ≈ 300).

What is skipped, never failed (false positives the prose rules guard against; most were learned
by the float-based checker of agent logs it replaced):

- code blocks (fenced and inline), and anything with a variable ("x = 5", "2x + 3 = 7": the
  symbolic check's business) or without an exact value (sqrt(2), a division by zero);
- a run glued to letters or digits outside it ("step2 + 3", "x + 3 = 5", "= 5x"), the tail or head
  of a longer expression ("n + 2 * 3 = 11", "2 + 3 = 5 + n"), a side after an operator word
  ("25% of 80 = 20", "3 times 4 = 12");
- two bare numbers ("1:2 = 3:6" leaves "2 = 3", "Step 1 = ..."): an equation needs an operator;
- ratios and times (1:2, 3:30), versions (3.11.2), dates and ranges: a wrong result whose side
  holds an unspaced hyphen between digits ("65-74 = 10") is ambiguous and skipped;
- list markers ("- ", "1. ") and markdown bold, currency signs, LaTeX delimiters and arrows
  ("=>", "→": they separate statements);
- the output of a tool turn (an observation of the environment, not a claim).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from trust.auditors.base import AuditRequest, CheckResult, Outcome
from trust.auditors.checks.verdicts import MAX_LISTED, failed, listed
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import HdagNode
from trust.core.maths.expressions import (
    EvaluationError,
    Expr,
    Factorial,
    Negate,
    Number,
    ParseError,
    Percent,
    Power,
    Product,
    Sum,
    evaluate_exact,
    format_exact,
    parse_expression,
    parse_statement,
    render,
    split_relations,
    subexpressions,
)
from trust.core.maths.rounding import decimals, literal, rounds_to, significant_unit

__all__ = [
    "MAX_LISTED",
    "ArithmeticCheck",
    "Calculation",
    "Judgement",
    "find_calculations",
    "judge",
]

_FENCE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_ANNOTATION = re.compile(r"<<([^<>\n]{1,500})>>")
_ARROWS = re.compile(
    r"<==>|<=>|⟺|==>|=>|-->|->|→|⇒|⟹|⟶|←|<-(?!\d)|\\implies\b|\\Rightarrow\b|\\rightarrow\b|\\to\b|\\iff\b"
)
_LATEX_SPACE = re.compile(r"\\left\b|\\right\b|\\displaystyle\b|\\[,;:! ]|\\q?quad\b|\\\(|\\\)|\\\[|\\\]|&")
_LATEX_SYMBOLS: Final = (
    (re.compile(r"\\(?:times|cdot)\b"), "×"),
    (re.compile(r"\\div\b"), "÷"),
    (re.compile(r"\\leq?\b"), "≤"),
    (re.compile(r"\\geq?\b"), "≥"),
    (re.compile(r"\\neq?\b"), "≠"),
    (re.compile(r"\\approx\b"), "≈"),
    (re.compile(r"\\[dt]frac\b"), r"\\frac"),
)
_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|textrm|mbox)\s*\{([^{}]*)\}")
_LATEX_ESCAPE = re.compile(r"\\([$%&#_])")
_CURRENCY = re.compile(r"[$€£¥]")
_BOLD = re.compile(r"\*\*|__")
_SPACED_DASH = re.compile(r"(?<=[\d)])[ \t]+[–—][ \t]+(?=[\d(])")
_TIMES_LETTER = re.compile(r"(?<=[\d)])[ \t]+[xX][ \t]+(?=[\d(])")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+", re.M)

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)|\d+(?:\.\d+)?|\.\d+"
_TOKEN = rf"(?:{_NUM})|\\frac|[-+*/×·÷^=<>≤≥≠≈%()\[\]{{}}!²³−]"
_SEGMENT = re.compile(rf"(?:{_TOKEN})(?:[ \t]*(?:{_TOKEN}))*")
_RELATION = re.compile(r"==|<=|>=|!=|[=<>≤≥≠≈]")
_RELATION_NAMES: Final = {"==": "=", "<=": "≤", ">=": "≥", "!=": "≠"}
_WORD_BEFORE = re.compile(r"([A-Za-z]+)[ \t]*$")
_WORD_AFTER = re.compile(r"^[ \t]*([A-Za-z]+)")
_RANGE = re.compile(r"\d-\d")
_WHOLE_QUOTIENT = re.compile(r"\b(?:remainders?|left over|round(?:ed|ing)? down|floor|whole|complete|full)\b", re.I)
_CONTEXT_CHARS: Final = 160

_OPERATOR_WORDS_BEFORE: Final = frozenset(
    {"of", "times", "plus", "minus", "by", "over", "divided", "multiplied", "than", "from", "into", "x"}
)
"""A number right after these words is an operand of a calculation written in words ("25% of 80",
"15 pages x 1/3 = 5")."""
_OPERATOR_WORDS_AFTER: Final = frozenset(
    {"of", "times", "plus", "minus", "divided", "multiplied", "squared", "cubed", "percent", "to", "x", "more", "less"}
)
"""A value right before these words is the start of a longer expression ("= 3 times 4")."""


@dataclass(frozen=True, slots=True)
class Calculation:
    """One relation between two numeric sides, as found: "17 × 23 = 391" is `left` 17 × 23,
    `relation` "=", `right` 391. `source` says where: "annotation" (<<...>>), "text" or "expression";
    `after` is the rest of its line (up to `_CONTEXT_CHARS`), which may say how it rounds."""

    left: Expr
    relation: str
    right: Expr
    left_text: str
    right_text: str
    source: str
    after: str = ""

    @property
    def text(self) -> str:
        return f"{self.left_text} {self.relation} {self.right_text}"


@dataclass(frozen=True, slots=True)
class Judgement:
    """Whether a calculation holds; for a wrong one, its fault and the exact value (`expected`)."""

    calculation: Calculation
    holds: bool
    detail: str
    fault: str | None = None
    expected: str | None = None


# ---------------------------------------------------------------------------------------------- finding


def _normalize(text: str) -> str:
    """Prose with code, annotations, delimiters, markdown and arrows out of the way (see the module
    docstring); statements are separated by ";" where an arrow stood."""
    text = _FENCE.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _ANNOTATION.sub("", text)
    text = _ARROWS.sub(" ; ", text)
    text = text.replace("\\\\", "\n")
    text = _LATEX_TEXT.sub(r" \1 ", text)
    text = _LATEX_ESCAPE.sub(r"\1", text)
    text = _LATEX_SPACE.sub(" ", text)
    for pattern, replacement in _LATEX_SYMBOLS:
        text = pattern.sub(replacement, text)
    text = _CURRENCY.sub(" ", text)
    text = _BOLD.sub(" ", text)
    text = text.replace("−", "-")
    text = _SPACED_DASH.sub(" - ", text)
    text = _TIMES_LETTER.sub(" × ", text)
    return _LIST_MARKER.sub(" ", text)


def _is_literal(expr: Expr) -> bool:
    """A number as stated, maybe signed or a percentage: "391", "-3", "25%"."""
    return literal(expr) is not None


def _first_side_is_cut(text: str, start: int, side: str, expr: Expr | None) -> bool:
    """Whether the first side of a run starting at `start` is the tail of something longer."""
    stripped = side.strip()
    if not stripped or stripped[0] in "*/^×·÷%)]}!=<>≤≥≠≈":
        return True
    before = text[max(0, start - _CONTEXT_CHARS) : start]
    glued = before[-1:] if before else ""
    if glued and (glued.isalnum() or glued in "_\\^."):
        return True  # "step2 + 3", "x2", "\\alpha 2"
    if glued and glued in ",:/" and before[-2:-1].isdigit():
        return True  # "1:2 = 3:6", "3,5 + 1"
    previous = before.rstrip(" \t")
    if stripped[0] in "+-" and previous and (previous[-1].isalnum() or previous[-1] in ")]}"):
        return True  # "x + 3 = 5", "n - 2 = 1"
    word = _WORD_BEFORE.search(before)
    if word is None:
        return False
    # "25% of 80 = 20", "3 times 4 = 12"; "Step 1 = 2 + 2", "Day 3 = ...": a label, not a value
    return word.group(1).lower() in _OPERATOR_WORDS_BEFORE or (expr is not None and _is_literal(expr))


def _last_side_is_cut(text: str, end: int, side: str, expr: Expr | None) -> bool:
    """Whether the last side of a run ending at `end` is the head of something longer."""
    stripped = side.strip()
    if not stripped or stripped[-1] in "+-*/^×·÷(=<>≤≥≠≈−":
        return True
    after = text[end : end + _CONTEXT_CHARS]
    glued = after[:1]
    if glued.isalpha():
        unit = re.match(r"[A-Za-z]+", after)
        # "24kg" keeps its value; "5x" is a product with a variable
        return not (expr is not None and _is_literal(expr) and unit is not None and len(unit.group()) >= 2)
    if glued and glued in "_\\":
        return True
    if glued and glued in ".,:" and after[1:2].isdigit():
        return True  # "3.5.1", "1:2", "4,5"
    word = _WORD_AFTER.match(after)
    return word is not None and word.group(1).lower() in _OPERATOR_WORDS_AFTER


def _parse_side(side: str) -> Expr | None:
    try:
        return parse_expression(side.strip())
    except ParseError:
        return None


def _from_segment(text: str, start: int, end: int, source: str) -> list[Calculation]:
    segment = text[start:end]
    while segment.endswith("!"):  # an exclamation, not a factorial: "2 + 3 = 5!"
        segment = segment[:-1].rstrip()
        end = start + len(segment)
    sides, ops = split_relations(segment, _RELATION, _RELATION_NAMES, strict_brackets=True)
    if not ops:
        return []
    parsed: list[Expr | None] = [_parse_side(side) for side in sides]
    if _first_side_is_cut(text, start, sides[0], parsed[0]):
        parsed[0] = None
    if _last_side_is_cut(text, end, sides[-1], parsed[-1]):
        parsed[-1] = None
    found: list[Calculation] = []
    for index, op in enumerate(ops):
        left, right = parsed[index], parsed[index + 1]
        if left is None or right is None:
            continue
        if op in ("=", "≈") and _is_literal(left) and _is_literal(right):
            continue  # "1:2 = 3:6" leaves "2 = 3"; "Step 1 = 4": not a calculation
        texts = (" ".join(sides[index].split()), " ".join(sides[index + 1].split()))
        after = text[end : end + _CONTEXT_CHARS].split("\n", 1)[0]
        found.append(Calculation(left, op, right, texts[0], texts[1], source, after))
    return found


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
        found.append(Calculation(left, op, right, texts[0].strip(), texts[1].strip(), "annotation"))
    return found


def find_calculations(text: str, *, source: str = "text") -> list[Calculation]:
    """Every calculation `text` states: its calculator annotations first, then those of its prose,
    in order. See the module docstring for what counts and what is skipped."""
    found: list[Calculation] = []
    for match in _ANNOTATION.finditer(_INLINE_CODE.sub(" ", _FENCE.sub("\n", text))):
        found += _annotation(match.group(1))
    prose = _normalize(text)
    for match in _SEGMENT.finditer(prose):
        found += _from_segment(prose, match.start(), match.end(), source)
    return found


# ---------------------------------------------------------------------------------------------- judging


def _fault(expr: Expr) -> str:
    while isinstance(expr, Negate):
        expr = expr.operand
    if isinstance(expr, Sum):
        ops = {op for op, _ in expr.rest}
        return "wrong sum" if ops == {"+"} else "wrong difference" if ops == {"-"} else "wrong calculation"
    if isinstance(expr, Product):
        ops = {"*" if op == "" else op for op, _ in expr.rest}
        return "wrong product" if ops == {"*"} else "wrong quotient" if ops == {"/"} else "wrong calculation"
    if isinstance(expr, Power):
        return "wrong power"
    if isinstance(expr, Factorial):
        return "wrong factorial"
    if isinstance(expr, Percent):
        return "wrong percentage"
    return "wrong calculation"


_TRUE_RELATION: Final = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "≤": lambda a, b: a <= b,
                         "≥": lambda a, b: a >= b, "≠": lambda a, b: a != b}  # fmt: skip


def judge(calculation: Calculation) -> Judgement | None:
    """Whether `calculation` holds, exactly; None when it cannot be decided (a side without an
    exact value, or a wrong result that is ambiguous in prose: see the module docstring)."""
    try:
        left = evaluate_exact(calculation.left)
        right = evaluate_exact(calculation.right)
    except EvaluationError:
        return None
    op = calculation.relation
    text = calculation.text
    if op in _TRUE_RELATION:
        if _TRUE_RELATION[op](left, right):
            return Judgement(calculation, True, text)
        truth = "<" if left < right else ">" if left > right else "="
        expected = f"{format_exact(left)} {truth} {format_exact(right)}"
        return _wrong(calculation, "false comparison", expected, f"{text} is false: {expected}")
    stated_expr, computed_expr = calculation.right, calculation.left
    stated, computed = right, left
    if not _is_literal(stated_expr) and _is_literal(calculation.left):
        stated_expr, computed_expr, stated, computed = calculation.left, calculation.right, left, right
    computed_text = calculation.left_text if computed_expr is calculation.left else calculation.right_text
    if op == "≈":
        stated_number = literal(stated_expr)
        if stated_number is None:
            return None
        if abs(computed - stated) <= significant_unit(stated_number):
            return Judgement(calculation, True, text)
        expected = format_exact(computed)
        return _wrong(calculation, "wrong approximation", expected, f"{text}, but {computed_text} = {expected}")
    if computed == stated:
        return Judgement(calculation, True, text)
    running = calculation.source == "text" and not _is_literal(stated_expr)
    if running and (_runs_on(computed_expr, stated) or _runs_on(stated_expr, computed)):
        return None  # "3/2 = 1.50 + 3.00 = 4.50": "=" used as "then", a running total
    percent = isinstance(stated_expr, Percent) or (
        isinstance(stated_expr, Negate) and isinstance(stated_expr.operand, Percent)
    )
    stated_number = literal(stated_expr)
    if stated_number is not None:
        places = decimals(stated_number)
        quotient = isinstance(computed_expr, Product) and computed_expr.rest[-1][0] == "/"
        if quotient and places == 0 and stated == int(computed) and _WHOLE_QUOTIENT.search(calculation.after):
            return Judgement(calculation, True, f"{text} (a whole quotient, as the text says)")
        if rounds_to(computed, stated, places + (2 if percent else 0)):
            return Judgement(calculation, True, f"{text} (rounded)")
        if percent and rounds_to(computed, stated * 100, places):
            return Judgement(calculation, True, f"{text} (as a percentage)")
    if _only_percentages(computed_expr) and not percent:
        return None  # "48 = 100% + 20%" (of something else): percentages of an unstated base
    if calculation.source != "annotation" and _RANGE.search(calculation.left_text + " " + calculation.right_text):
        return None  # "65-74 = 10": a range or a date, not a subtraction
    expected = f"{format_exact(computed * 100)}%" if percent else format_exact(computed)
    fault = "wrong percentage" if percent else _fault(computed_expr)
    return _wrong(calculation, fault, expected, f"{text}, but {computed_text} = {expected}")


def _runs_on(expr: Expr, previous: Fraction) -> bool:
    """Whether `expr` continues a running computation from `previous`: "1.50 + 3.00" after 3/2."""
    if not isinstance(expr, Sum | Product) or not _is_literal(expr.first):
        return False
    try:
        return evaluate_exact(expr.first) == previous
    except EvaluationError:
        return False


def _only_percentages(expr: Expr) -> bool:
    leaves = [node for node in subexpressions(expr) if isinstance(node, Number)]
    percents = [node for node in subexpressions(expr) if isinstance(node, Percent)]
    return bool(leaves) and len(percents) == len(leaves)


def _wrong(calculation: Calculation, fault: str, expected: str, detail: str) -> Judgement:
    return Judgement(calculation, False, detail, fault, expected)


# ---------------------------------------------------------------------------------------------- the check


@dataclass(frozen=True, slots=True)
class ArithmeticCheck:
    """Recomputes every calculation of a node exactly; see the module docstring."""

    @property
    def name(self) -> str:
        return "arithmetic"

    def calculations(self, request: AuditRequest) -> list[Calculation]:
        """The calculations of the node's text and, for an HDAG node, its `expression`, without
        repeats (a prose restatement of an annotation is the same calculation)."""
        found = find_calculations(request.text)
        node = request.node
        if isinstance(node, HdagNode) and node.expression:
            found += find_calculations(node.expression, source="expression")
        unique: dict[tuple[str, str, str], Calculation] = {}
        for calculation in found:
            key = (render(calculation.left), calculation.relation, render(calculation.right))
            unique.setdefault(key, calculation)
        return list(unique.values())

    async def check(self, request: AuditRequest) -> CheckResult:
        node = request.node
        if isinstance(node, AgentTurn) and node.role is Role.TOOL:
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, "a tool's output is an observation of its environment, not a claim"
            )
        calculations = self.calculations(request)
        judgements = [j for j in (judge(c) for c in calculations) if j is not None]
        if not judgements:
            skipped = f" ({len(calculations)} found without an exact value)" if calculations else ""
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, f"no calculation with numbers only was found{skipped}"
            )
        wrong = [j for j in judgements if not j.holds]
        if wrong:
            return failed(self.name, wrong, len(judgements), "calculation(s)")
        return CheckResult(
            self.name,
            Outcome.PASS,
            f"{len(judgements)} calculation(s) checked exactly, all hold: {listed(judgements)}",
        )
