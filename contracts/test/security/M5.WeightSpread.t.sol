// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";
import {Params} from "../../src/types/Params.sol";

/// @notice Issue M5, the provider's weights decide validity. The attack: a provider declares the
///         step it expects to fail with weight 1 beside a passing step of weight 1,000; the failed
///         step is 0.1% of the weight and the trace is VALID (eq. 3.6: W >= beta sum(w)).
///         On 96c3011 any positive uint32 weight was accepted, and the session view showed only the
///         weighted verdict.
///         The defence asserted here: a session's weights may spread at most `maxWeightRatio`
///         (10 by default) from the lightest to the heaviest, and the session publishes how many
///         segments passed, failed and ended undetermined beside the verdict.
contract M5WeightSpreadTest is TRUSTAuditBase {
    function setUp() public override {
        super.setUp();
        addAuditors("a-", 1, 3, 100e18);
    }

    function two(uint32 light, uint32 heavy) internal pure returns (ITRUSTAudit.SegmentInput[] memory segs) {
        segs = new ITRUSTAudit.SegmentInput[](2);
        segs[0] = segmentInput(1, heavy, false, false, keccak256("passing step"));
        segs[1] = segmentInput(1, light, false, false, keccak256("failing step"));
    }

    function test_M5_aThousandToOneSpreadIsRefused() public {
        ITRUSTAudit.SegmentInput[] memory segs = two(1, 1_000);
        uint256 fee = audit.minimumFee(segs);
        vm.prank(provider);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditWeightsTooUneven.selector, 1, 1, 1_000, 10));
        audit.createSessionWithSegments{value: fee}(keccak256("trace"), segs);
    }

    function test_M5_theSpreadIsCheckedAcrossRegistrationCalls() public {
        ITRUSTAudit.SegmentInput[] memory first = new ITRUSTAudit.SegmentInput[](1);
        first[0] = segmentInput(1, 500, false, false, keccak256("a"));
        ITRUSTAudit.SegmentInput[] memory second = new ITRUSTAudit.SegmentInput[](1);
        second[0] = segmentInput(1, 49, false, false, keccak256("b"));
        vm.startPrank(provider);
        uint256 id = audit.createSession{value: 1 ether}(keccak256("trace"), 2);
        audit.registerSegments(id, first);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditWeightsTooUneven.selector, 1, 49, 500, 10));
        audit.registerSegments(id, second);
        vm.stopPrank();
    }

    function test_M5_aFailedStepIsPublishedBesideAWeightedValidVerdict() public {
        uint256 id = openSession(two(1, 10));
        drawAll(id);
        voteAll(id, 0, true);
        voteAll(id, 1, false);
        audit.finalizeSegment(id, 0);
        audit.finalizeSegment(id, 1);
        assertTrue(audit.finalizeTrace(id), "10 of 11 >= beta: valid by weight");
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.segmentsPassed, 1);
        assertEq(s.segmentsFailed, 1, "what a reader sees beside VALID");
        assertEq(s.segmentsUndetermined, 0);
    }

    function test_M5_governanceMayWidenButNeverDisableTheBound() public {
        Params memory p = defaultParams();
        p.maxWeightRatio = 0;
        vm.expectRevert(abi.encodeWithSelector(ParamsLib.ParamsOutOfRange.selector, "maxWeightRatio", 0));
        params.setParams(p);
        p.maxWeightRatio = 1; // every segment weighs the same
        params.setParams(p);
        ITRUSTAudit.SegmentInput[] memory segs = two(1, 2);
        uint256 fee = audit.minimumFee(segs);
        vm.prank(provider);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditWeightsTooUneven.selector, 1, 1, 2, 1));
        audit.createSessionWithSegments{value: fee}(keccak256("trace"), segs);
    }
}
