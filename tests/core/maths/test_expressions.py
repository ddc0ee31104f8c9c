"""The maths parser and its two evaluators (`trust.core.maths.expressions`).

What people and models write parses to the tree it means (implicit products, LaTeX, calculus);
exact evaluation is exact and refuses what is irrational or too large, at once; SymPy expressions
are the ones SymPy's own constructors give; errors name the position and the token; and, as a
property, any integer expression rendered in any of the accepted spellings parses back to its value.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.maths.expressions import (
    MAX_EXPRESSION_CHARS,
    MAX_NESTING_DEPTH,
    Apply,
    Constant,
    Derivative,
    Differential,
    EvaluationError,
    Integral,
    Number,
    ParseError,
    Power,
    Product,
    Symbol,
    evaluate_exact,
    format_exact,
    free_symbols,
    parse_expression,
    parse_statement,
    render,
    to_sympy,
)
from trust.errors import GraphError

x = sympy.Symbol("x", real=True)


def exact(text: str) -> Fraction:
    return evaluate_exact(parse_expression(text))


# ------------------------------------------------------------------------------ what it reads


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("2x", "2 * x"),
        ("2e^x", "2 * e^x"),
        ("xe^x", "x * e^x"),
        ("x^2e^x", "x^2 * e^x"),
        ("3(4+1)", "3 * (4 + 1)"),
        ("(2)(3)", "2 * 3"),
        ("17 × 23", "17 * 23"),
        ("17 · 23", "17 * 23"),
        ("12 ÷ 4", "12 / 4"),
        ("2 \\times 3 \\cdot 4 \\div 5", "2 * 3 * 4 / 5"),
        ("2**3", "2^3"),
        ("x²+3", "x^2 + 3"),
        ("5 − 3", "5 - 3"),
        ("-2^2", "-2^2"),
        ("2^-1", "2^(-1)"),
        ("2^3^2", "2^(3^2)"),
        ("e^{-x}", "e^(-x)"),
        ("\\frac{10}{3}", "10 / 3"),
        ("\\frac12", "1 / 2"),
        ("\\sqrt{16}", "sqrt(16)"),
        ("\\sqrt[3]{27}", "27^(1 / 3)"),
        ("√2", "sqrt(2)"),
        ("[1 + 2] * {3}", "(1 + 2) * 3"),
        ("\\left(1 + 2\\right)", "1 + 2"),
        ("sin x cos x", "sin(x) * cos(x)"),
        ("\\sin 2x", "sin(2 * x)"),
        ("sin^2 x", "sin(x)^2"),
        ("sinx", "sin(x)"),
        ("ln x + 1", "ln(x) + 1"),
        ("log_10(100)", "log(100, 10)"),
        ("x_1 + x_{12}", "x_1 + x_12"),
        ("θ + \\alpha + π", "theta + alpha + pi"),
        ("25%", "25%"),
        ("1,234.5", "1,234.5"),
        ("$18", "18"),
        ("5!", "5!"),
        ("x^2 + 2x + 1 + C", "x^2 + 2 * x + 1 + C"),
    ],
)
def test_parses_what_people_write(text: str, shape: str) -> None:
    assert render(parse_expression(text)) == shape


def test_reads_calculus() -> None:
    integral = parse_expression("\\int x e^{x}\\,dx")
    assert isinstance(integral, Integral) and integral.variable == "x" and not integral.definite
    assert render(integral.integrand) == "x * e^x"
    definite = parse_expression("\\int_0^{1} x^{2}\\,dx")
    assert isinstance(definite, Integral) and definite.lower == Number(Fraction(0), "0")
    assert free_symbols(definite) == frozenset()
    assert parse_expression("∫ 2x dx") == parse_expression("∫2x\\,\\mathrm{d}x")
    assert isinstance(parse_expression("∫ dx"), Integral)
    for text in ("d/dx (x^2 e^x)", "\\frac{d}{dx}\\left(x^{2}e^{x}\\right)", "diff(x**2*exp(x), x)"):
        derivative = parse_expression(text)
        assert isinstance(derivative, Derivative) and derivative.variable == "x"
    assert parse_expression("(x^2)'") == Derivative(parse_expression("x^2"), None, 1)
    assert parse_expression("f'(x)") == Apply("f", (Symbol("x"),), 1)
    assert parse_expression("y'") == Apply("y", (), 1)
    assert parse_expression("f(x)") == Apply("f", (Symbol("x"),), 0)
    assert isinstance(parse_expression("x(x+1)"), Product)  # any other letter multiplies
    assert parse_expression("du") == Differential("u")
    assert render(parse_expression("2x dx")) == "2 * x * dx"
    assert render(parse_expression("dy/dx")) == "dy / dx"
    assert parse_expression("integrate(x, (x, 0, 1))") == Integral(
        Symbol("x"), "x", Number(Fraction(0), "0"), Number(Fraction(1), "1")
    )
    assert parse_expression("simplify(x - x)") == parse_expression("x - x")
    assert parse_expression("e") == Constant("e") and parse_expression("e_1") == Symbol("e_1")


def test_reads_relation_chains() -> None:
    statement = parse_statement("2 * 3 + 4 = 6 + 4 == 10")
    assert statement.ops == ("=", "=") and len(statement.sides) == 3
    ops = [parse_statement(f"1 {op} 2").ops[0] for op in ("<", ">", "<=", ">=", "!=", "≤", "≥", "≠", "≈")]
    assert ops == ["<", ">", "≤", "≥", "≠", "≤", "≥", "≠", "≈"]
    assert parse_statement("1 \\le 2 \\geq 0 \\neq 3 \\approx 3").ops == ("≤", "≥", "≠", "≈")
    assert [(render(a), op, render(b)) for a, op, b in statement.pairs()] == [
        ("2 * 3 + 4", "=", "6 + 4"),
        ("6 + 4", "=", "10"),
    ]


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "position", "token"),
    [
        ("2 + * 3", 4, "*"),
        ("2 3", 2, "3"),
        ("x 2", 2, "2"),
        ("1e5", 2, "5"),
        ("(2 + 3", 6, ""),
        ("(2 + 3]", 6, "]"),
        ("2 # 3", 2, "#"),
        ("the answer", 0, "the"),
        ("using u", 0, "using"),
        ("Check x", 0, "Check"),
        ("cost", 0, "cost"),
        ("\\text{hi}", 0, "\\text"),
        ("∫ x", 3, ""),
        ("2 = ", 4, ""),
    ],
)
def test_parse_errors_name_the_position_and_the_token(text: str, position: int, token: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_statement(text)
    assert (caught.value.position, caught.value.token) == (position, token)
    assert isinstance(caught.value, GraphError)
    assert repr(text) in str(caught.value)


def test_code_is_never_evaluated() -> None:
    for hostile in ("__import__('os').system('true')", "exec('1')", "().__class__", "lambda: 1", "eval(1)"):
        with pytest.raises(ParseError):
            parse_expression(hostile)


def test_input_size_and_nesting_are_bounded() -> None:
    with pytest.raises(ParseError, match="at most"):
        parse_expression("1+" * MAX_EXPRESSION_CHARS + "1")
    deep = "(" * (MAX_NESTING_DEPTH + 1) + "1" + ")" * (MAX_NESTING_DEPTH + 1)
    with pytest.raises(ParseError, match="nested more than"):
        parse_expression(deep)
    with pytest.raises(ParseError, match="nested more than"):
        parse_expression("-" * (MAX_NESTING_DEPTH + 1) + "1")
    shallow = "(" * (MAX_NESTING_DEPTH - 1) + "1" + ")" * (MAX_NESTING_DEPTH - 1)
    assert exact(shallow) == 1
    long_chain = "+".join(["1"] * 999)  # a flat sum, not a 999-deep tree
    assert exact(long_chain) == 999


# ------------------------------------------------------------------------------ exact evaluation


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("17 × 23", Fraction(391)),
        ("1,234.5 + 0.5", Fraction(1235)),
        ("50/200", Fraction(1, 4)),
        ("25%", Fraction(1, 4)),
        ("20% * 50", Fraction(10)),
        ("\\frac{1}{3} + \\frac{2}{3}", Fraction(1)),
        ("0.1 + 0.2", Fraction(3, 10)),
        ("2^-2", Fraction(1, 4)),
        ("(-2)^3", Fraction(-8)),
        ("\\sqrt{16}", Fraction(4)),
        ("\\sqrt{\\frac{9}{4}}", Fraction(3, 2)),
        ("\\sqrt[3]{-27}", Fraction(-3)),
        ("8^(2/3)", Fraction(4)),
        ("5!", Fraction(120)),
        ("3(4+1)", Fraction(15)),
        ("2 + 3 * 4", Fraction(14)),
        ("12 / 4 / 3", Fraction(1)),
        ("10 - 3 - 2", Fraction(5)),
        (".5 * 8", Fraction(4)),
        ("2^10^1", Fraction(1024)),
    ],
)
def test_exact_values(text: str, value: Fraction) -> None:
    assert exact(text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("sqrt(2)", "irrational"),
        ("8^(1/2)", "irrational"),
        ("pi", "irrational"),
        ("2e", "irrational"),
        ("x + 1", "variable x"),
        ("1 / 0", "division by zero"),
        ("0^-1", "division by zero"),
        ("(-4)^(1/2)", "not real"),
        ("sin(1)", "symbolically"),
        ("2^10^10", "exponent"),
        ("10^10^10", "exponent"),
        ("(10^1000)^1000", "too large"),
        ("100000!", "factorial"),
        ("(1/2)!", "factorial"),
    ],
)
def test_what_has_no_exact_value_says_why(text: str, reason: str) -> None:
    with pytest.raises(EvaluationError, match=reason):
        exact(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(391), "391"),
        (Fraction(-7), "-7"),
        (Fraction(5, 2), "2.5"),
        (Fraction(-1, 8), "-0.125"),
        (Fraction(10, 3), "3.333333333"),
        (Fraction(2, 3), "0.6666666667"),
        (Fraction(1, 7), "0.1428571429"),
        (Fraction(12345678901, 1000), "12345678.901"),
    ],
)
def test_format_exact(value: Fraction, text: str) -> None:
    assert format_exact(value) == text


# ------------------------------------------------------------------------------ SymPy


def test_sympy_expressions_are_the_ones_its_constructors_give() -> None:
    assert to_sympy(parse_expression("2e^x")) == 2 * sympy.exp(x)
    assert to_sympy(parse_expression("(x+1)^2 - 1/2")) == (x + 1) ** 2 - sympy.Rational(1, 2)
    assert to_sympy(parse_expression("sin^2 x + cos^2 x")) == sympy.sin(x) ** 2 + sympy.cos(x) ** 2
    assert to_sympy(parse_expression("\\sqrt{x} + ln x")) == sympy.sqrt(x) + sympy.log(x)
    assert to_sympy(parse_expression("\\int 2e^{x}\\,dx")) == sympy.Integral(2 * sympy.exp(x), x)
    assert to_sympy(parse_expression("\\int_0^1 x dx")).doit() == sympy.Rational(1, 2)
    assert to_sympy(parse_expression("d/dx (x^2 e^x)")) == x**2 * sympy.exp(x) + 2 * x * sympy.exp(x)
    assert to_sympy(parse_expression("(x^3)'")) == 3 * x**2
    assert to_sympy(parse_expression("log(100)"), log_base=10) == 2
    assert to_sympy(parse_expression("log_2 8")) == 3
    assert to_sympy(parse_expression("12.5%")) == sympy.Rational(1, 8)
    assert to_sympy(parse_expression("π")) == sympy.pi
    body = parse_expression("x^2 e^x")
    defined = {"f": (("x",), body)}
    assert to_sympy(parse_expression("f'(x)"), functions=defined) == x**2 * sympy.exp(x) + 2 * x * sympy.exp(x)
    assert to_sympy(parse_expression("f(1)"), functions=defined) == sympy.E
    undefined = to_sympy(parse_expression("g'(x)"))
    assert undefined == sympy.Derivative(sympy.Function("g")(x), x)


def test_sympy_refuses_what_would_hang_or_has_no_value() -> None:
    for text, reason in (
        ("(x+1)^(10^9)", "exponent"),
        ("((1000^1000)^1000)^1000", "too large"),
        ("dx", "no value by itself"),
        ("(x y)'", "exactly one variable"),
        ("y'", "not defined"),
    ):
        with pytest.raises(EvaluationError, match=reason):
            to_sympy(parse_expression(text))


# ------------------------------------------------------------------------------ properties

_SPELLINGS = {"+": ["+"], "-": ["-", "−"], "*": ["*", "×", "·", "\\times", "\\cdot"], "/": ["/", "÷", "\\div"]}

Tree = int | tuple[str, "Tree", "Tree"]


def _trees() -> st.SearchStrategy[Tree]:
    leaves = st.integers(min_value=-50, max_value=1000)
    return st.recursive(
        leaves,
        lambda inner: st.tuples(st.sampled_from(["+", "-", "*", "/", "^"]), inner, inner),
        max_leaves=12,
    )


def _value(tree: Tree) -> Fraction:
    """The value of a tree, computed directly (independently of the parser)."""
    if isinstance(tree, int):
        return Fraction(tree)
    op, left, right = tree
    a, b = _value(left), _value(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    if b.denominator != 1 or abs(b) > 6 or abs(a.numerator) > 10**6 or abs(a.denominator) > 10**6:
        raise OverflowError("kept small")
    return a ** int(b)


def _text(tree: Tree, draw: st.DrawFn) -> str:
    """The tree as text, fully bracketed, with a random spelling of each operator and random spacing."""
    if isinstance(tree, int):
        written = f"{tree:,}" if tree >= 1000 and draw(st.booleans()) else str(tree)
        return f"({written})" if tree < 0 else written
    op, left, right = tree
    spelling = draw(st.sampled_from(_SPELLINGS.get(op, ["^", "**"])))
    space = draw(st.sampled_from(["", " "]))
    opening, closing = draw(st.sampled_from([("(", ")"), ("[", "]"), ("{", "}")]))
    spelled = f" {spelling} " if spelling.startswith("\\") else f"{space}{spelling}{space}"
    return f"{opening}{_text(left, draw)}{spelled}{_text(right, draw)}{closing}"


@st.composite
def _written(draw: st.DrawFn) -> tuple[Tree, str]:
    tree = draw(_trees())
    return tree, _text(tree, draw)


@settings(max_examples=300, deadline=None)
@given(_written())
def test_any_integer_expression_parses_back_to_its_value(written: tuple[Tree, str]) -> None:
    tree, text = written
    try:
        expected = _value(tree)
    except ZeroDivisionError:
        with pytest.raises(EvaluationError, match="division by zero"):
            exact(text)
        return
    except OverflowError:
        return
    parsed = parse_expression(text)
    assert evaluate_exact(parsed) == expected
    assert evaluate_exact(parse_expression(render(parsed))) == expected  # render is read back the same
    assert to_sympy(parsed) == sympy.Rational(expected.numerator, expected.denominator)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=6))
def test_decimals_and_separators_are_exact(whole: int, places: int) -> None:
    value = Fraction(whole, 10**places)
    digits = str(whole).rjust(places + 1, "0")
    plain = f"{digits[:-places]}.{digits[-places:]}" if places else digits
    integer_part = int(digits[:-places]) if places else whole
    grouped = f"{integer_part:,}" + (f".{digits[-places:]}" if places else "")
    assert exact(plain) == value == exact(grouped)
    assert parse_expression(plain) == Number(value, plain)
    assert isinstance(parse_expression(f"{plain}^2"), Power)
