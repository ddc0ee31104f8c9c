// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SegmentKeysBase} from "../SegmentKeysBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../../src/types/Params.sol";

/// @notice Issue M3, providers burning honest auditors' stake. The attack: the provider opens a
///         session and never publishes the key envelopes of a segment's committee. No seat can
///         decrypt the segment, so none can vote: every seat is silent, forfeits its locked P and
///         loses reputation, and the round, undecided, escalates to a larger committee of the next
///         tier, which the provider starves the same way.
///         On 5855ab8 (no delivery record, no claim; 6, 12 and 20 auditors in tiers 1 to 3), one
///         withheld tier-1 segment cost the three seats of its first round 8 tokens each, then
///         the seven of the second round and the fifteen of the third: 25 seats, 200 tokens
///         burned and every one of those auditors' reputations lowered, for a provider who paid
///         the fee of three seats.
///         The defence asserted here: `SegmentKeys.publishEnvelopes` records each round's delivery
///         in `TRUSTAudit` (`recordDelivery`, on time when by the delivery deadline, half the
///         commit window after the draw). A seat of an undelivered round that has not committed
///         may `claimUndelivered` after that deadline: verified on chain against the record, it
///         releases the seat's stake at once (no forfeit, reputation unchanged) and credits the
///         auditor R out of the provider's fee (its bond). Claimed seats still weigh in the tally
///         against both outcomes, so withholding cannot hand a decision to the provider's own
///         seats, and a round that more than half of its seats claimed ends Undetermined instead
///         of escalating: nobody else is drawn into the trap.
///         Since 7430925 a seat weighs the draws it won and is compensated R and charged P per
///         draw. Here every auditor stakes 10 tokens, which back exactly one draw of P = 8, so
///         committees seat distinct members as the story needs (the subject is delivery, not the
///         draw); the last two tests seat one member for all three draws of a committee and
///         assert R and P per draw.
contract M3WithheldEnvelopesTest is SegmentKeysBase {
    uint256 internal constant STAKE = 10e18; // backs one draw of P
    uint256 internal constant PENALTY = 8e18;
    uint256 internal constant R = 0.0006 ether;

    address[] internal tier1;
    address[] internal tier2;

    function setUp() public override {
        super.setUp();
        Params memory p = defaultParams();
        p.minStakeTier1 = uint96(STAKE);
        p.minStakeTier2 = uint96(STAKE);
        applyParams(p);
        tier1 = addAuditors("t1-", 1, 6, STAKE);
        tier2 = addAuditors("t2-", 2, 12, STAKE);
    }

    /// @dev A tier-1 member whose 24 tokens back three draws, alone in its tier (the others step
    ///      aside before the session): it holds one seat weighing all three draws of a committee.
    function soleMemberOfThreeDraws() internal returns (address big, uint256 id) {
        for (uint256 i; i < tier1.length; ++i) {
            vm.prank(tier1[i]);
            registry.setAvailable(false);
        }
        big = addAuditor("big", 1, 3 * PENALTY);
        id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        assertEq(abi.encode(members), abi.encode(addrs(big)));
        assertEq(audit.seat(id, 0, 0, 0).weight, 3);
        assertEq(registry.auditor(big).locked, 3 * PENALTY, "P locked per draw");
    }

    function claim(address auditor, uint256 id, uint256 segmentId) internal {
        uint256 index = seatIndexOf(id, segmentId, auditor);
        vm.prank(auditor);
        audit.claimUndelivered(id, segmentId, index);
    }

    /// @dev Round 0 of segment 0, delivered, splits 1 Pass against 1 Fail (one seat silent): it
    ///      escalates to a tier-2 committee of seven.
    function splitRound0(uint256 id) internal {
        address[] memory members = drawSegment(id, 0);
        publish(id, 0, 0, envelopes(members.length, "round 0"));
        commitAs(members[0], id, 0, true);
        commitAs(members[1], id, 0, false);
        toCommitEnd(id, 0);
        revealAs(members[0], id, 0, true);
        revealAs(members[1], id, 0, false);
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
    }

    function toDeliveryDeadline(uint256 id, uint256 segmentId) internal {
        vm.warp(uint256(audit.segment(id, segmentId).deliveryDeadline) + 1);
    }

    function test_M3_withheldEnvelopesBurnNobodyAndDoNotEscalate() public {
        uint256 id = openSingle(1);
        uint256 feeBefore = audit.session(id).feeWei;
        address[] memory members = drawSegment(id, 0);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertFalse(g.delivered);
        assertEq(g.deliveryDeadline, g.commitDeadline - 30 minutes, "half the commit window");

        // The provider publishes nothing. Past the delivery deadline every seat claims.
        toDeliveryDeadline(id, 0);
        uint64[] memory reputations = new uint64[](members.length);
        for (uint256 i; i < members.length; ++i) {
            reputations[i] = uint64(registry.auditor(members[i]).reputationWad);
            uint256 index = seatIndexOf(id, 0, members[i]);
            vm.expectEmit(address(audit));
            emit ITRUSTAudit.SeatUndelivered(id, 0, 0, index, members[i], R);
            claim(members[i], id, 0);
            // Released at once: the stake is free for other seats before the round even ends.
            assertEq(registry.auditor(members[i]).locked, 0, "released at the claim");
            assertTrue(audit.seat(id, 0, 0, index).undelivered);
            assertFalse(audit.seat(id, 0, 0, index).revealed);
        }
        assertEq(audit.session(id).feeWei, feeBefore - 3 * R, "the fee paid the claims");

        // Every seat is done with the round: nobody waits out the windows.
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        audit.finalizeSegment(id, 0);
        g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Undetermined), "no escalation");
        assertEq(g.round, 0);
        for (uint256 i; i < members.length; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(members[i]);
            assertEq(info.stake, STAKE, "nothing forfeited");
            assertEq(info.locked, 0);
            assertEq(info.reputationWad, reputations[i], "reputation unchanged");
            assertEq(audit.claimable(members[i]), R, "compensated");
        }
        // The session still settles: the trace is invalid (its only segment undetermined) and the
        // rest of the fee is split as usual.
        assertFalse(audit.finalizeTrace(id));
        audit.distributeRewards(id);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
    }

    function test_M3_aDeliveredRoundCannotBeClaimed() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.EnvelopesDelivered(id, 0, 0, true);
        publish(id, 0, 0, envelopes(members.length, "on time"));
        assertTrue(audit.segment(id, 0).delivered);
        toDeliveryDeadline(id, 0);
        uint256 index = seatIndexOf(id, 0, members[0]);
        vm.prank(members[0]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditEnvelopesDelivered.selector, id, 0, 0));
        audit.claimUndelivered(id, 0, index);
        // A seat that stays silent after a delivery forfeits as before.
        commitAs(members[1], id, 0, true);
        commitAs(members[2], id, 0, true);
        toCommitEnd(id, 0);
        revealAs(members[1], id, 0, true);
        revealAs(members[2], id, 0, true);
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(members[0]).stake, STAKE - PENALTY, "silent after delivery: forfeits");
    }

    function test_M3_claimsWaitForTheDeliveryDeadline() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        uint256 deadline = audit.segment(id, 0).deliveryDeadline;
        vm.warp(deadline);
        uint256 index = seatIndexOf(id, 0, members[0]);
        vm.prank(members[0]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditDeliveryPending.selector, id, 0, deadline, deadline));
        audit.claimUndelivered(id, 0, index);
    }

    function test_M3_aLateDeliveryDoesNotCount() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        toDeliveryDeadline(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.EnvelopesDelivered(id, 0, 0, false);
        publish(id, 0, 0, envelopes(members.length, "late"));
        assertFalse(audit.segment(id, 0).delivered);
        claim(members[0], id, 0);
        assertEq(audit.claimable(members[0]), R);
    }

    function test_M3_onlyTheSeatsUncommittedAuditorClaimsOnce() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        commitAs(members[1], id, 0, true);
        toDeliveryDeadline(id, 0);
        uint256 index0 = seatIndexOf(id, 0, members[0]);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, stranger));
        audit.claimUndelivered(id, 0, index0);
        // Another member cannot claim someone else's seat either.
        vm.prank(members[2]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, members[2]));
        audit.claimUndelivered(id, 0, index0);
        // A seat that committed saw enough to vote.
        uint256 index1 = seatIndexOf(id, 0, members[1]);
        vm.prank(members[1]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatCommitted.selector, id, 0, index1));
        audit.claimUndelivered(id, 0, index1);
        claim(members[0], id, 0);
        vm.prank(members[0]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatCommitted.selector, id, 0, index0));
        audit.claimUndelivered(id, 0, index0);
        assertEq(audit.claimable(members[0]), R, "paid once");
    }

    /// @dev The provider's own seat votes without envelopes (it knows the content) while honest
    ///      seats cannot: the claims still weigh against Pass, so its one seat cannot pass the
    ///      segment, and the round does not escalate.
    function test_M3_withholdingCannotHandTheDecisionToTheProvidersSeat() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        address accomplice = members[0];
        commitAs(accomplice, id, 0, true);
        toDeliveryDeadline(id, 0);
        claim(members[1], id, 0);
        claim(members[2], id, 0);
        toCommitEnd(id, 0);
        revealAs(accomplice, id, 0, true);
        toRevealEnd(id, 0);
        assertFalse(audit.finalizeSegment(id, 0));
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(registry.auditor(accomplice).locked, 0, "released, as every seat of an undecided round");
    }

    /// @dev A minority of claims does not stop an escalation, and each round needs its own delivery.
    function test_M3_eachRoundNeedsItsOwnDelivery() public {
        uint256 id = openSingle(1);
        splitRound0(id);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw), "escalated");
        assertFalse(g.delivered, "round 1 is not delivered by round 0's envelopes");
        address[] memory round1 = drawSegment(id, 0);
        assertEq(round1.length, 7);
        toDeliveryDeadline(id, 0);
        claim(round1[0], id, 0);
        assertTrue(audit.seat(id, 0, 1, seatIndexOf(id, 0, round1[0])).undelivered);
    }

    function test_M3_compensationNeverExceedsTheFee() public {
        // A fee of exactly the minimum for 3 seats covers 3 claims of R with room to spare
        // (R / 0.7 per seat); drain it with claims over two rounds of an escalated segment.
        uint256 id = openSingle(1);
        uint256 fee = audit.session(id).feeWei;
        splitRound0(id);
        address[] memory round1 = drawSegment(id, 0);
        toDeliveryDeadline(id, 0);
        uint256 paid = 0;
        for (uint256 i; i < round1.length; ++i) {
            claim(round1[i], id, 0);
            paid += audit.claimable(round1[i]);
        }
        assertEq(paid, fee, "claims took the whole fee and not a wei more");
        assertEq(audit.session(id).feeWei, 0);
    }

    function test_M3_onlySegmentKeysRecordsDeliveries() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vm.prank(provider);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSegmentKeys.selector, provider));
        audit.recordDelivery(id, 0, 0);
    }

    function test_M3_setSegmentKeysIsOwnerOnly() public {
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSignature("OwnableUnauthorizedAccount(address)", stranger));
        audit.setSegmentKeys(stranger);
        vm.expectRevert(ITRUSTAudit.AuditZeroAddress.selector);
        audit.setSegmentKeys(address(0));
        assertEq(audit.segmentKeys(), address(keys));
    }

    /// @dev A seat of three draws that was not delivered is compensated R per draw and released:
    ///      withholding from one member costs the provider as much as from three.
    function test_M3_aSeatOfSeveralDrawsIsCompensatedPerDraw() public {
        (address big, uint256 id) = soleMemberOfThreeDraws();
        uint256 feeBefore = audit.session(id).feeWei;
        toDeliveryDeadline(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SeatUndelivered(id, 0, 0, 0, big, 3 * R);
        claim(big, id, 0);
        assertEq(audit.claimable(big), 3 * R, "R per draw");
        assertEq(audit.session(id).feeWei, feeBefore - 3 * R);
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(big);
        assertEq(info.locked, 0, "all three draws' P released");
        assertEq(info.stake, 3 * PENALTY, "nothing forfeited");
        audit.finalizeSegment(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined), "no escalation");
    }

    /// @dev Delivered and silent, the same seat forfeits P per draw.
    function test_M3_aSilentSeatOfSeveralDrawsForfeitsPPerDraw() public {
        (address big, uint256 id) = soleMemberOfThreeDraws();
        publish(id, 0, 0, envelopes(1, "delivered"));
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, big, 3 * PENALTY);
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(big).stake, 0, "3P forfeited");
        assertEq(registry.auditor(big).locked, 0);
        assertEq(registry.claimableTokens(insurance), 3 * PENALTY);
    }
}
