"""Throughput and latency of the auditor worker (`trust bench worker`; issue 6).

Two measurements, both printed as a table and then as one JSON line:

**The auditor alone** (no chain, no IPFS): seats per second one auditor answers, per tier, and the
latency of one audit by kind of segment. Tier 1 is `trust.auditors.tiers.computational_auditor` on a
fixed mix of real segments (`benchmark_segments`): exact arithmetic, the symbolic steps of the
paper's integration example (2.1.4), CHA2DS2-VASc rule steps in the paper's words (1.3) for the
grounding check, and Python code with unit tests for the sandbox, each kind with a sound and a
flawed segment. Every tier-1 verdict is checked against the one the segment must get, so a broken
auditor aborts the run instead of printing a figure. Tier 2 is `trust.auditors.tiers.llm_auditor`,
the configured model (`Settings.auditor_llm`), else the embedded SmolLM2 server, on the first
`tier2_segments` of the mix (its verdicts are counted, not checked: the embedded model is a weak
judge). Each tier gets an untimed warm-up, then two passes: one audit at a time (the latency
figures; "seats/s sequential" is audits over their summed time) and `audits_in_parallel` at a time,
as the worker runs them ("seats/s", audits over the pass's wall time).

**The whole worker** on a fresh Anvil and a local IPFS node, per (tier, N): the protocol deployed
with a committee of one for the tier, one auditor of that tier provisioned with stake for every
seat, blocks mined every `BLOCK_INTERVAL_SECONDS` once the setup is done (the windows are block
timestamps), and the real `trust.services.worker.daemon.Worker` in this process with its own wallet, X25519
key and SQLite state. A provider (devnet account 3) stores an HDAG of exactly N segments (a goal and
arithmetic steps, `pipeline_trace`), creates the session, waits for its randomness block, draws the
committees in one transaction and delivers the key envelopes (`trust.services.delivery`). Two sessions:

- backlog: the session is drawn and its keys delivered before the worker starts; the worker then
  finds N seats ready at once. `seats_per_s` = N / (last commit - first seat seen): what one worker
  sustains, with the poll interval stated.
- live: the worker runs while the provider draws and delivers. Per seat: draw to commit in chain
  time (the block timestamps of the draw and of the commit transaction; whole seconds), envelope
  published to commit in chain time (the part the worker owns: it cannot audit before the provider
  publishes the seat's key envelope, one transaction per segment), and in wall time from the draw's
  receipt to the worker's `committed_at`, split by the worker's own records into draw -> seen (its
  poll; may be slightly negative when its poll sees the block before the provider's client reads
  the receipt), seen -> voted (waiting for the keys, fetching, verifying, decrypting, auditing) and
  voted -> committed (the commit transaction). The provider's `deliver_keys` time is reported too.
  `live_seats_per_s` uses the same formula as the backlog, and is bounded by the key delivery.

With `through_finalize` the live session is followed until its first seat is revealed and
finalized on chain; those times are dominated by the windows (stated in the report), which start
at the draw. The windows are sized to hold both sessions (`window_seconds`), so no reveal or
finalization of the backlog session runs while the live one is measured.

Nothing here asserts a duration: the figures are printed, and the tests check only that a run is
complete and consistent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from eth_account.signers.local import LocalAccount
from rich.console import Console
from rich.table import Table

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import KeyEnvelope, Protocol, open_chain, protocol_artifacts
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.ipfs import IpfsNode
from trust.adapters.local.toolchain import Toolchain
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import Auditor, AuditRequest, Outcome, Verdict
from trust.core.decompose.rules import from_steps
from trust.core.graphs.hdag import Hdag, HdagNode, Level, Tier
from trust.errors import ParameterError, TrustError, VerificationError
from trust.lab.demo.clinical import GOAL as CHA2DS2_VASC_GOAL
from trust.lab.demo.clinical import STRATEGY as CHA2DS2_VASC_STRATEGY
from trust.lab.devnet import AuditorAccount, provision_auditors
from trust.services.delivery import SegmentProfile, deliver_keys, gather_bounded, store_trace
from trust.services.worker.daemon import Worker
from trust.services.worker.identity import AuditorIdentity
from trust.services.worker.keys import load_encryption_key
from trust.services.worker.store import SeatRecord, SeatState, WorkerStore
from trust.settings import TOKEN, GovernanceSettings, ProtocolSettings, Settings, WorkerSettings

__all__ = [
    "BLOCK_INTERVAL_SECONDS",
    "DEFAULT_PIPELINE_SEATS",
    "DEFAULT_REVEAL_WINDOW_SECONDS",
    "DEFAULT_TIER1_ROUNDS",
    "DEFAULT_TIER2_PIPELINE_SEATS",
    "DEFAULT_TIER2_SEGMENTS",
    "MIN_PIPELINE_SEATS",
    "AuditorBench",
    "BenchEnvironment",
    "BenchSegment",
    "Latency",
    "PipelineBench",
    "SeatTiming",
    "WorkerBench",
    "benchmark_segments",
    "pipeline_trace",
    "render",
    "run_pipeline",
    "run_worker_benchmark",
    "tier2_model",
    "time_auditor",
    "window_seconds",
]

DEFAULT_TIER1_ROUNDS = 10
"""Passes over the tier-1 mix: enough audits for a stable median and 95th percentile."""
DEFAULT_TIER2_SEGMENTS = 6
"""Tier-2 audits per pass: about 5 s each with the embedded model on 2 cores."""
DEFAULT_PIPELINE_SEATS = (10, 50)
"""Seats (segments, committee of one) per session of the tier-1 worker runs."""
DEFAULT_TIER2_PIPELINE_SEATS = 3
MIN_PIPELINE_SEATS = 2
DEFAULT_REVEAL_WINDOW_SECONDS = 30
BLOCK_INTERVAL_SECONDS = 1
"""Anvil mines a block this often once the setup is done: the chain's clock, as on a real chain."""

_WINDOW_BASE_SECONDS = 60
# Commit-window budget per seat and session: key delivery takes about one block per segment, and a
# tier-2 audit several seconds on a small machine. Twice over: backlog and live sessions share it.
_WINDOW_SECONDS_PER_SEAT = {Tier.COMPUTATIONAL: 1.5, Tier.LLM: 20.0}
_WAIT_GRACE_SECONDS = 30
"""How much longer than its window the benchmark waits for a step before it reports the run broken."""
_POLL_STORE_SECONDS = 0.05
"""How often the benchmark reads the worker's state (SQLite, in this process) while it waits."""
_PASSWORD = "benchmark-only"
_SCRYPT_N = 2**10
_PROVIDER_INDEX = 3
_DEPLOYER_INDEX = 0
_LOG_LIMIT = 100_000
_P95 = 0.95
_COMMITTED = (SeatState.COMMITTED, SeatState.REVEALED, SeatState.FINALIZED, SeatState.CLAIMED)
_NO_VOTE = (SeatState.ABSTAINED, SeatState.REJECTED, SeatState.MISSED, SeatState.FAILED)

_Progress = Callable[[str], None]


# ------------------------------------------------------------------------------------ segments


@dataclass(frozen=True, slots=True)
class BenchSegment:
    """One segment of the auditor-only mix: its kind (the tier-1 check that decides it) and the
    vote tier 1 must give it."""

    kind: str
    request: AuditRequest
    expected: Outcome


def _node(node_id: str, level: Level, content: str, domain: str = "math", stakes: str = "low") -> HdagNode:
    return HdagNode(node_id, level, content, domain=domain, stakes=stakes, tier=Tier.COMPUTATIONAL)


_CHF_STEP = "CHF rule: Extract from clinical note: “No heart failure” → Add 0 points. Score: 0"

_SOUND_CODE = """Sum the even numbers of a list.

```python
def sum_even(values):
    return sum(v for v in values if v % 2 == 0)
```

```python tests
assert sum_even([1, 2, 3, 4]) == 6
assert sum_even([]) == 0
assert sum_even([-2, 5]) == -2
```
"""
_FLAWED_CODE = _SOUND_CODE.replace("v % 2 == 0", "v % 2 == 1")


def benchmark_segments() -> tuple[BenchSegment, ...]:
    """The tier-1 mix, two to four segments per kind, sound and flawed, in a fixed order that
    interleaves the kinds (so the first few segments cover every kind)."""
    medical = partial(_node, domain="medical", stakes="high")
    goal = medical("goal", Level.GOAL, CHA2DS2_VASC_GOAL)
    strategy = medical("strategy", Level.STRATEGY, CHA2DS2_VASC_STRATEGY)
    chf = medical("chf", Level.STEP, _CHF_STEP)
    tactic = _node("v2", Level.TACTIC, "First application: u = x^2, dv = e^x dx")
    task = _node("task", Level.STEP, "Write sum_even(values), the sum of the even numbers of a list.", "code")
    operation = partial(_node, level=Level.OPERATION)
    by_kind: dict[str, list[tuple[AuditRequest, Outcome]]] = {
        "arithmetic": [
            (AuditRequest(operation("op1", content="17 * 23 = 391")), Outcome.PASS),
            (AuditRequest(operation("op2", content="17 * 23 = 409")), Outcome.FAIL),
            (AuditRequest(operation("op3", content="Combine: 391 + 144 = 535")), Outcome.PASS),
        ],
        "symbolic": [
            (AuditRequest(operation("v8", content="∫2e^x dx = 2e^x + C")), Outcome.PASS),
            (
                AuditRequest(
                    operation("v10", content="Verify by differentiation: d/dx (x^2 e^x - 2x e^x + 2e^x) = x^2 e^x")
                ),
                Outcome.PASS,
            ),
            (AuditRequest(_node("v4", Level.STEP, "du = 2x dx and v = e^x"), (tactic,)), Outcome.PASS),
            (AuditRequest(operation("v8x", content="∫2e^x dx = e^x + C")), Outcome.FAIL),
        ],
        "grounding": [
            (AuditRequest(chf, (goal, strategy)), Outcome.PASS),
            (
                AuditRequest(
                    medical(
                        "hypertension",
                        Level.STEP,
                        "Hypertension rule: Extract from clinical note: “Patient has hypertension (on BP "
                        "medications)” → Add +1 point. Score: 1",
                    ),
                    (goal, chf),
                ),
                Outcome.PASS,
            ),
            (
                AuditRequest(
                    medical(
                        "hypertension_flawed",
                        Level.STEP,
                        "Hypertension rule: Extract from patient note: “creatinine: 1.4 mg/dL.” Reasoning: Elevated "
                        "creatinine indicates kidney disease, which is associated with hypertension. Therefore, "
                        "hypertension is likely present → Add +1 point. Score: 1",
                    ),
                    (goal, chf),
                ),
                Outcome.FAIL,
            ),
            (
                AuditRequest(
                    medical(
                        "age_flawed",
                        Level.STEP,
                        "Age ≥75 rule: Extract age: 58 years. Compare with weight 85 kg: Is 85 ≥ 75? Yes, but "
                        "wait… check creatinine 1.4 instead: 1.4 < 75 → Add 0 points. Score: 0",
                    ),
                    (goal, strategy),
                ),
                Outcome.FAIL,
            ),
        ],
        "sandbox": [
            (AuditRequest(_node("code", Level.STEP, _SOUND_CODE, "code"), (task,)), Outcome.PASS),
            (AuditRequest(_node("code_flawed", Level.STEP, _FLAWED_CODE, "code"), (task,)), Outcome.FAIL),
        ],
    }
    mix: list[BenchSegment] = []
    for position in range(max(len(v) for v in by_kind.values())):
        for kind, entries in by_kind.items():
            if position < len(entries):
                request, expected = entries[position]
                mix.append(BenchSegment(kind, request, expected))
    return tuple(mix)


def pipeline_trace(seats: int) -> Hdag:
    """A valid HDAG of exactly `seats` segments, every one decidable by tier 1: a goal stating a
    product, then products (two segments each: the step and its operation, `from_steps`), and one
    symbolic step (one segment) when `seats` is even. A goal alone is no HDAG: at least 2."""
    if seats < MIN_PIPELINE_SEATS:
        raise ParameterError(
            f"a worker run needs at least {MIN_PIPELINE_SEATS} segments (a goal and a step), not {seats}"
        )
    products, symbolic = divmod(seats - 1, 2)
    steps = [f"{12 + i} * {23 + i} = {(12 + i) * (23 + i)}" for i in range(products)]
    steps += ["∫2e^x dx = 2e^x + C"] * symbolic
    graph = from_steps("Check the products, starting with 17 * 23 = 391.", steps, domain="math")
    if len(graph) != seats:  # from_steps no longer splits a product into a step and an operation
        raise AssertionError(f"pipeline_trace({seats}) built {len(graph)} segments, not {seats}")
    return graph


# ------------------------------------------------------------------------------------ statistics


@dataclass(frozen=True, slots=True)
class Latency:
    """Seconds of a set of durations: how many, median, 95th percentile (inclusive method) and max."""

    count: int
    median_s: float
    p95_s: float
    max_s: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        if not seconds:
            raise ValueError("no durations to summarize")
        ordered = sorted(seconds)
        p95 = ordered[0] if len(ordered) == 1 else statistics.quantiles(ordered, n=100, method="inclusive")[94]
        return cls(len(ordered), statistics.median(ordered), p95, ordered[-1])


# ------------------------------------------------------------------------------------ auditor alone


@dataclass(frozen=True, slots=True)
class AuditorBench:
    """One tier's auditor on the mix: latency per kind (sequential pass) and seats per second."""

    tier: int
    auditor: str
    model: str | None
    concurrency: int
    by_kind: tuple[tuple[str, Latency], ...]
    overall: Latency
    sequential_s: float
    parallel_s: float
    votes: tuple[tuple[str, int], ...]
    """Votes of the sequential pass by outcome ("pass", "fail", "not_applicable")."""

    @property
    def audits(self) -> int:
        return self.overall.count

    @property
    def seats_per_s_sequential(self) -> float:
        return self.audits / self.sequential_s

    @property
    def seats_per_s(self) -> float:
        """What the worker sustains: `concurrency` audits at a time, as `audits_in_parallel` allows."""
        return self.audits / self.parallel_s


async def _timed(auditor: Auditor, request: AuditRequest) -> tuple[float, Verdict]:
    start = time.perf_counter()
    verdict = await auditor.audit(request)
    return time.perf_counter() - start, verdict


def _check_verdict(segment: BenchSegment, verdict: Verdict) -> None:
    if verdict.vote is not segment.expected:
        raise VerificationError(
            f"the tier-1 auditor voted {verdict.vote.value} on the {segment.kind} segment "
            f"{segment.request.node_id!r}, which must get {segment.expected.value} ({verdict.critique}); "
            "a broken auditor's timings mean nothing, so no figure is printed"
        )


async def time_auditor(
    auditor: Auditor,
    segments: Sequence[BenchSegment],
    *,
    rounds: int = 1,
    concurrency: int = 1,
    check_verdicts: bool = True,
    warmup: int | None = None,
    model: str | None = None,
) -> AuditorBench:
    """Audits `segments` `rounds` times one at a time, then `rounds` times `concurrency` at a time.

    Before timing, the first `warmup` segments (every one when None) are audited once, untimed:
    SymPy's caches, the sandbox's interpreter and the model's prompt cache are warm in a running
    worker. With `check_verdicts` every verdict must be the segment's expected vote.
    """
    if rounds < 1 or concurrency < 1:
        raise ParameterError(f"rounds and concurrency must be at least 1, got {rounds} and {concurrency}")
    if not segments:
        raise ParameterError("no segments to audit")
    work = [s for _ in range(rounds) for s in segments]
    for segment in segments[: len(segments) if warmup is None else warmup]:
        await auditor.audit(segment.request)

    seconds_by_kind: dict[str, list[float]] = {}
    votes: dict[str, int] = {}
    sequential: list[float] = []
    for segment in work:
        seconds, verdict = await _timed(auditor, segment.request)
        if check_verdicts:
            _check_verdict(segment, verdict)
        sequential.append(seconds)
        seconds_by_kind.setdefault(segment.kind, []).append(seconds)
        votes[verdict.vote.value] = votes.get(verdict.vote.value, 0) + 1

    start = time.perf_counter()
    answers = await gather_bounded(concurrency, [partial(_timed, auditor, s.request) for s in work])
    parallel_s = time.perf_counter() - start
    if check_verdicts:
        for segment, (_, verdict) in zip(work, answers, strict=True):
            _check_verdict(segment, verdict)
    return AuditorBench(
        tier=int(auditor.tier),
        auditor=auditor.name,
        model=model,
        concurrency=concurrency,
        by_kind=tuple((kind, Latency.of(values)) for kind, values in seconds_by_kind.items()),
        overall=Latency.of(sequential),
        sequential_s=sum(sequential),
        parallel_s=parallel_s,
        votes=tuple(sorted(votes.items())),
    )


# ------------------------------------------------------------------------------------ the whole worker


@dataclass(frozen=True, slots=True)
class SeatTiming:
    """One seat of the live session: chain times are block timestamps (unix seconds, whole), wall
    times `time.time()` of this machine (Anvil stamps its blocks from the same clock)."""

    segment_id: int
    draw_chain: int
    envelope_chain: int
    commit_chain: int
    draw_wall: float
    """When the provider's client got the draw transaction's receipt."""
    drawn_at: float
    voted_at: float
    committed_at: float

    @property
    def draw_to_commit_chain_s(self) -> int:
        return self.commit_chain - self.draw_chain

    @property
    def envelope_to_commit_chain_s(self) -> int:
        return self.commit_chain - self.envelope_chain

    @property
    def draw_to_commit_s(self) -> float:
        return self.committed_at - self.draw_wall

    @property
    def draw_to_seen_s(self) -> float:
        return self.drawn_at - self.draw_wall

    @property
    def seen_to_voted_s(self) -> float:
        return self.voted_at - self.drawn_at

    @property
    def voted_to_committed_s(self) -> float:
        return self.committed_at - self.voted_at


@dataclass(frozen=True, slots=True)
class PipelineBench:
    """One worker of `tier` on a fresh chain: a backlog session and a live session of `seats` each."""

    tier: int
    seats: int
    commit_window_seconds: int
    reveal_window_seconds: int
    backlog_first_seen: float
    backlog_last_commit: float
    live: tuple[SeatTiming, ...]
    store_trace_s: float
    """The provider's sealing and upload of the live session's trace."""
    deliver_keys_s: float
    """The provider's key delivery of the live session (envelopes uploaded, one transaction per segment)."""
    first_revealed_s: float | None = None
    """From the live draw's receipt to the first seat revealed (None: not followed that far)."""
    first_finalized_s: float | None = None

    @property
    def backlog_s(self) -> float:
        return self.backlog_last_commit - self.backlog_first_seen

    @property
    def seats_per_s(self) -> float:
        """The backlog session: seats / (last commit - first seat seen)."""
        return self.seats / self.backlog_s

    @property
    def live_seats_per_s(self) -> float:
        span = max(s.committed_at for s in self.live) - min(s.drawn_at for s in self.live)
        return self.seats / span

    def latency(self, name: str) -> Latency:
        """`Latency` of a `SeatTiming` property over the live seats ("draw_to_commit_chain_s", ...)."""
        return Latency.of([float(getattr(s, name)) for s in self.live])


@dataclass(frozen=True, slots=True)
class BenchEnvironment:
    cpu_count: int
    poll_seconds: float
    audits_in_parallel: int
    block_interval_seconds: int
    tier2_model: str | None


@dataclass(frozen=True, slots=True)
class WorkerBench:
    """Everything `trust bench worker` measured, and where."""

    environment: BenchEnvironment
    auditors: tuple[AuditorBench, ...]
    pipelines: tuple[PipelineBench, ...]

    def summary(self) -> dict[str, float | int | str | None]:
        """The final JSON line: every figure, in seconds or seats per second."""
        env = self.environment
        figures: dict[str, float | int | str | None] = {
            "cpu_count": env.cpu_count,
            "poll_seconds": env.poll_seconds,
            "audits_in_parallel": env.audits_in_parallel,
            "block_interval_seconds": env.block_interval_seconds,
            "tier2_model": env.tier2_model,
        }
        for a in self.auditors:
            prefix = f"tier{a.tier}_audit"
            figures[f"{prefix}s"] = a.audits
            figures[f"{prefix}_seats_per_s"] = round(a.seats_per_s, 3)
            figures[f"{prefix}_seats_per_s_sequential"] = round(a.seats_per_s_sequential, 3)
            figures[f"{prefix}_median_s"] = round(a.overall.median_s, 5)
            figures[f"{prefix}_p95_s"] = round(a.overall.p95_s, 5)
            for kind, latency in a.by_kind:
                figures[f"tier{a.tier}_{kind}_median_s"] = round(latency.median_s, 5)
                figures[f"tier{a.tier}_{kind}_p95_s"] = round(latency.p95_s, 5)
        for p in self.pipelines:
            prefix = f"worker_tier{p.tier}_n{p.seats}"
            figures[f"{prefix}_seats"] = p.seats
            figures[f"{prefix}_seats_per_s"] = round(p.seats_per_s, 3)
            figures[f"{prefix}_live_seats_per_s"] = round(p.live_seats_per_s, 3)
            for name, key in _PIPELINE_LATENCIES:
                latency = p.latency(name)
                figures[f"{prefix}_{key}_median_s"] = round(latency.median_s, 3)
                figures[f"{prefix}_{key}_max_s"] = round(latency.max_s, 3)
            figures[f"{prefix}_deliver_keys_s"] = round(p.deliver_keys_s, 3)
            figures[f"{prefix}_commit_window_s"] = p.commit_window_seconds
            figures[f"{prefix}_first_revealed_s"] = _round(p.first_revealed_s)
            figures[f"{prefix}_first_finalized_s"] = _round(p.first_finalized_s)
        return figures


_PIPELINE_LATENCIES = (
    ("draw_to_commit_chain_s", "draw_to_commit_chain"),
    ("envelope_to_commit_chain_s", "envelope_to_commit_chain"),
    ("draw_to_commit_s", "draw_to_commit_wall"),
    ("draw_to_seen_s", "draw_to_seen"),
    ("seen_to_voted_s", "seen_to_voted"),
    ("voted_to_committed_s", "voted_to_committed"),
)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def window_seconds(tier: int, seats: int) -> int:
    """The default commit window of a worker run: long enough for both sessions' key delivery and
    audits, so that nothing is revealed while the live session is measured."""
    return math.ceil(_WINDOW_BASE_SECONDS + _WINDOW_SECONDS_PER_SEAT[Tier(tier)] * 2 * seats)


@dataclass(frozen=True, slots=True)
class _Submitted:
    session_id: int
    envelopes: tuple[KeyEnvelope, ...]
    draw_block: int
    draw_wall: float
    store_trace_s: float
    deliver_keys_s: float


class _Network:
    """A fresh chain with the protocol, one auditor of the tier, a provider, and the IPFS client."""

    def __init__(self, protocol: Protocol, kubo: KuboClient, provider: LocalAccount, auditor: AuditorAccount) -> None:
        self.protocol = protocol
        self.kubo = kubo
        self.provider = provider
        self.auditor = auditor

    async def submit(self, graph: Hdag, tier: int) -> _Submitted:
        """The provider's side of a session: store, register, draw, deliver the keys."""
        audit, chain = self.protocol.audit, self.protocol.chain
        start = time.perf_counter()
        stored = await store_trace(self.kubo, graph, profiles={n.id: SegmentProfile(tier) for n in graph.nodes()})
        stored_s = time.perf_counter() - start
        session_id, _ = await audit.create_session(self.provider, stored.root, stored.specs())
        randomness_block = (await audit.session(session_id)).randomness_block
        while await chain.block_number() <= randomness_block:
            await asyncio.sleep(BLOCK_INTERVAL_SECONDS / 4)
        drawn = await audit.assign_auditors(self.provider, session_id, range(len(stored.segments)))
        draw_wall = time.time()
        committees = tuple(audit.committees_in(drawn))
        seated = [c for c in committees if c.members == (self.auditor.address,)]
        if len(seated) != len(graph):
            raise TrustError(
                f"session {session_id}: {len(seated)} of {len(graph)} segments seated the benchmark's auditor "
                f"{self.auditor.address} alone ({len(committees)} committees drawn); the benchmark needs a "
                "committee of one per segment"
            )
        start = time.perf_counter()
        envelopes = await deliver_keys(self.protocol, self.kubo, self.provider, session_id, graph, stored, committees)
        deliver_s = time.perf_counter() - start
        return _Submitted(session_id, tuple(envelopes), drawn.block_number, draw_wall, stored_s, deliver_s)


@asynccontextmanager
async def _running(worker: Worker) -> AsyncIterator[asyncio.Task[None]]:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield task
    finally:
        stop.set()
        await task


async def _wait_for(
    worker: Worker,
    task: asyncio.Task[None],
    session_id: int,
    seats: int,
    done: Callable[[list[SeatRecord]], bool],
    what: str,
    timeout_s: float,
) -> list[SeatRecord]:
    """Reads the worker's store until `done` holds for the session's seats; a seat that ends without
    a vote, a worker that stops, or `timeout_s` is an error naming the seats' states."""
    deadline = time.monotonic() + timeout_s
    while True:
        mine = [s for s in worker.store.seats() if s.session_id == session_id]
        if len(mine) == seats and done(mine):
            return mine
        broken = [s for s in mine if s.state in _NO_VOTE]
        if task.done():
            task.result()  # raises the worker's error
            raise TrustError(f"the worker stopped before {what} in session {session_id}")
        if broken or time.monotonic() > deadline:
            states: dict[str, int] = {}
            for s in mine:
                states[s.state.value] = states.get(s.state.value, 0) + 1
            errors = "; ".join(f"{s.key}: {s.last_error}" for s in broken if s.last_error)
            reason = f"{len(broken)} seats ended without a vote" if broken else f"not done after {timeout_s:.0f} s"
            raise TrustError(
                f"the worker did not reach {what} in session {session_id}: {reason}; {len(mine)} of {seats} seats "
                f"seen, states {states}{f'; {errors}' if errors else ''}. See the worker's log above."
            )
        await asyncio.sleep(_POLL_STORE_SECONDS)


def _all_committed(seats: list[SeatRecord]) -> bool:
    return all(s.state in _COMMITTED for s in seats)


async def _block_timestamps(chain: ChainClient, blocks: set[int]) -> dict[int, int]:
    """Block number -> timestamp (unix seconds), over raw JSON-RPC."""
    stamps = {}
    for number in sorted(blocks):
        block = await chain.rpc("eth_getBlockByNumber", [hex(number), False])
        stamps[number] = int(block["timestamp"], 16)
    return stamps


async def _seat_timings(protocol: Protocol, submitted: _Submitted, seats: list[SeatRecord]) -> tuple[SeatTiming, ...]:
    chain = protocol.chain
    commit_blocks: dict[str, int] = {}
    for tx in sorted({s.commit_tx for s in seats if s.commit_tx}):
        receipt = await chain.rpc("eth_getTransactionReceipt", [tx])
        if receipt is None:
            raise TrustError(f"the worker recorded commit {tx}, which the chain does not know")
        commit_blocks[tx] = int(receipt["blockNumber"], 16)
    envelope_block = {e.segment_id: e.block_number for e in submitted.envelopes}
    stamps = await _block_timestamps(chain, {submitted.draw_block, *commit_blocks.values(), *envelope_block.values()})
    timings = []
    for seat in seats:
        if seat.commit_tx is None or seat.voted_at is None or seat.committed_at is None:
            raise TrustError(f"{seat.key} is {seat.state.value} but its commit is not recorded")
        timings.append(
            SeatTiming(
                segment_id=seat.segment_id,
                draw_chain=stamps[submitted.draw_block],
                envelope_chain=stamps[envelope_block[seat.segment_id]],
                commit_chain=stamps[commit_blocks[seat.commit_tx]],
                draw_wall=submitted.draw_wall,
                drawn_at=seat.drawn_at,
                voted_at=seat.voted_at,
                committed_at=seat.committed_at,
            )
        )
    return tuple(timings)


def _first_event(store: WorkerStore, session_id: int, event: str) -> float | None:
    times = [e.at for e in store.recent(_LOG_LIMIT) if e.event == event and e.seat and e.seat.session_id == session_id]
    return min(times) if times else None


async def run_pipeline(
    toolchain: Toolchain,
    artifacts: dict[str, Artifact],
    kubo: KuboClient,
    auditor: Auditor,
    settings: Settings,
    seats: int,
    *,
    poll_seconds: float,
    commit_window_seconds: int | None = None,
    reveal_window_seconds: int = DEFAULT_REVEAL_WINDOW_SECONDS,
    through_finalize: bool = False,
    progress: _Progress | None = None,
) -> PipelineBench:
    """One worker of `auditor.tier` on a fresh Anvil (see the module docstring)."""
    tier = int(auditor.tier)
    if tier not in (Tier.COMPUTATIONAL, Tier.LLM):
        raise ParameterError(f"the worker benchmark runs tier 1 or 2, not {tier}")
    say = progress or (lambda _: None)
    commit_window = commit_window_seconds or window_seconds(tier, seats)
    protocol_settings = ProtocolSettings(
        committee_size_tier1=1,
        committee_size_tier2=1,
        commit_window_seconds=commit_window,
        reveal_window_seconds=reveal_window_seconds,
        max_segments_per_session=seats,
    )
    # Every seat locks its penalty until it is settled: stake for both sessions' seats at once.
    stake = max(protocol_settings.min_stake(tier), 2 * seats * int(protocol_settings.penalty_per_seat_tokens * TOKEN))
    mnemonic = settings.devnet.mnemonic
    label = f"tier-{tier} worker, {seats} seats"
    with AnvilNode.start(toolchain, mnemonic=mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with open_chain(node.rpc_url, artifacts=artifacts) as chain:
            say(f"{label}: deploying on a fresh anvil")
            deployer = dev_account(mnemonic, _DEPLOYER_INDEX)
            deployment = await deploy_protocol(chain, deployer, protocol_settings, GovernanceSettings())
            protocol = Protocol.bind(chain, deployment)
            (account,) = await provision_auditors(
                protocol,
                deployer,
                [tier],
                Path(tmp) / "keystores",
                _PASSWORD,
                stake_for=lambda _index, _tier: stake,
                scrypt_n=_SCRYPT_N,
            )
            await chain.rpc("evm_setIntervalMining", [BLOCK_INTERVAL_SECONDS])
            network = _Network(protocol, kubo, dev_account(mnemonic, _PROVIDER_INDEX), account)
            wallet = load_keystore(Path(account.keystore), _PASSWORD)
            identity = AuditorIdentity(
                wallet, load_encryption_key(Path(account.encryption_key_file), _PASSWORD), "benchmark keystore"
            )
            # No backpressure: the backlog is the measurement, and the only auditor of the tier leaving
            # the draw would leave the live session without a committee.
            worker_settings = WorkerSettings.model_validate(
                settings.worker.model_dump()
                | {"poll_seconds": poll_seconds, "start_block": await chain.block_number(), "backpressure": False}
            )
            with WorkerStore(
                Path(tmp) / "worker.sqlite3",
                chain_id=chain.chain_id,
                audit_contract=protocol.audit.address,
                auditor=wallet.address,
            ) as store:
                worker = Worker(
                    protocol,
                    kubo,
                    identity,
                    auditor,
                    store,
                    worker_settings,
                    logger=logging.getLogger("trust.lab.bench"),
                )
                wait = commit_window + _WAIT_GRACE_SECONDS

                say(f"{label}: backlog session (keys delivered before the worker starts)")
                backlog = await network.submit(pipeline_trace(seats), tier)
                async with _running(worker) as task:
                    done = await _wait_for(worker, task, backlog.session_id, seats, _all_committed, "commits", wait)
                    backlog_first_seen = min(s.drawn_at for s in done)
                    backlog_last_commit = max(s.committed_at or 0.0 for s in done)

                    say(f"{label}: live session (the worker follows the draw and the key delivery)")
                    live = await network.submit(pipeline_trace(seats), tier)
                    done = await _wait_for(worker, task, live.session_id, seats, _all_committed, "commits", wait)
                    timings = await _seat_timings(protocol, live, done)

                    revealed = finalized = None
                    if through_finalize:
                        say(f"{label}: waiting for the windows ({commit_window} s to commit, then the reveal)")
                        await _wait_for(
                            worker,
                            task,
                            live.session_id,
                            seats,
                            lambda seats_: any(s.state in (SeatState.FINALIZED, SeatState.CLAIMED) for s in seats_),
                            "a finalized seat",
                            commit_window + reveal_window_seconds + 2 * _WAIT_GRACE_SECONDS,
                        )
                        revealed = _first_event(store, live.session_id, "revealed")
                        finalized = _first_event(store, live.session_id, "finalized")
    return PipelineBench(
        tier=tier,
        seats=seats,
        commit_window_seconds=commit_window,
        reveal_window_seconds=reveal_window_seconds,
        backlog_first_seen=backlog_first_seen,
        backlog_last_commit=backlog_last_commit,
        live=timings,
        store_trace_s=live.store_trace_s,
        deliver_keys_s=live.deliver_keys_s,
        first_revealed_s=None if revealed is None else revealed - live.draw_wall,
        first_finalized_s=None if finalized is None else finalized - live.draw_wall,
    )


# ------------------------------------------------------------------------------------ entry point


def tier2_model(settings: Settings) -> str:
    """The tier-2 judge `llm_auditor` uses: the configured endpoint's model, else the embedded one."""
    if settings.auditor_llm.configured:
        return f"{settings.auditor_llm.model} at {settings.auditor_llm.base_url}"
    from trust.adapters.local.llama import MODEL_ALIAS

    return f"{MODEL_ALIAS} (embedded llama.cpp server)"


async def run_worker_benchmark(
    settings: Settings,
    *,
    tier1_rounds: int = DEFAULT_TIER1_ROUNDS,
    tier2_segments: int = DEFAULT_TIER2_SEGMENTS,
    pipeline_seats: Sequence[int] = DEFAULT_PIPELINE_SEATS,
    tier2_pipeline_seats: int = 0,
    through_finalize: bool = False,
    poll_seconds: float | None = None,
    commit_window_seconds: int | None = None,
    reveal_window_seconds: int = DEFAULT_REVEAL_WINDOW_SECONDS,
    ipfs_api_url: str | None = None,
    progress: _Progress | None = None,
) -> WorkerBench:
    """Measures the auditors alone, then the worker on a fresh chain (see the module docstring).

    `tier2_segments` 0 skips tier 2 (no model is started unless `tier2_pipeline_seats` asks for a
    tier-2 worker run); `pipeline_seats` empty skips the tier-1 worker runs. `poll_seconds` is the
    worker's poll interval (`settings.worker.poll_seconds` when None). The IPFS node is a fresh local
    one in a temporary repo unless `ipfs_api_url` names a Kubo-compatible endpoint.
    """
    poll = settings.worker.poll_seconds if poll_seconds is None else poll_seconds
    WorkerSettings.model_validate(settings.worker.model_dump() | {"poll_seconds": poll})  # names a bad value
    for name, value in (("tier1_rounds", tier1_rounds), ("reveal_window_seconds", reveal_window_seconds)):
        if value < 1:
            raise ParameterError(f"{name} must be at least 1, got {value}")
    for name, value in (("tier2_segments", tier2_segments), ("tier2_pipeline_seats", tier2_pipeline_seats)):
        if value < 0:
            raise ParameterError(f"{name} must be 0 (skip) or more, got {value}")
    if any(n < MIN_PIPELINE_SEATS for n in pipeline_seats):
        raise ParameterError(f"pipeline_seats must be at least {MIN_PIPELINE_SEATS} each, got {list(pipeline_seats)}")
    if tier2_pipeline_seats == 1:
        raise ParameterError(f"tier2_pipeline_seats must be 0 (skip) or at least {MIN_PIPELINE_SEATS}, got 1")
    if commit_window_seconds is not None and commit_window_seconds < 1:
        raise ParameterError(f"commit_window_seconds must be at least 1, got {commit_window_seconds}")
    say = progress or (lambda _: None)
    concurrency = settings.worker.audits_in_parallel
    mix = benchmark_segments()
    wants_tier2 = tier2_segments > 0 or tier2_pipeline_seats > 0
    model = tier2_model(settings) if wants_tier2 else None

    async with AsyncExitStack() as stack:
        from trust.auditors.tiers import computational_auditor, llm_auditor

        tier1 = computational_auditor(settings.worker.sandbox)
        say(f"tier-1 auditor: {tier1_rounds} x {len(mix)} segments")
        auditors = [await time_auditor(tier1, mix, rounds=tier1_rounds, concurrency=concurrency)]
        tier2: Auditor | None = None
        if wants_tier2:
            say(f"tier-2 auditor: starting {model}")
            tier2 = await llm_auditor(settings, stack, logging.getLogger("trust.lab.bench"), share_server=False)
        if tier2 is not None and tier2_segments > 0:
            say(f"tier-2 auditor: {tier2_segments} segments on {model}")
            chosen = [mix[i % len(mix)] for i in range(tier2_segments)]
            auditors.append(
                await time_auditor(tier2, chosen, concurrency=concurrency, check_verdicts=False, warmup=1, model=model)
            )

        runs: list[tuple[Auditor, int]] = [(tier1, n) for n in pipeline_seats]
        if tier2 is not None and tier2_pipeline_seats > 0:
            runs.append((tier2, tier2_pipeline_seats))
        pipelines: list[PipelineBench] = []
        if runs:
            toolchain = Toolchain.discover()
            artifacts = protocol_artifacts()
            api_url = ipfs_api_url
            if api_url is None:
                say("starting a local IPFS node")
                repo = stack.enter_context(tempfile.TemporaryDirectory(prefix="trust-bench-ipfs-"))
                node = await asyncio.to_thread(IpfsNode.start, Path(repo), node_binary=settings.ipfs.node_binary)
                stack.enter_context(node)
                api_url = node.api_url
            kubo = await stack.enter_async_context(
                KuboClient.from_settings(settings.ipfs.model_copy(update={"api_url": api_url}))
            )
            for auditor, seats in runs:
                pipelines.append(
                    await run_pipeline(
                        toolchain,
                        artifacts,
                        kubo,
                        auditor,
                        settings,
                        seats,
                        poll_seconds=poll,
                        commit_window_seconds=commit_window_seconds,
                        reveal_window_seconds=reveal_window_seconds,
                        through_finalize=through_finalize,
                        progress=say,
                    )
                )
    environment = BenchEnvironment(
        cpu_count=os.cpu_count() or 1,
        poll_seconds=poll,
        audits_in_parallel=concurrency,
        block_interval_seconds=BLOCK_INTERVAL_SECONDS,
        tier2_model=model,
    )
    return WorkerBench(environment, tuple(auditors), tuple(pipelines))


# ------------------------------------------------------------------------------------ output


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


_PIPELINE_ROWS = (
    ("draw_to_commit_chain_s", "draw → commit, chain time"),
    ("envelope_to_commit_chain_s", "envelope published → commit, chain time"),
    ("draw_to_commit_s", "draw → commit, wall time"),
    ("draw_to_seen_s", "  draw → seen by the worker"),
    ("seen_to_voted_s", "  seen → voted (keys, fetch, audit)"),
    ("voted_to_committed_s", "  voted → committed"),
)


def render(bench: WorkerBench, console: Console) -> None:
    """Prints the auditor table and the worker table, then every figure as one JSON line (the last
    line of output)."""
    env = bench.environment
    if bench.auditors:
        table = Table(
            title=f"auditors alone ({env.cpu_count} CPUs): latency one audit at a time, seats/s",
            caption="\n".join(
                [
                    *(
                        f"tier {a.tier}: {a.model or a.auditor} ("
                        + ", ".join(f"{count} {vote}" for vote, count in a.votes)
                        + ")"
                        for a in bench.auditors
                    ),
                    f"seats/s: {env.audits_in_parallel} audits in parallel, as the worker runs them",
                ]
            ),
        )
        for column in ("tier", "kind", "audits", "median ms", "p95 ms", "max ms", "seats/s", "1 at a time"):
            table.add_column(column, justify="left" if column == "kind" else "right")
        for a in bench.auditors:
            for kind, latency in a.by_kind:
                table.add_row(
                    str(a.tier), kind, str(latency.count), _ms(latency.median_s), _ms(latency.p95_s), _ms(latency.max_s)
                )
            table.add_row(
                str(a.tier),
                "[bold]all[/bold]",
                str(a.audits),
                _ms(a.overall.median_s),
                _ms(a.overall.p95_s),
                _ms(a.overall.max_s),
                f"[bold]{a.seats_per_s:,.2f}[/bold]",
                f"{a.seats_per_s_sequential:,.2f}",
                end_section=True,
            )
        console.print(table)
    if bench.pipelines:
        table = Table(
            title=(
                f"the worker on anvil and IPFS: committee of one, poll every {env.poll_seconds:g} s, "
                f"a block every {env.block_interval_seconds} s; seconds, median / max over the live session's seats"
            )
        )
        table.add_column("")
        for p in bench.pipelines:
            table.add_column(f"tier {p.tier}, {p.seats} seats", justify="right")
        table.add_row("seats/s, backlog (keys ready)", *(f"{p.seats_per_s:,.2f}" for p in bench.pipelines))
        table.add_row("seats/s, live", *(f"{p.live_seats_per_s:,.2f}" for p in bench.pipelines))
        for name, label in _PIPELINE_ROWS:
            cells = []
            for p in bench.pipelines:
                latency = p.latency(name)
                cells.append(f"{latency.median_s:,.2f} / {latency.max_s:,.2f}")
            table.add_row(label, *cells)
        table.add_row("provider: store trace", *(_s(p.store_trace_s) for p in bench.pipelines))
        table.add_row("provider: deliver keys", *(_s(p.deliver_keys_s) for p in bench.pipelines))
        table.add_row(
            "windows: commit / reveal",
            *(f"{p.commit_window_seconds} / {p.reveal_window_seconds}" for p in bench.pipelines),
        )
        if any(p.first_revealed_s is not None for p in bench.pipelines):
            table.add_row("draw → first revealed", *(_s(p.first_revealed_s) for p in bench.pipelines))
            table.add_row("draw → first finalized", *(_s(p.first_finalized_s) for p in bench.pipelines))
        console.print(table)
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
