"""Typed values read from and written to the protocol contracts.

Frozen dataclasses mirror the contracts' structs and enums, with units in the field names, so that
services never handle web3's raw tuples. `from_struct` reads any of them from web3's decoded struct:
a field is the struct member of the same name in camelCase (`fee_wei` <- `feeWei`), converted to
the field's type, so a struct gains a field by declaring it once.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic.alias_generators import to_camel

from trust.errors import ChainError

__all__ = [
    "AuditorInfo",
    "CommitteeDrawn",
    "EnvelopeSet",
    "Phase",
    "ReportRef",
    "SeatCommit",
    "SeatInfo",
    "SeatReveal",
    "SegmentInfo",
    "SegmentSpec",
    "SegmentStatus",
    "SessionInfo",
    "SessionStatus",
    "StakerRewardStream",
    "from_struct",
]


class SessionStatus(enum.IntEnum):
    NONE = 0
    REGISTERING = 1
    OPEN = 2
    FINALIZED = 3
    DISTRIBUTED = 4


class SegmentStatus(enum.IntEnum):
    NONE = 0
    AWAITING_DRAW = 1
    VOTING = 2
    PASSED = 3
    FAILED = 4
    UNDETERMINED = 5

    @property
    def is_final(self) -> bool:
        return self in (SegmentStatus.PASSED, SegmentStatus.FAILED, SegmentStatus.UNDETERMINED)


class Phase(enum.IntEnum):
    NONE = 0
    AWAITING_DRAW = 1
    COMMIT = 2
    REVEAL = 3
    FINALIZABLE = 4
    FINAL = 5


@dataclass(frozen=True, slots=True)
class SegmentSpec:
    """A segment as a provider registers it (`ITRUSTAudit.SegmentInput`)."""

    tier: int
    weight: int
    content_digest: bytes
    critical: bool = False
    contradiction: bool = False

    def __post_init__(self) -> None:
        if self.tier not in (1, 2, 3):
            raise ValueError(f"tier must be 1, 2 or 3, not {self.tier}")
        if not 0 < self.weight < 2**32:
            raise ValueError(f"weight must be in [1, 2^32), not {self.weight}")
        if len(self.content_digest) != 32 or self.content_digest == bytes(32):
            raise ValueError("content_digest must be 32 non-zero bytes (the CID's digest)")

    def as_tuple(self) -> tuple[int, int, bool, bool, bytes]:
        return (self.tier, self.weight, self.critical, self.contradiction, self.content_digest)


@dataclass(frozen=True, slots=True)
class SeatCommit:
    session_id: int
    segment_id: int
    seat_index: int
    commitment: bytes

    def as_tuple(self) -> tuple[int, int, int, bytes]:
        return (self.session_id, self.segment_id, self.seat_index, self.commitment)


@dataclass(frozen=True, slots=True)
class SeatReveal:
    session_id: int
    segment_id: int
    seat_index: int
    vote: bool
    salt: bytes

    def as_tuple(self) -> tuple[int, int, int, bool, bytes]:
        return (self.session_id, self.segment_id, self.seat_index, self.vote, self.salt)


@dataclass(frozen=True, slots=True)
class EnvelopeSet:
    """The key envelopes of one drawn round of one segment (`ISegmentKeys.EnvelopeSet`), for
    `SegmentKeysContract.publish_envelopes_batch`: one CID per seat, in committee order (text, or
    the binary CID the contract takes). Any sequence of CIDs is kept as a tuple."""

    segment_id: int
    round: int
    envelope_cids: Sequence[str | bytes]

    def __post_init__(self) -> None:
        if not 0 <= self.segment_id < 2**256:
            raise ValueError(f"segment_id must be a uint256, not {self.segment_id}")
        if not 0 <= self.round < 2**8:
            raise ValueError(f"round must be a uint8 (0..255), not {self.round}")
        if isinstance(self.envelope_cids, str | bytes):
            raise ValueError(
                f"envelope_cids of segment {self.segment_id} must be a sequence of CIDs, one per seat, "
                f"not a single {type(self.envelope_cids).__name__}"
            )
        object.__setattr__(self, "envelope_cids", tuple(self.envelope_cids))


@dataclass(frozen=True, slots=True)
class ReportRef:
    """One audit report to announce (`ISegmentKeys.ReportRef`): a seat of the caller, named by
    segment, round and index in that round's committee, and the report's CID on IPFS (text, or the
    binary CID the contract takes)."""

    segment_id: int
    round: int
    seat_index: int
    report_cid: str | bytes

    def __post_init__(self) -> None:
        if not 0 <= self.segment_id < 2**256:
            raise ValueError(f"segment_id must be a uint256, not {self.segment_id}")
        for name in ("round", "seat_index"):
            value = getattr(self, name)
            if not 0 <= value < 2**8:
                raise ValueError(f"{name} must be a uint8 (0..255), not {value}")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: int
    provider: str
    status: SessionStatus
    valid: bool
    trace_root: bytes
    fee_wei: int
    segment_count: int
    registered_count: int
    finalized_count: int
    randomness_block: int
    total_weight: int
    pass_weight: int
    critical_failed: int
    contradictions_confirmed: int
    aligned_seats: int
    segments_passed: int = 0
    segments_failed: int = 0
    segments_undetermined: int = 0
    """The per-segment verdicts beside the weighted trace verdict: how many segments passed, failed
    and ended undetermined, whatever weights the provider declared."""


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A segment and its current round (`TRUSTAudit.segment`). `committee_size` is the round's
    number of committee draws (its total voting weight in units; escalation and the fee use it);
    `seat_count` the distinct members those draws seated."""

    segment_id: int
    tier: int
    weight: int
    critical: bool
    contradiction: bool
    status: SegmentStatus
    round: int
    committee_size: int
    revealed_count: int
    commit_deadline: int
    reveal_deadline: int
    randomness_block: int
    content_digest: bytes
    delivered: bool = False
    """The provider published this round's key envelopes by `delivery_deadline` (issue M3)."""
    delivery_deadline: int = 0
    """Half the round's commit window after its draw (0 before the draw): with no envelopes by
    then, an uncommitted seat may `claimUndelivered`."""
    seat_count: int = 0
    """The distinct members the round's `committee_size` draws seated (0 before the draw): seats
    0 .. seat_count - 1. Draws are made with replacement, so a member that won several draws holds
    one seat weighing that many units, and a round may have fewer seats than draws. The round is
    complete when `revealed_count` reaches this (not `committee_size`)."""


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """One seat of a round (`TRUSTAudit.seat`). `weight` is the seat's units: how many of the
    round's committee draws its member won (1 .. committee size). The seat votes with that weight
    and locks, earns (R) and forfeits (P) that many times; it is not stake."""

    auditor: str
    weight: int
    committed: bool
    revealed: bool
    vote: bool
    claimed: bool
    undelivered: bool = False
    """Released by `claimUndelivered`: no key envelope reached the seat in time."""
    abstained: bool = False
    """Said in the commit window that it will not vote (`abstain`): settled as silent."""


@dataclass(frozen=True, slots=True)
class AuditorInfo:
    address: str
    registered: bool
    tier: int
    available: bool
    credentialed: bool
    stake: int
    locked: int
    unbonding: int
    unbonding_ready_at: int
    unbonding_reach_block: int
    """`executeUnstake` waits for the block after this one too (0 when nothing is unbonding): until
    then a draw on a snapshot taken before the request may still charge the stake."""
    reputation_wad: int
    encryption_key: bytes
    metadata_uri: str

    @property
    def reputation(self) -> float:
        return self.reputation_wad / 10**18


@dataclass(frozen=True, slots=True)
class StakerRewardStream:
    """The registry's stakers' reward stream (`stakerRewardStream()`): each notification of the
    stakers' share is paid out evenly until `period_finish` (unix seconds), pro rata to stake and
    to the time it is staked, so stake that arrives just before a notification earns only its
    seconds. `rate_wad` is wei per second times 1e18; `streaming_wei` is still to be paid out,
    `carried_wei` (streamed while nobody staked) waits for the next notification;
    `reward_per_stake_wad` is the accumulator (wei per token unit of stake, times 1e18)."""

    rate_wad: int
    period_finish: int
    streaming_wei: int
    carried_wei: int
    reward_per_stake_wad: int


@dataclass(frozen=True, slots=True)
class CommitteeDrawn:
    """A `CommitteeDrawn` event: who sits on a segment's round, and its windows."""

    session_id: int
    segment_id: int
    round: int
    tier: int
    members: tuple[str, ...]
    commit_deadline: int
    reveal_deadline: int
    block_number: int


_Struct = TypeVar("_Struct")

_MEMBER_NAMES = {"metadata_uri": "metadataURI"}
"""Fields whose contract member is not their name in camelCase (Solidity keeps the acronym)."""


def from_struct(cls: type[_Struct], raw: Any, **given: Any) -> _Struct:
    """A `cls` (one of the dataclasses above) read from web3's decoded struct `raw`; the fields in
    `given` (the ids the call was made with, which the struct does not repeat) are taken as they are.

    Raises `ChainError` naming the field and the member when the struct lacks the member or holds a
    value the field's type refuses (an enum value this code does not know): the contracts' ABI and
    this package disagree, so rebuild the ABIs or upgrade the package.
    """
    values = dict(given)
    for name, member, convert in _readers(typing.cast(type, cls)):  # mypy: an unbound type[T] is not Hashable
        if name in given:
            continue
        try:
            value = getattr(raw, member)
        except AttributeError:
            raise ChainError(
                f"{cls.__name__}.{name}: the contract's struct has no member {member!r}; the contracts' ABI "
                "and this package disagree: rebuild the ABIs or upgrade the package"
            ) from None
        try:
            values[name] = convert(value)
        except (TypeError, ValueError) as exc:
            raise ChainError(
                f"{cls.__name__}.{name}: the contract returned {value!r} as {member!r}, which is not a "
                f"{getattr(convert, '__name__', convert)} ({exc}); the contracts and this package disagree"
            ) from exc
    return cls(**values)


@functools.cache
def _readers(cls: type) -> tuple[tuple[str, str, Callable[[Any], Any]], ...]:
    """Per field of `cls`: its name, its struct member and the conversion to its type (`int`, `bool`,
    `str`, `bytes` or an enum: each converts by being called). Computed once per class."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (field.name, _MEMBER_NAMES.get(field.name, to_camel(field.name)), hints[field.name])
        for field in dataclasses.fields(cls)
    )
