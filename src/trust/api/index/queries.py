"""What the explorer's pages ask of the index: sessions, segments with their rounds and seats,
auditors with their seats and history, each a frozen value of `trust.api.index.values`.

The model comes from the events (`projection`); the current figures a page shows come from the
contracts' views, read at the latest block, so they can be a few blocks ahead of the events indexed:
an auditor's stake, locks, reputation and availability (`AuditorRegistry.auditor`), its pending
stakers' reward, a seat's units and claimed flag (`TRUSTAudit.seat`), a session's parameters and
fee. Auditor views and fees are cached and re-read only after an event made them stale; a session's
parameters and a seat's units never change once written, so they are read once.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial, wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import AuditorInfo, SegmentInfo
from trust.api.index.ingest import DEFAULT_LOG_BLOCK_RANGE, DEFAULT_VIEW_CONCURRENCY, Ingest, bounded
from trust.api.index.projection import (
    AuditorRecord,
    LedgerEntry,
    Projection,
    RoundRecord,
    SeatKey,
    SegmentRecord,
    SessionRecord,
)
from trust.api.index.values import (
    AuditorDetail,
    AuditorHistoryPoint,
    AuditorPage,
    AuditorSeat,
    AuditorSort,
    AuditorSummary,
    RefreshReport,
    RoundDetail,
    SeatDetail,
    SeatOutcome,
    SegmentDetail,
    SegmentState,
    SegmentSummary,
    SessionDetail,
    SessionPage,
    SessionSummary,
    UnknownEntity,
    parse_address,
)
from trust.core.cid import cid_from_digest32

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "ChainIndex"]

DEFAULT_PAGE_SIZE = 20
"""Rows per page of the sessions and auditors lists."""
MAX_PAGE_SIZE = 100
"""The most rows a page may ask for: a page's view reads stay bounded."""
WAD = 10**18
"""The contracts' fixed-point one (reputation, the stakers' reward accumulator)."""

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _AuditorViews:
    info: AuditorInfo
    staker_pending_wei: int


def _page_bounds(page: int, per_page: int) -> tuple[int, int]:
    if page < 1:
        raise ValueError(f"page must be 1 or more, not {page}")
    if not 1 <= per_page <= MAX_PAGE_SIZE:
        raise ValueError(f"per_page must be from 1 to {MAX_PAGE_SIZE}, not {per_page}")
    start = (page - 1) * per_page
    return start, start + per_page


def _serialized(
    method: Callable[Concatenate[ChainIndex, P], Awaitable[R]],
) -> Callable[Concatenate[ChainIndex, P], Coroutine[Any, Any, R]]:
    """Runs a read method under the index's lock: it awaits view calls between reading the model,
    and a refresh running in between could change what it already read (a round drawn, a cache
    entry dropped)."""

    @wraps(method)
    async def locked(self: ChainIndex, *args: P.args, **kwargs: P.kwargs) -> R:
        async with self._lock:
            return await method(self, *args, **kwargs)

    return locked


class ChainIndex:
    """The explorer's model of one deployment, refreshed incrementally from the chain.

    `start_block` is the first block read (the deployment's block by default: nothing of the
    protocol happened before it). `block_range` bounds each `eth_getLogs` request; lower it for a
    provider that caps ranges. `confirmations` keeps the newest blocks out (0 on a devnet).
    `refresh()` and the read methods run one at a time (a lock): a read sees the model as of the last
    refresh, never half of one.
    """

    def __init__(
        self,
        protocol: Protocol,
        *,
        start_block: int | None = None,
        block_range: int = DEFAULT_LOG_BLOCK_RANGE,
        confirmations: int = 0,
        view_concurrency: int = DEFAULT_VIEW_CONCURRENCY,
    ) -> None:
        if block_range < 1:
            raise ValueError(f"block_range must be at least 1 block, not {block_range}")
        if confirmations < 0:
            raise ValueError(f"confirmations must be 0 or more, not {confirmations}")
        if view_concurrency < 1:
            raise ValueError(f"view_concurrency must be at least 1, not {view_concurrency}")
        self.protocol = protocol
        self.start_block = protocol.deployment.block_number if start_block is None else start_block
        self.block_range = block_range
        self.confirmations = confirmations
        self.view_concurrency = view_concurrency
        self._lock = asyncio.Lock()
        self._ingest = Ingest(
            protocol,
            start_block=self.start_block,
            block_range=block_range,
            confirmations=confirmations,
            view_concurrency=view_concurrency,
        )
        self._auditor_views: dict[str, _AuditorViews] = {}
        self._session_fees: dict[int, int] = {}
        self._session_params: dict[int, dict[str, int]] = {}
        self._seat_units: dict[SeatKey, int] = {}  # units of seats read so far (fixed at the draw)
        self._current_params: dict[str, int] | None = None

    @property
    def _model(self) -> Projection:
        return self._ingest.projection

    @property
    def _sessions(self) -> dict[int, SessionRecord]:
        return self._ingest.projection.sessions

    @property
    def _auditors(self) -> dict[str, AuditorRecord]:
        return self._ingest.projection.auditors

    @property
    def head_block(self) -> int:
        """The last block indexed (start_block - 1 before the first refresh)."""
        return self._ingest.head_block

    async def refresh(self) -> RefreshReport:
        """Reads the blocks mined since the last refresh and applies their events.

        Raises `ChainError` when the node cannot be read; what was read before the failing range
        stays applied, and the next refresh resumes there.
        """
        async with self._lock:
            try:
                return await self._ingest.refresh()
            finally:
                self._drop_stale()

    def _drop_stale(self) -> None:
        """Drops the cached views that the events applied since the last call made stale."""
        stale = self._model.take_stale()
        if stale.everything:
            self._seat_units.clear()
            self._session_params.clear()
            self._session_fees.clear()
        if stale.everything or stale.all_auditors:
            self._auditor_views.clear()
        if stale.everything or stale.params:
            self._current_params = None
        for address in stale.auditors:
            self._auditor_views.pop(address, None)
        for session_id in stale.fees:
            self._session_fees.pop(session_id, None)

    # ------------------------------------------------------------------------------------ views

    async def _params(self, session_id: int) -> dict[str, int]:
        """A session's parameters: copied into it at creation and never changed, so read once."""
        params = self._session_params.get(session_id)
        if params is None:
            params = await self.protocol.audit.session_params(session_id)
            self._session_params[session_id] = params
        return params

    async def _fees(self, session_ids: Sequence[int]) -> dict[int, int]:
        """Each session's fee from its view (a top-up in `registerSegments` is in no event)."""
        missing = [s for s in session_ids if s not in self._session_fees]
        if missing:
            infos = await bounded(self.view_concurrency, [partial(self.protocol.audit.session, s) for s in missing])
            for info in infos:
                self._session_fees[info.session_id] = info.fee_wei
        return {s: self._session_fees[s] for s in session_ids}

    async def _views(self, addresses: Sequence[str]) -> dict[str, _AuditorViews]:
        """Registry views of auditors, re-read only after an event touched them."""
        missing = [a for a in addresses if a not in self._auditor_views]
        if missing:
            registry = self.protocol.registry

            async def read(address: str) -> _AuditorViews:
                info, pending = await asyncio.gather(registry.auditor(address), registry.pending_staker_reward(address))
                return _AuditorViews(info, pending)

            views = await bounded(self.view_concurrency, [partial(read, a) for a in missing])
            self._auditor_views.update(zip(missing, views, strict=True))
        return {a: self._auditor_views[a] for a in addresses}

    # ------------------------------------------------------------------------------------ sessions

    def _session_state(self, session_id: int) -> SessionRecord:
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownEntity(
                "session",
                str(session_id),
                f"no session {session_id} on chain {self.protocol.chain.chain_id} up to block {self.head_block} "
                f"({len(self._sessions)} sessions so far; ids start at 1)",
            )
        return session

    @staticmethod
    def _segment_summary(segment: SegmentRecord) -> SegmentSummary:
        return SegmentSummary(
            session_id=segment.session_id,
            segment_id=segment.segment_id,
            tier=segment.tier,
            current_tier=segment.current.tier,
            weight=segment.weight,
            critical=segment.critical,
            contradiction=segment.contradiction,
            content_digest=segment.content_digest,
            cid=cid_from_digest32(segment.content_digest),
            state=segment.state,
            rounds=len(segment.rounds),
            registered=segment.registered,
            finalized=segment.finalized,
        )

    @staticmethod
    def _session_summary(session: SessionRecord, fee_wei: int) -> SessionSummary:
        states = [s.state for s in session.segments.values()]
        return SessionSummary(
            session_id=session.session_id,
            provider=session.provider,
            trace_root=session.trace_root,
            fee_wei=fee_wei,
            segment_count=session.segment_count,
            registered_count=len(session.segments),
            state=session.state,
            valid=session.valid,
            created=session.created,
            passed=states.count(SegmentState.PASSED),
            failed=states.count(SegmentState.FAILED),
            undetermined=states.count(SegmentState.UNDETERMINED),
            pending=sum(1 for s in states if not s.is_final) + session.segment_count - len(states),
            trace_finalized=session.trace_finalized,
        )

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    @_serialized
    async def sessions(self, *, page: int = 1, per_page: int = DEFAULT_PAGE_SIZE) -> SessionPage:
        """Sessions, newest (highest id) first. Raises `ValueError` for a page or size out of range."""
        start, stop = _page_bounds(page, per_page)
        ids = sorted(self._sessions, reverse=True)[start:stop]
        fees = await self._fees(ids)
        items = tuple(self._session_summary(self._sessions[i], fees[i]) for i in ids)
        return SessionPage(items, len(self._sessions), page, per_page)

    @_serialized
    async def session(self, session_id: int) -> SessionDetail:
        """One session. Raises `UnknownEntity` when the index holds no such session."""
        session = self._session_state(session_id)
        params = await self._params(session_id)
        fee = (await self._fees([session_id]))[session_id]
        segments = [session.segments[i] for i in sorted(session.segments)]
        failed = [s for s in segments if s.state in (SegmentState.FAILED, SegmentState.UNDETERMINED)]
        aligned_keys = [
            (session_id, s.segment_id, s.current.number, i)
            for s in segments
            if s.state in (SegmentState.PASSED, SegmentState.FAILED)
            for i, a in enumerate(s.current.members)
            if s.current.outcome(a) is SeatOutcome.ALIGNED
        ]
        # Aligned units, as the chain's `alignedSeats` counts them: the fee pays R per unit.
        aligned = sum((await self._units(aligned_keys)).values())
        return SessionDetail(
            session=self._session_summary(session, fee),
            segments=tuple(self._segment_summary(s) for s in segments),
            randomness_block=session.randomness_block,
            params_version=session.params_version,
            pass_weight=sum(s.weight for s in segments if s.state is SegmentState.PASSED),
            total_weight=sum(s.weight for s in segments),
            beta_bps=params["betaBps"],
            tau_bps=params["tauBps"],
            critical_failed=sum(1 for s in failed if s.critical),
            contradictions_confirmed=sum(1 for s in failed if s.contradiction),
            share_bps=(
                params["auditorShareBps"],
                params["treasuryShareBps"],
                params["stakerShareBps"],
                params["insuranceShareBps"],
            ),
            fee_split=session.fee_split,
            claims=tuple(session.claims),
            aligned_seats=aligned,
            refund_wei=session.refund_wei,
        )

    @_serialized
    async def segment(self, session_id: int, segment_id: int) -> SegmentDetail:
        """One segment with every round, its seats' weights and claimed flags read from the chain.
        Raises `UnknownEntity` for an unknown session or segment."""
        session = self._session_state(session_id)
        segment = session.segments.get(segment_id)
        if segment is None:
            raise UnknownEntity(
                "segment",
                f"{session_id}/{segment_id}",
                f"session {session_id} has no segment {segment_id}: its segments are numbered 0 to "
                f"{session.segment_count - 1}" + ("" if session.segment_count else " (none registered yet)"),
            )
        params = await self._params(session_id)
        now = await self.protocol.audit.segment(session_id, segment_id)
        keys = [(r.number, i) for r in segment.rounds for i in range(len(r.members))]
        seats = await bounded(
            self.view_concurrency, [partial(self.protocol.audit.seat, session_id, segment_id, r, i) for r, i in keys]
        )
        views = dict(zip(keys, seats, strict=True))
        for (number, index), view in views.items():
            self._seat_units[(session_id, segment_id, number, index)] = int(view.weight)
        rounds = []
        for r in segment.rounds:
            details = []
            for index, auditor in enumerate(r.members):
                view = views[(r.number, index)]
                revealed = r.revealed.get(auditor)
                details.append(
                    SeatDetail(
                        index=index,
                        auditor=auditor,
                        votes=int(view.weight),
                        committed=auditor in r.committed_at,
                        revealed=revealed is not None,
                        vote=None if revealed is None else revealed[0],
                        outcome=r.outcome(auditor),
                        forfeited_units=r.forfeited.get(auditor, 0),
                        claimed=bool(view.claimed),
                        committed_at=r.committed_at.get(auditor),
                        revealed_at=None if revealed is None else revealed[1],
                        envelope=r.envelopes.get(index),
                        report=r.reports.get(index),
                    )
                )
            commit_deadline, reveal_deadline = self._deadlines(r, now)
            rounds.append(
                RoundDetail(
                    number=r.number,
                    tier=r.tier,
                    committee_size=r.committee_size or self._committee_size(params, r.tier, r.number),
                    randomness_block=r.randomness_block,
                    randomness_refreshes=tuple(r.refreshes),
                    unavailable=tuple(r.unavailable),
                    drawn=r.drawn,
                    scheduled_commit_deadline=r.commit_deadline,
                    commit_deadline=commit_deadline,
                    reveal_deadline=reveal_deadline,
                    closed_early=(
                        commit_deadline is not None
                        and r.commit_deadline is not None
                        and commit_deadline < r.commit_deadline
                    ),
                    commits_complete=r.commits_complete,
                    seats=tuple(details),
                    events=tuple(r.events),
                    closed=r.closed,
                    result=r.result,
                    pass_votes=sum(s.votes for s in details if s.vote is True),
                    fail_votes=sum(s.votes for s in details if s.vote is False),
                    total_votes=sum(s.votes for s in details),
                )
            )
        return SegmentDetail(self._segment_summary(segment), tuple(rounds), params["tauBps"], params["maxRounds"])

    @staticmethod
    def _deadlines(round_: RoundRecord, view: SegmentInfo) -> tuple[int | None, int | None]:
        """A round's effective (commit, reveal) deadlines; see `RoundDetail`."""
        if round_.commit_deadline is None or round_.reveal_deadline is None:
            return None, None
        if view.round == round_.number and view.commit_deadline != 0:
            return view.commit_deadline, view.reveal_deadline
        complete = round_.commits_complete
        early_reveal = any(at.timestamp <= round_.commit_deadline for _, at in round_.revealed.values())
        if complete is not None and early_reveal:
            reveal_window = round_.reveal_deadline - round_.commit_deadline
            return complete.timestamp - 1, complete.timestamp - 1 + reveal_window
        return round_.commit_deadline, round_.reveal_deadline

    @staticmethod
    def _committee_size(params: Mapping[str, int], tier: int, round_number: int) -> int | None:
        """A first round's committee size before its draw (the session's k of the tier); an
        escalated round's size comes with `SegmentEscalated`."""
        if round_number != 0:
            return None
        return params.get(f"committeeSizeTier{tier}")

    # ------------------------------------------------------------------------------------ auditors

    def _auditor_state(self, address: str) -> AuditorRecord:
        state = self._auditors.get(address)
        if state is None:
            raise UnknownEntity(
                "auditor",
                address,
                f"{address} has not registered as an auditor on chain {self.protocol.chain.chain_id} "
                f"(up to block {self.head_block}; {len(self._auditors)} auditors registered)",
            )
        return state

    def _outcomes(self, state: AuditorRecord) -> tuple[dict[SeatOutcome, int], list[SeatKey]]:
        """The auditor's seats by outcome, and its aligned seats of segments' final rounds (the
        seats a distribution pays, R per unit)."""
        outcomes: dict[SeatOutcome, int] = defaultdict(int)
        aligned: list[SeatKey] = []
        for key in state.seats:
            segment, round_ = self._model.round_of(key)
            outcome = round_.outcome(state.address)
            outcomes[outcome] += 1
            if outcome is SeatOutcome.ALIGNED and round_ is segment.current:
                aligned.append((*key, round_.seat_of(state.address)))
        return outcomes, aligned

    async def _aligned_units(self, state: AuditorRecord) -> dict[int, int]:
        """The units of the auditor's aligned seats per session (see `_outcomes`)."""
        units = await self._units(self._outcomes(state)[1])
        by_session: dict[int, int] = defaultdict(int)
        for key, count in units.items():
            by_session[key[0]] += count
        return by_session

    async def _units(self, keys: Sequence[SeatKey]) -> dict[SeatKey, int]:
        """Each seat's units (the committee draws its member won, `TRUSTAudit.seat`'s weight), read
        once per seat: they are fixed when the committee is drawn."""
        missing = [key for key in dict.fromkeys(keys) if key not in self._seat_units]
        views = await bounded(self.view_concurrency, [partial(self.protocol.audit.seat, *key) for key in missing])
        for key, view in zip(missing, views, strict=True):
            self._seat_units[key] = int(view.weight)
        return {key: self._seat_units[key] for key in keys}

    def _summary(self, state: AuditorRecord, views: _AuditorViews, aligned_units: Mapping[int, int]) -> AuditorSummary:
        outcomes, _ = self._outcomes(state)
        claimed_units: dict[int, int] = defaultdict(int)
        for claim in state.claims:
            claimed_units[claim.session_id] += claim.units
        claimable = 0
        for session_id, aligned in aligned_units.items():
            split = self._sessions[session_id].fee_split
            if split is not None:
                claimable += max(aligned - claimed_units[session_id], 0) * split.per_seat_wei
        info = views.info
        return AuditorSummary(
            address=state.address,
            tier=info.tier if info.registered else state.tier,
            metadata_uri=info.metadata_uri if info.registered else state.metadata_uri,
            registered=state.registered,
            is_registered=info.registered,
            available=info.available,
            credentialed=info.credentialed,
            stake_units=info.stake,
            locked_units=info.locked,
            unbonding_units=info.unbonding,
            reputation_wad=info.reputation_wad,
            seats=len(state.seats),
            open_seats=outcomes[SeatOutcome.PENDING],
            aligned=outcomes[SeatOutcome.ALIGNED],
            misaligned=outcomes[SeatOutcome.MISALIGNED],
            silent=outcomes[SeatOutcome.SILENT],
            released=outcomes[SeatOutcome.RELEASED] + outcomes[SeatOutcome.UNDELIVERED],
            forfeited_units=sum(f.amount_units for f in state.forfeits),
            rewards_claimed_wei=sum(c.amount_wei for c in state.claims),
            rewards_claimable_wei=claimable,
            staker_claimed_wei=sum(c.amount_wei for c in state.staker_claims),
            staker_pending_wei=views.staker_pending_wei,
        )

    @property
    def auditor_count(self) -> int:
        return len(self._auditors)

    @_serialized
    async def auditors(
        self,
        *,
        sort: AuditorSort = AuditorSort.STAKE,
        descending: bool = True,
        page: int = 1,
        per_page: int = DEFAULT_PAGE_SIZE,
    ) -> AuditorPage:
        """Registered auditors ordered by stake, reputation or earnings (ties by address). Sorting
        needs every auditor's views, re-read only for those an event touched since."""
        start, stop = _page_bounds(page, per_page)
        addresses = sorted(self._auditors)
        views = await self._views(addresses)
        summaries = [
            self._summary(self._auditors[a], views[a], await self._aligned_units(self._auditors[a])) for a in addresses
        ]
        key: Callable[[AuditorSummary], int] = {
            AuditorSort.STAKE: lambda s: s.stake_units,
            AuditorSort.REPUTATION: lambda s: s.reputation_wad,
            AuditorSort.EARNINGS: lambda s: s.earnings_wei,
        }[sort]
        summaries.sort(key=key, reverse=descending)  # stable: ties keep address order
        return AuditorPage(tuple(summaries[start:stop]), len(summaries), page, per_page, sort, descending)

    @_serialized
    async def auditor(self, address: str) -> AuditorDetail:
        """One auditor. Raises `ValueError` for a malformed address and `UnknownEntity` for an
        address that never registered."""
        state = self._auditor_state(parse_address(address))
        views = (await self._views([state.address]))[state.address]
        seats = []
        for key in reversed(state.seats):
            segment, round_ = self._model.round_of(key)
            revealed = round_.revealed.get(state.address)
            seats.append(
                AuditorSeat(
                    session_id=segment.session_id,
                    segment_id=segment.segment_id,
                    round=round_.number,
                    seat_index=round_.seat_of(state.address),
                    tier=round_.tier,
                    drawn=round_.drawn or segment.registered,
                    committed=state.address in round_.committed_at,
                    revealed=revealed is not None,
                    vote=None if revealed is None else revealed[0],
                    outcome=round_.outcome(state.address),
                    forfeited_units=round_.forfeited.get(state.address, 0),
                )
            )
        return AuditorDetail(
            auditor=self._summary(state, views, await self._aligned_units(state)),
            seats=tuple(seats),
            forfeits=tuple(reversed(state.forfeits)),
            claims=tuple(reversed(state.claims)),
            staker_claims=tuple(reversed(state.staker_claims)),
            reputation_history=tuple(reversed(state.reputation)),
            history=await self._history(state),
            head_time=self._ingest.head_time,
        )

    # ------------------------------------------------------------------------------------ history

    async def _history(self, state: AuditorRecord) -> tuple[AuditorHistoryPoint, ...]:
        """The auditor's figures after each event that changed them, replayed as the registry keeps
        them (see `AuditorHistoryPoint`).

        Stake: `Staked` and `UnstakeRequested` report the stake after them, `StakeForfeited` the stake
        and unbonding tokens after it (a seat's lock, a deserter's unbonding tokens or a governance
        slash's free and unbonding stake: the event says, nothing is worked out). Stakers' share: the
        registry's accumulator times the stake, checkpointed (rounded down) before every stake
        change and at every governance slash, as `_checkpoint` does (a deserter's charge, which
        leaves the stake as it was, is no checkpoint). The accumulator streams with time (each
        notification is paid out over the reward period), so it is read at each point's block
        (`rewardPerStakeWad`; it advances once per block time, before any stake change in that
        block, so every event of a block sees the same value): a point equals
        `pendingStakerReward` at its block plus the claims.
        Reputation: the initial reputation of the parameters in force at registration, then every
        `ReputationUpdated`.
        """
        items = [LedgerEntry(state.registered_seq, state.registered, "registered", 0), *state.ledger]
        items += [
            LedgerEntry(seq, at, "stakers' reward", acc)
            for seq, at, acc in self._model.notifications
            if seq > state.registered_seq
        ]
        for session_id, aligned in (await self._aligned_units(state)).items():
            session = self._sessions[session_id]
            if session.fee_split is not None:
                earned = aligned * session.fee_split.per_seat_wei
                items.append(LedgerEntry(session.distributed_seq, session.fee_split.at, "rewards distributed", earned))
        items.sort(key=lambda item: item.seq)

        blocks = sorted({item.at.block_number for item in items})
        registry = self.protocol.registry
        reads = [partial(registry.reward_per_stake_wad, block=b) for b in blocks]
        accumulators = dict(zip(blocks, await bounded(self.view_concurrency, reads), strict=True))
        acc = paid = accumulators[state.registered.block_number]  # registering checkpoints
        accrued = stake = unbonding = seat_rewards = staker_claimed = claimed = 0
        reputation = await self._initial_reputation(state.registered_seq)
        points: list[AuditorHistoryPoint] = []
        for item in items:
            at, event, amount, stake_after = item.at, item.event, item.amount, item.stake_after
            acc = accumulators[at.block_number]
            checkpoints = event in ("staked", "unstake requested", "stakers' share claimed") or (
                event == "forfeit" and (stake_after != stake or item.governance)
            )
            if checkpoints:
                accrued += stake * (acc - paid) // WAD  # the registry's _checkpoint, rounding down
                paid = acc
            if event == "staked" and stake_after is not None:
                stake = stake_after
            elif event == "unstake requested" and stake_after is not None:
                stake, unbonding = stake_after, amount
            elif event == "unstaked":
                unbonding = 0  # executeUnstake pays out everything unbonding
            elif event == "forfeit" and stake_after is not None and item.unbonding_after is not None:
                stake, unbonding = stake_after, item.unbonding_after
            elif event == "reputation":
                reputation = amount
            elif event == "stakers' share claimed":
                staker_claimed += amount
                claimed += amount
                accrued = 0
            elif event == "seat rewards claimed":
                claimed += amount
            elif event == "rewards distributed":
                seat_rewards += amount
            share = staker_claimed + accrued + stake * (acc - paid) // WAD
            points.append(AuditorHistoryPoint(at, event, stake, unbonding, reputation, seat_rewards, share, claimed))
        return tuple(points)

    async def _initial_reputation(self, seq: int) -> int:
        """The initial reputation in force at the event at `seq`: the `previous` parameters of the
        first `ParamsUpdated` after it, or the current parameters when none came after."""
        for at_seq, before, _after in self._model.initial_reputations:
            if at_seq > seq:
                return before
        if self._current_params is None:
            self._current_params = await self.protocol.params.params()
        return int(self._current_params["initialReputationWad"])
