"""Exact evaluation of the checkable `expression` of an HDAG operation node (a tier-1 check).

`trust.core.decompose.rules` writes every extracted calculation as a Python boolean expression:
"12 * 3 == 36", or, when the trace rounded its result, "abs(10 / 3 - 3.33) <= 0.005". This module
evaluates such an expression exactly, with `fractions.Fraction` (so 0.1 + 0.2 == 0.3 holds), over a
whitelist of syntax: numeric literals, + - * / // % **, unary signs, parentheses, `abs`, `min`,
`max`, and comparisons. Anything else (names, attribute access, other calls) is refused as
uncheckable, never executed: `eval` is not used.

Bounds keep a hostile expression cheap: at most `MAX_CHARS` characters, exponents up to
`MAX_EXPONENT` in absolute value and integer only, and intermediate numerators and denominators of
at most `MAX_DIGITS` digits.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MAX_CHARS", "MAX_DIGITS", "MAX_EXPONENT", "ExpressionCheck", "check_expression"]

MAX_CHARS = 2_000
MAX_EXPONENT = 64
MAX_DIGITS = 400

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: lambda a, b: a % b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_FUNCTIONS = {"abs": 1, "min": None, "max": None}


@dataclass(frozen=True, slots=True)
class ExpressionCheck:
    """`holds` is True or False when the expression could be evaluated, None when it could not
    (`reason` says why). `left` and `right` are the two sides of a single comparison, exactly."""

    holds: bool | None
    reason: str = ""
    left: Fraction | None = None
    right: Fraction | None = None


class _Uncheckable(Exception):
    pass


def _bounded(value: Fraction) -> Fraction:
    if len(str(abs(value.numerator))) > MAX_DIGITS or len(str(value.denominator)) > MAX_DIGITS:
        raise _Uncheckable(f"an intermediate value has more than {MAX_DIGITS} digits")
    return value


def _number(node: ast.AST, source: str) -> Fraction:
    if isinstance(node, ast.Expression):
        return _number(node.body, source)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise _Uncheckable(f"{node.value!r} is not a number")
        text = ast.get_source_segment(source, node)
        return Fraction(text) if text is not None else Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _number(node.operand, source)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _number(node.left, source), _number(node.right, source)
        if isinstance(node.op, ast.Pow):
            if right.denominator != 1 or abs(right) > MAX_EXPONENT:
                raise _Uncheckable(f"exponent {right} is not an integer of at most {MAX_EXPONENT}")
            if left == 0 and right < 0:
                raise _Uncheckable("zero to a negative power")
            return _bounded(left ** int(right))
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise _Uncheckable(f"operator {type(node.op).__name__} is not arithmetic")
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise _Uncheckable("division by zero")
        return _bounded(operation(left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords or not node.args:
            raise _Uncheckable(f"{node.func.id}() needs positional arguments only")
        arity = _FUNCTIONS[node.func.id]
        if arity is not None and len(node.args) != arity:
            raise _Uncheckable(f"{node.func.id}() takes {arity} argument(s)")
        values = [_number(arg, source) for arg in node.args]
        if node.func.id == "abs":
            return abs(values[0])
        return min(values) if node.func.id == "min" else max(values)
    raise _Uncheckable(f"{type(node).__name__} is not allowed in a checkable expression")


def check_expression(expression: str) -> ExpressionCheck:
    """Whether a comparison such as "12 * 3 == 36" holds, exactly; see the module docstring."""
    if not isinstance(expression, str) or not expression.strip():
        return ExpressionCheck(None, "empty expression")
    if len(expression) > MAX_CHARS:
        return ExpressionCheck(None, f"longer than {MAX_CHARS} characters")
    source = expression.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError) as exc:
        return ExpressionCheck(None, f"not an expression ({exc.__class__.__name__})")
    body = tree.body
    if not isinstance(body, ast.Compare):
        return ExpressionCheck(None, "not a comparison")
    try:
        values = [_number(body.left, source), *(_number(c, source) for c in body.comparators)]
        holds = True
        for op, left, right in zip(body.ops, values, values[1:], strict=False):
            compare = _COMPARE.get(type(op))
            if compare is None:
                raise _Uncheckable(f"comparison {type(op).__name__} is not numeric")
            holds = holds and compare(left, right)
    except _Uncheckable as exc:
        return ExpressionCheck(None, str(exc))
    except (ArithmeticError, ValueError, RecursionError) as exc:  # pragma: no cover - guarded above
        return ExpressionCheck(None, f"cannot evaluate ({exc.__class__.__name__})")
    single = len(values) == 2
    return ExpressionCheck(holds, "", values[0] if single else None, values[1] if single else None)
