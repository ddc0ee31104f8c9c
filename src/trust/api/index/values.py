"""The explorer's values: what the index's queries return (frozen), the states and outcomes they
name, and the two errors a page turns into 404 and 422.

Amounts keep the chain's integers: token base units (`_units`), wei (`_wei`), WAD (1e18 = 1) and
basis points (`_bps`); times are unix seconds (block times). Nothing here reads the chain.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from eth_utils import is_hex_address, to_checksum_address

from trust.errors import TrustError

__all__ = [
    "AuditorDetail",
    "AuditorHistoryPoint",
    "AuditorPage",
    "AuditorSeat",
    "AuditorSort",
    "AuditorSummary",
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
