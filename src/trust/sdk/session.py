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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from trust.chain.protocol import Protocol
from trust.chain.types import CommitteeDrawn, SegmentInfo, SegmentStatus, SessionStatus
from trust.delivery import deliver_keys
from trust.errors import AuditTimeout, ChainError, ContractReverted, IpfsError, VerificationError
from trust.graphs.cig import Cig
from trust.graphs.hdag import Hdag
from trust.privacy.envelopes import public_key_bytes
from trust.privacy.reports import AuditReport, open_report
from trust.sdk.journal import SessionRecord
from trust.sdk.outcome import SegmentOutcome
from trust.sdk.progress import ProgressCallback, ProgressEvent
from trust.sdk.result import Critique, Outcome
from trust.sdk.timings import RoundTrack
from trust.storage.kubo import KuboClient

__all__ = ["RoundTrack", "SessionDriver"]

log = logging.getLogger("trust.sdk")

_OUTCOMES = {
    SegmentStatus.PASSED: Outcome.PASSED,
    SegmentStatus.FAILED: Outcome.FAILED,
    SegmentStatus.UNDETERMINED: Outcome.UNDETERMINED,
}
_READ_CONCURRENCY = 16
MAX_REPORT_FETCH_BYTES = 64 * 1024
"""Largest report blob fetched from IPFS (reports hold one critique, a few KiB at most)."""


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
    transactions: dict[str, list[str]] = field(default_factory=dict)
    rounds: dict[tuple[int, int], RoundTrack] = field(default_factory=dict)
    marks: dict[str, float] = field(default_factory=dict)
    created_block: int = 0
    finalized_block: int | None = None
    finalize_tx: str | None = None
    envelopes: int = 0
    _opened: dict[int, float] = field(default_factory=dict)

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
        """Sends `createSession` with every segment and the fee; returns the session id."""
        stored = self.record.stored
        self.marks["create_sent"] = time.time()
        self._say("session", 0, 1, f"createSession with {len(stored.segments)} segments, fee {fee_wei} wei")
        session_id, sent = await self.protocol.audit.create_session(self.account, stored.root, stored.specs(), fee_wei)
        self.marks["created"] = time.time()
        self.record.session_id = session_id
        self.record.created_tx = sent.tx_hash
        self.created_block = sent.block_number
        self._tx("create_session", sent.tx_hash)
        self._say("session", 1, 1, f"session {session_id} opened in block {sent.block_number}")
        return session_id

    async def attach(self) -> None:
        """Picks up a session opened earlier (`resume`): its creation block and its committees so far."""
        if self.record.created_tx is not None:
            receipt = await self.protocol.chain.w3.eth.get_transaction_receipt(self.record.created_tx)  # type: ignore[arg-type]
            self.created_block = int(receipt["blockNumber"])
        self.marks.setdefault("create_sent", time.time())
        for committee in await self.protocol.audit.committees_drawn(self.created_block, self.session_id):
            self._track(committee, time.time(), delivered=False)

    # ------------------------------------------------------------------ the loop

    async def drive(self, deadline: float | None) -> None:
        """Runs the session until the trace is final (and the fee split, with `distribute`)."""
        chain = self.protocol.chain
        total = len(self.record.stored.segments)
        seen_block = -1
        open_ids = list(range(total))
        for segment in open_ids:
            self._opened.setdefault(segment, self.marks.get("created", time.time()))
        while True:
            if deadline is not None and time.time() > deadline:
                raise AuditTimeout(
                    f"session {self.session_id}: no verdict within the latency budget; the session goes on on "
                    f"chain, resume it with `trust submit --resume {self.session_id}`",
                    self.session_id,
                )
            block = await chain.w3.eth.get_block("latest")
            number, timestamp = int(block["number"]), int(block["timestamp"])
            if number == seen_block:
                await asyncio.sleep(self.poll_seconds)
                continue
            seen_block = number
            session = await self.protocol.audit.session(self.session_id)
            if session.status in (SessionStatus.FINALIZED, SessionStatus.DISTRIBUTED):
                await self._settle(session.status)
                return
            infos = await self._segments(open_ids)
            now = time.time()
            for info in infos:
                self._observe(info, now)
            open_ids = [info.segment_id for info in infos if not info.status.is_final]
            self._say("final", total - len(open_ids), total)
            self._say("votes", sum(1 for t in self._latest().values() if t.revealed_at is not None), total)
            await self._draw([i for i in infos if i.status is SegmentStatus.AWAITING_DRAW], number)
            await self._find_committees([i for i in infos if i.status is SegmentStatus.VOTING])
            await self._deliver()
            if not self.finalize:
                continue
            ready = [
                info.segment_id
                for info in infos
                if info.status is SegmentStatus.VOTING
                and (info.revealed_count == info.committee_size or timestamp > info.reveal_deadline)
            ]
            if ready:
                await self._finalize_segments(ready)
            if not open_ids or session.finalized_count == session.segment_count:
                await self._finalize_trace()

    async def _segments(self, ids: Sequence[int]) -> list[SegmentInfo]:
        gate = asyncio.Semaphore(_READ_CONCURRENCY)

        async def one(segment: int) -> SegmentInfo:
            async with gate:
                return await self.protocol.audit.segment(self.session_id, segment)

        return list(await asyncio.gather(*(one(i) for i in ids)))

    def _latest(self) -> dict[int, RoundTrack]:
        latest: dict[int, RoundTrack] = {}
        for (segment, _round_id), track in sorted(self.rounds.items()):
            latest[segment] = track
        return latest

    def _observe(self, info: SegmentInfo, now: float) -> None:
        track = self.rounds.get((info.segment_id, info.round))
        if info.status is SegmentStatus.AWAITING_DRAW and info.round > 0:
            self._opened.setdefault(info.segment_id * 1000 + info.round, now)  # escalated: a new round waits
            earlier = self.rounds.get((info.segment_id, info.round - 1))
            if earlier is not None and earlier.final_at is None:
                earlier.final_at = now
        if track is None:
            return
        if track.revealed_at is None and (
            info.status.is_final or (info.status is SegmentStatus.VOTING and info.revealed_count == info.committee_size)
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
        ready = [info.segment_id for info in waiting if block > info.randomness_block]
        if not ready:
            return
        try:
            sent = await self.protocol.audit.assign_auditors(self.account, self.session_id, ready)
        except ContractReverted as exc:
            log.debug("session %s: draw of %s lost a race or waits: %s", self.session_id, ready, exc)
            return
        self._tx("assign_auditors", sent.tx_hash)
        now = time.time()
        drawn = self.protocol.audit.committees_in(sent)
        for committee in drawn:
            self._track(committee, now, delivered=False)
        self._say("draw", len(self.rounds), len(self.record.stored.segments), f"{len(drawn)} committees drawn")

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

    async def _finalize_segments(self, ready: Sequence[int]) -> None:
        try:
            sent = await self.protocol.audit.finalize_segments(self.account, self.session_id, ready)
        except ContractReverted as exc:
            log.debug("session %s: finalizing %s lost a race: %s", self.session_id, ready, exc)
            return
        self._tx("finalize_segments", sent.tx_hash)
        now = time.time()
        escalated = set(self.protocol.audit.escalations_in(sent))
        for segment in ready:
            if segment in escalated:
                self._opened.setdefault(segment * 1000 + self._round_of(segment) + 1, now)
        if escalated:
            self._say("draw", len(self.rounds), len(self.record.stored.segments), f"{len(escalated)} escalated")

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
            logs = await event.get_logs(
                from_block=self.created_block, to_block="latest", argument_filters={"sessionId": self.session_id}
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
            for item, report in zip(fresh, await asyncio.gather(*(self._open(p) for p in fresh)), strict=True):
                key = (item.segment_id, item.round, item.seat_index)
                if report is None:
                    failed.add(key)
                else:
                    found[key] = report
            self._say("reports", len(found), len(expected))
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
            log.warning("session %s: report of seat %s unreadable: %s", self.session_id, published, exc)
            return None

    async def _revealed_seats(self) -> set[tuple[int, int, int]]:
        seats: set[tuple[int, int, int]] = set()
        for (segment, round_id), track in self.rounds.items():
            infos = await asyncio.gather(
                *(self.protocol.audit.seat(self.session_id, segment, round_id, i) for i in range(len(track.members)))
            )
            seats |= {(segment, round_id, i) for i, info in enumerate(infos) if info.revealed}
        return seats

    async def outcomes(self, reports: dict[tuple[int, int, int], AuditReport]) -> list[SegmentOutcome]:
        stored = self.record.stored
        infos = await self._segments(range(len(stored.segments)))
        outcomes = []
        for info, key, leaf in zip(infos, stored.segments, stored.leaves, strict=True):
            track = self.rounds.get((info.segment_id, info.round))
            share = await self._pass_share(track) if track is not None else 0.0
            critiques = tuple(
                Critique(r.auditor, r.tier, r.round, r.vote, r.score, r.critique, r.error_type, r.expected)
                for (segment, _round, _seat), r in sorted(reports.items())
                if segment == info.segment_id
            )
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
                )
            )
        return outcomes

    async def _pass_share(self, track: RoundTrack) -> float:
        seats = await asyncio.gather(
            *(
                self.protocol.audit.seat(self.session_id, track.segment, track.round, i)
                for i in range(len(track.members))
            )
        )
        total = sum(seat.weight for seat in seats)
        passed = sum(seat.weight for seat in seats if seat.revealed and seat.vote)
        return passed / total if total else 0.0
