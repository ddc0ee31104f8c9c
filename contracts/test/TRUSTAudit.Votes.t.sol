// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {CommitteeUnitsBase} from "./CommitteeUnitsBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

/// @notice Commit-reveal voting (paper section 3.2.1): who may commit and reveal, the two windows, and
///         commitments that bind the auditor, the segment and the round as well as the vote.
contract TRUSTAuditVotesTest is CommitteeUnitsBase {
    address internal a;
    address internal b;
    address internal c;
    address internal outsider; // a registered auditor of another tier, seated nowhere
    address internal stranger = makeAddr("stranger");

    uint256 internal id;
    uint48 internal commitDeadline;
    uint48 internal revealDeadline;

    function setUp() public override {
        super.setUp();
        // Exactly three tier-1 auditors whose stake backs one unit of P and not two (stake < 2P):
        // committees are drawn with replacement (issue L2), and a member drawn twice cannot back
        // the second unit, so every tier-1 committee (k = 3 draws) seats all three, one unit each,
        // which the voting rules below are written against. Segments are drawn one at a time, each
        // member restaking what its seat locked in between, so segment 1 seats all three as well.
        // Seats weighing several units have their own tests at the end.
        applyParams(oneUnitParams());
        address[] memory pool = addAuditors("t1-", 1, 3, ONE_UNIT_STAKE);
        (a, b, c) = (pool[0], pool[1], pool[2]);
        outsider = addAuditor("outsider", 2, 2_000e18);
        id = openSession(uniformSegments(2, 1));
        drawRestoringOneUnit(id, ids(0, 1));
        commitDeadline = audit.segment(id, 0).commitDeadline;
        revealDeadline = audit.segment(id, 0).revealDeadline;
    }

    function commitWith(address auditor, uint256 segmentId, bool vote, bytes32 salt) internal returns (bytes32 commitment) {
        commitment = audit.commitmentOf(id, segmentId, audit.segment(id, segmentId).round, auditor, vote, salt);
        vm.prank(auditor);
        audit.commitVote(id, segmentId, commitment);
    }

    function revealWith(address auditor, uint256 segmentId, bool vote, bytes32 salt) internal {
        vm.prank(auditor);
        audit.revealVote(id, segmentId, vote, salt);
    }

    function toRevealWindow() internal {
        vm.warp(uint256(commitDeadline) + 1);
    }

    function mismatch(uint256 segmentId, address auditor) internal view returns (bytes memory) {
        return abi.encodeWithSelector(ITRUSTAudit.AuditCommitmentMismatch.selector, id, segmentId, auditor);
    }

    // ------------------------------------------------------------------ commitVote

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_commitVote_recordsCommitment() public {
        bytes32 commitment = audit.commitmentOf(id, 0, 0, a, true, "salt");
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteCommitted(id, 0, 0, a);
        vm.prank(a);
        audit.commitVote(id, 0, commitment);
        vm.snapshotGasLastCall("TRUSTAudit", "commitVote");

        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, seatIndexOf(id, 0, a));
        assertTrue(st.committed);
        assertFalse(st.revealed);
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, b)).committed);
        assertFalse(audit.seat(id, 1, 0, seatIndexOf(id, 1, a)).committed, "other segment untouched");
    }

    function test_commitVote_revertsWhenNotSeated() public {
        bytes32 commitment = audit.commitmentOf(id, 0, 0, outsider, true, "salt");
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, outsider));
        vm.prank(outsider);
        audit.commitVote(id, 0, commitment);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, stranger));
        vm.prank(stranger);
        audit.commitVote(id, 0, commitment);
    }

    function test_commitVote_acceptsUntilTheCommitDeadline() public {
        vm.warp(commitDeadline);
        commitWith(a, 0, true, "salt");
        assertTrue(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).committed);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
    }

    function test_commitVote_revertsAfterTheCommitWindow() public {
        vm.warp(uint256(commitDeadline) + 1);
        bytes32 commitment = audit.commitmentOf(id, 0, 0, a, true, "salt");
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, uint256(commitDeadline) + 1, commitDeadline
            )
        );
        vm.prank(a);
        audit.commitVote(id, 0, commitment);
    }

    function test_commitVote_revertsOnZeroCommitment() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroCommitment.selector));
        vm.prank(a);
        audit.commitVote(id, 0, bytes32(0));
    }

    function test_commitVote_revertsBeforeTheDraw() public {
        uint256 id2 = openSingle(1);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id2, 0, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
        vm.prank(a);
        audit.commitVote(id2, 0, keccak256("x"));
    }

    function test_commitVote_revertsOnUnknownSessionOrSegment() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 9));
        vm.prank(a);
        audit.commitVote(9, 0, keccak256("x"));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSegment.selector, id, 2));
        vm.prank(a);
        audit.commitVote(id, 2, keccak256("x"));
    }

    function test_commitVote_lastCommitmentInTheWindowIsTheOneRevealed() public {
        commitWith(a, 0, true, "first");
        vm.warp(commitDeadline);
        commitWith(a, 0, false, "second");
        toRevealWindow();

        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, true, "first");
        revealWith(a, 0, false, "second");
        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, seatIndexOf(id, 0, a));
        assertTrue(st.revealed);
        assertFalse(st.vote);
    }

    // ------------------------------------------------------------------ revealVote

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_revealVote_recordsVote() public {
        commitWith(a, 0, true, "salt");
        toRevealWindow();
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteRevealed(id, 0, 0, a, true);
        revealWith(a, 0, true, "salt");
        vm.snapshotGasLastCall("TRUSTAudit", "revealVote");

        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, seatIndexOf(id, 0, a));
        assertTrue(st.committed);
        assertTrue(st.revealed);
        assertTrue(st.vote);
        assertEq(audit.segment(id, 0).revealedCount, 1);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
    }

    function test_revealVote_recordsAFailVote() public {
        commitWith(b, 0, false, bytes32(0)); // a zero salt is a salt like any other
        toRevealWindow();
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteRevealed(id, 0, 0, b, false);
        revealWith(b, 0, false, bytes32(0));
        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, seatIndexOf(id, 0, b));
        assertTrue(st.revealed);
        assertFalse(st.vote);
    }

    function test_revealVote_revertsDuringTheCommitWindow() public {
        commitWith(a, 0, true, "salt");
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector, id, 0, block.timestamp, commitDeadline, revealDeadline
            )
        );
        revealWith(a, 0, true, "salt");

        // The commit deadline itself still belongs to the commit window.
        vm.warp(commitDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector, id, 0, commitDeadline, commitDeadline, revealDeadline
            )
        );
        revealWith(a, 0, true, "salt");
    }

    function test_revealVote_acceptsAtTheRevealDeadline() public {
        commitWith(a, 0, true, "salt");
        vm.warp(revealDeadline);
        revealWith(a, 0, true, "salt");
        assertTrue(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).revealed);
    }

    function test_revealVote_revertsAfterTheRevealWindow() public {
        commitWith(a, 0, true, "salt");
        vm.warp(uint256(revealDeadline) + 1);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector,
                id,
                0,
                uint256(revealDeadline) + 1,
                commitDeadline,
                revealDeadline
            )
        );
        revealWith(a, 0, true, "salt");
    }

    function test_revealVote_revertsWithoutCommitment() public {
        toRevealWindow();
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNoCommitment.selector, id, 0, b));
        revealWith(b, 0, true, "salt");
    }

    function test_revealVote_revertsWhenRevealedTwice() public {
        commitWith(a, 0, true, "salt");
        toRevealWindow();
        revealWith(a, 0, true, "salt");
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditAlreadyRevealed.selector, id, 0, a));
        revealWith(a, 0, true, "salt");
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditAlreadyRevealed.selector, id, 0, a));
        revealWith(a, 0, false, "salt");
        assertEq(audit.segment(id, 0).revealedCount, 1);
    }

    function test_revealVote_revertsOnWrongSalt() public {
        commitWith(a, 0, true, "salt");
        toRevealWindow();
        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, true, "pepper");
    }

    function test_revealVote_revertsOnWrongVote() public {
        commitWith(a, 0, true, "salt");
        toRevealWindow();
        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, false, "salt");
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).revealed);
    }

    function test_revealVote_revertsWhenNotSeated() public {
        toRevealWindow();
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, outsider));
        vm.prank(outsider);
        audit.revealVote(id, 0, true, "salt");
    }

    /// @notice The herding attack of section 3.2.1 with a (vote, salt)-only hash: B copies A's
    ///         commitment, waits for A's reveal, and replays A's (vote, salt). The commitment binds
    ///         the auditor, so the copy opens for A only.
    function test_revealVote_copiedCommitmentCannotBeRevealedByTheCopier() public {
        bytes32 commitmentA = commitWith(a, 0, true, "a's salt");
        vm.prank(b);
        audit.commitVote(id, 0, commitmentA); // accepted: a commitment is opaque
        toRevealWindow();
        revealWith(a, 0, true, "a's salt");

        vm.expectRevert(mismatch(0, b));
        revealWith(b, 0, true, "a's salt");
        vm.expectRevert(mismatch(0, b));
        revealWith(b, 0, false, "a's salt");
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, b)).revealed);
    }

    function test_revealVote_commitmentForAnotherSegmentDoesNotOpen() public {
        // A commits on segment 1 the commitment it computed for segment 0.
        bytes32 forSegment0 = audit.commitmentOf(id, 0, 0, a, true, "salt");
        vm.prank(a);
        audit.commitVote(id, 1, forSegment0);
        toRevealWindow();
        vm.expectRevert(mismatch(1, a));
        revealWith(a, 1, true, "salt");
    }

    function test_revealVote_everySeatRevealedMakesTheSegmentFinalizable() public {
        commitWith(a, 0, true, "sa");
        commitWith(b, 0, true, "sb");
        commitWith(c, 0, false, "sc"); // the last seat: the commit window closes
        revealWith(a, 0, true, "sa");
        revealWith(b, 0, true, "sb");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        revealWith(c, 0, false, "sc");
        assertEq(audit.segment(id, 0).revealedCount, 3);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        assertLt(block.timestamp, audit.segment(id, 0).revealDeadline);
    }

    // ------------------------------------------------------------------ commitVotes

    function seatCommit(uint256 segmentId, uint256 seatIndex, bytes32 commitment)
        internal
        view
        returns (ITRUSTAudit.SeatCommit memory)
    {
        return ITRUSTAudit.SeatCommit({sessionId: id, segmentId: segmentId, seatIndex: seatIndex, commitment: commitment});
    }

    function seatReveal(uint256 segmentId, uint256 seatIndex, bool vote, bytes32 salt)
        internal
        view
        returns (ITRUSTAudit.SeatReveal memory)
    {
        return ITRUSTAudit.SeatReveal({sessionId: id, segmentId: segmentId, seatIndex: seatIndex, vote: vote, salt: salt});
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_commitVotes_commitsSeveralSeats() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](2);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, a), audit.commitmentOf(id, 0, 0, a, true, "s0"));
        batch[1] = seatCommit(1, seatIndexOf(id, 1, a), audit.commitmentOf(id, 1, 0, a, false, "s1"));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteCommitted(id, 0, 0, a);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteCommitted(id, 1, 0, a);
        vm.prank(a);
        audit.commitVotes(batch);
        vm.snapshotGasLastCall("TRUSTAudit", "commitVotes_2");

        assertTrue(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).committed);
        assertTrue(audit.seat(id, 1, 0, seatIndexOf(id, 1, a)).committed);

        // The batch commitments open with revealVote as well.
        toRevealWindow();
        revealWith(a, 0, true, "s0");
        revealWith(a, 1, false, "s1");
        assertTrue(audit.seat(id, 1, 0, seatIndexOf(id, 1, a)).revealed);
    }

    function test_commitVotes_revertsOnAnotherAuditorsSeatIndex() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](2);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, a), audit.commitmentOf(id, 0, 0, a, true, "s0"));
        batch[1] = seatCommit(1, seatIndexOf(id, 1, b), audit.commitmentOf(id, 1, 0, a, true, "s1"));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 1, a));
        vm.prank(a);
        audit.commitVotes(batch);
        // All or nothing: the first seat was not committed either.
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).committed);
        assertFalse(audit.seat(id, 1, 0, seatIndexOf(id, 1, b)).committed);
    }

    function test_commitVotes_revertsOnSeatIndexPastTheCommittee() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = seatCommit(0, 3, keccak256("x"));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, a));
        vm.prank(a);
        audit.commitVotes(batch);

        batch[0] = seatCommit(0, type(uint256).max, keccak256("x"));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, a));
        vm.prank(a);
        audit.commitVotes(batch);
    }

    function test_commitVotes_revertsOnZeroCommitment() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, a), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroCommitment.selector));
        vm.prank(a);
        audit.commitVotes(batch);
    }

    function test_commitVotes_revertsAfterTheCommitWindow() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, a), keccak256("x"));
        toRevealWindow();
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, uint256(commitDeadline) + 1, commitDeadline
            )
        );
        vm.prank(a);
        audit.commitVotes(batch);
    }

    function test_commitVotes_revertsOnUnknownSession() public {
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = ITRUSTAudit.SeatCommit({sessionId: 4, segmentId: 0, seatIndex: 0, commitment: keccak256("x")});
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 4));
        vm.prank(a);
        audit.commitVotes(batch);
    }

    // ------------------------------------------------------------------ revealVotes

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_revealVotes_revealsSeveralSeats() public {
        commitWith(a, 0, true, "s0");
        commitWith(a, 1, false, "s1");
        toRevealWindow();
        ITRUSTAudit.SeatReveal[] memory batch = new ITRUSTAudit.SeatReveal[](2);
        batch[0] = seatReveal(0, seatIndexOf(id, 0, a), true, "s0");
        batch[1] = seatReveal(1, seatIndexOf(id, 1, a), false, "s1");
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteRevealed(id, 0, 0, a, true);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteRevealed(id, 1, 0, a, false);
        vm.prank(a);
        audit.revealVotes(batch);
        vm.snapshotGasLastCall("TRUSTAudit", "revealVotes_2");

        ITRUSTAudit.SeatView memory s0 = audit.seat(id, 0, 0, seatIndexOf(id, 0, a));
        ITRUSTAudit.SeatView memory s1 = audit.seat(id, 1, 0, seatIndexOf(id, 1, a));
        assertTrue(s0.revealed && s0.vote);
        assertTrue(s1.revealed && !s1.vote);
    }

    function test_revealVotes_revertsOnAnotherAuditorsSeatIndex() public {
        commitWith(a, 0, true, "s0");
        commitWith(b, 0, true, "sb");
        toRevealWindow();
        ITRUSTAudit.SeatReveal[] memory batch = new ITRUSTAudit.SeatReveal[](1);
        batch[0] = seatReveal(0, seatIndexOf(id, 0, b), true, "sb"); // B's seat, A's transaction
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, a));
        vm.prank(a);
        audit.revealVotes(batch);
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, b)).revealed);
    }

    function test_revealVotes_revertsAsAWholeOnAMismatch() public {
        commitWith(a, 0, true, "s0");
        commitWith(a, 1, true, "s1");
        toRevealWindow();
        ITRUSTAudit.SeatReveal[] memory batch = new ITRUSTAudit.SeatReveal[](2);
        batch[0] = seatReveal(0, seatIndexOf(id, 0, a), true, "s0");
        batch[1] = seatReveal(1, seatIndexOf(id, 1, a), false, "s1");
        vm.expectRevert(mismatch(1, a));
        vm.prank(a);
        audit.revealVotes(batch);
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).revealed);
    }

    function test_revealVotes_revertsOutsideTheRevealWindow() public {
        commitWith(a, 0, true, "s0");
        ITRUSTAudit.SeatReveal[] memory batch = new ITRUSTAudit.SeatReveal[](1);
        batch[0] = seatReveal(0, seatIndexOf(id, 0, a), true, "s0");
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector, id, 0, block.timestamp, commitDeadline, revealDeadline
            )
        );
        vm.prank(a);
        audit.revealVotes(batch);
    }

    // ------------------------------------------------------------------ early close

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_commitVote_lastFirstCommitClosesTheWindow() public {
        commitWith(a, 0, true, "sa");
        commitWith(b, 0, true, "sb");
        assertEq(audit.segment(id, 0).commitDeadline, commitDeadline, "two seats of three: still open");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));

        vm.warp(block.timestamp + 10 minutes);
        bytes32 commitment = audit.commitmentOf(id, 0, 0, c, false, "sc");
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteCommitted(id, 0, 0, c);
        vm.prank(c);
        audit.commitVote(id, 0, commitment);
        vm.snapshotGasLastCall("TRUSTAudit", "commitVote_closesWindow");

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(g.commitDeadline, block.timestamp - 1, "closed in the block of the last first commit");
        assertEq(g.revealDeadline, block.timestamp - 1 + 1 hours, "a full reveal window from the close");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        assertEq(audit.segment(id, 1).commitDeadline, commitDeadline, "the other segment's window is its own");

        // Every seat reveals in the block of the last commit.
        revealWith(a, 0, true, "sa");
        revealWith(b, 0, true, "sb");
        revealWith(c, 0, false, "sc");
        assertEq(audit.segment(id, 0).revealedCount, 3);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
    }

    function test_commitVote_refusedOnceEverySeatCommitted() public {
        commitWith(a, 0, true, "sa");
        commitWith(b, 0, true, "sb");
        commitWith(c, 0, true, "sc");
        uint256 closedAt = block.timestamp - 1;

        // No commitment can change any more: not singly, not in a batch.
        bytes32 changed = audit.commitmentOf(id, 0, 0, a, false, "sa");
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, block.timestamp, closedAt)
        );
        vm.prank(a);
        audit.commitVote(id, 0, changed);
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, a), changed);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, block.timestamp, closedAt)
        );
        vm.prank(a);
        audit.commitVotes(batch);

        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, false, "sa");
        revealWith(a, 0, true, "sa"); // the commitment made before the close opens
        assertTrue(audit.seat(id, 0, 0, seatIndexOf(id, 0, a)).vote);
    }

    function test_commitVote_recommitsCountEachSeatOnce() public {
        commitWith(a, 0, true, "first");
        commitWith(a, 0, false, "second");
        commitWith(b, 0, true, "sb");
        commitWith(b, 0, true, "sb again");
        commitWith(a, 0, true, "third");
        assertEq(audit.segment(id, 0).commitDeadline, commitDeadline, "c has not committed: still open");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));

        commitWith(c, 0, false, "sc");
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1);
        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, false, "second");
        revealWith(a, 0, true, "third"); // the latest commitment is the one revealed
    }

    function test_commitVote_partialCommitteeWaitsForTheDeadline() public {
        commitWith(a, 0, true, "sa");
        commitWith(b, 0, false, "sb"); // c stays silent
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector, id, 0, block.timestamp, commitDeadline, revealDeadline
            )
        );
        revealWith(a, 0, true, "sa");

        vm.warp(commitDeadline);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideRevealWindow.selector, id, 0, commitDeadline, commitDeadline, revealDeadline
            )
        );
        revealWith(a, 0, true, "sa");

        toRevealWindow();
        revealWith(a, 0, true, "sa");
        revealWith(b, 0, false, "sb");
        assertEq(audit.segment(id, 0).commitDeadline, commitDeadline, "never moved");
        assertEq(audit.segment(id, 0).revealDeadline, revealDeadline);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        // The silent seat cannot join late.
        bytes32 late = audit.commitmentOf(id, 0, 0, c, true, "sc");
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, uint256(commitDeadline) + 1, commitDeadline
            )
        );
        vm.prank(c);
        audit.commitVote(id, 0, late);
    }

    function test_commitVote_lastCommitAtTheDeadlineClosesTheWindowThere() public {
        commitWith(a, 0, true, "sa");
        commitWith(b, 0, true, "sb");
        vm.warp(commitDeadline);
        commitWith(c, 0, true, "sc");
        assertEq(audit.segment(id, 0).commitDeadline, commitDeadline - 1);
        assertEq(audit.segment(id, 0).revealDeadline, revealDeadline - 1);
        revealWith(c, 0, true, "sc"); // in the same block
        assertTrue(audit.seat(id, 0, 0, seatIndexOf(id, 0, c)).revealed);
    }

    function test_commitVotes_closesEverySegmentItsBatchCompletes() public {
        commitWith(a, 0, true, "a0");
        commitWith(b, 0, true, "b0");
        commitWith(a, 1, false, "a1");
        commitWith(b, 1, false, "b1");
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](2);
        batch[0] = seatCommit(0, seatIndexOf(id, 0, c), audit.commitmentOf(id, 0, 0, c, true, "c0"));
        batch[1] = seatCommit(1, seatIndexOf(id, 1, c), audit.commitmentOf(id, 1, 0, c, false, "c1"));
        vm.prank(c);
        audit.commitVotes(batch);
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1);
        assertEq(audit.segment(id, 1).commitDeadline, block.timestamp - 1);

        ITRUSTAudit.SeatReveal[] memory reveals = new ITRUSTAudit.SeatReveal[](2);
        reveals[0] = seatReveal(0, seatIndexOf(id, 0, c), true, "c0");
        reveals[1] = seatReveal(1, seatIndexOf(id, 1, c), false, "c1");
        vm.prank(c);
        audit.revealVotes(reveals);
        assertTrue(audit.seat(id, 1, 0, seatIndexOf(id, 1, c)).revealed);
    }

    // ------------------------------------------------------------------ fuzz

    /// @notice Any (vote, salt) opens its own commitment, and no other pair does.
    function testFuzz_revealVote_opensOnlyTheCommittedPair(bool vote, bytes32 salt, bool otherVote, bytes32 otherSalt)
        public
    {
        // Keep the other pair distinct without discarding runs.
        if (otherVote == vote && otherSalt == salt) otherSalt = ~salt;
        commitWith(a, 0, vote, salt);
        toRevealWindow();

        vm.expectRevert(mismatch(0, a));
        revealWith(a, 0, otherVote, otherSalt);

        revealWith(a, 0, vote, salt);
        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, seatIndexOf(id, 0, a));
        assertTrue(st.revealed);
        assertEq(st.vote, vote);
    }

    /// @notice At any time, committing succeeds exactly in [draw, commit deadline] and revealing
    ///         exactly in (commit deadline, reveal deadline].
    function testFuzz_windows_partitionTime(uint256 offset) public {
        offset = bound(offset, 0, 3 hours);
        uint256 t = block.timestamp + offset;
        vm.warp(t);
        bytes32 commitment = audit.commitmentOf(id, 0, 0, a, true, "salt");
        vm.prank(a);
        (bool committed,) = address(audit).call(abi.encodeCall(ITRUSTAudit.commitVote, (id, 0, commitment)));
        assertEq(committed, t <= commitDeadline);

        // B committed at the draw; can it reveal now?
        vm.warp(block.timestamp - offset);
        commitWith(b, 0, false, "b");
        vm.warp(t);
        vm.prank(b);
        (bool revealed,) = address(audit).call(abi.encodeCall(ITRUSTAudit.revealVote, (id, 0, false, "b")));
        assertEq(revealed, t > commitDeadline && t <= revealDeadline);
    }

    /// @notice Seats commit in any order, at any times in the window, any number of times each:
    ///         the window closes exactly when the last seat commits for the first time (its
    ///         deadline becomes that block's time - 1, and every seat may reveal in that block);
    ///         while a seat has not committed, the deadline fixed at the draw stands.
    function testFuzz_commitWindow_closesExactlyWhenEverySeatCommitted(
        uint256 order,
        uint256 delays,
        uint8 mask,
        uint8 recommits
    ) public {
        address[3] memory seats = [a, b, c];
        // A permutation of the three seats from `order`.
        uint256 first = order % 3;
        uint256 second = (first + 1 + (order >> 8) % 2) % 3;
        uint256[3] memory perm = [first, second, 3 - first - second];
        mask = uint8(bound(mask, 0, 7));
        uint256 committers;
        uint256 lastCommit;
        for (uint256 k; k < 3; ++k) {
            address who = seats[perm[k]];
            if ((mask >> perm[k]) & 1 == 0) continue;
            ++committers;
            vm.warp(block.timestamp + (delays >> (16 * k)) % 1_200); // 3 x 1,199 s < the 1 h window
            // A seat that is not the committee's last may change its commitment (the last one's
            // first commit closes the window).
            bool last = mask == 7 && committers == 3;
            if (!last && (recommits >> k) & 1 == 1) commitWith(who, 0, false, "changed my mind");
            commitWith(who, 0, true, bytes32(uint256(uint160(who))));
            lastCommit = block.timestamp;
        }
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        if (mask == 7) {
            assertEq(g.commitDeadline, lastCommit - 1, "closed at the last first commit");
            assertEq(g.revealDeadline, lastCommit - 1 + 1 hours, "a full reveal window from the close");
            for (uint256 i; i < 3; ++i) {
                revealWith(seats[i], 0, true, bytes32(uint256(uint160(seats[i]))));
            }
            assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        } else {
            assertEq(g.commitDeadline, commitDeadline, "a seat has not committed: the draw's deadline");
            assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
            if (mask != 0) {
                address anyCommitted = seats[mask & 1 == 1 ? 0 : mask & 2 == 2 ? 1 : 2];
                vm.prank(anyCommitted);
                (bool revealed,) = address(audit).call(
                    abi.encodeCall(ITRUSTAudit.revealVote, (id, 0, true, bytes32(uint256(uint160(anyCommitted)))))
                );
                assertFalse(revealed, "revealed while a seat could still commit");
            }
        }
    }

    // ------------------------------------------------------------------ abstain

    function test_abstain_closesBothWindowsEarlyAndSettlesAsSilent() public {
        uint256 index = seatIndexOf(id, 0, c);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteAbstained(id, 0, 0, c);
        vm.prank(c);
        audit.abstain(id, 0, index);
        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, index);
        assertTrue(st.abstained);
        assertFalse(st.committed || st.revealed);
        commitWith(a, 0, true, "sa");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit), "b has not acted yet");
        commitWith(b, 0, true, "sb");
        // Every seat committed or abstained: the commit window closed with b's commit.
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1);
        revealWith(a, 0, true, "sa");
        revealWith(b, 0, true, "sb");
        // Every seat revealed or abstained: the round can be finalized at once.
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        uint256 stakeBefore = registry.auditor(c).stake;
        assertTrue(audit.finalizeSegment(id, 0), "a and b hold 2/3 of the weight: passed");
        assertEq(registry.auditor(c).stake, stakeBefore - ONE_UNIT_PENALTY, "abstained: forfeits P as a silent seat");
        assertEq(registry.auditor(c).locked, ONE_UNIT_PENALTY, "only its seat on segment 1 is still locked");
    }

    function test_abstain_onlyAnUncommittedSeatInTheCommitWindow() public {
        uint256 index = seatIndexOf(id, 0, a);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, id, 0, outsider));
        audit.abstain(id, 0, index);
        commitWith(a, 0, true, "sa");
        vm.prank(a);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatCommitted.selector, id, 0, index));
        audit.abstain(id, 0, index);
        uint256 indexB = seatIndexOf(id, 0, b);
        vm.prank(b);
        audit.abstain(id, 0, indexB);
        // Abstaining is final: no commit afterwards, no second abstention.
        bytes32 commitment = audit.commitmentOf(id, 0, 0, b, true, "sb");
        vm.prank(b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatCommitted.selector, id, 0, indexB));
        audit.commitVote(id, 0, commitment);
        vm.prank(b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatCommitted.selector, id, 0, indexB));
        audit.abstain(id, 0, indexB);
        toRevealWindow();
        uint256 indexC = seatIndexOf(id, 0, c);
        vm.prank(c);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditOutsideCommitWindow.selector, id, 0, block.timestamp, commitDeadline
            )
        );
        audit.abstain(id, 0, indexC);
    }

    // ------------------------------------------------------------------ seats of several units

    function test_seatOfTwoUnits_seatCountAndCommitteeAgree() public {
        (uint256 sid, address heavy, address light) = openTwoAndOne();
        assertEq(audit.segment(sid, 0).seatCount, 0, "zero before the draw");
        assertEq(audit.committee(sid, 0).length, 0);
        drawSegment(sid, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(sid, 0);
        assertEq(g.committeeSize, 3, "three draws");
        assertEq(g.seatCount, 2, "two members");
        address[] memory members = assertSeated(sid, 0);
        assertTrue(contains(members, heavy) && contains(members, light));
        assertEq(unitsOf(sid, 0, heavy), 2);
        assertEq(unitsOf(sid, 0, light), 1);
        assertEq(registry.auditor(heavy).locked, 2 * uint256(ONE_UNIT_PENALTY), "a lock per unit");
        assertEq(registry.auditor(light).locked, ONE_UNIT_PENALTY);

        // Seat 2 is below the committee size but past the last member: nobody holds it.
        ITRUSTAudit.SeatCommit[] memory batch = new ITRUSTAudit.SeatCommit[](1);
        batch[0] = ITRUSTAudit.SeatCommit({sessionId: sid, segmentId: 0, seatIndex: 2, commitment: keccak256("x")});
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNotSeated.selector, sid, 0, heavy));
        vm.prank(heavy);
        audit.commitVotes(batch);
    }

    /// @notice The window closes when every seat committed (seatCount), not every draw
    ///         (committeeSize): two commits close a committee of three draws.
    function test_seatOfTwoUnits_windowClosesWhenEverySeatCommitted() public {
        (uint256 sid, address heavy, address light) = openTwoAndOne();
        drawSegment(sid, 0);
        uint48 drawnDeadline = audit.segment(sid, 0).commitDeadline;
        vm.warp(block.timestamp + 5 minutes);
        commitAs(heavy, sid, 0, true);
        assertEq(audit.segment(sid, 0).commitDeadline, drawnDeadline, "light has not committed: still open");
        assertEq(uint8(audit.phase(sid, 0)), uint8(ITRUSTAudit.Phase.Commit));

        commitAs(light, sid, 0, true);
        ITRUSTAudit.SegmentView memory g = audit.segment(sid, 0);
        assertEq(g.commitDeadline, block.timestamp - 1, "closed at the last seat's first commit");
        assertEq(g.revealDeadline, block.timestamp - 1 + 1 hours);
        assertEq(uint8(audit.phase(sid, 0)), uint8(ITRUSTAudit.Phase.Reveal));

        revealAs(heavy, sid, 0, true);
        assertEq(uint8(audit.phase(sid, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        revealAs(light, sid, 0, true);
        assertEq(audit.segment(sid, 0).revealedCount, 2);
        assertEq(uint8(audit.phase(sid, 0)), uint8(ITRUSTAudit.Phase.Finalizable), "every seat revealed");
        assertLt(block.timestamp, audit.segment(sid, 0).revealDeadline);
    }

    /// @notice A seat of two units commits once and reveals once, and its vote weighs 2 of 3:
    ///         alone, at tau 0.66, it passes the segment (the silent seat forfeits its one P).
    function test_seatOfTwoUnits_passesAloneAtTau() public {
        (uint256 sid, address heavy, address light) = openTwoAndOne();
        drawSegment(sid, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteCommitted(sid, 0, 0, heavy);
        commitAs(heavy, sid, 0, true);
        toCommitEnd(sid, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.VoteRevealed(sid, 0, 0, heavy, true);
        revealAs(heavy, sid, 0, true);
        assertEq(audit.segment(sid, 0).revealedCount, 1, "one reveal for two units");
        bytes32 salt = saltFor(heavy, sid, 0, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditAlreadyRevealed.selector, sid, 0, heavy));
        vm.prank(heavy);
        audit.revealVote(sid, 0, true, salt);

        toRevealEnd(sid, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(sid, 0, true);
        assertTrue(audit.finalizeSegment(sid, 0), "2 of 3 units >= tau 0.66");
        assertEq(uint8(audit.segment(sid, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(audit.session(sid).alignedSeats, 2, "aligned units");
        assertEq(registry.auditor(heavy).locked, 0);
        assertEq(registry.auditor(heavy).stake, TWO_UNIT_STAKE, "aligned: nothing forfeited");
        assertEq(registry.auditor(light).locked, 0);
        assertEq(registry.auditor(light).stake, ONE_UNIT_STAKE - ONE_UNIT_PENALTY, "silent: one unit forfeited");
    }

    /// @notice One against one by heads, two against one by units: the seat of two decides (a
    ///         count of seats would leave the round undecided and escalate it).
    function test_seatOfTwoUnits_outweighsASeatOfOne() public {
        (uint256 sid, address heavy, address light) = openTwoAndOne();
        drawSegment(sid, 0);
        castVotes(sid, 0, addrs(heavy, light), bools(false, true));
        assertEq(uint8(audit.phase(sid, 0)), uint8(ITRUSTAudit.Phase.Finalizable), "both seats revealed");
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(sid, 0, false);
        assertFalse(audit.finalizeSegment(sid, 0));
        ITRUSTAudit.SegmentView memory g = audit.segment(sid, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Failed), "decided, not escalated");
        assertEq(g.round, 0);
        assertEq(audit.session(sid).alignedSeats, 2);
    }
}
