// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITRUSTAudit} from "../interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "../interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "../interfaces/IRandomnessSource.sol";
import {Params} from "./Params.sol";

/// @dev Segment flags.
uint8 constant FLAG_CRITICAL = 1;
uint8 constant FLAG_CONTRADICTION = 2;
/// @dev The provider published the current round's key envelopes by the round's delivery
///      deadline (issue M3): cleared when the segment escalates, as each round has its own seats.
uint8 constant FLAG_DELIVERED = 4;
/// @dev The current round's settlement has begun in chunks (`ITRUSTAudit.settleSegment`, issue
///      M4): `Segment.settledCount` entries of its settlement list are settled. Cleared, with the
///      count, by the step that settles the last entry. Kept in slot 0, which every finalization
///      reads anyway, so a segment settled in one go never reads the count's slot.
uint8 constant FLAG_SETTLING = 8;

/// @dev Seat states.
uint8 constant SEAT_EMPTY = 0;
uint8 constant SEAT_SEATED = 1;
uint8 constant SEAT_PASS = 2;
uint8 constant SEAT_FAIL = 3;
/// @dev An aligned seat whose reward was claimed.
uint8 constant SEAT_CLAIMED = 4;
/// @dev A seat released because the provider delivered no key envelope for its round by the
///      delivery deadline (issue M3): its stake was unlocked and it was compensated when it
///      claimed; it still counts in its round's tally, against both outcomes, like a silent seat.
uint8 constant SEAT_UNDELIVERED = 5;
/// @dev A seat whose auditor said in the commit window that it will not vote (`abstain`): settled
///      as a silent seat (it forfeits P), but it lets the commit and reveal windows close early.
uint8 constant SEAT_ABSTAINED = 6;

/// @dev Slot layout:
///      0: provider 160 | segmentCount 16 | registeredCount 16 | finalizedCount 16 | status 8 | valid 8
///      1: traceRoot
///      2: feeWei 96 | perSeatWei 96 (set by `distributeRewards`) | randomnessBlock 40 | requiredSeats 24
///      3: totalWeight 64 | passWeight 64 | criticalFailed 32 | contradictionsConfirmed 32 |
///         alignedSeats 32 | paramsVersion 32
///      4: minWeight 32 | maxWeight 32 | passedCount 16 | failedCount 16 | undeterminedCount 16
///      The counts publish the per-segment verdicts beside the weighted trace verdict (M5): a
///      reader sees how many segments failed, whatever weights the provider declared.
///      Counts of segments fit 16 bits (maxSegmentsPerSession <= 4096), seats 24 bits
///      (4096 segments x 127 seats), fees 96 bits (7.9e10 ETH). `randomnessBlock` is zero until
///      every segment is registered (the session opens): no committee input can change once the
///      block whose randomness seeds the committees is known.
struct Session {
    address provider;
    uint16 segmentCount;
    uint16 registeredCount;
    uint16 finalizedCount;
    ITRUSTAudit.SessionStatus status;
    bool valid;
    bytes32 traceRoot;
    uint96 feeWei;
    uint96 perSeatWei;
    uint40 randomnessBlock;
    uint24 requiredSeats;
    uint64 totalWeight;
    uint64 passWeight;
    uint32 criticalFailed;
    uint32 contradictionsConfirmed;
    uint32 alignedSeats;
    uint32 paramsVersion;
    uint32 minWeight;
    uint32 maxWeight;
    uint16 passedCount;
    uint16 failedCount;
    uint16 undeterminedCount;
}

/// @dev Slot layout (everything a vote touches lives in slot 0, so a commit or a reveal writes
///      one slot of the segment):
///      0: tier 8 | flags 8 | status 8 | round 8 | committeeSize 8 | revealedCount 8 | weight 32 |
///         commitDeadline 48 | randomnessBlock 40 | entropy 64 | seatCount 8 | committedCount 8 |
///         drawAttempts 8
///      1: contentDigest
///      2: settledCount 8 (appended: the slots above keep their places in deployed proxies)
///      The reveal deadline is commitDeadline + the session's reveal window. `committeeSize` is the
///      round's number of draws (its total voting weight, issue L2); `seatCount` the distinct
///      members they seated (seats 0 .. seatCount - 1; a member that won several draws holds one
///      seat weighing that many units). `committedCount`
///      counts the round's seats that committed at least once; when it reaches the seat count
///      the commit window closes early (commitDeadline = that block's timestamp - 1); a seat that
///      abstains, or is released for want of a key envelope within the window, counts as well.
///      `revealedCount` counts the seats done with the round: revealed, abstained or released; when
///      it reaches the seat count the round can be finalized at once. `entropy` is
///      the low 64 bits of the draw seed, XORed with every revealed salt: slash rolls come from
///      it, so no auditor can predict its own roll when it commits (a roll needs 14 bits; 64
///      leave 2^64 values no seat can steer). `drawAttempts` counts the round's draws that found
///      too few members. `randomnessBlock` is zero for a first round that draws from the
///      session's block. `settledCount` is the cursor of a settlement in chunks (issue M4): how
///      many entries of the round's settlement list are settled; meaningful only while
///      `FLAG_SETTLING` is set (a list holds at most 4 rounds' seats, 127 + 63 + 31 + 15 < 256).
struct Segment {
    uint8 tier;
    uint8 flags;
    ITRUSTAudit.SegmentStatus status;
    uint8 round;
    uint8 committeeSize;
    uint8 revealedCount;
    uint32 weight;
    uint48 commitDeadline;
    uint40 randomnessBlock;
    uint64 entropy;
    uint8 seatCount;
    uint8 committedCount;
    uint8 drawAttempts;
    bytes32 contentDigest;
    uint8 settledCount;
}

/// @dev Slot layout: 0: auditor 160 | weight 88 | state 8;  1: commitment.
///      `weight` is the number of the round's draws the member won (its units, at most the
///      committee size), fixed when the committee is drawn (see `IAuditorRegistry.drawCommittee`):
///      the seat votes, locks, earns and forfeits as that many units.
struct Seat {
    address auditor;
    uint88 weight;
    uint8 state;
    bytes32 commitment;
}

/// @dev Everything the audit contract stores, in one struct so that the libraries holding each
///      concern (`SessionLifecycle`, `CommitteeSelection`, `Tally`, `FeeSplit`) work on it through
///      one storage pointer. `TRUSTAudit` declares it as its first state variable: the members sit
///      in the slots the contract's own variables held before the split, in the same order.
struct AuditStorage {
    IAuditorRegistry registry;
    IProtocolParams params;
    IRandomnessSource randomness;
    uint256 sessionCount;
    mapping(uint256 sessionId => Session) sessions;
    mapping(uint256 sessionId => Params) sessionParams;
    mapping(uint256 sessionId => mapping(uint256 segmentId => Segment)) segments;
    /// @dev Keyed by `seatKey(segmentId, round, index)`.
    mapping(uint256 sessionId => mapping(uint256 seatKey => Seat)) seats;
    mapping(address account => uint256) claimableWei;
    /// @dev The contract that publishes key envelopes (`SegmentKeys`) and reports each round's
    ///      delivery here (`recordDelivery`). Appended: the slots above keep their places.
    address segmentKeys;
}

/// @dev Counts one more seat of the round as committed (or done without a vote) and, when it is
///      the last, closes the commit window now: every seat has acted, so no commitment can change
///      and reveals may start (the reveal window starts here). Only within the commit window.
function countCommitted(Segment storage g) {
    uint8 committed = g.committedCount + 1; // at most seatCount, a uint8
    g.committedCount = committed;
    if (committed == g.seatCount) g.commitDeadline = uint48(block.timestamp - 1);
}

/// @dev A seat ends its round without a vote (it abstained, or was released for want of a key
///      envelope): within the commit window it counts as committed, and it counts as done for the
///      reveals, so neither window waits for it.
function endWithoutVote(Segment storage g) {
    if (block.timestamp <= g.commitDeadline) countCommitted(g);
    g.revealedCount += 1; // at most seatCount, a uint8
}

/// @dev Basis points: 10_000 = 1.
uint256 constant BPS = 10_000;

/// @dev The key of a seat in `AuditStorage.seats`.
function seatKey(uint256 segmentId, uint8 round, uint256 index) pure returns (uint256) {
    return (segmentId << 16) | (uint256(round) << 8) | index;
}

/// @dev Seat `seatIndex` of the segment's current round, which `caller` must hold.
function seatHeldBy(
    AuditStorage storage $,
    uint256 sessionId,
    uint256 segmentId,
    Segment storage g,
    uint256 seatIndex,
    address caller
) view returns (Seat storage st) {
    st = $.seats[sessionId][seatKey(segmentId, g.round, seatIndex)];
    if (seatIndex >= g.seatCount || st.auditor != caller) {
        revert ITRUSTAudit.AuditNotSeated(sessionId, segmentId, caller);
    }
}

/// @dev Reverts unless the seat is still seated and has not committed: only such a seat may end
///      its round without a vote (`abstain`, `claimUndelivered`). A committed seat saw enough to vote.
function requireUncommitted(Seat storage st, uint256 sessionId, uint256 segmentId, uint256 seatIndex) view {
    if (st.state != SEAT_SEATED || st.commitment != bytes32(0)) {
        revert ITRUSTAudit.AuditSeatCommitted(sessionId, segmentId, seatIndex);
    }
}
