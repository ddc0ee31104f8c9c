// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SegmentKeysBase} from "./SegmentKeysBase.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

/// @notice Key envelope delivery (paper section 3.4.2): only the provider, only for a seated round,
///         one envelope per seat, addressed to the auditor the committee on chain names.
contract SegmentKeysDeliveryTest is SegmentKeysBase {
    uint256 internal constant R = 0.0006 ether; // rewardPerSeatWei of the default parameters

    function setUp() public override {
        super.setUp();
        // Every auditor's stake backs one unit of P and not two (stake < 2P): committees are drawn
        // with replacement (issue L2), and a member drawn again cannot back the second unit, so a
        // committee of k draws seats k distinct auditors, one envelope each, as the delivery tests
        // below are written. Seats of several units have their own tests at the end.
        applyParams(oneUnitParams());
        addAuditors("t1-", 1, 4, ONE_UNIT_STAKE);
        addAuditors("t2-", 2, 8, ONE_UNIT_STAKE);
    }

    /// @notice A drawn tier-1 segment (3 seats) in a fresh session.
    function drawnTier1() internal returns (uint256 id, address[] memory members) {
        id = openSingle(1);
        members = drawSegment(id, 0);
    }

    // ------------------------------------------------------------------ initialize

    function test_initialize_setsOwnerAndAudit() public view {
        assertEq(address(keys.audit()), address(audit));
        assertEq(keys.owner(), address(this));
        assertEq(keys.MAX_ENVELOPE_CID_BYTES(), 128);
    }

    function test_initialize_revertsOnSecondCall() public {
        vm.expectRevert(abi.encodeWithSignature("InvalidInitialization()"));
        keys.initialize(address(this), ITRUSTAudit(address(audit)));
    }

    // ------------------------------------------------------------------ publishEnvelopes

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopes_emitsOneEventPerSeatNamingTheSeatedAuditor() public {
        (uint256 id, address[] memory members) = drawnTier1();
        bytes[] memory cids = envelopes(3, "k3-");
        for (uint256 i; i < 3; ++i) {
            vm.expectEmit(address(keys));
            emit ISegmentKeys.KeyEnvelopePublished(id, 0, 0, i, members[i], cids[i]);
        }
        publish(id, 0, 0, cids);
        vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopes_k3");
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopes_tier2CommitteeOfFive() public {
        uint256 id = openSingle(2);
        address[] memory members = drawSegment(id, 0);
        assertEq(members.length, 5);
        bytes[] memory cids = envelopes(5, "k5-");
        vm.recordLogs();
        publish(id, 0, 0, cids);
        vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopes_k5");
        assertPublished(keysLogs(), id, 0, 0, members, cids);
    }

    function test_publishEnvelopes_mayBeRepublishedWhileVoting() public {
        (uint256 id, address[] memory members) = drawnTier1();
        publish(id, 0, 0, envelopes(3, "first-"));
        // A corrected set in the commit window, then again in the reveal window and once every
        // seat revealed (finalizable, not yet finalized): the latest event per seat wins.
        bytes[] memory corrected = envelopes(3, "second-");
        vm.recordLogs();
        publish(id, 0, 0, corrected);
        assertPublished(keysLogs(), id, 0, 0, members, corrected);

        toCommitEnd(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        publish(id, 0, 0, envelopes(3, "third-"));

        toRevealEnd(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        publish(id, 0, 0, envelopes(3, "fourth-"));
    }

    function test_publishEnvelopes_followsEscalationToTheNextRound() public {
        (uint256 id, address[] memory round0) = drawnTier1();
        castVotes(id, 0, addrs(round0[0], round0[1]), bools(true, false));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0); // undecided: escalates to 7 tier-2 seats

        // Round 1 is not drawn yet.
        vm.expectRevert(
            abi.encodeWithSelector(
                ISegmentKeys.SegmentKeysNotVoting.selector, id, 0, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
        publish(id, 0, 1, envelopes(7, "r1-"));

        address[] memory round1 = drawSegment(id, 0);
        assertEq(round1.length, 7);
        // Round 0 is over.
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongRound.selector, id, 0, 0, 1));
        publish(id, 0, 0, envelopes(3, "r0-"));

        bytes[] memory cids = envelopes(7, "r1-");
        vm.recordLogs();
        publish(id, 0, 1, cids);
        assertPublished(keysLogs(), id, 0, 1, round1, cids);
    }

    function test_publishEnvelopes_acceptsTheLongestCid() public {
        (uint256 id,) = drawnTier1();
        bytes[] memory cids = envelopes(3, "");
        cids[2] = bytesOfLength(128);
        cids[0] = bytesOfLength(1);
        publish(id, 0, 0, cids);
    }

    function test_publishEnvelopes_revertsForUnknownSession() public {
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSession.selector, 7));
        publish(7, 0, 0, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsForAnyoneButTheProvider() public {
        (uint256 id, address[] memory members) = drawnTier1();
        bytes[] memory cids = envelopes(3, "");
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotProvider.selector, id, stranger, provider));
        vm.prank(stranger);
        keys.publishEnvelopes(id, 0, 0, cids);

        // Not even a seated auditor, nor governance.
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotProvider.selector, id, members[0], provider));
        vm.prank(members[0]);
        keys.publishEnvelopes(id, 0, 0, cids);
        vm.expectRevert(
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotProvider.selector, id, address(this), provider)
        );
        keys.publishEnvelopes(id, 0, 0, cids);
    }

    function test_publishEnvelopes_revertsForUnknownSegment() public {
        (uint256 id,) = drawnTier1();
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSegment.selector, id, 1));
        publish(id, 1, 0, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsForAnUnregisteredSegment() public {
        vm.prank(provider);
        uint256 id = audit.createSession{value: 1 ether}(keccak256("trace"), 2);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        // Segment 0 is registered and awaits its draw; segment 1 is not registered yet.
        vm.expectRevert(
            abi.encodeWithSelector(
                ISegmentKeys.SegmentKeysNotVoting.selector, id, 0, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
        publish(id, 0, 0, envelopes(3, ""));
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSegment.selector, id, 1));
        publish(id, 1, 0, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsBeforeTheDraw() public {
        uint256 id = openSingle(1);
        vm.expectRevert(
            abi.encodeWithSelector(
                ISegmentKeys.SegmentKeysNotVoting.selector, id, 0, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
        publish(id, 0, 0, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsForAFutureRound() public {
        (uint256 id,) = drawnTier1();
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongRound.selector, id, 0, 1, 0));
        publish(id, 0, 1, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsOnceTheSegmentIsFinal() public {
        (uint256 id,) = drawnTier1();
        voteAll(id, 0, true);
        audit.finalizeSegment(id, 0);
        vm.expectRevert(
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotVoting.selector, id, 0, ITRUSTAudit.SegmentStatus.Passed)
        );
        publish(id, 0, 0, envelopes(3, ""));
    }

    function test_publishEnvelopes_revertsOnWrongCount() public {
        (uint256 id,) = drawnTier1();
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 2, 3));
        publish(id, 0, 0, envelopes(2, ""));
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 4, 3));
        publish(id, 0, 0, envelopes(4, ""));
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 0, 3));
        publish(id, 0, 0, new bytes[](0));
    }

    function test_publishEnvelopes_revertsOnEmptyCid() public {
        (uint256 id,) = drawnTier1();
        bytes[] memory cids = envelopes(3, "");
        cids[1] = "";
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysEmptyEnvelope.selector, id, 0, 1));
        publish(id, 0, 0, cids);
    }

    function test_publishEnvelopes_revertsOnOverlongCid() public {
        (uint256 id,) = drawnTier1();
        bytes[] memory cids = envelopes(3, "");
        cids[2] = bytesOfLength(129);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysEnvelopeTooLong.selector, id, 0, 2, 129, 128));
        publish(id, 0, 0, cids);
    }

    // ------------------------------------------------------------------ seats of several units

    /// @notice A set holds one envelope per seat (`seatCount`), not one per draw: a committee of
    ///         three draws that seated a member twice takes two envelopes.
    function test_publishEnvelopes_oneEnvelopePerSeatNotPerUnit() public {
        (uint256 id, address heavy, address light) = openTwoAndOne();
        address[] memory members = drawSegment(id, 0);
        assertEq(audit.segment(id, 0).committeeSize, 3);
        assertEq(members.length, 2);
        assertEq(unitsOf(id, 0, heavy) + unitsOf(id, 0, light), 3);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 3, 2));
        publish(id, 0, 0, envelopes(3, "per-draw-"));

        bytes[] memory cids = envelopes(2, "per-seat-");
        vm.recordLogs();
        publish(id, 0, 0, cids);
        assertPublished(keysLogs(), id, 0, 0, members, cids);
        assertTrue(audit.segment(id, 0).delivered);
    }

    /// @notice `claimUndelivered` releases a seat's whole lock (units * P) and credits R per unit
    ///         out of the session's fee: the seat of two units gets 2R, the seat of one R.
    function test_claimUndelivered_creditsRPerUnit() public {
        (uint256 id, address heavy, address light) = openTwoAndOne();
        drawSegment(id, 0);
        uint256 feeBefore = audit.session(id).feeWei;
        assertGe(feeBefore, 3 * R, "the fee covers a claim by every unit");
        vm.warp(uint256(audit.segment(id, 0).deliveryDeadline) + 1);

        uint256 heavyIndex = seatIndexOf(id, 0, heavy);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SeatUndelivered(id, 0, 0, heavyIndex, heavy, 2 * R);
        vm.prank(heavy);
        audit.claimUndelivered(id, 0, heavyIndex);
        assertEq(audit.claimable(heavy), 2 * R, "R per unit");
        assertEq(audit.session(id).feeWei, feeBefore - 2 * R);
        assertEq(registry.auditor(heavy).locked, 0, "both units released");
        assertEq(registry.auditor(heavy).stake, TWO_UNIT_STAKE, "nothing forfeited");

        uint256 lightIndex = seatIndexOf(id, 0, light);
        vm.prank(light);
        audit.claimUndelivered(id, 0, lightIndex);
        assertEq(audit.claimable(light), R);
        assertEq(audit.session(id).feeWei, feeBefore - 3 * R);
        assertEq(registry.auditor(light).locked, 0);
    }

    /// @notice A round ends Undetermined instead of escalating when more than half of its weight
    ///         was undelivered, counted in units: the seat of two claims, the seat of one reveals
    ///         Pass (1 of 3, undecided). By heads one claim of two seats would not be "more than
    ///         half", and the round would escalate.
    function test_claimUndelivered_undeliveredUnitsEndTheRoundUndetermined() public {
        (uint256 id, address heavy, address light) = openTwoAndOne();
        drawSegment(id, 0);
        commitAs(light, id, 0, true);
        vm.warp(uint256(audit.segment(id, 0).deliveryDeadline) + 1);
        uint256 heavyIndex = seatIndexOf(id, 0, heavy);
        vm.prank(heavy);
        audit.claimUndelivered(id, 0, heavyIndex);
        // Both seats acted (one committed, one claimed): the commit window closed with the claim.
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1);
        revealAs(light, id, 0, true);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        audit.finalizeSegment(id, 0);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Undetermined), "not escalated");
        assertEq(g.round, 0);
        assertEq(registry.auditor(light).locked, 0, "released: no verdict");
        assertEq(registry.auditor(light).stake, ONE_UNIT_STAKE);
    }
}
