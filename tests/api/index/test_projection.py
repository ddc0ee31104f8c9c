"""The projection alone: events applied in chain order, as the contracts emit them, without a chain.

The end-to-end tests (test_refresh.py, the explorer's) drive Anvil; these pin the attribution rules
the projection applies to the order of events within one transaction, which a devnet story reaches
only in a few shapes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eth_utils import to_checksum_address

from trust.api.index.projection import Projection
from trust.api.index.values import RoundResult, SeatOutcome, SegmentState, TxRef

AUDIT = "audit"
A, B, C = (to_checksum_address("0x" + digit * 40) for digit in "abc")


def apply(projection: Projection, tx: str, contract: str, name: str, args: Mapping[str, Any]) -> None:
    projection.begin(tx)
    projection.handlers()[(contract, name)](args, TxRef(tx, 1, 1_000))


def opened_session(projection: Projection, segments: int) -> None:
    apply(projection, "0x01", AUDIT, "SessionCreated", {"sessionId": 1, "traceRoot": b"\x01" * 32})
    for g in range(segments):
        registered = {"sessionId": 1, "segmentId": g, "tier": 1, "weight": 1, "critical": False}
        registered |= {"contradiction": False, "contentDigest": bytes([g]) * 32}
        apply(projection, "0x01", AUDIT, "SegmentRegistered", registered)
    opened = {"sessionId": 1, "provider": "0x" + "d" * 40, "segmentCount": segments, "feeWei": 10**18}
    opened |= {"randomnessBlock": 5, "paramsVersion": 1}
    apply(projection, "0x01", AUDIT, "SessionOpened", opened)
    for g in range(segments):
        drawn = {"sessionId": 1, "segmentId": g, "round": 0, "tier": 1, "members": [A, B, C]}
        drawn |= {"commitDeadline": 2_000, "revealDeadline": 3_000}
        apply(projection, "0x02", AUDIT, "CommitteeDrawn", drawn)


def test_a_batch_finalization_gives_each_segment_the_slashes_emitted_right_before_it() -> None:
    projection = Projection()
    opened_session(projection, segments=2)
    # One finalizeSegments transaction: segment 0's slashes, its verdict, then segment 1's.
    apply(projection, "0x03", AUDIT, "AuditorSlashed", {"sessionId": 1, "auditor": A, "amount": 60})
    apply(projection, "0x03", AUDIT, "SegmentFinalized", {"sessionId": 1, "segmentId": 0, "passed": True})
    apply(projection, "0x03", AUDIT, "AuditorSlashed", {"sessionId": 1, "auditor": B, "amount": 60})
    apply(projection, "0x03", AUDIT, "AuditorSlashed", {"sessionId": 1, "auditor": C, "amount": 120})
    apply(projection, "0x03", AUDIT, "SegmentFinalized", {"sessionId": 1, "segmentId": 1, "passed": True})
    first, second = (projection.sessions[1].segments[g].current for g in (0, 1))
    assert first.forfeited == {A: 60}
    assert second.forfeited == {B: 60, C: 120}


def test_slashes_of_another_transaction_and_governance_slashes_are_not_a_segments() -> None:
    projection = Projection()
    opened_session(projection, segments=1)
    apply(projection, "0x03", AUDIT, "AuditorSlashed", {"sessionId": 1, "auditor": A, "amount": 60})
    apply(projection, "0x04", AUDIT, "AuditorSlashed", {"sessionId": 0, "auditor": B, "amount": 99})
    apply(projection, "0x04", AUDIT, "SegmentFinalized", {"sessionId": 1, "segmentId": 0, "passed": True})
    assert projection.sessions[1].segments[0].current.forfeited == {}


def test_a_segment_the_view_calls_undetermined_releases_its_escalated_rounds_seats() -> None:
    projection = Projection()
    opened_session(projection, segments=1)
    reveal = {"sessionId": 1, "segmentId": 0, "round": 0, "auditor": A, "vote": True}
    apply(projection, "0x03", AUDIT, "VoteRevealed", reveal)
    escalated = {"sessionId": 1, "segmentId": 0, "round": 1, "tier": 2, "committeeSize": 7, "randomnessBlock": 9}
    apply(projection, "0x04", AUDIT, "SegmentEscalated", escalated)
    drawn = {"sessionId": 1, "segmentId": 0, "round": 1, "tier": 2, "members": [B], "commitDeadline": 5_000}
    apply(projection, "0x05", AUDIT, "CommitteeDrawn", drawn | {"revealDeadline": 6_000})
    apply(projection, "0x06", AUDIT, "SegmentFinalized", {"sessionId": 1, "segmentId": 0, "passed": False})
    segment = projection.sessions[1].segments[0]
    assert segment.state is SegmentState.FAILED and projection.unresolved == {(1, 0)}
    assert segment.rounds[0].outcome(A) is SeatOutcome.MISALIGNED  # judged by "failed"

    projection.settle_undetermined(1, 0)
    assert segment.state is SegmentState.UNDETERMINED and segment.current.result is RoundResult.UNDETERMINED
    assert segment.rounds[0].outcome(A) is SeatOutcome.RELEASED


def test_events_mark_the_views_they_change_stale_until_taken() -> None:
    projection = Projection()
    assert projection.take_stale().everything  # a new model: nothing cached before it holds
    opened_session(projection, segments=1)
    stale = projection.take_stale()
    assert stale.auditors == {A, B, C} and not stale.everything
    apply(projection, "0x07", "registry", "StakerRewardNotified", {"rewardPerStakeWad": 1, "periodFinish": 9})
    assert projection.take_stale().all_auditors
    assert projection.take_stale() == type(stale)()


def test_a_forfeit_carries_the_stake_and_unbonding_after_it_and_a_governance_slash_is_marked() -> None:
    """`StakeForfeited` says the stake and unbonding tokens after it; the `AuditorSlashed` of session
    zero right after it in the same transaction marks it a governance slash (the registry checkpoints
    the stakers' share there, not at a deserter's charge, which no `AuditorSlashed` follows)."""
    projection = Projection()
    registered = {"auditor": A, "tier": 1, "encryptionKey": b"\x01" * 32, "metadataURI": ""}
    apply(projection, "0x01", "registry", "AuditorRegistered", registered)
    reason = "unbonded after the draw's snapshot"
    charge = {"auditor": A, "amount": 60, "beneficiary": B, "reason": reason, "stake": 100, "unbonding": 40}
    apply(projection, "0x02", "registry", "StakeForfeited", charge)
    slash = {"auditor": A, "amount": 30, "beneficiary": B, "reason": "late", "stake": 70, "unbonding": 40}
    apply(projection, "0x03", "registry", "StakeForfeited", slash)
    apply(projection, "0x03", AUDIT, "AuditorSlashed", {"sessionId": 0, "auditor": A, "amount": 30})
    ledger = projection.auditors[A].ledger
    assert [(e.event, e.amount, e.stake_after, e.unbonding_after, e.governance) for e in ledger] == [
        ("forfeit", 60, 100, 40, False),
        ("forfeit", 30, 70, 40, True),
    ]
