"""What counts as a test unit, by the source alone.

Used on both sides: the parent counts the units before a run (so a run that dies early still says
"0 tests of 3 passed"), and the child picks which of the code's own `test*` functions are tests.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Unit", "assertion_name", "test_units"]


@dataclass(frozen=True, slots=True)
class Unit:
    """A test unit: kind "assert" (a top-level assert statement), "function" (a `test*` function) or
    "method" (a `test*` method written in a `Test*` class, named "Class.method"); its first line."""

    __test__ = False  # not a pytest test class, despite its name

    kind: str
    name: str
    line: int


def assertion_name(line: int) -> str:
    """The name of the unit made by the top-level assert statement that starts at `line`."""
    return f"assertion at line {line}"


def test_units(tree: ast.Module, *, in_code: bool = False) -> list[Unit]:
    """The test units at the top level of a module, in source order. A name defined twice counts
    once, as Python keeps the last definition. `in_code`: the module is the node's code, where
    top-level asserts are part of the program and a `test*` function that needs arguments is a
    helper (a predicate such as `test_prime(n)`), not a test."""
    units: list[Unit] = []
    seen: set[str] = set()

    def add(kind: str, name: str, line: int) -> None:
        if name not in seen:
            seen.add(name)
            units.append(Unit(kind, name, line))

    def is_test(function: ast.stmt, method: bool) -> bool:
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not function.name.startswith("test"):
            return False
        if not in_code:
            return True
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args][1 if method else 0 :]
        required = len(positional) - len(arguments.defaults)
        return required <= 0 and all(d is not None for d in arguments.kw_defaults)

    for statement in tree.body:
        if isinstance(statement, ast.Assert) and not in_code:
            units.append(Unit("assert", assertion_name(statement.lineno), statement.lineno))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and is_test(statement, False):
            add("function", statement.name, statement.lineno)
        elif isinstance(statement, ast.ClassDef) and statement.name.startswith("Test"):
            for item in statement.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and is_test(item, True):
                    add("method", f"{statement.name}.{item.name}", item.lineno)
    return units
