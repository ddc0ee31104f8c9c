"""`trust bench throughput`: many audits at once through the SDK, against one local network.

A `LocalNetwork` runs `workers` tier-1 workers (each a `trust worker run` process with its own
wallet), Anvil and the local IPFS node. The provider submits `sessions` traces of `nodes` nodes at
once through one `TrustClient` (`asyncio.gather` of `audit_trace`, one session each) and waits for
every verdict.

The traces are running totals (`running_total_trace`): every node holds one calculation the
tier-1 arithmetic check decides exactly, so every verdict is known in advance and no model time
enters the figures. Every other trace is flawed (one step states a wrong sum and the later steps
carry it on, arithmetically right from the wrong value): its verdict must be INVALID with that step
as the root cause; the sound ones must be VALID.

Printed per trace: its verdict, whether it is the right one, its latency (from the moment all are
submitted to its result) and its seats. In all: sessions per minute and segments per second over
the makespan (first submission to last result), p50 and p95 latency, and the gas of every
transaction mined while the benchmark ran (the provider's and the auditors') divided by the seats.
Ends with one JSON line. Nothing is asserted; the command exits 1 when a verdict is wrong.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level, Tier
from trust.lab.bench.e2e import gas_since, head_block
from trust.lab.bench.worker import Latency
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.sdk.client import TrustClient
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.result import AuditResult, Verdict
from trust.settings import Settings

__all__ = [
    "DEFAULT_NODES",
    "DEFAULT_SESSIONS",
    "DEFAULT_WORKERS",
    "ThroughputBench",
    "TraceRun",
    "render",
    "run_throughput_benchmark",
    "right_verdict",
    "running_total_trace",
    "seat_capacity",
]

DEFAULT_SESSIONS = 20
DEFAULT_WORKERS = 12
DEFAULT_NODES = 10
_SEED = 2_024
_COMMITTEE = 3
"""Committee size of every tier on the local network (`trust.lab.localnet.LOCAL_PROTOCOL`)."""
_SEAT_HEADROOM = 2
"""Draws an auditor's stake backs, as a multiple of its fair share of all the seats at once."""


def seat_capacity(segments_at_once: int, workers: int) -> int:
    """The `LocalNetwork.seat_capacity` for `segments_at_once` segments open at once among `workers`
    tier-1 workers: every seat may be open at once, so each auditor's stake backs twice its share.
    Too few workers for a committee is a `ValueError`."""
    if workers < _COMMITTEE:
        raise ValueError(f"a committee of {_COMMITTEE} needs at least {_COMMITTEE} workers, got {workers}")
    return max(64, _SEAT_HEADROOM * -(-segments_at_once * _COMMITTEE // workers))


def right_verdict(result: AuditResult, flawed_step: int | None) -> bool:
    """Whether a running total's audit is right: VALID when sound; INVALID with the flawed step as
    the one root cause when flawed."""
    expected = Verdict.VALID if flawed_step is None else Verdict.INVALID
    if result.verdict is not expected:
        return False
    causes = {cause.node_id for cause in result.root_causes}
    return causes == (set() if flawed_step is None else {f"s{flawed_step}"})


def running_total_trace(nodes: int, rng: random.Random, *, flawed_step: int | None = None) -> Hdag:
    """An HDAG of exactly `nodes` nodes, each decided by the tier-1 arithmetic check: the goal states
    the first sum ("start with a + b = t1"), step i adds the next amount to the running total (it
    depends on step i - 1) and restates it. With `flawed_step` = k, step k's sum is one too many,
    and the steps after it go on from that wrong total (each is then right in itself), so step k
    alone fails: the root cause."""
    if nodes < 2:
        raise ValueError(f"a running-total trace has a goal and at least one step: nodes = {nodes}")
    if flawed_step is not None and not 1 <= flawed_step < nodes:
        raise ValueError(f"flawed_step must be a step, 1..{nodes - 1}: got {flawed_step}")
    amounts = [rng.randint(2, 99) for _ in range(nodes)]
    hdag = Hdag()
    first = amounts[0] + amounts[1]
    hdag.add_node(
        HdagNode(
            "g0",
            Level.GOAL,
            f"Keep a running total of {nodes} amounts; it starts with {amounts[0]} + {amounts[1]} = {first}.",
            domain="math",
            tier=Tier.COMPUTATIONAL,
        )
    )
    total = amounts[0]
    for step in range(1, nodes):
        stated = total + amounts[step] + (1 if step == flawed_step else 0)
        node_id = f"s{step}"
        content = f"{total} + {amounts[step]} = {stated}"
        hdag.add_node(HdagNode(node_id, Level.STEP, content, domain="math", tier=Tier.COMPUTATIONAL))
        hdag.add_edge("g0", node_id, EdgeType.DECOMPOSES_TO)
        if step > 1:
            hdag.add_edge(f"s{step - 1}", node_id, EdgeType.DEPENDS_ON)
        total = stated
    return hdag


@dataclass(frozen=True, slots=True)
class TraceRun:
    """One trace of the benchmark: what it should get, what it got, and how long it took."""

    index: int
    flawed_step: int | None
    result: AuditResult
    latency_s: float

    @property
    def expected(self) -> Verdict:
        return Verdict.VALID if self.flawed_step is None else Verdict.INVALID

    @property
    def right(self) -> bool:
        """The verdict expected, and for a flawed trace its flawed step as the one root cause."""
        return right_verdict(self.result, self.flawed_step)


@dataclass(frozen=True, slots=True)
class ThroughputBench:
    runs: tuple[TraceRun, ...]
    workers: int
    nodes: int
    makespan_s: float
    gas: int

    @property
    def seats(self) -> int:
        return sum(run.result.seats for run in self.runs)

    @property
    def all_right(self) -> bool:
        return all(run.right for run in self.runs)

    def summary(self) -> dict[str, Any]:
        latency = Latency.of([run.latency_s for run in self.runs])
        segments = len(self.runs) * self.nodes
        return {
            "sessions": len(self.runs),
            "workers": self.workers,
            "nodes": self.nodes,
            "sessions_per_min": round(60 * len(self.runs) / self.makespan_s, 2),
            "segments_per_s": round(segments / self.makespan_s, 2),
            "p50_s": round(latency.median_s, 3),
            "p95_s": round(latency.p95_s, 3),
            "makespan_s": round(self.makespan_s, 3),
            "seats": self.seats,
            "gas_per_seat": self.gas // max(self.seats, 1),
            "right_verdicts": sum(run.right for run in self.runs),
            "all_right": self.all_right,
        }


async def run_throughput_benchmark(
    settings: Settings,
    *,
    sessions: int = DEFAULT_SESSIONS,
    workers: int = DEFAULT_WORKERS,
    nodes: int = DEFAULT_NODES,
    progress: Callable[[str], None] | None = None,
) -> ThroughputBench:
    """`sessions` running-total traces of `nodes` nodes audited at once (see the module docstring)."""
    if sessions < 1:
        raise ValueError(f"sessions must be at least 1, got {sessions}")
    # Every seat of every session may be open at once: each auditor's stake must back its share.
    capacity = seat_capacity(sessions * nodes, workers)
    say = progress or (lambda _message: None)
    rng = random.Random(_SEED)
    flaws = [None if index % 2 == 0 else rng.randint(1, nodes - 1) for index in range(sessions)]
    traces = [running_total_trace(nodes, rng, flawed_step=flaw) for flaw in flaws]
    with tempfile.TemporaryDirectory(prefix="trust-throughput-") as folder:
        say(f"starting the local network (anvil, IPFS, {workers} tier-1 workers)")
        specs = [WorkerSpec(1) for _ in range(workers)]
        async with LocalNetwork(Path(folder), specs, seat_capacity=capacity) as network:
            client = TrustClient(network.rpc_url, network.ipfs_url, account=network.provider, settings=network.settings)
            config = AuditConfig(auditor_tiers=[1], report_grace_ms=5_000)
            first_block = await head_block(network.rpc_url)
            finished = 0
            start = time.monotonic()

            async def audit(trace: Hdag) -> tuple[AuditResult, float]:
                nonlocal finished
                result = await client.audit_trace(trace, config)
                finished += 1
                say(f"{finished} of {sessions} audits done")
                return result, time.monotonic() - start

            say(f"{sessions} audits of {nodes} nodes submitted at once")
            done = await asyncio.gather(*(audit(trace) for trace in traces))
            makespan = time.monotonic() - start
            gas = await gas_since(network.rpc_url, first_block + 1)
    runs = tuple(
        TraceRun(index, flaw, result, latency)
        for index, (flaw, (result, latency)) in enumerate(zip(flaws, done, strict=True))
    )
    return ThroughputBench(runs, workers, nodes, makespan, gas)


def render(bench: ThroughputBench, console: Console) -> None:
    table = Table(title=f"{len(bench.runs)} audits of {bench.nodes} nodes at once, {bench.workers} tier-1 workers")
    for column in ("trace", "flawed step", "verdict", "right", "latency (s)", "seats"):
        table.add_column(column, justify="right" if column in ("latency (s)", "seats") else "left")
    for run in bench.runs:
        table.add_row(
            str(run.index),
            "-" if run.flawed_step is None else f"s{run.flawed_step}",
            str(run.result.verdict),
            "yes" if run.right else "NO",
            f"{run.latency_s:.2f}",
            str(run.result.seats),
        )
    console.print(table)
    summary = bench.summary()
    console.print(
        f"{summary['sessions_per_min']} sessions per minute, {summary['segments_per_s']} segments per second, "
        f"latency p50 {summary['p50_s']} s and p95 {summary['p95_s']} s, {summary['gas_per_seat']:,} gas per seat; "
        f"{summary['right_verdicts']} of {summary['sessions']} verdicts right"
    )
