// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../src/types/Params.sol";

/// @notice `settleSegment`: a round settled in bounded steps (issue M4) ends exactly as it does in
///         one go (same stakes, locks, reputations, credits, verdict and events but the progress
///         ones), whether it is decided, escalates, or ends abandoned; its list cannot change once
///         a step is settled; and the cursor never runs past the list.
contract TRUSTAuditSettleTest is TRUSTAuditBase {
    address[] internal everyone;

    function setUp() public override {
        super.setUp();
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 9; // 9 -> 19 -> 39 draws
        p.minStakeTier2 = p.minStakeTier1;
        p.minStakeTier3 = p.minStakeTier1;
        applyParams(p);
        for (uint8 tier = 1; tier <= 3; ++tier) {
            address[] memory added = addAuditors(string.concat("t", vm.toString(tier), "-"), tier, 24, 400e18);
            for (uint256 i; i < added.length; ++i) {
                everyone.push(added[i]);
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    /// @dev A split round: each voting seat takes the side with less weight so far (`first` on a
    ///      tie), so neither side reaches tau (0.66) and the round escalates; every
    ///      `silentEvery`-th seat (from seat 1) stays silent. Commits, reveals, and warps past the
    ///      reveal deadline.
    function vote(uint256 id, bool first, uint256 silentEvery) internal {
        address[] memory members = audit.committee(id, 0);
        uint8 round = audit.segment(id, 0).round;
        bool[] memory votes = new bool[](members.length);
        uint256 firstWeight = 0;
        uint256 otherWeight = 0;
        for (uint256 i; i < members.length; ++i) {
            if (silentEvery != 0 && i % silentEvery == 1) continue;
            uint256 w = audit.seat(id, 0, round, i).weight;
            votes[i] = firstWeight <= otherWeight ? first : !first;
            if (votes[i] == first) firstWeight += w;
            else otherWeight += w;
            commitAs(members[i], id, 0, votes[i]);
        }
        toCommitEnd(id, 0);
        for (uint256 i; i < members.length; ++i) {
            if (silentEvery != 0 && i % silentEvery == 1) continue;
            revealAs(members[i], id, 0, votes[i]);
        }
        toRevealEnd(id, 0);
    }

    /// @dev Every seat but every `silentEvery`-th votes Pass (a decided round).
    function votePass(uint256 id, uint256 silentEvery) internal {
        address[] memory members = audit.committee(id, 0);
        for (uint256 i; i < members.length; ++i) {
            if (i % silentEvery == 1) continue;
            commitAs(members[i], id, 0, true);
        }
        toCommitEnd(id, 0);
        for (uint256 i; i < members.length; ++i) {
            if (i % silentEvery == 1) continue;
            revealAs(members[i], id, 0, true);
        }
        toRevealEnd(id, 0);
    }

    /// @dev Everything settlement can change: every auditor's stake, lock, reputation and credit,
    ///      the segment and the session.
    function state(uint256 id) internal view returns (bytes32) {
        bytes memory out = abi.encode(audit.segment(id, 0), audit.session(id), audit.claimable(address(this)));
        for (uint256 i; i < everyone.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = registry.auditor(everyone[i]);
            out = abi.encode(out, a.stake, a.locked, a.reputationWad, audit.claimable(everyone[i]));
        }
        return keccak256(out);
    }

    /// @dev The recorded logs without `SegmentSettlementProgress`, each hashed, hashed as a
    ///      sorted list: steps interleave the registry's events with `AuditorSlashed` per step,
    ///      where one go emits the registry's first, so only the set of events is compared.
    function logsDigest() internal returns (bytes32 digest, uint256 progress) {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bytes32[] memory hashes = new bytes32[](logs.length);
        uint256 n = 0;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].topics[0] == ITRUSTAudit.SegmentSettlementProgress.selector) {
                ++progress;
                continue;
            }
            bytes32 h = keccak256(abi.encode(logs[i].emitter, logs[i].topics, logs[i].data));
            uint256 j = n++;
            for (; j > 0 && hashes[j - 1] > h; --j) {
                hashes[j] = hashes[j - 1];
            }
            hashes[j] = h;
        }
        assembly ("memory-safe") {
            mstore(hashes, n)
        }
        digest = keccak256(abi.encode(hashes));
    }

    /// @dev Ends the round in one go and in steps of `chunk` (from the same state) and asserts the
    ///      same outcome; leaves the chain as the steps left it. Returns the steps taken.
    function assertStepsMatchOneGo(uint256 id, uint256 chunk) internal returns (uint256 steps) {
        uint256 snapshot = vm.snapshotState();
        vm.recordLogs();
        audit.finalizeSegment(id, 0);
        (bytes32 oneGoLogs, uint256 oneGoProgress) = logsDigest();
        bytes32 oneGo = state(id);
        vm.revertToState(snapshot);

        vm.recordLogs();
        bool done = false;
        while (!done) {
            done = audit.settleSegment(id, 0, chunk);
            ++steps;
        }
        (bytes32 stepLogs, uint256 progress) = logsDigest();
        assertEq(oneGoProgress, 0, "no progress event in one go");
        assertEq(progress, steps, "one progress event per step");
        assertEq(stepLogs, oneGoLogs, "the same events");
        assertEq(state(id), oneGo, "the same balances, locks, reputations, credits and verdict");
    }

    // ------------------------------------------------------------------ equivalence

    function test_settleSegment_decidedRound_matchesOneGo() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        votePass(id, 4); // some seats silent: forfeits
        uint256 steps = assertStepsMatchOneGo(id, 2);
        assertGt(steps, 1, "several steps");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
    }

    /// @dev Three rounds: two split ones escalate (their silent seats settled in steps), the third
    ///      decides, and its list (its seats and both earlier rounds' revealed ones) is settled in
    ///      steps of 3.
    function test_settleSegment_escalatedRounds_matchOneGo() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vote(id, true, 3);
        assertStepsMatchOneGo(id, 1);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw), "escalated");
        drawSegment(id, 0);
        vote(id, false, 3);
        assertStepsMatchOneGo(id, 2);
        assertEq(audit.segment(id, 0).round, 2, "escalated twice");
        drawSegment(id, 0);
        votePass(id, 5);
        assertGt(assertStepsMatchOneGo(id, 3), 5, "the deciding list spans many steps");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        for (uint256 i; i < everyone.length; ++i) {
            assertEq(registry.auditor(everyone[i]).locked, 0, "every seat of every round settled");
        }
    }

    /// @dev Rounds settled in steps, then the third round's tier cannot seat its committee: the
    ///      abandoning draw releases the earlier rounds' revealed seats as after rounds ended in
    ///      one go. (The abandon settles in the draw's transaction; `validate` bounds its gas.)
    function test_settleSegment_abandonedSegment_matchesOneGo() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vote(id, true, 3);
        uint256 snapshot = vm.snapshotState();
        bytes32 oneGo = abandonAfterRoundTwo(id, false);
        vm.revertToState(snapshot);
        bytes32 stepped = abandonAfterRoundTwo(id, true);
        assertEq(stepped, oneGo, "the same state after the abandon");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        for (uint256 i; i < everyone.length; ++i) {
            assertEq(registry.auditor(everyone[i]).locked, 0, "every earlier seat released");
        }
    }

    function abandonAfterRoundTwo(uint256 id, bool inSteps) internal returns (bytes32) {
        settle(id, inSteps);
        drawSegment(id, 0);
        vote(id, false, 3);
        settle(id, inSteps);
        // Tier 3 leaves: its 24 members go unavailable, so the third round's draws all fail.
        for (uint256 i = 48; i < 72; ++i) {
            vm.prank(everyone[i]);
            registry.setAvailable(false);
        }
        for (uint256 attempt; attempt < 3; ++attempt) {
            rollPastRandomness(id, 0);
            audit.assignAuditors(id, 0);
        }
        return state(id);
    }

    function settle(uint256 id, bool inSteps) internal {
        if (!inSteps) {
            audit.finalizeSegment(id, 0);
            return;
        }
        while (!audit.settleSegment(id, 0, 1)) {}
    }

    // ------------------------------------------------------------------ the cursor

    function test_settleSegment_stepsOfOne_countEveryEntryOnce() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        votePass(id, 4);
        uint256 seats = audit.segment(id, 0).seatCount;
        (uint256 settled, uint256 total) = audit.settlementProgress(id, 0);
        assertEq(settled, 0);
        assertEq(total, seats);
        vm.recordLogs();
        uint256 steps = 0;
        while (!audit.settleSegment(id, 0, 1)) {
            ++steps;
            (settled, total) = audit.settlementProgress(id, 0);
            assertEq(settled, steps, "the view follows the cursor");
            assertEq(total, seats);
        }
        (settled, total) = audit.settlementProgress(id, 0);
        assertEq(settled + total, 0, "nothing once the segment is final");
        ++steps;
        assertEq(steps, seats, "one entry per step: the list is the round's seats");
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 expected = 0;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].topics[0] != ITRUSTAudit.SegmentSettlementProgress.selector) continue;
            (uint8 round, uint256 settled, uint256 total) = abi.decode(logs[i].data, (uint8, uint256, uint256));
            assertEq(round, 0);
            assertEq(settled, ++expected, "the cursor moves by one");
            assertEq(total, seats);
        }
        assertEq(expected, seats);
    }

    function test_settleSegment_aLargeMaxSeats_settlesWhatRemains() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        votePass(id, 4);
        assertFalse(audit.settleSegment(id, 0, 2));
        assertTrue(audit.settleSegment(id, 0, type(uint256).max - 1), "the rest, not past the end");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
    }

    function test_settleSegment_anEmptyList_endsInOneStep() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vote(id, true, 0); // every seat revealed, split: escalates with no silent seat to settle
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentSettlementProgress(id, 0, 0, 0, 0);
        assertTrue(audit.settleSegment(id, 0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
    }

    function test_settleSegment_revertsForZeroMaxSeats() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        votePass(id, 4);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroMaxSeats.selector, id, 0));
        audit.settleSegment(id, 0, 0);
    }

    function test_settleSegment_revertsBeforeTheVotingEnds() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditVotingNotOver.selector, id, 0, block.timestamp, g.revealDeadline)
        );
        audit.settleSegment(id, 0, 1);
    }

    // ------------------------------------------------------------------ already final

    function test_settleSegment_revertsWhenFinal_butTheBatchSkipsIt() public {
        uint256 id = openSession(uniformSegments(2, 1));
        drawAll(id);
        for (uint256 s; s < 2; ++s) {
            commitAll(id, s, true);
        }
        toLatestCommitEnd(id);
        for (uint256 s; s < 2; ++s) {
            revealAll(id, s, true);
        }
        toLatestRevealEnd(id);
        assertFalse(audit.settleSegment(id, 1, 1), "segment 1 half settled");
        while (!audit.settleSegment(id, 0, 1)) {}
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 0, ITRUSTAudit.SegmentStatus.Passed
            )
        );
        audit.settleSegment(id, 0, 1);
        // The batch skips segment 0 and settles what remains of segment 1.
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentSettlementProgress(
            id, 1, 0, audit.segment(id, 1).seatCount, audit.segment(id, 1).seatCount
        );
        audit.finalizeSegments(id, ids(0, 1));
        assertEq(audit.session(id).finalizedCount, 2);
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
    }

    // ------------------------------------------------------------------ the list is frozen

    /// @dev Past the reveal deadline a silent seat may still claim it got no key envelope, which
    ///      would take it out of the list (and count against escalation, M3): allowed before the
    ///      first step, refused after it. A reveal is refused too (its window is over).
    function test_settleSegment_freezesTheList() public {
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        votePass(id, 4); // seat 1 stays silent and uncommitted
        uint256 snapshot = vm.snapshotState();
        vm.prank(members[1]);
        audit.claimUndelivered(id, 0, 1); // allowed before any step
        vm.revertToState(snapshot);

        assertFalse(audit.settleSegment(id, 0, 1));
        vm.prank(members[1]);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSettlementStarted.selector, id, 0));
        audit.claimUndelivered(id, 0, 1);
        vm.prank(members[1]);
        vm.expectPartialRevert(ITRUSTAudit.AuditOutsideRevealWindow.selector);
        audit.revealVote(id, 0, true, saltFor(members[1], id, 0, 0));
    }
}
