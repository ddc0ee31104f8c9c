// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Committee draws: randomness timing, committee size and membership (eq. 3.2: stake-weighted,
///         of the segment's tier, available, credentialed, never the provider) and seat locks.
contract TRUSTAuditDrawTest is TRUSTAuditBase {
    uint256 internal constant PENALTY = 8e18;

    address internal stranger = makeAddr("stranger");

    function topUp(address auditor, uint256 amount) internal {
        token.transfer(auditor, amount);
        vm.startPrank(auditor);
        token.approve(address(registry), amount);
        registry.stake(amount);
        vm.stopPrank();
    }

    // ------------------------------------------------------------------ randomness timing

    function test_assignAuditors_revertsWhileRandomnessPending() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        assertEq(randomnessBlock, block.number + 2);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, randomnessBlock));
        audit.assignAuditors(id, 0);

        // The randomness block itself is not mined yet while it is the current block.
        vm.roll(randomnessBlock);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, randomnessBlock));
        audit.assignAuditors(id, 0);

        vm.roll(randomnessBlock + 1);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    function test_assignAuditors_refreshesExpiredRandomnessWithoutDrawing() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;

        // BLOCKHASH reaches 256 blocks back: one block more and the value is gone.
        vm.roll(randomnessBlock + 257);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.randomnessBlock, next);
        assertEq(g.commitDeadline, 0);
        assertEq(audit.committee(id, 0).length, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 0);
        }

        // The new block must be mined before the draw.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, next));
        audit.assignAuditors(id, 0);
        vm.roll(next + 1);
        audit.assignAuditors(id, 0);
        assertEq(audit.committee(id, 0).length, 3);
    }

    function test_assignAuditors_drawsAtTheEdgeOfTheBlockhashWindow() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        vm.roll(audit.segment(id, 0).randomnessBlock + 256);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    function test_assignAuditorsBatch_refreshesEveryExpiredSegment() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        vm.roll(audit.session(id).randomnessBlock + 300);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 1, next);
        audit.assignAuditorsBatch(id, ids(0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));

        vm.roll(next + 1);
        audit.assignAuditorsBatch(id, ids(0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    // ------------------------------------------------------------------ committee shape

    function test_assignAuditors_seatsKDistinctAuditorsOfTheSegmentTier() public {
        addAuditors("t1-", 1, 6, 1_000e18);
        addAuditors("t2-", 2, 8, 2_000e18);
        addAuditors("t3-", 3, 8, 20_000e18);
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](3);
        segs[0] = segmentInput(1, 1, false, false, keccak256("s0"));
        segs[1] = segmentInput(2, 1, false, false, keccak256("s1"));
        segs[2] = segmentInput(3, 1, false, false, keccak256("s2"));
        uint256 id = openSession(segs);
        drawAll(id);

        uint8[3] memory k = [3, 5, 5];
        for (uint256 s; s < 3; ++s) {
            address[] memory members = audit.committee(id, s);
            assertEq(members.length, k[s], "committee size k_t");
            assertEq(audit.segment(id, s).committeeSize, k[s]);
            for (uint256 i; i < members.length; ++i) {
                IAuditorRegistry.AuditorInfo memory info = registry.auditor(members[i]);
                assertEq(info.tier, s + 1, "member of the segment's tier");
                for (uint256 j; j < i; ++j) {
                    assertTrue(members[i] != members[j], "members are distinct");
                }
                ITRUSTAudit.SeatView memory st = audit.seat(id, s, 0, i);
                assertEq(st.auditor, members[i]);
                assertEq(st.weight, info.stake, "seat weight is the stake at the draw");
                assertFalse(st.committed);
                assertFalse(st.revealed);
            }
            assertEq(audit.seat(id, s, 0, k[s]).auditor, address(0)); // no seat past the committee
        }
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditors_emitsCommitteeDrawn() public {
        addAuditors("t2-", 2, 7, 2_000e18);
        uint256 id = openSingle(2);
        rollPastRandomness(id, 0);

        // The draw is deterministic given the randomness: learn the committee, then replay.
        uint256 snapshot = vm.snapshotState();
        audit.assignAuditors(id, 0);
        address[] memory members = audit.committee(id, 0);
        vm.revertToState(snapshot);

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeDrawn(
            id, 0, 0, 2, members, uint48(block.timestamp + 1 hours), uint48(block.timestamp + 2 hours)
        );
        audit.assignAuditors(id, 0);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditors_tier2_k5");
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditors_setsDeadlinesAndOpensCommitPhase() public {
        addAuditors("t1-", 1, 4, 1_000e18);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        vm.warp(1_800_000_000);
        audit.assignAuditors(id, 0);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditors_tier1_k3");

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(g.commitDeadline, 1_800_000_000 + 1 hours);
        assertEq(g.revealDeadline, 1_800_000_000 + 2 hours);
        assertEq(g.revealedCount, 0);
        assertEq(g.round, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
    }

    function test_assignAuditors_locksPenaltyPerSeat() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        uint256 eligibleBefore = registry.eligibleStake(1);
        drawAll(id);
        // Exactly three auditors of tier 1: each sits on both committees.
        for (uint256 i; i < pool.length; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(pool[i]);
            assertEq(info.locked, 2 * PENALTY);
            assertEq(info.stake, 1_000e18, "a lock is not a forfeit");
        }
        // Locking does not change the draw weights (stake, not unlocked stake).
        assertEq(registry.eligibleStake(1), eligibleBefore);
    }

    function test_assignAuditors_neverSeatsBeyondUnlockedStake() public {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 1;
        applyParams(p);
        // 100 tokens back 12 seats of 8 (4 tokens stay unlocked, short of a 13th seat).
        address[] memory pool = addAuditors("t1-", 1, 3, 100e18);
        uint256 id = openSession(uniformSegments(37, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        for (uint256 s; s < 36; ++s) {
            audit.assignAuditors(id, s);
        }
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 12 * PENALTY);
        }
        // Locks change no draw weight: all three still count, and the draw skips them instead.
        assertEq(registry.eligibleCount(1), 3);
        assertEq(registry.eligibleStake(1), 300e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 1, 0));
        audit.assignAuditors(id, 36);
    }

    /// @notice A seat weighs its member's stake at the randomness block: a top-up in a later block
    ///         (before the draw) is read out of the weight history, one in the randomness block
    ///         itself counts.
    function test_assignAuditors_seatWeightIsTheStakeAtTheRandomnessBlock() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        vm.roll(randomnessBlock);
        topUp(pool[1], 2_000e18); // in the randomness block: counts
        vm.roll(randomnessBlock + 1);
        topUp(pool[0], 5_000e18); // after it: does not
        audit.assignAuditors(id, 0);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, pool[0])).weight, 1_000e18);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, pool[1])).weight, 3_000e18);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, pool[2])).weight, 1_000e18);
        assertEq(registry.auditor(pool[0]).stake, 6_000e18);
    }

    /// @notice Once the randomness block is mined, nothing the auditors do before the draw (every
    ///         one of them switching off and unstaking down to the minimum) changes any committee
    ///         or seat weight: the same draws, taken with and without the changes, agree.
    function test_assignAuditors_leavingAfterTheRandomnessBlockChangesNoCommittee() public {
        address[] memory pool = new address[](8);
        for (uint256 i; i < pool.length; ++i) {
            pool[i] = addAuditor(string.concat("t1-", vm.toString(i)), 1, (i + 2) * 100e18);
        }
        uint256 id = openSession(uniformSegments(4, 1));
        rollPastRandomness(id, 0);
        uint256 snapshot = vm.snapshotState();
        drawAll(id);
        bytes[4] memory drawn;
        for (uint256 s; s < 4; ++s) {
            drawn[s] = abi.encode(audit.committee(id, s), seatWeights(id, s));
        }
        vm.revertToState(snapshot);

        for (uint256 i; i < pool.length; ++i) {
            vm.startPrank(pool[i]);
            registry.setAvailable(false);
            registry.requestUnstake(registry.stakeOf(pool[i]) - 100e18);
            vm.stopPrank();
        }
        assertEq(registry.eligibleCount(1), 0);
        drawAll(id);
        for (uint256 s; s < 4; ++s) {
            assertEq(abi.encode(audit.committee(id, s), seatWeights(id, s)), drawn[s], "committee changed");
        }
    }

    function seatWeights(uint256 id, uint256 segmentId) internal view returns (uint256[] memory weights) {
        ITRUSTAudit.SegmentView memory g = audit.segment(id, segmentId);
        weights = new uint256[](g.committeeSize);
        for (uint256 i; i < weights.length; ++i) {
            weights[i] = audit.seat(id, segmentId, g.round, i).weight;
        }
    }

    function test_assignAuditors_seatWeightIsFixedAtTheDraw() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        uint256 index = seatIndexOf(id, 0, pool[0]);
        token.transfer(pool[0], 5_000e18);
        vm.startPrank(pool[0]);
        token.approve(address(registry), 5_000e18);
        registry.stake(5_000e18);
        vm.stopPrank();
        assertEq(registry.auditor(pool[0]).stake, 6_000e18);
        assertEq(audit.seat(id, 0, 0, index).weight, 1_000e18);
    }

    function test_assignAuditors_seedsDifferAcrossSegments() public {
        addAuditors("t1-", 1, 8, 1_000e18);
        uint256 id = openSession(uniformSegments(8, 1));
        drawAll(id);
        bytes32 first = keccak256(abi.encode(audit.committee(id, 0)));
        bool differs;
        for (uint256 s = 1; s < 8; ++s) {
            if (keccak256(abi.encode(audit.committee(id, s))) != first) differs = true;
        }
        assertTrue(differs, "every segment drew the same committee");
    }

    // ------------------------------------------------------------------ who is never drawn

    function test_assignAuditors_neverDrawsTheProvider() public {
        // The provider is an auditor too, and by far the largest staker of tier 1.
        address self = addAuditor("provider", 1, 100_000e18);
        assertEq(self, provider);
        address[] memory others = addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(20, 1));
        drawAll(id);
        for (uint256 s; s < 20; ++s) {
            address[] memory members = audit.committee(id, s);
            assertEq(members.length, 3);
            assertFalse(contains(members, provider), "provider drawn");
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(others, members[i]));
            }
        }
        assertEq(registry.auditor(provider).locked, 0);
    }

    function test_assignAuditors_revertsWhenOnlyTheProviderCompletesACommittee() public {
        addAuditor("provider", 1, 1_000e18);
        addAuditors("t1-", 1, 2, 1_000e18);
        assertEq(registry.eligibleCount(1), 3);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        // Three eligible auditors, but one is the provider: two may sit.
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 3, 2));
        audit.assignAuditors(id, 0);
    }

    function test_assignAuditors_neverDrawsUnavailableAuditors() public {
        address[] memory pool = addAuditors("t1-", 1, 4, 1_000e18);
        address away1 = addAuditor("away1", 1, 100_000e18);
        address away2 = addAuditor("away2", 1, 100_000e18);
        vm.prank(away1);
        registry.setAvailable(false);
        vm.prank(away2);
        registry.setAvailable(false);

        uint256 id = openSession(uniformSegments(20, 1));
        drawAll(id);
        for (uint256 s; s < 20; ++s) {
            address[] memory members = audit.committee(id, s);
            assertFalse(contains(members, away1));
            assertFalse(contains(members, away2));
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(pool, members[i]));
            }
        }
        assertEq(registry.auditor(away1).locked, 0);
        assertEq(registry.auditor(away2).locked, 0);
    }

    function test_assignAuditors_neverDrawsOtherTiers() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        address[] memory big2 = addAuditors("t2-", 2, 3, 1_000_000e18);
        address[] memory big3 = addAuditors("t3-", 3, 3, 1_000_000e18);
        uint256 id = openSession(uniformSegments(10, 1));
        drawAll(id);
        for (uint256 s; s < 10; ++s) {
            address[] memory members = audit.committee(id, s);
            for (uint256 i; i < 3; ++i) {
                assertFalse(contains(members, big2[i]));
                assertFalse(contains(members, big3[i]));
            }
        }
    }

    function test_assignAuditors_neverDrawsTier3WithoutCredential() public {
        address[] memory pool = addAuditors("t3-", 3, 5, 10_000e18);
        address revoked = addAuditor("revoked", 3, 1_000_000e18);
        registry.revokeCredential(revoked);
        assertFalse(registry.auditor(revoked).credentialed);

        uint256 id = openSession(uniformSegments(10, 3));
        drawAll(id);
        for (uint256 s; s < 10; ++s) {
            address[] memory members = audit.committee(id, s);
            assertEq(members.length, 5);
            assertFalse(contains(members, revoked));
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(pool, members[i]));
            }
        }
        assertEq(registry.auditor(revoked).locked, 0);
    }

    // ------------------------------------------------------------------ reverts

    /// @notice Too few auditors: the draw exhausts the tree and reverts with how many it seated. An
    ///         auditor who joins after the randomness block does not count for that block; once the
    ///         draw window has passed, the randomness is refreshed and the next draw counts it.
    function test_assignAuditors_revertsWhenCommitteeUnavailable() public {
        addAuditors("t1-", 1, 2, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        rollPastRandomness(id, 0);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 3, 2));
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));

        address late = addAuditor("late", 1, 1_000e18);
        vm.roll(randomnessBlock + 256); // the last block that may still draw from it
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 3, 2));
        audit.assignAuditors(id, 0);

        vm.roll(randomnessBlock + 257);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        audit.assignAuditors(id, 0);
        vm.roll(next + 1);
        audit.assignAuditors(id, 0);
        address[] memory members = audit.committee(id, 0);
        assertEq(members.length, 3);
        assertTrue(contains(members, late));
    }

    /// @notice An auditor who joins in the randomness block itself counts for it.
    function test_assignAuditors_countsAnAuditorWhoJoinsByTheRandomnessBlock() public {
        addAuditors("t1-", 1, 2, 1_000e18);
        uint256 id = openSingle(1);
        vm.roll(audit.segment(id, 0).randomnessBlock);
        address late = addAuditor("late", 1, 1_000e18);
        rollPastRandomness(id, 0);
        audit.assignAuditors(id, 0);
        assertTrue(contains(audit.committee(id, 0), late));
    }

    function test_assignAuditors_revertsWhenAlreadyDrawn() public {
        addAuditors("t1-", 1, 6, 1_000e18);
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 0, ITRUSTAudit.SegmentStatus.Voting
            )
        );
        audit.assignAuditors(id, 0);
    }

    function test_assignAuditors_revertsOnUnknownSegment() public {
        uint256 id = openSingle(1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSegment.selector, id, 1));
        audit.assignAuditors(id, 1);
    }

    function test_assignAuditors_revertsOnUnknownSession() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 5));
        audit.assignAuditors(5, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 5));
        audit.assignAuditorsBatch(5, ids(0));
    }

    function test_assignAuditors_revertsWhileSegmentsAreRegistering() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        vm.prank(provider);
        uint256 id = audit.createSession(keccak256("root"), 2);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        vm.roll(block.number + 10);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Registering
            )
        );
        audit.assignAuditors(id, 0);
    }

    function test_assignAuditors_isCallableByAnyone() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        vm.prank(stranger);
        audit.assignAuditors(id, 0);
        assertEq(audit.committee(id, 0).length, 3);
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditorsBatch_drawsEverySegment() public {
        addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(3, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        uint256[] memory all = new uint256[](3);
        (all[0], all[1], all[2]) = (2, 0, 1); // any order
        audit.assignAuditorsBatch(id, all);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditorsBatch_3x_tier1");
        for (uint256 s; s < 3; ++s) {
            assertEq(uint8(audit.segment(id, s).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
            assertEq(audit.committee(id, s).length, 3);
        }
    }

    function test_assignAuditorsBatch_revertsAsAWhole() public {
        address[] memory pool = addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 1, ITRUSTAudit.SegmentStatus.Voting
            )
        );
        audit.assignAuditorsBatch(id, ids(1, 1));
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 0);
        }
    }

    // ------------------------------------------------------------------ eq. 3.2, statistically

    /// @notice With committee size 1, each draw picks auditor i with probability S_i / sum(S).
    ///         2,000 draws from stakes 1:2:3:4; the bounds (chi-square < 35 with 3 degrees of
    ///         freedom, and each count within 5 standard deviations) fail a correct draw with
    ///         probability below 1e-6, while a uniform draw (500 each) misses them by far.
    function test_assignAuditors_drawFrequenciesFollowStake() public {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 1;
        p.maxSegmentsPerSession = 500;
        applyParams(p);
        address[4] memory pool;
        for (uint256 i; i < 4; ++i) {
            pool[i] = addAuditor(string.concat("w", vm.toString(i + 1)), 1, (i + 1) * 10_000e18);
        }

        uint256 sessions = 4;
        uint256 perSession = 500;
        uint256[4] memory counts;
        for (uint256 n; n < sessions; ++n) {
            uint256 id = openSession(uniformSegments(perSession, 1));
            drawAll(id);
            for (uint256 s; s < perSession; ++s) {
                address member = audit.committee(id, s)[0];
                for (uint256 i; i < 4; ++i) {
                    if (member == pool[i]) ++counts[i];
                }
            }
        }

        uint256 draws = sessions * perSession;
        uint256 chiSquareMilli;
        for (uint256 i; i < 4; ++i) {
            uint256 expected = draws * (i + 1) / 10;
            uint256 diff = counts[i] > expected ? counts[i] - expected : expected - counts[i];
            chiSquareMilli += diff * diff * 1_000 / expected;
            // sigma = sqrt(N p (1 - p)); 5 sigma, squared: 25 N p (1 - p).
            assertLe(diff * diff * 100, 25 * draws * (i + 1) * (9 - i), "count beyond 5 sigma");
        }
        assertEq(counts[0] + counts[1] + counts[2] + counts[3], draws);
        assertLt(chiSquareMilli, 35_000, "chi-square too large");
    }
}
