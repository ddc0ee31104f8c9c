"""Synthetic agent logs and CIGs for scaling figures (`trust bench graphs`, and `python -m` this module).

A synthetic log cycles a Planner -> Coder -> Terminal -> Reviewer swarm: each turn references the
turn before it and, with some probability, one or two earlier turns within a window of 16, so a
log of n turns has about 1.5 n edges. Scores are drawn so that about `fault_rate` of the nodes fail
their own audit and `edge_fault_rate` of the edges fail the telephone test, which exercises every
branch of Algorithm 1 at scale. Everything is seeded through the `random.Random` passed in.

The timed path is the one the issue's target names: building the CIG from a parsed log and
localizing it (Algorithm 1), given precomputed scores. Generating the log and the scores is not
timed; neither is the content-overlap inference, which is timed apart (`inferred_build_s`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from trust.core.graphs.agent_log import AgentLog, AgentSpec, LogTurn, build_cig
from trust.core.graphs.audit import EdgeScore
from trust.core.graphs.cig import Cig, Role
from trust.core.graphs.localize import localize

__all__ = [
    "GraphTiming",
    "build_synthetic_cig",
    "build_synthetic_log",
    "synthetic_scores",
    "time_build_and_localize",
]

_SWARM = (
    AgentSpec("Planner", Role.PLANNER),
    AgentSpec("Coder", Role.CODER),
    AgentSpec("Terminal", Role.TOOL),
    AgentSpec("Reviewer", Role.REVIEWER),
)
_WINDOW = 16


def build_synthetic_log(n: int, rng: random.Random, *, explicit: bool = True) -> AgentLog:
    """A log of `n` turns; with `explicit=False` the turns carry no references (edges are inferred)."""
    if n < 1:
        raise ValueError(f"a synthetic log needs at least one turn, got {n}")
    turns: list[LogTurn] = []
    for index in range(n):
        agent = _SWARM[index % len(_SWARM)].name
        value = rng.randrange(10, 10_000)
        content = f"{agent} step {index}: value_{index % 97} = {value}, carried {rng.randrange(10, 99)}"
        references: tuple[int, ...] | None = None
        if explicit:
            refs = {index - 1} if index else set()
            for _ in range(2):
                if index > 2 and rng.random() < 0.25:
                    refs.add(rng.randrange(max(0, index - _WINDOW), index - 1))
            references = tuple(sorted(refs))
        turns.append(LogTurn(agent, content, references=references))
    return AgentLog(task="synthetic swarm", agents=_SWARM, turns=tuple(turns))


def build_synthetic_cig(n: int, rng: random.Random) -> Cig:
    return build_cig(build_synthetic_log(n, rng))


def synthetic_scores(
    cig: Cig, rng: random.Random, *, fault_rate: float = 0.01, edge_fault_rate: float = 0.002
) -> tuple[dict[str, float], dict[tuple[str, str], EdgeScore]]:
    """Node and edge scores: a failing node scores in [0, 0.5), a passing one in [0.85, 1]."""
    nodes = {
        node_id: rng.uniform(0.0, 0.5) if rng.random() < fault_rate else rng.uniform(0.85, 1.0)
        for node_id in cig.topological_order()
    }
    passing, failing = EdgeScore(), EdgeScore(protocol=0.0)
    edges = {
        (source, target): failing if rng.random() < edge_fault_rate else passing for source, target in cig.graph.edges
    }
    return nodes, edges


@dataclass(frozen=True, slots=True)
class GraphTiming:
    """Seconds for one size; `total_s` = build + localize (the issue's 1 s target at 100k turns)."""

    turns: int
    edges: int
    build_s: float
    localize_s: float
    inferred_build_s: float
    root_causes: int

    @property
    def total_s(self) -> float:
        return self.build_s + self.localize_s


def time_build_and_localize(n: int, seed: int = 0, *, tau_node: float, tau_edge: float) -> GraphTiming:
    rng = random.Random(seed)
    log = build_synthetic_log(n, rng)
    start = time.perf_counter()
    cig = build_cig(log)
    built = time.perf_counter()
    nodes, edges = synthetic_scores(cig, rng)
    start_localize = time.perf_counter()
    result = localize(cig, nodes, edges, tau_node=tau_node, tau_edge=tau_edge)
    done = time.perf_counter()
    inferred_log = build_synthetic_log(n, random.Random(seed), explicit=False)
    start_inferred = time.perf_counter()
    build_cig(inferred_log)
    inferred = time.perf_counter() - start_inferred
    return GraphTiming(
        turns=len(cig),
        edges=cig.number_of_edges(),
        build_s=built - start,
        localize_s=done - start_localize,
        inferred_build_s=inferred,
        root_causes=len(result.root_causes),
    )


if __name__ == "__main__":
    from trust.settings import AuditSettings

    audit = AuditSettings()
    print(f"{'turns':>8} {'edges':>8} {'build s':>8} {'localize s':>10} {'total s':>8} {'inferred s':>10} {'roots':>6}")
    for size in (1_000, 10_000, 100_000):
        t = time_build_and_localize(size, tau_node=audit.tau_node, tau_edge=audit.tau_edge)
        print(
            f"{t.turns:>8} {t.edges:>8} {t.build_s:>8.3f} {t.localize_s:>10.3f} {t.total_s:>8.3f}"
            f" {t.inferred_build_s:>10.3f} {t.root_causes:>6}"
        )
