"""`trust bench e2e`: a 10-node tier-1/2 trace audited end to end on a local network.

Three computational and three LLM auditors (SmolLM2 on the local model server unless
`Settings.auditor_llm` names an endpoint), each a `trust worker run` process with its own wallet; the
provider submits through the SDK. Every run audits the same trace (four arithmetic operations at
tier 1, the problem and the steps around them at tier 2) and records the verdict's Table-3 phases,
the seats of the session, and the gas of every transaction mined while it ran (the provider's, the
auditors' commits, reveals, reports and claims), divided by its seats.

The overhead is the total minus the time auditors spent evaluating. The provider knows that time
from the auditors' sealed reports (`AuditResult.overhead_s`, "as the provider sees it"); a seat whose
model gave no valid answer abstains and reports nothing, so its model time would count as protocol
time. The benchmark adds that time from the workers' own state files (`unreported_evaluation`).

Prints a table, then one JSON line `{"overhead_s", "provider_overhead_s", "unreported_evaluation_s",
"seats", "gas_per_seat", ...}` with the medians over the runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from trust.core.decompose.rules import from_steps
from trust.core.graphs.hdag import Hdag
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.sdk.client import TrustClient
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.result import PHASES, AuditResult
from trust.services.sdk.timings import covered_seconds
from trust.services.worker.store import SeatState, WorkerStore
from trust.settings import Settings

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = [
    "E2E_WORKERS",
    "E2eBench",
    "E2eRun",
    "e2e_trace",
    "gas_since",
    "head_block",
    "render",
    "run_e2e_benchmark",
    "unreported_evaluation",
]

E2E_WORKERS: tuple[WorkerSpec, ...] = tuple(WorkerSpec(tier) for tier in (1, 1, 1, 2, 2, 2))

PROBLEM = (
    "A shop sells notebooks at 4 dollars and pens at 1.5 dollars. Ana buys 3 notebooks and 2 pens and "
    "pays with a 20 dollar bill. How much change does she get?"
)
STEPS = ("3 * 4 = 12", "2 * 1.5 = 3", "12 + 3 = 15", "20 - 15 = 5", "She gets 5 dollars in change.")


def e2e_trace() -> Hdag:
    """Ten nodes: the problem, five steps (tier 2) and the four operations inside them (tier 1)."""
    return from_steps(PROBLEM, list(STEPS))


@dataclass(frozen=True, slots=True)
class E2eRun:
    result: AuditResult
    seats: int
    gas: int
    unreported_s: float = 0.0
    """Seconds in which only auditors that then abstained were evaluating (see `unreported_evaluation`)."""

    @property
    def gas_per_seat(self) -> int:
        return self.gas // max(self.seats, 1)

    @property
    def overhead_s(self) -> float:
        """The total minus every auditor's evaluation time, that of abstained seats included."""
        return max(0.0, self.result.overhead_s - self.unreported_s)


def unreported_evaluation(states: Iterable[Path], session_id: int) -> float:
    """Seconds of `session_id`'s audit in which some auditor was evaluating but none that reported.

    The provider counts as evaluation what the auditors' sealed reports state, and only a seat that
    revealed a vote reports. A seat whose model kept giving no valid answer abstains after its
    attempts: that time is the auditor's evaluation, but no report carries it, so the provider's
    overhead counts it (as vote aggregation). Its worker records it in its state (`states`, each a
    worker's SQLite file), from which this measures the time only abstained seats covered."""
    reported: list[tuple[float, float]] = []
    abstained: list[tuple[float, float]] = []
    for path in states:
        with WorkerStore.open_existing(path) as store:
            for seat in store.seats():
                if seat.session_id != session_id or seat.audit_started_at is None or seat.audit_finished_at is None:
                    continue
                span = (seat.audit_started_at, seat.audit_finished_at)
                (abstained if seat.state is SeatState.ABSTAINED else reported).append(span)
    return covered_seconds(reported + abstained) - covered_seconds(reported)


@dataclass(frozen=True, slots=True)
class E2eBench:
    runs: tuple[E2eRun, ...]
    model: str

    def summary(self) -> dict[str, Any]:
        def median(values: list[float]) -> float:
            return float(statistics.median(values))

        phases = {
            key: round(median([r.result.phases.seconds.get(key) or 0.0 for r in self.runs]), 4) for key, _, _ in PHASES
        }
        return {
            "overhead_s": round(median([r.overhead_s for r in self.runs]), 4),
            "provider_overhead_s": round(median([r.result.overhead_s for r in self.runs]), 4),
            "unreported_evaluation_s": round(median([r.unreported_s for r in self.runs]), 4),
            "seats": self.runs[0].seats,
            "gas_per_seat": int(median([r.gas_per_seat for r in self.runs])),
            "total_s": round(median([r.result.phases.total_s for r in self.runs]), 4),
            "runs": len(self.runs),
            "verdicts": [str(r.result.verdict) for r in self.runs],
            "phases": phases,
            "tier2_model": self.model,
        }


@contextlib.asynccontextmanager
async def _web3(rpc_url: str) -> AsyncIterator[AsyncWeb3]:
    """A plain web3 connection to `rpc_url` for the benchmarks' chain-wide reads, closed after."""
    from web3 import AsyncHTTPProvider, AsyncWeb3

    w3 = AsyncWeb3(AsyncHTTPProvider(rpc_url))
    try:
        yield w3
    finally:
        await w3.provider.disconnect()


async def head_block(rpc_url: str) -> int:
    """The number of the latest block."""
    async with _web3(rpc_url) as w3:
        return int(await w3.eth.block_number)


async def gas_since(rpc_url: str, first_block: int) -> int:
    """Gas of every transaction mined from block `first_block` to the latest block."""
    total = 0
    async with _web3(rpc_url) as w3:
        for number in range(first_block, int(await w3.eth.block_number) + 1):
            for tx_hash in (await w3.eth.get_block(number))["transactions"]:
                total += int((await w3.eth.get_transaction_receipt(tx_hash))["gasUsed"])  # type: ignore[arg-type]
    return total


async def _gas_between(rpc_url: str, first_tx: str) -> int:
    """Gas of every transaction mined from the block of `first_tx` to the latest block."""
    async with _web3(rpc_url) as w3:
        first = int((await w3.eth.get_transaction_receipt(first_tx))["blockNumber"])  # type: ignore[arg-type]
    return await gas_since(rpc_url, first)


async def run_e2e_benchmark(
    settings: Settings, *, runs: int = 3, progress: Callable[[str], None] | None = None
) -> E2eBench:
    """`runs` audits of `e2e_trace()` on one fresh local network (see the module docstring)."""
    say = progress or (lambda _message: None)
    with tempfile.TemporaryDirectory(prefix="trust-e2e-") as folder:
        say("starting the local network (anvil, IPFS, 6 workers)")
        llm = settings.auditor_llm if settings.auditor_llm.configured else None
        async with LocalNetwork(Path(folder), E2E_WORKERS, llm=llm) as network:
            model = network.llm.model if network.llm is not None else "-"
            client = TrustClient(network.rpc_url, network.ipfs_url, account=network.provider, settings=network.settings)
            done: list[E2eRun] = []
            for index in range(runs):
                say(f"audit {index + 1} of {runs}")
                result = await client.audit_trace(e2e_trace(), AuditConfig(report_grace_ms=5_000))
                gas = await _gas_between(network.rpc_url, result.transactions["create_session"][0])
                unreported = await asyncio.to_thread(
                    unreported_evaluation, network.worker_states.values(), result.session_id
                )
                done.append(E2eRun(result, result.seats, gas, unreported))
            return E2eBench(tuple(done), model)


def render(bench: E2eBench, console: Console) -> None:
    table = Table(title=f"End-to-end audit of a 10-node tier-1/2 trace (tier 2: {bench.model}), seconds")
    table.add_column("Component")
    for index in range(len(bench.runs)):
        table.add_column(f"run {index + 1}", justify="right")
    for key, row, _ in PHASES:
        values = [r.result.phases.seconds.get(key) for r in bench.runs]
        table.add_row(row, *("-" if v is None else f"{v:.3f}" for v in values))
    table.add_row("Total", *(f"{r.result.phases.total_s:.3f}" for r in bench.runs))
    table.add_row("Overhead as the provider sees it", *(f"{r.result.overhead_s:.3f}" for r in bench.runs))
    table.add_row("Evaluation no report states (abstained seats)", *(f"{r.unreported_s:.3f}" for r in bench.runs))
    table.add_row("Overhead (total minus evaluation)", *(f"{r.overhead_s:.3f}" for r in bench.runs))
    table.add_row("Seats", *(str(r.seats) for r in bench.runs))
    table.add_row("Gas per seat", *(f"{r.gas_per_seat:,}" for r in bench.runs))
    console.print(table)
