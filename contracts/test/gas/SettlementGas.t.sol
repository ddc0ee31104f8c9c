// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../../src/types/Params.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue M4: a round too big to finalize. The worst case of one settlement step is the
///         largest round the parameters allow with every seat silent (each forfeit rewrites the
///         member's leaf in a sortition tree of thousands, O(log n) history writes), with, since
///         undecided rounds stay locked until the verdict (M1), every earlier round's seats in the
///         list each step rebuilds. `ParamsLib.validate` rejects parameters whose worst step
///         exceeds `SETTLEMENT_GAS_BUDGET`; this measures the worst case the bound allows, in
///         one tier of 2,048 members, and the figures `validate` uses.
/// @dev Each call is its own transaction (`isolate`): storage a test call touched is cold again in
///      the next, as on chain, so the figures are what a transaction pays (without its intrinsic
///      21,000 and calldata).
/// forge-config: default.isolate = true
contract SettlementGasTest is TRUSTBase {
    uint256 internal constant MEMBERS = 2_048;

    /// @dev The largest first-round committee of `tier` that `validate` accepts with `maxRounds`.
    function largestAllowed(uint8 tier, uint8 maxRounds) internal pure returns (uint8 size) {
        Params memory p = crowdParams(maxRounds);
        for (uint8 k = 1; k < 128; ++k) {
            if (tier == 1) p.committeeSizeTier1 = k;
            else p.committeeSizeTier3 = k;
            if (!ParamsLib.isValid(p)) break;
            size = k;
        }
    }

    /// @dev The defaults with every tier's minimum stake at tier 1's (so a crowd of thousands is
    ///      affordable in every tier); every member stakes enough for many units.
    function crowdParams(uint8 maxRounds) internal pure returns (Params memory p) {
        p = defaultParams();
        p.maxRounds = maxRounds;
        p.minStakeTier2 = p.minStakeTier1;
        p.minStakeTier3 = p.minStakeTier1;
    }

    function _crowd(uint8 tier, uint256 count) internal {
        for (uint256 i; i < count; ++i) {
            addAuditor(string.concat("m", vm.toString(i)), tier, 100e18 + (i % 97) * 1e18);
        }
    }

    /// @dev One step of at most `maxSeats`; returns its gas and whether it was the last.
    function _step(uint256 sessionId, uint256 maxSeats) internal returns (uint256 gasUsed, bool done) {
        uint256 before = gasleft();
        done = audit.settleSegment(sessionId, 0, maxSeats);
        gasUsed = before - gasleft();
    }

    /// @dev A round where the committee's seats alternate Pass and Fail: neither reaches tau
    ///      (0.66), so it escalates and every seat stays locked until the verdict.
    function _splitRound(uint256 sessionId) internal {
        address[] memory members = audit.committee(sessionId, 0);
        for (uint256 i; i < members.length; ++i) {
            commitAs(members[i], sessionId, 0, i % 2 == 0);
        }
        toCommitEnd(sessionId, 0);
        for (uint256 i; i < members.length; ++i) {
            revealAs(members[i], sessionId, 0, i % 2 == 0);
        }
        audit.finalizeSegment(sessionId, 0);
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw), "escalated");
    }

    /// @dev The largest three-round tier-3 committee, 2,048 members, two split rounds: the
    ///      segment awaits its third draw.
    function _toThirdDraw() internal returns (uint256 sessionId, uint8 size) {
        size = largestAllowed(3, 3);
        Params memory p = crowdParams(3);
        p.committeeSizeTier3 = size;
        params.setParams(p);
        _crowd(3, MEMBERS);
        sessionId = openSession(uniformSegments(1, 3));
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        audit.assignAuditors(sessionId, 0);
        _splitRound(sessionId);
        vm.roll(audit.segment(sessionId, 0).randomnessBlock + 1);
        audit.assignAuditors(sessionId, 0);
        _splitRound(sessionId);
    }

    /// @dev The third draw cannot be seated three times: the last attempt abandons the segment and
    ///      releases both earlier rounds' revealed seats in its transaction; `validate` bounds that
    ///      release beside the largest draw. Every member's stake backs one draw (P = 60, stake
    ///      100), so both earlier rounds seat one member per draw (31 of tier 2, then 63 of tier 3,
    ///      94 seats to release, the most), and the 63 left locked leave tier 3 too little stake
    ///      for the third round's 127 draws. A release rewrites no tree, so a small tier shows
    ///      its cost as well as a large one.
    function test_largestThreeRoundCommittee_abandonFitsBesideTheLargestDraw() public {
        uint8 size = largestAllowed(3, 3);
        Params memory p = crowdParams(3);
        p.committeeSizeTier2 = size;
        p.penaltyPerSeat = 60e18;
        params.setParams(p);
        for (uint256 i; i < 40; ++i) {
            addAuditor(string.concat("llm", vm.toString(i)), 2, 100e18);
        }
        for (uint256 i; i < 70; ++i) {
            addAuditor(string.concat("human", vm.toString(i)), 3, 100e18);
        }
        uint256 sessionId = openSession(uniformSegments(1, 2));
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        audit.assignAuditors(sessionId, 0);
        assertEq(audit.segment(sessionId, 0).seatCount, size, "one seat per draw");
        _splitRound(sessionId);
        vm.roll(audit.segment(sessionId, 0).randomnessBlock + 1);
        audit.assignAuditors(sessionId, 0);
        uint256 earlier = uint256(size) + ParamsLib.escalatedSize(size);
        assertEq(uint256(size) + audit.segment(sessionId, 0).seatCount, earlier, "one seat per draw");
        _splitRound(sessionId);
        uint256 abandonGas;
        for (uint256 attempt; attempt < ParamsLib.MAX_DRAW_ATTEMPTS; ++attempt) {
            vm.roll(audit.segment(sessionId, 0).randomnessBlock + 1);
            uint256 before = gasleft();
            audit.assignAuditors(sessionId, 0);
            abandonGas = before - gasleft();
        }
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        emit log_named_uint("earlier rounds' seats released", earlier);
        emit log_named_uint("abandoning draw gas", abandonGas);
        emit log_named_uint("per released seat", abandonGas / earlier);
        uint256 largest = ParamsLib.escalatedSize(ParamsLib.escalatedSize(size));
        assertLe(
            abandonGas + largest * ParamsLib.DRAW_GAS_PER_SEAT,
            ParamsLib.SETTLEMENT_GAS_BUDGET,
            "the release fits beside the largest draw"
        );
        assertLe(
            abandonGas,
            ParamsLib.SETTLEMENT_GAS_OVERHEAD + earlier
                * (ParamsLib.RELEASE_GAS_PER_SEAT + ParamsLib.RECOMPUTE_GAS_PER_SEAT),
            "the figures validate uses hold"
        );
    }

    /// @dev Three rounds of one tier (a tier-3 segment stays in tier 3 when it escalates) with 2,048
    ///      members: 2 split rounds, then the largest round all silent. The deciding round's list is
    ///      every seat of every round; each step of `SETTLEMENT_CHUNK_SEATS` fits the budget.
    function test_largestThreeRoundCommittee_everyStepFitsTheBudget() public {
        (uint256 sessionId, uint8 size) = _toThirdDraw();
        vm.roll(audit.segment(sessionId, 0).randomnessBlock + 1);
        uint256 before = gasleft();
        audit.assignAuditors(sessionId, 0);
        uint256 drawGas = before - gasleft();
        ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, 0);
        assertEq(g.round, 2, "third round");
        toRevealEnd(sessionId, 0);

        uint256 largestStep = 0;
        uint256 steps = 0;
        uint256 lastStep = 0;
        bool done = false;
        while (!done) {
            (lastStep, done) = _step(sessionId, ParamsLib.SETTLEMENT_CHUNK_SEATS);
            if (lastStep > largestStep) largestStep = lastStep;
            ++steps;
        }
        emit log_named_uint("largest first committee, three rounds", size);
        emit log_named_uint("largest round's draws", g.committeeSize);
        emit log_named_uint("largest round's draw gas", drawGas);
        emit log_named_uint("steps", steps);
        emit log_named_uint("largest step gas", largestStep);
        emit log_named_uint("last step gas (earlier rounds released)", lastStep);
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertLe(drawGas, ParamsLib.SETTLEMENT_GAS_BUDGET, "draw within the budget");
        assertLe(largestStep, ParamsLib.SETTLEMENT_GAS_BUDGET, "every step within the budget");
        uint256 draws = uint256(size) + ParamsLib.escalatedSize(size) + g.committeeSize;
        assertLe(
            largestStep,
            ParamsLib.SETTLEMENT_GAS_OVERHEAD + ParamsLib.SETTLEMENT_CHUNK_SEATS * ParamsLib.SETTLEMENT_GAS_PER_SEAT
                + draws * ParamsLib.RECOMPUTE_GAS_PER_SEAT,
            "the figures validate uses hold"
        );
    }
}
