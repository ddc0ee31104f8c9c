// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {TRUSTAudit} from "../src/TRUSTAudit.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IProtocolParams} from "../src/interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "../src/interfaces/IRandomnessSource.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Sessions: creation, segment registration, the fee check, cancellation and the parameter
///         snapshot (paper section 3.5, `createSession`).
contract TRUSTAuditSessionTest is TRUSTAuditBase {
    bytes32 internal constant ROOT = keccak256("trace root");

    /// @dev R * seats / 0.7, rounded up: the minimum fees under the default parameters
    ///      (R = 0.0006 ether, auditors' share 70%).
    uint256 internal constant MIN_FEE_3_SEATS = 2_571_428_571_428_572; // 0.0018 ether / 0.7
    uint256 internal constant MIN_FEE_5_SEATS = 4_285_714_285_714_286; // 0.003 ether / 0.7

    address internal stranger = makeAddr("stranger");

    function setUp() public override {
        super.setUp();
        vm.deal(stranger, 10 ether);
    }

    // ------------------------------------------------------------------ createSession

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    /// @notice A created session registers its segments first: it has no randomness block yet
    ///         and asks the source for none (issue H1: no seed exists while its inputs can change).
    function test_createSession_opensRegisteringSession() public {
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SessionCreated(1, ROOT);
        vm.recordLogs();
        vm.prank(provider);
        uint256 id = audit.createSession{value: 1 ether}(ROOT, 4);
        vm.snapshotGasLastCall("TRUSTAudit", "createSession");
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(logs.length, 1, "SessionCreated only");
        assertEq(logs[0].topics[0], ITRUSTAudit.SessionCreated.selector);

        assertEq(id, 1);
        assertEq(audit.sessionCount(), 1);
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.provider, provider);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Registering));
        assertEq(s.traceRoot, ROOT);
        assertEq(s.feeWei, 1 ether);
        assertEq(s.segmentCount, 4);
        assertEq(s.registeredCount, 0);
        assertEq(s.finalizedCount, 0);
        assertEq(s.randomnessBlock, 0, "fixed only when the session opens");
        assertEq(s.totalWeight, 0);
        assertEq(address(audit).balance, 1 ether);
    }

    /// @notice The last segment registered opens the session in the same call: the randomness
    ///         block is fixed then (that block plus the delay), announced in SessionOpened and
    ///         requested from the source; every segment's first round draws from it.
    function test_registerSegments_lastSegmentFixesTheRandomnessBlock() public {
        vm.prank(provider);
        uint256 id = audit.createSession{value: 1 ether}(ROOT, 2);
        vm.roll(150);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        assertEq(audit.session(id).randomnessBlock, 0, "one segment still to register");
        assertEq(audit.segment(id, 0).randomnessBlock, 0);

        vm.roll(170);
        vm.expectCall(address(randomness), abi.encodeCall(IRandomnessSource.request, (172)));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SessionOpened(id, provider, 2, 1 ether, 172, 1);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Open));
        assertEq(s.randomnessBlock, 172);
        assertEq(audit.segment(id, 0).randomnessBlock, 172);
        assertEq(audit.segment(id, 1).randomnessBlock, 172);
    }

    function test_createSession_numbersSessionsFromOne() public {
        vm.startPrank(provider);
        assertEq(audit.createSession(ROOT, 1), 1);
        assertEq(audit.createSession(ROOT, 1), 2);
        assertEq(audit.createSession(ROOT, 1), 3);
        vm.stopPrank();
        assertEq(audit.sessionCount(), 3);
    }

    function test_createSession_revertsOnZeroSegments() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroSegments.selector));
        vm.prank(provider);
        audit.createSession(ROOT, 0);
    }

    function test_createSession_revertsOnTooManySegments() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditTooManySegments.selector, 257, 256));
        vm.prank(provider);
        audit.createSession(ROOT, 257);

        vm.prank(provider);
        assertEq(audit.createSession(ROOT, 256), 1); // the maximum itself is allowed
    }

    function test_createSession_doesNotCheckFeeBeforeSegmentsAreKnown() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 2);
        assertEq(audit.session(id).feeWei, 0);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Registering));
    }

    // ------------------------------------------------------------------ createSessionWithSegments

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_createSessionWithSegments_registersEverySegment() public {
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](3);
        segs[0] = segmentInput(1, 10, true, false, keccak256("s0"));
        segs[1] = segmentInput(2, 20, false, true, keccak256("s1"));
        segs[2] = segmentInput(3, 30, false, false, keccak256("s2"));
        uint256 fee = audit.minimumFee(segs);
        assertEq(fee, 11_142_857_142_857_143); // 13 seats * 0.0006 ether / 0.7, rounded up

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentRegistered(1, 0, 1, 10, true, false, keccak256("s0"));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentRegistered(1, 1, 2, 20, false, true, keccak256("s1"));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentRegistered(1, 2, 3, 30, false, false, keccak256("s2"));
        vm.prank(provider);
        uint256 id = audit.createSessionWithSegments{value: fee}(ROOT, segs);
        vm.snapshotGasLastCall("TRUSTAudit", "createSessionWithSegments_3");

        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Open));
        assertEq(s.segmentCount, 3);
        assertEq(s.registeredCount, 3);
        assertEq(s.totalWeight, 60);
        assertEq(s.feeWei, fee);

        uint8[3] memory sizes = [3, 5, 5];
        for (uint256 i; i < 3; ++i) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, i);
            assertEq(g.tier, segs[i].tier);
            assertEq(g.weight, segs[i].weight);
            assertEq(g.critical, segs[i].critical);
            assertEq(g.contradiction, segs[i].contradiction);
            assertEq(g.contentDigest, segs[i].contentDigest);
            assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
            assertEq(g.committeeSize, sizes[i]);
            assertEq(g.round, 0);
            assertEq(g.randomnessBlock, s.randomnessBlock);
            assertEq(g.commitDeadline, 0);
            assertEq(uint8(audit.phase(id, i)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        }
    }

    function test_createSessionWithSegments_revertsOnEmptyList() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroSegments.selector));
        vm.prank(provider);
        audit.createSessionWithSegments(ROOT, new ITRUSTAudit.SegmentInput[](0));
    }

    function test_createSessionWithSegments_revertsOnTooManySegments() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(257, 1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditTooManySegments.selector, 257, 256));
        vm.prank(provider);
        audit.createSessionWithSegments{value: 1 ether}(ROOT, segs);
    }

    function test_createSessionWithSegments_revertsWhenFeeTooLow() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 2);
        assertEq(audit.minimumFee(segs), MIN_FEE_5_SEATS);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditFeeTooLow.selector, MIN_FEE_5_SEATS - 1, MIN_FEE_5_SEATS));
        vm.prank(provider);
        audit.createSessionWithSegments{value: MIN_FEE_5_SEATS - 1}(ROOT, segs);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditFeeTooLow.selector, 0, MIN_FEE_5_SEATS));
        vm.prank(provider);
        audit.createSessionWithSegments(ROOT, segs);
    }

    function test_createSessionWithSegments_acceptsExactMinimumFee() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 1);
        assertEq(audit.minimumFee(segs), MIN_FEE_3_SEATS);
        vm.prank(provider);
        uint256 id = audit.createSessionWithSegments{value: MIN_FEE_3_SEATS}(ROOT, segs);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Open));
        assertEq(audit.session(id).feeWei, MIN_FEE_3_SEATS);
    }

    function test_createSessionWithSegments_revertsOnInvalidSegment() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(3, 1);
        segs[2].tier = 4;
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 2, "tier"));
        vm.prank(provider);
        audit.createSessionWithSegments{value: 1 ether}(ROOT, segs);
    }

    // ------------------------------------------------------------------ registerSegments

    function test_registerSegments_registersInOrderAcrossCalls() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 4);
        ITRUSTAudit.SegmentInput[] memory first = new ITRUSTAudit.SegmentInput[](2);
        first[0] = segmentInput(1, 5, false, false, keccak256("a"));
        first[1] = segmentInput(2, 6, false, false, keccak256("b"));
        ITRUSTAudit.SegmentInput[] memory second = new ITRUSTAudit.SegmentInput[](2);
        second[0] = segmentInput(3, 7, true, false, keccak256("c"));
        second[1] = segmentInput(1, 8, false, true, keccak256("d"));

        vm.prank(provider);
        audit.registerSegments(id, first);
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.registeredCount, 2);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Registering));
        assertEq(s.totalWeight, 11);
        // Not registered yet.
        assertEq(uint8(audit.segment(id, 2).status), uint8(ITRUSTAudit.SegmentStatus.None));
        assertEq(uint8(audit.phase(id, 2)), uint8(ITRUSTAudit.Phase.None));

        // The second call continues at index 2.
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentRegistered(id, 2, 3, 7, true, false, keccak256("c"));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentRegistered(id, 3, 1, 8, false, true, keccak256("d"));
        vm.prank(provider);
        audit.registerSegments{value: 1 ether}(id, second);

        s = audit.session(id);
        assertEq(s.registeredCount, 4);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Open));
        assertEq(s.totalWeight, 26);
        assertEq(audit.segment(id, 0).contentDigest, keccak256("a"));
        assertEq(audit.segment(id, 1).contentDigest, keccak256("b"));
        assertEq(audit.segment(id, 2).contentDigest, keccak256("c"));
        assertEq(audit.segment(id, 3).contentDigest, keccak256("d"));
        assertEq(audit.segment(id, 2).tier, 3);
        assertTrue(audit.segment(id, 3).contradiction);
    }

    function test_registerSegments_topUpsAddToFee() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(2, 1); // 6 seats
        uint256 needed = audit.minimumFee(segs);
        assertEq(needed, 2 * MIN_FEE_3_SEATS - 1); // rounded up once over all six seats
        ITRUSTAudit.SegmentInput[] memory a = new ITRUSTAudit.SegmentInput[](1);
        a[0] = segs[0];
        ITRUSTAudit.SegmentInput[] memory b = new ITRUSTAudit.SegmentInput[](1);
        b[0] = segs[1];

        vm.prank(provider);
        uint256 id = audit.createSession{value: 1_000}(ROOT, 2);
        vm.prank(provider);
        audit.registerSegments{value: 2_000}(id, a); // no fee check until the last segment
        assertEq(audit.session(id).feeWei, 3_000);

        // The last call checks the whole fee, this call's value included.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditFeeTooLow.selector, needed - 1, needed));
        vm.prank(provider);
        audit.registerSegments{value: needed - 3_001}(id, b);

        vm.prank(provider);
        audit.registerSegments{value: needed - 3_000}(id, b);
        assertEq(audit.session(id).feeWei, needed);
        assertEq(address(audit).balance, needed);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Open));
    }

    function test_registerSegments_emptyListOnlyTopsUp() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        vm.prank(provider);
        audit.registerSegments{value: 5 ether}(id, new ITRUSTAudit.SegmentInput[](0));
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.feeWei, 5 ether);
        assertEq(s.registeredCount, 0);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Registering));
    }

    function test_registerSegments_revertsOnOverflow() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 2);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSegmentsOverflow.selector, id, 0, 3, 2));
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(3, 1));

        ITRUSTAudit.SegmentInput[] memory one = uniformSegments(1, 1);
        vm.prank(provider);
        audit.registerSegments(id, one);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSegmentsOverflow.selector, id, 1, 2, 2));
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(2, 1));
    }

    function test_registerSegments_revertsOnInvalidTier() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 4);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));

        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(2, 1);
        segs[1].tier = 0;
        // The index is the segment's position in the session, not in this call.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 2, "tier"));
        vm.prank(provider);
        audit.registerSegments(id, segs);

        segs[1].tier = 4;
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 2, "tier"));
        vm.prank(provider);
        audit.registerSegments(id, segs);

        segs[1].tier = 3; // every tier from 1 to 3 is valid
        vm.prank(provider);
        audit.registerSegments(id, segs);
        assertEq(audit.session(id).registeredCount, 3);
    }

    function test_registerSegments_revertsOnZeroWeight() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 3);
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(3, 2);
        segs[1].weight = 0;
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 1, "weight"));
        vm.prank(provider);
        audit.registerSegments(id, segs);
    }

    function test_registerSegments_revertsOnZeroDigest() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 3);
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(3, 2);
        segs[0].contentDigest = bytes32(0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 0, "contentDigest"));
        vm.prank(provider);
        audit.registerSegments(id, segs);
    }

    function test_registerSegments_checksTierBeforeWeightAndDigest() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](1);
        segs[0] = segmentInput(9, 0, false, false, bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 0, "tier"));
        vm.prank(provider);
        audit.registerSegments(id, segs);
        segs[0].tier = 1;
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditInvalidSegment.selector, 0, "weight"));
        vm.prank(provider);
        audit.registerSegments(id, segs);
    }

    function test_registerSegments_revertsWhenNotProvider() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotProvider.selector, id, stranger));
        vm.prank(stranger);
        audit.registerSegments{value: 1 ether}(id, uniformSegments(1, 1));
    }

    function test_registerSegments_revertsOnUnknownSession() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 7));
        vm.prank(provider);
        audit.registerSegments(7, uniformSegments(1, 1));
    }

    function test_registerSegments_revertsWhenSessionOpen() public {
        uint256 id = openSession(uniformSegments(1, 1));
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Open)
        );
        vm.prank(provider);
        audit.registerSegments(id, new ITRUSTAudit.SegmentInput[](0));
    }

    function test_registerSegments_revertsWhenCancelled() public {
        vm.startPrank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        audit.cancelSession(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Distributed)
        );
        audit.registerSegments{value: 1 ether}(id, uniformSegments(1, 1));
        vm.stopPrank();
    }

    // ------------------------------------------------------------------ cancelSession

    function test_cancelSession_refundsFee() public {
        vm.prank(provider);
        uint256 id = audit.createSession{value: 2 ether}(ROOT, 2);
        vm.prank(provider);
        audit.registerSegments{value: 1 ether}(id, uniformSegments(1, 1));
        uint256 before = provider.balance;

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SessionCancelled(id, 3 ether);
        vm.prank(provider);
        audit.cancelSession(id);

        assertEq(provider.balance, before + 3 ether);
        assertEq(address(audit).balance, 0);
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Distributed));
        assertEq(s.feeWei, 0);
    }

    function test_cancelSession_withoutFee() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SessionCancelled(id, 0);
        vm.prank(provider);
        audit.cancelSession(id);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
        // A cancelled session can never be drawn, finalized or distributed.
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Distributed)
        );
        audit.assignAuditors(id, 0);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotFinalized.selector, id, ITRUSTAudit.SessionStatus.Distributed)
        );
        audit.distributeRewards(id);
    }

    function test_cancelSession_revertsWhenNotProvider() public {
        vm.prank(provider);
        uint256 id = audit.createSession{value: 1 ether}(ROOT, 2);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotProvider.selector, id, stranger));
        vm.prank(stranger);
        audit.cancelSession(id);
    }

    function test_cancelSession_revertsWhenSessionOpen() public {
        uint256 id = openSession(uniformSegments(1, 1));
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Open)
        );
        vm.prank(provider);
        audit.cancelSession(id);
    }

    function test_cancelSession_revertsWhenCancelledTwice() public {
        vm.startPrank(provider);
        uint256 id = audit.createSession{value: 1 ether}(ROOT, 2);
        audit.cancelSession(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Distributed)
        );
        audit.cancelSession(id);
        vm.stopPrank();
    }

    function test_cancelSession_revertsOnUnknownSession() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 3));
        vm.prank(provider);
        audit.cancelSession(3);
    }

    // ------------------------------------------------------------------ parameter snapshot

    function test_createSession_snapshotsParams() public {
        addAuditors("t1-", 1, 6, 1_000e18);
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        assertEq(abi.encode(audit.sessionParams(id)), abi.encode(defaultParams()));

        // Governance changes the rules through the timelock while the session is registering.
        handToTimelock();
        Params memory next = defaultParams();
        next.committeeSizeTier1 = 5;
        next.commitWindowSeconds = 3 hours;
        next.revealWindowSeconds = 5 hours;
        next.rewardPerSeatWei = 1 ether;
        next.tauBps = 9_000;
        governed(address(params), abi.encodeCall(IProtocolParams.setParams, (next)));
        assertEq(params.version(), 2);
        assertEq(abi.encode(params.params()), abi.encode(next));

        // The open session keeps its snapshot: the old minimum fee (3 seats at the old R) is enough,
        // and the committee and windows are the old ones.
        vm.prank(provider);
        audit.registerSegments{value: MIN_FEE_3_SEATS}(id, uniformSegments(1, 1));
        assertEq(abi.encode(audit.sessionParams(id)), abi.encode(defaultParams()));
        assertEq(audit.segment(id, 0).committeeSize, 3);
        address[] memory members = drawSegment(id, 0);
        assertEq(members.length, 3);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(g.commitDeadline, block.timestamp + 1 hours);
        assertEq(g.revealDeadline, block.timestamp + 2 hours);

        // A session created afterwards takes the new rules.
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 1);
        uint256 newFee = audit.minimumFee(segs);
        assertEq(newFee, 5 ether * BPS / 7_000 + 1); // 5 seats * 1 ether / 0.7, rounded up
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SessionOpened(2, provider, 1, newFee, block.number + 2, 2);
        vm.prank(provider);
        uint256 id2 = audit.createSessionWithSegments{value: newFee}(ROOT, segs);
        assertEq(abi.encode(audit.sessionParams(id2)), abi.encode(next));
        assertEq(audit.segment(id2, 0).committeeSize, 5);
    }

    function test_registerSegments_feeCheckUsesSnapshotNotCurrentParams() public {
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, 1);
        Params memory cheaper = defaultParams();
        cheaper.rewardPerSeatWei = 1;
        applyParams(cheaper);
        // The current minimum fee fell, but the session was created under the old R.
        assertEq(audit.minimumFee(uniformSegments(1, 1)), 5); // ceil(3 * 1 / 0.7)
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditFeeTooLow.selector, 5, MIN_FEE_3_SEATS));
        vm.prank(provider);
        audit.registerSegments{value: 5}(id, uniformSegments(1, 1));
    }

    // ------------------------------------------------------------------ fuzz

    /// @notice The fee check accepts exactly ceil(R * seats / auditor share) and nothing less.
    function testFuzz_createSessionWithSegments_feeFloorIsExact(
        uint256 tier1,
        uint256 tier2,
        uint256 tier3,
        uint256 rewardPerSeatWei,
        uint256 auditorShareBps
    ) public {
        tier1 = bound(tier1, 0, 20);
        tier2 = bound(tier2, 0, 20);
        tier3 = bound(tier3, tier1 + tier2 == 0 ? 1 : 0, 20);
        Params memory p = defaultParams();
        p.rewardPerSeatWei = SafeCast.toUint128(bound(rewardPerSeatWei, 1, 1 ether));
        p.auditorShareBps = uint16(bound(auditorShareBps, 1, BPS));
        p.treasuryShareBps = uint16(BPS - p.auditorShareBps);
        p.stakerShareBps = 0;
        p.insuranceShareBps = 0;
        applyParams(p);

        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](tier1 + tier2 + tier3);
        for (uint256 i; i < segs.length; ++i) {
            uint8 tier = i < tier1 ? 1 : i < tier1 + tier2 ? 2 : 3;
            segs[i] = segmentInput(tier, 1, false, false, keccak256(abi.encode(i)));
        }
        uint256 seats = 3 * tier1 + 5 * tier2 + 5 * tier3;
        uint256 product = uint256(p.rewardPerSeatWei) * seats * BPS;
        uint256 needed = product / p.auditorShareBps + (product % p.auditorShareBps == 0 ? 0 : 1);
        assertEq(audit.minimumFee(segs), needed);
        vm.deal(provider, needed);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditFeeTooLow.selector, needed - 1, needed));
        vm.prank(provider);
        audit.createSessionWithSegments{value: needed - 1}(ROOT, segs);

        vm.prank(provider);
        uint256 id = audit.createSessionWithSegments{value: needed}(ROOT, segs);
        // Every first-round seat can earn R from the auditors' share.
        assertGe(needed * p.auditorShareBps / BPS, uint256(p.rewardPerSeatWei) * seats);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Open));
    }

    /// @notice Any segment count above the maximum is refused; any count up to it is accepted.
    function testFuzz_createSession_boundsSegmentCount(uint256 count) public {
        uint256 tooMany = bound(count, 257, type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditTooManySegments.selector, tooMany, 256));
        vm.prank(provider);
        audit.createSession(ROOT, tooMany);

        uint256 fine = bound(count, 1, 256);
        vm.prank(provider);
        uint256 id = audit.createSession(ROOT, fine);
        assertEq(audit.session(id).segmentCount, fine);
    }
}
