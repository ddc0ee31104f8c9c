"""Proposition 2.1 measured: surgical repair versus global retry on balanced trees (`trust bench refinement`).

A balanced tree with branching b and depth D (the root at depth 1, the leaves at depth D, so
N = (b^D - 1) / (b - 1) nodes, or D for a chain, b = 1) is built as a CIG of worker turns: the root
writes "0 + 1 = 1" and every other node adds one to its parent's result ("x + 1 = x+1"). One error
is injected at depth d: the first node of that depth states a wrong sum. The refinement loop
(`trust.services.refine.refine`) then runs for real: the tier-1 arithmetic check and Algorithm 1 audit the tree, the
loop prunes the failed node and its descendants, re-executes them through a deterministic worker
(it follows corrective feedback, and otherwise recomputes from its parent's output), and re-audits
the regenerated subtree. The figure is the number of nodes the loop re-executed, against N for a
global retry.

What the proposition says and what a balanced tree gives. The failed subtree has
(b^(D-d+1) - 1) / (b - 1) nodes: O(b^(D-d)), which is the paper's O(2^(D-d)) for b = 2. The saving
is 1 - subtree / N ~ 1 - b^(1-d): it depends on how far the error is from the root, not from the
leaves. So a root error saves 0%, a leaf error 1 - 1/N (over 99% once N > 100), and the paper's
"50% to 75%" is a binary tree's error one or two levels below the root (d = 2 or 3). At d = D/2 a
balanced binary tree saves 1 - 2^(1 - D/2) (97% at D = 12), well above 75%; only a chain (b = 1)
gives about 50% there (1 - (D - d + 1) / D, 42% at D = 12, d = 6). The table prints the measured
count, the closed form, and both savings, so any disagreement between the loop and the formula
would show.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.computational import ComputationalAuditor
from trust.auditors.refinement import CigAuditorAudit
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.services.refine import Regenerated, RepairRequest, refine
from trust.settings import AuditSettings, RefinementSettings

__all__ = [
    "DepthCost",
    "RefinementBench",
    "balanced_tree",
    "render",
    "run_refinement_benchmark",
    "subtree_size",
    "tree_size",
]

MAX_NODES = 2_000_000
_CORRECT = re.compile(r"The correct result is (-?\d+)")
_LAST_NUMBER = re.compile(r"(-?\d+)\s*$")


def tree_size(branching: int, depth: int) -> int:
    """N = 1 + b + ... + b^(D-1)."""
    return depth if branching == 1 else (branching**depth - 1) // (branching - 1)


def subtree_size(branching: int, depth: int, error_depth: int) -> int:
    """Nodes of the subtree rooted at depth d: the failed node and its descendants."""
    return tree_size(branching, depth - error_depth + 1)


def _check(branching: int, depth: int) -> None:
    if branching < 1 or depth < 1:
        raise ValueError(f"a balanced tree needs branching >= 1 and depth >= 1, got b={branching}, D={depth}")
    if tree_size(branching, depth) > MAX_NODES:
        raise ValueError(
            f"b={branching}, D={depth} gives {tree_size(branching, depth):,} nodes, above {MAX_NODES:,}; "
            "lower the depth or the branching"
        )


def balanced_tree(branching: int, depth: int, *, error_depth: int | None = None) -> Cig:
    """The tree as a CIG in breadth-first order (turn ids t0, t1, ...; t0 the root). With
    `error_depth`, the first node at that depth states its sum one too high."""
    _check(branching, depth)
    cig = Cig()
    level_start, level_width, step = 0, 1, 0
    error_node = None if error_depth is None else tree_size(branching, error_depth - 1)
    values: list[int] = []
    for level in range(1, depth + 1):
        for offset in range(level_width):
            parent = None if level == 1 else (level_start - (level_width // branching)) + offset // branching
            base = 0 if parent is None else values[parent]
            result = base + 1
            stated = result + 1 if step == error_node else result
            values.append(stated)
            cig.add_turn(AgentTurn(f"t{step}", step, f"worker{level}", Role.EXPERT, f"{base} + 1 = {stated}"))
            if parent is not None:
                cig.add_edge_at(parent, step)
            step += 1
        level_start += level_width
        level_width *= branching
    return cig


def _worker(request: RepairRequest) -> Regenerated:
    """Adds one to the parent's result, or states the correct result corrective feedback gives."""
    parents = list(request.graph.predecessors(request.node))
    base = 0
    if parents:
        match = _LAST_NUMBER.search(request.graph.nodes[parents[0]]["node"].output)
        base = int(match.group(1)) if match else 0
    result = base + 1
    if request.feedback is not None:
        told = _CORRECT.search(request.feedback.prompt())
        if told is not None:
            result = int(told.group(1))
    return Regenerated(f"{base} + 1 = {result}")


@dataclass(frozen=True, slots=True)
class DepthCost:
    """One injected error: what the loop re-executed, the closed form, and the global retry."""

    error_depth: int
    reexecuted: int
    expected: int
    total: int
    rounds: int
    repaired: bool

    @property
    def savings(self) -> float:
        return 1.0 - self.reexecuted / self.total

    @property
    def expected_savings(self) -> float:
        return 1.0 - self.expected / self.total


@dataclass(frozen=True, slots=True)
class RefinementBench:
    branching: int
    depth: int
    nodes: int
    costs: tuple[DepthCost, ...]

    def at(self, error_depth: int) -> DepthCost:
        return next(cost for cost in self.costs if cost.error_depth == error_depth)

    @property
    def mid_depth(self) -> int:
        """d = D/2 of the proposition, rounded up (the root is depth 1)."""
        return max(1, math.ceil(self.depth / 2))

    def summary(self) -> dict[str, object]:
        return {
            "branching": self.branching,
            "depth": self.depth,
            "nodes": self.nodes,
            "savings": {
                "root": round(self.at(1).savings, 6),
                "mid": round(self.at(self.mid_depth).savings, 6),
                "leaf": round(self.at(self.depth).savings, 6),
            },
            "by_depth": {str(cost.error_depth): round(cost.savings, 6) for cost in self.costs},
            "matches_closed_form": all(cost.reexecuted == cost.expected for cost in self.costs),
            "all_repaired": all(cost.repaired for cost in self.costs),
        }


def run_refinement_benchmark(
    branching: int,
    depth: int,
    *,
    audit_settings: AuditSettings,
    refinement_settings: RefinementSettings,
    progress: Callable[[str], None] | None = None,
) -> RefinementBench:
    """One refinement run per error depth 1..D on a fresh tree."""
    _check(branching, depth)
    audit = CigAuditorAudit(
        (ComputationalAuditor([ArithmeticCheck()]),), audit_settings.tau_node, audit_settings.tau_edge
    )
    total = tree_size(branching, depth)
    costs = []
    for error_depth in range(1, depth + 1):
        if progress is not None:
            progress(f"error at depth {error_depth} of {depth} ({total:,} nodes)")
        cig = balanced_tree(branching, depth, error_depth=error_depth)
        result = refine(cig.graph, audit, _worker, refinement_settings, tau_stat=audit_settings.tau_stat)
        costs.append(
            DepthCost(
                error_depth=error_depth,
                reexecuted=result.nodes_reexecuted,
                expected=subtree_size(branching, depth, error_depth),
                total=total,
                rounds=len(result.rounds),
                repaired=result.all_valid,
            )
        )
    return RefinementBench(branching, depth, total, tuple(costs))


def render(bench: RefinementBench, console: Console) -> None:
    table = Table(title=f"Proposition 2.1: balanced tree, b={bench.branching}, D={bench.depth}, N={bench.nodes:,}")
    table.add_column("error depth d", justify="right")
    table.add_column("re-executed", justify="right")
    table.add_column("closed form", justify="right")
    table.add_column("b^(D-d)", justify="right")
    table.add_column("global retry", justify="right")
    table.add_column("savings", justify="right")
    table.add_column("rounds", justify="right")
    for cost in bench.costs:
        label = {1: " (root)", bench.mid_depth: " (mid)", bench.depth: " (leaf)"}.get(cost.error_depth, "")
        table.add_row(
            f"{cost.error_depth}{label}",
            f"{cost.reexecuted:,}",
            f"{cost.expected:,}",
            f"{bench.branching ** (bench.depth - cost.error_depth):,}",
            f"{cost.total:,}",
            f"{cost.savings:.2%}",
            str(cost.rounds),
        )
    console.print(table)
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
