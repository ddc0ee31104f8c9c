"""A safe parser for the maths that people and models write, and two evaluators of what it parses.

Tier-1 checks (paper 3.1.1) recompute what a node states. The statements arrive as text written by
models ("17 × 23 = 391", "\\int 2e^{x}\\,dx = 2e^{x} + C", "d/dx (x^2 e^x) = 2xe^x + x^2e^x"), so
this module turns such text into an expression tree of our own, frozen dataclasses, with a
tokenizer and a recursive-descent parser. Nothing is ever handed to `eval`, to SymPy's string
parser (`sympify`/`parse_expr` evaluate Python) or to `ast`: the text only selects constructors.

What is understood:

- numbers: integers, decimals (".5" too), thousands separators ("1,234.5": a comma followed by
  exactly three digits), percentages ("25%" is 1/4), currency signs are ignored ("$18");
- operators: + - * / ^ ** × · ⋅ ÷ − (Unicode minus), \\times \\cdot \\div, unary minus, factorial
  "5!", Unicode superscripts "x²", parentheses, brackets and braces;
- implicit multiplication, binding like "*": 2x, 3(4+1), 2e^x, xe^x, x^2e^x = x^2 * e^x. A number
  never multiplies implicitly from the right ("2 3" and "x 2" are errors, not products);
- LaTeX: \\frac{a}{b} (and \\dfrac, \\tfrac, \\frac12), ^{...}, \\sqrt{...}, \\sqrt[n]{...},
  \\left( \\right), thin spaces \\, \\; \\!, \\pi, Greek letters, \\mathrm{d}x, \\infty;
- functions sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh exp ln log sqrt abs, with or
  without parentheses ("sin x cos x" is sin(x)·cos(x), "sin^2 x" is (sin x)^2); log is the natural
  logarithm (SymPy's convention) unless a base is written: log_10(x), log_{2} x;
- variables: single letters, maybe with a subscript (x_1, a_{n}), and Greek letters; the constants
  e and pi/π; the "+ C" of an antiderivative is the variable C;
- calculus: ∫ / \\int / "integral of" ... dx (bounds \\int_0^1), d/dx (...), \\frac{d}{dx}, dy/dx,
  differentials du = 2x dx, primes f'(x), y', (x^2)'; user functions f(x), g, h, F, G, H; and the
  SymPy spellings diff(f, x), integrate(f, x), integrate(f, (x, a, b)), simplify(...) (a value
  preserving wrapper, dropped);
- relations = == < > <= >= != ≤ ≥ ≠ ≈ \\le \\ge \\neq \\approx, chained ("a = b = c").

Letter runs are split into known words and single letters ("xe" is x·e, "sinx" is sin x), and a
run that reads as prose ("the", "is", "using", "Check") is refused, so that a math span can be cut
out of a sentence by trying where it starts and ends (`trust.auditors.checks.symbolic`).

Abuse is bounded: the input is at most `MAX_EXPRESSION_CHARS` characters and `MAX_NESTING_DEPTH`
levels deep; exact powers are refused beyond `MAX_EXACT_EXPONENT` or when their result would hold
more than `MAX_EXACT_BITS` bits (2^10^10 is refused at once instead of hanging), roots beyond
`MAX_ROOT_INDEX`, factorials beyond `MAX_FACTORIAL`, and SymPy powers beyond `MAX_SYMPY_EXPONENT`.

The engine is the project's only arithmetic parser: the tier-1 checks, the rule-based decomposer
(`trust.core.decompose.rules`, which writes what it extracts with `to_python`) and the evaluation of
an operation's `expression` (`trust.core.maths.arithmetic`) all read maths through it;
`trust.core.maths.calculations` is the one finder of calculations in prose, `trust.core.maths.text`
the one home of code, annotation and arrow patterns and of LaTeX normalization, and
`trust.core.maths.rounding` the one rule for a value written rounded.

The two evaluators: `evaluate_exact` computes a variable-free, function-free expression exactly
with `fractions.Fraction` (an irrational value, such as sqrt(2) or pi, raises `EvaluationError`
saying so); `to_sympy` builds the SymPy expression with SymPy's constructors (Integer, Rational,
Symbol, Add, Mul, Pow, exp, sin, Integral, ...). Sums and products are n-ary nodes, so a long
chain "1 + 1 + ... + 1" is a flat tuple, not a deep recursion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from trust.errors import GraphError

__all__ = [
    "Apply",
    "Call",
    "Constant",
    "Derivative",
    "Differential",
    "EvaluationError",
    "Expr",
    "FUNCTIONS",
    "Factorial",
    "Integral",
    "MAX_EXACT_BITS",
    "MAX_EXACT_EXPONENT",
    "MAX_EXPRESSION_CHARS",
    "MAX_FACTORIAL",
    "MAX_NESTING_DEPTH",
    "MAX_ROOT_INDEX",
    "MAX_SYMPY_EXPONENT",
    "NUMBER",
    "NUMBER_PATTERN",
    "Negate",
    "Number",
    "ParseError",
    "Percent",
    "Power",
    "Product",
    "Statement",
    "Sum",
    "Symbol",
    "evaluate_exact",
    "format_exact",
    "free_symbols",
    "parse_expression",
    "parse_statement",
    "render",
    "size",
    "split_relations",
    "subexpressions",
    "to_python",
    "to_sympy",
]

MAX_EXPRESSION_CHARS: Final = 2_000
"""The longest text `parse_expression` / `parse_statement` accept, in characters."""
MAX_NESTING_DEPTH: Final = 64
"""The deepest nesting (brackets, unary signs, exponents, function arguments, integrals) accepted."""
MAX_EXACT_EXPONENT: Final = 100_000
"""The largest |n| of an exact power a^n (integer n)."""
MAX_EXACT_BITS: Final = 1 << 16
"""The largest numerator or denominator, in bits (65,536 bits, about 19,700 digits), that exact
evaluation produces; beyond it the value is refused as too large rather than computed for minutes."""
MAX_ROOT_INDEX: Final = 64
"""The largest n of an exact n-th root (a rational exponent p/n)."""
MAX_FACTORIAL: Final = 1_000
"""The largest n of an exact n!."""
MAX_SYMPY_EXPONENT: Final = 1_000
"""The largest |n| of a numeric exponent handed to SymPy ((x+1)^(10^9) would hang its expansion)."""
_MAX_POSTFIX: Final = 4
"""Postfix operators (! % ' ²) after one operand: "5!!!!!" is not maths anybody writes."""

FUNCTIONS: Final = frozenset(
    {
        "sin",
        "cos",
        "tan",
        "sec",
        "csc",
        "cot",
        "arcsin",
        "arccos",
        "arctan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "tanh",
        "exp",
        "ln",
        "log",
        "sqrt",
        "abs",
    }
)
"""The elementary functions the parser knows, by the name they are written with."""

_SPECIAL_FORMS: Final = frozenset({"diff", "integrate", "simplify", "expand", "factor"})
_VALUE_PRESERVING: Final = frozenset({"simplify", "expand", "factor"})
_USER_FUNCTIONS: Final = frozenset("fghFGH")
"""Letters that name a function when a parenthesis follows ("f(x)"); any other letter multiplies ("x(x+1)")."""

_PROSE_WORDS: Final = frozenset(
    {
        "am", "an", "as", "at", "be", "by", "do", "go", "he", "if", "in", "is", "it", "me", "my", "no", "of",
        "ok", "on", "or", "so", "to", "up", "us", "we", "vs", "eg", "ie",
        "cost", "tank", "sect", "pie", "pin", "pit", "pig", "pip", "logo", "logs", "expo", "tang", "coso",
    }
)  # fmt: skip
"""Letter runs that are English, not products of variables (two-letter words, and words that begin
with a function name followed by one letter: "cost" is not cos(t))."""

_GREEK: Final = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "ρ": "rho",
    "σ": "sigma", "τ": "tau", "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}  # fmt: skip
_GREEK_COMMANDS: Final = frozenset(_GREEK.values()) | {"varepsilon", "vartheta", "varphi"}
_SUPERSCRIPTS: Final = {
    "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-",
}  # fmt: skip

NUMBER_PATTERN: Final = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)|\d+(?:\.\d+)?|\.\d+"
"""How a number is written: digits with an optional decimal part (".5" too), or thousands separated
by commas ("1,234.5": a comma followed by exactly three digits, so "1,2345" is not one number)."""
NUMBER: Final = re.compile(NUMBER_PATTERN)
_LETTERS = re.compile(r"[A-Za-z]+")
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
_BRACED_NAME = re.compile(r"\s*\{\s*([A-Za-z]+)\s*\}")
_DIFFERENTIAL_VARIABLE = re.compile(r"\s*([A-Za-z])(?![A-Za-z])")


class ParseError(GraphError):
    """The text is not an expression this parser understands. `position` is the 0-based character
    offset of the offending token in the text, `token` the token as written ("" at the end)."""

    def __init__(self, text: str, message: str, position: int, token: str) -> None:
        self.text = text
        self.position = position
        self.token = token
        shown = text if len(text) <= 80 else text[:77] + "..."
        where = f"at position {position} ({token!r})" if token else f"at the end (position {position})"
        super().__init__(f"cannot parse {shown!r}: {message} {where}")


class EvaluationError(GraphError):
    """An expression has no exact rational value (a variable, an irrational number, a division by
    zero) or is too large to compute; the message says which."""


# ---------------------------------------------------------------------------------------------- tree


@dataclass(frozen=True, slots=True)
class Number:
    """A number as written: `text` keeps the spelling ("3.30", "1,234") for the decimals it states."""

    value: Fraction
    text: str


@dataclass(frozen=True, slots=True)
class Percent:
    operand: Expr


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str


@dataclass(frozen=True, slots=True)
class Constant:
    """e, pi or oo (infinity)."""

    name: str


@dataclass(frozen=True, slots=True)
class Negate:
    operand: Expr


@dataclass(frozen=True, slots=True)
class Sum:
    """first (op term)*, op "+" or "-"."""

    first: Expr
    rest: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class Product:
    """first (op factor)*, op "*", "/" or "" (implicit multiplication)."""

    first: Expr
    rest: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class Power:
    base: Expr
    exponent: Expr


@dataclass(frozen=True, slots=True)
class Factorial:
    operand: Expr


@dataclass(frozen=True, slots=True)
class Call:
    """An elementary function (`FUNCTIONS`) applied to its arguments (log: the value, then a base)."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Apply:
    """A user function f(x), or its derivative f'(x) (`primes` > 0); y' has no arguments."""

    name: str
    args: tuple[Expr, ...]
    primes: int = 0


@dataclass(frozen=True, slots=True)
class Differential:
    """dx: meaningful in an integral ("∫ f dx") or a differential equation ("du = 2x dx")."""

    variable: str


@dataclass(frozen=True, slots=True)
class Integral:
    """∫ integrand d(variable), indefinite when both bounds are None."""

    integrand: Expr
    variable: str
    lower: Expr | None = None
    upper: Expr | None = None

    @property
    def definite(self) -> bool:
        return self.lower is not None


@dataclass(frozen=True, slots=True)
class Derivative:
    """d^order/d(variable)^order of operand; `variable` None: with respect to its only variable."""

    operand: Expr
    variable: str | None
    order: int = 1


Expr = (
    Number
    | Percent
    | Symbol
    | Constant
    | Negate
    | Sum
    | Product
    | Power
    | Factorial
    | Call
    | Apply
    | Differential
    | Integral
    | Derivative
)


@dataclass(frozen=True, slots=True)
class Statement:
    """sides[0] ops[0] sides[1] ops[1] ...: a chain of relations (ops "=", "<", ">", "≤", "≥", "≠",
    "≈"), or a bare expression (one side, no ops)."""

    sides: tuple[Expr, ...]
    ops: tuple[str, ...]

    def pairs(self) -> Iterator[tuple[Expr, str, Expr]]:
        for index, op in enumerate(self.ops):
            yield self.sides[index], op, self.sides[index + 1]


# ---------------------------------------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # NUM NAME DIFF OP REL LPAR RPAR PERCENT BANG PRIME COMMA UNDER INT SQRT FRAC SUP INF
    text: str
    position: int


_SINGLE: Final = {
    "+": ("OP", "+"),
    "-": ("OP", "-"),
    "−": ("OP", "-"),
    "*": ("OP", "*"),
    "×": ("OP", "*"),
    "·": ("OP", "*"),
    "⋅": ("OP", "*"),
    "∙": ("OP", "*"),
    "/": ("OP", "/"),
    "÷": ("OP", "/"),
    "^": ("OP", "^"),
    "=": ("REL", "="),
    "<": ("REL", "<"),
    ">": ("REL", ">"),
    "≤": ("REL", "≤"),
    "≥": ("REL", "≥"),
    "≠": ("REL", "≠"),
    "≈": ("REL", "≈"),
    "(": ("LPAR", "("),
    "[": ("LPAR", "["),
    "{": ("LPAR", "{"),
    ")": ("RPAR", ")"),
    "]": ("RPAR", "]"),
    "}": ("RPAR", "}"),
    "%": ("PERCENT", "%"),
    "!": ("BANG", "!"),
    "'": ("PRIME", "'"),
    "′": ("PRIME", "'"),
    ",": ("COMMA", ","),
    "_": ("UNDER", "_"),
    "∫": ("INT", "∫"),
    "√": ("SQRT", "√"),
    "∞": ("INF", "oo"),
    "π": ("NAME", "pi"),
}
_DOUBLE: Final = {
    "**": ("OP", "^"),
    "==": ("REL", "="),
    "!=": ("REL", "≠"),
    "<=": ("REL", "≤"),
    ">=": ("REL", "≥"),
}
_COMMANDS: Final = {
    "times": ("OP", "*"),
    "cdot": ("OP", "*"),
    "ast": ("OP", "*"),
    "div": ("OP", "/"),
    "frac": ("FRAC", "frac"),
    "dfrac": ("FRAC", "frac"),
    "tfrac": ("FRAC", "frac"),
    "sqrt": ("SQRT", "√"),
    "int": ("INT", "∫"),
    "infty": ("INF", "oo"),
    "pi": ("NAME", "pi"),
    "le": ("REL", "≤"),
    "leq": ("REL", "≤"),
    "leqslant": ("REL", "≤"),
    "ge": ("REL", "≥"),
    "geq": ("REL", "≥"),
    "geqslant": ("REL", "≥"),
    "ne": ("REL", "≠"),
    "neq": ("REL", "≠"),
    "approx": ("REL", "≈"),
    "lt": ("REL", "<"),
    "gt": ("REL", ">"),
}
_SKIPPED_COMMANDS: Final = frozenset(
    {"left", "right", "displaystyle", "textstyle", "quad", "qquad", "big", "Big", "bigl", "bigr", "Bigl", "Bigr"}
)
_SPACING: Final = frozenset({",", ";", ":", "!", " "})
_NAMED_GROUPS: Final = frozenset({"mathrm", "operatorname", "mathit", "rm"})


def _split_letters(text: str, run: str, position: int) -> list[_Token]:
    """Splits a run of ASCII letters into known words and single letters; refuses prose."""
    if run.lower() in _PROSE_WORDS:
        raise ParseError(text, "this word is prose, not maths", position, run)
    if run in _SPECIAL_FORMS:
        return [_Token("NAME", run, position)]
    if len(run) == 2 and run[0] == "d" and run[1] != "e":
        return [_Token("DIFF", run[1], position)]  # dx, du, dv, dt
    pieces: list[tuple[str, int]] = []
    index = 0
    while index < len(run):
        word = next((w for w in _KNOWN_WORDS if run.startswith(w, index)), None)
        if word is None:
            pieces.append((run[index], position + index))
            index += 1
        else:
            pieces.append((word, position + index))
            index += len(word)
    singles = 0
    after_word = False
    for piece, _ in pieces:
        if len(piece) > 1:
            if singles:  # a letter glued before a function name: "using" (u·sin g), "spin" (s·pi·n)
                raise ParseError(text, "this word is prose, not maths", position, run)
            after_word = True
            continue
        singles += 1
        if singles >= 3 or (after_word and singles >= 2):
            # "and", "Check"; after a function name one letter may follow ("sinx"), not two ("since")
            raise ParseError(text, "this word is prose, not maths", position, run)
    return [_Token("NAME", piece, at) for piece, at in pieces]


_KNOWN_WORDS: Final = tuple(sorted(FUNCTIONS | {"pi"}, key=len, reverse=True))


def _tokenize(text: str) -> list[_Token]:
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ParseError(
            text, f"the text is {len(text)} characters; at most {MAX_EXPRESSION_CHARS} are parsed", 0, text[:10]
        )
    tokens: list[_Token] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char.isspace() or char in "$€£¥&":
            index += 1
            continue
        number = NUMBER.match(text, index)
        if number is not None:
            tokens.append(_Token("NUM", number.group(), index))
            index = number.end()
            continue
        if char.isascii() and char.isalpha():
            letters = _LETTERS.match(text, index)
            assert letters is not None
            tokens.extend(_split_letters(text, letters.group(), index))
            index = letters.end()
            continue
        if char == "\\":
            index = _command(text, index, tokens)
            continue
        double = _DOUBLE.get(text[index : index + 2])
        if double is not None:
            tokens.append(_Token(double[0], double[1], index))
            index += 2
            continue
        if char in _SUPERSCRIPTS:
            start = index
            while index < length and text[index] in _SUPERSCRIPTS:
                index += 1
            tokens.append(_Token("SUP", "".join(_SUPERSCRIPTS[c] for c in text[start:index]), start))
            continue
        if char in _GREEK:
            tokens.append(_Token("NAME", _GREEK[char], index))
            index += 1
            continue
        single = _SINGLE.get(char)
        if single is None:
            raise ParseError(text, "unexpected character", index, char)
        tokens.append(_Token(single[0], single[1], index))
        index += 1
    return tokens


def _command(text: str, index: int, tokens: list[_Token]) -> int:
    """Tokenizes the LaTeX command at `index`; returns the index after it."""
    match = _COMMAND.match(text, index)
    if match is None:
        raise ParseError(text, "a backslash ends the text", index, "\\")
    name = match.group(1)
    end = match.end()
    if name in _SPACING or name in _SKIPPED_COMMANDS:
        return end
    if name in _COMMANDS:
        kind, value = _COMMANDS[name]
        tokens.append(_Token(kind, value, index))
        return end
    if name in FUNCTIONS:
        tokens.append(_Token("NAME", name, index))
        return end
    if name in _GREEK_COMMANDS:
        tokens.append(_Token("NAME", name.removeprefix("var"), index))
        return end
    if name in _NAMED_GROUPS:
        group = _BRACED_NAME.match(text, end)
        if group is None:
            raise ParseError(text, f"\\{name} needs a braced name", index, match.group())
        word = group.group(1)
        if word == "d":
            variable = _DIFFERENTIAL_VARIABLE.match(text, group.end())
            if variable is not None:  # \mathrm{d}x
                tokens.append(_Token("DIFF", variable.group(1), index))
                return variable.end()
            tokens.append(_Token("NAME", "d", index))
        elif word in FUNCTIONS or word in ("e", "pi") or len(word) == 1:
            tokens.append(_Token("NAME", word, index))
        else:
            raise ParseError(text, f"unknown name {word!r}", index, match.group())
        return group.end()
    raise ParseError(text, "unsupported LaTeX command", index, match.group())


# ---------------------------------------------------------------------------------------------- parser

_CLOSING: Final = {"(": ")", "[": "]", "{": "}"}
_FACTOR_STARTS: Final = frozenset({"NAME", "LPAR", "FRAC", "SQRT", "INT", "INF", "DIFF"})


class _Parser:
    """Recursive descent over the token list; see the module docstring for the grammar."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0
        self.depth = 0
        self.integrals = 0

    # -------------------------------------------------------------- helpers

    def peek(self, offset: int = 0) -> _Token | None:
        position = self.index + offset
        return self.tokens[position] if position < len(self.tokens) else None

    def at(self, kind: str, text: str | None = None, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token.kind == kind and (text is None or token.text == text)

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise self.error("the expression ends too early", None)
        self.index += 1
        return token

    def expect(self, kind: str, text: str | None = None, what: str = "") -> _Token:
        token = self.peek()
        if token is None or token.kind != kind or (text is not None and token.text != text):
            raise self.error(f"expected {what or text or kind.lower()}", token)
        self.index += 1
        return token

    def error(self, message: str, token: _Token | None) -> ParseError:
        if token is None:
            return ParseError(self.text, message, len(self.text), "")
        return ParseError(self.text, message, token.position, token.text)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING_DEPTH:
            raise self.error(f"nested more than {MAX_NESTING_DEPTH} levels deep", self.peek())

    def leave(self) -> None:
        self.depth -= 1

    def finish(self) -> None:
        token = self.peek()
        if token is not None:
            raise self.error("unexpected token", token)

    # -------------------------------------------------------------- grammar

    def statement(self) -> Statement:
        sides = [self.sum()]
        ops: list[str] = []
        while self.at("REL"):
            ops.append(self.take().text)
            sides.append(self.sum())
        self.finish()
        return Statement(tuple(sides), tuple(ops))

    def sum(self) -> Expr:
        first = self.term()
        rest: list[tuple[str, Expr]] = []
        while self.at("OP", "+") or self.at("OP", "-"):
            op = self.take().text
            rest.append((op, self.term()))
        return Sum(first, tuple(rest)) if rest else first

    def term(self) -> Expr:
        first = self.unary()
        rest: list[tuple[str, Expr]] = []
        while True:
            if self.at("OP", "*") or self.at("OP", "/"):
                op = self.take().text
                rest.append((op, self.unary()))
            elif self.implicit_factor_follows(functions=True):
                rest.append(("", self.power()))
            else:
                break
        return Product(first, tuple(rest)) if rest else first

    def implicit_factor_follows(self, *, functions: bool) -> bool:
        token = self.peek()
        if token is None or token.kind not in _FACTOR_STARTS:
            return False
        if token.kind == "LPAR" and token.text == "{" and not functions:
            return False
        if token.kind == "DIFF" and self.integrals > 0:
            return False  # "∫ 2x dx": dx closes the integrand
        if not functions:
            if token.kind in ("INT", "FRAC") or (token.kind == "NAME" and token.text in FUNCTIONS):
                return False
            if token.kind == "NAME" and token.text == "e" and self.at("OP", "^", offset=1):
                return False  # "sin x e^x" is sin(x)·e^x
            if token.kind == "NAME" and token.text == "d" and self.at("OP", "/", offset=1):
                return False
        return True

    def unary(self) -> Expr:
        if self.at("OP", "-") or self.at("OP", "+"):
            sign = self.take().text
            self.enter()
            operand = self.unary()
            self.leave()
            return Negate(operand) if sign == "-" else operand
        return self.power()

    def power(self) -> Expr:
        base = self.postfix()
        if self.at("OP", "^"):
            self.take()
            self.enter()
            exponent = self.unary()
            self.leave()
            return Power(base, exponent)
        return base

    def postfix(self) -> Expr:
        expr = self.primary()
        for _ in range(_MAX_POSTFIX):
            if self.at("BANG"):
                self.take()
                expr = Factorial(expr)
            elif self.at("PERCENT"):
                self.take()
                expr = Percent(expr)
            elif self.at("SUP"):
                expr = Power(expr, self.superscript(self.take()))
            elif self.at("PRIME"):
                primes = self.primes()
                expr = Derivative(expr, None, primes)
            else:
                break
        return expr

    def superscript(self, token: _Token) -> Expr:
        digits = token.text.lstrip("-")
        if not digits or not digits.isdigit():
            raise self.error("a superscript must be a whole number", token)
        number: Expr = Number(Fraction(int(digits)), digits)
        return Negate(number) if token.text.startswith("-") else number

    def primes(self) -> int:
        count = 0
        while self.at("PRIME"):
            self.take()
            count += 1
        return count

    def group(self) -> Expr:
        opening = self.expect("LPAR", what="an opening bracket")
        self.enter()
        inner = self.sum()
        self.leave()
        self.expect("RPAR", _CLOSING[opening.text], what=f"{_CLOSING[opening.text]!r} to close {opening.text!r}")
        return inner

    def primary(self) -> Expr:
        token = self.peek()
        if token is None:
            raise self.error("the expression ends too early", None)
        kind = token.kind
        if kind == "NUM":
            self.take()
            return Number(Fraction(token.text.replace(",", "")), token.text)
        if kind == "LPAR":
            return self.group()
        if kind == "FRAC":
            self.take()
            return self.fraction(token)
        if kind == "SQRT":
            self.take()
            return self.root()
        if kind == "INT":
            self.take()
            return self.integral()
        if kind == "INF":
            self.take()
            return Constant("oo")
        if kind == "DIFF":
            self.take()
            return Differential(token.text)
        if kind == "NAME":
            self.take()
            return self.name(token)
        raise self.error("unexpected token", token)

    def fraction(self, token: _Token) -> Expr:
        following = self.peek()
        if following is not None and following.kind == "NUM" and len(following.text) == 2 and following.text.isdigit():
            digits = self.take().text  # \frac12
            top, bottom = (Number(Fraction(int(digit)), digit) for digit in digits)
            return Product(top, (("/", bottom),))
        if not self.at("LPAR", "{"):
            raise self.error("\\frac needs {numerator}{denominator}", self.peek())
        numerator = self.group()
        if not self.at("LPAR", "{"):
            raise self.error("\\frac needs {numerator}{denominator}", self.peek())
        denominator = self.group()
        if numerator == Symbol("d") and isinstance(denominator, Differential):
            return Derivative(self.derivative_operand(), denominator.variable)
        return Product(numerator, (("/", denominator),))

    def root(self) -> Expr:
        index: int | None = None
        if self.at("LPAR", "["):
            self.take()
            token = self.expect("NUM", what="the root's index")
            if not token.text.isdigit() or not 2 <= int(token.text) <= MAX_ROOT_INDEX:
                raise self.error(f"a root's index must be a whole number from 2 to {MAX_ROOT_INDEX}", token)
            index = int(token.text)
            self.expect("RPAR", "]")
        operand = self.group() if self.at("LPAR") else self.postfix()
        if index is None or index == 2:
            return Call("sqrt", (operand,))
        one, degree = Number(Fraction(1), "1"), Number(Fraction(index), str(index))
        return Power(operand, Product(one, (("/", degree),)))

    def integral(self) -> Expr:
        lower: Expr | None = None
        upper: Expr | None = None
        if self.at("UNDER"):
            self.take()
            lower = self.bound()
            if self.at("SUP"):
                upper = self.superscript(self.take())
            else:
                self.expect("OP", "^", what="'^' and the upper bound")
                upper = self.bound()
        self.integrals += 1
        self.enter()
        integrand: Expr = Number(Fraction(1), "1") if self.at("DIFF") else self.sum()
        self.leave()
        self.integrals -= 1
        differential = self.expect("DIFF", what="the differential (dx) that closes the integral")
        return Integral(integrand, differential.text, lower, upper)

    def bound(self) -> Expr:
        if self.at("LPAR", "{"):
            return self.group()
        if self.at("OP", "-"):
            self.take()
            return Negate(self.bound())
        token = self.take()
        if token.kind == "NUM":
            return Number(Fraction(token.text.replace(",", "")), token.text)
        if token.kind == "INF":
            return Constant("oo")
        if token.kind == "NAME" and (len(token.text) == 1 or token.text == "pi"):
            return self.name(token)
        raise self.error("unexpected integral bound", token)

    def name(self, token: _Token) -> Expr:
        name = token.text
        if name in FUNCTIONS:
            return self.function(name)
        if name in _SPECIAL_FORMS:
            return self.special(token)
        if name == "pi":
            return Constant("pi")
        if name == "d":
            if self.at("OP", "/") and self.at("DIFF", offset=1):
                self.take()
                variable = self.take().text
                return Derivative(self.derivative_operand(), variable)
        if self.at("UNDER"):
            self.take()
            name = f"{name}_{self.subscript()}"
        elif name == "e":
            return Constant("e")
        if self.at("PRIME"):
            primes = self.primes()
            args = self.call_args() if self.at("LPAR", "(") else ()
            return Apply(name, args, primes)
        if name in _USER_FUNCTIONS and self.at("LPAR", "("):
            return Apply(name, self.call_args(), 0)
        return Symbol(name)

    def subscript(self) -> str:
        if self.at("LPAR", "{"):
            self.take()
            parts = []
            while not self.at("RPAR", "}"):
                token = self.take()
                if token.kind not in ("NUM", "NAME"):
                    raise self.error("a subscript holds letters and digits", token)
                parts.append(token.text)
            self.take()
            if not parts:
                raise self.error("an empty subscript", self.peek())
            return "".join(parts)
        token = self.take()
        if token.kind not in ("NUM", "NAME") or not token.text.isalnum():
            raise self.error("a subscript holds letters and digits", token)
        return token.text

    def call_args(self) -> tuple[Expr, ...]:
        self.expect("LPAR", "(")
        self.enter()
        args = [self.sum()]
        while self.at("COMMA"):
            self.take()
            args.append(self.sum())
        self.leave()
        self.expect("RPAR", ")", what="')' to close the arguments")
        return tuple(args)

    def function(self, name: str) -> Expr:
        base: Expr | None = None
        if name == "log" and self.at("UNDER"):
            self.take()
            base = self.bound()
        exponent: Expr | None = None
        if self.at("SUP"):
            exponent = self.superscript(self.take())
        elif self.at("OP", "^"):
            self.take()
            exponent = self.group() if self.at("LPAR", "{") else self.postfix()
        self.enter()
        if self.at("LPAR", "("):
            args = self.call_args()
        elif self.at("LPAR"):
            args = (self.group(),)
        else:
            args = (self.argument(),)
        self.leave()
        if name == "log" and base is not None:
            if len(args) != 1:
                raise self.error("log_b takes one argument", self.peek())
            args = (args[0], base)
        expected = (1, 2) if name == "log" else (1,)
        if len(args) not in expected:
            counts = " or ".join(map(str, expected))
            raise self.error(f"{name} takes {counts} argument(s), got {len(args)}", self.peek())
        call: Expr = Call(name, args)
        return Power(call, exponent) if exponent is not None else call

    def argument(self) -> Expr:
        """A function's argument written without parentheses: "sin 2x", "ln x" (up to + or -)."""
        first = self.unary()
        rest: list[tuple[str, Expr]] = []
        while self.implicit_factor_follows(functions=False):
            rest.append(("", self.power()))
        return Product(first, tuple(rest)) if rest else first

    def derivative_operand(self) -> Expr:
        """What d/dx applies to: a bracketed group (with its power), else the implicit product after it."""
        self.enter()
        if self.at("LPAR"):
            operand = self.power()
        else:
            first = self.power()
            rest: list[tuple[str, Expr]] = []
            while self.implicit_factor_follows(functions=True):
                rest.append(("", self.power()))
            operand = Product(first, tuple(rest)) if rest else first
        self.leave()
        return operand

    def special(self, token: _Token) -> Expr:
        """diff(f, x[, n]), integrate(f, x), integrate(f, (x, a, b)), simplify(f): SymPy spellings."""
        name = token.text
        if not self.at("LPAR", "("):
            raise self.error(f"{name} needs its arguments in parentheses", self.peek())
        self.take()
        self.enter()
        first = self.sum()
        extra: list[Expr | tuple[str, Expr, Expr]] = []
        while self.at("COMMA"):
            self.take()
            if name == "integrate" and self.at("LPAR", "("):
                extra.append(self.integration_range())
            else:
                extra.append(self.sum())
        self.leave()
        self.expect("RPAR", ")", what=f"')' to close {name}(...)")
        if name in _VALUE_PRESERVING:
            if extra:
                raise self.error(f"{name} takes one argument", token)
            return first
        if name == "diff":
            if not extra or not isinstance(extra[0], Symbol):
                raise self.error("diff needs the variable: diff(f, x)", token)
            order = 1
            if len(extra) == 2 and isinstance(extra[1], Number) and extra[1].value.denominator == 1:
                order = int(extra[1].value)
            elif len(extra) != 1:
                raise self.error("diff takes diff(f, x) or diff(f, x, n)", token)
            if not 1 <= order <= _MAX_POSTFIX:
                raise self.error(f"a derivative's order must lie in 1..{_MAX_POSTFIX}", token)
            return Derivative(first, extra[0].name, order)
        if len(extra) != 1:
            raise self.error("integrate takes integrate(f, x) or integrate(f, (x, a, b))", token)
        spec = extra[0]
        if isinstance(spec, tuple):
            return Integral(first, spec[0], spec[1], spec[2])
        if not isinstance(spec, Symbol):
            raise self.error("integrate needs the variable: integrate(f, x)", token)
        return Integral(first, spec.name)

    def integration_range(self) -> tuple[str, Expr, Expr]:
        self.expect("LPAR", "(")
        variable = self.sum()
        if not isinstance(variable, Symbol):
            raise self.error("an integration range starts with its variable: (x, a, b)", self.peek())
        self.expect("COMMA", what="',' after the variable")
        lower = self.sum()
        self.expect("COMMA", what="',' after the lower bound")
        upper = self.sum()
        self.expect("RPAR", ")")
        return variable.name, lower, upper


def parse_statement(text: str) -> Statement:
    """The relation chain (or bare expression) `text` states; `ParseError` naming the position otherwise."""
    parser = _Parser(text)
    if not parser.tokens:
        raise ParseError(text, "there is no expression", 0, "")
    return parser.statement()


def parse_expression(text: str) -> Expr:
    """The expression `text` holds (no relation); `ParseError` naming the position otherwise."""
    statement = parse_statement(text)
    if statement.ops:
        raise ParseError(text, "expected an expression, found a relation", 0, statement.ops[0])
    return statement.sides[0]


# ---------------------------------------------------------------------------------------------- walking


def _children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, Percent | Negate | Factorial):
        return (expr.operand,)
    if isinstance(expr, Sum | Product):
        return (expr.first, *(term for _, term in expr.rest))
    if isinstance(expr, Power):
        return (expr.base, expr.exponent)
    if isinstance(expr, Call | Apply):
        return expr.args
    if isinstance(expr, Integral):
        bounds = () if expr.lower is None or expr.upper is None else (expr.lower, expr.upper)
        return (expr.integrand, *bounds)
    if isinstance(expr, Derivative):
        return (expr.operand,)
    return ()


def subexpressions(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, `expr` first (iterative: no recursion limit)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


def size(expr: Expr) -> int:
    """The number of nodes of the tree."""
    return sum(1 for _ in subexpressions(expr))


def free_symbols(expr: Expr) -> frozenset[str]:
    """The variables of `expr`: every letter, the variable of a differential or an indefinite
    integral, but not the variable of a definite integral inside it (bound there)."""
    names: set[str] = set()
    stack: list[tuple[Expr, frozenset[str]]] = [(expr, frozenset())]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, Symbol | Differential):
            name = node.name if isinstance(node, Symbol) else node.variable
            if name not in bound:
                names.add(name)
        elif isinstance(node, Integral) and node.lower is not None and node.upper is not None:
            stack += [(node.integrand, bound | {node.variable}), (node.lower, bound), (node.upper, bound)]
        else:
            if isinstance(node, Integral) and node.variable not in bound:
                names.add(node.variable)
            stack += [(child, bound) for child in _children(node)]
    return frozenset(names)


# ---------------------------------------------------------------------------------------------- rendering

_PRECEDENCE_SUM, _PRECEDENCE_PRODUCT, _PRECEDENCE_UNARY, _PRECEDENCE_POWER, _PRECEDENCE_ATOM = 1, 2, 3, 4, 5


def _precedence(expr: Expr) -> int:
    if isinstance(expr, Sum):
        return _PRECEDENCE_SUM
    if isinstance(expr, Derivative) and expr.variable is None:
        return _PRECEDENCE_ATOM  # (f)'
    if isinstance(expr, Product | Integral | Derivative):
        return _PRECEDENCE_PRODUCT
    if isinstance(expr, Negate):
        return _PRECEDENCE_UNARY
    if isinstance(expr, Power):
        return _PRECEDENCE_POWER
    return _PRECEDENCE_ATOM


def _wrapped(expr: Expr, minimum: int) -> str:
    text = render(expr)
    return f"({text})" if _precedence(expr) < minimum else text


def render(expr: Expr) -> str:
    """A plain-text form that `parse_expression` reads back to the same tree shape's value:
    explicit "*", "^", parentheses where precedence needs them ("2*(x + 1)^2")."""
    if isinstance(expr, Number):
        return expr.text
    if isinstance(expr, Percent):
        return f"{_wrapped(expr.operand, _PRECEDENCE_ATOM)}%"
    if isinstance(expr, Symbol | Constant):
        return expr.name
    if isinstance(expr, Negate):
        return f"-{_wrapped(expr.operand, _PRECEDENCE_POWER)}"
    if isinstance(expr, Sum):
        parts = [_wrapped(expr.first, _PRECEDENCE_SUM)]
        parts += [f" {op} {_wrapped(term, _PRECEDENCE_PRODUCT)}" for op, term in expr.rest]
        return "".join(parts)
    if isinstance(expr, Product):
        parts = [_wrapped(expr.first, _PRECEDENCE_PRODUCT)]
        parts += [f" {op or '*'} {_wrapped(factor, _PRECEDENCE_UNARY)}" for op, factor in expr.rest]
        return "".join(parts)
    if isinstance(expr, Power):
        return f"{_wrapped(expr.base, _PRECEDENCE_ATOM)}^{_wrapped(expr.exponent, _PRECEDENCE_ATOM)}"
    if isinstance(expr, Factorial):
        return f"{_wrapped(expr.operand, _PRECEDENCE_ATOM)}!"
    if isinstance(expr, Call):
        return f"{expr.name}({', '.join(render(arg) for arg in expr.args)})"
    if isinstance(expr, Apply):
        args = f"({', '.join(render(arg) for arg in expr.args)})" if expr.args else ""
        return f"{expr.name}{chr(39) * expr.primes}{args}"
    if isinstance(expr, Differential):
        return f"d{expr.variable}"
    if isinstance(expr, Integral):
        bounds = ""
        if expr.lower is not None and expr.upper is not None:
            bounds = f"_{{{render(expr.lower)}}}^{{{render(expr.upper)}}}"
        return f"∫{bounds} ({render(expr.integrand)}) d{expr.variable}"
    if isinstance(expr, Derivative):
        if expr.variable is None:
            return f"({render(expr.operand)}){chr(39) * expr.order}"
        if expr.order == 1:
            return f"d/d{expr.variable} ({render(expr.operand)})"
        return f"diff({render(expr.operand)}, {expr.variable}, {expr.order})"
    raise TypeError(f"not an expression: {expr!r}")


def _python(expr: Expr, minimum: int, *, nested: type | None = None) -> str:
    text = to_python(expr)
    wrap = _precedence(expr) < minimum or (nested is not None and isinstance(expr, nested))
    return f"({text})" if wrap else text


def to_python(expr: Expr) -> str:
    """The arithmetic of `expr` in Python syntax, the form an HDAG operation's `expression` takes
    ("12 * 3 == 36", "abs(10 / 3 - 3.33) <= 0.005") and that `parse_statement` reads back: explicit
    "*", "**" for powers, a percentage as "(p / 100)", numbers without thousands separators ("1200",
    "0.5"; trailing zeros kept: "4.50" states two decimals). Brackets stand where precedence needs
    them and where the writer nested a sum in a sum or a product in a product ("(3 / 5) * 30": the
    parser flattens unbracketed chains, so such a nesting was written). `EvaluationError` for what is
    not numeric arithmetic (a variable, a function other than abs, a factorial, calculus)."""
    if isinstance(expr, Number):
        plain = expr.text.replace(",", "")
        return f"0{plain}" if plain.startswith(".") else plain
    if isinstance(expr, Percent):
        return f"({_python(expr.operand, _PRECEDENCE_POWER)} / 100)"
    if isinstance(expr, Negate):
        return f"-{_python(expr.operand, _PRECEDENCE_POWER)}"
    if isinstance(expr, Sum):
        parts = [_python(expr.first, _PRECEDENCE_SUM, nested=Sum)]
        parts += [f" {op} {_python(term, _PRECEDENCE_PRODUCT)}" for op, term in expr.rest]
        return "".join(parts)
    if isinstance(expr, Product):
        parts = [_python(expr.first, _PRECEDENCE_PRODUCT, nested=Product)]
        parts += [f" {op or '*'} {_python(factor, _PRECEDENCE_UNARY)}" for op, factor in expr.rest]
        return "".join(parts)
    if isinstance(expr, Power):
        return f"{_python(expr.base, _PRECEDENCE_ATOM)} ** {_python(expr.exponent, _PRECEDENCE_UNARY)}"
    if isinstance(expr, Call) and expr.name == "abs":
        return f"abs({to_python(expr.args[0])})"
    raise EvaluationError(f"{render(expr)} is not numeric arithmetic that Python syntax spells")


# ---------------------------------------------------------------------------------------------- exact evaluation


def _bounded(value: Fraction, what: str) -> Fraction:
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_EXACT_BITS:
        raise EvaluationError(f"{what} is too large to compute exactly (more than {MAX_EXACT_BITS} bits)")
    return value


def _integer_root(value: int, index: int) -> int:
    """floor(value ** (1/index)) for value >= 0, by Newton's method on integers (exact for any size)."""
    if value < 2:
        return value
    guess = 1 << -(-value.bit_length() // index)
    while True:
        better = ((index - 1) * guess + value // guess ** (index - 1)) // index
        if better >= guess:
            return guess
        guess = better


def _exact_root(value: Fraction, index: int, what: str) -> Fraction:
    if index > MAX_ROOT_INDEX:
        raise EvaluationError(f"{what}: a root of index {index} is beyond the {MAX_ROOT_INDEX} computed exactly")
    negative = value < 0
    if negative and index % 2 == 0:
        raise EvaluationError(f"{what}: an even root of the negative number {value} is not real")
    magnitude = abs(value)
    numerator = _integer_root(magnitude.numerator, index)
    denominator = _integer_root(magnitude.denominator, index)
    if numerator**index != magnitude.numerator or denominator**index != magnitude.denominator:
        raise EvaluationError(f"{what} is irrational: the {index}-th root of {magnitude} is not a fraction")
    root = Fraction(numerator, denominator)
    return -root if negative else root


def _exact_power(base: Fraction, exponent: Fraction, what: str) -> Fraction:
    if exponent.denominator != 1:
        base = _exact_root(base, exponent.denominator, what)
        exponent = Fraction(exponent.numerator)
    power = int(exponent)
    if abs(power) > MAX_EXACT_EXPONENT:
        raise EvaluationError(f"{what}: the exponent {power} is beyond the {MAX_EXACT_EXPONENT} computed exactly")
    if base == 0 and power < 0:
        raise EvaluationError(f"{what}: division by zero (0 to a negative power)")
    bits = max(base.numerator.bit_length(), base.denominator.bit_length()) * abs(power)
    if bits > MAX_EXACT_BITS and abs(base) != 1:
        raise EvaluationError(f"{what} is too large to compute exactly (about {bits} bits)")
    return base**power


def evaluate_exact(expr: Expr) -> Fraction:
    """The exact rational value of a variable-free, function-free expression (sqrt and rational
    powers only where the result is rational). `EvaluationError` saying why otherwise: a variable,
    an irrational value, a division by zero, a value too large (see the module's limits)."""
    what = render(expr)
    if len(what) > 60:
        what = what[:57] + "..."
    return _exact(expr, what)


def _exact(expr: Expr, what: str) -> Fraction:
    if isinstance(expr, Number):
        return expr.value
    if isinstance(expr, Percent):
        return _exact(expr.operand, what) / 100
    if isinstance(expr, Negate):
        return -_exact(expr.operand, what)
    if isinstance(expr, Sum):
        total = _exact(expr.first, what)
        for op, term in expr.rest:
            value = _exact(term, what)
            total = _bounded(total + value if op == "+" else total - value, what)
        return total
    if isinstance(expr, Product):
        result = _exact(expr.first, what)
        for op, factor in expr.rest:
            value = _exact(factor, what)
            if op == "/":
                if value == 0:
                    raise EvaluationError(f"{what}: division by zero")
                result = _bounded(result / value, what)
            else:
                result = _bounded(result * value, what)
        return result
    if isinstance(expr, Power):
        return _exact_power(_exact(expr.base, what), _exact(expr.exponent, what), what)
    if isinstance(expr, Factorial):
        value = _exact(expr.operand, what)
        if value.denominator != 1 or not 0 <= value <= MAX_FACTORIAL:
            raise EvaluationError(
                f"{what}: the factorial of {value} is not computed (only of whole numbers 0..{MAX_FACTORIAL})"
            )
        factorial = 1
        for whole in range(2, int(value) + 1):
            factorial *= whole
        return _bounded(Fraction(factorial), what)
    if isinstance(expr, Call) and expr.name == "sqrt":
        return _exact_root(_exact(expr.args[0], what), 2, what)
    if isinstance(expr, Call) and expr.name == "abs":
        return abs(_exact(expr.args[0], what))
    if isinstance(expr, Constant):
        raise EvaluationError(f"{what} is not exact: {expr.name} is irrational")
    if isinstance(expr, Symbol):
        raise EvaluationError(f"{what} has the variable {expr.name}")
    if isinstance(expr, Call):
        raise EvaluationError(f"{what} is not exact: {expr.name}(...) is evaluated symbolically")
    raise EvaluationError(f"{what} is not an arithmetic expression ({type(expr).__name__.lower()})")


def format_exact(value: Fraction, *, significant: int = 10) -> str:
    """A rational as people read it: an integer in digits ("391"), a terminating decimal exactly
    ("2.5", "-0.125") when it has at most `significant` digits after the point, otherwise
    `significant` significant digits ("3.333333333")."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator == 1 and max(twos, fives) <= significant:
        places = max(twos, fives)
        scaled = value.numerator * 10**places // value.denominator
        sign = "-" if scaled < 0 else ""
        digits = str(abs(scaled)).rjust(places + 1, "0")
        return f"{sign}{digits[:-places]}.{digits[-places:]}"
    from decimal import Context, Decimal

    context = Context(prec=significant)
    decimal = context.divide(Decimal(value.numerator), Decimal(value.denominator))
    text = format(decimal, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


# ---------------------------------------------------------------------------------------------- SymPy

FunctionDefinitions = Mapping[str, tuple[tuple[str, ...], Expr]]


def _sympy() -> Any:
    import sympy

    return sympy


def _sympy_functions(sympy: Any) -> dict[str, Callable[..., Any]]:
    return {
        "sin": sympy.sin,
        "cos": sympy.cos,
        "tan": sympy.tan,
        "sec": sympy.sec,
        "csc": sympy.csc,
        "cot": sympy.cot,
        "arcsin": sympy.asin,
        "arccos": sympy.acos,
        "arctan": sympy.atan,
        "asin": sympy.asin,
        "acos": sympy.acos,
        "atan": sympy.atan,
        "sinh": sympy.sinh,
        "cosh": sympy.cosh,
        "tanh": sympy.tanh,
        "exp": sympy.exp,
        "ln": sympy.log,
        "sqrt": sympy.sqrt,
        "abs": sympy.Abs,
    }


def to_sympy(expr: Expr, *, functions: FunctionDefinitions | None = None, log_base: int | None = None) -> Any:
    """The SymPy expression of `expr`, built with SymPy's constructors (never from a string).

    Variables are real SymPy symbols. `functions` maps a user function's name to its parameters and
    body (f(x) = x^2 e^x), so f(2) and f'(x) are computed; an unknown f stays an undefined SymPy
    function. `log_base` is the base of a log written without one (None: natural). A derivative is
    computed at once (sympy.diff); an integral stays unevaluated (sympy.Integral) for the caller to
    differentiate or evaluate under its own time limit. `EvaluationError` for what has no value
    by itself (a bare differential dx), an ambiguous derivative, or a numeric exponent beyond
    `MAX_SYMPY_EXPONENT`.
    """
    sympy = _sympy()
    return _SympyBuilder(sympy, functions or {}, log_base).build(expr)


class _SympyBuilder:
    def __init__(self, sympy: Any, functions: FunctionDefinitions, log_base: int | None) -> None:
        self.sympy = sympy
        self.functions = functions
        self.log_base = log_base
        self.elementary = _sympy_functions(sympy)

    def symbol(self, name: str) -> Any:
        return self.sympy.Symbol(name, real=True)

    def build(self, expr: Expr) -> Any:
        sympy = self.sympy
        if isinstance(expr, Number):
            return sympy.Rational(expr.value.numerator, expr.value.denominator)
        if isinstance(expr, Percent):
            return sympy.Mul(self.build(expr.operand), sympy.Rational(1, 100))
        if isinstance(expr, Symbol):
            return self.symbol(expr.name)
        if isinstance(expr, Constant):
            return {"e": sympy.E, "pi": sympy.pi, "oo": sympy.oo}[expr.name]
        if isinstance(expr, Negate):
            return sympy.Mul(sympy.Integer(-1), self.build(expr.operand))
        if isinstance(expr, Sum):
            terms = [self.build(expr.first)]
            for op, term in expr.rest:
                value = self.build(term)
                terms.append(value if op == "+" else sympy.Mul(sympy.Integer(-1), value))
            return sympy.Add(*terms)
        if isinstance(expr, Product):
            factors = [self.build(expr.first)]
            for op, factor in expr.rest:
                value = self.build(factor)
                factors.append(sympy.Pow(value, sympy.Integer(-1)) if op == "/" else value)
            return sympy.Mul(*factors)
        if isinstance(expr, Power):
            exponent = self.build(expr.exponent)
            if exponent.is_Number and abs(exponent) > MAX_SYMPY_EXPONENT:
                raise EvaluationError(f"{render(expr)}: the exponent is beyond the {MAX_SYMPY_EXPONENT} handled")
            base = self.build(expr.base)
            if base.is_Rational and exponent.is_Rational:
                # SymPy computes a numeric power at once: (10^1000)^1000 would take minutes
                p, q = base.as_numer_denom()
                bits = max(int(p).bit_length(), int(q).bit_length()) * abs(int(exponent.p))
                if bits > MAX_EXACT_BITS:
                    raise EvaluationError(f"{render(expr)} is too large to compute (about {bits} bits)")
            return sympy.Pow(base, exponent)
        if isinstance(expr, Factorial):
            operand = self.build(expr.operand)
            if operand.is_Number and not (operand.is_integer and 0 <= operand <= MAX_FACTORIAL):
                raise EvaluationError(f"{render(expr)}: factorials are computed for whole numbers 0..{MAX_FACTORIAL}")
            return sympy.factorial(operand)
        if isinstance(expr, Call):
            return self.call(expr)
        if isinstance(expr, Apply):
            return self.apply(expr)
        if isinstance(expr, Integral):
            integrand = self.build(expr.integrand)
            variable = self.symbol(expr.variable)
            if expr.lower is None or expr.upper is None:
                return sympy.Integral(integrand, variable)
            return sympy.Integral(integrand, (variable, self.build(expr.lower), self.build(expr.upper)))
        if isinstance(expr, Derivative):
            operand = self.build(expr.operand)
            if expr.variable is not None:
                return sympy.diff(operand, self.symbol(expr.variable), expr.order)
            symbols = sorted(operand.free_symbols, key=str)
            if len(symbols) != 1:
                raise EvaluationError(
                    f"{render(expr)}: a prime needs exactly one variable to differentiate by, found {len(symbols)}"
                )
            return sympy.diff(operand, symbols[0], expr.order)
        if isinstance(expr, Differential):
            raise EvaluationError(f"d{expr.variable} has no value by itself (it belongs in an integral or d/d...)")
        raise TypeError(f"not an expression: {expr!r}")

    def call(self, expr: Call) -> Any:
        sympy = self.sympy
        args = [self.build(arg) for arg in expr.args]
        if expr.name == "log":
            if len(args) == 2:
                return sympy.log(args[0], args[1])
            if self.log_base is not None:
                return sympy.log(args[0], sympy.Integer(self.log_base))
            return sympy.log(args[0])
        return self.elementary[expr.name](*args)

    def apply(self, expr: Apply) -> Any:
        sympy = self.sympy
        args = [self.build(arg) for arg in expr.args]
        definition = self.functions.get(expr.name)
        if definition is not None:
            parameters, body_expr = definition
            body = self.build(body_expr)
            symbols = [self.symbol(p) for p in parameters]
            if expr.primes:
                if len(symbols) != 1:
                    raise EvaluationError(f"{render(expr)}: a prime needs a function of one variable")
                body = sympy.diff(body, symbols[0], expr.primes)
            if not args:
                return body
            if len(args) != len(symbols):
                raise EvaluationError(f"{render(expr)}: {expr.name} takes {len(symbols)} argument(s)")
            return body.subs(dict(zip(symbols, args, strict=True)), simultaneous=True)
        if not args:
            raise EvaluationError(f"{render(expr)}: {expr.name} is not defined here")
        function = sympy.Function(expr.name)(*args)
        if not expr.primes:
            return function
        if len(args) != 1 or not args[0].is_Symbol:
            raise EvaluationError(f"{render(expr)}: a prime needs a function of one variable")
        return sympy.Derivative(function, args[0], expr.primes)


def split_relations(
    text: str, relation: re.Pattern[str], names: Mapping[str, str], *, strict_brackets: bool = False
) -> tuple[list[str], list[str]]:
    """`text` split at the matches of `relation` outside brackets: its sides, and the relations
    between them spelled as `names` says (a match not in `names` as written). "a = (b = c) = d"
    gives three sides. An unmatched closing bracket is ignored, or with `strict_brackets` stops the
    splitting for the rest of the text (a run whose brackets do not balance is not trusted)."""
    sides: list[str] = []
    ops: list[str] = []
    depth = 0
    start = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = depth - 1 if strict_brackets else max(0, depth - 1)
        elif depth == 0:
            match = relation.match(text, index)
            if match is not None:
                sides.append(text[start:index])
                ops.append(names.get(match.group(), match.group()))
                index = start = match.end()
                continue
        index += 1
    sides.append(text[start:])
    return sides, ops
