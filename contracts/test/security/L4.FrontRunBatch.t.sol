// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";

/// @notice Issue L4, a front-run batch. A keeper sends one transaction that draws (or finalizes)
///         every segment of a session; anyone sees it pending and draws (or finalizes) one of its
///         segments first.
///         On 96c3011 both batches reverted as a whole (AuditWrongSegmentStatus for the segment
///         handled first), so one cheap call undid the keeper's whole transaction and its gas.
///         The defence asserted here: the batches skip segments that are no longer awaiting a draw
///         (or whose round is no longer voting) and go through for the rest.
contract L4FrontRunBatchTest is TRUSTAuditBase {
    address internal griefer = makeAddr("griefer");

    function setUp() public override {
        super.setUp();
        addAuditors("t1-", 1, 5, 1_000e18);
    }

    function all(uint256 n) internal pure returns (uint256[] memory list) {
        list = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            list[i] = i;
        }
    }

    /// @dev The draws the segment's current round seated: its seats' units.
    function unitsDrawn(uint256 id, uint256 segmentId, uint256 seatCount) internal view returns (uint256 units) {
        for (uint256 i; i < seatCount; ++i) {
            units += audit.seat(id, segmentId, 0, i).weight;
        }
    }

    function test_L4_aFrontRunDrawDoesNotUndoTheBatch() public {
        uint256 id = openSession(uniformSegments(4, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        vm.prank(griefer);
        audit.assignAuditors(id, 2);
        address[] memory first = audit.committee(id, 2);

        audit.assignAuditorsBatch(id, all(4));
        for (uint256 s; s < 4; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, s);
            assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Voting));
            // Three draws each: a member drawn twice holds one seat of weight two (issue L2).
            assertEq(g.committeeSize, 3);
            assertEq(audit.committee(id, s).length, g.seatCount);
            assertEq(unitsDrawn(id, s, g.seatCount), 3, "every draw of the segment seated");
        }
        assertEq(abi.encode(audit.committee(id, 2)), abi.encode(first), "the front-run draw stands");
    }

    function test_L4_aFrontRunFinalizeDoesNotUndoTheBatch() public {
        uint256 id = openSession(uniformSegments(4, 1));
        drawAll(id);
        for (uint256 s; s < 4; ++s) {
            commitAll(id, s, true);
        }
        toLatestCommitEnd(id);
        for (uint256 s; s < 4; ++s) {
            revealAll(id, s, true);
        }
        toLatestRevealEnd(id);
        vm.prank(griefer);
        audit.finalizeSegment(id, 1);

        audit.finalizeSegments(id, all(4));
        for (uint256 s; s < 4; ++s) {
            assertEq(uint8(audit.segment(id, s).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        }
        assertEq(audit.session(id).finalizedCount, 4, "each counted once");
    }
}
