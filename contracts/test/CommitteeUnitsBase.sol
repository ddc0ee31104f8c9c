// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Fixtures for committees drawn with replacement (issue L2). A round makes `committeeSize`
///         stake-weighted draws; a member drawn several times holds ONE seat whose weight is the
///         number of draws it won (its units), and each unit locks the session's penalty P. So a
///         committee of three may seat one, two or three members, and `committee()` lists the
///         `seatCount` distinct ones.
///         Suites whose subject is not the draw still want "three auditors, a committee of three,
///         all three seated, one unit each". That holds exactly when no auditor's unlocked stake
///         backs a second unit (stake < 2P): a member drawn again cannot take it, leaves the draw,
///         and the draw becomes the successive sampling without replacement of before.
///         `oneUnitParams` and `ONE_UNIT_STAKE` give such auditors; `drawRestoringOneUnit` draws
///         several segments of a session and tops the seated members up in between, so that each
///         one's unlocked stake backs one unit again in the next segment (its earlier seats lock P).
abstract contract CommitteeUnitsBase is TRUSTAuditBase {
    /// @dev The penalty P of `oneUnitParams`: every tier's minimum stake backs one unit and not two.
    uint96 internal constant ONE_UNIT_PENALTY = 60e18;
    /// @dev A stake that backs exactly one unit of `ONE_UNIT_PENALTY` (60 <= 100 < 120).
    uint96 internal constant ONE_UNIT_STAKE = 100e18;

    /// @dev A stake that backs exactly two units of `ONE_UNIT_PENALTY` (120 <= 150 < 180).
    uint96 internal constant TWO_UNIT_STAKE = 150e18;

    /// @notice The default parameters with P = 60 tokens and every tier's minimum stake at 100
    ///         tokens, so that an auditor staking `ONE_UNIT_STAKE` backs one unit in any tier.
    function oneUnitParams() internal pure returns (Params memory p) {
        p = defaultParams();
        p.penaltyPerSeat = ONE_UNIT_PENALTY;
        p.minStakeTier2 = ONE_UNIT_STAKE;
        p.minStakeTier3 = ONE_UNIT_STAKE;
    }

    /// @notice Opens a one-segment tier-3 session (committee size set to 3, P = 60) that only two
    ///         auditors can sit on: `heavy`, whose stake backs exactly two units, and `light`, which
    ///         backs one. Whatever the seed, the three draws seat heavy with two units and light
    ///         with one: each leaves the draw only once full, and three units are all they back.
    ///         Sessions opened before keep the parameters they were opened with.
    function openTwoAndOne() internal returns (uint256 sessionId, address heavy, address light) {
        Params memory p = oneUnitParams();
        p.committeeSizeTier3 = 3;
        applyParams(p);
        heavy = addAuditor("heavy", 3, TWO_UNIT_STAKE);
        light = addAuditor("light", 3, ONE_UNIT_STAKE);
        sessionId = openSingle(3);
    }

    /// @notice Draws the session's segments `segmentIds` one at a time. After each draw, every member
    ///         it seated stakes what its seat locked (units * P) more, so its unlocked stake is what
    ///         it was before: with `ONE_UNIT_STAKE` auditors, each segment's committee is drawn as if
    ///         it were the first, one unit per member. The top-ups come after the randomness block
    ///         and change no draw's odds (the draw reads stakes as of that block).
    function drawRestoringOneUnit(uint256 sessionId, uint256[] memory segmentIds) internal {
        uint256 penalty = audit.sessionParams(sessionId).penaltyPerSeat;
        for (uint256 s; s < segmentIds.length; ++s) {
            address[] memory members = drawSegment(sessionId, segmentIds[s]);
            for (uint256 i; i < members.length; ++i) {
                stakeMore(members[i], unitsOf(sessionId, segmentIds[s], members[i]) * penalty);
            }
        }
    }

    /// @notice The units (seat weight) of `auditor` in the segment's current round; zero when it
    ///         holds no seat there.
    function unitsOf(uint256 sessionId, uint256 segmentId, address auditor) internal view returns (uint256) {
        ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, segmentId);
        for (uint256 i; i < g.seatCount; ++i) {
            ITRUSTAudit.SeatView memory st = audit.seat(sessionId, segmentId, g.round, i);
            if (st.auditor == auditor) return st.weight;
        }
        return 0;
    }

    /// @notice Checks the shape of the segment's drawn round and returns its members: `committee()`
    ///         lists the `seatCount` seats' auditors in seat order, all distinct, each seat weighs at
    ///         least one unit, the units add up to the committee size (the draws), and no seat is
    ///         written past the last member.
    function assertSeated(uint256 sessionId, uint256 segmentId) internal view returns (address[] memory members) {
        ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, segmentId);
        members = audit.committee(sessionId, segmentId);
        assertEq(members.length, g.seatCount, "committee() lists seatCount members");
        assertGe(g.seatCount, 1, "a drawn round seats someone");
        assertLe(g.seatCount, g.committeeSize, "at most one seat per draw");
        uint256 units;
        for (uint256 i; i < members.length; ++i) {
            ITRUSTAudit.SeatView memory st = audit.seat(sessionId, segmentId, g.round, i);
            assertEq(st.auditor, members[i], "seat i is committee()[i]");
            assertGe(st.weight, 1, "a seat weighs the draws it won");
            units += st.weight;
            for (uint256 j; j < i; ++j) {
                assertTrue(members[i] != members[j], "one seat per member");
            }
        }
        assertEq(units, g.committeeSize, "the units add up to the committee size");
        assertEq(audit.seat(sessionId, segmentId, g.round, g.seatCount).auditor, address(0), "no seat past the last");
    }
}
