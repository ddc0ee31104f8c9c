"""The symbolic check: algebra and calculus a node states, verified with SymPy (paper 3.1.1, tier 1).

`SymbolicCheck` reads the statements of a node's text (and of an HDAG node's `expression`, its
machine-checkable form), with the definitions its parents make, and verifies:

(a) algebraic identities with variables: "(x+1)^2 = x^2 + 2x + 1";
(b) antiderivatives and integration steps: "∫ 2e^x dx = 2e^x + C", "\\int x e^{x}\\,dx = xe^x - e^x + C",
    "integral of 2x dx = x^2 + C", "∫2x e^x dx = 2x e^x - ∫2e^x dx" (by parts): the two sides
    must have the same derivative (d/dx ∫ f dx = f, and the constant C vanishes);
(c) derivatives: "d/dx (x^2 e^x) = 2xe^x + x^2e^x", "f'(x) = ..." and "dy/dx = ..." when f or y is
    defined in the text or its parents; differentials "du = 2x dx" when u is defined ("u = x^2"),
    and "v = e^x" when dv is ("dv = e^x dx", so v' must be e^x): the paper's v4 and v6;
(d) definite integrals, evaluated exactly: "\\int_0^1 x^2 dx = 1/3" (0.333 holds as a rounding);
    and numbers without an exact rational value: "\\sqrt{8} = 2\\sqrt{2}", "π ≈ 3.14";
(e) results: a node that only states a result "x^2e^x - 2xe^x + 2e^x + C" is compared with its own
    `expression`, or else with what its parents leave to integrate ("x^2e^x - ∫2xe^x dx").

How a claim is decided (`compare`), in this order: structurally equal, or equal after
`sympy.expand`: proven. Otherwise both sides are evaluated at fixed points (`SAMPLE_POINTS`, positive
and away from integers, so logarithms and roots are defined) to `SAMPLE_DIGITS` digits: a point where
they differ by more than `SAMPLE_TOLERANCE` (relative) is a counterexample, and the claim FAILS (a
counterexample disproves an identity; the detail names the point). Otherwise `sympy.simplify` of
the difference: zero proves it. When simplify cannot decide but every point agreed, the claim is
*undecided*: numerical agreement is evidence, not proof, and a tier-1 checker votes with
epsilon_C = 0, so the check answers NOT_APPLICABLE and says why rather than guessing a pass.

What is not a claim, and is skipped (false positives): definitions ("u = x^2", "f(x) = ...",
"dv = e^x dx"), equations being solved ("2x + 3 = 7", "3x + 2 = x + 10": an identity needs the same
variables on both sides, one side not already a flat polynomial, and no sign of solving in the text
such as "solve" or "x = 3"), conditions ("f'(x) = 0"), inequalities, statements with numbers only
(the arithmetic check's), and anything in a code block. Such an equation is still tried: if SymPy
proves it an identity it counts as a pass ("sin^2 x + cos^2 x = 1"), otherwise it is dropped, never
failed. So is an identity written with decimals, which are rounded values, often with units
written as letters ("20 kb/s ÷ 3600 = 0.0056 kb/s").

SymPy can take very long (simplify of a large expression), so the work of one node runs in a
daemon worker thread for at most `timeout_seconds`; expressions over `MAX_CLAIM_NODES` nodes are
not handed to SymPy at all. On timeout the check reports what it found so far: a FAIL found before
it stands (it is proven), otherwise NOT_APPLICABLE with a detail saying SymPy ran out of time. A
thread cannot be killed: an abandoned one finishes its current SymPy call in the background and then
stops (it checks a stop flag between claims).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final, TypeVar

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text
from trust.auditors.checks import verdicts
from trust.core.graphs.hdag import HdagNode
from trust.core.maths.expressions import (
    Apply,
    Call,
    Derivative,
    Differential,
    EvaluationError,
    Expr,
    Integral,
    Negate,
    Number,
    ParseError,
    Percent,
    Power,
    Product,
    Sum,
    Symbol,
    evaluate_exact,
    free_symbols,
    parse_statement,
    render,
    size,
    split_relations,
    subexpressions,
    to_sympy,
)
from trust.core.maths.rounding import decimals, half_unit, literal, significant_unit
from trust.core.maths.text import ANNOTATION, ARROWS, FENCE, INLINE_CODE
from trust.errors import GraphError

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_CLAIM_NODES",
    "SAMPLE_DIGITS",
    "SAMPLE_POINTS",
    "SAMPLE_TOLERANCE",
    "Claim",
    "Finding",
    "SymbolicCheck",
    "compare",
    "find_claims",
    "statements",
]

DEFAULT_TIMEOUT_SECONDS: Final = 10.0
"""Wall-clock seconds SymPy may spend on one node before the check gives up (NOT_APPLICABLE)."""
MAX_CLAIM_NODES: Final = 400
"""The largest expression (tree nodes, both sides) handed to SymPy."""
SAMPLE_POINTS: Final = (Fraction(7342, 10000), Fraction(13917, 10000), Fraction(22813, 10000), Fraction(4219, 10000))
"""Where both sides are evaluated numerically (the k-th variable, by name, at point * (1 + k/7))."""
SAMPLE_DIGITS: Final = 30
"""Significant digits of the numerical evaluation."""
SAMPLE_TOLERANCE: Final = 1e-12
"""Relative difference beyond which two sides differ at a point (far above the error at 30 digits)."""
_MAX_SIDE_CHARS: Final = 300
"""The longest stretch of a clause searched for where a statement's first or last side starts/ends."""

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- claims


@dataclass(frozen=True, slots=True)
class Claim:
    """One checkable statement. `kind` is one of "identity", "antiderivative", "integration step",
    "definite integral", "derivative", "differential", "primitive", "value", "result"; `text` the
    statement as written. The claim is that `left` equals `right`, except:

    - "antiderivative", "integration step": d/d`variable` of both sides are equal;
    - "differential" (du = g dx, u defined as `left`) and "primitive" (v = `left`, dv = g dx given):
      d/d`variable` of `left` equals `right` (g); `name` is u or v;
    - "result" with `alternatives` (what the parents leave to integrate): d/d`variable` of `left`
      equals that of one of them; without, `left` equals `right` (its own expression);
    - "value" and "definite integral": `right` may be a decimal rounded to its own decimals, and
      "≈" (`relation`) allows one unit of its last significant digit.

    A `tentative` claim may be an equation to solve rather than an identity ("2x + 3 = 7",
    "f'(x) = 0"): only a proof that it holds counts (sin^2 x + cos^2 x = 1 passes); otherwise it is
    dropped, never failed.
    """

    kind: str
    text: str
    left: Expr
    right: Expr
    variable: str | None = None
    alternatives: tuple[Expr, ...] = ()
    relation: str = "="
    name: str | None = None
    tentative: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    """What became of one claim: `outcome` PASS, FAIL, or NOT_APPLICABLE (undecided)."""

    claim: Claim
    outcome: Outcome
    detail: str
    fault: str | None = None
    expected: str | None = None


@dataclass(slots=True)
class _Context:
    """What the parents (and the node so far) define: u = x^2, dv = e^x dx, f(x) = ..."""

    values: dict[str, Expr] = field(default_factory=dict)
    differentials: dict[str, tuple[Expr, str]] = field(default_factory=dict)
    functions: dict[str, tuple[tuple[str, ...], Expr]] = field(default_factory=dict)

    def merge(self, other: _Context, ambiguous: set[str]) -> None:
        """Adds another parent's definitions; a name two parents define differently is dropped."""
        _merge_into(self.values, other.values, ambiguous)
        _merge_into(self.differentials, other.differentials, ambiguous)
        _merge_into(self.functions, other.functions, ambiguous)

    def drop(self, names: Iterable[str]) -> None:
        for name in names:
            self.values.pop(name, None)
            self.differentials.pop(name, None)
            self.functions.pop(name, None)


def _merge_into(mine: dict[str, T], theirs: dict[str, T], ambiguous: set[str]) -> None:
    for name, value in theirs.items():
        if name in mine and mine[name] != value:
            ambiguous.add(name)
        mine[name] = value


# ---------------------------------------------------------------------------------------------- finding statements

_DISPLAY = re.compile(r"\$\$|\\\[|\\\]")
"""Display maths ("\\[ x = 3/4 * 48 \\] \\[ x = 36 \\]") holds one statement a block: its delimiters end a
statement even on one line, as a line break does."""
_SPACED_DASH = re.compile(r"(?<=[\w)])[ \t]+[–—][ \t]+(?=[\w(])")
"""An en or em dash with spaces around it between two operands is a minus ("28 – 4")."""
_DELIMITERS = re.compile(r"\\\(|\\\)|\$")
_LATEX_SPACING = re.compile(r"\\[,;:! ]|&")
_LATEX_BREAKS = re.compile(r"\\\\|\\q?quad\b|\\text\s*\{[^{}]*\}|\\implies\b|\\Rightarrow\b|\\iff\b")
_INTEGRAL_WORDS = re.compile(r"\b(?:the\s+)?(?:(?:in)?definite\s+)?(?:integral|antiderivative)\s+of\b", re.I)
_BREAK = re.compile(  # after a digit, a point ends a clause only at the end of the text ("3.5", "3. Then")
    r"\n|;|,\s|(?<!\d)\.(?=\s|$)|(?<=\d)\.\Z|:\s|\s(?:and|so|then|thus|hence|therefore|giving|gives|yields|where|with|since|because"
    r"|which|while|but|or|i\.e\.|e\.g\.)(?=\s)",
    re.I,
)
_RELATION = re.compile(r"==|<=|>=|!=|[=<>≤≥≠≈]|\\(?:leq?|geq?|neq?|approx)\b")
_RELATION_NAMES: Final = {"==": "=", "<=": "≤", ">=": "≥", "!=": "≠", "\\le": "≤", "\\leq": "≤", "\\ge": "≥",
                          "\\geq": "≥", "\\ne": "≠", "\\neq": "≠", "\\approx": "≈"}  # fmt: skip
_TRAILING = ' \t.,;:!?"”’'
_SOLVING = re.compile(
    r"\b(?:solve[sd]?|solving|solutions?|roots?|zeros?|equations?|unknown|such that|for which|when|if|set)\b", re.I
)


@dataclass(frozen=True, slots=True)
class _Found:
    """A statement cut out of a clause: its sides (None where a side did not parse) and relations."""

    sides: tuple[Expr | None, ...]
    texts: tuple[str, ...]
    ops: tuple[str, ...]


def _prepare(text: str) -> str:
    text = FENCE.sub("\n", text)
    text = INLINE_CODE.sub(" ", text)
    text = ANNOTATION.sub(" ", text)
    text = _LATEX_BREAKS.sub("\n", text)
    text = ARROWS.sub("\n", text)
    text = _DISPLAY.sub("\n", text)
    text = _SPACED_DASH.sub(" - ", text)
    text = _DELIMITERS.sub(" ", text)
    text = _LATEX_SPACING.sub(" ", text)
    return _INTEGRAL_WORDS.sub("∫", text)


def _clauses(text: str) -> list[str]:
    """`text` split at sentence and clause breaks outside brackets."""
    clauses, _ = split_relations(text, _BREAK, {})
    return [clause for clause in (c.strip() for c in clauses) if clause]


def _parse(text: str) -> Expr | None:
    text = text.strip()
    if not text:
        return None
    try:
        statement = parse_statement(text)
    except ParseError:
        return None
    return statement.sides[0] if not statement.ops else None


def _longest_suffix(text: str) -> tuple[Expr | None, str]:
    """The longest tail of `text`, starting at a word, that parses: "Check: d/dx (...)" -> d/dx (...)."""
    text = text.rstrip()[-_MAX_SIDE_CHARS:]
    starts = [0] + [i for i in range(1, len(text)) if text[i - 1].isspace() and not text[i].isspace()]
    for start in starts:
        parsed = _parse(text[start:])
        if parsed is not None:
            return parsed, text[start:].strip()
    return None, ""


def _longest_prefix(text: str) -> tuple[Expr | None, str]:
    """The longest head of `text`, ending at a word, that parses: "2e^x + C (verified ...)" -> 2e^x + C."""
    text = text.lstrip()[:_MAX_SIDE_CHARS]
    ends = [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i].isspace() and not text[i - 1].isspace()]
    for end in ends:
        candidate = text[:end].rstrip(_TRAILING) if end == len(text) else text[:end]
        candidate = candidate.rstrip(_TRAILING) or candidate
        parsed = _parse(candidate)
        if parsed is not None:
            return parsed, candidate.strip()
    return None, ""


def _statements(text: str) -> list[_Found]:
    """The statements of a text, in order; a clause that starts with a relation continues the last
    side of the statement before it ("(x+1)^2 = (x+1)(x+1)" then "= x^2 + 2x + 1")."""
    found: list[_Found] = []
    previous: tuple[Expr | None, str] = (None, "")
    for clause in _clauses(_prepare(text)):
        raw_sides, ops = split_relations(clause, _RELATION, _RELATION_NAMES)
        if not ops:
            parsed, written = _longest_suffix(clause.rstrip(_TRAILING))
            if parsed is not None:
                found.append(_Found((parsed,), (written,), ()))
                previous = (parsed, written)
            else:
                previous = (None, "")
            continue
        sides: list[Expr | None] = []
        texts: list[str] = []
        if raw_sides[0].strip() == "" and previous[0] is not None:
            first, first_text = previous
        else:
            first, first_text = _longest_suffix(raw_sides[0])
        sides.append(first)
        texts.append(first_text)
        for middle in raw_sides[1:-1]:
            sides.append(_parse(middle))
            texts.append(middle.strip())
        last, last_text = _longest_prefix(raw_sides[-1])
        sides.append(last)
        texts.append(last_text)
        found.append(_Found(tuple(sides), tuple(texts), tuple(ops)))
        previous = (last, last_text)
    return found


def statements(text: str) -> list[tuple[tuple[Expr | None, ...], tuple[str, ...], tuple[str, ...]]]:
    """The statements of `text` as this check cuts them out of prose, in order: each one's sides
    (None where a side did not parse), the sides as written, and the relations between them. Other
    checks that read equations (`trust.auditors.checks.equations`) read them the same way."""
    return [(found.sides, found.texts, found.ops) for found in _statements(text)]


# ---------------------------------------------------------------------------------------------- classifying


def _has(expr: Expr, kind: type | tuple[type, ...]) -> bool:
    return any(isinstance(node, kind) for node in subexpressions(expr))


def _integrals(expr: Expr) -> list[Integral]:
    return [node for node in subexpressions(expr) if isinstance(node, Integral)]


def _is_bare_integral(expr: Expr) -> bool:
    return isinstance(expr, Integral) and not expr.definite


def _exact(expr: Expr) -> bool:
    try:
        evaluate_exact(expr)
    except EvaluationError:
        return False
    return True


def _monomial(expr: Expr) -> bool:
    """A number, a variable, a variable to a numeric power, or a product of those (divided by numbers)."""
    if isinstance(expr, Number | Symbol | Percent):
        return True
    if isinstance(expr, Negate):
        return _monomial(expr.operand)
    if isinstance(expr, Power):
        return isinstance(expr.base, Symbol) and isinstance(expr.exponent, Number)
    if isinstance(expr, Product):
        return (
            _monomial(expr.first)
            and all(_monomial(factor) for _, factor in expr.rest)
            and all(isinstance(factor, Number) for op, factor in expr.rest if op == "/")
        )
    return False


def _flat(expr: Expr) -> bool:
    """Whether `expr` is a polynomial already written out, a sum of monomials ("4 + x/3", "2x/3"):
    both sides flat is an equation being solved ("3x + 2 = x + 10"), not an identity to check."""
    if isinstance(expr, Sum):
        return _monomial(expr.first) and all(_monomial(term) for _, term in expr.rest)
    return _monomial(expr)


def _has_decimals(expr: Expr) -> bool:
    """Whether a number with a decimal point is written in `expr` (a measured or rounded value)."""
    return any(isinstance(node, Number) and "." in node.text for node in subexpressions(expr))


def _differential_coefficient(expr: Expr) -> tuple[Expr, str] | None:
    """g and x of "g dx" (the right side of "du = 2x dx"); None when `expr` is not of that form."""
    if isinstance(expr, Differential):
        return Number(Fraction(1), "1"), expr.variable
    if not isinstance(expr, Product):
        return None
    factors = [("*", expr.first), *expr.rest]
    found = [i for i, (op, factor) in enumerate(factors) if isinstance(factor, Differential) and op != "/"]
    if len(found) != 1:
        return None
    differential = factors[found[0]][1]
    assert isinstance(differential, Differential)
    rest = [pair for i, pair in enumerate(factors) if i != found[0]]
    if any(_has(factor, Differential) for _, factor in rest):
        return None
    first_op, first = rest[0]
    if first_op == "/":
        first = Product(Number(Fraction(1), "1"), (("/", first),))
    coefficient = first if len(rest) == 1 else Product(first, tuple(rest[1:]))
    return coefficient, differential.variable


def _is_ratio_of_differentials(expr: Expr) -> bool:
    """dy/dx."""
    return (
        isinstance(expr, Product)
        and isinstance(expr.first, Differential)
        and len(expr.rest) == 1
        and expr.rest[0][0] == "/"
        and isinstance(expr.rest[0][1], Differential)
    )


def _is_named_derivative(expr: Expr) -> bool:
    """f'(x), y' or dy/dx."""
    return (isinstance(expr, Apply) and expr.primes > 0) or _is_ratio_of_differentials(expr)


def _derivative_head(expr: Expr, context: _Context) -> Expr | None:
    """The derivative a named form stands for, when its function is defined: f'(x) (f defined),
    y' and dy/dx (y defined). None otherwise."""
    if isinstance(expr, Apply) and expr.primes:
        if expr.name in context.functions:
            return expr
        if not expr.args and expr.name in context.values:
            return Derivative(context.values[expr.name], None, expr.primes)
        return None
    if _is_ratio_of_differentials(expr):
        assert isinstance(expr, Product) and isinstance(expr.first, Differential)
        denominator = expr.rest[0][1]
        assert isinstance(denominator, Differential)
        name, variable = expr.first.variable, denominator.variable
        if name in context.values:
            return Derivative(context.values[name], variable)
    return None


@dataclass(frozen=True, slots=True)
class _Reading:
    """How a text is read: `claims` (the node: statements are checked) or only definitions (a
    parent); `strict` (the node's `expression`: every equation is a claim) and `solving` (the text
    solves equations, so algebraic equations are not identities)."""

    claims: bool
    strict: bool = False
    solving: bool = False


def _solving(text: str, statements: Sequence[_Found]) -> bool:
    if _SOLVING.search(text):
        return True
    for statement in statements:
        for index, op in enumerate(statement.ops):
            left, right = statement.sides[index], statement.sides[index + 1]
            if op == "=" and isinstance(left, Symbol) and right is not None and not free_symbols(right):
                return True  # "x = 3": the text finds a value of x
    return False


def _read(statements: Sequence[_Found], context: _Context, reading: _Reading) -> list[Claim]:
    claims: list[Claim] = []
    for statement in statements:
        for index, op in enumerate(statement.ops):
            left, right = statement.sides[index], statement.sides[index + 1]
            if left is None or right is None or op not in ("=", "≈"):
                continue
            text = f"{statement.texts[index]} {op} {statement.texts[index + 1]}"
            if index == 0 and op == "=":
                handled, claim = _definition(left, right, text, context, reading)
                if claim is not None:
                    claims.append(claim)
                if handled:
                    continue
            if reading.claims:
                claim = _classify(left, op, right, text, context, reading)
                if claim is not None:
                    claims.append(claim)
    return claims


def _definition(left: Expr, right: Expr, text: str, context: _Context, reading: _Reading) -> tuple[bool, Claim | None]:
    """Reads "u = x^2", "dv = e^x dx", "f(x) = ...", and their checks in a node ("du = 2x dx" once u
    is known, "v = e^x" once dv is). Returns (whether the pair was a definition, a claim to check)."""
    if isinstance(left, Differential):
        coefficient = _differential_coefficient(right)
        if coefficient is None:
            return True, None
        name = left.variable
        if reading.claims and name in context.values:
            return True, Claim("differential", text, context.values[name], *coefficient, name=name)
        context.differentials[name] = coefficient
        return True, None
    if isinstance(left, Symbol) and left.name != "C":
        if left.name in free_symbols(right):
            return True, None  # "x = x + 1" is not a definition, nor an identity
        claim = None
        if reading.claims and left.name in context.differentials:
            derivative, variable = context.differentials[left.name]
            claim = Claim("primitive", text, right, derivative, variable, name=left.name)
        context.values[left.name] = right
        return True, claim
    if isinstance(left, Apply) and not left.primes and left.args and all(isinstance(a, Symbol) for a in left.args):
        parameters = tuple(a.name for a in left.args if isinstance(a, Symbol))
        if len(set(parameters)) == len(parameters):
            context.functions[left.name] = (parameters, right)
            return True, None
    if reading.claims:
        head = _derivative_head(left, context)
        if head is not None:
            condition = not free_symbols(right) and not reading.strict  # "f'(x) = 0": maybe a condition to solve
            return True, Claim("derivative", text, head, right, tentative=condition)
        if _is_named_derivative(left):
            return True, None  # f'(x), y', dy/dx of something not defined here: nothing to compare with
    return False, None


def _classify(left: Expr, op: str, right: Expr, text: str, context: _Context, reading: _Reading) -> Claim | None:
    both = (left, right)
    if any(_has(side, Differential) for side in both):
        return None
    integrals = [node for side in both for node in _integrals(side)]
    if integrals:
        if op != "=":
            return None
        indefinite = [node for node in integrals if not node.definite]
        if not indefinite:
            return Claim("definite integral", text, left, right)
        variables = {node.variable for node in indefinite}
        if len(variables) != 1:
            return None
        bare = any(_is_bare_integral(a) and not _integrals(b) for a, b in ((left, right), (right, left)))
        kind = "antiderivative" if bare else "integration step"
        return Claim(kind, text, left, right, variables.pop())
    if any(_has(side, Derivative) for side in both):
        return Claim("derivative", text, left, right) if op == "=" else None
    if any(isinstance(node, Apply) and node.primes for side in both for node in subexpressions(side)):
        named = [node for side in both for node in subexpressions(side) if isinstance(node, Apply) and node.primes]
        if all(node.name in context.functions for node in named) and op == "=":
            return Claim("derivative", text, left, right)
        return None
    left_symbols, right_symbols = free_symbols(left), free_symbols(right)
    if not left_symbols and not right_symbols:
        if _exact(left) and _exact(right):
            return None  # numbers only: the arithmetic check's
        return Claim("value", text, left, right, relation=op)
    if op != "=":
        return None
    if reading.strict:
        return Claim("identity", text, left, right)
    if isinstance(left, Symbol | Apply) or isinstance(right, Symbol | Apply):
        return None  # "y = 3x + 2", "... = y": a definition or a name, not an identity
    tentative = (
        reading.solving
        or left_symbols != right_symbols
        or (_flat(left) and _flat(right))
        or _has_decimals(left)
        or _has_decimals(right)  # "20 kb/s ÷ 3600 = 0.0056 kb/s": rounded, with units as letters
    )
    return Claim("identity", text, left, right, tentative=tentative)


def _strip_constant(expr: Expr) -> tuple[Expr, bool]:
    """F of "F + C" (the constant of integration), and whether there was one."""
    if isinstance(expr, Sum) and expr.rest and expr.rest[-1] == ("+", Symbol("C")):
        rest = expr.rest[:-1]
        return (Sum(expr.first, rest) if rest else expr.first), True
    return expr, False


def _result_claims(
    node_statements: Sequence[_Found], expression: Sequence[_Found], parents: Sequence[_Found]
) -> list[Claim]:
    """(e) of the module docstring: a node whose text only states a result, "x^2e^x - 2xe^x + 2e^x + C".

    With a bare `expression` of its own, the result must equal it (up to the constant C). Otherwise
    a result "F + C" is compared with what the parents leave to integrate: their bare expressions
    holding an indefinite integral ("x^2e^x - ∫2xe^x dx"), as alternatives (see `_evaluate_result`).
    """
    if any(s.ops for s in node_statements):
        return []
    bare = [s for s in node_statements if s.sides[0] is not None and size(s.sides[0]) >= 3]
    if not bare:
        return []
    result = bare[-1].sides[0]
    assert result is not None
    written = bare[-1].texts[0]
    value, constant = _strip_constant(result)
    if not free_symbols(value) - {"C"}:
        return []
    own = [s.sides[0] for s in expression if not s.ops and s.sides[0] is not None]
    if own:
        return [Claim("result", written, value, own[-1])]
    if not constant:
        return []
    candidates = tuple(
        side
        for s in parents
        if not s.ops and (side := s.sides[0]) is not None and any(not i.definite for i in _integrals(side))
    )
    variables = {i.variable for c in candidates for i in _integrals(c) if not i.definite}
    if not candidates or len(variables) != 1:
        return []
    return [Claim("result", written, value, candidates[0], variables.pop(), alternatives=candidates)]


def find_claims(request: AuditRequest) -> list[Claim]:
    """The claims of the node of `request`, read with the definitions its parents make (see the
    module docstring for what is a claim and what is skipped)."""
    return _read_request(request)[0]


def _read_request(request: AuditRequest) -> tuple[list[Claim], _Context]:
    """The node's claims, and the context they are read in (what the parents and the node define)."""
    context = _Context()
    ambiguous: set[str] = set()
    parent_statements: list[_Found] = []
    for parent in request.parents:
        own = _Context()
        statements = _statements(node_text(parent))
        parent_statements += statements
        _read(statements, own, _Reading(claims=False))
        context.merge(own, ambiguous)
    context.drop(ambiguous)
    text = request.text
    statements = _statements(text)
    claims = _read(statements, context, _Reading(claims=True, solving=_solving(text, statements)))
    expression_statements: list[_Found] = []
    node = request.node
    if isinstance(node, HdagNode) and node.expression:
        expression_statements = _statements(node.expression)
        claims += _read(expression_statements, context, _Reading(claims=True, strict=True))
    claims += _result_claims(statements, expression_statements, parent_statements)
    small = [claim for claim in claims if size(claim.left) + size(claim.right) <= MAX_CLAIM_NODES]
    return small, context


# ---------------------------------------------------------------------------------------------- deciding


def _sympy() -> Any:
    import sympy

    return sympy


def _point_values(expr: Any, subs: dict[Any, Any]) -> complex | None:
    try:
        value = complex(expr.evalf(SAMPLE_DIGITS, subs=subs))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None  # not a number there: an undefined function, a pole, infinity
    if value != value or abs(value) == float("inf"):
        return None
    return value


def _shown(value: complex) -> str:
    return f"{value.real:.10g}" if abs(value.imag) <= SAMPLE_TOLERANCE * max(1.0, abs(value)) else f"{value:.10g}"


def compare(lhs: Any, rhs: Any) -> tuple[Outcome, str]:
    """Whether two SymPy expressions are identically equal: PASS when proven (equal as built, after
    `expand`, or `simplify` of the difference is 0), FAIL with a counterexample (a sample point
    where they differ), NOT_APPLICABLE when neither (see the module docstring). The text says how."""
    sympy = _sympy()
    if lhs == rhs:
        return Outcome.PASS, "equal as written"
    difference = sympy.Add(lhs, sympy.Mul(sympy.Integer(-1), rhs))
    if difference == 0:
        return Outcome.PASS, "equal as written"
    symbols = sorted(difference.free_symbols, key=lambda symbol: symbol.name)
    sampled = 0
    for point in SAMPLE_POINTS:
        subs = {
            symbol: sympy.Rational(point.numerator, point.denominator) * sympy.Rational(7 + k, 7)
            for k, symbol in enumerate(symbols)
        }
        left, right = _point_values(lhs, subs), _point_values(rhs, subs)
        if left is None or right is None:
            continue
        sampled += 1
        if abs(left - right) > SAMPLE_TOLERANCE * max(1.0, abs(left), abs(right)):
            where = ", ".join(f"{symbol} = {float(value):.6g}" for symbol, value in subs.items())
            at = f"at {where}" if where else "numerically"
            return Outcome.FAIL, f"{at} the left side is {_shown(left)} and the right side {_shown(right)}"
        if not symbols:
            break
    if sympy.expand(difference) == 0:
        return Outcome.PASS, "equal after expanding"
    if sympy.simplify(difference) == 0:
        return Outcome.PASS, "equal after simplifying"
    agreed = f"equal at {sampled} sample point(s), but " if sampled else ""
    return Outcome.NOT_APPLICABLE, f"{agreed}SymPy could not prove the two sides equal"


def _approximates(value: Any, stated: Expr, relation: str) -> bool | None:
    """Whether a number is `stated` rounded to its decimals (relation "="), or within one unit of its
    last significant digit ("≈"); None when `stated` is not a decimal literal."""
    number = literal(stated, percent=False)
    if number is None or (relation != "≈" and not decimals(number)):
        return None
    unit = significant_unit(number) if relation == "≈" else half_unit(decimals(number))
    point = _point_values(value, {})
    if point is None or abs(point.imag) > SAMPLE_TOLERANCE:
        return None
    stated_value = evaluate_exact(stated)
    return abs(Fraction(point.real) - stated_value) <= unit * (1 + Fraction(1, 10**9))


class _Evaluator:
    """Decides claims with SymPy; `functions` are the user functions the context defines."""

    def __init__(self, functions: dict[str, tuple[tuple[str, ...], Expr]]) -> None:
        self.sympy = _sympy()
        self.functions = functions

    def build(self, expr: Expr, *, log_base: int | None = None) -> Any:
        return to_sympy(expr, functions=self.functions, log_base=log_base)

    def symbol(self, name: str) -> Any:
        return self.sympy.Symbol(name, real=True)

    def antiderivative(self, integrand: Any, variable: Any) -> str | None:
        result = self.sympy.integrate(integrand, variable)
        return None if result.has(self.sympy.Integral) else f"{result} + C"

    def evaluate(self, claim: Claim) -> Finding:
        handler: Callable[[Claim], Finding] = getattr(self, "_" + claim.kind.replace(" ", "_"))
        return handler(claim)

    def _decided(
        self, claim: Claim, outcome: Outcome, how: str, fault: str, expected: str | None, wrong: str
    ) -> Finding:
        if outcome is Outcome.PASS:
            return Finding(claim, outcome, f"{claim.text}: holds ({how})")
        if outcome is Outcome.FAIL:
            return Finding(claim, outcome, f"{claim.text}: {wrong}; {how}", fault, expected)
        return Finding(claim, outcome, f"{claim.text}: undecided, {how}")

    def _identity(self, claim: Claim) -> Finding:
        lhs, rhs = self.build(claim.left), self.build(claim.right)
        outcome, how = compare(lhs, rhs)
        expected = None
        if outcome is Outcome.FAIL and lhs.is_polynomial():
            expected = str(self.sympy.expand(lhs))
        return self._decided(claim, outcome, how, "wrong identity", expected, "the two sides are not equal")

    def _antiderivative(self, claim: Claim) -> Finding:
        assert claim.variable is not None
        x = self.symbol(claim.variable)
        lhs, rhs = self.build(claim.left), self.build(claim.right)
        outcome, how = compare(self.sympy.diff(lhs, x), self.sympy.diff(rhs, x))
        expected = None
        integral, other = (claim.left, rhs) if _is_bare_integral(claim.left) else (claim.right, lhs)
        if outcome is Outcome.FAIL and isinstance(integral, Integral):
            integrand = self.build(integral.integrand)
            expected = self.antiderivative(integrand, x)
            wrong = f"d/d{x} ({other}) = {self.sympy.diff(other, x)}, not the integrand {integrand}"
        else:
            wrong = "the two sides differ by more than a constant"
        return self._decided(claim, outcome, how, "wrong antiderivative", expected, wrong)

    def _integration_step(self, claim: Claim) -> Finding:
        assert claim.variable is not None
        x = self.symbol(claim.variable)
        lhs, rhs = self.build(claim.left), self.build(claim.right)
        outcome, how = compare(self.sympy.diff(lhs, x), self.sympy.diff(rhs, x))
        wrong = "the two sides differ by more than a constant (their derivatives differ)"
        return self._decided(claim, outcome, how, "wrong integration step", None, wrong)

    def _definite_integral(self, claim: Claim) -> Finding:
        lhs, rhs = self.build(claim.left).doit(), self.build(claim.right).doit()
        if lhs.has(self.sympy.Integral) or rhs.has(self.sympy.Integral):
            undecided = f"{claim.text}: undecided, SymPy could not evaluate the integral"
            return Finding(claim, Outcome.NOT_APPLICABLE, undecided)
        rounded = _approximates(lhs, claim.right, claim.relation)
        if rounded:
            return Finding(claim, Outcome.PASS, f"{claim.text}: holds (the integral is {lhs}, rounded)")
        outcome, how = compare(lhs, rhs)
        return self._decided(claim, outcome, how, "wrong definite integral", str(lhs), f"the integral is {lhs}")

    def _derivative(self, claim: Claim) -> Finding:
        lhs, rhs = self.build(claim.left), self.build(claim.right)
        outcome, how = compare(lhs, rhs)
        derivative_on_left = _has(claim.left, Derivative) or _is_named_derivative(claim.left)
        computed = lhs if derivative_on_left or not _has(claim.right, Derivative) else rhs
        return self._decided(claim, outcome, how, "wrong derivative", str(computed), f"the derivative is {computed}")

    def _differential(self, claim: Claim) -> Finding:
        assert claim.variable is not None
        x = self.symbol(claim.variable)
        derivative = self.sympy.diff(self.build(claim.left), x)
        outcome, how = compare(derivative, self.build(claim.right))
        expected = f"d{claim.name} = {derivative} d{x}"
        wrong = f"{claim.name} = {self.build(claim.left)}, so d{claim.name} = {derivative} d{x}"
        return self._decided(claim, outcome, how, "wrong differential", expected, wrong)

    def _primitive(self, claim: Claim) -> Finding:
        assert claim.variable is not None
        x = self.symbol(claim.variable)
        stated = self.build(claim.left)
        given = self.build(claim.right)
        outcome, how = compare(self.sympy.diff(stated, x), given)
        expected = None
        if outcome is Outcome.FAIL:
            found = self.antiderivative(given, x)
            expected = None if found is None else f"{claim.name} = {found.removesuffix(' + C')}"
        wrong = f"d{claim.name} = {given} d{x}, but d/d{x} ({stated}) = {self.sympy.diff(stated, x)}"
        return self._decided(claim, outcome, how, "wrong antiderivative", expected, wrong)

    def _value(self, claim: Claim) -> Finding:
        logs = [
            node
            for side in (claim.left, claim.right)
            for node in subexpressions(side)
            if isinstance(node, Call) and node.name == "log" and len(node.args) == 1
        ]
        # a bare "log" is natural in SymPy and base 10 in many texts: it fails only if both readings fail
        findings = [self._value_read(claim, base) for base in ((None, 10) if logs else (None,))]
        passed = [f for f in findings if f.outcome is Outcome.PASS]
        if passed:
            return passed[0]
        return findings[0] if all(f.outcome is Outcome.FAIL for f in findings) else findings[-1]

    def _value_read(self, claim: Claim, base: int | None) -> Finding:
        lhs, rhs = self.build(claim.left, log_base=base), self.build(claim.right, log_base=base)
        rounded = _approximates(lhs, claim.right, claim.relation)
        if rounded is not None:
            outcome = Outcome.PASS if rounded else Outcome.FAIL
            how = "rounded" if rounded else f"the left side is {lhs.evalf(12)}"
        else:
            outcome, how = compare(lhs, rhs)
        reading = " with log in base 10" if base == 10 else ""
        expected = str(lhs.evalf(10))
        return self._decided(claim, outcome, how + reading, "wrong value", expected, f"the left side is {lhs}")

    def _result(self, claim: Claim) -> Finding:
        sympy = self.sympy
        stated = self.build(claim.left)
        if claim.variable is None:
            own = self.build(claim.right)
            outcome, how = compare(stated, own)
            expected = f"{own} + C"
            return self._decided(claim, outcome, how, "wrong result", expected, f"its own expression is {own}")
        x = self.symbol(claim.variable)
        target = sympy.diff(stated, x)
        built = [self.build(alternative) for alternative in claim.alternatives]
        derivatives = [sympy.diff(value, x) for value in built]
        integrands = [
            [self.build(i.integrand) for i in _integrals(alternative) if not i.definite]
            for alternative in claim.alternatives
        ]
        kept = []
        for index, derivative in enumerate(derivatives):
            others = [g for j, group in enumerate(integrands) if j != index for g in group]
            if not any(compare(derivative, g)[0] is Outcome.PASS for g in others):
                kept.append(index)  # a sub-result evaluates an integral another alternative holds
        kept = kept or list(range(len(derivatives)))
        for index in kept:
            if compare(target, derivatives[index])[0] is Outcome.PASS:
                source = render(claim.alternatives[index])
                return Finding(claim, Outcome.PASS, f"{claim.text}: holds (it is {source} with the integral done)")
        if len(kept) > 1:
            return Finding(
                claim,
                Outcome.NOT_APPLICABLE,
                f"{claim.text}: undecided, it matches none of {len(kept)} expressions its parents leave to integrate",
            )
        index = kept[0]
        outcome, how = compare(target, derivatives[index])
        closed = built[index].doit()
        closed_form = None if closed.has(sympy.Integral) else f"{sympy.simplify(closed)} + C"
        wrong = f"it is not {render(claim.alternatives[index])} with the integral done"
        return self._decided(claim, outcome, how, "wrong result", closed_form, wrong)


# ---------------------------------------------------------------------------------------------- the check


async def _in_thread(work: Callable[[threading.Event], T], timeout_seconds: float) -> tuple[T | None, bool]:
    """Runs `work` in a daemon thread; (its result, False), or (None, True) after `timeout_seconds`
    (the stop event is then set, and the thread is left to end on its own)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    stop = threading.Event()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work(stop)
        except BaseException as exc:  # handed to the waiting coroutine, which re-raises it
            error = exc
        try:
            loop.call_soon_threadsafe(deliver, result, error)
        except RuntimeError:
            pass  # the event loop has closed: nobody waits for this result any more

    threading.Thread(target=target, name="trust-symbolic-check", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(future), timeout_seconds), False
    except TimeoutError:
        stop.set()
        future.cancel()
        return None, True


@dataclass(frozen=True, slots=True)
class SymbolicCheck:
    """Verifies the algebra and calculus of a node with SymPy; see the module docstring.

    `timeout_seconds` bounds the SymPy work on one node (wall clock)."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        if not self.timeout_seconds > 0:
            raise GraphError(
                f"SymbolicCheck.timeout_seconds is {self.timeout_seconds!r}: give a positive number of seconds"
            )

    @property
    def name(self) -> str:
        return "symbolic"

    async def check(self, request: AuditRequest) -> CheckResult:
        findings: list[Finding] = []
        counted: list[int] = []

        def work(stop: threading.Event) -> None:
            claims, context = _read_request(request)
            counted.append(len(claims))
            evaluator = _Evaluator(context.functions)
            for claim in claims:
                if stop.is_set():
                    return
                try:
                    finding = evaluator.evaluate(claim)
                    if finding.outcome is Outcome.PASS or not claim.tentative:
                        findings.append(finding)
                except (GraphError, ValueError, TypeError, ArithmeticError, RecursionError, AttributeError) as exc:
                    # SymPy refusing an expression is not a verdict on the node
                    if claim.tentative:
                        continue
                    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                    findings.append(Finding(claim, Outcome.NOT_APPLICABLE, f"{claim.text}: undecided, {reason}"))

        _, timed_out = await _in_thread(work, self.timeout_seconds)
        done = list(findings)
        failed = [f for f in done if f.outcome is Outcome.FAIL]
        passed = [f for f in done if f.outcome is Outcome.PASS]
        undecided = [f for f in done if f.outcome is Outcome.NOT_APPLICABLE]
        if failed:
            return verdicts.failed(self.name, failed, len(done), "statement(s)")
        if timed_out:
            total = f" of {counted[0]}" if counted else ""
            return CheckResult(
                self.name,
                Outcome.NOT_APPLICABLE,
                f"SymPy did not finish within {self.timeout_seconds:g} s; {len(done)}{total} statement(s) decided "
                f"before, none wrong: nothing is concluded",
            )
        if undecided:
            return CheckResult(
                self.name,
                Outcome.NOT_APPLICABLE,
                f"{len(undecided)} statement(s) undecided ({len(passed)} hold): {verdicts.listed(undecided)}",
            )
        if passed:
            return CheckResult(
                self.name, Outcome.PASS, f"{len(passed)} statement(s) verified with SymPy: {verdicts.listed(passed)}"
            )
        return CheckResult(self.name, Outcome.NOT_APPLICABLE, "no algebra or calculus to verify was found")
