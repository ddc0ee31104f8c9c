"""The explorer's model of a deployment: the protocol's events, applied in chain order (block, log
index), as sessions, segments, rounds, seats and auditors' ledgers.

Pure: `Projection.apply` takes one decoded event and changes the model; nothing here reads the
chain or the clock. What the events leave to the contracts' views (a seat's units, a session's fee
after a top-up, an auditor's current figures) the queries read, and `stale` tells them which of the
views they cached an event has changed since.

Attribution that events leave implicit, and how it is made:
- `VoteCommitted`, `VoteRevealed`, `SegmentSettlementProgress`, `SeatUndelivered`,
  `CommitteeUnavailable` and the envelope events name their round; `RandomnessRefreshed` does not,
  and belongs to the segment's current round (only a round waiting for its draw asks for fresh
  randomness).
- `StakeForfeited` carries the auditor's stake and unbonding tokens after the forfeit, so the
  auditor's history takes them as they are: nothing here works out whether a forfeit came out of
  locked, free or unbonding stake.
- `AuditorSlashed` names the session (zero for a governance slash, which shows only in the
  auditor's forfeits, `StakeForfeited`) but not the segment, round or seat: finalizing a segment
  emits one per forfeited seat right before its `SegmentFinalized` or `SegmentEscalated`, in the same
  transaction, so the slashes are held per transaction and given to the next segment event of that
  transaction. A round settled in steps (`settleSegment`, issue M4) emits `SegmentSettlementProgress`
  after each step's slashes: they are kept with the round and given to it, in order, when it closes.
  The deciding transaction of an escalated segment also settles the earlier rounds' revealed seats,
  after the final round's, in round and seat order (`Tally._withEarlierRounds`); their slashes are
  matched to the seats in that order (`_judge_escalated`).
- `SegmentFinalized(passed=false)` means Failed or Undetermined: a round with no committee ended
  Undetermined (its third draw found too few auditors); otherwise the segment view says which, and
  the ingest reads it once (`unresolved`, `settle_undetermined`).
- `SeatUndelivered` releases a seat whose provider delivered no key envelope in time (issue M3);
  the seat shows as "undelivered" and is not settled again when its round closes.
- `CommitteeDrawn` names the distinct members seated, not how many of the committee's draws each
  won (committees are drawn with replacement, issue L2): a seat's units come from its seat view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from eth_utils import to_checksum_address

from trust.api.index.values import (
    DrawAttempt,
    EnvelopeRef,
    FeeSplit,
    Forfeit,
    RandomnessRefresh,
    ReputationChange,
    RewardClaim,
    RoundResult,
    SeatOutcome,
    SegmentState,
    SessionState,
    StakerClaim,
    TxRef,
    VoteEvent,
)
from trust.core.cid import cid_from_bytes
from trust.errors import VerificationError

__all__ = [
    "AuditorRecord",
    "EventKey",
    "Handler",
    "LedgerEntry",
    "Projection",
    "RoundRecord",
    "SeatKey",
    "SegmentRecord",
    "SessionRecord",
    "Stale",
    "cid_text",
]

SeatKey = tuple[int, int, int, int]
"""(session, segment, round, seat index)."""
EventKey = tuple[str, str]
"""(contract, event name): "audit", "registry", "segment_keys" or "params", and the event's name
(both the registry and the audit contract have a `CommitteeUnavailable`)."""
Handler = Callable[[Mapping[str, Any], TxRef], None]


@dataclass(slots=True)
class RoundRecord:
    """One round of a segment as its events tell it; `seq` fields are chain-order positions."""

    number: int
    tier: int
    committee_size: int | None
    randomness_block: int | None
    refreshes: list[RandomnessRefresh] = field(default_factory=list)
    unavailable: list[DrawAttempt] = field(default_factory=list)
    drawn: TxRef | None = None
    members: tuple[str, ...] = ()
    commit_deadline: int | None = None
    reveal_deadline: int | None = None
    events: list[VoteEvent] = field(default_factory=list)
    committed_at: dict[str, TxRef] = field(default_factory=dict)
    commits_complete: TxRef | None = None
    revealed: dict[str, tuple[bool, TxRef]] = field(default_factory=dict)
    undelivered: dict[str, TxRef] = field(default_factory=dict)
    """Seats released by `claimUndelivered` (no key envelope in time), settled at the claim."""
    forfeited: dict[str, int] = field(default_factory=dict)
    slash_order: list[tuple[str, int]] = field(default_factory=list)
    """The forfeits that settled the round, in the order they were emitted: those of its settlement
    steps (`settleSegment`, issue M4), then those of the transaction that closed it."""
    step_slashes: list[tuple[str, int]] = field(default_factory=list)
    """The forfeits of the round's settlement steps so far (before the step that closes it)."""
    envelopes: dict[int, EnvelopeRef] = field(default_factory=dict)
    reports: dict[int, EnvelopeRef] = field(default_factory=dict)
    closed: TxRef | None = None
    result: RoundResult | None = None
    verdict: RoundResult | None = None
    """For an escalated round: the segment's final verdict once known, which judges its revealed seats."""

    def seat_of(self, auditor: str) -> int:
        return self.members.index(auditor) if auditor in self.members else -1

    def outcome(self, auditor: str) -> SeatOutcome:
        if auditor in self.undelivered:
            return SeatOutcome.UNDELIVERED
        if self.result is None:
            return SeatOutcome.PENDING
        revealed = self.revealed.get(auditor)
        if revealed is None:
            return SeatOutcome.SILENT
        # An escalated round's revealed seats stay locked until the segment's verdict and are judged
        # against it; released only when the segment ends undetermined.
        judged_by = self.verdict if self.result is RoundResult.ESCALATED else self.result
        if judged_by is None:
            return SeatOutcome.PENDING
        if judged_by is RoundResult.UNDETERMINED:
            return SeatOutcome.RELEASED
        return SeatOutcome.ALIGNED if revealed[0] == (judged_by is RoundResult.PASSED) else SeatOutcome.MISALIGNED


@dataclass(slots=True)
class SegmentRecord:
    session_id: int
    segment_id: int
    tier: int
    weight: int
    critical: bool
    contradiction: bool
    content_digest: bytes
    registered: TxRef
    rounds: list[RoundRecord]
    state: SegmentState = SegmentState.AWAITING_DRAW
    finalized: TxRef | None = None

    @property
    def current(self) -> RoundRecord:
        return self.rounds[-1]

    def round(self, number: int) -> RoundRecord:
        """Round `number`, created (tier and size unknown) if events skipped it."""
        while len(self.rounds) <= number:
            self.rounds.append(RoundRecord(len(self.rounds), self.current.tier, None, None))
        return self.rounds[number]


@dataclass(slots=True)
class SessionRecord:
    session_id: int
    trace_root: bytes
    created: TxRef
    provider: str = ""
    segment_count: int = 0
    fee_wei: int = 0
    randomness_block: int = 0
    params_version: int = 0
    segments: dict[int, SegmentRecord] = field(default_factory=dict)
    state: SessionState = SessionState.REGISTERING
    valid: bool | None = None
    trace_finalized: TxRef | None = None
    fee_split: FeeSplit | None = None
    claims: list[RewardClaim] = field(default_factory=list)
    refund_wei: int | None = None
    distributed_seq: int = -1


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A registry event of one auditor, in chain order (`seq`), for the replay of its history.
    `amount` is the event's amount (or the reputation for "reputation"); `stake_after` the stake the
    event reports, when it reports one (Staked, UnstakeRequested, StakeForfeited), and
    `unbonding_after` the unbonding tokens (StakeForfeited). `governance` marks the forfeit of a
    governance slash (`AuditorSlashed` of session zero right after it): the registry checkpoints the
    stakers' share for it even when only unbonding tokens were taken, and never for a deserter's
    charge (the one other forfeit that leaves the stake as it was)."""

    seq: int
    at: TxRef
    event: str
    amount: int
    stake_after: int | None = None
    unbonding_after: int | None = None
    governance: bool = False


@dataclass(slots=True)
class AuditorRecord:
    address: str
    tier: int
    metadata_uri: str
    registered: TxRef
    seats: list[tuple[int, int, int]] = field(default_factory=list)
    forfeits: list[Forfeit] = field(default_factory=list)
    claims: list[RewardClaim] = field(default_factory=list)
    staker_claims: list[StakerClaim] = field(default_factory=list)
    reputation: list[ReputationChange] = field(default_factory=list)
    registered_seq: int = 0
    ledger: list[LedgerEntry] = field(default_factory=list)


@dataclass(slots=True)
class Stale:
    """The contract views that events applied since the last `Projection.take_stale` changed:
    `everything` after a rebuild; `auditors` whose registry views moved (`all_auditors`: every
    auditor's, when the stakers' reward stream changed); `fees` of sessions whose fee may have
    changed; `params` when the current protocol parameters changed."""

    everything: bool = False
    auditors: set[str] = field(default_factory=set)
    all_auditors: bool = False
    fees: set[int] = field(default_factory=set)
    params: bool = False


def cid_text(raw: bytes) -> str:
    """The text form of an envelope's binary CID; a value that is no CID is shown as hex (the
    provider chose those bytes, the explorer only reports them)."""
    try:
        return cid_from_bytes(bytes(raw))
    except VerificationError:
        return "0x" + bytes(raw).hex()


class Projection:
    """The model, and the handler of every event it reads (`handlers`, by contract and name).

    `seq` is the chain-order position of the event being applied; `notifications` the stakers' reward
    notifications (seq, at, `rewardPerStakeWad` after); `initial_reputations` (seq, before, after)
    per `ParamsUpdated`. `unresolved` holds the segments that ended "not passed" with a committee,
    whose Failed or Undetermined the segment view says (`settle_undetermined`).
    """

    def __init__(self) -> None:
        self.sessions: dict[int, SessionRecord] = {}
        self.auditors: dict[str, AuditorRecord] = {}
        self.unresolved: set[tuple[int, int]] = set()
        self.seq = 0
        self.notifications: list[tuple[int, TxRef, int]] = []
        self.stream_finish = 0
        """The stakers' reward period's end (unix seconds), from the last notification."""
        self.initial_reputations: list[tuple[int, int, int]] = []
        self.stale = Stale(everything=True)  # a new model: no view cached before it holds
        self._pending_slashes: tuple[str, list[tuple[str, int]]] = ("", [])

    def take_stale(self) -> Stale:
        """What changed since the last call (see `Stale`), and starts collecting anew."""
        stale, self.stale = self.stale, Stale()
        return stale

    def handlers(self) -> dict[EventKey, Handler]:
        """Every event the model reads, with its handler."""
        table: dict[EventKey, Handler] = {
            ("audit", "SessionCreated"): self._on_session_created,
            ("audit", "SessionOpened"): self._on_session_opened,
            ("audit", "SegmentRegistered"): self._on_segment_registered,
            ("audit", "CommitteeDrawn"): self._on_committee_drawn,
            ("audit", "CommitteeUnavailable"): self._on_committee_unavailable,
            ("audit", "RandomnessRefreshed"): self._on_randomness_refreshed,
            ("audit", "VoteCommitted"): self._on_vote_committed,
            ("audit", "VoteRevealed"): self._on_vote_revealed,
            ("audit", "AuditorSlashed"): self._on_auditor_slashed,
            ("audit", "SeatUndelivered"): self._on_seat_undelivered,
            ("audit", "SegmentSettlementProgress"): self._on_settlement_progress,
            ("audit", "SegmentEscalated"): self._on_segment_escalated,
            ("audit", "SegmentFinalized"): self._on_segment_finalized,
            ("audit", "TraceFinalized"): self._on_trace_finalized,
            ("audit", "RewardsDistributed"): self._on_rewards_distributed,
            ("audit", "RewardsClaimed"): self._on_rewards_claimed,
            ("audit", "SessionCancelled"): self._on_session_cancelled,
            ("registry", "AuditorRegistered"): self._on_auditor_registered,
            ("registry", "ProfileUpdated"): self._on_profile_updated,
            ("registry", "ReputationUpdated"): self._on_reputation_updated,
            ("registry", "StakeForfeited"): self._on_stake_forfeited,
            ("registry", "StakerRewardClaimed"): self._on_staker_reward_claimed,
            ("registry", "StakerRewardNotified"): self._on_staker_reward_notified,
            ("segment_keys", "KeyEnvelopePublished"): self._on_envelope_published,
            ("segment_keys", "ReportPublished"): self._on_report_published,
            ("registry", "Staked"): self._on_staked,
            ("registry", "UnstakeRequested"): self._on_unstake_requested,
            ("registry", "Unstaked"): self._on_unstaked,
            ("params", "ParamsUpdated"): self._on_params_updated,
        }
        for name in ("AvailabilityChanged", "CredentialGranted", "CredentialRevoked", "DrawWeightChanged"):
            table[("registry", name)] = self._on_auditor_touched
        return table

    def begin(self, tx_hash: str) -> None:
        """Called before each event: moves the chain-order position on, and forgets the slashes
        held for a segment event when the transaction changed."""
        if self._pending_slashes[0] != tx_hash:
            self._pending_slashes = (tx_hash, [])
        self.seq += 1

    def settle_undetermined(self, session_id: int, segment_id: int) -> None:
        """The segment view says the segment that ended "not passed" is Undetermined, not Failed."""
        segment = self.sessions[session_id].segments[segment_id]
        segment.state = SegmentState.UNDETERMINED
        segment.current.result = RoundResult.UNDETERMINED
        for round_ in segment.rounds:  # the escalated rounds' revealed seats were released
            if round_.result is RoundResult.ESCALATED:
                round_.verdict = RoundResult.UNDETERMINED

    def round_of(self, key: tuple[int, int, int]) -> tuple[SegmentRecord, RoundRecord]:
        session_id, segment_id, number = key
        segment = self.sessions[session_id].segments[segment_id]
        return segment, segment.rounds[number]

    # ------------------------------------------------------------------------------------ handlers

    def _segment(self, args: Mapping[str, Any]) -> SegmentRecord | None:
        session = self.sessions.get(int(args["sessionId"]))
        return None if session is None else session.segments.get(int(args["segmentId"]))

    def _touch(self, auditors: Iterable[str]) -> None:
        self.stale.auditors.update(auditors)

    def _on_session_created(self, args: Mapping[str, Any], at: TxRef) -> None:
        session_id = int(args["sessionId"])
        self.sessions[session_id] = SessionRecord(session_id, bytes(args["traceRoot"]), at)

    def _on_session_opened(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        if session is None:
            return
        session.provider = to_checksum_address(args["provider"])
        session.segment_count = int(args["segmentCount"])
        session.fee_wei = int(args["feeWei"])
        session.randomness_block = int(args["randomnessBlock"])
        session.params_version = int(args["paramsVersion"])
        # Emitted when the last segment is registered: the segments are already known, and their
        # first round draws from the randomness block fixed only now.
        for segment in session.segments.values():
            first = segment.rounds[0]
            if first.randomness_block == 0:
                first.randomness_block = session.randomness_block
        if session.segment_count and len(session.segments) == session.segment_count:
            session.state = SessionState.OPEN

    def _on_segment_registered(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        if session is None:
            return
        segment_id = int(args["segmentId"])
        tier = int(args["tier"])
        session.segments[segment_id] = SegmentRecord(
            session_id=session.session_id,
            segment_id=segment_id,
            tier=tier,
            weight=int(args["weight"]),
            critical=bool(args["critical"]),
            contradiction=bool(args["contradiction"]),
            content_digest=bytes(args["contentDigest"]),
            registered=at,
            rounds=[RoundRecord(0, tier, None, session.randomness_block)],
        )
        if session.segment_count and len(session.segments) == session.segment_count:
            session.state = SessionState.OPEN
        if at.tx_hash != session.created.tx_hash:
            self.stale.fees.add(session.session_id)  # registerSegments may add to the fee

    def _on_committee_drawn(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        round_.tier = int(args["tier"])
        round_.members = tuple(to_checksum_address(m) for m in args["members"])
        # The members are the distinct seats; the committee size (draws) is the session's k for a
        # first round and came with `SegmentEscalated` for a later one.
        round_.commit_deadline = int(args["commitDeadline"])
        round_.reveal_deadline = int(args["revealDeadline"])
        round_.drawn = at
        segment.state = SegmentState.VOTING
        for auditor in round_.members:
            state = self.auditors.get(auditor)
            if state is not None:
                state.seats.append((segment.session_id, segment.segment_id, round_.number))
        self._touch(round_.members)

    def _on_committee_unavailable(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is not None:
            segment.round(int(args["round"])).unavailable.append(DrawAttempt(int(args["attempt"]), at))

    def _on_randomness_refreshed(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is not None:
            block = int(args["randomnessBlock"])
            segment.current.randomness_block = block
            segment.current.refreshes.append(RandomnessRefresh(block, at))

    def _on_vote_committed(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        auditor = to_checksum_address(args["auditor"])
        round_ = segment.round(int(args["round"]))
        round_.committed_at[auditor] = at
        if round_.commits_complete is None and round_.members and len(round_.committed_at) == len(round_.members):
            round_.commits_complete = at
        round_.events.append(VoteEvent("commit", auditor, round_.seat_of(auditor), None, at))

    def _on_vote_revealed(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        auditor = to_checksum_address(args["auditor"])
        vote = bool(args["vote"])
        round_ = segment.round(int(args["round"]))
        round_.revealed[auditor] = (vote, at)
        round_.events.append(VoteEvent("reveal", auditor, round_.seat_of(auditor), vote, at))

    def _on_auditor_slashed(self, args: Mapping[str, Any], at: TxRef) -> None:
        auditor = to_checksum_address(args["auditor"])
        if int(args["sessionId"]) == 0:
            # A governance slash: the auditor's `StakeForfeited`, emitted right before it in the same
            # transaction, records it; marked for the stakers' share checkpoint (see `LedgerEntry`).
            state = self.auditors.get(auditor)
            if state is not None and state.ledger:
                last = state.ledger[-1]
                if last.event == "forfeit" and last.at.tx_hash == at.tx_hash:
                    state.ledger[-1] = replace(last, governance=True)
            return
        self._pending_slashes[1].append((auditor, int(args["amount"])))

    def _on_seat_undelivered(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        auditor = to_checksum_address(args["auditor"])
        round_.undelivered[auditor] = at
        self._touch((auditor,))  # its lock was returned

    def _on_settlement_progress(self, args: Mapping[str, Any], at: TxRef) -> None:
        """A step of a round's settlement in chunks (issue M4): the forfeits emitted before it in its
        transaction are the step's, settled from the seats' locked stake like those of the
        transaction that closes the round, which takes them all in order."""
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        round_.step_slashes += self._pending_slashes[1]
        self._pending_slashes = (at.tx_hash, [])
        self._touch(round_.members)

    def _close_round(self, segment: SegmentRecord, at: TxRef, result: RoundResult) -> RoundRecord:
        round_ = segment.current
        round_.closed = at
        round_.result = result
        round_.slash_order = round_.step_slashes + self._pending_slashes[1]
        for auditor, amount in round_.slash_order:
            round_.forfeited[auditor] = round_.forfeited.get(auditor, 0) + amount
        self._pending_slashes = (at.tx_hash, [])
        self._touch(round_.members)  # settlement unlocks every seat, forfeits and moves reputation
        return round_

    def _judge_escalated(self, segment: SegmentRecord) -> None:
        """Gives the segment's verdict to its escalated rounds, and the forfeits of the deciding
        transaction that belong to their seats: the contract settles the final round's seats first,
        then every earlier round's revealed seats in round and seat order, so the slashes that
        `_close_round` gave the final round are matched to the seats in that order."""
        final = segment.current
        earlier = [r for r in segment.rounds if r is not final and r.result is RoundResult.ESCALATED]
        if not earlier:
            return
        verdict = final.result
        for round_ in earlier:
            round_.verdict = verdict
        if verdict not in (RoundResult.PASSED, RoundResult.FAILED):
            return
        slashes = [(auditor, amount) for auditor, amount in final.slash_order]
        order = [(final, m) for m in final.members if final.outcome(m) in (SeatOutcome.SILENT, SeatOutcome.MISALIGNED)]
        order += [(r, m) for r in earlier for m in r.members if r.outcome(m) is SeatOutcome.MISALIGNED]
        final.forfeited = {}
        position = 0
        for auditor, amount in slashes:
            while position < len(order) and order[position][1] != auditor:
                position += 1
            if position == len(order):  # not a seat's forfeit (cannot happen); keep it on the final round
                final.forfeited[auditor] = final.forfeited.get(auditor, 0) + amount
                continue
            owner = order[position][0]
            owner.forfeited[auditor] = owner.forfeited.get(auditor, 0) + amount
            position += 1
        for round_ in earlier:
            self._touch(round_.members)

    def _on_segment_escalated(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        self._close_round(segment, at, RoundResult.ESCALATED)
        number = int(args["round"])
        segment.rounds.append(
            RoundRecord(number, int(args["tier"]), int(args["committeeSize"]), int(args["randomnessBlock"]))
        )
        segment.state = SegmentState.AWAITING_DRAW

    def _on_segment_finalized(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        passed = bool(args["passed"])
        drawn = bool(segment.current.members)
        if passed:
            result = RoundResult.PASSED
        elif not drawn:
            result = RoundResult.UNDETERMINED  # the third draw of the round found too few auditors
        else:
            result = RoundResult.FAILED
            self.unresolved.add((segment.session_id, segment.segment_id))
        self._close_round(segment, at, result)
        self._judge_escalated(segment)
        segment.state = {
            RoundResult.PASSED: SegmentState.PASSED,
            RoundResult.FAILED: SegmentState.FAILED,
            RoundResult.UNDETERMINED: SegmentState.UNDETERMINED,
        }[result]
        segment.finalized = at

    def _on_trace_finalized(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        if session is not None:
            session.valid = bool(args["valid"])
            session.trace_finalized = at
            session.state = SessionState.FINALIZED

    def _on_rewards_distributed(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        if session is None:
            return
        session.fee_split = FeeSplit(
            auditors_wei=int(args["auditorsWei"]),
            per_seat_wei=int(args["perSeatWei"]),
            treasury_wei=int(args["treasuryWei"]),
            stakers_wei=int(args["stakersWei"]),
            insurance_wei=int(args["insuranceWei"]),
            at=at,
        )
        session.distributed_seq = self.seq
        session.state = SessionState.DISTRIBUTED

    def _on_rewards_claimed(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        auditor = to_checksum_address(args["auditor"])
        claim = RewardClaim(int(args["sessionId"]), auditor, int(args["units"]), int(args["amountWei"]), at)
        if session is not None:
            session.claims.append(claim)
        if auditor in self.auditors:
            self.auditors[auditor].claims.append(claim)
            self.auditors[auditor].ledger.append(LedgerEntry(self.seq, at, "seat rewards claimed", claim.amount_wei))

    def _on_session_cancelled(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self.sessions.get(int(args["sessionId"]))
        if session is not None:
            session.state = SessionState.CANCELLED
            session.refund_wei = int(args["refundWei"])
            self.stale.fees.add(session.session_id)

    def _on_auditor_registered(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        self.auditors[address] = AuditorRecord(
            address, int(args["tier"]), str(args["metadataURI"]), at, registered_seq=self.seq
        )
        self._touch([address])

    def _ledger(
        self,
        args: Mapping[str, Any],
        at: TxRef,
        event: str,
        amount: int,
        stake_after: int | None = None,
        unbonding_after: int | None = None,
    ) -> None:
        """Records a registry event of an auditor for its history; its cached views are stale."""
        address = to_checksum_address(args["auditor"])
        state = self.auditors.get(address)
        if state is not None:
            state.ledger.append(LedgerEntry(self.seq, at, event, amount, stake_after, unbonding_after))
        self._touch([address])

    def _on_staked(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "staked", int(args["amount"]), int(args["stake"]))

    def _on_unstake_requested(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "unstake requested", int(args["amount"]), int(args["stake"]))

    def _on_unstaked(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "unstaked", int(args["amount"]))

    def _on_params_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        before, after = args["previous"], args["current"]
        self.initial_reputations.append(
            (self.seq, int(before["initialReputationWad"]), int(after["initialReputationWad"]))
        )
        self.stale.params = True

    def _on_profile_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self.auditors:
            self.auditors[address].metadata_uri = str(args["metadataURI"])
        self._touch([address])

    def _on_reputation_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self.auditors:
            self.auditors[address].reputation.append(ReputationChange(int(args["reputationWad"]), at))
        self._ledger(args, at, "reputation", int(args["reputationWad"]))

    def _on_stake_forfeited(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self.auditors:
            self.auditors[address].forfeits.append(Forfeit(int(args["amount"]), str(args["reason"]), at))
        self._ledger(args, at, "forfeit", int(args["amount"]), int(args["stake"]), int(args["unbonding"]))

    def _on_staker_reward_claimed(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self.auditors:
            self.auditors[address].staker_claims.append(StakerClaim(int(args["amountWei"]), at))
        self._ledger(args, at, "stakers' share claimed", int(args["amountWei"]))

    def _on_staker_reward_notified(self, args: Mapping[str, Any], at: TxRef) -> None:
        self.notifications.append((self.seq, at, int(args["rewardPerStakeWad"])))
        self.stream_finish = int(args["periodFinish"])
        self.stale.all_auditors = True  # the stream's rate changed

    def _on_auditor_touched(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._touch([to_checksum_address(args["auditor"])])

    def _on_envelope_published(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        seat = int(args["seatIndex"])
        earlier = round_.envelopes.get(seat)
        count = 1 if earlier is None else earlier.publications + 1
        round_.envelopes[seat] = EnvelopeRef(cid_text(bytes(args["envelopeCid"])), count, at)

    def _on_report_published(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        seat = int(args["seatIndex"])
        earlier = round_.reports.get(seat)
        count = 1 if earlier is None else earlier.publications + 1
        round_.reports[seat] = EnvelopeRef(cid_text(bytes(args["reportCid"])), count, at)
