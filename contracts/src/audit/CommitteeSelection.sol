// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {ITRUSTAudit} from "../interfaces/ITRUSTAudit.sol";
import {IRandomnessSource} from "../interfaces/IRandomnessSource.sol";
import {Params} from "../types/Params.sol";
import {DrawRequest} from "../types/Settlement.sol";
import {AuditStorage, Session, Segment, Seat, SEAT_SEATED, seatKey} from "../types/AuditStorage.sol";
import {ParamsLib} from "../libraries/ParamsLib.sol";
import {Tally} from "./Tally.sol";

/// @title CommitteeSelection
/// @notice Draws each segment's committee from the session's randomness (paper section 3.2.1).
/// @dev An external library delegate-called by `TRUSTAudit`. A draw's randomness block `b` is
///      fixed once every input of the draw is (the session opened, the round escalated, or a draw
///      was retried), and the registry draws from the stake as it stood at the end of `b`, whose
///      randomness nobody knows until the source produces it after `b` is mined: no stake change
///      made once the seed is known moves a seat. (With the block hash, the producer of `b` knows
///      both; that source is for unit tests only.) Between the session opening and `b`, auditors
///      may still leave or join the draw without knowing the seed: that is how a worker keeps out
///      of draws it could not serve in time (backpressure).
///      The audit contract itself refuses randomness older than `RANDOMNESS_WINDOW_BLOCKS`
///      whatever the source says, so every draw on a snapshot happens within
///      `ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS` of it: the registry keeps unbonding stake in reach of
///      such draws for that long.
library CommitteeSelection {
    using ParamsLib for Params;
    using SafeCast for uint256;

    /// @notice Draws the committees of `segmentIds` in an open session. `strict`: a segment that is
    ///         not awaiting its draw reverts; otherwise it is skipped, so a batch is never undone
    ///         by someone drawing one of its segments first.
    function assign(AuditStorage storage $, uint256 sessionId, uint256[] memory segmentIds, bool strict) external {
        Session storage s = $.sessions[sessionId];
        for (uint256 i; i < segmentIds.length; ++i) {
            uint256 segmentId = segmentIds[i];
            if (segmentId >= s.segmentCount) revert ITRUSTAudit.AuditUnknownSegment(sessionId, segmentId);
            Segment storage g = $.segments[sessionId][segmentId];
            if (g.status != ITRUSTAudit.SegmentStatus.AwaitingDraw) {
                if (strict) revert ITRUSTAudit.AuditWrongSegmentStatus(sessionId, segmentId, g.status);
                continue;
            }
            _assign($, sessionId, s, segmentId, g);
        }
    }

    /// @notice The randomness block a segment's current round draws from.
    function randomnessBlockOf(Session storage s, Segment storage g) internal view returns (uint256) {
        uint256 own = g.randomnessBlock;
        return own != 0 ? own : s.randomnessBlock;
    }

    /// @notice Fixes a new randomness block for a segment's round and asks the source for it.
    function refresh(AuditStorage storage $, Segment storage g, Params storage p) internal returns (uint40 next)
    {
        next = (block.number + p.randomnessDelayBlocks).toUint40();
        g.randomnessBlock = next;
        $.randomness.request(next);
    }

    function _assign(AuditStorage storage $, uint256 sessionId, Session storage s, uint256 segmentId, Segment storage g)
        private
    {
        Params storage p = $.sessionParams[sessionId];
        uint256 randomnessBlock = randomnessBlockOf(s, g);
        if (randomnessBlock >= block.number) {
            revert ITRUSTAudit.AuditRandomnessPending(sessionId, segmentId, randomnessBlock);
        }
        (IRandomnessSource.Status status, bytes32 value) = (IRandomnessSource.Status.Expired, bytes32(0));
        // Past the window the value is not used even if the source still answers: the registry
        // keeps unbonding stake drawable only that long after a snapshot.
        if (block.number - randomnessBlock <= ParamsLib.RANDOMNESS_WINDOW_BLOCKS) {
            (status, value) = $.randomness.randomnessAt(randomnessBlock);
        }
        if (status == IRandomnessSource.Status.Pending) {
            revert ITRUSTAudit.AuditRandomnessPending(sessionId, segmentId, randomnessBlock);
        }
        if (status == IRandomnessSource.Status.Expired) {
            emit ITRUSTAudit.RandomnessRefreshed(sessionId, segmentId, refresh($, g, p));
            return;
        }
        bytes32 seed = keccak256(abi.encode(value, address(this), sessionId, segmentId, g.round));
        address[] memory members = _seat($, sessionId, segmentId, g, seed, randomnessBlock, s.provider);
        if (members.length == 0) {
            // The tier could not seat the committee: try again with fresh randomness (members may
            // join or free their stake), and give up after MAX_DRAW_ATTEMPTS so that a tier without
            // enough auditors never holds the session's fee forever.
            uint8 attempts = g.drawAttempts + 1; // <= MAX_DRAW_ATTEMPTS
            g.drawAttempts = attempts;
            emit ITRUSTAudit.CommitteeUnavailable(sessionId, segmentId, g.round, attempts);
            if (attempts < ParamsLib.MAX_DRAW_ATTEMPTS) {
                emit ITRUSTAudit.RandomnessRefreshed(sessionId, segmentId, refresh($, g, p));
            } else {
                Tally.abandon($, s, sessionId, segmentId, g);
            }
            return;
        }
        uint48 commitDeadline = (block.timestamp + p.commitWindowSeconds).toUint48();
        g.status = ITRUSTAudit.SegmentStatus.Voting;
        g.commitDeadline = commitDeadline;
        g.entropy = uint64(uint256(seed)); // the low 64 bits
        emit ITRUSTAudit.CommitteeDrawn(
            sessionId, segmentId, g.round, g.tier, members, commitDeadline, commitDeadline + p.revealWindowSeconds
        );
    }

    /// @dev Draws the committee in the registry (which locks each unit's penalty and returns each
    ///      member's units, its weight) and records one seat per distinct member.
    function _seat(
        AuditStorage storage $,
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        bytes32 seed,
        uint256 snapshotBlock,
        address provider
    ) private returns (address[] memory members) {
        uint8 round = g.round;
        uint96[] memory weights;
        (members, weights) = $.registry.drawCommittee(
            DrawRequest({
                tier: g.tier,
                size: g.committeeSize,
                seed: seed,
                snapshotBlock: snapshotBlock,
                excluded: provider,
                lockPerSeat: $.sessionParams[sessionId].penaltyPerSeat
            })
        );
        uint256 n = members.length;
        for (uint256 i; i < n; ++i) {
            Seat storage st = $.seats[sessionId][seatKey(segmentId, round, i)];
            st.auditor = members[i];
            st.weight = uint88(weights[i]); // at most the committee size
            st.state = SEAT_SEATED;
        }
        g.seatCount = uint8(n); // <= committee size
    }
}
