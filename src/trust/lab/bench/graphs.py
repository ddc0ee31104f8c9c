"""Scaling of the graph core at 1k, 10k and 100k nodes (`trust bench graphs`).

Three timed paths per size, each the best of `repeat` runs (the minimum is the least disturbed by
other work on the machine; the figures are printed, never asserted):

- HDAG: building a synthetic HDAG of exactly n nodes through `Hdag.add_node` / `add_edge` (hierarchy
  constraint checked per edge) and validating it (`trust.core.graphs.validation.validate`: acyclic,
  reachable from the goal, leaves at step or operation level, no orphans).
- CIG: building the CIG of a synthetic swarm log and localizing its faults with Algorithm 1, given
  precomputed scores (`trust.lab.bench.graphs_data`; generating the log and the scores is not timed).
  The issue's target is localize on a 100k-node CIG in at most one second.
- Refinement: `plan_repair` (prune and freeze) on that CIG with the localized statuses.

The synthetic HDAG: one goal, four strategies, four tactics under each (a tactic enables the next
one of its strategy), then steps spread round-robin over the tactics, each step depending on the
previous step of its tactic, and two operations under each step (the remainder as extra operations
under the last step), so every level and three edge types are present at every size.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from trust.core.graphs.agent_log import build_cig
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.localize import localize
from trust.core.graphs.refinement import plan_repair
from trust.core.graphs.validation import validate
from trust.lab.bench.graphs_data import build_synthetic_log, synthetic_scores

__all__ = ["DEFAULT_SIZES", "GraphsBench", "SizeTiming", "render", "run_graphs_benchmark", "synthetic_hdag"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
T = TypeVar("T")
_STRATEGIES = 4
_TACTICS_PER_STRATEGY = 4
_OPERATIONS_PER_STEP = 2
_TACTICS = _STRATEGIES * _TACTICS_PER_STRATEGY
_MIN_NODES = 1 + _STRATEGIES + _TACTICS + _TACTICS * (1 + _OPERATIONS_PER_STEP)  # one step under every tactic


def synthetic_hdag(n: int, rng: random.Random) -> Hdag:
    """A valid HDAG of exactly `n` nodes (see the module docstring); operations carry a true sum."""
    if n < _MIN_NODES:
        raise ValueError(f"a synthetic HDAG needs at least {_MIN_NODES} nodes, got {n}")
    hdag = Hdag()
    hdag.add_node(HdagNode("g0", Level.GOAL, "synthetic goal"))
    tactics: list[str] = []
    for s in range(_STRATEGIES):
        strategy = f"st{s}"
        hdag.add_node(HdagNode(strategy, Level.STRATEGY, f"strategy {s}"))
        hdag.add_edge("g0", strategy, EdgeType.DECOMPOSES_TO)
        previous = None
        for t in range(_TACTICS_PER_STRATEGY):
            tactic = f"ta{s}.{t}"
            hdag.add_node(HdagNode(tactic, Level.TACTIC, f"tactic {s}.{t}"))
            hdag.add_edge(strategy, tactic, EdgeType.DECOMPOSES_TO)
            if previous is not None:
                hdag.add_edge(previous, tactic, EdgeType.ENABLES)
            previous = tactic
            tactics.append(tactic)
    remaining = n - len(hdag)
    steps = remaining // (1 + _OPERATIONS_PER_STEP)
    extra = remaining - steps * (1 + _OPERATIONS_PER_STEP)
    last_step: dict[str, str] = {}
    for index in range(steps):
        tactic = tactics[index % len(tactics)]
        step = f"s{index}"
        hdag.add_node(HdagNode(step, Level.STEP, f"step {index}", difficulty=Difficulty.EASY))
        hdag.add_edge(tactic, step, EdgeType.DECOMPOSES_TO)
        if tactic in last_step:
            hdag.add_edge(last_step[tactic], step, EdgeType.DEPENDS_ON)
        last_step[tactic] = step
        count = _OPERATIONS_PER_STEP + (extra if index == steps - 1 else 0)
        for k in range(count):
            a, b = rng.randrange(1, 1000), rng.randrange(1, 1000)
            operation = HdagNode(
                f"{step}.op{k}",
                Level.OPERATION,
                f"{a} + {b} = {a + b}",
                difficulty=Difficulty.EASY,
                tier=Tier.COMPUTATIONAL,
                expression=f"{a} + {b} == {a + b}",
            )
            hdag.add_node(operation)
            hdag.add_edge(step, operation.id, EdgeType.DECOMPOSES_TO)
    return hdag


@dataclass(frozen=True, slots=True)
class SizeTiming:
    """Seconds at one size (best of the repeats)."""

    nodes: int
    hdag_edges: int
    hdag_build_s: float
    validate_s: float
    cig_edges: int
    cig_build_s: float
    localize_s: float
    plan_repair_s: float
    root_causes: int
    pruned: int


@dataclass(frozen=True, slots=True)
class GraphsBench:
    sizes: tuple[SizeTiming, ...]
    repeat: int

    def at(self, nodes: int) -> SizeTiming | None:
        return next((s for s in self.sizes if s.nodes == nodes), None)

    def summary(self) -> dict[str, float | int]:
        """The JSON line: `localize_100k_s` and `validate_10k_s` (the issue's keys) and the rest per size."""
        result: dict[str, float | int] = {}
        for timing in self.sizes:
            label = f"{timing.nodes // 1000}k" if timing.nodes % 1000 == 0 else str(timing.nodes)
            result[f"localize_{label}_s"] = round(timing.localize_s, 6)
            result[f"validate_{label}_s"] = round(timing.validate_s, 6)
            result[f"hdag_build_{label}_s"] = round(timing.hdag_build_s, 6)
            result[f"cig_build_{label}_s"] = round(timing.cig_build_s, 6)
            result[f"plan_repair_{label}_s"] = round(timing.plan_repair_s, 6)
        result["repeat"] = self.repeat
        return result


def _best(repeat: int, run: Callable[[], T]) -> tuple[float, T]:
    """The shortest of `repeat` (>= 1) timed calls, and the value of the last call."""
    best = math.inf
    values: list[T] = []
    for _ in range(repeat):
        start = time.perf_counter()
        values[:] = [run()]
        best = min(best, time.perf_counter() - start)
    return best, values[0]


def _validated(hdag: Hdag) -> Hdag:
    validate(hdag)
    return hdag


def _time_size(n: int, *, repeat: int, seed: int, tau_node: float, tau_edge: float) -> SizeTiming:
    hdag_build_s, hdag = _best(repeat, lambda: synthetic_hdag(n, random.Random(seed)))
    validate_s, _ = _best(repeat, lambda: _validated(hdag))
    rng = random.Random(seed)
    log = build_synthetic_log(n, rng)  # not timed: the log is the input
    cig_build_s, cig = _best(repeat, lambda: build_cig(log))
    node_scores, edge_scores = synthetic_scores(cig, rng)
    localize_s, localization = _best(
        repeat, lambda: localize(cig, node_scores, edge_scores, tau_node=tau_node, tau_edge=tau_edge)
    )
    graph = cig.graph  # the networkx view, built once outside the timing
    plan_s, plan = _best(repeat, lambda: plan_repair(graph, localization.statuses))
    return SizeTiming(
        nodes=n,
        hdag_edges=hdag.graph.number_of_edges(),
        hdag_build_s=hdag_build_s,
        validate_s=validate_s,
        cig_edges=cig.number_of_edges(),
        cig_build_s=cig_build_s,
        localize_s=localize_s,
        plan_repair_s=plan_s,
        root_causes=len(localization.root_causes),
        pruned=plan.cost,
    )


def run_graphs_benchmark(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    tau_node: float,
    tau_edge: float,
    repeat: int = 3,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> GraphsBench:
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    timings = []
    for n in sizes:
        if n < _MIN_NODES:
            raise ValueError(f"size {n} is below the smallest synthetic graph ({_MIN_NODES} nodes)")
        if progress is not None:
            progress(f"{n:,} nodes")
        timings.append(_time_size(n, repeat=repeat, seed=seed, tau_node=tau_node, tau_edge=tau_edge))
    return GraphsBench(tuple(timings), repeat)


def render(bench: GraphsBench, console: Console) -> None:
    table = Table(title=f"graph core scaling (best of {bench.repeat})")
    for column in (
        "nodes",
        "HDAG edges",
        "HDAG build s",
        "validate s",
        "CIG edges",
        "CIG build s",
        "localize s",
        "plan_repair s",
        "root causes",
        "pruned",
    ):
        table.add_column(column, justify="right")
    for t in bench.sizes:
        table.add_row(
            f"{t.nodes:,}",
            f"{t.hdag_edges:,}",
            f"{t.hdag_build_s:.3f}",
            f"{t.validate_s:.3f}",
            f"{t.cig_edges:,}",
            f"{t.cig_build_s:.3f}",
            f"{t.localize_s:.3f}",
            f"{t.plan_repair_s:.3f}",
            f"{t.root_causes:,}",
            f"{t.pruned:,}",
        )
    console.print(table)
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
