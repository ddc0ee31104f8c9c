"""The auditor daemon: follows the chain, audits its seats, and commits, reveals and finalizes in time.

One `Worker` per wallet. Each `tick` reads the chain once and moves every seat one step:

1. scan: `CommitteeDrawn` events since the last scanned block give the seats this wallet holds;
   `KeyEnvelopePublished` events addressed to it give each seat's key envelope. Seats and the
   scanned block are stored in one durable transaction (`trust.services.worker.store`).
   The same blocks' draw events feed the worker's forecast of the seats still coming
   (`trust.services.worker.capacity.DrawPipeline`).
2. steer: the worker forecasts when a seat drawn now would be ready (its queue, its running audits,
   the seats expected from draws in progress, the measured seconds per audit) and, with
   `backpressure`, leaves the draw (`setAvailable(false)`) while that seat would miss its commit
   window or the auditor says it cannot work, and comes back once it can (docs/worker.md,
   "Capacity and backpressure"). An auditor that cannot work gets no new audits meanwhile.
3. audit (concurrently, up to `audits_in_parallel`, earliest commit deadline first): open the
   envelope with the worker's X25519 key, fetch and verify the segment and its parents from IPFS
   against the digests on chain, decrypt, and ask the tier's auditor. A verdict is stored before
   anything is sent, and the audit's duration feeds the estimate of seconds per audit.
4. commit: the salt is derived from the wallet (`trust.services.worker.keys.vote_salt`), the commitment is
   computed, and both are written durably before `commitVotes` is sent (one transaction for every
   seat ready in this tick).
5. reveal: once the commit window has closed on chain, `revealVotes` for every committed seat. A
   committed seat re-reads its segment's deadlines each tick: the window closes early, in the block
   where the committee's last seat commits, and the worker reveals in the next tick.
6. report: once a seat's vote is revealed, and its key grant carried the provider's reply key, its
   audit report (vote, score, critique, error type, expected value, evaluation times) is sealed to
   that key, stored on IPFS and announced with one `publishReports` per session and tick. Reports
   have their own retries and never hold up a vote.
7. finalize: the first worker to see a round's reveal window closed (or every seat revealed) calls
   `finalizeSegments`; then the trace is finalized and the fee distributed when the session is
   complete, and rewards are claimed when asked.

Time is the chain's: windows are compared with the latest block's timestamp, never the local clock.
Transient failures (RPC or IPFS down, a dropped transaction, a model endpoint failing) are retried
with exponential backoff up to `max_attempts`, then the seat is marked `failed`. A seat that cannot
read what the provider delivered votes fail at once, with a critique saying why (`_vote_unreadable`):
an envelope or a segment that does not verify or open, a node that is not a node, or content the
IPFS network still cannot find at the seat's last try. Every step is idempotent against the chain (it
re-reads the seat before acting), so a restart at any point, even with the state directory gone,
resumes where the chain says the seat is.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import httpx
from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from trust.adapters.chain.protocol import FINALIZE_DRAWS_PER_TRANSACTION, VOTES_PER_TRANSACTION, Protocol, draws_of
from trust.adapters.chain.types import Phase, ReportRef, SeatCommit, SeatReveal, SegmentStatus, SessionStatus
from trust.adapters.storage.blob_cache import BlobCache
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import Auditor, Verdict, audit_seat, request_from_plaintexts
from trust.core.amounts import eth_text
from trust.core.backoff import backoff_delay
from trust.core.batching import bounded_runs
from trust.core.privacy.envelopes import MAX_ENVELOPE_BYTES, KeyGrant, open_envelope
from trust.core.privacy.reports import MAX_EXPECTED_BYTES, AuditReport, clip_text, seal_report
from trust.errors import (
    ChainError,
    ContentNotFound,
    ContractReverted,
    GraphError,
    IpfsError,
    JudgmentError,
    LlmError,
    TrustError,
    VerificationError,
    excerpt,
)
from trust.services.delivery import open_granted
from trust.services.worker.adversary import Adversary, adversarial_verdict
from trust.services.worker.capacity import (
    AuditTimes,
    DrawPipeline,
    EdfSlots,
    Forecast,
    cap_by_free_units,
    expected_units,
    forecast,
    free_units,
    seat_probability,
    steer,
)
from trust.services.worker.identity import AuditorIdentity
from trust.services.worker.keys import vote_salt
from trust.services.worker.store import (
    AUDIT_SECONDS_KEY,
    AVAILABILITY_KEY,
    CAPACITY_KEY,
    SeatKey,
    SeatRecord,
    SeatState,
    WorkerStore,
)
from trust.settings import WorkerSettings

__all__ = ["TRANSIENT_ERRORS", "Worker", "claim_seat_rewards", "taken_out_by_worker"]

_RANDOMNESS_WINDOW_BLOCKS = 256
"""How long a randomness block can be read (`blockhash`): a draw later than that fixes a new block
(`RandomnessRefreshed`), so older pending segments are forgotten until then."""
_MAX_RANDOMNESS_DELAY_BLOCKS = 128
"""The largest `randomnessDelayBlocks` the protocol allows: how far before a draw its segments are
registered, so how far back a restarted worker reads to know the draws in progress."""

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (IpfsError, LlmError, httpx.HTTPError, OSError, TimeoutError)
"""Failures worth retrying. `ChainError` is transient too, except `ContractReverted` (the chain said no)."""

# Seats still moving through their round.
_ACTIVE = (SeatState.DRAWN, SeatState.VOTED, SeatState.COMMITTING, SeatState.COMMITTED, SeatState.REVEALED)
# Seats that ended their round without a vote: they keep their state and get an `outcome` once the
# round is settled on chain.
_SILENT = (SeatState.ABSTAINED, SeatState.REJECTED, SeatState.MISSED, SeatState.FAILED)
# Seats whose vote is revealed on chain: they may report.
_REVEALED = (SeatState.REVEALED, SeatState.FINALIZED, SeatState.CLAIMED)


_LOG_CRITIQUE_CHARS = 157
"""How much of a critique the "voted" log line quotes (with "...", 160 characters at most)."""

FINALIZE_STAGGER_SECONDS = 2
"""How much longer seat i of a committee waits than seat i - 1 before it finalizes the round or
settles the session: anyone may, the first call wins, and the others would pay for a revert."""


_DIGEST_CACHE_ENTRIES = 100_000
"""Content digests a worker keeps (about 150 bytes each) before it clears them and reads anew."""


_LATE_VOTE = "the vote was ready after the commit window closed"


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, ContractReverted):
        return False
    return isinstance(exc, (ChainError, *TRANSIENT_ERRORS))


def _granted(grant: KeyGrant | None) -> tuple[str | None, bytes | None]:
    """The node id and reply key of an opened key grant (none before the envelope opened)."""
    return (None, None) if grant is None else (grant.node_id, grant.reply_key)


def _clock(unix: float) -> str:
    return datetime.fromtimestamp(unix).strftime("%H:%M:%S")


@dataclass(frozen=True, slots=True)
class _ChainTime:
    block: int
    timestamp: int


class Worker:
    """The daemon of one auditor (see the module docstring). Build it, then `await run(stop)`."""

    def __init__(
        self,
        protocol: Protocol,
        kubo: KuboClient,
        identity: AuditorIdentity,
        auditor: Auditor,
        store: WorkerStore,
        settings: WorkerSettings,
        *,
        adversary: Adversary | None = None,
        auto_claim: bool = False,
        logger: logging.Logger | None = None,
        on_event: Callable[[SeatKey, str, str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.protocol = protocol
        self.kubo = kubo
        self.identity = identity
        self.auditor = auditor
        self.store = store
        self.settings = settings
        self.adversary = adversary
        self.auto_claim = auto_claim
        self.log = logger or logging.getLogger("trust.services.worker")
        self._clock = clock
        self._on_event = on_event
        self._address = to_checksum_address(identity.address)
        self._audits: dict[SeatKey, asyncio.Task[None]] = {}
        # Chain time after which a seat still without its key envelope next asks the chain whether
        # the provider delivered it (issue M3: an undelivered seat claims its release).
        self._delivery_checks: dict[SeatKey, float] = {}
        self._slots = EdfSlots(settings.audits_in_parallel)
        # Capacity and backpressure (see `_steer`).
        tier = int(auditor.tier)
        self._times = AuditTimes.from_json(
            store.meta_json(AUDIT_SECONDS_KEY),
            prior_seconds=settings.audit_seconds_prior(tier),
            quantile=settings.audit_quantile,
            keep=settings.audit_samples,
        )
        self._running: dict[SeatKey, float] = {}  # audits holding a slot, since when (local clock)
        self._pipeline = DrawPipeline(tier)
        self._pipeline_primed = False
        self._availability: dict[str, object] = dict(store.meta_json(AVAILABILITY_KEY) or {})
        self._in_draw: bool | None = None  # on chain, as of the last health check or own transaction
        self._operator_out = False  # unavailable on chain, and not by this worker's doing
        self._unavailable: str | None = None  # why the auditor says it cannot work now
        self._health_at = -math.inf
        self._switched_at = -math.inf
        self._stake = 0
        self._free_units: int | None = None  # units of P the unlocked stake backs, as of the health check
        self._commit_window_seconds: int | None = None
        self._weights_at: dict[int, tuple[int, int]] = {}  # randomness block -> (own weight, tier's)
        self._committee_sizes: dict[int, int] = {}  # session -> this tier's committee size
        self._outlook: Forecast | None = None
        self._chain_seen = (0.0, self._clock())  # (chain timestamp, local clock) of the last tick
        self._shown: tuple[object, ...] | None = None
        self._settled_sessions: set[int] = set()
        self._wake = asyncio.Event()  # set when an audit finishes: its vote is committed at once
        self._head: int | None = None  # the block the last tick read
        # Content digests registered on chain, by (session, segment): fixed at registration, and a
        # trace's parents repeat from seat to seat (`open_granted`).
        self._digests: dict[tuple[int, int], bytes] = {}
        self._blobs = BlobCache()
        """The segments' ciphertexts once fetched and checked: a trace's parents repeat from seat to
        seat (the goal is a parent of every step), so a worker holding many seats of one trace
        fetches each once, sparing the IPFS node that every auditor shares."""

    # ------------------------------------------------------------------------------------ loop

    async def run(self, stop: asyncio.Event) -> None:
        """Ticks until `stop` is set, then cancels audits in flight (their seats are resumed by the
        next run) and returns. A tick that fails transiently is logged and retried next time."""
        self.log.info(
            "worker %s (tier %d%s) following %s %s; state in %s",
            self._address,
            int(self.auditor.tier),
            f", adversary {self.adversary.value}" if self.adversary else "",
            self.protocol.chain.rpc_url,
            await self._starting_point(),
            self.store.path,
        )
        failures = 0
        try:
            while not stop.is_set():
                try:
                    await self.tick()
                    failures = 0
                except Exception as exc:
                    if not _transient(exc):
                        raise
                    failures += 1
                    delay = backoff_delay(
                        self.settings.backoff_seconds, min(failures, 16), self.settings.max_backoff_seconds
                    )
                    self.log.warning("chain or IPFS unavailable (%s); retrying in %.1f s", exc, delay)
                    await _sleep_or_stop(stop, delay)
                    continue
                await self._pause(stop, self.settings.poll_seconds)
        finally:
            await self.cancel_audits()
            self.log.info("worker %s stopped; %s%s", self._address, self._summary(), self._draw_summary())

    async def _starting_point(self) -> str:
        """Where the event scan starts, in words: the block after the stored one, the configured
        start block, or `log_blocks` before the head for a new state file."""
        last = self.store.last_block()
        if last is not None:
            return f"from block {last + 1} (the state file read through block {last})"
        if self.settings.start_block is not None:
            return f"from the start block {self.settings.start_block}"
        try:
            head = await self.protocol.chain.block_number()
        except Exception:  # the loop retries an unreachable chain; the line only says so
            return f"from {self.settings.log_blocks} blocks before the head (the chain is not answering yet)"
        first = max(0, head - self.settings.log_blocks + 1)
        return f"from block {first} (head {head} - log_blocks {self.settings.log_blocks}, a new state file)"

    def _draw_summary(self) -> str:
        if self._in_draw is False and self._availability.get("by_worker"):
            return (
                f"; left out of the draw by this worker ({self._availability.get('reason')}): "
                "the next run puts it back in once it can audit in time"
            )
        return ""

    async def _pause(self, stop: asyncio.Event, seconds: float) -> None:
        """Sleeps `seconds`, or less when the worker is stopped, an audit finished or (with
        `block_poll_seconds`) a new block came."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        every = self.settings.block_poll_seconds
        while not stop.is_set() and not self._wake.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await self._wait_for_either(stop, self._wake, min(remaining, every or remaining))
            if every is None or stop.is_set() or self._wake.is_set() or self._head is None:
                continue
            # Read here, never in a task cancelled when the pause ends: web3 takes a thread lock for
            # its HTTP session in an executor, and a request cancelled while waiting for that lock
            # leaves it held, so every later request of the process would wait forever.
            try:
                if await self.protocol.chain.block_number() > self._head:
                    break
            except Exception:  # the provider raises transport-specific errors; the tick reports them
                break
        self._wake.clear()

    @staticmethod
    async def _wait_for_either(first: asyncio.Event, second: asyncio.Event, seconds: float) -> None:
        waiters = [asyncio.create_task(first.wait()), asyncio.create_task(second.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def tick(self) -> None:
        """One pass over the chain and every open seat."""
        now = await self._chain_time()
        self._head = now.block
        # Never backwards: the latest block may be older than a time already reckoned from an
        # earlier one (blocks come every few seconds), and a deadline once passed stays passed.
        self._chain_seen = (max(float(now.timestamp), self._chain_now()), self._clock())
        await self._scan(now.block)
        await self._steer(now)
        self._start_audits(now)
        await self._follow_windows(now)
        await self._commit(now)
        await self._reveal(now)
        await self._report()
        await self._finalize(now)
        await self._settle(now)

    @property
    def audit_times(self) -> AuditTimes:
        """The measured durations of recent audits and the estimate they give."""
        return self._times

    @property
    def outlook(self) -> Forecast | None:
        """The forecast of the last tick (None before the first)."""
        return self._outlook

    @property
    def in_draw(self) -> bool | None:
        """Whether the auditor is in the committee draw, as the worker last read or set it."""
        return self._in_draw

    async def wait_idle(self) -> None:
        """Waits for the audits in flight (tests and benchmarks drive `tick` themselves)."""
        while self._audits:
            await asyncio.gather(*self._audits.values(), return_exceptions=True)

    def _summary(self) -> str:
        counts = self.store.counts()
        return ", ".join(f"{count} {state.value}" for state, count in sorted(counts.items())) or "no seats"

    async def cancel_audits(self) -> None:
        """Cancels the audits in flight (their seats are resumed by the next tick or run)."""
        tasks = list(self._audits.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._audits.clear()

    async def _chain_time(self) -> _ChainTime:
        try:
            block = await self.protocol.chain.w3.eth.get_block("latest")
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading the latest block from {self.protocol.chain.rpc_url} failed: {exc}") from exc
        return _ChainTime(int(block["number"]), int(block["timestamp"]))

    # ------------------------------------------------------------------------------------ scan

    async def _scan(self, head: int) -> None:
        last = self.store.last_block()
        if last is None:
            start = self.settings.start_block
            last = max(-1, head - self.settings.log_blocks) if start is None else start - 1
        if not self._pipeline_primed:
            await self._prime_pipeline(last + 1)
        while last < head:
            end = min(head, last + self.settings.log_blocks)
            # The committees drawn and the draws announced come in one request, the envelopes in
            # another (the key contract's), both at once.
            (drawn, draw_events), envelopes = await asyncio.gather(
                self.protocol.audit.draw_log(last + 1, to_block=end),
                self.protocol.segment_keys.envelopes_for(self._address, from_block=last + 1, to_block=end),
            )
            self._pipeline.apply(draw_events, [(c.session_id, c.segment_id, c.round) for c in drawn])
            mine = [c for c in drawn if self._address in c.members]
            # The event's deadlines are those of the draw; a window that closed early since (every
            # seat committed: a scan that catches up after a restart) is read from the segment,
            # which keeps its round's deadlines until the next round is drawn.
            infos = await self.protocol.audit.segments([(c.session_id, c.segment_id) for c in mine])
            seats = []
            for committee, info in zip(mine, infos, strict=True):
                current = info.round == committee.round and info.commit_deadline != 0
                seats.append(
                    SeatRecord(
                        session_id=committee.session_id,
                        segment_id=committee.segment_id,
                        round=committee.round,
                        seat_index=committee.members.index(self._address),
                        tier=committee.tier,
                        commit_deadline=info.commit_deadline if current else committee.commit_deadline,
                        reveal_deadline=info.reveal_deadline if current else committee.reveal_deadline,
                        drawn_block=committee.block_number,
                        drawn_at=self._clock(),
                        state=SeatState.DRAWN,
                    )
                )
            for seat in self.store.add_seats(seats, through_block=end):
                self._say(
                    seat.key,
                    "drawn",
                    f"seat {seat.seat_index} in tier {seat.tier}; commit by {_clock(seat.commit_deadline)}, "
                    f"reveal by {_clock(seat.reveal_deadline)}",
                )
            with self.store.transaction():  # one fsync for all of them
                for envelope in envelopes:
                    key = SeatKey(envelope.session_id, envelope.segment_id, envelope.round)
                    try:
                        # A later publication for the seat replaces the earlier one.
                        self.store.update(key, envelope_cid=envelope.envelope_cid)
                    except KeyError:
                        self.log.warning("%s: an envelope for a seat this worker never saw drawn; ignored", key)
            last = end

    async def _prime_pipeline(self, first_block: int) -> None:
        """The draws in progress before `first_block` (a restart): the segments registered, escalated
        or redrawn recently enough to be drawn still, and the committees drawn since."""
        lookback = self.settings.pipeline_blocks + _MAX_RANDOMNESS_DELAY_BLOCKS
        start = max(0, first_block - lookback)
        if start < first_block:
            drawn, draw_events = await self.protocol.audit.draw_log(start, to_block=first_block - 1)
            self._pipeline.apply(draw_events, [(c.session_id, c.segment_id, c.round) for c in drawn])
        self._pipeline_primed = True

    # ------------------------------------------------------------------------------------ steer

    async def _steer(self, now: _ChainTime) -> None:
        """Forecasts the worker's capacity and, with `backpressure`, takes the auditor out of the
        draw or puts it back (see `trust.services.worker.capacity`). The auditor's health, the on-chain
        availability and the commit window are read every `health_check_seconds`; the forecast
        every tick, since a draw whose randomness block is near must be left before that block."""
        wall = self._clock()
        if wall - self._health_at >= self.settings.health_check_seconds:
            self._health_at = wall
            await self._check_health()
        outlook = await self._forecast(now)
        self._outlook = outlook
        try:
            await self._backpressure(outlook, wall)
        finally:
            self._show(outlook)

    async def _backpressure(self, outlook: Forecast, wall: float) -> None:
        if not self.settings.backpressure or self._in_draw is None or self._operator_out:
            return
        decision = steer(
            in_draw=self._in_draw,
            outlook=outlook,
            out_load=self.settings.backpressure_out_load,
            in_load=self.settings.backpressure_in_load,
            unavailable=self._unavailable,
        )
        if decision.in_draw == self._in_draw:
            return
        if decision.in_draw:
            # Back in only what this worker took out, and not right after a switch: out is urgent
            # (a draw may be near), in can wait a health check.
            if not self._availability.get("by_worker") or wall - self._switched_at < self.settings.health_check_seconds:
                return
            reason = (
                f"a seat drawn now would be ready in {outlook.backlog_seconds:.0f} s of the "
                f"{outlook.window_seconds:.0f} s its commit window leaves"
                if outlook.busy
                else "nothing queued, running or expected"
            )
            await self._set_in_draw(True, reason)
        else:
            await self._set_in_draw(False, decision.reason or "")

    async def _check_health(self) -> None:
        """The auditor's own word on whether it can work, the auditor's registration (availability,
        stake) and the commit window, and who took the auditor out of the draw when it is out."""
        try:
            reason = await self.auditor.unavailable()
        except Exception as exc:  # a health check that breaks says the auditor cannot work
            reason = f"its health check failed: {type(exc).__name__}: {exc}"
        if reason != self._unavailable:
            if reason is not None:
                self.store.log(None, "auditor unavailable", reason)
                self.log.warning("the auditor cannot take seats: %s; no new audits until it can", reason)
            elif self._unavailable is not None:
                self.store.log(None, "auditor available", "the auditor can take seats again")
                self.log.info("the auditor can take seats again")
            self._unavailable = reason
        info = await self.protocol.registry.auditor(self._address)
        self._stake = info.stake
        params = await self.protocol.params.params()
        # Every committee draw the auditor wins locks P (a seat locks P per unit): the draws still
        # to come can seat it only while its unlocked stake backs one more unit.
        self._free_units = free_units(info.stake, info.locked, int(params["penaltyPerSeat"]))
        self._commit_window_seconds = int(params["commitWindowSeconds"])
        # `trust worker pause` / `resume` record the operator's choice in the state file while the
        # worker runs: read it again, so that backpressure never puts back what the operator took out.
        self._availability = dict(self.store.meta_json(AVAILABILITY_KEY) or {})
        self._note_chain_availability(info.available)

    def _note_chain_availability(self, available: bool) -> None:
        """Reconciles what the chain says with what this worker did: an auditor out of the draw that
        this worker did not take out is the operator's choice, and stays out."""
        by_worker = bool(self._availability.get("by_worker"))
        if available:
            self._operator_out = False
            if by_worker:
                # This worker's own transactions keep the record in step, so someone else did this
                # (or the worker stopped before its `setAvailable(false)` landed).
                detail = "available on chain while this worker held it out (set by its owner?); the worker steers it"
                self._record_availability(by_worker=False, reason=None)
                self.store.log(None, "back in the draw", detail)
                self.log.info("back in the draw: %s", detail)
        elif not by_worker and not self._operator_out:
            self._operator_out = True
            detail = (
                "the auditor was set unavailable on chain, not by this worker (by its operator?): "
                "it stays out of the draw until it is set available again"
            )
            self.store.log(None, "out of the draw", detail)
            self.log.warning("out of the draw: %s", detail)
        self._in_draw = available

    async def _set_in_draw(self, available: bool, reason: str) -> None:
        """Sends `setAvailable(available)`. The record that the worker took the auditor out is
        written before the transaction, so that a worker stopped in between knows at its next start
        that the chain's "unavailable" is its own to undo."""
        if not available:
            self._record_availability(by_worker=True, reason=reason)
        try:
            sent = await self.protocol.registry.set_available(self.identity.account, available)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.log.warning("setAvailable(%s) failed (%s); trying again next tick", str(available).lower(), exc)
            if not available:
                self._record_availability(by_worker=False, reason=None)
            return
        self._in_draw = available
        self._switched_at = self._clock()
        counts = self._availability
        if available:
            self._record_availability(by_worker=False, reason=None, ins=int(str(counts.get("ins", 0))) + 1)
            event, detail = "back in the draw", f"{reason} (setAvailable(true) in {sent.tx_hash})"
        else:
            self._record_availability(by_worker=True, reason=reason, outs=int(str(counts.get("outs", 0))) + 1)
            event, detail = "out of the draw", f"{reason} (setAvailable(false) in {sent.tx_hash})"
        self.store.log(None, event, detail)
        self.log.info("%s: %s", event, detail)

    def _record_availability(self, *, by_worker: bool, reason: str | None, **counts: int) -> None:
        record = dict(self._availability)
        record.update(by_worker=by_worker, reason=reason, since=self._clock(), **counts)
        self._availability = record
        self.store.set_meta_json(AVAILABILITY_KEY, record)

    async def _forecast(self, now: _ChainTime) -> Forecast:
        wall = self._clock()
        margin = self.settings.commit_margin_seconds
        deadlines = [
            s.commit_deadline - margin
            for s in self.store.seats([SeatState.DRAWN])
            if s.key not in self._running and s.commit_deadline > now.timestamp
        ]
        expected, upcoming, units = await self._expected_seats(now.block)
        if self._free_units is not None:
            expected, upcoming = cap_by_free_units(expected, upcoming, self._free_units)
            units = min(units, float(self._free_units))
        window = self._commit_window_seconds or 0
        return forecast(
            now=float(now.timestamp),
            deadlines=deadlines,
            running_ages=[wall - since for since in self._running.values()],
            times=self._times,
            parallel=self.settings.audits_in_parallel,
            window_seconds=max(window - margin, 0.0),
            expected_seats=expected,
            upcoming_seats=upcoming,
            expected_units=units,
            free_units=self._free_units,
        )

    async def _expected_seats(self, head: int) -> tuple[float, float, float]:
        """Seats expected from draws whose randomness block is mined (by this auditor's weight at
        that block), from the next draw still ahead if the auditor is in the draw at its block, and
        the units of P those seats are expected to lock (see `trust.services.worker.capacity`)."""
        tier = int(self.auditor.tier)
        # Keep what a worker running for days holds to the draws that can still count.
        oldest = head - max(self.settings.pipeline_blocks, _RANDOMNESS_WINDOW_BLOCKS)
        self._pipeline.prune(oldest)
        self._weights_at = {block: w for block, w in self._weights_at.items() if block >= oldest}
        live = self._pipeline.sessions()
        self._committee_sizes = {sid: k for sid, k in self._committee_sizes.items() if sid in live}
        missing = self._pipeline.sessions_without_size() - set(self._committee_sizes)
        for session_id in sorted(missing):
            params = await self.protocol.audit.session_params(session_id)
            self._committee_sizes[session_id] = int(params[f"committeeSizeTier{tier}"])
        self._pipeline.set_sizes(self._committee_sizes)
        fixed = self._pipeline.fixed(head, self.settings.pipeline_blocks)
        ahead = self._pipeline.next_ahead(head)
        if not fixed and not ahead:
            return 0.0, 0.0, 0.0
        registry = self.protocol.registry
        eligible_now = await registry.eligible_stake(tier)
        mine_now = self._stake if self._in_draw else 0
        # Seats of draws this auditor would be in if it were in the draw at their block.
        eligible_in = eligible_now - mine_now + self._stake

        def if_in(committee_size: int) -> tuple[float, float]:
            return (
                seat_probability(committee_size, self._stake, eligible_in),
                expected_units(committee_size, self._stake, eligible_in),
            )

        expected = upcoming = units = 0.0
        for p in ahead:
            seats, won = if_in(p.committee_size or 0)
            upcoming += seats
            units += won
        for pending in fixed:
            block = pending.randomness_block
            assert block is not None and pending.committee_size is not None
            if block < head:
                if block not in self._weights_at:
                    self._weights_at[block] = (
                        await registry.draw_weight_at(self._address, block),
                        await registry.eligible_stake_at(tier, block),
                    )
                weight, eligible = self._weights_at[block]
            else:  # mined in the latest block: the weights now are the weights then
                weight, eligible = mine_now, eligible_now
            if weight > 0:
                expected += seat_probability(pending.committee_size, weight, eligible)
                units += expected_units(pending.committee_size, weight, eligible)
            else:
                # Out of the draw at that block: drawn without it, the segment leaves; but when the
                # tier is short (everyone left), the draw fails and comes back with a new block,
                # which it would join if it were back in. Counted as coming, so that a worker does
                # not slip back in between the attempts of the draw it left.
                seats, won = if_in(pending.committee_size)
                upcoming += seats
                units += won
        return expected, upcoming, units

    def _show(self, outlook: Forecast) -> None:
        """Stores the forecast and the draw state for `trust worker status` when they changed."""
        shown = (
            outlook.queued,
            outlook.running,
            round(outlook.expected_seats, 1),
            round(outlook.upcoming_seats, 1),
            round(outlook.expected_units, 1),
            outlook.free_units,
            round(outlook.backlog_seconds),
            round(outlook.audit_seconds, 1),
            outlook.late,
            self._in_draw,
            self._operator_out,
            self._unavailable,
        )
        if shown == self._shown:
            return
        self._shown = shown
        self.store.set_meta_json(
            CAPACITY_KEY,
            outlook.to_json()
            | {
                "samples": len(self._times.samples),
                "in_draw": self._in_draw,
                "operator_out": self._operator_out,
                "auditor_unavailable": self._unavailable,
                "backpressure": self.settings.backpressure,
                "at": self._clock(),
            },
            durable=False,
        )

    # ------------------------------------------------------------------------------------ audit

    def _start_audits(self, now: _ChainTime) -> None:
        wall = self._clock()
        # Earliest commit deadline first: the slots (`EdfSlots`) serve waiters by the same order.
        drawn = sorted(self.store.seats([SeatState.DRAWN]), key=lambda s: (s.commit_deadline, s.key))
        chain_now = self._chain_now()
        for seat in drawn:
            if seat.key in self._audits or seat.next_try > wall:
                continue
            if chain_now >= seat.commit_deadline:
                self._audits[seat.key] = asyncio.create_task(self._recover(seat))
                continue
            if self._unavailable is not None:
                continue  # held until the auditor can work again (or its window closes: `_recover`)
            if seat.envelope_cid is None and self.adversary not in (Adversary.RANDOM, Adversary.COPY):
                if self._delivery_checks.get(seat.key, 0.0) <= chain_now:
                    self._audits[seat.key] = asyncio.create_task(self._claim_if_undelivered(seat))
                elif now.timestamp + self.settings.commit_margin_seconds >= seat.commit_deadline:
                    self._finish(
                        seat.key,
                        SeatState.ABSTAINED,
                        "abstained",
                        "no key envelope reached this worker before the commit window closed, although the "
                        "provider published one on chain in time",
                    )
                continue
            self._audits[seat.key] = asyncio.create_task(self._audit(seat))

    async def _claim_if_undelivered(self, seat: SeatRecord) -> None:
        """A seat without its key envelope: once the round's delivery deadline passed with no
        delivery recorded on chain, `claimUndelivered` releases the seat's stake (nothing forfeited)
        and credits R out of the provider's fee (issue M3). Before the deadline, or when the chain
        says the envelopes were delivered (their event is on its way), it only notes when to look
        again."""
        try:
            await self._claim_undelivered(seat)
        except (ChainError, ContractReverted) as exc:
            # Looked at again in a few seconds; the commit margin still ends the wait.
            self._delivery_checks[seat.key] = self._chain_now() + 5.0
            self.log.warning("%s: claiming the undelivered seat failed: %s", seat.key, exc)
        finally:
            self._audits.pop(seat.key, None)
            self._wake.set()

    async def _abstain(
        self, seat: SeatRecord, detail: str, node_id: str | None, *, evaluated: tuple[float, float]
    ) -> None:
        """Records that the seat will not vote and says so on chain (`abstain`): the seat is settled
        as silent either way, but the others need not wait out the commit and reveal windows for
        it. A refused or failed abstention is only logged: the seat stays silent all the same.
        `evaluated` bounds the evaluation that ended without a judgment: no report carries it to the
        provider, so the worker's state is the only record of that time (`trust bench e2e` reads it)."""
        try:
            await self.protocol.audit.abstain(self.identity.account, seat.session_id, seat.segment_id, seat.seat_index)
        except (ChainError, ContractReverted) as exc:
            detail += f" (the abstention was not recorded on chain: {exc})"
        started_at, finished_at = evaluated
        self._finish(
            seat.key,
            SeatState.ABSTAINED,
            "abstained",
            detail,
            node_id=node_id,
            audit_started_at=started_at,
            audit_finished_at=finished_at,
        )

    async def _claim_undelivered(self, seat: SeatRecord) -> bool:
        """Claims the seat's release if its round is past the delivery deadline with no delivery
        recorded; returns whether it did. Otherwise notes when to look again."""
        segment = await self.protocol.audit.segment(seat.session_id, seat.segment_id)
        if segment.round != seat.round or segment.status is not SegmentStatus.VOTING or segment.delivered:
            # Over, or delivered: the envelope's event comes with a later tick (or never, and the
            # commit margin ends the wait).
            self._delivery_checks[seat.key] = math.inf
            return False
        if self._chain_now() <= segment.delivery_deadline:
            self._delivery_checks[seat.key] = float(segment.delivery_deadline + 1)
            return False
        sent = await self.protocol.audit.claim_undelivered(
            self.identity.account, seat.session_id, seat.segment_id, seat.seat_index
        )
        self._delivery_checks.pop(seat.key, None)
        self._finish(
            seat.key,
            SeatState.ABSTAINED,
            "undelivered",
            f"the provider delivered no key envelope for this round by its delivery deadline: claimed in "
            f"{sent.tx_hash}, the seat's stake is released and R is credited from the provider's fee",
        )
        return True

    def _chain_now(self) -> float:
        """The chain's time now (seconds): the latest block's timestamp as the last tick read it,
        plus the local time since. The next block's timestamp is at least this."""
        timestamp, seen_at = self._chain_seen
        return timestamp + (self._clock() - seen_at)

    async def _audit(self, seat: SeatRecord) -> None:
        try:
            async with self._slots.slot((seat.commit_deadline, seat.key)):
                if self._chain_now() >= seat.commit_deadline:
                    # Its window closed while it waited for a slot: the slot goes to a seat that can
                    # still make it, and the next tick records this one (`_recover`: missed).
                    return
                slot_at = self._clock()
                self._running[seat.key] = slot_at
                try:
                    await self._attempt(seat, "audit", lambda: self._audit_once(seat, slot_at))
                finally:
                    self._running.pop(seat.key, None)
                if self.store.seat(seat.key).state is SeatState.DRAWN:
                    # The attempt failed: a slow failure (a model that answered garbage for a minute)
                    # says as much about the auditor's speed as a verdict; a quick one (a refused
                    # connection) says nothing.
                    spent = self._clock() - slot_at
                    if spent > self._times.estimate_seconds:
                        self._measured(spent)
        finally:
            self._audits.pop(seat.key, None)
            self._wake.set()

    def _measured(self, seconds: float) -> None:
        """One more audit's duration for the estimate, stored at once (a restart starts informed)."""
        self._times = self._times.with_sample(seconds)
        self.store.set_meta_json(AUDIT_SECONDS_KEY, self._times.to_json(), durable=False)

    async def _audit_once(self, seat: SeatRecord, slot_at: float) -> None:
        """Audits the seat. An audit that ends in a verdict (or an abstention) is measured from
        `slot_at`, when it got its slot: fetching and decrypting and the auditor's time, a shared
        model server's queue included; the wait for the worker's own slot is what the forecast
        computes, so it is not counted twice."""
        verdict: Verdict | None = None
        node_id = None
        reply_key = None
        started_at = self._clock()
        if self.adversary is None or self.adversary.audits:
            opened = await self._open(seat)
            if opened is None:
                return
            node_id, plaintexts, reply_key = opened
            try:
                request = request_from_plaintexts(node_id, plaintexts)
            except GraphError as exc:
                self._vote_unreadable(seat, f"the segment is not a valid node: {exc}", node_id, reply_key)
                return
            deadline = seat.commit_deadline - self.settings.commit_margin_seconds
            request = replace(request, deadline=float(deadline), seat=str(seat.key))
            started_at = self._clock()  # the evaluation itself, as the seat's report states it
            # A verdict after the commit window is worth nothing: the audit gives up then (a
            # `TimeoutError`, retried until the next tick finds the window closed and records the
            # seat as missed), and its slot goes to the next seat.
            window = asyncio.timeout(max(0.0, seat.commit_deadline - self._chain_now()))
            try:
                async with window:
                    verdict = await audit_seat(self.auditor, request)
            except JudgmentError as exc:
                # The model answered and kept answering no judgment: asking again in a minute would
                # spend the seat's attempts (and the shared model's time) for the same answers.
                finished_at = self._clock()
                self._measured(finished_at - slot_at)
                await self._abstain(seat, f"no judgment: {exc}", node_id, evaluated=(started_at, finished_at))
                return
            except TimeoutError:
                if not window.expired():
                    raise  # the auditor's own timeout, with its own message
                raise TimeoutError(
                    f"no verdict before the commit window closed at {_clock(seat.commit_deadline)}; the audit was "
                    "stopped"
                ) from None
        finished_at = self._clock()
        if self.adversary is not None:
            verdict = adversarial_verdict(self.adversary, verdict)
        assert verdict is not None
        if self.adversary is None or self.adversary.audits:
            self._measured(finished_at - slot_at)
        if not verdict.decided:
            await self._abstain(
                seat, f"not applicable: {verdict.critique}", node_id, evaluated=(started_at, finished_at)
            )
            return
        self.store.update(
            seat.key,
            state=SeatState.VOTED,
            node_id=node_id,
            vote=verdict.passed,
            score=verdict.score,
            critique=verdict.critique,
            error_type=None if verdict.error_type is None else verdict.error_type.value,
            expected=verdict.expected,
            audit_started_at=started_at,
            audit_finished_at=finished_at,
            reply_key=reply_key,
            voted_at=self._clock(),
            attempts=0,
            last_error=None,
        )
        self._say(
            seat.key, "voted", f"{verdict.vote.value}, score {verdict.score:.2f}: {excerpt(verdict.critique, 157)}"
        )

    async def _open(self, seat: SeatRecord) -> tuple[str, dict[str, bytes], bytes | None] | None:
        """Opens the seat's envelope and its segments: the node id, the plaintexts and the
        provider's reply key for the seat's report (None: no report asked). None when the seat was
        rejected."""
        envelope_cid = seat.envelope_cid
        assert envelope_cid is not None
        session = await self.protocol.audit.session(seat.session_id)
        grant = None  # once opened, its reply key carries the unreadable vote's report to the provider
        try:
            blob = await self.kubo.cat(envelope_cid, max_bytes=MAX_ENVELOPE_BYTES)
            grant = open_envelope(
                self.identity.encryption_key,
                blob,
                trace_root=session.trace_root,
                segment_index=seat.segment_id,
                auditor=self._address,
            )
            if len(self._digests) > _DIGEST_CACHE_ENTRIES:
                self._digests.clear()  # a bound, not an eviction policy: refilled from the chain as needed
            plaintexts = await open_granted(
                self.protocol,
                self.kubo,
                seat.session_id,
                grant,
                session=session,
                digests=self._digests,
                blobs=self._blobs,
            )
        except (VerificationError, GraphError) as exc:
            self._vote_unreadable(seat, str(exc), *_granted(grant))
            return None
        except ContentNotFound as exc:
            if not self._last_try(seat):
                raise  # retried: the provider's node may still be announcing it
            detail = f"the IPFS network could not provide it by this seat's last try: {exc}"
            self._vote_unreadable(seat, detail, *_granted(grant))
            return None
        parents = len(plaintexts) - 1
        self._say(
            seat.key,
            "fetched",
            f"node {grant.node_id!r} and {parents} parent{'s' if parents != 1 else ''} "
            f"({len(plaintexts)} segments verified)",
        )
        return grant.node_id, plaintexts, grant.reply_key

    def _last_try(self, seat: SeatRecord) -> bool:
        """Whether this attempt at the seat is its last: its tries are spent, or the retry after it
        would start within the commit margin."""
        attempts = self.store.seat(seat.key).attempts + 1  # counting this one
        late = self._chain_now() + self._retry_delay(attempts) + self.settings.commit_margin_seconds
        return attempts >= self.settings.max_attempts or late >= seat.commit_deadline

    def _retry_delay(self, attempts: int) -> float:
        """Seconds before the next try of a step that failed `attempts` times: `backoff_seconds`,
        doubled per failure, at most `max_backoff_seconds`."""
        return backoff_delay(self.settings.backoff_seconds, attempts - 1, self.settings.max_backoff_seconds)

    def _vote_unreadable(
        self, seat: SeatRecord, detail: str, node_id: str | None = None, reply_key: bytes | None = None
    ) -> None:
        """The seat cannot read what the provider delivered (issue M3, corrupt envelopes): it votes
        fail, with `detail` as its critique, and commits and reveals that vote like any other.

        The envelope and segment CIDs are the provider's, on chain; IPFS returns nothing that does
        not match its CID; the digests and the Merkle root are the provider's commitments. So an
        envelope that does not open for this worker's key, a segment that is not the committed one,
        a node that is not a node, or content nobody serves is the provider's doing (or, for the key,
        this auditor's own, if it changed its key after the draw). Silence would forfeit the seat's
        stake for the provider's fault, as withholding did before `claimUndelivered`, and abstaining
        counts as silence; a fail vote states what the seat saw. When every seat sees it, the segment
        fails at once, aligned, and nobody forfeits or escalates; a seat alone in not reading it (a
        problem of its own) is misaligned and risks the slash roll of eq. 3.9 instead of a certain
        forfeit. With the provider's `reply_key` (the envelope opened), the report says why."""
        now = self._clock()
        critique = f"the provider's segment could not be audited: {detail}"
        self.store.update(
            seat.key,
            state=SeatState.VOTED,
            node_id=node_id,
            vote=False,
            score=0.0,
            critique=critique,
            error_type=None,
            expected=None,
            audit_started_at=now,
            audit_finished_at=now,
            reply_key=reply_key,
            voted_at=now,
            attempts=0,
            last_error=None,
        )
        self._say(seat.key, "unreadable", f"votes fail: {critique}", warn=True)

    async def _recover(self, seat: SeatRecord) -> None:
        """A seat first seen after its commit window closed (a restart, a lost state directory):
        the chain says whether it was committed; a committed vote is rebuilt from the wallet."""
        try:
            info = await self.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
            if info.revealed:
                self._finish(seat.key, SeatState.REVEALED, "revealed", "found revealed on chain", vote=info.vote)
                return
            if info.undelivered:
                self._finish(seat.key, SeatState.ABSTAINED, "undelivered", "found released on chain (no key envelope)")
                return
            if not info.committed:
                # A round whose envelopes never came may still be claimed until it is finalized.
                if seat.envelope_cid is None and await self._claim_undelivered(seat):
                    return
                self._finish(seat.key, SeatState.MISSED, "missed", "the commit window closed before this worker voted")
                return
            salt = self._salt(seat)
            for vote in (True, False):
                if await self.protocol.audit.reveal_matches(
                    self._address, seat.session_id, seat.segment_id, vote, salt
                ):
                    self.store.update(seat.key, state=SeatState.COMMITTED, vote=vote, salt=salt)
                    self._say(
                        seat.key,
                        "recovered",
                        f"the committed vote ({'pass' if vote else 'fail'}) rebuilt from the wallet",
                    )
                    return
            self._finish(
                seat.key, SeatState.MISSED, "missed", "committed on chain, but neither vote opens the commitment"
            )
        except ContractReverted as exc:
            if exc.error_name == "AuditOutsideRevealWindow":
                return  # the reveal window is not open yet (or is over): the next tick decides
            raise
        finally:
            self._audits.pop(seat.key, None)

    # ------------------------------------------------------------------------------------ retries

    async def _attempt(self, seat: SeatRecord, step: str, action: Callable[[], Awaitable[None]]) -> None:
        try:
            await action()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failed_attempt([seat], step, exc)

    def _failed_attempt(self, seats: Sequence[SeatRecord], step: str, exc: BaseException) -> None:
        if not isinstance(exc, TrustError | httpx.HTTPError | OSError | TimeoutError):
            self.log.exception("%s failed unexpectedly", step)
        for seat in seats:
            current = self.store.seat(seat.key)
            attempts = current.attempts + 1
            message = f"{step}: {type(exc).__name__}: {exc}"
            if not _transient(exc) or attempts >= self.settings.max_attempts:
                tries = f" after {attempts} attempts" if _transient(exc) else ""
                self._finish(seat.key, SeatState.FAILED, "failed", f"{message}{tries}")
                continue
            delay = self._retry_delay(attempts)
            self.store.update(seat.key, attempts=attempts, next_try=self._clock() + delay, last_error=message)
            self.log.warning(
                "%s %s failed (attempt %d of %d), retrying in %.1f s: %s",
                seat.key,
                step,
                attempts,
                self.settings.max_attempts,
                delay,
                exc,
            )

    # ------------------------------------------------------------------------------------ commit

    def _salt(self, seat: SeatRecord) -> bytes:
        return vote_salt(
            self.identity.account,
            chain_id=self.protocol.chain.chain_id,
            audit_contract=self.protocol.audit.address,
            session_id=seat.session_id,
            segment_id=seat.segment_id,
            round_id=seat.round,
        )

    async def _commit(self, now: _ChainTime) -> None:
        wall = self._clock()
        batch: list[SeatRecord] = []
        missed: list[SeatKey] = []
        # One transaction, one fsync, for every seat below; committed (durably) before the commit
        # transaction is sent, and said once it is on disk.
        with self.store.transaction():
            for seat in self.store.seats([SeatState.VOTED, SeatState.COMMITTING]):
                if len(batch) == VOTES_PER_TRANSACTION:
                    break  # the rest go in the next tick's transaction
                if seat.next_try > wall:
                    continue
                # The commit lands in a later block: leave a block's worth of time at least.
                if now.timestamp + 1 >= seat.commit_deadline:
                    if seat.state is SeatState.COMMITTING:
                        continue  # the chain decides below, in `_reveal`, whether it landed
                    self.store.update(seat.key, state=SeatState.MISSED, last_error=_LATE_VOTE)
                    missed.append(seat.key)
                    continue
                if (
                    self.adversary is Adversary.COPY
                    and now.timestamp + self.settings.commit_margin_seconds < seat.commit_deadline
                ):
                    continue  # waits for a reveal to copy; none can come before the window closes
                if seat.state is SeatState.VOTED:
                    assert seat.vote is not None
                    salt = self._salt(seat)
                    commitment = self.protocol.audit.commitment(
                        seat.session_id, seat.segment_id, seat.round, self._address, seat.vote, salt
                    )
                    # Durable (the block's commit) before the transaction exists: a crash from here on
                    # is recovered.
                    seat = self.store.update(seat.key, state=SeatState.COMMITTING, salt=salt, commitment=commitment)
                batch.append(seat)
        for key in missed:
            self._say(key, "missed", _LATE_VOTE, warn=True)
        if not batch:
            return
        commits = [SeatCommit(s.session_id, s.segment_id, s.seat_index, s.commitment or b"") for s in batch]
        try:
            sent = await self.protocol.audit.commit_votes(self.identity.account, commits)
        except Exception as exc:
            if isinstance(exc, ContractReverted) and exc.error_name == "AuditOutsideCommitWindow":
                for seat in batch:
                    await self._commit_alone(seat)
                return
            self._failed_attempt(batch, "commit", exc)
            return
        with self.store.transaction():  # one fsync for the whole batch; said once it is on disk
            for seat in batch:
                self.store.update(
                    seat.key, state=SeatState.COMMITTED, commit_tx=sent.tx_hash, committed_at=self._clock(), attempts=0
                )
        for seat in batch:
            self._say(
                seat.key,
                "committed",
                f"in {sent.tx_hash} ({self._clock() - seat.drawn_at:.1f} s after the draw was seen)",
            )

    async def _commit_alone(self, seat: SeatRecord) -> None:
        """A batch was refused because one seat's window closed: commit the others one by one."""
        assert seat.commitment is not None
        try:
            sent = await self.protocol.audit.commit_votes(
                self.identity.account, [SeatCommit(seat.session_id, seat.segment_id, seat.seat_index, seat.commitment)]
            )
        except ContractReverted as exc:
            if exc.error_name == "AuditOutsideCommitWindow":
                # A commit sent before a restart may have landed, and closed the window itself.
                info = await self.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
                if info.committed:
                    self.store.update(seat.key, state=SeatState.COMMITTED)
                    self._say(seat.key, "committed", "confirmed on chain (an earlier commit landed)")
                    return
                self._finish(seat.key, SeatState.MISSED, "missed", "the commit window closed before the commit landed")
                return
            self._failed_attempt([seat], "commit", exc)
            return
        except Exception as exc:
            self._failed_attempt([seat], "commit", exc)
            return
        self.store.update(seat.key, state=SeatState.COMMITTED, commit_tx=sent.tx_hash, committed_at=self._clock())
        self._say(seat.key, "committed", f"in {sent.tx_hash}")

    # ------------------------------------------------------------------------------------ reveal

    async def _follow_windows(self, now: _ChainTime) -> None:
        """Reads the current windows of the seats that committed and wait for the reveal window.

        The contract closes a round's commit window as soon as its last seat commits
        (`commitDeadline` becomes that block's time - 1, the reveal window starts there), so the
        deadlines of `CommitteeDrawn` are only the latest possible ones: a committed seat re-reads
        its segment each tick until the window has closed, and reveals on the next tick after an
        early close instead of waiting out the original deadline (and perhaps missing the reveal
        window, which now ends earlier too)."""
        waiting = [
            s
            for s in self.store.seats([SeatState.COMMITTING, SeatState.COMMITTED])
            if now.timestamp <= s.commit_deadline
        ]
        if not waiting:
            return
        infos = await self.protocol.audit.segments([(s.session_id, s.segment_id) for s in waiting])
        for seat, info in zip(waiting, infos, strict=True):
            if info.round != seat.round or info.status is not SegmentStatus.VOTING:
                continue
            if info.commit_deadline < seat.commit_deadline:
                self.store.update(seat.key, commit_deadline=info.commit_deadline, reveal_deadline=info.reveal_deadline)
                self._say(
                    seat.key,
                    "closed",
                    f"every seat committed: the commit window closed early; reveal by {_clock(info.reveal_deadline)}",
                )

    async def _reveal(self, now: _ChainTime) -> None:
        wall = self._clock()
        batch: list[SeatRecord] = []
        for seat in self.store.seats([SeatState.COMMITTING, SeatState.COMMITTED]):
            if len(batch) == VOTES_PER_TRANSACTION:
                break  # the rest go in the next tick's transaction
            if seat.next_try > wall or now.timestamp <= seat.commit_deadline:
                continue
            if seat.state is SeatState.COMMITTING:
                # Sent, but the worker stopped before it saw the receipt: the chain knows.
                info = await self.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
                if not info.committed:
                    self._finish(
                        seat.key, SeatState.MISSED, "missed", "the commit never landed before the window closed"
                    )
                    continue
                seat = self.store.update(seat.key, state=SeatState.COMMITTED)
                self._say(seat.key, "committed", "confirmed on chain after a restart")
            if now.timestamp >= seat.reveal_deadline:
                self._finish(seat.key, SeatState.MISSED, "missed", "the reveal window closed before the reveal")
                continue
            if self.adversary is Adversary.SILENT:
                continue
            batch.append(seat)
        if not batch:
            return
        reveals = []
        for seat in batch:
            assert seat.vote is not None
            reveals.append(
                SeatReveal(seat.session_id, seat.segment_id, seat.seat_index, seat.vote, seat.salt or self._salt(seat))
            )
        try:
            sent = await self.protocol.audit.reveal_votes(self.identity.account, reveals)
        except Exception as exc:
            if isinstance(exc, ContractReverted):
                await self._reveal_each(batch)
                return
            self._failed_attempt(batch, "reveal", exc)
            return
        with self.store.transaction():  # one fsync for the whole batch; said once it is on disk
            for seat in batch:
                self.store.update(seat.key, state=SeatState.REVEALED, reveal_tx=sent.tx_hash, attempts=0)
        for seat in batch:
            self._say(seat.key, "revealed", f"{'pass' if seat.vote else 'fail'} in {sent.tx_hash}")

    async def _reveal_each(self, batch: Sequence[SeatRecord]) -> None:
        """A batch reveal was refused: find the seat the chain objects to, reveal the others."""
        for seat in batch:
            info = await self.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
            if info.revealed:
                self.store.update(seat.key, state=SeatState.REVEALED)
                continue
            assert seat.vote is not None
            try:
                sent = await self.protocol.audit.reveal_votes(
                    self.identity.account,
                    [
                        SeatReveal(
                            seat.session_id, seat.segment_id, seat.seat_index, seat.vote, seat.salt or self._salt(seat)
                        )
                    ],
                )
            except Exception as exc:
                self._failed_attempt([seat], "reveal", exc)
                continue
            self.store.update(seat.key, state=SeatState.REVEALED, reveal_tx=sent.tx_hash)
            self._say(seat.key, "revealed", f"{'pass' if seat.vote else 'fail'} in {sent.tx_hash}")

    # ------------------------------------------------------------------------------------ report

    async def _report(self) -> None:
        """Seals, stores and announces the audit report of every revealed seat whose grant carried
        the provider's reply key: one `publishReports` per session with reports ready.

        The report is uploaded (and its CID stored) before the transaction is sent; a seat whose CID
        is stored but that is not marked reported may have been published just before a restart,
        so the chain is asked first, and such a seat is never published twice. Reporting keeps its
        own attempts and backoff and catches every failure: it never holds up a vote, and a seat
        whose report keeps failing is only logged (its vote stands).
        """
        wall = self._clock()
        due = [
            s
            for s in self.store.seats(_REVEALED)
            if s.wants_report
            and s.report_next_try <= wall
            and s.report_attempts < self.settings.max_attempts
            and s.vote is not None
            and s.score is not None
            and s.critique is not None
            and s.audit_started_at is not None
            and s.audit_finished_at is not None
        ]
        if not due:
            return
        try:
            due = await self._not_yet_reported(due)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._report_failed(due, exc)
            return
        ready: dict[int, list[SeatRecord]] = defaultdict(list)
        roots: dict[int, bytes] = {}
        for seat in due:
            try:
                if seat.report_cid is None:
                    if seat.session_id not in roots:
                        roots[seat.session_id] = (await self.protocol.audit.session(seat.session_id)).trace_root
                    seat = await self._store_report(seat, roots[seat.session_id])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._report_failed([seat], exc)
                continue
            ready[seat.session_id].append(seat)
        for session_id, seats in sorted(ready.items()):
            await self._publish_reports(session_id, seats)

    async def _not_yet_reported(self, seats: list[SeatRecord]) -> list[SeatRecord]:
        """The seats whose report the chain does not hold yet; the others are marked reported."""
        stored = [s for s in seats if s.report_cid is not None]
        if not stored:
            return seats
        found: set[SeatKey] = set()
        for session_id in sorted({s.session_id for s in stored}):
            first_block = min(s.drawn_block for s in stored if s.session_id == session_id)
            for published in await self.protocol.segment_keys.reports_for(session_id, from_block=first_block):
                if published.auditor == self._address:
                    found.add(SeatKey(published.session_id, published.segment_id, published.round))
        for seat in stored:
            if seat.key in found:
                self.store.update(seat.key, reported_at=self._clock(), report_attempts=0, report_error=None)
                self._say(seat.key, "reported", f"report {seat.report_cid} found on chain (published before a restart)")
        return [s for s in seats if s.key not in found]

    async def _store_report(self, seat: SeatRecord, trace_root: bytes) -> SeatRecord:
        """Seals the seat's report to the provider's reply key, uploads and pins it, and stores its CID."""
        assert seat.reply_key is not None and seat.critique is not None and seat.score is not None
        assert seat.audit_started_at is not None and seat.audit_finished_at is not None
        report = AuditReport(
            session_id=seat.session_id,
            segment_index=seat.segment_id,
            round=seat.round,
            seat_index=seat.seat_index,
            auditor=self._address,
            vote="pass" if seat.vote else "fail",
            score=float(seat.score),
            critique=clip_text(seat.critique),
            error_type=seat.error_type if not seat.vote else None,
            expected=None if seat.expected is None else clip_text(seat.expected, MAX_EXPECTED_BYTES),
            tier=seat.tier,
            started_at=float(seat.audit_started_at),
            finished_at=float(max(seat.audit_finished_at, seat.audit_started_at)),
        )
        blob = seal_report(report, trace_root=trace_root, recipient_key=seat.reply_key)
        cid = await self.kubo.add(blob, pin=True)
        return self.store.update(seat.key, report_cid=cid)

    async def _publish_reports(self, session_id: int, seats: list[SeatRecord]) -> None:
        refs = [ReportRef(s.segment_id, s.round, s.seat_index, s.report_cid or "") for s in seats]
        try:
            sent = await self.protocol.segment_keys.publish_reports(self.identity.account, session_id, refs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if isinstance(exc, ContractReverted) and len(seats) > 1:
                for seat in seats:  # find the seat the chain objects to; publish the others
                    await self._publish_reports(session_id, [seat])
                return
            self._report_failed(seats, exc)
            return
        for seat in seats:
            self.store.update(
                seat.key,
                reported_at=self._clock(),
                report_tx=sent.tx_hash,
                report_attempts=0,
                report_error=None,
            )
            self._say(seat.key, "reported", f"report {seat.report_cid} in {sent.tx_hash}")

    def _report_failed(self, seats: Sequence[SeatRecord], exc: BaseException) -> None:
        """Backs a failed report off as `_failed_attempt` does a vote, with the report's own counters."""
        if not isinstance(exc, TrustError | httpx.HTTPError | OSError | TimeoutError):
            self.log.exception("reporting failed unexpectedly")
        for seat in seats:
            attempts = self.store.seat(seat.key).report_attempts + 1
            message = f"report: {type(exc).__name__}: {exc}"
            if not _transient(exc) or attempts >= self.settings.max_attempts:
                attempts = self.settings.max_attempts
                self.store.update(seat.key, report_attempts=attempts, report_next_try=0.0, report_error=message)
                self._say(seat.key, "report failed", f"{message}; given up, the vote stands", warn=True)
                continue
            delay = self._retry_delay(attempts)
            self.store.update(
                seat.key, report_attempts=attempts, report_next_try=self._clock() + delay, report_error=message
            )
            self.log.warning(
                "%s report failed (attempt %d of %d), retrying in %.1f s: %s",
                seat.key,
                attempts,
                self.settings.max_attempts,
                delay,
                exc,
            )

    # ------------------------------------------------------------------------------------ finalize

    def _unsettled(self) -> list[SeatRecord]:
        """Seats whose round's outcome the worker has not recorded yet."""
        return [s for s in self.store.seats((*_ACTIVE, *_SILENT)) if s.outcome is None]

    async def _finalize(self, now: _ChainTime) -> None:
        due: dict[int, list[SeatRecord]] = defaultdict(list)
        for seat in self._unsettled():
            if seat.key in self._audits:
                continue
            # A round may be finalized early once every seat revealed; only a revealed seat checks.
            # Seat i waits i staggers more, so that the committee does not race to pay for one call.
            stagger = FINALIZE_STAGGER_SECONDS * seat.seat_index
            early = seat.state is SeatState.REVEALED and now.timestamp > seat.commit_deadline + stagger
            if now.timestamp > seat.reveal_deadline + stagger or early:
                due[seat.session_id].append(seat)
        for session_id, seats in due.items():
            pairs = [(session_id, s.segment_id) for s in seats]
            infos, phases = await asyncio.gather(self.protocol.audit.segments(pairs), self.protocol.audit.phases(pairs))
            finalizable = {
                info.segment_id: info
                for s, phase, info in zip(seats, phases, infos, strict=True)
                if phase is Phase.FINALIZABLE and info.round == s.round
            }
            ready = [finalizable[segment] for segment in sorted(finalizable)]
            for run in bounded_runs(ready, FINALIZE_DRAWS_PER_TRANSACTION, draws_of):
                ids = [info.segment_id for info in run]
                try:
                    sent = await self.protocol.audit.finalize_segments(self.identity.account, session_id, ids)
                    self.log.info("s%d: finalized segments %s in %s", session_id, ids, sent.tx_hash)
                except ContractReverted as exc:
                    self.log.info(
                        "s%d: finalizing %s was refused (%s); another worker was first",
                        session_id,
                        ids,
                        exc.error_name,
                    )
            if ready:
                infos = await self.protocol.audit.segments(pairs)
            for seat, info in zip(seats, infos, strict=True):
                if info.round == seat.round and not info.status.is_final:
                    continue
                await self._record_outcome(seat, info.status, info.round)

    async def _record_outcome(self, seat: SeatRecord, status: SegmentStatus, round_now: int) -> None:
        on_chain = await self.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
        aligned = False
        if round_now > seat.round:
            outcome = (
                f"escalated to round {round_now}; a revealed seat stays locked until the segment's verdict and is "
                "then judged against it (reputation, and a slash roll if it voted against it); no fee reward"
            )
        elif status is SegmentStatus.UNDETERMINED:
            outcome = "undetermined after the last round"
        else:
            passed = status is SegmentStatus.PASSED
            verdict = "passed" if passed else "failed"
            if on_chain.revealed:
                aligned = on_chain.vote == passed
                vote = "pass" if on_chain.vote else "fail"
                outcome = f"segment {verdict}; our {vote} vote is {'aligned' if aligned else 'not aligned'}"
            else:
                outcome = f"segment {verdict}; this seat did not reveal"
        recorded = ("aligned: " if aligned else "") + outcome
        if seat.state in _SILENT:
            self.store.update(seat.key, outcome=recorded)
        else:
            self.store.update(seat.key, state=SeatState.FINALIZED, outcome=recorded)
        self._say(seat.key, "finalized", outcome)

    # ------------------------------------------------------------------------------------ settle

    async def _settle(self, now: _ChainTime) -> None:
        unsettled = {s.session_id for s in self._unsettled()}
        seats = self.store.seats()
        recorded = {s.session_id for s in seats if s.outcome is not None}
        for session_id in sorted(recorded - unsettled - self._settled_sessions):
            mine = [s for s in seats if s.session_id == session_id]
            stagger = FINALIZE_STAGGER_SECONDS * min(s.seat_index for s in mine)
            if now.timestamp < max(s.commit_deadline for s in mine) + stagger:
                continue
            session = await self.protocol.audit.session(session_id)
            # Before the last reveal deadline only a session whose every segment is final can be
            # settled: rounds whose seats all revealed are finalized early, and waiting out their
            # reveal windows would hold the trace's verdict, the fee and the rewards for nothing.
            early = session.status is not SessionStatus.OPEN or session.finalized_count == session.segment_count
            if now.timestamp < max(s.reveal_deadline for s in mine) + stagger and not early:
                continue
            try:
                if session.status is SessionStatus.OPEN and session.finalized_count == session.segment_count:
                    valid, sent = await self.protocol.audit.finalize_trace(self.identity.account, session_id)
                    self.log.info(
                        "s%d: trace finalized %s in %s", session_id, "valid" if valid else "invalid", sent.tx_hash
                    )
                    session = await self.protocol.audit.session(session_id)
                if session.status is SessionStatus.FINALIZED:
                    sent = await self.protocol.audit.distribute_rewards(self.identity.account, session_id)
                    self.log.info("s%d: fee distributed in %s", session_id, sent.tx_hash)
                    session = await self.protocol.audit.session(session_id)
            except ContractReverted as exc:
                self.log.info(
                    "s%d: settling was refused (%s); another worker was first", session_id, exc.error_name or "reverted"
                )
                session = await self.protocol.audit.session(session_id)
            if session.status is SessionStatus.DISTRIBUTED:
                if self.auto_claim:
                    await self.claim(session_id)
                self._settled_sessions.add(session_id)

    async def claim(self, session_id: int | None = None) -> int:
        """Claims the reward of every aligned, finalized seat (of one session, or of all distributed
        sessions); returns the wei received."""
        return await claim_seat_rewards(self.protocol, self.identity.account, self.store, session_id, log=self.log)

    # ------------------------------------------------------------------------------------ logging

    def _finish(self, key: SeatKey, state: SeatState, event: str, detail: str, **changes: object) -> None:
        self.store.update(
            key,
            state=state,
            last_error=detail if state in (SeatState.FAILED, SeatState.REJECTED, SeatState.MISSED) else None,
            **changes,
        )
        self._say(key, event, detail, warn=state in (SeatState.FAILED, SeatState.REJECTED, SeatState.MISSED))

    def _say(self, key: SeatKey, event: str, detail: str, *, warn: bool = False) -> None:
        self.store.log(key, event, detail)
        if self._on_event is not None:
            self._on_event(key, event, detail)
        (self.log.warning if warn else self.log.info)("%s %s: %s", key, event, detail)


def taken_out_by_worker(store: WorkerStore) -> bool:
    """Whether the worker of this state file took its auditor out of the draw (backpressure, or an
    auditor that could not work) and has not put it back: a new run may start and put it back."""
    record = store.meta_json(AVAILABILITY_KEY)
    return isinstance(record, dict) and bool(record.get("by_worker"))


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass


async def claim_seat_rewards(
    protocol: Protocol,
    account: LocalAccount,
    store: WorkerStore,
    session_id: int | None = None,
    *,
    log: logging.Logger | None = None,
) -> int:
    """Claims the reward of every aligned, finalized seat in `store` whose session is distributed
    (one session, or all); returns the wei received. A seat already claimed on chain is marked so."""
    log = log or logging.getLogger("trust.services.worker")
    by_session: dict[int, list[SeatRecord]] = defaultdict(list)
    for seat in store.seats([SeatState.FINALIZED]):
        if (seat.outcome or "").startswith("aligned") and session_id in (None, seat.session_id):
            by_session[seat.session_id].append(seat)
    total = 0
    for sid, group in sorted(by_session.items()):
        if (await protocol.audit.session(sid)).status is not SessionStatus.DISTRIBUTED:
            continue
        unclaimed = []
        for seat in group:
            if (await protocol.audit.seat(sid, seat.segment_id, seat.round, seat.seat_index)).claimed:
                store.update(seat.key, state=SeatState.CLAIMED)
            else:
                unclaimed.append(seat)
        if not unclaimed:
            continue
        sent = await protocol.audit.claim_rewards(account, sid, [(s.segment_id, s.seat_index) for s in unclaimed])
        paid = protocol.audit.rewards_claimed_in(sent)
        total += paid
        for seat in unclaimed:
            store.update(seat.key, state=SeatState.CLAIMED, reward_wei=paid // len(unclaimed))
        seats = f"{len(unclaimed)} seat{'' if len(unclaimed) == 1 else 's'}"
        store.log(None, "reward", f"s{sid}: {eth_text(paid)} for {seats} in {sent.tx_hash}")
        log.info("s%d reward: %s for %s in %s", sid, eth_text(paid), seats, sent.tx_hash)
    return total
