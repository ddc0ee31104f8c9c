"""One session on chain, driven from the provider's side: open it, draw every committee as soon as its
randomness block is mined, deliver each committee its key envelopes, finalize what can be finalized,
and read back the outcome with the auditors' sealed reports.

The loop wakes on every new block (polling `eth_getBlockByNumber("latest")` every `poll_seconds`) and
reads the segments that are not final yet. Anyone may draw and finalize (the contracts allow it and
workers finalize too), so a transaction that lost a race reverts while its gas is estimated, sends
nothing, and the next block's read shows what the other party did. Escalated rounds and redraws are
handled by the same loop: a segment waiting for a draw is drawn, a round without envelopes gets them.

Times are wall-clock (`time.time()`): auditors report their evaluation intervals in the same clock,
which is how the Table-3 breakdown separates inference from protocol time (`phase_timings`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from trust.adapters.chain.protocol import (
    DRAWS_PER_TRANSACTION,
    FINALIZE_DRAWS_PER_TRANSACTION,
    SEGMENTS_PER_REGISTRATION,
    Protocol,
    draws_of,
)
from trust.adapters.chain.types import CommitteeDrawn, SeatInfo, SegmentInfo, SegmentStatus, SessionStatus
from trust.adapters.storage.kubo import KuboClient
from trust.core.batching import bounded_runs
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.privacy.envelopes import public_key_bytes
from trust.core.privacy.reports import AuditReport, open_report
from trust.errors import AuditTimeout, ChainError, ContractReverted, IpfsError, SessionInterrupted, VerificationError
from trust.services.delivery import deliver_keys, gather_bounded
from trust.services.sdk.journal import SessionRecord
from trust.services.sdk.outage import RPC, Outage, lost_service
from trust.services.sdk.outcome import SegmentOutcome
from trust.services.sdk.progress import ProgressCallback, ProgressEvent
from trust.services.sdk.result import Critique, Outcome
from trust.services.sdk.timings import RoundTrack
from trust.settings import ProviderSettings

__all__ = ["RoundTrack", "SessionDriver"]

log = logging.getLogger("trust.services.sdk")

_OUTCOMES = {
    SegmentStatus.PASSED: Outcome.PASSED,
    SegmentStatus.FAILED: Outcome.FAILED,
    SegmentStatus.UNDETERMINED: Outcome.UNDETERMINED,
}
_READ_CONCURRENCY = 16
MAX_REPORT_FETCH_BYTES = 64 * 1024
"""Largest report blob fetched from IPFS (reports hold one critique, a few KiB at most)."""
_BPS = 10_000
_T = TypeVar("_T")


@dataclass
class SessionDriver:
    protocol: Protocol
    kubo: KuboClient
    account: Any
    record: SessionRecord
    reply: X25519PrivateKey
    progress: ProgressCallback | None = None
    poll_seconds: float = 0.1
    finalize: bool = True
    distribute: bool = True
    retry: ProviderSettings = field(default_factory=ProviderSettings)
    """How a lost RPC or IPFS node is waited for while the session is open (`trust.services.sdk.outage`)."""
    journaled: bool = True
    """Whether the session's record is in the provider's journal, so that `resume` can finish it."""
    journal_path: str | None = None
    """Where that record lies, for the message of a session whose opening was cut off."""
    transactions: dict[str, list[str]] = field(default_factory=dict)
    rounds: dict[tuple[int, int], RoundTrack] = field(default_factory=dict)
    marks: dict[str, float] = field(default_factory=dict)
    created_block: int = 0
    finalized_block: int | None = None
    finalize_tx: str | None = None
    envelopes: int = 0
    _opened: dict[int, float] = field(default_factory=dict)
    _rounds_needed: dict[int, int] = field(default_factory=dict)
    """Segment -> rounds it has needed a committee for so far (escalations add one each): the total
    of the draw progress, so that it never counts past its total."""
    outage: Outage = field(init=False)

    def __post_init__(self) -> None:
        self.outage = Outage(self.retry, self.protocol.chain.rpc_url, self.kubo.api_url, self.progress)

    @property
    def session_id(self) -> int:
        if self.record.session_id is None:
            raise ChainError("the session is not open yet")
        return self.record.session_id

    @property
    def graph(self) -> Hdag | Cig:
        return self.record.graph

    def _say(self, stage: str, done: int, total: int, message: str = "") -> None:
        if self.progress is not None:
            self.progress(ProgressEvent(stage, done, total, message))

    def _tx(self, name: str, tx_hash: str) -> None:
        self.transactions.setdefault(name, []).append(tx_hash)

    # ------------------------------------------------------------------ opening

    async def open(self, fee_wei: int) -> int:
        """Sends `createSession` with every segment and the fee; returns the session id.

        A lost connection while it is sent leaves it unknown whether the transaction was mined. The
        RPC is then waited for (`trust.services.sdk.outage`) and the chain asked whether a session with this
        trace root exists since the block before sending: if so it is this one (the root commits to
        fresh keys, nobody else can have it), otherwise it is sent again. Past the outage budget,
        `SessionInterrupted` without a session id: the caller keeps the record and the blobs."""
        stored = self.record.stored
        self.marks["create_sent"] = time.time()
        self._say("session", 0, 1, f"createSession with {len(stored.segments)} segments, fee {fee_wei} wei")
        chain = self.protocol.chain
        since: int | None = None
        waiting_since: float | None = None
        while True:
            try:
                if since is not None:
                    found = await self._created_since(since)
                    if found is not None:
                        session_id, tx_hash, block = found
                        break
                    if await self._unmined() > 0:
                        # A transaction of this wallet (perhaps createSession itself) waits in the node:
                        # sending again now could open the session twice.
                        waiting_since = waiting_since or time.time()
                        waited = time.time() - waiting_since
                        if waited > self.retry.outage_seconds:
                            raise self._opening_interrupted(RPC, "a transaction of this wallet is not mined", waited)
                        await asyncio.sleep(max(self.poll_seconds, 0.2))
                        continue
                else:
                    since = await chain.block_number()
                specs = stored.specs()
                if len(specs) <= SEGMENTS_PER_REGISTRATION:
                    session_id, sent = await self.protocol.audit.create_session(
                        self.account, stored.root, specs, fee_wei
                    )
                else:
                    # Too many segments for one transaction: the session is created registering,
                    # with the whole fee, and `_register_rest` registers them in runs below.
                    session_id, sent = await self.protocol.audit.create_empty_session(
                        self.account, stored.root, len(specs), fee_wei
                    )
                tx_hash, block = sent.tx_hash, sent.block_number
                break
            except Exception as exc:
                await self.outage.wait(exc, stopped=self._opening_interrupted)
        self.outage.recovered()
        self.record.session_id = session_id
        self.record.created_tx = tx_hash
        self.created_block = block
        self._tx("create_session", tx_hash)
        await self._register_rest()
        self.marks["created"] = time.time()
        self._say("session", 1, 1, f"session {session_id} opened in block {block}")
        return session_id

    async def _register_rest(self) -> None:
        """Registers the segments the chain does not hold yet, `SEGMENTS_PER_REGISTRATION` a
        transaction, from the count the chain reports: after a lost connection or a restart
        (`attach`), it goes on where the chain says registration stopped. The session opens (its
        randomness block is fixed) with the last one."""
        specs = self.record.stored.specs()
        while True:
            try:
                session = await self.protocol.audit.session(self.session_id)
                if session.status is not SessionStatus.REGISTERING:
                    break
                first = session.registered_count
                run = specs[first : first + SEGMENTS_PER_REGISTRATION]
                sent = await self.protocol.audit.register_segments(self.account, self.session_id, run)
            except Exception as exc:
                await self.outage.wait(exc, stopped=self.interrupted)
                continue
            self.outage.recovered()
            self._tx("register_segments", sent.tx_hash)
            self._say("session", 0, 1, f"{first + len(run)} of {len(specs)} segments registered")

    async def _unmined(self) -> int:
        """Transactions of this wallet the node holds but has not mined."""
        eth = self.protocol.chain.w3.eth
        address = self.account.address
        return int(await eth.get_transaction_count(address, "pending")) - int(
            await eth.get_transaction_count(address, "latest")
        )

    async def _created_since(self, block: int) -> tuple[int, str, int] | None:
        """(session id, transaction, block) of the session opened with this record's trace root since
        `block`, or None."""
        event = self.protocol.audit.contract.events.SessionCreated()
        logs = await self.protocol.chain.get_logs(event, from_block=block)
        root = self.record.stored.root
        for entry in logs:
            if bytes(entry["args"]["traceRoot"]) == root:
                return (
                    int(entry["args"]["sessionId"]),
                    "0x" + bytes(entry["transactionHash"]).hex(),
                    int(entry["blockNumber"]),
                )
        return None

    def _opening_interrupted(self, service: str, cause: str, seconds: float) -> SessionInterrupted:
        root = "0x" + self.record.stored.root.hex()
        kept = f"its record is kept at {self.journal_path}" if self.journal_path else "its blobs stay pinned"
        return SessionInterrupted(
            f"lost {self.outage.what(service)} while opening the session of trace root {root} ({cause}); retried "
            f"for {seconds:.0f} s. createSession may or may not have been mined, so nothing was undone: {kept}. "
            f"When the {'RPC' if service == RPC else 'IPFS node'} is back, look the trace root up in the explorer: "
            "if a session has it, `trust submit --resume <its id>` finishes it; if none has, nothing was paid and "
            "the trace can be submitted again",
            None,
            service,
        )

    def interrupted(self, service: str, cause: str, seconds: float) -> SessionInterrupted:
        """The error that ends an audit whose RPC or IPFS node stayed away past the outage budget."""
        name = "RPC" if service == RPC else "IPFS node"
        sid = self.session_id
        if self.journaled:
            todo = (
                f"nothing is lost: the session goes on on chain; run `trust submit --resume {sid}` "
                f"(TrustClient.resume({sid})) when the {name} is back"
            )
        else:
            todo = (
                f"the session goes on on chain, but this batch keeps no record to resume it from: submit the "
                f"trace again when the {name} is back"
            )
        return SessionInterrupted(
            f"lost {self.outage.what(service)} while session {sid} was running ({cause}); retried for "
            f"{seconds:.0f} s; {todo}",
            sid,
            service,
        )

    async def retrying(self, step: Callable[[], Awaitable[_T]]) -> _T:
        """`step()` (reads of the open session), run again after each lost connection."""
        return await self.outage.retrying(step, stopped=self.interrupted)

    async def attach(self) -> None:
        """Picks up a session opened earlier (`resume`): its creation block and its committees so far."""
        if self.record.created_tx is not None:
            receipt = await self.protocol.chain.w3.eth.get_transaction_receipt(self.record.created_tx)  # type: ignore[arg-type]
            self.created_block = int(receipt["blockNumber"])
        self.marks.setdefault("create_sent", time.time())
        await self._register_rest()
        for committee in await self.protocol.audit.committees_drawn(self.created_block, self.session_id):
            self._track(committee, time.time(), delivered=False)

    # ------------------------------------------------------------------ the loop

    async def drive(self, deadline: float | None) -> None:
        """Runs the session until the trace is final (and the fee split, with `distribute`). A lost
        RPC or IPFS node is waited for (`retry`); past the budget, `SessionInterrupted`."""
        total = len(self.record.stored.segments)
        loop = _Loop(open_ids=list(range(total)))
        for segment in loop.open_ids:
            self._opened.setdefault(segment, self.marks.get("created", time.time()))
            self._rounds_needed.setdefault(segment, 1)
        while True:
            if deadline is not None and time.time() > deadline:
                raise AuditTimeout(
                    f"session {self.session_id}: no verdict within the latency budget; the session goes on on "
                    f"chain, resume it with `trust submit --resume {self.session_id}`",
                    self.session_id,
                )
            try:
                finished = await self._tick(loop, total)
            except Exception as exc:
                await self.outage.wait(exc, stopped=self.interrupted)
                loop.seen_block = -1  # run the whole step again, without waiting for a new block
                continue
            self.outage.recovered()
            if finished:
                return

    async def _tick(self, loop: _Loop, total: int) -> bool:
        """One step of the loop: everything the latest block allows. True once the session is done.
        Idempotent, so that a step cut off by a lost connection can be run again from the top."""
        chain = self.protocol.chain
        block = await chain.w3.eth.get_block("latest")
        number, timestamp = int(block["number"]), int(block["timestamp"])
        if number == loop.seen_block:
            await asyncio.sleep(self.poll_seconds)
            return False
        session = await self.protocol.audit.session(self.session_id)
        if session.status in (SessionStatus.FINALIZED, SessionStatus.DISTRIBUTED):
            await self._settle(session.status)
            return True
        infos = await self._segments(loop.open_ids)
        now = time.time()
        for info in infos:
            self._observe(info, now)
        self._say("final", total - sum(1 for info in infos if not info.status.is_final), total)
        self._say("votes", sum(1 for t in self._latest().values() if t.revealed_at is not None), total)
        await self._draw([i for i in infos if i.status is SegmentStatus.AWAITING_DRAW], number)
        await self._find_committees([i for i in infos if i.status is SegmentStatus.VOTING])
        await self._deliver()
        if self.finalize:
            ready = [
                info
                for info in infos
                if info.status is SegmentStatus.VOTING
                # Every seat done (a seat may weigh several of the committee's draws, so the
                # round has `seat_count` seats, not `committee_size`), or the window is over.
                and (_all_seats_done(info) or timestamp > info.reveal_deadline)
            ]
            settled = False
            if ready:
                escalated = await self._finalize_segments(ready)
                # Every open segment was just finalized and none escalated: the trace is finalized
                # now, not a block later (should the chain disagree, the call reverts in its
                # estimate, sends nothing, and the next block's read decides).
                open_now = {info.segment_id for info in infos if not info.status.is_final}
                settled = escalated is not None and not escalated and open_now <= {i.segment_id for i in ready}
            if (
                settled
                or all(info.status.is_final for info in infos)
                or session.finalized_count == session.segment_count
            ):
                await self._finalize_trace()
        # Only now: a step cut off above runs again on this block instead of waiting for the next.
        loop.open_ids = [info.segment_id for info in infos if not info.status.is_final]
        loop.seen_block = number
        return False

    async def _segments(self, ids: Sequence[int]) -> list[SegmentInfo]:
        return await self.protocol.audit.segments([(self.session_id, i) for i in ids])

    def _latest(self) -> dict[int, RoundTrack]:
        latest: dict[int, RoundTrack] = {}
        for (segment, _round_id), track in sorted(self.rounds.items()):
            latest[segment] = track
        return latest

    def _observe(self, info: SegmentInfo, now: float) -> None:
        self._rounds_needed[info.segment_id] = max(self._rounds_needed.get(info.segment_id, 1), info.round + 1)
        track = self.rounds.get((info.segment_id, info.round))
        if info.status is SegmentStatus.AWAITING_DRAW and info.round > 0:
            self._opened.setdefault(info.segment_id * 1000 + info.round, now)  # escalated: a new round waits
            earlier = self.rounds.get((info.segment_id, info.round - 1))
            if earlier is not None and earlier.final_at is None:
                earlier.final_at = now
        if track is None:
            return
        if track.revealed_at is None and (
            info.status.is_final or (info.status is SegmentStatus.VOTING and _all_seats_done(info))
        ):
            track.revealed_at = now
        if info.status.is_final and track.final_at is None:
            track.final_at = now

    def _opened_at(self, segment: int, round_id: int) -> float:
        if round_id == 0:
            return self._opened.get(segment, self.marks.get("create_sent", time.time()))
        return self._opened.get(segment * 1000 + round_id, time.time())

    def _track(self, committee: CommitteeDrawn, now: float, *, delivered: bool) -> None:
        key = (committee.segment_id, committee.round)
        if key not in self.rounds:
            self.rounds[key] = RoundTrack(
                committee.segment_id,
                committee.round,
                committee.tier,
                committee.members,
                self._opened_at(committee.segment_id, committee.round),
                now,
                delivered_at=now if delivered else None,
            )

    async def _draw(self, waiting: Sequence[SegmentInfo], block: int) -> None:
        ready = [info for info in waiting if block > info.randomness_block]
        for run in bounded_runs(ready, DRAWS_PER_TRANSACTION, draws_of):
            ids = [info.segment_id for info in run]
            try:
                sent = await self.protocol.audit.assign_auditors(self.account, self.session_id, ids)
            except ContractReverted as exc:
                log.debug("session %s: draw of %s lost a race or waits: %s", self.session_id, ids, exc)
                continue
            self._tx("assign_auditors", sent.tx_hash)
            now = time.time()
            drawn = self.protocol.audit.committees_in(sent)
            for committee in drawn:
                self._track(committee, now, delivered=False)
            self._say_draws(f"{len(drawn)} committees drawn")
            # These committees get their keys before the next run is drawn: with a large trace
            # the first auditors start while the rest is still being drawn.
            await self._deliver()

    async def _find_committees(self, voting: Sequence[SegmentInfo]) -> None:
        """Committees somebody else drew (or that a crash lost) come from the chain's events."""
        if all((info.segment_id, info.round) in self.rounds for info in voting):
            return
        now = time.time()
        for committee in await self.protocol.audit.committees_drawn(self.created_block, self.session_id):
            self._track(committee, now, delivered=False)

    async def _deliver(self) -> None:
        pending = [t for t in self.rounds.values() if t.delivered_at is None and t.final_at is None]
        if not pending:
            return
        committees = [CommitteeDrawn(self.session_id, t.segment, t.round, t.tier, t.members, 0, 0, 0) for t in pending]
        stored = self.record.stored
        envelopes = await deliver_keys(
            self.protocol,
            self.kubo,
            self.account,
            self.session_id,
            self.graph,
            stored,
            committees,
            reply_key=public_key_bytes(self.reply),
        )
        now = time.time()
        for track in pending:
            track.delivered_at = now
        self.envelopes += len(envelopes)
        self._say("keys", sum(1 for t in self.rounds.values() if t.delivered_at), len(self.rounds))

    async def _finalize_segments(self, ready: Sequence[SegmentInfo]) -> set[int] | None:
        """Finalizes `ready` (`FINALIZE_DRAWS_PER_TRANSACTION` draws a transaction); returns the
        segments that escalated to a new round instead, or None when a call lost a race (someone
        else finalized first: the next block's read shows what they did)."""
        escalated: set[int] = set()
        lost = False
        for run in bounded_runs(ready, FINALIZE_DRAWS_PER_TRANSACTION, draws_of):
            ids = [info.segment_id for info in run]
            try:
                sent = await self.protocol.audit.finalize_segments(self.account, self.session_id, ids)
            except ContractReverted as exc:
                log.debug("session %s: finalizing %s lost a race: %s", self.session_id, ids, exc)
                lost = True
                continue
            self._tx("finalize_segments", sent.tx_hash)
            now = time.time()
            escalated_now = set(self.protocol.audit.escalations_in(sent))
            for segment in escalated_now:
                round_id = self._round_of(segment) + 1
                self._opened.setdefault(segment * 1000 + round_id, now)
                self._rounds_needed[segment] = max(self._rounds_needed.get(segment, 1), round_id + 1)
            escalated |= escalated_now
        if escalated:
            self._say_draws(f"{len(escalated)} escalated")
        return None if lost else escalated

    def _say_draws(self, message: str) -> None:
        """Committees drawn of the committees needed so far: every segment's first round, plus one per
        escalation, so the count never passes its total."""
        needed = sum(self._rounds_needed.values()) or len(self.record.stored.segments)
        self._say("draw", len(self.rounds), max(needed, len(self.rounds)), message)

    def _round_of(self, segment: int) -> int:
        return max((r for (s, r) in self.rounds if s == segment), default=0)

    async def _finalize_trace(self) -> None:
        try:
            _valid, sent = await self.protocol.audit.finalize_trace(self.account, self.session_id)
        except ContractReverted as exc:
            log.debug("session %s: finalizeTrace lost a race: %s", self.session_id, exc)
            return
        self.marks["verdict"] = time.time()
        self.finalize_tx, self.finalized_block = sent.tx_hash, sent.block_number
        self._tx("finalize_trace", sent.tx_hash)

    async def _settle(self, status: SessionStatus) -> None:
        self.marks.setdefault("verdict", time.time())
        unseated = sum(self._rounds_needed.values()) - len(self.rounds)
        if unseated > 0:
            self._say_draws(f"{unseated} round{'s' if unseated != 1 else ''} could not seat a committee")
        now = time.time()
        for track in self.rounds.values():
            track.revealed_at = track.revealed_at or now
            track.final_at = track.final_at or now
        if self.finalize_tx is None:
            self.finalize_tx, self.finalized_block = await self._trace_finalized_event()
        if self.distribute and status is SessionStatus.FINALIZED:
            try:
                sent = await self.protocol.audit.distribute_rewards(self.account, self.session_id)
                self._tx("distribute_rewards", sent.tx_hash)
            except ContractReverted as exc:
                log.debug("session %s: distributeRewards lost a race: %s", self.session_id, exc)

    async def _trace_finalized_event(self) -> tuple[str | None, int | None]:
        event = self.protocol.audit.contract.events.TraceFinalized()
        try:
            logs = await self.protocol.chain.get_logs(
                event, from_block=self.created_block, argument_filters={"sessionId": self.session_id}
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading TraceFinalized of session {self.session_id} failed: {exc}") from exc
        if not logs:
            return None, None
        return "0x" + bytes(logs[0]["transactionHash"]).hex(), int(logs[0]["blockNumber"])

    # ------------------------------------------------------------------ the outcome

    async def reports(self, grace_seconds: float) -> dict[tuple[int, int, int], AuditReport]:
        """Every report sealed to this session's reply key, by (segment, round, seat); waits up to
        `grace_seconds` for the reports of seats that revealed but whose report is not published yet."""
        expected = await self._revealed_seats()
        deadline = time.time() + grace_seconds
        found: dict[tuple[int, int, int], AuditReport] = {}
        failed: set[tuple[int, int, int]] = set()
        while True:
            published = await self.protocol.segment_keys.reports_for(self.session_id, from_block=self.created_block)
            fresh = [p for p in published if (p.segment_id, p.round, p.seat_index) not in set(found) | failed]
            for item, report in zip(
                fresh, await gather_bounded(_READ_CONCURRENCY, [partial(self._open, p) for p in fresh]), strict=True
            ):
                key = (item.segment_id, item.round, item.seat_index)
                if report is None:
                    failed.add(key)
                else:
                    found[key] = report
            self._say("reports", len(found), len(expected | set(found)))
            missing = expected - set(found) - failed
            if not missing or time.time() >= deadline:
                return found
            await asyncio.sleep(max(self.poll_seconds, 0.2))

    async def _open(self, published: Any) -> AuditReport | None:
        try:
            blob = await self.kubo.cat(published.cid, max_bytes=MAX_REPORT_FETCH_BYTES)
            return open_report(
                blob,
                private_key=self.reply,
                trace_root=self.record.stored.root,
                session_id=self.session_id,
                segment_index=published.segment_id,
                round=published.round,
                seat_index=published.seat_index,
                auditor=published.auditor,
            )
        except (IpfsError, VerificationError) as exc:
            if lost_service(exc) is not None:
                raise  # the IPFS node is away, the report is not bad: `retrying` waits for the node
            log.warning("session %s: report of seat %s unreadable: %s", self.session_id, published, exc)
            return None

    async def _revealed_seats(self) -> set[tuple[int, int, int]]:
        tracks = list(self.rounds.values())
        return {
            (track.segment, track.round, i)
            for track, seats in zip(tracks, await self._round_seats(tracks), strict=True)
            for i, info in enumerate(seats)
            if info.revealed
        }

    async def _round_seats(self, tracks: Sequence[RoundTrack]) -> list[list[SeatInfo]]:
        """The seats of each round in `tracks`, read in batches."""
        pairs = [(track, i) for track in tracks for i in range(len(track.members))]
        infos = await self.protocol.audit.seats([(self.session_id, t.segment, t.round, i) for t, i in pairs])
        seats: list[list[SeatInfo]] = []
        at = 0
        for track in tracks:
            seats.append(infos[at : at + len(track.members)])
            at += len(track.members)
        return seats

    async def outcomes(self, reports: dict[tuple[int, int, int], AuditReport]) -> list[SegmentOutcome]:
        stored = self.record.stored
        infos = await self._segments(range(len(stored.segments)))
        tau = int((await self.protocol.audit.session_params(self.session_id))["tauBps"]) / _BPS
        tracks = [self.rounds.get((info.segment_id, info.round)) for info in infos]
        drawn = [track for track in tracks if track is not None]
        seats_of = {(t.segment, t.round): seats for t, seats in zip(drawn, await self._round_seats(drawn), strict=True)}
        critiques_of: dict[int, list[Critique]] = {}
        for (segment, _round, _seat), r in sorted(reports.items()):
            critiques_of.setdefault(segment, []).append(
                Critique(r.auditor, r.tier, r.round, r.vote, r.score, r.critique, r.error_type, r.expected)
            )
        outcomes = []
        for info, key, leaf, track in zip(infos, stored.segments, stored.leaves, tracks, strict=True):
            tally = _tally(seats_of[(track.segment, track.round)]) if track is not None else None
            share = tally[0] if tally is not None else 0.0
            why = _why_undetermined(info, tally, tau) if info.status is SegmentStatus.UNDETERMINED else ""
            critiques = tuple(critiques_of.get(info.segment_id, ()))
            outcomes.append(
                SegmentOutcome(
                    info.segment_id,
                    key.node_id,
                    track.tier if track is not None else info.tier,
                    leaf.weight,
                    info.critical,
                    info.contradiction,
                    _OUTCOMES.get(info.status, Outcome.UNDETERMINED),
                    info.round + 1,
                    share,
                    critiques,
                    why,
                )
            )
        return outcomes


def _tally(seats: Sequence[SeatInfo]) -> tuple[float, float, float]:
    """Shares of a round's voting weight that revealed pass, revealed fail, and revealed nothing
    (silent seats count against both outcomes, as on chain). A seat weighs its units, the committee
    draws its member won, so the shares are of the committee size."""
    total = sum(seat.weight for seat in seats)
    if not total:
        return 0.0, 0.0, 1.0
    passed = sum(seat.weight for seat in seats if seat.revealed and seat.vote)
    failed = sum(seat.weight for seat in seats if seat.revealed and not seat.vote)
    return passed / total, failed / total, (total - passed - failed) / total


def _all_seats_done(info: SegmentInfo) -> bool:
    """Whether every seat of the round has revealed, abstained or been released (the chain's
    `revealedCount` counts seats, of which the round has `seat_count`)."""
    return info.seat_count > 0 and info.revealed_count >= info.seat_count


@dataclass
class _Loop:
    """What `SessionDriver.drive` carries from one step to the next."""

    open_ids: list[int]
    seen_block: int = -1


def _why_undetermined(info: SegmentInfo, tally: tuple[float, float, float] | None, tau: float) -> str:
    """Why a segment ended undetermined, from its last round as the chain left it."""
    if tally is None:
        return (
            f"no tier-{info.tier} committee of {info.committee_size} could be seated for round {info.round + 1} "
            f"(the eligible tier auditors' free stake did not back {info.committee_size} seats' penalties at each draw)"
        )
    passed, failed, silent = tally
    if passed == 0 and failed == 0:
        seats = f"{info.seat_count} seat" + ("" if info.seat_count == 1 else "s")
        return f"none of the {seats} of its last committee ({info.committee_size} votes) revealed a vote in time"
    return (
        f"the votes split: pass {passed:.2f}, fail {failed:.2f} and no vote {silent:.2f} of the committee's votes, "
        f"where a decision needs {tau:.2f}"
    )
