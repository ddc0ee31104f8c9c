"""Typed access to a deployed TRUST protocol: the audit contract, key delivery and inclusion proofs,
the registry, the parameter store, the staking token and the governance timelock.

Services call these methods, never web3's dynamic `contract.functions.x`. Each write takes the
signing account explicitly: a worker signs with its own wallet, a provider with its own.

`Protocol.connect(settings)` is the one way in: it finds the contracts' ABIs (`protocol_artifacts`),
opens the chain client (`open_chain`), loads the deployment file of the chain it reached and binds
the contracts. It chooses no wallet: callers still pass their signer to each write.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from eth_abi import encode as abi_encode
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address
from web3.contract.async_contract import AsyncContract
from web3.exceptions import ContractLogicError, Web3RPCError
from web3.logs import DISCARD
from web3.types import BlockIdentifier

from trust.adapters.chain.client import ChainClient, SentTransaction
from trust.adapters.chain.compiler import Artifact, compile_protocol
from trust.adapters.chain.deployment import Deployment
from trust.adapters.chain.types import (
    AuditorInfo,
    CommitteeDrawn,
    EnvelopeSet,
    Phase,
    ReportRef,
    SeatCommit,
    SeatInfo,
    SeatReveal,
    SegmentInfo,
    SegmentSpec,
    SessionInfo,
    StakerRewardStream,
    from_struct,
)
from trust.adapters.local.toolchain import Toolchain
from trust.core.cid import cid_from_bytes, parse_cid
from trust.core.privacy.merkle import SegmentLeaf
from trust.errors import ChainError, ParameterError, VerificationError
from trust.settings import Settings

_logger = logging.getLogger("trust.adapters.chain")

__all__ = [
    "AuditContract",
    "DRAWS_PER_TRANSACTION",
    "DrawEvent",
    "DrawEventKind",
    "FINALIZE_DRAWS_PER_TRANSACTION",
    "GovernanceTimelock",
    "KeyEnvelope",
    "ParamsContract",
    "Protocol",
    "SEGMENTS_PER_REGISTRATION",
    "SETTLEMENT_CHUNK_SEATS",
    "PublishedReport",
    "RegistryContract",
    "SegmentKeysContract",
    "TokenContract",
    "VOTES_PER_TRANSACTION",
    "draws_of",
    "open_chain",
    "protocol_artifacts",
]


SETTLEMENT_CHUNK_SEATS = 32
"""The settlement entries one transaction settles when a segment's round is settled in steps
(`ParamsLib.SETTLEMENT_CHUNK_SEATS`, issue M4): `ParamsLib.validate` admits only committees whose
step of this many seats, every one forfeiting, fits its 12,000,000-gas budget."""

# Large traces are registered, drawn and finalized over several transactions, each inside the same
# 12,000,000-gas budget (a block holds 30 to 36 million on Ethereum; a 1,000-segment draw in one
# transaction would need about 100 million). Callers cut their lists with
# `trust.core.batching.bounded_runs`.
SEGMENTS_PER_REGISTRATION = 128
"""Segments one `createSessionWithSegments` or `registerSegments` registers (about 75,000 gas each)."""
DRAWS_PER_TRANSACTION = 256
"""Committee draws (the sum of the segments' `committee_size`) one `assignAuditorsBatch` makes
(about 35,000 gas a draw)."""
VOTES_PER_TRANSACTION = 256
"""Seats one `commitVotes` or `revealVotes` carries (about 36,000 and 23,000 gas a seat)."""
FINALIZE_DRAWS_PER_TRANSACTION = SETTLEMENT_CHUNK_SEATS
"""Committee draws whose seats one `finalizeSegments` settles: at most as many seats as one
settlement step, so that a call in which every seat forfeits fits the same budget."""


def draws_of(info: SegmentInfo) -> int:
    """A segment's committee draws, at least 1: its weight in `DRAWS_PER_TRANSACTION` and
    `FINALIZE_DRAWS_PER_TRANSACTION` (`bounded_runs(segments, most, draws_of)`)."""
    return max(1, info.committee_size)


def _event_args(contract: AsyncContract, event: str, sent: SentTransaction) -> list[Any]:
    return [log["args"] for log in contract.events[event]().process_receipt(sent.receipt, errors=DISCARD)]


class AuditContract:
    """`TRUSTAudit`: sessions, committees, votes, finalization and rewards."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("TRUSTAudit", address)

    # -- sessions
    async def minimum_fee(self, segments: Sequence[SegmentSpec]) -> int:
        return int(await self.chain.call(self.contract.functions.minimumFee([s.as_tuple() for s in segments])))

    async def create_session(
        self, provider: LocalAccount, trace_root: bytes, segments: Sequence[SegmentSpec], fee_wei: int | None = None
    ) -> tuple[int, SentTransaction]:
        """Opens a session with all its segments; pays the minimum fee unless `fee_wei` is given."""
        fee = await self.minimum_fee(segments) if fee_wei is None else fee_wei
        fn = self.contract.functions.createSessionWithSegments(trace_root, [s.as_tuple() for s in segments])
        sent = await self.chain.transact(fn, provider, value=fee)
        (created,) = _event_args(self.contract, "SessionCreated", sent)
        return int(created["sessionId"]), sent

    async def create_empty_session(
        self, provider: LocalAccount, trace_root: bytes, segment_count: int, fee_wei: int = 0
    ) -> tuple[int, SentTransaction]:
        """`createSession`: a session still registering; its segments follow in `register_segments`,
        and it opens (its randomness block is fixed) when the last one is registered."""
        sent = await self.chain.transact(
            self.contract.functions.createSession(trace_root, segment_count), provider, value=fee_wei
        )
        (created,) = _event_args(self.contract, "SessionCreated", sent)
        return int(created["sessionId"]), sent

    async def register_segments(
        self, provider: LocalAccount, session_id: int, segments: Sequence[SegmentSpec], fee_wei: int = 0
    ) -> SentTransaction:
        """`registerSegments`: the next segments of a registering session; `fee_wei` adds to its fee."""
        fn = self.contract.functions.registerSegments(session_id, [s.as_tuple() for s in segments])
        return await self.chain.transact(fn, provider, value=fee_wei)

    async def cancel_session(self, provider: LocalAccount, session_id: int) -> SentTransaction:
        """`cancelSession`: refunds the fee of a session that has not opened yet."""
        return await self.chain.transact(self.contract.functions.cancelSession(session_id), provider)

    def slash_auditor_calldata(self, auditor: str, amount: int, reason: str) -> bytes:
        """Calldata of `slashAuditor(auditor, amount, reason)`, to be scheduled through the timelock."""
        args = [to_checksum_address(auditor), amount, reason]
        return bytes.fromhex(self.contract.encode_abi("slashAuditor", args=args)[2:])

    async def session(self, session_id: int) -> SessionInfo:
        raw = await self.chain.call(self.contract.functions.session(session_id))
        return from_struct(SessionInfo, raw, session_id=session_id)

    async def segment(self, session_id: int, segment_id: int) -> SegmentInfo:
        raw = await self.chain.call(self.contract.functions.segment(session_id, segment_id))
        return from_struct(SegmentInfo, raw, segment_id=segment_id)

    async def segments(self, pairs: Sequence[tuple[int, int]]) -> list[SegmentInfo]:
        """`segment` of each (session, segment) pair, in order, read in batches (`call_many`)."""
        raws = await self.chain.call_many([self.contract.functions.segment(s, g) for s, g in pairs])
        return [from_struct(SegmentInfo, raw, segment_id=g) for (_, g), raw in zip(pairs, raws, strict=True)]

    async def seats(self, keys: Sequence[tuple[int, int, int, int]]) -> list[SeatInfo]:
        """`seat` of each (session, segment, round, seat index), in order, read in batches."""
        raws = await self.chain.call_many([self.contract.functions.seat(*key) for key in keys])
        return [from_struct(SeatInfo, raw) for raw in raws]

    async def phases(self, pairs: Sequence[tuple[int, int]]) -> list[Phase]:
        """`phase` of each (session, segment) pair, in order, read in batches."""
        raws = await self.chain.call_many([self.contract.functions.phase(s, g) for s, g in pairs])
        return [Phase(raw) for raw in raws]

    async def seat(self, session_id: int, segment_id: int, round_id: int, seat_index: int) -> SeatInfo:
        raw = await self.chain.call(self.contract.functions.seat(session_id, segment_id, round_id, seat_index))
        return from_struct(SeatInfo, raw)

    async def committee(self, session_id: int, segment_id: int) -> list[str]:
        return list(await self.chain.call(self.contract.functions.committee(session_id, segment_id)))

    async def phase(self, session_id: int, segment_id: int) -> Phase:
        return Phase(await self.chain.call(self.contract.functions.phase(session_id, segment_id)))

    async def session_params(self, session_id: int) -> dict[str, int]:
        return dict((await self.chain.call(self.contract.functions.sessionParams(session_id)))._asdict())

    async def claimable(self, account: str) -> int:
        return int(await self.chain.call(self.contract.functions.claimable(to_checksum_address(account))))

    # -- committees
    async def assign_auditors(
        self, caller: LocalAccount, session_id: int, segment_ids: Sequence[int]
    ) -> SentTransaction:
        fn = self.contract.functions.assignAuditorsBatch(session_id, list(segment_ids))
        return await self.chain.transact(fn, caller)

    async def assign_auditor(self, caller: LocalAccount, session_id: int, segment_id: int) -> SentTransaction:
        """`assignAuditors` of one segment: reverts unless the segment is awaiting its draw."""
        return await self.chain.transact(self.contract.functions.assignAuditors(session_id, segment_id), caller)

    def committees_in(self, sent: SentTransaction) -> list[CommitteeDrawn]:
        """The committees a draw transaction seated."""
        return [
            _committee_drawn(args, sent.block_number) for args in _event_args(self.contract, "CommitteeDrawn", sent)
        ]

    async def committees_drawn(
        self, from_block: int = 0, session_id: int | None = None, *, to_block: int | None = None
    ) -> list[CommitteeDrawn]:
        """`CommitteeDrawn` events in blocks `from_block`..`to_block` (the latest when None), in
        chain order (workers find their seats here)."""
        filters = {"sessionId": session_id} if session_id is not None else None
        event = self.contract.events.CommitteeDrawn()
        try:
            logs = await self.chain.get_logs(
                event,
                from_block=from_block,
                to_block="latest" if to_block is None else to_block,
                argument_filters=filters,
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading CommitteeDrawn from {self.chain.rpc_url} failed: {exc}") from exc
        logs = sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"])))
        return [_committee_drawn(log["args"], log["blockNumber"]) for log in logs]

    async def draw_events(self, from_block: int, *, to_block: int | None = None) -> list[DrawEvent]:
        """The events that announce committees still to be drawn (`DrawEventKind`) in blocks
        `from_block`..`to_block` (the latest when None), in chain order: what a worker reads to
        predict the seats it will be drawn for before the draw happens."""
        _, events = await self._draw_log(from_block, to_block, committees=False)
        return events

    async def draw_log(
        self, from_block: int, *, to_block: int | None = None
    ) -> tuple[list[CommitteeDrawn], list[DrawEvent]]:
        """`committees_drawn` and `draw_events` of the same blocks, read in one request (what a
        worker reads on every tick)."""
        return await self._draw_log(from_block, to_block, committees=True)

    async def _draw_log(
        self, from_block: int, to_block: int | None, *, committees: bool
    ) -> tuple[list[CommitteeDrawn], list[DrawEvent]]:
        names = [*(["CommitteeDrawn"] if committees else []), *(kind.value for kind in DrawEventKind)]
        try:
            logs = await self.chain.get_logs(
                [self.contract.events[name]() for name in names],
                from_block=from_block,
                to_block="latest" if to_block is None else to_block,
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading the draw events from {self.chain.rpc_url} failed: {exc}") from exc
        drawn = [_committee_drawn(log["args"], log["blockNumber"]) for log in logs if log["event"] == "CommitteeDrawn"]
        events = [
            _draw_event(DrawEventKind(log["event"]), log["args"], int(log["blockNumber"]), int(log["logIndex"]))
            for log in logs
            if log["event"] != "CommitteeDrawn"
        ]
        return drawn, events

    # -- votes
    async def commitment_of(
        self, session_id: int, segment_id: int, round_id: int, auditor: str, vote: bool, salt: bytes
    ) -> bytes:
        fn = self.contract.functions.commitmentOf(
            session_id, segment_id, round_id, to_checksum_address(auditor), vote, salt
        )
        return bytes(await self.chain.call(fn))

    def commitment(
        self, session_id: int, segment_id: int, round_id: int, auditor: str, vote: bool, salt: bytes
    ) -> bytes:
        """`commitmentOf` computed here, without a call: keccak256(abi.encode(chain id, this contract,
        session, segment, round, auditor, vote, salt)). A test checks it against the contract."""
        encoded = abi_encode(
            ["uint256", "address", "uint256", "uint256", "uint8", "address", "bool", "bytes32"],
            [
                self.chain.chain_id,
                self.address,
                session_id,
                segment_id,
                round_id,
                to_checksum_address(auditor),
                vote,
                salt,
            ],
        )
        return keccak(encoded)

    async def reveal_matches(self, auditor: str, session_id: int, segment_id: int, vote: bool, salt: bytes) -> bool:
        """Whether revealing (vote, salt) now would open `auditor`'s commitment, simulated with
        eth_call (nothing is sent): True when it would succeed, False on `AuditCommitmentMismatch`.
        Any other revert (the reveal window is not open, the seat already revealed) is raised.
        Rebuilds a lost vote: with the salt derived from the wallet, one of the two votes matches."""
        fn = self.contract.functions.revealVote(session_id, segment_id, vote, salt)
        try:
            await fn.call({"from": to_checksum_address(auditor)})
        except ContractLogicError as exc:
            error = self.chain.revert_error(exc, "revealVote() simulation")
            if error.error_name == "AuditCommitmentMismatch":
                return False
            raise error from exc
        except Web3RPCError as exc:
            raise ChainError(f"simulating revealVote() at {self.chain.rpc_url} failed: {exc}") from exc
        return True

    def rewards_claimed_in(self, sent: SentTransaction) -> int:
        """The wei a `claimRewards` transaction paid."""
        return sum(int(a["amountWei"]) for a in _event_args(self.contract, "RewardsClaimed", sent))

    def units_claimed_in(self, sent: SentTransaction) -> int:
        """The units a `claimRewards` transaction was paid for: each claimed seat's committee draws
        (`RewardsClaimed.units`), so the amount is R times this."""
        return sum(int(a["units"]) for a in _event_args(self.contract, "RewardsClaimed", sent))

    @staticmethod
    def new_salt() -> bytes:
        """A fresh 32-byte salt from the OS's CSPRNG. Store it durably before committing."""
        return secrets.token_bytes(32)

    async def commit_votes(self, auditor: LocalAccount, commits: Sequence[SeatCommit]) -> SentTransaction:
        fn = self.contract.functions.commitVotes([c.as_tuple() for c in commits])
        return await self.chain.transact(fn, auditor)

    async def commit_vote(
        self, auditor: LocalAccount, session_id: int, segment_id: int, commitment: bytes
    ) -> SentTransaction:
        return await self.chain.transact(
            self.contract.functions.commitVote(session_id, segment_id, commitment), auditor
        )

    async def reveal_votes(self, auditor: LocalAccount, reveals: Sequence[SeatReveal]) -> SentTransaction:
        fn = self.contract.functions.revealVotes([r.as_tuple() for r in reveals])
        return await self.chain.transact(fn, auditor)

    async def reveal_vote(
        self, auditor: LocalAccount, session_id: int, segment_id: int, vote: bool, salt: bytes
    ) -> SentTransaction:
        fn = self.contract.functions.revealVote(session_id, segment_id, vote, salt)
        return await self.chain.transact(fn, auditor)

    async def abstain(
        self, auditor: LocalAccount, session_id: int, segment_id: int, seat_index: int
    ) -> SentTransaction:
        """`abstain`: the seat will not vote this round (settled as silent); lets the windows close
        early once every other seat has acted."""
        return await self.chain.transact(self.contract.functions.abstain(session_id, segment_id, seat_index), auditor)

    async def claim_undelivered(
        self, auditor: LocalAccount, session_id: int, segment_id: int, seat_index: int
    ) -> SentTransaction:
        """`claimUndelivered`: releases a seat whose round got no key envelope by its delivery
        deadline, and credits the auditor R out of the provider's fee (issue M3)."""
        fn = self.contract.functions.claimUndelivered(session_id, segment_id, seat_index)
        return await self.chain.transact(fn, auditor)

    # -- finalization and money
    async def finalize_segments(
        self,
        caller: LocalAccount,
        session_id: int,
        segment_ids: Sequence[int],
        seats_per_tx: int = SETTLEMENT_CHUNK_SEATS,
    ) -> SentTransaction:
        """`finalizeSegments`, with every segment's round too big to settle in one transaction
        settled first in steps (issue M4).

        A segment whose settlement list has more than `seats_per_tx` entries left is stepped with
        `settleSegment` (one transaction per `seats_per_tx` entries, each a transaction of its own)
        until at most `seats_per_tx` remain, never to its end; the one `finalizeSegments`
        transaction then settles every segment's remainder and records each verdict or
        escalation. So the returned transaction carries every `SegmentFinalized` and
        `SegmentEscalated` of the call, as before; `AuditorSlashed` of the earlier steps are in
        their own transactions. Segments too small to need a step cost one view call each.
        """
        if seats_per_tx < 1:
            raise ParameterError(
                f"seats_per_tx must be at least 1 (got {seats_per_tx}): it is how many seats one transaction settles"
            )
        for segment_id in segment_ids:
            await self.settle_down_to(caller, session_id, segment_id, seats_per_tx)
        return await self.chain.transact(
            self.contract.functions.finalizeSegments(session_id, list(segment_ids)), caller
        )

    async def settlement_progress(self, session_id: int, segment_id: int) -> tuple[int, int]:
        """`settlementProgress`: (entries settled, entries in the list) of the segment's current
        round; (0, 0) unless it is voting. The list is final once the voting is over."""
        settled, total = await self.chain.call(self.contract.functions.settlementProgress(session_id, segment_id))
        return int(settled), int(total)

    async def settle_segment(
        self, caller: LocalAccount, session_id: int, segment_id: int, max_seats: int
    ) -> SentTransaction:
        """`settleSegment`: one step of at most `max_seats` entries of the segment's settlement
        list (issue M4); the step that settles the last one finalizes or escalates the segment."""
        return await self.chain.transact(
            self.contract.functions.settleSegment(session_id, segment_id, max_seats), caller
        )

    async def settle_down_to(
        self, caller: LocalAccount, session_id: int, segment_id: int, seats_per_tx: int
    ) -> list[SentTransaction]:
        """Steps the segment's settlement, `seats_per_tx` entries a transaction, until at most
        `seats_per_tx` are left (none when it is not voting); returns the steps' transactions.
        Never settles the last entry, so the verdict (or escalation) is left to the caller's
        finalization. Reverts (`ContractReverted`) as `settleSegment` does, for example while the
        voting is not over."""
        steps: list[SentTransaction] = []
        while True:
            settled, total = await self.settlement_progress(session_id, segment_id)
            if total - settled <= seats_per_tx:
                return steps
            steps.append(await self.settle_segment(caller, session_id, segment_id, seats_per_tx))

    def settlement_steps_in(self, sent: SentTransaction) -> list[tuple[int, int, int]]:
        """(segment id, entries settled, entries in the list) of every `SegmentSettlementProgress`
        in a transaction (a step of a settlement in steps, or the finalization that ended one)."""
        return [
            (int(a["segmentId"]), int(a["settled"]), int(a["total"]))
            for a in _event_args(self.contract, "SegmentSettlementProgress", sent)
        ]

    async def finalize_segment(self, caller: LocalAccount, session_id: int, segment_id: int) -> SentTransaction:
        """`finalizeSegment` of one segment: reverts unless its round is voting."""
        return await self.chain.transact(self.contract.functions.finalizeSegment(session_id, segment_id), caller)

    def escalations_in(self, sent: SentTransaction) -> list[int]:
        """Segment ids that a finalization transaction escalated to a new round."""
        return [int(a["segmentId"]) for a in _event_args(self.contract, "SegmentEscalated", sent)]

    def slashed_in(self, sent: SentTransaction) -> list[tuple[str, int]]:
        """(auditor, amount) of every `AuditorSlashed` event in a transaction. A seat forfeits P
        per unit (committee draw it won): the amount is the seat's units times P."""
        return [(a["auditor"], int(a["amount"])) for a in _event_args(self.contract, "AuditorSlashed", sent)]

    async def finalize_trace(self, caller: LocalAccount, session_id: int) -> tuple[bool, SentTransaction]:
        sent = await self.chain.transact(self.contract.functions.finalizeTrace(session_id), caller)
        (event,) = _event_args(self.contract, "TraceFinalized", sent)
        return bool(event["valid"]), sent

    async def distribute_rewards(self, caller: LocalAccount, session_id: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.distributeRewards(session_id), caller)

    async def claim_rewards(
        self, auditor: LocalAccount, session_id: int, seats: Sequence[tuple[int, int]]
    ) -> SentTransaction:
        """Claims the reward of the caller's aligned seats, given as (segment id, seat index)."""
        fn = self.contract.functions.claimRewards(session_id, [tuple(seat) for seat in seats])
        return await self.chain.transact(fn, auditor)

    async def withdraw(self, account: LocalAccount) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.withdraw(), account)


@dataclass(frozen=True, slots=True)
class KeyEnvelope:
    """One `KeyEnvelopePublished` event: where the key envelope of a seat lies on IPFS.

    `envelope_cid` is the CID's text form (base32 CIDv1, or `Qm...` for a CIDv0); the chain holds
    the binary CID. `block_number` and `log_index` order publications: a later one for the same
    seat (session, segment, round, seat index) supersedes an earlier one.
    """

    session_id: int
    segment_id: int
    round: int
    seat_index: int
    auditor: str
    envelope_cid: str
    block_number: int
    log_index: int

    @property
    def seat(self) -> tuple[int, int, int, int]:
        """(session, segment, round, seat index): what a republication replaces."""
        return (self.session_id, self.segment_id, self.round, self.seat_index)


@dataclass(frozen=True, slots=True)
class PublishedReport:
    """One `ReportPublished` event: where the audit report of a revealed seat lies on IPFS.

    `cid` is the CID's text form (as `KeyEnvelope.envelope_cid`); `auditor` is the seat's auditor,
    who sent the transaction (the contract checked the seat is its own and revealed). A later
    publication for the same seat, by (block, log index), supersedes an earlier one.
    """

    session_id: int
    segment_id: int
    round: int
    seat_index: int
    auditor: str
    cid: str
    block_number: int
    log_index: int

    @property
    def seat(self) -> tuple[int, int, int, int]:
        """(session, segment, round, seat index): what a republication replaces."""
        return (self.session_id, self.segment_id, self.round, self.seat_index)


class DrawEventKind(StrEnum):
    """The audit contract's events that say a committee is coming (`DrawEvent`)."""

    OPENED = "SessionOpened"  # a session and the randomness block of its first draws
    REGISTERED = "SegmentRegistered"  # one of its segments, with its tier (round 0)
    ESCALATED = "SegmentEscalated"  # a later round, its tier, committee size and randomness block
    REFRESHED = "RandomnessRefreshed"  # a new randomness block for a segment's next draw
    UNAVAILABLE = "CommitteeUnavailable"  # a draw found too few members (`attempt` of three)


@dataclass(frozen=True, slots=True)
class DrawEvent:
    """One event of `DrawEventKind`, for a worker that predicts the seats it will be drawn for.

    Fields a kind does not carry are None: `segment_id` (OPENED), `tier` (OPENED, REFRESHED,
    UNAVAILABLE), `committee_size` (all but ESCALATED), `randomness_block` (REGISTERED,
    UNAVAILABLE). `round` is 0 for OPENED and REGISTERED, `attempt` 0 except for UNAVAILABLE.
    """

    kind: DrawEventKind
    session_id: int
    segment_id: int | None
    round: int
    tier: int | None
    committee_size: int | None
    randomness_block: int | None
    attempt: int
    block_number: int
    log_index: int


def _committee_drawn(args: Any, block_number: int) -> CommitteeDrawn:
    return CommitteeDrawn(
        session_id=args["sessionId"],
        segment_id=args["segmentId"],
        round=args["round"],
        tier=args["tier"],
        members=tuple(args["members"]),
        commit_deadline=args["commitDeadline"],
        reveal_deadline=args["revealDeadline"],
        block_number=block_number,
    )


def _draw_event(kind: DrawEventKind, args: Any, block_number: int, log_index: int) -> DrawEvent:
    def get(name: str) -> int | None:
        return int(args[name]) if name in args else None

    return DrawEvent(
        kind=kind,
        session_id=int(args["sessionId"]),
        segment_id=get("segmentId"),
        round=get("round") or 0,
        tier=get("tier"),
        committee_size=get("committeeSize"),
        randomness_block=get("randomnessBlock"),
        attempt=get("attempt") or 0,
        block_number=block_number,
        log_index=log_index,
    )


def _cid_to_chain(cid: str | bytes) -> bytes:
    """The binary CID the contract takes: a text CID is parsed, bytes are passed as they are."""
    if isinstance(cid, bytes):
        return cid
    return parse_cid(cid).to_bytes()


def _cid_from_chain(raw: bytes) -> str:
    """The text form of a binary CID read from chain: base32 for CIDv1, base58 `Qm...` for CIDv0."""
    try:
        return cid_from_bytes(bytes(raw))
    except VerificationError as exc:
        raise VerificationError(
            f"the chain holds a value where a binary CID was expected: {exc}; "
            "the provider published something that is not a CID: ask it to republish"
        ) from exc


def _envelope_cid(raw: bytes) -> str:
    """An envelope's CID as published. Bytes that are no CID (the contract checks the length only)
    come back as their hex ("0x..."), with a warning: raising here would stop the scan of every
    worker the provider addressed, again on every restart, and cost them every other seat. A read
    of the hex fails (`VerificationError`), so the seat votes fail as for any corrupt delivery
    (issue M3, `trust.services.worker.daemon.Worker._vote_unreadable`)."""
    try:
        return cid_from_bytes(bytes(raw))
    except VerificationError as exc:
        _logger.warning("a key envelope's CID is no CID; its seat will read it as a corrupt delivery: %s", exc)
        return "0x" + bytes(raw).hex()


def _key_envelope(args: Any, block_number: int, log_index: int) -> KeyEnvelope:
    return KeyEnvelope(
        session_id=int(args["sessionId"]),
        segment_id=int(args["segmentId"]),
        round=int(args["round"]),
        seat_index=int(args["seatIndex"]),
        auditor=to_checksum_address(args["auditor"]),
        envelope_cid=_envelope_cid(args["envelopeCid"]),
        block_number=block_number,
        log_index=log_index,
    )


def _published_report(args: Any, block_number: int, log_index: int) -> PublishedReport:
    return PublishedReport(
        session_id=int(args["sessionId"]),
        segment_id=int(args["segmentId"]),
        round=int(args["round"]),
        seat_index=int(args["seatIndex"]),
        auditor=to_checksum_address(args["auditor"]),
        cid=_cid_from_chain(args["reportCid"]),
        block_number=block_number,
        log_index=log_index,
    )


def _leaf_tuple(leaf: SegmentLeaf) -> tuple[int, bytes, bytes, int, int, bool]:
    return (leaf.index, leaf.cid, leaf.ciphertext_digest, leaf.tier, leaf.weight, leaf.critical)


class SegmentKeysContract:
    """`SegmentKeys`: key envelope delivery to seated auditors, the auditors' report announcements
    and segment inclusion proofs."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("SegmentKeys", address)

    async def publish_envelopes(
        self,
        provider: LocalAccount,
        session_id: int,
        segment_id: int,
        round_id: int,
        envelope_cids: Sequence[str | bytes],
    ) -> SentTransaction:
        """Publishes one envelope CID per seat of the segment's drawn round, in committee order.

        Only the session's provider, only while the segment votes in `round_id`; calling again in the
        same round republishes the whole set (per seat, the latest wins). A text CID is sent in its
        binary form. Reverts (`ContractReverted`) name the failed check: SegmentKeysNotProvider,
        SegmentKeysWrongRound, SegmentKeysNotVoting, SegmentKeysWrongEnvelopeCount, ...
        """
        cids = [_cid_to_chain(cid) for cid in envelope_cids]
        fn = self.contract.functions.publishEnvelopes(session_id, segment_id, round_id, cids)
        return await self.chain.transact(fn, provider)

    async def publish_envelopes_batch(
        self, provider: LocalAccount, session_id: int, sets: Sequence[EnvelopeSet]
    ) -> SentTransaction:
        """Publishes the envelopes of several drawn rounds of `session_id` in one transaction: per
        set, exactly what `publish_envelopes` would (the same checks, errors and events), all or
        nothing.

        Sets may name any segments and rounds of the session, in any order, a segment more than once
        (per seat, the later set wins). At most `max_batch_envelopes()` envelopes over all sets
        (256: the largest batch stays under go-ethereum's 128 KiB transaction size and far under the
        2^24 gas cap); a caller with more splits them over several calls. A text CID is sent in its
        binary form. Reverts (`ContractReverted`) name the failed check and its set's segment:
        SegmentKeysNoEnvelopeSets, SegmentKeysBatchTooLarge, then those of `publish_envelopes`.
        """
        rows = [(s.segment_id, s.round, [_cid_to_chain(cid) for cid in s.envelope_cids]) for s in sets]
        fn = self.contract.functions.publishEnvelopesBatch(session_id, rows)
        return await self.chain.transact(fn, provider)

    def envelopes_in(self, sent: SentTransaction) -> list[KeyEnvelope]:
        """The envelopes a publication transaction announced: in seat order, set after set for a
        batch."""
        logs = self.contract.events.KeyEnvelopePublished().process_receipt(sent.receipt, errors=DISCARD)
        return [_key_envelope(log["args"], sent.block_number, int(log["logIndex"])) for log in logs]

    async def envelopes_for(
        self,
        auditor: str,
        *,
        from_block: int = 0,
        session_id: int | None = None,
        segment_id: int | None = None,
        to_block: int | None = None,
    ) -> list[KeyEnvelope]:
        """The current envelope of every seat `auditor` holds (optionally in one session or segment).

        Reads `KeyEnvelopePublished` filtered on the auditor's address (an indexed topic), and keeps
        the latest publication per seat, ordered by (block, log index). The seat's auditor comes from
        the committee on chain, so an envelope listed here was addressed to `auditor` by the contract,
        not by the provider.
        """
        filters: dict[str, Any] = {"auditor": to_checksum_address(auditor)}
        if session_id is not None:
            filters["sessionId"] = session_id
        if segment_id is not None:
            filters["segmentId"] = segment_id
        event = self.contract.events.KeyEnvelopePublished()
        try:
            logs = await self.chain.get_logs(
                event,
                from_block=from_block,
                to_block="latest" if to_block is None else to_block,
                argument_filters=filters,
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(
                f"reading KeyEnvelopePublished for {auditor} from {self.chain.rpc_url} failed: {exc}"
            ) from exc
        latest: dict[tuple[int, int, int, int], KeyEnvelope] = {}
        for log in sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"]))):
            envelope = _key_envelope(log["args"], int(log["blockNumber"]), int(log["logIndex"]))
            latest[envelope.seat] = envelope
        return sorted(latest.values(), key=lambda e: e.seat)

    async def publish_reports(
        self, auditor: LocalAccount, session_id: int, refs: Sequence[ReportRef]
    ) -> SentTransaction:
        """Announces the audit reports of `auditor`'s revealed seats in `session_id`, in one transaction.

        Each ref must name a seat the signer holds whose vote is revealed, and a CID of 1 to
        `MAX_ENVELOPE_CID_BYTES` bytes (a text CID is sent in its binary form). All or nothing;
        reverts (`ContractReverted`) name the failed check and the seat: SegmentKeysNotSeatHolder,
        SegmentKeysSeatNotRevealed, SegmentKeysEmptyReport, SegmentKeysReportTooLong,
        SegmentKeysNoReports.
        """
        rows = [(r.segment_id, r.round, r.seat_index, _cid_to_chain(r.report_cid)) for r in refs]
        fn = self.contract.functions.publishReports(session_id, rows)
        return await self.chain.transact(fn, auditor)

    def reports_in(self, sent: SentTransaction) -> list[PublishedReport]:
        """The reports a `publish_reports` transaction announced, in the order of its refs."""
        logs = self.contract.events.ReportPublished().process_receipt(sent.receipt, errors=DISCARD)
        return [_published_report(log["args"], sent.block_number, int(log["logIndex"])) for log in logs]

    async def reports_for(
        self, session_id: int, *, from_block: int = 0, to_block: int | None = None
    ) -> list[PublishedReport]:
        """The current report of every seat of `session_id` that published one, by seat.

        Reads `ReportPublished` filtered on the session (an indexed topic) and keeps the latest
        publication per seat, ordered by (block, log index). `from_block` may be the session's
        creation block, to spare the node a scan from genesis.
        """
        event = self.contract.events.ReportPublished()
        try:
            logs = await self.chain.get_logs(
                event,
                from_block=from_block,
                to_block="latest" if to_block is None else to_block,
                argument_filters={"sessionId": session_id},
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(
                f"reading ReportPublished of session {session_id} from {self.chain.rpc_url} failed: {exc}"
            ) from exc
        latest: dict[tuple[int, int, int, int], PublishedReport] = {}
        for log in sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"]))):
            try:
                report = _published_report(log["args"], int(log["blockNumber"]), int(log["logIndex"]))
            except VerificationError as exc:
                # The contract checks a CID's length, not its form: raising would let one auditor's
                # report that is no CID stop the provider's reading of all its session's reports.
                _logger.warning("ReportPublished in block %s skipped: %s", log["blockNumber"], exc)
                continue
            latest[report.seat] = report
        return sorted(latest.values(), key=lambda r: r.seat)

    async def verify_segment(self, session_id: int, leaf: SegmentLeaf, proof: Sequence[bytes]) -> bool:
        """Whether the chain accepts `proof` of `leaf` under the session's trace root
        (`MerkleProof.verify`, sorted pairs; see docs/privacy.md for the leaf encoding)."""
        fn = self.contract.functions.verifySegment(session_id, _leaf_tuple(leaf), [bytes(p) for p in proof])
        return bool(await self.chain.call(fn))

    async def leaf_hash(self, leaf: SegmentLeaf) -> bytes:
        """The leaf hash as the contract computes it (to cross-check `trust.core.privacy.merkle.leaf_hash`)."""
        return bytes(await self.chain.call(self.contract.functions.leafHash(_leaf_tuple(leaf))))

    async def max_envelope_cid_bytes(self) -> int:
        return int(await self.chain.call(self.contract.functions.MAX_ENVELOPE_CID_BYTES()))

    async def max_batch_envelopes(self) -> int:
        """The most envelopes, over all sets, that one `publish_envelopes_batch` call takes."""
        return int(await self.chain.call(self.contract.functions.MAX_BATCH_ENVELOPES()))


class RegistryContract:
    """`AuditorRegistry`: registration, stake, availability and reputation."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("AuditorRegistry", address)

    async def register(
        self, auditor: LocalAccount, tier: int, encryption_key: bytes, metadata_uri: str, stake: int
    ) -> SentTransaction:
        fn = self.contract.functions.register(tier, encryption_key, metadata_uri, stake)
        return await self.chain.transact(fn, auditor)

    async def stake(self, auditor: LocalAccount, amount: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.stake(amount), auditor)

    async def request_unstake(self, auditor: LocalAccount, amount: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.requestUnstake(amount), auditor)

    async def execute_unstake(self, auditor: LocalAccount) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.executeUnstake(), auditor)

    async def set_available(self, auditor: LocalAccount, available: bool) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.setAvailable(available), auditor)

    async def grant_credential(self, owner: LocalAccount, account: str) -> SentTransaction:
        """Direct grant: works only while `owner` still owns the registry (before the timelock)."""
        return await self.chain.transact(self.contract.functions.grantCredential(to_checksum_address(account)), owner)

    async def claim_staker_reward(self, auditor: LocalAccount) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.claimStakerReward(), auditor)

    async def auditor(self, account: str) -> AuditorInfo:
        address = to_checksum_address(account)
        raw = await self.chain.call(self.contract.functions.auditor(address))
        return from_struct(AuditorInfo, raw, address=address)

    async def auditors(self, accounts: Sequence[str]) -> list[AuditorInfo]:
        """`auditor` of each of `accounts`, in order, read in batches (`call_many`)."""
        addresses = [to_checksum_address(a) for a in accounts]
        raws = await self.chain.call_many([self.contract.functions.auditor(a) for a in addresses])
        return [from_struct(AuditorInfo, raw, address=a) for a, raw in zip(addresses, raws, strict=True)]

    async def pending_staker_reward(self, account: str, *, block: BlockIdentifier = "latest") -> int:
        """The stakers' share `account` can claim, streamed up to `block`'s time (wei)."""
        fn = self.contract.functions.pendingStakerReward(to_checksum_address(account))
        return int(await self.chain.call(fn, block=block))

    async def staker_reward_stream(self) -> StakerRewardStream:
        """The stakers' reward stream now: rate, period end, what is still streaming or carried."""
        return from_struct(StakerRewardStream, await self.chain.call(self.contract.functions.stakerRewardStream()))

    async def reward_per_stake_wad(self, *, block: BlockIdentifier = "latest") -> int:
        """The reward accumulator at the end of `block` (wei per token unit of stake, times 1e18).
        Every checkpoint in a block reads the same value: the stream advances once per timestamp."""
        return int(await self.chain.call(self.contract.functions.rewardPerStakeWad(), block=block))

    async def claimable_tokens(self, account: str) -> int:
        return int(await self.chain.call(self.contract.functions.claimableTokens(to_checksum_address(account))))

    async def eligible_count(self, tier: int) -> int:
        return int(await self.chain.call(self.contract.functions.eligibleCount(tier)))

    async def eligible_stake(self, tier: int) -> int:
        """The sum of the draw weights of `tier` now (the stake of its eligible members)."""
        return int(await self.chain.call(self.contract.functions.eligibleStake(tier)))

    async def eligible_stake_at(self, tier: int, block_number: int) -> int:
        """`eligible_stake` as of a past block (a draw's randomness block); reverts for a block not yet past."""
        return int(await self.chain.call(self.contract.functions.eligibleStakeAt(tier, block_number)))

    async def draw_weight_at(self, account: str, block_number: int) -> int:
        """`account`'s draw weight as of a past block: its stake if it was eligible then, else 0."""
        fn = self.contract.functions.drawWeightAt(to_checksum_address(account), block_number)
        return int(await self.chain.call(fn))

    async def simulate_draw(
        self, audit: str, tier: int, size: int, seed: bytes, snapshot_block: int, lock_per_seat: int
    ) -> tuple[list[str], list[int]]:
        """The committee `drawCommittee` gives for `seed`, as the audit contract at `audit` would call
        it, simulated with `eth_call` (nothing is locked or charged): its distinct members and each
        one's units (draws won, adding up to `size`; empty lists when the tier cannot back `size`).
        A measuring tool: it runs the registry's own draw code over as many seeds as wanted."""
        request = (tier, size, seed, snapshot_block, "0x" + "00" * 20, lock_per_seat)
        fn = self.contract.functions.drawCommittee(request)
        try:
            members, weights = await fn.call({"from": to_checksum_address(audit)})
        except ContractLogicError as exc:
            raise self.chain.revert_error(exc, "drawCommittee() simulation") from exc
        except Web3RPCError as exc:
            raise ChainError(f"simulating drawCommittee() at {self.chain.rpc_url} failed: {exc}") from exc
        return [to_checksum_address(m) for m in members], [int(w) for w in weights]

    async def forfeits(self, from_block: int = 0, *, to_block: int | None = None) -> list[tuple[str, int, str, int]]:
        """`StakeForfeited` events: (auditor, amount in token base units, reason, block), in chain
        order. The registry's reasons: "no reveal" (a silent seat), "vote against consensus" and
        "unbonded after the draw's snapshot" (a deserter, charged P)."""
        event = self.contract.events.StakeForfeited()
        try:
            logs = await self.chain.get_logs(
                event, from_block=from_block, to_block="latest" if to_block is None else to_block
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading StakeForfeited from {self.chain.rpc_url} failed: {exc}") from exc
        logs = sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"])))
        return [
            (
                to_checksum_address(log["args"]["auditor"]),
                int(log["args"]["amount"]),
                str(log["args"]["reason"]),
                int(log["blockNumber"]),
            )
            for log in logs
        ]

    async def availability_changes(
        self, from_block: int = 0, *, to_block: int | None = None
    ) -> list[tuple[str, bool, int]]:
        """`AvailabilityChanged` events: (auditor, available, block), in chain order."""
        event = self.contract.events.AvailabilityChanged()
        try:
            logs = await self.chain.get_logs(
                event, from_block=from_block, to_block="latest" if to_block is None else to_block
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading AvailabilityChanged from {self.chain.rpc_url} failed: {exc}") from exc
        logs = sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"])))
        return [
            (to_checksum_address(log["args"]["auditor"]), bool(log["args"]["available"]), int(log["blockNumber"]))
            for log in logs
        ]


class ParamsContract:
    """`ProtocolParams`: the current protocol parameters."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("ProtocolParams", address)

    async def params(self) -> dict[str, int]:
        return dict((await self.chain.call(self.contract.functions.params()))._asdict())

    async def version(self) -> int:
        return int(await self.chain.call(self.contract.functions.version()))

    def set_params_calldata(self, params: dict[str, int]) -> bytes:
        """Calldata of `setParams(params)`, to be scheduled through the timelock."""
        return bytes.fromhex(self.contract.encode_abi("setParams", args=[tuple(params.values())])[2:])


class TokenContract:
    """The ERC-20 staking token."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("TrustToken", address)

    async def balance_of(self, account: str) -> int:
        return int(await self.chain.call(self.contract.functions.balanceOf(to_checksum_address(account))))

    async def transfer(self, sender: LocalAccount, to: str, amount: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.transfer(to_checksum_address(to), amount), sender)

    async def approve(self, owner: LocalAccount, spender: str, amount: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.approve(to_checksum_address(spender), amount), owner)


class GovernanceTimelock:
    """The TimelockController that owns the protocol: schedule, wait, execute."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("TimelockController", address)

    async def min_delay(self) -> int:
        return int(await self.chain.call(self.contract.functions.getMinDelay()))

    async def schedule(self, proposer: LocalAccount, target: str, calldata: bytes, salt: bytes) -> SentTransaction:
        delay = await self.min_delay()
        fn = self.contract.functions.schedule(to_checksum_address(target), 0, calldata, bytes(32), salt, delay)
        return await self.chain.transact(fn, proposer)

    async def execute(self, executor: LocalAccount, target: str, calldata: bytes, salt: bytes) -> SentTransaction:
        fn = self.contract.functions.execute(to_checksum_address(target), 0, calldata, bytes(32), salt)
        return await self.chain.transact(fn, executor)


@dataclass(frozen=True, slots=True)
class Protocol:
    """Every protocol contract of one deployment, bound to one chain connection."""

    chain: ChainClient
    deployment: Deployment
    audit: AuditContract
    segment_keys: SegmentKeysContract
    registry: RegistryContract
    params: ParamsContract
    token: TokenContract
    timelock: GovernanceTimelock

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        settings: Settings,
        rpc_url: str | None = None,
        *,
        deployment: Deployment | None = None,
        artifacts: dict[str, Artifact] | None = None,
    ) -> AsyncIterator[Protocol]:
        """The protocol at `rpc_url` (`settings.effective_rpc_url` when None), for `async with`; the
        chain client closes on exit.

        `deployment` is the deployment file of the chain reached (`settings.deployments_path`) when
        None: `DeploymentNotFound` names the file and the fix when there is none. `artifacts` are the
        contracts' ABIs, `protocol_artifacts()` when None (a caller that connects often passes them
        to find them once). A chain that is not the deployment's is a `ChainError` (`bind`).
        """
        url = rpc_url or settings.effective_rpc_url
        async with open_chain(url, artifacts=artifacts, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
            yield cls.bind(chain, deployment) if deployment is not None else cls.load(chain, settings)

    @classmethod
    def load(cls, chain: ChainClient, settings: Settings) -> Protocol:
        """The protocol of the deployment file of `chain`'s chain id, bound to `chain` (connected)."""
        deployments = settings.deployments_path(Toolchain.discover().root)
        return cls.bind(chain, Deployment.load(deployments, chain.chain_id))

    @classmethod
    def bind(cls, chain: ChainClient, deployment: Deployment) -> Protocol:
        if deployment.chain_id != chain.chain_id:
            raise ChainError(
                f"deployment is for chain {deployment.chain_id} but {chain.rpc_url} is chain {chain.chain_id}"
            )
        c = deployment.contracts
        return cls(
            chain=chain,
            deployment=deployment,
            audit=AuditContract(chain, c["TRUSTAudit"]),
            segment_keys=SegmentKeysContract(chain, c["SegmentKeys"]),
            registry=RegistryContract(chain, c["AuditorRegistry"]),
            params=ParamsContract(chain, c["ProtocolParams"]),
            token=TokenContract(chain, c["TrustToken"]),
            timelock=GovernanceTimelock(chain, c["TimelockController"]),
        )


def protocol_artifacts() -> dict[str, Artifact]:
    """The protocol contracts' ABIs and bytecode, found the one way every connection finds them."""
    return compile_protocol(Toolchain.discover())


def open_chain(
    rpc_url: str, *, artifacts: dict[str, Artifact] | None = None, tx_timeout_seconds: float | None = None
) -> ChainClient:
    """A chain client to `rpc_url` with the protocol's ABIs (`protocol_artifacts()` when `artifacts`
    is None), not yet connected: use it with `async with`. For a caller that deploys before it binds
    (`trust deploy`, the devnet, the benchmarks) or holds its deployment but no settings (the
    standalone explorer); every other caller uses `Protocol.connect`. `tx_timeout_seconds` is
    `ChainClient`'s default when None."""
    abis = artifacts if artifacts is not None else protocol_artifacts()
    if tx_timeout_seconds is None:
        return ChainClient(rpc_url, abis)
    return ChainClient(rpc_url, abis, tx_timeout_seconds=tx_timeout_seconds)
