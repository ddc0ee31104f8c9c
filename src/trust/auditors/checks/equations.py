"""The equation check: each equation a step writes must follow from the one before (paper 3.1.1, tier 1).

Solving for an unknown is a chain of equations that all hold for the same value: "5000 = x/2",
"10000 = x"; "(2/3)x * 1.5 = 150", "x = 150". A step that rewrites an equation wrongly ("2J + 10 =
100 simplifies to 5J + 20 = 100") leaves an equation whose solution differs from its predecessor's:
the check fails the step that wrote it, with both solutions. Equations are read as the symbolic
check reads statements (`trust.auditors.checks.symbolic.statements`), with the one maths engine,
and solved with SymPy.

What is compared: equations in one unknown (one single-letter variable, both sides parsed, "=")
that SymPy solves to a finite, non-empty set of real values, the unknown written as a letter of
its own (not "mm" read as m * m, a unit), each with the previous such equation
in the same unknown, in the step right before (the last parent) and then in the node. What is
never failed: identities ("x - 14 - 7 = x - 21": true for every x, the symbolic check's to decide),
equations SymPy cannot solve or that have no solution, two assignments in a row ("for n = 1",
"for n = 2": values tried, not an equation rewritten), a node that introduces its unknowns anew
("let x be": the step before is then not read), and equations in several unknowns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text
from trust.auditors.checks.symbolic import statements
from trust.auditors.checks.verdicts import failed, listed
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.maths.expressions import (
    Expr,
    Symbol,
    free_symbols,
    render,
    size,
    to_sympy,
)

__all__ = ["MAX_EQUATION_NODES", "EquationCheck", "EquationStep", "solved_equations"]

MAX_EQUATION_NODES: Final = 80
"""The largest equation (tree nodes, both sides) handed to SymPy's solver: grade-school equations
are far smaller, and a large one is more likely a misread sentence than an equation."""
_INTRODUCES = re.compile(r"\b(?:let|call|denote|represent|assume|suppose)\b", re.I)


@dataclass(frozen=True, slots=True)
class EquationStep:
    """One equation in one unknown, its solutions, and whether it follows from the one before."""

    written: str
    unknown: str
    solutions: frozenset[Any]
    holds: bool
    detail: str
    fault: str | None = None
    expected: str | None = None


def _solve(left: Expr, right: Expr) -> tuple[str, frozenset[Any]] | None:
    names = free_symbols(left) | free_symbols(right)
    if len(names) != 1 or size(left) + size(right) > MAX_EQUATION_NODES:
        return None
    (name,) = names
    if len(name) != 1:
        return None
    import sympy

    try:
        lhs, rhs = to_sympy(left), to_sympy(right)
        difference = sympy.simplify(lhs - rhs)
        if difference == 0 or not difference.free_symbols:
            return None  # an identity, or a statement about numbers only
        symbol = next(iter(difference.free_symbols))
        if sympy.degree(sympy.numer(sympy.together(difference)), symbol) > 2:
            return None
        solutions = sympy.solve(difference, symbol)
    except Exception:  # SymPy cannot read or solve it: nothing is decided
        return None
    values = frozenset(sympy.nsimplify(value) for value in solutions if value.is_real)
    if not values or len(values) != len(solutions):
        return None
    return name, values


def solved_equations(text: str) -> list[tuple[str, str, frozenset[Any], bool]]:
    """The equations in one unknown that `text` writes, in order: (as written, unknown, solutions,
    whether it only assigns a value to the unknown: "x = 350 - 150", "10000 = x")."""
    found = []
    for sides, texts, ops in statements(text):
        for index, op in enumerate(ops):
            left, right = sides[index], sides[index + 1]
            if op != "=" or left is None or right is None:
                continue
            solved = _solve(left, right)
            written = f"{texts[index]} {texts[index + 1]}"
            if solved is not None and re.search(rf"(?<![A-Za-z]){re.escape(solved[0])}(?![A-Za-z])", written):
                assignment = isinstance(left, Symbol) and not free_symbols(right)
                assignment |= isinstance(right, Symbol) and not free_symbols(left)
                found.append((f"{render(left)} = {render(right)}", solved[0], solved[1], assignment))
    return found


def _shown(values: Iterable[Any]) -> str:
    return ", ".join(sorted(str(value) for value in values))


@dataclass(frozen=True, slots=True)
class EquationCheck:
    """Fails a node whose equation does not follow from the previous one; see the module docstring."""

    @property
    def name(self) -> str:
        return "equations"

    def steps(self, request: AuditRequest) -> list[EquationStep]:
        """The node's equations in one unknown, each judged against the previous one."""
        last: dict[str, tuple[str, frozenset[Any], bool]] = {}
        text = node_text(request.node)
        if request.parents and not _INTRODUCES.search(text):
            # the step right before: an unknown of an older step may since have been reused
            for written, unknown, solutions, assignment in solved_equations(node_text(request.parents[-1])):
                last[unknown] = (written, solutions, assignment)
        judged: list[EquationStep] = []
        for written, unknown, solutions, assignment in solved_equations(text):
            before = last.get(unknown)
            last[unknown] = (written, solutions, assignment)
            if before is None or (assignment and before[2]):
                continue  # "n = 1" then "n = 2": values tried or assigned, not one equation rewritten
            if solutions == before[1] or solutions < before[1]:
                judged.append(EquationStep(written, unknown, solutions, True, f"{written} follows from {before[0]}"))
                continue
            detail = (
                f"{written} gives {unknown} = {_shown(solutions)}, but the equation before it, {before[0]}, "
                f"gives {unknown} = {_shown(before[1])}"
            )
            judged.append(
                EquationStep(written, unknown, solutions, False, detail, "equation does not follow", _shown(before[1]))
            )
        return judged

    async def check(self, request: AuditRequest) -> CheckResult:
        node = request.node
        if isinstance(node, AgentTurn) and node.role is Role.TOOL:
            return CheckResult(
                self.name, Outcome.NOT_APPLICABLE, "a tool's output is an observation of its environment, not a claim"
            )
        judged = self.steps(request)
        if not judged:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "no equation follows another in the same unknown")
        wrong = [step for step in judged if not step.holds]
        if wrong:
            return failed(self.name, wrong, len(judged), "equation(s)")
        return CheckResult(self.name, Outcome.PASS, f"{len(judged)} equation(s) follow: {listed(judged)}")
