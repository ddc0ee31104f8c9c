"""A read model of one TRUST deployment, built only from the chain: its events and its views.

The explorer shows what the chain holds about audit sessions (paper 1.10: submission, committee
draw, commit, reveal, finalization, rewards), so it keeps no database of its own. `ChainIndex`
replays the protocol contracts' events in chain order (block, log index) into an in-memory model,
and `refresh()` reads only the blocks mined since the last call, with `eth_getLogs` over bounded
block ranges: a page view refreshes first, and on an idle chain that is one `eth_getBlockByNumber`
for the latest block plus one to check that the last indexed block is still canonical.

What comes from where:
- events (`ITRUSTAudit`, `IAuditorRegistry`, `ISegmentKeys`) give everything that happened and
  when: sessions and their segments as registered, each round's committee and windows
  (`CommitteeDrawn`), draws that found too few auditors (`CommitteeUnavailable`), fresh randomness,
  every commit and reveal with its block and block time, escalations, finalizations, the fee split
  (`RewardsDistributed`), claims, key envelopes per seat, reputation changes and forfeits;
- views give the current figures of the entities a page shows: an auditor's stake, locks,
  reputation and availability (`AuditorRegistry.auditor`), its pending stakers' reward, a seat's
  units and claimed flag (`TRUSTAudit.seat`), a session's parameters and fee, and whether a
  segment that did not pass `Failed` or ended `Undetermined` (`TRUSTAudit.segment`; the event says
  only "not passed"). Views are read at the latest block, so they can be a few blocks ahead of the
  events indexed; auditor and session views are cached and re-read only after an event touched them.

Attribution that events leave implicit, and how it is made:
- `VoteCommitted` and `VoteRevealed` name the session, segment, round and (indexed) auditor.
- `AuditorSlashed` names the session (zero for a governance slash, which shows only in the
  auditor's forfeits, `StakeForfeited`) but not the segment: finalizing a segment emits one per
  forfeited seat right before its `SegmentFinalized` or `SegmentEscalated`, in the same transaction,
  so the slashes are held per transaction and given to the next segment event of that transaction.
  A round settled in steps (`settleSegment`, issue M4) emits `SegmentSettlementProgress` after each
  step's slashes: they are kept with the round and given to it, in order, when it closes.
- `SeatUndelivered` releases a seat whose provider delivered no key envelope in time (issue M3);
  the seat shows as "undelivered" and is not settled again when its round closes.
- `CommitteeDrawn` names the distinct members seated, not how many of the committee's draws each
  won (committees are drawn with replacement, issue L2): a seat's units, which it votes, locks P,
  earns R and forfeits P with, come from its seat view, read once per seat (fixed at the draw) when
  a page needs them: the session's aligned units, an auditor's claimable rewards and locks.

A reorganization is detected by the hash of the last indexed block: when it changed, the model is
rebuilt from the deployment block. `confirmations` keeps the newest blocks out of the model on
chains where reorgs are common.
"""

from __future__ import annotations

import asyncio
import enum
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial, wraps
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from eth_utils import is_hex_address, to_checksum_address
from web3.contract.async_contract import AsyncContractEvent
from web3.exceptions import BlockNotFound, Web3Exception

from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import AuditorInfo, SegmentInfo, SegmentStatus
from trust.core.cid import cid_from_bytes, cid_from_digest32
from trust.errors import ChainError, TrustError, VerificationError

__all__ = [
    "DEFAULT_LOG_BLOCK_RANGE",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "AuditorDetail",
    "AuditorHistoryPoint",
    "AuditorPage",
    "AuditorSeat",
    "AuditorSort",
    "AuditorSummary",
    "ChainIndex",
    "DrawAttempt",
    "EnvelopeRef",
    "FeeSplit",
    "Forfeit",
    "RandomnessRefresh",
    "RefreshReport",
    "ReputationChange",
    "RewardClaim",
    "RoundDetail",
    "RoundResult",
    "SeatDetail",
    "SeatOutcome",
    "SegmentDetail",
    "SegmentState",
    "SegmentSummary",
    "SessionDetail",
    "SessionPage",
    "SessionState",
    "SessionSummary",
    "StakerClaim",
    "TxRef",
    "UnknownEntity",
    "VoteEvent",
    "parse_address",
]

DEFAULT_LOG_BLOCK_RANGE = 2_000
"""Blocks per `eth_getLogs` request: within what public RPC providers accept (many cap a request at
2,000 to 10,000 blocks), and a few hundred logs per request on a busy deployment."""
DEFAULT_VIEW_CONCURRENCY = 8
"""View calls in flight at once when a page needs many (the auditors list, a segment's seats)."""
DEFAULT_PAGE_SIZE = 20
"""Rows per page of the sessions and auditors lists."""
MAX_PAGE_SIZE = 100
"""The most rows a page may ask for: a page's view reads stay bounded."""
BPS = 10_000
"""Basis points in one (the contracts' ratios: tau, beta, fee shares)."""
WAD = 10**18
"""The contracts' fixed-point one (reputation, the stakers' reward accumulator)."""

T = TypeVar("T")
_SeatKey = tuple[int, int, int, int]
"""(session, segment, round, seat index)."""


class UnknownEntity(TrustError):
    """The chain holds no session, segment or auditor of this id (as far as the index has read).

    `kind` is "session", "segment" or "auditor"; `key` the id asked for.
    """

    def __init__(self, kind: str, key: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.key = key


def parse_address(text: str) -> str:
    """The checksummed form of an Ethereum address: 0x and 40 hex digits, in lower case, upper case
    or with a correct EIP-55 checksum. Raises `ValueError` naming the text otherwise (422)."""
    if not isinstance(text, str) or not text.startswith("0x") or not is_hex_address(text):
        raise ValueError(f"{text!r} is not an address: expected 0x followed by 40 hexadecimal digits")
    checksummed = to_checksum_address(text)
    digits = text[2:]
    if digits != digits.lower() and digits != digits.upper() and text != checksummed:
        # EIP-55: mixed case is a checksum, and a wrong one means a mistyped address.
        raise ValueError(
            f"{text!r} has a wrong EIP-55 checksum (mixed case should read {checksummed}); check the address "
            "or write it in lower case"
        )
    return checksummed


# ---------------------------------------------------------------------------------------- values


class SessionState(enum.StrEnum):
    """Where a session stands, from its events (`ITRUSTAudit.SessionStatus`, plus cancelled)."""

    REGISTERING = "registering"
    OPEN = "open"
    FINALIZED = "finalized"
    DISTRIBUTED = "distributed"
    CANCELLED = "cancelled"


class SegmentState(enum.StrEnum):
    """Where a segment stands (`ITRUSTAudit.SegmentStatus`)."""

    AWAITING_DRAW = "awaiting draw"
    VOTING = "voting"
    PASSED = "passed"
    FAILED = "failed"
    UNDETERMINED = "undetermined"

    @property
    def is_final(self) -> bool:
        return self in (SegmentState.PASSED, SegmentState.FAILED, SegmentState.UNDETERMINED)


class RoundResult(enum.StrEnum):
    """How a round ended: a verdict, an escalation to a larger committee, or undetermined (no
    decision in the last round, or no committee could be seated in three draws)."""

    PASSED = "passed"
    FAILED = "failed"
    ESCALATED = "escalated"
    UNDETERMINED = "undetermined"


class SeatOutcome(enum.StrEnum):
    """A seat once its round is settled (docs/protocol.md, "Seats").

    aligned: revealed the decided outcome (reputation up, a share of the auditors' fee pool);
    misaligned: revealed the other outcome (reputation down, forfeits P with probability p_slash(r));
    silent: never revealed (forfeits P, reputation down); released: revealed in an undecided round
    (lock returned, no change); undelivered: released by its auditor's claim that the provider
    delivered no key envelope in time (lock returned, no change, compensated with R from the fee);
    pending: the round is not settled yet.
    """

    PENDING = "pending"
    ALIGNED = "aligned"
    MISALIGNED = "misaligned"
    SILENT = "silent"
    RELEASED = "released"
    UNDELIVERED = "undelivered"


class AuditorSort(enum.StrEnum):
    """Orders of the auditors list."""

    STAKE = "stake"
    REPUTATION = "reputation"
    EARNINGS = "earnings"


@dataclass(frozen=True, slots=True)
class TxRef:
    """Where an event happened: its transaction, block and the block's time (unix seconds)."""

    tx_hash: str
    block_number: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class RefreshReport:
    """What one `refresh()` read: blocks `from_block`..`to_block` (empty when `to_block <
    from_block`), in `log_requests` eth_getLogs calls returning `logs` logs. `rebuilt` is True when
    the last indexed block had left the canonical chain and the model was rebuilt from the start."""

    from_block: int
    to_block: int
    log_requests: int
    logs: int
    rebuilt: bool


@dataclass(frozen=True, slots=True)
class VoteEvent:
    """A `VoteCommitted` (vote None: it is hidden) or `VoteRevealed` of a seat."""

    kind: str
    auditor: str
    seat_index: int
    vote: bool | None
    at: TxRef


@dataclass(frozen=True, slots=True)
class DrawAttempt:
    """A draw that could not seat the committee (`CommitteeUnavailable`, attempt 1 to 3)."""

    attempt: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class RandomnessRefresh:
    """A new randomness block fixed for a round's draw (`RandomnessRefreshed`)."""

    randomness_block: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class EnvelopeRef:
    """A CID published for a seat (the provider's key envelope, or the auditor's report): the latest
    publication wins; `publications` counts them."""

    cid: str
    publications: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class SeatDetail:
    """One seat of a round. `votes` is the seat's units: how many of the committee's draws its member
    won (drawn with replacement), the weight it votes with and the multiple of P it locked, of R it
    earns when aligned and of P it forfeits; `claimed` is the seat view's flag (reward taken);
    `forfeited_units` the stake it lost at settlement; `report` where its audit report (the critique,
    sealed to the provider's reply key) lies, when the auditor published one."""

    index: int
    auditor: str
    votes: int
    committed: bool
    revealed: bool
    vote: bool | None
    outcome: SeatOutcome
    forfeited_units: int
    claimed: bool
    committed_at: TxRef | None
    revealed_at: TxRef | None
    envelope: EnvelopeRef | None
    report: EnvelopeRef | None


@dataclass(frozen=True, slots=True)
class RoundDetail:
    """One round of a segment: its draw, committee, votes in chain order, and how it ended.

    Deadlines are unix seconds: commits are accepted up to `commit_deadline`, reveals after it up to
    `reveal_deadline`. `scheduled_commit_deadline` is the one `CommitteeDrawn` announced; a contract
    that closes the commit window once every seat committed moves the deadline to that block's time
    minus one (`closed_early`; `commits_complete` is the commit that filled the committee), and the
    reveal window then starts there. The effective deadlines come from the segment view while the
    round is the segment's latest; for an earlier round they are inferred: a reveal before the
    scheduled deadline proves the window closed when the last seat committed. `committee_size` is
    the round's number of draws, its votes in all; a member that won several draws holds one seat
    with that many votes, so a round may have fewer seats. `pass_votes`, `fail_votes` and
    `total_votes` add up the seats' votes (`total_votes` is the committee size once drawn).
    """

    number: int
    tier: int
    committee_size: int | None
    randomness_block: int | None
    randomness_refreshes: tuple[RandomnessRefresh, ...]
    unavailable: tuple[DrawAttempt, ...]
    drawn: TxRef | None
    scheduled_commit_deadline: int | None
    commit_deadline: int | None
    reveal_deadline: int | None
    closed_early: bool
    commits_complete: TxRef | None
    seats: tuple[SeatDetail, ...]
    events: tuple[VoteEvent, ...]
    closed: TxRef | None
    result: RoundResult | None
    pass_votes: int
    fail_votes: int
    total_votes: int


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    """A segment as registered (`SegmentRegistered`) and where it stands.

    `cid` is the CIDv1 of a raw block with the registered digest: the segment's address when its
    ciphertext is one chunk (up to 256 KiB, every segment our SDK writes); a larger one is a dag-pb
    root with the same digest. `tier` is the registered tier, `current_tier` the latest round's.
    """

    session_id: int
    segment_id: int
    tier: int
    current_tier: int
    weight: int
    critical: bool
    contradiction: bool
    content_digest: bytes
    cid: str
    state: SegmentState
    rounds: int
    registered: TxRef
    finalized: TxRef | None


@dataclass(frozen=True, slots=True)
class SegmentDetail:
    """A segment with every round; `tau_bps` and `max_rounds` are its session's parameters."""

    segment: SegmentSummary
    rounds: tuple[RoundDetail, ...]
    tau_bps: int
    max_rounds: int


@dataclass(frozen=True, slots=True)
class FeeSplit:
    """`RewardsDistributed`: the fee's shares in wei. `auditors_wei` is what the aligned seats share
    (`per_seat_wei` each); rounding dust went to the treasury."""

    auditors_wei: int
    per_seat_wei: int
    treasury_wei: int
    stakers_wei: int
    insurance_wei: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class RewardClaim:
    """`RewardsClaimed`: an auditor took the reward of aligned seats of a session weighing `units`
    votes in all (R per unit)."""

    session_id: int
    auditor: str
    units: int
    amount_wei: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A session as its events and its view say. `valid` is None until the trace is finalized."""

    session_id: int
    provider: str
    trace_root: bytes
    fee_wei: int
    segment_count: int
    registered_count: int
    state: SessionState
    valid: bool | None
    created: TxRef
    passed: int
    failed: int
    undetermined: int
    pending: int
    trace_finalized: TxRef | None


@dataclass(frozen=True, slots=True)
class SessionDetail:
    """A session with its segments, trace verdict inputs (eq. 3.5-3.6) and money.

    `pass_weight` is W, the weight of passed segments; `total_weight` is sum(w); the trace is valid
    iff W >= beta * sum(w), no critical segment failed and no contradiction was confirmed.
    `share_bps` is the session's fee split (auditors, treasury, stakers, insurance).
    """

    session: SessionSummary
    segments: tuple[SegmentSummary, ...]
    randomness_block: int
    params_version: int
    pass_weight: int
    total_weight: int
    beta_bps: int
    tau_bps: int
    critical_failed: int
    contradictions_confirmed: int
    share_bps: tuple[int, int, int, int]
    fee_split: FeeSplit | None
    claims: tuple[RewardClaim, ...]
    aligned_seats: int
    refund_wei: int | None


@dataclass(frozen=True, slots=True)
class SessionPage:
    items: tuple[SessionSummary, ...]
    total: int
    page: int
    per_page: int


@dataclass(frozen=True, slots=True)
class Forfeit:
    """`StakeForfeited`: stake an auditor lost ("no reveal", "vote against consensus", or a
    governance slash's reason), in token base units."""

    amount_units: int
    reason: str
    at: TxRef


@dataclass(frozen=True, slots=True)
class ReputationChange:
    """`ReputationUpdated`: the reputation after a settled seat (WAD, 1e18 = 1)."""

    reputation_wad: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class StakerClaim:
    """`StakerRewardClaimed`: the auditor took its stakers' share of fees (wei)."""

    amount_wei: int
    at: TxRef


@dataclass(frozen=True, slots=True)
class AuditorSeat:
    """One seat an auditor held."""

    session_id: int
    segment_id: int
    round: int
    seat_index: int
    tier: int
    drawn: TxRef
    committed: bool
    revealed: bool
    vote: bool | None
    outcome: SeatOutcome
    forfeited_units: int


@dataclass(frozen=True, slots=True)
class AuditorSummary:
    """An auditor: registry figures (views, token base units), seats and money (events).

    `rewards_claimable_wei` is the per-seat reward R times the units (votes) of the aligned seats of
    distributed sessions not claimed yet; `staker_pending_wei` is the registry's
    `pendingStakerReward`. `seats` and the outcome counts count seats, whatever their units.
    """

    address: str
    tier: int
    metadata_uri: str
    registered: TxRef
    is_registered: bool
    available: bool
    credentialed: bool
    stake_units: int
    locked_units: int
    unbonding_units: int
    reputation_wad: int
    seats: int
    open_seats: int
    aligned: int
    misaligned: int
    silent: int
    released: int
    forfeited_units: int
    rewards_claimed_wei: int
    rewards_claimable_wei: int
    staker_claimed_wei: int
    staker_pending_wei: int

    @property
    def earnings_wei(self) -> int:
        """Everything the auditor earned in ETH: seat rewards and stakers' share, taken or not."""
        return self.rewards_claimed_wei + self.rewards_claimable_wei + self.staker_claimed_wei + self.staker_pending_wei


@dataclass(frozen=True, slots=True)
class AuditorHistoryPoint:
    """An auditor's figures right after one event that changed them, replayed from the events as the
    registry computes them (oldest first).

    `event` names what happened ("registered", "staked", "unstake requested", "unstaked", "forfeit",
    "reputation", "rewards distributed", "stakers' reward", "seat rewards claimed", "stakers' share
    claimed"). `stake_units` and `unbonding_units` are token base units; `reputation_wad` is WAD.
    Money is cumulative wei: `seat_rewards_wei` the seat rewards earned (aligned seats' units x the
    session's per-seat reward, from its distribution), `staker_share_wei` the stakers' share accrued
    (claimed or not, as `pendingStakerReward` would have said then), `claimed_wei` what the auditor
    took (seat rewards and stakers' share); `earnings_wei` is the first two together.
    """

    at: TxRef
    event: str
    stake_units: int
    unbonding_units: int
    reputation_wad: int
    seat_rewards_wei: int
    staker_share_wei: int
    claimed_wei: int

    @property
    def earnings_wei(self) -> int:
        return self.seat_rewards_wei + self.staker_share_wei


@dataclass(frozen=True, slots=True)
class AuditorDetail:
    """An auditor with its seats (newest first), its history, and `history`: its figures after each
    event, oldest first (the charts of the auditor page)."""

    auditor: AuditorSummary
    seats: tuple[AuditorSeat, ...]
    forfeits: tuple[Forfeit, ...]
    claims: tuple[RewardClaim, ...]
    staker_claims: tuple[StakerClaim, ...]
    reputation_history: tuple[ReputationChange, ...]
    history: tuple[AuditorHistoryPoint, ...]
    head_time: int
    """The newest indexed block's time (unix seconds): the history holds until then."""


@dataclass(frozen=True, slots=True)
class AuditorPage:
    items: tuple[AuditorSummary, ...]
    total: int
    page: int
    per_page: int
    sort: AuditorSort
    descending: bool


# ---------------------------------------------------------------------------------------- mutable state


@dataclass(slots=True)
class _Round:
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
    undelivered_seq: dict[str, int] = field(default_factory=dict)
    """The chain-order position of each `claimUndelivered`: where the seat's lock was returned."""
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
    drawn_seq: int = -1
    closed_seq: int | None = None

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


def _released_seq(segment: _Segment, round_: _Round, auditor: str) -> int | None:
    """Where the lock of `auditor`'s seat in `round_` came back (None: not yet): at its
    `claimUndelivered`; for a seat revealed in a round that escalated, when the round that decided
    the segment closed (issue M1: it waits for the verdict); otherwise when its round closed."""
    if auditor in round_.undelivered_seq:
        return round_.undelivered_seq[auditor]
    if round_.result is RoundResult.ESCALATED and auditor in round_.revealed:
        final = segment.rounds[-1]
        return final.closed_seq if final.result not in (None, RoundResult.ESCALATED) else None
    return round_.closed_seq


@dataclass(slots=True)
class _Segment:
    session_id: int
    segment_id: int
    tier: int
    weight: int
    critical: bool
    contradiction: bool
    content_digest: bytes
    registered: TxRef
    rounds: list[_Round]
    state: SegmentState = SegmentState.AWAITING_DRAW
    finalized: TxRef | None = None

    @property
    def current(self) -> _Round:
        return self.rounds[-1]

    def round(self, number: int) -> _Round:
        """Round `number`, created (tier and size unknown) if events skipped it."""
        while len(self.rounds) <= number:
            self.rounds.append(_Round(len(self.rounds), self.current.tier, None, None))
        return self.rounds[number]


@dataclass(slots=True)
class _Session:
    session_id: int
    trace_root: bytes
    created: TxRef
    provider: str = ""
    segment_count: int = 0
    fee_wei: int = 0
    randomness_block: int = 0
    params_version: int = 0
    segments: dict[int, _Segment] = field(default_factory=dict)
    state: SessionState = SessionState.REGISTERING
    valid: bool | None = None
    trace_finalized: TxRef | None = None
    fee_split: FeeSplit | None = None
    claims: list[RewardClaim] = field(default_factory=list)
    refund_wei: int | None = None
    distributed_seq: int = -1


@dataclass(slots=True)
class _Auditor:
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
    ledger: list[_Entry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Entry:
    """A registry event of one auditor, in chain order (`seq`), for the replay of its history.
    `amount` is the event's amount (or the reputation for "reputation"); `stake_after` the stake the
    event reports, when it reports one (Staked, UnstakeRequested)."""

    seq: int
    at: TxRef
    event: str
    amount: int
    stake_after: int | None = None


@dataclass(frozen=True, slots=True)
class _AuditorViews:
    info: AuditorInfo
    staker_pending_wei: int


def _cid_text(raw: bytes) -> str:
    """The text form of an envelope's binary CID; a value that is no CID is shown as hex (the
    provider chose those bytes, the explorer only reports them)."""
    try:
        return cid_from_bytes(bytes(raw))
    except VerificationError:
        return "0x" + bytes(raw).hex()


def _int(value: Any) -> int:
    """A JSON-RPC quantity (hex string or int) as an int."""
    return int(value, 16) if isinstance(value, str) else int(value)


async def _bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def _page_bounds(page: int, per_page: int) -> tuple[int, int]:
    if page < 1:
        raise ValueError(f"page must be 1 or more, not {page}")
    if not 1 <= per_page <= MAX_PAGE_SIZE:
        raise ValueError(f"per_page must be from 1 to {MAX_PAGE_SIZE}, not {per_page}")
    start = (page - 1) * per_page
    return start, start + per_page


# ---------------------------------------------------------------------------------------- the index

P = ParamSpec("P")
R = TypeVar("R")


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
        self._events = self._event_table()
        self._reset()

    def _reset(self) -> None:
        self._next_block = self.start_block
        self._head_hash: bytes | None = None
        self._sessions: dict[int, _Session] = {}
        self._auditors: dict[str, _Auditor] = {}
        self._pending_slashes: tuple[str, list[tuple[str, int]]] = ("", [])
        self._unresolved: set[tuple[int, int]] = set()
        self._auditor_views: dict[str, _AuditorViews] = {}
        self._session_fees: dict[int, int] = {}
        self._session_params: dict[int, dict[str, int]] = {}
        self._seat_units: dict[_SeatKey, int] = {}  # units of seats read so far (fixed at the draw)
        self._seq = 0  # the chain-order position of the log being applied
        self._head_time = 0
        self._closing_txs: set[str] = set()  # transactions that settled a round (seat forfeits)
        self._notifications: list[tuple[int, TxRef, int]] = []  # (seq, at, rewardPerStakeWad after)
        self._stream_finish = 0  # the stakers' reward period's end (unix seconds), from the last notification
        self._initial_reputations: list[tuple[int, int, int]] = []  # (seq, before, after) per ParamsUpdated
        self._current_params: dict[str, int] | None = None

    def _event_table(self) -> dict[bytes, tuple[AsyncContractEvent, Callable[[Mapping[str, Any], TxRef], None]]]:
        """topic0 -> (the event, its handler), for every event the model reads."""
        audit = self.protocol.audit.contract.events
        registry = self.protocol.registry.contract.events
        keys = self.protocol.segment_keys.contract.events
        params = self.protocol.params.contract.events
        handlers: list[tuple[AsyncContractEvent, Callable[[Mapping[str, Any], TxRef], None]]] = [
            (audit.SessionCreated(), self._on_session_created),
            (audit.SessionOpened(), self._on_session_opened),
            (audit.SegmentRegistered(), self._on_segment_registered),
            (audit.CommitteeDrawn(), self._on_committee_drawn),
            (audit.CommitteeUnavailable(), self._on_committee_unavailable),
            (audit.RandomnessRefreshed(), self._on_randomness_refreshed),
            (audit.VoteCommitted(), self._on_vote_committed),
            (audit.VoteRevealed(), self._on_vote_revealed),
            (audit.AuditorSlashed(), self._on_auditor_slashed),
            (audit.SeatUndelivered(), self._on_seat_undelivered),
            (audit.SegmentSettlementProgress(), self._on_settlement_progress),
            (audit.SegmentEscalated(), self._on_segment_escalated),
            (audit.SegmentFinalized(), self._on_segment_finalized),
            (audit.TraceFinalized(), self._on_trace_finalized),
            (audit.RewardsDistributed(), self._on_rewards_distributed),
            (audit.RewardsClaimed(), self._on_rewards_claimed),
            (audit.SessionCancelled(), self._on_session_cancelled),
            (registry.AuditorRegistered(), self._on_auditor_registered),
            (registry.ProfileUpdated(), self._on_profile_updated),
            (registry.ReputationUpdated(), self._on_reputation_updated),
            (registry.StakeForfeited(), self._on_stake_forfeited),
            (registry.StakerRewardClaimed(), self._on_staker_reward_claimed),
            (registry.StakerRewardNotified(), self._on_staker_reward_notified),
            (keys.KeyEnvelopePublished(), self._on_envelope_published),
            (keys.ReportPublished(), self._on_report_published),
            (registry.Staked(), self._on_staked),
            (registry.UnstakeRequested(), self._on_unstake_requested),
            (registry.Unstaked(), self._on_unstaked),
            (params.ParamsUpdated(), self._on_params_updated),
        ]
        for name in (
            "AvailabilityChanged",
            "CredentialGranted",
            "CredentialRevoked",
            "DrawWeightChanged",
        ):
            handlers.append((registry[name](), self._on_auditor_touched))
        return {bytes.fromhex(str(event.topic).removeprefix("0x")): (event, handler) for event, handler in handlers}

    @property
    def head_block(self) -> int:
        """The last block indexed (start_block - 1 before the first refresh)."""
        return self._next_block - 1

    # ------------------------------------------------------------------------------------ refresh

    async def refresh(self) -> RefreshReport:
        """Reads the blocks mined since the last refresh and applies their events.

        Raises `ChainError` when the node cannot be read; what was read before the failing range
        stays applied, and the next refresh resumes there.
        """
        async with self._lock:
            rebuilt = False
            if self._head_hash is not None and await self._block_hash(self.head_block) != self._head_hash:
                self._reset()
                rebuilt = True
            await self._resolve_finals()
            time_before = self._head_time
            latest = await self._block("latest")
            target = _int(latest["number"]) - self.confirmations
            first = self._next_block
            requests = logs = 0
            while self._next_block <= target:
                end = min(self._next_block + self.block_range - 1, target)
                batch = await self._logs(self._next_block, end)
                requests += 1
                logs += len(batch)
                await self._apply(batch)
                self._next_block = end + 1
                self._head_hash = None  # unknown until the loop ends; a failure below skips one reorg check
                await self._resolve_finals()
            if self._head_hash is None:
                if self.head_block == _int(latest["number"]):
                    self._head_hash = bytes(latest["hash"])
                    self._head_time = _int(latest["timestamp"])
                else:
                    head = await self._block(self.head_block)
                    self._head_hash, self._head_time = bytes(head["hash"]), _int(head["timestamp"])
            if self._head_time > time_before and time_before < self._stream_finish:
                self._auditor_views.clear()  # the stakers' share streams: every pending reward grew
            return RefreshReport(first, self._next_block - 1, requests, logs, rebuilt)

    async def _block(self, number: int | Literal["latest"]) -> Mapping[str, Any]:
        try:
            block: Mapping[str, Any] = await self.protocol.chain.w3.eth.get_block(number)
        except (Web3Exception, OSError, TimeoutError) as exc:
            raise ChainError(
                f"reading block {number} from {self.protocol.chain.rpc_url} failed: {exc}; is the node running?"
            ) from exc
        return block

    async def _block_hash(self, number: int) -> bytes:
        """The hash of block `number`; empty when the chain has no such block (any more)."""
        if number < 0:
            return b""
        try:
            return bytes((await self._block(number))["hash"])
        except ChainError as exc:
            if isinstance(exc.__cause__, BlockNotFound):
                return b""  # the chain is shorter than it was: a reorganization or a reset devnet
            raise

    async def _logs(self, from_block: int, to_block: int) -> list[Mapping[str, Any]]:
        addresses = [
            self.protocol.audit.address,
            self.protocol.registry.address,
            self.protocol.segment_keys.address,
            self.protocol.params.address,
        ]
        try:
            logs = await self.protocol.chain.w3.eth.get_logs(
                {"fromBlock": from_block, "toBlock": to_block, "address": addresses}
            )
        except (Web3Exception, OSError, TimeoutError) as exc:
            raise ChainError(
                f"eth_getLogs for blocks {from_block}..{to_block} at {self.protocol.chain.rpc_url} failed: {exc}; "
                f"if the node limits log ranges, lower block_range (now {self.block_range})"
            ) from exc
        return sorted(logs, key=lambda log: (int(log["blockNumber"]), int(log["logIndex"])))

    async def _apply(self, logs: Sequence[Mapping[str, Any]]) -> None:
        """Applies logs in chain order; block times come with the logs (`blockTimestamp`, which
        current nodes return) or are read once per block."""
        times: dict[int, int] = {}
        missing = set()
        for log in logs:
            number = int(log["blockNumber"])
            stamp = log.get("blockTimestamp")
            if stamp is not None:
                times[number] = _int(stamp)
            else:
                missing.add(number)
        missing -= times.keys()
        if missing:
            blocks = await _bounded(self.view_concurrency, [partial(self._block, n) for n in sorted(missing)])
            times.update({int(b["number"]): int(b["timestamp"]) for b in blocks})
        for log in logs:
            topics = log.get("topics") or []
            if not topics:
                continue
            entry = self._events.get(bytes(topics[0]))
            if entry is None:
                continue  # ownership, upgrades, parameters: not shown
            event, handler = entry
            decoded = event.process_log(log)
            tx = "0x" + bytes(log["transactionHash"]).hex()
            if self._pending_slashes[0] != tx:
                self._pending_slashes = (tx, [])
            self._seq += 1
            handler(decoded["args"], TxRef(tx, int(log["blockNumber"]), times[int(log["blockNumber"])]))

    async def _resolve_finals(self) -> None:
        """Segments whose `SegmentFinalized(passed=false)` may mean Failed or Undetermined: the
        segment view says which (a final status never changes, so one read each)."""
        if not self._unresolved:
            return
        pending = sorted(self._unresolved)
        infos = await _bounded(self.view_concurrency, [partial(self.protocol.audit.segment, s, g) for s, g in pending])
        for (session_id, segment_id), info in zip(pending, infos, strict=True):
            segment = self._sessions[session_id].segments[segment_id]
            if info.status is SegmentStatus.UNDETERMINED:
                segment.state = SegmentState.UNDETERMINED
                segment.current.result = RoundResult.UNDETERMINED
                for round_ in segment.rounds:  # the escalated rounds' revealed seats were released
                    if round_.result is RoundResult.ESCALATED:
                        round_.verdict = RoundResult.UNDETERMINED
            self._unresolved.discard((session_id, segment_id))

    # ------------------------------------------------------------------------------------ handlers

    def _segment(self, args: Mapping[str, Any]) -> _Segment | None:
        session = self._sessions.get(int(args["sessionId"]))
        return None if session is None else session.segments.get(int(args["segmentId"]))

    def _touch(self, auditors: Iterable[str]) -> None:
        for auditor in auditors:
            self._auditor_views.pop(auditor, None)

    def _on_session_created(self, args: Mapping[str, Any], at: TxRef) -> None:
        session_id = int(args["sessionId"])
        self._sessions[session_id] = _Session(session_id, bytes(args["traceRoot"]), at)

    def _on_session_opened(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self._sessions.get(int(args["sessionId"]))
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
        session = self._sessions.get(int(args["sessionId"]))
        if session is None:
            return
        segment_id = int(args["segmentId"])
        tier = int(args["tier"])
        session.segments[segment_id] = _Segment(
            session_id=session.session_id,
            segment_id=segment_id,
            tier=tier,
            weight=int(args["weight"]),
            critical=bool(args["critical"]),
            contradiction=bool(args["contradiction"]),
            content_digest=bytes(args["contentDigest"]),
            registered=at,
            rounds=[_Round(0, tier, None, session.randomness_block)],
        )
        if session.segment_count and len(session.segments) == session.segment_count:
            session.state = SessionState.OPEN
        if at.tx_hash != session.created.tx_hash:
            self._session_fees.pop(session.session_id, None)  # registerSegments may add to the fee

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
        round_.drawn_seq = self._seq
        segment.state = SegmentState.VOTING
        for auditor in round_.members:
            state = self._auditors.get(auditor)
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
        round_ = segment.current
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
        round_ = segment.current
        round_.revealed[auditor] = (vote, at)
        round_.events.append(VoteEvent("reveal", auditor, round_.seat_of(auditor), vote, at))

    def _on_auditor_slashed(self, args: Mapping[str, Any], at: TxRef) -> None:
        if int(args["sessionId"]) == 0:
            return  # a governance slash: the auditor's `StakeForfeited` records it
        self._pending_slashes[1].append((to_checksum_address(args["auditor"]), int(args["amount"])))

    def _on_seat_undelivered(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        auditor = to_checksum_address(args["auditor"])
        round_.undelivered[auditor] = at
        round_.undelivered_seq[auditor] = self._seq
        self._touch((auditor,))  # its lock was returned

    def _on_settlement_progress(self, args: Mapping[str, Any], at: TxRef) -> None:
        """A step of a round's settlement in chunks (issue M4): the forfeits emitted before it in its
        transaction are the step's, settled from the seats' locked stake like those of the
        transaction that closes the round, which takes them all in order."""
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.current
        round_.step_slashes += self._pending_slashes[1]
        self._pending_slashes = (at.tx_hash, [])
        self._closing_txs.add(at.tx_hash)
        self._touch(round_.members)

    def _close_round(self, segment: _Segment, at: TxRef, result: RoundResult) -> _Round:
        round_ = segment.current
        round_.closed = at
        round_.closed_seq = self._seq
        round_.result = result
        self._closing_txs.add(at.tx_hash)
        round_.slash_order = round_.step_slashes + self._pending_slashes[1]
        for auditor, amount in round_.slash_order:
            round_.forfeited[auditor] = round_.forfeited.get(auditor, 0) + amount
        self._pending_slashes = (at.tx_hash, [])
        self._touch(round_.members)  # settlement unlocks every seat, forfeits and moves reputation
        return round_

    def _judge_escalated(self, segment: _Segment) -> None:
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
            _Round(number, int(args["tier"]), int(args["committeeSize"]), int(args["randomnessBlock"]))
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
            self._unresolved.add((segment.session_id, segment.segment_id))
        self._close_round(segment, at, result)
        self._judge_escalated(segment)
        segment.state = {
            RoundResult.PASSED: SegmentState.PASSED,
            RoundResult.FAILED: SegmentState.FAILED,
            RoundResult.UNDETERMINED: SegmentState.UNDETERMINED,
        }[result]
        segment.finalized = at

    def _on_trace_finalized(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self._sessions.get(int(args["sessionId"]))
        if session is not None:
            session.valid = bool(args["valid"])
            session.trace_finalized = at
            session.state = SessionState.FINALIZED

    def _on_rewards_distributed(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self._sessions.get(int(args["sessionId"]))
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
        session.distributed_seq = self._seq
        session.state = SessionState.DISTRIBUTED

    def _on_rewards_claimed(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self._sessions.get(int(args["sessionId"]))
        auditor = to_checksum_address(args["auditor"])
        claim = RewardClaim(int(args["sessionId"]), auditor, int(args["units"]), int(args["amountWei"]), at)
        if session is not None:
            session.claims.append(claim)
        if auditor in self._auditors:
            self._auditors[auditor].claims.append(claim)
            self._auditors[auditor].ledger.append(_Entry(self._seq, at, "seat rewards claimed", claim.amount_wei))

    def _on_session_cancelled(self, args: Mapping[str, Any], at: TxRef) -> None:
        session = self._sessions.get(int(args["sessionId"]))
        if session is not None:
            session.state = SessionState.CANCELLED
            session.refund_wei = int(args["refundWei"])
            self._session_fees.pop(session.session_id, None)

    def _on_auditor_registered(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        self._auditors[address] = _Auditor(
            address, int(args["tier"]), str(args["metadataURI"]), at, registered_seq=self._seq
        )
        self._touch([address])

    def _ledger(
        self, args: Mapping[str, Any], at: TxRef, event: str, amount: int, stake_after: int | None = None
    ) -> None:
        """Records a registry event of an auditor for its history; touches its cached views."""
        address = to_checksum_address(args["auditor"])
        state = self._auditors.get(address)
        if state is not None:
            state.ledger.append(_Entry(self._seq, at, event, amount, stake_after))
        self._touch([address])

    def _on_staked(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "staked", int(args["amount"]), int(args["stake"]))

    def _on_unstake_requested(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "unstake requested", int(args["amount"]), int(args["stake"]))

    def _on_unstaked(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._ledger(args, at, "unstaked", int(args["amount"]))

    def _on_params_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        before, after = args["previous"], args["current"]
        self._initial_reputations.append(
            (self._seq, int(before["initialReputationWad"]), int(after["initialReputationWad"]))
        )
        self._current_params = None

    def _on_profile_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self._auditors:
            self._auditors[address].metadata_uri = str(args["metadataURI"])
        self._touch([address])

    def _on_reputation_updated(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self._auditors:
            self._auditors[address].reputation.append(ReputationChange(int(args["reputationWad"]), at))
        self._ledger(args, at, "reputation", int(args["reputationWad"]))

    def _on_stake_forfeited(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self._auditors:
            self._auditors[address].forfeits.append(Forfeit(int(args["amount"]), str(args["reason"]), at))
        self._ledger(args, at, "forfeit", int(args["amount"]))

    def _on_staker_reward_claimed(self, args: Mapping[str, Any], at: TxRef) -> None:
        address = to_checksum_address(args["auditor"])
        if address in self._auditors:
            self._auditors[address].staker_claims.append(StakerClaim(int(args["amountWei"]), at))
        self._ledger(args, at, "stakers' share claimed", int(args["amountWei"]))

    def _on_staker_reward_notified(self, args: Mapping[str, Any], at: TxRef) -> None:
        self._notifications.append((self._seq, at, int(args["rewardPerStakeWad"])))
        self._stream_finish = int(args["periodFinish"])
        self._auditor_views.clear()  # the stream's rate changed

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
        round_.envelopes[seat] = EnvelopeRef(_cid_text(bytes(args["envelopeCid"])), count, at)

    def _on_report_published(self, args: Mapping[str, Any], at: TxRef) -> None:
        segment = self._segment(args)
        if segment is None:
            return
        round_ = segment.round(int(args["round"]))
        seat = int(args["seatIndex"])
        earlier = round_.reports.get(seat)
        count = 1 if earlier is None else earlier.publications + 1
        round_.reports[seat] = EnvelopeRef(_cid_text(bytes(args["reportCid"])), count, at)

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
            infos = await _bounded(self.view_concurrency, [partial(self.protocol.audit.session, s) for s in missing])
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

            views = await _bounded(self.view_concurrency, [partial(read, a) for a in missing])
            self._auditor_views.update(zip(missing, views, strict=True))
        return {a: self._auditor_views[a] for a in addresses}

    # ------------------------------------------------------------------------------------ sessions

    def _session_state(self, session_id: int) -> _Session:
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
    def _segment_summary(segment: _Segment) -> SegmentSummary:
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
    def _session_summary(session: _Session, fee_wei: int) -> SessionSummary:
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
        seats = await _bounded(
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
    def _deadlines(round_: _Round, view: SegmentInfo) -> tuple[int | None, int | None]:
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

    def _auditor_state(self, address: str) -> _Auditor:
        state = self._auditors.get(address)
        if state is None:
            raise UnknownEntity(
                "auditor",
                address,
                f"{address} has not registered as an auditor on chain {self.protocol.chain.chain_id} "
                f"(up to block {self.head_block}; {len(self._auditors)} auditors registered)",
            )
        return state

    def _round_of(self, key: tuple[int, int, int]) -> tuple[_Segment, _Round]:
        session_id, segment_id, number = key
        segment = self._sessions[session_id].segments[segment_id]
        return segment, segment.rounds[number]

    def _outcomes(self, state: _Auditor) -> tuple[dict[SeatOutcome, int], list[_SeatKey]]:
        """The auditor's seats by outcome, and its aligned seats of segments' final rounds (the
        seats a distribution pays, R per unit)."""
        outcomes: dict[SeatOutcome, int] = defaultdict(int)
        aligned: list[_SeatKey] = []
        for key in state.seats:
            segment, round_ = self._round_of(key)
            outcome = round_.outcome(state.address)
            outcomes[outcome] += 1
            if outcome is SeatOutcome.ALIGNED and round_ is segment.current:
                aligned.append((*key, round_.seat_of(state.address)))
        return outcomes, aligned

    async def _aligned_units(self, state: _Auditor) -> dict[int, int]:
        """The units of the auditor's aligned seats per session (see `_outcomes`)."""
        units = await self._units(self._outcomes(state)[1])
        by_session: dict[int, int] = defaultdict(int)
        for key, count in units.items():
            by_session[key[0]] += count
        return by_session

    async def _units(self, keys: Sequence[_SeatKey]) -> dict[_SeatKey, int]:
        """Each seat's units (the committee draws its member won, `TRUSTAudit.seat`'s weight), read
        once per seat: they are fixed when the committee is drawn."""
        missing = [key for key in dict.fromkeys(keys) if key not in self._seat_units]
        views = await _bounded(self.view_concurrency, [partial(self.protocol.audit.seat, *key) for key in missing])
        for key, view in zip(missing, views, strict=True):
            self._seat_units[key] = int(view.weight)
        return {key: self._seat_units[key] for key in keys}

    def _summary(self, state: _Auditor, views: _AuditorViews, aligned_units: Mapping[int, int]) -> AuditorSummary:
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
            segment, round_ = self._round_of(key)
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
            head_time=self._head_time,
        )

    # ------------------------------------------------------------------------------------ history

    async def _history(self, state: _Auditor) -> tuple[AuditorHistoryPoint, ...]:
        """The auditor's figures after each event that changed them, replayed as the registry keeps
        them (see `AuditorHistoryPoint`).

        Stake: `Staked` and `UnstakeRequested` report the stake after them; a seat's forfeit (in a
        transaction that settled a round) comes out of the stake; a governance slash takes the free
        stake first (stake less the locks of the seats open at that moment) and the rest from the
        unbonding tokens, as `AuditorRegistry.slash` does. Stakers' share: the registry's
        accumulator times the stake, checkpointed (rounded down) before every stake change, as
        `_checkpoint` does. The accumulator streams with time (each notification is paid out over
        the reward period), so it is read at each point's block (`rewardPerStakeWad`; it advances
        once per block time, before any stake change in that block, so every event of a block sees
        the same value): a point equals `pendingStakerReward` at its block plus the claims.
        Reputation: the initial reputation of the parameters in force at registration, then every
        `ReputationUpdated`.
        """
        items: list[tuple[int, TxRef, str, int, int | None]] = [
            (state.registered_seq, state.registered, "registered", 0, None)
        ]
        items += [(e.seq, e.at, e.event, e.amount, e.stake_after) for e in state.ledger]
        items += [
            (seq, at, "stakers' reward", acc, None)
            for seq, at, acc in self._notifications
            if seq > state.registered_seq
        ]
        for session_id, aligned in (await self._aligned_units(state)).items():
            session = self._sessions[session_id]
            if session.fee_split is not None:
                earned = aligned * session.fee_split.per_seat_wei
                items.append((session.distributed_seq, session.fee_split.at, "rewards distributed", earned, None))
        items.sort(key=lambda item: item[0])

        blocks = sorted({at.block_number for _, at, _, _, _ in items})
        registry = self.protocol.registry
        reads = [partial(registry.reward_per_stake_wad, block=b) for b in blocks]
        accumulators = dict(zip(blocks, await _bounded(self.view_concurrency, reads), strict=True))
        acc = paid = accumulators[state.registered.block_number]  # registering checkpoints
        accrued = stake = unbonding = seat_rewards = staker_claimed = claimed = 0
        reputation = await self._initial_reputation(state.registered_seq)
        points: list[AuditorHistoryPoint] = []
        for seq, at, event, amount, stake_after in items:
            acc = accumulators[at.block_number]
            if event in ("staked", "unstake requested", "forfeit", "stakers' share claimed"):
                accrued += stake * (acc - paid) // WAD  # the registry's _checkpoint, rounding down
                paid = acc
            if event == "staked" and stake_after is not None:
                stake = stake_after
            elif event == "unstake requested" and stake_after is not None:
                stake, unbonding = stake_after, amount
            elif event == "unstaked":
                unbonding = 0  # executeUnstake pays out everything unbonding
            elif event == "forfeit":
                if at.tx_hash in self._closing_txs:
                    stake -= amount  # a seat's penalty: locked stake, always covered by it
                else:
                    free = max(stake - await self._locked_at(state, seq), 0)
                    taken = min(amount, free)
                    stake, unbonding = stake - taken, unbonding - (amount - taken)
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

    async def _locked_at(self, state: _Auditor, seq: int) -> int:
        """The stake the auditor's open seats locked just before the event at `seq`: the session's
        penalty P times the seat's units for every seat drawn before it and not settled before it."""
        locked = 0
        for key in state.seats:
            segment, round_ = self._round_of(key)
            released = _released_seq(segment, round_, state.address)
            if round_.drawn_seq < seq and (released is None or released > seq):
                seat = (*key, round_.seat_of(state.address))
                units = (await self._units([seat]))[seat]
                locked += (await self._params(key[0]))["penaltyPerSeat"] * units
        return locked

    async def _initial_reputation(self, seq: int) -> int:
        """The initial reputation in force at the event at `seq`: the `previous` parameters of the
        first `ParamsUpdated` after it, or the current parameters when none came after."""
        for at_seq, before, _after in self._initial_reputations:
            if at_seq > seq:
                return before
        if self._current_params is None:
            self._current_params = await self.protocol.params.params()
        return int(self._current_params["initialReputationWad"])
