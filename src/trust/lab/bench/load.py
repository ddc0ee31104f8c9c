"""`trust bench load`: many sound traces at once through the gateway, against a small pool of tier-2
auditors on one machine, with the workers' backpressure on or off (issue 15's load).

A `LocalNetwork` runs `workers` tier-2 workers sharing the embedded model server (SmolLM2 unless
`Settings.auditor_llm` names an endpoint), three tier-1 workers for the traces' operations, Anvil
and the local IPFS node; every worker is a `trust worker run` process with `TRUST_WORKER__BACKPRESSURE`
set as asked. The gateway (`trust.api.app.create_app`, Anvil's account 4 as its wallet) is served
in this process by uvicorn. `traces` sound traces (a problem and two arithmetic steps each: the
goal and the steps go to tier 2, the two operations to tier 1) are POSTed to `/v1/audits` at once,
then each audit is polled until it is done or failed.

The protocol is the local network's (committees of three, a commit window of 300 s, two rounds)
with the randomness block `randomness_delay_blocks` after a session opens: draws read the weights
as of that block, so this is how long a worker has to leave a draw it could not audit in time (on
Ethereum the protocol's default of 2 blocks is 24 s; the local chain mines a block every 0.25 s
and one per transaction).

Printed per trace: its verdict, how its nodes ended and its latency from submission to result.
In all, read from the chain once every audit ended: the seats drawn per tier; the tier-2 seats
committed in time and those whose commit window closed without a commitment (missed), per honest
worker; stake forfeited by honest workers, for not revealing (a missed seat) and for voting against
the consensus (the embedded model is a weak judge: a split committee slashes its minority with
probability p_slash whatever the load); how many times each worker left and re-entered the draw
(`AvailabilityChanged`); and the segments left undetermined because no committee could be seated
(three `CommitteeUnavailable` draws). Ends with one JSON line. Every worker is honest: a missed
commit window is load, nothing else.

Nothing is asserted: the figures are printed (`tests/lab/bench` runs a small smoke of the command).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from rich.console import Console
from rich.table import Table

from trust.adapters.chain.protocol import DrawEventKind, Protocol
from trust.adapters.chain.wallets import dev_account
from trust.adapters.web import serve_in_loop
from trust.api.app import LOCAL_GATEWAY_INDEX, create_app
from trust.api.gateway.service import GatewayOptions
from trust.lab.localnet import LOCAL_PROTOCOL, LocalNetwork, WorkerSpec
from trust.settings import DevnetSettings, Settings

__all__ = [
    "DEFAULT_RANDOMNESS_DELAY_BLOCKS",
    "LoadBench",
    "TraceRun",
    "WorkerRun",
    "load_traces",
    "render",
    "run_load_benchmark",
]

DEFAULT_RANDOMNESS_DELAY_BLOCKS = 20
"""Blocks between a session's opening and its randomness block: about 5 s at 4 blocks a second,
fewer when transactions mine blocks of their own."""
TIER1_WORKERS = 3
"""One tier-1 committee (the local protocol seats three) for the traces' operations."""
_POLL_SECONDS = 1.0
_SESSION_TIMEOUT_SECONDS = 1800.0
"""The gateway's limit on a batch session: past the windows of a backlog that misses them."""
_DRAW_ATTEMPTS = 3
"""`ParamsLib.MAX_DRAW_ATTEMPTS`: the third failed draw leaves a segment undetermined."""
_NO_REVEAL = "no reveal"
_AGAINST = "vote against consensus"


def load_traces(count: int) -> list[dict[str, Any]]:
    """`count` distinct sound traces, each a problem and two arithmetic steps (the gateway's
    `{"problem", "steps"}` form): the goal and both steps go to tier 2, both operations to tier 1."""
    traces = []
    for index in range(count):
        notebooks, price = 2 + index % 7, 3 + index % 4
        cost = notebooks * price
        paid = cost + 5 + index
        traces.append(
            {
                "problem": (
                    f"Ana buys {notebooks} notebooks at {price} dollars each and pays with {paid} dollars. "
                    "How much change does she get?"
                ),
                "steps": [
                    f"{notebooks} * {price} = {cost} dollars for the notebooks.",
                    f"{paid} - {cost} = {paid - cost} dollars of change.",
                ],
            }
        )
    return traces


@dataclass(frozen=True, slots=True)
class TraceRun:
    """One submitted trace: how its audit ended and when (seconds from the submission)."""

    index: int
    audit_id: str
    status: str
    verdict: str | None
    outcomes: dict[str, int]
    latency_s: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class WorkerRun:
    """One honest worker's seats and draw changes."""

    address: str
    tier: int
    seats: int
    committed: int
    missed: int
    forfeited_no_reveal: int
    forfeited_against: int
    left_draw: int
    rejoined_draw: int


@dataclass(frozen=True, slots=True)
class LoadBench:
    backpressure: bool
    traces: tuple[TraceRun, ...]
    workers: tuple[WorkerRun, ...]
    sessions: int
    seats_by_tier: dict[int, int]
    undetermined_no_committee: dict[int, int]
    """Segments whose round found no committee in three draws, by the round's tier (tier 3: an
    undecided tier-2 round escalated to a tier this network runs no workers for)."""
    failed_draws: int
    randomness_delay_blocks: int
    commit_window_s: int
    model: str
    wall_s: float
    folder: str | None = None
    gateway_epoch_traces: int = 16

    def tier2(self) -> list[WorkerRun]:
        return [w for w in self.workers if w.tier == 2]

    def summary(self) -> dict[str, Any]:
        tier2 = self.tier2()
        verdicts = Counter(t.verdict or t.status for t in self.traces)
        return {
            "backpressure": self.backpressure,
            "traces": len(self.traces),
            "tier2_workers": len(tier2),
            "sessions": self.sessions,
            "verdicts": dict(sorted(verdicts.items())),
            "latency_s_max": round(max((t.latency_s for t in self.traces), default=0.0), 1),
            "latency_s_median": round(sorted(t.latency_s for t in self.traces)[len(self.traces) // 2], 1)
            if self.traces
            else 0.0,
            "tier2_seats_drawn": sum(w.seats for w in tier2),
            "tier2_seats_in_time": sum(w.committed for w in tier2),
            "tier2_missed_commit_windows": sum(w.missed for w in tier2),
            "missed_per_worker": {w.address: w.missed for w in tier2},
            "honest_seats_forfeited_no_reveal": sum(w.forfeited_no_reveal for w in self.workers),
            "honest_seats_forfeited_against_consensus": sum(w.forfeited_against for w in self.workers),
            "draw_exits": sum(w.left_draw for w in self.workers),
            "draw_returns": sum(w.rejoined_draw for w in self.workers),
            "segments_undetermined_no_committee": {
                str(tier): n for tier, n in sorted(self.undetermined_no_committee.items())
            },
            "failed_draws": self.failed_draws,
            "seats_by_tier": {str(tier): n for tier, n in sorted(self.seats_by_tier.items())},
            "randomness_delay_blocks": self.randomness_delay_blocks,
            "commit_window_s": self.commit_window_s,
            "tier2_model": self.model,
            "wall_s": round(self.wall_s, 1),
        }


def _serve(app: FastAPI) -> contextlib.AbstractAsyncContextManager[str]:
    """Serves `app` in this event loop on a free port; yields its URL."""
    return serve_in_loop(app, "the gateway")


def _outcomes(view: dict[str, Any]) -> tuple[str | None, dict[str, int]]:
    result = view.get("result") or {}
    nodes = result.get("nodes") or {}
    counts = Counter(str(node.get("outcome")) for node in nodes.values())
    return result.get("verdict"), dict(sorted(counts.items()))


async def _submit_all(url: str, traces: list[dict[str, Any]], say: Callable[[str], None]) -> list[TraceRun]:
    """POSTs every trace at once, then polls each audit until it is done or failed."""
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as http:
        config = {"auditor_tiers": ["computational", "llm"], "max_latency_ms": None}

        async def post(trace: dict[str, Any]) -> tuple[str, float]:
            sent = time.monotonic()
            response = await http.post("/v1/audits", json={"kind": "trace", "trace": trace, "config": config})
            if response.status_code != 202:
                raise RuntimeError(f"the gateway refused a trace: {response.status_code} {response.text}")
            return str(response.json()["id"]), sent

        accepted = await asyncio.gather(*(post(trace) for trace in traces))
        say(f"{len(accepted)} traces accepted; waiting for their verdicts")
        ended: dict[int, TraceRun] = {}
        while len(ended) < len(accepted):
            for index, (audit_id, sent) in enumerate(accepted):
                if index in ended:
                    continue
                try:
                    view = (await http.get(f"/v1/audits/{audit_id}")).json()
                except httpx.TransportError:
                    # A kept-alive connection the server closed as it was reused: ask again next round.
                    continue
                if view.get("status") in ("done", "failed"):
                    verdict, outcomes = _outcomes(view)
                    error = view.get("error")
                    ended[index] = TraceRun(
                        index,
                        audit_id,
                        str(view["status"]),
                        verdict,
                        outcomes,
                        time.monotonic() - sent,
                        None if not error else f"{error.get('code')}: {error.get('message')}",
                    )
                    say(f"{len(ended)} of {len(accepted)} audits ended")
            if len(ended) < len(accepted):
                await asyncio.sleep(_POLL_SECONDS)
        return [ended[i] for i in range(len(accepted))]


@dataclass
class _Tally:
    seats: int = 0
    committed: int = 0
    missed: int = 0
    forfeited: Counter[str] = field(default_factory=Counter)
    changes: Counter[bool] = field(default_factory=Counter)


async def _tally(
    protocol: Protocol, first_block: int, tiers: dict[str, int]
) -> tuple[dict[str, _Tally], dict[int, int], int, dict[int, int], int]:
    """Per auditor: seats, committed, missed, forfeits by reason, draw exits and returns; seats by
    tier; sessions; segments undetermined for want of a committee, by the tier of the round; failed
    draws."""
    audit, registry = protocol.audit, protocol.registry
    tally: dict[str, _Tally] = defaultdict(_Tally)
    by_tier: Counter[int] = Counter()
    committees = await audit.committees_drawn(first_block)
    for committee in committees:
        by_tier[committee.tier] += len(committee.members)
        seats = await asyncio.gather(
            *(
                audit.seat(committee.session_id, committee.segment_id, committee.round, index)
                for index in range(len(committee.members))
            )
        )
        for member, seat in zip(committee.members, seats, strict=True):
            entry = tally[member]
            entry.seats += 1
            if seat.committed:
                entry.committed += 1
            else:
                entry.missed += 1
    for auditor, _amount, reason, _block in await registry.forfeits(first_block):
        tally[auditor].forfeited[reason] += 1
    for auditor, available, _block in await registry.availability_changes(first_block):
        tally[auditor].changes[available] += 1
    events = await audit.draw_events(first_block)
    round_tiers = {
        (e.session_id, e.segment_id, e.round): e.tier
        for e in events
        if e.kind in (DrawEventKind.REGISTERED, DrawEventKind.ESCALATED)
    }
    failures = [e for e in events if e.kind is DrawEventKind.UNAVAILABLE]
    undetermined: Counter[int] = Counter(
        round_tiers.get((e.session_id, e.segment_id, e.round)) or 0 for e in failures if e.attempt >= _DRAW_ATTEMPTS
    )
    sessions = len({c.session_id for c in committees} | {e.session_id for e in events})
    for address in tiers:
        tally.setdefault(address, _Tally())
    return tally, dict(by_tier), sessions, dict(undetermined), len(failures)


async def run_load_benchmark(
    settings: Settings,
    *,
    traces: int = 10,
    workers: int = 8,
    backpressure: bool = True,
    randomness_delay_blocks: int = DEFAULT_RANDOMNESS_DELAY_BLOCKS,
    epoch_traces: int = 16,
    folder: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadBench:
    """One load run (see the module docstring); `folder` keeps the network's files (workers' logs)."""
    say = progress or (lambda _message: None)
    protocol_settings = LOCAL_PROTOCOL.model_copy(update={"randomness_delay_blocks": randomness_delay_blocks})
    specs = [WorkerSpec(1)] * TIER1_WORKERS + [WorkerSpec(2)] * workers
    llm = settings.auditor_llm if settings.auditor_llm.configured else None
    started = time.monotonic()
    with contextlib.ExitStack() as cleanup:
        if folder is None:
            folder = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="trust-load-")))
            kept = None
        else:
            kept = str(folder)
        say(
            f"starting a local network: {TIER1_WORKERS} tier-1 and {workers} tier-2 workers, backpressure "
            f"{'on' if backpressure else 'off'}"
        )
        network = LocalNetwork(
            folder,
            specs,
            protocol_settings=protocol_settings,
            llm=llm,
            worker_env={"TRUST_WORKER__BACKPRESSURE": "true" if backpressure else "false"},
        )
        async with network:
            model = network.llm.model if network.llm is not None else "-"
            account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
            options = GatewayOptions(
                max_traces_per_epoch=epoch_traces, session_timeout_seconds=_SESSION_TIMEOUT_SECONDS
            )
            app = create_app(
                account,
                network.settings,
                rpc_url=network.rpc_url,
                ipfs_url=network.ipfs_url,
                options=options,
                explorer=False,
            )
            async with Protocol.connect(network.settings, network.rpc_url, deployment=network.deployment) as protocol:
                chain = protocol.chain
                first_block = await chain.block_number()
                async with _serve(app) as url:
                    say(f"gateway at {url}; submitting {traces} traces at once")
                    runs = await _submit_all(url, load_traces(traces), say)
                say("reading seats, forfeits and draws from the chain")
                tiers = {a.address: a.tier for a in network.auditors}
                tally, by_tier, sessions, undetermined, failed = await _tally(protocol, first_block, tiers)
    worker_runs = tuple(
        WorkerRun(
            address=address,
            tier=tier,
            seats=tally[address].seats,
            committed=tally[address].committed,
            missed=tally[address].missed,
            forfeited_no_reveal=tally[address].forfeited[_NO_REVEAL],
            forfeited_against=tally[address].forfeited[_AGAINST],
            left_draw=tally[address].changes[False],
            rejoined_draw=tally[address].changes[True],
        )
        for address, tier in tiers.items()
    )
    return LoadBench(
        backpressure=backpressure,
        traces=tuple(runs),
        workers=worker_runs,
        sessions=sessions,
        seats_by_tier=by_tier,
        undetermined_no_committee=undetermined,
        failed_draws=failed,
        randomness_delay_blocks=randomness_delay_blocks,
        commit_window_s=protocol_settings.commit_window_seconds,
        model=model,
        wall_s=time.monotonic() - started,
        folder=kept,
        gateway_epoch_traces=epoch_traces,
    )


def render(bench: LoadBench, console: Console) -> None:
    mode = "on" if bench.backpressure else "off"
    table = Table(title=f"{len(bench.traces)} traces at once through the gateway, backpressure {mode}")
    for column in ("trace", "status", "verdict", "nodes", "latency s"):
        table.add_column(column, justify="right" if column == "latency s" else "left")
    for run in bench.traces:
        nodes = ", ".join(f"{n} {outcome}" for outcome, n in run.outcomes.items()) or (run.error or "-")
        table.add_row(str(run.index), run.status, run.verdict or "-", nodes, f"{run.latency_s:.1f}")
    console.print(table)
    workers = Table(title=f"honest workers (commit window {bench.commit_window_s} s, tier 2: {bench.model})")
    # Short headers: the table fits 80 columns. Forfeits: silent = no reveal, vote = against consensus.
    for column in ("auditor", "tier", "seats", "in time", "missed", "lost: silent", "lost: vote", "out", "in"):
        workers.add_column(column, justify="left" if column == "auditor" else "right")
    for w in sorted(bench.workers, key=lambda w: (w.tier, w.address)):
        workers.add_row(
            f"{w.address[:10]}…",
            str(w.tier),
            str(w.seats),
            str(w.committed),
            str(w.missed),
            str(w.forfeited_no_reveal),
            str(w.forfeited_against),
            str(w.left_draw),
            str(w.rejoined_draw),
        )
    console.print(workers)
    summary = bench.summary()
    console.print(
        f"tier-2 seats drawn {summary['tier2_seats_drawn']}, committed in time {summary['tier2_seats_in_time']}, "
        f"missed {summary['tier2_missed_commit_windows']}; honest seats forfeited: "
        f"{summary['honest_seats_forfeited_no_reveal']} for no reveal, "
        f"{summary['honest_seats_forfeited_against_consensus']} against consensus; "
        f"segments undetermined for want of a committee, by tier: "
        f"{summary['segments_undetermined_no_committee'] or 'none'} ({summary['failed_draws']} failed draws); "
        f"{bench.sessions} sessions; {bench.wall_s:.0f} s in all"
    )
    if bench.folder:
        console.print(f"network files (workers' logs) kept in {bench.folder}")
