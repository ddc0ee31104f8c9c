"""`trust bench scale`: one trace of each size end to end, to show how the protocol's cost grows.

A `LocalNetwork` runs `workers` tier-1 workers, Anvil and the local IPFS node. For each size, one
running-total trace (`running_total_trace`: every node decided exactly by the tier-1 arithmetic
check, so no model time enters the figures) with a wrong sum half-way is submitted through the SDK,
one size after the other, and its verdict checked: INVALID, with the flawed step as the one root
cause.

Per size: the overhead (the total minus the auditors' reported evaluation time, as `trust bench
e2e`), segments per second over the whole audit, the gas of every transaction mined while it ran
divided by its seats, and the bytes the IPFS node stored for it (the blocks of its sealed segments,
key envelopes and reports, as the node's repo holds them). Then the ratio of the largest size's
overhead to the next smaller one's (`ratio_1000_100` for the default sizes): linear growth gives
the ratio of the sizes, 10.

Traces past `SEGMENTS_PER_REGISTRATION` segments are registered, drawn and finalized over several
transactions (`trust.core.batching`); the figures include them. Ends with one JSON line
`{"sizes": {"10": {...}, ...}, "ratio_1000_100": ...}`; exits 1 when a verdict is wrong.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from trust.lab.bench.e2e import gas_since, head_block
from trust.lab.bench.throughput import right_verdict, running_total_trace, seat_capacity
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.sdk.client import TrustClient
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.progress import ProgressEvent
from trust.services.sdk.result import AuditResult

__all__ = ["DEFAULT_SIZES", "DEFAULT_WORKERS", "ScaleBench", "SizeRun", "render", "run_scale_benchmark"]

DEFAULT_SIZES: tuple[int, ...] = (10, 100, 1000)
DEFAULT_WORKERS = 12
MAX_NODES = 1024
"""The largest trace a session takes on the local network (`maxSegmentsPerSession`)."""
_SEED = 1_000


@dataclass(frozen=True, slots=True)
class SizeRun:
    """One trace of the benchmark: its size, where it was flawed, and what its audit cost."""

    nodes: int
    flawed_step: int
    result: AuditResult
    wall_s: float
    gas: int
    ipfs_bytes: int

    @property
    def right(self) -> bool:
        """INVALID, with the flawed step as the one root cause."""
        return right_verdict(self.result, self.flawed_step)

    def figures(self) -> dict[str, Any]:
        seats = max(self.result.seats, 1)
        return {
            "overhead_s": round(self.result.overhead_s, 3),
            "total_s": round(self.wall_s, 3),
            "segments_per_s": round(self.nodes / self.wall_s, 2),
            "seats": self.result.seats,
            "gas_per_seat": self.gas // seats,
            "ipfs_bytes": self.ipfs_bytes,
            "right": self.right,
        }


@dataclass(frozen=True, slots=True)
class ScaleBench:
    runs: tuple[SizeRun, ...]
    workers: int

    @property
    def all_right(self) -> bool:
        return all(run.right for run in self.runs)

    def ratio(self) -> tuple[str, float] | None:
        """("ratio_<largest>_<next>", the largest size's overhead over the next smaller one's), or
        None with a single size."""
        ordered = sorted(self.runs, key=lambda run: run.nodes)
        if len(ordered) < 2:
            return None
        small, large = ordered[-2], ordered[-1]
        return f"ratio_{large.nodes}_{small.nodes}", round(large.result.overhead_s / small.result.overhead_s, 2)

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "workers": self.workers,
            "sizes": {str(run.nodes): run.figures() for run in sorted(self.runs, key=lambda run: run.nodes)},
        }
        ratio = self.ratio()
        if ratio is not None:
            summary[ratio[0]] = ratio[1]
        return summary


def _ipfs_bytes(repo: Path) -> int:
    """Bytes of every block the local IPFS node stores (one file per block under `blocks/`)."""
    return sum(path.stat().st_size for path in (repo / "blocks").rglob("*") if path.is_file())


def _check_sizes(sizes: Sequence[int]) -> list[int]:
    if not sizes:
        raise ValueError("give at least one size")
    wrong = [n for n in sizes if not 2 <= n <= MAX_NODES]
    if wrong:
        raise ValueError(f"sizes must be 2 to {MAX_NODES} nodes (a session's maxSegmentsPerSession), got {wrong}")
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"each size once, got {list(sizes)}")
    return sorted(sizes)


async def run_scale_benchmark(
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    workers: int = DEFAULT_WORKERS,
    progress: Callable[[str], None] | None = None,
) -> ScaleBench:
    """One flawed running-total trace of each size in `sizes`, audited one after the other on one
    local network of `workers` tier-1 workers (see the module docstring)."""
    ordered = _check_sizes(sizes)
    say = progress or (lambda _message: None)
    rng = random.Random(_SEED)
    capacity = seat_capacity(ordered[-1], workers)
    runs: list[SizeRun] = []
    with tempfile.TemporaryDirectory(prefix="trust-scale-") as folder:
        say(f"starting the local network (anvil, IPFS, {workers} tier-1 workers)")
        specs = [WorkerSpec(1) for _ in range(workers)]
        async with LocalNetwork(Path(folder), specs, seat_capacity=capacity) as network:
            repo = Path(folder) / "ipfs"
            for nodes in ordered:
                flawed_step = nodes // 2
                trace = running_total_trace(nodes, rng, flawed_step=flawed_step)

                def show(event: ProgressEvent, nodes: int = nodes) -> None:
                    say(f"{nodes} nodes: {event.stage} {event.done}/{event.total} {event.message}".rstrip())

                client = TrustClient(
                    network.rpc_url,
                    network.ipfs_url,
                    account=network.provider,
                    settings=network.settings,
                    progress=show,
                )
                first_block = await head_block(network.rpc_url)
                stored_before = _ipfs_bytes(repo)
                start = time.monotonic()
                result = await client.audit_trace(trace, AuditConfig(auditor_tiers=[1], report_grace_ms=5_000))
                wall = time.monotonic() - start
                gas = await gas_since(network.rpc_url, first_block + 1)
                runs.append(SizeRun(nodes, flawed_step, result, wall, gas, _ipfs_bytes(repo) - stored_before))
    return ScaleBench(tuple(runs), workers)


def render(bench: ScaleBench, console: Console) -> None:
    table = Table(title=f"One flawed trace of each size, {bench.workers} tier-1 workers")
    for column in ("nodes", "verdict", "right", "overhead s", "total s", "segm/s", "seats", "gas/seat", "IPFS bytes"):
        table.add_column(column, justify="left" if column in ("verdict", "right") else "right")
    for run in sorted(bench.runs, key=lambda run: run.nodes):
        figures = run.figures()
        table.add_row(
            str(run.nodes),
            str(run.result.verdict),
            "yes" if run.right else "NO",
            f"{figures['overhead_s']:.2f}",
            f"{figures['total_s']:.2f}",
            f"{figures['segments_per_s']:.2f}",
            str(figures["seats"]),
            f"{figures['gas_per_seat']:,}",
            f"{figures['ipfs_bytes']:,}",
        )
    console.print(table)
    ratio = bench.ratio()
    if ratio is not None:
        name, value = ratio
        large, small = name.removeprefix("ratio_").split("_")
        console.print(
            f"overhead of {large} nodes / overhead of {small} nodes = {value} "
            f"(linear growth: {int(large) / int(small):g})"
        )
